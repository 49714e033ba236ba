//! The one reader of tar archives, gzip- or zstd-compressed: packet
//! fixtures and `export unpack` both read through it, with one set of
//! rules and codes.
//!
//! The archive is read as a stream and every limit is enforced while
//! reading, never after: compressed bytes as they are read, expanded bytes
//! as they are inflated (a bomb stops at its limit), members as they are
//! listed, and each name-bearing header (a GNU long name, a PAX extended
//! header) before its data is read, so no header can make the reader hold
//! more than [`MAX_NAME_BYTES`] of a name or [`MAX_PAX_BYTES`] of a PAX
//! header. Integrity is checked to the last byte: every gzip member's CRC
//! and length, every zstd frame (and its checksum when it has one), the
//! tar end marker (two zero blocks), and nothing but zero padding after
//! it or anything but another gzip member or zstd frame after the
//! compressed stream. A gzip stream of several members and a zstd stream
//! of several frames, skippable frames among them, are one stream, as
//! `gzip -t` and `zstd -t` read them.
//!
//! Only regular files and directories are accepted; links, devices, FIFOs,
//! sparse files and anything else are refused, and so are absolute,
//! traversing, non-canonical, aliasing, duplicate and case-colliding names,
//! a file that is also a directory of another member (checked as members
//! arrive, before anything is written for them), and AppleDouble `._`
//! files (metadata a macOS tar adds, never content).

use coffer_base::codes;
use std::collections::{HashMap, HashSet};
use std::io::{self, BufRead, Read};

use unicode_normalization::UnicodeNormalization;

/// Longest member name taken from a GNU long-name header or a PAX `path`.
pub const MAX_NAME_BYTES: u64 = 4 << 10;
/// Largest PAX extended header (local or global) read.
pub const MAX_PAX_BYTES: u64 = 64 << 10;
/// Largest zstd window a frame may ask for (2^24 = 16 MiB of decoder
/// memory); `zstd` itself uses 2^21-2^23 up to level 19.
const ZSTD_WINDOW_LOG_MAX: u32 = 24;
/// The reader's buffer over the compressed bytes.
const SOURCE_BUFFER: usize = 64 << 10;
const BLOCK: u64 = 512;

/// How much an archive may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchiveLimits {
    /// Bytes of the compressed archive file.
    pub max_compressed: u64,
    /// Bytes of the decompressed tar stream.
    pub max_expanded: u64,
    /// Files and directories in the archive.
    pub max_members: u64,
}

/// The compression of an archive, from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// One or more gzip members.
    Gzip,
    /// One or more zstd frames (skippable frames included).
    Zstd,
}

impl Compression {
    /// The compression whose magic number `head` starts with.
    fn of(head: &[u8]) -> Option<Compression> {
        match head {
            [0x1f, 0x8b, ..] => Some(Compression::Gzip),
            [0x28, 0xb5, 0x2f, 0xfd, ..] => Some(Compression::Zstd),
            [b, 0x2a, 0x4d, 0x18, ..] if b & 0xf0 == 0x50 => Some(Compression::Zstd),
            _ => None,
        }
    }
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

/// The code an `on_file` callback gives a failure to read the member's
/// stream: the archive's fault (it is reported as corrupt, or as the limit
/// that stopped the stream), not the callback's.
pub const READ_FAILED: &str = codes::io::ARCHIVE_READ;

/// An [`ArchiveError`] about `member`.
pub fn refuse(code: &'static str, member: &str, message: String) -> ArchiveError {
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
    tripped: bool,
}

impl<R> Limited<R> {
    fn new(inner: R, max: u64) -> Self {
        Limited {
            inner,
            count: 0,
            max,
            tripped: false,
        }
    }
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // Ask for at most one byte past the limit, so a bomb cannot make us
        // inflate more than that.
        let room = (self.max + 1).saturating_sub(self.count);
        if room == 0 {
            self.tripped = true;
            return Err(io::Error::other("limit"));
        }
        let want = buf.len().min(room.min(usize::MAX as u64) as usize);
        let n = self.inner.read(&mut buf[..want])?;
        self.count += n as u64;
        if self.count > self.max {
            self.tripped = true;
            return Err(io::Error::other("limit"));
        }
        Ok(n)
    }
}

/// A buffered reader that can look a few bytes ahead without consuming
/// them (what follows a gzip member or zstd frame decides whether another
/// one starts).
struct Source<R> {
    inner: R,
    buf: Box<[u8]>,
    pos: usize,
    end: usize,
}

impl<R: Read> Source<R> {
    fn new(inner: R) -> Self {
        Source {
            inner,
            buf: vec![0; SOURCE_BUFFER].into_boxed_slice(),
            pos: 0,
            end: 0,
        }
    }

    /// The next `n` bytes (fewer only at the end of the input), unconsumed.
    fn peek(&mut self, n: usize) -> io::Result<&[u8]> {
        if self.end - self.pos < n {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
            while self.end < n {
                match self.inner.read(&mut self.buf[self.end..]) {
                    Ok(0) => break,
                    Ok(k) => self.end += k,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(&self.buf[self.pos..self.end.min(self.pos + n)])
    }
}

impl<R: Read> Read for Source<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = {
            let have = self.fill_buf()?;
            let n = have.len().min(out.len());
            out[..n].copy_from_slice(&have[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl<R: Read> BufRead for Source<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos == self.end {
            self.pos = 0;
            self.end = 0;
            loop {
                match self.inner.read(&mut self.buf) {
                    Ok(k) => {
                        self.end = k;
                        break;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(&self.buf[self.pos..self.end])
    }

    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.end);
    }
}

/// The decoder of the member or frame being read.
enum Stage<'s, R: Read> {
    Gzip(Box<flate2::bufread::GzDecoder<&'s mut Source<R>>>),
    Zstd(zstd::stream::read::Decoder<'static, &'s mut Source<R>>),
    Done,
}

/// The decompressed tar stream: gzip members or zstd frames one after the
/// other, each checked to its end, and nothing else.
struct Decompressed<'s, R: Read> {
    stage: Stage<'s, R>,
    format: Compression,
    /// Set when bytes that start no member or frame followed one.
    trailing: bool,
}

impl<'s, R: Read> Decompressed<'s, R> {
    fn start(src: &'s mut Source<R>, format: Compression) -> io::Result<Self> {
        Ok(Decompressed {
            stage: Self::stage(src, format)?,
            format,
            trailing: false,
        })
    }

    fn stage(src: &'s mut Source<R>, format: Compression) -> io::Result<Stage<'s, R>> {
        Ok(match format {
            Compression::Gzip => Stage::Gzip(Box::new(flate2::bufread::GzDecoder::new(src))),
            Compression::Zstd => {
                let mut d = zstd::stream::read::Decoder::with_buffer(src)?.single_frame();
                d.window_log_max(ZSTD_WINDOW_LOG_MAX)?;
                Stage::Zstd(d)
            }
        })
    }
}

impl<R: Read> Read for Decompressed<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let n = match &mut self.stage {
                Stage::Gzip(d) => d.read(buf)?,
                Stage::Zstd(d) => d.read(buf)?,
                Stage::Done => return Ok(0),
            };
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            // One member or frame ended, checked: what follows it?
            let src = match std::mem::replace(&mut self.stage, Stage::Done) {
                Stage::Gzip(d) => d.into_inner(),
                Stage::Zstd(d) => d.finish(),
                Stage::Done => unreachable!("returned above"),
            };
            let head = src.peek(4)?;
            if head.is_empty() {
                return Ok(0);
            }
            if Compression::of(head) != Some(self.format) {
                self.trailing = true;
                return Err(io::Error::other("data after the compressed stream"));
            }
            self.stage = Self::stage(src, self.format)?;
        }
    }
}

/// Counts the bytes the tar reader consumed.
struct Counted<R> {
    inner: R,
    count: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count += n as u64;
        Ok(n)
    }
}

/// A member's data, which must be as long as its header says: an archive
/// that ends first is corrupt, never a shorter file.
struct Exact<'e, R: ?Sized> {
    inner: &'e mut R,
    left: u64,
}

impl<R: Read + ?Sized> Read for Exact<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            return Ok(0);
        }
        let want = buf.len().min(self.left.min(usize::MAX as u64) as usize);
        let n = self.inner.read(&mut buf[..want])?;
        if n == 0 && want > 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the archive ends inside a member",
            ));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

/// A caller's own rule for member names, checked after the reader's and
/// before the member is compared with the others (so its code wins).
pub type NameRule<'a> = &'a dyn Fn(&str, MemberKind) -> Result<(), ArchiveError>;

/// No names refused beyond the reader's own.
pub const ANY_NAME: NameRule<'static> = &|_, _| Ok(());

/// Reads the archive from `input` (its compression must be one of
/// `formats`), calling `on_file` with each regular file's content stream,
/// which yields exactly the member's size or fails (`on_file` must read it
/// to its end, or the read fails; it reports such a failure with
/// [`READ_FAILED`]). Returns the members in archive order.
pub fn read_archive(
    input: &mut dyn Read,
    limits: ArchiveLimits,
    formats: &[Compression],
    name_rule: NameRule<'_>,
    on_file: &mut dyn FnMut(&Member, &mut dyn Read) -> Result<(), ArchiveError>,
) -> Result<Vec<Member>, ArchiveError> {
    let mut source = Source::new(Limited::new(input, limits.max_compressed));
    let (result, expanded_tripped, trailing) = match source.peek(4).map(Compression::of) {
        Err(e) => (Err(read_error(&e)), false, false),
        Ok(Some(format)) if formats.contains(&format) => {
            match Decompressed::start(&mut source, format) {
                Err(e) => (Err(read_error(&e)), false, false),
                Ok(mut decoded) => {
                    let mut expanded = Limited::new(&mut decoded, limits.max_expanded);
                    let mut tar = Counted {
                        inner: &mut expanded,
                        count: 0,
                    };
                    let result = read_entries(&mut tar, limits, name_rule, on_file).and_then(
                        |(members, data_end)| {
                            end_of_archive(&mut tar, data_end)?;
                            Ok(members)
                        },
                    );
                    let tripped = expanded.tripped;
                    (result, tripped, decoded.trailing)
                }
            }
        }
        Ok(_) => {
            let names: Vec<&str> = formats
                .iter()
                .map(|f| match f {
                    Compression::Gzip => "gzip",
                    Compression::Zstd => "zstd",
                })
                .collect();
            let why = format!("not a tar archive compressed with {}", names.join(" or "));
            (
                Err(refuse(codes::validation::ARCHIVE_FORMAT, "", why)),
                false,
                false,
            )
        }
    };
    let compressed_tripped = source.inner.tripped;
    // A limit or trailing bytes met inside a member's stream surface in
    // `on_file` as a read error: what tripped decides the code.
    match result {
        Err(_) if compressed_tripped => Err(refuse(
            codes::limit::ARCHIVE_COMPRESSED_BYTES,
            "",
            format!(
                "the archive is larger than {} compressed bytes",
                limits.max_compressed
            ),
        )),
        Err(_) if expanded_tripped => Err(refuse(
            codes::limit::ARCHIVE_EXPANDED_BYTES,
            "",
            format!("the archive expands past {} bytes", limits.max_expanded),
        )),
        Err(_) if trailing => Err(trailing_data("data after the end of the compressed stream")),
        Err(e) if e.code == READ_FAILED => Err(refuse(
            codes::validation::ARCHIVE_CORRUPT,
            &e.member,
            e.message,
        )),
        other => other,
    }
}

/// An I/O failure while reading the archive: the archive is corrupt.
fn read_error(e: &io::Error) -> ArchiveError {
    refuse(
        codes::validation::ARCHIVE_CORRUPT,
        "",
        format!("reading the archive: {e}"),
    )
}

fn trailing_data(what: &str) -> ArchiveError {
    refuse(
        codes::validation::ARCHIVE_TRAILING_DATA,
        "",
        format!("{what}; refused rather than ignored"),
    )
}

/// Checks what follows the last member, whose data (with its padding)
/// ends at `data_end` of the tar stream: the end marker (two zero blocks,
/// of which the tar reader read the first), then only zero padding, to the
/// end of the decompressed stream (so every gzip trailer and zstd frame is
/// checked too).
fn end_of_archive<R: Read>(tar: &mut Counted<R>, data_end: u64) -> Result<(), ArchiveError> {
    if tar.count < data_end + BLOCK {
        return Err(refuse(
            codes::validation::ARCHIVE_CORRUPT,
            "",
            "the archive ends without its end marker (two zero blocks)".into(),
        ));
    }
    let mut zeros = 0u64;
    let mut buf = [0u8; 8192];
    loop {
        match tar.read(&mut buf) {
            Ok(0) => break,
            Ok(n) if buf[..n].iter().any(|&b| b != 0) => {
                return Err(trailing_data("data after the end of the tar archive"))
            }
            Ok(n) => zeros += n as u64,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(read_error(&e)),
        }
    }
    if zeros < BLOCK {
        return Err(refuse(
            codes::validation::ARCHIVE_CORRUPT,
            "",
            "the archive ends after one zero block; its end marker is two".into(),
        ));
    }
    Ok(())
}

/// Names and sizes the extension headers before a member set for it.
#[derive(Default)]
struct Pending {
    /// From a GNU long-name header.
    long_name: Option<Vec<u8>>,
    /// From a PAX header's `path`.
    pax_path: Option<Vec<u8>>,
    /// From a PAX header's `size`.
    pax_size: Option<u64>,
    /// A PAX header described a sparse file.
    sparse: bool,
    /// Some extension header was read (so a member must follow).
    any: bool,
}

/// Reads a name-bearing header's data, refusing it unread past `max`.
fn header_data(
    entry: &mut dyn Read,
    size: u64,
    max: u64,
    what: &str,
) -> Result<Vec<u8>, ArchiveError> {
    if size > max {
        return Err(refuse(
            codes::limit::ARCHIVE_MEMBER_NAME,
            "",
            format!("a {what} of {size} bytes (at most {max} are read)"),
        ));
    }
    let mut data = Vec::with_capacity(size as usize);
    Exact {
        inner: entry,
        left: size,
    }
    .read_to_end(&mut data)
    .map_err(|e| read_error(&e))?;
    Ok(data)
}

/// Applies a PAX extended header's records (`<len> <key>=<value>\n`).
fn pax_records(data: &[u8], pending: &mut Pending) -> Result<(), ArchiveError> {
    let bad = || {
        refuse(
            codes::validation::ARCHIVE_CORRUPT,
            "",
            "a PAX extended header record is malformed".into(),
        )
    };
    let mut rest = data;
    while !rest.is_empty() {
        let space = rest.iter().position(|&b| b == b' ').ok_or_else(bad)?;
        let len: usize = std::str::from_utf8(&rest[..space])
            .ok()
            .and_then(|s| s.parse().ok())
            .filter(|&l| l > space + 1 && l <= rest.len())
            .ok_or_else(bad)?;
        let record = &rest[space + 1..len];
        let record = record.strip_suffix(b"\n").ok_or_else(bad)?;
        let eq = record.iter().position(|&b| b == b'=').ok_or_else(bad)?;
        let (key, value) = (&record[..eq], &record[eq + 1..]);
        match key {
            b"path" => {
                if value.len() as u64 > MAX_NAME_BYTES {
                    return Err(refuse(
                        codes::limit::ARCHIVE_MEMBER_NAME,
                        "",
                        format!("a PAX path of {} bytes", value.len()),
                    ));
                }
                pending.pax_path = Some(value.to_vec());
            }
            b"size" => {
                let size = std::str::from_utf8(value)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(bad)?;
                pending.pax_size = Some(size);
            }
            k if k.starts_with(b"GNU.sparse.") => pending.sparse = true,
            _ => {}
        }
        rest = &rest[len..];
    }
    Ok(())
}

/// The members of the tar stream, and where the last one's data ends.
fn read_entries(
    tar_stream: &mut dyn Read,
    limits: ArchiveLimits,
    name_rule: NameRule<'_>,
    on_file: &mut dyn FnMut(&Member, &mut dyn Read) -> Result<(), ArchiveError>,
) -> Result<(Vec<Member>, u64), ArchiveError> {
    let mut archive = tar::Archive::new(tar_stream);
    let mut members = Vec::new();
    let mut names = Names::default();
    let mut pending = Pending::default();
    let mut data_end = 0u64;
    // Raw: extension headers come as entries, read here under bounds.
    let entries = archive.entries().map_err(|e| read_error(&e))?.raw(true);
    for entry in entries {
        let mut entry = entry.map_err(|e| read_error(&e))?;
        let size = entry.size();
        data_end = entry.raw_file_position() + size.div_ceil(BLOCK) * BLOCK;
        let et = entry.header().entry_type();
        if read_extension(&mut entry, et, size, &mut pending)? {
            continue;
        }
        let mut header = std::mem::take(&mut pending);
        let raw = match (header.pax_path.take(), header.long_name.take()) {
            (Some(p), _) | (None, Some(p)) => p,
            (None, None) => entry.path_bytes().into_owned(),
        };
        let kind = member_header(&raw, et, &header, size, members.len(), limits)?;
        let path = check_member_name(&raw, kind == MemberKind::Dir)?;
        name_rule(&path, kind)?;
        names.admit(&path, kind)?;
        let mode = entry.header().mode().map_err(|e| read_error(&e))?;
        let member = Member {
            mode: if kind == MemberKind::Dir || mode & 0o100 != 0 {
                0o755
            } else {
                0o644
            },
            size: if kind == MemberKind::File { size } else { 0 },
            path,
            kind,
        };
        if kind == MemberKind::File {
            on_file(
                &member,
                &mut Exact {
                    inner: &mut entry,
                    left: size,
                },
            )?;
        }
        members.push(member);
    }
    if pending.any {
        return Err(refuse(
            codes::validation::ARCHIVE_CORRUPT,
            "",
            "the archive ends after an extension header, before its member".into(),
        ));
    }
    Ok((members, data_end))
}

/// Reads an extension header (GNU long name or link, PAX local or global)
/// into `pending`, under its bound; false when `entry` is a member.
fn read_extension(
    entry: &mut dyn Read,
    et: tar::EntryType,
    size: u64,
    pending: &mut Pending,
) -> Result<bool, ArchiveError> {
    if et.is_gnu_longname() {
        let mut name = header_data(entry, size, MAX_NAME_BYTES, "GNU long name")?;
        while name.last() == Some(&0) {
            name.pop();
        }
        (pending.long_name, pending.any) = (Some(name), true);
    } else if et.is_gnu_longlink() {
        // A link's target: links are refused when their member comes.
        header_data(entry, size, MAX_NAME_BYTES, "GNU long link name")?;
        pending.any = true;
    } else if et.is_pax_local_extensions() {
        let data = header_data(entry, size, MAX_PAX_BYTES, "PAX extended header")?;
        pax_records(&data, pending)?;
        pending.any = true;
    } else if et.is_pax_global_extensions() {
        // Defaults for every later member (times, owners): none of
        // them is kept, but the header is still bounded.
        header_data(entry, size, MAX_PAX_BYTES, "PAX global header")?;
    } else {
        return Ok(false);
    }
    Ok(true)
}

/// The kind of the member named `raw`, after the checks its header alone
/// decides: no sparse member, a PAX size that agrees, room under the
/// member limit (`count` admitted so far), no file name ending in `/`.
fn member_header(
    raw: &[u8],
    et: tar::EntryType,
    header: &Pending,
    size: u64,
    count: usize,
    limits: ArchiveLimits,
) -> Result<MemberKind, ArchiveError> {
    let shown = String::from_utf8_lossy(raw).into_owned();
    let kind = member_kind(et, &shown)?;
    if header.sparse {
        return Err(refuse(
            codes::validation::ARCHIVE_MEMBER_TYPE,
            &shown,
            format!("{shown:?}: sparse member"),
        ));
    }
    if header.pax_size.is_some_and(|s| s != size) {
        return Err(refuse(
            codes::validation::ARCHIVE_CORRUPT,
            &shown,
            format!("{shown:?}: its PAX size differs from its header's"),
        ));
    }
    if count as u64 >= limits.max_members {
        return Err(refuse(
            codes::limit::ARCHIVE_MEMBERS,
            "",
            format!("more than {} members", limits.max_members),
        ));
    }
    if kind == MemberKind::File && raw.ends_with(b"/") {
        return Err(refuse(
            codes::validation::ARCHIVE_NONCANONICAL_NAME,
            &shown,
            format!("{shown:?}: a file name ending in '/'"),
        ));
    }
    Ok(kind)
}

/// The names admitted so far, to refuse each member that would alias or
/// clash with an earlier one before anything is written for it.
#[derive(Default)]
struct Names {
    exact: HashSet<String>,
    /// Case-folded, NFC-normalized name -> the name it came from.
    folded: HashMap<String, String>,
    files: HashSet<String>,
    /// Every directory a member implies (its parents), or is.
    dirs: HashSet<String>,
}

impl Names {
    fn admit(&mut self, path: &str, kind: MemberKind) -> Result<(), ArchiveError> {
        if !self.exact.insert(path.to_string()) {
            return Err(refuse(
                codes::validation::ARCHIVE_DUPLICATE_MEMBER,
                path,
                format!("{path:?} appears twice"),
            ));
        }
        // Names that differ only by case or Unicode normalization (NFC vs
        // NFD) name the same file on common filesystems.
        let f: String = path.nfc().collect::<String>().to_lowercase();
        if let Some(other) = self.folded.insert(f, path.to_string()) {
            return Err(refuse(
                codes::validation::ARCHIVE_CASE_COLLISION,
                path,
                format!(
                    "{path:?} collides with {other:?} under case folding or Unicode normalization"
                ),
            ));
        }
        let conflict = |a: &str, b: &str| {
            Err(refuse(
                codes::validation::ARCHIVE_PATH_CONFLICT,
                a,
                format!("{a:?} is below {b:?}, which is a file"),
            ))
        };
        let mut prefix = path;
        while let Some(i) = prefix.rfind('/') {
            prefix = &prefix[..i];
            if self.files.contains(prefix) {
                return conflict(path, prefix);
            }
            self.dirs.insert(prefix.to_string());
        }
        match kind {
            MemberKind::File if self.dirs.contains(path) => {
                let below = self
                    .exact
                    .iter()
                    .find(|m| m.starts_with(&format!("{path}/")))
                    .cloned()
                    .unwrap_or_default();
                conflict(&below, path)
            }
            MemberKind::File => {
                self.files.insert(path.to_string());
                Ok(())
            }
            MemberKind::Dir => {
                self.dirs.insert(path.to_string());
                Ok(())
            }
        }
    }
}

/// Checks a member name; returns the canonical form (directories lose their
/// trailing slash).
pub fn check_member_name(raw: &[u8], is_dir: bool) -> Result<String, ArchiveError> {
    let shown = String::from_utf8_lossy(raw).into_owned();
    let name = std::str::from_utf8(raw).map_err(|_| {
        refuse(
            codes::validation::ARCHIVE_MEMBER_NAME,
            &shown,
            format!("{shown:?}: name is not UTF-8"),
        )
    })?;
    if name.starts_with('/') {
        return Err(refuse(
            codes::validation::ARCHIVE_ABSOLUTE_PATH,
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
            codes::validation::ARCHIVE_PATH_TRAVERSAL,
            name,
            format!("{name:?}: '..' in member name"),
        ));
    }
    if trimmed.is_empty() || segments.iter().any(|s| s.is_empty() || *s == ".") {
        return Err(refuse(
            codes::validation::ARCHIVE_NONCANONICAL_NAME,
            name,
            format!("{name:?}: not a canonical relative path (empty or '.' segment)"),
        ));
    }
    use crate::bundle::safe_path::{MAX_PATH_BYTES, MAX_SEGMENTS, MAX_SEGMENT_BYTES};
    if trimmed.len() > MAX_PATH_BYTES
        || segments.len() > MAX_SEGMENTS
        || segments.iter().any(|s| s.len() > MAX_SEGMENT_BYTES)
    {
        return Err(refuse(
            codes::limit::ARCHIVE_MEMBER_NAME,
            name,
            format!("{name:?}: name too long"),
        ));
    }
    for s in &segments {
        if s.eq_ignore_ascii_case(".git") {
            return Err(refuse(
                codes::validation::ARCHIVE_MEMBER_NAME,
                name,
                format!("{name:?}: .git segment"),
            ));
        }
        if s.chars().any(|c| c.is_control() || c == '\\') {
            return Err(refuse(
                codes::validation::ARCHIVE_MEMBER_NAME,
                name,
                format!("{name:?}: control character or backslash"),
            ));
        }
        if let Some(why) = aliases_elsewhere(s) {
            return Err(refuse(
                codes::validation::ARCHIVE_MEMBER_NAME,
                name,
                format!("{name:?}: segment {s:?} {why}"),
            ));
        }
        if crate::bundle::safe_path::is_device(s) {
            return Err(refuse(
                codes::validation::DEVICE_NAME,
                name,
                format!("{name:?}: segment {s:?} is a Windows device name"),
            ));
        }
    }
    Ok(trimmed.to_string())
}

/// Why a name segment is not content, or would name something else on
/// another system (and so could alias `.git` or another member when the
/// archive is unpacked there), or `None`. Checked: AppleDouble `._` files
/// (a macOS tar's metadata), trailing dots and spaces (Windows drops them:
/// `.git.` is `.git`), 8.3 short names (`GIT~1` can be `.git` on NTFS),
/// and invisible format characters (zero-width and bidirectional controls
/// make two names look alike, or one look like another).
fn aliases_elsewhere(segment: &str) -> Option<&'static str> {
    if segment.starts_with("._") {
        return Some("is AppleDouble metadata (a macOS tar's ._ file), not content");
    }
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
                codes::validation::ARCHIVE_LINK,
                shown,
                format!("{shown:?}: links are not allowed in archives"),
            ))
        }
        tar::EntryType::Char | tar::EntryType::Block | tar::EntryType::Fifo => {
            return Err(refuse(
                codes::validation::ARCHIVE_SPECIAL_MEMBER,
                shown,
                format!("{shown:?}: device or FIFO member"),
            ))
        }
        other => {
            return Err(refuse(
                codes::validation::ARCHIVE_MEMBER_TYPE,
                shown,
                format!("{shown:?}: unsupported member type {other:?}"),
            ))
        }
    })
}

#[cfg(test)]
mod tests;
