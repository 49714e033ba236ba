//! The scrubber's invariant: whatever records and text go in, the final
//! scan finds nothing in what comes out, and every record still serializes
//! and parses. Input: bytes split on the first NUL into JSONL records (only
//! lines the strict reader accepts are used) and text lines.
#![no_main]
use std::path::Path;
use std::sync::OnceLock;

use coffer_export::in_memory::{final_scan, sanitize};
use coffer_export::key::ExportKey;
use coffer_export::policy::{Policy, PolicyOptions};
use libfuzzer_sys::fuzz_target;

fn policy() -> &'static Policy {
    static P: OnceLock<Policy> = OnceLock::new();
    P.get_or_init(|| {
        let doc = serde_json::json!({"schemaVersion": "coffer.export-policy/v1",
            "sharingClass": "public", "maxArtifactBytes": 1 << 30, "maxStringBytes": 256,
            "sensitiveValues": ["c0rrect-h0rse-battery"], "localRoots": ["/home/dev/ws"]});
        Policy::from_value(&doc, "policy.json", Path::new("."), &PolicyOptions::default()).unwrap()
    })
}

fuzz_target!(|data: &[u8]| {
    let (json_part, text_part) = match data.iter().position(|b| *b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let limits = coffer_base::json::Limits { max_bytes: 1 << 16, max_depth: 32, max_nodes: 4096 };
    let records: Vec<serde_json::Value> = json_part
        .split(|b| *b == b'\n')
        .filter_map(|l| coffer_base::json::parse(l, &limits).ok())
        .collect();
    let lines: Vec<String> = std::str::from_utf8(text_part)
        .map(|t| t.lines().map(str::to_string).collect())
        .unwrap_or_default();
    let out = sanitize(&records, &lines, policy(), &ExportKey::from_bytes([5; 32])).unwrap();
    let findings = final_scan(&out, policy()).unwrap();
    assert!(findings.is_empty(), "{findings:?}");
});
