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
//! the byte offset. [`parse`] builds a `serde_json::Value`; [`check`] runs
//! the same grammar without building one (for evidence that is only
//! checked, never interpreted).

pub mod canonical;
mod jsonl;
mod parser;

pub use jsonl::{JsonlChecker, JsonlLimits};
pub use parser::{check, parse};

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
