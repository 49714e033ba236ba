//! Which source artifacts an export takes, which it excludes (with EBO's
//! reason codes) and what stops it.

use coffer_base::codes;
use coffer_base::issue::Issue;
use coffer_evidence::bundle::model::{Descriptor, Manifest};
use coffer_evidence::vocab::{Kind, SharingClass};

use crate::error::{ExportError, Result};
use crate::policy::Policy;

/// What happens to one source artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    /// Transformed and exported.
    Export,
    /// Left out, with EBO's reason.
    Exclude(&'static str),
}

/// The (kind, media type) pairs an export accepts.
pub const ALLOWED: &[(&str, &str)] = &[
    ("session", "application/x-ndjson"),
    ("hook", "application/x-ndjson"),
    ("telemetry", "application/json"),
    ("workspace", "text/x-diff"),
    ("verifier", "application/json"),
    ("capture-report", "application/json"),
    ("diagnostic", "text/plain"),
];

/// Whether an allowed pair.
pub fn allowed(kind: &str, media_type: &str) -> bool {
    ALLOWED.contains(&(kind, media_type))
}

/// Decides every artifact's fate; any blocking problem stops the export.
pub fn plan(m: &Manifest, policy: &Policy) -> Result<Vec<(Descriptor, Fate)>> {
    let mut issues = Vec::new();
    let mut out = Vec::new();
    for (i, d) in m.evidence.iter().enumerate() {
        let at = |field: &str| format!("/evidence/{i}/{field}");
        match d.sharing_class {
            SharingClass::Restricted | SharingClass::Internal => {}
            SharingClass::Partner | SharingClass::Public => issues.push(Issue::at(
                codes::policy::DERIVATIVE_SOURCE,
                "manifest.json",
                at("sharingClass"),
                format!(
                    "artifact {:?} is already {}; only restricted or internal evidence is exported",
                    d.id, d.sharing_class
                ),
            )),
            SharingClass::Unknown => issues.push(Issue::at(
                codes::policy::UNKNOWN_SHARING_CLASS,
                "manifest.json",
                at("sharingClass"),
                format!("artifact {:?} has sharing class \"unknown\"", d.id),
            )),
        }
        let fate = if d.kind == Kind::ExportManifest {
            Fate::Exclude("source-export-manifest")
        } else if d.kind == Kind::Workspace && d.media_type != "text/x-diff" {
            Fate::Exclude("unsupported-workspace-snapshot")
        } else if !allowed(d.kind.as_str(), &d.media_type) {
            issues.push(Issue::at(
                codes::policy::UNSUPPORTED_MEDIA_TYPE,
                "manifest.json",
                at("mediaType"),
                format!(
                    "artifact {:?}: ({}, {}) is not an exportable pair",
                    d.id, d.kind, d.media_type
                ),
            ));
            continue;
        } else {
            Fate::Export
        };
        if fate == Fate::Export && d.size_bytes > policy.max_artifact_bytes {
            issues.push(Issue::at(
                codes::limit::ARTIFACT_BYTES,
                "manifest.json",
                at("sizeBytes"),
                format!(
                    "artifact {:?} is {} bytes; the policy allows {}",
                    d.id, d.size_bytes, policy.max_artifact_bytes
                ),
            ));
        }
        out.push((d.clone(), fate));
    }
    if !issues.is_empty() {
        return Err(ExportError::Blocked(issues));
    }
    if !out
        .iter()
        .any(|(d, f)| *f == Fate::Export && d.kind != Kind::CaptureReport)
    {
        return Err(ExportError::blocked(
            codes::policy::NOTHING_TO_EXPORT,
            "manifest.json",
            "no evidence artifact can be exported",
        ));
    }
    Ok(out)
}
