//! coffer-export: sanitized, read-back-verified exports of stored evidence.
//!
//! Not built yet: the export pipeline (policy, scrubbing, keyed identity
//! rewriting, export manifest, readback, pack/unpack) is the subject of its
//! own issue. The crate exists so the workspace has its final shape
//! (`cli -> export -> store`) and the dependency direction is fixed.
