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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::backend::{object_key, Backend, Body, Put};
use crate::entries::TMP_DIR;
use crate::error::{Result, StoreError};
use crate::frame::{self, EncodeError, Encoded, SmallEncoder};
use crate::pack::{self, Entry, PackIndex, PackSet, Sealed};
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
    /// The indexes of the store's packs, loaded when first needed.
    pub packs: PackSet,
    /// The version in `STORE-FORMAT` (2 once the store holds a pack).
    version: AtomicU64,
}

/// What a batch's publication created: each loose object's index and
/// whether it is new, and whether each pack is new.
pub type Published = (Vec<(usize, bool)>, Vec<bool>);

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

/// Stages an already encoded frame (one taken back out of a pack temp)
/// as a loose object temp in `tmp` (not yet synced).
pub fn stage_frame(tmp: &Dir, frame: &[u8], entry: Entry) -> Result<Staged> {
    let (name, mut f) = create_temp(tmp)?;
    if let Err(e) = f.write_all(frame) {
        let _ = tmp.remove_file(&name);
        return Err(StoreError::io(tmp.join(&name), "write temp", e));
    }
    Ok(Staged {
        tmp_name: name,
        encoded: Encoded {
            digest: entry.digest,
            size: entry.size,
            stored_size: entry.stored,
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
    /// Opens the staging directory below `root`, with `backend` for
    /// objects, for a store of format `version`.
    pub fn open(root: Dir, backend: Arc<dyn Backend>, version: u64) -> Result<Self> {
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
        Ok(ObjectDirs {
            root,
            tmp,
            backend,
            packs: PackSet::default(),
            version: AtomicU64::new(version),
        })
    }

    /// The object's location, for messages.
    pub fn object_path(&self, d: &Digest) -> PathBuf {
        PathBuf::from(format!("{}/{}", self.backend.location(), object_key(d)))
    }

    /// Whether a stored frame exists for `d`, loose or packed (no content
    /// check).
    pub fn exists(&self, d: &Digest) -> Result<bool> {
        Ok(self.backend.head(&object_key(d))?.is_some() || self.packed(d, true)?.is_some())
    }

    /// The pack holding `d`, and where. With `refresh`, a miss looks for
    /// packs published since the set was loaded.
    pub fn packed(&self, d: &Digest, refresh: bool) -> Result<Option<(Arc<PackIndex>, Entry)>> {
        self.packs.find(&*self.backend, d, refresh)
    }

    /// Whether batches may write packs here: a local store (marked
    /// version 2 before its first pack), or a bucket whose marker is
    /// version 2 already (a bucket's marker is never replaced, so a
    /// version 1 bucket keeps taking loose objects only).
    pub fn packs_allowed(&self) -> bool {
        !self.backend.shared() || self.version.load(Ordering::Acquire) >= crate::marker::PACKED
    }

    /// Publishes sealed packs whose temps are durable (pack, then index,
    /// each no-clobber), first marking the store as format 2 if it is not
    /// yet; returns whether each pack is new. The caller makes the names
    /// durable before cataloging.
    pub fn publish_packs(&self, sealed: &[Sealed]) -> Result<Vec<bool>> {
        if sealed.is_empty() {
            return Ok(Vec::new());
        }
        if !self.backend.shared() && self.version.load(Ordering::Acquire) < crate::marker::PACKED {
            crate::marker::mark_packed(&self.root, &self.tmp)?;
            self.version.store(crate::marker::PACKED, Ordering::Release);
        }
        sealed
            .iter()
            .map(|s| pack::publish(&*self.backend, &self.tmp, s))
            .collect()
    }

    /// Adds a published pack to the set this process looks up.
    pub fn know_pack(&self, sealed: &Sealed) {
        let mut entries = sealed.pack.entries.clone();
        let bytes = pack::index::encode(sealed.pack.digest, sealed.pack.size, &mut entries);
        if let Ok(idx) = PackIndex::decode(sealed.pack.digest, bytes) {
            self.packs.add(idx);
        }
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
            // A packed frame cannot be moved aside as a damaged loose one
            // is, so a dedup hit on one is trusted only once it verifies
            // (it is small): a damaged one gets a good loose copy, which
            // reads prefer.
            let Some((_, e)) = self.packed(d, false)? else {
                return Ok(false);
            };
            // A bucket is trusted on its index, as on its listing.
            return Ok(e.size == size && (self.backend.shared() || self.packed_verifies(d, size)));
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

    /// Whether the frame `open_frame` finds for `d` decodes to `size`
    /// bytes hashing to `d`.
    fn packed_verifies(&self, d: &Digest, size: u64) -> bool {
        let Ok((body, stored)) = self.open_frame(d) else {
            return false;
        };
        let mut frame = Vec::with_capacity(stored as usize);
        if body.take(stored).read_to_end(&mut frame).is_err() {
            return false;
        }
        let Ok(mut dctx) = zstd::bulk::Decompressor::new() else {
            return false;
        };
        frame::frame_verifies(&mut dctx, &mut Vec::new(), &frame, d, size)
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

    /// Makes a batch's objects durable under their names: syncs the temps
    /// (and sealed packs), publishes them all ([`ObjectDirs::publish_each`],
    /// [`ObjectDirs::publish_packs`]), then syncs the published names of
    /// every object in `digests` (new, or found by dedup: an orphan left by
    /// a crashed writer may not be durable yet) and of the packs. Returns
    /// whether each publication created its object, with its index, and
    /// whether each pack is new. On error, temps not published are removed.
    pub fn publish_durably(
        &self,
        staged: &[(usize, Staged)],
        digests: &[Digest],
        sealed: &[Sealed],
    ) -> Result<Published> {
        let discard_all = || {
            staged.iter().for_each(|(_, s)| self.discard(s));
            sealed.iter().for_each(|s| s.discard(&self.tmp));
        };
        let temps: Vec<&Staged> = staged.iter().map(|(_, s)| s).collect();
        let synced = if sealed.is_empty() || self.backend.shared() {
            self.sync_staged(&temps)
        } else {
            // A pack and its index are two files at least: one syncfs.
            let synced = self
                .tmp
                .sync_filesystem()
                .map_err(|e| StoreError::io(self.tmp.path(), "syncfs", e));
            if synced.is_ok() {
                coffer_base::crash::point("temps_synced");
            }
            synced
        };
        if let Err(e) = synced {
            discard_all();
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
        let packs = match first_err {
            Some(e) => {
                sealed.iter().for_each(|s| s.discard(&self.tmp));
                return Err(e);
            }
            None => match self.publish_packs(sealed) {
                Ok(p) => p,
                Err(e) => {
                    sealed.iter().for_each(|s| s.discard(&self.tmp));
                    return Err(e);
                }
            },
        };
        let mut keys: Vec<String> = digests.iter().map(object_key).collect();
        for s in sealed {
            keys.extend(pack::published_keys(&s.pack.digest));
        }
        self.backend.sync_published(&keys)?;
        coffer_base::crash::point("shards_synced");
        sealed.iter().for_each(|s| self.know_pack(s));
        Ok((created, packs))
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

    /// Opens the stored frame of `d` and its stored size: the loose file
    /// if there is one, else its frame in a pack. On a bucket, a pack
    /// already known is tried first: a lookup there costs no request,
    /// where a missing loose key costs one.
    pub fn open_frame(&self, d: &Digest) -> Result<(Body, u64)> {
        if self.backend.shared() {
            if let Some((idx, e)) = self.packed(d, false)? {
                let key = pack::pack_key(&idx.pack());
                if let Some(body) = self.backend.get_range(&key, e.offset, e.stored)? {
                    return Ok((body, e.stored));
                }
            }
        }
        if let Some((body, meta)) = self.backend.get(&object_key(d))? {
            return Ok((body, meta.size));
        }
        // Twice at most: gc may have replaced the pack that held it since
        // the set was loaded (the object is then in the new one).
        for _ in 0..2 {
            let Some((idx, e)) = self.packed(d, true)? else {
                break;
            };
            if let Some(body) =
                self.backend
                    .get_range(&pack::pack_key(&idx.pack()), e.offset, e.stored)?
            {
                return Ok((body, e.stored));
            }
            self.packs.refresh(&*self.backend)?;
        }
        Err(StoreError::NotFound { digest: *d })
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
