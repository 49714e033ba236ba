//! Typed view of a task packet (`ebo.task-packet/v1`), read after schema validation.

use crate::vocab::AssessmentMode;
use serde::Deserialize;
use serde_json::Value;

use coffer_base::digest::Digest;

/// `{"algorithm": "sha256", "value": "<64 hex>"}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct DigestObject {
    /// Always `sha256`.
    pub algorithm: String,
    /// 64 lowercase hex.
    pub value: String,
}

impl DigestObject {
    /// The store digest this names.
    pub fn digest(&self) -> Option<Digest> {
        Digest::from_hex(&self.value).ok()
    }

    /// The JSON form of a digest.
    pub fn json(d: &Digest) -> Value {
        serde_json::json!({"algorithm": "sha256", "value": d.hex()})
    }
}

/// A packet's freeze record (`ebo.task-packet-freeze/v1`), read after
/// schema validation. Commands show the record as it was read (a record
/// another tool wrote keeps its key order); the code reads it through
/// this.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FreezeRecord {
    /// Always `ebo.task-packet-freeze/v1`.
    pub schema_version: String,
    /// The frozen packet's id.
    pub packet_id: crate::ids::PacketId,
    /// Absent when the packet states no mode.
    pub assessment_mode: Option<AssessmentMode>,
    /// The packet file's path under its root.
    pub packet_locator: String,
    /// The packet's digest before its admission was recorded.
    pub pre_admission_digest: DigestObject,
    /// The canonical packet's digest.
    pub packet_digest: DigestObject,
    /// Each component's digest or status.
    pub components: FreezeComponents,
    /// The digest over all of the above and the time.
    pub aggregate_digest: DigestObject,
    /// RFC 3339, milliseconds.
    pub frozen_at: String,
}

/// The components a freeze record binds: the prompt and the fixture
/// archive by digest; the others by digest or by status (`oneOf` in the
/// schema), compared as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FreezeComponents {
    /// The prompt's bytes.
    pub prompt: DigestObject,
    /// The fixture archive, hashed whole.
    pub fixture: DigestObject,
    /// The reference solution, or its status.
    pub reference: Value,
    /// The verifier, or null.
    pub verifier: Value,
    /// The review record, or null.
    pub review_record: Value,
    /// The controlled perturbation, or its status.
    pub controlled_perturbation: Value,
}

impl FreezeRecord {
    /// The typed record of a schema-valid record document.
    pub fn of(doc: &Value) -> Result<FreezeRecord, serde_json::Error> {
        FreezeRecord::deserialize(doc)
    }
}

/// A `{locator, digest}` reference to a file under the packet root.
#[derive(Debug, Clone, Deserialize)]
pub struct Reference {
    /// Root-relative path.
    pub locator: String,
    /// Declared digest.
    pub digest: DigestObject,
}

/// The packet.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Packet {
    /// The packet's id.
    pub id: crate::ids::PacketId,
    /// observational | verified (absent: verified).
    pub assessment_mode: Option<AssessmentMode>,
    /// What the agent gets.
    pub agent_input: AgentInput,
    /// Where the task comes from.
    pub provenance: Provenance,
    /// `{reference}` or `{status}`.
    pub controlled_perturbation: Value,
    /// Admission state.
    pub admission: Admission,
    /// Reference solution and verifier (verified packets).
    pub restricted: Option<Restricted>,
}

impl Packet {
    /// The assessment mode with the default applied.
    pub fn mode(&self) -> AssessmentMode {
        self.assessment_mode.unwrap_or(AssessmentMode::Verified)
    }

    /// The perturbation reference, if one is applied.
    pub fn perturbation(&self) -> Option<Reference> {
        serde_json::from_value(self.controlled_perturbation.get("reference")?.clone()).ok()
    }

    /// The reference solution, if one is provided.
    pub fn reference_solution(&self) -> Option<Reference> {
        let r = self.restricted.as_ref()?;
        serde_json::from_value(r.reference_solution.clone()).ok()
    }
}

/// `agentInput`.
#[derive(Debug, Clone, Deserialize)]
pub struct AgentInput {
    /// The prompt text.
    pub prompt: String,
    /// The fixture.
    pub fixture: Fixture,
}

/// `agentInput.fixture`.
#[derive(Debug, Clone, Deserialize)]
pub struct Fixture {
    /// The archive.
    pub source: Source,
    /// What to materialize.
    pub materializer: Materializer,
}

/// `fixture.source`.
#[derive(Debug, Clone, Deserialize)]
pub struct Source {
    /// Declared limits.
    pub limits: Limits,
    /// Root-relative path of the .tar.gz.
    pub locator: String,
    /// Declared digest of the archive.
    pub digest: DigestObject,
}

/// `source.limits`.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// Compressed bytes.
    pub max_compressed_bytes: u64,
    /// Expanded bytes.
    pub max_expanded_bytes: u64,
    /// Members.
    pub max_members: u64,
}

/// `fixture.materializer`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Materializer {
    /// Literal paths (files or directories) to materialize.
    pub include_paths: Vec<String>,
}

/// `provenance`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Provenance {
    /// https URL without credentials.
    pub repository_url: String,
}

/// `admission`.
#[derive(Debug, Clone, Deserialize)]
pub struct Admission {
    /// Where the packet's review stands.
    pub status: crate::vocab::AdmissionStatus,
    /// The review (null while proposed).
    pub review: Option<Review>,
}

/// `admission.review`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Review {
    /// When.
    pub reviewed_at: String,
    /// Who.
    pub reviewed_by: String,
    /// The review record file.
    pub review_record: Reference,
}

/// `restricted`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Restricted {
    /// A reference or `{status}`.
    pub reference_solution: Value,
    /// The verifier.
    pub verifier: Reference,
}
