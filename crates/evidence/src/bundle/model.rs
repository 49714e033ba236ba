//! Typed views of the contract documents, read after schema validation.
//!
//! Only fields coffer interprets are typed; the original bytes are what is
//! stored, so nothing here ever re-serializes evidence.

use coffer_base::digest::Digest;
use serde::Deserialize;

use crate::ids::{
    ArtifactId, AssertionId, AttemptId, BundleId, FixtureId, HarnessId, Identifier, ModelId,
    NativeId, RunId, SessionId, TaskId, TraceId,
};
use crate::vocab::{
    AssertionStatus, AssessmentMode, Authority, CapabilityStatus, ExportStatus, FailureClass,
    GapReason, Kind, Qualification, SharingClass, StopReason, TerminalState, VerifierStatus,
};

/// `manifest.json` (`run-manifest/v1`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// The bundle's id, unique in a store.
    pub bundle_id: BundleId,
    /// The run this attempt belongs to.
    pub run: Run,
    /// This attempt.
    pub attempt: Attempt,
    /// How it ended.
    pub terminal: Terminal,
    /// The run's configuration.
    pub configuration: Configuration,
    /// Every artifact.
    pub evidence: Vec<Descriptor>,
}

/// `configuration` (the digests coffer indexes).
#[derive(Debug, Clone, Deserialize)]
pub struct Configuration {
    /// Digest of the run's configuration.
    pub digest: Digest,
}

/// `run.fixture`.
#[derive(Debug, Clone, Deserialize)]
pub struct Fixture {
    /// The fixture's id (several runs share one fixture).
    pub id: FixtureId,
    /// Digest of the frozen fixture archive.
    pub digest: Digest,
}

/// `run`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Run {
    /// The run's id (its attempts share it).
    pub id: RunId,
    /// The task.
    pub task: Task,
    /// The fixture.
    pub fixture: Fixture,
    /// The model.
    pub model: Model,
    /// The harness.
    pub harness: Harness,
    /// Runtime components.
    pub runtime: Vec<RuntimeComponent>,
    /// `observational` or `verified` (absent means verified).
    pub assessment_mode: Option<AssessmentMode>,
    /// Verifier reference (verified runs only).
    pub verifier: Option<serde_json::Value>,
    /// Native ids.
    #[serde(default)]
    pub native: Native,
}

impl Run {
    /// The assessment mode with the default applied.
    pub fn mode(&self) -> AssessmentMode {
        self.assessment_mode.unwrap_or(AssessmentMode::Verified)
    }
}

/// `run.task`.
#[derive(Debug, Clone, Deserialize)]
pub struct Task {
    /// The task's id.
    pub id: TaskId,
}

/// `run.model`.
#[derive(Debug, Clone, Deserialize)]
pub struct Model {
    /// Who serves the model (`anthropic`, `openai`...), as the harness names it.
    pub provider: String,
    /// The model's id at that provider.
    pub id: ModelId,
}

/// `run.harness`.
#[derive(Debug, Clone, Deserialize)]
pub struct Harness {
    /// The harness's id.
    pub id: HarnessId,
    /// Its version, as it reports it.
    pub version: String,
}

/// One `run.runtime` entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
pub struct RuntimeComponent {
    /// Where the component comes from (a registry, `system`...).
    pub source: String,
    /// Its name there.
    pub name: String,
    /// Its version there.
    pub version: String,
}

/// `run.native`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Native {
    /// Native session id.
    pub session_id: Option<SessionId>,
    /// Native trace id.
    pub trace_id: Option<TraceId>,
}

/// `attempt`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attempt {
    /// The attempt's id.
    pub id: AttemptId,
    /// 1-based attempt number.
    pub number: u64,
    /// The attempt this one retries.
    pub retry_of: Option<AttemptId>,
}

/// `terminal`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Terminal {
    /// completed | failed | stopped | interrupted.
    pub state: TerminalState,
    /// none | infrastructure | task.
    pub failure_class: FailureClass,
    /// none | budget | policy.
    pub stop_reason: StopReason,
    /// The workspace descriptor the outcome is judged on.
    pub workspace_artifact_id: Option<ArtifactId>,
}

/// One evidence descriptor.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// Artifact id (unique in the bundle).
    pub id: ArtifactId,
    /// What produced the artifact (the harness, a hook, the verifier).
    pub source: String,
    /// Evidence kind.
    pub kind: Kind,
    /// Evidence authority.
    pub authority: Authority,
    /// The file's media type (`application/jsonl`...).
    pub media_type: String,
    /// Digest of the file.
    pub digest: Digest,
    /// File size.
    pub size_bytes: u64,
    /// Sharing class.
    pub sharing_class: SharingClass,
    /// The file's path inside the bundle, `/`-separated.
    pub relative_path: String,
    /// Native reference.
    pub native_reference: Option<NativeReference>,
    /// Provenance of a sanitized derivative.
    pub sanitized_from: Option<SanitizedFrom>,
    /// Where a diagnostic came from (`stream`, `locator`...), carried as
    /// written; only its locator is checked here.
    #[serde(default)]
    pub diagnostic_source: Option<serde_json::Value>,
}

impl Descriptor {
    /// Retained evidence: not a sanitized derivative, not shared beyond internal.
    pub fn is_retained(&self) -> bool {
        self.sanitized_from.is_none() && !self.sharing_class.is_shared()
    }
}

/// `nativeReference`.
#[derive(Debug, Clone, Deserialize)]
pub struct NativeReference {
    /// Reference type (`session`, `trace`, ...).
    #[serde(rename = "type")]
    pub kind: Identifier,
    /// The id the harness itself gave it.
    pub id: NativeId,
}

/// `sanitizedFrom`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SanitizedFrom {
    /// The artifact it was derived from.
    pub artifact_id: ArtifactId,
    /// Source digest.
    pub digest: Digest,
}

/// `capture-report/v1`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CaptureReport {
    /// Must equal the manifest's.
    pub bundle_id: BundleId,
    /// Optional; must equal the run's mode when present.
    pub assessment_mode: Option<AssessmentMode>,
    /// qualified | incomplete.
    pub qualification: Qualification,
    /// Capability statuses.
    pub capabilities: Capabilities,
    /// Declared gaps.
    pub missing_evidence: Vec<MissingEvidence>,
}

/// `capabilities`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Capabilities {
    /// Semantic capability.
    pub semantic: Capability,
    /// Timing/resource capability.
    pub timing_resource: Capability,
    /// Outcome capability.
    pub outcome: Capability,
}

impl Capabilities {
    /// `(authority name, status)` for the three capabilities.
    pub fn by_authority(&self) -> [(Authority, CapabilityStatus); 3] {
        [
            (Authority::Semantic, self.semantic.status),
            (Authority::TimingResource, self.timing_resource.status),
            (Authority::Outcome, self.outcome.status),
        ]
    }
}

/// One capability.
#[derive(Debug, Clone, Deserialize)]
pub struct Capability {
    /// What the report says of it.
    pub status: CapabilityStatus,
}

/// One `missingEvidence` entry.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MissingEvidence {
    /// What is missing.
    pub kind: Identifier,
    /// Why.
    pub reason: GapReason,
    /// Which capabilities it affects.
    pub affects: Vec<Authority>,
}

/// The gaps an incomplete capture declares, one warning each
/// (`validation.capture_incomplete`, at its place in the capture report):
/// what a command that accepts such a bundle reports as incomplete.
pub fn gap_issues(gaps: &[MissingEvidence]) -> Vec<coffer_base::issue::Issue> {
    gaps.iter()
        .enumerate()
        .map(|(i, g)| {
            coffer_base::issue::Issue::about(
                coffer_base::codes::validation::CAPTURE_INCOMPLETE,
                Some(format!("capture-report.json#/missingEvidence/{i}")),
                format!(
                    "evidence gap: {} ({}), affects {}",
                    g.kind,
                    g.reason,
                    g.affects
                        .iter()
                        .map(|a| a.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })
        .collect()
}

use serde::Serialize;

/// `verifier-result/v1`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifierResult {
    /// Must equal the manifest's.
    pub bundle_id: BundleId,
    /// The verifier's verdict.
    pub status: VerifierStatus,
    /// Verifier exit code.
    pub exit_code: Option<i64>,
    /// Duration.
    pub duration_ms: Option<u64>,
    /// Error text.
    pub error: Option<String>,
    /// The workspace judged.
    pub workspace: Option<WorkspaceBinding>,
    /// Assertions.
    pub assertions: Vec<Assertion>,
    /// Diagnostics.
    #[serde(default)]
    pub diagnostics: Vec<serde_json::Value>,
}

/// `workspace` of a verifier result.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceBinding {
    /// The workspace descriptor judged.
    pub artifact_id: ArtifactId,
    /// Its digest.
    pub digest: Digest,
}

/// One assertion.
#[derive(Debug, Clone, Deserialize)]
pub struct Assertion {
    /// Unique among the result's assertions.
    pub id: AssertionId,
    /// Whether it held.
    pub status: AssertionStatus,
}

/// `export-manifest/v1` (the fields the in-bundle rules need).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportManifest {
    /// Must equal the manifest's.
    pub bundle_id: BundleId,
    /// Where the export stands.
    pub status: ExportStatus,
    /// Target class.
    pub sharing_class: SharingClass,
    /// Listed artifacts.
    pub artifact_ids: Vec<ArtifactId>,
}
