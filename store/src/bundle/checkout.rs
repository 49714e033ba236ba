//! `bundle checkout`: rebuild a stored bundle byte-for-byte in a new directory.
//!
//! Files are written into a temp directory beside the destination, each one
//! verified against its digest on the way out and fsynced; only a complete
//! tree is renamed (no-replace) to the destination. A failure removes the
//! temp tree; an existing destination is never touched.

use std::fs;
use std::io::Write;
use std::path::Path;

use super::paths::{check_relative_path, MANIFEST};
use crate::digest::Digest;
use crate::dir::{Dir, Renamed};
use crate::error::{Result, StoreError};
use crate::store::Store;

impl Store {
    /// Writes bundle `id_or_digest` to `dest` (which must not exist);
    /// returns the number of files written.
    pub fn checkout_bundle(&self, id_or_digest: &str, dest: &Path) -> Result<usize> {
        let row =
            self.catalog()
                .find_bundle(id_or_digest)?
                .ok_or_else(|| StoreError::UnknownBundle {
                    id: id_or_digest.to_string(),
                })?;
        if dest.symlink_metadata().is_ok() {
            return Err(StoreError::DestinationExists {
                path: dest.to_path_buf(),
            });
        }
        let parent = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name = dest.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
            StoreError::io(
                dest,
                "checkout",
                std::io::Error::other("destination needs a UTF-8 final component"),
            )
        })?;
        let tmp = tempfile::Builder::new()
            .prefix(".coffer-checkout.")
            .tempdir_in(parent)
            .map_err(|e| StoreError::io(parent, "create temp directory", e))?;
        let manifest_digest: Digest = row.manifest_digest.parse().map_err(|_| {
            StoreError::CatalogData(format!("bad manifest digest {}", row.manifest_digest))
        })?;
        let mut files = vec![(MANIFEST.to_string(), manifest_digest)];
        for a in self.catalog().bundle_artifacts(&row.bundle_id)? {
            let d = a.digest.parse().map_err(|_| {
                StoreError::CatalogData(format!("bad artifact digest {}", a.digest))
            })?;
            files.push((a.relative_path, d));
        }
        let mut dirs_made = vec![tmp.path().to_path_buf()];
        for (rel, digest) in &files {
            if rel != MANIFEST {
                check_relative_path(rel).map_err(|e| {
                    StoreError::CatalogData(format!("stored path {rel:?}: {}", e.message))
                })?;
            }
            let target = tmp.path().join(rel);
            if let Some(p) = target.parent() {
                if !p.exists() {
                    fs::create_dir_all(p).map_err(|e| StoreError::io(p, "create directory", e))?;
                    dirs_made.push(p.to_path_buf());
                }
            }
            let mut f = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&target)
                .map_err(|e| StoreError::io(&target, "create", e))?;
            self.copy_object(digest, &mut f)?;
            f.flush()
                .and_then(|()| f.sync_all())
                .map_err(|e| StoreError::io(&target, "fsync", e))?;
        }
        for d in dirs_made.iter().rev() {
            fs::File::open(d)
                .and_then(|f| f.sync_all())
                .map_err(|e| StoreError::io(d, "fsync directory", e))?;
        }
        let parent_dir = Dir::open(parent).map_err(|e| StoreError::io(parent, "open", e))?;
        let tmp_name = tmp
            .path()
            .file_name()
            .and_then(|n| n.to_str())
            .expect("tempfile names are UTF-8")
            .to_string();
        match parent_dir
            .rename_no_replace(&tmp_name, &parent_dir, name)
            .map_err(|e| StoreError::io(dest, "publish", e))?
        {
            Renamed::Done => {
                // The tree now lives at dest; keep tempfile from deleting it.
                let _ = tmp.keep();
                parent_dir
                    .sync()
                    .map_err(|e| StoreError::io(parent, "fsync directory", e))?;
                Ok(files.len())
            }
            Renamed::TargetExists => Err(StoreError::DestinationExists {
                path: dest.to_path_buf(),
            }),
        }
    }
}
