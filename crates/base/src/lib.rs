//! coffer-base: the ground every coffer layer stands on, and nothing that
//! knows what a store, a bundle or an export is.
//!
//! - [`digest`]: SHA-256 digests, their text forms and prefixes;
//! - [`json`]: bounded JSON and JSONL reading (limits on bytes, depth and
//!   members) and canonical JSON;
//! - [`issue`]: a located problem with a stable `class.name` code, one of
//!   [`codes`];
//! - [`input`]: files a user names, opened as regular files and read with a
//!   bound; [`os_code`]: the one mapping of OS errors to `io.*` codes;
//! - [`dir`]: directory handles that never follow a symlink below them;
//! - [`publish`] and [`temp`]: new files and trees made visible only
//!   complete and synced, never replacing anything;
//! - [`interrupt`]: a requested stop (SIGINT, SIGTERM), honoured at safe
//!   points;
//! - [`crash`]: fault-injection points for the crash tests.
//!
//! The layers above are `coffer-store` (the content-addressed store),
//! `coffer-evidence`, `coffer-export` and `coffer-cli`, in that order;
//! `tests/e2e/architecture.rs` checks that no layer names one above it.

pub mod codes;
pub mod crash;
pub mod digest;
pub mod dir;
pub mod input;
pub mod interrupt;
pub mod issue;
pub mod json;
pub mod os_code;
pub mod publish;
pub mod temp;

pub use digest::Digest;
pub use issue::Issue;
