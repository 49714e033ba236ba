//! The closed vocabularies of the evidence contract, as enums: each value
//! the JSON Schemas of `schemas/` allow, spelled as they spell it, and
//! nothing else. Documents are typed after schema validation, so a value
//! outside a vocabulary never reaches these types from a document; from
//! text (a catalog row, a command-line filter) it is an [`UnknownValue`].

use std::fmt;
use std::str::FromStr;

/// A string that is not a value of a closed vocabulary.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{vocabulary}: {value:?} is not one of {allowed}")]
pub struct UnknownValue {
    /// Which vocabulary.
    pub vocabulary: &'static str,
    /// The value given.
    pub value: String,
    /// The values allowed, comma-separated.
    pub allowed: String,
}

/// What every closed vocabulary offers, for code generic over them (a
/// command-line parser, a catalog column).
pub trait Vocabulary: Copy + Eq + fmt::Display + FromStr<Err = UnknownValue> + 'static {
    /// Every value, in the schema's order.
    const ALL: &'static [Self];
    /// The value as the contract spells it.
    fn as_str(self) -> &'static str;
}

/// Defines a closed vocabulary: the enum, its spelling both ways, and serde
/// that reads and writes exactly those spellings.
macro_rules! vocabulary {
    ($(#[$doc:meta])* $name:ident ($what:literal) { $($(#[$vdoc:meta])* $variant:ident = $text:literal,)+ }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)+
        }

        impl $name {
            /// Every value, in the schema's order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The value as the contract spells it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }

        impl Vocabulary for $name {
            const ALL: &'static [$name] = $name::ALL;

            fn as_str(self) -> &'static str {
                $name::as_str(self)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = UnknownValue;

            fn from_str(s: &str) -> Result<Self, UnknownValue> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err(UnknownValue {
                        vocabulary: $what,
                        value: s.to_string(),
                        allowed: [$($text),+].join(", "),
                    }),
                }
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }

        impl coffer_store::rows::FromColumn for $name {
            fn from_value(v: coffer_store::rows::Value) -> Result<Self, String> {
                <String as coffer_store::rows::FromColumn>::from_value(v)?.parse().map_err(|e: UnknownValue| e.to_string())
            }
        }

        impl coffer_store::rows::ToColumn for $name {
            fn to_value(&self) -> coffer_store::rows::Value {
                coffer_store::rows::Value::Text(self.as_str().to_owned())
            }
        }
    };
}

vocabulary! {
    /// Who may see an artifact.
    SharingClass ("sharing class") {
        /// Not classified: never exported.
        Unknown = "unknown",
        /// Restricted to its owners.
        Restricted = "restricted",
        /// Internal to the organization.
        Internal = "internal",
        /// Shared with partners (a derivative, sanitized).
        Partner = "partner",
        /// Public (a derivative, sanitized).
        Public = "public",
    }
}

impl SharingClass {
    /// True for the classes that leave the organization (partner, public):
    /// such an artifact must be a sanitized derivative. The writer's one
    /// rule for this; the export readback keeps its own copy on purpose.
    pub fn is_shared(self) -> bool {
        matches!(self, SharingClass::Partner | SharingClass::Public)
    }
}

vocabulary! {
    /// What an evidence artifact is.
    Kind ("kind") {
        /// The agent session (JSONL).
        Session = "session",
        /// Hook events (JSONL).
        Hook = "hook",
        /// Timing and resource telemetry.
        Telemetry = "telemetry",
        /// The workspace patch.
        Workspace = "workspace",
        /// A verifier result.
        Verifier = "verifier",
        /// Diagnostic output.
        Diagnostic = "diagnostic",
        /// The capture report.
        CaptureReport = "capture-report",
        /// An export manifest inside the bundle.
        ExportManifest = "export-manifest",
    }
}

vocabulary! {
    /// Which kind of claim an artifact is evidence for.
    Authority ("authority") {
        /// What the agent did.
        Semantic = "semantic",
        /// How long and how much it took.
        TimingResource = "timing-resource",
        /// Whether it worked.
        Outcome = "outcome",
        /// How the evidence was captured.
        Capture = "capture",
        /// How it was exported.
        Export = "export",
    }
}

vocabulary! {
    /// Whether a run's evidence is complete enough to count.
    Qualification ("qualification") {
        /// Complete.
        Qualified = "qualified",
        /// Something required is missing.
        Incomplete = "incomplete",
    }
}

vocabulary! {
    /// How a run ended.
    TerminalState ("terminal state") {
        /// It ran to the end.
        Completed = "completed",
        /// It failed.
        Failed = "failed",
        /// It was stopped (budget, policy).
        Stopped = "stopped",
        /// It was interrupted.
        Interrupted = "interrupted",
    }
}

vocabulary! {
    /// Why a run failed (`terminal.failureClass`).
    FailureClass ("failure class") {
        /// It did not fail.
        None = "none",
        /// The infrastructure failed.
        Infrastructure = "infrastructure",
        /// The task failed.
        Task = "task",
    }
}

vocabulary! {
    /// Why a run was stopped (`terminal.stopReason`).
    StopReason ("stop reason") {
        /// It was not stopped.
        None = "none",
        /// Its budget ran out.
        Budget = "budget",
        /// A policy stopped it.
        Policy = "policy",
    }
}

vocabulary! {
    /// How a run is assessed.
    AssessmentMode ("assessment mode") {
        /// Observed only: no verifier.
        Observational = "observational",
        /// Checked by a verifier.
        Verified = "verified",
    }
}

vocabulary! {
    /// A run's verifier outcome: the `status` of its verifier result, or
    /// `none` when it has no verifier result.
    VerifierOutcome ("verifier outcome") {
        /// Every assertion held.
        Passed = "passed",
        /// An assertion failed.
        Failed = "failed",
        /// The verifier itself failed.
        Error = "error",
        /// The verifier did not run.
        NotRun = "not-run",
        /// The run has no verifier result.
        None = "none",
    }
}

vocabulary! {
    /// What a capture report says of one capability.
    CapabilityStatus ("capability status") {
        /// The harness captured it.
        Available = "available",
        /// The harness should have captured it and did not.
        Missing = "missing",
        /// The harness cannot capture it.
        Unsupported = "unsupported",
        /// Nobody looked.
        NotChecked = "not-checked",
    }
}

vocabulary! {
    /// A verifier result's own `status` (a run with none is
    /// [`VerifierOutcome::None`]).
    VerifierStatus ("verifier status") {
        /// Every assertion held.
        Passed = "passed",
        /// An assertion failed.
        Failed = "failed",
        /// The verifier itself failed.
        Error = "error",
        /// The verifier did not run.
        NotRun = "not-run",
    }
}

impl From<VerifierStatus> for VerifierOutcome {
    fn from(s: VerifierStatus) -> VerifierOutcome {
        match s {
            VerifierStatus::Passed => VerifierOutcome::Passed,
            VerifierStatus::Failed => VerifierOutcome::Failed,
            VerifierStatus::Error => VerifierOutcome::Error,
            VerifierStatus::NotRun => VerifierOutcome::NotRun,
        }
    }
}

vocabulary! {
    /// Why a capture report declares evidence missing.
    GapReason ("missing evidence reason") {
        /// The harness did not emit it.
        NotEmitted = "not-emitted",
        /// It was emitted and not collected.
        NotCollected = "not-collected",
        /// An optional beta source (timing only) was not available.
        OptionalBetaUnavailable = "optional-beta-unavailable",
        /// The process was interrupted before it was written.
        ProcessInterrupted = "process-interrupted",
        /// A policy kept it out.
        PolicyRestricted = "policy-restricted",
        /// The harness cannot capture it.
        Unsupported = "unsupported",
        /// Nobody looked.
        NotChecked = "not-checked",
    }
}

vocabulary! {
    /// Where a task packet's admission review stands.
    AdmissionStatus ("admission status") {
        /// Submitted, not yet reviewed.
        Proposed = "proposed",
        /// Reviewed and admitted.
        Admitted = "admitted",
        /// Reviewed and refused.
        Rejected = "rejected",
    }
}

vocabulary! {
    /// One verifier assertion's status.
    AssertionStatus ("assertion status") {
        /// It held.
        Passed = "passed",
        /// It did not.
        Failed = "failed",
        /// It was not evaluated.
        NotRun = "not-run",
    }
}

vocabulary! {
    /// Where an in-bundle export manifest says the export stands.
    ExportStatus ("export status") {
        /// Nobody asked for an export.
        NotRequested = "not-requested",
        /// An export was asked for and refused.
        Blocked = "blocked",
        /// Ready to be exported.
        Ready = "ready",
        /// Exported.
        Exported = "exported",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_round_trips_and_nothing_else_parses() {
        for c in SharingClass::ALL {
            assert_eq!(c.as_str().parse::<SharingClass>().unwrap(), *c);
            let json = serde_json::to_string(c).unwrap();
            assert_eq!(serde_json::from_str::<SharingClass>(&json).unwrap(), *c);
        }
        assert_eq!(Kind::CaptureReport.as_str(), "capture-report");
        assert_eq!(Authority::TimingResource.to_string(), "timing-resource");
        let e = "Public".parse::<SharingClass>().unwrap_err();
        assert_eq!(e.vocabulary, "sharing class");
        assert!(e
            .to_string()
            .contains("unknown, restricted, internal, partner, public"));
        assert!(serde_json::from_str::<Kind>("\"sessions\"").is_err());
    }

    #[test]
    fn a_catalog_value_outside_the_vocabulary_does_not_convert() {
        use coffer_store::rows::{FromColumn, ToColumn, Value};
        let text = |t: &str| Value::Text(t.into());
        assert_eq!(
            TerminalState::from_value(text("stopped")),
            Ok(TerminalState::Stopped)
        );
        assert_eq!(TerminalState::Stopped.to_value(), text("stopped"));
        let e = TerminalState::from_value(text("exploded")).unwrap_err();
        assert!(e.contains("exploded") && e.contains("terminal"), "{e}");
        assert!(TerminalState::from_value(Value::Integer(1)).is_err());
    }

    #[test]
    fn only_partner_and_public_are_shared() {
        let shared: Vec<_> = SharingClass::ALL.iter().filter(|c| c.is_shared()).collect();
        assert_eq!(shared, [&SharingClass::Partner, &SharingClass::Public]);
    }

    #[test]
    fn the_vocabularies_are_the_schemas_enums() {
        let schema = |name: &str| -> serde_json::Value {
            let path = format!("{}/../../schemas/{name}", env!("CARGO_MANIFEST_DIR"));
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
        };
        let listed =
            |v: &serde_json::Value| -> Vec<String> { serde_json::from_value(v.clone()).unwrap() };
        fn spelled<T: fmt::Display>(all: &[T]) -> Vec<String> {
            all.iter().map(T::to_string).collect()
        }
        let d = schema("evidence-descriptor.v1.json");
        let m = schema("run-manifest.v1.json");
        let c = schema("capture-report.v1.json");
        assert_eq!(
            listed(&d["$defs"]["sharingClass"]["enum"]),
            spelled(SharingClass::ALL)
        );
        assert_eq!(listed(&d["properties"]["kind"]["enum"]), spelled(Kind::ALL));
        assert_eq!(
            listed(&d["properties"]["authority"]["enum"]),
            spelled(Authority::ALL)
        );
        let q = &c["properties"]["qualification"]["enum"];
        assert_eq!(listed(q), spelled(Qualification::ALL));
        let t = &m["properties"]["terminal"]["properties"]["state"]["enum"];
        assert_eq!(listed(t), spelled(TerminalState::ALL));
        let a = &m["properties"]["run"]["properties"]["assessmentMode"]["enum"];
        assert_eq!(listed(a), spelled(AssessmentMode::ALL));
        let terminal = &m["properties"]["terminal"]["properties"];
        assert_eq!(
            listed(&terminal["failureClass"]["enum"]),
            spelled(FailureClass::ALL)
        );
        assert_eq!(
            listed(&terminal["stopReason"]["enum"]),
            spelled(StopReason::ALL)
        );
        for cap in ["semantic", "timingResource", "outcome"] {
            let s = &c["properties"]["capabilities"]["properties"][cap]["properties"]["status"];
            assert_eq!(listed(&s["enum"]), spelled(CapabilityStatus::ALL));
        }
        let gap = &c["properties"]["missingEvidence"]["items"]["properties"]["reason"];
        assert_eq!(listed(&gap["enum"]), spelled(GapReason::ALL));
        let v = schema("verifier-result.v1.json");
        assert_eq!(
            listed(&v["properties"]["status"]["enum"]),
            spelled(VerifierStatus::ALL)
        );
        let assertion = &v["properties"]["assertions"]["items"]["properties"]["status"];
        assert_eq!(listed(&assertion["enum"]), spelled(AssertionStatus::ALL));
        let e = schema("export-manifest.v1.json");
        assert_eq!(
            listed(&e["properties"]["status"]["enum"]),
            spelled(ExportStatus::ALL)
        );
        // Admission is `proposed` (with no review) or one of the verdicts.
        let admission = &schema("task-packet.v1.json")["properties"]["admission"]["oneOf"];
        let mut statuses = vec![admission[0]["properties"]["status"]["const"].clone()];
        statuses.extend(
            listed(&admission[1]["properties"]["status"]["enum"])
                .into_iter()
                .map(Into::into),
        );
        assert_eq!(
            listed(&serde_json::Value::Array(statuses)),
            spelled(AdmissionStatus::ALL)
        );
        // A run without a verifier result is the outcome's one extra value.
        let outcomes: Vec<VerifierOutcome> =
            VerifierStatus::ALL.iter().map(|s| (*s).into()).collect();
        assert_eq!(
            [outcomes.as_slice(), &[VerifierOutcome::None]].concat(),
            VerifierOutcome::ALL
        );
    }
}
