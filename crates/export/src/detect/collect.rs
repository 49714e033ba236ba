//! The first pass: everything that must not leave, collected from every
//! artifact before any is written, so a secret found in one artifact is
//! removed from all of them.

use std::collections::BTreeMap;

use coffer_base::json::Node;
use serde_json::Value;

use crate::detect::memo::ShortMemo;
use crate::detect::names::{classify, normalize, FieldClass, THINKING_RECORD};
use crate::detect::rules::is_placeholder;
use crate::detect::{CleanCache, Detector, Finding};
use crate::rewrite::identity::{Identities, Scope};
use crate::rewrite::local_paths::LocalNames;

/// Rule id of a secret-named field's value.
pub const FIELD_RULE: &str = "secret-field";
/// Most distinct secrets one export collects (bounds the literal matcher).
pub const MAX_SECRETS: usize = 1_000_000;
/// Most identities swept as literals (per-record ids beyond it are still
/// rewritten where they stand).
pub const MAX_SWEPT_IDS: usize = 100_000;
/// How deep JSON nested inside strings is followed.
pub const MAX_NESTED_JSON_DEPTH: usize = 3;
/// Shortest part of a secret on one line that is swept as a part of its
/// own ([`Collector::line_parts`]): shorter parts are words and brackets.
pub const MIN_LINE_PART: usize = 8;
/// Largest string parsed as nested JSON.
pub const MAX_NESTED_JSON_BYTES: usize = 8 << 20;

/// Global correlation fields and the namespace of their pseudonyms.
pub fn correlation_namespace(normalized: &str) -> Option<&'static str> {
    Some(match normalized {
        "bundleid" => "bundle",
        "runid" => "run",
        "attemptid" => "attempt",
        "sessionid" => "session",
        "traceid" => "trace",
        "conversationid" => "conversation",
        _ => return None,
    })
}

/// Widens `a..b` to character boundaries of `s`.
pub fn char_span(s: &str, mut a: usize, mut b: usize) -> (usize, usize) {
    b = b.min(s.len());
    a = a.min(b);
    while !s.is_char_boundary(a) {
        a -= 1;
    }
    while !s.is_char_boundary(b) {
        b += 1;
    }
    (a, b)
}

/// What the first pass found.
#[derive(Debug, Default)]
pub struct Collected {
    /// Secret value → the rule that found it first.
    pub secrets: BTreeMap<String, String>,
    /// User and host names.
    pub names: LocalNames,
    /// Identities.
    pub ids: Identities,
    /// Secrets dropped because [`MAX_SECRETS`] was reached (an error later).
    pub overflow: bool,
}

/// Walks artifacts, filling a [`Collected`].
pub struct Collector<'a> {
    det: &'a Detector,
    allow: &'a [String],
    roots: &'a [String],
    max_string: usize,
    /// The findings so far.
    pub found: Collected,
    /// Whether anything since the last reset could make the second pass
    /// change a record (a finding, a path, a name, a typed field, a long
    /// string). A record left clean is copied as it is unless one of the
    /// collected literals occurs in its raw bytes.
    pub dirty: bool,
    /// Whether a per-record id (`evt_…`, `toolu_…`) stands as the value of
    /// a plain field of the top-level record: the only change such a
    /// record needs, if it is not dirty, is that id's pseudonym in place.
    pub record_ids: bool,
    scratch: Vec<Finding>,
    clean: CleanCache,
    /// Each key's [`classify`], remembered.
    classes: ShortMemo<FieldClass>,
}

impl<'a> Collector<'a> {
    /// A collector using `det`; `allow` are innocent names (normalized),
    /// `roots` the policy's local roots, `max_string` its string limit.
    pub fn new(
        det: &'a Detector,
        allow: &'a [String],
        roots: &'a [String],
        max_string: usize,
    ) -> Self {
        Collector {
            det,
            allow,
            roots,
            max_string,
            found: Collected::default(),
            dirty: false,
            record_ids: false,
            scratch: Vec::new(),
            clean: CleanCache::default(),
            classes: ShortMemo::default(),
        }
    }

    /// The detector it collects with.
    pub fn detector(&self) -> &'a Detector {
        self.det
    }

    /// Collects a secret found outside one string (across a stream's
    /// pieces), under `rule`.
    pub fn found_elsewhere(&mut self, value: &str, rule: &str) {
        self.secret(value, rule);
    }

    /// A collector with the same detector and settings and nothing found
    /// yet, for another thread.
    pub fn fork(&self) -> Collector<'a> {
        Collector::new(self.det, self.allow, self.roots, self.max_string)
    }

    /// Takes findings collected elsewhere, as if they had been found here
    /// next: the first rule to find a value stays its rule, and the limits
    /// apply as they do here.
    pub fn absorb(&mut self, other: Collected) {
        for (value, rule) in other.secrets {
            self.secret(&value, &rule);
        }
        self.found.overflow |= other.overflow;
        self.found.names.absorb(other.names);
        for (id, namespace) in other.ids.iter() {
            self.identity(namespace, id);
        }
    }

    fn secret(&mut self, value: &str, rule: &str) {
        if self.found.secrets.len() >= MAX_SECRETS {
            self.found.overflow = true;
            return;
        }
        if !self.found.secrets.contains_key(value) {
            self.found
                .secrets
                .insert(value.to_string(), rule.to_string());
            if rule == crate::detect::kube::RULE {
                self.decoded_secret(value);
            }
        }
    }

    /// Each line's part of a secret found across lines of one string (a
    /// wrap or a soft break a view took out, rows of a dump): the whole
    /// has whitespace in it, so it is replaced only where a rule finds it
    /// again, and once one line's part is replaced (it is a value on its
    /// own), the break that joined them is gone with it; the others would
    /// be left. So each part of [`MIN_LINE_PART`] bytes or more goes
    /// everywhere, as a dump's rows in a text artifact do (a key between
    /// armour lines goes whole by its rule, its armour lines no secret).
    fn line_parts(&mut self, value: &str) {
        if !value.contains('\n') {
            return;
        }
        for part in value.split('\n') {
            let part = part.trim_end_matches('\r').trim();
            if part.len() >= MIN_LINE_PART {
                self.secret(part, crate::detect::views::ROW_RULE);
            }
        }
    }

    /// What a Secret's base64 data value encodes goes too: an agent that
    /// decodes it (`| base64 -d`) prints it bare.
    fn decoded_secret(&mut self, encoded: &str) {
        if let Some(plain) = crate::detect::kube::decoded_credential(encoded) {
            self.secret(&plain, crate::detect::kube::RULE);
        }
    }

    /// Consecutive lines of a text artifact (one batch; `diff` for a
    /// patch), after each was read on its own: what only shows across
    /// lines (see [`crate::detect::across`]).
    pub fn text_lines<'l>(&mut self, lines: impl Iterator<Item = &'l [u8]> + Clone, diff: bool) {
        for f in crate::detect::across::in_lines(lines.clone(), diff) {
            if let Ok(v) = std::str::from_utf8(&f.line[f.span]) {
                self.secret(v, f.rule);
            }
        }
        // A hexdump's rows: each one a secret spans is swept (a row is a
        // line of 16 bytes and more, never a word).
        let all: Vec<&[u8]> = lines.clone().collect();
        for (i, span, _) in self.det.find_across_rows(lines, diff) {
            if let Ok(v) = std::str::from_utf8(&all[i][span]) {
                self.secret(v, crate::detect::views::ROW_RULE);
            }
        }
    }

    /// An identity from a typed field.
    pub fn identity(&mut self, namespace: &str, id: &str) {
        if self.found.ids.len() < MAX_SWEPT_IDS {
            self.found.ids.add(namespace, id);
        }
    }

    /// One string leaf (or text line).
    pub fn string(&mut self, s: &str, depth: usize) {
        if self.clean.contains(s) {
            return;
        }
        let (dirty, secrets) = (self.dirty, self.found.secrets.len());
        self.dirty = false;
        self.scan(s, depth);
        if !self.dirty && self.found.secrets.len() == secrets {
            self.clean.insert(s, ());
        }
        self.dirty |= dirty;
    }

    /// A text line, after [`Collector::string`] saw it: what it holds
    /// only with the line before it (see [`crate::detect::continued`]).
    pub fn continued(&mut self, prev: &[u8], line: &str) {
        self.scratch.clear();
        self.det.find_continued(prev, line, &mut self.scratch);
        self.collect_findings(line);
    }

    /// Collects the secrets `self.scratch` holds, found in `s`.
    fn collect_findings(&mut self, s: &str) {
        let found = std::mem::take(&mut self.scratch);
        for f in &found {
            let (a, b) = char_span(s, f.start, f.end);
            self.secret(&s[a..b], &f.rule);
            // (The line end first: most findings have none, and the rule's
            // traits are found by a walk over the rules.)
            if s[a..b].contains('\n') && !self.det.armored(&f.rule) {
                self.line_parts(&s[a..b]);
            }
        }
        self.dirty |= !found.is_empty();
        self.scratch = found;
    }

    fn scan(&mut self, s: &str, depth: usize) {
        self.scratch.clear();
        self.det.find(s.as_bytes(), &mut self.scratch);
        self.collect_findings(s);
        self.dirty |= self.found.names.collect(s);
        self.dirty |= s.len() > self.max_string
            || !crate::rewrite::local_paths::local_paths(s).is_empty()
            || self
                .roots
                .iter()
                .any(|r| crate::rewrite::local_paths::find_root(s.as_bytes(), r, 0).is_some());
        let t = s.trim_start();
        if depth < MAX_NESTED_JSON_DEPTH
            && s.len() <= MAX_NESTED_JSON_BYTES
            && (t.starts_with('{') || t.starts_with('['))
        {
            if let Ok(v) = serde_json::from_str::<Value>(t.trim_end()) {
                self.value(&Node::from(&v), depth + 1);
            }
        }
    }

    /// Every string below a secret-named field is a secret, but for one
    /// the writer keeps as any string, which is read as one (a sentence
    /// may hold a token, or a forged placeholder).
    fn secret_value(&mut self, v: &Node<'_>) {
        match v {
            Node::String(s) if crate::detect::rules::kept_secret_value(s) => self.string(s, 0),
            Node::String(s) if !is_placeholder(s.as_bytes()) && s.len() >= 4 => {
                self.secret(s, FIELD_RULE)
            }
            Node::Array(a) => a.iter().for_each(|x| self.secret_value(x)),
            Node::Object(m) => m.iter().for_each(|(_, x)| self.secret_value(x)),
            _ => {}
        }
    }

    /// A Kubernetes Secret's data: each entry's value is a secret; its
    /// name is read as any key.
    fn secret_entries(&mut self, v: &Node<'_>, depth: usize, base64: bool) {
        match v {
            Node::Object(m) => {
                for (k, x) in m {
                    self.string(k, depth);
                    self.secret_value(x);
                    if let (true, Some(s)) = (base64, x.as_str()) {
                        self.decoded_secret(s);
                    }
                }
            }
            _ => self.secret_value(v),
        }
    }

    /// One JSON value (a record, a document, or JSON nested in a string).
    pub fn value(&mut self, v: &Node<'_>, depth: usize) {
        match v {
            Node::String(s) => self.string(s, depth),
            Node::Array(a) => {
                // [103, 104, 112, …] or ["g", "h", "p", …]: read as text.
                if let Some((_, text)) = crate::detect::spelled::of_nodes(a) {
                    self.string(&text, depth);
                }
                // ["OPENAI_API_KEY", "<value>"] pairs (env lists, argv).
                if let Some(val) = crate::detect::names::secret_pair(a, self.allow) {
                    self.dirty = true;
                    self.secret_value(val);
                }
                a.iter().for_each(|x| self.value(x, depth))
            }
            Node::Object(m) => {
                let thinking = v.get("type").and_then(Node::as_str) == Some(THINKING_RECORD);
                self.dirty |=
                    thinking || v.get("schema").and_then(Node::as_str) == Some("oneshot-v1");
                // {"name": "GITHUB_TOKEN", "value": "..."} pairs.
                let pair = crate::detect::names::pair_value_member(
                    m.iter().map(|(k, x)| (k.as_ref(), x)),
                    self.allow,
                );
                if let Some(val) = pair.and_then(|k| v.get(k)) {
                    self.dirty = true;
                    self.secret_value(val);
                }
                let jwk = crate::detect::jwk::is_private_jwk(|k| v.get(k));
                for (k, val) in m {
                    let k: &str = k;
                    if thinking && !crate::detect::names::THINKING_KEEP.contains(&k) {
                        continue;
                    }
                    self.string(k, depth);
                    if jwk && crate::detect::jwk::private_member(k) {
                        self.dirty = true;
                        self.secret_value(val);
                        continue;
                    }
                    if let Some(base64) = crate::detect::kube::data_member(k.as_bytes())
                        .filter(|_| crate::detect::kube::is_secret_object(|k| v.get(k)))
                    {
                        self.dirty = true;
                        self.secret_entries(val, depth, base64);
                        continue;
                    }
                    let allow = self.allow;
                    let class = self.classes.get_or(k, |k| classify(k, allow));
                    self.dirty |= class != FieldClass::Plain;
                    self.member(k, val, depth, class);
                }
            }
            _ => {}
        }
    }
    /// A member's value, by the class of its key.
    fn member(&mut self, k: &str, val: &Node<'_>, depth: usize, class: FieldClass) {
        match class {
            FieldClass::Hidden | FieldClass::RawBody => {}
            FieldClass::Secret => self.secret_value(val),
            FieldClass::User => {
                if let Some(u) = val.as_str() {
                    self.found.names.vouch(u);
                }
                self.value(val, depth);
            }
            // A numeric id is the id its digits spell.
            FieldClass::Identity if matches!(val, Node::Number(_)) => {
                if let (Some(ns), Node::Number(n)) = (correlation_namespace(&normalize(k)), val) {
                    self.identity(ns, &n.to_string());
                }
            }
            FieldClass::Identity => {
                if let (Some(ns), Some(id)) = (correlation_namespace(&normalize(k)), val.as_str()) {
                    let shaped = crate::rewrite::identity::shaped_id(id).is_some();
                    if shaped || !self.det.holds_credential(id) {
                        self.identity(ns, id);
                    }
                }
                self.value(val, depth);
            }
            FieldClass::Plain => {
                // An id by its shape (`toolu_…`, `wrkspc_…`)
                // is an identity in any field.
                if let Some(id) = val.as_str() {
                    match crate::rewrite::identity::shaped_id(id) {
                        Some((ns, Scope::Correlation)) => {
                            self.dirty = true;
                            self.identity(ns, id);
                        }
                        Some((_, Scope::Record)) if depth == 0 => self.record_ids = true,
                        Some((_, Scope::Record)) => self.dirty = true,
                        None => {}
                    }
                }
                self.value(val, depth)
            }
        }
    }
}
