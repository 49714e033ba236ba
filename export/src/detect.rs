//! Finding secrets in a string: every rule and every sensitive value, over
//! the string and each of its decoded views, reported as spans of the
//! original string.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex::bytes::Regex;

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
/// string, so a clean string stays clean; the cache is bounded.
#[derive(Debug, Default)]
pub struct CleanCache(std::collections::HashSet<Box<str>, std::hash::BuildHasherDefault<FxHasher>>);

/// The Fx hash (rustc's): a multiply-rotate per word. The cache holds
/// strings from the input, but a collision only costs a comparison, and
/// the table is bounded, so a fast non-keyed hash is enough here.
#[derive(Debug, Default, Clone, Copy)]
pub struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_le_bytes(c.try_into().expect("8 bytes"));
            self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(K);
        }
        for b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(*b)).wrapping_mul(K);
        }
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

impl CleanCache {
    /// Longest string cached: keys and enum-like values repeat in every
    /// record; longer strings (timestamps, ids, prose) rarely do, and
    /// caching them only costs a hash and a probe each.
    pub const MAX_LEN: usize = 32;
    /// Most strings cached.
    pub const MAX_ENTRIES: usize = 1 << 16;

    /// Whether `s` is known clean.
    pub fn contains(&self, s: &str) -> bool {
        s.len() <= Self::MAX_LEN && self.0.contains(s)
    }

    /// Remembers that `s` is clean.
    pub fn insert(&mut self, s: &str) {
        if s.len() <= Self::MAX_LEN && self.0.len() < Self::MAX_ENTRIES {
            self.0.insert(s.into());
        }
    }
}
