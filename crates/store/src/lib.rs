//! coffer-store: a content-addressed store for evaluation evidence. It
//! stands on `coffer-base` (digests, JSON, issues, safe files, publication)
//! and holds only the CAS: objects, catalog, backends, fsck, gc, mirror.
//!
//! Objects are keyed by the SHA-256 of their raw bytes ([`Digest`](coffer_base::Digest)), stored
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
//!
//! The CAS knows nothing of what its objects mean. A layer on top (coffer's
//! is `coffer-evidence`) registers its own catalog tables as a
//! [`catalog::Schema`], reads them through [`Catalog::reader`] and writes its
//! rows in the transaction that records its objects ([`Batch::commit_with`],
//! through the narrow [`rows`] seam); alone, the store uses
//! [`catalog::Schema::CAS`].
//!
//! ```
//! use coffer_store::catalog::{Root, Schema};
//! use coffer_base::Digest;
//! use coffer_store::{PutOptions, Store};
//!
//! let dir = tempfile::tempdir()?;
//! let (mut store, created) = Store::init(&dir.path().join("cas"), &Schema::CAS)?;
//! assert!(created);
//! let opts = PutOptions {
//!     root: Some(Root { kind: "put".into(), name: "greeting".into() }),
//!     ..PutOptions::default()
//! };
//! let put = store.put_reader(&mut &b"hello"[..], opts.clone(), &|_| {})?;
//! assert_eq!(put.digest, Digest::of(b"hello"));
//! // The same bytes again: one object, no second file.
//! assert!(!store.put_reader(&mut &b"hello"[..], opts, &|_| {})?.created);
//! let mut back = Vec::new();
//! store.copy_object(&put.digest, &mut back)?; // re-hashed while read
//! assert_eq!(back, b"hello");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod backend;
pub(crate) mod capture;
pub mod catalog;
pub mod entries;
pub mod error;
pub(crate) mod frame;
pub(crate) mod fsck;
pub(crate) mod gc;
pub mod layout;
pub mod lookup;
pub(crate) mod marker;
pub(crate) mod mirror;
pub mod objects;
pub mod pack;
pub mod refs;
pub mod repack;
pub(crate) mod reverify;
pub mod rows;
pub(crate) mod stager;
pub mod store;
pub mod tree;

pub use backend::{Backend, BackendConfig};
pub use catalog::{Catalog, CatalogStats, ObjectRow, Root, RootKindTotals};
pub use error::{Result, StoreError};
pub use frame::{MULTITHREAD_MIN, WRITE_BUF};
pub use fsck::{Finding, FsckReport};
pub use gc::GcReport;
pub use mirror::MirrorReport;
pub use refs::{BrokenRef, RebuildReport};
pub use repack::RepackReport;
pub use store::{Batch, ObjectReader, Progress, PutOptions, PutOutcome, Store};
