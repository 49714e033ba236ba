//! Scrubbing records held in memory: the same two passes as
//! `export create` and the same final scan as the readback gate, without a
//! tree on disk. Used by the property tests and the fuzz target, whose
//! invariant is: whatever goes in, the final scan finds nothing in what
//! comes out, and every record still serializes and parses.

use coffer_base::codes;
use std::collections::BTreeSet;

use coffer_base::issue::Issue;
use serde_json::Value;

use crate::error::Result;
use crate::gate::{Expectations, FinalScan};
use crate::key::ExportKey;
use crate::passes::Detectors;
use crate::policy::Policy;
use crate::rewrite::{Counts, TextState};

/// What [`sanitize`] produced.
#[derive(Debug, Clone)]
pub struct Sanitized {
    /// The rewritten records.
    pub records: Vec<Value>,
    /// The rewritten text lines.
    pub lines: Vec<String>,
    /// Placeholders issued.
    pub issued: BTreeSet<String>,
    /// Original identities.
    pub identities: Vec<String>,
    /// Local user names.
    pub users: Vec<String>,
    /// Transformations made.
    pub counts: Counts,
}

/// Runs both passes over `records` (JSON) and `lines` (a text artifact).
pub fn sanitize(
    records: &[Value],
    lines: &[String],
    policy: &Policy,
    key: &ExportKey,
) -> Result<Sanitized> {
    let detectors = Detectors::for_policy(policy)?;
    let mut col = detectors.collector(policy);
    let det = col.detector();
    let mut streams = crate::detect::streams::Reassembler::new(det);
    for (n, r) in records.iter().enumerate() {
        let node = coffer_base::json::Node::from(r);
        col.value(&node, 0);
        streams.feed(n as u64, crate::detect::streams::record(&node));
    }
    streams.finish();
    if let Some(w) = &streams.exceeded {
        return Err(crate::error::ExportError::invalid(
            codes::limit::STREAM_WINDOW,
            &format!("records#/{}", w.line),
            "a secret spread over a stream's records reaches further back than its window",
        ));
    }
    for c in &streams.cuts {
        col.found_elsewhere(&c.secret, &c.rule);
    }
    for l in lines {
        col.string(l, 0);
    }
    let mut s = detectors.scrubber(policy, key, col.found)?;
    let mut counts = Counts::default();
    let mut out = Vec::with_capacity(records.len());
    for (n, r) in records.iter().enumerate() {
        let mut v = r.clone();
        let cuts: Vec<_> = streams
            .cuts
            .iter()
            .filter(|c| c.line == n as u64)
            .cloned()
            .collect();
        counts.redacted_secret +=
            crate::detect::streams::apply(&mut v, &cuts, &mut |rule, secret| {
                s.secret_placeholder(rule, secret)
            });
        s.value(&mut v, true, &mut counts)?;
        out.push(v);
    }
    let mut st = TextState::default();
    let text = lines
        .iter()
        .map(|l| s.line(l, true, &mut st, &mut counts))
        .collect();
    Ok(Sanitized {
        records: out,
        lines: text,
        issued: s.issued().clone(),
        identities: s.ids().originals().map(str::to_string).collect(),
        users: s.users().map(str::to_string).collect(),
        counts,
    })
}

/// The readback's final scan over sanitized output; every issue is a leak.
pub fn final_scan(out: &Sanitized, policy: &Policy) -> Result<Vec<Issue>> {
    let exp = Expectations {
        policy: Some(policy),
        issued: Some(out.issued.clone()),
        identities: out.identities.clone(),
        users: out.users.clone(),
    };
    let mut scan = FinalScan::new(&exp)?;
    // What the export writes is what the scan must read: the records as
    // JSON Lines, read as the readback reads a file (streams included).
    let mut jsonl = Vec::new();
    for r in &out.records {
        serde_json::to_writer(&mut jsonl, r).expect("values serialize");
        jsonl.push(b'\n');
    }
    if !jsonl.is_empty() {
        scan.jsonl(&mut &jsonl[..], "records")
            .map_err(|i| crate::error::ExportError::Invalid(vec![i]))?;
    }
    for (i, l) in out.lines.iter().enumerate() {
        scan.string(l, "lines", &format!("/{i}"));
    }
    Ok(scan.findings)
}
