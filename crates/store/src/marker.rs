//! The `STORE-FORMAT` marker's text, and its move from version 1 to 2,
//! the moment before a local store's first pack is published.

use std::io::Write;

use crate::backend::BackendConfig;
use crate::entries::{CATALOG_FILE, FORMAT_FILE};
use crate::error::{Result, StoreError};
/// The newest format version this build reads and writes: 2, a store
/// that may hold packs.
pub const FORMAT_VERSION: u64 = 2;
/// The format of a store of loose objects only. `init` writes it, and a
/// store keeps it until its first pack, so a store that never packs stays
/// readable by builds that know only version 1.
pub const FORMAT_LOOSE: u64 = 1;
/// The version a store holding packs is marked with.
pub const PACKED: u64 = FORMAT_VERSION;

/// The JSON written to `STORE-FORMAT` (and, for a bucket, to its
/// `STORE-FORMAT` key, without the local catalog's name).
pub fn format_document(backend: &BackendConfig, version: u64) -> String {
    let mut doc = serde_json::json!({
        "format": "coffer",
        "version": version,
        "objectKey": "sha256",
        "objectPath": "objects/sha256/<first 2 hex>/<64 hex>",
        "objectEncoding": "zstd-frame; content checksum; content size",
        "catalog": CATALOG_FILE,
    });
    if version >= 2 {
        doc["packPath"] = "packs/<64 hex>.pack".into();
        doc["packIndexPath"] = "packs/<64 hex>.idx".into();
    }
    if let Some(b) = backend.to_json() {
        doc["backend"] = b;
    }
    format!(
        "{}\n",
        serde_json::to_string_pretty(&doc).expect("static JSON")
    )
}

use coffer_base::dir::Dir;
use coffer_base::temp::temp_name;

/// Marks a local store as format 2 before its first pack is published:
/// the new marker is written to a temp, made durable, and renamed over
/// the old one (the one file of a store that is ever replaced, and only by
/// this, from version 1 to 2), then the root is synced. A crash leaves
/// either marker, both valid for what the store holds.
pub fn mark_packed(root: &Dir, tmp: &Dir) -> Result<()> {
    let doc = format_document(&BackendConfig::Local, PACKED);
    let name = temp_name("format");
    let staged = (|| -> std::io::Result<()> {
        let mut f = tmp.create_new(&name, 0o444)?;
        f.write_all(doc.as_bytes())?;
        f.sync_all()?;
        tmp.rename_replacing_into(&name, root, FORMAT_FILE)?;
        root.sync()
    })();
    staged.map_err(|e| {
        let _ = tmp.remove_file(&name);
        StoreError::io(root.join(FORMAT_FILE), "mark format 2", e)
    })
}
