//! Finding secrets in a string: every rule and every sensitive value, over
//! the string and each of its decoded views, reported as spans of the
//! original string.
//!
//! The detect stage: everything that finds what must not leave. The
//! first pass of an export (`collect`) and the rewrite's safety net
//! run the same [`Detector`], built once per policy ([`crate::passes`]); the
//! gate builds its own.

pub(crate) mod across;
pub(crate) mod collect;
pub(crate) mod continued;
pub(crate) mod hcl;
pub(crate) mod json_text;
pub(crate) mod jwk;
pub(crate) mod kube;
pub(crate) mod memo;
pub(crate) mod names;
pub(crate) mod ppk;
pub mod rules;
pub(crate) mod spelled;
pub(crate) mod streams;
pub(crate) mod views;
pub(crate) mod walker;
pub mod work;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex::bytes::Regex;

use crate::detect::memo::ShortMemo;
use crate::detect::rules::{Hit, RuleSet};

/// Rule id of a caller's sensitive value.
pub const SENSITIVE_RULE: &str = "sensitive-value";
/// Rule id of input text that imitates one of our placeholders.
pub const FORGERY_RULE: &str = "placeholder-forgery";
/// The shortest part of a row (a line of a hexdump, of a byte list, of
/// text a wrap cut) that [`Detector::find_across_rows`] gives to be swept.
pub const MIN_ROW_SWEPT: usize = 8;

/// A row's part (`span` of `line`) is swept wherever it occurs, so it
/// must not be so short that it occurs anywhere: a shorter one (the six
/// bytes of a key before a wrap, `AKIAQ3`) takes in the line's bytes
/// beside it, away from the edge it touches, to [`MIN_ROW_SWEPT`] and a
/// character boundary. A line too short for that gives its part as it is
/// (a byte list's last line, `  0x0a`, holds a byte or two of a secret),
/// and the caller leaves it.
fn widened(line: &[u8], span: std::ops::Range<usize>) -> std::ops::Range<usize> {
    if span.len() >= MIN_ROW_SWEPT || line.len() < MIN_ROW_SWEPT {
        return span;
    }
    let inside = |c: u8| c & 0xC0 == 0x80;
    let (mut a, mut b) = if span.end == line.len() {
        (line.len() - MIN_ROW_SWEPT, line.len())
    } else {
        (span.start, (span.start + MIN_ROW_SWEPT).min(line.len()))
    };
    while a > 0 && inside(line[a]) {
        a -= 1;
    }
    while b < line.len() && inside(line[b]) {
        b += 1;
    }
    a..b
}

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
pub const PLACEHOLDER_PATTERN: &str = r"\[(?:REDACTED_SECRET:[a-z0-9-]{1,64}:[0-9a-f]{8}|LOCAL_PATH|HOME|WORKSPACE|LOCAL_HOST|LOCAL_USER:[0-9]{1,6})\]";
/// How every placeholder begins. In scrubbed output each occurrence starts
/// an exact placeholder; in input, each one (with the token it starts) is
/// a forgery to replace.
/// `[HOME]` is matched whole: `[HOMEBREW_PREFIX]` in docs is not one.
pub const PLACEHOLDER_PREFIX: &str = r"\[(?:(?:REDACTED_SECRET|LOCAL_PATH|LOCAL_USER|LOCAL_HOST|WORKSPACE)[A-Za-z0-9_:-]{0,120}\]?|HOME\])";
/// How the placeholders begin, as text: a cut never ends inside one.
pub const PLACEHOLDER_HEADS: &[&str] = &["[REDACTED_SECRET", "[LOCAL_", "[WORKSPACE", "[HOME"];

/// Placeholders with no variable part.
const DATA_FREE_PLACEHOLDERS: &[&[u8]] =
    &[b"[LOCAL_PATH]", b"[HOME]", b"[WORKSPACE]", b"[LOCAL_HOST]"];

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
            // In any ASCII case: `HUNTER2-PASSWORD` is the value
            // `hunter2-password` (what is found is collected as written,
            // so the sweep removes that spelling too).
            AhoCorasickBuilder::new()
                .match_kind(MatchKind::LeftmostLongest)
                .ascii_case_insensitive(true)
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

    /// Whether a policy value occurs in `s` (in any ASCII case): what a
    /// number is checked for, since the credential rules read text.
    pub fn holds_sensitive_value(&self, s: &str) -> bool {
        self.sensitive.as_ref().is_some_and(|ac| ac.is_match(s))
    }

    /// Whether anything in `s` is a credential (or a policy value): an
    /// identity field holding one is scrubbed as a secret, never given a
    /// pseudonym in its shape, which would look like a credential itself.
    pub fn holds_credential(&self, s: &str) -> bool {
        let mut found = Vec::new();
        self.find(s.as_bytes(), &mut found);
        !found.is_empty()
    }

    /// What the lines of a multi-line string (a tool's output in a
    /// record) hold only with the last line before them that is not
    /// blank, as a text artifact's lines are read
    /// ([`Detector::find_continued`]), in `s`'s coordinates.
    fn line_pairs(&self, s: &[u8], raw: &mut Vec<(usize, usize, String)>) {
        let mut ends = memchr::memchr_iter(b'\n', s);
        let Some(first) = ends.next() else {
            return;
        };
        let trim = |l: &'_ [u8]| -> usize { l.len() - usize::from(l.ends_with(b"\r")) };
        let mut found = Vec::new();
        let mut prev = &s[..trim(&s[..first])];
        let mut at = first + 1;
        for end in ends.chain(std::iter::once(s.len())) {
            let line = &s[at..at + trim(&s[at..end])];
            if let Ok(text) = std::str::from_utf8(line) {
                found.clear();
                self.find_continued(prev, text, &mut found);
                raw.extend(found.drain(..).map(|f| (at + f.start, at + f.end, f.rule)));
            }
            if !crate::detect::continued::keeps_previous(Some(prev), line) {
                prev = line;
            }
            at = end + 1;
        }
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
            if v.overflow {
                // Inflated past its limit: it cannot be shown clean.
                let (x, y) = v.whole_span();
                raw.push((x, y, views::OVERFLOW_RULE.to_string()));
            }
            let mut inner = Vec::new();
            self.raw(&v.bytes, &mut inner);
            for (a, b, rule) in inner {
                let (x, y) = v.original_span(a, b);
                if y > x && v.news(x, y) && (!v.joined() || self.by_shape(&rule)) {
                    raw.push((x, y, rule));
                }
            }
        }
        self.line_pairs(s, &mut raw);
        if crate::detect::across::might_hold(s) {
            let mut found = Vec::new();
            crate::detect::across::find(s, &mut found);
            raw.extend(
                found
                    .into_iter()
                    .map(|(r, rule)| (r.start, r.end, rule.to_string())),
            );
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

    /// The findings of the rules alone in `s` as written and as shown
    /// (terminal escapes and invisible characters out, see
    /// `views::shown`: a colour code between two records' writes hides
    /// nothing): no decoded view, no pair of lines, no reader of several
    /// lines, and nothing inside a placeholder. For text whose parts were
    /// never one document (strings of consecutive records joined), where a
    /// view would read rows of two dumps as one.
    pub fn find_written(&self, s: &[u8], out: &mut Vec<Finding>) {
        let mut raw = Vec::new();
        self.raw(s, &mut raw);
        if let Some(v) = views::shown(s) {
            let mut inner = Vec::new();
            self.raw(&v.bytes, &mut inner);
            raw.extend(inner.into_iter().filter_map(|(a, b, rule)| {
                let (x, y) = v.original_span(a, b);
                (y > x).then_some((x, y, rule))
            }));
        }
        if memchr::memchr(b'[', s).is_some() {
            let placeholders: Vec<(usize, usize)> = self
                .placeholder
                .find_iter(s)
                .map(|m| (m.start(), m.end()))
                .collect();
            raw.retain(|(a, b, _)| !placeholders.iter().any(|(x, y)| x <= a && b <= y));
        }
        raw.sort();
        raw.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
        out.extend(
            raw.into_iter()
                .map(|(start, end, rule)| Finding { start, end, rule }),
        );
    }

    /// What consecutive lines of text show only together: a hexdump whose
    /// rows (one a line) spell a secret across them, or a list of bytes
    /// over several lines, or a token a wrap cut. In a patch (`diff`) each line is read without
    /// its `+`, `-` or ` ` marker, so a dump a change adds is read as the
    /// file holds it. Each finding is given in every line it covers, as
    /// (line index, span in the line, rule).
    pub fn find_across_rows<'l>(
        &self,
        lines: impl Iterator<Item = &'l [u8]>,
        diff: bool,
    ) -> Vec<(usize, std::ops::Range<usize>, String)> {
        let (mut text, mut starts, mut marks) = (Vec::new(), Vec::new(), Vec::new());
        let (mut rows, mut width) = (0, 0);
        for l in lines {
            let mark = usize::from(diff && matches!(l.first(), Some(b'+' | b'-' | b' ')));
            let l = &l[mark..];
            rows += usize::from(
                l.first()
                    .is_some_and(|c| c.is_ascii_hexdigit() || *c == b' '),
            );
            width = width.max(l.len());
            starts.push(text.len());
            marks.push(mark);
            text.extend_from_slice(l);
            text.push(b'\n');
        }
        let mut out = Vec::new();
        if rows < 2 && (starts.len() < 2 || width < views::MIN_WRAP_WIDTH) {
            return out;
        }
        for v in views::hexdump_views(&text) {
            let mut inner = Vec::new();
            self.raw(&v.bytes, &mut inner);
            for (a, b, rule) in inner {
                let (x, y) = v.original_span(a, b);
                if !v.news(x, y) || (v.joined() && !self.by_shape(&rule)) {
                    continue;
                }
                let first = starts.partition_point(|s| *s <= x) - 1;
                for (i, &start) in starts.iter().enumerate().skip(first) {
                    if start >= y {
                        break;
                    }
                    let end = starts.get(i + 1).map_or(text.len(), |n| n - 1);
                    let span = widened(&text[start..end], x.max(start) - start..y.min(end) - start);
                    if span.len() >= MIN_ROW_SWEPT {
                        let span = span.start + marks[i]..span.end + marks[i];
                        out.push((i, span, rule.clone()));
                    }
                }
            }
        }
        out.sort_by_key(|a| (a.0, a.1.start, a.1.end));
        out.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
        out
    }

    /// Whether rule `id` knows a token by its shape (a vendor's format, a
    /// private key), not by a label beside a value.
    /// Whether rule `id` reads a block between armour lines
    /// (`-----BEGIN … PRIVATE KEY-----` to its `END`): its match is the
    /// block whatever pieces it was written in.
    pub fn armored(&self, id: &str) -> bool {
        self.rules
            .rules()
            .iter()
            .any(|r| r.id == id && r.traits.key_block)
    }

    fn by_shape(&self, id: &str) -> bool {
        self.rules
            .rules()
            .iter()
            .any(|r| r.id == id && r.check.by_shape())
    }

    /// The findings in `line` that only show with the line before it (see
    /// `crate::detect::continued`), in `line`'s coordinates: those of the rules
    /// that read a value next to its label, and not where `line` on its
    /// own holds one ([`Detector::find`]'s to report).
    pub fn find_continued(&self, prev: &[u8], line: &str, out: &mut Vec<Finding>) {
        let Some(j) = crate::detect::continued::join(prev, line) else {
            return;
        };
        let (mut found, mut alone) = (Vec::new(), Vec::new());
        self.find(j.text.as_bytes(), &mut found);
        self.find(line.as_bytes(), &mut alone);
        let by_label = |id: &str| {
            self.rules
                .rules()
                .iter()
                .any(|r| r.id == id && !r.check.by_shape())
        };
        out.extend(
            found
                .into_iter()
                .filter(|f| f.start >= j.at && f.start < j.at + j.len && by_label(&f.rule))
                .map(|f| Finding {
                    start: f.start - j.at + j.in_line,
                    end: f.end.min(j.at + j.len) - j.at + j.in_line,
                    rule: f.rule,
                })
                .filter(|f| !alone.iter().any(|a| (a.start, a.end) == (f.start, f.end))),
        );
    }
}

/// Short strings already scanned and found clean (keys, enum-like values
/// that repeat in every record). Scanning is a pure function of the
/// string, so a clean string stays clean; see `ShortMemo` for the table.
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
    fn a_short_part_of_a_row_takes_in_its_line_to_a_character_boundary() {
        let line = "aws: using key é AKIAQ3".as_bytes();
        let end = line.len();
        // The part before a wrap widens to the left, past `é` whole.
        let w = widened(line, end - 6..end);
        assert_eq!(&line[w.clone()], "é AKIAQ3".as_bytes());
        assert!(w.len() >= MIN_ROW_SWEPT);
        // The part after one widens to the right; a long part stays.
        assert_eq!(widened(line, 0..2), 0..MIN_ROW_SWEPT);
        assert_eq!(widened(line, 3..15), 3..15);
        // A line too short to widen gives its part as it is.
        assert_eq!(widened(b"  0x0a", 0..6), 0..6);
    }

    #[test]
    fn a_multi_line_string_is_read_as_lines_with_the_line_before_them() {
        let det = Detector::new(RuleSet::new(&[]).unwrap(), &[], Placeholders::AreExpected);
        let value = "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHznB";
        for s in [
            format!(
                "kubectl get deploy -o yaml\r\n  - name: DB_PASSWORD\r\n    value: {value}\r\n"
            ),
            format!("<config>\n  <apiToken>\n    {value}\n  </apiToken>\n</config>"),
            format!("const apiKey =\n  \"{value}\";"),
            format!("{{\n  \"Parameter\": {{\n    \"Name\": \"/prod/db/pw\",\n    \"Type\": \"SecureString\",\n    \"Value\": \"{value}\",\n    \"Version\": 3\n  }}\n}}"),
            format!("[\n  {{\n    \"name\": \"DB_PASSWORD\",\n    \"value\": \"{value}\"\n  }}\n]"),
            format!("<property>\n  <name>fs.s3a.secret.key</name>\n  <value>{value}</value>\n</property>"),
        ] {
            let mut out = Vec::new();
            det.find(s.as_bytes(), &mut out);
            let spans: Vec<&str> = out.iter().map(|f| &s[f.start..f.end]).collect();
            assert_eq!(spans, [value], "{s:?}");
        }
        let mut out = Vec::new();
        det.find(
            b"  - name: LOG_LEVEL\n    value: Zf3D0LXCM3EIMbgJpUNnkRtOfOueHznB",
            &mut out,
        );
        assert_eq!(out, []);
    }

    #[test]
    fn a_secret_split_into_concatenated_literals_is_found_across_them() {
        let det = Detector::new(RuleSet::new(&[]).unwrap(), &[], Placeholders::AreExpected);
        let found = |s: &str| {
            let mut out = Vec::new();
            det.find(s.as_bytes(), &mut out);
            out.into_iter()
                .map(|f| s[f.start..f.end].to_string())
                .collect::<Vec<_>>()
        };
        let gh = "ghp_R2d2C3poLukeLeia0123456789abcdefABCD";
        let (a, b, c) = (&gh[..9], &gh[9..25], &gh[25..]);
        for (s, whole) in [
            (
                format!("token = \"{a}\" + \"{b}\" + \"{c}\";"),
                format!("{a}\" + \"{b}\" + \"{c}"),
            ),
            (
                format!("TOKEN = ('{a}'\n    '{b}'\n    '{c}')"),
                format!("{a}'\n    '{b}'\n    '{c}"),
            ),
            (format!("$t = '{a}' . '{b}{c}';"), format!("{a}' . '{b}{c}")),
        ] {
            // (A label rule may also take the first literal alone.)
            assert!(found(&s).contains(&whole), "{s}: {:?}", found(&s));
        }
        // A label reads across the junction too, the literal ends the value.
        let value = "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHznB";
        let s = format!("api_key = \"{}\" + \"{}\"", &value[..12], &value[12..]);
        assert!(
            found(&s).contains(&format!("{}\" + \"{}", &value[..12], &value[12..])),
            "{s}"
        );
        // Words joined are words; an escaped quote is no junction.
        assert_eq!(
            found("msg = \"Content-Type\" + \"application/json\""),
            Vec::<String>::new()
        );
        assert_eq!(found("SELECT 'it''s ghp_R2d2C3po'"), Vec::<String>::new());
    }

    #[test]
    fn a_value_on_the_line_after_its_label_is_found_in_that_line_by_the_label_rules() {
        let det = Detector::new(RuleSet::new(&[]).unwrap(), &[], Placeholders::AreExpected);
        let found = |prev: &str, line: &str| {
            let mut out = Vec::new();
            det.find_continued(prev.as_bytes(), line, &mut out);
            out.into_iter()
                .map(|f| (line[f.start..f.end].to_string(), f.rule))
                .collect::<Vec<_>>()
        };
        let value = "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHznB";
        assert_eq!(
            found("  <genericToken>", &format!("    {value}  ")),
            [(value.to_string(), "secret-element".to_string())]
        );
        assert_eq!(
            found(
                "  <name>fs.s3a.secret.key</name>",
                &format!("  <value>{value}</value>")
            ),
            [(value.to_string(), "xml-name-value".to_string())]
        );
        // Found on the line alone (a prefixed token): the line's finding,
        // not reported again.
        let ghp = "ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R";
        let mut alone = Vec::new();
        det.find(ghp.as_bytes(), &mut alone);
        assert_eq!(alone.len(), 1);
        assert_eq!(found("<githubToken>", ghp), []);
        assert_eq!(found("<note>", ghp), []);
        // The element's name and value are judged as on one line.
        assert_eq!(found("<tokenizer>", value), []);
        assert_eq!(found("<password>", "changeme"), []);
        assert_eq!(found("<password>", "${DB_PASSWORD}"), []);
        assert_eq!(
            found("<password>", "[REDACTED_SECRET:secret-element:0a1b2c3d]"),
            []
        );
        // An assignment broken after its operator: the value goes whole.
        assert_eq!(
            found(
                "const scrapingBeeApiKey =",
                &format!("  \"{value}\"; // note")
            ),
            [(value.to_string(), "secret-assignment".to_string())]
        );
        assert_eq!(
            found("const scrapingBeeApiKey =", "  \"YOUR_API_KEY\";"),
            []
        );
        assert_eq!(found("const greeting =", &format!("\"{value}\";")), []);
        // What the line holds on its own is not reported twice.
        let own = format!("\"x\"; password = \"{value}\";");
        let mut alone = Vec::new();
        det.find(own.as_bytes(), &mut alone);
        assert_eq!(alone.len(), 1);
        assert_eq!(found("let greeting =", &own), []);
    }

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
