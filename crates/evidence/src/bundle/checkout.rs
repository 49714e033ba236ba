//! `bundle checkout`: rebuild a stored bundle byte-for-byte in a new directory.
//!
//! Files are written into a temp directory beside the destination, each one
//! verified against its digest on the way out and fsynced; only a complete
//! tree is renamed (no-replace) to the destination. A failure removes the
//! temp tree; an existing destination is never touched.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use super::inspect::check_manifest;
use super::safe_path::{check_relative_path, MANIFEST};
use coffer_base::digest::Digest;
use coffer_base::publish::NewTree;
use coffer_store::error::StoreError;

use crate::error::Result;
use coffer_store::store::Store;

/// Writes the bundle `bundle` names to `dest` (which must not exist);
/// returns the number of files written.
pub fn checkout(store: &Store, bundle: &crate::ids::BundleRef, dest: &Path) -> Result<usize> {
    let row = crate::bundle::records::require_bundle(store.catalog(), bundle)?;
    let manifest_digest = row.manifest_digest;
    // The files come from the stored manifest (verified by its digest),
    // not from the catalog rows: a catalog edited by hand could name
    // other bytes. Rows that disagree with the manifest stop the checkout.
    let mut files = vec![(MANIFEST.to_string(), manifest_digest)];
    let mut bytes = Vec::new();
    store.copy_object(&manifest_digest, &mut bytes)?;
    let mut problems = Vec::new();
    let manifest = check_manifest(&bytes, &mut problems).ok_or_else(|| {
        StoreError::CatalogData(format!(
            "stored manifest {manifest_digest} of bundle {:?} does not parse",
            row.bundle_id
        ))
    })?;
    if let Some(p) = store.progress() {
        let evidence: u64 = manifest.evidence.iter().map(|d| d.size_bytes).sum();
        p.total(bytes.len() as u64 + evidence);
    }
    let mut rows: BTreeMap<String, Digest> =
        crate::bundle::records::bundle_artifacts(store.catalog(), &row.bundle_id)?
            .into_iter()
            .map(|a| (a.relative_path, a.digest))
            .collect();
    for e in &manifest.evidence {
        let d = e.digest;
        check_relative_path(&e.relative_path).map_err(|i| {
            StoreError::CatalogData(format!("stored path {:?}: {}", e.relative_path, i.message))
        })?;
        if rows.remove(&e.relative_path) != Some(d) {
            return Err(StoreError::CatalogData(format!(
                "bundle {:?}: the catalog's row for {} does not match the stored manifest",
                row.bundle_id, e.relative_path
            ))
            .into());
        }
        files.push((e.relative_path.clone(), d));
    }
    if let Some(extra) = rows.keys().next() {
        return Err(StoreError::CatalogData(format!(
            "bundle {:?}: the catalog lists {extra}, which the stored manifest does not",
            row.bundle_id
        ))
        .into());
    }
    let mut tree = NewTree::begin(dest, 0o755)?;
    for (rel, digest) in &files {
        let mut f = tree.create_file(rel, 0o755, 0o644)?;
        store.copy_object(digest, &mut f)?;
        f.flush()
            .map_err(|e| StoreError::io(dest.join(rel), "write", e))?;
        tree.sync_later(f, rel)?;
    }
    tree.publish()?;
    Ok(files.len())
}
