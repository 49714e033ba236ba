//! Every occurrence of a few hundred short patterns: an Aho-Corasick DFA
//! walked by a loop of our own.
//!
//! Two questions asked of every string in pass 1 and the readback need
//! every occurrence, overlapping ones included: which rule keywords occur
//! (the rules' prefilter) and where a home-path or `USER=` marker ends
//! (local names). The crate's overlapping iterator returns to its caller
//! at every match and resumes from saved state; a plain loop over the
//! same DFA, one byte per step, reporting each match state's patterns in
//! place, does the keyword walk 1.6x faster on the bench session's
//! strings (see bench/HISTORY.md, fourteenth session). The prefilter
//! walks the two halves of a long string as two chains in one loop
//! (twenty-first session).

use std::sync::Arc;

use aho_corasick::automaton::{Automaton, StateID};
use aho_corasick::dfa::DFA;
use aho_corasick::{Anchored, MatchKind, StartKind};

/// Patterns to find anywhere in a string, overlapping ones included.
/// Cheap to clone (the DFA is shared).
#[derive(Debug, Clone)]
pub struct Walker {
    dfa: Arc<DFA>,
    /// What the DFA reads for each input byte: a dense code for each byte
    /// the patterns use (after folding ASCII case when matching without
    /// case), 0 for every other. Why: the crate splits the byte range
    /// into classes at every byte a pattern uses, so the 52 bytes of the
    /// rules' keywords, spread over the range and in two cases, make
    /// over 64 classes and a table 128 transitions wide; dense codes make
    /// a table 64 wide, 1.9 MB rather than 3.8, and more of it stays in
    /// cache. The lookup is off the walk's chain of dependent loads.
    fold: Arc<[u8; 256]>,
    start: StateID,
    /// Length of the longest pattern.
    longest: usize,
}

/// Strings shorter than this are walked in one piece: splitting them
/// saves less than the overlap costs.
const SPLIT_MIN: usize = 128;

impl Walker {
    /// The automaton of `patterns` (a pattern's index is its position),
    /// ASCII case-insensitive or exact.
    pub fn new<P: AsRef<[u8]>>(patterns: &[P], ascii_case_insensitive: bool) -> Walker {
        // Each byte a pattern uses gets its own code from 1 up, in byte
        // order; every other byte reads as 0.
        let lower = |b: u8| {
            if ascii_case_insensitive {
                b.to_ascii_lowercase()
            } else {
                b
            }
        };
        let mut used = [false; 256];
        for p in patterns {
            for &b in p.as_ref() {
                used[usize::from(lower(b))] = true;
            }
        }
        // With all 256 bytes in use there is no code to spare for the
        // rest, and the bytes stand for themselves.
        let dense = used.iter().filter(|u| **u).count() < 256;
        let mut code: [u8; 256] = std::array::from_fn(|b| b as u8);
        if dense {
            let mut next = 0u8;
            for (b, c) in code.iter_mut().enumerate() {
                *c = if used[b] {
                    next += 1;
                    next
                } else {
                    0
                };
            }
        }
        let fold: [u8; 256] = std::array::from_fn(|b| code[usize::from(lower(b as u8))]);
        let patterns: Vec<Vec<u8>> = patterns
            .iter()
            .map(|p| p.as_ref().iter().map(|&b| fold[usize::from(b)]).collect())
            .collect();
        let dfa = aho_corasick::dfa::Builder::new()
            .match_kind(MatchKind::Standard)
            .start_kind(StartKind::Unanchored)
            // A prefilter would make the start state special and send
            // the loop below to the crate's skip logic; for patterns that
            // start with common letters and punctuation it skips little.
            .prefilter(false)
            .build(&patterns)
            .expect("pattern automaton builds");
        let start = dfa
            .start_state(Anchored::No)
            .expect("an unanchored DFA has an unanchored start state");
        Walker {
            dfa: Arc::new(dfa),
            fold: Arc::new(fold),
            start,
            longest: patterns.iter().map(|p| p.len()).max().unwrap_or(0),
        }
    }

    /// Calls `found(pattern, end)` for every pattern occurrence in `hay`
    /// (`end` is one past its last byte), in order of `end` (a pattern
    /// occurring twice is reported twice).
    #[inline]
    pub fn each(&self, hay: &[u8], mut found: impl FnMut(usize, usize)) {
        let (dfa, fold) = (&*self.dfa, &*self.fold);
        let mut sid = self.start;
        for (at, &b) in hay.iter().enumerate() {
            sid = dfa.next_state(Anchored::No, sid, fold[usize::from(b)]);
            if dfa.is_special(sid) {
                if dfa.is_match(sid) {
                    for i in 0..dfa.match_len(sid) {
                        found(dfa.match_pattern(sid, i).as_usize(), at + 1);
                    }
                } else if dfa.is_dead(sid) {
                    // Unreachable in an unanchored standard search; if
                    // it were reached, nothing more could match.
                    return;
                }
            }
        }
    }
}

impl Walker {
    /// Calls `found(pattern, end)` for every pattern occurrence in `hay`,
    /// as [`Walker::each`] does but in no particular order.
    ///
    /// Why: one walk is a chain of dependent table loads, so it runs at
    /// the latency of a load per byte. The two halves of a string are
    /// walked in one loop as two independent chains, which the CPU
    /// overlaps. The second walk starts `longest - 1` bytes before the
    /// middle, so every occurrence ending after the middle lies wholly
    /// inside what it reads; it reports only those, the first walk the
    /// rest.
    #[inline]
    pub fn each_unordered(&self, hay: &[u8], mut found: impl FnMut(usize, usize)) {
        if hay.len() < SPLIT_MIN || self.longest == 0 {
            return self.each(hay, found);
        }
        let mid = hay.len() / 2;
        let from = mid.saturating_sub(self.longest - 1);
        let (first, second) = (&hay[..mid], &hay[from..]);
        let (dfa, fold) = (&*self.dfa, &*self.fold);
        let report = |sid: StateID, end: usize, found: &mut dyn FnMut(usize, usize)| {
            if dfa.is_match(sid) {
                for i in 0..dfa.match_len(sid) {
                    found(dfa.match_pattern(sid, i).as_usize(), end);
                }
            }
        };
        let (mut a, mut b) = (self.start, self.start);
        // `first` is never longer than `second`.
        for (at, (&x, &y)) in first.iter().zip(second).enumerate() {
            a = dfa.next_state(Anchored::No, a, fold[usize::from(x)]);
            b = dfa.next_state(Anchored::No, b, fold[usize::from(y)]);
            if dfa.is_special(a) {
                report(a, at + 1, &mut found);
            }
            if dfa.is_special(b) && from + at >= mid {
                report(b, from + at + 1, &mut found);
            }
        }
        for (at, &y) in second.iter().enumerate().skip(first.len()) {
            b = dfa.next_state(Anchored::No, b, fold[usize::from(y)]);
            if dfa.is_special(b) && from + at >= mid {
                report(b, from + at + 1, &mut found);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aho_corasick::AhoCorasickBuilder;
    use proptest::prelude::*;

    const WORDS: &[&str] = &[
        "key", "apikey", "api", "token", "tok", "ghp_", "sk-", "k", "eyJ",
    ];

    /// What the crate's own overlapping iterator reports: (pattern, end).
    fn reference(hay: &[u8], fold: bool) -> Vec<(usize, usize)> {
        let ac = AhoCorasickBuilder::new()
            .ascii_case_insensitive(fold)
            .match_kind(MatchKind::Standard)
            .build(WORDS)
            .unwrap();
        let mut v: Vec<_> = ac
            .find_overlapping_iter(hay)
            .map(|m| (m.pattern().as_usize(), m.end()))
            .collect();
        v.sort();
        v
    }

    fn ours(hay: &[u8], fold: bool) -> Vec<(usize, usize)> {
        let mut v = Vec::new();
        Walker::new(WORDS, fold).each(hay, |i, end| v.push((i, end)));
        v
    }

    /// [`Walker::each_unordered`]'s reports, sorted.
    fn ours_split(hay: &[u8], fold: bool) -> Vec<(usize, usize)> {
        let mut v = Vec::new();
        Walker::new(WORDS, fold).each_unordered(hay, |i, end| v.push((i, end)));
        v.sort();
        v
    }

    #[test]
    fn a_split_walk_reports_occurrences_at_and_across_the_middle_once() {
        // "apikey" (the longest word) placed to end one before, at, and
        // one after the middle, and to straddle it.
        for shift in [-7, -6, -5, -3, 0, 1, 4] {
            let len = 2 * SPLIT_MIN;
            let mut hay = vec![b'.'; len];
            let at = (len / 2) as isize - 6 + shift;
            hay[at as usize..at as usize + 6].copy_from_slice(b"apikey");
            hay[..3].copy_from_slice(b"tok");
            hay[len - 3..].copy_from_slice(b"key");
            let got = ours_split(&hay, true);
            assert_eq!(got, reference(&hay, true), "shift {shift}");
            // api, apikey, key, k; tok, k; key, k.
            assert_eq!(got.len(), 8, "shift {shift}: {got:?}");
        }
        // Below the split length, the one-piece walk.
        assert_eq!(
            ours_split(b"x APIKEY=1; Tok", true),
            reference(b"x APIKEY=1; Tok", true)
        );
    }

    #[test]
    fn nested_overlapping_and_case_folded_keywords_are_all_reported() {
        let hay = b"x APIKEY=1; Tok";
        let mut got = ours(hay, true);
        // Reported in order of where each ends.
        assert!(got.windows(2).all(|w| w[0].1 <= w[1].1));
        got.sort();
        assert_eq!(got, reference(hay, true));
        // api, apikey, key, k (in KEY), tok, k (in Tok)
        assert_eq!(got, vec![(0, 8), (1, 8), (2, 5), (4, 15), (7, 6), (7, 15)]);
        assert!(ours(b"", true).is_empty());
        assert!(ours(b"nothing here", true).is_empty());
        assert_eq!(ours(b"ghp_", true), vec![(5, 4)]);
        // Exact: of "Tok" only the lower-case "k" matches.
        assert_eq!(ours(b"Tok", false), vec![(7, 3)]);
    }

    #[test]
    fn bytes_outside_ascii_and_a_pattern_using_every_byte_are_found() {
        let every: Vec<u8> = (0..=255).collect();
        for patterns in [
            vec![b"\xff\x00k".to_vec(), b"K\x80".to_vec()],
            vec![every.clone()],
        ] {
            let mut hay = b"..\xff\x00K\x80.k\x80".to_vec();
            hay.extend(&every);
            hay.extend(&every);
            for fold in [false, true] {
                let ac = AhoCorasickBuilder::new()
                    .ascii_case_insensitive(fold)
                    .match_kind(MatchKind::Standard)
                    .build(&patterns)
                    .unwrap();
                let mut want: Vec<_> = ac
                    .find_overlapping_iter(&hay)
                    .map(|m| (m.pattern().as_usize(), m.end()))
                    .collect();
                let mut got = Vec::new();
                Walker::new(&patterns, fold).each_unordered(&hay, |i, end| got.push((i, end)));
                want.sort();
                got.sort();
                assert!(!want.is_empty());
                assert_eq!(got, want, "fold {fold}");
            }
        }
    }

    proptest! {
        #[test]
        fn reports_what_the_crates_overlapping_search_reports(
            parts in proptest::collection::vec(
                prop_oneof![
                    proptest::sample::select(WORDS).prop_map(str::to_string),
                    "[a-zA-Z_=-]{0,4}",
                    any::<u8>().prop_map(|b| String::from_utf8_lossy(&[b]).into_owned()),
                ],
                // Past SPLIT_MIN often, so the split walk is exercised.
                0..96,
            ),
            upper in any::<u64>(),
            fold in any::<bool>(),
        ) {
            let mut hay: Vec<u8> = parts.concat().into_bytes();
            for (i, b) in hay.iter_mut().enumerate() {
                if upper >> (i % 64) & 1 == 1 {
                    b.make_ascii_uppercase();
                }
            }
            let mut got = ours(&hay, fold);
            got.sort();
            let want = reference(&hay, fold);
            prop_assert_eq!(&got, &want);
            prop_assert_eq!(ours_split(&hay, fold), want);
        }
    }
}
