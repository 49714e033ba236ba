//! The second pass: rewriting records and lines.
//!
//! JSON is rewritten on parsed structure: hidden reasoning and raw API
//! bodies are removed, secret-named fields replaced, user fields numbered,
//! identity fields rewritten, and every other string (key names included)
//! goes through [`Scrubber::string`]: local roots and paths first (a path
//! that holds a secret or an id goes as a whole), then the literal sweep,
//! then every rule again over every decoded view as a safety net, then the
//! string limit. Text is rewritten line by line; a private key block that
//! spans lines is replaced line by line until its END marker.
//!
//! The rewrite stage: [`Scrubber`] and what it applies (identities,
//! literals, local paths, visible cuts).

pub(crate) mod cut;
pub(crate) mod identity;
pub(crate) mod literals;
pub(crate) mod local_paths;

use coffer_base::codes;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::AddAssign;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::detect::collect::{char_span, Collected, FIELD_RULE};
use crate::detect::names::{classify, FieldClass, THINKING_KEEP, THINKING_RECORD};
use crate::detect::Detector;
use crate::error::{ExportError, Result};
use crate::key::Keys;
use crate::rewrite::identity::{pseudonym, IdMap, RECORD_NAMESPACE};
use crate::rewrite::literals::{LiteralKind, Literals, LiteralsBuilder};
use crate::rewrite::local_paths::LOCAL_HOST;

/// How often a string is read again after its findings were replaced:
/// the first read, and two more for what a replacement exposes (a user
/// beside a password it replaced). The readback judges what is left.
const RESCANS: usize = 3;

/// Transformations made in one artifact (the export manifest's counts).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Fields removed (hidden reasoning, raw bodies).
    pub removed_field: u64,
    /// Secrets replaced.
    pub redacted_secret: u64,
    /// Paths, user and host names replaced.
    pub redacted_local: u64,
    /// Identities rewritten.
    pub rewritten_correlation: u64,
    /// Strings cut to the limit.
    pub truncated: u64,
    /// Records whose serialized form changed.
    pub canonicalized: u64,
}

impl AddAssign for Counts {
    fn add_assign(&mut self, o: Counts) {
        self.removed_field += o.removed_field;
        self.redacted_secret += o.redacted_secret;
        self.redacted_local += o.redacted_local;
        self.rewritten_correlation += o.rewritten_correlation;
        self.truncated += o.truncated;
        self.canonicalized += o.canonicalized;
    }
}

/// Two keys of one object that scrubbing made equal: the export stops
/// rather than drop one.
fn key_collision() -> ExportError {
    ExportError::invalid(
        codes::validation::KEY_COLLISION,
        "",
        "two keys of one object became equal after scrubbing",
    )
}

/// Whether a collected value is swept across the whole export (with its
/// encoded forms) or replaced only where a rule finds it. Swept: policy
/// values, forged placeholders, what shows only across lines, anything a
/// shape rule found (a token is a token wherever it stands), and
/// credential-like values: at least 8 bytes, no whitespace, two or more
/// character classes, and at least 3 bits of entropy per character (less
/// for short values). A word, a name or a short value found next to a
/// secret-sounding label would otherwise be replaced in every sentence
/// and line of code that uses it.
fn swept_everywhere(det: &Detector, rule: &str, value: &str) -> bool {
    if [
        crate::detect::FORGERY_RULE,
        crate::detect::SENSITIVE_RULE,
        crate::detect::views::ROW_RULE,
    ]
    .contains(&rule)
        || crate::detect::across::RULES.contains(&rule)
    {
        return true;
    }
    let shape = det
        .rules()
        .rules()
        .iter()
        .any(|r| r.id == rule && r.check.by_shape());
    shape || crate::detect::rules::credential_like(value.as_bytes())
}

/// The placeholder of a secret.
pub fn secret_placeholder(rule: &str, fingerprint: &str) -> String {
    format!("[REDACTED_SECRET:{rule}:{fingerprint}]")
}

/// Rewrites strings, records and lines of one export.
///
/// What pass 1 collected is shared and never changes; what rewriting
/// learns (the placeholders it issued, the fields it removed) is each
/// scrubber's own, so [`Scrubber::fork`]s can rewrite batches on other
/// threads and be [`Scrubber::absorb`]ed after.
pub struct Scrubber<'a> {
    sweep: Arc<Sweep<'a>>,
    issued: BTreeSet<String>,
    /// Names of the fields removed since the last `take_removed`.
    removed: BTreeMap<String, u64>,
}

/// The replacements of one export, fixed once pass 1 has run.
struct Sweep<'a> {
    det: &'a Detector,
    keys: Keys,
    lits: Literals,
    /// Collected values too weak to sweep: replaced where a rule finds them.
    local_only: Option<aho_corasick::AhoCorasick>,
    ids: IdMap,
    users: BTreeMap<String, usize>,
    /// The users swept as words everywhere
    /// ([`crate::rewrite::local_paths::LocalNames::swept`]).
    swept: BTreeSet<String>,
    roots: Vec<String>,
    /// User names with spaces: a home written through one is matched whole.
    spaced: Vec<String>,
    allow: Vec<String>,
    max_string: usize,
}

/// Distinct removed field names kept for the redaction report; the rest
/// are counted under [`OTHER_FIELDS`].
pub const MAX_REMOVED_NAMES: usize = 256;
/// The name that counts removed fields beyond [`MAX_REMOVED_NAMES`].
pub const OTHER_FIELDS: &str = "(other fields)";

/// State carried from line to line of a text artifact.
#[derive(Debug, Default)]
pub struct TextState {
    in_private_key: bool,
    /// The last line before that is not blank, when it is at most
    /// [`crate::detect::continued::MAX_OPENING_LINE`] bytes.
    prev: Option<Vec<u8>>,
}

/// The local user names, numbered in the export key's order, and those
/// swept everywhere; their literals (and the host names') go into `b`.
fn local_names(
    b: &mut LiteralsBuilder,
    keys: &Keys,
    names: &local_paths::LocalNames,
) -> (BTreeMap<String, usize>, BTreeSet<String>) {
    let mut ordered: Vec<&String> = names.users.iter().collect();
    ordered.sort_by_key(|u| keys.user_order(u));
    let users: BTreeMap<String, usize> = ordered
        .iter()
        .enumerate()
        .map(|(i, u)| ((*u).clone(), i + 1))
        .collect();
    let swept: BTreeSet<String> = users.keys().filter(|u| names.swept(u)).cloned().collect();
    for (u, n) in &users {
        let placeholder = format!("[LOCAL_USER:{n}]");
        if swept.contains(u) {
            b.add_with_variants(u, &placeholder, LiteralKind::LocalName);
        } else {
            // Too common a word to sweep, or only a few home paths
            // name it: replaced where a marker says it names a local
            // user.
            for (form, replacement) in local_paths::marked_forms(u, &placeholder, &names.hosts) {
                b.add_with_variants(&form, &replacement, LiteralKind::LocalName);
            }
        }
    }
    for h in &names.hosts {
        if local_paths::sweepable_name(h) {
            b.add_with_variants(h, LOCAL_HOST, LiteralKind::LocalName);
        }
    }
    (users, swept)
}

impl<'a> Scrubber<'a> {
    /// Builds the sweep from what the first pass collected.
    pub fn new(
        det: &'a Detector,
        keys: Keys,
        collected: Collected,
        sensitive_values: &[String],
        roots: &[String],
        allow: &[String],
        max_string: usize,
    ) -> Result<Scrubber<'a>> {
        if collected.overflow {
            return Err(ExportError::blocked(
                codes::limit::SECRETS,
                "",
                format!(
                    "more than {} distinct secrets",
                    crate::detect::collect::MAX_SECRETS
                ),
            ));
        }
        let ids = collected.ids.finish(&keys)?;
        let mut b = LiteralsBuilder::default();
        let mut issued = BTreeSet::new();
        for v in sensitive_values {
            let p = secret_placeholder(
                crate::detect::SENSITIVE_RULE,
                &keys.fingerprint(v.as_bytes()),
            );
            b.add_with_variants(v, &p, LiteralKind::Secret);
            issued.insert(p);
        }
        let mut local_only = Vec::new();
        for (v, rule) in &collected.secrets {
            let p = secret_placeholder(rule, &keys.fingerprint(v.as_bytes()));
            if swept_everywhere(det, rule, v) {
                b.add_with_variants(v, &p, LiteralKind::Secret);
            } else {
                local_only.push(v.as_str());
            }
            issued.insert(p);
        }
        // A weak value (`AWS_SECRET_ACCESS_KEY=bench`, `password: hunter`)
        // goes only where its rule finds it again: strings holding it get
        // the detector pass, the rest of the export keeps the word.
        let local_only =
            (!local_only.is_empty()).then(|| crate::rewrite::literals::automaton(&local_only));
        ids.add_literals(&mut b);
        let (users, swept) = local_names(&mut b, &keys, &collected.names);
        let spaced = users.keys().filter(|u| u.contains(' ')).cloned().collect();
        Ok(Scrubber {
            sweep: Arc::new(Sweep {
                det,
                keys,
                local_only,
                lits: b.build(),
                ids,
                users,
                swept,
                roots: roots.to_vec(),
                spaced,
                allow: allow.to_vec(),
                max_string,
            }),
            issued,
            removed: BTreeMap::new(),
        })
    }

    /// A scrubber with the same sweep and nothing issued or removed yet.
    pub fn fork(&self) -> Scrubber<'a> {
        Scrubber {
            sweep: Arc::clone(&self.sweep),
            issued: BTreeSet::new(),
            removed: BTreeMap::new(),
        }
    }

    /// Takes in what a fork issued and removed.
    pub fn absorb(&mut self, fork: Scrubber<'a>) {
        self.issued.extend(fork.issued);
        self.absorb_removed(fork.removed);
    }

    /// The fields a fork removed since the last call, unscrubbed: a
    /// two-core pass hands them over batch by batch, so the report's cap
    /// on distinct names applies in line order whichever thread stepped a
    /// batch.
    pub fn take_removed_raw(&mut self) -> BTreeMap<String, u64> {
        std::mem::take(&mut self.removed)
    }

    /// Takes in what [`Scrubber::take_removed_raw`] handed over.
    pub fn absorb_removed(&mut self, removed: BTreeMap<String, u64>) {
        for (name, n) in removed {
            self.note_removed(&name, n);
        }
    }

    /// Whether any collected literal (or root) occurs in raw bytes.
    pub fn touches(&self, raw: &[u8]) -> bool {
        self.sweep.lits.is_match(raw)
            || self
                .sweep
                .roots
                .iter()
                .any(|r| crate::rewrite::local_paths::find_root(raw, r, 0).is_some())
    }

    /// Every secret placeholder this export may contain.
    pub fn issued(&self) -> &BTreeSet<String> {
        &self.issued
    }

    /// The identity map.
    pub fn ids(&self) -> &IdMap {
        &self.sweep.ids
    }

    /// User names swept across the whole export (for the final scan, which
    /// looks for them everywhere; names too common or too weakly shown to
    /// be the local user's to sweep are not).
    pub fn users(&self) -> impl Iterator<Item = &str> {
        self.sweep.swept.iter().map(String::as_str)
    }

    /// The pseudonym of an identity (collected, or per-record).
    pub fn identity(&self, id: &str) -> String {
        match self.sweep.ids.get(id) {
            Some(p) => p.to_string(),
            None => pseudonym(&self.sweep.keys, RECORD_NAMESPACE, id),
        }
    }

    /// The placeholder of `secret` found by `rule` (issued by this export).
    pub fn secret_placeholder(&mut self, rule: &str, secret: &str) -> String {
        self.placeholder(rule, secret.as_bytes())
    }

    fn placeholder(&mut self, rule: &str, secret: &[u8]) -> String {
        let p = secret_placeholder(rule, &self.sweep.keys.fingerprint(secret));
        self.issued.insert(p.clone());
        p
    }

    /// Scrubs one string (no string limit).
    pub fn string(&mut self, s: &str, c: &mut Counts) -> String {
        let (mut text, n) = local_paths::rewrite(s, &self.sweep.roots, &self.sweep.spaced);
        c.redacted_local += n;
        let mut changed = n > 0;
        if let Some((t, r)) = self.sweep.lits.replace(&text) {
            text = t;
            c.redacted_secret += r.secrets;
            c.rewritten_correlation += r.identities;
            c.redacted_local += r.names;
            changed = true;
        }
        // The first pass ran the same detector over this very string: had it
        // found anything swept, a literal would have changed it. Only a
        // changed string can hold something new (a secret split by a path,
        // say), or one holding a value found but not swept.
        if !changed
            && !self
                .sweep
                .local_only
                .as_ref()
                .is_some_and(|ac| ac.is_match(&text))
        {
            return text;
        }
        // Safety net: anything a rule still finds (in any view) goes. A
        // replacement can make a finding the final scan would make (a
        // password replaced leaves its user paired with a placeholder), so
        // the text is read again after one, as the readback will read it.
        for _ in 0..RESCANS {
            match self.replace_found(&text, c) {
                Some(t) => text = t,
                None => break,
            }
        }
        text
    }

    /// `text` with what the detector finds in it replaced, or `None` when
    /// it finds nothing.
    fn replace_found(&mut self, text: &str, c: &mut Counts) -> Option<String> {
        let mut found = Vec::new();
        self.sweep.det.find(text.as_bytes(), &mut found);
        if found.is_empty() {
            return None;
        }
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for f in found {
            let (a, b) = char_span(text, f.start, f.end);
            if a < last {
                continue;
            }
            out.push_str(&text[last..a]);
            let p = self.placeholder(&f.rule, &text.as_bytes()[a..b]);
            out.push_str(&p);
            c.redacted_secret += 1;
            last = b;
        }
        out.push_str(&text[last..]);
        Some(out)
    }

    /// Cuts `s` to the string limit with its marker ([`crate::rewrite::cut`]).
    fn bound(&self, s: String, c: &mut Counts) -> String {
        match crate::rewrite::cut::cut(&s, self.sweep.max_string) {
            Some(t) => {
                c.truncated += 1;
                t
            }
            None => s,
        }
    }

    fn secret_field(&mut self, v: &Value, c: &mut Counts) -> Value {
        match v {
            Value::Null | Value::Bool(_) => v.clone(),
            Value::String(s) if crate::detect::rules::kept_secret_value(s) => {
                Value::String(self.string(s, c))
            }
            _ => {
                c.redacted_secret += 1;
                let raw = serde_json::to_vec(v).expect("values serialize");
                Value::String(self.placeholder(FIELD_RULE, &raw))
            }
        }
    }

    /// Rewrites one JSON value in place; `truncatable` applies the string limit.
    pub fn value(&mut self, v: &mut Value, truncatable: bool, c: &mut Counts) -> Result<()> {
        match v {
            Value::String(s) => {
                let t = self.string(s, c);
                // The limit applies to the original text: a string within
                // it is never cut because placeholders made it longer.
                *s = if truncatable && s.len() > self.sweep.max_string {
                    self.bound(t, c)
                } else {
                    t
                };
            }
            Value::Array(a) => {
                // An array that spells text is rewritten as that text, and
                // spelled back the same way.
                if let Some((how, text)) = crate::detect::spelled::of_values(a) {
                    let t = self.string(&text, c);
                    if t != text {
                        *a = crate::detect::spelled::respell(how, &t);
                        return Ok(());
                    }
                }
                let pair = crate::detect::names::secret_pair(a, &self.sweep.allow).is_some();
                for (i, x) in a.iter_mut().enumerate() {
                    if pair && i == 1 {
                        *x = self.secret_field(x, c);
                    } else {
                        self.value(x, truncatable, c)?;
                    }
                }
            }
            Value::Object(m) => self.object(m, truncatable, c)?,
            // A number is read as the text of its digits: one that holds a
            // sensitive value or another collected literal becomes the
            // string the sweep makes of it (a placeholder, a pseudonym).
            Value::Number(n) => {
                let text = n.to_string();
                let swept = self.string(&text, c);
                if swept != text {
                    *v = Value::String(swept);
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn object(
        &mut self,
        m: &mut Map<String, Value>,
        truncatable: bool,
        c: &mut Counts,
    ) -> Result<()> {
        let thinking = m.get("type").and_then(Value::as_str) == Some(THINKING_RECORD);
        let oneshot = m.get("schema").and_then(Value::as_str) == Some("oneshot-v1");
        let pair_member = crate::detect::names::pair_value_member(
            m.iter().map(|(k, v)| (k.as_str(), v)),
            &self.sweep.allow,
        )
        .map(str::to_owned);
        let kube = (m.contains_key("data") || m.contains_key("stringData"))
            && crate::detect::kube::is_secret_object(|k| m.get(k));
        let jwk = crate::detect::jwk::is_private_jwk(|k| m.get(k));
        let old = std::mem::take(m);
        for (k, mut val) in old {
            let class = classify(&k, &self.sweep.allow);
            if class.removed() || (thinking && !THINKING_KEEP.contains(&k.as_str())) {
                c.removed_field += 1;
                self.note_removed(&k, 1);
                continue;
            }
            let key = self.string(&k, c);
            match class {
                _ if kube && crate::detect::kube::data_member(k.as_bytes()).is_some() => {
                    val = self.secret_entries(val, c)?
                }
                FieldClass::Secret => val = self.secret_field(&val, c),
                _ if pair_member.as_deref() == Some(k.as_str()) => val = self.secret_field(&val, c),
                _ if jwk && crate::detect::jwk::private_member(&k) => {
                    val = self.secret_field(&val, c)
                }
                FieldClass::User if val.is_string() => {
                    let u = val.as_str().expect("checked");
                    let n = self.sweep.users.get(u).copied().unwrap_or(0);
                    val = Value::String(format!("[LOCAL_USER:{n}]"));
                    c.redacted_local += 1;
                }
                // A numeric correlation id gets the pseudonym of its digits.
                FieldClass::Identity if val.is_number() => {
                    let id = val.to_string();
                    val = Value::String(self.identity(&id));
                    c.rewritten_correlation += 1;
                }
                // Correlation and per-record id fields, and oneshot-v1 ids.
                FieldClass::Identity | FieldClass::Plain
                    if val.as_str().is_some_and(|v| {
                        // A shaped id (`toolu_…`) is never a credential;
                        // any other value is checked before it is given a
                        // pseudonym in its own shape.
                        let shaped = crate::rewrite::identity::shaped_id(v).is_some();
                        (shaped
                            || class == FieldClass::Identity
                            || (oneshot && k.eq_ignore_ascii_case("id")))
                            && (shaped || !self.sweep.det.holds_credential(v))
                    }) =>
                {
                    let id = val.as_str().expect("checked");
                    val = Value::String(self.identity(id));
                    c.rewritten_correlation += 1;
                }
                _ => self.value(&mut val, truncatable, c)?,
            }
            if m.insert(key.clone(), val).is_some() {
                return Err(key_collision());
            }
        }
        Ok(())
    }

    /// A Kubernetes Secret's data: each entry's value as a secret field's,
    /// its name as any key.
    fn secret_entries(&mut self, v: Value, c: &mut Counts) -> Result<Value> {
        let Value::Object(m) = v else {
            return Ok(self.secret_field(&v, c));
        };
        let mut out = Map::new();
        for (k, x) in m {
            let key = self.string(&k, c);
            let x = self.secret_field(&x, c);
            if out.insert(key, x).is_some() {
                return Err(key_collision());
            }
        }
        Ok(Value::Object(out))
    }

    fn note_removed(&mut self, name: &str, n: u64) {
        let full = self.removed.len() >= MAX_REMOVED_NAMES && !self.removed.contains_key(name);
        let name = if full { OTHER_FIELDS } else { name };
        *self.removed.entry(name.to_string()).or_insert(0) += n;
    }

    /// The names of the fields removed since the last call (scrubbed, as
    /// the report shows them), with how often each went.
    pub fn take_removed(&mut self) -> BTreeMap<String, u64> {
        let names = std::mem::take(&mut self.removed);
        let mut unused = Counts::default();
        let mut out = BTreeMap::new();
        for (name, n) in names {
            *out.entry(self.string(&name, &mut unused)).or_insert(0) += n;
        }
        out
    }

    /// Rewrites one line of text (without its terminator). In a patch the
    /// first character (`+`, `-`, space) is kept.
    pub fn line(&mut self, line: &str, diff: bool, st: &mut TextState, c: &mut Counts) -> String {
        let keep_prefix = diff
            && line.starts_with(['+', '-', ' '])
            && !line.starts_with("+++ ")
            && !line.starts_with("--- ");
        let (prefix, body) = if keep_prefix {
            line.split_at(1)
        } else {
            ("", line)
        };
        // A blank line holds no value and keeps the line before it for
        // the next.
        let prev = if crate::detect::continued::blank(line.as_bytes()) {
            None
        } else if crate::detect::continued::keeps_previous(st.prev.as_deref(), line.as_bytes()) {
            st.prev.clone()
        } else {
            std::mem::replace(
                &mut st.prev,
                (line.len() <= crate::detect::continued::MAX_OPENING_LINE)
                    .then(|| line.as_bytes().to_vec()),
            )
        };
        let is_begin = body.contains("-----BEGIN") && body.contains("PRIVATE KEY");
        let is_end = body.contains("-----END") && body.contains("PRIVATE KEY");
        if st.in_private_key {
            if is_end {
                st.in_private_key = false;
            }
            if body.trim().is_empty() {
                return line.to_string();
            }
            c.redacted_secret += 1;
            let p = self.placeholder(crate::detect::rules::PRIVATE_KEY, body.as_bytes());
            return format!("{prefix}{p}");
        }
        if is_begin && !is_end {
            st.in_private_key = true;
        }
        let mut out = self.string(body, c);
        if let Some(prev) = prev {
            out = self.continued(&prev, line, prefix.len(), out, c);
        }
        format!("{prefix}{out}")
    }

    /// Replaces in `out` (the rewritten text of `line` after its kept
    /// prefix) what `line` holds only with the line before it (see
    /// [`crate::detect::continued`]), read on whole lines as the first pass and
    /// the readback read them. A credential-like value is already gone by
    /// the sweep; a weak one (`<password>` / `hunter2`) goes here.
    fn continued(
        &mut self,
        prev: &[u8],
        line: &str,
        prefix: usize,
        mut out: String,
        c: &mut Counts,
    ) -> String {
        let mut found = Vec::new();
        self.sweep.det.find_continued(prev, line, &mut found);
        for f in found {
            let (a, b) = char_span(line, f.start.max(prefix), f.end);
            let value = line[a..b].trim();
            if value.is_empty() || !out.contains(value) {
                continue;
            }
            let p = self.placeholder(&f.rule, value.as_bytes());
            c.redacted_secret += out.matches(value).count() as u64;
            out = out.replace(value, &p);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::collect::Collector;
    use crate::detect::rules::RuleSet;
    use crate::detect::Placeholders;
    use crate::key::ExportKey;
    use serde_json::Value;

    fn scrub_lines(lines: &[&str], diff: bool) -> Vec<String> {
        let det = Detector::new(RuleSet::new(&[]).unwrap(), &[], Placeholders::AreForgeries);
        let mut col = Collector::new(&det, &[], &[], 1 << 20);
        // As `lines::Batch` pairs them: with the last line not blank.
        let mut prev: Option<&str> = None;
        for l in lines {
            col.string(l, 0);
            if let Some(p) = prev {
                col.continued(p.as_bytes(), l);
            }
            if !crate::detect::continued::keeps_previous(prev.map(str::as_bytes), l.as_bytes()) {
                prev = Some(l);
            }
        }
        let safety = Detector::new(RuleSet::new(&[]).unwrap(), &[], Placeholders::AreExpected);
        let keys = ExportKey::from_bytes([3; 32]).for_policy(&coffer_base::Digest::of(b"p"));
        let mut s = Scrubber::new(&safety, keys, col.found, &[], &[], &[], 1 << 20).unwrap();
        let mut st = TextState::default();
        let mut c = Counts::default();
        lines
            .iter()
            .map(|l| s.line(l, diff, &mut st, &mut c))
            .collect()
    }

    #[test]
    fn a_weak_value_on_the_line_after_its_label_goes_from_that_line() {
        // `hunter2` is too weak to be swept everywhere: only the pair
        // shows it is a password, so the rewrite must read the pair too.
        for (lines, diff) in [
            (&["<password>", "    hunter2", "</password>"][..], false),
            (&["+<password>", "+    hunter2", "+</password>"][..], true),
            (&[" <password>", "+    hunter2", "+</password>"][..], true),
            (
                &["db_password =", "  'hunter2'", "print(hunter2)"][..],
                false,
            ),
        ] {
            let out = scrub_lines(lines, diff);
            assert!(!out[1].contains("hunter2"), "{out:?}");
            assert!(out[1].contains("[REDACTED_SECRET:"), "{out:?}");
            assert_eq!(out[0], lines[0]);
            assert_eq!(
                out[1].as_bytes()[0],
                lines[1].as_bytes()[0],
                "the prefix stays"
            );
            assert_eq!(out[2], lines[2], "the word elsewhere stays");
        }
    }

    #[test]
    fn a_token_after_a_sentence_naming_it_goes_across_blank_lines() {
        let lines = [
            "Please use the following password to proceed to installation:",
            "",
            "  ",
            "bd9627decc6346d780b3b6ab6ea8fe1f",
        ];
        let out = scrub_lines(&lines, false);
        assert!(out[3].starts_with("[REDACTED_SECRET:"), "{out:?}");
        assert_eq!(&out[..3], &lines[..3]);
        // A weak value is not swept everywhere: the rewrite itself must
        // read it with its label across the blank line.
        let out = scrub_lines(&["<password>", "", "    hunter2", "</password>"], false);
        assert!(!out[2].contains("hunter2"), "{out:?}");
    }

    #[test]
    fn private_key_blocks_go_line_by_line_and_keep_the_diff_prefix() {
        let out = scrub_lines(
            &[
                "+key:",
                "+-----BEGIN RSA PRIVATE KEY-----",
                "+MIIEowIBAAKCAQEAuZ0bAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                "+-----END RSA PRIVATE KEY-----",
                "+after",
            ],
            true,
        );
        assert_eq!(out[0], "+key:");
        for l in &out[1..4] {
            assert!(l.starts_with("+[REDACTED_SECRET:private-key:"), "{l}");
        }
        assert_eq!(out[4], "+after");
    }

    fn scrub_records(records: &[Value], max_string: usize) -> (Vec<Value>, Counts) {
        let det = Detector::new(RuleSet::new(&[]).unwrap(), &[], Placeholders::AreForgeries);
        let mut col = Collector::new(&det, &[], &[], max_string);
        for r in records {
            col.value(&coffer_base::json::Node::from(r), 0);
        }
        let safety = Detector::new(RuleSet::new(&[]).unwrap(), &[], Placeholders::AreExpected);
        let keys = ExportKey::from_bytes([3; 32]).for_policy(&coffer_base::Digest::of(b"p"));
        let mut s = Scrubber::new(&safety, keys, col.found, &[], &[], &[], max_string).unwrap();
        let mut c = Counts::default();
        let out = records
            .iter()
            .map(|r| {
                let mut v = r.clone();
                s.value(&mut v, true, &mut c).unwrap();
                v
            })
            .collect();
        (out, c)
    }

    #[test]
    fn a_dependency_maps_versions_stay_and_are_not_swept() {
        let (out, _) = scrub_records(
            &[
                serde_json::json!({"dependencies": {"jsonwebtoken": "^9.0.0", "@octokit/auth-token": "^4.0.0"}}),
                serde_json::json!({"apiToken": "Zq8vLm2xQ7", "note": "needs ^9.0.0"}),
            ],
            1 << 20,
        );
        assert_eq!(out[0]["dependencies"]["jsonwebtoken"], "^9.0.0");
        assert_eq!(out[0]["dependencies"]["@octokit/auth-token"], "^4.0.0");
        assert!(out[1]["apiToken"]
            .as_str()
            .unwrap()
            .starts_with("[REDACTED_SECRET:"));
        assert_eq!(out[1]["note"], "needs ^9.0.0", "a version is not swept");
    }

    #[test]
    fn distinct_users_stay_distinct_and_consistent() {
        let (out, c) = scrub_records(
            &[
                serde_json::json!({"user": "alice7", "cwd": "/home/alice7/x"}),
                serde_json::json!({"user": "bob9", "text": "bob9 and alice7 met"}),
            ],
            1 << 20,
        );
        let a = out[0]["user"].as_str().unwrap().to_string();
        let b = out[1]["user"].as_str().unwrap().to_string();
        assert_ne!(a, b);
        assert!(a.starts_with("[LOCAL_USER:") && b.starts_with("[LOCAL_USER:"));
        assert_eq!(out[1]["text"], format!("{b} and {a} met"));
        assert!(c.redacted_local >= 4);
    }

    #[test]
    fn a_name_only_a_few_home_paths_show_is_replaced_there_and_kept_as_a_word() {
        // clap's doc tests say `/home/clap`; the crate's name is a word on
        // every line of its sources.
        let doc =
            serde_json::json!({"output": "assert_eq!(loc, \"/home/clap\");\n$ cargo add clap"});
        let (out, _) = scrub_records(&[doc.clone(), doc], 1 << 20);
        let t = out[0]["output"].as_str().unwrap();
        assert!(t.contains("$ cargo add clap"), "{t}");
        assert!(!t.contains("/home/clap"), "{t}");
        // Three strings with the home path: the local user's, swept.
        let rec = |i: u32| serde_json::json!({"cmd": format!("ls /home/dave9/p{i}"), "out": "dave9 wrote it"});
        let (out, _) = scrub_records(&[rec(1), rec(2), rec(3)], 1 << 20);
        assert!(
            out.iter().all(|r| !r.to_string().contains("dave9")),
            "{out:?}"
        );
        let (out, _) = scrub_records(&[rec(1), rec(2)], 1 << 20);
        assert_eq!(out[0]["out"], "dave9 wrote it");
        assert!(!out[0]["cmd"].to_string().contains("dave9"));
        // `USER=` or a prompt says it at once.
        for shown in ["USER=dave9", "dave9@devbox:~/src$ ls"] {
            let (out, _) = scrub_records(
                &[serde_json::json!({"a": shown, "b": "dave9 wrote it"})],
                1 << 20,
            );
            assert!(!out[0].to_string().contains("dave9"), "{shown}: {out:?}");
        }
    }

    #[test]
    fn long_strings_are_cut_visibly_at_a_character_boundary_never_inside_a_placeholder() {
        let long = "é".repeat(40); // 80 bytes
        let (out, c) = scrub_records(&[serde_json::json!({"text": long})], 33);
        let t = out[0]["text"].as_str().unwrap();
        // 25 bytes of marker leave 8 of text: four whole characters.
        assert_eq!(t, format!("{}…[TRUNCATED: 72 bytes]", "é".repeat(4)));
        assert_eq!(c.truncated, 1);
        let tok = "ghp_Q7qSyY3v6ysjB6f2RsDLHZg8RakGnRAxPcTM";
        let (out, _) = scrub_records(&[serde_json::json!({"text": format!("see {tok} end")})], 40);
        let t = out[0]["text"].as_str().unwrap();
        assert!(
            t.starts_with("see …[TRUNCATED: "),
            "the cut backs off to before the placeholder: {t}"
        );
        // A string within the limit is never marked.
        let (out, c) = scrub_records(&[serde_json::json!({"text": "short"})], 60);
        assert_eq!(out[0]["text"], "short");
        assert_eq!(c.truncated, 0);
    }

    #[test]
    fn secrets_found_once_are_swept_everywhere_with_their_encodings() {
        let tok = "ghp_Q7qSyY3v6ysjB6f2RsDLHZg8RakGnRAxPcTM";
        let out = scrub_lines(
            &[
                &format!("token {tok}"),
                &format!("again \\\"{tok}\\\" and {}", tok.replace('_', "%5F")),
            ],
            false,
        );
        for l in &out {
            assert!(!l.contains(&tok[4..16]), "{l}");
        }
    }
}
