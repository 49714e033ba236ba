//! Compressing and writing small objects on a second thread.
//!
//! A batch of many small files would otherwise run read, hash, compress and
//! write one after another on one core. The batch's thread reads and hashes
//! (it needs the digest at once, for dedup), and hands the bytes to the
//! stager, which compresses them and writes the temp files. A bounded queue
//! keeps at most a few objects in flight, so memory stays flat.

use std::sync::mpsc::{sync_channel, SyncSender};
use std::thread::JoinHandle;

use crate::digest::Digest;
use crate::dir::Dir;
use crate::error::{Result, StoreError};
use crate::frame::SmallEncoder;
use crate::objects::{stage_small, Staged};

/// Groups queued for the stager thread.
const QUEUE: usize = 4;
/// A group is sent when it holds this many bytes or objects: handing over
/// objects one by one costs a thread wake-up each, more than compressing
/// a small file.
const GROUP_BYTES: usize = 1 << 20;
const GROUP_OBJECTS: usize = 64;

struct Job {
    id: u64,
    data: Vec<u8>,
    digest: Digest,
}

/// The result of one job: its id and the staged temp (or why it failed).
pub type Outcome = (u64, Result<Staged>);

/// A background stager with its own handle on `tmp/`.
pub struct Stager {
    tx: Option<SyncSender<Vec<Job>>>,
    handle: Option<JoinHandle<Vec<Outcome>>>,
    next: u64,
    group: Vec<Job>,
    group_bytes: usize,
}

impl Stager {
    /// Starts the thread.
    pub fn start(tmp: Dir) -> Result<Stager> {
        let mut enc = SmallEncoder::new().map_err(|e| StoreError::io(tmp.path(), "compress", e))?;
        let (tx, rx) = sync_channel::<Vec<Job>>(QUEUE);
        let handle = std::thread::spawn(move || {
            rx.into_iter()
                .flatten()
                .map(|job| (job.id, stage_small(&tmp, &job.data, job.digest, &mut enc)))
                .collect()
        });
        Ok(Stager {
            tx: Some(tx),
            handle: Some(handle),
            next: 0,
            group: Vec::new(),
            group_bytes: 0,
        })
    }

    /// Queues `data` (whose digest is `digest`); returns the job id.
    pub fn submit(&mut self, data: Vec<u8>, digest: Digest) -> u64 {
        let id = self.next;
        self.next += 1;
        self.group_bytes += data.len();
        self.group.push(Job { id, data, digest });
        if self.group_bytes >= GROUP_BYTES || self.group.len() >= GROUP_OBJECTS {
            self.send_group();
        }
        id
    }

    fn send_group(&mut self) {
        let group = std::mem::take(&mut self.group);
        self.group_bytes = 0;
        if let (Some(tx), false) = (&self.tx, group.is_empty()) {
            // A send fails only if the thread is gone; finish() reports that.
            let _ = tx.send(group);
        }
    }

    /// Waits for every queued job; returns their outcomes.
    pub fn finish(mut self) -> Vec<Outcome> {
        self.join()
    }

    fn join(&mut self) -> Vec<Outcome> {
        self.send_group();
        drop(self.tx.take());
        match self.handle.take().map(|h| h.join()) {
            Some(Ok(v)) => v,
            Some(Err(_)) => vec![(
                u64::MAX,
                Err(StoreError::CatalogData("stager thread panicked".into())),
            )],
            None => Vec::new(),
        }
    }
}
