//! Typed store errors, each with a stable `class.name` code.
//!
//! The codes are part of the CLI contract (docs/CLI.md): scripts match
//! on them, so a code never changes meaning once released.

use coffer_base::codes;
use std::io;
use std::path::PathBuf;

use coffer_base::digest::Digest;

/// Everything that can go wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The directory holds no `STORE-FORMAT` file.
    #[error("{path}: not a coffer store (run `coffer init` first)")]
    NotAStore {
        /// The store root that was tried.
        path: PathBuf,
    },
    /// `STORE-FORMAT` names a format or version this build cannot read.
    #[error("{path}: unsupported store format: {detail}")]
    UnsupportedFormat {
        /// The `STORE-FORMAT` file.
        path: PathBuf,
        /// What was wrong with it.
        detail: String,
    },
    /// No object with this digest is present.
    #[error("object {digest} is not in the store")]
    NotFound {
        /// The digest asked for.
        digest: Digest,
    },
    /// The catalog lists an object whose file is gone.
    #[error("object {digest} is in the catalog but its file is missing")]
    MissingObject {
        /// The object.
        digest: Digest,
    },
    /// Bytes did not hash to the digest they were supposed to have.
    #[error("{subject}: digest mismatch: expected {expected}, got {actual}")]
    DigestMismatch {
        /// What was being read or written (object key or input path).
        subject: String,
        /// The digest that was promised.
        expected: Digest,
        /// The digest the bytes have.
        actual: Digest,
    },
    /// Bytes had another length than promised.
    #[error("{subject}: size mismatch: expected {expected} bytes, got {actual}")]
    SizeMismatch {
        /// What was being read or written.
        subject: String,
        /// Promised size.
        expected: u64,
        /// Actual size.
        actual: u64,
    },
    /// A stored object file is not a valid frame (truncated, bit-flipped...).
    #[error("object {digest}: stored frame is corrupt: {detail}")]
    CorruptObject {
        /// The object.
        digest: Digest,
        /// The decoder's complaint.
        detail: String,
    },
    /// A pack's index does not decode, or does not describe its pack.
    #[error("{key}: unusable pack index: {detail}")]
    CorruptPack {
        /// The index's key.
        key: String,
        /// What is wrong.
        detail: String,
    },
    /// An input file changed size or identity while it was being read.
    #[error("{path}: changed while being read")]
    SourceChanged {
        /// The input.
        path: PathBuf,
    },
    /// A destination already exists; coffer never replaces a file.
    #[error("{path}: already exists; coffer never replaces an existing file")]
    DestinationExists {
        /// The destination.
        path: PathBuf,
    },
    /// `coffer init` was pointed at a directory that holds other things.
    #[error("{path}: cannot create a store here: directory holds {entry:?}")]
    RootNotEmpty {
        /// The would-be store root.
        path: PathBuf,
        /// One foreign entry found there.
        entry: String,
    },
    /// A store found by searching upwards or through `$COFFER_STORE` that
    /// another user could have planted or can change (see
    /// [`crate::layout::check_trusted`]).
    #[error("{path}: {why}; a store found by searching or through $COFFER_STORE must be a directory owned by you and writable only by you (to use this one anyway, name it with --store {path})")]
    UnsafeStore {
        /// The store root found.
        path: PathBuf,
        /// What makes it unsafe.
        why: String,
    },
    /// Something inside the store is a symlink or another unexpected type.
    #[error("{path}: unexpected {what} inside the store; it is never followed")]
    UnexpectedEntry {
        /// Path of the entry inside the store.
        path: PathBuf,
        /// What kind of entry it is.
        what: &'static str,
    },
    /// An input is not a regular file.
    #[error("{path}: not a regular file ({what})")]
    NotRegularFile {
        /// The input.
        path: PathBuf,
        /// What it is instead.
        what: &'static str,
    },
    /// A user-named input is not a regular file, is too large, or could
    /// not be read.
    #[error(transparent)]
    Input(#[from] coffer_base::input::InputError),
    /// A stop was requested (SIGINT, SIGTERM); the work stopped at a safe
    /// point and stored nothing more.
    #[error("interrupted")]
    Interrupted(#[from] coffer_base::interrupt::Interrupted),
    /// The request conflicts with what the store already holds.
    #[error("{message}")]
    Conflict {
        /// Stable `conflict.*` code.
        code: &'static str,
        /// What conflicts.
        message: String,
        /// The id or path involved.
        subject: String,
    },
    /// A filesystem call failed.
    #[error("{path}: {op}: {source}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// What coffer was doing.
        op: &'static str,
        /// The OS error.
        source: io::Error,
    },
    /// A remote backend (a bucket) refused or failed a request.
    #[error("{location}/{key}: {op}: {detail}")]
    Remote {
        /// The backend (`s3://bucket/prefix`).
        location: String,
        /// The key involved.
        key: String,
        /// What coffer was doing.
        op: &'static str,
        /// The backend's complaint.
        detail: String,
    },
    /// The SQLite catalog failed.
    #[error("catalog: {0}")]
    Catalog(CatalogError),
    /// The catalog holds a value this build does not understand.
    #[error("catalog: {0}")]
    CatalogData(String),
}

impl StoreError {
    /// The stable `class.name` code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::NotAStore { .. } => codes::validation::NOT_A_STORE,
            StoreError::UnsupportedFormat { .. } => codes::validation::UNSUPPORTED_STORE_FORMAT,
            StoreError::NotFound { .. } => codes::io::NOT_FOUND,
            StoreError::MissingObject { .. } => codes::integrity::MISSING_OBJECT,
            StoreError::DigestMismatch { .. } => codes::integrity::DIGEST_MISMATCH,
            StoreError::SizeMismatch { .. } => codes::integrity::SIZE_MISMATCH,
            // A frame that does not decode is bytes that are not what the key says.
            StoreError::CorruptObject { .. } => codes::integrity::DIGEST_MISMATCH,
            StoreError::CorruptPack { .. } => codes::integrity::CORRUPT_PACK,
            StoreError::SourceChanged { .. } => codes::io::SOURCE_CHANGED,
            StoreError::DestinationExists { .. } => codes::conflict::DESTINATION_EXISTS,
            StoreError::UnexpectedEntry { .. } => codes::integrity::UNEXPECTED_ENTRY,
            StoreError::UnsafeStore { .. } => codes::policy::UNSAFE_STORE,
            StoreError::RootNotEmpty { .. } => codes::conflict::STORE_ROOT_NOT_EMPTY,
            StoreError::Conflict { code, .. } => code,
            StoreError::Interrupted(_) => codes::io::INTERRUPTED,
            StoreError::NotRegularFile { .. } => codes::validation::NOT_REGULAR_FILE,
            StoreError::Input(e) => e.code(),
            StoreError::Io { source, .. } => io_code(source),
            StoreError::Remote { .. } => codes::io::REMOTE,
            StoreError::Catalog(e) => catalog_code(e),
            StoreError::CatalogData(_) => codes::integrity::CATALOG,
        }
    }

    /// The file, path or digest the error is about, when there is one.
    pub fn subject(&self) -> Option<String> {
        match self {
            StoreError::NotAStore { path }
            | StoreError::UnsupportedFormat { path, .. }
            | StoreError::SourceChanged { path }
            | StoreError::DestinationExists { path }
            | StoreError::UnexpectedEntry { path, .. }
            | StoreError::UnsafeStore { path, .. }
            | StoreError::RootNotEmpty { path, .. }
            | StoreError::NotRegularFile { path, .. }
            | StoreError::Io { path, .. } => Some(coffer_base::input::escaped(path)),
            StoreError::Input(e) => Some(coffer_base::input::escaped(e.path())),
            StoreError::NotFound { digest }
            | StoreError::MissingObject { digest }
            | StoreError::CorruptObject { digest, .. } => Some(digest.to_string()),
            StoreError::DigestMismatch { subject, .. }
            | StoreError::SizeMismatch { subject, .. } => Some(subject.clone()),
            StoreError::Conflict { subject, .. } => Some(subject.clone()),
            StoreError::Remote { location, key, .. } => Some(format!("{location}/{key}")),
            StoreError::CorruptPack { key, .. } => Some(key.clone()),
            StoreError::Interrupted(_) => None,
            StoreError::Catalog(_) | StoreError::CatalogData(_) => {
                Some(crate::entries::CATALOG_FILE.into())
            }
        }
    }

    /// Wraps an OS error with the path and operation it came from.
    pub fn io(path: impl Into<PathBuf>, op: &'static str, source: io::Error) -> Self {
        StoreError::Io {
            path: path.into(),
            op,
            source,
        }
    }

    /// A failed read of `path` through [`std::io::Read`]: the store's own
    /// error when the reader was an [`crate::ObjectReader`] (a digest
    /// mismatch stays one), an I/O error otherwise.
    pub fn read(path: impl Into<PathBuf>, e: io::Error) -> Self {
        if !e.get_ref().is_some_and(|i| i.is::<StoreError>()) {
            return StoreError::io(path, "read", e);
        }
        match e.into_inner().map(|i| i.downcast::<StoreError>()) {
            Some(Ok(inner)) => *inner,
            _ => StoreError::CatalogData("an object read failed without its error".into()),
        }
    }
}

/// A failure of the catalog's database engine; which engine stays inside
/// the CAS.
#[derive(Debug)]
pub struct CatalogError(rusqlite::Error);

impl std::fmt::Display for CatalogError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for CatalogError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

impl CatalogError {
    pub(crate) fn engine(&self) -> &rusqlite::Error {
        &self.0
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError::Catalog(CatalogError(e))
    }
}

fn catalog_code(e: &CatalogError) -> &'static str {
    let e = e.engine();
    // A row whose text the reader cannot understand (a digest, a
    // vocabulary value) is a damaged catalog.
    if let rusqlite::Error::FromSqlConversionFailure(..) = e {
        return codes::integrity::CATALOG;
    }
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DiskFull) => codes::io::NO_SPACE,
        Some(rusqlite::ErrorCode::ReadOnly) => codes::io::READ_ONLY,
        Some(rusqlite::ErrorCode::DatabaseCorrupt) | Some(rusqlite::ErrorCode::NotADatabase) => {
            codes::integrity::CATALOG
        }
        Some(rusqlite::ErrorCode::DatabaseBusy) | Some(rusqlite::ErrorCode::DatabaseLocked) => {
            codes::io::BUSY
        }
        _ => codes::io::CATALOG,
    }
}

pub use coffer_base::os_code::io_code;

/// A publication's failure as the store reports it (same codes, same text).
impl From<coffer_base::publish::PublishError> for StoreError {
    fn from(e: coffer_base::publish::PublishError) -> Self {
        match e {
            coffer_base::publish::PublishError::DestinationExists { path } => {
                StoreError::DestinationExists { path }
            }
            coffer_base::publish::PublishError::UnexpectedEntry { path, what } => {
                StoreError::UnexpectedEntry { path, what }
            }
            coffer_base::publish::PublishError::Interrupted(i) => StoreError::Interrupted(i),
            coffer_base::publish::PublishError::Io { path, op, source } => {
                StoreError::Io { path, op, source }
            }
        }
    }
}

/// A store error as an issue about its subject.
impl From<&StoreError> for coffer_base::issue::Issue {
    fn from(e: &StoreError) -> Self {
        coffer_base::issue::Issue::about(e.code(), e.subject(), e.to_string())
    }
}

/// Shorthand for results in this crate.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;
