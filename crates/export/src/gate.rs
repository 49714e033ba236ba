//! The readback gate and `export verify`: an independent reader of an
//! export tree.
//!
//! Nothing here shares state with the writer: the tree is re-read from
//! disk, the manifest re-parsed and checked against the schema and the
//! contract, every file re-hashed, every record re-parsed, and every string
//! scanned by a freshly built detector and a separately built literal
//! matcher. Findings name the file, the JSON pointer (or line) and the rule,
//! never the value.

pub mod scan;

use coffer_base::codes;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::{BufReader, Read};
use std::path::Path;

use aho_corasick::AhoCorasick;
use coffer_base::digest::HashingReader;
use coffer_base::dir::{Dir, EntryKind};
use coffer_base::issue::{Issue, Position};
use coffer_base::json::{self, escape_pointer_token, JsonlLimits, Limits, Node};
use coffer_evidence::bundle::safe_path::{check_path_set, check_relative_path, MANIFEST};
use coffer_evidence::bundle::source::BundleDir;
use coffer_evidence::schema::{self, DocKind};
use regex::bytes::Regex;
use serde_json::Value;

use crate::detect::memo::ShortMemo;
use crate::detect::names::{classify, FieldClass, THINKING_KEEP, THINKING_RECORD};
use crate::detect::rules::{is_placeholder, RuleSet};
use crate::detect::{CleanCache, Detector, Finding, Placeholders, FORGERY_RULE, SENSITIVE_RULE};
use crate::error::{ExportError, Result};
use crate::lines::{two_core, Batch};
use crate::plan::allowed;
use crate::policy::Policy;

/// Most files an export tree may hold (the unpack limit too).
pub const MAX_FILES: usize = 10_000;
/// Findings reported before the scan stops collecting.
pub const MAX_FINDINGS: usize = 1_000;

/// What the reader knows besides the tree.
#[derive(Debug, Default, Clone)]
pub struct Expectations<'a> {
    /// The policy (digest match, sensitive values, extra rules).
    pub policy: Option<&'a Policy>,
    /// Every secret placeholder the writer issued (provenance).
    pub issued: Option<BTreeSet<String>>,
    /// Original identities that must not appear.
    pub identities: Vec<String>,
    /// Local user names that must not appear.
    pub users: Vec<String>,
}

/// What the reader checked.
#[derive(Debug, Default, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadbackReport {
    /// Artifacts verified.
    pub artifacts: usize,
    /// Bytes re-read and re-hashed.
    pub bytes: u64,
    /// String leaves and text lines scanned.
    pub strings_scanned: u64,
    /// Placeholders seen (all accounted for).
    pub placeholders: u64,
    /// Rules run over every decoded view.
    pub rules: usize,
    /// Literals in the final matcher (values, encodings, identities, users).
    pub literals: usize,
}

const SECRET_FIELD_RULE: &str = "secret-field";

/// The final scan: rules over every decoded view, literals, paths,
/// forbidden fields and placeholders.
pub struct FinalScan {
    det: Detector,
    literals: Option<(AhoCorasick, Vec<&'static str>)>,
    placeholder: Regex,
    prefix: Regex,
    known_rules: BTreeSet<String>,
    issued: Option<BTreeSet<String>>,
    allow: Vec<String>,
    /// Findings so far.
    pub findings: Vec<Issue>,
    /// Counters.
    pub report: ReadbackReport,
    scratch: Vec<Finding>,
    clean: CleanCache,
    /// Each key's [`classify`], remembered.
    classes: ShortMemo<FieldClass>,
    /// `coffer scan` asks where each finding is; the gate does not.
    locate: Option<Raw>,
    /// Findings made, those past [`MAX_FINDINGS`] included.
    found: u64,
}

/// The raw bytes of the line or document being scanned, to place findings.
#[derive(Clone, Default)]
struct Raw {
    bytes: Vec<u8>,
    /// The line `bytes` starts on.
    first_line: u64,
    /// A text line is scanned as is; JSON strings are escaped in it.
    text: bool,
}

impl Raw {
    /// The line and byte column of byte `at` of the raw bytes.
    fn at(&self, at: usize) -> Position {
        let before = &self.bytes[..at];
        let newlines = memchr::memchr_iter(b'\n', before).count() as u64;
        let line_start = memchr::memrchr(b'\n', before).map_or(0, |i| i + 1);
        // Code points: every byte that does not continue a UTF-8 sequence.
        let chars = before[line_start..]
            .iter()
            .filter(|b| (**b & 0xC0) != 0x80)
            .count();
        Position {
            line: self.first_line + newlines,
            column: (at - line_start) as u64 + 1,
            char_column: chars as u64 + 1,
        }
    }

    /// Where `s[a..e]` (a scanned string, or a match inside it) lies: in a
    /// text line, exactly; in JSON, where its escaped form first appears
    /// (else the escaped whole string, else the start of the line).
    fn place(&self, s: &str, span: Option<(usize, usize)>) -> Position {
        if self.text {
            return self.at(span.map_or(0, |(a, _)| a).min(self.bytes.len()));
        }
        let b = s.as_bytes();
        let escaped = |x: &[u8]| {
            let q =
                serde_json::to_string(&String::from_utf8_lossy(x)).expect("a string serializes");
            q.as_bytes()[1..q.len() - 1].to_vec()
        };
        let find = |x: &[u8]| {
            let e = escaped(x);
            (!e.is_empty())
                .then(|| memchr::memmem::find(&self.bytes, &e))
                .flatten()
        };
        span.filter(|(a, e)| a < e && *e <= b.len())
            .and_then(|(a, e)| find(&b[a..e]))
            .or_else(|| find(b))
            .map_or_else(|| self.at(0), |at| self.at(at))
    }
}

/// The last reference token of a JSON pointer, unescaped (`~1` is `/`,
/// `~0` is `~`).
fn last_token(pointer: &str) -> String {
    let token = pointer.rsplit('/').next().unwrap_or("");
    token.replace("~1", "/").replace("~0", "~")
}

fn literal_set(exp: &Expectations<'_>) -> (Vec<String>, Vec<&'static str>) {
    let mut pats: BTreeMap<String, &'static str> = BTreeMap::new();
    if let Some(p) = exp.policy {
        for v in &p.sensitive_values {
            for x in crate::rewrite::literals::variants(v) {
                pats.insert(x, codes::validation::SENSITIVE_VALUE_IN_EXPORT);
            }
        }
    }
    for id in &exp.identities {
        if id.len() < crate::rewrite::identity::MIN_SWEPT_ID_BYTES {
            continue;
        }
        for (form, _) in crate::rewrite::identity::derived_forms(id, id) {
            pats.entry(form)
                .or_insert(codes::validation::IDENTITY_IN_EXPORT);
        }
    }
    for u in &exp.users {
        if u.len() >= 3
            && !["root", "user", "users", "home", "admin", "localhost"]
                .contains(&u.to_lowercase().as_str())
        {
            pats.entry(u.clone())
                .or_insert(codes::validation::LOCAL_USER_IN_EXPORT);
        }
    }
    pats.into_iter().unzip()
}

impl FinalScan {
    /// A scan for `exp`.
    pub fn new(exp: &Expectations<'_>) -> Result<FinalScan> {
        let extra = exp
            .policy
            .map(|p| p.extra_rules.clone())
            .unwrap_or_default();
        let rules = RuleSet::gate(&extra).map_err(|e| {
            ExportError::invalid(codes::validation::POLICY_RULE, &e.id, e.to_string())
        })?;
        let mut known_rules: BTreeSet<String> =
            rules.rules().iter().map(|r| r.id.clone()).collect();
        for r in [
            SENSITIVE_RULE,
            FORGERY_RULE,
            SECRET_FIELD_RULE,
            crate::detect::views::OVERFLOW_RULE,
            crate::detect::views::ROW_RULE,
        ]
        .into_iter()
        .chain(crate::detect::across::RULES)
        {
            known_rules.insert(r.to_string());
        }
        let values = exp
            .policy
            .map(|p| p.sensitive_values.clone())
            .unwrap_or_default();
        let det = Detector::new(rules, &values, Placeholders::AreExpected);
        let (pats, kinds) = literal_set(exp);
        let mut report = ReadbackReport {
            rules: det.rules().rules().len(),
            literals: pats.len(),
            ..Default::default()
        };
        report.literals = pats.len();
        let literals =
            (!pats.is_empty()).then(|| (crate::rewrite::literals::automaton(&pats), kinds));
        Ok(FinalScan {
            det,
            literals,
            placeholder: Regex::new(&format!("(?-u){}", crate::detect::PLACEHOLDER_PATTERN))
                .expect("compiles"),
            prefix: Regex::new(&format!("(?-u){}", crate::detect::PLACEHOLDER_PREFIX))
                .expect("compiles"),
            known_rules,
            issued: exp.issued.clone(),
            allow: exp
                .policy
                .map(|p| p.allow_names.clone())
                .unwrap_or_default(),
            findings: Vec::new(),
            report,
            scratch: Vec::new(),
            clean: CleanCache::default(),
            classes: ShortMemo::default(),
            locate: None,
            found: 0,
        })
    }

    /// Whether `s` holds what the scan reports as a credential or a policy
    /// value: a place named by it is shown masked (`crate::shown`).
    pub fn holds_secret(&self, s: &str) -> bool {
        self.det.holds_credential(s)
    }

    /// Also records where each finding is (line and byte column).
    pub fn locating(mut self) -> Self {
        self.locate = Some(Raw::default());
        self
    }

    fn finding(&mut self, code: &'static str, file: &str, pointer: &str, message: String) {
        self.found += 1;
        if self.findings.len() < MAX_FINDINGS {
            let message = format!("{file}#{pointer}: {message}");
            self.findings.push(Issue::at(code, file, pointer, message));
        }
    }

    /// A finding in the scanned string `s` (at `span` inside it, when the
    /// matcher says where), placed in the file when locating.
    fn finding_in(
        &mut self,
        code: &'static str,
        file: &str,
        pointer: &str,
        s: &str,
        span: Option<(usize, usize)>,
        message: String,
    ) {
        let before = self.findings.len();
        self.finding(code, file, pointer, message);
        if self.findings.len() > before {
            if let Some(raw) = &self.locate {
                self.findings[before].position = Some(raw.place(s, span));
            }
        }
    }

    fn placeholder_ok(&self, p: &str) -> bool {
        if matches!(
            p,
            "[LOCAL_PATH]" | "[HOME]" | "[WORKSPACE]" | "[LOCAL_HOST]"
        ) {
            return true;
        }
        if let Some(n) = p
            .strip_prefix("[LOCAL_USER:")
            .and_then(|r| r.strip_suffix(']'))
        {
            return !n.is_empty() && n.len() <= 6 && n.bytes().all(|c| c.is_ascii_digit());
        }
        let Some(body) = p
            .strip_prefix("[REDACTED_SECRET:")
            .and_then(|r| r.strip_suffix(']'))
        else {
            return false;
        };
        let Some((rule, fp)) = body.rsplit_once(':') else {
            return false;
        };
        let shaped = self.known_rules.contains(rule)
            && fp.len() == 8
            && fp
                .bytes()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c));
        shaped && self.issued.as_ref().is_none_or(|i| i.contains(p))
    }

    /// Scans one string (a JSON leaf or key, or a text line).
    pub fn string(&mut self, s: &str, file: &str, pointer: &str) {
        self.report.strings_scanned += 1;
        if self.clean.contains(s) {
            return;
        }
        let (before, seen) = (self.findings.len(), self.report.placeholders);
        self.scan(s, file, pointer);
        if self.findings.len() == before && self.report.placeholders == seen {
            self.clean.insert(s, ());
        }
    }

    /// A text line, after [`FinalScan::string`] saw it: what it holds only
    /// with the line before it (see `crate::detect::continued`).
    pub fn continued(&mut self, prev: &[u8], line: &str, file: &str, pointer: &str) {
        self.scratch.clear();
        self.det.find_continued(prev, line, &mut self.scratch);
        self.rule_findings(line, file, pointer);
    }

    /// Consecutive lines of a text file (one batch, the first numbered
    /// `first`), after each was read on its own: what only shows across
    /// lines (see [`crate::detect::across`]).
    fn text_lines<'a>(
        &mut self,
        lines: impl Iterator<Item = &'a [u8]> + Clone,
        first: u64,
        file: &str,
        diff: bool,
    ) {
        for f in crate::detect::across::in_lines(lines.clone(), diff) {
            let Ok(line) = std::str::from_utf8(f.line) else {
                continue;
            };
            let n = first + f.index as u64;
            self.locate_line(line, n);
            self.scratch.clear();
            self.scratch.push(Finding {
                start: f.span.start,
                end: f.span.end,
                rule: f.rule.to_string(),
            });
            self.rule_findings(line, file, &format!("/{n}"));
        }
        let all: Vec<&[u8]> = lines.clone().collect();
        for (i, span, rule) in self.det.find_across_rows(lines, diff) {
            let Ok(line) = std::str::from_utf8(all[i]) else {
                continue;
            };
            let n = first + i as u64;
            self.locate_line(line, n);
            self.scratch.clear();
            self.scratch.push(Finding {
                start: span.start,
                end: span.end,
                rule,
            });
            self.rule_findings(line, file, &format!("/{n}"));
        }
    }

    /// When locating, places the next findings in text line `n` (from 0).
    fn locate_line(&mut self, line: &str, n: u64) {
        if let Some(raw) = &mut self.locate {
            raw.bytes.clear();
            raw.bytes.extend_from_slice(line.as_bytes());
            raw.first_line = n + 1;
            raw.text = true;
        }
    }

    /// Reports the rule findings in `self.scratch`, found in `s`.
    fn rule_findings(&mut self, s: &str, file: &str, pointer: &str) {
        let found = std::mem::take(&mut self.scratch);
        for f in &found {
            let code = if f.rule == SENSITIVE_RULE {
                codes::validation::SENSITIVE_VALUE_IN_EXPORT
            } else {
                codes::validation::SECRET_IN_EXPORT
            };
            self.finding_in(
                code,
                file,
                pointer,
                s,
                Some((f.start, f.end)),
                format!("rule {} matched {} bytes", f.rule, f.end - f.start),
            );
        }
        self.scratch = found;
    }

    fn scan(&mut self, s: &str, file: &str, pointer: &str) {
        self.scratch.clear();
        self.det.find(s.as_bytes(), &mut self.scratch);
        self.rule_findings(s, file, pointer);
        if let Some((ac, kinds)) = &self.literals {
            let hits: Vec<(&'static str, usize, usize)> = ac
                .find_iter(s)
                .map(|m| (kinds[m.pattern().as_usize()], m.start(), m.end()))
                .collect();
            let b = s.as_bytes();
            for (code, a, e) in hits {
                if code == codes::validation::LOCAL_USER_IN_EXPORT
                    && !crate::rewrite::literals::stands_alone(b, a, e)
                {
                    continue;
                }
                self.finding_in(
                    code,
                    file,
                    pointer,
                    s,
                    Some((a, e)),
                    format!("a {}-byte literal the export must not contain", e - a),
                );
            }
        }
        for _ in crate::rewrite::local_paths::local_paths(s) {
            self.finding_in(
                codes::validation::LOCAL_PATH_IN_EXPORT,
                file,
                pointer,
                s,
                None,
                "an absolute local path".into(),
            );
        }
        if memchr::memchr(b'[', s.as_bytes()).is_none() {
            return;
        }
        let exact: Vec<(usize, String)> = self
            .placeholder
            .find_iter(s.as_bytes())
            .map(|m| {
                (
                    m.start(),
                    String::from_utf8_lossy(m.as_bytes()).into_owned(),
                )
            })
            .collect();
        for (at, p) in &exact {
            self.report.placeholders += 1;
            if !self.placeholder_ok(p) {
                self.finding_in(
                    codes::validation::PLACEHOLDER_UNKNOWN,
                    file,
                    pointer,
                    s,
                    Some((*at, at + p.len())),
                    "a placeholder this export did not issue".into(),
                );
            }
        }
        // Every placeholder-like prefix must begin one of those.
        let stray = self
            .prefix
            .find_iter(s.as_bytes())
            .filter(|m| !exact.iter().any(|(at, _)| *at == m.start()))
            .count();
        for _ in 0..stray {
            self.finding_in(
                codes::validation::PLACEHOLDER_UNKNOWN,
                file,
                pointer,
                s,
                None,
                "text shaped like a placeholder that is not one".into(),
            );
        }
    }

    /// A number, as the text of its digits: a policy value or an original
    /// identity must not survive as one. (The credential rules read text:
    /// a count or a time is not a credential.)
    fn number(&mut self, text: &str, file: &str, pointer: &str) {
        if self.det.holds_sensitive_value(text) {
            self.finding(
                codes::validation::SENSITIVE_VALUE_IN_EXPORT,
                file,
                pointer,
                "a number that holds a sensitive value".into(),
            );
        }
        if let Some((ac, kinds)) = &self.literals {
            if let Some(m) = ac.find(text) {
                let code = kinds[m.pattern().as_usize()];
                self.finding(
                    code,
                    file,
                    pointer,
                    "a number the export must not contain".into(),
                );
            }
        }
    }

    /// Scans a JSON value: every key and string, forbidden fields.
    pub fn value(&mut self, v: &Node<'_>, file: &str, pointer: &mut String) {
        match v {
            Node::String(s) => self.string(s, file, pointer),
            Node::Number(n) => self.number(&n.to_string(), file, pointer),
            Node::Array(a) => {
                if let Some((_, text)) = crate::detect::spelled::of_nodes(a) {
                    self.string(&text, file, pointer);
                }
                for (i, x) in a.iter().enumerate() {
                    let len = pointer.len();
                    let _ = write!(pointer, "/{i}");
                    self.value(x, file, pointer);
                    pointer.truncate(len);
                }
            }
            Node::Object(m) => {
                if v.get("type").and_then(Node::as_str) == Some(THINKING_RECORD)
                    && m.iter().any(|(k, _)| !THINKING_KEEP.contains(&k.as_ref()))
                {
                    self.finding(
                        codes::validation::HIDDEN_REASONING,
                        file,
                        pointer,
                        "a thinking record keeps content".into(),
                    );
                }
                // `{"name": "GITHUB_TOKEN", "value": …}`: the writer
                // redacts the value as a secret-named field's.
                let pair_member = crate::detect::names::pair_value_member(
                    m.iter().map(|(k, x)| (k.as_ref(), x)),
                    &self.allow,
                );
                // A Kubernetes Secret: each data entry as a secret field.
                let kube = |k: &str| {
                    crate::detect::kube::data_member(k.as_bytes()).is_some()
                        && crate::detect::kube::is_secret_object(|k| v.get(k))
                };
                // A private JSON Web Key: its private members as secret
                // fields.
                let jwk = crate::detect::jwk::is_private_jwk(|k| v.get(k));
                for (k, x) in m {
                    let len = pointer.len();
                    self.key(k, file, pointer);
                    let allow = &self.allow;
                    let class = match self.classes.get_or(k, |k| classify(k, allow)) {
                        FieldClass::Plain if pair_member == Some(k.as_ref()) => FieldClass::Secret,
                        _ if jwk && crate::detect::jwk::private_member(k) => FieldClass::Secret,
                        class => class,
                    };
                    match (x, class) {
                        (Node::Object(d), _) if kube(k) => {
                            for (name, entry) in d {
                                let len = pointer.len();
                                self.key(name, file, pointer);
                                self.secret_field(entry, file, pointer);
                                pointer.truncate(len);
                            }
                        }
                        (_, FieldClass::Hidden | FieldClass::RawBody) => self.finding(
                            codes::validation::FORBIDDEN_FIELD,
                            file,
                            pointer,
                            "hidden reasoning or a raw API body".into(),
                        ),
                        (_, FieldClass::Secret) => self.secret_field(x, file, pointer),
                        _ if kube(k) => self.secret_field(x, file, pointer),
                        _ => self.value(x, file, pointer),
                    }
                    pointer.truncate(len);
                }
            }
            _ => {}
        }
    }

    /// Scans an object key and appends it to `pointer`: as itself, or
    /// masked ([`crate::shown::masked_token`]) when it holds what the scan reports, so
    /// that neither its own findings nor those below it show it.
    fn key(&mut self, k: &str, file: &str, pointer: &mut String) {
        let (len, found, at) = (pointer.len(), self.found, self.findings.len());
        push_token(pointer, k);
        self.string(k, file, pointer);
        if self.found == found {
            return;
        }
        let raw = format!("{file}#{pointer}");
        pointer.truncate(len);
        pointer.push('/');
        pointer.push_str(&crate::shown::masked_token(k));
        let shown = format!("{file}#{pointer}");
        for f in &mut self.findings[at..] {
            f.pointer = Some(pointer.clone());
            if let Some(rest) = f.message.strip_prefix(&raw) {
                f.message = format!("{shown}{rest}");
            }
        }
    }

    /// A secret field's value: null, a boolean, a placeholder or a
    /// version, which is all the writer leaves.
    fn secret_field(&mut self, x: &Node<'_>, file: &str, pointer: &str) {
        match x {
            Node::Null | Node::Bool(_) => {}
            Node::String(s)
                if is_placeholder(s.as_bytes()) || crate::detect::rules::kept_secret_value(s) =>
            {
                self.string(s, file, pointer)
            }
            // Placed where the value stands (its text found in the raw
            // line); an array or an object where its key does.
            _ => {
                let text = match x {
                    Node::String(v) => v.to_string(),
                    Node::Number(n) => n.to_string(),
                    _ => last_token(pointer),
                };
                let span = (!text.is_empty()).then_some((0, text.len()));
                self.finding_in(
                    codes::validation::SECRET_FIELD_IN_EXPORT,
                    file,
                    pointer,
                    &text,
                    span,
                    "a secret-named field keeps a value".into(),
                )
            }
        }
    }

    /// Scans one open file by its media type, hashing it on the way;
    /// returns its digest and size, or the content issue that stopped the
    /// read. The caller opens it (a regular file, never through a symlink
    /// of an untrusted tree).
    pub fn file(
        &mut self,
        f: std::fs::File,
        rel: &str,
        media_type: &str,
    ) -> Result<(String, u64), Issue> {
        let mut r = HashingReader::new(f);
        match media_type {
            "application/json" => {
                let bytes = json::read_bytes(&mut r, &Limits::EVIDENCE, rel)?;
                let v =
                    json::parse(&bytes, &Limits::EVIDENCE).map_err(|e| Issue::from((rel, e)))?;
                if let Some(raw) = &mut self.locate {
                    *raw = Raw {
                        bytes,
                        first_line: 1,
                        text: false,
                    };
                }
                self.value(&Node::from(&v), rel, &mut String::new());
            }
            media => self.lines(&mut r, rel, media)?,
        }
        let (d, size) = r.finish();
        self.report.bytes += size;
        Ok((d.to_string(), size))
    }

    /// Scans JSON Lines from `r` as the file `rel` (as [`FinalScan::file`]
    /// scans one, without hashing it).
    pub fn jsonl(&mut self, r: &mut impl Read, rel: &str) -> Result<(), Issue> {
        self.lines(r, rel, "application/x-ndjson")
    }

    /// Scans a line-based artifact on two cores: this thread reads (and so
    /// hashes) batches of lines and scans those a worker with its own copy
    /// of the scan has no time for. Results join in line order,
    /// so findings, counts and the first error are those a single pass
    /// would give. Memory stays at a few batches.
    fn lines(&mut self, r: &mut impl Read, rel: &str, media: &str) -> Result<(), Issue> {
        let max = JsonlLimits::EVIDENCE.line.max_bytes;
        let mut br = BufReader::with_capacity(1 << 20, r);
        let (mut mine, mut theirs) = (self.fork(), self.fork());
        let (done, read) = two_core(&mut br, max, &mut mine, &mut theirs, |scan, b| {
            scan.scanned(b, rel, media)
        });
        // The pieces of streams, joined in line order (crate::detect::streams).
        let det = self.det.clone();
        let mut streams = crate::detect::streams::Reassembler::new(&det);
        for scanned in done {
            let room = MAX_FINDINGS.saturating_sub(self.findings.len());
            self.findings
                .extend(scanned.findings.into_iter().take(room));
            self.report.strings_scanned += scanned.strings;
            self.report.placeholders += scanned.placeholders;
            scanned.result?;
            for (n, r) in scanned.streamed {
                streams.feed(n, r);
            }
        }
        read.map_err(|e| Issue::file(codes::limit::LINE_BYTES, rel, format!("{rel}: {e}")))?;
        streams.finish();
        if let Some(w) = &streams.exceeded {
            self.finding(
                codes::limit::STREAM_WINDOW,
                rel,
                &format!("/{}", w.line),
                format!(
                    "a secret spread over a stream's records reaches further back than {} bytes",
                    crate::detect::streams::WINDOW
                ),
            );
        }
        for c in streams.cuts.iter().filter(|c| c.first) {
            let parts = streams.cuts.iter().filter(|x| x.secret == c.secret).count();
            let code = if c.rule == SENSITIVE_RULE {
                codes::validation::SENSITIVE_VALUE_IN_EXPORT
            } else {
                codes::validation::SECRET_IN_EXPORT
            };
            self.finding(
                code,
                rel,
                &format!("/{}{}", c.line, c.pointer),
                format!(
                    "rule {} matched {} bytes spread over {parts} records of a stream",
                    c.rule,
                    c.secret.len()
                ),
            );
        }
        Ok(())
    }

    /// Scans one batch and hands over what it found and counted.
    fn scanned(&mut self, b: &Batch, rel: &str, media: &str) -> Scanned {
        let mut streamed = Vec::new();
        let result = self.batch(b, rel, media, &mut streamed);
        Scanned {
            streamed,
            findings: std::mem::take(&mut self.findings),
            strings: std::mem::take(&mut self.report.strings_scanned),
            placeholders: std::mem::take(&mut self.report.placeholders),
            result,
        }
    }

    /// One batch of lines.
    fn batch(
        &mut self,
        b: &Batch,
        rel: &str,
        media: &str,
        streamed: &mut Vec<(u64, crate::detect::streams::Record)>,
    ) -> Result<(), Issue> {
        let jsonl = media == "application/x-ndjson";
        let limits = JsonlLimits::EVIDENCE.line;
        for (i, (prev, content)) in b.lines_with_previous().enumerate() {
            let n = b.first + i as u64;
            let mut pointer = format!("/{n}");
            if let Some(raw) = &mut self.locate {
                raw.bytes.clear();
                raw.bytes.extend_from_slice(content);
                raw.first_line = n + 1;
                raw.text = !jsonl;
            }
            if jsonl {
                let v = json::parse_node(content, &limits).map_err(|e| {
                    Issue::at(
                        e.code,
                        rel,
                        format!("/{n}{}", e.pointer),
                        format!("line {}: {}", n + 1, e.message),
                    )
                })?;
                self.value(&v, rel, &mut pointer);
                // Structural streams are the writer's alone: their pieces
                // were never one text, and the rewrite changed what they
                // glue to (docs/EXPORT.md, "Structural streams").
                let r = crate::detect::streams::named_record(&v);
                if r.ends || !r.pieces.is_empty() {
                    streamed.push((n, r));
                }
            } else {
                let s = std::str::from_utf8(content).map_err(|_| {
                    Issue::at(
                        codes::validation::INVALID_UTF8,
                        rel,
                        &pointer,
                        format!("line {}: not UTF-8", n + 1),
                    )
                })?;
                self.string(s, rel, &pointer);
                if let Some(prev) = prev {
                    self.continued(prev, s, rel, &pointer);
                }
            }
        }
        if !jsonl {
            self.text_lines(b.lines(), b.first, rel, media == "text/x-diff");
        }
        Ok(())
    }

    /// A copy with the same matchers and expectations, and no findings,
    /// counts or cache of its own yet.
    fn fork(&self) -> FinalScan {
        FinalScan {
            det: self.det.clone(),
            literals: self.literals.clone(),
            placeholder: self.placeholder.clone(),
            prefix: self.prefix.clone(),
            known_rules: self.known_rules.clone(),
            issued: self.issued.clone(),
            allow: self.allow.clone(),
            findings: Vec::new(),
            report: ReadbackReport::default(),
            locate: self.locate.as_ref().map(|_| Raw::default()),
            scratch: Vec::new(),
            clean: CleanCache::default(),
            classes: ShortMemo::default(),
            found: 0,
        }
    }
}

/// What one batch found and counted.
struct Scanned {
    streamed: Vec<(u64, crate::detect::streams::Record)>,
    findings: Vec<Issue>,
    strings: u64,
    placeholders: u64,
    result: Result<(), Issue>,
}

/// Every file below `root` (relative paths); links and special files are
/// issues. Directories are walked through handles, never through a
/// symlink, and recursion holds at most `MAX_DEPTH` of them open.
fn walk(root: &Dir, issues: &mut Vec<Issue>) -> Vec<String> {
    let mut out = Vec::new();
    walk_dir(root, "", 0, &mut out, issues);
    out.sort();
    out
}

const MAX_DEPTH: usize = 64;

/// Walks one directory; false once the file limit is hit.
fn walk_dir(
    dir: &Dir,
    prefix: &str,
    depth: usize,
    out: &mut Vec<String>,
    issues: &mut Vec<Issue>,
) -> bool {
    let entries = match dir.entries() {
        Ok(e) => e,
        Err(e) => {
            issues.push(Issue::file(
                codes::io::ERROR,
                prefix,
                format!("{}: {e}", dir.path().display()),
            ));
            return true;
        }
    };
    for (name, kind) in entries {
        let rel = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        match kind {
            EntryKind::Dir if depth < MAX_DEPTH => match dir.open_dir(&name) {
                Ok(sub) => {
                    if !walk_dir(&sub, &rel, depth + 1, out, issues) {
                        return false;
                    }
                }
                Err(e) => issues.push(Issue::file(codes::io::ERROR, &rel, format!("{rel}: {e}"))),
            },
            EntryKind::File => {
                if dir
                    .entry(&name)
                    .is_ok_and(|e| e.is_some_and(|e| e.links > 1))
                {
                    issues.push(Issue::file(
                        codes::validation::HARD_LINK,
                        &rel,
                        format!("{rel}: has more than one link"),
                    ));
                }
                out.push(rel);
            }
            _ => issues.push(Issue::file(
                codes::validation::NOT_REGULAR_FILE,
                &rel,
                format!("{rel}: not a regular file or directory"),
            )),
        }
        if out.len() > MAX_FILES {
            issues.push(Issue::file(
                codes::limit::MEMBERS,
                "",
                format!("more than {MAX_FILES} files"),
            ));
            return false;
        }
    }
    true
}

fn read_document(tree: &BundleDir, rel: &str, max: usize) -> Result<Vec<u8>, Issue> {
    let (f, _) = tree.open_evidence(rel)?;
    coffer_base::input::read_bounded(f, Path::new(rel), max as u64).map_err(|e| {
        let code = match e.code() {
            codes::limit::INPUT_BYTES => codes::limit::JSON_BYTES,
            code => code,
        };
        Issue::file(code, rel, e.to_string())
    })
}

fn s<'v>(v: &'v Value, k: &str) -> &'v str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

/// Records a problem with the export manifest.
fn bad(issues: &mut Vec<Issue>, ptr: &str, msg: String) {
    issues.push(Issue::at(
        codes::validation::EXPORT_MANIFEST,
        MANIFEST,
        ptr,
        msg,
    ));
}

/// The array at `k` of a JSON object (empty when absent).
fn arr<'v>(v: &'v Value, k: &str) -> &'v [Value] {
    v.get(k)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Checks the export tree at `root`; every problem is an issue.
pub fn verify(root: &Path, exp: &Expectations<'_>) -> Result<ReadbackReport> {
    let tree = BundleDir::open(root).map_err(|i| ExportError::Invalid(vec![i]))?;
    verify_tree(&tree, exp)
}

/// Checks an export tree reached through an open handle (a tree just
/// built, before it is published). An issue that names a place by a key
/// or a file name holding a secret shows it masked.
pub fn verify_tree(tree: &BundleDir, exp: &Expectations<'_>) -> Result<ReadbackReport> {
    let mut scan = FinalScan::new(exp)?;
    match verify_with(tree, exp, &mut scan) {
        Ok(()) => Ok(scan.report),
        Err(e) => Err(e.masked(&|t| scan.holds_secret(t))),
    }
}

fn verify_with(tree: &BundleDir, exp: &Expectations<'_>, scan: &mut FinalScan) -> Result<()> {
    // The tree is untrusted: every file is opened one component at a time
    // without following symlinks, must be regular, and is read with bounds.
    let mut issues = Vec::new();
    let files = walk(tree.dir(), &mut issues);
    let manifest = read_manifest(tree, &mut issues)?;
    manifest_fields(&manifest, exp, &mut issues);
    let paths = listing_rules(&manifest, &mut issues);
    transformation_rules(&manifest, &mut issues);
    exclusion_rules(&manifest, &mut issues);
    tree_matches_listing(&files, &paths, &mut issues);
    if !issues.is_empty() {
        return Err(ExportError::Invalid(issues));
    }
    scan.value(&Node::from(&manifest), MANIFEST, &mut String::new());
    let artifacts = arr(&manifest, "artifacts");
    scan_artifacts(tree, artifacts, scan, &mut issues);
    reference_rules(tree, &manifest, artifacts, &mut issues);
    issues.append(&mut scan.findings);
    if !issues.is_empty() {
        return Err(ExportError::Invalid(issues));
    }
    Ok(())
}

/// Reads, parses and schema-checks the export manifest; any problem so far
/// ends the readback.
fn read_manifest(tree: &BundleDir, issues: &mut Vec<Issue>) -> Result<Value> {
    let fail = |issues: &mut Vec<Issue>, i: Issue| {
        issues.push(i);
        ExportError::Invalid(std::mem::take(issues))
    };
    let mbytes =
        read_document(tree, MANIFEST, Limits::DOCUMENT.max_bytes).map_err(|i| fail(issues, i))?;
    let manifest = json::parse(&mbytes, &Limits::DOCUMENT)
        .map_err(|e| fail(issues, Issue::from((MANIFEST, e))))?;
    for p in schema::validate(DocKind::ExportManifest, &manifest) {
        issues.push(Issue::at(
            codes::validation::SCHEMA,
            MANIFEST,
            p.pointer,
            p.message,
        ));
    }
    if !issues.is_empty() {
        return Err(ExportError::Invalid(std::mem::take(issues)));
    }
    Ok(manifest)
}

/// Status, class, policy and correlation fields.
fn manifest_fields(manifest: &Value, exp: &Expectations<'_>, issues: &mut Vec<Issue>) {
    if s(manifest, "status") != "ready" {
        bad(
            issues,
            "/status",
            "an export tree's manifest has status ready".into(),
        );
    }
    let class = s(manifest, "sharingClass");
    if !matches!(class, "partner" | "public") {
        bad(
            issues,
            "/sharingClass",
            format!("sharing class {class:?} is not an export class"),
        );
    }
    if let Some(p) = exp.policy {
        if s(manifest, "policyDigest") != p.digest.to_string() || class != p.sharing_class.as_str()
        {
            issues.push(Issue::at(
                codes::validation::POLICY_MISMATCH,
                MANIFEST,
                "/policyDigest",
                "the export was not made with this policy",
            ));
        }
    }
}

/// The artifact list: present, matching artifactIds, safe distinct paths,
/// real evidence besides the capture report. Returns the listed paths.
fn listing_rules<'m>(manifest: &'m Value, issues: &mut Vec<Issue>) -> Vec<&'m str> {
    let bundle_id = s(manifest, "bundleId");
    let artifacts = arr(manifest, "artifacts");
    if artifacts.is_empty() {
        bad(
            issues,
            "/artifacts",
            "a portable export lists its artifacts".into(),
        );
    }
    if s(&manifest["correlations"], "bundleId") != bundle_id {
        bad(
            issues,
            "/correlations/bundleId",
            "differs from bundleId".into(),
        );
    }
    let ids: Vec<&str> = artifacts.iter().map(|a| s(a, "id")).collect();
    let listed: Vec<&str> = arr(manifest, "artifactIds")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    if ids != listed {
        bad(
            issues,
            "/artifactIds",
            "artifactIds differ from the artifacts' ids".into(),
        );
    }
    let paths: Vec<&str> = artifacts.iter().map(|a| s(a, "relativePath")).collect();
    for (i, p) in paths.iter().enumerate() {
        if let Err(e) = check_relative_path(p) {
            issues.push(Issue::at(
                e.code,
                MANIFEST,
                format!("/artifacts/{i}/relativePath"),
                e.message,
            ));
        }
    }
    for (i, e) in check_path_set(&paths) {
        issues.push(Issue::at(
            e.code,
            MANIFEST,
            format!("/artifacts/{i}/relativePath"),
            e.message,
        ));
    }
    if !artifacts.iter().any(|a| s(a, "kind") != "capture-report") {
        bad(
            issues,
            "/artifacts",
            "no evidence artifact besides the capture report".into(),
        );
    }
    paths
}

/// One transformation record per exported artifact and action, and none
/// for anything else.
fn transformation_rules(manifest: &Value, issues: &mut Vec<Issue>) {
    let ids: Vec<&str> = arr(manifest, "artifacts")
        .iter()
        .map(|a| s(a, "id"))
        .collect();
    let mut with_transformation = BTreeSet::new();
    let mut seen_pairs = BTreeSet::new();
    for (i, t) in arr(manifest, "transformations").iter().enumerate() {
        let id = s(t, "artifactId");
        if !ids.contains(&id) {
            bad(
                issues,
                &format!("/transformations/{i}/artifactId"),
                format!("names no exported artifact ({id:?})"),
            );
        }
        if !seen_pairs.insert((id, s(t, "action"))) {
            bad(
                issues,
                &format!("/transformations/{i}"),
                "a repeated (artifact, action) record".into(),
            );
        }
        with_transformation.insert(id);
    }
    for (i, id) in ids.iter().enumerate() {
        if !with_transformation.contains(id) {
            bad(
                issues,
                &format!("/artifacts/{i}"),
                "an exported artifact without a transformation record".into(),
            );
        }
    }
}

/// Exclusions name what was left out, never what was exported.
fn exclusion_rules(manifest: &Value, issues: &mut Vec<Issue>) {
    let artifacts = arr(manifest, "artifacts");
    for (i, x) in arr(manifest, "excludedArtifacts").iter().enumerate() {
        let id = s(x, "artifactId");
        if artifacts.iter().any(|a| s(a, "sourceArtifactId") == id) {
            bad(
                issues,
                &format!("/excludedArtifacts/{i}"),
                "both exported and excluded".into(),
            );
        }
    }
    for (i, x) in arr(manifest, "excludedRecords").iter().enumerate() {
        let id = s(x, "artifactId");
        let jsonl = artifacts
            .iter()
            .any(|a| s(a, "id") == id && s(a, "mediaType") == "application/x-ndjson");
        if !jsonl {
            bad(
                issues,
                &format!("/excludedRecords/{i}"),
                "a left-out record of no exported JSONL artifact".into(),
            );
        }
    }
    if !artifacts.iter().any(|a| s(a, "kind") != "capture-report") {
        bad(
            issues,
            "/artifacts",
            "no evidence artifact besides the capture report".into(),
        );
    }
}

/// The tree holds exactly the manifest and the listed files.
fn tree_matches_listing(files: &[String], paths: &[&str], issues: &mut Vec<Issue>) {
    // The tree holds exactly the manifest and the listed files.
    let expected: BTreeSet<&str> = paths.iter().copied().chain([MANIFEST]).collect();
    for f in files {
        if !expected.contains(f.as_str()) {
            issues.push(Issue::file(
                codes::validation::UNLISTED_FILE,
                f,
                format!("{f}: not listed in the manifest"),
            ));
        }
    }
    for p in paths {
        if !files.iter().any(|f| f == p) {
            issues.push(Issue::file(
                codes::validation::MISSING_FILE,
                p,
                format!("{p}: listed but absent"),
            ));
        }
    }
}

/// Reads every listed artifact through the final scan: allowed pair,
/// digest and size as listed.
fn scan_artifacts(
    tree: &BundleDir,
    artifacts: &[Value],
    scan: &mut FinalScan,
    issues: &mut Vec<Issue>,
) {
    for (i, a) in artifacts.iter().enumerate() {
        let rel = s(a, "relativePath");
        if !allowed(s(a, "kind"), s(a, "mediaType")) {
            bad(
                issues,
                &format!("/artifacts/{i}/mediaType"),
                "not an exportable (kind, media type) pair".into(),
            );
            continue;
        }
        let opened = tree.open_evidence(rel).map(|(f, _)| f);
        match opened.and_then(|f| scan.file(f, rel, s(a, "mediaType"))) {
            Ok((d, n)) => {
                if d != s(a, "digest") {
                    issues.push(Issue::file(
                        codes::integrity::DIGEST_MISMATCH,
                        rel,
                        format!("{rel}: digest differs from the manifest"),
                    ));
                }
                if Some(n) != a.get("sizeBytes").and_then(Value::as_u64) {
                    issues.push(Issue::file(
                        codes::integrity::SIZE_MISMATCH,
                        rel,
                        format!("{rel}: size differs from the manifest"),
                    ));
                }
            }
            Err(i) => issues.push(i),
        }
        scan.report.artifacts += 1;
    }
}

/// References between the exported contract documents.
fn reference_rules(
    tree: &BundleDir,
    manifest: &Value,
    artifacts: &[Value],
    issues: &mut Vec<Issue>,
) {
    let bundle_id = s(manifest, "bundleId");
    let transformed = |id: &str| {
        arr(manifest, "transformations")
            .iter()
            .any(|t| s(t, "artifactId") == id)
    };
    // References between the exported contract documents.
    for a in artifacts {
        let rel = s(a, "relativePath");
        let kind = s(a, "kind");
        if !matches!(kind, "verifier" | "capture-report") {
            continue;
        }
        let Ok(bytes) = read_document(tree, rel, Limits::EVIDENCE.max_bytes) else {
            continue;
        };
        let Ok(doc) = json::parse(&bytes, &Limits::EVIDENCE) else {
            continue;
        };
        if s(&doc, "bundleId") != bundle_id {
            issues.push(Issue::at(
                codes::validation::REFERENCE,
                rel,
                "/bundleId",
                "differs from the export's bundleId",
            ));
        }
        if kind == "verifier" {
            if let Some(ws) = doc.get("workspace") {
                // The verifier judged the source's workspace: its digest is
                // the exported one, or (as the peer system writes it) the
                // `sourceDigest` of a workspace the manifest records as
                // transformed.
                let ok = artifacts.iter().any(|x| {
                    s(x, "id") == s(ws, "artifactId")
                        && (s(x, "digest") == s(ws, "digest")
                            || (s(x, "sourceDigest") == s(ws, "digest") && transformed(s(x, "id"))))
                });
                if !ok {
                    issues.push(Issue::at(
                        codes::validation::REFERENCE,
                        rel,
                        "/workspace",
                        "names no exported workspace with that digest",
                    ));
                }
            }
            for (j, dg) in arr(&doc, "diagnostics").iter().enumerate() {
                let ok = artifacts.iter().any(|x| {
                    s(x, "relativePath") == s(dg, "locator") && s(x, "digest") == s(dg, "digest")
                });
                if !ok {
                    issues.push(Issue::at(
                        codes::validation::REFERENCE,
                        rel,
                        format!("/diagnostics/{j}"),
                        "names no exported diagnostic with that digest",
                    ));
                }
            }
        }
    }
}

/// Appends one reference token to a JSON pointer.
#[inline(always)]
fn push_token(pointer: &mut String, token: &str) {
    pointer.push('/');
    if token.contains(['~', '/']) {
        pointer.push_str(&escape_pointer_token(token));
    } else {
        pointer.push_str(token);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The codes the final scan gives a JSONL artifact holding `lines`.
    fn jsonl_codes(exp: &Expectations<'_>, lines: &[&str]) -> Vec<(&'static str, String)> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let mut scan = FinalScan::new(exp).unwrap();
        scan.file(
            std::fs::File::open(&path).unwrap(),
            "session.jsonl",
            "application/x-ndjson",
        )
        .unwrap();
        scan.findings
            .iter()
            .map(|i| (i.code, i.pointer.clone().unwrap_or_default()))
            .collect()
    }

    /// No policy, placeholders, identities or users: the rules alone.
    fn nothing_expected() -> Expectations<'static> {
        Expectations {
            policy: None,
            issued: None,
            identities: vec![],
            users: vec![],
        }
    }

    #[test]
    fn a_secret_spread_over_a_streams_records_is_found_by_the_final_scan() {
        let token = "ghp_7Rk2vQ9mXz4LpW8sTn3YbH6cJd1FgA5eUo0i";
        let delta = |t: &str| {
            format!(
                r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"{t}"}}}}"#
            )
        };
        let lines = [delta("token: "), delta(&token[..10]), delta(&token[10..])];
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        assert_eq!(
            jsonl_codes(&nothing_expected(), &refs),
            [("validation.secret_in_export", "/1/delta/text".to_string())]
        );
        // Once the writer cut it, nothing is left to find.
        let cut = [
            delta("token: [REDACTED_SECRET:github-pat:0123abcd]"),
            delta(""),
            delta(""),
        ];
        let refs: Vec<&str> = cut.iter().map(String::as_str).collect();
        let found = jsonl_codes(&nothing_expected(), &refs);
        assert!(
            !found
                .iter()
                .any(|(c, _)| *c == "validation.secret_in_export"),
            "{found:?}"
        );
    }

    #[test]
    fn a_dependency_map_keeps_its_versions_and_a_secret_field_does_not() {
        let exp = nothing_expected();
        let got = jsonl_codes(
            &exp,
            &[
                r#"{"dependencies":{"jsonwebtoken":"^9.0.0","@octokit/auth-token":{"version":"4.0.0"}}}"#,
                r#"{"apiToken":"Zq8vLm2x"}"#,
            ],
        );
        assert_eq!(
            got,
            [(
                "validation.secret_field_in_export",
                "/1/apiToken".to_string()
            )]
        );
    }

    #[test]
    fn a_value_named_by_a_secret_name_member_must_be_a_placeholder() {
        let exp = nothing_expected();
        let got = jsonl_codes(
            &exp,
            &[
                r#"{"env":[{"name":"LOG_LEVEL","value":"debug"},{"name":"DB_PASSWORD","value":"[REDACTED_SECRET:secret-field:0a1b2c3d]"}]}"#,
                r#"{"env":[{"name":"DB_PASSWORD","value":"Zq8vLm"}]}"#,
                r#"{"key":"apiToken","value":{"nested":1},"enabled":true}"#,
                r#"{"key":"apiToken","value":null}"#,
                r#"{"Parameter":{"Name":"/prod/db/password","Type":"SecureString","Value":"hunter2x"}}"#,
                r#"{"Parameters":[{"ParameterKey":"DbPassword","ParameterValue":"hunter2x"}]}"#,
                r#"{"Tags":[{"Key":"owner","Value":"ci"}],"values":{"name":"DB_PASSWORD","value":"hunter2x","defaultValue":"[REDACTED_SECRET:secret-field:0a1b2c3d]"}}"#,
            ],
        );
        let code = "validation.secret_field_in_export";
        assert_eq!(
            got,
            [
                (code, "/1/env/0/value".to_string()),
                (code, "/2/value".to_string()),
                (code, "/4/Parameter/Value".to_string()),
                (code, "/5/Parameters/0/ParameterValue".to_string()),
                (code, "/6/values/value".to_string()),
            ]
        );
    }

    #[test]
    fn a_kubernetes_secrets_data_entries_must_be_placeholders_whatever_their_names() {
        let exp = nothing_expected();
        let got = jsonl_codes(
            &exp,
            &[
                r#"{"kind":"Secret","data":{"tls.key":"[REDACTED_SECRET:secret-field:0a1b2c3d]","ca":null}}"#,
                r#"{"data":{"extra":"UyFCXCpkJHpEc2I9"},"kind":"Secret"}"#,
                r#"{"kind":"ConfigMap","data":{"extra":"UyFCXCpkJHpEc2I9"}}"#,
                r#"{"kind":"Secret","stringData":{"a/b":{"deep":"x"}}}"#,
                r#"{"kind":"Secret","data":"c2VjcmV0LXZhbHVl"}"#,
            ],
        );
        let code = "validation.secret_field_in_export";
        assert_eq!(
            got,
            [
                (code, "/1/data/extra".to_string()),
                (code, "/3/stringData/a~1b".to_string()),
                (code, "/4/data".to_string()),
            ]
        );
    }

    #[test]
    fn a_kubernetes_secrets_data_is_found_across_the_lines_of_text_and_of_a_patch() {
        let exp = nothing_expected();
        let dir = tempfile::tempdir().unwrap();
        let codes = |name: &str, media: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            let mut scan = FinalScan::new(&exp).unwrap();
            scan.file(std::fs::File::open(&path).unwrap(), name, media)
                .unwrap();
            scan.findings
                .iter()
                .map(|i| (i.code, i.pointer.clone().unwrap_or_default()))
                .collect::<Vec<_>>()
        };
        let code = "validation.secret_in_export";
        let yaml = "apiVersion: v1\ndata:\n  bundle: UyFCXCpkJHpEc2I9\n  extra: c2VjcmV0LXZhbHVl\nkind: Secret\n";
        assert_eq!(
            codes("s.yaml", "text/plain", yaml),
            [(code, "/2".to_string()), (code, "/3".to_string())]
        );
        let patch =
            "--- /dev/null\n+++ b/s.yaml\n+kind: Secret\n+data:\n+  extra: UyFCXCpkJHpEc2I9\n";
        assert_eq!(
            codes("w.patch", "text/x-diff", patch),
            [(code, "/4".to_string())]
        );
        assert_eq!(codes("w.txt", "text/plain", patch), []);
        let cm = "apiVersion: v1\ndata:\n  extra: UyFCXCpkJHpEc2I9\nkind: ConfigMap\n";
        assert_eq!(codes("c.yaml", "text/plain", cm), []);
    }

    #[test]
    fn original_identities_and_user_names_are_found_in_every_string_however_escaped() {
        let exp = Expectations {
            policy: None,
            issued: None,
            identities: vec!["run_8f14e45fceea167a".into()],
            users: vec!["dorothea".into()],
        };
        let clean = r#"{"id":"evt_0","text":"nothing here","n":1}"#;
        assert_eq!(jsonl_codes(&exp, &[clean]), []);
        let got = jsonl_codes(
            &exp,
            &[
                clean,
                r#"{"id":"evt_1","text":"resumed run_8f14e45fceea167a"}"#,
                // The same id with its first letter escaped: the raw line
                // does not hold it, the string does.
                r#"{"id":"evt_2","text":"resumed \u0072un_8f14e45fceea167a"}"#,
                r#"{"id":"evt_3","by":{"who":"dorothea"}}"#,
                // In a key.
                r#"{"run_8f14e45fceea167a":true}"#,
            ],
        );
        let id = "validation.identity_in_export";
        assert_eq!(
            got,
            [
                (id, "/1/text".to_string()),
                (id, "/2/text".to_string()),
                ("validation.local_user_in_export", "/3/by/who".to_string()),
                // A key that is a finding is shown masked.
                (
                    id,
                    format!("/4/{}", crate::shown::masked_token("run_8f14e45fceea167a"))
                ),
            ]
        );
    }
}
