//! `fsck`: prove the store is what the catalog says.
//!
//! Runs under the exclusive store lock, so no put is half-way through and
//! every temp it sees is stale. Checks SQLite's own integrity, that every
//! row has its object and every root its row, that the object namespace
//! holds only well-named regular files, and (with `read_data`) re-hashes
//! every object, quarantining any that fail.

use crate::backend::{object_of_key, OBJECTS_PREFIX, QUARANTINE_PREFIX, REFS_PREFIX};
use crate::catalog::{Catalog, ObjectRow};
use crate::entries::{CATALOG_FILE, TMP_DIR};
use crate::error::{Result, StoreError};
use crate::layout::LockMode;
use crate::objects::ObjectDirs;
use crate::reverify::Listed;
use crate::store::Store;
use coffer_base::codes;
use coffer_base::digest::Digest;

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
    /// Packs.
    pub packs: u64,
    /// Frames in packs that no catalog row names: space gc's pack rewrite
    /// gives back (not a finding).
    pub dead_packed: u64,
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
    let found = catalog.integrity_problems()?;
    for problem in found.problems {
        find(codes::integrity::CATALOG, "catalog.sqlite".into(), problem);
    }
    for (root, digest) in found.dangling {
        find(
            codes::integrity::DANGLING_REFERENCE,
            digest.clone(),
            format!(
                "root {}:{} names {digest}, which is not cataloged",
                root.kind, root.name
            ),
        );
    }

    Ok(())
}

/// What the merge of stored objects against catalog rows counted.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    cataloged: u64,
    on_disk: u64,
    /// Packed entries no row names (dead space until gc rewrites the pack).
    dead_packed: u64,
}

/// The merge's state: the next catalog row, and what was counted.
struct Merge<'n> {
    next: &'n mut dyn FnMut() -> Result<Option<ObjectRow>>,
    row: Option<ObjectRow>,
    counts: Counts,
    last: Option<Digest>,
}

impl Merge<'_> {
    /// Reports every row before `d` as missing.
    fn missing_before(&mut self, d: Option<&Digest>, find: &mut Find<'_>) -> Result<()> {
        while let Some(r) = self
            .row
            .as_ref()
            .filter(|r| d.is_none_or(|d| r.digest < *d))
        {
            find(
                codes::integrity::MISSING_OBJECT,
                r.digest.to_string(),
                format!("{} is cataloged but its file is missing", r.digest),
            );
            self.counts.cataloged += 1;
            self.row = (self.next)()?;
        }
        Ok(())
    }

    /// One stored frame of `d` (`stored` bytes; `key` names a loose file,
    /// `None` a packed frame): checks it against its row. A digest stored
    /// twice (loose and packed) meets its row once.
    fn stored(
        &mut self,
        d: Digest,
        stored: u64,
        key: Option<String>,
        find: &mut Find<'_>,
        each: &mut dyn FnMut(Listed) -> Result<()>,
    ) -> Result<()> {
        if self.last == Some(d) {
            return Ok(());
        }
        self.last = Some(d);
        self.counts.on_disk += 1;
        self.missing_before(Some(&d), find)?;
        let size = match self.row.as_ref().filter(|r| r.digest == d) {
            Some(r) => {
                check_stored_size(find, d, stored, r.stored_size);
                let size = r.size;
                self.counts.cataloged += 1;
                self.row = (self.next)()?;
                Some(size)
            }
            None => {
                match key {
                    Some(key) => find(codes::integrity::ORPHAN_OBJECT, key, format!("{d} is stored but not cataloged (a put was interrupted, or another store wrote it: gc reclaims it, catalog rebuild adopts it if a ref names it)")),
                    None => self.counts.dead_packed += 1,
                }
                None
            }
        };
        each((d, stored, size))
    }
}

/// Objects on disk against the catalog: orphans, strays, missing files,
/// size mismatches. All sides come in digest order (the catalog's primary
/// key, the backend's listing, sorted by key, in which object keys sort as
/// their digests do, and the packs' indexes, merged), so one merge finds
/// everything and holds none of them: memory stays flat however many
/// objects there are. Hands every object stored, with its stored size and
/// its cataloged size, to `each`, in digest order.
fn object_findings(
    dirs: &ObjectDirs,
    catalog: &Catalog,
    packs: &[std::sync::Arc<crate::pack::PackIndex>],
    find: &mut Find<'_>,
    each: &mut dyn FnMut(Listed) -> Result<()>,
) -> Result<Counts> {
    let mut packed = crate::pack::set::Merged::new(packs);
    let mut counts = Counts::default();
    catalog.with_object_rows(|next| {
        let row = next()?;
        let mut m = Merge {
            next,
            row,
            counts: Counts::default(),
            last: None,
        };
        let mut last_loose: Option<Digest> = None;
        dirs.backend.list_each(OBJECTS_PREFIX, &mut |entry| {
            let Some(d) = object_of_key(&entry.key).filter(|_| entry.regular) else {
                let what = if entry.regular {
                    "name"
                } else {
                    "non-regular entry"
                };
                let message = format!("unexpected {what} among objects");
                find(codes::integrity::UNEXPECTED_ENTRY, entry.key, message);
                return Ok(());
            };
            // The merge is only as right as the listing's order, which
            // every backend promises; a listing out of order is refused
            // rather than turned into false findings.
            if last_loose.is_some_and(|l| l >= d) {
                return Err(StoreError::io(
                    dirs.backend.location(),
                    "list objects",
                    std::io::Error::other(format!("the listing is out of order at {}", entry.key)),
                ));
            }
            last_loose = Some(d);
            while let Some((_, e)) = packed.peek().filter(|(_, e)| e.digest < d) {
                packed.next();
                m.stored(e.digest, e.stored, None, find, each)?;
            }
            m.stored(d, entry.meta.size, Some(entry.key), find, each)
        })?;
        for (_, e) in packed.by_ref() {
            m.stored(e.digest, e.stored, None, find, each)?;
        }
        m.missing_before(None, find)?;
        counts = m.counts;
        Ok(())
    })?;
    Ok(counts)
}

/// The packs themselves: indexes that cannot be used, packs without an
/// index (a publication cut off between the two), foreign names under
/// `packs/`; with `read_data`, every pack re-hashed against its name.
fn pack_findings(
    dirs: &ObjectDirs,
    packs: &[std::sync::Arc<crate::pack::PackIndex>],
    unusable: &[crate::pack::set::Unusable],
    read_data: bool,
    find: &mut Find<'_>,
) -> Result<()> {
    use crate::pack::{parse_key, PackFile, PACKS_PREFIX};
    for u in unusable {
        find(codes::integrity::CORRUPT_PACK, u.key.clone(), u.why.clone());
    }
    let mut indexed = std::collections::HashSet::new();
    dirs.backend.list_each(PACKS_PREFIX, &mut |l| {
        match parse_key(&l.key).filter(|_| l.regular) {
            Some((d, PackFile::Index)) => {
                indexed.insert(d);
            }
            Some((_, PackFile::Pack)) => {}
            None => find(
                codes::integrity::UNEXPECTED_ENTRY,
                l.key,
                "unexpected entry among packs".into(),
            ),
        }
        Ok(())
    })?;
    dirs.backend.list_each(PACKS_PREFIX, &mut |l| {
        if let Some((d, PackFile::Pack)) = parse_key(&l.key).filter(|_| l.regular) {
            if !indexed.contains(&d) {
                find(codes::integrity::ORPHAN_OBJECT, l.key, "pack without its index (a publication was cut off: gc removes it, nothing in it is cataloged)".into());
            }
        }
        Ok(())
    })?;
    if read_data {
        for p in packs {
            let key = crate::pack::pack_key(&p.pack());
            let Some((body, _)) = dirs.backend.get(&key)? else {
                find(
                    codes::integrity::CORRUPT_PACK,
                    key,
                    "vanished while fsck ran".into(),
                );
                continue;
            };
            let mut r = coffer_base::digest::HashingReader::new(body);
            std::io::copy(&mut r, &mut std::io::sink())
                .map_err(|e| StoreError::io(dirs.backend.location(), "read pack", e))?;
            let (got, len) = r.finish();
            if (got, len) != (p.pack(), p.pack_size()) {
                find(
                    codes::integrity::CORRUPT_PACK,
                    key,
                    format!("{len} bytes hashing to {got}, not the pack its index describes"),
                );
            }
        }
    }
    Ok(())
}

/// A stored frame whose size is not the one its catalog row records.
fn check_stored_size(find: &mut Find<'_>, d: Digest, on_disk: u64, cataloged: u64) {
    if on_disk != cataloged {
        find(
            codes::integrity::SIZE_MISMATCH,
            d.to_string(),
            format!("stored frame is {on_disk} bytes, catalog says {cataloged}"),
        );
    }
}

/// What interrupted or failed work left: temps, unapplied refs,
/// quarantined objects.
fn leftover_findings(dirs: &ObjectDirs, catalog: &Catalog, find: &mut Find<'_>) -> Result<()> {
    let list =
        |d: &coffer_base::dir::Dir| d.entries().map_err(|e| StoreError::io(d.path(), "list", e));
    for (name, _) in list(&dirs.tmp)? {
        find(
            codes::integrity::STALE_TEMP,
            format!("{TMP_DIR}/{name}"),
            format!(
                "{TMP_DIR}/{name}: temp file left by a write that was cut off (a crash or kill -9); \
                 `coffer gc` removes it once it is older than the grace period, \
                 `coffer gc --grace 0s` now (when no other coffer command is writing)"
            ),
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
                        codes::integrity::UNAPPLIED_REF,
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
            codes::integrity::QUARANTINED_OBJECT,
            entry.key,
            "object that failed verification, kept for inspection".into(),
        );
    }

    Ok(())
}

/// Objects re-hashed together by `fsck --read-data`: enough for the two
/// cores to share, few enough that what fsck holds stays small.
const VERIFY_BATCH: usize = 16 * 1024;

impl Store {
    /// Checks the store; with `read_data`, re-hashes every object.
    /// `progress` receives raw bytes verified.
    pub fn fsck(&mut self, read_data: bool, progress: &dyn Fn(u64)) -> Result<FsckReport> {
        let catalog_path = self.path().join(CATALOG_FILE);
        self.parts().2.acquire(LockMode::Exclusive)?;
        let store: &Store = self;
        let (dirs, catalog) = (store.objects_dirs(), store.catalog());
        let mut report = FsckReport::default();
        // Taken first: `--read-data` quarantines while the listing runs,
        // and an object it moves is reported once, as what it failed.
        let mut leftovers = Vec::new();
        leftover_findings(dirs, catalog, &mut collect(&mut leftovers))?;
        // Objects that fail re-hashing, reported last.
        let mut unreadable = Vec::new();
        // SQLite's own checks (a quarter of fsck on a large store) run on
        // a second connection beside the listing of the objects; under
        // the exclusive lock nothing changes between the two. A catalog
        // that cannot be opened twice is checked here, after.
        let schema = catalog.schema();
        let mut findings = std::thread::scope(|sc| {
            let beside = sc.spawn(|| {
                let second = Catalog::open_for_reading(&catalog_path, schema).ok()?;
                Some(catalog_check(&second))
            });
            let mut found = Vec::new();
            let mut batch: Vec<Listed> = Vec::new();
            let mut verify = |batch: &mut Vec<Listed>| {
                store.verify_batch(batch, &mut report, &mut unreadable, progress);
                batch.clear();
            };
            // Read-data verifies the objects listed so far, a batch at a
            // time, while the listing goes on.
            let (packs, unusable) = dirs.packs.all(&*dirs.backend)?;
            pack_findings(dirs, &packs, &unusable, read_data, &mut collect(&mut found))?;
            let listed = object_findings(
                dirs,
                catalog,
                &packs,
                &mut collect(&mut found),
                &mut |object| {
                    if read_data {
                        batch.push(object);
                        if batch.len() == VERIFY_BATCH {
                            verify(&mut batch);
                        }
                    }
                    Ok(())
                },
            );
            if listed.is_ok() && !batch.is_empty() {
                verify(&mut batch);
            }
            let checked = match beside.join().expect("the catalog check does not panic") {
                Some(checked) => checked,
                None => catalog_check(catalog),
            };
            let mut findings = checked?;
            findings.append(&mut found);
            let counts = listed?;
            report.packs = packs.len() as u64;
            (report.cataloged, report.on_disk, report.dead_packed) =
                (counts.cataloged, counts.on_disk, counts.dead_packed);
            Ok::<_, StoreError>(findings)
        })?;
        findings.append(&mut leftovers);
        findings.append(&mut unreadable);
        report.findings = findings;
        Ok(report)
    }

    /// Re-hashes `batch`: the good case on the fast path, on two cores;
    /// anything else streams, in order, which names the fault and
    /// quarantines.
    fn verify_batch(
        &self,
        batch: &[Listed],
        report: &mut FsckReport,
        unreadable: &mut Vec<Finding>,
        progress: &dyn Fn(u64),
    ) {
        let quick = crate::reverify::verify_all(self.objects_dirs(), batch, progress);
        for ((d, _, size), fast) in batch.iter().zip(quick) {
            let checked = match (fast, size) {
                (true, Some(n)) => Ok(*n),
                _ => self.verify_object(d).inspect(|n| progress(*n)),
            };
            match checked {
                Ok(n) => {
                    report.verified += 1;
                    report.verified_bytes += n;
                }
                Err(e) => {
                    let loose = self
                        .objects_dirs()
                        .packed(d, false)
                        .ok()
                        .flatten()
                        .is_none();
                    let kept = if loose {
                        format!("moved to {QUARANTINE_PREFIX}")
                    } else {
                        "its frame stays in its pack; putting the bytes again stores a good copy, which reads prefer".into()
                    };
                    unreadable.push(Finding {
                        code: e.code(),
                        path: d.to_string(),
                        message: format!("{e}; {kept}"),
                    })
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::backend::object_key;
    use crate::catalog::Schema;
    use crate::PutOptions;

    /// A store holding `n` small objects, and their digests in order.
    fn filled(root: &Path, n: usize) -> (Store, Vec<Digest>) {
        let (mut s, _) = Store::init(root, &Schema::CAS).unwrap();
        let mut b = s.batch().unwrap();
        for i in 0..n {
            let data = format!("object {i} of {n}");
            b.add_stream(
                &mut data.as_bytes(),
                data.len() as u64,
                Path::new("x"),
                PutOptions::default(),
            )
            .unwrap();
        }
        let mut digests: Vec<Digest> = b.commit().unwrap().iter().map(|o| o.digest).collect();
        digests.sort();
        (s, digests)
    }

    fn about(r: &FsckReport, code: &str) -> Vec<String> {
        let mut v: Vec<String> = r
            .findings
            .iter()
            .filter(|f| f.code == code)
            .map(|f| f.path.clone())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn one_merge_finds_missing_stray_and_resized_objects_at_the_head_middle_and_tail() {
        let t = tempfile::tempdir().unwrap();
        let (mut s, d) = filled(&t.path().join("s"), 40);
        // The batch's record is an object too.
        let clean = s.fsck(false, &|_| {}).unwrap();
        assert!(clean.findings.is_empty(), "{:?}", clean.findings);
        let (rows, files) = (clean.cataloged, clean.on_disk);
        let file = |root: &str, x: &Digest| t.path().join(root).join(object_key(x));
        // Missing before the first object listed, in the middle, and
        // after the last: the merge's head, body and tail.
        for x in [d[0], d[20], d[38], d[39]] {
            std::fs::remove_file(file("s", &x)).unwrap();
        }
        // A frame of another size under a cataloged name.
        std::fs::remove_file(file("s", &d[10])).unwrap();
        std::fs::write(file("s", &d[10]), b"not the frame").unwrap();
        // An object another store wrote: on disk, not cataloged.
        let (_, other) = filled(&t.path().join("other"), 1);
        let orphan = file("s", &other[0]);
        std::fs::create_dir_all(orphan.parent().unwrap()).unwrap();
        std::fs::copy(file("other", &other[0]), &orphan).unwrap();

        let r = s.fsck(false, &|_| {}).unwrap();
        assert_eq!((r.cataloged, r.on_disk), (rows, files - 4 + 1));
        let mut missing: Vec<String> = [d[0], d[20], d[38], d[39]]
            .iter()
            .map(Digest::to_string)
            .collect();
        missing.sort();
        assert_eq!(about(&r, "integrity.missing_object"), missing);
        assert_eq!(
            about(&r, "integrity.size_mismatch"),
            vec![d[10].to_string()]
        );
        assert_eq!(
            about(&r, "integrity.orphan_object"),
            vec![object_key(&other[0])]
        );
        assert_eq!(r.findings.len(), 6, "{:?}", r.findings);

        // Re-hashing finds the resized frame, quarantines it, and reports
        // it once, as what it failed.
        let r = s.fsck(true, &|_| {}).unwrap();
        assert_eq!(r.verified, files - 4, "{:?}", r.findings);
        let bad: Vec<&Finding> = r
            .findings
            .iter()
            .filter(|f| f.path == d[10].to_string())
            .collect();
        assert_eq!(bad.len(), 2, "{bad:?}");
        assert_eq!(bad[0].code, "integrity.size_mismatch");
        assert!(bad[1].message.contains("moved to"), "{bad:?}");
        assert!(about(&r, "integrity.quarantined_object").is_empty());
        assert_eq!(s.fsck(false, &|_| {}).unwrap().on_disk, files - 4);
    }
}
