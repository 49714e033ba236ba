//! The export manifest as coffer writes it (`export-manifest/v1`): a typed
//! document whose fields serialize in the order the schema lists them. The
//! readback does not use these types: it reads the bytes on disk with its
//! own untyped code, on purpose.

use coffer_base::digest::Digest;
use coffer_evidence::ids::{ArtifactId, AttemptId, BundleId, RunId, SessionId, TraceId};
use coffer_evidence::vocab::{AssessmentMode, ExportStatus, Kind, SharingClass};
use serde::Serialize;
use serde_json::Value;

/// Schema version of the manifest.
pub const SCHEMA_VERSION: &str = "export-manifest/v1";

/// A source artifact left out, with EBO's reason.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Excluded {
    /// Source artifact id.
    pub artifact_id: ArtifactId,
    /// `source-export-manifest` or `unsupported-workspace-snapshot`.
    pub reason: String,
}

/// A JSONL record left out under `--exclude-unverifiable`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExcludedRecord {
    /// Source artifact id.
    pub artifact_id: ArtifactId,
    /// Source artifact path.
    pub relative_path: String,
    /// The record's line, counted from 0 (its JSON pointer is `/<line>`).
    pub line: u64,
    /// Why: the code of the first problem found in it.
    pub code: String,
}

/// The `manifest.json` at the root of an export tree.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportManifest<'a> {
    /// Always [`SCHEMA_VERSION`].
    pub schema_version: &'static str,
    /// The exported bundle's id (a pseudonym of the source's).
    pub bundle_id: &'a BundleId,
    /// Always `ready`: an export tree is complete when it is published.
    pub status: ExportStatus,
    /// The policy's class.
    pub sharing_class: SharingClass,
    /// The source run's assessment mode.
    pub assessment_mode: AssessmentMode,
    /// The policy the export was made with.
    pub policy_digest: Digest,
    /// The exported artifacts' ids, in source order.
    pub artifact_ids: Vec<&'a ArtifactId>,
    /// Digest of the source bundle's manifest.
    pub source_manifest_digest: Digest,
    /// The source's correlation ids, rewritten.
    pub correlations: Correlations,
    /// One entry per exported artifact, in source order.
    pub artifacts: Vec<Artifact<'a>>,
    /// What was done to each artifact, per action.
    pub transformations: Vec<Transformation<'a>>,
    /// Source artifacts left out, with their reasons.
    pub excluded_artifacts: &'a [Excluded],
    /// Records left out under `--exclude-unverifiable` (a coffer
    /// extension, absent otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub excluded_records: Vec<ExcludedRecordRef<'a>>,
}

/// The correlation ids of the exported run, each rewritten.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Correlations {
    /// The bundle's id.
    pub bundle_id: BundleId,
    /// The run's id.
    pub run_id: RunId,
    /// The attempt's id.
    pub attempt_id: AttemptId,
    /// The harness's native session id, when the run has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
    /// The native trace id, when the run has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<TraceId>,
}

/// One exported artifact.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact<'a> {
    /// Its id in the export.
    pub id: &'a ArtifactId,
    /// The source artifact's id.
    pub source_artifact_id: &'a ArtifactId,
    /// Evidence kind.
    pub kind: Kind,
    /// Media type.
    pub media_type: &'a str,
    /// Digest of the derivative.
    pub digest: &'a Digest,
    /// Its size.
    pub size_bytes: u64,
    /// Path in the export tree.
    pub relative_path: &'a str,
    /// Digest of the source artifact.
    pub source_digest: &'a Digest,
    /// Where a diagnostic came from, in the export's form.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnostic_source: Option<DiagnosticSource>,
}

/// A diagnostic's origin as an export shows it: the source descriptor's
/// `locator` (a path in the source bundle) becomes `locatorDigest`, and
/// its `digest` and `truncated` are not carried.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiagnosticSource {
    /// The verifier that produced it (its exported artifact id when the
    /// verifier is exported).
    pub verifier_id: ArtifactId,
    /// `stdout` or `stderr`.
    pub stream: String,
    /// SHA-256 of the source locator's UTF-8 bytes.
    pub locator_digest: Digest,
    /// Size of the captured stream, as the source declared it.
    pub size_bytes: u64,
}

impl DiagnosticSource {
    /// The export form of a descriptor's `diagnosticSource` (schema-valid
    /// in the source); `exported_id` maps source artifact ids to exported
    /// ones.
    pub fn from_source(
        v: &Value,
        exported_id: impl Fn(&str) -> Option<ArtifactId>,
    ) -> Option<Self> {
        let verifier = v.get("verifierId")?.as_str()?;
        Some(DiagnosticSource {
            verifier_id: exported_id(verifier).unwrap_or_else(|| verifier.into()),
            stream: v.get("stream")?.as_str()?.to_string(),
            locator_digest: Digest::of(v.get("locator")?.as_str()?.as_bytes()),
            size_bytes: v.get("sizeBytes")?.as_u64()?,
        })
    }
}

/// How many times one action was applied to one artifact.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Transformation<'a> {
    /// The exported artifact's id.
    pub artifact_id: &'a ArtifactId,
    /// `sanitized`, `redacted-secret`, ...
    pub action: &'static str,
    /// How many times.
    pub count: u64,
}

/// A JSONL record left out of an exported artifact.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExcludedRecordRef<'a> {
    /// The exported artifact's id.
    pub artifact_id: &'a ArtifactId,
    /// The record's line in the source, from 0.
    pub line: u64,
    /// The code of the first problem found in it.
    pub code: &'a str,
}

impl ExportManifest<'_> {
    /// The bytes written: pretty JSON and a final newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).expect("values serialize");
        bytes.push(b'\n');
        bytes
    }
}
