//! `coffer grep`: a regular expression over the stored evidence of the
//! selected runs, line by line, every object verified.
//!
//! A hit is only shown once the object it came from has been read to its
//! end and its digest checked: hits wait in a buffer. If an object's hits
//! outgrow [`MAX_PENDING`] bytes, the object is read to its end first (so
//! it is verified) and then searched again, printing as it goes.

use std::io::{BufRead, BufReader, Read};

use coffer_store::{Store, StoreError};
use regex::bytes::Regex;
use serde::Serialize;

use super::query::Run;
use super::records::{bundle_artifacts, ArtifactRow};
use crate::error::Result;
use crate::vocab::Kind;

/// Longest piece of a line matched at once; a longer line is searched in
/// pieces of this size (a match across two pieces is not found).
pub const MAX_LINE: usize = 1 << 20;
/// Hits held back per object before it is verified by a read of its own.
pub const MAX_PENDING: usize = 8 << 20;
/// Bytes looked at for a NUL to call an object binary (as ripgrep does).
const BINARY_PROBE: usize = 8 << 10;

/// Which evidence is searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// The session (`session.jsonl`).
    Session,
    /// The workspace patch.
    Patch,
    /// Every artifact.
    Artifacts,
}

impl Scope {
    fn holds(self, a: &ArtifactRow) -> bool {
        match self {
            Scope::Session => a.kind == Kind::Session,
            Scope::Patch => a.kind == Kind::Workspace,
            Scope::Artifacts => true,
        }
    }
}

/// One matching line.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hit {
    /// The run's bundle.
    pub bundle_id: crate::ids::BundleId,
    /// The artifact's path in the bundle.
    pub path: String,
    /// The line (from 1).
    pub line: u64,
    /// The line's text (invalid UTF-8 replaced).
    pub text: String,
}

/// What a search read.
#[derive(Debug, Clone, Copy, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Searched {
    /// Objects read and verified.
    pub objects: u64,
    /// Objects skipped as binary (a NUL in their first 8 KiB).
    pub binary: u64,
    /// Lines that matched.
    pub hits: u64,
}

/// Searches `run`'s artifacts in `scopes` for `re`, calling `each` with
/// every hit (in path order, then line order) once its object is verified;
/// stops when `each` returns `false`.
pub fn search(
    store: &Store,
    run: &Run,
    scopes: &[Scope],
    re: &Regex,
    searched: &mut Searched,
    each: &mut dyn FnMut(&Hit) -> Result<bool>,
) -> Result<bool> {
    for a in bundle_artifacts(store.catalog(), &run.row.bundle_id)? {
        if !scopes.iter().any(|s| s.holds(&a)) {
            continue;
        }
        coffer_base::interrupt::check().map_err(StoreError::Interrupted)?;
        let mut pending = Vec::new();
        let mut pending_bytes = 0usize;
        let outcome = scan(store, run, &a, re, &mut |h| {
            pending_bytes += h.text.len() + h.path.len() + 32;
            pending.push(h);
            pending_bytes <= MAX_PENDING
        })?;
        match outcome {
            Scan::Binary => searched.binary += 1,
            Scan::Done => {
                searched.objects += 1;
                for h in &pending {
                    searched.hits += 1;
                    if !each(h)? {
                        return Ok(false);
                    }
                }
            }
            Scan::Stopped => {
                // Too many hits to hold: verify first, then print as read.
                drop(pending);
                std::io::copy(&mut store.open_object(&a.digest)?, &mut std::io::sink())
                    .map_err(|e| StoreError::read(&a.relative_path, e))?;
                searched.objects += 1;
                let mut go_on = Ok(true);
                scan(store, run, &a, re, &mut |h| {
                    searched.hits += 1;
                    go_on = each(&h);
                    matches!(go_on, Ok(true))
                })?;
                if !go_on? {
                    return Ok(false);
                }
            }
        }
    }
    Ok(true)
}

enum Scan {
    /// Read to the end (and so verified).
    Done,
    /// `each` asked to stop; the object was not read to its end.
    Stopped,
    /// Binary: not searched.
    Binary,
}

fn scan(
    store: &Store,
    run: &Run,
    a: &ArtifactRow,
    re: &Regex,
    each: &mut dyn FnMut(Hit) -> bool,
) -> Result<Scan> {
    let io = |e| StoreError::read(&a.relative_path, e);
    let mut r = BufReader::with_capacity(1 << 16, store.open_object(&a.digest)?);
    let head = r.fill_buf().map_err(io)?;
    if memchr::memchr(0, &head[..head.len().min(BINARY_PROBE)]).is_some() {
        return Ok(Scan::Binary);
    }
    let mut buf = Vec::new();
    let mut line = 1u64;
    loop {
        buf.clear();
        let n = (&mut r)
            .take(MAX_LINE as u64)
            .read_until(b'\n', &mut buf)
            .map_err(io)?;
        if n == 0 {
            return Ok(Scan::Done);
        }
        let ended = buf.last() == Some(&b'\n');
        let text = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if re.is_match(text) {
            let hit = Hit {
                bundle_id: run.row.bundle_id.clone(),
                path: a.relative_path.clone(),
                line,
                text: String::from_utf8_lossy(text).into_owned(),
            };
            if !each(hit) {
                return Ok(Scan::Stopped);
            }
        }
        if ended {
            line += 1;
        }
    }
}

/// Compiles a pattern as `grep` reads it: Rust regex syntax over bytes,
/// with ASCII classes (`\w`, `\d`, `\s`) and ASCII case folding.
pub fn pattern(p: &str, ignore_case: bool) -> std::result::Result<Regex, regex::Error> {
    regex::bytes::RegexBuilder::new(p)
        .unicode(false)
        .case_insensitive(ignore_case)
        .size_limit(16 << 20)
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_bytes_with_ascii_classes() {
        let re = pattern(r"api_\w+", false).unwrap();
        assert!(re.is_match(b"use api_key here"));
        assert!(
            re.is_match(b"\xff\xfe api_x"),
            "invalid UTF-8 is searched too"
        );
        assert!(pattern("TRACEBACK", true)
            .unwrap()
            .is_match(b"Traceback (most"));
        assert!(pattern("(", false).is_err());
    }
}
