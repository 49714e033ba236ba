//! The packs a store holds, as their indexes, loaded when first needed.
//!
//! A reader that never meets a packed object (a store in format 1) pays one
//! failed directory open. Packs are immutable, so an index once loaded
//! stays right for as long as its pack exists; what changes is the set:
//! other processes publish packs, and gc replaces one by a smaller one. So
//! a lookup that misses, where the caller knows the object should exist,
//! lists `packs/` again and loads only the indexes it has not seen.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
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
    /// One bit for each value of a digest's first [`FILTER_BITS`] bits,
    /// set for every entry of every pack loaded (never cleared: a pack
    /// gone leaves bits that only send a lookup on to the packs). A put
    /// into a store of a million packed objects asks the packs for each
    /// new digest, which none holds: with a bit clear, the answer costs
    /// one load instead of a probe of each of some two hundred indexes.
    filter: Vec<u64>,
}

/// Bits of a digest's prefix the pack set's filter is keyed by: 2 MiB,
/// allocated zeroed (untouched pages cost nothing), a few percent set at
/// a million objects.
const FILTER_BITS: u32 = 24;

impl Known {
    /// Adds a loaded pack, setting its entries' bits.
    fn push(&mut self, idx: PackIndex) {
        if self.filter.is_empty() {
            self.filter = vec![0u64; 1 << (FILTER_BITS - 6)];
        }
        for e in idx.entries() {
            let b = filter_bit(&e.digest);
            self.filter[b / 64] |= 1 << (b % 64);
        }
        self.packs.push(Arc::new(idx));
    }

    /// Whether some loaded pack may hold `d` (false: none does).
    fn may_hold(&self, d: &Digest) -> bool {
        let b = filter_bit(d);
        self.filter
            .get(b / 64)
            .is_some_and(|w| w & (1 << (b % 64)) != 0)
    }
}

/// The filter bit of `d`: its first [`FILTER_BITS`] bits.
fn filter_bit(d: &Digest) -> usize {
    let b = d.as_bytes();
    (usize::from(b[0]) << 16 | usize::from(b[1]) << 8 | usize::from(b[2])) >> (24 - FILTER_BITS)
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
                        Ok(idx) => known.push(idx),
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
        if !known.may_hold(d) {
            return None;
        }
        known
            .packs
            .iter()
            .find_map(|p| p.find(d).map(|e| (Arc::clone(p), e)))
    }

    /// Adds a pack this process has just published.
    pub fn add(&self, idx: PackIndex) {
        let mut known = self.known.lock().expect("pack set poisoned");
        if !known.packs.iter().any(|p| p.pack() == idx.pack()) {
            known.push(idx);
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
/// comes twice, the pack listed first first), merged one step at a time:
/// memory holds a cursor per pack, never the entries, and a step costs a
/// heap operation (the packs of a million objects are hundreds; a scan
/// of every cursor per step made fsck a third slower at 1M).
pub struct Merged<'a> {
    packs: &'a [Arc<PackIndex>],
    next: Vec<usize>,
    /// The head of each pack not yet exhausted.
    heads: BinaryHeap<Reverse<(Digest, usize)>>,
}

impl<'a> Merged<'a> {
    /// A merge over `packs`.
    pub fn new(packs: &'a [Arc<PackIndex>]) -> Self {
        let heads = packs
            .iter()
            .enumerate()
            .filter(|(_, p)| !p.is_empty())
            .map(|(i, p)| Reverse((p.entry(0).digest, i)))
            .collect();
        Merged {
            packs,
            next: vec![0; packs.len()],
            heads,
        }
    }

    /// The smallest entry not yet returned, without taking it.
    pub fn peek(&self) -> Option<(usize, Entry)> {
        let Reverse((_, p)) = *self.heads.peek()?;
        Some((p, self.packs[p].entry(self.next[p])))
    }
}

impl Iterator for Merged<'_> {
    type Item = (usize, Entry);

    fn next(&mut self) -> Option<(usize, Entry)> {
        let Reverse((_, p)) = self.heads.pop()?;
        let found = (p, self.packs[p].entry(self.next[p]));
        self.next[p] += 1;
        if self.next[p] < self.packs[p].len() {
            self.heads
                .push(Reverse((self.packs[p].entry(self.next[p]).digest, p)));
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pack::index::encode;

    /// An index over `digests` (frames of 10 bytes, one after another).
    fn index(name: &[u8], digests: &[Digest]) -> Arc<PackIndex> {
        let pack = Digest::of(name);
        let mut entries: Vec<Entry> = digests
            .iter()
            .enumerate()
            .map(|(i, d)| Entry {
                digest: *d,
                offset: 10 * i as u64,
                stored: 10,
                size: 9,
            })
            .collect();
        let bytes = encode(pack, 10 * digests.len() as u64, &mut entries);
        Arc::new(PackIndex::decode(pack, bytes).unwrap())
    }

    #[test]
    fn every_entry_of_every_pack_added_is_found_and_nothing_else() {
        let d: Vec<Digest> = (0u32..3000).map(|i| Digest::of(&i.to_le_bytes())).collect();
        let set = PackSet::default();
        assert!(
            set.find_loaded(&d[0]).is_none(),
            "an empty set holds nothing"
        );
        for (name, range) in [(b"a", 0..1000), (b"b", 1000..1500), (b"c", 1500..2000)] {
            let idx = index(name, &d[range]);
            set.add(PackIndex::clone(&idx));
        }
        for (i, x) in d.iter().enumerate() {
            let found = set.find_loaded(x).map(|(p, e)| (p.pack(), e.digest));
            let pack = match i {
                0..1000 => Some(Digest::of(b"a")),
                1000..1500 => Some(Digest::of(b"b")),
                1500..2000 => Some(Digest::of(b"c")),
                _ => None,
            };
            assert_eq!(found, pack.map(|p| (p, *x)), "entry {i}");
        }
        // Digests sharing a filter bit with a packed one still miss.
        let mut near = *d[5].as_bytes();
        near[31] ^= 1;
        assert!(set.find_loaded(&Digest::from_bytes(near)).is_none());
    }

    #[test]
    fn the_merge_yields_every_entry_in_digest_order_and_ties_in_pack_order() {
        let d: Vec<Digest> = (0u32..40).map(|i| Digest::of(&i.to_le_bytes())).collect();
        let packs = vec![
            index(b"a", &d[0..15]),
            index(b"b", &[]),
            index(b"c", &d[10..30]),
            index(b"d", &d[25..40]),
        ];
        let merged: Vec<(usize, Digest)> =
            Merged::new(&packs).map(|(p, e)| (p, e.digest)).collect();
        let mut expected: Vec<(usize, Digest)> = [(0, 0..15), (2, 10..30), (3, 25..40)]
            .into_iter()
            .flat_map(|(p, r)| d[r].iter().map(move |x| (p, *x)))
            .collect();
        expected.sort_by_key(|(p, x)| (*x, *p));
        assert_eq!(merged, expected);
        let mut m = Merged::new(&packs);
        while let Some(peeked) = m.peek() {
            assert_eq!(m.next(), Some(peeked));
        }
        assert_eq!(m.next(), None);
    }
}
