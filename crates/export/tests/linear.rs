//! Export work is linear in its input, for every rule: inputs built to
//! repeat what a matcher could revisit (labels, keywords, escapes,
//! encodings, stream pieces) are doubled, and the bytes the matchers
//! visit (`coffer_export::detect::work`) must at most double, with a small
//! allowance for fixed costs. Alone in its test binary, so no other test
//! adds to the count. (A label repeated 8,000 times once took 20 s,
//! against 0.03 s to scan.)

use coffer_export::in_memory::{final_scan, sanitize};
use coffer_export::key::ExportKey;
use coffer_export::policy::{Policy, PolicyOptions};
use serde_json::json;

fn policy() -> Policy {
    let doc = json!({"schemaVersion": "coffer.export-policy/v1", "sharingClass": "partner",
        "maxArtifactBytes": 1 << 30, "maxStringBytes": 1 << 30,
        "sensitiveValues": ["Tr0ub4dor&3-horse"], "localRoots": ["/data/project"]});
    Policy::from_value(
        &doc,
        "p",
        std::path::Path::new("."),
        &PolicyOptions::default(),
    )
    .unwrap()
}

/// Bytes visited to export `records` and read them back. (What is
/// found does not matter here: a label repeated into a value longer than
/// a stream's window is refused, `limit.stream_window`, and such inputs
/// are what this test is made of.)
fn work(records: &[serde_json::Value]) -> u64 {
    let (p, key) = (policy(), ExportKey::from_bytes([7; 32]));
    coffer_export::detect::work::count();
    let before = coffer_export::detect::work::visited();
    if let Ok(out) = sanitize(records, &[], &p, &key) {
        final_scan(&out, &p).unwrap();
    }
    coffer_export::detect::work::visited() - before
}

/// One string of `unit` repeated `n` times, and the same text streamed
/// as `n` deltas of one unit each.
fn shapes(unit: &str, n: usize) -> Vec<serde_json::Value> {
    let mut v = vec![json!({"type": "assistant.message", "text": unit.repeat(n)})];
    v.extend((0..n).map(|_| json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": unit}})));
    v
}

const UNITS: &[&str] = &[
    "password=",
    "password: ",
    "token = '",
    "api_key\":\"",
    "Authorization: Bearer ",
    "-----BEGIN RSA PRIVATE KEY-----\n",
    "ghp_",
    "AKIA",
    "&#103;",
    "%2F",
    "\\u0067",
    "/home/u/",
    "/data//project/",
    "secret ",
    "[REDACTED_SECRET:",
    "aGVsbG8gd29ybGQ",
    "00000000: 6768 705f  ghp_\n",
    "x=1;",
    "<password>",
    "user@host:~$ ",
    "0x67, ",
    "103,\n ",
    "\\147",
    "{\"kty\":\"EC\",\"d\":\"",
    "Private-Lines: 9\nAAAA\n",
];

/// `None` when `unit` repeated (48 KiB, past a stream's window and scan
/// step, so both sizes pay the same fixed share) and repeated twice as
/// often cost work in proportion, in one string and as a stream of
/// deltas, each on its own (a stream refused for its window skips its
/// second pass); else what they cost.
fn superlinear(unit: &str) -> Option<String> {
    let n = (48 << 10) / unit.len();
    let (small, large) = (shapes(unit, n), shapes(unit, 2 * n));
    for (shape, a, b) in [
        ("one string", 0..1, 0..1),
        ("deltas", 1..n + 1, 1..2 * n + 1),
    ] {
        let one = work(&small[a]);
        let two = work(&large[b]);
        // Fixed costs (automata, the literals) come once: 2.25x plus
        // 64 KiB is linear; quadratic work is 4x.
        if two > one * 9 / 4 + (64 << 10) {
            return Some(format!(
                "{unit:?} as {shape}: {one} bytes visited for {n} repeats, {two} for {}",
                2 * n
            ));
        }
    }
    None
}

/// One test, so that no other test of this binary adds to the count while
/// it measures: every unit alone, then twelve combinations of two or
/// three drawn by a fixed generator.
#[test]
fn doubling_the_input_at_most_doubles_the_work() {
    let mut cases: Vec<String> = UNITS.iter().map(|u| u.to_string()).collect();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for i in 0..12 {
        let mut unit = String::new();
        for _ in 0..2 + i % 2 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            unit.push_str(UNITS[(x % UNITS.len() as u64) as usize]);
        }
        cases.push(unit);
    }
    let bad: Vec<String> = cases.iter().filter_map(|u| superlinear(u)).collect();
    assert!(bad.is_empty(), "{bad:#?}");
}
