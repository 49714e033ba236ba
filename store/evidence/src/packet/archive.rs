//! The bounded fixture reader: a TAR+gzip archive read as a stream, with
//! every limit enforced while reading, never after.
//!
//! Compressed bytes are counted as they are read, expanded bytes as they are
//! inflated (so a gzip bomb stops at `maxExpandedBytes`), members as they are
//! listed. Only regular files and directories are accepted; links, devices
//! and FIFOs are refused, and so are absolute, traversing, non-canonical,
//! duplicate and case-colliding names.

use std::collections::{HashMap, HashSet};
use std::io::{self, Read};

use unicode_normalization::UnicodeNormalization;

/// The packet's declared limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchiveLimits {
    /// Bytes of the .tar.gz file.
    pub max_compressed: u64,
    /// Bytes of the inflated tar stream.
    pub max_expanded: u64,
    /// Entries in the archive.
    pub max_members: u64,
}

/// What a member is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MemberKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
}

/// One accepted member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Canonical relative path (no trailing slash).
    pub path: String,
    /// File or directory.
    pub kind: MemberKind,
    /// 0o755 if the owner execute bit was set, else 0o644 (directories 0o755).
    pub mode: u32,
    /// File size (0 for directories).
    pub size: u64,
}

/// Why an archive was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ArchiveError {
    /// Stable code.
    pub code: &'static str,
    /// The member (or empty for the archive itself).
    pub member: String,
    /// Explanation.
    pub message: String,
}

fn refuse(code: &'static str, member: &str, message: String) -> ArchiveError {
    ArchiveError {
        code,
        member: member.to_string(),
        message,
    }
}

/// Counts bytes through a reader and fails past a limit.
struct Limited<R> {
    inner: R,
    count: u64,
    max: u64,
    code: &'static str,
    tripped: bool,
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // Ask for at most one byte past the limit, so a bomb cannot make us
        // inflate more than that.
        let room = (self.max + 1).saturating_sub(self.count);
        if room == 0 {
            self.tripped = true;
            return Err(io::Error::other(self.code));
        }
        let want = buf.len().min(room.min(usize::MAX as u64) as usize);
        let n = self.inner.read(&mut buf[..want])?;
        self.count += n as u64;
        if self.count > self.max {
            self.tripped = true;
            return Err(io::Error::other(self.code));
        }
        Ok(n)
    }
}

/// Checks a member name; returns the canonical form (directories lose their
/// trailing slash).
pub fn check_member_name(raw: &[u8], is_dir: bool) -> Result<String, ArchiveError> {
    let shown = String::from_utf8_lossy(raw).into_owned();
    let name = std::str::from_utf8(raw).map_err(|_| {
        refuse(
            "validation.archive_member_name",
            &shown,
            format!("{shown:?}: name is not UTF-8"),
        )
    })?;
    if name.starts_with('/') {
        return Err(refuse(
            "validation.archive_absolute_path",
            name,
            format!("{name:?}: absolute member name"),
        ));
    }
    let trimmed = if is_dir {
        name.strip_suffix('/').unwrap_or(name)
    } else {
        name
    };
    let segments: Vec<&str> = trimmed.split('/').collect();
    if segments.contains(&"..") {
        return Err(refuse(
            "validation.archive_path_traversal",
            name,
            format!("{name:?}: '..' in member name"),
        ));
    }
    if trimmed.is_empty() || segments.iter().any(|s| s.is_empty() || *s == ".") {
        return Err(refuse(
            "validation.archive_noncanonical_name",
            name,
            format!("{name:?}: not a canonical relative path (empty or '.' segment)"),
        ));
    }
    if trimmed.len() > super::super::bundle::safe_path::MAX_PATH_BYTES
        || segments.len() > super::super::bundle::safe_path::MAX_SEGMENTS
        || segments
            .iter()
            .any(|s| s.len() > super::super::bundle::safe_path::MAX_SEGMENT_BYTES)
    {
        return Err(refuse(
            "limit.archive_member_name",
            name,
            format!("{name:?}: name too long"),
        ));
    }
    for s in &segments {
        if s.eq_ignore_ascii_case(".git") {
            return Err(refuse(
                "validation.archive_member_name",
                name,
                format!("{name:?}: .git segment"),
            ));
        }
        if s.chars().any(|c| c.is_control() || c == '\\') {
            return Err(refuse(
                "validation.archive_member_name",
                name,
                format!("{name:?}: control character or backslash"),
            ));
        }
        if let Some(why) = aliases_elsewhere(s) {
            return Err(refuse(
                "validation.archive_member_name",
                name,
                format!("{name:?}: segment {s:?} {why}"),
            ));
        }
        if crate::bundle::safe_path::is_device(s) {
            return Err(refuse(
                "validation.device_name",
                name,
                format!("{name:?}: segment {s:?} is a Windows device name"),
            ));
        }
    }
    Ok(trimmed.to_string())
}

/// Why a name segment would name something else on another system (and so
/// could alias `.git` or another member when the fixture is unpacked
/// there), or `None`. Checked: trailing dots and spaces (Windows drops
/// them: `.git.` is `.git`), 8.3 short names (`GIT~1` can be `.git` on
/// NTFS), and invisible format characters (zero-width and bidirectional
/// controls make two names look alike, or one look like another).
fn aliases_elsewhere(segment: &str) -> Option<&'static str> {
    if segment.ends_with('.') || segment.ends_with(' ') {
        return Some("ends in a dot or space, which Windows drops");
    }
    let stem = segment.split('.').next().unwrap_or("");
    if let Some((head, tail)) = stem.rsplit_once('~') {
        if !head.is_empty()
            && stem.len() <= 8
            && !tail.is_empty()
            && tail.bytes().all(|b| b.is_ascii_digit())
        {
            return Some("has the form of an 8.3 short name (like GIT~1)");
        }
    }
    let invisible = |c: char| {
        matches!(c,
            '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}'
            | '\u{17B5}' | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{206F}' | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}' | '\u{FFA0}' | '\u{FFF0}'..='\u{FFF8}'
            | '\u{E0000}'..='\u{E0FFF}')
    };
    if segment.chars().any(invisible) {
        return Some("holds an invisible (zero-width or bidirectional) character");
    }
    None
}

/// The kind of a tar member: files and directories only; links, devices,
/// FIFOs and anything else are refused with their own code.
pub fn member_kind(et: tar::EntryType, shown: &str) -> Result<MemberKind, ArchiveError> {
    Ok(match et {
        tar::EntryType::Regular | tar::EntryType::Continuous => MemberKind::File,
        tar::EntryType::Directory => MemberKind::Dir,
        tar::EntryType::Symlink | tar::EntryType::Link => {
            return Err(refuse(
                "validation.archive_link",
                shown,
                format!("{shown:?}: links are not allowed in archives"),
            ))
        }
        tar::EntryType::Char | tar::EntryType::Block | tar::EntryType::Fifo => {
            return Err(refuse(
                "validation.archive_special_member",
                shown,
                format!("{shown:?}: device or FIFO member"),
            ))
        }
        other => {
            return Err(refuse(
                "validation.archive_member_type",
                shown,
                format!("{shown:?}: unsupported member type {other:?}"),
            ))
        }
    })
}

/// Reads the archive from `input`, calling `on_file` with each regular
/// file's content stream (which it must consume, or the read fails).
/// Returns the members in archive order.
pub fn read_archive(
    input: &mut dyn Read,
    limits: ArchiveLimits,
    on_file: &mut dyn FnMut(&Member, &mut dyn Read) -> Result<(), ArchiveError>,
) -> Result<Vec<Member>, ArchiveError> {
    // Our own buffer under the gzip decoder, so what follows its one member
    // is still there to be found below.
    let mut compressed = io::BufReader::new(Limited {
        inner: input,
        count: 0,
        max: limits.max_compressed,
        code: "limit.archive_compressed_bytes",
        tripped: false,
    });
    let gz = flate2::bufread::GzDecoder::new(&mut compressed);
    let mut expanded = Limited {
        inner: gz,
        count: 0,
        max: limits.max_expanded,
        code: "limit.archive_expanded_bytes",
        tripped: false,
    };
    let mut result = read_entries(&mut expanded, limits, on_file);
    if result.is_ok() {
        // Read to the end of the gzip stream, so its CRC and length trailer
        // are checked: a truncated archive must not pass because the tar
        // end marker happened to come first.
        // Past the end marker only zero padding may follow, and nothing
        // may follow the gzip member: trailing data (a second archive
        // concatenated to the first) would be ignored by one reader and
        // read by another.
        match zeros_to_end(&mut expanded) {
            Err(e) => {
                result = Err(refuse(
                    "io.archive_read",
                    "",
                    format!("reading the archive: {e}"),
                ))
            }
            Ok(false) => result = Err(trailing("data after the end of the tar archive")),
            Ok(true) => match io::BufRead::fill_buf(expanded.inner.get_mut()) {
                Ok([]) => {}
                Ok(_) => result = Err(trailing("data after the end of the gzip stream")),
                Err(e) => {
                    result = Err(refuse(
                        "io.archive_read",
                        "",
                        format!("reading the archive: {e}"),
                    ))
                }
            },
        }
    }
    let comp_tripped = expanded.inner.get_ref().get_ref().tripped;
    match result {
        Err(e) if e.code == "io.archive_read" && comp_tripped => Err(refuse(
            "limit.archive_compressed_bytes",
            "",
            format!(
                "archive is larger than {} compressed bytes",
                limits.max_compressed
            ),
        )),
        Err(e) if e.code == "io.archive_read" && expanded.tripped => Err(refuse(
            "limit.archive_expanded_bytes",
            "",
            format!("archive expands past {} bytes", limits.max_expanded),
        )),
        Err(e) if e.code == "io.archive_read" => {
            Err(refuse("validation.archive_corrupt", &e.member, e.message))
        }
        other => other,
    }
}

fn trailing(what: &str) -> ArchiveError {
    refuse(
        "validation.archive_trailing_data",
        "",
        format!("{what}; refused rather than ignored"),
    )
}

/// Reads `r` to its end; true when every byte was zero.
fn zeros_to_end(r: &mut dyn Read) -> io::Result<bool> {
    let mut buf = [0u8; 8192];
    loop {
        match r.read(&mut buf) {
            Ok(0) => return Ok(true),
            Ok(n) if buf[..n].iter().any(|&b| b != 0) => return Ok(false),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

fn read_entries(
    tar_stream: &mut dyn Read,
    limits: ArchiveLimits,
    on_file: &mut dyn FnMut(&Member, &mut dyn Read) -> Result<(), ArchiveError>,
) -> Result<Vec<Member>, ArchiveError> {
    let io_err = |e: io::Error| refuse("io.archive_read", "", format!("reading the archive: {e}"));
    let mut archive = tar::Archive::new(tar_stream);
    let mut members = Vec::new();
    let mut exact: HashSet<String> = HashSet::new();
    let mut folded: HashMap<String, String> = HashMap::new();
    for entry in archive.entries().map_err(io_err)? {
        let mut entry = entry.map_err(io_err)?;
        if members.len() as u64 >= limits.max_members {
            return Err(refuse(
                "limit.archive_members",
                "",
                format!("more than {} members", limits.max_members),
            ));
        }
        let header = entry.header();
        let et = header.entry_type();
        let raw = entry.path_bytes().into_owned();
        let shown = String::from_utf8_lossy(&raw).into_owned();
        let kind = member_kind(et, &shown)?;
        if kind == MemberKind::File && raw.ends_with(b"/") {
            return Err(refuse(
                "validation.archive_noncanonical_name",
                &shown,
                format!("{shown:?}: a file name ending in '/'"),
            ));
        }
        let path = check_member_name(&raw, kind == MemberKind::Dir)?;
        if !exact.insert(path.clone()) {
            return Err(refuse(
                "validation.archive_duplicate_member",
                &path,
                format!("{path:?} appears twice"),
            ));
        }
        no_fold_collision(&mut folded, &path)?;
        let mode = header.mode().map_err(io_err)?;
        let member = Member {
            mode: if kind == MemberKind::Dir || mode & 0o100 != 0 {
                0o755
            } else {
                0o644
            },
            size: if kind == MemberKind::File {
                entry.size()
            } else {
                0
            },
            path,
            kind,
        };
        if kind == MemberKind::File {
            on_file(&member, &mut entry)?;
        }
        members.push(member);
    }
    no_file_is_a_directory(&members)?;
    Ok(members)
}

/// Names that differ only by case or Unicode normalization (NFC vs NFD)
/// name the same file on common filesystems.
fn no_fold_collision(folded: &mut HashMap<String, String>, path: &str) -> Result<(), ArchiveError> {
    let f: String = path.nfc().collect::<String>().to_lowercase();
    match folded.insert(f, path.to_string()) {
        Some(other) => Err(refuse(
            "validation.archive_case_collision",
            path,
            format!("{path:?} collides with {other:?} under case folding or Unicode normalization"),
        )),
        None => Ok(()),
    }
}

/// A file may not also be a directory prefix of another member.
fn no_file_is_a_directory(members: &[Member]) -> Result<(), ArchiveError> {
    let files: HashSet<&str> = members
        .iter()
        .filter(|m| m.kind == MemberKind::File)
        .map(|m| m.path.as_str())
        .collect();
    for m in members {
        let mut prefix = m.path.as_str();
        while let Some(i) = prefix.rfind('/') {
            prefix = &prefix[..i];
            if files.contains(prefix) {
                return Err(refuse(
                    "validation.archive_path_conflict",
                    &m.path,
                    format!("{:?} is below {prefix:?}, which is a file", m.path),
                ));
            }
        }
    }
    Ok(())
}

/// Checks that every include path selects at least one member (itself or
/// something below it).
pub fn check_include_paths(members: &[Member], include: &[String]) -> Vec<(usize, String)> {
    include
        .iter()
        .enumerate()
        .filter(|(_, p)| {
            let below = format!("{p}/");
            !members
                .iter()
                .any(|m| m.path == **p || m.path.starts_with(&below))
        })
        .map(|(i, p)| {
            (
                i,
                format!("include path {p:?} selects no file or directory of the fixture"),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BIG: ArchiveLimits = ArchiveLimits {
        max_compressed: 1 << 30,
        max_expanded: 1 << 30,
        max_members: 100_000,
    };

    fn targz(build: impl FnOnce(&mut tar::Builder<Vec<u8>>)) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        build(&mut b);
        let tar_bytes = b.into_inner().unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, &tar_bytes).unwrap();
        gz.finish().unwrap()
    }

    fn file(b: &mut tar::Builder<Vec<u8>>, name: &str, data: &[u8]) {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Regular);
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        // Bypass the builder's own name checks: hostile names are the point.
        let raw = name.as_bytes();
        h.as_old_mut().name[..raw.len()].copy_from_slice(raw);
        h.set_cksum();
        b.append(&h, data).unwrap();
    }

    fn special(b: &mut tar::Builder<Vec<u8>>, name: &str, et: tar::EntryType, link: &str) {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(et);
        h.set_size(0);
        h.set_mode(0o777);
        h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        h.as_old_mut().linkname[..link.len()].copy_from_slice(link.as_bytes());
        h.set_cksum();
        b.append(&h, &[][..]).unwrap();
    }

    fn read(bytes: &[u8], limits: ArchiveLimits) -> Result<Vec<Member>, ArchiveError> {
        read_archive(&mut &bytes[..], limits, &mut |_, r| {
            std::io::copy(r, &mut std::io::sink())
                .map(|_| ())
                .map_err(|e| refuse("io.archive_read", "", e.to_string()))
        })
    }

    fn code(bytes: &[u8]) -> &'static str {
        read(bytes, BIG).err().map(|e| e.code).unwrap_or("ok")
    }

    #[test]
    fn ordinary_archives_list_their_members() {
        let a = targz(|b| {
            file(b, "README.md", b"hi");
            file(b, "src/main.rs", b"fn main() {}");
        });
        let m = read(&a, BIG).unwrap();
        assert_eq!(
            m.iter().map(|m| m.path.as_str()).collect::<Vec<_>>(),
            ["README.md", "src/main.rs"]
        );
        assert!(check_include_paths(&m, &["src".into(), "README.md".into()]).is_empty());
        assert_eq!(
            check_include_paths(&m, &["docs".into(), "sr".into()]).len(),
            2
        );
    }

    #[test]
    fn hostile_members_are_refused_with_their_codes() {
        assert_eq!(
            code(&targz(|b| file(b, "../x", b"x"))),
            "validation.archive_path_traversal"
        );
        assert_eq!(
            code(&targz(|b| file(b, "a/../../x", b"x"))),
            "validation.archive_path_traversal"
        );
        assert_eq!(
            code(&targz(|b| file(b, "/etc/passwd", b"x"))),
            "validation.archive_absolute_path"
        );
        assert_eq!(
            code(&targz(|b| file(b, "./a", b"x"))),
            "validation.archive_noncanonical_name"
        );
        assert_eq!(
            code(&targz(|b| file(b, "a//b", b"x"))),
            "validation.archive_noncanonical_name"
        );
        assert_eq!(
            code(&targz(|b| file(b, ".git/config", b"x"))),
            "validation.archive_member_name"
        );
        assert_eq!(
            code(&targz(|b| special(
                b,
                "link",
                tar::EntryType::Symlink,
                "/etc/passwd"
            ))),
            "validation.archive_link"
        );
        assert_eq!(
            code(&targz(|b| {
                file(b, "a", b"x");
                special(b, "hard", tar::EntryType::Link, "a")
            })),
            "validation.archive_link"
        );
        assert_eq!(
            code(&targz(|b| special(b, "fifo", tar::EntryType::Fifo, ""))),
            "validation.archive_special_member"
        );
        assert_eq!(
            code(&targz(|b| special(b, "dev", tar::EntryType::Char, ""))),
            "validation.archive_special_member"
        );
        assert_eq!(
            code(&targz(|b| {
                file(b, "a", b"1");
                file(b, "a", b"2")
            })),
            "validation.archive_duplicate_member"
        );
        assert_eq!(
            code(&targz(|b| {
                file(b, "Readme", b"1");
                file(b, "README", b"2")
            })),
            "validation.archive_case_collision"
        );
        assert_eq!(
            code(&targz(|b| {
                file(b, "a", b"1");
                file(b, "a/b", b"2")
            })),
            "validation.archive_path_conflict"
        );
        // "café" precomposed and decomposed name the same file.
        assert_eq!(
            code(&targz(|b| {
                file(b, "caf\u{e9}", b"1");
                file(b, "cafe\u{301}", b"2")
            })),
            "validation.archive_case_collision"
        );
    }

    #[test]
    fn names_that_alias_on_other_systems_are_refused() {
        for name in [
            ".git.",
            ".git ",
            "src/.GIT./config",
            "GIT~1",
            "git~1/config",
            "PROGR~12.txt",
            "a\u{200B}b",
            "readme\u{202E}txt.md",
            "\u{FEFF}x",
        ] {
            assert_eq!(
                code(&targz(|b| file(b, name, b"x"))),
                "validation.archive_member_name",
                "{name:?}"
            );
        }
        for name in ["CON", "src/nul.txt", "com1", "LPT9.log"] {
            assert_eq!(
                code(&targz(|b| file(b, name, b"x"))),
                "validation.device_name",
                "{name:?}"
            );
        }
        // Ordinary names with dots, tildes and non-ASCII letters pass.
        for name in [
            "a.b.c",
            "backup~",
            "x~y.txt",
            "long-name~12345.txt",
            "caf\u{e9}.md",
        ] {
            assert_eq!(code(&targz(|b| file(b, name, b"x"))), "ok", "{name:?}");
        }
    }

    #[test]
    fn data_after_the_end_of_the_tar_or_the_gzip_stream_is_refused() {
        let good = targz(|b| file(b, "a", b"x"));
        assert_eq!(code(&good), "ok");
        // A second archive concatenated as another gzip member.
        let mut two = good.clone();
        two.extend_from_slice(&targz(|b| file(b, "evil", b"y")));
        assert_eq!(code(&two), "validation.archive_trailing_data");
        // Garbage after the gzip stream.
        let mut junk = good.clone();
        junk.extend_from_slice(b"junk");
        assert_eq!(code(&junk), "validation.archive_trailing_data");
        // A member after the tar end marker, inside the one gzip member.
        let mut tar_bytes = {
            let mut b = tar::Builder::new(Vec::new());
            file(&mut b, "a", b"x");
            b.into_inner().unwrap()
        };
        let mut more = tar::Builder::new(Vec::new());
        file(&mut more, "hidden", b"y");
        tar_bytes.extend_from_slice(&more.into_inner().unwrap());
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, &tar_bytes).unwrap();
        assert_eq!(
            code(&gz.finish().unwrap()),
            "validation.archive_trailing_data"
        );
    }

    #[test]
    fn member_count_is_limited_at_the_boundary() {
        let a = targz(|b| (0..10).for_each(|i| file(b, &format!("f{i}"), b"x")));
        let at = ArchiveLimits {
            max_members: 10,
            ..BIG
        };
        assert!(read(&a, at).is_ok());
        let under = ArchiveLimits {
            max_members: 9,
            ..BIG
        };
        assert_eq!(read(&a, under).unwrap_err().code, "limit.archive_members");
    }

    #[test]
    fn a_gzip_bomb_stops_at_the_expanded_limit() {
        let zeros = vec![0u8; 64 << 20];
        let a = targz(|b| file(b, "bomb", &zeros));
        assert!(a.len() < 1 << 20, "the bomb is small compressed");
        let limits = ArchiveLimits {
            max_expanded: 1 << 20,
            ..BIG
        };
        let mut seen = 0u64;
        let e = read_archive(&mut &a[..], limits, &mut |_, r| {
            let mut buf = [0u8; 8192];
            loop {
                match r.read(&mut buf) {
                    Ok(0) => return Ok(()),
                    Ok(n) => seen += n as u64,
                    Err(e) => return Err(refuse("io.archive_read", "", e.to_string())),
                }
            }
        })
        .unwrap_err();
        assert_eq!(e.code, "limit.archive_expanded_bytes");
        assert!(seen <= 1 << 20, "stopped at the limit, read {seen}");
    }

    #[test]
    fn compressed_size_is_limited_while_reading() {
        let a = targz(|b| file(b, "x", &vec![7u8; 100_000]));
        let limits = ArchiveLimits {
            max_compressed: a.len() as u64 - 1,
            ..BIG
        };
        assert_eq!(
            read(&a, limits).unwrap_err().code,
            "limit.archive_compressed_bytes"
        );
        let limits = ArchiveLimits {
            max_compressed: a.len() as u64,
            ..BIG
        };
        assert!(read(&a, limits).is_ok());
    }

    #[test]
    fn truncated_gzip_is_corrupt() {
        let a = targz(|b| file(b, "x", &vec![7u8; 100_000]));
        assert_eq!(code(&a[..a.len() / 2]), "validation.archive_corrupt");
        // Cut only the gzip trailer: the tar end marker is intact.
        assert_eq!(code(&a[..a.len() - 4]), "validation.archive_corrupt");
    }
}
