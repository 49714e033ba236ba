//! Scrubs JSONL records from standard input as a partner export would, and
//! prints them with the final scan's findings on standard error.
//!
//! ```sh
//! cargo run -q -p coffer-export --example sanitize -- POLICY.json < records.jsonl
//! ```
//!
//! The key is fixed (pseudonyms are stable across runs, not secret): this is
//! for looking at what the scrubber does to a sample, not for exports. With
//! `--collected`, it prints what the first pass collected (rule and value,
//! or user and host names) instead: the values are what an export removes,
//! so use it on benign samples only.

use std::io::{BufRead, Write};

use coffer_export::in_memory::{final_scan, sanitize};
use coffer_export::key::ExportKey;
use coffer_export::policy::{Policy, PolicyOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let policy_path = std::env::args()
        .nth(1)
        .ok_or("usage: sanitize POLICY.json < records.jsonl")?;
    let policy = Policy::load(
        std::path::Path::new(&policy_path),
        &PolicyOptions::default(),
    )?;
    let mut records = Vec::new();
    for line in std::io::stdin().lock().lines() {
        records.push(serde_json::from_str(&line?)?);
    }
    if std::env::args().any(|a| a == "--collected") {
        return print_collected(&records, &policy);
    }
    let out = sanitize(&records, &[], &policy, &ExportKey::from_bytes([7; 32]))?;
    let mut stdout = std::io::stdout().lock();
    for r in &out.records {
        writeln!(stdout, "{}", serde_json::to_string(r)?)?;
    }
    for issue in final_scan(&out, &policy)? {
        eprintln!("{}: {} ({:?})", issue.code, issue.message, issue.location());
    }
    eprintln!("{:?}", out.counts);
    Ok(())
}

fn print_collected(
    records: &[serde_json::Value],
    policy: &Policy,
) -> Result<(), Box<dyn std::error::Error>> {
    let detectors = coffer_export::passes::Detectors::for_policy(policy)?;
    let mut col = detectors.collector(policy);
    for r in records {
        col.value(&coffer_base::json::Node::from(r), 0);
    }
    for (value, rule) in &col.found.secrets {
        println!("secret\t{rule}\t{value:?}");
    }
    for u in &col.found.names.users {
        println!("user\t{u:?}");
    }
    for h in &col.found.names.hosts {
        println!("host\t{h:?}");
    }
    Ok(())
}
