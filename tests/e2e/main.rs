//! End-to-end tests: the real `coffer` binary on real temp directories.

mod architecture;
mod backends;
mod bundles;
mod cli_contract;
mod crash;
mod credentials;
mod disguises;
mod disk_full;
mod everyday;
mod examples;
mod export_archives;
mod exports;
mod hostile;
mod integrity;
mod interop;
mod interrupts;
mod mirror;
mod objects;
mod packets;
mod review;
mod seal;
mod soak;
mod support;
mod transcripts;
mod untrusted;
mod viewer;
