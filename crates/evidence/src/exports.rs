//! Catalog rows of published exports and their `sanitized_from` edges.

use crate::error::Result;
use coffer_base::digest::Digest;
use coffer_store::catalog::Catalog;
use coffer_store::rows::{Row, Writer};
use coffer_store::Batch;

use crate::vocab::SharingClass;

/// Root kind of an export's objects (name: the export's destination).
pub const EXPORT_ROOT: &str = "export";

/// One exported artifact and the source artifact it was derived from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportEdge {
    /// Artifact id in the export.
    pub artifact_id: crate::ids::ArtifactId,
    /// Path in the export tree.
    pub relative_path: String,
    /// Digest of the derivative.
    pub digest: Digest,
    /// Digest of the source artifact.
    pub source_digest: Digest,
}

/// One published export.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportRow {
    /// Digest of the export's `manifest.json`.
    pub manifest_digest: Digest,
    /// Where it was published.
    pub dest: String,
    /// The source bundle id.
    pub source_bundle_id: crate::ids::BundleId,
    /// The source bundle's manifest digest.
    pub source_manifest_digest: Digest,
    /// `partner` or `public`.
    pub sharing_class: SharingClass,
    /// The policy digest.
    pub policy_digest: Digest,
}

/// A published export as the catalog recorded it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedExport {
    /// The export.
    #[serde(flatten)]
    pub row: ExportRow,
    /// When it was recorded (ms since the epoch), just before publication.
    pub created_ms: i64,
}

/// Commits `batch` (the export's objects) together with the export's
/// catalog rows. Recording the same export at the same destination twice
/// is a no-op.
pub fn record_export(batch: Batch<'_>, row: &ExportRow, edges: &[ExportEdge]) -> Result<()> {
    let now = coffer_store::objects::now_ms();
    batch.commit_with(|tx| insert_export(tx, row, edges, now))?;
    Ok(())
}

/// The export's rows; runs in the transaction that records its objects.
fn insert_export(
    tx: &Writer<'_>,
    row: &ExportRow,
    edges: &[ExportEdge],
    now_ms: i64,
) -> coffer_store::Result<()> {
    tx.execute(
        "INSERT INTO exports (manifest_digest, dest, source_bundle_id, source_manifest_digest,
            sharing_class, policy_digest, created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT DO NOTHING",
        &[
            &row.manifest_digest,
            &row.dest,
            &row.source_bundle_id,
            &row.source_manifest_digest,
            &row.sharing_class,
            &row.policy_digest,
            &now_ms,
        ],
    )?;
    for e in edges {
        tx.execute(
            "INSERT INTO export_artifacts (manifest_digest, artifact_id, relative_path, digest, source_digest)
             VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
            &[
                &row.manifest_digest,
                &e.artifact_id,
                &e.relative_path,
                &e.digest,
                &e.source_digest,
            ],
        )?;
    }
    Ok(())
}

fn export_row(r: &Row<'_>) -> coffer_store::Result<ExportRow> {
    Ok(ExportRow {
        manifest_digest: r.get(0)?,
        dest: r.get(1)?,
        source_bundle_id: r.get(2)?,
        source_manifest_digest: r.get(3)?,
        sharing_class: r.get(4)?,
        policy_digest: r.get(5)?,
    })
}

const EXPORT_COLUMNS: &str = "e.manifest_digest, e.dest, e.source_bundle_id, e.source_manifest_digest, e.sharing_class, e.policy_digest";

/// Every export that holds `digest` (as its manifest or an artifact) or
/// derives from it (as a source artifact or source manifest).
pub fn exports_of(catalog: &Catalog, digest: &Digest) -> Result<Vec<ExportRow>> {
    Ok(catalog.reader().query(
        &format!(
            "SELECT DISTINCT {EXPORT_COLUMNS} FROM exports e
             LEFT JOIN export_artifacts a ON a.manifest_digest = e.manifest_digest
             WHERE e.manifest_digest = ?1 OR e.source_manifest_digest = ?1
                OR a.digest = ?1 OR a.source_digest = ?1
             ORDER BY e.manifest_digest, e.dest"
        ),
        &[digest],
        export_row,
    )?)
}

/// Every recorded export, oldest first; with `source`, only those of that
/// source bundle (by id or manifest digest).
pub fn recorded_exports(catalog: &Catalog, source: Option<&str>) -> Result<Vec<RecordedExport>> {
    Ok(catalog.reader().query(
        &format!(
            "SELECT {EXPORT_COLUMNS}, e.created_ms FROM exports e
             WHERE ?1 IS NULL OR e.source_bundle_id = ?1 OR e.source_manifest_digest = ?1
             ORDER BY e.created_ms, e.manifest_digest, e.dest"
        ),
        &[&source],
        |r| {
            Ok(RecordedExport {
                row: export_row(r)?,
                created_ms: r.get(6)?,
            })
        },
    )?)
}

/// The artifacts of the export with this manifest digest.
pub fn export_edges(catalog: &Catalog, manifest_digest: &Digest) -> Result<Vec<ExportEdge>> {
    Ok(catalog.reader().query(
        "SELECT artifact_id, relative_path, digest, source_digest FROM export_artifacts
         WHERE manifest_digest = ?1 ORDER BY artifact_id",
        &[manifest_digest],
        |r| {
            Ok(ExportEdge {
                artifact_id: r.get(0)?,
                relative_path: r.get(1)?,
                digest: r.get(2)?,
                source_digest: r.get(3)?,
            })
        },
    )?)
}
