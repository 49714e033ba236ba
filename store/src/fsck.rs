//! `fsck`: prove the store is what the catalog says.
//!
//! Runs under the exclusive store lock, so no put is half-way through and
//! every temp it sees is stale. Checks SQLite's own integrity, that every
//! row has its object and every root its row, that the object namespace
//! holds only well-named regular files, and (with `read_data`) re-hashes
//! every object, quarantining any that fail.

use crate::backend::{object_of_key, OBJECTS_PREFIX, QUARANTINE_PREFIX, REFS_PREFIX};
use crate::catalog::{Catalog, ObjectRow};
use crate::digest::Digest;
use crate::error::{Result, StoreError};
use crate::layout::LockMode;
use crate::names::{CATALOG_FILE, TMP_DIR};
use crate::objects::ObjectDirs;
use crate::store::Store;

/// One problem fsck found.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Finding {
    /// Stable `class.name` code.
    pub code: &'static str,
    /// Store-relative path or digest the finding is about.
    pub path: String,
    /// Human explanation.
    pub message: String,
}

/// What fsck did and found.
#[derive(Debug, Clone, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FsckReport {
    /// Cataloged objects.
    pub cataloged: u64,
    /// Object files on disk.
    pub on_disk: u64,
    /// Objects re-hashed (with `read_data`).
    pub verified: u64,
    /// Raw bytes re-hashed.
    pub verified_bytes: u64,
    /// Everything wrong; empty means clean.
    pub findings: Vec<Finding>,
}

/// Records one finding: code, path or key, message.
type Find<'a> = dyn FnMut(&'static str, String, String) + 'a;

/// A [`Find`] that appends to `out`.
fn collect(out: &mut Vec<Finding>) -> impl FnMut(&'static str, String, String) + '_ {
    |code, path, message| {
        out.push(Finding {
            code,
            path,
            message,
        })
    }
}

/// [`catalog_findings`], collected.
fn catalog_check(catalog: &Catalog) -> Result<Vec<Finding>> {
    let mut found = Vec::new();
    catalog_findings(catalog, &mut collect(&mut found))?;
    Ok(found)
}

/// The catalog's own integrity, and roots naming nothing.
fn catalog_findings(catalog: &Catalog, find: &mut Find<'_>) -> Result<()> {
    for problem in catalog.integrity_problems()? {
        find("integrity.catalog", "catalog.sqlite".into(), problem);
    }
    for (root, digest) in catalog.dangling_roots()? {
        find(
            "integrity.dangling_reference",
            digest.clone(),
            format!(
                "root {}:{} names {digest}, which is not cataloged",
                root.kind, root.name
            ),
        );
    }

    Ok(())
}

/// The row of `d` in `rows`, which are sorted by digest.
fn row_of<'r>(rows: &'r [ObjectRow], d: &Digest) -> Option<&'r ObjectRow> {
    rows.binary_search_by(|r| r.digest.cmp(d))
        .ok()
        .map(|i| &rows[i])
}

/// Objects on disk against the catalog: orphans, strays, missing files,
/// size mismatches. `rows` are sorted by digest; lookups are binary
/// searches in them and in the listing, not hash tables beside them (at a
/// million objects those tables were half of fsck's memory). Returns the
/// objects on disk with their stored sizes, sorted by digest.
fn object_findings(
    dirs: &ObjectDirs,
    rows: &[ObjectRow],
    find: &mut Find<'_>,
) -> Result<Vec<(Digest, u64)>> {
    let mut on_disk: Vec<(Digest, u64)> = Vec::new();
    dirs.backend.list_each(OBJECTS_PREFIX, &mut |entry| {
        match object_of_key(&entry.key).filter(|_| entry.regular) {
            Some(d) => {
                if row_of(rows, &d).is_none() {
                    find("integrity.orphan_object", entry.key, format!("{d} is stored but not cataloged (a put was interrupted, or another store wrote it: gc reclaims it, catalog rebuild adopts it if a ref names it)"));
                }
                on_disk.push((d, entry.meta.size));
            }
            None => find(
                "integrity.unexpected_entry",
                entry.key,
                format!(
                    "unexpected {} among objects",
                    if entry.regular {
                        "name"
                    } else {
                        "non-regular entry"
                    }
                ),
            ),
        }
        Ok(())
    })?;
    // Keys sort as their digests do, so this is a check more than a sort.
    on_disk.sort_unstable_by_key(|(d, _)| *d);
    let stored_of = |d: &Digest| {
        on_disk
            .binary_search_by(|(o, _)| o.cmp(d))
            .ok()
            .map(|i| on_disk[i].1)
    };
    for row in rows {
        if stored_of(&row.digest).is_none() {
            find(
                "integrity.missing_object",
                row.digest.to_string(),
                format!("{} is cataloged but its file is missing", row.digest),
            );
        }
    }
    for row in rows {
        if let Some(s) = stored_of(&row.digest) {
            if s != row.stored_size {
                find(
                    "integrity.size_mismatch",
                    row.digest.to_string(),
                    format!(
                        "stored frame is {s} bytes, catalog says {}",
                        row.stored_size
                    ),
                );
            }
        }
    }
    Ok(on_disk)
}

/// What interrupted or failed work left: temps, unapplied refs,
/// quarantined objects.
fn leftover_findings(dirs: &ObjectDirs, catalog: &Catalog, find: &mut Find<'_>) -> Result<()> {
    let list = |d: &crate::dir::Dir| d.entries().map_err(|e| StoreError::io(d.path(), "list", e));
    for (name, _) in list(&dirs.tmp)? {
        find(
            "integrity.stale_temp",
            format!("{TMP_DIR}/{name}"),
            "temp file left by an interrupted write (gc removes it after the grace period)".into(),
        );
    }
    // On a store of its own, a ref the catalog lacks is a command
    // interrupted between its ref and its commit (gc or catalog rebuild
    // applies it); on a shared bucket it is another store's work.
    if !dirs.backend.shared() {
        match crate::refs::pending_refs(dirs, catalog) {
            Ok(found) => {
                for p in found.pending {
                    find(
                        "integrity.unapplied_ref",
                        p.key,
                        "ref of an interrupted command, not yet in the catalog (gc or catalog rebuild applies it)".into(),
                    );
                }
                for b in found.broken {
                    find(b.code, b.key, b.message);
                }
            }
            Err(e) => find(e.code(), REFS_PREFIX.into(), e.to_string()),
        }
    }
    for entry in dirs.backend.list(QUARANTINE_PREFIX)? {
        find(
            "integrity.quarantined_object",
            entry.key,
            "object that failed verification, kept for inspection".into(),
        );
    }

    Ok(())
}

impl Store {
    /// Checks the store; with `read_data`, re-hashes every object.
    /// `progress` receives raw bytes verified.
    pub fn fsck(&mut self, read_data: bool, progress: &dyn Fn(u64)) -> Result<FsckReport> {
        let catalog_path = self.path().join(CATALOG_FILE);
        let (dirs, catalog, lock) = self.parts();
        lock.acquire(LockMode::Exclusive)?;
        // SQLite's own checks (a quarter of fsck on a large store) run on
        // a second connection beside the listing of the objects; under
        // the exclusive lock nothing changes between the two. A catalog
        // that cannot be opened twice is checked here, after.
        let schema = catalog.schema();
        let (mut findings, rows, on_disk) = std::thread::scope(|sc| {
            let beside = sc.spawn(|| {
                let second = Catalog::open_for_reading(&catalog_path, schema).ok()?;
                Some(catalog_check(&second))
            });
            let mut found = Vec::new();
            let listed = catalog.objects().and_then(|mut rows| {
                rows.sort_unstable_by_key(|r| r.digest);
                object_findings(dirs, &rows, &mut collect(&mut found)).map(|d| (rows, d))
            });
            let checked = match beside.join().expect("the catalog check does not panic") {
                Some(checked) => checked,
                None => catalog_check(catalog),
            };
            let mut findings = checked?;
            findings.append(&mut found);
            let (rows, on_disk) = listed?;
            Ok::<_, StoreError>((findings, rows, on_disk))
        })?;
        leftover_findings(dirs, catalog, &mut collect(&mut findings))?;
        let mut report = FsckReport {
            cataloged: rows.len() as u64,
            on_disk: on_disk.len() as u64,
            findings,
            ..FsckReport::default()
        };
        if read_data {
            let listed: Vec<crate::reverify::Listed> = on_disk
                .iter()
                .map(|(d, stored)| (*d, *stored, row_of(&rows, d).map(|r| r.size)))
                .collect();
            // The good case on the fast path, on two cores; anything else
            // streams, in order, which names the fault and quarantines.
            let quick = crate::reverify::verify_all(self.objects_dirs(), &listed, progress);
            for ((d, _, size), fast) in listed.iter().zip(quick) {
                let checked = match (fast, size) {
                    (true, Some(n)) => Ok(*n),
                    _ => self.verify_object(d).inspect(|n| progress(*n)),
                };
                match checked {
                    Ok(n) => {
                        report.verified += 1;
                        report.verified_bytes += n;
                    }
                    Err(e) => report.findings.push(Finding {
                        code: e.code(),
                        path: d.to_string(),
                        message: format!("{e}; moved to {QUARANTINE_PREFIX}"),
                    }),
                }
            }
        }
        Ok(report)
    }
}
