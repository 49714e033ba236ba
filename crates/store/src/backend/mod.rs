//! Where object frames and refs live: the store root's own directories
//! ([`LocalBackend`]) or an S3-compatible bucket (`S3Backend`, feature `aws`).
//!
//! A backend is a flat namespace of immutable keys. Keys are the relative
//! names a local store uses on disk (`objects/sha256/<2hex>/<64hex>`,
//! `refs/...`, `quarantine/...`), so a local store and a bucket hold the
//! same keys with the same bytes and `mirror` copies one to the
//! other as is. Everything above this seam (staging, verification, the
//! catalog) is the same for every backend.
//!
//! The contract every backend keeps:
//! - a put never replaces an existing key (`put-if-absent`); losing the
//!   race is reported, not an error;
//! - a put that returned is durable once [`Backend::sync_published`] has
//!   returned for its key;
//! - reads return the stored bytes as they are: verification is the
//!   caller's (every object read decodes and re-hashes).

use std::io::Read;

use crate::error::{Result, StoreError};
use coffer_base::digest::Digest;
use coffer_base::dir::Dir;

mod config;
mod local;
#[cfg(feature = "aws")]
mod s3;

pub use config::BackendConfig;
pub use local::LocalBackend;
#[cfg(feature = "aws")]
pub use s3::S3Backend;

/// Prefix of object keys.
pub const OBJECTS_PREFIX: &str = "objects/sha256/";
/// Prefix of ref keys.
pub const REFS_PREFIX: &str = "refs/";
/// Prefix of quarantined frames.
pub const QUARANTINE_PREFIX: &str = "quarantine/";

/// The key of an object's frame.
pub fn object_key(d: &Digest) -> String {
    format!("{OBJECTS_PREFIX}{}/{}", d.shard(), d.hex())
}

/// The digest an object key names, if it is a well-formed object key.
pub fn object_of_key(key: &str) -> Option<Digest> {
    let rest = key.strip_prefix(OBJECTS_PREFIX)?;
    let (shard, hex) = rest.split_once('/')?;
    Digest::from_hex(hex).ok().filter(|d| d.shard() == shard)
}

/// What a backend knows of a stored key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    /// Stored bytes.
    pub size: u64,
    /// Last modification (ms since the epoch).
    pub modified_ms: i64,
}

/// One entry of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Its key (for a local store, its store-relative path).
    pub key: String,
    /// Size and time.
    pub meta: Meta,
    /// False for anything that is not a plain stored value (a directory
    /// where a frame belongs, a symlink, a special file): never read.
    pub regular: bool,
}

/// A stored value being read.
pub type Body = Box<dyn Read + Send>;

/// Whether a put created its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Put {
    /// This call created the key.
    Created,
    /// The key already existed; nothing was written.
    Existed,
}

/// The operations the store needs from where its bytes live.
pub trait Backend: Send + Sync + std::fmt::Debug {
    /// Where it is, for messages and `STORE-FORMAT` (`file:///...`, `s3://...`).
    fn location(&self) -> String;

    /// True when other stores may write to it too (a bucket): gc then never
    /// deletes from it, since no local catalog sees every root.
    fn shared(&self) -> bool;

    /// Publishes the complete, closed file `tmp_name` in `tmp` (the store's
    /// staging directory) under `key`, unless `key` exists. The temp is
    /// consumed either way.
    fn publish(&self, key: &str, tmp: &Dir, tmp_name: &str) -> Result<Put>;

    /// Stores small `bytes` under `key` unless it exists, durably.
    fn put_bytes(&self, key: &str, bytes: &[u8]) -> Result<Put>;

    /// Opens `key` for reading; `None` if absent.
    fn get(&self, key: &str) -> Result<Option<(Body, Meta)>>;

    /// Opens `len` bytes of `key` from `offset` on (a frame inside a
    /// pack); `None` if absent. A shorter value yields fewer bytes, which
    /// the frame's verification reports.
    fn get_range(&self, key: &str, offset: u64, len: u64) -> Result<Option<Body>> {
        let Some((mut body, _)) = self.get(key)? else {
            return Ok(None);
        };
        std::io::copy(&mut (&mut body).take(offset), &mut std::io::sink())
            .map_err(|e| remote_error(&self.location(), key, "read", e))?;
        Ok(Some(Box::new(body.take(len))))
    }

    /// Size and time of `key`; `None` if absent.
    fn head(&self, key: &str) -> Result<Option<Meta>>;

    /// Every key below `prefix` (which ends in `/`), sorted.
    fn list(&self, prefix: &str) -> Result<Vec<Listed>>;

    /// Like [`Backend::list`], handing `f` one key at a time, in the same
    /// order; stops at the first error `f` returns. A backend that can
    /// walk its keys in order holds only a directory's worth at once.
    fn list_each(&self, prefix: &str, f: &mut dyn FnMut(Listed) -> Result<()>) -> Result<()> {
        self.list(prefix)?.into_iter().try_for_each(f)
    }

    /// Removes `key`; an absent key is not an error.
    fn delete(&self, key: &str) -> Result<()>;

    /// Makes the names published by [`Backend::publish`] durable (a local
    /// directory fsync; nothing for a bucket, where a completed put is).
    fn sync_published(&self, keys: &[String]) -> Result<()>;

    /// Moves `key` out of the object namespace to `quarantine/<name>`,
    /// never deleting its bytes.
    fn quarantine(&self, key: &str, name: &str) -> Result<()>;
}

/// An error from a backend: `io.remote` with the key and operation.
pub(crate) fn remote_error(
    location: &str,
    key: &str,
    op: &'static str,
    e: impl std::fmt::Display,
) -> StoreError {
    StoreError::Remote {
        location: location.to_string(),
        key: key.to_string(),
        op,
        detail: e.to_string(),
    }
}

/// Reads a whole small value (a ref, a record), at most `max` bytes.
pub fn read_small(backend: &dyn Backend, key: &str, max: u64) -> Result<Option<Vec<u8>>> {
    let Some((body, meta)) = backend.get(key)? else {
        return Ok(None);
    };
    if meta.size > max {
        return Err(StoreError::CatalogData(format!(
            "{key}: {} bytes, more than the {max} a ref may hold",
            meta.size
        )));
    }
    let mut out = Vec::with_capacity(meta.size as usize);
    body.take(max + 1)
        .read_to_end(&mut out)
        .map_err(|e| remote_error(&backend.location(), key, "read", e))?;
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_keys_round_trip_and_reject_misplaced_names() {
        let d = Digest::of(b"x");
        let k = object_key(&d);
        assert_eq!(k, format!("objects/sha256/{}/{}", d.shard(), d.hex()));
        assert_eq!(object_of_key(&k), Some(d));
        let wrong_shard = format!("objects/sha256/zz/{}", d.hex());
        assert_eq!(object_of_key(&wrong_shard), None);
        assert_eq!(object_of_key("refs/bundles/x"), None);
    }
}
