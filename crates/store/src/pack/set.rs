//! The packs a store holds, as their indexes, loaded when first needed.
//!
//! A reader that never meets a packed object (a store in format 1) pays one
//! failed directory open. Packs are immutable, so an index once loaded
//! stays right for as long as its pack exists; what changes is the set:
//! other processes publish packs, and gc replaces one by a smaller one. So
//! a lookup that misses, where the caller knows the object should exist,
//! lists `packs/` again and loads only the indexes it has not seen.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::index::{BadIndex, Entry, PackIndex, ENTRY_WIDE, HEADER, MAX_ENTRIES, TRAILER};
use super::{parse_key, PackFile, PACKS_PREFIX};
use crate::backend::Backend;
use crate::error::{Result, StoreError};
use coffer_base::digest::Digest;

/// The largest index a reader loads.
const MAX_INDEX_BYTES: u64 = (HEADER + ENTRY_WIDE * MAX_ENTRIES as usize + TRAILER) as u64;

/// A pack whose index cannot be used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unusable {
    /// The index's key.
    pub key: String,
    /// What is wrong.
    pub why: String,
}

#[derive(Default)]
struct Known {
    listed: bool,
    packs: Vec<Arc<PackIndex>>,
    unusable: Vec<Unusable>,
}

/// The indexes of a store's packs.
#[derive(Default)]
pub struct PackSet {
    known: Mutex<Known>,
}

impl std::fmt::Debug for PackSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PackSet")
    }
}

/// Reads and checks the index of the pack `pack`.
fn load(backend: &dyn Backend, pack: Digest) -> Result<std::result::Result<PackIndex, BadIndex>> {
    let key = super::idx_key(&pack);
    let Some(bytes) = crate::backend::read_small(backend, &key, MAX_INDEX_BYTES)? else {
        return Ok(Err(BadIndex("vanished while it was read".into())));
    };
    Ok(PackIndex::decode(pack, bytes))
}

impl PackSet {
    /// Lists `packs/` and loads every index not loaded yet; forgets packs
    /// that are gone. An index that does not decode, or whose pack is
    /// absent, is set aside as unusable (fsck reports it).
    pub fn refresh(&self, backend: &dyn Backend) -> Result<()> {
        let mut files: HashMap<Digest, (bool, bool)> = HashMap::new();
        backend.list_each(PACKS_PREFIX, &mut |l| {
            if let (Some((d, kind)), true) = (parse_key(&l.key), l.regular) {
                let slot = files.entry(d).or_default();
                match kind {
                    PackFile::Pack => slot.0 = true,
                    PackFile::Index => slot.1 = true,
                }
            }
            Ok(())
        })?;
        let mut known = self.known.lock().expect("pack set poisoned");
        known
            .packs
            .retain(|p| files.get(&p.pack()) == Some(&(true, true)));
        let mut unusable = Vec::new();
        let mut names: Vec<Digest> = files.keys().copied().collect();
        names.sort_unstable();
        for d in names {
            match files[&d] {
                (true, true) if !known.packs.iter().any(|p| p.pack() == d) => {
                    match load(backend, d)? {
                        Ok(idx) => known.packs.push(Arc::new(idx)),
                        Err(e) => unusable.push(Unusable {
                            key: super::idx_key(&d),
                            why: e.0,
                        }),
                    }
                }
                (false, true) => unusable.push(Unusable {
                    key: super::idx_key(&d),
                    why: "its pack is missing".into(),
                }),
                _ => {}
            }
        }
        known.unusable = unusable;
        known.listed = true;
        Ok(())
    }

    fn ensure_listed(&self, backend: &dyn Backend) -> Result<()> {
        if self.known.lock().expect("pack set poisoned").listed {
            return Ok(());
        }
        self.refresh(backend)
    }

    /// The pack holding `d` and its entry. With `refresh`, a miss lists
    /// `packs/` again first (for a digest the catalog names).
    pub fn find(
        &self,
        backend: &dyn Backend,
        d: &Digest,
        refresh: bool,
    ) -> Result<Option<(Arc<PackIndex>, Entry)>> {
        self.ensure_listed(backend)?;
        if let Some(found) = self.find_loaded(d) {
            return Ok(Some(found));
        }
        if !refresh {
            return Ok(None);
        }
        self.refresh(backend)?;
        Ok(self.find_loaded(d))
    }

    fn find_loaded(&self, d: &Digest) -> Option<(Arc<PackIndex>, Entry)> {
        let known = self.known.lock().expect("pack set poisoned");
        known
            .packs
            .iter()
            .find_map(|p| p.find(d).map(|e| (Arc::clone(p), e)))
    }

    /// Adds a pack this process has just published.
    pub fn add(&self, idx: PackIndex) {
        let mut known = self.known.lock().expect("pack set poisoned");
        if !known.packs.iter().any(|p| p.pack() == idx.pack()) {
            known.packs.push(Arc::new(idx));
        }
    }

    /// Every usable pack and every unusable index, freshly listed.
    pub fn all(&self, backend: &dyn Backend) -> Result<(Vec<Arc<PackIndex>>, Vec<Unusable>)> {
        self.refresh(backend)?;
        let known = self.known.lock().expect("pack set poisoned");
        let mut packs = known.packs.clone();
        packs.sort_unstable_by_key(|p| p.pack());
        Ok((packs, known.unusable.clone()))
    }
}

/// Every entry of `packs` in digest order (a digest held by two packs
/// comes twice), merged one step at a time: memory holds a cursor per
/// pack, never the entries.
pub struct Merged<'a> {
    packs: &'a [Arc<PackIndex>],
    next: Vec<usize>,
}

impl<'a> Merged<'a> {
    /// A merge over `packs`.
    pub fn new(packs: &'a [Arc<PackIndex>]) -> Self {
        Merged {
            packs,
            next: vec![0; packs.len()],
        }
    }

    /// The smallest entry not yet returned, without taking it.
    pub fn peek(&self) -> Option<(usize, Entry)> {
        let mut best: Option<(usize, Entry)> = None;
        for (p, &i) in self.next.iter().enumerate() {
            if i < self.packs[p].len() {
                let e = self.packs[p].entry(i);
                if best.is_none_or(|(_, b)| e.digest < b.digest) {
                    best = Some((p, e));
                }
            }
        }
        best
    }
}

impl Iterator for Merged<'_> {
    type Item = (usize, Entry);

    fn next(&mut self) -> Option<(usize, Entry)> {
        let found = self.peek()?;
        self.next[found.0] += 1;
        Some(found)
    }
}

/// A pack's index could not be read: `integrity.corrupt_pack`.
pub fn unusable_error(u: &Unusable) -> StoreError {
    StoreError::CorruptPack {
        key: u.key.clone(),
        detail: u.why.clone(),
    }
}
