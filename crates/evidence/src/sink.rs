//! Where validated input bytes go: [`HashOnly`] for commands that only
//! check (`bundle validate`, `packet validate`), a store [`Batch`] for
//! commands that archive (`bundle ingest`, `packet freeze`). Validation code
//! is written once against [`Sink`] and reads each file exactly once either way.

use std::io::Read;
use std::path::Path;

use coffer_base::digest::Digest;
use coffer_store::catalog::Root;
use coffer_store::error::StoreError;

use crate::error::{EvidenceError, Result};
use coffer_store::store::{Batch, PutOptions};

/// A sink's refusal of one input (its bytes are not what the document says,
/// or changed while read) as an issue about `file`; any other error is
/// fatal and passes through.
pub(crate) fn input_issue(e: EvidenceError, file: &str) -> Result<coffer_base::issue::Issue> {
    match e {
        EvidenceError::Store(
            e @ (StoreError::DigestMismatch { .. }
            | StoreError::SizeMismatch { .. }
            | StoreError::SourceChanged { .. }),
        ) => Ok(coffer_base::issue::Issue::file(
            e.code(),
            file,
            format!("{file}: {e}"),
        )),
        other => Err(other),
    }
}

/// A consumer of input streams.
pub trait Sink {
    /// Consumes exactly `size` bytes from `input`, checking `expected` when
    /// given, and returns their digest. `root` says what keeps the object
    /// (ignored by sinks that store nothing).
    fn put(
        &mut self,
        input: &mut dyn Read,
        size: u64,
        subject: &Path,
        expected: Option<Digest>,
        root: Option<Root>,
    ) -> Result<Digest>;
}

/// Hashes and checks, stores nothing.
pub struct HashOnly;

impl Sink for HashOnly {
    fn put(
        &mut self,
        input: &mut dyn Read,
        size: u64,
        subject: &Path,
        expected: Option<Digest>,
        _root: Option<Root>,
    ) -> Result<Digest> {
        let actual = coffer_base::digest::hash_exact(input, size, &|_| {})
            .map_err(|e| StoreError::io(subject, "read", e))?
            .ok_or_else(|| StoreError::SourceChanged {
                path: subject.to_path_buf(),
            })?;
        match expected {
            Some(e) if e != actual => Err(StoreError::DigestMismatch {
                subject: subject.display().to_string(),
                expected: e,
                actual,
            }
            .into()),
            _ => Ok(actual),
        }
    }
}

impl Sink for Batch<'_> {
    fn put(
        &mut self,
        input: &mut dyn Read,
        size: u64,
        subject: &Path,
        expected: Option<Digest>,
        root: Option<Root>,
    ) -> Result<Digest> {
        let (digest, _) = self.add_stream(
            input,
            size,
            subject,
            PutOptions {
                expected_digest: expected,
                expected_size: Some(size),
                root,
            },
        )?;
        Ok(digest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_only_checks_digest_and_length() {
        let d = Digest::of(b"abc");
        assert_eq!(
            HashOnly
                .put(&mut &b"abc"[..], 3, Path::new("x"), Some(d), None)
                .unwrap(),
            d
        );
        assert!(matches!(
            HashOnly.put(&mut &b"abd"[..], 3, Path::new("x"), Some(d), None),
            Err(EvidenceError::Store(StoreError::DigestMismatch { .. }))
        ));
        assert!(matches!(
            HashOnly.put(&mut &b"abcd"[..], 3, Path::new("x"), None, None),
            Err(EvidenceError::Store(StoreError::SourceChanged { .. }))
        ));
        assert!(matches!(
            HashOnly.put(&mut &b"ab"[..], 3, Path::new("x"), None, None),
            Err(EvidenceError::Store(StoreError::SourceChanged { .. }))
        ));
    }
}
