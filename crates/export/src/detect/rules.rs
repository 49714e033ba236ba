//! The credential rules: a table of rows (`catalog`, `prefixed`, `fields`,
//! `named`, `carriers`), one generic engine that runs them (`engine`), the
//! shared plausibility tests (`plausibility`), and the keyword prefilter.
//!
//! Every rule is a byte regex with Unicode off (`(?-u)`), anchored on a
//! literal that also serves as its prefilter keyword: a rule's regex runs
//! only on text where one of its keywords occurs (ASCII case-insensitively).
//! Soundness, that every match contains one of its rule's keywords, is what
//! `prefilter_is_sound` checks over every fixture. Each rule names the exact
//! span that is the credential (`s` group, else the whole match): the value,
//! never its label, and never less than the whole value.

use regex::bytes::Regex;

use crate::detect::walker::Walker;

pub(crate) use catalog::PRIVATE_KEY;
pub(crate) use plausibility::assignment_value_ok;
use plausibility::*;
pub use plausibility::{credential_like, is_placeholder, kept_secret_value, typed_filler};
pub use spec::Gate;
use spec::Spec;

/// Extra checks a candidate match must pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// The match is a credential by shape alone.
    Shape,
    /// A value next to a label: placeholders and variable references are not
    /// secrets.
    Value,
    /// A value next to a secret-sounding name: the name must not be
    /// innocent, and weak names need a strong value.
    Assignment,
    /// An assignment whose name and value stand apart by blanks alone
    /// (`token abc…`): the value must stand alone and look random.
    Spaced,
    /// `Basic` credentials: the value must decode to `user:password`.
    Basic,
    /// A JSON Web Token: the header must decode to a JSON object.
    Jwt,
    /// A policy's own rule: every match counts, exactly as written.
    Custom,
    /// A service's name, then a credential-shaped value
    /// ([`named`]): the regex finds names, the check reads what follows.
    Named,
    /// A value after a credential's key in config syntax, or a URL's
    /// password ([`fields`]): kept only when it is code or a placeholder.
    Field,
    /// A credential-shaped literal a call or a URL path carries
    /// ([`carriers`]).
    Carried,
    /// An AWS secret access key beside its key id ([`carriers`]).
    Paired,
    /// The customer's labels in a multi-tenant service's host
    /// ([`tenants`]).
    Tenant,
}

impl Check {
    /// Whether the row reads only where its keywords stand, given their
    /// occurrences from the prefilter's walk ([`Occurrence`]), rather
    /// than searching the whole string again: a name's value follows the
    /// name, a field lies on its key's line.
    fn reads_at_keywords(self) -> bool {
        matches!(self, Check::Named | Check::Field | Check::Tenant)
    }

    /// Whether a match is a credential by its shape (not by a label next
    /// to it): such values are swept across the whole export.
    pub fn by_shape(self) -> bool {
        matches!(self, Check::Shape | Check::Jwt | Check::Custom)
    }
}

/// One rule.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Stable id (appears in placeholders).
    pub id: String,
    /// Prefilter keywords; empty means "always run" (after the gate).
    pub keywords: Vec<String>,
    /// For a rule with no literal to prefilter on: a cheap byte test every
    /// match passes (checked by `prefilter_is_sound`).
    pub gate: Option<Gate>,
    /// For a rule with keywords: a cheap test of the text after a keyword
    /// occurrence; the rule runs only where one passes (checked by
    /// `prefilter_is_sound`).
    pub after_keyword: Option<Gate>,
    /// Per keyword (same order as `keywords`), a test that replaces
    /// `after_keyword` for that keyword; empty when none does.
    pub keyword_gates: Vec<Option<Gate>>,
    /// The compiled regex.
    pub regex: Regex,
    /// The fewest bytes a match of `regex` can span: a shorter string is
    /// not searched.
    pub min_len: usize,
    /// Extra check.
    pub check: Check,
    /// The row's own exemption ([`vetoes`]), if any.
    pub(crate) veto: Option<spec::Veto>,
    /// How the shared plausibility tests apply to its values.
    pub(crate) traits: spec::Traits,
    /// Whether a veto that spares a credential-shaped value is overruled
    /// (the readback's gate, [`RuleSet::gate`]).
    pub(crate) overrule_random_vetoes: bool,
}

/// A credential found in a byte string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// Index of the rule in its [`RuleSet`].
    pub rule: usize,
    /// Start of the credential.
    pub start: usize,
    /// End of the credential (exclusive).
    pub end: usize,
}

/// Where one of a rule's keywords stands in a string: `start..end`,
/// and which of the rule's keywords it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Occurrence {
    /// First byte.
    pub(crate) start: usize,
    /// One past the last byte.
    pub(crate) end: usize,
    /// The keyword's index among the rule's.
    pub(crate) keyword: usize,
}

/// A compiled rule set with its prefilter.
#[derive(Debug, Clone)]
pub struct RuleSet {
    rules: Vec<Rule>,
    prefilter: Walker,
    /// Keyword index → rule index.
    keyword_rule: Vec<usize>,
    /// Keyword index → the test of the text after it, if any.
    keyword_gate: Vec<Option<Gate>>,
    /// Keyword index → its length and index among its rule's keywords,
    /// when that rule reads at its keywords (else `None`).
    keyword_place: Vec<Option<(usize, usize)>>,
    /// Rules without keywords (always run).
    always: Vec<usize>,
    /// The least `min_len` of any rule.
    shortest: usize,
}

/// An extra rule from a policy (`extraRules`).
#[derive(Debug, Clone)]
pub struct ExtraRule {
    /// Rule id.
    pub id: String,
    /// Regex source (compiled as a byte regex, Unicode off).
    pub regex: String,
    /// Prefilter keywords.
    pub keywords: Vec<String>,
}

/// A rule that failed to compile.
#[derive(Debug, thiserror::Error)]
#[error("rule {id}: {message}")]
pub struct RuleError {
    /// Rule id.
    pub id: String,
    /// Why.
    pub message: String,
}

fn compile(src: &str) -> Result<Regex, regex::Error> {
    regex::bytes::RegexBuilder::new(&format!("(?-u){src}"))
        .size_limit(16 << 20)
        .dfa_size_limit(RULE_DFA_CACHE)
        .build()
}

/// The lazy DFA cache of each rule, per thread. The regex crate's default
/// (2 MiB) let a session dense with secrets fill about 60 MiB of caches
/// across the rules; a rule whose cache fills is cleared and refilled, as
/// the regex crate does at any size.
const RULE_DFA_CACHE: usize = 1 << 20;

/// The fewest bytes a match of `src` (as [`compile`] reads it) can span;
/// 0 when unknown, which never skips a string.
fn min_len(src: &str) -> usize {
    regex_syntax::ParserBuilder::new()
        .utf8(false)
        .build()
        .parse(&format!("(?-u){src}"))
        .ok()
        .and_then(|hir| hir.properties().minimum_len())
        .unwrap_or(0)
}

impl Rule {
    /// A built-in rule compiled from its row.
    fn built_in(row: &Spec) -> Rule {
        let (keywords, keyword_gates, pattern) = match row.generated {
            Some(generate) => {
                let (keywords, pattern) = generate();
                let (keywords, gates) = keywords.into_iter().unzip();
                (keywords, gates, pattern)
            }
            None => (
                row.keywords.iter().map(|k| k.to_string()).collect(),
                Vec::new(),
                row.pattern.to_string(),
            ),
        };
        Rule {
            id: row.id.to_string(),
            keywords,
            gate: row.gate,
            after_keyword: row.after_keyword,
            keyword_gates,
            regex: compile(&pattern).unwrap_or_else(|e| panic!("rule {}: {e}", row.id)),
            min_len: min_len(&pattern),
            check: row.check,
            veto: row.veto,
            traits: row.traits,
            overrule_random_vetoes: false,
        }
    }
}

impl RuleSet {
    /// The built-in catalog plus `extra`. The built-in set is compiled once
    /// per process (regexes and automata are shared, cheap to clone).
    pub fn new(extra: &[ExtraRule]) -> Result<RuleSet, RuleError> {
        static BUILTIN: std::sync::OnceLock<RuleSet> = std::sync::OnceLock::new();
        if extra.is_empty() {
            return Ok(BUILTIN
                .get_or_init(|| RuleSet::build(&[]).expect("built-in rules compile"))
                .clone());
        }
        RuleSet::build(extra)
    }

    /// The rules the readback's final scan runs: the same rows and
    /// shared tests, but a row's veto may spare only words and code there.
    /// A veto exists to keep labels, prose and code; one that spares a
    /// credential-shaped value ([`named::plausible`]) is wrong, and the gate
    /// catches what it let through instead of being blinded with the
    /// writer (docs/EXPORT.md, "The final scan"). A row whose veto the
    /// gate may trust on such values says so
    /// (`spec::Traits::gate_trusts_veto`).
    pub fn gate(extra: &[ExtraRule]) -> Result<RuleSet, RuleError> {
        let mut set = RuleSet::new(extra)?;
        for r in &mut set.rules {
            r.overrule_random_vetoes = !r.traits.gate_trusts_veto;
        }
        Ok(set)
    }

    fn build(extra: &[ExtraRule]) -> Result<RuleSet, RuleError> {
        let mut rules: Vec<Rule> = catalog::all().map(Rule::built_in).collect();
        for e in extra {
            let regex = compile(&e.regex).map_err(|err| RuleError {
                id: e.id.clone(),
                message: err.to_string(),
            })?;
            rules.push(Rule {
                id: e.id.clone(),
                keywords: e.keywords.clone(),
                regex,
                min_len: min_len(&e.regex),
                check: Check::Custom,
                gate: None,
                after_keyword: None,
                keyword_gates: Vec::new(),
                veto: None,
                traits: spec::PLAIN,
                overrule_random_vetoes: false,
            });
        }
        let mut keywords = Vec::new();
        let mut keyword_rule = Vec::new();
        let mut keyword_gate = Vec::new();
        let mut keyword_place = Vec::new();
        let mut always = Vec::new();
        for (i, r) in rules.iter().enumerate() {
            if r.keywords.is_empty() {
                always.push(i);
            }
            for (j, k) in r.keywords.iter().enumerate() {
                keywords.push(k.as_bytes().to_vec());
                keyword_rule.push(i);
                keyword_place.push(r.check.reads_at_keywords().then_some((k.len(), j)));
                keyword_gate.push(
                    r.keyword_gates
                        .get(j)
                        .copied()
                        .flatten()
                        .or(r.after_keyword),
                );
            }
        }
        let prefilter = Walker::new(&keywords, true);
        Ok(RuleSet {
            shortest: rules.iter().map(|r| r.min_len).min().unwrap_or(0),
            rules,
            prefilter,
            keyword_rule,
            keyword_gate,
            keyword_place,
            always,
        })
    }

    /// The rules, in catalog order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Credentials in `hay`, non-overlapping, in order of position.
    pub fn find(&self, hay: &[u8], out: &mut Vec<Hit>) {
        if hay.len() < self.shortest {
            return;
        }
        crate::detect::work::visit(hay.len());
        // Called for every string: the set of rules to run lives on the
        // stack for up to 256 rules (the built-ins are about 170).
        let mut small = [0u64; 4];
        let mut large = Vec::new();
        let wanted: &mut [u64] = if self.rules.len() <= 256 {
            &mut small
        } else {
            large.resize(self.rules.len().div_ceil(64), 0);
            &mut large
        };
        let mut any = false;
        for i in &self.always {
            let r = &self.rules[*i];
            if hay.len() >= r.min_len && r.gate.is_none_or(|g| g(hay)) {
                wanted[i / 64] |= 1 << (i % 64);
                any = true;
            }
        }
        // Every occurrence of a keyword of a rule that reads at them.
        let mut at: Vec<(usize, Occurrence)> = Vec::new();
        // A rule already wanted skips the test of later occurrences.
        let mut want = |k: usize, end: usize| {
            let i = self.keyword_rule[k];
            if let Some((len, keyword)) = self.keyword_place[k] {
                let start = end - len;
                at.push((
                    i,
                    Occurrence {
                        start,
                        end,
                        keyword,
                    },
                ));
            }
            let (word, bit) = (i / 64, 1u64 << (i % 64));
            if wanted[word] & bit == 0
                && hay.len() >= self.rules[i].min_len
                && self.keyword_gate[k].is_none_or(|g| g(&hay[end..]))
            {
                wanted[word] |= bit;
                any = true;
            }
        };
        self.prefilter.each_unordered(hay, &mut want);
        if !any {
            return;
        }
        let mut hits = Vec::new();
        // By rule, then position (the walk reports in no order).
        at.sort_unstable();
        // The wanted rules in catalog order, one set bit at a time.
        for (w, &word) in wanted.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let i = w * 64 + bits.trailing_zeros() as usize;
                let from = at.partition_point(|(r, _)| *r < i);
                let to = at.partition_point(|(r, _)| *r <= i);
                let found: Vec<Occurrence> = at[from..to].iter().map(|(_, o)| *o).collect();
                let at = self.rules[i]
                    .check
                    .reads_at_keywords()
                    .then_some(&found[..]);
                engine::rule_hits(i, &self.rules[i], hay, at, &mut hits);
                bits &= bits - 1;
            }
        }
        mask_placeholders(hay, &mut hits);
        self.yield_to_named_rows(&mut hits);
        resolve(hits, out);
    }

    /// Drops a fallback row's hits that overlap another row's: the span
    /// is found either way, and the specific row names it.
    fn yield_to_named_rows(&self, hits: &mut Vec<Hit>) {
        let fallback = |h: &Hit| self.rules[h.rule].traits.fallback;
        if !hits.iter().any(fallback) {
            return;
        }
        // The other rows' spans by start, with the furthest end reached so
        // far: a span overlaps one of them exactly when, among those
        // starting before its end, one ends after its start (a binary
        // search each, so a string dense with hits stays linear-ish).
        let mut named: Vec<(usize, usize)> = hits
            .iter()
            .filter(|h| !fallback(h))
            .map(|h| (h.start, h.end))
            .collect();
        named.sort_unstable();
        let mut furthest = Vec::with_capacity(named.len());
        let mut end = 0;
        for &(_, b) in &named {
            end = end.max(b);
            furthest.push(end);
        }
        hits.retain(|h| {
            let before = named.partition_point(|&(a, _)| a < h.end);
            !fallback(h) || before == 0 || furthest[before - 1] <= h.start
        });
    }

    /// [`RuleSet::find`] without the prefilter (every rule runs); used to
    /// prove the prefilter loses nothing.
    pub fn find_unfiltered(&self, hay: &[u8], out: &mut Vec<Hit>) {
        let mut hits = Vec::new();
        for (i, r) in self.rules.iter().enumerate() {
            engine::rule_hits(i, r, hay, None, &mut hits);
        }
        mask_placeholders(hay, &mut hits);
        self.yield_to_named_rows(&mut hits);
        resolve(hits, out);
    }
}

/// Drops hits that touch a placeholder coffer issues (`[REDACTED_SECRET:…]`,
/// `[LOCAL_…]`, `[WORKSPACE]`): a rescan of scrubbed text must never match
/// inside one, or placeholders would nest. (A forged placeholder in input
/// is found and replaced whole by the forgery rule of the detector.)
fn mask_placeholders(hay: &[u8], hits: &mut Vec<Hit>) {
    if hits.is_empty() || memchr::memchr(b'[', hay).is_none() {
        return;
    }
    let mut spans = Vec::new();
    for open in memchr::memchr_iter(b'[', hay) {
        let rest = &hay[open..];
        if [&b"[REDACTED_SECRET:"[..], b"[LOCAL_", b"[WORKSPACE]"]
            .iter()
            .any(|p| rest.starts_with(p))
        {
            if let Some(close) = memchr::memchr(b']', rest) {
                spans.push((open, open + close + 1));
            }
        }
    }
    if !spans.is_empty() {
        hits.retain(|h| !spans.iter().any(|&(a, b)| h.start < b && a < h.end));
    }
}

/// Keeps the leftmost, then longest, then earliest-rule hit of each
/// overlapping group.
fn resolve(mut hits: Vec<Hit>, out: &mut Vec<Hit>) {
    hits.sort_by(|a, b| {
        a.start
            .cmp(&b.start)
            .then(b.end.cmp(&a.end))
            .then(a.rule.cmp(&b.rule))
    });
    let mut last_end: Option<usize> = None;
    for h in hits {
        if last_end.is_none_or(|e| h.start >= e) {
            last_end = Some(h.end);
            out.push(h);
        }
    }
}

pub mod carriers;
mod catalog;
mod engine;
pub mod fields;
mod gates;
pub mod named;
mod plausibility;
pub mod prefixed;
mod spec;
pub mod tenants;
mod vetoes;

#[cfg(test)]
mod tests;
