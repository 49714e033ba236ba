//! `repack`: move a store's small loose objects into packs (converting a
//! format-1 store to format 2 in place), and the pack rewrite gc runs.
//!
//! Both only ever add before they remove: frames are copied into new pack
//! temps (each decoded and re-hashed first, so damage is never carried
//! into a pack), the packs are made durable and published (the marker
//! first becomes version 2), and only then are the loose files, or the old
//! pack, removed. A kill at any point leaves every object readable, at
//! worst stored twice; fsck is clean after it, and the next run finishes.

use crate::backend::{object_key, object_of_key, OBJECTS_PREFIX};
use crate::error::{Result, StoreError};
use crate::frame::SMALL_OBJECT_MAX;
use crate::layout::LockMode;
use crate::objects::ObjectDirs;
use crate::pack::writer::PackSeq;
use crate::pack::{self, Sealed};
use crate::store::Store;
use coffer_base::digest::Digest;

/// What a repack did.
#[derive(Debug, Clone, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RepackReport {
    /// Loose objects moved into packs.
    pub objects_packed: u64,
    /// Packs written.
    pub packs_written: u64,
    /// Stored bytes of the frames moved.
    pub bytes_packed: u64,
    /// Loose objects left loose because their frame does not verify (fsck
    /// and reads report them; they are never carried into a pack).
    pub unreadable: Vec<Digest>,
}

pub use crate::frame::frame_verifies;

/// New packs being filled with verified frames.
pub(crate) struct Builder<'a> {
    dirs: &'a ObjectDirs,
    packs: PackSeq,
}

impl<'a> Builder<'a> {
    pub(crate) fn new(dirs: &'a ObjectDirs) -> Self {
        Builder {
            dirs,
            packs: PackSeq::default(),
        }
    }

    /// Appends one verified frame.
    pub(crate) fn add(&mut self, d: Digest, size: u64, frame: &[u8]) -> Result<()> {
        self.packs.append(&self.dirs.tmp, d, size, frame).map(drop)
    }

    /// Seals, syncs and publishes every pack; returns them. Their names are
    /// durable when this returns.
    pub(crate) fn publish(mut self) -> Result<Vec<Sealed>> {
        let tmp = &self.dirs.tmp;
        let full = std::mem::take(&mut self.packs).finish(tmp)?;
        let mut sealed = Vec::new();
        let mut full = full.into_iter();
        for p in full.by_ref() {
            match p.seal(tmp) {
                Ok(s) => sealed.push(s),
                Err(e) => {
                    sealed.iter().for_each(|s: &Sealed| s.discard(tmp));
                    full.for_each(|p| p.discard(tmp));
                    return Err(e);
                }
            }
        }
        if sealed.is_empty() {
            return Ok(sealed);
        }
        if let Err(e) = tmp.sync_filesystem() {
            sealed.iter().for_each(|s| s.discard(tmp));
            return Err(StoreError::io(tmp.path(), "syncfs", e));
        }
        coffer_base::crash::point("repack_temps_synced");
        self.dirs.publish_packs(&sealed)?;
        let keys: Vec<String> = sealed
            .iter()
            .flat_map(|s| pack::published_keys(&s.pack.digest))
            .collect();
        self.dirs.backend.sync_published(&keys)?;
        coffer_base::crash::point("repack_published");
        sealed.iter().for_each(|s| self.dirs.know_pack(s));
        Ok(sealed)
    }
}

impl Drop for Builder<'_> {
    fn drop(&mut self) {
        self.packs.discard(&self.dirs.tmp);
    }
}

impl Store {
    /// Moves every cataloged loose object of up to
    /// [`SMALL_OBJECT_MAX`] bytes into packs, then removes the loose
    /// files. Takes the exclusive store lock (as gc does). A store on a
    /// bucket is left as it is (`validation.unsupported_store_format`).
    pub fn repack(&mut self) -> Result<RepackReport> {
        self.hold(LockMode::Exclusive)?;
        let dirs = self.objects_dirs();
        if !dirs.packs_allowed() {
            return Err(StoreError::UnsupportedFormat {
                path: dirs.backend.location().into(),
                detail: "packs are written to local stores only so far".into(),
            });
        }
        let mut report = RepackReport::default();
        let mut dctx = zstd::bulk::Decompressor::new()
            .map_err(|e| StoreError::io(dirs.tmp.path(), "zstd", e))?;
        let mut raw = Vec::new();
        let mut builder = Builder::new(dirs);
        let mut moved: Vec<Digest> = Vec::new();
        // Loose copies of objects a pack already holds (an earlier repack
        // cut off before it removed them).
        let mut doubled: Vec<Digest> = Vec::new();
        dirs.backend.list_each(OBJECTS_PREFIX, &mut |entry| {
            let Some(d) = object_of_key(&entry.key).filter(|_| entry.regular) else {
                return Ok(());
            };
            // Orphans stay loose: gc reclaims them by their age.
            let Some(row) = self.catalog().object(&d)? else {
                return Ok(());
            };
            if row.size > SMALL_OBJECT_MAX as u64 {
                return Ok(());
            }
            if dirs.packed(&d, false)?.is_some() {
                doubled.push(d);
                return Ok(());
            }
            let Some((body, meta)) = dirs.backend.get(&entry.key)? else {
                return Ok(());
            };
            let mut frame = Vec::with_capacity(meta.size as usize);
            use std::io::Read;
            body.take(meta.size)
                .read_to_end(&mut frame)
                .map_err(|e| StoreError::io(dirs.object_path(&d), "read", e))?;
            if !frame_verifies(&mut dctx, &mut raw, &frame, &d, row.size) {
                report.unreadable.push(d);
                return Ok(());
            }
            builder.add(d, row.size, &frame)?;
            report.bytes_packed += frame.len() as u64;
            moved.push(d);
            Ok(())
        })?;
        if moved.len() < 2 {
            // One object in a pack of its own buys nothing.
            drop(builder);
            moved.clear();
            report.bytes_packed = 0;
        } else {
            report.packs_written = builder.publish()?.len() as u64;
        }
        let sync = || {
            dirs.root
                .sync_filesystem()
                .map_err(|e| StoreError::io(dirs.root.path(), "syncfs", e))
        };
        if !doubled.is_empty() {
            // The packs holding them may not be durable yet (the cut-off
            // run may not have synced them): made so before any loose
            // copy goes.
            sync()?;
        }
        for d in moved.iter().chain(&doubled) {
            dirs.backend.delete(&object_key(d))?;
        }
        sync()?;
        report.objects_packed = moved.len() as u64;
        Ok(report)
    }
}

/// Packs gc rewrote or removed, and stray pack files it removed.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Rewritten {
    pub packs: u64,
    pub stray: u64,
    /// Bytes of the stray packs (a rewritten pack's dead frames are
    /// counted when their rows go).
    pub stray_bytes: u64,
}

/// gc's part for packs older than `cutoff_ms`: a pack of which less than
/// half is live (named by a catalog row, or kept by `kept`) is rewritten
/// with only its live frames, and the old pack removed once the new one
/// is durable; a pack file without its index is removed. A pack holding a
/// live frame that does not verify is left as it is (fsck names it).
pub(crate) fn rewrite_packs(
    dirs: &ObjectDirs,
    is_live: &dyn Fn(&Digest) -> Result<bool>,
    cutoff_ms: i64,
    dry_run: bool,
) -> Result<Rewritten> {
    let mut done = Rewritten::default();
    let (packs, _) = dirs.packs.all(&*dirs.backend)?;
    for l in dirs.backend.list(pack::PACKS_PREFIX)? {
        if let Some((d, pack::PackFile::Pack)) = pack::parse_key(&l.key) {
            let indexed = dirs.backend.head(&pack::idx_key(&d))?.is_some();
            if !indexed && l.regular && l.meta.modified_ms < cutoff_ms {
                if !dry_run {
                    dirs.backend.delete(&l.key)?;
                }
                done.stray += 1;
                done.stray_bytes += l.meta.size;
            }
        }
    }
    for idx in packs {
        let key = pack::pack_key(&idx.pack());
        let Some(meta) = dirs.backend.head(&key)? else {
            continue;
        };
        if meta.modified_ms >= cutoff_ms {
            continue;
        }
        let mut live = Vec::new();
        for e in idx.entries() {
            if is_live(&e.digest)? {
                live.push(e);
            }
        }
        if live.len() * 2 >= idx.len() {
            continue;
        }
        if dry_run {
            done.packs += 1;
            continue;
        }
        let mut builder = Builder::new(dirs);
        let mut dctx = zstd::bulk::Decompressor::new()
            .map_err(|e| StoreError::io(dirs.tmp.path(), "zstd", e))?;
        let (mut raw, mut intact) = (Vec::new(), true);
        for e in &live {
            let Some(mut body) = dirs.backend.get_range(&key, e.offset, e.stored)? else {
                intact = false;
                break;
            };
            let mut frame = vec![0u8; e.stored as usize];
            use std::io::Read;
            if body.read_exact(&mut frame).is_err()
                || !frame_verifies(&mut dctx, &mut raw, &frame, &e.digest, e.size)
            {
                intact = false;
                break;
            }
            builder.add(e.digest, e.size, &frame)?;
        }
        if !intact {
            continue;
        }
        builder.publish()?;
        coffer_base::crash::point("gc_pack_rewritten");
        // The index first: a pack without one is invisible, and is what a
        // crash here leaves (removed by the next gc as a stray).
        dirs.backend.delete(&pack::idx_key(&idx.pack()))?;
        coffer_base::crash::point("gc_old_index_removed");
        dirs.backend.delete(&key)?;
        done.packs += 1;
    }
    if !dry_run && done.packs + done.stray > 0 {
        dirs.packs.refresh(&*dirs.backend)?;
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use super::*;
    use crate::catalog::{Root, Schema};
    use crate::PutOptions;

    /// Puts `n` small objects in one batch, the first `rooted` of them
    /// with a root; returns their digests.
    fn put(s: &mut Store, tag: &str, n: usize, rooted: usize) -> Vec<Digest> {
        let mut b = s.batch().unwrap();
        let mut out = Vec::new();
        for i in 0..n {
            let data = format!("{tag} object {i}\n").repeat(i % 7 + 1);
            let opts = PutOptions {
                root: (i < rooted).then(|| Root {
                    kind: "put".into(),
                    name: format!("{tag}{i}"),
                }),
                ..PutOptions::default()
            };
            let (d, _) = b
                .add_stream(
                    &mut data.as_bytes(),
                    data.len() as u64,
                    Path::new("x"),
                    opts,
                )
                .unwrap();
            out.push(d);
        }
        b.commit().unwrap();
        out
    }

    fn pack_names(root: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(root.join("packs"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn gc_rewrites_a_mostly_dead_pack_and_keeps_every_live_object() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("s");
        let (mut s, _) = Store::init(&root, &Schema::CAS).unwrap();
        let kept = put(&mut s, "a", 300, 100);
        let before = pack_names(&root);
        assert_eq!(before.len(), 2, "{before:?}");
        // A pack with two thirds dead: rewritten, its live third kept.
        let r = s.gc(Duration::ZERO, false).unwrap();
        assert_eq!(r.unreachable.len(), 200);
        assert_eq!(r.packs_rewritten, 1);
        let after = pack_names(&root);
        assert_eq!(after.len(), 2);
        assert_ne!(before, after, "a new pack replaced the old one");
        for d in &kept[..100] {
            assert!(s.verify_object(d).is_ok(), "{d} survives");
        }
        for d in &kept[100..] {
            assert!(!s.has(d).unwrap());
        }
        let f = s.fsck(true, &|_| {}).unwrap();
        assert!(f.findings.is_empty(), "{:?}", f.findings);
        assert_eq!((f.packs, f.dead_packed), (1, 0));
        // A pack that is mostly live stays as it is.
        let r = s.gc(Duration::ZERO, false).unwrap();
        assert_eq!(r.packs_rewritten, 0);
        assert_eq!(pack_names(&root), after);
    }

    #[test]
    fn a_pack_file_without_its_index_is_a_stray_gc_removes() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("s");
        let (mut s, _) = Store::init(&root, &Schema::CAS).unwrap();
        put(&mut s, "b", 120, 120);
        let names = pack_names(&root);
        // A publication cut off between pack and index.
        let idx = root.join("packs").join(&names[0]);
        let mut perm = std::fs::metadata(&idx).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o644);
        std::fs::set_permissions(&idx, perm).unwrap();
        std::fs::remove_file(&idx).unwrap();
        let f = s.fsck(false, &|_| {}).unwrap();
        let codes: Vec<&str> = f.findings.iter().map(|f| f.code).collect();
        assert!(codes.contains(&"integrity.orphan_object"), "{codes:?}");
        assert!(codes.contains(&"integrity.missing_object"), "{codes:?}");
        let r = s.gc(Duration::ZERO, true).unwrap();
        assert_eq!(r.stray_packs, 1, "a dry run counts it");
        assert_eq!(pack_names(&root).len(), 1);
    }

    #[test]
    fn repack_packs_loose_objects_and_leaves_orphans_loose() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("s");
        let (mut s, _) = Store::init(&root, &Schema::CAS).unwrap();
        let a = put(&mut s, "c", 30, 30);
        let b = put(&mut s, "d", 30, 30);
        let r = s.repack().unwrap();
        assert_eq!(r.objects_packed, 62, "60 objects and two records");
        assert_eq!(r.packs_written, 1);
        for d in a.iter().chain(&b) {
            assert!(!root.join(crate::backend::object_key(d)).exists());
            assert!(s.verify_object(d).is_ok());
        }
        let f = s.fsck(true, &|_| {}).unwrap();
        assert!(f.findings.is_empty(), "{:?}", f.findings);
    }
}
