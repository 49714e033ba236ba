//! `init`, `catalog rebuild`, `mirror`, `fsck`, `gc`, `stats`.

use coffer_base::codes;
use std::time::Duration;

use coffer_store::BackendConfig;
use serde_json::json;

use super::{open_store, open_store_for_reading};
use crate::progress;
use crate::report::or_report;
use crate::report::{Issue, Report, Status};
use crate::Ctx;

pub fn init(ctx: &Ctx, backend: Option<&str>, endpoint: Option<&str>) -> Report {
    let config = match backend {
        None => BackendConfig::Local,
        Some(url) => or_report!(BackendConfig::parse(url, endpoint)),
    };
    match super::store_path(ctx).and_then(|p| coffer_evidence::init(p, &config)) {
        Ok((store, created)) => {
            let what = if created {
                "created store"
            } else {
                "store already exists"
            };
            Report::accepted(
                json!({
                    "store": ctx.store.display().to_string(),
                    "created": created,
                    "backend": store.backend().location(),
                }),
                format!(
                    "{what}: {} (objects in {})",
                    ctx.store.display(),
                    store.backend().location()
                ),
            )
        }
        Err(e) => Report::error(&e),
    }
}

pub fn rebuild(ctx: &Ctx) -> Report {
    let mut store = or_report!(open_store(ctx));
    match store.rebuild_catalog() {
        Ok(r) => {
            coffer_evidence::bundle::facts::index_pending(&mut store);
            let human = format!(
                "{} ref(s) in {}; applied {} new, {} row(s) added",
                r.refs,
                store.backend().location(),
                r.applied,
                r.rows
            );
            let result = serde_json::to_value(&r).expect("serializable");
            with_broken_refs(Report::accepted(result, human), &r.broken)
        }
        Err(e) => Report::error(&e),
    }
}

pub fn mirror(ctx: &Ctx, dest: &std::path::Path) -> Report {
    let opened = open_store(ctx).and_then(|s| Ok((s, coffer_evidence::open(dest)?)));
    let (mut src, mut dst) = or_report!(opened);
    let mirrored = progress::shown(ctx, &mut src, "mirror", |s| s.mirror_to(&mut dst));
    match mirrored {
        Ok(r) => {
            coffer_evidence::bundle::facts::index_pending(&mut dst);
            let human = format!(
                "{} -> {}: {} object(s) copied ({} bytes), {} present; {} ref(s) copied, {} present; catalog: {} ref(s) applied",
                r.from, r.to, r.objects_copied, r.bytes_copied, r.objects_present, r.refs_copied, r.refs_present, r.catalog.applied
            );
            let result = serde_json::to_value(&r).expect("serializable");
            let issues: Vec<Issue> = r
                .ref_conflicts
                .iter()
                .map(|key| {
                    Issue::about(
                        codes::conflict::REF_EXISTS,
                        Some(key.clone()),
                        format!("{key} names something else in the destination; not copied"),
                    )
                })
                .collect();
            let report = if issues.is_empty() {
                Report::accepted(result, human)
            } else {
                Report::from_issues(issues, result, human)
            };
            // A ref left behind, or one the destination cannot apply, means
            // the copy lacks evidence the source lists: never `accepted`.
            let broken: Vec<_> = r
                .refs_skipped
                .iter()
                .chain(&r.catalog.broken)
                .cloned()
                .collect();
            with_broken_refs(report, &broken)
        }
        Err(e) => Report::error(&e),
    }
}

pub fn fsck(ctx: &Ctx, read_data: bool) -> Report {
    let mut store = or_report!(open_store_for_reading(ctx));
    // The bar's total costs a pass over the catalog: only when a bar shows.
    let total = (read_data && progress::watched(ctx))
        .then(|| store.stats().ok().map(|s| s.unique_bytes))
        .flatten();
    let pb = progress::bytes(ctx, total, "fsck");
    // The total counts cataloged evidence; records and orphans are read
    // too, so the bar grows rather than overshoot.
    let report = store.fsck(read_data, &|n| {
        pb.inc(n);
        if pb.length().is_some_and(|l| pb.position() > l) {
            pb.set_length(pb.position());
        }
    });
    pb.finish_and_clear();
    match report {
        Ok(r) => {
            let issues: Vec<Issue> = r
                .findings
                .iter()
                .map(|f| Issue::about(f.code, Some(f.path.clone()), f.message.clone()))
                .collect();
            let human = format!(
                "{} cataloged, {} on disk, {} verified ({} bytes), {} finding(s)",
                r.cataloged,
                r.on_disk,
                r.verified,
                r.verified_bytes,
                r.findings.len()
            );
            Report::from_issues(
                issues,
                serde_json::to_value(&r).expect("serializable"),
                human,
            )
        }
        Err(e) => Report::error(&e),
    }
}

/// Parses a grace period: `0`, or a humantime duration (`30s`, `15m`, `24h`, `7d`).
fn parse_grace(s: &str) -> Option<Duration> {
    if s == "0" {
        return Some(Duration::ZERO);
    }
    humantime::parse_duration(s).ok()
}

pub fn gc(ctx: &Ctx, dry_run: bool, grace: &str) -> Report {
    let Some(grace) = parse_grace(grace) else {
        return Report::usage(
            codes::usage::INVALID_DURATION,
            format!("--grace {grace:?} is not a duration (e.g. 30s, 15m, 24h, 7d)"),
            None,
        );
    };
    let mut store = or_report!(super::store_path(ctx).and_then(coffer_evidence::open_for_gc));
    let collected = progress::shown_in(ctx, &mut store, "gc", progress::Unit::Objects, |s| {
        s.gc(grace, dry_run)
    });
    match collected {
        Ok(r) => {
            let verb = if dry_run { "would remove" } else { "removed" };
            let human = format!(
                "{verb} {} unreachable object(s), {} orphan(s), {} temp(s): {} bytes",
                r.unreachable.len(),
                r.orphans.len(),
                r.temps.len(),
                r.freed_bytes
            );
            let result = serde_json::to_value(&r).expect("serializable");
            with_broken_refs(Report::accepted(result, human), &r.broken_refs)
        }
        Err(e) => Report::error(&e),
    }
}

/// `coffer repack`: small loose objects into packs.
pub fn repack(ctx: &Ctx) -> Report {
    let mut store = or_report!(super::open_store(ctx));
    match store.repack() {
        Ok(r) => {
            let human = format!(
                "packed {} object(s) ({} bytes) into {} pack(s){}",
                r.objects_packed,
                r.bytes_packed,
                r.packs_written,
                if r.unreadable.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; {} object(s) that do not verify left loose (see fsck)",
                        r.unreadable.len()
                    )
                }
            );
            Report::accepted(serde_json::to_value(&r).expect("serializable"), human)
        }
        Err(e) => Report::error(&e),
    }
}

/// A command that went on past refs it could not read is `incomplete`,
/// with one issue per such ref.
fn with_broken_refs(mut report: Report, broken: &[coffer_store::refs::BrokenRef]) -> Report {
    if !broken.is_empty() {
        report.status = Status::Incomplete;
        report.issues.extend(
            broken
                .iter()
                .map(|b| Issue::about(b.code, Some(b.key.clone()), b.message.clone())),
        );
    }
    report
}

pub fn stats(ctx: &Ctx) -> Report {
    let (s, fixtures) = or_report!(open_store_for_reading(ctx).and_then(|s| Ok((
        s.stats()?,
        coffer_evidence::packet::freeze::fixture_stats(&s)?
    ))));
    let (dedup, compression) = (s.dedup_ratio(), s.compression_ratio());
    let human = format!(
        "objects        {}\nreferences     {}\nlogical bytes  {}\nunique bytes   {}\nstored bytes   {}\ndedup ratio    {}\ncompression    {}\n",
        s.objects,
        s.references,
        s.logical_bytes,
        s.unique_bytes,
        s.stored_bytes,
        dedup.map_or("n/a".into(), |r| format!("{r}x")),
        compression.map_or("n/a".into(), |r| format!("{r}x")),
    );
    let human = format!(
        "{human}fixture members: {} references, {} objects, logical {} bytes, unique {} bytes, stored {} bytes\n",
        fixtures.member_references, fixtures.objects, fixtures.logical_bytes, fixtures.unique_bytes, fixtures.stored_bytes
    );
    let mut v = serde_json::to_value(&s).expect("serializable");
    v["dedupRatio"] = json!(dedup);
    v["compressionRatio"] = json!(compression);
    v["fixtures"] = json!(fixtures);
    Report::accepted(v, human)
}
