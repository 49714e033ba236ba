//! Scrubbing records held in memory: the same two passes as
//! `export create` and the same final scan as the readback gate, without a
//! tree on disk. Used by the property tests and the fuzz target, whose
//! invariant is: whatever goes in, the final scan finds nothing in what
//! comes out, and every record still serializes and parses.

use std::collections::BTreeSet;

use coffer_store::issue::Issue;
use serde_json::Value;

use crate::error::Result;
use crate::key::ExportKey;
use crate::passes::Detectors;
use crate::policy::Policy;
use crate::readback::{Expectations, FinalScan};
use crate::scrub::{Counts, TextState};

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
    for r in records {
        col.value(&coffer_store::json::Node::from(r), 0);
    }
    for l in lines {
        col.string(l, 0);
    }
    let mut s = detectors.scrubber(policy, key, col.found)?;
    let mut counts = Counts::default();
    let mut out = Vec::with_capacity(records.len());
    for r in records {
        let mut v = r.clone();
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
    for (i, r) in out.records.iter().enumerate() {
        // What the export writes is what the scan must read: serialize, parse.
        let text = serde_json::to_string(r).expect("values serialize");
        let back =
            coffer_store::json::parse_node(text.as_bytes(), &coffer_store::json::Limits::EVIDENCE)
                .map_err(|e| {
                    crate::error::ExportError::Invalid(vec![Issue::from(("records", e))])
                })?;
        scan.value(&back, "records", &mut format!("/{i}"));
    }
    for (i, l) in out.lines.iter().enumerate() {
        scan.string(l, "lines", &format!("/{i}"));
    }
    Ok(scan.findings)
}
