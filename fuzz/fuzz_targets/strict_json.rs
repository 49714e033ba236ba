//! The strict reader never panics, both modes agree, and what it accepts
//! serializes to JSON that it accepts again with the same value.
#![no_main]
use coffer_base::json::{self, Limits};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let built = json::parse(data, &Limits::DOCUMENT);
    let checked = json::check(data, &Limits::DOCUMENT);
    assert_eq!(built.is_ok(), checked.is_ok());
    if let Ok(v) = built {
        let again = json::parse(
            serde_json::to_string(&v).unwrap().as_bytes(),
            &Limits::DOCUMENT,
        )
        .unwrap();
        assert_eq!(again, v);
        let _ = coffer_base::json::canonical::canonicalize(&v);
    }
});
