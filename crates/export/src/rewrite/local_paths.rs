//! Local paths, home directories, user names and host names.
//!
//! Only the part of a path that identifies someone is replaced; the rest
//! stays, so a traceback or a diff is still readable:
//!
//! - a home directory, whoever's (`/home/u`, `/Users/Jane Doe`,
//!   `C:\Users\u`, `/mnt/c/Users/u`), becomes `[HOME]`: `[HOME]/src/x.py`;
//! - a declared local root becomes `[WORKSPACE]`: `[WORKSPACE]/src/x`;
//! - under any other root of a machine's own disks (`/mnt`, `/work`,
//!   `/Volumes`, a drive, a per-user temp folder) the root and the folder
//!   after it become `[LOCAL_PATH]`: `[LOCAL_PATH]/x/y`; a UNC share
//!   (`\\host\share\...`) and a percent-encoded path go whole;
//! - system and environment prefixes that identify nobody (`/usr`,
//!   `/opt/<env>`, `/root`, `/tmp`, `/nix`) stay as they are: a user or
//!   host name in them is swept as a name.
//!
//! A path whose tail names its home's user again goes whole. Relative
//! paths, diff headers (`a/...`, `b/...`) and `/dev/null` are left alone,
//! so a patch still applies. One-segment paths (`/help`) are kept: agent
//! transcripts are full of slash commands and they name no place.

use std::collections::{BTreeMap, BTreeSet};

use crate::detect::walker::Walker;

/// Placeholder for an absolute local path.
pub const LOCAL_PATH: &str = "[LOCAL_PATH]";
/// Placeholder for a user's home directory.
pub const HOME: &str = "[HOME]";
/// Placeholder for a declared local root.
pub const WORKSPACE: &str = "[WORKSPACE]";
/// Placeholder for a host name.
pub const LOCAL_HOST: &str = "[LOCAL_HOST]";

/// Paths that name nothing, whatever root they are under.
const SYSTEM_EXACT: &[&str] = &["/dev/null", "/usr/bin/env", "/bin/sh", "/bin/bash"];
/// First segments of paths on a machine's own disks (homes, temp, mounts,
/// build and work roots of common CI systems). An absolute path under any
/// other first segment is text, not a place: JSON pointers
/// (`/agentInput/fixture`), URL routes (`/api/v1/users`), doc examples
/// (`/foo/bar`) stay as they are, so code and patches survive.
const LOCAL_ROOTS: &[&str] = &[
    "home",
    "Users",
    "root",
    "tmp",
    "var",
    "private",
    "mnt",
    "media",
    "opt",
    "srv",
    "work",
    "workspace",
    "workspaces",
    "build",
    "builds",
    "Volumes",
    "snap",
    "nix",
    "github",
    "__w",
    "scratch",
    "net",
    "afs",
    "cygdrive",
    "usr",
];

fn path_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-' | b'~' | b'+' | b'@' | b'%' | b'/')
}

fn boundary_before(s: &[u8], i: usize) -> bool {
    if i == 0 {
        return true;
    }
    let p = s[i - 1];
    if p.is_ascii_whitespace() || b"\"'`=(<[{,;|>:".contains(&p) {
        return true;
    }
    // file:///home/u: the third slash starts the path.
    p == b'/' && s[..i].ends_with(b"file://")
}

fn word_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// What the identifying part of a path is replaced with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum PathKind {
    /// A home directory: `[HOME]`.
    Home,
    /// Any other identifying prefix: `[LOCAL_PATH]`.
    Local,
}

impl PathKind {
    /// Its placeholder.
    pub fn placeholder(self) -> &'static str {
        match self {
            PathKind::Home => HOME,
            PathKind::Local => LOCAL_PATH,
        }
    }
}

/// Spans of the identifying parts of absolute local paths in `s` (see
/// the module doc): Unix paths under a machine's roots, Windows drive and
/// UNC (`\\host\share\...`) paths, and any of those percent-encoded
/// (`%2Fhome%2Fu%2Fx`, `C%3A%5CUsers%5Cu`), whose whole encoded run is the
/// span. `spaced` are user names with spaces seen elsewhere: a home
/// written unquoted at the end of a string (`cd /Users/Jane Doe`) is
/// matched through them.
pub fn local_paths(s: &str) -> Vec<(usize, usize, PathKind)> {
    local_paths_knowing(s, &[])
}

/// [`local_paths`], knowing the user names with spaces found elsewhere.
pub fn local_paths_knowing(s: &str, spaced: &[String]) -> Vec<(usize, usize, PathKind)> {
    let mut out = plain_paths(s, spaced);
    out.extend(
        unc_paths(s)
            .into_iter()
            .map(|(a, b)| (a, b, PathKind::Local)),
    );
    out.extend(
        encoded_paths(s)
            .into_iter()
            .map(|(a, b)| (a, b, PathKind::Local)),
    );
    out.sort_unstable();
    // Keep the first of overlapping spans (a decoded path inside an
    // encoded run is the run).
    let mut kept: Vec<(usize, usize, PathKind)> = Vec::with_capacity(out.len());
    for (a, b, k) in out {
        match kept.last_mut() {
            Some(last) if a < last.1 => last.1 = last.1.max(b),
            _ => kept.push((a, b, k)),
        }
    }
    kept
}

/// `\\host\share\...`: a host name, one backslash, a share name.
fn unc_paths(s: &str) -> Vec<(usize, usize)> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let host_char = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'_');
    let share_char = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'_' | b'$');
    let mut from = 0;
    // A backslash, then another (a memmem searcher would be built per
    // string: most strings have no backslash at all).
    while let Some(off) = memchr::memchr(b'\\', &b[from..]) {
        let start = from + off;
        from = start + 1;
        if b.get(start + 1) != Some(&b'\\') {
            continue;
        }
        from = start + 2;
        if start > 0 && (word_char(b[start - 1]) || b[start - 1] == b'\\') {
            continue;
        }
        let host = b[start + 2..].iter().take_while(|c| host_char(**c)).count();
        let at = start + 2 + host;
        if host == 0 || b.get(at) != Some(&b'\\') || example_host(&b[start + 2..at]) {
            continue;
        }
        let share = b[at + 1..].iter().take_while(|c| share_char(**c)).count();
        if share == 0 {
            continue;
        }
        // Whole: a share's folders are often its users' (`\\fs\home$\u`).
        let mut end = at + 1 + share;
        while end < b.len() && (path_char(b[end]) || b[end] == b'\\') && b[end] != b'%' {
            end += 1;
        }
        out.push((start, end));
        from = end;
    }
    out
}

/// The host names documentation uses for UNC paths (`\\server\share`,
/// `\\.\COM1` devices): examples, not a machine.
fn example_host(host: &[u8]) -> bool {
    let h = String::from_utf8_lossy(host).to_ascii_lowercase();
    h.bytes().all(|c| c == b'.')
        || [
            "server",
            "host",
            "machine",
            "computer",
            "servername",
            "hostname",
            "remote",
            "localhost",
        ]
        .contains(&h.as_str())
}

/// Percent-encoded runs holding an encoded slash or backslash whose
/// decoded text is a local path.
fn encoded_paths(s: &str) -> Vec<(usize, usize)> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let lower = |c: u8| c.to_ascii_lowercase();
    let escape_at = |i: usize| {
        b[i] == b'%'
            && b.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
            && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
    };
    let mut i = 0;
    while let Some(off) = memchr::memchr(b'%', &b[i..]) {
        let p = i + off;
        let sep = escape_at(p)
            && ((b[p + 1] == b'2' && lower(b[p + 2]) == b'f')
                || (b[p + 1] == b'5' && lower(b[p + 2]) == b'c'));
        if !sep {
            i = p + 1;
            continue;
        }
        // The run around it: escapes and unreserved characters.
        let mut start = p;
        while start > 0 {
            if start >= 3 && escape_at(start - 3) {
                start -= 3;
            } else if b[start - 1].is_ascii_alphanumeric() || b"._~-".contains(&b[start - 1]) {
                start -= 1;
            } else {
                break;
            }
        }
        let mut end = p;
        while end < b.len() {
            if escape_at(end) {
                end += 3;
            } else if b[end].is_ascii_alphanumeric() || b"._~-".contains(&b[end]) {
                end += 1;
            } else {
                break;
            }
        }
        if let Ok(decoded) = percent_decode(&b[start..end]) {
            if !plain_paths(&decoded, &[]).is_empty() || !unc_paths(&decoded).is_empty() {
                out.push((start, end));
            }
        }
        i = end.max(p + 1);
    }
    out
}

fn percent_decode(run: &[u8]) -> Result<String, std::string::FromUtf8Error> {
    let mut out = Vec::with_capacity(run.len());
    let mut i = 0;
    while i < run.len() {
        if run[i] == b'%' && i + 2 < run.len() {
            let hex = std::str::from_utf8(&run[i + 1..i + 3]).unwrap_or("zz");
            if let Ok(v) = u8::from_str_radix(hex, 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(run[i]);
        i += 1;
    }
    String::from_utf8(out)
}

/// The identifying parts of Unix paths under a machine's roots and of
/// Windows drive paths, as written.
fn plain_paths(s: &str, spaced: &[String]) -> Vec<(usize, usize, PathKind)> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    if memchr::memchr2(b'/', b':', b).is_none() {
        return out;
    }
    let mut i = 0;
    while i < b.len() {
        // Jump to the next byte that can start a path.
        match memchr::memchr2(b'/', b':', &b[i..]) {
            Some(off) => i += off.saturating_sub(1),
            None => break,
        }
        let step = if b[i] == b'/'
            && boundary_before(b, i)
            && b.get(i + 1).is_some_and(|n| path_char(*n) && *n != b'/')
        {
            Some(unix_path(s, i, spaced))
        } else if drive_starts(b, i) {
            Some(drive_path(s, i, spaced))
        } else {
            None
        };
        match step {
            Some((found, next)) => {
                out.extend(found);
                i = next;
            }
            None => i += 1,
        }
    }
    out
}

/// The identifying part of the Unix path at `i` (a `/`), if any, and
/// where to look next.
fn unix_path(s: &str, i: usize, spaced: &[String]) -> (Option<(usize, usize, PathKind)>, usize) {
    let b = s.as_bytes();
    let mut start = i;
    let mut end = i + 1;
    while end < b.len() && path_char(b[end]) {
        end += 1;
    }
    let trimmed = s[start..end].trim_end_matches(['.', ',']);
    let end = start + trimmed.len();
    // `C:/Users/u`: a drive written with a forward slash.
    if start >= 2
        && b[start - 1] == b':'
        && b[start - 2].is_ascii_alphabetic()
        && (start == 2 || !word_char(b[start - 3]))
    {
        start -= 2;
    }
    let trimmed = &s[start..end];
    // `</root>`, `</tmp>`: a closing tag, not a directory.
    let closing_tag = start > 0 && b[start - 1] == b'<' && b.get(end) == Some(&b'>');
    let found = if closing_tag || SYSTEM_EXACT.contains(&trimmed) {
        None
    } else {
        prefix(s, start, end, b'/', spaced)
    };
    match found {
        Some((to, path_end, kind)) => (Some((start, to, kind)), path_end.max(i + 1)),
        None => (None, end.max(i + 1)),
    }
}

/// Whether a drive letter starts at `i`; after `-` or `?` it is a regex's
/// inline flag group (`(?-u:\b)`, `(?i:\1)`), not a disk.
fn drive_starts(b: &[u8], i: usize) -> bool {
    b[i].is_ascii_alphabetic()
        && b.get(i + 1) == Some(&b':')
        && b.get(i + 2) == Some(&b'\\')
        && (i == 0 || !(word_char(b[i - 1]) || b"-?".contains(&b[i - 1])))
}

/// The identifying part of the Windows drive path at `i`, if any, and
/// where to look next.
fn drive_path(s: &str, i: usize, spaced: &[String]) -> (Option<(usize, usize, PathKind)>, usize) {
    let b = s.as_bytes();
    let mut end = i + 3;
    // Folders Windows itself names with spaces.
    if let Some(n) = ["documents and settings", "program files"]
        .iter()
        .find(|n| {
            s.get(end..end + n.len())
                .is_some_and(|x| x.eq_ignore_ascii_case(n))
        })
    {
        end += n.len();
    }
    while end < b.len() && (path_char(b[end]) || b[end] == b'\\') {
        end += 1;
    }
    // `%s:\n`, `class A:\n` in source text: a colon before an escape. A
    // drive path names at least a two-character folder.
    if end - (i + 3) < 2 {
        return (None, end);
    }
    match prefix(s, i, end, b'\\', spaced) {
        Some((to, path_end, kind)) => (Some((i, to, kind)), path_end),
        None => (None, end),
    }
}

/// First segments under which a path identifies nobody: the system's
/// own folders, and the places containers and environments keep their
/// software (`/opt/miniconda3/envs/testbed/lib/python3.9/...`). A user or
/// host name inside one is swept as a name.
const NEUTRAL_ROOTS: &[&str] = &[
    "usr", "bin", "sbin", "lib", "lib64", "etc", "proc", "sys", "dev", "opt", "root", "tmp", "nix",
    "snap", "var", "private",
];
/// First segments of a Windows drive path that identify nobody.
const NEUTRAL_DRIVE_ROOTS: &[&str] = &["windows", "program files", "program files (x86)"];

/// The identifying prefix of the path written at `s[start..end]` (a Unix
/// path when `sep` is `/`, a drive path when `\`): where it ends, where
/// the whole path ends (a home with spaces can take it past `end`), and
/// its kind. `None` for a path that identifies nobody.
fn prefix(
    s: &str,
    start: usize,
    end: usize,
    sep: u8,
    spaced: &[String],
) -> Option<(usize, usize, PathKind)> {
    let drive = sep == b'\\' || s.as_bytes().get(start + 1) == Some(&b':');
    // A drive path's separators may be either slash.
    let is_sep = |c: u8| c == b'/' || (drive && c == b'\\');
    let body = if drive { start + 2 } else { start };
    let segs = segments(s.as_bytes(), body, end, is_sep);
    let seg = |i: usize| &s[segs[i].0..segs[i].1];
    let first = segs.first().map(|_| seg(0))?;
    if let Some(u) = home_user(&segs, seg, drive) {
        // The user's name may go on past a space (`/Users/Jane Doe/x`).
        let quote = (start > 0)
            .then(|| s.as_bytes()[start - 1])
            .filter(|q| matches!(q, b'"' | b'\''));
        let user_start = segs[u].0;
        let user_end = spaced_name(s, segs[u].1, quote, is_sep, spaced).unwrap_or(segs[u].1);
        let mut path_end = user_end.max(end);
        while path_end < s.len()
            && (path_char(s.as_bytes()[path_end]) || is_sep(s.as_bytes()[path_end]))
        {
            path_end += 1;
        }
        let name = &s[user_start..user_end];
        // A tail that names the user again (`/home/u/u-notes/x`) goes too.
        let to = if names_again(&s[user_end..path_end], name) {
            path_end
        } else {
            user_end
        };
        return Some((to, path_end, PathKind::Home));
    }
    let lower = first.to_ascii_lowercase();
    if drive {
        if NEUTRAL_DRIVE_ROOTS.contains(&lower.as_str()) || lower.starts_with("program files") {
            return None;
        }
        // The drive and its first folder (`D:\work`).
        let to = segs.first().map_or(end, |x| x.1);
        return Some((to, end, PathKind::Local));
    }
    // A macOS per-user temp folder: `/var/folders/xy/<id>/T/...`.
    let folders = usize::from(first == "private");
    if segs.len() > folders + 3 && seg(folders) == "var" && seg(folders + 1) == "folders" {
        return Some((segs[folders + 3].1, end, PathKind::Local));
    }
    // `/home`, `/Users/Shared`: a home folder without a user's name.
    let homes = ["home", "Users"].contains(&first);
    if homes || NEUTRAL_ROOTS.contains(&first) || segs.len() < 2 || !LOCAL_ROOTS.contains(&first) {
        return None;
    }
    // Another root of the machine's disks: the root and the folder after it.
    Some((segs[1].1, end, PathKind::Local))
}

/// Spans of the non-empty segments of `s[from..to]`.
fn segments(s: &[u8], from: usize, to: usize, is_sep: impl Fn(u8) -> bool) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut a = from;
    let ends = s[from..to]
        .iter()
        .enumerate()
        .filter(|(_, c)| is_sep(**c))
        .map(|(i, _)| from + i)
        .chain([to]);
    for i in ends {
        if i > a {
            out.push((a, i));
        }
        a = i + 1;
    }
    out
}

/// The index of the segment naming a home's user: the one after the last
/// `home` or `Users` (any case on a drive), after a first `media` or
/// `run/media`, or after `Documents and Settings`; on Unix only under a
/// machine's roots or a `/c/Users` drive mount, so a URL route
/// (`/app/home/index`) is not a home.
fn home_user<'s>(
    segs: &[(usize, usize)],
    seg: impl Fn(usize) -> &'s str,
    drive: bool,
) -> Option<usize> {
    let named = |i: usize| {
        segs.get(i).is_some() && {
            let n = seg(i);
            !n.starts_with('.') && n != "Shared" && n.bytes().any(|c| c.is_ascii_alphanumeric())
        }
    };
    let first = seg(0);
    let rooted = drive
        || LOCAL_ROOTS.contains(&first)
        || first == "run"
        || (first.len() == 1 && first.as_bytes()[0].is_ascii_alphabetic());
    if !rooted {
        return None;
    }
    let mut user = None;
    for i in 0..segs.len() {
        let n = seg(i);
        let home = if drive {
            n.eq_ignore_ascii_case("users") || n.eq_ignore_ascii_case("documents and settings")
        } else {
            n == "home" || n == "Users" || (n == "media" && (i == 0 || (i == 1 && first == "run")))
        };
        if home && named(i + 1) {
            user = Some(i + 1);
        }
    }
    user
}

/// Where a user's name that goes on past a space ends: through spaces
/// (or backslash-escaped spaces) and name characters, up to a separator,
/// the closing `quote`, or the end of a `spaced` name seen elsewhere.
/// `None` when the name ends at `end` as written.
fn spaced_name(
    s: &str,
    end: usize,
    quote: Option<u8>,
    is_sep: impl Fn(u8) -> bool,
    spaced: &[String],
) -> Option<usize> {
    const MAX_NAME: usize = 64;
    let b = s.as_bytes();
    let at_space = |i: usize| match b.get(i) {
        Some(b' ') => Some(1),
        Some(b'\\') if b.get(i + 1) == Some(&b' ') => Some(2),
        _ => None,
    };
    at_space(end)?;
    let name_char =
        |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-' | b'\'' | b'(' | b')');
    let mut i = end;
    while i - end < MAX_NAME {
        if let Some(w) = at_space(i) {
            i += w;
            continue;
        }
        match b.get(i) {
            Some(&c) if name_char(c) && Some(c) != quote => i += 1,
            Some(&c) if is_sep(c) || Some(c) == quote => {
                return (i > end && b[i - 1] != b' ').then_some(i);
            }
            _ => break,
        }
    }
    // Unquoted and at the end: a name seen whole elsewhere.
    let start = s[..end]
        .rfind(|c: char| is_sep(c as u8))
        .map_or(0, |x| x + 1);
    spaced
        .iter()
        .filter(|n| s[start..].starts_with(n.as_str()) && start + n.len() > end)
        .map(|n| start + n.len())
        .filter(|&e| b.get(e).is_none_or(|c| !name_char(*c)))
        .max()
}

/// Whether `tail` holds `name` again as a word (any case).
fn names_again(tail: &str, name: &str) -> bool {
    if name.is_empty() || tail.len() < name.len() {
        return false;
    }
    let (t, n) = (tail.to_ascii_lowercase(), name.to_ascii_lowercase());
    t.match_indices(&n).any(|(i, _)| {
        let b = t.as_bytes();
        (i == 0 || !b[i - 1].is_ascii_alphanumeric())
            && b.get(i + n.len())
                .is_none_or(|c| !c.is_ascii_alphanumeric())
    })
}

/// Where `root` (a normalized path: no `//` or `/./`, no trailing `/`)
/// next occurs in `s` at or after `from`, however its separators are
/// spelled: each `/` may be followed by more `/` and by `./` segments, as
/// `/data//x/./y` names `/data/x/y`. Returns the span as written.
pub fn find_root(s: &[u8], root: &str, from: usize) -> Option<(usize, usize)> {
    let root = root.as_bytes();
    // Up to its second separator the root is written as it is: a search
    // for that part skips most of `s`.
    let head_len = root
        .iter()
        .skip(1)
        .position(|&b| b == b'/')
        .map_or(root.len(), |i| i + 1);
    let head = &root[..head_len];
    let mut at = from;
    while let Some(i) = memchr::memmem::find(s.get(at..)?, head) {
        let start = at + i;
        if let Some(end) = spelled_at(s, start, root) {
            return Some((start, end));
        }
        at = start + 1;
    }
    None
}

/// The end of `root` spelled from `s[start..]` (see [`find_root`]).
fn spelled_at(s: &[u8], start: usize, root: &[u8]) -> Option<usize> {
    let mut i = start;
    for &c in root {
        if *s.get(i)? != c {
            return None;
        }
        i += 1;
        if c == b'/' {
            loop {
                if s.get(i) == Some(&b'/') {
                    i += 1;
                } else if s.get(i..i + 2) == Some(b"./") {
                    i += 2;
                } else {
                    break;
                }
            }
        }
    }
    Some(i)
}

/// Replaces local roots (followed by a path boundary) with `[WORKSPACE]`
/// and the identifying part of every other absolute local path with
/// `[HOME]` or `[LOCAL_PATH]`, keeping the rest; returns how many were
/// replaced. A root matches however its separators are spelled
/// ([`find_root`]); `spaced` as in [`local_paths_knowing`].
pub fn rewrite(s: &str, roots: &[String], spaced: &[String]) -> (String, u64) {
    let mut count = 0;
    let mut text = s.to_string();
    for root in roots {
        if find_root(text.as_bytes(), root, 0).is_none() {
            continue;
        }
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        let mut from = 0;
        while let Some((pos, end)) = find_root(text.as_bytes(), root, from) {
            let after = text.as_bytes().get(end).copied();
            // A separator swallowed after the root ends it too (`/x/` then `y`).
            let ok = after.is_none_or(|c| !path_char(c) || c == b'/')
                || text.as_bytes()[end - 1] == b'/';
            if ok && text.is_char_boundary(pos) && text.is_char_boundary(end) {
                out.push_str(&text[last..pos]);
                out.push_str(WORKSPACE);
                // What followed the root starts the tail it keeps.
                if text.as_bytes()[end - 1] == b'/' {
                    out.push('/');
                }
                count += 1;
                last = end;
                from = end;
            } else {
                from = pos + 1;
            }
        }
        out.push_str(&text[last..]);
        text = out;
    }
    // A placeholder can make a boundary that was not there (`…0\\fs`
    // becomes `[HOME]\\fs`, a share): again until nothing is found. Each
    // round replaces separators with a placeholder that has none, so it
    // ends.
    loop {
        let spans = local_paths_knowing(&text, spaced);
        if spans.is_empty() {
            return (text, count);
        }
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for (a, b, kind) in &spans {
            out.push_str(&text[last..*a]);
            out.push_str(kind.placeholder());
            last = *b;
            count += 1;
        }
        out.push_str(&text[last..]);
        text = out;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    Home,
    User,
    Host,
}

const MARKERS: &[(&str, Marker)] = &[
    ("/home/", Marker::Home),
    ("/Users/", Marker::Home),
    ("\\Users\\", Marker::Home),
    ("\\\\Users\\\\", Marker::Home),
    ("%2Fhome%2F", Marker::Home),
    ("%2FUsers%2F", Marker::Home),
    ("%2fhome%2f", Marker::Home),
    ("%2fUsers%2f", Marker::Home),
    ("%5CUsers%5C", Marker::Home),
    ("%5cUsers%5c", Marker::Home),
    ("USER=", Marker::User),
    ("LOGNAME=", Marker::User),
    ("USERNAME=", Marker::User),
    ("HOSTNAME=", Marker::Host),
];

fn markers() -> &'static Walker {
    static AC: std::sync::OnceLock<Walker> = std::sync::OnceLock::new();
    AC.get_or_init(|| {
        let patterns: Vec<&str> = MARKERS.iter().map(|(m, _)| *m).collect();
        Walker::new(&patterns, false)
    })
}

/// Every marker holds one of these (`marker_gates_cover_every_marker`), so
/// a string with none of them holds no marker. Looking for four words is
/// one vectorized pass (aho-corasick's packed searcher); walking the
/// marker automaton goes a byte at a time, and was as costly as the whole
/// credential keyword walk while most strings hold no marker.
const MARKER_GATES: &[&str] = &["home", "Users", "USER=", "NAME="];

fn marker_gate() -> &'static aho_corasick::AhoCorasick {
    static AC: std::sync::OnceLock<aho_corasick::AhoCorasick> = std::sync::OnceLock::new();
    AC.get_or_init(|| {
        // Leftmost matching lets the crate use its packed (SIMD) searcher;
        // only whether there is a match counts here.
        aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::LeftmostFirst)
            .build(MARKER_GATES)
            .expect("a handful of plain words compile")
    })
}

/// Names too common to sweep as words: generic accounts, and words that
/// name folders in docs and examples (`C:\Users\Example`, `/home/me`).
/// They are still replaced in typed fields and after their markers
/// ([`marked_forms`]), never across all text.
const UNSWEPT_NAMES: &[&str] = &[
    "root",
    "user",
    "users",
    "home",
    "admin",
    "localhost",
    "me",
    "you",
    "my",
    "your",
    "example",
    "examples",
    "sample",
    "demo",
    "test",
    "tests",
    "testing",
    "guest",
    "default",
    "public",
    "shared",
    "owner",
    "name",
    "username",
    "person",
    "someone",
    "somebody",
    "foo",
    "bar",
    "baz",
    "rust",
    "python",
    "node",
    "java",
    "go",
    "dev",
    "developer",
    "build",
    "builder",
    "runner",
    "ubuntu",
    "debian",
    "docker",
    "vagrant",
    "ec2-user",
    "nobody",
    "daemon",
    "www",
    "www-data",
    "git",
    "app",
    "application",
    "service",
    "system",
    "local",
    "work",
    "project",
    "projects",
    "src",
    "code",
    "documents",
    "desktop",
    "downloads",
    "library",
    "appdata",
    "all",
    "common",
    "username_here",
    "yourname",
    "your_name",
    "john",
    "jane",
    "johndoe",
    "jdoe",
    "bob",
    "alice",
];

/// Whether a user or host name is swept as a word everywhere (long enough,
/// and not a word every transcript uses).
pub fn sweepable_name(name: &str) -> bool {
    name.len() >= 3 && !UNSWEPT_NAMES.contains(&name.to_ascii_lowercase().as_str())
}

/// The forms a user name takes right after its markers (`USER=me`,
/// `/home/me`, `%2Fhome%2Fme`), with the replacement of each: how a name
/// too common to sweep is still removed where it names a local user.
///
/// `name@` is one marker only before a local host (`alice@build-07`, as a
/// prompt shows it): `me@mail.com` in a crate's docs is an address.
pub fn marked_forms<'h>(
    name: &str,
    replacement: &str,
    hosts: impl IntoIterator<Item = &'h String>,
) -> Vec<(String, String)> {
    MARKERS
        .iter()
        .filter(|(_, kind)| *kind != Marker::Host)
        .map(|(m, _)| (format!("{m}{name}"), format!("{m}{replacement}")))
        .chain([(format!("{name}@"), format!("{replacement}@"))])
        .chain(
            hosts
                .into_iter()
                .map(|h| (format!("{name}@{h}"), format!("{replacement}@{LOCAL_HOST}"))),
        )
        .collect()
}

/// Strings a name must follow a home marker in, when nothing else says
/// it names the local user, before it is swept as a word everywhere. A
/// user's home is in every path an agent's tools touch; a name that only
/// a few strings put after `/home/` is as likely a document's example
/// (clap's doc tests say `/home/clap`, and the crate's name is on every
/// line of its sources).
pub const HOME_STRINGS_TO_SWEEP: u32 = 3;

/// What a string reveals about local users and hosts.
#[derive(Debug, Default, Clone)]
pub struct LocalNames {
    /// User names.
    pub users: BTreeSet<String>,
    /// Host names.
    pub hosts: BTreeSet<String>,
    /// User names that something besides a home path names as the local
    /// user: a typed field, `USER=`, a shell prompt.
    pub vouched: BTreeSet<String>,
    /// For each user name, how many strings hold it after a home marker.
    pub home_strings: BTreeMap<String, u32>,
}

/// The name at `start`: `[A-Za-z0-9._-]+`, holding a letter or digit and
/// not starting with a dot (`...` in `/home/...` names nobody).
fn name_at(s: &str, start: usize) -> Option<&str> {
    let rest = &s[start..];
    let n = rest
        .bytes()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
        .count();
    let name = &rest[..n];
    (n > 0 && !name.starts_with('.') && name.bytes().any(|c| c.is_ascii_alphanumeric()))
        .then_some(name)
}

impl LocalNames {
    /// Takes what another collector found (counts add up, so the order
    /// in which batches are taken changes nothing).
    pub fn absorb(&mut self, other: LocalNames) {
        self.users.extend(other.users);
        self.hosts.extend(other.hosts);
        self.vouched.extend(other.vouched);
        for (u, n) in other.home_strings {
            *self.home_strings.entry(u).or_insert(0) += n;
        }
    }

    /// A user name a typed field holds.
    pub fn vouch(&mut self, user: &str) {
        self.users.insert(user.to_string());
        self.vouched.insert(user.to_string());
    }

    /// Whether user name `u` is swept as a word across the whole export:
    /// not too common a word, and shown to be the local user's (see
    /// [`HOME_STRINGS_TO_SWEEP`]). Other names go where a marker names
    /// them ([`marked_forms`]).
    pub fn swept(&self, u: &str) -> bool {
        sweepable_name(u)
            && (self.vouched.contains(u)
                || self.home_strings.get(u).copied().unwrap_or(0) >= HOME_STRINGS_TO_SWEEP)
    }

    /// Collects user and host names from home paths, prompts and
    /// `USER=`/`HOME=`/`HOSTNAME=` assignments in `s`; whether any was found.
    pub fn collect(&mut self, s: &str) -> bool {
        let before = self.users.len() + self.hosts.len();
        // A marker with a name seen before still marks the string.
        let marked = self.collect_inner(s);
        marked || self.users.len() + self.hosts.len() > before
    }

    fn collect_inner(&mut self, s: &str) -> bool {
        // Most strings hold no marker, which the gate shows faster than
        // the walk.
        let marked = marker_gate().is_match(s) && self.markers(s);
        self.prompts(s);
        marked
    }

    /// Collects the names after markers (`/home/dave`, `USER=dave`);
    /// whether `s` holds any marker.
    fn markers(&mut self, s: &str) -> bool {
        let mut marked = false;
        let mut homes: BTreeSet<&str> = BTreeSet::new();
        // One pass over the string finds every marker.
        markers().each(s.as_bytes(), |i, end| {
            marked = true;
            let (marker, kind) = MARKERS[i];
            let mut at = end;
            if kind != Marker::Home && s[at..].starts_with(['"', '\'']) {
                at += 1;
            }
            if let Some(mut n) = name_at(s, at) {
                if kind == Marker::Home {
                    // `/Users/Jane Doe/x`: the name goes on past its space.
                    let quote = (end - marker.len())
                        .checked_sub(1)
                        .map(|q| s.as_bytes()[q])
                        .filter(|q| matches!(q, b'"' | b'\''));
                    let sep = |c: u8| c == b'/' || c == b'\\';
                    if let Some(e) = spaced_name(s, at + n.len(), quote, sep, &[]) {
                        n = &s[at..e];
                    }
                }
                match kind {
                    Marker::Host => {
                        self.hosts.insert(n.to_string());
                    }
                    Marker::Home => {
                        self.users.insert(n.to_string());
                        homes.insert(n);
                    }
                    Marker::User => self.vouch(n),
                }
            }
        });
        for n in homes {
            *self.home_strings.entry(n.to_string()).or_insert(0) += 1;
        }
        marked
    }

    /// Collects the user and host of shell prompts (`dave@devbox:~/src$`).
    fn prompts(&mut self, s: &str) {
        if !s.contains('@') {
            return;
        }
        let b = s.as_bytes();
        let mut from = 0;
        while let Some(p) = s[from..].find('@') {
            let at = from + p;
            from = at + 1;
            let ustart = s[..at]
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
                .map_or(0, |x| x + 1);
            let Some(host) = name_at(s, at + 1) else {
                continue;
            };
            let after = at + 1 + host.len();
            // A prompt (`dave@devbox:~/src$`), not an scp-style URL
            // (`anoncvs@sources.example.org:/cvs`): the path ends in a
            // prompt character.
            let prompt_end = s[after..]
                .find(|c: char| c.is_whitespace())
                .map_or(s.len(), |x| after + x);
            let colon_form = b.get(after) == Some(&b':')
                && matches!(b.get(after + 1), Some(b'~') | Some(b'/'))
                && matches!(
                    b.get(prompt_end - 1),
                    Some(b'$') | Some(b'#') | Some(b'%') | Some(b'>')
                );
            // `[dave@devbox src]$`, as Red Hat's shells print it.
            let bracket_form = ustart > 0
                && b[ustart - 1] == b'['
                && b.get(after) == Some(&b' ')
                && s[after..]
                    .find(']')
                    .filter(|&x| !s[after..after + x].contains('\n'))
                    .is_some_and(|x| matches!(b.get(after + x + 1), Some(b'$' | b'#' | b'%')));
            // `dave@devbox src %`, zsh's default (`%n@%m %1~ %#`): the
            // host as zsh shows it (no dot), one folder, the prompt
            // character, at the start of a line.
            let zsh_form = (ustart == 0 || b[ustart - 1] == b'\n' || b[ustart - 1] == b'\r')
                && !host.contains('.')
                && b.get(after) == Some(&b' ')
                && {
                    let dir = s[after + 1..]
                        .find(|c: char| c.is_whitespace())
                        .map_or(s.len(), |x| after + 1 + x);
                    dir > after + 1
                        && b.get(dir) == Some(&b' ')
                        && matches!(b.get(dir + 1), Some(b'%' | b'$' | b'#'))
                        && b.get(dir + 2).is_none_or(|c| c.is_ascii_whitespace())
                };
            if ustart < at && (colon_form || bracket_form || zsh_form) {
                self.vouch(&s[ustart..at]);
                self.hosts.insert(host.to_string());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoded_and_unc_paths_are_local_paths_and_lookalikes_are_not() {
        let spans = |s: &str| -> Vec<String> {
            local_paths(s)
                .into_iter()
                .map(|(a, b, _)| s[a..b].to_string())
                .collect()
        };
        assert_eq!(spans("open %2Fhome%2Fu%2Fwork now"), ["%2Fhome%2Fu%2Fwork"]);
        assert_eq!(spans("x=C%3A%5CUsers%5Cu%5Cp"), ["C%3A%5CUsers%5Cu%5Cp"]);
        assert_eq!(
            spans(r"at \\fs01\team$\u\x.txt ok"),
            [r"\\fs01\team$\u\x.txt"]
        );
        assert_eq!(
            spans("file:///home/u/x and /home/u/y"),
            ["/home/u", "/home/u"]
        );
        for benign in [
            r"regex \\d+\\.\\w",
            "next=%2Fdashboard%2Fsettings",
            "50%25 off %2Fetc%2Fpasswd",
            r"a\\b",
            r"e.g. \\server\share or \\.\COM42",
        ] {
            assert!(spans(benign).is_empty(), "{benign}: {:?}", spans(benign));
        }
    }

    fn rw(s: &str) -> String {
        rewrite(s, &["/home/alice/work/calc".to_string()], &[]).0
    }

    #[test]
    fn only_the_identifying_part_of_a_path_is_replaced() {
        for (input, want) in [
            (
                "cwd /home/alice/work/calc/src/x.py ok",
                "cwd [WORKSPACE]/src/x.py ok",
            ),
            ("/home/alice/work/calculator", "[HOME]/work/calculator"),
            ("see /home/bob/.ssh/id_rsa.", "see [HOME]/.ssh/id_rsa."),
            (
                "PATH=/opt/x/bin:/home/bob/bin",
                "PATH=/opt/x/bin:[HOME]/bin",
            ),
            ("file:///Users/carol/a.txt", "file://[HOME]/a.txt"),
            ("C:\\Users\\dave\\src\\x.rs here", "[HOME]\\src\\x.rs here"),
            ("C:/Users/dave/src/x.rs", "[HOME]/src/x.rs"),
            ("PS C:\\Users\\dave> dir", "PS [HOME]> dir"),
            ("/mnt/c/Users/dave/src", "[HOME]/src"),
            ("/c/Users/dave/src", "[HOME]/src"),
            ("/var/home/dave/src", "[HOME]/src"),
            ("/media/dave/usb/x", "[HOME]/usb/x"),
            ("/run/media/dave/usb/x", "[HOME]/usb/x"),
            ("/net/fs1/home/dave/x", "[HOME]/x"),
            // The tail names the user again: all of it goes.
            ("/home/dave9/dave9-notes/x", "[HOME]"),
            // Identifying nobody: kept.
            (
                r#"File "/opt/miniconda3/envs/testbed/lib/python3.9/unittest/case.py", line 59"#,
                r#"File "/opt/miniconda3/envs/testbed/lib/python3.9/unittest/case.py", line 59"#,
            ),
            (
                "/usr/lib/python3/dist-packages/x.py",
                "/usr/lib/python3/dist-packages/x.py",
            ),
            ("/root/.cache/pip/x", "/root/.cache/pip/x"),
            ("/tmp/pytest-1/test0/x.py", "/tmp/pytest-1/test0/x.py"),
            ("/root", "/root"),
            ("/home and /Users", "/home and /Users"),
            ("/Users/Shared/x", "/Users/Shared/x"),
            (
                "C:\\Program Files\\Git\\bin\\git.exe",
                "C:\\Program Files\\Git\\bin\\git.exe",
            ),
            (
                "C:\\Windows\\System32\\x.dll",
                "C:\\Windows\\System32\\x.dll",
            ),
            // Other roots of a machine's disks: the root and one folder.
            ("/mnt/data/corpus/x.csv", "[LOCAL_PATH]/corpus/x.csv"),
            ("/work/main/src/x.rs", "[LOCAL_PATH]/src/x.rs"),
            ("/var/folders/ab/cdef123/T/tmp.1", "[LOCAL_PATH]/T/tmp.1"),
            ("/private/var/folders/ab/cdef123/T/x", "[LOCAL_PATH]/T/x"),
            ("D:\\a\\repo\\src\\x.rs", "[LOCAL_PATH]\\repo\\src\\x.rs"),
            // A share goes whole: its folders are often its users'.
            (r"\\fs01\team$\u\x.txt", r"[LOCAL_PATH]"),
        ] {
            assert_eq!(rw(input), want, "{input}");
        }
    }

    #[test]
    fn a_home_is_matched_through_a_name_with_spaces() {
        for (input, want) in [
            ("/Users/Jane Doe/proj/x", "[HOME]/proj/x"),
            ("cd \"/Users/Jane Doe\" && ls", "cd \"[HOME]\" && ls"),
            ("cd '/Users/Jane Q. Doe/p'", "cd '[HOME]/p'"),
            ("cd /Users/Jane\\ Doe/proj", "cd [HOME]/proj"),
            ("/Users/Jane%20Doe/proj", "[HOME]/proj"),
            ("C:\\Users\\Jane Doe\\hub 2.0\\x", "[HOME]\\hub 2.0\\x"),
            ("C:\\Documents and Settings\\Jane Doe\\x", "[HOME]\\x"),
            // No separator or quote after it: the name is the word.
            ("ls /Users/jane now", "ls [HOME] now"),
        ] {
            assert_eq!(rw(input), want, "{input}");
        }
        // Unquoted at the end, through a name seen whole elsewhere.
        let spaced = ["Jane Doe".to_string()];
        assert_eq!(rewrite("cd /Users/Jane Doe", &[], &spaced).0, "cd [HOME]");
        assert_eq!(
            rewrite("cd /Users/Jane Doever", &[], &spaced).0,
            "cd [HOME] Doever"
        );
        let mut n = LocalNames::default();
        n.collect("\"/Users/Jane Doe/x\" and C:\\Users\\Ann Lee\\y");
        assert_eq!(n.users.iter().collect::<Vec<_>>(), ["Ann Lee", "Jane Doe"]);
    }

    #[test]
    fn a_root_matches_however_its_separators_are_spelled() {
        let roots = ["/data/x".to_string()];
        for (input, want) in [
            ("cat /data/x/secret.txt", "cat [WORKSPACE]/secret.txt"),
            ("cat /data//x/secret.txt", "cat [WORKSPACE]/secret.txt"),
            ("cat /data/./x/./secret.txt", "cat [WORKSPACE]/./secret.txt"),
            ("cat /data///.//x", "cat [WORKSPACE]"),
            ("cat /data/xy/other", "cat /data/xy/other"),
        ] {
            assert_eq!(rewrite(input, &roots, &[]).0, want, "{input}");
        }
        assert_eq!(find_root(b"a /data//x b", "/data/x", 0), Some((2, 10)));
        assert_eq!(find_root(b"/dat/x", "/data/x", 0), None);
    }

    #[test]
    fn diff_headers_urls_and_commands_survive() {
        for s in [
            "pointer \"/agentInput/fixture/source/locator\"",
            "GET /api/v1/users/42",
            "e.g. /foo/bar/spam.txt",
            "--- /dev/null",
            "+++ b/src/calc.py",
            "diff --git a/src/calc.py b/src/calc.py",
            "see https://example.org/a/b/c",
            "run /help now",
            "#!/usr/bin/env python3",
            "ratio 3/4/5",
            "<root><tmp>x</tmp></root>",
            r#"write_str(r"(?-u:\b{end-half})")"#,
            r"(abc)(?i:\1) and (?x:\n)",
            r#"spill("Methods %s:\n" % tag, '   except E as N:\n')"#,
        ] {
            assert_eq!(rw(s), s);
        }
    }

    #[test]
    fn users_and_hosts_are_collected() {
        let mut n = LocalNames::default();
        n.collect("cd /home/alice/x; C:\\Users\\bob\\y USER=carol HOSTNAME=box1 dave@devbox:~$ ls");
        n.collect("file%3A%2f%2fhome%2ffrank%2fwork and C%3A%5CUsers%5Cgrace%5Cx");
        assert_eq!(
            n.users.iter().collect::<Vec<_>>(),
            ["alice", "bob", "carol", "dave", "frank", "grace"]
        );
        assert_eq!(n.hosts.iter().collect::<Vec<_>>(), ["box1", "devbox"]);
        let mut m = LocalNames::default();
        m.collect("mail me at a@b.org, git@github.com:org/repo");
        assert!(m.users.is_empty(), "{:?}", m.users);
        // An scp-style URL is not a prompt; `...` names nobody.
        let mut o = LocalNames::default();
        o.collect("cvs -d :pserver:anoncvs@sources.example.org:/cvs/src co x; see /home/.../x");
        assert!(o.users.is_empty(), "{:?}", o.users);
        o.collect("erin@box2:/srv/app# make");
        assert_eq!(o.users.iter().collect::<Vec<_>>(), ["erin"]);
    }

    #[test]
    fn marker_gates_cover_every_marker() {
        for (m, _) in MARKERS {
            assert!(
                MARKER_GATES.iter().any(|g| m.contains(g)),
                "{m:?} holds no gate word: strings with it would be skipped"
            );
        }
    }

    #[test]
    fn both_prompt_forms_name_their_user_and_host() {
        for (s, user, host) in [
            ("alice@build-07:~/work$ make", "alice", "build-07"),
            ("[alice@build-07 work]$ make", "alice", "build-07"),
            ("[root@ci-3 /]# ls", "root", "ci-3"),
            (
                "jane@Janes-MacBook-Air repo % ls",
                "jane",
                "Janes-MacBook-Air",
            ),
            ("out\njane@mbp ~ % ls", "jane", "mbp"),
        ] {
            let (_, n) = walked(s);
            assert!(n.vouched.contains(user), "{s}: {n:?}");
            assert!(n.hosts.contains(host), "{s}: {n:?}");
        }
        // Not prompts: an address in brackets, an scp URL, a bracket
        // without its prompt character.
        for s in [
            "[mail alice@example.org now]",
            "anoncvs@sources.example.org:/cvs",
            "[alice@build-07 work] done",
            "mail alice@example.org now % off",
            "write to alice@team about 50 % off",
        ] {
            assert!(walked(s).1.vouched.is_empty(), "{s}");
        }
    }

    /// What `collect` finds when every string is walked, gate or not.
    fn walked(s: &str) -> (bool, LocalNames) {
        let mut n = LocalNames::default();
        let marked = n.markers(s);
        n.prompts(s);
        (marked, n)
    }

    proptest::proptest! {
        /// What the rewriter leaves, the final scan finds nothing in: no
        /// identifying prefix survives, with spaces, quotes, drives or
        /// homes anywhere.
        #[test]
        fn a_rewritten_string_holds_no_identifying_path(parts in proptest::collection::vec(
            proptest::sample::select(vec![
                "/home/", "/Users/", "C:\\Users\\", "C:/Users/", "/mnt/c/Users/", "/var/folders/",
                "/opt/", "/tmp/", "/work/", "\\\\fs\\s$\\", "/media/", "/run/media/", "Jane", " Doe",
                "dave9", "/", "\\", " ", "\"", "'", "\\ ", "%20", "x.py", ".", "-", ":", "\n", "[HOME]",
                "Documents and Settings", "Program Files",
            ]),
            0..14,
        )) {
            let s = parts.concat();
            let (out, _) = rewrite(&s, &[], &["Jane Doe".to_string()]);
            let left = local_paths(&out);
            proptest::prop_assert!(left.is_empty(), "{:?} -> {:?}: {:?}", s, out, left);
        }

        #[test]
        fn the_gate_changes_nothing(parts in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::sample::select(MARKERS.iter().map(|(m, _)| m.to_string()).collect::<Vec<_>>()),
                proptest::sample::select(vec![
                    "dave".to_string(), "/".into(), "\\".into(), "=".into(), "%2F".into(),
                    "hom".into(), "Use".into(), "NAM".into(), "@".into(), ":~$".into(), " ".into(),
                    "\"".into(), "USERS".into(), "HOME=".into(),
                ]),
                "[a-zA-Z0-9_./\\\\%=@:~$ -]{0,6}",
            ],
            0..12,
        )) {
            let s = parts.concat();
            let mut n = LocalNames::default();
            let marked = n.collect(&s);
            let (w_marked, w) = walked(&s);
            proptest::prop_assert_eq!(&n.users, &w.users, "{:?}", s);
            proptest::prop_assert_eq!(&n.hosts, &w.hosts, "{:?}", s);
            proptest::prop_assert_eq!(marked, w_marked || !w.users.is_empty() || !w.hosts.is_empty(), "{:?}", s);
        }
    }
}
