//! coffer-export: partner and public derivatives of run bundles.
//!
//! An export runs in stages, each a module of its own:
//!
//! 1. **plan** (`plan`, from a `source` and a `policy`): which
//!    artifacts go, which are left out and why.
//! 2. **detect** ([`detect`]): the first pass collects what must not leave
//!    from every artifact (identities from typed fields, credentials found
//!    by the rules in every decoded view, values of secret-named fields,
//!    user and host names), so a secret found in one artifact is known
//!    before any is written.
//! 3. **rewrite** ([`rewrite`]): the second pass rewrites each artifact
//!    record by record (JSON) or line by line (text), replacing everything
//!    collected in one Aho-Corasick sweep, with encoded variants.
//! 4. **gate** ([`gate`]): an independent reader re-reads the tree from
//!    disk and refuses it on any finding.
//! 5. **publish** ([`publish`]): the manifest, the redaction report, and
//!    the archives made of a published tree.
//!
//! [`create`] runs them in that order and is the only module that knows
//! the order. Outside the stages' APIs, modules are `pub(crate)`.

pub mod compat;
pub mod create;
pub mod detect;
pub mod error;
pub mod gate;
pub mod in_memory;
pub mod key;
pub(crate) mod lines;
pub mod passes;
pub(crate) mod plan;
pub mod policy;
pub mod publish;
pub mod rewrite;
pub(crate) mod shown;
pub mod source;
pub mod view;
