//! coffer-evidence: the evidence domain on top of the content-addressed
//! store.
//!
//! Run bundles (their model, the rules that relate their documents, ingest
//! and checkout), task packets (validation, freeze, materialize) and the
//! catalog records of exports live here; `coffer-store` below knows
//! nothing of them. The domain's catalog tables are registered with the
//! store as [`tables::SCHEMA`]: open an evidence store with
//! [`open`] (or pass that schema to [`Store`]'s constructors).
//!
//! ```
//! use coffer_evidence::{bundle, provenance};
//! use coffer_base::Digest;
//! use coffer_store::BackendConfig;
//!
//! let dir = tempfile::tempdir()?;
//! let (mut store, _) = coffer_evidence::init(&dir.path().join("store"), &BackendConfig::Local)?;
//! let fixture = std::path::Path::new("../../fixtures/run-bundles/complete");
//! let out = bundle::ingest::ingest(&mut store, fixture)?;
//! assert!(out.issues.is_empty() && out.created);
//! // Where is the workspace patch used?
//! let patch = Digest::of(&std::fs::read(fixture.join("workspace.patch"))?);
//! let found = provenance::locate(&store, &patch)?;
//! assert_eq!(found.bundle_artifacts[0].relative_path, "workspace.patch");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod archive;
pub mod bundle;
pub mod error;
pub mod exports;
pub mod ids;
pub mod packet;
pub mod provenance;
pub mod schema;
pub mod sink;
pub mod tables;
pub mod vocab;

use std::path::Path;

use coffer_store::{BackendConfig, Store};

pub use error::{EvidenceError, Result};

/// Creates an evidence store at `path` (or completes an interrupted init)
/// and opens it; the flag tells whether a new store was created.
pub fn init(path: &Path, backend: &BackendConfig) -> Result<(Store, bool)> {
    Ok(Store::init_with(path, backend, &tables::SCHEMA)?)
}

/// Opens an existing evidence store for writing.
/// Facts of bundles the catalog lacks (after an upgrade, or an index an
/// interrupt cut short) are indexed first.
pub fn open(path: &Path) -> Result<Store> {
    let mut store = Store::open(path, &tables::SCHEMA)?;
    bundle::facts::index_pending(&mut store);
    Ok(store)
}

/// Opens an existing evidence store for a command that only reads.
pub fn open_for_reading(path: &Path) -> Result<Store> {
    Ok(Store::open_for_reading(path, &tables::SCHEMA)?)
}

/// Opens an evidence store for gc (see [`Store::open_for_gc`]).
pub fn open_for_gc(path: &Path) -> Result<Store> {
    Ok(Store::open_for_gc(path, &tables::SCHEMA)?)
}
