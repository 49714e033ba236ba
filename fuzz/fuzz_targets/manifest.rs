//! Manifest validation (strict JSON, schema, contract rules) never panics
//! and every issue it reports carries a class.name code.
#![no_main]
use coffer_evidence::bundle::inspect::check_manifest;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut issues = Vec::new();
    let _ = check_manifest(data, &mut issues);
    for i in &issues {
        assert!(i.code.contains('.'), "{i:?}");
    }
});
