//! Run bundles: the evidence contract, validation of a bundle directory,
//! immutable ingest into the store, queries and byte-exact checkout.

pub mod checkout;
pub mod content;
pub mod contract;
pub mod diff;
pub mod events;
pub mod facts;
pub mod grep;
pub mod ingest;
pub mod inspect;
pub mod labels;
pub mod model;
pub mod query;
pub mod records;
pub mod safe_path;
pub mod seal;
pub mod source;
pub mod stats;
pub mod stream;

pub use crate::sink::{HashOnly, Sink};
pub use ingest::IngestOutcome;
pub use inspect::{inspect, Inspection};
pub use records::{ArtifactRow, BundleFilter, BundleRow};
