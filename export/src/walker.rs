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
//! strings (see bench/RESULTS.md, fourteenth session).

use std::sync::Arc;

use aho_corasick::automaton::{Automaton, StateID};
use aho_corasick::dfa::DFA;
use aho_corasick::{Anchored, MatchKind, StartKind};

/// Patterns to find anywhere in a string, overlapping ones included.
/// Cheap to clone (the DFA is shared).
#[derive(Debug, Clone)]
pub struct Walker {
    dfa: Arc<DFA>,
    start: StateID,
}

impl Walker {
    /// The automaton of `patterns` (a pattern's index is its position),
    /// ASCII case-insensitive or exact.
    pub fn new<P: AsRef<[u8]>>(patterns: &[P], ascii_case_insensitive: bool) -> Walker {
        let dfa = aho_corasick::dfa::Builder::new()
            .ascii_case_insensitive(ascii_case_insensitive)
            .match_kind(MatchKind::Standard)
            .start_kind(StartKind::Unanchored)
            // A prefilter would make the start state special and send
            // the loop below to the crate's skip logic; for patterns that
            // start with common letters and punctuation it skips little.
            .prefilter(false)
            .build(patterns)
            .expect("pattern automaton builds");
        let start = dfa
            .start_state(Anchored::No)
            .expect("an unanchored DFA has an unanchored start state");
        Walker {
            dfa: Arc::new(dfa),
            start,
        }
    }

    /// Calls `found(pattern, end)` for every pattern occurrence in `hay`
    /// (`end` is one past its last byte), in order of `end` (a pattern
    /// occurring twice is reported twice).
    #[inline]
    pub fn each(&self, hay: &[u8], mut found: impl FnMut(usize, usize)) {
        let dfa = &*self.dfa;
        let mut sid = self.start;
        for (at, &b) in hay.iter().enumerate() {
            sid = dfa.next_state(Anchored::No, sid, b);
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

    proptest! {
        #[test]
        fn reports_what_the_crates_overlapping_search_reports(
            parts in proptest::collection::vec(
                prop_oneof![
                    proptest::sample::select(WORDS).prop_map(str::to_string),
                    "[a-zA-Z_=-]{0,4}",
                    any::<u8>().prop_map(|b| String::from_utf8_lossy(&[b]).into_owned()),
                ],
                0..24,
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
            prop_assert_eq!(got, reference(&hay, fold));
        }
    }
}
