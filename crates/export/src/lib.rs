//! coffer-export: partner and public derivatives of run bundles.
//!
//! An export is built in two passes over the source artifacts. The first
//! pass collects what must not leave: identities from typed fields,
//! credentials found by [`rules`] in every decoded view ([`views`]), values
//! of secret-named fields, user names and host names. The second pass
//! rewrites each artifact record by record (JSON) or line by line (text),
//! replacing everything collected in one Aho-Corasick sweep, with encoded
//! variants, so a secret found once is gone from every artifact. The tree is
//! then read back by an independent reader ([`readback`]) before it is
//! published.

pub mod across;
pub mod collect;
pub mod compat;
pub mod continued;
pub mod create;
pub mod cut;
pub mod detect;
pub mod error;
pub mod hcl;
pub mod identity;
pub mod in_memory;
pub mod key;
pub mod kube;
pub mod lines;
pub mod literals;
pub mod local_paths;
pub mod manifest;
pub mod memo;
pub mod names;
pub mod pack;
pub mod passes;
pub mod plan;
pub mod policy;
pub mod readback;
pub mod review;
pub mod rules;
pub mod scan;
pub mod scrub;
pub mod shown;
pub mod source;
pub mod streams;
pub mod view;
pub mod views;
pub mod walker;
pub mod work;
