//! Private JSON Web Keys (RFC 7517, 7518): in an object whose `kty` is
//! `RSA`, `EC`, `OKP` or `oct`, the members that hold the private key
//! (`d`; RSA's `p`, `q`, `dp`, `dq`, `qi`; a symmetric key's `k`) are
//! secrets, whatever else the object holds. A public key (`n`, `e`, `x`,
//! `y`) is not. A JWK is JSON by definition: the structured passes ask
//! [`is_private_jwk`] and [`private_member`] of every object, and text (a
//! tool's output, a file in a patch) is read by a tolerant tokenizer, in
//! any key order (`json.dumps(sort_keys=True)` puts `d` before `kty`).

use std::ops::Range;
use std::sync::LazyLock;

use memchr::memmem::Finder;

use crate::detect::json_text;
use crate::detect::names::StrLeaf;

/// Rule id of a private JWK member's value.
pub const RULE: &str = "jwk-private-key";

/// The key types whose objects may hold private members.
const KEY_TYPES: &[&[u8]] = &[b"RSA", b"EC", b"OKP", b"oct"];

/// The members that hold a private key.
const PRIVATE: &[&[u8]] = &[b"d", b"p", b"q", b"dp", b"dq", b"qi", b"k"];

/// The shortest private value taken in text: a 128-bit `k` is 22
/// base64url characters; shorter ones are a document's examples.
const MIN_VALUE: usize = 16;

/// JSON objects and arrays open at once; deeper ones are only counted.
const MAX_DEPTH: usize = 64;

/// Values one object keeps until its `kty` is known (a JWK has at most
/// six private members; more is not a key).
const MAX_PENDING: usize = 8;

static KTY: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"kty\""));

/// The shortest text that holds a private JWK's type and a private
/// value: `{"kty":"oct","k":"` and [`MIN_VALUE`] characters.
const MIN_TEXT: usize = 18 + MIN_VALUE;

/// Whether `s` may hold a JWK: the cheap test before [`private_values`]
/// (most strings are short: a search costs more than their length).
#[inline]
pub fn might_hold(s: &[u8]) -> bool {
    s.len() >= MIN_TEXT && KTY.find(s).is_some()
}

/// Whether a line of text may belong to a JWK: it says `"kty"`.
#[inline]
pub fn mentions_kty(line: &[u8]) -> bool {
    line.len() >= 5 && KTY.find(line).is_some()
}

/// Whether a JSON object is a JWK whose type has private members;
/// `member` looks a member up.
pub fn is_private_jwk<'v, V: StrLeaf + 'v>(member: impl Fn(&str) -> Option<&'v V>) -> bool {
    member("kty")
        .and_then(StrLeaf::leaf_str)
        .is_some_and(|t| KEY_TYPES.contains(&t.as_bytes()))
}

/// Whether a JWK's member of this name holds its private key.
pub fn private_member(name: &str) -> bool {
    PRIVATE.contains(&name.as_bytes())
}

/// What the reader keeps of an object.
#[derive(Default)]
struct Object {
    /// `"kty"` with a key type seen among its members.
    jwk: bool,
    /// Values of its private members, kept until the object ends.
    pending: Vec<Range<usize>>,
}

/// The text reader: private values, into `out`.
struct Keys<'a> {
    s: &'a [u8],
    out: &'a mut Vec<Range<usize>>,
}

impl json_text::Objects for Keys<'_> {
    type Object = Object;

    fn open(&mut self, _key: Option<&[u8]>) -> Object {
        Object::default()
    }

    fn member(
        &mut self,
        o: &mut Object,
        _parent: Option<&mut Object>,
        key: Option<&[u8]>,
        value: Range<usize>,
    ) {
        let Some(key) = key else {
            return;
        };
        let v = &self.s[value.clone()];
        if key == b"kty" && KEY_TYPES.contains(&v) {
            o.jwk = true;
        } else if PRIVATE.contains(&key)
            && v.len() >= MIN_VALUE
            && v.iter()
                .all(|c| c.is_ascii_alphanumeric() || b"-_=".contains(c))
            && o.pending.len() < MAX_PENDING
        {
            o.pending.push(value);
        }
    }

    /// An object ended: its private values count when it is a JWK.
    fn close(&mut self, o: Object) {
        if o.jwk {
            self.out.extend(o.pending);
        }
    }
}

/// The spans of every private JWK member's string value in `s`, read by
/// a tolerant tokenizer ([`json_text::objects`]). Linear in `s`; memory
/// bounded by [`MAX_DEPTH`] and [`MAX_PENDING`].
pub fn private_values(s: &[u8], out: &mut Vec<Range<usize>>) {
    if mentions_kty(s) {
        crate::detect::work::visit(s.len());
        json_text::objects(s, MAX_DEPTH, &mut Keys { s, out });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy;

    const D: &str = "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU";
    const P: &str = "83i-7IvMGXoMXCskv73TKr8637FiO7Z27zv8oj6pbWUQyLPQBQxtPVnwD20R";

    fn found(s: &str) -> Vec<&str> {
        let mut out = Vec::new();
        private_values(s.as_bytes(), &mut out);
        out.into_iter().map(|r| &s[r]).collect()
    }

    #[test]
    fn private_members_of_a_key_go_in_any_order_and_layout() {
        let ec = format!(
            r#"{{"kty":"EC","crv":"P-256","x":"MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4","d":"{D}"}}"#
        );
        assert_eq!(found(&ec), [D]);
        // Sorted keys put `d` first; a set of keys, pretty-printed.
        let set = format!(
            "{{\n  \"keys\": [\n    {{\n      \"d\": \"{D}\",\n      \"e\": \"AQAB\",\n      \"kty\": \"RSA\",\n      \"p\": \"{P}\"\n    }}\n  ]\n}}"
        );
        assert_eq!(found(&set), [D, P]);
        // Output cut before the object closes still counts.
        assert_eq!(found(&ec[..ec.len() - 1]), [D]);
    }

    #[test]
    fn public_keys_other_objects_and_short_values_stay() {
        let public = r#"{"kty":"RSA","n":"0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw","e":"AQAB"}"#;
        assert_eq!(found(public), Vec::<&str>::new());
        let not_a_key = format!(r#"{{"type":"point","d":"{D}"}}"#);
        assert_eq!(found(&not_a_key), Vec::<&str>::new());
        assert_eq!(found(r#"{"kty":"oct","k":"c2VjcmV0"}"#), Vec::<&str>::new());
        // A member of a nested object is that object's.
        let nested = format!(r#"{{"kty":"EC","meta":{{"d":"{D}"}}}}"#);
        assert_eq!(found(&nested), Vec::<&str>::new());
    }

    proptest::proptest! {
        /// A private key's members are found, and only they, whatever the
        /// order of its members, its layout and the JSON around it (with
        /// strings full of braces, quotes and escapes).
        #[test]
        fn a_keys_private_values_are_found_wherever_it_stands(
            order in proptest::sample::subsequence(vec![0usize, 1, 2, 3, 4], 5)
                .prop_shuffle(),
            wrappers in proptest::collection::vec(
                (proptest::bool::ANY, "[a-z{}\\[\\]\"\\\\:, ]{0,12}"),
                0..4,
            ),
            pretty in proptest::bool::ANY,
        ) {
            let members = [("kty", "RSA"), ("d", D), ("n", "AQAB-not-private"), ("p", P), ("e", "AQAB")];
            let mut key = serde_json::Map::new();
            for i in &order {
                key.insert(members[*i].0.into(), members[*i].1.into());
            }
            let mut doc = serde_json::Value::Object(key);
            for (array, noise) in wrappers {
                doc = if array {
                    serde_json::json!([noise, doc, {"d": D}])
                } else {
                    serde_json::json!({"note": noise, "jwk": doc, "kty": "RSA"})
                };
            }
            let text = if pretty {
                serde_json::to_string_pretty(&doc).unwrap()
            } else {
                doc.to_string()
            };
            let expect: Vec<&str> = order
                .iter()
                .filter_map(|i| match members[*i].0 {
                    "d" | "p" => Some(members[*i].1),
                    _ => None,
                })
                .collect();
            // A wrapper object's own `kty` makes it no key: its `jwk`
            // member is an object, not a private value.
            proptest::prop_assert_eq!(found(&text), expect);
        }
    }

    #[test]
    fn the_structured_test_reads_the_key_type() {
        let v: serde_json::Value = serde_json::json!({"kty": "OKP", "d": D});
        assert!(is_private_jwk(|k| v.get(k)));
        let v: serde_json::Value = serde_json::json!({"kty": "RSA-OAEP", "d": D});
        assert!(!is_private_jwk(|k| v.get(k)));
        assert!(private_member("qi") && !private_member("n") && !private_member("kid"));
    }
}
