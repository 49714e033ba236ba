//! [`Store`]: the content-addressed store as a library user sees it.
//!
//! Puts go through a [`Batch`] (a single put is a batch of one): every object
//! is staged in `tmp/`, made durable, published with a no-replace rename, its
//! shard directory made durable, and only then cataloged. So no catalog row
//! ever names an object that is not durable; a crash leaves at worst a temp
//! or an uncataloged (orphan) object, both reclaimed by gc.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::backend::{BackendConfig, Body};
use crate::catalog::{Catalog, CatalogStats, ObjectRow, Root, Schema};
use crate::entries::CATALOG_FILE;
use crate::error::{Result, StoreError};
use crate::frame::{self, Verdict, VerifyFailed, VerifyingDecoder, SMALL_OBJECT_MAX, WRITE_BUF};
use crate::layout::{self, LockMode, StoreLock};
use crate::objects::{now_ms, ObjectDirs, Staged};
use crate::refs::{self, RebuildReport, RefSpec};
use crate::stager::{Done, Stager};
use coffer_base::digest::Digest;

/// An open store.
pub struct Store {
    path: PathBuf,
    dirs: ObjectDirs,
    catalog: Catalog,
    lock: StoreLock,
    progress: Option<Arc<dyn Progress>>,
}

/// Receives the progress of long work, in bytes (a terminal's progress
/// bar). The store reports bytes read into batches and copied out of
/// objects; a layer that knows the work's size up front reports it.
pub trait Progress: Send + Sync {
    /// The work's total size, once known.
    fn total(&self, _bytes: u64) {}
    /// `bytes` more are done.
    fn advance(&self, bytes: u64);
}

/// How a command will use a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    Write,
}

/// What a put may check and record.
#[derive(Debug, Clone, Default)]
pub struct PutOptions {
    /// The digest the bytes must have; otherwise `integrity.digest_mismatch`
    /// and nothing is stored.
    pub expected_digest: Option<Digest>,
    /// The size the bytes must have; checked before reading when the input
    /// is a file.
    pub expected_size: Option<u64>,
    /// The root that keeps the object alive (`None`: gc may reclaim it after
    /// the grace period).
    pub root: Option<Root>,
}

/// The result of one put.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PutOutcome {
    /// The object's key.
    pub digest: Digest,
    /// Raw size.
    pub size: u64,
    /// Size of the stored frame (of this put's frame when it was new; of the
    /// existing one on a dedup hit, when known).
    pub stored_size: u64,
    /// True when this put created the object file; false on a dedup hit.
    pub created: bool,
}

impl Store {
    /// Creates a store at `path` (or completes an interrupted init) and opens
    /// it. The flag tells whether a new store was created.
    pub fn init(path: &Path, schema: &'static Schema) -> Result<(Store, bool)> {
        Store::init_with(path, &BackendConfig::Local, schema)
    }

    /// Like [`Store::init`], keeping objects and refs in `backend`.
    pub fn init_with(
        path: &Path,
        backend: &BackendConfig,
        schema: &'static Schema,
    ) -> Result<(Store, bool)> {
        let created = layout::init(path, backend, schema)?;
        Ok((Store::open(path, schema)?, created))
    }

    /// Opens an existing store for writing.
    pub fn open(path: &Path, schema: &'static Schema) -> Result<Store> {
        Store::open_with(path, Access::Write, schema)
    }

    /// Opens an existing store for a command that only reads: the catalog
    /// is opened read-only (see [`Catalog::open_for_reading`]), so reads
    /// work on a full disk. Writes through it fail with `io.read_only`.
    pub fn open_for_reading(path: &Path, schema: &'static Schema) -> Result<Store> {
        Store::open_with(path, Access::Read, schema)
    }

    /// Opens a store for gc: first gives back the space reserved for this
    /// moment (`reserve`), so that on a full disk the catalog can still
    /// open and record deletions. [`Store::gc`] sets the reserve aside
    /// again when it is done.
    pub fn open_for_gc(path: &Path, schema: &'static Schema) -> Result<Store> {
        layout::release_reserve(path)?;
        Store::open(path, schema)
    }

    fn open_with(path: &Path, access: Access, schema: &'static Schema) -> Result<Store> {
        let dirs = layout::open_dirs(path)?;
        // SQLite opens by path; make sure that path is our regular file and
        // not a symlink planted to redirect catalog writes.
        match dirs.root.entry(CATALOG_FILE) {
            Ok(Some(e)) if e.kind != coffer_base::dir::EntryKind::File => {
                return Err(StoreError::UnexpectedEntry {
                    path: dirs.root.join(CATALOG_FILE),
                    what: e.kind.describe(),
                })
            }
            Ok(_) => {}
            Err(e) => return Err(StoreError::io(dirs.root.join(CATALOG_FILE), "stat", e)),
        }
        let read_only = rustix::fs::fstatvfs(&dirs.root)
            .map(|st| st.f_flag.contains(rustix::fs::StatVfsMountFlags::RDONLY))
            .unwrap_or(false);
        let catalog = match (read_only, access) {
            (true, _) => Catalog::open_immutable(&path.join(CATALOG_FILE), schema)?,
            (false, Access::Read) => Catalog::open_for_reading(&path.join(CATALOG_FILE), schema)?,
            (false, Access::Write) => Catalog::open(&path.join(CATALOG_FILE), schema)?,
        };
        let lock = StoreLock::open(&dirs.root)?;
        Ok(Store {
            path: path.to_path_buf(),
            dirs,
            catalog,
            lock,
            progress: None,
        })
    }

    /// Applies every ref in the backend that the catalog has not applied,
    /// oldest record first, in one transaction: an empty catalog becomes the
    /// catalog of everything recorded in the backend.
    pub fn rebuild_catalog(&mut self) -> Result<RebuildReport> {
        let (dirs, catalog, lock) = self.parts();
        lock.acquire(LockMode::Shared)?;
        refs::rebuild(dirs, catalog)
    }

    /// What the backend's ref `spec.key` names, applying it to the catalog
    /// if the catalog lacks it. `None`: no such ref. Lets a command find a
    /// conflict (or an identical record from another store) before it
    /// uploads anything.
    pub fn adopt_ref(&mut self, spec: &RefSpec) -> Result<Option<Digest>> {
        let (dirs, catalog, lock) = self.parts();
        refs::adopt(dirs, catalog, spec, || lock.acquire(LockMode::Shared))
    }

    /// The store root.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the store's export key (`keys/export.key`) for reading, with
    /// its path for messages. Neither `keys/` nor the file may be a
    /// symlink, and the file must be regular (a FIFO is refused at once).
    pub fn open_export_key(&self) -> Result<(File, PathBuf)> {
        let keys = self.path.join(layout::KEYS_DIR);
        let path = keys.join(layout::EXPORT_KEY_FILE);
        // A failed open of something that is there names what it found.
        let refused = |dir: &coffer_base::dir::Dir, name: &str, path: &Path, e: io::Error| match dir
            .entry(name)
        {
            Ok(Some(found)) if e.kind() != io::ErrorKind::PermissionDenied => {
                StoreError::UnexpectedEntry {
                    path: path.to_path_buf(),
                    what: found.kind.describe(),
                }
            }
            _ => StoreError::io(path, "open", e),
        };
        let root = &self.dirs.root;
        let dir = root
            .open_dir(layout::KEYS_DIR)
            .map_err(|e| refused(root, layout::KEYS_DIR, &keys, e))?;
        let f = dir
            .open_file(layout::EXPORT_KEY_FILE)
            .map_err(|e| refused(&dir, layout::EXPORT_KEY_FILE, &path, e))?;
        Ok((f, path))
    }

    /// Whether other stores write to this store's backend too.
    pub fn shared_backend(&self) -> bool {
        self.dirs.backend.shared()
    }

    pub(crate) fn objects_dirs(&self) -> &ObjectDirs {
        &self.dirs
    }

    /// The backend objects and refs live in.
    pub fn backend(&self) -> &std::sync::Arc<dyn crate::backend::Backend> {
        &self.dirs.backend
    }

    /// The catalog (read access).
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// Writes rows of the layer's derived (unrecorded) tables; see
    /// [`Catalog::write_derived`].
    pub fn write_derived<T>(
        &mut self,
        write: impl FnOnce(&crate::rows::Writer<'_>) -> Result<T>,
    ) -> Result<T> {
        self.catalog.write_derived(write)
    }

    pub(crate) fn parts(&mut self) -> (&ObjectDirs, &mut Catalog, &mut StoreLock) {
        (&self.dirs, &mut self.catalog, &mut self.lock)
    }

    /// Takes the store lock in at least `mode` until the store is dropped:
    /// a command whose writes span more than one batch (a mirror into
    /// it) holds it shared throughout, so gc waits for the whole run.
    pub(crate) fn hold(&mut self, mode: LockMode) -> Result<()> {
        self.lock.acquire(mode)
    }

    /// Starts a batch of puts (takes the shared store lock).
    pub fn batch(&mut self) -> Result<Batch<'_>> {
        self.lock.acquire(LockMode::Shared)?;
        Ok(Batch {
            store: self,
            entries: Vec::new(),
            in_batch: HashMap::new(),
            stager: None,
            pack_temps: Vec::new(),
            buf: Vec::new(),
            progress: None,
            named: None,
        })
    }

    /// Reports the bytes every batch reads and every object copy writes to
    /// `p` from now on.
    pub fn set_progress(&mut self, p: Arc<dyn Progress>) {
        self.progress = Some(p);
    }

    /// Where long work reports its progress, if anywhere.
    pub fn progress(&self) -> Option<&dyn Progress> {
        self.progress.as_deref()
    }

    /// The progress sink itself, for work that also borrows the store's
    /// parts mutably.
    pub(crate) fn progress_handle(&self) -> Option<Arc<dyn Progress>> {
        self.progress.clone()
    }

    /// Puts one file; `progress` receives bytes read.
    pub fn put_file(
        &mut self,
        path: &Path,
        opts: PutOptions,
        progress: &dyn Fn(u64),
    ) -> Result<PutOutcome> {
        let mut b = self.batch()?;
        b.on_progress(progress);
        b.add_file(path, opts)?;
        Ok(b.commit()?.remove(0))
    }

    /// Puts a stream of unknown length (e.g. stdin); `progress` receives bytes read.
    pub fn put_reader(
        &mut self,
        input: &mut dyn Read,
        opts: PutOptions,
        progress: &dyn Fn(u64),
    ) -> Result<PutOutcome> {
        let mut b = self.batch()?;
        b.on_progress(progress);
        b.add_reader(input, Path::new("-"), opts)?;
        Ok(b.commit()?.remove(0))
    }

    /// True when the object is cataloged and its file is present (no content
    /// check; use [`Store::verify_object`] for that).
    pub fn has(&self, d: &Digest) -> Result<bool> {
        Ok(self.catalog.object(d)?.is_some() && self.file_exists(d)?)
    }

    /// Whether the backend holds the object's file (a stat, or a HEAD on
    /// a bucket), whatever the catalog says.
    pub(crate) fn file_exists(&self, d: &Digest) -> Result<bool> {
        self.dirs.exists(d)
    }

    /// Opens an object for streaming; the reader verifies digest and size and
    /// quarantines the file if they do not match.
    pub fn open_object(&self, d: &Digest) -> Result<ObjectReader<'_>> {
        let row = self.catalog.object(d)?;
        let (body, _) = match self.dirs.open_frame(d) {
            Err(StoreError::NotFound { .. }) if row.is_some() => {
                return Err(StoreError::MissingObject { digest: *d })
            }
            other => other?,
        };
        // Every read is bounded by a known size: the catalog's, or for an
        // uncataloged (orphan) file the frame header's, so a planted
        // decompression bomb stops at once instead of inflating forever.
        let (body, expected_size) = match &row {
            Some(r) => (body, r.size),
            None => self.frame_content_size(d, body)?,
        };
        let dec = VerifyingDecoder::new(body, *d, Some(expected_size))
            .map_err(|e| StoreError::io(self.dirs.object_path(d), "open", e))?;
        Ok(ObjectReader {
            dirs: &self.dirs,
            digest: *d,
            expected_size: Some(expected_size),
            dec,
        })
    }

    /// The content size recorded in an object's frame header; returns the
    /// body with the header bytes put back in front.
    fn frame_content_size(&self, d: &Digest, mut body: Body) -> Result<(Body, u64)> {
        let mut header = vec![0u8; 18];
        let n = frame::read_full(&mut body, &mut header)
            .map_err(|e| StoreError::io(self.dirs.object_path(d), "read", e))?;
        header.truncate(n);
        match zstd::zstd_safe::get_frame_content_size(&header) {
            Ok(Some(size)) => Ok((Box::new(io::Cursor::new(header).chain(body)), size)),
            _ => {
                let _ = self.dirs.quarantine(d);
                Err(StoreError::CorruptObject {
                    digest: *d,
                    detail: "frame header has no content size".into(),
                })
            }
        }
    }

    /// Streams a verified object into `out`. Bytes reach `out` as they
    /// decode; on a mismatch the error comes last and the object is
    /// quarantined. Use [`Store::get_to_new_file`] when a partial or bad
    /// copy must never be visible.
    pub fn copy_object(&self, d: &Digest, out: &mut dyn Write) -> Result<u64> {
        let mut r = self.open_object(d)?;
        // Sized to the object (the reader knows its size), up to WRITE_BUF: a
        // small object must not pay for zeroing a larger buffer. One byte
        // more than the object leaves room for the read that finds its end
        // and verifies it.
        let cap = r.expected_size.map_or(WRITE_BUF as u64, |n| {
            n.saturating_add(1).min(WRITE_BUF as u64)
        }) as usize;
        let mut buf = vec![0u8; cap];
        let mut n = 0u64;
        loop {
            let k = r.read_checked(&mut buf)?;
            if k == 0 {
                return Ok(n);
            }
            out.write_all(&buf[..k])
                .map_err(|e| StoreError::io("<output>", "write", e))?;
            n += k as u64;
            if let Some(p) = &self.progress {
                p.advance(k as u64);
            }
        }
    }

    /// Re-hashes an object; returns its size.
    pub fn verify_object(&self, d: &Digest) -> Result<u64> {
        self.copy_object(d, &mut io::sink())
    }

    /// Writes a verified copy of an object to `dest`, which must not exist:
    /// the bytes go to a temp file beside it, are verified and fsynced, and
    /// only then appear under `dest` (never replacing anything).
    pub fn get_to_new_file(&self, d: &Digest, dest: &Path) -> Result<u64> {
        let mut n = 0;
        coffer_base::publish::write_new_file(dest, |f| -> Result<()> {
            n = self.copy_object(d, f)?;
            Ok(())
        })?;
        Ok(n)
    }

    /// Every stored object, one at a time (see
    /// [`Catalog::each_stored_object`]).
    pub fn each_object(&self, f: &mut dyn FnMut(ObjectRow) -> Result<()>) -> Result<()> {
        self.catalog.each_stored_object(f)
    }

    /// Catalog totals.
    pub fn stats(&self) -> Result<CatalogStats> {
        self.catalog.stats()
    }
}

/// A streaming, verifying reader of one object.
pub struct ObjectReader<'s> {
    dirs: &'s ObjectDirs,
    digest: Digest,
    expected_size: Option<u64>,
    dec: VerifyingDecoder<Body>,
}

impl ObjectReader<'_> {
    /// Like `read`, but with the store's typed error; quarantines the object
    /// on a mismatch.
    pub fn read_checked(&mut self, buf: &mut [u8]) -> Result<usize> {
        loop {
            match self.dec.read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.fail(e)),
            }
        }
    }

    fn fail(&self, e: io::Error) -> StoreError {
        let verdict = e
            .get_ref()
            .and_then(|i| i.downcast_ref::<VerifyFailed>())
            .map(|v| v.0.clone());
        let Some(verdict) = verdict else {
            return StoreError::io(self.dirs.object_path(&self.digest), "read", e);
        };
        // The bad file leaves the object namespace so it is never served
        // again; quarantine never deletes it.
        let _ = self.dirs.quarantine(&self.digest);
        let subject = self.digest.to_string();
        match verdict {
            Verdict::WrongDigest(actual) => StoreError::DigestMismatch {
                subject,
                expected: self.digest,
                actual,
            },
            Verdict::WrongSize(actual) => StoreError::SizeMismatch {
                subject,
                expected: self.expected_size.unwrap_or_default(),
                actual,
            },
            Verdict::Corrupt(detail) => StoreError::CorruptObject {
                digest: self.digest,
                detail,
            },
            Verdict::Good => unreachable!("a good verdict is not an error"),
        }
    }
}

impl Read for ObjectReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_checked(buf).map_err(io::Error::other)
    }
}

/// One entry of a batch.
struct Entry {
    digest: Digest,
    size: u64,
    staged: Option<Staged>,
    /// Already uploaded by the stager: the stored size and whether the
    /// upload created the object.
    published: Option<(u64, bool)>,
    /// The stager job writing this entry's temp, until commit collects it.
    job: Option<u64>,
    /// Appended to the batch's pack temp number `.0`, at `.1`.
    packed: Option<(usize, crate::pack::Entry)>,
    root: Option<Root>,
}

/// A group of puts that share one durability pass and one catalog
/// transaction. Memory stays bounded: small inputs are read one at a time
/// into a reused buffer, large ones are streamed; the batch keeps only
/// metadata. Temps not committed are removed when the batch is dropped.
pub struct Batch<'s> {
    store: &'s mut Store,
    entries: Vec<Entry>,
    in_batch: HashMap<Digest, usize>,
    stager: Option<Stager>,
    /// Pack temps the stager wrote, until commit publishes or unpacks them.
    pack_temps: Vec<crate::pack::PackTemp>,
    buf: Vec<u8>,
    progress: Option<Box<dyn Fn(u64) + 's>>,
    named: Option<RefSpec>,
}

impl<'s> Batch<'s> {
    /// Reports bytes consumed to `f` as inputs are read.
    pub fn on_progress(&mut self, f: impl Fn(u64) + 's) {
        self.progress = Some(Box::new(f));
    }

    /// Makes the commit create the named ref `spec` (put-if-absent) for
    /// its record; another target under that key fails the commit.
    pub fn name_ref(&mut self, spec: RefSpec) {
        self.named = Some(spec);
    }

    /// Number of puts in the batch.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when nothing was added.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn tick(&self, n: u64) {
        match (&self.progress, &self.store.progress) {
            (Some(p), _) => p(n),
            (None, Some(p)) => p.advance(n),
            (None, None) => {}
        }
    }

    /// Adds a regular file. The file must not change while it is read.
    pub fn add_file(&mut self, path: &Path, opts: PutOptions) -> Result<(Digest, u64)> {
        let f = coffer_base::input::open(path)?;
        self.add_open_file(f, path, opts)
    }

    /// Adds a regular file already opened (through a directory handle);
    /// `path` names it in messages. The file must not change while it is
    /// read.
    pub fn add_open_file(
        &mut self,
        mut f: File,
        path: &Path,
        opts: PutOptions,
    ) -> Result<(Digest, u64)> {
        let before = f.metadata().map_err(|e| StoreError::io(path, "stat", e))?;
        let size = before.len();
        if let Some(expected) = opts.expected_size.filter(|&s| s != size) {
            return Err(StoreError::SizeMismatch {
                subject: path.display().to_string(),
                expected,
                actual: size,
            });
        }
        let r = self.add_stream(&mut f, size, path, opts)?;
        let after = f.metadata().map_err(|e| StoreError::io(path, "stat", e))?;
        if after.len() != size
            || after.mtime() != before.mtime()
            || after.mtime_nsec() != before.mtime_nsec()
        {
            self.drop_last();
            return Err(StoreError::SourceChanged {
                path: path.to_path_buf(),
            });
        }
        Ok(r)
    }

    /// Adds a stream of unknown length. Up to 1 MiB is buffered in memory;
    /// longer streams are spooled to `tmp/` first, because the frame header
    /// records the content size.
    pub fn add_reader(
        &mut self,
        input: &mut dyn Read,
        subject: &Path,
        opts: PutOptions,
    ) -> Result<(Digest, u64)> {
        let mut head = vec![0u8; SMALL_OBJECT_MAX + 1];
        let n =
            frame::read_full(input, &mut head).map_err(|e| StoreError::io(subject, "read", e))?;
        head.truncate(n);
        if n <= SMALL_OBJECT_MAX {
            return self.add_stream(&mut &head[..], n as u64, subject, opts);
        }
        let tmp = &self.store.dirs.tmp;
        let spool_name = coffer_base::temp::temp_name("spool");
        let spooled = (|| -> Result<(File, u64)> {
            let mut w = tmp
                .create_new(&spool_name, 0o600)
                .map_err(|e| StoreError::io(tmp.join(&spool_name), "create spool", e))?;
            w.write_all(&head)
                .map_err(|e| StoreError::io(tmp.join(&spool_name), "write spool", e))?;
            let rest = io::copy(input, &mut w).map_err(|e| StoreError::io(subject, "read", e))?;
            drop(w);
            let r = tmp
                .open_file(&spool_name)
                .map_err(|e| StoreError::io(tmp.join(&spool_name), "open spool", e))?;
            Ok((r, n as u64 + rest))
        })();
        let result = spooled.and_then(|(mut r, size)| self.add_stream(&mut r, size, subject, opts));
        let _ = self.store.dirs.tmp.remove_file(&spool_name);
        result
    }

    /// Reads a small object whole, hashes it, and hands it to the stager
    /// unless the batch or the store already holds it: its digest, and
    /// the stager's job for it.
    fn add_small(
        &mut self,
        input: &mut dyn Read,
        size: u64,
        subject: &Path,
        opts: &PutOptions,
    ) -> Result<(Digest, Option<u64>)> {
        self.buf.resize(size as usize + 1, 0);
        let n = frame::read_full(input, &mut self.buf)
            .map_err(|e| StoreError::io(subject, "read", e))?;
        if n as u64 != size {
            return Err(StoreError::SourceChanged {
                path: subject.to_path_buf(),
            });
        }
        self.tick(n as u64);
        let digest = Digest::of(&self.buf[..n]);
        check_expected(opts, subject, digest)?;
        if self.in_batch.contains_key(&digest) || self.found_stored(&digest, size)? {
            return Ok((digest, None));
        }
        if self.stager.is_none() {
            let dirs = &self.store.dirs;
            let tmp = dirs
                .tmp
                .try_clone()
                .map_err(|e| StoreError::io(dirs.tmp.path(), "dup", e))?;
            // A bucket that takes packs gets them like a local store (one
            // upload carries many objects); one that does not gets each
            // object uploaded as soon as it is compressed.
            let pack = dirs.packs_allowed();
            let upload_to = (dirs.backend.shared() && !pack).then(|| dirs.backend.clone());
            self.stager = Some(Stager::start(tmp, upload_to, pack)?);
        }
        let data = self.buf[..n].to_vec();
        let stager = self.stager.as_mut().expect("just started");
        Ok((digest, Some(stager.submit(data, digest))))
    }

    /// Adds exactly `size` bytes from a stream (the caller knows the size,
    /// e.g. from `fstat`); any other count is `io.source_changed`.
    pub fn add_stream(
        &mut self,
        input: &mut dyn Read,
        size: u64,
        subject: &Path,
        opts: PutOptions,
    ) -> Result<(Digest, u64)> {
        // A safe point: the batch has committed nothing yet, and dropping
        // it removes what it staged.
        coffer_base::interrupt::check()?;
        if self.stager.as_ref().is_some_and(Stager::failed) {
            // The batch cannot commit: stop reading inputs, and return the
            // stager's error.
            self.collect_staged()?;
        }
        let dirs = &self.store.dirs;
        let changed = || StoreError::SourceChanged {
            path: subject.to_path_buf(),
        };
        let mut job = None;
        let (digest, staged) = if size <= SMALL_OBJECT_MAX as u64 {
            let digest;
            (digest, job) = self.add_small(input, size, subject, &opts)?;
            (digest, None)
        } else if self.known_expected(&opts, size)? {
            // The caller names an object the store already holds: hashing
            // the input proves it is those bytes, and nothing is encoded
            // or staged (as for a small object found stored).
            let tick = |n| self.tick(n);
            let digest = coffer_base::digest::hash_exact(input, size, &tick)
                .map_err(|e| StoreError::io(subject, "read", e))?
                .ok_or_else(changed)?;
            check_expected(&opts, subject, digest)?;
            (digest, None)
        } else {
            let tick = |n| self.tick(n);
            let staged = dirs.stage_stream(input, size, subject, &tick)?;
            let digest = staged.encoded.digest;
            if let Err(e) = check_expected(&opts, subject, digest).and_then(|()| {
                // A damaged frame under this name is moved aside, so the
                // publication below replaces nothing and stores good bytes.
                // (A bucket's publication decides for itself: a conditional
                // put, or a multipart upload after a `head`.)
                if dirs.backend.shared() {
                    Ok(())
                } else {
                    dirs.present_intact(&digest, size).map(drop)
                }
            }) {
                dirs.discard(&staged);
                return Err(e);
            }
            (digest, Some(staged))
        };
        self.in_batch.entry(digest).or_insert(self.entries.len());
        self.entries.push(Entry {
            digest,
            size,
            staged,
            published: None,
            job,
            packed: None,
            root: opts.root,
        });
        Ok((digest, size))
    }

    /// Whether the object `opts` expects is already in this batch or
    /// stored (intact, with this size): its input then only needs hashing.
    fn known_expected(&self, opts: &PutOptions, size: u64) -> Result<bool> {
        let Some(d) = opts.expected_digest else {
            return Ok(false);
        };
        match self.in_batch.get(&d) {
            Some(&i) => Ok(self.entries[i].size == size),
            None => self.found_stored(&d, size),
        }
    }

    /// Whether a small object is already stored, so staging it can be
    /// skipped. On a local store the frame is checked (and a damaged one
    /// moved aside). A bucket is asked (a remote `head`) only when the
    /// catalog names the object: for a digest it has never seen, a round
    /// trip per object would cost more than it saves, and the conditional
    /// put that publishes it finds an existing key anyway.
    fn found_stored(&self, d: &Digest, size: u64) -> Result<bool> {
        let dirs = &self.store.dirs;
        if dirs.backend.shared() && self.store.catalog.object(d)?.is_none() {
            return Ok(false);
        }
        dirs.present_intact(d, size)
    }

    fn drop_last(&mut self) {
        if let Some(e) = self.entries.pop() {
            if let Some(s) = &e.staged {
                self.store.dirs.discard(s);
            }
            if self.in_batch.get(&e.digest) == Some(&self.entries.len()) {
                self.in_batch.remove(&e.digest);
            }
        }
    }

    /// Makes every object durable, publishes it, and catalogs the batch in one
    /// transaction. Returns one outcome per add, in order.
    pub fn commit(self) -> Result<Vec<PutOutcome>> {
        self.commit_with(|_| Ok(()))
    }

    /// Each add's stored size and whether it created its object, as far
    /// as its publication or its staging already tell (0 and false
    /// otherwise).
    fn known_outcomes(&self) -> (Vec<u64>, Vec<bool>) {
        let mut created = vec![false; self.entries.len()];
        let mut stored = vec![0u64; self.entries.len()];
        for (i, e) in self.entries.iter().enumerate() {
            if let Some((s, c)) = e.published {
                (stored[i], created[i]) = (s, c);
            }
            if let Some(s) = &e.staged {
                stored[i] = s.encoded.stored_size;
            }
            if let Some((_, p)) = &e.packed {
                stored[i] = p.stored;
            }
        }
        (stored, created)
    }

    /// The batch's catalog rows, completing each object's stored size
    /// where neither its staging nor its publication gave one: from an
    /// earlier add of the same bytes in the batch, else from the catalog.
    fn catalog_rows(&self, stored: &mut [u64], now: i64) -> Result<Vec<(ObjectRow, Option<Root>)>> {
        let mut rows = Vec::with_capacity(self.entries.len());
        for (i, e) in self.entries.iter().enumerate() {
            if stored[i] == 0 {
                stored[i] = match self.in_batch.get(&e.digest) {
                    Some(&first) if stored[first] > 0 => stored[first],
                    _ => self.existing_stored_size(&e.digest)?,
                };
            }
            rows.push((
                ObjectRow {
                    digest: e.digest,
                    size: e.size,
                    stored_size: stored[i],
                    first_seen_ms: now,
                },
                e.root.clone(),
            ));
        }
        Ok(rows)
    }

    /// Like [`Batch::commit`], running `extra` inside the catalog transaction
    /// that records the objects; if it fails, no row is written (the
    /// published files stay as orphans for gc).
    pub fn commit_with(
        mut self,
        extra: impl FnOnce(&crate::rows::Writer<'_>) -> Result<()>,
    ) -> Result<Vec<PutOutcome>> {
        self.collect_staged()?;
        // The last safe point: past it, the batch publishes and commits.
        coffer_base::interrupt::check()?;
        let sealed = self.seal_or_unpack()?;
        let (mut stored, mut created) = self.known_outcomes();
        let staged: Vec<(usize, Staged)> = self
            .entries
            .iter_mut()
            .enumerate()
            .filter_map(|(i, e)| e.staged.take().map(|s| (i, s)))
            .collect();
        let now = now_ms();
        let rows = match self.catalog_rows(&mut stored, now) {
            Ok(rows) => rows,
            Err(err) => {
                staged.iter().for_each(|(_, s)| self.store.dirs.discard(s));
                sealed.iter().for_each(|s| s.discard(&self.store.dirs.tmp));
                return Err(err);
            }
        };
        let digests: Vec<Digest> = self.entries.iter().map(|e| e.digest).collect();
        let named = self.named.as_ref();
        let Store { dirs, catalog, .. } = &mut *self.store;
        let dirs = &*dirs;
        let recorded = catalog.schema().recorded;
        let publish = || dirs.publish_durably(&staged, &digests, &sealed);
        // A local store's objects become durable (syncs and renames, mostly
        // waiting on the disk) on a thread of their own while the rows are
        // inserted into the still uncommitted transaction and their record
        // is staged: the record and its ref are published, and the rows
        // committed, only once every object is durable, so what reaches the
        // disk, and in what order, is as documented. A bucket's uploads are
        // not overlapped: the catalog's write lock is not held across the
        // network.
        let published = std::thread::scope(|sc| -> Result<crate::objects::Published> {
            let mut done = None;
            let overlapped = if dirs.backend.shared() {
                done = Some(publish()?);
                None
            } else {
                Some(sc.spawn(publish))
            };
            let sealer = crate::refs::Sealer {
                dirs,
                recorded,
                named,
                created_ms: now,
            };
            let durable = || {
                if let Some(h) = overlapped {
                    done = Some(h.join().expect("publishing thread panicked")?);
                }
                Ok(())
            };
            catalog.record_with(&rows, extra, durable, Some(&sealer))?;
            Ok(done.expect("published before the catalog committed"))
        })?;
        let (loose, packs) = published;
        for (i, c) in loose {
            created[i] = c;
        }
        for (i, e) in self.entries.iter().enumerate() {
            if let Some((p, _)) = e.packed {
                created[i] = packs[p];
            }
        }
        Ok(self
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| PutOutcome {
                digest: e.digest,
                size: e.size,
                stored_size: stored[i],
                created: created[i],
            })
            .collect())
    }

    /// Waits for the stager and attaches its temps to their entries; a temp
    /// whose entry was dropped meanwhile is removed.
    fn collect_staged(&mut self) -> Result<()> {
        let Some(stager) = self.stager.take() else {
            return Ok(());
        };
        let mut first_err = None;
        let base = self.pack_temps.len();
        let mut by_job: HashMap<u64, usize> = HashMap::new();
        for (i, e) in self.entries.iter().enumerate() {
            if let Some(j) = e.job {
                by_job.insert(j, i);
            }
        }
        let (outcomes, packs) = stager.finish();
        self.pack_temps.extend(packs);
        for (id, r) in outcomes {
            match (r, by_job.get(&id)) {
                (Ok(Done::Packed { pack, entry, .. }), Some(&i)) => {
                    self.entries[i].packed = Some((base + pack, entry));
                    self.entries[i].job = None;
                }
                // Its frame stays in the pack, listed but never cataloged:
                // dead space that gc's pack rewrite drops.
                (Ok(Done::Packed { .. }), None) => {}
                (Ok(Done::Staged(staged)), Some(&i)) => {
                    self.entries[i].staged = Some(staged);
                    self.entries[i].job = None;
                }
                (Ok(Done::Published { encoded, created }), Some(&i)) => {
                    self.entries[i].published = Some((encoded.stored_size, created));
                    self.entries[i].job = None;
                }
                (Ok(Done::Staged(staged)), None) => self.store.dirs.discard(&staged),
                // Uploaded for an entry dropped meanwhile: an orphan for gc.
                (Ok(Done::Published { .. }), None) => {}
                (Err(e), _) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        if first_err.is_none() && self.entries.iter().any(|e| e.job.is_some()) {
            // Jobs are skipped only after one failed, whose error is above.
            first_err = Some(StoreError::CatalogData(
                "the stager returned no outcome for a job".into(),
            ));
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Packs the batch's new small objects when there are enough of them
    /// ([`crate::pack::UNPACK_LIMIT`]): seals the pack temps (index temps
    /// beside them). With fewer, their frames are copied out into loose
    /// temps and the pack temps removed. Either way no pack temp is left.
    fn seal_or_unpack(&mut self) -> Result<Vec<crate::pack::Sealed>> {
        let packs = std::mem::take(&mut self.pack_temps);
        let tmp = &self.store.dirs.tmp;
        let packed = self.entries.iter().filter(|e| e.packed.is_some()).count();
        if packed >= crate::pack::UNPACK_LIMIT {
            let mut sealed = Vec::with_capacity(packs.len());
            let mut packs = packs.into_iter();
            for p in packs.by_ref() {
                match p.seal(tmp) {
                    Ok(s) => sealed.push(s),
                    Err(e) => {
                        sealed
                            .iter()
                            .for_each(|s: &crate::pack::Sealed| s.discard(tmp));
                        packs.for_each(|p| p.discard(tmp));
                        return Err(e);
                    }
                }
            }
            return Ok(sealed);
        }
        let unpacked = (|| -> Result<()> {
            for e in self.entries.iter_mut() {
                let Some((p, entry)) = e.packed else {
                    continue;
                };
                let frame = packs[p].read_frame(tmp, &entry)?;
                e.staged = Some(crate::objects::stage_frame(tmp, &frame, entry)?);
                e.packed = None;
            }
            Ok(())
        })();
        packs.iter().for_each(|p| p.discard(tmp));
        unpacked.map(|()| Vec::new())
    }

    fn existing_stored_size(&self, d: &Digest) -> Result<u64> {
        if let Some(row) = self.store.catalog.object(d)? {
            return Ok(row.stored_size);
        }
        match self
            .store
            .dirs
            .backend
            .head(&crate::backend::object_key(d))?
        {
            Some(meta) => Ok(meta.size),
            None => match self.store.dirs.packed(d, false)? {
                Some((_, e)) => Ok(e.stored),
                None => Err(StoreError::NotFound { digest: *d }),
            },
        }
    }
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        let _ = self.collect_staged();
        for e in &self.entries {
            if let Some(s) = &e.staged {
                self.store.dirs.discard(s);
            }
        }
        for p in &self.pack_temps {
            p.discard(&self.store.dirs.tmp);
        }
    }
}

fn check_expected(opts: &PutOptions, subject: &Path, actual: Digest) -> Result<()> {
    match opts.expected_digest {
        Some(expected) if expected != actual => Err(StoreError::DigestMismatch {
            subject: subject.display().to_string(),
            expected,
            actual,
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::PARALLEL_PUBLISH_MIN;

    fn store() -> (tempfile::TempDir, Store) {
        let t = tempfile::tempdir().unwrap();
        let (s, created) = Store::init(&t.path().join("s"), &Schema::CAS).unwrap();
        assert!(created);
        (t, s)
    }

    fn add(b: &mut Batch<'_>, data: &[u8]) -> Digest {
        b.add_stream(
            &mut &data[..],
            data.len() as u64,
            Path::new("x"),
            PutOptions::default(),
        )
        .unwrap()
        .0
    }

    #[test]
    fn a_large_batch_of_small_objects_publishes_every_object() {
        let (_t, mut s) = store();
        let mut b = s.batch().unwrap();
        let mut digests = Vec::new();
        for i in 0..(PARALLEL_PUBLISH_MIN + 100) {
            digests.push(add(
                &mut b,
                format!("object {i} ").repeat(i % 50 + 1).as_bytes(),
            ));
        }
        add(&mut b, b"object 0 "); // a duplicate inside the batch
        let out = b.commit().unwrap();
        assert_eq!(out.len(), digests.len() + 1);
        assert!(out[..digests.len()].iter().all(|o| o.created));
        assert!(!out.last().unwrap().created);
        assert_eq!(out.last().unwrap().stored_size, out[0].stored_size);
        for o in &out {
            assert_eq!(s.verify_object(&o.digest).unwrap(), o.size);
        }
        let report = s.fsck(true, &|_| {}).unwrap();
        assert!(report.findings.is_empty(), "{:?}", report.findings);
    }

    #[test]
    fn a_batch_whose_publication_fails_catalogs_nothing() {
        // The rows are inserted while the objects are published; the
        // transaction must still wait for every publication and commit
        // nothing (no row, no record, no ref) when one fails.
        let (t, mut s) = store();
        let mut b = s.batch().unwrap();
        let digests: Vec<Digest> = (0..PARALLEL_PUBLISH_MIN + 100)
            .map(|i| add(&mut b, format!("doomed {i}").as_bytes()))
            .collect();
        // The batch packs its objects: a file where `packs/` belongs
        // makes the publication fail.
        std::fs::write(t.path().join("s/packs"), b"not a directory").unwrap();
        let err = match b.commit() {
            Ok(_) => panic!("the batch committed without one of its objects"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains("packs"), "{err}");
        assert_eq!(
            std::fs::read_dir(t.path().join("s/tmp")).unwrap().count(),
            0
        );
        for d in &digests {
            assert!(s.catalog.object(d).unwrap().is_none(), "{d} was cataloged");
        }
        let refs = t.path().join("s/refs");
        let written = walkdir::WalkDir::new(&refs)
            .into_iter()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_file())
            .count();
        assert_eq!(written, 0, "a ref was written for an uncommitted batch");
    }

    #[test]
    fn a_dropped_batch_leaves_no_temp_and_no_object() {
        let (t, mut s) = store();
        let mut b = s.batch().unwrap();
        for i in 0..100 {
            add(&mut b, format!("small {i}").as_bytes());
        }
        add(&mut b, &vec![7u8; 3 << 20]);
        drop(b);
        assert_eq!(
            std::fs::read_dir(t.path().join("s/tmp")).unwrap().count(),
            0
        );
        let mut n = 0;
        s.each_object(&mut |_| {
            n += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(n, 0);
        assert!(!s.has(&Digest::of(b"small 1")).unwrap());
    }
}
