//! Which runs a query selects (`bundle ls`, `events`, `bundle stats`,
//! `grep`): the catalog's filters, then the id glob, the labels, and the
//! facts (verifier outcome, fixture, touched files). Each selected run
//! comes with its labels and facts.

use std::collections::BTreeMap;

use coffer_store::Store;
use serde::Serialize;

use super::facts::{self, Facts};
use super::labels;
use super::records::{self, BundleFilter, BundleRow};
use crate::error::Result;
use crate::vocab::VerifierOutcome;

/// What selects runs; every part is optional and all combine with AND.
#[derive(Debug, Clone, Default)]
pub struct RunQuery {
    /// The catalog's own columns.
    pub filter: BundleFilter,
    /// Bundle ids matching this glob (`*`, `?`).
    pub id: Option<String>,
    /// Labels: each key present, its value matching the glob.
    pub labels: Vec<(String, String)>,
    /// The verifier outcome.
    pub verifier: Option<VerifierOutcome>,
    /// Some file the workspace patch touches matches this glob (SQLite
    /// `GLOB`: `*` also crosses `/`).
    pub touched: Option<String>,
    /// The fixture digest, in full or as a prefix of its hex (with or
    /// without `sha256:`).
    pub fixture: Option<String>,
}

/// One selected run.
#[derive(Debug, Clone, Serialize)]
pub struct Run {
    /// Its catalog row.
    #[serde(flatten)]
    pub row: BundleRow,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// Its facts.
    #[serde(flatten)]
    pub facts: Facts,
}

/// The runs `q` selects, in ingest order.
pub fn select(store: &Store, q: &RunQuery) -> Result<Vec<Run>> {
    let fixture = q.fixture.as_deref().map(fixture_prefix);
    let mut out = Vec::new();
    for row in records::bundles(store.catalog(), &q.filter)? {
        if q.id
            .as_deref()
            .is_some_and(|g| !super::stream::glob(g, &row.bundle_id))
        {
            continue;
        }
        let l = labels::of(store.catalog(), &row.bundle_id)?;
        if !labels::matches(&l, &q.labels) {
            continue;
        }
        let facts = facts::of(store, &row)?;
        if q.verifier.is_some_and(|v| v != facts.verifier) {
            continue;
        }
        if let Some(p) = &fixture {
            let hex = facts.fixture_digest.map(|d| d.to_string());
            if !hex.is_some_and(|h| h.starts_with(p.as_str())) {
                continue;
            }
        }
        if let Some(g) = &q.touched {
            if !touches(store, &row, g)? {
                continue;
            }
        }
        out.push(Run {
            row,
            labels: l,
            facts,
        });
    }
    Ok(out)
}

/// `sha256:` and lower-case hex, for a prefix comparison.
fn fixture_prefix(arg: &str) -> String {
    let hex = arg
        .strip_prefix("sha256:")
        .unwrap_or(arg)
        .to_ascii_lowercase();
    format!("sha256:{hex}")
}

/// Whether a file `row`'s patch touches matches `glob` (SQLite's `GLOB`,
/// as the catalog's other globs).
fn touches(store: &Store, row: &BundleRow, glob: &str) -> Result<bool> {
    let r = store.catalog().reader();
    if facts::stored(store, &row.bundle_id)?.is_some() {
        let hit = r.query_one(
            "SELECT 1 FROM bundle_touched WHERE bundle_id = ?1 AND path GLOB ?2 LIMIT 1",
            &[&row.bundle_id, &glob],
            |_| Ok(()),
        )?;
        return Ok(hit.is_some());
    }
    for p in facts::touched(store, row)? {
        let hit = r.query_one("SELECT ?1 GLOB ?2", &[&p, &glob], |r| r.get::<i64>(0))?;
        if hit == Some(1) {
            return Ok(true);
        }
    }
    Ok(false)
}
