//! End-to-end tests: the real `coffer` binary on real temp directories.

mod cli_contract;
mod integrity;
mod objects;
mod support;
