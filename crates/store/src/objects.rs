//! Object files: where they live, how they are staged, published,
//! read back and quarantined.
//!
//! Invariants kept here:
//! - a published name `objects/sha256/<2hex>/<64hex>` is only ever created by
//!   a no-replace rename of a complete, synced temp file, so it never holds a
//!   partial frame and is never replaced;
//! - temp names are created with `O_EXCL` and are unique per process and call;
//! - nothing under the store root is reached through a symlink (see [`Dir`]).

use std::fs::File;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::backend::{object_key, Backend, Body, Put};
use crate::entries::TMP_DIR;
use crate::error::{Result, StoreError};
use crate::frame::{self, EncodeError, Encoded, SmallEncoder};
use coffer_base::digest::Digest;
use coffer_base::dir::Dir;
use coffer_base::temp::temp_name;

/// Mode of staged (and so of published) object files: nobody writes an object after publication.
const OBJECT_MODE: u32 = 0o444;
/// Batches with at least this many new objects publish on two threads.
pub(crate) const PARALLEL_PUBLISH_MIN: usize = 512;
/// Uploads in flight at once when publishing a batch to a bucket.
const REMOTE_PUBLISH_THREADS: usize = 8;

/// Bytes of a streamed temp whose writeback is started at once.
const WRITEBACK_STEP: u64 = 8 << 20;

/// Writes a temp that will be fsynced, starting the writeback of each
/// [`WRITEBACK_STEP`] as it is written, so the final fsync finds little
/// left to write instead of the whole frame (30 ms of a 256 MiB put's
/// 0.65 s on this machine). Only the timing of the temp's own writes
/// changes: it is published after its fsync as before.
struct WritebackAhead<'a> {
    file: &'a File,
    written: u64,
    started: u64,
    enabled: bool,
}

impl Write for WritebackAhead<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.written += n as u64;
        if self.enabled && self.written - self.started >= WRITEBACK_STEP {
            // DONTNEED starts writeback of the dirty range without waiting
            // for it; a failure only loses the head start.
            let _ = rustix::fs::fadvise(
                self.file,
                self.started,
                std::num::NonZeroU64::new(self.written - self.started),
                rustix::fs::Advice::DontNeed,
            );
            self.started = self.written;
        }
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// The store's local staging directory plus the backend objects are
/// published to (the root's own directories, or a bucket).
#[derive(Debug)]
pub struct ObjectDirs {
    /// The store root.
    pub root: Dir,
    /// `tmp`: staging, always local.
    pub tmp: Dir,
    /// Where published frames and refs live.
    pub backend: Arc<dyn Backend>,
}

/// A complete object frame in `tmp/`, not yet published.
#[derive(Debug)]
pub struct Staged {
    /// Name inside `tmp/`.
    pub tmp_name: String,
    /// What it encodes.
    pub encoded: Encoded,
}

/// Creates a new object temp file in `tmp`.
fn create_temp(tmp: &Dir) -> Result<(String, File)> {
    let name = temp_name("obj");
    let f = tmp
        .create_new(&name, OBJECT_MODE)
        .map_err(|e| StoreError::io(tmp.join(&name), "create temp", e))?;
    Ok((name, f))
}

/// Stages an in-memory object whose digest is already known: one frame
/// into a new temp in `tmp` (not yet synced).
pub fn stage_small(
    tmp: &Dir,
    data: &[u8],
    digest: Digest,
    enc: &mut SmallEncoder,
) -> Result<Staged> {
    let frame = enc
        .encode(data)
        .map_err(|e| StoreError::io(tmp.path(), "compress", e))?;
    let (name, mut f) = create_temp(tmp)?;
    if let Err(e) = f.write_all(frame) {
        let _ = tmp.remove_file(&name);
        return Err(StoreError::io(tmp.join(&name), "write temp", e));
    }
    coffer_base::crash::point("temp_written");
    Ok(Staged {
        tmp_name: name,
        encoded: Encoded {
            digest,
            size: data.len() as u64,
            stored_size: frame.len() as u64,
        },
    })
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl ObjectDirs {
    /// Opens the staging directory below `root`, with `backend` for objects.
    pub fn open(root: Dir, backend: Arc<dyn Backend>) -> Result<Self> {
        let tmp = root
            .open_dir(TMP_DIR)
            .map_err(|e| match root.entry(TMP_DIR) {
                // A symlink (never followed) or a file where `tmp/` belongs.
                Ok(Some(found)) if found.kind != coffer_base::dir::EntryKind::Dir => {
                    StoreError::UnexpectedEntry {
                        path: root.join(TMP_DIR),
                        what: found.kind.describe(),
                    }
                }
                _ => StoreError::io(root.join(TMP_DIR), "open directory", e),
            })?;
        Ok(ObjectDirs { root, tmp, backend })
    }

    /// The object's location, for messages.
    pub fn object_path(&self, d: &Digest) -> PathBuf {
        PathBuf::from(format!("{}/{}", self.backend.location(), object_key(d)))
    }

    /// Whether a stored frame exists for `d` (no content check).
    pub fn exists(&self, d: &Digest) -> Result<bool> {
        Ok(self.backend.head(&object_key(d))?.is_some())
    }

    /// Whether a dedup hit may trust the stored frame of `d` to hold `size`
    /// raw bytes. On a local store the frame header is read (18 bytes): a
    /// frame that is empty, truncated before its header, or names another
    /// content size is moved to `quarantine/` and `false` returned, so the
    /// put publishes its good bytes instead of keeping the damage. (Damage
    /// past the header is caught by every read, which re-hashes.) A bucket
    /// is trusted on its listing: a header read there is a remote GET.
    pub fn present_intact(&self, d: &Digest, size: u64) -> Result<bool> {
        let key = object_key(d);
        if self.backend.head(&key)?.is_none() {
            return Ok(false);
        }
        if self.backend.shared() {
            return Ok(true);
        }
        let Some((mut body, _)) = self.backend.get(&key)? else {
            return Ok(false);
        };
        let mut header = [0u8; 18];
        let n = frame::read_full(&mut body, &mut header)
            .map_err(|e| StoreError::io(self.object_path(d), "read", e))?;
        drop(body);
        match zstd::zstd_safe::get_frame_content_size(&header[..n]) {
            Ok(Some(declared)) if declared == size => Ok(true),
            _ => {
                self.quarantine(d)?;
                Ok(false)
            }
        }
    }

    /// Creates a new temp file in `tmp/`.
    fn create_temp(&self) -> Result<(String, File)> {
        create_temp(&self.tmp)
    }

    /// Stages a streamed object of exactly `size` bytes (not yet synced);
    /// `subject` names the input in errors.
    pub fn stage_stream(
        &self,
        input: &mut dyn Read,
        size: u64,
        subject: &std::path::Path,
        progress: &dyn Fn(u64),
    ) -> Result<Staged> {
        let (name, f) = self.create_temp()?;
        let out = WritebackAhead {
            file: &f,
            written: 0,
            started: 0,
            // A bucket's temps are uploaded, not synced (see sync_staged).
            enabled: !self.backend.shared(),
        };
        let result = frame::encode_stream(input, size, out, progress);
        if result.is_ok() {
            coffer_base::crash::point("temp_written");
        }
        match result {
            Ok(encoded) => Ok(Staged {
                tmp_name: name,
                encoded,
            }),
            Err(e) => {
                let _ = self.tmp.remove_file(&name);
                Err(match e {
                    EncodeError::Read(e) => StoreError::io(subject, "read", e),
                    EncodeError::Write(e) => StoreError::io(self.tmp.join(&name), "write temp", e),
                    EncodeError::SizeChanged => StoreError::SourceChanged {
                        path: subject.to_path_buf(),
                    },
                })
            }
        }
    }

    /// Removes a staged temp that will not be published.
    pub fn discard(&self, staged: &Staged) {
        let _ = self.tmp.remove_file(&staged.tmp_name);
    }

    /// Publishes a staged temp under its digest, never replacing an existing
    /// object. Returns whether this call created the object (`false` is a
    /// dedup hit; the temp is consumed either way). The caller then makes
    /// the names durable ([`ObjectDirs::sync_published`]).
    pub fn publish(&self, staged: &Staged) -> Result<bool> {
        let key = object_key(&staged.encoded.digest);
        Ok(self.backend.publish(&key, &self.tmp, &staged.tmp_name)? == Put::Created)
    }

    /// Makes staged temps durable before any is published: one fsync for a
    /// single temp, one `syncfs` for several.
    pub fn sync_staged(&self, unsynced: &[&Staged]) -> Result<()> {
        if self.backend.shared() {
            // A bucket's temps are uploaded, never renamed into place: the
            // upload's reply, not the temp, makes an object durable.
            return Ok(());
        }
        match unsynced {
            [] => {}
            [one] => {
                let path = || self.tmp.join(&one.tmp_name);
                let f = self
                    .tmp
                    .open_file(&one.tmp_name)
                    .map_err(|e| StoreError::io(path(), "open temp", e))?;
                f.sync_all()
                    .map_err(|e| StoreError::io(path(), "fsync", e))?;
            }
            _ => self
                .tmp
                .sync_filesystem()
                .map_err(|e| StoreError::io(self.tmp.path(), "syncfs", e))?,
        }
        coffer_base::crash::point("temps_synced");
        Ok(())
    }

    /// Makes a batch's objects durable under their names: syncs the temps,
    /// publishes them all ([`ObjectDirs::publish_each`]),
    /// then syncs the published names of every object in `digests` (new,
    /// or found by dedup: an orphan left by a crashed writer may not be
    /// durable yet). Returns whether each publication created its object,
    /// with its index. On error, temps not published are removed.
    pub fn publish_durably(
        &self,
        staged: &[(usize, Staged)],
        digests: &[Digest],
    ) -> Result<Vec<(usize, bool)>> {
        let temps: Vec<&Staged> = staged.iter().map(|(_, s)| s).collect();
        if let Err(e) = self.sync_staged(&temps) {
            staged.iter().for_each(|(_, s)| self.discard(s));
            return Err(e);
        }
        let mut first_err = None;
        let mut created = Vec::with_capacity(staged.len());
        for ((i, r), (_, s)) in self.publish_each(staged).into_iter().zip(staged) {
            match r {
                Ok(c) => created.push((i, c)),
                Err(e) => {
                    self.discard(s);
                    first_err.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_err {
            return Err(e);
        }
        self.sync_published(digests)?;
        coffer_base::crash::point("shards_synced");
        Ok(created)
    }

    /// Publishes every staged temp (no-replace renames, or uploads), on two
    /// threads for a large local batch and several for a bucket; returns
    /// each entry's result (created or found) with its index, in order.
    /// The temps must be durable already ([`ObjectDirs::sync_staged`]).
    pub fn publish_each(&self, staged: &[(usize, Staged)]) -> Vec<(usize, Result<bool>)> {
        let publish_all = |part: &[(usize, Staged)]| -> Vec<(usize, Result<bool>)> {
            part.iter()
                .map(|(i, s)| {
                    let r = self.publish(s);
                    coffer_base::crash::point("published");
                    (*i, r)
                })
                .collect()
        };
        // Publications are independent: renames on two threads halve a
        // large local batch's wait; a bucket keeps several uploads in flight.
        let threads = if self.backend.shared() {
            REMOTE_PUBLISH_THREADS
        } else if staged.len() >= PARALLEL_PUBLISH_MIN {
            2
        } else {
            1
        };
        if threads > 1 && staged.len() > 1 {
            let per = staged.len().div_ceil(threads);
            std::thread::scope(|sc| {
                let handles: Vec<_> = staged
                    .chunks(per)
                    .map(|part| sc.spawn(|| publish_all(part)))
                    .collect();
                handles
                    .into_iter()
                    .flat_map(|h| h.join().expect("publishing thread panicked"))
                    .collect()
            })
        } else {
            publish_all(staged)
        }
    }

    /// Makes the published names of `digests` durable.
    pub fn sync_published(&self, digests: &[Digest]) -> Result<()> {
        let keys: Vec<String> = digests.iter().map(object_key).collect();
        self.backend.sync_published(&keys)
    }

    /// Opens the stored frame of `d` and its stored size.
    pub fn open_frame(&self, d: &Digest) -> Result<(Body, u64)> {
        match self.backend.get(&object_key(d))? {
            Some((body, meta)) => Ok((body, meta.size)),
            None => Err(StoreError::NotFound { digest: *d }),
        }
    }

    /// Moves the frame of `d` into `quarantine/` (never deleting it);
    /// returns the quarantine name.
    pub fn quarantine(&self, d: &Digest) -> Result<String> {
        let name = format!("{}.{}", d.hex(), now_ms());
        self.backend.quarantine(&object_key(d), &name)?;
        Ok(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writeback_ahead_passes_every_byte_and_starts_writeback_by_steps() {
        let dir = tempfile::tempdir().unwrap();
        let f = File::create(dir.path().join("t")).unwrap();
        let mut w = WritebackAhead {
            file: &f,
            written: 0,
            started: 0,
            enabled: true,
        };
        let block: Vec<u8> = (0..=255u8).cycle().take(3 << 20).collect();
        for _ in 0..7 {
            w.write_all(&block).unwrap();
        }
        w.flush().unwrap();
        assert_eq!(w.written, 21 << 20);
        // 3 MiB writes: writeback starts at 9 MiB and at 18 MiB written.
        assert_eq!(w.started, 18 << 20);
        let back = std::fs::read(dir.path().join("t")).unwrap();
        assert_eq!(back.len(), 21 << 20);
        assert!(back.chunks(3 << 20).all(|c| c == &block[..]));
    }
}
