//! Errors of the evidence domain, each with a stable `class.name` code.
//!
//! The domain's own refusals (a bundle id taken by other content, a packet
//! changed since its freeze, a record asked for that is not stored) are
//! raised here, not through the store's error type; what the store or the
//! filesystem reports passes through unchanged as [`EvidenceError::Store`].

use coffer_base::issue::Issue;
use coffer_store::StoreError;

/// Everything that can go wrong in the evidence domain.
#[derive(Debug, thiserror::Error)]
pub enum EvidenceError {
    /// The store or the filesystem failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The request conflicts with a stored record (`conflict.*`): nothing
    /// was replaced.
    #[error("{message}")]
    Conflict {
        /// Stable `conflict.*` code.
        code: &'static str,
        /// What conflicts.
        message: String,
        /// The id or path involved.
        subject: String,
    },
    /// No record of this kind with this id is stored (a bundle asked for by
    /// id or manifest digest, a file of a stored bundle).
    #[error("no {what} {id:?} in the store{}", did_you_mean(.suggestions))]
    Unknown {
        /// What kind of record was asked for.
        what: &'static str,
        /// The id or digest asked for.
        id: String,
        /// Stored ids close to it, nearest first (at most 3).
        suggestions: Vec<String>,
    },
    /// A digest prefix that starts several records' digests.
    #[error("{prefix} is the start of the manifest digests of {} {what}s: {}", .matches.len(), .matches.join(", "))]
    Ambiguous {
        /// What kind of record was asked for.
        what: &'static str,
        /// The prefix asked for.
        prefix: String,
        /// Some of the digests it starts (at most 10).
        matches: Vec<String>,
    },
}

fn did_you_mean(suggestions: &[String]) -> String {
    match suggestions {
        [] => String::new(),
        [one] => format!("; did you mean {one:?}?"),
        many => format!(
            "; did you mean one of {}?",
            many.iter()
                .map(|s| format!("{s:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

impl EvidenceError {
    /// The stable `class.name` code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            EvidenceError::Store(e) => e.code(),
            EvidenceError::Conflict { code, .. } => code,
            EvidenceError::Unknown { .. } => coffer_base::codes::io::NOT_FOUND,
            EvidenceError::Ambiguous { .. } => coffer_base::codes::usage::AMBIGUOUS_DIGEST,
        }
    }

    /// The file, path, id or digest the error is about, when there is one.
    pub fn subject(&self) -> Option<String> {
        match self {
            EvidenceError::Store(e) => e.subject(),
            EvidenceError::Conflict { subject, .. } => Some(subject.clone()),
            EvidenceError::Unknown { id, .. } => Some(id.clone()),
            EvidenceError::Ambiguous { prefix, .. } => Some(prefix.clone()),
        }
    }

    /// The store's error, when this is one.
    pub fn store(&self) -> Option<&StoreError> {
        match self {
            EvidenceError::Store(e) => Some(e),
            _ => None,
        }
    }
}

impl From<coffer_base::publish::PublishError> for EvidenceError {
    fn from(e: coffer_base::publish::PublishError) -> Self {
        EvidenceError::Store(e.into())
    }
}

impl From<coffer_base::input::InputError> for EvidenceError {
    fn from(e: coffer_base::input::InputError) -> Self {
        EvidenceError::Store(e.into())
    }
}

/// An evidence error as an issue about its subject.
impl From<&EvidenceError> for Issue {
    fn from(e: &EvidenceError) -> Self {
        Issue::about(e.code(), e.subject(), e.to_string())
    }
}

/// Commits `batch` with `rows` as its catalog work. A domain refusal
/// raised inside the transaction (a conflict another writer's row reveals)
/// rolls it back like any store error, and is returned as itself: the
/// store's transaction only knows its own error type, so the refusal
/// travels through it as a `StoreError::Conflict` with the same code and
/// text, and is swapped back here.
pub(crate) fn commit_rows(
    batch: coffer_store::Batch<'_>,
    rows: impl FnOnce(&coffer_store::rows::Writer<'_>) -> Result<()>,
) -> Result<Vec<coffer_store::PutOutcome>> {
    let mut refused = None;
    let committed = batch.commit_with(|tx| match rows(tx) {
        Ok(()) => Ok(()),
        Err(EvidenceError::Store(e)) => Err(e),
        Err(e) => {
            let carrier = StoreError::Conflict {
                code: e.code(),
                message: e.to_string(),
                subject: e.subject().unwrap_or_default(),
            };
            refused = Some(e);
            Err(carrier)
        }
    });
    match (committed, refused) {
        (_, Some(e)) => Err(e),
        (Ok(outcomes), None) => Ok(outcomes),
        (Err(e), None) => Err(e.into()),
    }
}

/// Results of this crate.
pub type Result<T, E = EvidenceError> = std::result::Result<T, E>;
