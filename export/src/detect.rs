//! Finding secrets in a string: every rule and every sensitive value, over
//! the string and each of its decoded views, reported as spans of the
//! original string.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex::bytes::Regex;

use crate::memo::ShortMemo;
use crate::rules::{Hit, RuleSet};
use crate::views;

/// Rule id of a caller's sensitive value.
pub const SENSITIVE_RULE: &str = "sensitive-value";
/// Rule id of input text that imitates one of our placeholders.
pub const FORGERY_RULE: &str = "placeholder-forgery";

/// One secret span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Start in the original string.
    pub start: usize,
    /// End in the original string.
    pub end: usize,
    /// The rule that found it.
    pub rule: String,
}

/// Rules plus sensitive values.
#[derive(Debug, Clone)]
pub struct Detector {
    rules: RuleSet,
    sensitive: Option<AhoCorasick>,
    forgery: bool,
    placeholder: Regex,
    prefix: Regex,
}

/// The exact grammar of the placeholders coffer writes.
pub const PLACEHOLDER_PATTERN: &str = r"\[(?:REDACTED_SECRET:[a-z0-9-]{1,64}:[0-9a-f]{8}|LOCAL_PATH|WORKSPACE|LOCAL_HOST|LOCAL_USER:[0-9]{1,6})\]";
/// How every placeholder begins. In scrubbed output each occurrence starts
/// an exact placeholder; in input, each one (with the token it starts) is
/// a forgery to replace.
pub const PLACEHOLDER_PREFIX: &str =
    r"\[(?:REDACTED_SECRET|LOCAL_PATH|LOCAL_USER|LOCAL_HOST|WORKSPACE)[A-Za-z0-9_:-]{0,120}\]?";

/// Placeholders with no variable part.
const DATA_FREE_PLACEHOLDERS: &[&[u8]] = &[b"[LOCAL_PATH]", b"[WORKSPACE]", b"[LOCAL_HOST]"];

/// What a detector makes of text shaped like a placeholder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placeholders {
    /// A finding: the input has none of ours, so such text is a forgery
    /// (pass 1).
    AreForgeries,
    /// Nothing: what is being written is full of them (pass 2, readback).
    AreExpected,
}

impl Detector {
    /// A detector over `rules` and the policy's sensitive values.
    pub fn new(
        rules: RuleSet,
        sensitive_values: &[String],
        placeholders: Placeholders,
    ) -> Detector {
        let forgery = placeholders == Placeholders::AreForgeries;
        let sensitive = (!sensitive_values.is_empty()).then(|| {
            AhoCorasickBuilder::new()
                .match_kind(MatchKind::LeftmostLongest)
                .build(sensitive_values)
                .expect("sensitive value automaton builds")
        });
        Detector {
            rules,
            sensitive,
            forgery,
            placeholder: Regex::new(&format!("(?-u){PLACEHOLDER_PATTERN}")).expect("compiles"),
            prefix: Regex::new(&format!("(?-u){PLACEHOLDER_PREFIX}")).expect("compiles"),
        }
    }

    /// The rule set.
    pub fn rules(&self) -> &RuleSet {
        &self.rules
    }

    fn raw(&self, s: &[u8], out: &mut Vec<(usize, usize, String)>) {
        let mut hits: Vec<Hit> = Vec::new();
        self.rules.find(s, &mut hits);
        for h in hits {
            out.push((h.start, h.end, self.rules.rules()[h.rule].id.clone()));
        }
        if let Some(ac) = &self.sensitive {
            for m in ac.find_iter(s) {
                out.push((m.start(), m.end(), SENSITIVE_RULE.to_string()));
            }
        }
    }

    /// Whether anything in `s` is a credential (or a policy value): an
    /// identity field holding one is scrubbed as a secret, never given a
    /// pseudonym in its shape, which would look like a credential itself.
    pub fn holds_credential(&self, s: &str) -> bool {
        let mut found = Vec::new();
        self.find(s.as_bytes(), &mut found);
        !found.is_empty()
    }

    /// Every finding in `s`, over `s` and its decoded views, in `s`'s
    /// coordinates; deduplicated by span. Text inside a placeholder-shaped
    /// span (`[REDACTED_SECRET:rule:fp]`) is not a credential; with
    /// `forgery` on, the placeholder-shaped span itself is a finding.
    pub fn find(&self, s: &[u8], out: &mut Vec<Finding>) {
        let mut raw = Vec::new();
        self.raw(s, &mut raw);
        let placeholders: Vec<(usize, usize)> = if memchr::memchr(b'[', s).is_some() {
            self.placeholder
                .find_iter(s)
                .map(|m| (m.start(), m.end()))
                .collect()
        } else {
            Vec::new()
        };
        if self.forgery && memchr::memchr(b'[', s).is_some() {
            for m in self.prefix.find_iter(s) {
                // The fixed placeholders carry nothing and are exactly what
                // we would write: text that quotes one (docs, this very
                // code) is not a forgery, and replacing it would also hit
                // the placeholders the export writes.
                if DATA_FREE_PLACEHOLDERS.contains(&m.as_bytes()) {
                    continue;
                }
                raw.push((m.start(), m.end(), FORGERY_RULE.to_string()));
            }
        }
        for v in views::decoded_views(s) {
            let mut inner = Vec::new();
            self.raw(&v.bytes, &mut inner);
            for (a, b, rule) in inner {
                let (x, y) = v.original_span(a, b);
                if y > x {
                    raw.push((x, y, rule));
                }
            }
        }
        raw.retain(|(a, b, rule)| {
            rule == FORGERY_RULE || !placeholders.iter().any(|(x, y)| x <= a && b <= y)
        });
        raw.sort();
        raw.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
        out.extend(
            raw.into_iter()
                .map(|(start, end, rule)| Finding { start, end, rule }),
        );
    }
}

/// Short strings already scanned and found clean (keys, enum-like values
/// that repeat in every record). Scanning is a pure function of the
/// string, so a clean string stays clean; see [`ShortMemo`] for the table.
pub type CleanCache = ShortMemo<()>;

impl CleanCache {
    /// Whether `s` is known clean.
    pub fn contains(&self, s: &str) -> bool {
        self.get(s).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clean_cache_answers_only_for_the_exact_strings_it_holds() {
        let mut c = CleanCache::default();
        assert!(!c.contains(""), "an empty slot holds nothing");
        for s in ["", "type", "observation.message", "x".repeat(32).as_str()] {
            c.insert(s, ());
            assert!(c.contains(s), "{s:?}");
        }
        for s in ["typ", "types", "Type", "observation.messagE"] {
            assert!(!c.contains(s), "{s:?}");
        }
        let long = "y".repeat(ShortMemo::<()>::MAX_LEN + 1);
        c.insert(&long, ());
        assert!(!c.contains(&long), "longer strings are never cached");
        // A flood of distinct strings takes no more room, and each is
        // found right after it went in; what it pushed out is only
        // forgotten, never confused with its successor.
        for i in 0..100_000 {
            let s = format!("2026-11-01T00:00:{i:06}Z");
            c.insert(&s, ());
            assert!(c.contains(&s));
            assert!(!c.contains(&format!("2026-11-01T00:00:{:06}Z", i + 1)));
        }
        assert_eq!(c.slots(), 4096);
    }
}
