//! Reading the verified export tree for the report: every placeholder and
//! every pseudonym, with where it stands and the exported text around it.

use coffer_base::codes;
use std::collections::BTreeMap;
use std::io::{BufReader, Read};

use aho_corasick::{AhoCorasick, MatchKind};
use coffer_base::issue::Issue;
use coffer_base::json::{self, escape_pointer_token, JsonlLimits, Limits};
use coffer_evidence::bundle::source::BundleDir;
use regex::Regex;
use serde_json::Value;

use super::residual::{self, Residual, ResidualRisk};
use super::{Class, FileSummary, Replacement, Tally, CONTEXT_CHARS, MAX_LISTED_PER_CLASS};
use crate::error::{ExportError, Result};
use crate::lines::{next_line, split_terminator};

/// One exported file to read, with what the writer knows of it.
#[derive(Debug, Clone)]
pub struct ReviewedFile {
    /// Its path in the tree.
    pub file: String,
    /// Its media type (how to read it).
    pub media_type: String,
    /// The export manifest's transformation counts for it.
    pub transformations: BTreeMap<String, u64>,
    /// Fields the scrubber removed from it, by name.
    pub removed_fields: BTreeMap<String, u64>,
}

/// What reading the tree found.
#[derive(Debug, Default)]
pub struct Gathered {
    /// Replacements found.
    pub total: u64,
    /// Counts per class and rule, most frequent first.
    pub rules: Vec<Tally>,
    /// Per file.
    pub files: Vec<FileSummary>,
    /// The listed replacements: secrets first, then local names, then
    /// identities and cut strings, each in reading order.
    pub replacements: Vec<Replacement>,
    /// What stayed that a reviewer should look at.
    pub residual_risk: ResidualRisk,
}

/// Reads `files` from the verified tree and lists what stands in for
/// replaced text; `pseudonyms` maps each form of each pseudonym to its
/// identity's namespace.
pub fn gather(
    tree: &BundleDir,
    files: &[ReviewedFile],
    pseudonyms: &BTreeMap<String, &str>,
) -> Result<Gathered> {
    let mut g = Gatherer::new(pseudonyms);
    for f in files {
        g.file_counts.clear();
        g.file(tree, f)?;
        g.out.files.push(FileSummary {
            file: f.file.clone(),
            replacements: g.file_counts.values().sum(),
            classes: std::mem::take(&mut g.file_counts),
            transformations: f.transformations.clone(),
            removed_fields: f.removed_fields.clone(),
        });
    }
    let mut rules: Vec<Tally> = std::mem::take(&mut g.tallies)
        .into_iter()
        .map(|((class, rule), count)| Tally { class, rule, count })
        .collect();
    rules.sort_by(|a, b| b.count.cmp(&a.count).then(a.class.cmp(&b.class)));
    g.out.rules = rules;
    // Stable: within a class, reading order stays.
    g.out.replacements.sort_by_key(|r| r.class);
    Ok(g.out)
}

/// Where a string stands.
struct Place<'p> {
    file: &'p str,
    line: Option<u64>,
    pointer: &'p str,
}

struct Gatherer<'a> {
    placeholder: Regex,
    pseudonyms: Option<(AhoCorasick, Vec<&'a str>)>,
    tallies: BTreeMap<(Class, String), u64>,
    file_counts: BTreeMap<Class, u64>,
    listed: BTreeMap<Class, usize>,
    out: Gathered,
    spans: Vec<(usize, usize, Class, String)>,
    residuals: residual::Finder,
    residuals_listed: BTreeMap<residual::Kind, usize>,
}

impl<'a> Gatherer<'a> {
    fn new(pseudonyms: &BTreeMap<String, &'a str>) -> Gatherer<'a> {
        let pseudonyms = (!pseudonyms.is_empty()).then(|| {
            let ac = AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(pseudonyms.keys())
                .expect("pseudonym automaton builds");
            (ac, pseudonyms.values().copied().collect())
        });
        Gatherer {
            placeholder: Regex::new(crate::detect::PLACEHOLDER_PATTERN).expect("compiles"),
            pseudonyms,
            tallies: BTreeMap::new(),
            file_counts: BTreeMap::new(),
            listed: BTreeMap::new(),
            out: Gathered::default(),
            spans: Vec::new(),
            residuals: residual::Finder::new(),
            residuals_listed: BTreeMap::new(),
        }
    }

    fn file(&mut self, tree: &BundleDir, f: &ReviewedFile) -> Result<()> {
        let rel = f.file.as_str();
        let (file, _) = tree.open_evidence(rel).map_err(invalid)?;
        match f.media_type.as_str() {
            "application/json" => {
                let bytes = json::read_bytes(file, &Limits::EVIDENCE, rel).map_err(invalid)?;
                let v = json::parse(&bytes, &Limits::EVIDENCE)
                    .map_err(|e| invalid(Issue::from((rel, e))))?;
                self.value(&v, rel, None, &mut String::new());
            }
            media => self.lines(file, rel, media == "application/x-ndjson")?,
        }
        Ok(())
    }

    fn lines(&mut self, r: impl Read, rel: &str, jsonl: bool) -> Result<()> {
        let limits = JsonlLimits::EVIDENCE.line;
        let mut br = BufReader::with_capacity(1 << 20, r);
        let mut buf = Vec::new();
        let mut n = 0u64;
        let unreadable = |n: u64, what: String| {
            invalid(Issue::file(
                codes::validation::REPORT_INPUT,
                rel,
                format!("{rel}: line {}: {what}", n + 1),
            ))
        };
        while next_line(&mut br, &mut buf, limits.max_bytes)
            .map_err(|e| unreadable(n, e.to_string()))?
        {
            let (content, _) = split_terminator(&buf);
            if jsonl {
                let v = json::parse(content, &limits).map_err(|e| unreadable(n, e.message))?;
                self.value(&v, rel, Some(n + 1), &mut String::new());
            } else {
                let s =
                    std::str::from_utf8(content).map_err(|_| unreadable(n, "not UTF-8".into()))?;
                let at = Place {
                    file: rel,
                    line: Some(n + 1),
                    pointer: "",
                };
                self.string(s, &at);
            }
            n += 1;
        }
        Ok(())
    }

    fn value(&mut self, v: &Value, file: &str, line: Option<u64>, pointer: &mut String) {
        match v {
            Value::String(s) => self.string(
                s,
                &Place {
                    file,
                    line,
                    pointer,
                },
            ),
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    let len = pointer.len();
                    pointer.push_str(&format!("/{i}"));
                    self.value(x, file, line, pointer);
                    pointer.truncate(len);
                }
            }
            Value::Object(m) => {
                for (k, x) in m {
                    let len = pointer.len();
                    pointer.push('/');
                    pointer.push_str(&escape_pointer_token(k));
                    self.string(
                        k,
                        &Place {
                            file,
                            line,
                            pointer,
                        },
                    );
                    self.value(x, file, line, pointer);
                    pointer.truncate(len);
                }
            }
            _ => {}
        }
    }

    /// Every placeholder and pseudonym in one string.
    fn string(&mut self, s: &str, at: &Place<'_>) {
        self.spans.clear();
        if s.contains('[') {
            for m in self.placeholder.find_iter(s) {
                if let Some((class, rule)) = Class::of_placeholder(m.as_str()) {
                    self.spans.push((m.start(), m.end(), class, rule));
                }
            }
        }
        if let Some((at, _)) = crate::rewrite::cut::marked(s) {
            self.spans
                .push((at, s.len(), Class::Truncated, "max-string-bytes".into()));
        }
        if let Some((ac, namespaces)) = &self.pseudonyms {
            for m in ac.find_iter(s) {
                let ns = namespaces[m.pattern().as_usize()];
                self.spans
                    .push((m.start(), m.end(), Class::Identity, ns.to_string()));
            }
        }
        self.residual(s, at);
        if self.spans.is_empty() {
            return;
        }
        self.spans.sort_by_key(|sp| (sp.0, std::cmp::Reverse(sp.1)));
        let mut last = 0;
        let spans = std::mem::take(&mut self.spans);
        for (a, b, class, rule) in &spans {
            if *a < last {
                continue;
            }
            last = *b;
            self.count(s, (*a, *b), *class, rule, at, &spans);
        }
        self.spans = spans;
    }

    /// What stayed in one string, beside the spans already taken.
    fn residual(&mut self, s: &str, at: &Place<'_>) {
        let taken: Vec<(usize, usize)> = self.spans.iter().map(|sp| (sp.0, sp.1)).collect();
        for (kind, a, b) in self.residuals.find(s, &taken) {
            let risk = &mut self.out.residual_risk;
            *risk.counts.entry(kind).or_insert(0) += 1;
            let listed = self.residuals_listed.entry(kind).or_insert(0);
            if *listed >= residual::MAX_LISTED_PER_KIND {
                continue;
            }
            *listed += 1;
            let (before, after) = context(s, a, b, &self.spans);
            risk.listed.push(Residual {
                kind,
                file: at.file.to_string(),
                line: at.line,
                pointer: at.pointer.to_string(),
                text: s[a..b].to_string(),
                before,
                after,
            });
        }
    }

    fn count(
        &mut self,
        s: &str,
        (a, b): (usize, usize),
        class: Class,
        rule: &str,
        at: &Place<'_>,
        spans: &[(usize, usize, Class, String)],
    ) {
        self.out.total += 1;
        *self.file_counts.entry(class).or_insert(0) += 1;
        *self.tallies.entry((class, rule.to_string())).or_insert(0) += 1;
        let listed = self.listed.entry(class).or_insert(0);
        if *listed >= MAX_LISTED_PER_CLASS {
            return;
        }
        *listed += 1;
        let (before, after) = context(s, a, b, spans);
        self.out.replacements.push(Replacement {
            file: at.file.to_string(),
            line: at.line,
            pointer: at.pointer.to_string(),
            class,
            rule: rule.to_string(),
            placeholder: s[a..b].to_string(),
            before,
            after,
        });
    }
}

fn invalid(i: Issue) -> ExportError {
    ExportError::Invalid(vec![i])
}

/// The exported text on each side of `s[a..b]`: up to [`CONTEXT_CHARS`]
/// characters, widened so no other placeholder is cut (half a placeholder
/// would read as a forged one), with control characters shown as spaces
/// and an ellipsis where the string goes on.
fn context(
    s: &str,
    a: usize,
    b: usize,
    spans: &[(usize, usize, Class, String)],
) -> (String, String) {
    let mut start = s[..a]
        .char_indices()
        .rev()
        .nth(CONTEXT_CHARS - 1)
        .map_or(0, |(i, _)| i);
    let mut end = s[b..]
        .char_indices()
        .nth(CONTEXT_CHARS)
        .map_or(s.len(), |(i, _)| b + i);
    for (x, y, _, _) in spans {
        if *x < start && start < *y {
            start = *x;
        }
        if *x < end && end < *y {
            end = *y;
        }
    }
    let shown = |t: &str| -> String {
        t.chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect()
    };
    let mut before = shown(&s[start..a]);
    if start > 0 {
        before.insert(0, '…');
    }
    let mut after = shown(&s[b..end]);
    if end < s.len() {
        after.push('…');
    }
    (before, after)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans_of(s: &str) -> Vec<(usize, usize, Class, String)> {
        let re = Regex::new(crate::detect::PLACEHOLDER_PATTERN).unwrap();
        re.find_iter(s)
            .map(|m| (m.start(), m.end(), Class::Secret, String::new()))
            .collect()
    }

    #[test]
    fn context_is_bounded_and_never_cuts_a_neighbouring_placeholder() {
        let p = "[REDACTED_SECRET:github-pat:0a1b2c3d]";
        let s = format!("{}{p} x {p}{}", "a".repeat(100), "b".repeat(100));
        let spans = spans_of(&s);
        let (a, b) = (spans[0].0, spans[0].1);
        let (before, after) = context(&s, a, b, &spans);
        assert_eq!(before, format!("…{}", "a".repeat(CONTEXT_CHARS)));
        assert!(after.starts_with(&format!(" x {p}")), "{after}");
        assert!(after.ends_with('…'));
        // The window would end inside the second placeholder: it grows.
        let short = format!("{p}{}{p}", "c".repeat(CONTEXT_CHARS - 5));
        let spans = spans_of(&short);
        let (_, after) = context(&short, spans[0].0, spans[0].1, &spans);
        assert_eq!(after, format!("{}{p}", "c".repeat(CONTEXT_CHARS - 5)));
    }

    #[test]
    fn context_counts_characters_and_blanks_controls() {
        let s = "é\nlé[LOCAL_PATH]\tø";
        let spans = spans_of(s);
        let a = s.find('[').unwrap();
        let (before, after) = context(s, a, a + "[LOCAL_PATH]".len(), &spans);
        assert_eq!((before.as_str(), after.as_str()), ("é lé", " ø"));
    }
}
