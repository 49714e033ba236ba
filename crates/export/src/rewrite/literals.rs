//! Literal replacement: one Aho-Corasick sweep for everything collected.
//!
//! Each literal (a secret, an identity, a user name) is added with its
//! encoded variants (JSON-escaped, `\u`-escaped, percent-encoded, base64),
//! all mapping to the same replacement. Matching is LeftmostLongest, so the
//! longest literal wins where two overlap.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use base64::Engine;
use std::collections::HashMap;

/// What a literal is (decides the transformation it counts as).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LiteralKind {
    /// A credential or sensitive value.
    Secret,
    /// A native identity.
    Identity,
    /// A user or host name (matched as a whole word only).
    LocalName,
}

/// The encoded forms a value can take inside other text: itself in NFC,
/// NFD and NFKC, and each of those JSON-escaped (once and twice),
/// `\u`-escaped, percent-encoded, and in base64 at all three byte
/// alignments.
pub fn variants(v: &str) -> Vec<String> {
    use unicode_normalization::UnicodeNormalization;
    let mut forms: Vec<String> = vec![
        v.to_string(),
        v.nfc().collect(),
        v.nfd().collect(),
        v.nfkc().collect(),
    ];
    forms.sort();
    forms.dedup();
    let mut out = Vec::new();
    for f in &forms {
        out.extend(encoded(f));
        for k in 0..3 {
            for alphabet in [
                &base64::engine::general_purpose::STANDARD,
                &base64::engine::general_purpose::URL_SAFE,
            ] {
                out.push(base64_core(f.as_bytes(), k, alphabet));
            }
        }
    }
    out.sort();
    out.dedup();
    out.retain(|x| !x.is_empty());
    out
}

/// The forms of an identity or a name: as [`variants`], but as written
/// (no other normal form) and in base64 only as a whole value. Ids are
/// ASCII, and there can be many: each base64 alignment would add patterns
/// to the sweep of every string for little gain.
pub fn name_variants(v: &str) -> Vec<String> {
    let mut out = encoded(v);
    out.sort();
    out.dedup();
    out.retain(|x| !x.is_empty());
    out
}

/// Base64 text that only `v` decides when `v` starts `k` bytes into a
/// 3-byte group of a longer encoded blob (the characters shared with the
/// bytes before and after it are cut off); empty when too short to match
/// safely.
fn base64_core(v: &[u8], k: usize, alphabet: &base64::engine::GeneralPurpose) -> String {
    let mut buf = vec![0u8; k];
    buf.extend_from_slice(v);
    let enc = alphabet.encode(&buf);
    let enc = enc.trim_end_matches('=');
    let skip = [0, 2, 3][k];
    let end = if buf.len() % 3 == 0 {
        enc.len()
    } else {
        enc.len() - 1
    };
    if end <= skip || end - skip < 8 {
        return String::new();
    }
    enc[skip..end].to_string()
}

fn encoded(v: &str) -> Vec<String> {
    let mut out = vec![v.to_string()];
    let json = serde_json::to_string(v).expect("strings serialize");
    out.push(json[1..json.len() - 1].to_string());
    // A string escaped twice (JSON inside a JSON string).
    let json2 = serde_json::to_string(&json[1..json.len() - 1]).expect("strings serialize");
    out.push(json2[1..json2.len() - 1].to_string());
    let mut u = String::new();
    for c in v.encode_utf16() {
        u.push_str(&format!("\\u{c:04x}"));
    }
    out.push(u.clone());
    out.push(u.to_uppercase().replace("\\U", "\\u"));
    let mut pct = String::new();
    let mut pct_all = String::new();
    for b in v.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            pct.push(b as char);
        } else {
            pct.push_str(&format!("%{b:02X}"));
        }
        pct_all.push_str(&format!("%{b:02X}"));
    }
    out.push(pct.clone());
    out.push(pct.to_lowercase_hex());
    out.push(pct_all);
    let e = base64::engine::general_purpose::STANDARD;
    let b64 = e.encode(v);
    out.push(b64.trim_end_matches('=').to_string());
    out.push(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v));
    out
}

trait LowerHex {
    fn to_lowercase_hex(&self) -> String;
}

impl LowerHex for String {
    /// `%2F` → `%2f` (only the escapes change case).
    fn to_lowercase_hex(&self) -> String {
        let b = self.as_bytes();
        let mut out = String::with_capacity(b.len());
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'%' && i + 2 < b.len() {
                out.push('%');
                out.push((b[i + 1] as char).to_ascii_lowercase());
                out.push((b[i + 2] as char).to_ascii_lowercase());
                i += 3;
            } else {
                out.push(b[i] as char);
                i += 1;
            }
        }
        out
    }
}

#[derive(Debug, Clone)]
struct Entry {
    replacement: String,
    kind: LiteralKind,
}

/// Collects literals, then builds the matcher.
#[derive(Debug, Default)]
pub struct LiteralsBuilder {
    entries: std::collections::BTreeMap<String, Entry>,
}

impl LiteralsBuilder {
    /// Adds `value` (only as itself: the caller adds variants it wants).
    /// An earlier entry of a stronger kind (secret over identity over name)
    /// wins.
    pub fn add(&mut self, value: &str, replacement: &str, kind: LiteralKind) {
        if value.is_empty() {
            return;
        }
        match self.entries.get(value) {
            Some(e) if e.kind <= kind => {}
            _ => {
                self.entries.insert(
                    value.to_string(),
                    Entry {
                        replacement: replacement.to_string(),
                        kind,
                    },
                );
            }
        }
    }

    /// Adds `value` and its encoded forms: all [`variants`] for a secret,
    /// [`name_variants`] for an identity or a name.
    pub fn add_with_variants(&mut self, value: &str, replacement: &str, kind: LiteralKind) {
        let forms = match kind {
            LiteralKind::Secret => variants(value),
            LiteralKind::Identity | LiteralKind::LocalName => name_variants(value),
        };
        for v in forms {
            self.add(&v, replacement, kind);
        }
    }

    /// How many literals were added.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Builds the matcher: a contiguous NFA behind a DFA over the
    /// literals' first bytes. Most text holds none of those, so the gate
    /// alone answers it, as fast as a DFA of the whole set would; and
    /// the gate builds in a tenth of the time (464 literals: 6 against
    /// 50 ms), which small exports pay in full.
    pub fn build(self) -> Literals {
        let mut entries = Vec::with_capacity(self.entries.len());
        let mut short: HashMap<Box<[u8]>, usize> = HashMap::new();
        let mut long: HashMap<Box<[u8]>, Vec<(Whole, usize)>> = HashMap::new();
        let mut pattern_bytes = 0;
        for (i, (value, entry)) in self.entries.into_iter().enumerate() {
            let b = value.into_bytes().into_boxed_slice();
            pattern_bytes += b.len();
            entries.push(entry);
            if b.len() <= ANCHOR {
                short.insert(b, i);
            } else {
                let whole = Whole::of(&b);
                long.entry(b[..ANCHOR].into()).or_default().push((whole, i));
            }
        }
        for candidates in long.values_mut() {
            candidates.sort_by_key(|c| std::cmp::Reverse(c.0.len));
        }
        crate::detect::work::visit(pattern_bytes);
        let mut patterns: Vec<&[u8]> = short.keys().chain(long.keys()).map(|k| &k[..]).collect();
        patterns.sort_unstable();
        patterns.dedup();
        let ac = AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostLongest)
            .kind(Some(aho_corasick::AhoCorasickKind::ContiguousNFA))
            .build(&patterns)
            .expect("literal automaton builds");
        let gate = prefix_gate(&patterns);
        let longest_short = short.keys().map(|k| k.len()).max().unwrap_or(0);
        Literals {
            ac,
            gate,
            short,
            long,
            longest_short,
            entries,
        }
    }
}

/// Bytes of a long literal its automaton holds (its anchor); the rest is
/// compared where the anchor is found. An automaton holds about one
/// state per pattern byte, and a secret's encoded forms run to many
/// times its length (`\u`-escaped, percent-encoded, base64 at three
/// alignments, JSON in JSON): 2,503 secrets came to 37,933 forms and 15 MB,
/// whose automaton took 600 MiB. Anchors keep it to a few MiB; 16 bytes
/// rather than 32 halve that (the NFA and the contiguous one built from
/// it coexist, and were the dense export's peak), and 16 random bytes
/// still start few spans of text where no literal does.
pub const ANCHOR: usize = 16;

/// Bytes of each pattern the gate of a literal set looks for.
const GATE_PREFIX: usize = 8;

/// A DFA over the literals' first [`GATE_PREFIX`] bytes (fewer, and
/// shared by a value's encoded forms): text holding none of them holds no
/// literal, and most text is like that, so [`Literals::is_match`] and
/// [`Literals::replace`] rarely walk the slower NFA. `None` if even the
/// prefixes are too many.
fn prefix_gate(patterns: &[&[u8]]) -> Option<AhoCorasick> {
    // Shorter prefixes when the set is large: fewer distinct ones, a DFA
    // that stays within its bound (a 128 KiB one took 30 MiB), and a gate
    // that still turns most text away.
    for n in [GATE_PREFIX, 6, 4] {
        let mut prefixes: Vec<&[u8]> = patterns.iter().map(|p| &p[..p.len().min(n)]).collect();
        prefixes.sort_unstable();
        prefixes.dedup();
        let bytes: usize = prefixes.iter().map(|p| p.len()).sum();
        if bytes <= GATE_MAX_BYTES {
            return Some(
                AhoCorasickBuilder::new()
                    .kind(Some(aho_corasick::AhoCorasickKind::DFA))
                    .build(&prefixes)
                    .expect("prefix automaton builds"),
            );
        }
    }
    None
}

/// Prefix bytes up to which the gate is built (a DFA of about 4 MiB at
/// most); beyond, the anchors' automaton answers alone.
const GATE_MAX_BYTES: usize = 16 << 10;

/// Pattern bytes up to which a DFA is built (several times faster than
/// the NFA, at a few hundred bytes of memory per pattern byte).
pub const DFA_MAX_PATTERN_BYTES: usize = 128 << 10;

/// Longest pattern a DFA is built with: a leftmost DFA's construction
/// grows with the square of a long periodic pattern (a 36 KB
/// `password=password=…` value took seconds), an NFA's stays linear.
pub const DFA_MAX_PATTERN_LEN: usize = 1 << 10;

/// A LeftmostLongest automaton over `patterns`: a DFA while they are few
/// and short, an NFA beyond (memory and build time stay bounded whatever
/// was collected).
pub fn automaton<P: AsRef<[u8]>>(patterns: &[P]) -> AhoCorasick {
    let bytes: usize = patterns.iter().map(|p| p.as_ref().len()).sum();
    let longest = patterns.iter().map(|p| p.as_ref().len()).max().unwrap_or(0);
    let kind = if bytes <= DFA_MAX_PATTERN_BYTES && longest <= DFA_MAX_PATTERN_LEN {
        // What a leftmost DFA's construction may cost, at worst.
        crate::detect::work::visit(bytes * longest);
        aho_corasick::AhoCorasickKind::DFA
    } else {
        crate::detect::work::visit(bytes);
        aho_corasick::AhoCorasickKind::ContiguousNFA
    };
    AhoCorasickBuilder::new()
        .match_kind(MatchKind::LeftmostLongest)
        .kind(Some(kind))
        .build(patterns)
        .expect("literal automaton builds")
}

/// A long literal as the matcher keeps it: its length and a 128-bit hash
/// of its bytes, compared with the text's bytes where its anchor is found.
/// (Its forms ran to 15 MB for 2,503 secrets; a hash that equal bytes
/// always share cannot miss one, and two different spans of text that
/// share a 128-bit BLAKE3 prefix are not a risk worth the memory.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Whole {
    len: usize,
    hash: [u8; 16],
}

impl Whole {
    fn of(bytes: &[u8]) -> Whole {
        let mut hash = [0u8; 16];
        hash.copy_from_slice(&blake3::hash(bytes).as_bytes()[..16]);
        Whole {
            len: bytes.len(),
            hash,
        }
    }

    /// Whether `text` starts with this literal.
    fn starts(&self, text: &[u8]) -> bool {
        text.len() >= self.len && Whole::of(&text[..self.len]) == *self
    }
}

/// The built matcher: an automaton over the literals of at most
/// [`ANCHOR`] bytes and the anchors of the longer ones, which finds where
/// a literal may start; the longest literal that does start there is then
/// looked up (short ones by their bytes, long ones by their anchor and
/// compared whole). The result is the automaton's over every whole
/// literal: leftmost, then longest.
#[derive(Debug, Clone)]
pub struct Literals {
    ac: AhoCorasick,
    /// See [`prefix_gate`].
    gate: Option<AhoCorasick>,
    /// Literals of at most [`ANCHOR`] bytes: their entry.
    short: HashMap<Box<[u8]>, usize>,
    /// Longer literals by anchor, longest first: length and hash, entry.
    long: HashMap<Box<[u8]>, Vec<(Whole, usize)>>,
    longest_short: usize,
    entries: Vec<Entry>,
}

/// Replacements made in one string, by kind.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Replaced {
    /// Secrets replaced.
    pub secrets: u64,
    /// Identities replaced.
    pub identities: u64,
    /// User and host names replaced.
    pub names: u64,
}

fn word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Whether a name found at `start..end` of `b` is a whole word: no letter,
/// digit or `_` on either side, except that a percent escape right before
/// it ends the word before (`%2Fhome%2Fjdoe`, `C%3A%5CUsers%5Cjdoe`).
/// The writer's sweep and the readback's check of user names share it.
pub fn stands_alone(b: &[u8], start: usize, end: usize) -> bool {
    let escaped = start >= 3
        && b[start - 3] == b'%'
        && b[start - 2].is_ascii_hexdigit()
        && b[start - 1].is_ascii_hexdigit();
    let before = start.checked_sub(1).is_some_and(|i| word(b[i])) && !escaped;
    !before && !b.get(end).is_some_and(|c| word(*c))
}

impl Literals {
    /// The longest literal that starts at `q`: its end and entry.
    fn longest_at(&self, b: &[u8], q: usize) -> Option<(usize, usize)> {
        let rest = &b[q..];
        if let Some(candidates) = rest.get(..ANCHOR).and_then(|a| self.long.get(a)) {
            // Longer than any short literal: the first whole one wins.
            if let Some((whole, e)) = candidates.iter().find(|(whole, _)| whole.starts(rest)) {
                return Some((q + whole.len, *e));
            }
        }
        (1..=self.longest_short.min(rest.len()))
            .rev()
            .find_map(|n| self.short.get(&rest[..n]).map(|e| (q + n, *e)))
    }

    /// The longest literal that starts at `q` and ends before `below`:
    /// its end and entry.
    fn shorter_at(&self, b: &[u8], q: usize, below: usize) -> Option<(usize, usize)> {
        let rest = &b[q..below - 1];
        if let Some(candidates) = b[q..].get(..ANCHOR).and_then(|a| self.long.get(a)) {
            if let Some((whole, e)) = candidates.iter().find(|(whole, _)| whole.starts(rest)) {
                return Some((q + whole.len, *e));
            }
        }
        (1..=self.longest_short.min(rest.len()))
            .rev()
            .find_map(|n| self.short.get(&rest[..n]).map(|e| (q + n, *e)))
    }

    /// The first literal at or after `pos`: start, end, entry.
    fn next_match(&self, b: &[u8], mut pos: usize) -> Option<(usize, usize, usize)> {
        while pos < b.len() {
            let m = self
                .ac
                .find(aho_corasick::Input::new(b).span(pos..b.len()))?;
            match self.longest_at(b, m.start()) {
                Some((end, e)) => return Some((m.start(), end, e)),
                // An anchor whose literal is not all there: none starts
                // here, and one may start inside it.
                None => pos = m.start() + 1,
            }
        }
        None
    }

    /// Whether any literal occurs in `s` (names even inside words: a
    /// conservative test).
    pub fn is_match(&self, s: &[u8]) -> bool {
        if self.gate.as_ref().is_some_and(|g| !g.is_match(s)) {
            return false;
        }
        self.ac.is_match(s) && self.next_match(s, 0).is_some()
    }

    /// Replaces every literal in `s`; `None` when nothing matched.
    pub fn replace(&self, s: &str) -> Option<(String, Replaced)> {
        crate::detect::work::visit(s.len());
        let b = s.as_bytes();
        if self.gate.as_ref().is_some_and(|g| !g.is_match(b)) {
            return None;
        }
        let mut out: Option<String> = None;
        let mut last = 0;
        let mut pos = 0;
        let mut counts = Replaced::default();
        while let Some((start, mut end, mut e)) = self.next_match(b, pos) {
            // A name inside a word is no name; a shorter literal at the
            // same start may still be one (a forged placeholder that a
            // user field's value begins with), and one may start inside.
            while self.entries[e].kind == LiteralKind::LocalName && !stands_alone(b, start, end) {
                match self.shorter_at(b, start, end) {
                    Some((shorter, other)) => (end, e) = (shorter, other),
                    None => break,
                }
            }
            let e = &self.entries[e];
            if e.kind == LiteralKind::LocalName && !stands_alone(b, start, end) {
                pos = start + 1;
                continue;
            }
            pos = end;
            let o = out.get_or_insert_with(|| String::with_capacity(s.len()));
            o.push_str(&s[last..start]);
            o.push_str(&e.replacement);
            last = end;
            match e.kind {
                LiteralKind::Secret => counts.secrets += 1,
                LiteralKind::Identity => counts.identities += 1,
                LiteralKind::LocalName => counts.names += 1,
            }
        }
        let mut o = out?;
        o.push_str(&s[last..]);
        Some((o, counts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_set_is_gated_by_its_prefixes_and_matches_exactly_as_without() {
        // 3,000 values of 60 bytes: past the DFA bound, so an NFA with a
        // prefix gate. Values share prefixes in pairs, as encoded forms do.
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let alphabet = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-";
        let mut word = |n: usize| -> String {
            (0..n)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize] as char)
                .collect()
        };
        let mut b = LiteralsBuilder::default();
        let mut values = Vec::new();
        for i in 0..3_000 {
            let v = if i % 2 == 1 {
                let prev: &String = values.last().unwrap();
                format!("{}{}", &prev[..GATE_PREFIX], word(52))
            } else {
                word(60)
            };
            b.add(&v, "[X]", LiteralKind::Secret);
            values.push(v);
        }
        let lits = b.build();
        assert!(lits.gate.is_some(), "the NFA is gated");
        let text = word(4_000);
        assert!(!lits.is_match(text.as_bytes()));
        for (i, v) in values.iter().enumerate().step_by(97) {
            let with = format!("{}{v}{}", &text[..i % 500], &text[500..900]);
            assert!(lits.is_match(with.as_bytes()), "value {i}");
            // Its prefix passes the gate; the whole value is not there.
            let prefix_only = format!("{} {}", &text[..200], &v[..GATE_PREFIX + 3]);
            assert!(!lits.is_match(prefix_only.as_bytes()), "prefix of {i}");
            assert_eq!(
                lits.is_match(prefix_only.as_bytes()),
                lits.ac.is_match(prefix_only.as_bytes())
            );
        }
        // A short set is gated too, and replaces through its gate.
        let mut b = LiteralsBuilder::default();
        b.add("ghp_short", "[X]", LiteralKind::Secret);
        let short = b.build();
        assert!(short.gate.is_some());
        assert_eq!(short.replace("a ghp_shor b"), None);
        assert_eq!(
            short.replace("a ghp_short b").map(|(t, _)| t),
            Some("a [X] b".to_string())
        );
    }

    /// Leftmost, then longest, over every whole literal: the plain
    /// definition the anchored matcher must agree with.
    fn reference(literals: &[String], text: &str) -> String {
        let b = text.as_bytes();
        let (mut out, mut i) = (String::new(), 0);
        while i < b.len() {
            let best = literals
                .iter()
                .filter(|l| b[i..].starts_with(l.as_bytes()))
                .max_by_key(|l| l.len());
            match best {
                Some(l) => {
                    out.push_str("[X]");
                    i += l.len();
                }
                None => {
                    out.push(b[i] as char);
                    i += 1;
                }
            }
        }
        out
    }

    #[test]
    fn long_literals_match_by_anchor_exactly_as_whole_ones() {
        // Short literals, long ones sharing their anchor, a short one that
        // starts a long one, and text holding anchors whose rest differs.
        let base = "k".repeat(ANCHOR - 4);
        let literals: Vec<String> = vec![
            format!("{base}ABCD-long-one-tail"),
            format!("{base}ABCD-long-one-tail-and-more"),
            format!("{base}ABCD-other"),
            format!("{base}AB"),
            "ABCD-long".to_string(),
            "zz".to_string(),
            format!("zz{}", "q".repeat(2 * ANCHOR)),
            // An anchor with no literal at its start, and one inside it.
            format!("{}TAIL", "y".repeat(ANCHOR)),
            "yyQ".to_string(),
        ];
        let mut b = LiteralsBuilder::default();
        for l in &literals {
            b.add(l, "[X]", LiteralKind::Secret);
        }
        let lits = b.build();
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        let pieces = [
            base.as_str(),
            "ABCD-long-one-tail",
            "-and-more",
            "ABCD-oth",
            "er",
            "AB",
            "zz",
            "qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq",
            " ",
            "x",
            "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy",
            "Q",
            "TAIL",
        ];
        for _ in 0..3_000 {
            let text: String = (0..next(12))
                .map(|_| pieces[next(pieces.len() as u64) as usize])
                .collect();
            let want = reference(&literals, &text);
            let got = lits.replace(&text).map_or(text.clone(), |(t, _)| t);
            assert_eq!(got, want, "{text:?}");
            assert_eq!(lits.is_match(text.as_bytes()), want != text, "{text:?}");
        }
    }

    #[test]
    fn a_name_stands_alone_after_a_percent_escape_but_not_inside_a_word() {
        let at = |s: &str, name: &str| {
            let i = s.find(name).unwrap();
            stands_alone(s.as_bytes(), i, i + name.len())
        };
        assert!(at("%2Fhome%2Fjdoe%2Fwork", "jdoe"));
        assert!(at("C%3A%5CUsers%5Cjdoe", "jdoe"));
        assert!(at("/home/jdoe/x", "jdoe"));
        assert!(!at("xjdoe", "jdoe"));
        assert!(!at("jdoex", "jdoe"));
        assert!(!at("%2Fjdoex", "jdoe"));
        assert!(!at("Fjdoe", "jdoe"));
        // `me@` of an address is not a prompt's user: a word follows.
        assert!(!at("me@mail.com", "me@"));
        assert!(at("me@devbox:~$", "me@devbox"));
    }

    #[test]
    fn a_secret_inside_base64_is_matched_at_every_alignment() {
        let secret = "s3cr3t-Value-42xZ";
        let vs = variants(secret);
        for before in 0..6 {
            for after in 0..4 {
                let mut blob = vec![b'{'; before];
                blob.extend_from_slice(secret.as_bytes());
                blob.extend(std::iter::repeat_n(b'}', after));
                for e in [
                    &base64::engine::general_purpose::STANDARD,
                    &base64::engine::general_purpose::URL_SAFE,
                ] {
                    let enc = e.encode(&blob);
                    assert!(
                        vs.iter().any(|v| enc.contains(v.as_str())),
                        "{before}+{after}: {enc}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_value_is_matched_in_every_unicode_normal_form() {
        use unicode_normalization::UnicodeNormalization;
        let nfc = "caf\u{e9}-p\u{e4}ssw\u{f6}rd";
        let vs = variants(nfc);
        let nfd: String = nfc.nfd().collect();
        assert_ne!(nfd, nfc);
        assert!(vs.contains(&nfd));
        let compat = "\u{ff21}\u{ff22}c-secret-value";
        assert!(variants(compat).contains(&compat.nfkc().collect::<String>()));
    }

    #[test]
    fn variants_cover_the_encodings() {
        let v = variants("p@ss/wörd\"x");
        assert!(v.contains(&"p@ss/wörd\\\"x".to_string()));
        assert!(v.contains(&"p%40ss%2Fw%C3%B6rd%22x".to_string()));
        assert!(v.contains(&"p%40ss%2fw%c3%b6rd%22x".to_string()));
        assert!(v.iter().any(|x| x.starts_with("\\u0070\\u0040")));
        assert!(v.contains(
            &base64::engine::general_purpose::STANDARD
                .encode("p@ss/wörd\"x")
                .trim_end_matches('=')
                .to_string()
        ));
    }

    #[test]
    fn longest_wins_and_names_need_word_boundaries() {
        let mut b = LiteralsBuilder::default();
        b.add("session-1", "S1", LiteralKind::Identity);
        b.add("session-12", "S12", LiteralKind::Identity);
        b.add("alice", "[LOCAL_USER:1]", LiteralKind::LocalName);
        let l = b.build();
        let (s, c) = l
            .replace("session-12 and session-1; alice, malice")
            .unwrap();
        assert_eq!(s, "S12 and S1; [LOCAL_USER:1], malice");
        assert_eq!(
            c,
            Replaced {
                secrets: 0,
                identities: 2,
                names: 1
            }
        );
        assert!(l.replace("nothing here").is_none());
    }

    /// A name that fails the word test gives way to a shorter literal at
    /// its start, and to one inside it (found by the property test: a
    /// user field holding a forged placeholder and a blank hid the same
    /// forgery in the next string).
    #[test]
    fn a_name_inside_a_word_leaves_the_literals_it_overlaps() {
        let mut b = LiteralsBuilder::default();
        b.add("[X:0] ", "[LOCAL_USER:1]", LiteralKind::LocalName);
        b.add("[X:0]", "[FORGED]", LiteralKind::Secret);
        b.add("bob", "[LOCAL_USER:2]", LiteralKind::LocalName);
        b.add("ob1x", "[S]", LiteralKind::Secret);
        let l = b.build();
        let (s, _) = l.replace("[X:0] hello; [X:0] ; bob1x").unwrap();
        assert_eq!(s, "[FORGED] hello; [LOCAL_USER:1]; b[S]");
    }
}
