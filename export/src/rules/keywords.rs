//! The keyword prefilter's automaton and the loop that walks it.
//!
//! The prefilter only asks which keywords occur in a string, so it walks
//! an Aho-Corasick DFA itself, one byte per step, and reports each match
//! state's patterns in place. The crate's overlapping iterator returns to
//! its caller at every match and resumes from saved state; on the bench
//! session's strings the plain loop does the same walk 1.6x faster (see
//! bench/RESULTS.md, fourteenth session). Every string of an export is
//! walked twice (pass 1 and the readback), so this loop is among the
//! export's hottest.

use std::sync::Arc;

use aho_corasick::automaton::{Automaton, StateID};
use aho_corasick::dfa::DFA;
use aho_corasick::{Anchored, MatchKind, StartKind};

/// Keywords to find anywhere in a string, ASCII case-insensitively,
/// overlapping ones included. Cheap to clone (the DFA is shared).
#[derive(Debug, Clone)]
pub struct Keywords {
    dfa: Arc<DFA>,
    start: StateID,
}

impl Keywords {
    /// The automaton of `patterns` (a keyword's index is its position).
    pub fn new<P: AsRef<[u8]>>(patterns: &[P]) -> Keywords {
        let dfa = aho_corasick::dfa::Builder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .start_kind(StartKind::Unanchored)
            // A prefilter would make the start state special and send
            // the loop below to the crate's skip logic; with a couple of
            // hundred keywords, many of them two or three letters, it
            // skips little.
            .prefilter(false)
            .build(patterns)
            .expect("keyword automaton builds");
        let start = dfa
            .start_state(Anchored::No)
            .expect("an unanchored DFA has an unanchored start state");
        Keywords {
            dfa: Arc::new(dfa),
            start,
        }
    }

    /// Calls `found` with the index of every keyword occurrence in `hay`,
    /// in order of where each ends (a keyword occurring twice is reported
    /// twice).
    #[inline]
    pub fn each(&self, hay: &[u8], mut found: impl FnMut(usize)) {
        let dfa = &*self.dfa;
        let mut sid = self.start;
        for &b in hay {
            sid = dfa.next_state(Anchored::No, sid, b);
            if dfa.is_special(sid) {
                if dfa.is_match(sid) {
                    for i in 0..dfa.match_len(sid) {
                        found(dfa.match_pattern(sid, i).as_usize());
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

    const WORDS: &[&str] = &["key", "apikey", "api", "token", "tok", "ghp_", "sk-", "k", "eyJ"];

    /// What the crate's own overlapping iterator reports: (keyword, end).
    fn reference(hay: &[u8]) -> Vec<(usize, usize)> {
        let ac = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
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

    fn ours(hay: &[u8]) -> Vec<usize> {
        let mut v = Vec::new();
        Keywords::new(WORDS).each(hay, |i| v.push(i));
        v
    }

    fn counted(v: &[(usize, usize)]) -> Vec<usize> {
        let mut k: Vec<usize> = v.iter().map(|m| m.0).collect();
        k.sort();
        k
    }

    #[test]
    fn nested_overlapping_and_case_folded_keywords_are_all_reported() {
        let mut got = ours(b"x APIKEY=1; Tok");
        got.sort();
        // apikey, api, key, k (in key), tok, k (in Tok)
        let want = counted(&reference(b"x APIKEY=1; Tok"));
        assert_eq!(got, want);
        assert_eq!(want, vec![0, 1, 2, 4, 7, 7]);
        assert!(ours(b"").is_empty());
        assert!(ours(b"nothing here").is_empty());
        assert_eq!(ours(b"ghp_"), vec![5]);
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
        ) {
            let mut hay: Vec<u8> = parts.concat().into_bytes();
            for (i, b) in hay.iter_mut().enumerate() {
                if upper >> (i % 64) & 1 == 1 {
                    b.make_ascii_uppercase();
                }
            }
            let mut got = ours(&hay);
            got.sort();
            prop_assert_eq!(got, counted(&reference(&hay)));
        }
    }
}
