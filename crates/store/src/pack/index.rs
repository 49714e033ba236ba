//! A pack's index: which objects a pack holds, where, and how large.
//!
//! Binary, big-endian, fixed-width so it is read with a binary search and
//! no parser (docs/FORMAT.md, "Packs"):
//!
//! ```text
//! magic        8   b"CFPKIDX\x03" (or \x02, read only)
//! count        8   number of entries
//! pack digest 32   SHA-256 of the pack file's bytes (also its name)
//! pack size    8   bytes of the pack file
//! entries   44*n   sorted by digest, no duplicates:
//!                  digest 32 | offset 4 | frame length 4 | raw size 4
//!                  (\x02: 56*n, the three numbers 8 bytes each)
//! checksum    32   SHA-256 of every byte above
//! ```
//!
//! The compact entries are written whenever every number fits in 32
//! bits, as they always do for packs of up to 64 MiB of small objects;
//! an index needing more is written in the wide form.

use coffer_base::digest::Digest;

/// The first eight bytes of an index with compact entries.
pub const MAGIC: &[u8; 8] = b"CFPKIDX\x03";
/// The first eight bytes of an index with wide entries.
pub const MAGIC_WIDE: &[u8; 8] = b"CFPKIDX\x02";
/// Bytes before the entries.
pub const HEADER: usize = 8 + 8 + 32 + 8;
/// Bytes of one compact entry (32-bit numbers).
pub const ENTRY: usize = 32 + 4 + 4 + 4;
/// Bytes of one wide entry (64-bit numbers): the most an entry takes.
pub const ENTRY_WIDE: usize = 32 + 8 + 8 + 8;
/// Bytes after the entries.
pub const TRAILER: usize = 32;
/// Most entries one index may hold: bounds what a reader loads for one
/// pack (about 56 MiB).
pub const MAX_ENTRIES: u64 = 1 << 20;

/// Where one object's frame is inside its pack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The object.
    pub digest: Digest,
    /// Byte offset of its frame in the pack.
    pub offset: u64,
    /// Bytes of its frame.
    pub stored: u64,
    /// Bytes it decodes to.
    pub size: u64,
}

/// Why bytes are not a valid index.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadIndex(pub String);

/// A decoded, checked index, held as its bytes.
#[derive(Debug, Clone)]
pub struct PackIndex {
    bytes: Vec<u8>,
    /// For each value of a digest's first [`PackIndex::bits`] bits, the
    /// first entry whose digest starts at or past it (one more at the end:
    /// `count`). Digests are uniform, so a bucket holds about two entries
    /// and a lookup that misses, as most do in a store of many packs,
    /// costs one table read and a comparison of eight bytes rather than
    /// a binary search's dozen 32-byte comparisons.
    fanout: Vec<u32>,
    bits: u32,
    count: usize,
    /// [`ENTRY`] or [`ENTRY_WIDE`], by the magic.
    entry_len: usize,
    pack: Digest,
    pack_size: u64,
}

fn be64(b: &[u8]) -> u64 {
    u64::from_be_bytes(b[..8].try_into().expect("eight bytes"))
}

fn be32(b: &[u8]) -> u64 {
    u64::from(u32::from_be_bytes(b[..4].try_into().expect("four bytes")))
}

fn digest_at(b: &[u8]) -> Digest {
    Digest::from_bytes(b[..32].try_into().expect("32 bytes"))
}

/// Encodes an index for the pack `pack` of `pack_size` bytes; `entries`
/// in any order (they are sorted here), digests distinct.
pub fn encode(pack: Digest, pack_size: u64, entries: &mut [Entry]) -> Vec<u8> {
    entries.sort_unstable_by_key(|e| e.digest);
    let fits = |n: u64| u32::try_from(n).is_ok();
    let compact = entries
        .iter()
        .all(|e| fits(e.offset) && fits(e.stored) && fits(e.size));
    let (magic, entry_len) = if compact {
        (MAGIC, ENTRY)
    } else {
        (MAGIC_WIDE, ENTRY_WIDE)
    };
    let mut out = Vec::with_capacity(HEADER + entry_len * entries.len() + TRAILER);
    out.extend_from_slice(magic);
    out.extend_from_slice(&(entries.len() as u64).to_be_bytes());
    out.extend_from_slice(pack.as_bytes());
    out.extend_from_slice(&pack_size.to_be_bytes());
    for e in entries.iter() {
        out.extend_from_slice(e.digest.as_bytes());
        for n in [e.offset, e.stored, e.size] {
            if compact {
                out.extend_from_slice(&(n as u32).to_be_bytes());
            } else {
                out.extend_from_slice(&n.to_be_bytes());
            }
        }
    }
    let sum = Digest::of(&out);
    out.extend_from_slice(sum.as_bytes());
    out
}

impl PackIndex {
    /// Checks `bytes` as the index of the pack named `pack`: magic,
    /// length, checksum, name, entries sorted and distinct, every frame
    /// inside the pack and no two overlapping.
    pub fn decode(pack: Digest, bytes: Vec<u8>) -> Result<PackIndex, BadIndex> {
        let bad = |s: String| Err(BadIndex(s));
        let entry_len = match bytes.get(..8) {
            Some(m) if m == MAGIC => ENTRY,
            Some(m) if m == MAGIC_WIDE => ENTRY_WIDE,
            _ => return bad("not a coffer pack index (magic or length)".into()),
        };
        if bytes.len() < HEADER + TRAILER {
            return bad("not a coffer pack index (magic or length)".into());
        }
        let count = be64(&bytes[8..]);
        if count > MAX_ENTRIES {
            return bad(format!("{count} entries, more than {MAX_ENTRIES}"));
        }
        let count = count as usize;
        if bytes.len() != HEADER + entry_len * count + TRAILER {
            return bad(format!(
                "{} bytes, but {count} entries need {}",
                bytes.len(),
                HEADER + entry_len * count + TRAILER
            ));
        }
        let body = bytes.len() - TRAILER;
        if Digest::of(&bytes[..body]) != digest_at(&bytes[body..]) {
            return bad("checksum does not match".into());
        }
        if digest_at(&bytes[16..]) != pack {
            return bad(format!("names pack {}", digest_at(&bytes[16..])));
        }
        let mut idx = PackIndex {
            pack_size: be64(&bytes[48..]),
            bytes,
            fanout: Vec::new(),
            bits: 0,
            count,
            entry_len,
            pack,
        };
        idx.check_entries()?;
        idx.build_fanout();
        Ok(idx)
    }

    /// The first eight bytes of entry `i`'s digest, as a number.
    fn prefix(&self, i: usize) -> u64 {
        be64(&self.bytes[HEADER + self.entry_len * i..])
    }

    /// The bucket of a digest starting with `prefix`.
    fn bucket(&self, prefix: u64) -> usize {
        prefix.checked_shr(64 - self.bits).unwrap_or(0) as usize
    }

    /// Fills the fanout table, about one bucket for two entries (entries
    /// are sorted, so one pass).
    fn build_fanout(&mut self) {
        self.bits = (usize::BITS - self.count.leading_zeros()).saturating_sub(2);
        let buckets = 1usize << self.bits;
        let mut fanout = Vec::with_capacity(buckets + 1);
        for i in 0..self.count {
            let b = self.bucket(self.prefix(i));
            while fanout.len() <= b {
                fanout.push(i as u32);
            }
        }
        fanout.resize(buckets + 1, self.count as u32);
        self.fanout = fanout;
    }

    fn check_entries(&self) -> Result<(), BadIndex> {
        let mut spans: Vec<(u64, u64)> = Vec::with_capacity(self.count);
        for i in 0..self.count {
            let e = self.entry(i);
            if i > 0 && self.entry(i - 1).digest >= e.digest {
                return Err(BadIndex(format!("entry {i} is out of order")));
            }
            let end = e.offset.checked_add(e.stored);
            if e.stored == 0 || end.is_none_or(|end| end > self.pack_size) {
                return Err(BadIndex(format!(
                    "entry {i} ({}) lies outside the pack",
                    e.digest
                )));
            }
            spans.push((e.offset, e.stored));
        }
        spans.sort_unstable();
        if spans.windows(2).any(|w| w[0].0 + w[0].1 > w[1].0) {
            return Err(BadIndex("two frames overlap".into()));
        }
        Ok(())
    }

    /// The pack this index describes.
    pub fn pack(&self) -> Digest {
        self.pack
    }

    /// Bytes of the pack file.
    pub fn pack_size(&self) -> u64 {
        self.pack_size
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True when the pack holds nothing.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The `i`th entry in digest order.
    pub fn entry(&self, i: usize) -> Entry {
        let b = &self.bytes[HEADER + self.entry_len * i..];
        if self.entry_len == ENTRY {
            Entry {
                digest: digest_at(b),
                offset: be32(&b[32..]),
                stored: be32(&b[36..]),
                size: be32(&b[40..]),
            }
        } else {
            Entry {
                digest: digest_at(b),
                offset: be64(&b[32..]),
                stored: be64(&b[40..]),
                size: be64(&b[48..]),
            }
        }
    }

    /// The entry of `d`: its bucket in the fanout table, then a binary
    /// search inside the bucket (bounded however an index was crafted).
    pub fn find(&self, d: &Digest) -> Option<Entry> {
        let key = d.as_bytes();
        let prefix = be64(key);
        let b = self.bucket(prefix);
        let (mut lo, mut hi) = (self.fanout[b] as usize, self.fanout[b + 1] as usize);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let at = HEADER + self.entry_len * mid;
            let order = self
                .prefix(mid)
                .cmp(&prefix)
                .then_with(|| self.bytes[at..at + 32].cmp(&key[..]));
            match order {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(self.entry(mid)),
            }
        }
        None
    }

    /// Every entry, in digest order.
    pub fn entries(&self) -> impl Iterator<Item = Entry> + '_ {
        (0..self.count).map(|i| self.entry(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(n: u64) -> Vec<Entry> {
        (0..n)
            .map(|i| Entry {
                digest: Digest::of(&i.to_le_bytes()),
                offset: i * 10,
                stored: 10,
                size: 7,
            })
            .collect()
    }

    #[test]
    fn an_index_round_trips_and_finds_every_entry_and_nothing_else() {
        let pack = Digest::of(b"pack");
        let mut es = entries(300);
        let bytes = encode(pack, 3000, &mut es);
        let idx = PackIndex::decode(pack, bytes).unwrap();
        assert_eq!((idx.len(), idx.pack_size()), (300, 3000));
        for e in &es {
            assert_eq!(idx.find(&e.digest), Some(*e));
        }
        assert_eq!(idx.find(&Digest::of(b"absent")), None);
        let listed: Vec<Entry> = idx.entries().collect();
        assert_eq!(listed, es, "entries come back sorted");
    }

    #[test]
    fn the_fanout_finds_every_entry_at_every_size_and_in_crowded_buckets() {
        let pack = Digest::of(b"pack");
        let probe = |es: &mut Vec<Entry>, absent: &[Digest]| {
            let size = es.iter().map(|e| e.offset + e.stored).max().unwrap_or(0);
            let idx = PackIndex::decode(pack, encode(pack, size, es)).unwrap();
            for e in es.iter() {
                assert_eq!(
                    idx.find(&e.digest),
                    Some(*e),
                    "{} of {}",
                    e.digest,
                    es.len()
                );
            }
            for d in absent {
                assert_eq!(idx.find(d), None, "{d} is not in the index");
            }
        };
        let absent: Vec<Digest> = (0u32..200).map(|i| Digest::of(&i.to_be_bytes())).collect();
        for n in [0, 1, 2, 3, 4, 5, 7, 8, 9, 63, 64, 65, 1000, 4099] {
            probe(&mut entries(n), &absent);
        }
        // Digests crafted to share their first eight bytes (one bucket,
        // told apart by later bytes), beside uniform ones; probes between
        // and around them.
        let crafted = |first: u8, last: u8| {
            let mut b = [0u8; 32];
            b[0] = first;
            b[31] = last;
            Digest::from_bytes(b)
        };
        let mut es = entries(50);
        for last in [1u8, 3, 5, 7, 9] {
            for first in [0x00, 0x80, 0xff] {
                es.push(Entry {
                    digest: crafted(first, last),
                    offset: 10 * es.len() as u64,
                    stored: 10,
                    size: 7,
                });
            }
        }
        let between: Vec<Digest> = [0u8, 2, 4, 6, 8, 10, 255]
            .into_iter()
            .flat_map(|last| [crafted(0, last), crafted(0x80, last), crafted(0xff, last)])
            .collect();
        probe(&mut es, &between);
    }

    #[test]
    fn numbers_past_32_bits_make_a_wide_index_which_reads_back() {
        let pack = Digest::of(b"pack");
        let mut es = entries(3);
        assert_eq!(&encode(pack, 3000, &mut es)[..8], MAGIC);
        assert_eq!(
            encode(pack, 3000, &mut es).len(),
            HEADER + ENTRY * 3 + TRAILER
        );
        es[2].offset = 1 << 32;
        es[2].size = 5 << 32;
        let bytes = encode(pack, 6 << 32, &mut es);
        assert_eq!(&bytes[..8], MAGIC_WIDE);
        assert_eq!(bytes.len(), HEADER + ENTRY_WIDE * 3 + TRAILER);
        let idx = PackIndex::decode(pack, bytes).unwrap();
        for e in &es {
            assert_eq!(idx.find(&e.digest), Some(*e));
        }
    }

    #[test]
    fn damage_of_any_kind_is_refused_with_its_reason() {
        let pack = Digest::of(b"pack");
        let good = encode(pack, 3000, &mut entries(4));
        let reason = |b: Vec<u8>, p: Digest| PackIndex::decode(p, b).unwrap_err().0;
        let mut flipped = good.clone();
        flipped[HEADER + 3] ^= 1;
        assert!(reason(flipped, pack).contains("checksum"));
        assert!(reason(good[..good.len() - 1].to_vec(), pack).contains("bytes"));
        assert!(reason(good.clone(), Digest::of(b"other")).contains("names pack"));
        let mut magic = good.clone();
        magic[0] = b'X';
        assert!(reason(magic, pack).contains("magic"));
        // Structurally wrong but correctly summed: outside, overlapping.
        let outside = encode(pack, 35, &mut entries(4));
        assert!(reason(outside, pack).contains("outside"));
        let mut overlapping = entries(2);
        overlapping[1].offset = 5;
        assert!(reason(encode(pack, 100, &mut overlapping), pack).contains("overlap"));
        let mut twice = entries(2);
        twice[1].digest = twice[0].digest;
        twice[1].offset = 50;
        assert!(reason(encode(pack, 100, &mut twice), pack).contains("order"));
    }
}
