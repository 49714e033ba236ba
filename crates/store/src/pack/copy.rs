//! Copying packs as they are, from one store to another (`mirror`): one
//! transfer carries many small objects, and both stores then hold the same
//! pack under the same name.
//!
//! Nothing unverified arrives: the pack is streamed into the destination's
//! `tmp/` while hashed against its name, its index is decoded and checked
//! against it, and every frame it lists is decoded and re-hashed from the
//! temp, before the two temps are made durable and published (pack, then
//! index) exactly as a batch publishes its own.

use std::io::{Read, Seek, SeekFrom};

use super::{idx_key, pack_key, PackIndex, PackTemp, Sealed};
use crate::error::{Result, StoreError};
use crate::objects::ObjectDirs;
use coffer_base::digest::{Digest, Hasher, HashingReader};
use coffer_base::temp::temp_name;

/// What copying the packs did.
#[derive(Debug, Default, Clone, Copy)]
pub struct Copied {
    /// Packs copied.
    pub packs: u64,
    /// Objects they hold.
    pub objects: u64,
    /// Bytes copied.
    pub bytes: u64,
    /// Packs the destination already held.
    pub present: u64,
}

/// Copies every pack of `from` that `to` lacks; returns what it did.
pub fn copy_packs(from: &ObjectDirs, to: &ObjectDirs) -> Result<Copied> {
    let (packs, _) = from.packs.all(&*from.backend)?;
    let mut done = Copied::default();
    let mut sealed = Vec::new();
    let publish = |sealed: &mut Vec<Sealed>| -> Result<()> {
        let r = sync_and_publish(to, sealed);
        sealed.clear();
        r
    };
    for idx in packs {
        if to.backend.head(&idx_key(&idx.pack()))?.is_some() {
            done.present += 1;
            continue;
        }
        coffer_base::interrupt::check().inspect_err(|_| {
            sealed.iter().for_each(|s: &Sealed| s.discard(&to.tmp));
        })?;
        match stage(from, to, &idx) {
            Ok(s) => sealed.push(s),
            Err(e) => {
                sealed.iter().for_each(|s| s.discard(&to.tmp));
                return Err(e);
            }
        }
        done.packs += 1;
        done.objects += idx.len() as u64;
        done.bytes += idx.pack_size();
        // A few packs share one sync; their temps stay bounded.
        if sealed.len() == 8 {
            publish(&mut sealed)?;
        }
    }
    publish(&mut sealed)?;
    Ok(done)
}

fn sync_and_publish(to: &ObjectDirs, sealed: &[Sealed]) -> Result<()> {
    if sealed.is_empty() {
        return Ok(());
    }
    if let Err(e) = to.tmp.sync_filesystem() {
        sealed.iter().for_each(|s| s.discard(&to.tmp));
        return Err(StoreError::io(to.tmp.path(), "syncfs", e));
    }
    to.publish_packs(sealed)?;
    let keys: Vec<String> = sealed
        .iter()
        .flat_map(|s| super::published_keys(&s.pack.digest))
        .collect();
    to.backend.sync_published(&keys)?;
    sealed.iter().for_each(|s| to.know_pack(s));
    Ok(())
}

/// Streams one pack into `to`'s `tmp/`, verified; writes its index beside it.
fn stage(from: &ObjectDirs, to: &ObjectDirs, idx: &PackIndex) -> Result<Sealed> {
    let key = pack_key(&idx.pack());
    let (body, _) = from
        .backend
        .get(&key)?
        .ok_or_else(|| StoreError::CorruptPack {
            key: key.clone(),
            detail: "vanished during the copy".into(),
        })?;
    let tmp_name = temp_name("pack");
    let temp = PackTemp {
        tmp_name: tmp_name.clone(),
        digest: idx.pack(),
        size: idx.pack_size(),
        entries: idx.entries().collect(),
    };
    let checked = (|| -> Result<()> {
        let path = || to.tmp.join(&tmp_name);
        let mut f = to
            .tmp
            .create_new(&tmp_name, 0o444)
            .map_err(|e| StoreError::io(path(), "create temp", e))?;
        let mut r = HashingReader::new(body.take(idx.pack_size() + 1));
        std::io::copy(&mut r, &mut f).map_err(|e| StoreError::io(path(), "copy pack", e))?;
        let (got, len) = r.finish();
        if (got, len) != (idx.pack(), idx.pack_size()) {
            return Err(StoreError::CorruptPack {
                key: key.clone(),
                detail: format!("{len} bytes hashing to {got}, not the pack its index describes"),
            });
        }
        drop(f);
        let mut f = to
            .tmp
            .open_file(&tmp_name)
            .map_err(|e| StoreError::io(path(), "open temp", e))?;
        verify_frames(&mut f, idx, &key)
    })();
    if let Err(e) = checked {
        temp.discard(&to.tmp);
        return Err(e);
    }
    temp.seal(&to.tmp)
}

/// Decodes and re-hashes every frame `idx` lists, from the copied pack.
fn verify_frames(f: &mut std::fs::File, idx: &PackIndex, key: &str) -> Result<()> {
    let mut dctx = zstd::bulk::Decompressor::new().map_err(|e| StoreError::io(key, "zstd", e))?;
    let (mut frame, mut raw) = (Vec::new(), Vec::new());
    for e in idx.entries() {
        frame.resize(e.stored as usize, 0);
        f.seek(SeekFrom::Start(e.offset))
            .and_then(|_| f.read_exact(&mut frame))
            .map_err(|err| StoreError::io(key, "read copied pack", err))?;
        raw.clear();
        raw.reserve(e.size as usize);
        let decoded = dctx.decompress_to_buffer(&frame, &mut raw);
        let mut h = Hasher::new();
        h.update(&raw);
        if decoded.is_err() || h.finish() != (e.digest, e.size) {
            return Err(StoreError::CorruptObject {
                digest: e.digest,
                detail: format!("its frame in {key} does not decode to it"),
            });
        }
    }
    Ok(())
}

/// Whether `d` is stored in `dirs`, loose or packed (a record a copied
/// ref names may be in a pack).
pub fn holds(dirs: &ObjectDirs, d: &Digest) -> Result<bool> {
    match dirs.exists(d) {
        Ok(found) => Ok(found),
        Err(StoreError::UnexpectedEntry { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}
