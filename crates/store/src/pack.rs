//! Packs: many small objects' frames in one file, found through an index
//! (store format 2, docs/FORMAT.md "Packs").
//!
//! A pack is the frames of objects up to [`crate::frame::SMALL_OBJECT_MAX`]
//! bytes, one after another, each exactly the frame a loose object would
//! have; its index lists them sorted by digest with offset, frame length and
//! raw size. Both are named by the pack's SHA-256, published no-clobber
//! (pack first, then index) and durable before any catalog row names an
//! object in them; a pack without its index is invisible. Reads prefer a
//! loose frame, so a good copy put again repairs a damaged packed one.

pub mod copy;
pub mod index;
pub mod set;
pub mod writer;

use crate::backend::{Backend, Put};
use crate::error::Result;
use coffer_base::digest::Digest;
use coffer_base::dir::Dir;

pub use index::{Entry, PackIndex};
pub use set::PackSet;
pub use writer::{PackTemp, PackWriter, Sealed};

/// Prefix of pack and index keys.
pub const PACKS_PREFIX: &str = "packs/";

/// A batch packs its new small objects when it has at least this many;
/// fewer are written loose. Git explodes a fetched pack of fewer than 100
/// objects into loose ones (`transfer.unpackLimit`) for the same reason: a
/// pack costs two files and a place in every lookup's search, which a
/// handful of objects does not repay. `coffer repack` packs them later.
pub const UNPACK_LIMIT: usize = 100;

/// Which of a pack's two files a key names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PackFile {
    /// `packs/<64hex>.pack`
    Pack,
    /// `packs/<64hex>.idx`
    Index,
}

/// The key of the pack named `d`.
pub fn pack_key(d: &Digest) -> String {
    format!("{PACKS_PREFIX}{}.pack", d.hex())
}

/// The key of the index of the pack named `d`.
pub fn idx_key(d: &Digest) -> String {
    format!("{PACKS_PREFIX}{}.idx", d.hex())
}

/// The pack and file a key names, if it is a well-formed pack key.
pub fn parse_key(key: &str) -> Option<(Digest, PackFile)> {
    let name = key.strip_prefix(PACKS_PREFIX)?;
    let (hex, kind) = match name.split_once('.')? {
        (hex, "pack") => (hex, PackFile::Pack),
        (hex, "idx") => (hex, PackFile::Index),
        _ => return None,
    };
    Some((Digest::from_hex(hex).ok()?, kind))
}

/// Publishes a sealed pack whose temps are durable: the pack, then its
/// index, each never replacing an existing file. Returns whether the pack
/// is new (false: the same bytes were already published). The caller
/// makes the names durable ([`Backend::sync_published`] on
/// [`published_keys`]) before cataloging anything in it.
pub fn publish(backend: &dyn Backend, tmp: &Dir, sealed: &Sealed) -> Result<bool> {
    let d = sealed.pack.digest;
    let created = backend.publish(&pack_key(&d), tmp, &sealed.pack.tmp_name)? == Put::Created;
    coffer_base::crash::point("pack_published");
    backend.publish(&idx_key(&d), tmp, &sealed.idx_tmp)?;
    coffer_base::crash::point("index_published");
    Ok(created)
}

/// The keys a published pack adds.
pub fn published_keys(d: &Digest) -> [String; 2] {
    [pack_key(d), idx_key(d)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_keys_round_trip_and_nothing_else_parses() {
        let d = Digest::of(b"p");
        assert_eq!(parse_key(&pack_key(&d)), Some((d, PackFile::Pack)));
        assert_eq!(parse_key(&idx_key(&d)), Some((d, PackFile::Index)));
        for bad in [
            format!("packs/{}.tmp", d.hex()),
            format!("packs/{}.pack", &d.hex()[1..]),
            format!("objects/{}.pack", d.hex()),
            "packs/x.idx".into(),
        ] {
            assert_eq!(parse_key(&bad), None, "{bad}");
        }
    }
}
