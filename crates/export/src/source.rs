//! Where an export's source bundle comes from: the store (by bundle id or
//! manifest digest) or a bundle directory (validated first). Every read is
//! verified: store objects by the store, directory files by hashing them as
//! they stream and comparing with the descriptor at the end.

use coffer_base::codes;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use coffer_base::digest::{Digest, HashingReader};
use coffer_evidence::bundle::inspect::{check_manifest, inspect, Reading};
use coffer_evidence::bundle::model::{Descriptor, Manifest};
use coffer_evidence::bundle::source::BundleDir;
use coffer_evidence::sink::HashOnly;
use coffer_evidence::vocab::Qualification;
use coffer_store::Store;

use crate::error::{ExportError, Result};

/// A source bundle, opened and validated. It borrows nothing: the
/// artifacts of a stored bundle are read through [`Source::artifacts`]
/// with the store at hand, so an export can read with `&Store` and then
/// record with `&mut Store` through one handle.
pub struct Source {
    /// The manifest's bytes.
    pub manifest_bytes: Vec<u8>,
    /// The typed manifest.
    pub manifest: Manifest,
    /// `qualified` or `incomplete`.
    pub qualification: Qualification,
    from: From,
}

enum From {
    Store,
    Dir(BundleDir, PathBuf),
}

impl Source {
    /// A bundle directory if `arg` names one, else a stored bundle by id
    /// or manifest digest.
    pub fn locate(store: &Store, arg: &str) -> Result<Source> {
        let as_dir = Path::new(arg);
        if as_dir.is_dir() {
            Source::directory(as_dir)
        } else {
            Source::stored(store, &coffer_evidence::ids::BundleRef::parse(arg))
        }
    }

    /// The stored bundle `bundle` names (an id, a manifest digest or its
    /// prefix).
    pub fn stored(store: &Store, bundle: &coffer_evidence::ids::BundleRef) -> Result<Source> {
        use coffer_evidence::bundle::records::{find_bundle, nearest_bundle_ids};
        let id_or_digest = bundle.id.as_str();
        let Some(row) = find_bundle(store.catalog(), bundle)? else {
            let near = nearest_bundle_ids(store.catalog(), id_or_digest)?;
            let hint = match near.as_slice() {
                [] => String::new(),
                near => format!("; did you mean {}?", near.join(", ")),
            };
            return Err(ExportError::invalid(
                codes::io::NOT_FOUND,
                id_or_digest,
                format!("no stored bundle {id_or_digest:?} (give a bundle id, a manifest digest or a bundle directory){hint}"),
            ));
        };
        let d = row.manifest_digest;
        let mut bytes = Vec::new();
        store
            .open_object(&d)?
            .read_to_end(&mut bytes)
            .map_err(|e| ExportError::io(store.path(), "read manifest", e))?;
        Source::from_manifest(bytes, row.qualification, From::Store)
    }

    /// A bundle directory: validated completely before anything is exported.
    pub fn directory(path: &Path) -> Result<Source> {
        let insp = inspect(path, &mut HashOnly, Reading::Everything)?;
        if !insp.issues.is_empty() {
            // An invalid source is refused before anything is written.
            return Err(ExportError::Blocked(insp.issues));
        }
        let qualification = insp.qualification().unwrap_or(Qualification::Incomplete);
        let dir = BundleDir::open(path).map_err(|i| ExportError::Invalid(vec![i]))?;
        let manifest = insp
            .manifest
            .expect("a bundle without issues has its manifest");
        Ok(Source {
            manifest_bytes: insp.manifest_bytes,
            manifest,
            qualification,
            from: From::Dir(dir, path.to_path_buf()),
        })
    }

    fn from_manifest(bytes: Vec<u8>, qualification: Qualification, from: From) -> Result<Source> {
        let mut issues = Vec::new();
        let manifest = check_manifest(&bytes, &mut issues);
        let manifest = match (manifest, issues.is_empty()) {
            (Some(m), true) => m,
            _ => return Err(ExportError::Invalid(issues)),
        };
        Ok(Source {
            manifest_bytes: bytes,
            manifest,
            qualification,
            from,
        })
    }

    /// Digest of the source manifest.
    pub fn manifest_digest(&self) -> Digest {
        Digest::of(&self.manifest_bytes)
    }

    /// The source's artifacts, read from `store` when the bundle is stored
    /// there (a directory source ignores it).
    pub fn artifacts<'a>(&'a self, store: &'a Store) -> Artifacts<'a> {
        Artifacts { src: self, store }
    }

    /// The bundle directory, when the source is one.
    pub fn dir_path(&self) -> Option<&Path> {
        match &self.from {
            From::Dir(_, p) => Some(p),
            From::Store => None,
        }
    }
}

/// A source together with the store its artifacts may live in.
pub struct Artifacts<'a> {
    src: &'a Source,
    store: &'a Store,
}

impl std::ops::Deref for Artifacts<'_> {
    type Target = Source;

    fn deref(&self) -> &Source {
        self.src
    }
}

impl Artifacts<'_> {
    /// Opens an artifact; the reader fails at the end if the bytes are not
    /// the descriptor's.
    pub fn open(&self, d: &Descriptor) -> Result<Box<dyn Read + '_>> {
        let digest = d.digest;
        let reader: Box<dyn Read + '_> = match &self.src.from {
            From::Store => Box::new(self.store.open_object(&digest)?),
            From::Dir(dir, _) => {
                let (f, _) = dir
                    .open_evidence(&d.relative_path)
                    .map_err(|i| ExportError::Invalid(vec![i]))?;
                Box::new(Checked {
                    inner: HashingReader::new(f),
                    size: d.size_bytes,
                    digest,
                    rel: d.relative_path.clone(),
                })
            }
        };
        Ok(match self.store.progress() {
            Some(p) => Box::new(Reported { inner: reader, p }),
            None => reader,
        })
    }
}

/// Reports the bytes read through it as progress.
struct Reported<'a, R> {
    inner: R,
    p: &'a dyn coffer_store::Progress,
}

impl<R: Read> Read for Reported<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.p.advance(n as u64);
        Ok(n)
    }
}

/// Hashes what streams through and fails at the end on a mismatch (the
/// file changed after validation).
struct Checked<R> {
    inner: HashingReader<R>,
    size: u64,
    digest: Digest,
    rel: String,
}

impl<R: Read> Read for Checked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        let read = self.inner.hasher();
        if read.len() > self.size || (n == 0 && !buf.is_empty()) {
            let (got, len) = read.clone().finish();
            if len != self.size || got != self.digest {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: changed after it was validated", self.rel),
                ));
            }
        }
        Ok(n)
    }
}
