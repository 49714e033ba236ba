//! The publish stage: what an export writes beside its artifacts and what
//! is done with a published tree. The tree itself is published by
//! `create` through `coffer_base::publish`, after the gate.

pub mod manifest;
pub mod pack;
pub mod review;
