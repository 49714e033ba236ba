//! Compressing and writing small objects beside the batch's thread.
//!
//! A batch of many small files would otherwise run read, hash, compress and
//! write one after another on one core. The batch's thread reads and hashes
//! (it needs the digest at once, for dedup), and hands the bytes to the
//! stager, which compresses them and writes the temp files. A bounded queue
//! keeps at most a few objects in flight, so memory stays flat.
//!
//! For a bucket the stager uploads instead: several workers compress each
//! object and send its frame with a conditional put straight from memory.
//! Uploads then overlap the reading of the next files, no temp is written
//! and read back, and the commit finds them done. (An upload the batch does
//! not commit leaves an orphan in the bucket, as a crash after publication
//! does; gc reclaims it.)

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::backend::{object_key, Backend, Put};
use crate::error::{Result, StoreError};
use crate::frame::{Encoded, SmallEncoder};
use crate::objects::{stage_small, Staged};
use crate::pack::writer::PackSeq;
use crate::pack::{Entry, PackTemp};
use coffer_base::digest::Digest;
use coffer_base::dir::Dir;

/// Groups queued for the stager's workers.
const QUEUE: usize = 4;
/// A group is sent when it holds this many bytes or objects: handing over
/// objects one by one costs a thread wake-up each, more than compressing
/// a small file.
const GROUP_BYTES: usize = 1 << 20;
const GROUP_OBJECTS: usize = 64;
/// Uploading workers for a bucket. Each object is its own group there: a
/// request's round trip dwarfs a wake-up, and one object per worker keeps
/// every worker busy however few objects a batch has.
pub const UPLOAD_WORKERS: usize = 8;

struct Job {
    id: u64,
    data: Vec<u8>,
    digest: Digest,
}

/// What became of one object handed to the stager.
#[derive(Debug)]
pub enum Done {
    /// A temp in `tmp/`, for the commit to make durable and publish.
    Staged(Staged),
    /// Appended to the batch's pack number `pack` (in the order the
    /// stager returns its packs).
    Packed {
        /// Which of the stager's packs holds it.
        pack: usize,
        /// Where in that pack.
        entry: Entry,
    },
    /// Uploaded to the bucket; `created` is false when the key existed.
    Published {
        /// What was uploaded (or found).
        encoded: Encoded,
        /// Whether this upload created the object.
        created: bool,
    },
}

/// The result of one job: its id and what became of it (or why it failed).
pub type Outcome = (u64, Result<Done>);

/// A background stager with its own handle on `tmp/`.
pub struct Stager {
    tx: Option<SyncSender<Vec<Job>>>,
    /// Set by the first failed job: the jobs after it are skipped (no
    /// outcome), so a batch against an unreachable bucket fails after one
    /// round of retries, not one per object.
    failed: Arc<AtomicBool>,
    handles: Vec<JoinHandle<(Vec<Outcome>, Vec<PackTemp>)>>,
    next: u64,
    group: Vec<Job>,
    group_bytes: usize,
    group_objects: usize,
}

impl Stager {
    /// Starts one worker that stages temps in `tmp` (with `pack`, frames
    /// appended to pack temps instead of one temp each), or with
    /// `upload_to` [`UPLOAD_WORKERS`] that upload to that bucket.
    pub fn start(tmp: Dir, upload_to: Option<Arc<dyn Backend>>, pack: bool) -> Result<Stager> {
        let workers = if upload_to.is_some() {
            UPLOAD_WORKERS
        } else {
            1
        };
        let (tx, rx) = sync_channel::<Vec<Job>>(QUEUE.max(workers));
        let rx = Arc::new(Mutex::new(rx));
        let tmp = Arc::new(tmp);
        let failed = Arc::new(AtomicBool::new(false));
        let mut handles = Vec::with_capacity(workers);
        for _ in 0..workers {
            let mut enc =
                SmallEncoder::new().map_err(|e| StoreError::io(tmp.path(), "compress", e))?;
            let (rx, tmp, upload_to) = (rx.clone(), tmp.clone(), upload_to.clone());
            let failed = failed.clone();
            handles.push(std::thread::spawn(move || {
                let mut out = Vec::new();
                let mut packer = Packer::default();
                while let Some(group) = next_group(&rx) {
                    for job in group {
                        if failed.load(Ordering::Relaxed) {
                            continue;
                        }
                        let done = match &upload_to {
                            None if pack => packer.append(&tmp, &job, &mut enc),
                            None => {
                                stage_small(&tmp, &job.data, job.digest, &mut enc).map(Done::Staged)
                            }
                            Some(b) => upload(b.as_ref(), &job, &mut enc),
                        };
                        if done.is_err() {
                            failed.store(true, Ordering::Relaxed);
                        }
                        out.push((job.id, done));
                    }
                }
                match packer.finish(&tmp) {
                    Ok(packs) => (out, packs),
                    Err(e) => {
                        out.push((u64::MAX, Err(e)));
                        (out, Vec::new())
                    }
                }
            }));
        }
        Ok(Stager {
            tx: Some(tx),
            failed,
            handles,
            next: 0,
            group: Vec::new(),
            group_bytes: 0,
            group_objects: if workers > 1 { 1 } else { GROUP_OBJECTS },
        })
    }

    /// Queues `data` (whose digest is `digest`); returns the job id.
    pub fn submit(&mut self, data: Vec<u8>, digest: Digest) -> u64 {
        let id = self.next;
        self.next += 1;
        self.group_bytes += data.len();
        self.group.push(Job { id, data, digest });
        if self.group_bytes >= GROUP_BYTES || self.group.len() >= self.group_objects {
            self.send_group();
        }
        id
    }

    fn send_group(&mut self) {
        let group = std::mem::take(&mut self.group);
        self.group_bytes = 0;
        if let (Some(tx), false) = (&self.tx, group.is_empty()) {
            // A send fails only if every worker is gone; finish() reports that.
            let _ = tx.send(group);
        }
    }

    /// Whether a job has failed (the batch can stop reading inputs).
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// Waits for every queued job; returns their outcomes and the pack
    /// temps they were appended to. After a failure the jobs skipped have
    /// none.
    pub fn finish(mut self) -> (Vec<Outcome>, Vec<PackTemp>) {
        self.join()
    }

    fn join(&mut self) -> (Vec<Outcome>, Vec<PackTemp>) {
        self.send_group();
        drop(self.tx.take());
        let (mut all, mut packs) = (Vec::new(), Vec::new());
        for h in self.handles.drain(..) {
            match h.join() {
                Ok((v, p)) => {
                    all.extend(v);
                    packs.extend(p);
                }
                Err(_) => all.push((
                    u64::MAX,
                    Err(StoreError::CatalogData("stager thread panicked".into())),
                )),
            }
        }
        (all, packs)
    }
}

/// A worker's packs.
#[derive(Default)]
struct Packer(PackSeq);

impl Packer {
    /// Compresses one object and appends its frame.
    fn append(&mut self, tmp: &Dir, job: &Job, enc: &mut SmallEncoder) -> Result<Done> {
        let frame = enc
            .encode(&job.data)
            .map_err(|e| StoreError::io(tmp.path(), "compress", e))?;
        let (pack, entry) = self
            .0
            .append(tmp, job.digest, job.data.len() as u64, frame)?;
        coffer_base::crash::point("temp_written");
        Ok(Done::Packed { pack, entry })
    }

    /// Closes the open pack; returns every pack temp, in order.
    fn finish(self, tmp: &Dir) -> Result<Vec<PackTemp>> {
        self.0.finish(tmp)
    }
}

/// The next group for a worker; `None` once the batch closed the queue.
fn next_group(rx: &Mutex<Receiver<Vec<Job>>>) -> Option<Vec<Job>> {
    // The lock is held only while waiting; a poisoned one means a worker
    // panicked, which join() reports.
    rx.lock().ok()?.recv().ok()
}

/// Compresses one object and uploads its frame with a conditional put.
fn upload(backend: &dyn Backend, job: &Job, enc: &mut SmallEncoder) -> Result<Done> {
    let key = object_key(&job.digest);
    let frame = enc
        .encode(&job.data)
        .map_err(|e| StoreError::io(&key, "compress", e))?;
    let encoded = Encoded {
        digest: job.digest,
        size: job.data.len() as u64,
        stored_size: frame.len() as u64,
    };
    let created = backend.put_bytes(&key, frame)? == Put::Created;
    coffer_base::crash::point("published");
    Ok(Done::Published { encoded, created })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Schema;
    use crate::store::Store;

    fn outcomes(st: Stager) -> Vec<(u64, Encoded, bool)> {
        let mut v: Vec<_> = st
            .finish()
            .0
            .into_iter()
            .map(|(id, r)| match r.unwrap() {
                Done::Published { encoded, created } => (id, encoded, created),
                other => panic!("an uploading stager did not upload: {other:?}"),
            })
            .collect();
        v.sort_by_key(|o| o.0);
        v
    }

    #[test]
    fn uploading_workers_publish_each_object_once_and_write_no_temp() {
        let t = tempfile::tempdir().unwrap();
        let (s, _) = Store::init(&t.path().join("s"), &Schema::CAS).unwrap();
        let dirs = s.objects_dirs();
        let start = || {
            let tmp = dirs.tmp.try_clone().unwrap();
            Stager::start(tmp, Some(dirs.backend.clone()), false).unwrap()
        };
        let data: Vec<Vec<u8>> = (0..40u32)
            .map(|i| format!("object {i} ").repeat(i as usize * 37).into_bytes())
            .collect();
        let mut st = start();
        for d in &data {
            st.submit(d.clone(), Digest::of(d));
        }
        let first = outcomes(st);
        assert_eq!(first.len(), data.len());
        for (id, enc, created) in &first {
            let raw = &data[*id as usize];
            assert!(created, "object {id} is new");
            assert_eq!((enc.digest, enc.size), (Digest::of(raw), raw.len() as u64));
            let mut back = Vec::new();
            assert_eq!(s.copy_object(&enc.digest, &mut back).unwrap(), enc.size);
            assert!(&back == raw);
            let (_, stored) = dirs.open_frame(&enc.digest).unwrap();
            assert_eq!(stored, enc.stored_size);
        }
        // The same objects again: every conditional put finds its key.
        let mut st = start();
        for d in &data[..5] {
            st.submit(d.clone(), Digest::of(d));
        }
        assert!(outcomes(st).iter().all(|(_, _, created)| !created));
        assert!(dirs.tmp.entries().unwrap().is_empty(), "no temp is left");
    }

    #[test]
    fn after_a_failed_upload_the_other_jobs_are_skipped() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("s");
        let (s, _) = Store::init(&root, &Schema::CAS).unwrap();
        let dirs = s.objects_dirs();
        // The backend holds this directory open: once it is gone, no shard
        // directory can be made in it and every put fails.
        std::fs::remove_dir_all(root.join("objects/sha256")).unwrap();
        let mut st = Stager::start(
            dirs.tmp.try_clone().unwrap(),
            Some(dirs.backend.clone()),
            false,
        )
        .unwrap();
        for i in 0..200u32 {
            let d = format!("object {i}").into_bytes();
            st.submit(d.clone(), Digest::of(&d));
        }
        // Every worker fails its first job; none starts another.
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(st.failed());
        let (out, _) = st.finish();
        assert!(
            !out.is_empty() && out.len() <= UPLOAD_WORKERS,
            "{} outcomes",
            out.len()
        );
        assert!(out.iter().all(|(_, r)| r.is_err()));
    }
}
