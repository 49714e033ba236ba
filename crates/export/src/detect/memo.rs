//! A fixed-size memo of short strings: what a pure function of a key or
//! a short value gave last time (clean, or a key's class), so strings
//! that repeat in every record are worked out once.

/// A direct-mapped table with each string stored in its slot: a lookup
/// touches one slot, where a hash map of boxed strings takes a probe and a
/// second cache miss to compare. A string that lands on a taken slot
/// replaces its occupant, so strings seen once (timestamps) only ever cost
/// the repeated ones a recomputation now and then; memory is fixed.
#[derive(Debug, Clone)]
pub struct ShortMemo<V>(Box<[Slot<V>]>);

/// One remembered string; `len` [`EMPTY`] marks a free slot.
#[derive(Debug, Clone, Copy)]
struct Slot<V> {
    len: u8,
    bytes: [u8; MAX_LEN],
    value: Option<V>,
}

const EMPTY: u8 = u8::MAX;
const MAX_LEN: usize = 32;
/// log2 of the number of slots (4,096: about 140 KiB, stays in L2).
const SLOT_BITS: u32 = 12;

/// The Fx hash (rustc's): a multiply-rotate per word. The strings come
/// from the input, but a collision only costs a comparison (or a
/// recomputation), so a fast non-keyed hash is enough here.
fn fx(bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h = bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        h = (h.rotate_left(5) ^ w).wrapping_mul(K);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    h
}

impl<V: Copy> Default for ShortMemo<V> {
    fn default() -> Self {
        let free = Slot {
            len: EMPTY,
            bytes: [0; MAX_LEN],
            value: None,
        };
        ShortMemo(vec![free; 1 << SLOT_BITS].into_boxed_slice())
    }
}

impl<V: Copy> ShortMemo<V> {
    /// Longest string remembered: keys and enum-like values repeat in
    /// every record; longer strings (timestamps, ids, prose) rarely do,
    /// and remembering them only costs a hash and a probe each.
    pub const MAX_LEN: usize = MAX_LEN;

    fn slot(s: &str) -> usize {
        (fx(s.as_bytes()) >> (64 - SLOT_BITS)) as usize
    }

    /// What was remembered for exactly `s`, if it still is.
    pub fn get(&self, s: &str) -> Option<V> {
        if s.len() > MAX_LEN {
            return None;
        }
        let slot = &self.0[Self::slot(s)];
        if usize::from(slot.len) == s.len() && &slot.bytes[..s.len()] == s.as_bytes() {
            slot.value
        } else {
            None
        }
    }

    /// Remembers `value` for `s` (in place of whatever its slot held);
    /// strings over [`ShortMemo::MAX_LEN`] bytes are not remembered.
    pub fn insert(&mut self, s: &str, value: V) {
        if s.len() <= MAX_LEN {
            let slot = &mut self.0[Self::slot(s)];
            slot.len = s.len() as u8;
            slot.bytes[..s.len()].copy_from_slice(s.as_bytes());
            slot.value = Some(value);
        }
    }

    /// How many slots the table has (fixed).
    pub fn slots(&self) -> usize {
        self.0.len()
    }

    /// `f(s)`, remembered: computed only when `s` is not (or no longer)
    /// in the table.
    pub fn get_or(&mut self, s: &str, f: impl FnOnce(&str) -> V) -> V {
        match self.get(s) {
            Some(v) => v,
            None => {
                let v = f(s);
                self.insert(s, v);
                v
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_memo_returns_the_value_of_the_exact_string_and_computes_the_rest() {
        let mut m: ShortMemo<u32> = ShortMemo::default();
        let mut calls = 0;
        for _ in 0..3 {
            let v = m.get_or("apiKey", |s| {
                calls += 1;
                s.len() as u32
            });
            assert_eq!(v, 6);
        }
        assert_eq!(calls, 1, "computed once");
        assert_eq!(m.get("apikey"), None);
        let long = "k".repeat(MAX_LEN + 1);
        assert_eq!(m.get_or(&long, |_| 7), 7);
        assert_eq!(m.get(&long), None, "long strings are not remembered");
    }
}
