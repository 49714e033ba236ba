//! `mirror`: copy one store's objects and refs into another (local to
//! bucket, bucket to local, or any pair), verifying every object on the way.
//!
//! Order keeps the destination consistent at every moment: objects first
//! (each frame streamed into the destination's staging directory while it
//! is decoded and re-hashed, kept only if it verifies; a put batch's worth
//! of such temps made durable by one sync, then published), then a
//! durability pass for the new names, then refs (so a ref never names a
//! missing record), and last the destination's catalog applies the new
//! refs. Frames are copied as stored, so both stores hold byte-identical
//! keys.
//!
//! A mirror holds both stores' shared lock for its whole run, as a writer
//! does, so gc on either side waits for it (a gc on the destination would
//! otherwise reclaim copied objects before the refs that keep them alive
//! arrive). The refs it copies are the ones listed before its first object
//! listing: a put records its ref only after its objects are durable, so
//! every object those refs name was listed, and a put that finishes during
//! the mirror is left whole for the next one instead of arriving without
//! its objects. A ref whose record the destination does not hold after the
//! copy is not copied but reported, and an object the destination lists
//! with another size than the source's is copied again over the damage.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Read, Write};

use crate::backend::{
    object_key, object_of_key, read_small, Backend, Put, OBJECTS_PREFIX, REFS_PREFIX,
};
use crate::error::{Result, StoreError};
use crate::frame::{Encoded, Verdict, VerifyingDecoder};
use crate::layout::LockMode;
use crate::objects::{ObjectDirs, Staged};
use crate::refs::{BrokenRef, RebuildReport};
use crate::store::{Progress, Store};
use crate::tree::{BATCH_BYTES, BATCH_FILES};
use coffer_base::digest::Digest;
use coffer_base::temp::temp_name;

/// Objects copied by each thread at once when either side is a bucket.
const REMOTE_COPY_THREADS: usize = 8;
/// A batch into a bucket: nothing to sync, so a batch only has to keep
/// the upload workers busy; its temps wait in local `tmp/`, so it stays
/// small (a local batch is bounded by [`BATCH_FILES`] and [`BATCH_BYTES`],
/// to share one sync).
const REMOTE_BATCH_FILES: usize = 64;
/// See [`REMOTE_BATCH_FILES`].
const REMOTE_BATCH_BYTES: u64 = 64 << 20;
/// Largest ref document copied.
const REF_MAX_BYTES: u64 = 4 << 10;

/// What a mirror did.
#[derive(Debug, Clone, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MirrorReport {
    /// Source backend.
    pub from: String,
    /// Destination backend.
    pub to: String,
    /// Objects copied (loose, or in the packs copied).
    pub objects_copied: u64,
    /// Packs copied as they are.
    pub packs_copied: u64,
    /// Objects the destination already had.
    pub objects_present: u64,
    /// Stored bytes copied.
    pub bytes_copied: u64,
    /// Refs copied.
    pub refs_copied: u64,
    /// Refs the destination already had with the same content.
    pub refs_present: u64,
    /// Refs the destination holds with other content (e.g. one bundle id
    /// ingested with different manifests in the two stores); not copied.
    pub ref_conflicts: Vec<String>,
    /// Refs of the source not copied because they cannot be read or name
    /// a record neither store holds (a dangling ref): the mirror is
    /// incomplete while there are any.
    pub refs_skipped: Vec<BrokenRef>,
    /// The destination catalog's rebuild.
    pub catalog: RebuildReport,
}

/// Passes every byte read through to `copy` as well.
struct Tee<'a, R: Read> {
    inner: R,
    copy: &'a mut std::fs::File,
    written: u64,
}

impl<R: Read> Read for Tee<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.copy.write_all(&buf[..n])?;
        self.written += n as u64;
        Ok(n)
    }
}

impl Store {
    /// Copies every object and ref of this store that `dest` lacks, then
    /// applies the new refs to `dest`'s catalog.
    pub fn mirror_to(&mut self, dest: &mut Store) -> Result<MirrorReport> {
        self.hold(LockMode::Shared)?;
        dest.hold(LockMode::Shared)?;
        let src = self.backend().clone();
        let dst = dest.backend().clone();
        let mut report = MirrorReport {
            from: src.location(),
            to: dst.location(),
            ..MirrorReport::default()
        };
        // Listed before any object: see the module documentation.
        let mut refs = Vec::new();
        for entry in src.list(REFS_PREFIX)? {
            if entry.regular {
                refs.push(entry.key);
            } else {
                report.refs_skipped.push(BrokenRef::new(
                    &entry.key,
                    &StoreError::UnexpectedEntry {
                        path: entry.key.clone().into(),
                        what: "non-regular entry among refs",
                    },
                ));
            }
        }
        coffer_base::crash::point("mirror_refs_listed");
        let packs = crate::pack::copy::copy_packs(self.objects_dirs(), dest.objects_dirs())?;
        report.packs_copied = packs.packs;
        report.objects_copied += packs.objects;
        report.bytes_copied += packs.bytes;
        self.copy_objects(dest, &mut report)?;
        coffer_base::crash::point("mirror_objects_synced");
        for key in refs {
            copy_ref(&*src, dest.objects_dirs(), &key, &mut report)?;
        }
        report.catalog = dest.rebuild_catalog()?;
        Ok(report)
    }

    /// Copies every object this store holds and `dest` lacks (or holds
    /// with another stored size), shard by shard, and makes their names
    /// durable.
    fn copy_objects(&self, dest: &Store, report: &mut MirrorReport) -> Result<()> {
        let src = self.backend().clone();
        let dst = dest.backend().clone();
        // Shard by shard: each listing is one directory of the layout, so
        // what the mirror holds at once is one shard's keys, never the
        // store's.
        let shards = || (0..=u8::MAX).map(|s| format!("{OBJECTS_PREFIX}{s:02x}/"));
        // Progress counts stored frame bytes, the bytes that move; a bar
        // needs their total first, which takes a listing of its own.
        let progress = self.progress();
        if let Some(p) = progress {
            let mut total = 0;
            for prefix in shards() {
                let (todo, _) = missing_from(&*src, &*dst, &prefix)?;
                total += todo.iter().map(|(_, size)| size).sum::<u64>();
            }
            p.total(total);
        }
        let threads = if src.shared() || dst.shared() {
            REMOTE_COPY_THREADS
        } else {
            1
        };
        let (from, to) = (self.objects_dirs(), dest.objects_dirs());
        let mut copies = Copies::new(to);
        // Every object is tried; the first failure is returned once all
        // were (what verified is in place for the next mirror).
        let mut failed = None;
        for prefix in shards() {
            let (todo, present) = missing_from(&*src, &*dst, &prefix)?;
            report.objects_present += present;
            let mut rest = &todo[..];
            while !rest.is_empty() {
                // A safe point: what is staged is published and cataloged
                // first, so every copy made so far counts for the next run.
                if coffer_base::interrupt::requested() {
                    copies.flush(report, &mut failed)?;
                    return Err(coffer_base::interrupt::Interrupted.into());
                }
                let n = copies.room_for(rest);
                if n == 0 {
                    copies.flush(report, &mut failed)?;
                    continue;
                }
                let (part, later) = rest.split_at(n);
                for r in copy_each(from, to, part, threads, progress) {
                    match r {
                        Ok(Copied::Present(bytes)) => {
                            report.bytes_copied += bytes;
                            report.objects_present += 1;
                        }
                        Ok(Copied::Staged(s)) => copies.add(s),
                        Err(e) => {
                            failed.get_or_insert(e);
                        }
                    }
                }
                rest = later;
            }
        }
        copies.flush(report, &mut failed)?;
        if let Some(e) = failed {
            return Err(e);
        }
        let published = copies.into_shard_keys();
        dst.sync_published(&published)
    }
}

/// Copies the ref `key` of `src` into `dst` when `dst` holds the record it
/// names (its objects were listed after the ref, so they are there too);
/// a ref that cannot be read or names a record `dst` lacks is reported in
/// `refs_skipped`, one `dst` holds with other content in `ref_conflicts`.
fn copy_ref(
    src: &dyn Backend,
    to: &ObjectDirs,
    key: &str,
    report: &mut MirrorReport,
) -> Result<()> {
    let dst = &*to.backend;
    let bytes = read_small(src, key, REF_MAX_BYTES)?
        .ok_or_else(|| StoreError::CatalogData(format!("{key} vanished during the mirror")))?;
    let record = match crate::refs::record_of(key, &bytes) {
        Ok(record) => record,
        Err(e) => {
            report.refs_skipped.push(BrokenRef::new(key, &e));
            return Ok(());
        }
    };
    let held = crate::pack::copy::holds(to, &record)?;
    if !held {
        let e = StoreError::NotFound { digest: record };
        report.refs_skipped.push(BrokenRef::new(key, &e));
        return Ok(());
    }
    match dst.put_bytes(key, &bytes)? {
        Put::Created => {
            report.refs_copied += 1;
            coffer_base::crash::point("mirror_ref_copied");
        }
        Put::Existed => {
            let theirs = read_small(dst, key, REF_MAX_BYTES)?.unwrap_or_default();
            if theirs == bytes {
                report.refs_present += 1;
            } else {
                report.ref_conflicts.push(key.to_string());
            }
        }
    }
    Ok(())
}

/// The objects under `prefix` (one shard) that `src` holds and `dst`
/// lacks, with their stored sizes, and how many `dst` has already.
fn missing_from(
    src: &dyn Backend,
    dst: &dyn Backend,
    prefix: &str,
) -> Result<(Vec<(Digest, u64)>, u64)> {
    // Frames are copied as stored, so an intact copy has the source's
    // size; one listed with another size (an emptied or truncated file,
    // or the same object compressed otherwise by the destination's own
    // put) goes to the copy, which keeps an intact one and replaces a
    // damaged one, as a put does.
    let present: HashMap<String, u64> = dst
        .list(prefix)?
        .into_iter()
        // A symlink or special file under an object's name is not the
        // object: it goes to the copy, which reports it.
        .filter(|l| l.regular)
        .map(|l| (l.key, l.meta.size))
        .collect();
    let mut todo = Vec::new();
    let mut already = 0;
    for entry in src.list(prefix)? {
        let Some(d) = object_of_key(&entry.key).filter(|_| entry.regular) else {
            continue; // fsck reports foreign entries; they are not objects
        };
        if present.get(&entry.key) == Some(&entry.meta.size) {
            already += 1;
        } else {
            todo.push((d, entry.meta.size));
        }
    }
    Ok((todo, already))
}

/// Verified copies waiting in the destination's `tmp/`: made durable by
/// one sync and published together, as a put's batch is.
struct Copies<'a> {
    to: &'a ObjectDirs,
    /// Most temps and stored bytes a batch holds.
    bounds: (usize, u64),
    staged: Vec<Staged>,
    bytes: u64,
    /// One published key per shard that received a copy: what makes every
    /// name durable at the end (one directory's fsync, or one syncfs).
    shards: BTreeMap<String, String>,
}

impl<'a> Copies<'a> {
    fn new(to: &'a ObjectDirs) -> Self {
        let bounds = if to.backend.shared() {
            (REMOTE_BATCH_FILES, REMOTE_BATCH_BYTES)
        } else {
            (BATCH_FILES, BATCH_BYTES)
        };
        Copies {
            to,
            bounds,
            staged: Vec::new(),
            bytes: 0,
            shards: BTreeMap::new(),
        }
    }

    /// How many of `todo`'s next objects fit in this batch.
    fn room_for(&self, todo: &[(Digest, u64)]) -> usize {
        batch_room(self.staged.len(), self.bytes, todo, self.bounds)
    }

    /// One published key per shard that received a copy.
    fn into_shard_keys(mut self) -> Vec<String> {
        std::mem::take(&mut self.shards).into_values().collect()
    }

    fn add(&mut self, s: Staged) {
        self.bytes += s.encoded.stored_size;
        self.staged.push(s);
    }

    /// Syncs the batch's temps, then publishes each. A failed sync removes
    /// every temp of the batch and ends the mirror; a failed publication
    /// is recorded in `failed` and the others go on.
    fn flush(&mut self, report: &mut MirrorReport, failed: &mut Option<StoreError>) -> Result<()> {
        let batch: Vec<(usize, Staged)> = self.staged.drain(..).enumerate().collect();
        self.bytes = 0;
        if batch.is_empty() {
            return Ok(());
        }
        let to = self.to;
        let temps: Vec<&Staged> = batch.iter().map(|(_, s)| s).collect();
        if let Err(e) = to.sync_staged(&temps) {
            temps.iter().for_each(|s| to.discard(s));
            return Err(e);
        }
        for ((_, r), (_, s)) in to.publish_each(&batch).into_iter().zip(&batch) {
            match r {
                Ok(created) => {
                    report.bytes_copied += s.encoded.stored_size;
                    if created {
                        report.objects_copied += 1;
                    } else {
                        report.objects_present += 1;
                    }
                    let d = &s.encoded.digest;
                    self.shards
                        .entry(d.shard())
                        .or_insert_with(|| object_key(d));
                }
                Err(e) => {
                    to.discard(s);
                    failed.get_or_insert(e);
                }
            }
        }
        Ok(())
    }
}

impl Drop for Copies<'_> {
    /// A mirror that stops early leaves no temp of its own behind.
    fn drop(&mut self) {
        self.staged.iter().for_each(|s| self.to.discard(s));
    }
}

/// How many of `todo`'s next objects (with stored sizes) fit in a batch
/// holding `files` temps of `bytes`: within `(max_files, max_bytes)`, and
/// at least one when the batch is empty (an object larger than the byte
/// bound goes alone); none means flush first.
fn batch_room(
    mut files: usize,
    mut bytes: u64,
    todo: &[(Digest, u64)],
    (max_files, max_bytes): (usize, u64),
) -> usize {
    let mut n = 0;
    for (_, size) in todo {
        if files + 1 > max_files || (files > 0 && bytes + size > max_bytes) {
            break;
        }
        files += 1;
        bytes += size;
        n += 1;
    }
    n
}

/// What copying one object left.
enum Copied {
    /// The destination already holds it intact (its stored bytes).
    Present(u64),
    /// Verified into a temp of the destination; not synced or published.
    Staged(Staged),
}

/// Copies `part` on `threads` threads; one result per object, in order.
fn copy_each(
    from: &ObjectDirs,
    to: &ObjectDirs,
    part: &[(Digest, u64)],
    threads: usize,
    progress: Option<&dyn Progress>,
) -> Vec<Result<Copied>> {
    let per = part.len().div_ceil(threads).max(1);
    std::thread::scope(|sc| {
        let handles: Vec<_> = part
            .chunks(per)
            .map(|chunk| {
                sc.spawn(move || {
                    chunk
                        .iter()
                        .map(|(d, size)| {
                            let copied = copy_object(from, to, d);
                            if let Some(p) = progress {
                                p.advance(*size);
                            }
                            copied
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("mirror thread panicked"))
            .collect()
    })
}

/// Streams one frame into a temp of `dest`, re-hashing it on the way; keeps
/// the temp only if it verifies and `dest` lacks an intact copy.
fn copy_object(src: &ObjectDirs, dest: &ObjectDirs, d: &Digest) -> Result<Copied> {
    let (body, _) = src.open_frame(d)?;
    let tmp = &dest.tmp;
    let name = temp_name("mirror");
    let mut file = tmp
        .create_new(&name, 0o444)
        .map_err(|e| StoreError::io(tmp.join(&name), "create temp", e))?;
    let verified = (|| -> Result<(u64, u64)> {
        let mut tee = Tee {
            inner: body,
            copy: &mut file,
            written: 0,
        };
        let mut dec = VerifyingDecoder::new(&mut tee, *d, None)
            .map_err(|e| StoreError::io(tmp.join(&name), "decode", e))?;
        let res = io::copy(&mut dec, &mut io::sink());
        let verdict = dec.verdict().cloned();
        let raw = dec.decoded();
        drop(dec);
        match (res, verdict) {
            (Ok(_), Some(Verdict::Good)) => {}
            (_, Some(Verdict::WrongDigest(actual))) => {
                return Err(StoreError::DigestMismatch {
                    subject: format!("{}/{}", src.backend.location(), object_key(d)),
                    expected: *d,
                    actual,
                })
            }
            (Err(e), _) => {
                return Err(StoreError::CorruptObject {
                    digest: *d,
                    detail: e.to_string(),
                })
            }
            (Ok(_), other) => {
                return Err(StoreError::CorruptObject {
                    digest: *d,
                    detail: format!("{other:?}"),
                })
            }
        }
        // Anything after the frame is not part of the object: refuse it.
        let mut rest = [0u8; 1];
        if tee
            .inner
            .read(&mut rest)
            .map_err(|e| StoreError::io(tmp.join(&name), "read", e))?
            != 0
        {
            return Err(StoreError::CorruptObject {
                digest: *d,
                detail: "bytes after the end of the frame".into(),
            });
        }
        Ok((tee.written, raw))
    })();
    drop(file);
    coffer_base::crash::point("temp_written");
    // What the destination already holds under this name must be the
    // object: a damaged frame is quarantined and replaced by the verified
    // copy, a symlink is reported, never counted as present.
    match verified.and_then(|(n, raw)| Ok((n, raw, dest.present_intact(d, raw)?))) {
        Ok((stored_size, size, false)) => Ok(Copied::Staged(Staged {
            tmp_name: name,
            encoded: Encoded {
                digest: *d,
                size,
                stored_size,
            },
        })),
        Ok((n, _, true)) => {
            let _ = tmp.remove_file(&name);
            Ok(Copied::Present(n))
        }
        Err(e) => {
            let _ = tmp.remove_file(&name);
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn todo(sizes: &[u64]) -> Vec<(Digest, u64)> {
        sizes
            .iter()
            .map(|&s| (Digest::of(&s.to_le_bytes()), s))
            .collect()
    }

    #[test]
    fn a_batch_stops_at_its_file_and_byte_bounds() {
        for bounds @ (files, bytes) in [
            (BATCH_FILES, BATCH_BYTES),
            (REMOTE_BATCH_FILES, REMOTE_BATCH_BYTES),
        ] {
            let small = todo(&[10; 5]);
            assert_eq!(batch_room(0, 0, &small, bounds), 5);
            assert_eq!(batch_room(files - 2, 0, &small, bounds), 2);
            assert_eq!(batch_room(files, 0, &small, bounds), 0);
            // Bytes: exactly at the bound fits, one byte over does not.
            assert_eq!(batch_room(1, bytes - 20, &small, bounds), 2);
            assert_eq!(batch_room(1, bytes - 19, &small, bounds), 1);
            assert_eq!(batch_room(1, bytes - 9, &small, bounds), 0);
            // An object larger than the bound goes alone, into an empty batch.
            let big = todo(&[bytes + 1, 10]);
            assert_eq!(batch_room(0, 0, &big, bounds), 1);
            assert_eq!(batch_room(1, 10, &big, bounds), 0);
        }
    }
}
