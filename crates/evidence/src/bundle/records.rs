//! Bundle rows in the catalog: insert (inside the ingest transaction) and queries.

use crate::ids::{
    ArtifactId, AttemptId, BundleId, BundleRef, FixtureId, HarnessId, ModelId, RunId, TaskId,
};
use crate::vocab::{FailureClass, StopReason};
use coffer_base::codes;
use std::collections::HashMap;

use super::model::Manifest;
use super::safe_path::MANIFEST;
use crate::vocab::{AssessmentMode, Authority, Kind, Qualification, SharingClass, TerminalState};
use coffer_base::digest::Digest;
use coffer_store::catalog::Catalog;

use crate::error::{EvidenceError, Result};
use coffer_store::rows::{Row, Writer};

/// Root kind of everything a bundle holds.
pub const BUNDLE_ROOT: &str = "bundle";

/// One ingested bundle.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BundleRow {
    /// Bundle id.
    pub bundle_id: BundleId,
    /// Digest of the stored manifest bytes.
    pub manifest_digest: Digest,
    /// Run id.
    pub run_id: RunId,
    /// Attempt id.
    pub attempt_id: AttemptId,
    /// Attempt number.
    pub attempt_number: u64,
    /// Attempt this one retries.
    pub retry_of: Option<AttemptId>,
    /// Task id.
    pub task_id: TaskId,
    /// Fixture id.
    pub fixture_id: FixtureId,
    /// Model provider.
    pub model_provider: String,
    /// Model id.
    pub model_id: ModelId,
    /// Harness id.
    pub harness_id: HarnessId,
    /// Harness version.
    pub harness_version: String,
    /// observational | verified.
    pub assessment_mode: AssessmentMode,
    /// Terminal state.
    pub terminal_state: TerminalState,
    /// Failure class.
    pub failure_class: FailureClass,
    /// Stop reason.
    pub stop_reason: StopReason,
    /// qualified | incomplete.
    pub qualification: Qualification,
    /// Ingest time (ms since the epoch).
    pub ingested_ms: i64,
}

/// One artifact of an ingested bundle.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactRow {
    /// Owning bundle.
    pub bundle_id: BundleId,
    /// Descriptor id.
    pub artifact_id: ArtifactId,
    /// Path inside the bundle.
    pub relative_path: String,
    /// Object key.
    pub digest: Digest,
    /// Size in bytes.
    pub size: u64,
    /// Evidence kind.
    pub kind: Kind,
    /// Authority.
    pub authority: Authority,
    /// Sharing class.
    pub sharing_class: SharingClass,
    /// Media type.
    pub media_type: String,
}

/// Filters of `bundle ls` (all optional, combined with AND).
#[derive(Debug, Clone, Default)]
pub struct BundleFilter {
    /// Task id: a glob (`*`, `?`, `[...]`, case-sensitive); a plain
    /// string matches exactly.
    pub task: Option<String>,
    /// Model: a glob over the model id or `provider/model`.
    pub model: Option<String>,
    /// Harness id: a glob.
    pub harness: Option<String>,
    /// Assessment mode.
    pub assessment_mode: Option<AssessmentMode>,
    /// Terminal state.
    pub terminal: Option<TerminalState>,
    /// Capture qualification.
    pub qualification: Option<Qualification>,
    /// Only bundles ingested at or after this time (ms since the epoch).
    pub since_ms: Option<i64>,
}

const BUNDLE_COLUMNS: &str = "bundle_id, manifest_digest, run_id, attempt_id, attempt_number, retry_of, task_id, fixture_id, model_provider, model_id, harness_id, harness_version, assessment_mode, terminal_state, failure_class, stop_reason, qualification, ingested_ms";

fn bundle_row(r: &Row<'_>) -> coffer_store::Result<BundleRow> {
    Ok(BundleRow {
        bundle_id: r.get(0)?,
        manifest_digest: r.get(1)?,
        run_id: r.get(2)?,
        attempt_id: r.get(3)?,
        attempt_number: r.get(4)?,
        retry_of: r.get(5)?,
        task_id: r.get(6)?,
        fixture_id: r.get(7)?,
        model_provider: r.get(8)?,
        model_id: r.get(9)?,
        harness_id: r.get(10)?,
        harness_version: r.get(11)?,
        assessment_mode: r.get(12)?,
        terminal_state: r.get(13)?,
        failure_class: r.get(14)?,
        stop_reason: r.get(15)?,
        qualification: r.get(16)?,
        ingested_ms: r.get(17)?,
    })
}

fn artifact_row(r: &Row<'_>) -> coffer_store::Result<ArtifactRow> {
    Ok(ArtifactRow {
        bundle_id: r.get(0)?,
        artifact_id: r.get(1)?,
        relative_path: r.get(2)?,
        digest: r.get(3)?,
        size: r.get(4)?,
        kind: r.get(5)?,
        authority: r.get(6)?,
        sharing_class: r.get(7)?,
        media_type: r.get(8)?,
    })
}

/// Inserts a bundle's rows; runs inside the ingest transaction, after its
/// objects are durable. A second bundle with the same id or attempt id is a
/// conflict, decided here under the write lock of the transaction. The
/// same bundle with the same manifest, recorded by a concurrent ingest
/// since this one looked, is no conflict: nothing is inserted and `false`
/// returned (the caller reports an identical re-ingest).
pub fn insert_bundle(
    tx: &Writer<'_>,
    m: &Manifest,
    manifest_digest: &Digest,
    qualification: Qualification,
    now_ms: i64,
) -> Result<bool> {
    let existing = tx.query_one(
        "SELECT manifest_digest FROM bundles WHERE bundle_id = ?1",
        &[&m.bundle_id],
        |r| r.get::<String>(0),
    )?;
    if existing.as_deref() == Some(manifest_digest.to_string().as_str()) {
        return Ok(false);
    }
    if let Some(d) = existing {
        return Err(EvidenceError::Conflict {
            code: codes::conflict::BUNDLE_EXISTS,
            message: format!(
                "bundle {:?} is already stored with another manifest ({d})",
                m.bundle_id
            ),
            subject: m.bundle_id.to_string(),
        });
    }
    let other = tx.query_one(
        "SELECT bundle_id FROM bundles WHERE attempt_id = ?1",
        &[&m.attempt.id],
        |r| r.get::<String>(0),
    )?;
    if let Some(b) = other {
        return Err(EvidenceError::Conflict {
            code: codes::conflict::ATTEMPT_EXISTS,
            message: format!(
                "attempt {:?} already belongs to bundle {b:?}; a retry is a new attempt",
                m.attempt.id
            ),
            subject: m.attempt.id.to_string(),
        });
    }
    tx.execute(
        &format!("INSERT INTO bundles ({BUNDLE_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)"),
        &[
            &m.bundle_id,
            manifest_digest,
            &m.run.id,
            &m.attempt.id,
            &m.attempt.number,
            &m.attempt.retry_of,
            &m.run.task.id,
            &m.run.fixture.id,
            &m.run.model.provider,
            &m.run.model.id,
            &m.run.harness.id,
            &m.run.harness.version,
            &m.run.mode(),
            &m.terminal.state,
            &m.terminal.failure_class,
            &m.terminal.stop_reason,
            &qualification,
            &now_ms,
        ],
    )?;
    insert_artifacts(tx, m)?;
    Ok(true)
}

/// The rows of the bundle's artifacts.
fn insert_artifacts(tx: &Writer<'_>, m: &Manifest) -> Result<()> {
    for d in &m.evidence {
        tx.execute(
            "INSERT INTO bundle_artifacts (bundle_id, artifact_id, relative_path, digest, size, kind, authority, sharing_class, media_type)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            &[
                &m.bundle_id,
                &d.id,
                &d.relative_path,
                &d.digest,
                &d.size_bytes,
                &d.kind,
                &d.authority,
                &d.sharing_class,
                &d.media_type,
            ],
        )?;
    }
    Ok(())
}

/// The bundle with exactly this id.
pub fn bundle_by_id(catalog: &Catalog, id: &str) -> Result<Option<BundleRow>> {
    Ok(catalog.reader().query_one(
        &format!("SELECT {BUNDLE_COLUMNS} FROM bundles WHERE bundle_id = ?1"),
        &[&id],
        bundle_row,
    )?)
}

/// The bundle `r` names: the one with its text as id, else the one whose
/// manifest has its digest (typed as [`Digest::parse_typed`] takes one:
/// with or without `sha256:`, any case), else the one whose manifest
/// digest alone starts with it (8 to 63 hex digits, with or without
/// `sha256:`); a prefix several start with is `usage.ambiguous_digest`.
/// Each way is one indexed lookup.
pub fn find_bundle(catalog: &Catalog, r: &BundleRef) -> Result<Option<BundleRow>> {
    if let Some(row) = bundle_by_id(catalog, &r.id)? {
        return Ok(Some(row));
    }
    if let Some(d) = &r.manifest {
        let row = catalog.reader().query_one(
            &format!(
                "SELECT {BUNDLE_COLUMNS} FROM bundles WHERE manifest_digest = ?1 \
                 ORDER BY bundle_id LIMIT 1"
            ),
            &[d],
            bundle_row,
        )?;
        if row.is_some() {
            return Ok(row);
        }
    }
    let Some(hex) = &r.prefix else {
        return Ok(None);
    };
    // Hex digits only: nothing in the pattern is a LIKE wildcard.
    let mut rows = catalog.reader().query(
        &format!(
            "SELECT {BUNDLE_COLUMNS} FROM bundles WHERE manifest_digest LIKE ?1 \
             ORDER BY manifest_digest LIMIT 11"
        ),
        &[&format!("sha256:{hex}%")],
        bundle_row,
    )?;
    match rows.len() {
        0 | 1 => Ok(rows.pop()),
        _ => Err(EvidenceError::Ambiguous {
            what: "bundle",
            prefix: format!("sha256:{hex}"),
            matches: rows
                .iter()
                .take(10)
                .map(|r| r.manifest_digest.to_string())
                .collect(),
        }),
    }
}

/// The bundle `r` names, or `io.not_found` with the nearest stored ids.
pub fn require_bundle(catalog: &Catalog, r: &BundleRef) -> Result<BundleRow> {
    match find_bundle(catalog, r)? {
        Some(row) => Ok(row),
        None => Err(EvidenceError::Unknown {
            what: "bundle",
            id: r.id.to_string(),
            suggestions: nearest_bundle_ids(catalog, &r.id)?,
        }),
    }
}

/// At most this many stored ids are compared with a mistyped one (an
/// error path: its cost stays bounded whatever the store holds).
const SUGGESTION_SCAN: usize = 100_000;

/// Stored bundle ids close to `asked` (a typo, a missing or extra part),
/// nearest first, at most 3: those within an edit distance of a third of
/// its length (at least 2), and those it is the start of.
pub fn nearest_bundle_ids(catalog: &Catalog, asked: &str) -> Result<Vec<String>> {
    let ids: Vec<String> = catalog.reader().query(
        &format!("SELECT bundle_id FROM bundles ORDER BY bundle_id LIMIT {SUGGESTION_SCAN}"),
        &[],
        |r| r.get(0),
    )?;
    let bound = (asked.chars().count() / 3).max(2);
    let mut near: Vec<(usize, String)> = ids
        .into_iter()
        .filter_map(|id| {
            let d = if id.starts_with(asked) {
                1
            } else {
                edit_distance(asked, &id, bound)?
            };
            Some((d, id))
        })
        .collect();
    near.sort();
    Ok(near.into_iter().take(3).map(|(_, id)| id).collect())
}

/// The Levenshtein distance of `a` and `b` in characters, when it is at
/// most `bound`.
fn edit_distance(a: &str, b: &str, bound: usize) -> Option<usize> {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.len().abs_diff(b.len()) > bound {
        return None;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut row = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let swap = usize::from(ca != cb);
            row[j + 1] = (prev[j] + swap).min(prev[j + 1] + 1).min(row[j] + 1);
        }
        prev = row;
    }
    let d = prev[b.len()];
    (d <= bound).then_some(d)
}

/// The digest of one file of a stored bundle: `manifest.json`, or an
/// artifact by its relative path or, failing that, its artifact id.
pub fn file_digest(catalog: &Catalog, bundle: &BundleRef, file: &str) -> Result<Digest> {
    let row = require_bundle(catalog, bundle)?;
    if file == MANIFEST {
        return Ok(row.manifest_digest);
    }
    catalog
        .reader()
        .query_one(
            "SELECT digest FROM bundle_artifacts WHERE bundle_id = ?1
               AND (relative_path = ?2 OR artifact_id = ?2)
             ORDER BY relative_path = ?2 DESC LIMIT 1",
            &[&row.bundle_id, &file],
            |r| r.get(0),
        )?
        .ok_or_else(|| EvidenceError::Unknown {
            what: "file",
            id: format!("{}:{file}", row.bundle_id),
            suggestions: Vec::new(),
        })
}

/// Bundles matching `f`, in ingest order.
pub fn bundles(catalog: &Catalog, f: &BundleFilter) -> Result<Vec<BundleRow>> {
    Ok(catalog.reader().query(
        &format!(
            "SELECT {BUNDLE_COLUMNS} FROM bundles
             WHERE (?1 IS NULL OR task_id GLOB ?1)
               AND (?2 IS NULL OR model_id GLOB ?2 OR model_provider || '/' || model_id GLOB ?2)
               AND (?3 IS NULL OR harness_id GLOB ?3) AND (?4 IS NULL OR assessment_mode = ?4)
               AND (?5 IS NULL OR terminal_state = ?5) AND (?6 IS NULL OR qualification = ?6)
               AND (?7 IS NULL OR ingested_ms >= ?7)
             ORDER BY ingested_ms, bundle_id"
        ),
        &[
            &f.task,
            &f.model,
            &f.harness,
            &f.assessment_mode,
            &f.terminal,
            &f.qualification,
            &f.since_ms,
        ],
        bundle_row,
    )?)
}

const ARTIFACT_COLUMNS: &str =
    "bundle_id, artifact_id, relative_path, digest, size, kind, authority, sharing_class, media_type";

/// Artifacts of a bundle, in manifest order of ids.
pub fn bundle_artifacts(catalog: &Catalog, bundle_id: &str) -> Result<Vec<ArtifactRow>> {
    Ok(catalog.reader().query(
        &format!("SELECT {ARTIFACT_COLUMNS} FROM bundle_artifacts WHERE bundle_id = ?1 ORDER BY relative_path"),
        &[&bundle_id],
        artifact_row,
    )?)
}

/// Every bundle artifact stored as `digest`.
pub fn artifacts_with_digest(catalog: &Catalog, digest: &Digest) -> Result<Vec<ArtifactRow>> {
    Ok(catalog.reader().query(
        &format!("SELECT {ARTIFACT_COLUMNS} FROM bundle_artifacts WHERE digest = ?1 ORDER BY bundle_id, artifact_id"),
        &[digest],
        artifact_row,
    )?)
}

/// For each artifact of `bundle_id` (by artifact id), the other bundles
/// holding the same bytes, in bundle id order: one query for the whole
/// bundle.
pub fn shared_with(catalog: &Catalog, bundle_id: &str) -> Result<HashMap<String, Vec<String>>> {
    let pairs = catalog.reader().query(
        "SELECT a.artifact_id, o.bundle_id FROM bundle_artifacts a
         JOIN bundle_artifacts o ON o.digest = a.digest AND o.bundle_id != a.bundle_id
         WHERE a.bundle_id = ?1 ORDER BY o.bundle_id, o.artifact_id",
        &[&bundle_id],
        |r| Ok((r.get::<String>(0)?, r.get::<String>(1)?)),
    )?;
    let mut out: HashMap<String, Vec<String>> = HashMap::new();
    for (artifact, other) in pairs {
        out.entry(artifact).or_default().push(other);
    }
    Ok(out)
}

/// Bundles whose manifest is `digest`.
pub fn bundles_with_manifest(catalog: &Catalog, digest: &Digest) -> Result<Vec<BundleId>> {
    Ok(catalog.reader().query(
        "SELECT bundle_id FROM bundles WHERE manifest_digest = ?1",
        &[digest],
        |r| r.get(0),
    )?)
}

#[cfg(test)]
mod tests {
    use super::edit_distance;

    #[test]
    fn edit_distance_counts_edits_within_its_bound() {
        assert_eq!(
            edit_distance("coffer-complete", "coffer-complete", 2),
            Some(0)
        );
        assert_eq!(
            edit_distance("coffer-compelte", "coffer-complete", 5),
            Some(2)
        );
        assert_eq!(
            edit_distance("cofer-complete", "coffer-complete", 5),
            Some(1)
        );
        assert_eq!(edit_distance("run-7", "run-17", 2), Some(1));
        assert_eq!(edit_distance("abc", "xyz", 2), None);
        assert_eq!(edit_distance("a", "abcdef", 2), None);
        assert_eq!(edit_distance("ünï", "uni", 2), Some(2));
    }
}
