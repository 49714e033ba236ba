//! Export errors: every one carries coded, located issues.

use coffer_base::issue::Issue;
use coffer_store::StoreError;

/// Why an export (or a verification) did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Refused by policy or contract; nothing was written.
    #[error("blocked: {}", first(.0))]
    Blocked(Vec<Issue>),
    /// The input or the produced tree is wrong; nothing was published.
    #[error("failed: {}", first(.0))]
    Invalid(Vec<Issue>),
    /// A bad argument.
    #[error("usage: {}", first(.0))]
    Usage(Vec<Issue>),
    /// The store or the filesystem failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The evidence domain refused (a bundle that is not stored, a
    /// conflicting record).
    #[error(transparent)]
    Evidence(coffer_evidence::EvidenceError),
}

/// The store's errors stay [`ExportError::Store`], whichever layer passes
/// them on.
impl From<coffer_evidence::EvidenceError> for ExportError {
    fn from(e: coffer_evidence::EvidenceError) -> Self {
        match e {
            coffer_evidence::EvidenceError::Store(s) => ExportError::Store(s),
            other => ExportError::Evidence(other),
        }
    }
}

fn first(issues: &[Issue]) -> String {
    issues
        .first()
        .map(|i| format!("{}: {}", i.code, i.message))
        .unwrap_or_default()
}

impl ExportError {
    /// The same error with every pointer token that `holds` a secret
    /// masked in its issues (`crate::shown::mask_issue`).
    pub fn masked(mut self, holds: &dyn Fn(&str) -> bool) -> Self {
        if let ExportError::Blocked(v) | ExportError::Invalid(v) | ExportError::Usage(v) = &mut self
        {
            for i in v {
                crate::shown::mask_issue(i, holds);
            }
        }
        self
    }

    /// A one-issue blocked error.
    pub fn blocked(code: &'static str, file: &str, message: impl Into<String>) -> Self {
        ExportError::Blocked(vec![Issue::file(code, file, message)])
    }

    /// A one-issue invalid-input error.
    pub fn invalid(code: &'static str, file: &str, message: impl Into<String>) -> Self {
        ExportError::Invalid(vec![Issue::file(code, file, message)])
    }

    /// A one-issue usage error: a `usage.*` code only (exit 2 is
    /// reserved for them; a bad document given as an argument is
    /// [`ExportError::invalid`], exit 1).
    pub fn usage(code: &'static str, file: &str, message: impl Into<String>) -> Self {
        debug_assert!(code.starts_with("usage."), "{code} is no usage code");
        ExportError::Usage(vec![Issue::file(code, file, message)])
    }

    /// The stable code of the first issue (or of the store error).
    pub fn code(&self) -> &str {
        match self {
            ExportError::Blocked(i) | ExportError::Invalid(i) | ExportError::Usage(i) => {
                i.first().map_or("", |i| i.code)
            }
            ExportError::Store(s) => s.code(),
            ExportError::Evidence(e) => e.code(),
        }
    }

    /// An I/O error on `path`.
    pub fn io(path: impl AsRef<std::path::Path>, op: &'static str, e: std::io::Error) -> Self {
        ExportError::Store(StoreError::io(path.as_ref(), op, e))
    }
}

impl From<coffer_base::input::InputError> for ExportError {
    fn from(e: coffer_base::input::InputError) -> Self {
        ExportError::Store(StoreError::Input(e))
    }
}

/// A publication's failure, with the code and text the store gives it.
impl From<coffer_base::publish::PublishError> for ExportError {
    fn from(e: coffer_base::publish::PublishError) -> Self {
        ExportError::Store(e.into())
    }
}

/// Results of this crate.
pub type Result<T, E = ExportError> = std::result::Result<T, E>;
