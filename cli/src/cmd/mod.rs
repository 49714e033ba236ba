//! One module per command family; each returns a [`crate::report::Report`].

pub mod admin;
pub mod bundles;
pub mod exports;
pub mod objects;
pub mod packets;

use coffer_store::{Digest, Store};

use crate::report::Report;
use crate::Ctx;

/// Opens the store named by the global flags.
pub fn open_store(ctx: &Ctx) -> Result<Store, coffer_store::StoreError> {
    Store::open(&ctx.store)
}

/// Opens the store for a command that only reads (works on a full disk).
pub fn open_store_for_reading(ctx: &Ctx) -> Result<Store, coffer_store::StoreError> {
    Store::open_for_reading(&ctx.store)
}

/// Parses a digest argument; a malformed one is a usage error.
pub fn parse_digest(arg: &str) -> Result<Digest, Box<Report>> {
    arg.parse::<Digest>().map_err(|e| {
        let shown = arg.chars().take(100).collect();
        Box::new(Report::usage(
            "usage.invalid_digest",
            e.to_string(),
            Some(shown),
        ))
    })
}

/// Renders a byte ratio, `n/a` when the denominator is zero.
pub fn ratio(num: u64, den: u64) -> Option<f64> {
    (den > 0).then(|| (num as f64 / den as f64 * 1000.0).round() / 1000.0)
}
