//! `export pack` and `export unpack`: reproducible archives of an export.
//!
//! An archive holds `manifest.json` first, then the listed artifacts sorted
//! by path, as GNU tar members with mtime 0, uid/gid 0, no owner names and
//! mode 0644, compressed with zstd (`.tar.zst`, level 10, one thread) or
//! gzip (`.tar.gz`, for EBO's tools; no name, mtime 0). Same tree, same
//! archive bytes. Unpack is bounded, accepts only regular files at safe
//! paths, and publishes nothing until the unpacked tree passes the same
//! readback as `export verify`.

use std::io::{self, BufReader, Read, Write};
use std::path::Path;

use coffer_evidence::bundle::safe_path::{check_relative_path, MANIFEST};
use coffer_evidence::bundle::source::BundleDir;
use coffer_evidence::packet::archive::{check_member_name, member_kind, ArchiveError, MemberKind};
use coffer_store::digest::HashingWriter;
use coffer_store::issue::Issue;
use coffer_store::publish::{write_new_file, NewTree};
use serde_json::Value;

use crate::error::{ExportError, Result};
use crate::readback::{self, Expectations, ReadbackReport};

/// Largest total of member bytes unpacked.
pub const MAX_UNPACKED_BYTES: u64 = 512 << 20;
/// Most members an archive may hold.
pub const MAX_MEMBERS: usize = 10_000;
const ZSTD_LEVEL: i32 = 10;

/// Archive compression, from the file name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `.tar.zst`.
    Zstd,
    /// `.tar.gz` / `.tgz`.
    Gzip,
}

impl Format {
    /// The format an archive name asks for.
    pub fn from_name(p: &Path) -> Option<Format> {
        let n = p.file_name()?.to_str()?;
        if n.ends_with(".tar.zst") {
            Some(Format::Zstd)
        } else if n.ends_with(".tar.gz") || n.ends_with(".tgz") {
            Some(Format::Gzip)
        } else {
            None
        }
    }
}

/// What `pack` wrote.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PackOutcome {
    /// The archive.
    pub archive: String,
    /// Its SHA-256.
    pub digest: String,
    /// Its size.
    pub size_bytes: u64,
    /// Members written.
    pub members: usize,
}

fn member_header(size: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_size(size);
    h.set_mode(0o644);
    h.set_mtime(0);
    h.set_uid(0);
    h.set_gid(0);
    h.set_entry_type(tar::EntryType::Regular);
    h
}

/// Packs the export at `dest` (verified first) into a new `archive`.
pub fn pack(dest: &Path, archive: &Path) -> Result<PackOutcome> {
    let shown = archive.display().to_string();
    let format = Format::from_name(archive).ok_or_else(|| {
        ExportError::usage(
            "usage.archive_name",
            &shown,
            "the archive name must end in .tar.zst or .tar.gz",
        )
    })?;
    readback::verify(dest, &Expectations::default())?;
    // Read again as the readback did: one component at a time, never
    // through a symlink, regular files only, bounded.
    let tree = BundleDir::open(dest).map_err(|i| ExportError::Invalid(vec![i]))?;
    let (mut mf, _) = tree
        .open_evidence(MANIFEST)
        .map_err(|i| ExportError::Invalid(vec![i]))?;
    let manifest: Value =
        coffer_store::json::read_document(&mut mf, &coffer_store::json::Limits::DOCUMENT, MANIFEST)
            .map_err(|i| ExportError::Invalid(vec![i]))?;
    let mut paths: Vec<String> = manifest["artifacts"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x["relativePath"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    paths.sort();
    let mut members = vec![MANIFEST.to_string()];
    members.extend(paths);
    let count = members.len();
    // Hashed as it is written: the published archive is never reopened.
    let mut hashed = None;
    write_new_file(archive, |f| {
        let w = HashingWriter::new(io::BufWriter::new(f));
        let io_err = |e: io::Error| coffer_store::StoreError::io(archive, "write", e);
        let mut w = match format {
            Format::Zstd => {
                let enc = zstd::Encoder::new(w, ZSTD_LEVEL).map_err(io_err)?;
                let enc = write_members(&tree, &members, enc).map_err(io_err)?;
                enc.finish().map_err(io_err)?
            }
            Format::Gzip => {
                let enc = flate2::GzBuilder::new()
                    .mtime(0)
                    .write(w, flate2::Compression::default());
                let enc = write_members(&tree, &members, enc).map_err(io_err)?;
                enc.finish().map_err(io_err)?
            }
        };
        w.flush().map_err(io_err)?;
        let (_, d, n) = w.finish();
        hashed = Some((d.to_string(), n));
        Ok(())
    })?;
    let (digest, size) = hashed.expect("set when the archive was written");
    Ok(PackOutcome {
        archive: shown,
        digest,
        size_bytes: size,
        members: count,
    })
}

fn write_members<W: Write>(tree: &BundleDir, members: &[String], w: W) -> io::Result<W> {
    let mut b = tar::Builder::new(w);
    b.mode(tar::HeaderMode::Deterministic);
    for rel in members {
        let (f, _) = tree
            .open_evidence(rel)
            .map_err(|i| io::Error::other(i.message))?;
        let size = f.metadata()?.len();
        let mut h = member_header(size);
        b.append_data(&mut h, rel, f)?;
    }
    b.into_inner()
}

/// Counts decompressed bytes and stops past the limit (a bomb costs
/// bounded time and memory).
struct Bounded<R> {
    inner: R,
    seen: u64,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.seen += n as u64;
        // Tar framing (headers, padding) on top of member bytes.
        if self.seen > MAX_UNPACKED_BYTES + (MAX_MEMBERS as u64 + 2) * 1024 {
            return Err(io::Error::other(LIMIT_MARK));
        }
        Ok(n)
    }
}

const LIMIT_MARK: &str = "archive expands past its limit";

/// The archive's decompressed stream, by its magic bytes (zstd or gzip).
fn open_archive(archive: &Path) -> Result<Box<dyn Read>> {
    let mut f = coffer_store::input::open(archive)?;
    let mut magic = [0u8; 4];
    let n = f
        .read(&mut magic)
        .map_err(|e| ExportError::io(archive, "read", e))?;
    io::Seek::rewind(&mut f).map_err(|e| ExportError::io(archive, "seek", e))?;
    if n == 4 && magic == [0x28, 0xB5, 0x2F, 0xFD] {
        Ok(Box::new(
            zstd::Decoder::new(f).map_err(|e| ExportError::io(archive, "zstd", e))?,
        ))
    } else if n >= 2 && magic[..2] == [0x1f, 0x8b] {
        Ok(Box::new(flate2::read::MultiGzDecoder::new(BufReader::new(
            f,
        ))))
    } else {
        Err(ExportError::invalid(
            "validation.archive_format",
            &archive.display().to_string(),
            "not a zstd or gzip archive",
        ))
    }
}

/// Copies one member's bytes into `out` and syncs it. Reading the archive
/// and writing the tree fail for different reasons: a full disk is
/// io.no_space, not a bad archive (`read_failed` maps the former).
fn copy_member(
    member: &mut impl Read,
    out: &mut std::fs::File,
    written: &Path,
    read_failed: impl Fn(io::Error) -> ExportError,
) -> Result<()> {
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = match member.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(read_failed(e)),
        };
        out.write_all(&buf[..n])
            .map_err(|e| ExportError::io(written, "write", e))?;
    }
    out.sync_all()
        .map_err(|e| ExportError::io(written, "fsync", e))
}

/// Unpacks `archive` into `dest` (which must not exist), verified.
pub fn unpack(archive: &Path, dest: &Path) -> Result<ReadbackReport> {
    let shown = archive.display().to_string();
    let reader = open_archive(archive)?;
    let mut tree = NewTree::begin(dest, 0o755)?;
    let bad = |code: &'static str, msg: String| {
        ExportError::Invalid(vec![Issue::file(code, &shown, msg)])
    };
    let limit_or = |e: io::Error, what: &str| {
        if e.to_string().contains(LIMIT_MARK) {
            bad(
                "limit.archive_bytes",
                format!("{shown}: expands past {MAX_UNPACKED_BYTES} bytes"),
            )
        } else {
            bad("validation.archive", format!("{shown}: {what}: {e}"))
        }
    };
    let mut ar = tar::Archive::new(Bounded {
        inner: reader,
        seen: 0,
    });
    let mut seen = std::collections::BTreeSet::new();
    let mut total = 0u64;
    let entries = ar.entries().map_err(|e| limit_or(e, "read"))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| limit_or(e, "read member"))?;
        if seen.len() >= MAX_MEMBERS {
            return Err(bad(
                "limit.members",
                format!("{shown}: more than {MAX_MEMBERS} members"),
            ));
        }
        let raw = entry.path_bytes().into_owned();
        let shown_member = String::from_utf8_lossy(&raw).into_owned();
        let refused =
            |e: ArchiveError| ExportError::Invalid(vec![Issue::file(e.code, &e.member, e.message)]);
        let kind = member_kind(entry.header().entry_type(), &shown_member).map_err(refused)?;
        let name = check_member_name(&raw, kind == MemberKind::Dir).map_err(refused)?;
        if kind == MemberKind::Dir {
            continue;
        }
        if name != MANIFEST {
            check_relative_path(&name)
                .map_err(|e| ExportError::Invalid(vec![Issue::file(e.code, &name, e.message)]))?;
        }
        if !seen.insert(name.clone()) {
            return Err(ExportError::Invalid(vec![Issue::file(
                "validation.archive_duplicate_member",
                &name,
                format!("{name}: appears twice in the archive"),
            )]));
        }
        let size = entry.header().size().map_err(|e| limit_or(e, "header"))?;
        total += size;
        if total > MAX_UNPACKED_BYTES {
            return Err(bad(
                "limit.archive_bytes",
                format!("{shown}: members exceed {MAX_UNPACKED_BYTES} bytes"),
            ));
        }
        let mut out = tree.create_file(&name, 0o755, 0o644)?;
        let written = tree.dest().join(&name);
        copy_member(&mut (&mut entry).take(size), &mut out, &written, |e| {
            limit_or(e, "extract")
        })?;
    }
    let handle = tree
        .dir()
        .try_clone()
        .map_err(|e| ExportError::io(dest, "open", e))?;
    let report = readback::verify_tree(&BundleDir::from_dir(handle), &Expectations::default())?;
    tree.publish()?;
    Ok(report)
}
