//! Keyed identity rewriting.
//!
//! Native identities are collected from typed fields first; each maps to a
//! keyed pseudonym in the identity's own shape: `<prefix>_<32 hex>` stays so,
//! a UUID stays a UUID (version nibble 8, RFC 9562 variant), anything else
//! becomes `<namespace>-<24 hex>`. Derived forms (upper-case hex, undashed
//! UUIDs) map to the same pseudonym's derived form. Per-record identities
//! (event, message, span ids) are rewritten where they stand by the same
//! keyed function, so references between records stay consistent without a
//! table that grows with the input.

use coffer_base::codes;
use std::collections::BTreeMap;

use crate::error::{ExportError, Result};
use crate::key::Keys;
use crate::rewrite::literals::{LiteralKind, LiteralsBuilder};

/// Identities shorter than this are rewritten in typed fields only, never
/// swept as substrings (a short id matches innocent text).
pub const MIN_SWEPT_ID_BYTES: usize = 8;

/// How many times a pseudonym is drawn again before the export gives up
/// (each draw holds an original with a chance of about 1 in 256 for the
/// shortest swept ids, so 64 never run out by chance).
const MAX_ROUNDS: u32 = 64;

/// Namespace of per-record identities.
pub const RECORD_NAMESPACE: &str = "record";

/// Identities collected in the first pass, by value, with their namespace.
#[derive(Debug, Default, Clone)]
pub struct Identities {
    ids: BTreeMap<String, String>,
}

fn is_hex(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|c| c.is_ascii_hexdigit())
}

/// `8-4-4-4-12` hex digits.
fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.bytes().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// Prefixes of the harness exchange schema's ids (and the model API's tool
/// use ids), with the namespace of their pseudonyms, and whether they are
/// correlation ids (a few per session, swept from all text) or per-record
/// ids (one per event or call, rewritten where a field holds exactly one:
/// sweeping millions of them would cost more than it protects). A string
/// of the form `<prefix>_<12-64 letters or digits, one a digit>` is that
/// identity wherever it stands, typed field or not.
const ID_PREFIXES: &[(&str, &str, Scope)] = &[
    ("sess", "session", Scope::Correlation),
    ("run", "run", Scope::Correlation),
    ("subg", "subagent", Scope::Correlation),
    ("conn", "connection", Scope::Correlation),
    ("wrkspc", "workspace", Scope::Correlation),
    ("prin", "principal", Scope::Correlation),
    ("agent", "agent", Scope::Correlation),
    ("aini", "agent-instance", Scope::Correlation),
    ("surf", "surface", Scope::Correlation),
    ("approval", "approval", Scope::Correlation),
    ("evt", "event", Scope::Record),
    ("toolu", "tool-use", Scope::Record),
    ("call", "tool-call", Scope::Record),
    ("msg", "message", Scope::Record),
    ("req", "request", Scope::Record),
];

/// Where a shaped id is rewritten.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Collected and swept from every string of the export.
    Correlation,
    /// Rewritten in the fields that hold it.
    Record,
}

/// The longest prefix in [`ID_PREFIXES`].
const LONGEST_ID_PREFIX: usize = {
    let (mut i, mut longest) = (0, 0);
    while i < ID_PREFIXES.len() {
        if ID_PREFIXES[i].0.len() > longest {
            longest = ID_PREFIXES[i].0.len();
        }
        i += 1;
    }
    longest
};

/// The namespace and scope of a string shaped like a prefixed id.
pub fn shaped_id(s: &str) -> Option<(&'static str, Scope)> {
    // Asked of every string value: text is mostly longer.
    if s.len() > LONGEST_ID_PREFIX + 1 + 64 {
        return None;
    }
    let (prefix, body) = s.split_once('_')?;
    let &(_, ns, scope) = ID_PREFIXES.iter().find(|(p, _, _)| *p == prefix)?;
    let ok = (12..=64).contains(&body.len())
        && body.bytes().all(|c| c.is_ascii_alphanumeric())
        && body.bytes().any(|c| c.is_ascii_digit());
    ok.then_some((ns, scope))
}

/// An id prefix: 1-16 lower-case letters or digits, starting with a letter.
fn id_prefix(prefix: &str) -> bool {
    (1..=16).contains(&prefix.len())
        && prefix.starts_with(|c: char| c.is_ascii_lowercase())
        && prefix
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
}

/// `<prefix>_<body>` with an alphanumeric body of 12 to 64 characters.
fn prefixed_token(s: &str) -> Option<(&str, &str)> {
    let (prefix, body) = s.split_once('_')?;
    let ok = id_prefix(prefix)
        && (12..=64).contains(&body.len())
        && body.bytes().all(|c| c.is_ascii_alphanumeric());
    ok.then_some((prefix, body))
}

const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// `<prefix>_<32 hex>`.
fn prefixed_hex(s: &str) -> Option<(&str, &str)> {
    let (prefix, hex) = s.rsplit_once('_')?;
    (id_prefix(prefix) && hex.len() == 32 && is_hex(hex)).then_some((prefix, hex))
}

/// Lower-case hex of `bytes` (a pseudonym is built for every record's
/// ids: the `hex` crate's `encode` goes a char at a time).
fn hex_lower(bytes: &[u8]) -> String {
    let mut out = vec![0u8; bytes.len() * 2];
    hex::encode_to_slice(bytes, &mut out).expect("the buffer is twice the input");
    String::from_utf8(out).expect("hex digits are ASCII")
}

fn uuid_from(bytes: &[u8; 32]) -> String {
    let mut b = [0u8; 16];
    b.copy_from_slice(&bytes[..16]);
    b[6] = (b[6] & 0x0f) | 0x80;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex_lower(&b);
    let mut u = String::with_capacity(36);
    for (i, part) in [&h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..]]
        .into_iter()
        .enumerate()
    {
        if i > 0 {
            u.push('-');
        }
        u.push_str(part);
    }
    u
}

/// `prefix`, `sep`, then `body`, in one allocation.
fn joined(prefix: &str, sep: char, body: &str) -> String {
    let mut s = String::with_capacity(prefix.len() + 1 + body.len());
    s.push_str(prefix);
    s.push(sep);
    s.push_str(body);
    s
}

/// The pseudonym of `id` in `namespace`, in the id's shape.
pub fn pseudonym(keys: &Keys, namespace: &str, id: &str) -> String {
    pseudonym_in_round(keys, namespace, id, 0)
}

/// [`pseudonym`] drawn again: round `n` keys the id with a salt, so its
/// pseudonym keeps the shape and changes every byte it draws. An export
/// moves to the next round only when a pseudonym would contain an
/// original identity (`attempt-17` → `attempt-17e4…`).
fn pseudonym_in_round(keys: &Keys, namespace: &str, id: &str, round: u32) -> String {
    let salted = |x: &str| match round {
        0 => x.to_string(),
        n => format!("{x}#round{n}"),
    };
    let p = keys.pseudonym(namespace, &salted(id));
    if let Some((prefix, hex)) = prefixed_hex(id) {
        let mut new = hex_lower(&p[..16]);
        if hex.bytes().any(|c| c.is_ascii_uppercase()) {
            new.make_ascii_uppercase();
        }
        return joined(prefix, '_', &new);
    }
    if let Some((prefix, body)) = prefixed_token(id) {
        // Same prefix, same length, same alphabet: `toolu_01A9…` stays a
        // 24-character base62 `toolu_` id.
        let mut bytes = p.to_vec();
        bytes.extend_from_slice(&keys.pseudonym(namespace, &salted(&format!("{id}#2"))));
        let new: String = bytes[..body.len()]
            .iter()
            .map(|b| BASE62[*b as usize % BASE62.len()] as char)
            .collect();
        return joined(prefix, '_', &new);
    }
    if is_uuid(id) {
        let mut u = uuid_from(&p);
        if id.bytes().any(|c| c.is_ascii_uppercase()) {
            u.make_ascii_uppercase();
        }
        return u;
    }
    joined(namespace, '-', &hex_lower(&p[..12]))
}

impl Identities {
    /// Records `id` under `namespace` (the first namespace seen wins).
    pub fn add(&mut self, namespace: &str, id: &str) {
        if !id.is_empty() {
            self.ids
                .entry(id.to_string())
                .or_insert_with(|| namespace.to_string());
        }
    }

    /// Each identity and its namespace.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.ids.iter().map(|(i, n)| (i.as_str(), n.as_str()))
    }

    /// How many identities were collected.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether none were collected.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Renders every pseudonym; two identities with one pseudonym are an
    /// error. A pseudonym that would contain an original identity the
    /// gate looks for (in any form it is written in) is drawn again, or
    /// the gate would refuse the export at random (1 in 256 for
    /// `attempt-17`, whose pseudonym is `attempt-` and 24 hex digits).
    pub fn finish(self, keys: &Keys) -> Result<IdMap> {
        let originals = aho_corasick::AhoCorasick::new(
            self.ids
                .keys()
                .filter(|id| id.len() >= MIN_SWEPT_ID_BYTES)
                .flat_map(|id| derived_forms(id, id).into_iter().map(|(form, _)| form)),
        )
        .expect("identities are bounded");
        let holds_an_original = |id: &str, p: &str| {
            derived_forms(id, p)
                .iter()
                .any(|(_, f)| originals.is_match(f))
        };
        let mut map = BTreeMap::new();
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        for (id, ns) in &self.ids {
            let mut round = 0;
            let mut p = pseudonym(keys, ns, id);
            while holds_an_original(id, &p) {
                round += 1;
                if round > MAX_ROUNDS {
                    return Err(ExportError::invalid(
                        codes::integrity::IDENTITY_COLLISION,
                        "manifest.json",
                        format!(
                            "no pseudonym of a {}-byte identity in {MAX_ROUNDS} draws is free of the original identities",
                            id.len()
                        ),
                    ));
                }
                p = pseudonym_in_round(keys, ns, id, round);
            }
            if let Some(other) = seen.insert(p.clone(), id.clone()) {
                return Err(ExportError::invalid(
                    codes::integrity::IDENTITY_COLLISION,
                    "manifest.json",
                    format!(
                        "two identities ({} and {} bytes long) map to one pseudonym",
                        other.len(),
                        id.len()
                    ),
                ));
            }
            map.insert(id.clone(), (p, ns.clone()));
        }
        Ok(IdMap { map })
    }
}

/// Identity → pseudonym.
#[derive(Debug, Clone, Default)]
pub struct IdMap {
    /// Identity → (pseudonym, namespace).
    map: BTreeMap<String, (String, String)>,
}

impl IdMap {
    /// The pseudonym of a collected identity.
    pub fn get(&self, id: &str) -> Option<&str> {
        self.map.get(id).map(|(p, _)| p.as_str())
    }

    /// Every form a pseudonym takes in an export (the pseudonym and its
    /// derived forms), with the namespace of its identity: what the
    /// redaction report looks for.
    pub fn pseudonym_forms(&self) -> BTreeMap<String, &str> {
        let mut forms = BTreeMap::new();
        for (id, (p, ns)) in &self.map {
            for (_, form) in derived_forms(id, p) {
                forms.insert(form, ns.as_str());
            }
        }
        forms
    }

    /// Every original identity (for the final scan).
    pub fn originals(&self) -> impl Iterator<Item = &str> {
        self.map.keys().map(String::as_str)
    }

    /// Adds the identities long enough to sweep, with derived forms, to `b`.
    pub fn add_literals(&self, b: &mut LiteralsBuilder) {
        for (id, (p, _)) in &self.map {
            if id.len() < MIN_SWEPT_ID_BYTES {
                continue;
            }
            for (from, to) in derived_forms(id, p) {
                b.add_with_variants(&from, &to, LiteralKind::Identity);
            }
        }
    }
}

/// `(original, pseudonym)` pairs: the id itself and its derived forms.
pub fn derived_forms(id: &str, p: &str) -> Vec<(String, String)> {
    let mut v = vec![(id.to_string(), p.to_string())];
    let hexish = is_uuid(id) || prefixed_hex(id).is_some();
    if hexish {
        v.push((id.to_uppercase(), p.to_uppercase()));
        v.push((id.to_lowercase(), p.to_lowercase()));
    }
    if is_uuid(id) {
        let (a, b) = (id.replace('-', ""), p.replace('-', ""));
        v.push((a.to_lowercase(), b.to_lowercase()));
        v.push((a.to_uppercase(), b.to_uppercase()));
    }
    v.sort();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::ExportKey;
    use coffer_base::Digest;

    #[test]
    fn an_id_body_of_64_characters_after_the_longest_prefix_is_still_an_id() {
        assert_eq!(LONGEST_ID_PREFIX, "approval".len());
        let body = "a1".repeat(32);
        assert_eq!(
            shaped_id(&format!("approval_{body}")),
            Some(("approval", Scope::Correlation))
        );
        assert_eq!(shaped_id(&format!("approval_{body}x")), None);
        assert_eq!(
            shaped_id("evt_0123456789ab"),
            Some(("event", Scope::Record))
        );
        assert_eq!(shaped_id("evt_0123456789a"), None);
    }

    proptest::proptest! {
        /// `is_uuid` is the five dash-separated groups of 8, 4, 4, 4 and
        /// 12 hex digits.
        #[test]
        fn is_uuid_is_five_groups_of_hex(
            s in "[0-9a-fA-F-]{30,40}|[0-9a-f]{8}-[0-9a-fA-F]{4}-[0-9a-f]{4}-[0-9a-fg]{4}-[0-9a-f-]{11,13}",
        ) {
            let parts: Vec<&str> = s.split('-').collect();
            let groups = parts.len() == 5
                && parts
                    .iter()
                    .zip([8, 4, 4, 4, 12])
                    .all(|(p, n)| p.len() == n && is_hex(p));
            proptest::prop_assert_eq!(is_uuid(&s), groups);
        }
    }

    fn keys() -> Keys {
        ExportKey::from_bytes([9; 32]).for_policy(&Digest::of(b"00"))
    }

    #[test]
    fn shapes_are_kept() {
        let k = keys();
        let s = pseudonym(&k, "session", "sess_0123456789abcdef0123456789abcdef");
        assert!(
            s.starts_with("sess_") && s.len() == 37 && s != "sess_0123456789abcdef0123456789abcdef"
        );
        let u = pseudonym(&k, "run", "123e4567-e89b-42d3-a456-426614174000");
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "8", "version nibble 8: {u}");
        assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"));
        let o = pseudonym(&k, "bundle", "bundle-complete");
        assert!(o.starts_with("bundle-") && o.len() == 7 + 24);
        assert_eq!(
            o,
            pseudonym(&k, "bundle", "bundle-complete"),
            "deterministic"
        );
        let other = ExportKey::from_bytes([8; 32]).for_policy(&Digest::of(b"00"));
        assert_ne!(o, pseudonym(&other, "bundle", "bundle-complete"), "keyed");
    }

    #[test]
    fn no_pseudonym_contains_an_original_identity() {
        // `attempt-00` to `attempt-7f`: half of all first draws
        // (`attempt-` and 24 hex digits) begin with one of them.
        let mut ids = Identities::default();
        for n in 0..128u8 {
            ids.add("attempt", &format!("attempt-{n:02x}"));
        }
        let originals: Vec<String> = ids.iter().map(|(i, _)| i.to_string()).collect();
        let k = keys();
        let drawn_again = originals
            .iter()
            .filter(|id| {
                originals
                    .iter()
                    .any(|o| pseudonym(&k, "attempt", id).contains(o.as_str()))
            })
            .count();
        assert!(
            drawn_again > 30,
            "the case arises: {drawn_again} first draws hold an original"
        );
        let map = ids.finish(&k).unwrap();
        for id in &originals {
            let p = map.get(id).unwrap();
            assert!(p.starts_with("attempt-") && p.len() == 8 + 24, "{p}");
            assert!(
                !originals.iter().any(|o| p.contains(o.as_str())),
                "{id} -> {p}"
            );
        }
    }

    #[test]
    fn derived_forms_follow() {
        let k = keys();
        let mut ids = Identities::default();
        ids.add("session", "123E4567-E89B-42D3-A456-426614174000");
        let m = ids.finish(&k).unwrap();
        let mut b = LiteralsBuilder::default();
        m.add_literals(&mut b);
        let l = b.build();
        let p = m
            .get("123E4567-E89B-42D3-A456-426614174000")
            .unwrap()
            .to_string();
        let (out, _) = l.replace("dir/123e4567e89b42d3a456426614174000/x").unwrap();
        assert_eq!(out, format!("dir/{}/x", p.replace('-', "").to_lowercase()));
    }
}
