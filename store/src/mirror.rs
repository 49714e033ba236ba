//! `mirror`: copy one store's objects and refs into another (local to
//! bucket, bucket to local, or any pair), verifying every object on the way.
//!
//! Order keeps the destination consistent at every moment: objects first
//! (each frame streamed into the destination's staging directory while it
//! is decoded and re-hashed, published only if it verifies), then a
//! durability pass, then refs (so a ref never names a missing record), and
//! last the destination's catalog applies the new refs. Frames are copied
//! as stored, so both stores hold byte-identical keys.

use std::collections::HashSet;
use std::io::{self, Read, Write};

use crate::backend::{
    object_key, object_of_key, read_small, Backend, Put, OBJECTS_PREFIX, REFS_PREFIX,
};
use crate::digest::Digest;
use crate::error::{Result, StoreError};
use crate::frame::{Verdict, VerifyingDecoder};
use crate::names::temp_name;
use crate::objects::ObjectDirs;
use crate::refs::RebuildReport;
use crate::store::Store;

/// Objects copied by each thread at once when either side is a bucket.
const REMOTE_COPY_THREADS: usize = 8;
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
    /// Objects copied.
    pub objects_copied: u64,
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
    pub fn mirror_to(&self, dest: &mut Store) -> Result<MirrorReport> {
        let src = self.backend().clone();
        let dst = dest.backend().clone();
        let mut report = MirrorReport {
            from: src.location(),
            to: dst.location(),
            ..MirrorReport::default()
        };
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
        // One published key per shard that received a copy: what makes
        // every copy durable (one directory's fsync, or one syncfs).
        let mut published = Vec::new();
        // Every object is tried; the first failure is returned once all
        // were (what verified is in place for the next mirror).
        let mut failed = None;
        for prefix in shards() {
            let (todo, present) = missing_from(&*src, &*dst, &prefix)?;
            report.objects_present += present;
            let per = todo.len().div_ceil(threads).max(1);
            let results: Vec<Result<(u64, bool)>> = std::thread::scope(|sc| {
                let handles: Vec<_> = todo
                    .chunks(per)
                    .map(|part| {
                        sc.spawn(|| {
                            part.iter()
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
            });
            for r in results {
                match r {
                    Ok((bytes, created)) => {
                        report.bytes_copied += bytes;
                        if created {
                            report.objects_copied += 1;
                        } else {
                            report.objects_present += 1;
                        }
                    }
                    Err(e) => {
                        failed.get_or_insert(e);
                    }
                }
            }
            if let Some((d, _)) = todo.first() {
                published.push(object_key(d));
            }
        }
        if let Some(e) = failed {
            return Err(e);
        }
        dst.sync_published(&published)?;
        crate::crash::point("mirror_objects_synced");

        for entry in src.list(REFS_PREFIX)? {
            if !entry.regular {
                continue;
            }
            let bytes = read_small(&*src, &entry.key, REF_MAX_BYTES)?.ok_or_else(|| {
                StoreError::CatalogData(format!("{} vanished during the mirror", entry.key))
            })?;
            match dst.put_bytes(&entry.key, &bytes)? {
                Put::Created => report.refs_copied += 1,
                Put::Existed => {
                    let theirs = read_small(&*dst, &entry.key, REF_MAX_BYTES)?.unwrap_or_default();
                    if theirs == bytes {
                        report.refs_present += 1;
                    } else {
                        report.ref_conflicts.push(entry.key.clone());
                    }
                }
            }
        }
        report.catalog = dest.rebuild_catalog()?;
        Ok(report)
    }
}

/// The objects under `prefix` (one shard) that `src` holds and `dst`
/// lacks, with their stored sizes, and how many `dst` has already.
fn missing_from(
    src: &dyn Backend,
    dst: &dyn Backend,
    prefix: &str,
) -> Result<(Vec<(Digest, u64)>, u64)> {
    let present: HashSet<String> = dst
        .list(prefix)?
        .into_iter()
        // A symlink or special file under an object's name is not the
        // object: it goes to the copy, which reports it.
        .filter(|l| l.regular)
        .map(|l| l.key)
        .collect();
    let mut todo = Vec::new();
    let mut already = 0;
    for entry in src.list(prefix)? {
        let Some(d) = object_of_key(&entry.key).filter(|_| entry.regular) else {
            continue; // fsck reports foreign entries; they are not objects
        };
        if present.contains(&entry.key) {
            already += 1;
        } else {
            todo.push((d, entry.meta.size));
        }
    }
    Ok((todo, already))
}

/// Streams one frame into `dest`, re-hashing it on the way; publishes it
/// only if it verifies. Returns stored bytes and whether it was new.
fn copy_object(src: &ObjectDirs, dest: &ObjectDirs, d: &Digest) -> Result<(u64, bool)> {
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
        let written = tee.written;
        file.sync_all()
            .map_err(|e| StoreError::io(tmp.join(&name), "fsync", e))?;
        Ok((written, raw))
    })();
    drop(file);
    // What the destination already holds under this name must be the
    // object: a damaged frame is quarantined and replaced by the verified
    // copy, a symlink is reported, never counted as present.
    let written = match verified.and_then(|(n, raw)| Ok((n, dest.present_intact(d, raw)?))) {
        Ok((n, false)) => n,
        Ok((n, true)) => {
            let _ = tmp.remove_file(&name);
            return Ok((n, false));
        }
        Err(e) => {
            let _ = tmp.remove_file(&name);
            return Err(e);
        }
    };
    let put = dest.backend.publish(&object_key(d), tmp, &name)?;
    Ok((written, put == Put::Created))
}
