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

#[derive(Default)]
struct Object {
    /// `"kty"` with a key type seen among its members.
    jwk: bool,
    /// Values of its private members, kept until the object ends.
    pending: Vec<Range<usize>>,
    /// The last key read, while its value is being read.
    key: Option<Range<usize>>,
    /// After a `:` (a value comes next), before a `,`.
    in_value: bool,
}

/// The spans of every private JWK member's string value in `s`, read by
/// a tolerant tokenizer (strings, braces, brackets, `:` and `,`; anything
/// else skipped). Linear in `s`; memory bounded by [`MAX_DEPTH`] and
/// [`MAX_PENDING`].
pub fn private_values(s: &[u8], out: &mut Vec<Range<usize>>) {
    if !mentions_kty(s) {
        return;
    }
    crate::detect::work::visit(s.len());
    // `None` is an array.
    let mut stack: Vec<Option<Object>> = Vec::new();
    let mut deeper = 0usize;
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'"' => {
                let start = i + 1;
                let mut j = start;
                while j < s.len() && s[j] != b'"' {
                    j += if s[j] == b'\\' { 2 } else { 1 };
                }
                let end = j.min(s.len());
                if deeper == 0 {
                    string_token(&mut stack, s, start..end);
                }
                i = end + 1;
                continue;
            }
            b'{' | b'[' if stack.len() == MAX_DEPTH => deeper += 1,
            b'}' | b']' if deeper > 0 => deeper -= 1,
            b'{' => stack.push(Some(Object::default())),
            b'[' => stack.push(None),
            b'}' | b']' => {
                if let Some(Some(o)) = stack.pop() {
                    close(o, out);
                }
                value_done(&mut stack);
            }
            b':' => {
                if let Some(Some(o)) = stack.last_mut() {
                    o.in_value = true;
                }
            }
            b',' => value_done(&mut stack),
            _ => {}
        }
        i += 1;
    }
    // Output cut short: what is known of the unclosed objects counts.
    while let Some(top) = stack.pop() {
        if let Some(o) = top {
            close(o, out);
        }
    }
}

fn string_token(stack: &mut [Option<Object>], s: &[u8], span: Range<usize>) {
    let Some(Some(o)) = stack.last_mut() else {
        return;
    };
    if !o.in_value {
        o.key = Some(span);
        return;
    }
    let Some(key) = o.key.clone().map(|k| &s[k]) else {
        return;
    };
    let value = &s[span.clone()];
    if key == b"kty" && KEY_TYPES.contains(&value) {
        o.jwk = true;
    } else if PRIVATE.contains(&key)
        && value.len() >= MIN_VALUE
        && value
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || b"-_=".contains(c))
        && o.pending.len() < MAX_PENDING
    {
        o.pending.push(span);
    }
}

/// A value ended: the object it was in expects a key next.
fn value_done(stack: &mut [Option<Object>]) {
    if let Some(Some(o)) = stack.last_mut() {
        o.in_value = false;
        o.key = None;
    }
}

/// An object ended: its private values count when it is a JWK.
fn close(o: Object, out: &mut Vec<Range<usize>>) {
    if o.jwk {
        out.extend(o.pending);
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
