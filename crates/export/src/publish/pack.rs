//! `export pack` and `export unpack`: reproducible archives of an export.
//!
//! An archive holds `manifest.json` first, then the listed artifacts sorted
//! by path, as GNU tar members with mtime 0, uid/gid 0, no owner names and
//! mode 0644, compressed with zstd (`.tar.zst`, level 10, one thread) or
//! gzip (`.tar.gz`, for EBO's tools; no name, mtime 0). Same tree, same
//! archive bytes. Unpack is bounded, accepts only regular files at safe
//! paths, and publishes nothing until the unpacked tree passes the same
//! readback as `export verify`.

use coffer_base::codes;
use std::io::{self, Read, Write};
use std::path::Path;

use coffer_base::digest::HashingWriter;
use coffer_base::issue::Issue;
use coffer_base::publish::{write_new_file, NewTree};
use coffer_evidence::archive::{
    read_archive, refuse, ArchiveLimits, Compression, MemberKind, READ_FAILED,
};
use coffer_evidence::bundle::safe_path::{check_relative_path, MANIFEST};
use coffer_evidence::bundle::source::BundleDir;
use serde_json::Value;

use crate::error::{ExportError, Result};
use crate::gate::{self, Expectations, ReadbackReport};

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
    pub digest: coffer_base::digest::Digest,
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
            codes::usage::ARCHIVE_NAME,
            &shown,
            "the archive name must end in .tar.zst or .tar.gz",
        )
    })?;
    gate::verify(dest, &Expectations::default())?;
    // Read again as the readback did: one component at a time, never
    // through a symlink, regular files only, bounded.
    let tree = BundleDir::open(dest).map_err(|i| ExportError::Invalid(vec![i]))?;
    let (mut mf, _) = tree
        .open_evidence(MANIFEST)
        .map_err(|i| ExportError::Invalid(vec![i]))?;
    let manifest: Value =
        coffer_base::json::read_document(&mut mf, &coffer_base::json::Limits::DOCUMENT, MANIFEST)
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
    write_new_file(archive, |f| -> Result<()> {
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
        hashed = Some((d, n));
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

/// Largest compressed archive read: twice the unpacked bound, room for
/// incompressible members and their framing.
const MAX_ARCHIVE_BYTES: u64 = 2 * MAX_UNPACKED_BYTES;
/// Tar framing allowed beside member bytes in the expanded stream: a
/// header and padding per member, plus extension headers (long names).
const MAX_FRAMING_BYTES: u64 = 64 << 20;

/// The archive reader's codes, as this command documents its limits: one
/// byte bound and one member bound, whatever tripped them.
fn unpack_code(code: &'static str) -> &'static str {
    match code {
        codes::limit::ARCHIVE_COMPRESSED_BYTES | codes::limit::ARCHIVE_EXPANDED_BYTES => {
            codes::limit::ARCHIVE_BYTES
        }
        codes::limit::ARCHIVE_MEMBERS => codes::limit::MEMBERS,
        other => other,
    }
}

/// Why copying a member stopped: reading the archive, or writing the tree.
enum Copy {
    Read(io::Error),
    Write(ExportError),
}

impl From<ExportError> for Copy {
    fn from(e: ExportError) -> Self {
        Copy::Write(e)
    }
}

/// Copies one member's bytes into `out` and syncs it. Reading the archive
/// and writing the tree fail for different reasons: a full disk is
/// io.no_space, not a bad archive.
fn copy_member(
    member: &mut dyn Read,
    out: &mut std::fs::File,
    written: &Path,
) -> std::result::Result<(), Copy> {
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = match member.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Copy::Read(e)),
        };
        out.write_all(&buf[..n])
            .map_err(|e| ExportError::io(written, "write", e))?;
    }
    out.sync_all()
        .map_err(|e| ExportError::io(written, "fsync", e))?;
    Ok(())
}

/// Unpacks `archive` into `dest` (which must not exist), verified. The
/// archive is read by the one archive reader (`coffer_evidence::archive`),
/// with its integrity, name and limit rules; nothing is published unless
/// it passes them all and the tree passes the readback.
pub fn unpack(archive: &Path, dest: &Path) -> Result<ReadbackReport> {
    let shown = archive.display().to_string();
    let mut input = coffer_base::input::open(archive)?;
    let mut tree = NewTree::begin(dest, 0o755)?;
    let limits = ArchiveLimits {
        max_compressed: MAX_ARCHIVE_BYTES,
        max_expanded: MAX_UNPACKED_BYTES + MAX_FRAMING_BYTES,
        max_members: MAX_MEMBERS as u64,
    };
    let formats = [Compression::Zstd, Compression::Gzip];
    // What stops the unpack on the writing side (a full disk) is not the
    // archive's fault: it is kept here and returned as it is.
    let mut fatal: Option<ExportError> = None;
    let mut total = 0u64;
    // An export holds its manifest and bundle-relative paths, nothing else.
    let bundle_path = |path: &str, _: MemberKind| match path {
        MANIFEST => Ok(()),
        _ => check_relative_path(path).map_err(|e| refuse(e.code, path, e.message)),
    };
    let read = read_archive(&mut input, limits, &formats, &bundle_path, &mut |m, r| {
        let refused = |code: &'static str, message: String| refuse(code, &m.path, message);
        total += m.size;
        if total > MAX_UNPACKED_BYTES {
            return Err(refused(
                codes::limit::ARCHIVE_EXPANDED_BYTES,
                format!("members exceed {MAX_UNPACKED_BYTES} bytes"),
            ));
        }
        let written = tree.dest().join(&m.path);
        let copied = tree
            .create_file(&m.path, 0o755, 0o644)
            .map_err(|e| Copy::Write(e.into()))
            .and_then(|mut out| copy_member(r, &mut out, &written));
        match copied {
            Ok(()) => Ok(()),
            Err(Copy::Read(e)) => Err(refused(READ_FAILED, e.to_string())),
            Err(Copy::Write(e)) => {
                let message = e.to_string();
                fatal = Some(e);
                Err(refused(codes::io::ERROR, message))
            }
        }
    });
    if let Err(e) = read {
        if let Some(f) = fatal.filter(|_| e.code == codes::io::ERROR) {
            return Err(f);
        }
        let subject = if e.member.is_empty() {
            &shown
        } else {
            &e.member
        };
        return Err(ExportError::Invalid(vec![Issue::file(
            unpack_code(e.code),
            subject,
            format!("{shown}: {}", e.message),
        )]));
    }
    let handle = tree
        .dir()
        .try_clone()
        .map_err(|e| ExportError::io(dest, "open", e))?;
    let report = gate::verify_tree(&BundleDir::from_dir(handle), &Expectations::default())?;
    tree.publish()?;
    Ok(report)
}
