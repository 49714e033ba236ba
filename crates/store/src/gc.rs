//! Garbage collection: remove what nothing roots, once it is old enough.
//!
//! Runs under the exclusive store lock (no put can race it: a put that finds
//! an object by dedup would otherwise catalog a file gc is about to unlink).
//! Catalog rows are deleted before their files, so a crash in between leaves
//! an orphan file (legal, reclaimed next time), never a row without a file.
//! Quarantined objects are never deleted.

use std::collections::HashSet;
use std::time::Duration;

use crate::backend::{object_key, object_of_key, OBJECTS_PREFIX};
use crate::catalog::{Catalog, ObjectRow};
use crate::entries::TMP_DIR;
use crate::error::{Result, StoreError};
use crate::layout::LockMode;
use crate::objects::{now_ms, ObjectDirs};
use crate::store::Store;
use coffer_base::digest::Digest;
use coffer_base::dir::{Dir, EntryKind};

/// What gc removed (or, with `dry_run`, would remove).
#[derive(Debug, Clone, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GcReport {
    /// Whether anything was actually removed.
    pub dry_run: bool,
    /// Cataloged objects that no root holds.
    pub unreachable: Vec<Digest>,
    /// Object files with no catalog row.
    pub orphans: Vec<Digest>,
    /// Stale temp files (store-relative paths).
    pub temps: Vec<String>,
    /// Packs rewritten without their dead frames (less than half live).
    pub packs_rewritten: u64,
    /// Pack files without an index (a cut-off publication) removed.
    pub stray_packs: u64,
    /// Bytes of stored frames and temps freed (a packed frame's bytes
    /// are given back when gc rewrites its pack).
    pub freed_bytes: u64,
    /// Refs that could not be applied; while there are any, orphans are
    /// kept.
    pub broken_refs: Vec<crate::refs::BrokenRef>,
}

fn list(d: &Dir) -> Result<Vec<(String, EntryKind)>> {
    d.entries().map_err(|e| StoreError::io(d.path(), "list", e))
}

fn stat(d: &Dir, name: &str) -> Result<Option<coffer_base::dir::Entry>> {
    d.entry(name)
        .map_err(|e| StoreError::io(d.join(name), "stat", e))
}

fn remove(d: &Dir, name: &str) -> Result<()> {
    d.remove_file(name)
        .map_err(|e| StoreError::io(d.join(name), "remove", e))
}

/// Stored frames older than `cutoff_ms` that the catalog does not name.
/// The listing streams, so memory holds only what is found; each listed
/// entry is one step of `progress`, whose total grows by `expected` (the
/// catalog's object count) first and by one for each entry past it.
fn old_orphans(
    dirs: &ObjectDirs,
    cutoff_ms: i64,
    expected: u64,
    is_cataloged: &dyn Fn(&Digest) -> Result<bool>,
    progress: Steps<'_>,
) -> Result<Vec<(Digest, u64)>> {
    let mut out = Vec::new();
    progress.grow(expected);
    let mut listed = 0u64;
    dirs.backend.list_each(OBJECTS_PREFIX, &mut |entry| {
        listed += 1;
        if listed > expected {
            progress.grow(1);
        }
        progress.step(1);
        let Some(d) = object_of_key(&entry.key).filter(|_| entry.regular) else {
            return Ok(());
        };
        if entry.meta.modified_ms < cutoff_ms && !is_cataloged(&d)? {
            out.push((d, entry.meta.size));
        }
        Ok(())
    })?;
    Ok(out)
}

/// Objects deleted per catalog transaction.
const GC_BATCH: usize = 1000;

/// gc's progress, counted in objects: deletions, then entries examined
/// for orphans (the total grows as each list is known).
#[derive(Clone, Copy)]
struct Steps<'p> {
    progress: Option<&'p dyn crate::store::Progress>,
    total: &'p std::cell::Cell<u64>,
}

impl Steps<'_> {
    fn grow(&self, n: u64) {
        self.total.set(self.total.get() + n);
        if let Some(p) = self.progress {
            p.total(self.total.get());
        }
    }

    fn step(&self, n: usize) {
        if let Some(p) = self.progress {
            p.advance(n as u64);
        }
    }
}

/// Deletes the unreachable objects (catalog rows first, in batches, then
/// files), or with `dry_run` only lists them; returns what went.
fn remove_unreachable(
    dirs: &ObjectDirs,
    catalog: &mut Catalog,
    unreachable: &[ObjectRow],
    dry_run: bool,
    progress: Steps<'_>,
) -> Result<Vec<Digest>> {
    let digests: Vec<Digest> = unreachable.iter().map(|r| r.digest).collect();
    progress.grow(digests.len() as u64);
    if dry_run {
        progress.step(digests.len());
        return Ok(digests);
    }
    // In batches, rows before files: each batch's deletions free the space
    // the next batch's catalog writes need (a full disk starts with only the
    // reserve).
    let mut removed = Vec::with_capacity(digests.len());
    for batch in digests.chunks(GC_BATCH) {
        // A safe point: every batch before this one is gone from the
        // catalog and the disk alike.
        coffer_base::interrupt::check()?;
        let gone = catalog.delete_unreachable(batch)?;
        for d in &gone {
            dirs.backend.delete(&object_key(d))?;
        }
        progress.step(batch.len());
        removed.extend(gone);
    }
    Ok(removed)
}

/// Removes (or with `dry_run` lists) temps older than `cutoff`.
fn sweep_temps(dirs: &ObjectDirs, cutoff: i64, dry_run: bool, report: &mut GcReport) -> Result<()> {
    for (name, _) in list(&dirs.tmp)? {
        if let Some(st) = stat(&dirs.tmp, &name)? {
            if st.modified_ms < cutoff {
                if !dry_run {
                    remove(&dirs.tmp, &name)?;
                }
                report.freed_bytes += st.size;
                report.temps.push(format!("{TMP_DIR}/{name}"));
            }
        }
    }
    Ok(())
}

/// The objects the refs not yet applied keep alive (a dry run applies
/// nothing, but must spare what the real run would adopt first), and the
/// refs that could not be read.
fn kept_by_pending_refs(
    dirs: &ObjectDirs,
    catalog: &Catalog,
) -> Result<(HashSet<Digest>, Vec<crate::refs::BrokenRef>)> {
    let found = crate::refs::pending_refs(dirs, catalog)?;
    let mut broken = found.broken;
    let mut spared = HashSet::new();
    for p in found.pending {
        match p.objects(dirs, catalog.schema().recorded) {
            Ok(objects) => spared.extend(objects),
            Err(e) => broken.push(crate::refs::BrokenRef::new(&p.key, &e)),
        }
    }
    Ok((spared, broken))
}

/// Deletes the orphans found (unless a dry run) and counts them.
fn remove_orphans(
    dirs: &ObjectDirs,
    orphans: Vec<(Digest, u64)>,
    dry_run: bool,
    report: &mut GcReport,
) -> Result<()> {
    for (d, size) in orphans {
        if !dry_run {
            dirs.backend.delete(&object_key(&d))?;
        }
        report.freed_bytes += size;
        report.orphans.push(d);
    }
    Ok(())
}

impl Store {
    /// Removes unreachable objects, orphans and temps older than `grace`.
    pub fn gc(&mut self, grace: Duration, dry_run: bool) -> Result<GcReport> {
        // Saturating: a grace longer than the clock's range keeps everything
        // (a wrapping cast once turned `--grace 300000000y` into 0).
        let grace_ms = i64::try_from(grace.as_millis()).unwrap_or(i64::MAX);
        let cutoff = now_ms().saturating_sub(grace_ms);
        // A ref whose transaction never committed (a crash in between) names
        // a record and objects the catalog lacks: adopt it before deciding
        // what is unreachable, or its objects would be collected under it.
        let mut broken = Vec::new();
        if !dry_run {
            // Give the reserve back first (Store::open_for_gc already did,
            // when the disk was too full to open the catalog).
            crate::layout::release_reserve(self.path())?;
        }
        if !self.shared_backend() && !dry_run {
            broken = self.rebuild_catalog()?.broken;
        }
        let reporter = self.progress_handle();
        let counted = std::cell::Cell::new(0);
        let steps = Steps {
            progress: reporter.as_deref(),
            total: &counted,
        };
        let (dirs, catalog, lock) = self.parts();
        lock.acquire(LockMode::Exclusive)?;
        let mut report = GcReport {
            dry_run,
            ..GcReport::default()
        };

        // A bucket other stores write to holds objects this catalog has not
        // seen (yet): deleting from it on a local view could lose their
        // evidence, so gc there only sweeps local temps.
        let shared = dirs.backend.shared();
        let unreachable = if shared {
            Vec::new()
        } else {
            catalog.unreachable_before(cutoff)?
        };
        coffer_base::crash::point("gc_marked");
        let removed = remove_unreachable(dirs, catalog, &unreachable, dry_run, steps)?;
        let removed_set: HashSet<&Digest> = removed.iter().collect();
        report.freed_bytes += unreachable
            .iter()
            .filter(|r| removed_set.contains(&r.digest))
            .map(|r| r.stored_size)
            .sum::<u64>();
        report.unreachable = removed;

        // A dry run applies nothing, so it must spare what unapplied refs
        // keep alive, as the real run (which applies them first) would.
        let mut spared = HashSet::new();
        if dry_run && !shared {
            (spared, broken) = kept_by_pending_refs(dirs, catalog)?;
        }
        let cataloged =
            |d: &Digest| -> Result<bool> { Ok(spared.contains(d) || catalog.object(d)?.is_some()) };
        // A ref that cannot be read might have kept any uncataloged object
        // alive: while one exists, orphans are spared (and the ref reported).
        let orphans = if shared || !broken.is_empty() {
            Vec::new()
        } else {
            let expected = catalog.object_count()?;
            old_orphans(dirs, cutoff, expected, &cataloged, steps)?
        };
        remove_orphans(dirs, orphans, dry_run, &mut report)?;
        if !shared && broken.is_empty() {
            let rewritten = crate::repack::rewrite_packs(dirs, &cataloged, cutoff, dry_run)?;
            report.packs_rewritten = rewritten.packs;
            report.stray_packs = rewritten.stray;
            report.freed_bytes += rewritten.stray_bytes;
        }
        sweep_temps(dirs, cutoff, dry_run, &mut report)?;
        if !dry_run {
            dirs.root
                .sync_filesystem()
                .map_err(|e| StoreError::io(dirs.root.path(), "syncfs", e))?;
        }
        report.broken_refs = broken;
        if !dry_run && !shared {
            crate::layout::set_aside_reserve(&dirs.root, &dirs.tmp);
        }
        Ok(report)
    }
}
