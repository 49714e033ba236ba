//! coffer-store: a content-addressed store for evaluation evidence.
//!
//! Objects are keyed by the SHA-256 of their raw bytes ([`Digest`]), stored
//! as one zstd frame each under `objects/sha256/<2hex>/<64hex>`, published
//! without ever replacing a file, and verified on every read. A SQLite
//! [`Catalog`] records what exists and what holds it. The on-disk format is
//! specified in `docs/FORMAT.md`.
//!
//! Guarantees: a put that returns `Ok` is durable (data and directory entry
//! fsynced, catalog committed with `synchronous=FULL`); a published object is
//! never modified or replaced; a read that returns all bytes without error
//! returned exactly the bytes the key names; nothing under the store root is
//! reached through a symlink.

pub mod backend;
pub mod capture;
pub mod catalog;
pub mod crash;
pub mod digest;
pub mod dir;
pub mod error;
pub mod frame;
pub mod fsck;
pub mod gc;
pub mod input;
pub mod issue;
pub mod json;
pub mod layout;
pub mod mirror;
pub mod names;
pub mod new_tree;
pub mod objects;
pub mod os_code;
pub mod refs;
pub mod stager;
pub mod store;
pub mod tree;

pub use backend::{Backend, BackendConfig};
pub use catalog::{Catalog, CatalogStats, ObjectRow, Root};
pub use digest::Digest;
pub use error::{Result, StoreError};
pub use fsck::{Finding, FsckReport};
pub use gc::GcReport;
pub use store::{Batch, ObjectReader, PutOptions, PutOutcome, Store};
