//! The JSON Schemas of `schemas/`, embedded at build time and compiled once.
//!
//! Schemas describe structure (types, required and closed fields, enums,
//! patterns). Rules that relate fields to each other live in code, one
//! function and one issue code each (see `bundle::contract`), so that a broken
//! rule is reported once, precisely.

use std::sync::OnceLock;

use jsonschema::{Registry, Validator};
use serde_json::Value;

/// A contract document type with a schema in `schemas/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DocKind {
    /// `manifest.json` of a run bundle (`run-manifest/v1`).
    RunManifest,
    /// One entry of a manifest's `evidence`.
    EvidenceDescriptor,
    /// `capture-report/v1`.
    CaptureReport,
    /// `verifier-result/v1`.
    VerifierResult,
    /// `export-manifest/v1`.
    ExportManifest,
    /// `ebo.task-packet/v1`.
    TaskPacket,
    /// `ebo.task-packet-freeze/v1`.
    PacketFreeze,
    /// An export policy (EBO's, or `coffer.export-policy/v1`).
    ExportPolicy,
}

const SCHEMAS: &[(DocKind, &str, &str)] = &[
    (
        DocKind::RunManifest,
        "urn:coffer:schema:run-manifest:v1",
        include_str!("../../../schemas/run-manifest.v1.json"),
    ),
    (
        DocKind::EvidenceDescriptor,
        "urn:coffer:schema:evidence-descriptor:v1",
        include_str!("../../../schemas/evidence-descriptor.v1.json"),
    ),
    (
        DocKind::CaptureReport,
        "urn:coffer:schema:capture-report:v1",
        include_str!("../../../schemas/capture-report.v1.json"),
    ),
    (
        DocKind::VerifierResult,
        "urn:coffer:schema:verifier-result:v1",
        include_str!("../../../schemas/verifier-result.v1.json"),
    ),
    (
        DocKind::ExportManifest,
        "urn:coffer:schema:export-manifest:v1",
        include_str!("../../../schemas/export-manifest.v1.json"),
    ),
    (
        DocKind::TaskPacket,
        "urn:coffer:schema:task-packet:v1",
        include_str!("../../../schemas/task-packet.v1.json"),
    ),
    (
        DocKind::PacketFreeze,
        "urn:coffer:schema:task-packet-freeze:v1",
        include_str!("../../../schemas/task-packet-freeze.v1.json"),
    ),
    (
        DocKind::ExportPolicy,
        "urn:coffer:schema:export-policy:v1",
        include_str!("../../../schemas/export-policy.v1.json"),
    ),
];

impl DocKind {
    /// The `schemaVersion` value documents of this kind carry (none for descriptors).
    pub fn schema_version(self) -> Option<&'static str> {
        match self {
            DocKind::RunManifest => Some("run-manifest/v1"),
            DocKind::EvidenceDescriptor => None,
            DocKind::CaptureReport => Some("capture-report/v1"),
            DocKind::VerifierResult => Some("verifier-result/v1"),
            DocKind::ExportManifest => Some("export-manifest/v1"),
            DocKind::TaskPacket => Some("ebo.task-packet/v1"),
            DocKind::PacketFreeze => Some("ebo.task-packet-freeze/v1"),
            DocKind::ExportPolicy => Some("coffer.export-policy/v1"),
        }
    }

    /// The schema document (as embedded).
    pub fn schema_text(self) -> &'static str {
        SCHEMAS
            .iter()
            .find(|s| s.0 == self)
            .expect("every kind has a schema")
            .2
    }
}

/// A schema violation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaIssue {
    /// JSON pointer of the offending value.
    pub pointer: String,
    /// What the schema expected.
    pub message: String,
}

struct Compiled {
    validators: Vec<(DocKind, Validator)>,
}

fn compiled() -> &'static Compiled {
    static COMPILED: OnceLock<Compiled> = OnceLock::new();
    COMPILED.get_or_init(|| {
        let docs: Vec<(DocKind, &str, Value)> = SCHEMAS
            .iter()
            .map(|(k, id, text)| {
                (
                    *k,
                    *id,
                    serde_json::from_str(text).expect("embedded schema is JSON"),
                )
            })
            .collect();
        let mut builder = Registry::new();
        for (_, id, doc) in &docs {
            builder = builder.add(*id, doc.clone()).expect("valid schema URI");
        }
        let registry = builder.prepare().expect("embedded schemas resolve");
        let validators = docs
            .iter()
            .map(|(k, _, doc)| {
                let v = jsonschema::options()
                    .with_registry(&registry)
                    .build(doc)
                    .expect("embedded schema compiles");
                (*k, v)
            })
            .collect();
        Compiled { validators }
    })
}

/// Validates `doc` against the schema of `kind`; returns every violation.
pub fn validate(kind: DocKind, doc: &Value) -> Vec<SchemaIssue> {
    let v = &compiled()
        .validators
        .iter()
        .find(|(k, _)| *k == kind)
        .expect("every kind compiled")
        .1;
    v.iter_errors(doc)
        .map(|e| SchemaIssue {
            pointer: e.instance_path().to_string(),
            message: message(&e),
        })
        .collect()
}

/// The validator's message, but an enum's values in full: the crate
/// shows two and "2 other candidates", which hides the ones to type.
fn message(e: &jsonschema::ValidationError<'_>) -> String {
    match e.kind() {
        jsonschema::error::ValidationErrorKind::Enum { options } => {
            let all: Vec<String> = options
                .as_array()
                .map(|a| a.iter().map(Value::to_string).collect())
                .unwrap_or_default();
            format!("{} is not one of: {}", e.instance(), all.join(", "))
        }
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_embedded_schema_compiles_and_names_its_version() {
        for (kind, id, text) in SCHEMAS {
            let doc: Value = serde_json::from_str(text).unwrap();
            assert_eq!(doc["$id"], *id);
            if let Some(v) = kind.schema_version() {
                assert_eq!(doc["properties"]["schemaVersion"]["const"], v);
            }
            let _ = validate(*kind, &json!({}));
        }
    }

    #[test]
    fn unknown_fields_and_versions_are_rejected_with_pointers() {
        let issues = validate(
            DocKind::VerifierResult,
            &json!({"schemaVersion": "verifier-result/v2", "bundleId": "b", "status": "passed", "assertions": [{"id": "a", "status": "passed", "extra": 1}]}),
        );
        let pointers: Vec<&str> = issues.iter().map(|i| i.pointer.as_str()).collect();
        assert!(pointers.contains(&"/schemaVersion"), "{issues:?}");
        assert!(pointers.contains(&"/assertions/0"), "{issues:?}");
    }

    #[test]
    fn an_enum_violation_lists_every_allowed_value() {
        let issues = validate(
            DocKind::ExportPolicy,
            &json!({"sharingClass": "internal", "maxArtifactBytes": 10, "maxStringBytes": 1}),
        );
        let m = &issues
            .iter()
            .find(|i| i.pointer == "/sharingClass")
            .unwrap()
            .message;
        assert_eq!(m, r#""internal" is not one of: "partner", "public""#);
        let issues = validate(
            DocKind::RunManifest,
            &json!({"evidence": [{"id": "x", "kind": "nope"}]}),
        );
        let m = &issues
            .iter()
            .find(|i| i.pointer == "/evidence/0/kind")
            .unwrap()
            .message;
        assert!(
            !m.contains("other candidates") && m.matches(", ").count() >= 3,
            "{m}"
        );
    }

    #[test]
    fn manifest_schema_reaches_the_descriptor_schema() {
        let issues = validate(DocKind::RunManifest, &json!({"evidence": [{"id": 5}]}));
        assert!(
            issues.iter().any(|i| i.pointer == "/evidence/0/id"),
            "{issues:?}"
        );
    }
}
