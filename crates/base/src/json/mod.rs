//! The one strict JSON reader every part of coffer uses.
//!
//! Stricter than RFC 8259 in the ways evidence needs: input must be valid
//! UTF-8 (no lossy decoding), object keys must be unique at every depth,
//! numbers that are integers must lie within ±(2^53−1) (what every JSON
//! implementation represents exactly), nothing may follow the value, and a
//! byte order mark is refused. Budgets bound bytes, nesting depth and node
//! count, so hostile input costs bounded time and memory: depth is checked
//! before recursing, so 100,000 nested brackets stop at the limit.
//!
//! Errors carry a stable code, the JSON pointer of the offending value and
//! the byte offset. [`parse`] builds a `serde_json::Value`, [`parse_node`]
//! a [`Node`] that borrows the input's strings (for readers that only
//! look); [`check`] runs the same grammar without building anything (for
//! evidence that is only checked, never interpreted).

pub mod canonical;
mod jsonl;
mod node;
mod parser;

use crate::codes;
pub use jsonl::{JsonlChecker, JsonlLimits};
pub use node::Node;
pub use parser::{check, parse, parse_node};

use std::io::Read;

use crate::issue::Issue;

/// Reads a whole document of `file` from `r`, at most `limits.max_bytes`
/// (one byte more is read, to tell "too large" from "exactly the limit"):
/// `io.error` or `limit.json_bytes`, naming `file`. The one bounded reader
/// in front of every whole-document parse.
pub fn read_bytes(r: impl Read, limits: &Limits, file: &str) -> Result<Vec<u8>, Issue> {
    let max = limits.max_bytes;
    match read_bounded(r, max) {
        Ok(Some(buf)) => Ok(buf),
        Ok(None) => Err(Issue::file(
            codes::limit::JSON_BYTES,
            file,
            format!("{file}: larger than {max} bytes"),
        )),
        Err(e) => Err(Issue::file(codes::io::ERROR, file, format!("{file}: {e}"))),
    }
}

/// The bounded read itself, for a caller that maps I/O errors its own way
/// (a verifying reader's digest mismatch is not `io.error`): at most `max`
/// bytes, `None` when there are more.
pub fn read_bounded(mut r: impl Read, max: usize) -> std::io::Result<Option<Vec<u8>>> {
    let mut buf = Vec::new();
    (&mut r).take(max as u64 + 1).read_to_end(&mut buf)?;
    Ok((buf.len() <= max).then_some(buf))
}

/// [`read_bytes`], then the strict parse; problems name `file`.
pub fn read_document(
    r: impl Read,
    limits: &Limits,
    file: &str,
) -> Result<serde_json::Value, Issue> {
    let bytes = read_bytes(r, limits, file)?;
    parse(&bytes, limits).map_err(|e| Issue::from((file, e)))
}

/// Budgets for one JSON document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Maximum input size in bytes.
    pub max_bytes: usize,
    /// Maximum nesting depth of arrays and objects (the top level is depth 1).
    pub max_depth: usize,
    /// Maximum number of values (every scalar, array and object counts one).
    pub max_nodes: usize,
}

impl Limits {
    /// Manifests and other contract documents: 8 MiB, depth 64, 1,000,000 nodes.
    pub const DOCUMENT: Limits = Limits {
        max_bytes: 8 << 20,
        max_depth: 64,
        max_nodes: 1_000_000,
    };
    /// JSON evidence that is only checked (e.g. telemetry): 64 MiB, depth
    /// 128, 8,000,000 nodes.
    pub const EVIDENCE: Limits = Limits {
        max_bytes: 64 << 20,
        max_depth: 128,
        max_nodes: 8_000_000,
    };
}

/// Largest integer every JSON implementation represents exactly (2^53 − 1).
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Why a document was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} (at {pointer_display}, byte {offset})", pointer_display = if pointer.is_empty() { "document root" } else { pointer.as_str() })]
pub struct JsonError {
    /// Stable `class.name` code.
    pub code: &'static str,
    /// JSON pointer (RFC 6901) of the value being read; empty for the root.
    pub pointer: String,
    /// Byte offset in the input.
    pub offset: usize,
    /// Human explanation.
    pub message: String,
}

/// Escapes one JSON pointer reference token (RFC 6901).
pub fn escape_pointer_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// A JSON error in `file`, as an issue located by its pointer.
impl From<(&str, JsonError)> for Issue {
    fn from((file, e): (&str, JsonError)) -> Self {
        Issue::at(e.code, file, e.pointer.clone(), format!("{file}: {e}"))
    }
}

#[cfg(test)]
mod read_tests {
    use super::*;

    #[test]
    fn documents_are_read_up_to_the_limit_and_not_a_byte_more() {
        let limits = Limits {
            max_bytes: 8,
            ..Limits::DOCUMENT
        };
        assert_eq!(read_bytes(&b"[1,2,34]"[..], &limits, "f").unwrap().len(), 8);
        let over = read_bytes(&b"[1,2,3,4]"[..], &limits, "f.json").unwrap_err();
        assert_eq!(over.code, "limit.json_bytes");
        assert_eq!(over.file.as_deref(), Some("f.json"));
        let dup = read_document(&br#"{"a":1,"a":2}"#[..], &Limits::DOCUMENT, "m.json").unwrap_err();
        assert_eq!(dup.code, "validation.duplicate_key");
        assert_eq!(dup.file.as_deref(), Some("m.json"));
    }
}
