//! One module per command family; each returns a [`crate::report::Report`].

pub mod admin;
pub mod analysis;
pub mod batch;
pub mod bundles;
pub mod exports;
pub mod objects;
pub mod packets;

use coffer_base::codes;
use coffer_base::Digest;
use coffer_evidence::EvidenceError;
use coffer_store::Store;

use crate::report::{Issue, Report};
use crate::Ctx;

/// The store's path, once a store found rather than named has passed
/// [`coffer_store::layout::check_trusted`].
pub fn store_path(ctx: &Ctx) -> Result<&std::path::Path, EvidenceError> {
    if !ctx.store_named {
        coffer_store::layout::check_trusted(&ctx.store)?;
    }
    Ok(&ctx.store)
}

/// Opens the store named by the global flags.
pub fn open_store(ctx: &Ctx) -> Result<Store, EvidenceError> {
    coffer_evidence::open(store_path(ctx)?)
}

/// Opens the store for a command that only reads (works on a full disk).
pub fn open_store_for_reading(ctx: &Ctx) -> Result<Store, EvidenceError> {
    coffer_evidence::open_for_reading(store_path(ctx)?)
}

/// Parses a digest argument; a malformed one is a usage error.
pub fn parse_digest(arg: &str) -> Result<Digest, Box<Report>> {
    Digest::parse_typed(arg).map_err(|_| invalid_digest(arg, ""))
}

/// `usage.invalid_digest` for `arg`, saying what would have been taken
/// (`also`: what else than a full digest).
fn invalid_digest(arg: &str, also: &str) -> Box<Report> {
    let shown: String = arg.chars().take(100).collect();
    Box::new(Report::usage(
        codes::usage::INVALID_DIGEST,
        format!("{shown:?} is not a digest: expected 64 hex digits, with or without sha256:{also}"),
        Some(shown),
    ))
}

use coffer_base::digest::MIN_PREFIX_HEX;

/// A digest argument in full, or a unique prefix of at least 8 hex digits
/// (with or without `sha256:`) of a cataloged object. No match is
/// `io.not_found`; several are `usage.ambiguous_digest` listing them.
pub fn resolve_digest(store: &Store, arg: &str) -> Result<Digest, Box<Report>> {
    if let Ok(d) = Digest::parse_typed(arg) {
        return Ok(d);
    }
    let Some(hex) = coffer_base::digest::hex_prefix(arg) else {
        return Err(invalid_digest(
            arg,
            &format!(", or a unique prefix of {MIN_PREFIX_HEX} to 63 of them"),
        ));
    };
    let found = store
        .catalog()
        .digests_with_prefix(&hex, 11)
        .map_err(|e| Box::new(Report::error(&e)))?;
    match found.as_slice() {
        [d] => Ok(*d),
        [] => Err(Box::new(Report::from_issues(
            vec![Issue::about(
                codes::io::NOT_FOUND,
                Some(arg.chars().take(100).collect()),
                format!("no object in the store starts with sha256:{hex}"),
            )],
            serde_json::Value::Null,
            String::new(),
        ))),
        many => Err(Box::new(Report::usage(
            codes::usage::AMBIGUOUS_DIGEST,
            format!(
                "sha256:{hex} is the start of {} objects: {}",
                if many.len() > 10 {
                    "more than 10".to_string()
                } else {
                    many.len().to_string()
                },
                many.iter()
                    .take(10)
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Some(arg.chars().take(100).collect()),
        ))),
    }
}
