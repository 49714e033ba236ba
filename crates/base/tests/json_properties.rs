//! Property tests for the strict JSON and JSONL readers, which face
//! untrusted input.
//! Case counts are small so CI stays fast; raise PROPTEST_CASES to soak.

use coffer_base::json::canonical::canonicalize;
use coffer_base::json::{self, JsonlChecker, JsonlLimits, Limits};
use proptest::prelude::*;
use serde_json::Value;

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-(1i64 << 53) + 1..(1i64 << 53)).prop_map(Value::from),
        (-1e12f64..1e12).prop_map(|f| serde_json::Number::from_f64(f)
            .map(Value::Number)
            .unwrap_or(Value::Null)),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(".{0,8}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Whatever serde_json writes (unique keys, safe integers) the strict
    /// reader accepts and reads back equal, in both modes.
    #[test]
    fn strict_reader_accepts_what_a_conforming_writer_writes(v in json_value()) {
        for text in [serde_json::to_string(&v).unwrap(), serde_json::to_string_pretty(&v).unwrap()] {
            let back = json::parse(text.as_bytes(), &Limits::DOCUMENT).unwrap();
            prop_assert_eq!(&back, &v);
            json::check(text.as_bytes(), &Limits::DOCUMENT).unwrap();
        }
    }

    /// Arbitrary bytes never panic, and both modes agree on acceptance.
    #[test]
    fn strict_reader_never_panics_and_modes_agree(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let built = json::parse(&bytes, &Limits::DOCUMENT);
        let checked = json::check(&bytes, &Limits::DOCUMENT);
        prop_assert_eq!(built.is_ok(), checked.is_ok());
        if let (Err(a), Err(b)) = (&built, &checked) {
            prop_assert_eq!(a.code, b.code);
        }
    }

    /// Mutating one byte of a valid document either still parses or fails
    /// with a coded error, never a panic; errors point inside the input.
    #[test]
    fn mutated_documents_fail_cleanly(v in json_value(), pos in any::<usize>(), byte in any::<u8>()) {
        let mut bytes = serde_json::to_vec(&v).unwrap();
        let i = pos % bytes.len();
        bytes[i] = byte;
        if let Err(e) = json::parse(&bytes, &Limits::DOCUMENT) {
            prop_assert!(e.offset <= bytes.len());
            prop_assert!(e.code.contains('.'));
        }
    }

    /// Canonical form is a fixed point: parsing it and canonicalizing again
    /// gives the same bytes.
    #[test]
    fn canonical_json_is_idempotent(v in json_value()) {
        let c = canonicalize(&v);
        let again = canonicalize(&serde_json::from_str::<Value>(&c).unwrap());
        prop_assert_eq!(c, again);
    }

    /// JSONL checked in arbitrary chunkings gives the same verdict as whole.
    #[test]
    fn jsonl_verdict_does_not_depend_on_chunking(lines in prop::collection::vec(json_value(), 1..6), cut in any::<usize>(), garbage in any::<bool>()) {
        let mut text: Vec<u8> = lines.iter().flat_map(|v| { let mut l = serde_json::to_vec(v).unwrap(); l.push(b'\n'); l }).collect();
        if garbage { text.extend_from_slice(b"{oops\n"); }
        let whole = { let mut c = JsonlChecker::new(JsonlLimits::EVIDENCE); c.feed(&text).and_then(|_| c.finish()) };
        let split = { let mut c = JsonlChecker::new(JsonlLimits::EVIDENCE); let k = cut % (text.len() + 1); c.feed(&text[..k]).and_then(|_| c.feed(&text[k..])).and_then(|_| c.finish()) };
        prop_assert_eq!(whole.map_err(|e| e.code), split.map_err(|e| e.code));
        prop_assert_eq!(whole_ok(&text), !garbage);
    }
}

fn whole_ok(text: &[u8]) -> bool {
    let mut c = JsonlChecker::new(JsonlLimits::EVIDENCE);
    c.feed(text).and_then(|_| c.finish()).is_ok()
}
