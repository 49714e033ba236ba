//! Kubernetes Secrets printed as text (`kubectl get secret -o yaml`, `-o
//! json`, a manifest in a tool's output): every value under a Secret's
//! `data` or `stringData` is a secret, whatever its entry is named
//! (`tls.key`, `.dockerconfigjson`, `extra`).
//!
//! A value counts only when the `kind: Secret` belongs to the same
//! object as its `data`, before or after it (kubectl prints `data` first):
//! a ConfigMap's data, or a ConfigMap next to a Secret in one list, keeps
//! its values. YAML is read by its indentation, JSON (pretty or on one
//! line) by its braces; both tolerate the text around them.

use std::ops::Range;
use std::sync::LazyLock;

use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine;
use memchr::memmem::Finder;

use crate::detect::json_text;
use crate::detect::names::StrLeaf;

/// Rule id of a Secret's data value.
pub const RULE: &str = "kubernetes-secret";

/// Whether a JSON object is a Secret (`"kind": "Secret"`); `member` looks
/// a member up. The structured reading of what this module finds in text:
/// the passes treat each entry of its [`data_member`]s as a secret field.
pub fn is_secret_object<'v, V: StrLeaf + 'v>(member: impl Fn(&str) -> Option<&'v V>) -> bool {
    member("kind")
        .and_then(StrLeaf::leaf_str)
        .is_some_and(|k| is_secret_kind(k.as_bytes()))
}

/// The shortest value taken (the structured reading's bound, `collect.rs`).
const MIN_VALUE: usize = 4;
/// The longest decoded value swept in its plain form too.
const MAX_PLAIN: usize = 1024;
/// The longest decoded `data` value judged as a word.
const MAX_WORD: usize = 40;
/// The fewest bytes a base64 `data` value must hold: `YmFyCg==` (`bar\n`)
/// and `YWRtaW4=` (`admin`) are examples, not credentials.
const MIN_DECODED: usize = 6;

/// Standard base64, padded or not (a block scalar's lines may be cut
/// anywhere).
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

static KIND: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"kind"));
static ECRET: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"ecret"));
static ATA: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"ata:"));

/// The most text read at once. Longer text is read in windows of this
/// size that overlap by half (at line starts), so a manifest of up to
/// half a window is always read whole, and the readers' memory (a few
/// words per line, an object per open brace up to [`MAX_DEPTH`]) stays
/// bounded whatever the input.
const WINDOW: usize = 256 << 10;
/// The shortest text that can hold a Secret's kind and a data value.
const MIN_TEXT: usize = 24;
/// JSON objects and arrays open at once; deeper ones are only counted.
const MAX_DEPTH: usize = 64;

/// Whether `s` may hold a Secret: the cheap test before
/// [`secret_values`] (most strings are short, and few say `kind`).
#[inline]
pub fn might_hold(s: &[u8]) -> bool {
    s.len() >= MIN_TEXT && mentions_kind(s)
}

/// Whether `s` says `kind` (a line of a manifest may be short).
pub fn mentions_kind(s: &[u8]) -> bool {
    KIND.find(s).is_some()
}

/// Whether `s` says `secret` (or `Secret`).
pub fn mentions_secret(s: &[u8]) -> bool {
    ECRET.find(s).is_some()
}

/// The spans of every Secret data value in `s`.
pub fn secret_values(s: &[u8], out: &mut Vec<Range<usize>>) {
    if !might_hold(s) {
        return;
    }
    let first = out.len();
    let mut start = 0;
    loop {
        let mut end = (start + WINDOW).min(s.len());
        if end < s.len() {
            // Back to a line start, unless the window is one long line.
            end = memchr::memrchr(b'\n', &s[start..end]).map_or(end, |i| start + i + 1);
        }
        window(&s[start..end], start, out);
        if end == s.len() {
            break;
        }
        let half = start + (end - start) / 2;
        let next = memchr::memchr(b'\n', &s[half..end]).map_or(half, |i| half + i + 1);
        start = next.max(start + 1);
    }
    out[first..].sort_by_key(|r| (r.start, r.end));
    let mut kept = out.split_off(first);
    kept.dedup();
    out.extend(kept);
}

/// One window of text, at `base` in the whole.
fn window(w: &[u8], base: usize, out: &mut Vec<Range<usize>>) {
    // Gate: both words occur, so the readers below run on almost nothing.
    if w.len() < MIN_TEXT || !mentions_kind(w) || !mentions_secret(w) {
        return;
    }
    let from = out.len();
    json_values(w, out);
    yaml_values(w, out);
    for r in &mut out[from..] {
        *r = r.start + base..r.end + base;
    }
}

/// What a base64 `data` value encodes, when that is a credential on its
/// own line (credential-like, as the sweep judges a value; a trailing line
/// end dropped): the plain form an agent prints after `| base64 -d`.
pub fn decoded_credential(v: &str) -> Option<String> {
    let d = BASE64.decode(v).ok()?;
    let t = String::from_utf8(d).ok()?;
    let t = t.strip_suffix('\n').unwrap_or(&t);
    (t.len() <= MAX_PLAIN && crate::detect::rules::credential_like(t.as_bytes()))
        .then(|| t.to_string())
}

/// Whether a value may be a secret: not a template or a placeholder
/// (`{{ .Values.password | b64enc }}`, `${DB_PASSWORD}`, `<base64>`).
fn is_value(v: &[u8], base64: bool) -> bool {
    if v.len() < MIN_VALUE {
        return false;
    }
    if base64 {
        // Kubernetes writes standard base64: a word with `_` or `-`, or
        // of a length base64 never has, is a decoded value in a document
        // (`password: example_pass`), not data.
        let Ok(d) = BASE64.decode(v) else {
            return false;
        };
        // A password-sized value encodes a word judged as any value:
        // `<password>`, `changeme`, `xxxxxxxx` are examples. (A document,
        // a `.dockercfg`, may name `example` and hold a credential.)
        return d.len() >= MIN_DECODED
            && (d.len() > MAX_WORD
                || !(crate::detect::rules::is_placeholder(&d)
                    || crate::detect::rules::typed_filler(&d)));
    }
    !(v.windows(2).any(|w| w == b"{{" || w == b"${" || w == b"$(")
        || (v.starts_with(b"<") && v.ends_with(b">"))
        || v == b"null")
}

fn is_secret_kind(v: &[u8]) -> bool {
    v.eq_ignore_ascii_case(b"secret")
}

/// Which data member a key names: `Some(true)` for `data` (base64 values),
/// `Some(false)` for `stringData`.
pub fn data_member(key: &[u8]) -> Option<bool> {
    match key {
        b"data" => Some(true),
        b"stringData" => Some(false),
        _ => None,
    }
}

/// What the JSON reader keeps of an object.
#[derive(Default)]
struct Object {
    /// `"kind": "Secret"` seen among its members.
    secret: bool,
    /// It is the value of its parent's `data` (`Some(true)`) or
    /// `stringData` (`Some(false)`) member.
    data: Option<bool>,
    /// Values of its data members, kept until its kind is known.
    pending: Vec<Range<usize>>,
}

/// The JSON reader: Secrets' data values, into `out`.
struct Secrets<'a> {
    s: &'a [u8],
    out: &'a mut Vec<Range<usize>>,
}

impl json_text::Objects for Secrets<'_> {
    type Object = Object;

    fn open(&mut self, key: Option<&[u8]>) -> Object {
        Object {
            data: key.and_then(data_member),
            ..Object::default()
        }
    }

    fn member(
        &mut self,
        o: &mut Object,
        parent: Option<&mut Object>,
        key: Option<&[u8]>,
        value: Range<usize>,
    ) {
        if key == Some(b"kind") && is_secret_kind(&self.s[value.clone()]) {
            o.secret = true;
        }
        if let Some(base64) = o.data {
            // The Secret is the object that holds this data object.
            if let Some(p) = parent.filter(|_| is_value(&self.s[value.clone()], base64)) {
                p.pending.push(value);
            }
        }
    }

    /// An object ended: its data values count when it is a Secret.
    fn close(&mut self, o: Object) {
        if o.secret {
            self.out.extend(o.pending);
        }
    }
}

/// JSON, read by a tolerant tokenizer ([`json_text::objects`]).
fn json_values(s: &[u8], out: &mut Vec<Range<usize>>) {
    if memchr::memchr(b'{', s).is_some() {
        json_text::objects(s, MAX_DEPTH, &mut Secrets { s, out });
    }
}

/// One YAML line that holds a key.
struct Line {
    /// The column of its key (after a list item's `- `).
    col: usize,
    /// It starts a list item.
    item: bool,
    key: Range<usize>,
    /// Its value, unquoted, without a comment; empty when none.
    value: Range<usize>,
    /// Leading whitespace, for block scalar lines.
    indent: usize,
    /// The whole line's content, trimmed.
    content: Range<usize>,
}

/// A YAML line: a key line, a document marker, or something else
/// (continuation text, a comment, a blank).
enum Kind {
    Key(Line),
    Boundary,
    Other {
        indent: usize,
        content: Range<usize>,
    },
}

fn classify(s: &[u8], line: Range<usize>) -> Kind {
    let l = &s[line.clone()];
    let indent = l.iter().take_while(|c| **c == b' ' || **c == b'\t').count();
    let end = line.start + l.trim_ascii_end().len();
    let content = line.start + indent..end.max(line.start + indent);
    let c = &s[content.clone()];
    if c.starts_with(b"---") || c == b"..." {
        return Kind::Boundary;
    }
    if c.is_empty() || c.starts_with(b"#") {
        return Kind::Other { indent, content };
    }
    let (item, mut at) = if c == b"-" || c.starts_with(b"- ") {
        let skip = 1 + c[1..].iter().take_while(|b| **b == b' ').count();
        (true, content.start + skip)
    } else {
        (false, content.start)
    };
    let col = at - line.start;
    // The key: quoted, or up to the first `:` followed by a blank or the end.
    let key;
    let rest = &s[at..content.end];
    if let Some(q @ (b'"' | b'\'')) = rest.first().copied() {
        let Some(close) = memchr::memchr(q, &rest[1..]) else {
            return Kind::Other { indent, content };
        };
        key = at + 1..at + 1 + close;
        at += close + 2;
        if s.get(at) != Some(&b':') {
            return Kind::Other { indent, content };
        }
    } else {
        let colon = rest.iter().enumerate().position(|(k, b)| {
            *b == b':' && rest.get(k + 1).is_none_or(|n| *n == b' ' || *n == b'\t')
        });
        let Some(colon) = colon else {
            return Kind::Other { indent, content };
        };
        key = at..at + colon;
        at += colon;
    }
    // The value after the colon, trimmed, a trailing comment off, quotes off.
    let mut v = at + 1..content.end;
    while v.start < v.end && matches!(s[v.start], b' ' | b'\t') {
        v.start += 1;
    }
    let value = match s.get(v.start) {
        Some(q @ (b'"' | b'\'')) => match memchr::memchr(*q, &s[v.start + 1..v.end]) {
            Some(close) => v.start + 1..v.start + 1 + close,
            None => v,
        },
        _ => {
            let text = &s[v.clone()];
            let cut = text
                .windows(2)
                .position(|w| (w[0] == b' ' || w[0] == b'\t') && w[1] == b'#')
                .unwrap_or(text.len());
            v.start..v.start + text[..cut].trim_ascii_end().len()
        }
    };
    let value = if s[value.clone()].starts_with(b"#") {
        value.start..value.start
    } else {
        value
    };
    Kind::Key(Line {
        col,
        item,
        key,
        value,
        indent,
        content,
    })
}

/// A YAML block scalar's indicator (`|`, `>-`, `|+2`).
fn block_scalar(v: &[u8]) -> bool {
    matches!(v.first(), Some(b'|' | b'>'))
        && v[1..]
            .iter()
            .all(|c| matches!(c, b'-' | b'+' | b'0'..=b'9'))
}

/// YAML, read by indentation.
fn yaml_values(s: &[u8], out: &mut Vec<Range<usize>>) {
    if ATA.find(s).is_none() {
        return;
    }
    let mut lines = Vec::new();
    let mut at = 0;
    for end in memchr::memchr_iter(b'\n', s).chain(std::iter::once(s.len())) {
        lines.push(classify(s, at..end));
        at = end + 1;
    }
    for (i, l) in lines.iter().enumerate() {
        let Kind::Key(l) = l else { continue };
        let Some(base64) = data_member(&s[l.key.clone()]) else {
            continue;
        };
        if !l.value.is_empty() || !is_secret_mapping(s, &lines, i, l) {
            continue;
        }
        entries(s, &lines[i + 1..], l.col, base64, out);
    }
}

/// Whether the mapping holding the key line `lines[i]` has `kind: Secret`.
fn is_secret_mapping(s: &[u8], lines: &[Kind], i: usize, at: &Line) -> bool {
    let kind = |l: &Line| {
        l.col == at.col && &s[l.key.clone()] == b"kind" && is_secret_kind(&s[l.value.clone()])
    };
    // Back to the mapping's first key (or its list item's `- `).
    if !at.item {
        for k in lines[..i].iter().rev() {
            match k {
                Kind::Boundary => break,
                Kind::Other { .. } => {}
                Kind::Key(l) if l.col < at.col => break,
                Kind::Key(l) if l.col == at.col => {
                    if kind(l) {
                        return true;
                    }
                    if l.item {
                        break;
                    }
                }
                Kind::Key(_) => {}
            }
        }
    }
    // On to its last.
    for k in &lines[i + 1..] {
        match k {
            Kind::Boundary => break,
            Kind::Key(l) if l.col < at.col || (l.item && l.col == at.col) => break,
            Kind::Key(l) if kind(l) => return true,
            Kind::Other { indent, content }
                if *indent < at.col
                    && !s[content.clone()].is_empty()
                    && !s[content.clone()].starts_with(b"#") =>
            {
                break
            }
            _ => {}
        }
    }
    false
}

/// The values of a data mapping's entries: the key lines after it, deeper
/// than `col`, up to the first line that is not.
fn entries(s: &[u8], lines: &[Kind], col: usize, base64: bool, out: &mut Vec<Range<usize>>) {
    let mut child = None;
    let mut block: Option<usize> = None;
    for k in lines {
        // Lines of a block scalar: deeper than the entry that opened it.
        if let Some(entry) = block {
            let (indent, content) = match k {
                Kind::Key(l) => (l.indent, l.content.clone()),
                Kind::Other { indent, content } => (*indent, content.clone()),
                Kind::Boundary => break,
            };
            if s[content.clone()].is_empty() {
                continue;
            }
            if indent > entry {
                if is_value(&s[content.clone()], base64) {
                    out.push(content);
                }
                continue;
            }
            block = None;
        }
        match k {
            Kind::Boundary => break,
            Kind::Other { indent, content } => {
                if *indent <= col
                    && !s[content.clone()].is_empty()
                    && !s[content.clone()].starts_with(b"#")
                {
                    break;
                }
            }
            Kind::Key(l) => {
                if l.col <= col {
                    break;
                }
                let c = *child.get_or_insert(l.col);
                if l.col != c {
                    continue;
                }
                let v = &s[l.value.clone()];
                if block_scalar(v) {
                    block = Some(l.col);
                } else if is_value(v, base64) {
                    out.push(l.value.clone());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(s: &str) -> Vec<&str> {
        let mut out = Vec::new();
        secret_values(s.as_bytes(), &mut out);
        out.sort_by_key(|r| r.start);
        out.into_iter().map(|r| &s[r]).collect()
    }

    const PW: &str = "UyFCXCpkJHpEc2I9";
    const USER: &str = "cm9vdC11c2Vy";

    #[test]
    fn kubectl_yaml_with_data_before_kind() {
        let s = format!(
            "apiVersion: v1\ndata:\n  password: {PW}\n  tls.key: {USER}\nkind: Secret\nmetadata:\n  name: db\n  namespace: default\ntype: Opaque\n"
        );
        assert_eq!(found(&s), [PW, USER]);
    }

    #[test]
    fn manifest_with_kind_first_tabs_quotes_and_comments() {
        let s = format!(
            "apiVersion: 'v1'\nkind: 'Secret'\ndata:\n\t# the data is abbreviated\n\tpassword: '{PW}'\n\t\"username\": \"{USER}\"  # base64\n"
        );
        assert_eq!(found(&s), [PW, USER]);
        let s = format!(
            "apiVersion: v1\n data:\n \textra: {PW}\n kind: secret\n metadata:\n\t name: x\n"
        );
        assert_eq!(found(&s), [PW]);
    }

    #[test]
    fn block_scalars_and_string_data() {
        let cfg = "eyJhdXRocyI6eyJodHRwczovL2V4YW1wbGUvdjEvIjp7ImF1dGgiOiJvcGVuc2VzYW1lIn19fQo=";
        for ind in ["|", ">", "|-"] {
            let s = format!(
                "apiVersion: v1\ndata:\n  .dockercfg: {ind}\n    {cfg}\nmetadata:\n  name: secret-dockercfg\ntype: kubernetes.io/dockercfg\nkind: Secret\n"
            );
            assert_eq!(found(&s), [cfg], "{ind}");
        }
        let s = "kind: Secret\nstringData:\n  DB_URL: postgres://app:Zf3D0LXCM3EIMb@db/app\n  config.yaml: |\n    password: hunter22\n    user: app\nmetadata:\n  name: x\n";
        assert_eq!(
            found(s),
            [
                "postgres://app:Zf3D0LXCM3EIMb@db/app",
                "password: hunter22",
                "user: app"
            ]
        );
    }

    #[test]
    fn config_maps_templates_and_other_kinds_keep_their_data() {
        let cm = format!("apiVersion: v1\ndata:\n  password: {PW}\nkind: ConfigMap\n");
        assert_eq!(found(&cm), Vec::<&str>::new());
        // Too short to hold a credential: `bar\n`, `admin`; empty; the
        // base64 of `changeme`, `<password>` and `xxxxxxxx`; decoded
        // values in a document.
        let short = "apiVersion: v1\ndata:\n  extra: YmFyCg==\n  user: YWRtaW4=\n  csrf: \"\"\n  a: Y2hhbmdlbWU=\n  b: PHBhc3N3b3JkPg==\n  c: eHh4eHh4eHg=\n  password: example_pass\n  host: gen3-postgresql\nkind: Secret\n";
        assert_eq!(found(short), Vec::<&str>::new());
        let helm = "apiVersion: v1\nkind: Secret\ndata:\n  password: {{ .Values.password | b64enc }}\n  token: <base64>\nstringData:\n  url: ${DB_URL}\n";
        assert_eq!(found(helm), Vec::<&str>::new());
        // A list: only the Secret's entries, whichever comes first.
        let list = format!(
            "apiVersion: v1\nitems:\n- apiVersion: v1\n  data:\n    level: {USER}\n  kind: ConfigMap\n- apiVersion: v1\n  data:\n    password: {PW}\n  kind: Secret\n- data:\n    other: {USER}\n  kind: ConfigMap\nkind: List\n"
        );
        assert_eq!(found(&list), [PW]);
        // Two documents.
        let docs =
            format!("kind: Secret\ndata:\n  a: {PW}\n---\ndata:\n  b: {USER}\nkind: ConfigMap\n");
        assert_eq!(found(&docs), [PW]);
        // A Secret's metadata is not data.
        let meta = format!("kind: Secret\nmetadata:\n  name: {PW}\n  labels:\n    data: x\n");
        assert_eq!(found(&meta), Vec::<&str>::new());
    }

    #[test]
    fn kubectl_json_pretty_and_compact() {
        let pretty = format!(
            "{{\n    \"apiVersion\": \"v1\",\n    \"data\": {{\n        \"password\": \"{PW}\",\n        \"username\": \"{USER}\"\n    }},\n    \"kind\": \"Secret\",\n    \"metadata\": {{\n        \"name\": \"db\"\n    }}\n}}\n"
        );
        assert_eq!(found(&pretty), [PW, USER]);
        let compact = format!(
            "$ kubectl get secret db -o json\n{{\"apiVersion\":\"v1\",\"data\":{{\"password\":\"{PW}\"}},\"kind\":\"Secret\"}}"
        );
        assert_eq!(found(&compact), [PW]);
        let list = format!(
            "{{\"items\":[{{\"data\":{{\"a\":\"{USER}\"}},\"kind\":\"ConfigMap\"}},{{\"kind\":\"Secret\",\"stringData\":{{\"b\":\"s3cr3t-value\",\"n\":{{\"deep\":\"{PW}\"}}}}}}],\"kind\":\"List\"}}"
        );
        assert_eq!(found(&list), ["s3cr3t-value"]);
        let cm = format!("{{\"data\":{{\"password\":\"{PW}\"}},\"kind\":\"ConfigMap\"}}");
        assert_eq!(found(&cm), Vec::<&str>::new());
        // Cut short: the Secret's kind is known, its data counts.
        let cut = format!("{{\"kind\":\"Secret\",\"data\":{{\"password\":\"{PW}\",\"user");
        assert_eq!(found(&cut), [PW]);
    }

    #[test]
    fn a_data_value_decodes_to_its_plain_credential_when_it_is_one() {
        // `pR0d-S3cret-2024x` and `admin`, `bar\n`, a document, binary.
        assert_eq!(
            decoded_credential("cFIwZC1TM2NyZXQtMjAyNHgK").as_deref(),
            Some("pR0d-S3cret-2024x")
        );
        for v in [
            "YWRtaW4=",
            "YmFyCg==",
            "eyJhIjogImIgYyJ9",
            "/w==",
            "not base64!",
        ] {
            assert_eq!(decoded_credential(v), None, "{v}");
        }
    }

    #[test]
    fn long_text_is_read_in_overlapping_windows_and_deep_json_is_bounded() {
        let manifest = format!("apiVersion: v1\ndata:\n  extra: {PW}\nkind: Secret\n");
        for filler in [WINDOW / 2 - 40, WINDOW - 10, WINDOW + 7, 3 * WINDOW] {
            let pad = "x: y\n".repeat(filler / 5);
            let s = format!("{pad}{manifest}{pad}{manifest}");
            assert_eq!(found(&s), [PW, PW], "{filler}");
        }
        // One long line: windows cut it anywhere, and still end.
        let line = format!(
            "{}{{\"kind\":\"Secret\",\"data\":{{\"a\":\"{PW}\"}}}}",
            "z".repeat(3 * WINDOW)
        );
        assert_eq!(found(&line), [PW]);
        // Nesting past the bound is counted, not kept; what follows it
        // is read at the right depth.
        let deep = format!(
            "{{\"kind\":\"Secret\",\"x\":{open}{close},\"data\":{{\"a\":\"{PW}\"}}}}",
            open = "[{\"k\":\"v\",\"n\":".repeat(10_000),
            close = "0}]".repeat(10_000)
        );
        assert_eq!(found(&deep), [PW]);
    }

    #[test]
    fn text_without_both_words_is_not_read() {
        assert_eq!(
            found(&format!("data:\n  password: {PW}\n")),
            Vec::<&str>::new()
        );
        assert_eq!(found("kind: Secret"), Vec::<&str>::new());
    }
}
