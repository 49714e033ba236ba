//! `bundle checkout`: rebuild a stored bundle byte-for-byte in a new directory.
//!
//! Files are written into a temp directory beside the destination, each one
//! verified against its digest on the way out and fsynced; only a complete
//! tree is renamed (no-replace) to the destination. A failure removes the
//! temp tree; an existing destination is never touched.

use std::io::Write;
use std::path::Path;

use super::paths::{check_relative_path, MANIFEST};
use crate::digest::Digest;
use crate::error::{Result, StoreError};
use crate::new_tree::NewTree;
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
        let manifest_digest: Digest = row.manifest_digest.parse().map_err(|_| {
            StoreError::CatalogData(format!("bad manifest digest {}", row.manifest_digest))
        })?;
        let mut files = vec![(MANIFEST.to_string(), manifest_digest)];
        for a in self.catalog().bundle_artifacts(&row.bundle_id)? {
            let d = a.digest.parse().map_err(|_| {
                StoreError::CatalogData(format!("bad artifact digest {}", a.digest))
            })?;
            check_relative_path(&a.relative_path).map_err(|e| {
                StoreError::CatalogData(format!("stored path {:?}: {}", a.relative_path, e.message))
            })?;
            files.push((a.relative_path, d));
        }
        let mut tree = NewTree::begin(dest, 0o755)?;
        for (rel, digest) in &files {
            let mut f = tree.create_file(rel, 0o755, 0o644)?;
            self.copy_object(digest, &mut f)?;
            f.flush()
                .and_then(|()| f.sync_all())
                .map_err(|e| StoreError::io(dest.join(rel), "fsync", e))?;
        }
        tree.publish()?;
        Ok(files.len())
    }
}
