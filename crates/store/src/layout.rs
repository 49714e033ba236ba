//! The store's directory layout, its `STORE-FORMAT` marker, the export key
//! and the store-wide lock.
//!
//! `STORE-FORMAT` is written last during `init` (temp + no-replace rename), so
//! a directory with that file is a complete store and one without it is not a
//! store at all; an interrupted `init` is finished by running it again.

use coffer_base::codes;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use rustix::fs::FlockOperation;

use crate::backend::{Backend, BackendConfig, Put};
use crate::backend::{OBJECTS_PREFIX, QUARANTINE_PREFIX};
use crate::catalog::{Catalog, Schema};
use crate::entries::{CATALOG_FILE, FORMAT_FILE, TMP_DIR};
use crate::error::{Result, StoreError};
use crate::objects::ObjectDirs;
use coffer_base::dir::Dir;
use coffer_base::temp::temp_name;

pub use crate::marker::{format_document, FORMAT_LOOSE, FORMAT_VERSION};
/// Directory of key material (mode 0700).
pub const KEYS_DIR: &str = "keys";
/// The per-store secret key for export identity rewriting (32 bytes, 0600).
pub const EXPORT_KEY_FILE: &str = "export.key";
/// The store-wide lock file.
pub const LOCK_FILE: &str = "lock";
/// Space set aside (a preallocated file) that gc gives back first, so a
/// full disk can be recovered with coffer itself.
pub const RESERVE_FILE: &str = "reserve";
/// Size of the reserve: room for the catalog's WAL index and a batch of gc
/// deletions.
pub const RESERVE_BYTES: u64 = 2 << 20;
/// Hard cap on the size of `STORE-FORMAT` we are willing to read.
const FORMAT_MAX_BYTES: u64 = 64 << 10;

/// Entries `init` tolerates in a root it completes (left by an earlier,
/// interrupted `init`).
const OWN_ENTRIES: &[&str] = &[
    "objects",
    "packs",
    "refs",
    "quarantine",
    TMP_DIR,
    KEYS_DIR,
    LOCK_FILE,
    RESERVE_FILE,
    CATALOG_FILE,
    "catalog.sqlite-wal",
    "catalog.sqlite-shm",
    "catalog.sqlite-journal",
];

/// Checks the `STORE-FORMAT` file of an opened root; returns the backend it
/// records and its version.
pub fn check_format(root: &Dir) -> Result<(BackendConfig, u64)> {
    let path = root.join(FORMAT_FILE);
    let f = match root.open_file(FORMAT_FILE) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(StoreError::NotAStore {
                path: root.path().to_path_buf(),
            })
        }
        Err(e) => return Err(StoreError::io(path, "open", e)),
    };
    let mut text = String::new();
    f.take(FORMAT_MAX_BYTES)
        .read_to_string(&mut text)
        .map_err(|e| StoreError::io(&path, "read", e))?;
    let bad = |detail: String| StoreError::UnsupportedFormat {
        path: path.clone(),
        detail,
    };
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    if v.get("format").and_then(|f| f.as_str()) != Some("coffer") {
        return Err(bad("\"format\" is not \"coffer\"".into()));
    }
    let version = match v.get("version").and_then(|f| f.as_u64()) {
        Some(v @ FORMAT_LOOSE..=FORMAT_VERSION) => v,
        other => {
            return Err(bad(format!(
                "version {other:?}; this build reads versions {FORMAT_LOOSE} to {FORMAT_VERSION}"
            )))
        }
    };
    Ok((
        BackendConfig::from_json(v.get("backend")).map_err(bad)?,
        version,
    ))
}

/// Marks a bucket as holding a coffer store (put-if-absent, as version 2:
/// a bucket store packs from its first batch), or checks that the marker
/// already there is one this build reads. Returns the bucket's version,
/// which the local marker then records: a store packs into a bucket only
/// when the bucket says so, since a bucket's marker is never replaced.
fn claim_backend(backend: &dyn Backend, config: &BackendConfig) -> Result<u64> {
    let doc = format_document(config, FORMAT_VERSION);
    if backend.put_bytes(FORMAT_FILE, doc.as_bytes())? == Put::Created {
        return Ok(FORMAT_VERSION);
    }
    let found =
        crate::backend::read_small(backend, FORMAT_FILE, FORMAT_MAX_BYTES)?.unwrap_or_default();
    let v: serde_json::Value = serde_json::from_slice(&found).unwrap_or_default();
    match (
        v.get("format").and_then(|f| f.as_str()),
        v.get("version").and_then(|f| f.as_u64()),
    ) {
        (Some("coffer"), Some(version @ FORMAT_LOOSE..=FORMAT_VERSION)) => Ok(version),
        _ => Err(StoreError::UnsupportedFormat {
            path: PathBuf::from(format!("{}/{FORMAT_FILE}", backend.location())),
            detail: "the bucket holds something that is not a coffer store of a version this build reads".into(),
        }),
    }
}

/// Writes `name` in `dir` with `bytes`, durably, never replacing an existing
/// file. Returns whether this call created it.
pub fn write_new_durable(dir: &Dir, name: &str, bytes: &[u8], mode: u32) -> Result<bool> {
    let renamed = coffer_base::publish::write_new(dir, name, dir, name, bytes, mode)?;
    dir.sync()
        .map_err(|e| StoreError::io(dir.path(), "fsync directory", e))?;
    Ok(renamed == coffer_base::dir::Renamed::Done)
}

/// Gives back the reserve of the store at `path` (a missing reserve, or a
/// path that is not a store, is left for the open that follows to judge).
pub fn release_reserve(path: &Path) -> Result<()> {
    let Ok(root) = Dir::open(path) else {
        return Ok(());
    };
    if let Ok(Some(coffer_base::dir::Entry {
        kind: coffer_base::dir::EntryKind::File,
        ..
    })) = root.entry(RESERVE_FILE)
    {
        root.remove_file(RESERVE_FILE)
            .map_err(|e| StoreError::io(root.join(RESERVE_FILE), "remove", e))?;
        root.sync()
            .map_err(|e| StoreError::io(root.path(), "fsync directory", e))?;
    }
    Ok(())
}

/// Sets the reserve aside if it is missing: a preallocated file built in
/// `tmp/` and renamed into the root. Best effort: on a disk too full to
/// hold it, returns false and leaves nothing behind.
pub fn set_aside_reserve(root: &Dir, tmp: &Dir) -> bool {
    if !matches!(root.entry(RESERVE_FILE), Ok(None)) {
        return false;
    }
    let name = temp_name(RESERVE_FILE);
    let Ok(f) = tmp.create_new(&name, 0o400) else {
        return false;
    };
    let made = rustix::fs::fallocate(&f, rustix::fs::FallocateFlags::empty(), 0, RESERVE_BYTES)
        .map_err(std::io::Error::from)
        .or_else(|_| {
            // Filesystems without fallocate: real zero blocks.
            let zeros = vec![0u8; 64 << 10];
            (0..RESERVE_BYTES / zeros.len() as u64).try_for_each(|_| (&f).write_all(&zeros))
        })
        .and_then(|()| f.sync_all());
    drop(f);
    let published = made.is_ok()
        && tmp.rename_no_replace(&name, root, RESERVE_FILE).ok()
            == Some(coffer_base::dir::Renamed::Done)
        && root.sync().is_ok();
    let _ = tmp.remove_file(&name);
    published
}

/// Creates a store at `path` (or completes an interrupted `init`). Returns
/// whether a new store was created; an existing store is left untouched.
pub fn init(path: &Path, backend: &BackendConfig, schema: &'static Schema) -> Result<bool> {
    std::fs::create_dir_all(path).map_err(|e| StoreError::io(path, "create directory", e))?;
    let root = Dir::open(path).map_err(|e| StoreError::io(path, "open", e))?;
    if root
        .entry(FORMAT_FILE)
        .map_err(|e| StoreError::io(root.join(FORMAT_FILE), "stat", e))?
        .is_some()
    {
        let (existing, _) = check_format(&root)?;
        if &existing != backend {
            return Err(StoreError::Conflict {
                code: codes::conflict::STORE_EXISTS,
                message: format!(
                    "{}: already a store with backend {}, not {}",
                    path.display(),
                    existing.describe(),
                    backend.describe()
                ),
                subject: path.display().to_string(),
            });
        }
        return Ok(false);
    }
    admit_root(&root, path)?;
    ensure(&root, TMP_DIR)?;
    let version = if *backend != BackendConfig::Local {
        claim_backend(&*backend.open(&root)?, backend)?
    } else {
        init_local_objects(&root)?;
        FORMAT_LOOSE
    };
    let keys = ensure(&root, KEYS_DIR)?;
    keys.set_mode(0o700)
        .map_err(|e| StoreError::io(keys.path(), "chmod", e))?;
    open_lock_file(&root)?;
    drop(Catalog::open(&root.join(CATALOG_FILE), schema)?);
    ensure_export_key(&keys)?;
    if let Ok(tmp) = root.open_dir(TMP_DIR) {
        set_aside_reserve(&root, &tmp);
    }
    root.sync()
        .map_err(|e| StoreError::io(path, "fsync directory", e))?;
    write_new_durable(
        &root,
        FORMAT_FILE,
        format_document(backend, version).as_bytes(),
        0o444,
    )
}

/// Refuses a root holding anything but a store's own entries, removes an
/// interrupted `init`'s temporary format file, and takes group and other
/// write permission off the root.
fn admit_root(root: &Dir, path: &Path) -> Result<()> {
    for (name, _) in root
        .entries()
        .map_err(|e| StoreError::io(path, "list", e))?
    {
        let ours =
            OWN_ENTRIES.contains(&name.as_str()) || name.starts_with(&format!("{FORMAT_FILE}."));
        if !ours {
            return Err(StoreError::RootNotEmpty {
                path: path.to_path_buf(),
                entry: name,
            });
        }
        if name.starts_with(&format!("{FORMAT_FILE}.")) {
            let _ = root.remove_file(&name);
        }
    }
    // A store found by searching must be writable only by its owner
    // (check_trusted): a umask of 002 must not make a new store one the
    // next command refuses.
    if let Ok(meta) = std::fs::metadata(path) {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o7777;
        if mode & 0o022 != 0 {
            root.set_mode(mode & !0o022)
                .map_err(|e| StoreError::io(path, "chmod", e))?;
        }
    }
    Ok(())
}

/// Writes the store's export key (32 random bytes, owner-only) unless it
/// is already there.
fn ensure_export_key(keys: &Dir) -> Result<()> {
    if keys
        .entry(EXPORT_KEY_FILE)
        .map_err(|e| StoreError::io(keys.join(EXPORT_KEY_FILE), "stat", e))?
        .is_none()
    {
        let mut key = [0u8; 32];
        getrandom::getrandom(&mut key).map_err(|e| {
            StoreError::io(
                keys.join(EXPORT_KEY_FILE),
                "random",
                std::io::Error::other(e.to_string()),
            )
        })?;
        write_new_durable(keys, EXPORT_KEY_FILE, &key, 0o600)?;
    }
    Ok(())
}

fn ensure(parent: &Dir, name: &str) -> Result<Dir> {
    parent
        .ensure_dir(name)
        .map_err(|e| StoreError::io(parent.join(name), "create directory", e))
}

/// The object and quarantine directories of a store that keeps its objects.
fn init_local_objects(root: &Dir) -> Result<()> {
    let (top, algo) = OBJECTS_PREFIX
        .trim_end_matches('/')
        .split_once('/')
        .expect("objects/<algorithm>");
    let objects = ensure(root, top)?;
    // The shards are made on demand (the local backend syncs each one's
    // entry before an object in it counts as durable): 256 empty
    // directories cost 1 MiB, more than the packs of 10,000 small files.
    ensure(&objects, algo)?;
    ensure(root, QUARANTINE_PREFIX.trim_end_matches('/'))?;
    Ok(())
}

/// Refuses a store root that someone else could have planted or can
/// change, as git refuses such a repository since CVE-2022-24765: a
/// symlink, a directory another user owns, or one its group or others may
/// write. A path that does not exist (or is no directory) passes, for the
/// open that follows to report. The command line applies it to the stores
/// it finds itself (searching upwards, `$COFFER_STORE`), never to one
/// named with `--store`.
pub fn check_trusted(path: &Path) -> Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(StoreError::io(path, "stat", e)),
    };
    use std::os::unix::fs::MetadataExt;
    let unsafe_store = |why: String| {
        Err(StoreError::UnsafeStore {
            path: path.to_path_buf(),
            why,
        })
    };
    if meta.file_type().is_symlink() {
        return unsafe_store("is a symbolic link".into());
    }
    if !meta.is_dir() {
        return Ok(());
    }
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return unsafe_store(format!(
            "is owned by uid {}, not by you (uid {me})",
            meta.uid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return unsafe_store(format!(
            "is writable by its group or by others (mode {:o})",
            meta.mode() & 0o7777
        ));
    }
    Ok(())
}

/// Opens the root and object directories of an existing store.
pub fn open_dirs(path: &Path) -> Result<ObjectDirs> {
    let root = Dir::open(path).map_err(|e| match e.kind() {
        // Nothing there, or a file where the store's directory should be.
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory => StoreError::NotAStore {
            path: path.to_path_buf(),
        },
        _ => StoreError::io(path, "open", e),
    })?;
    let (config, version) = check_format(&root)?;
    let backend = config.open(&root)?;
    ObjectDirs::open(root, backend, version)
}

fn open_lock_file(root: &Dir) -> Result<File> {
    match root.open_file(LOCK_FILE) {
        Ok(f) => Ok(f),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            match root.create_new(LOCK_FILE, 0o644) {
                Ok(f) => Ok(f),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => root
                    .open_file(LOCK_FILE)
                    .map_err(|e| StoreError::io(root.join(LOCK_FILE), "open", e)),
                Err(e) => Err(StoreError::io(root.join(LOCK_FILE), "create", e)),
            }
        }
        Err(e) => Err(StoreError::io(root.join(LOCK_FILE), "open", e)),
    }
}

/// How a process holds the store-wide lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LockMode {
    /// Not held.
    None,
    /// Writers (put, ingest) share it: publication itself needs no mutual
    /// exclusion, only protection from a concurrent gc.
    Shared,
    /// gc and fsck hold it alone, so no object is published while they decide
    /// what is unreachable or orphaned.
    Exclusive,
}

/// The store-wide advisory lock (`flock` on `<root>/lock`); released when
/// dropped or when the process dies.
#[derive(Debug)]
pub struct StoreLock {
    file: File,
    path: PathBuf,
    mode: LockMode,
}

impl StoreLock {
    /// Opens the lock file without taking the lock.
    pub fn open(root: &Dir) -> Result<Self> {
        Ok(StoreLock {
            file: open_lock_file(root)?,
            path: root.join(LOCK_FILE),
            mode: LockMode::None,
        })
    }

    /// Takes the lock in at least `mode`, blocking until it is granted.
    pub fn acquire(&mut self, mode: LockMode) -> Result<()> {
        if self.mode >= mode {
            return Ok(());
        }
        let op = match mode {
            LockMode::None => return Ok(()),
            LockMode::Shared => FlockOperation::LockShared,
            LockMode::Exclusive => FlockOperation::LockExclusive,
        };
        rustix::fs::flock(self.file.as_fd(), op)
            .map_err(|e| StoreError::io(&self.path, "lock", e.into()))?;
        self.mode = mode;
        Ok(())
    }

    /// The mode currently held.
    pub fn mode(&self) -> LockMode {
        self.mode
    }
}
