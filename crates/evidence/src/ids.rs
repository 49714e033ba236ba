//! Typed ids: one type per kind of id, so a run id cannot be passed where
//! a bundle id is wanted. Each is the id's text as the contract writes it
//! (any identifier of 1 to 256 characters), serialized as a plain string.

use std::fmt;

use coffer_store::rows::{FromColumn, ToColumn, Value};

/// Declares id types: a newtype over the id's text with what every id
/// offers (display, `&str` access and comparison, serde as a string, and
/// catalog columns).
macro_rules! id_type {
    ($($(#[$doc:meta])* $name:ident;)+) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                $name(s)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                $name(s.to_string())
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl ToColumn for $name {
            fn to_value(&self) -> Value {
                Value::Text(self.0.clone())
            }
        }

        impl FromColumn for $name {
            fn from_value(v: Value) -> std::result::Result<Self, String> {
                String::from_value(v).map($name)
            }
        }
    )+};
}

id_type! {
    /// A run bundle's id (`bundleId`).
    BundleId;
    /// An evidence descriptor's id, unique within its bundle.
    ArtifactId;
    /// A run's id (`run.id`).
    RunId;
    /// An attempt's id (`attempt.id`).
    AttemptId;
    /// A task's id (`run.task.id`).
    TaskId;
    /// A fixture's id (`run.fixture.id`).
    FixtureId;
    /// A model's id (`run.model.id`).
    ModelId;
    /// A harness's id (`run.harness.id`).
    HarnessId;
    /// The harness's own session id (`run.native.sessionId`).
    SessionId;
    /// The harness's own trace id (`run.native.traceId`).
    TraceId;
    /// Any other id the harness itself gave (`nativeReference.id`).
    NativeId;
    /// A verifier assertion's id, unique within its result.
    AssertionId;
    /// A task packet's id.
    PacketId;
    /// A contract identifier from an open vocabulary, one the schemas do
    /// not enumerate (`nativeReference.type`, `missingEvidence.kind`).
    Identifier;
}

/// How a stored bundle is named on the command line: parsed once, so each
/// way is one indexed lookup (an id, then a manifest digest, then a
/// digest prefix), never an `OR` over columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleRef {
    /// The text as given: tried as a bundle id first (any identifier may
    /// look like a digest).
    pub id: BundleId,
    /// The text read as a whole manifest digest, when it is one.
    pub manifest: Option<coffer_base::Digest>,
    /// The text read as a digest prefix (8 to 63 hex digits, with or
    /// without `sha256:`), when it is one.
    pub prefix: Option<String>,
}

impl BundleRef {
    /// Reads a bundle reference.
    pub fn parse(text: &str) -> BundleRef {
        BundleRef {
            id: BundleId::from(text),
            manifest: coffer_base::Digest::parse_typed(text).ok(),
            prefix: coffer_base::digest::hex_prefix(text),
        }
    }
}

impl fmt::Display for BundleRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_compares_and_serializes_as_its_text() {
        let id = BundleId::from("run-7");
        assert_eq!(id, "run-7");
        assert_eq!(id.to_string(), "run-7");
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"run-7\"");
        assert_eq!(serde_json::from_str::<BundleId>("\"run-7\"").unwrap(), id);
    }

    #[test]
    fn a_reference_reads_every_way_the_text_can_name_a_bundle() {
        let hex = "77751c20".repeat(8);
        let r = BundleRef::parse(&format!("sha256:{hex}"));
        assert_eq!(r.manifest.unwrap().hex(), hex);
        let r = BundleRef::parse("77751c20");
        assert_eq!((r.manifest, r.prefix.as_deref()), (None, Some("77751c20")));
        let r = BundleRef::parse("attempt-17");
        assert_eq!((r.manifest, r.prefix), (None, None));
        assert_eq!(r.id, "attempt-17");
    }
}
