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
use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::digest::Digest;
use crate::dir::{Dir, EntryKind, Renamed};
use crate::error::{Result, StoreError};
use crate::frame::{self, EncodeError, Encoded, SmallEncoder};

/// Directory of object shards, relative to the store root.
pub const OBJECTS_DIR: &str = "objects/sha256";
/// Staging directory.
pub const TMP_DIR: &str = "tmp";
/// Where objects that failed verification are moved.
pub const QUARANTINE_DIR: &str = "quarantine";
/// Mode of published object files: nobody writes an object after publication.
const OBJECT_MODE: u32 = 0o444;

/// Open handles on the store's object directories.
#[derive(Debug)]
pub struct ObjectDirs {
    /// The store root.
    pub root: Dir,
    /// `objects/sha256`.
    pub objects: Dir,
    /// `tmp`.
    pub tmp: Dir,
    /// `quarantine`.
    pub quarantine: Dir,
    /// Shard directories opened so far, by first digest byte. Handles stay
    /// valid even if the name is later swapped for a symlink.
    shards: Mutex<Vec<Option<Arc<Dir>>>>,
}

/// A complete object frame in `tmp/`, not yet published.
#[derive(Debug)]
pub struct Staged {
    /// Name inside `tmp/`.
    pub tmp_name: String,
    /// What it encodes.
    pub encoded: Encoded,
    /// Whether its data was already fsynced.
    pub synced: bool,
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh temp name: `<prefix>.<pid>.<n>.<16 hex>`. The random part is
/// drawn once per process (names must not be guessable by other local
/// users); the counter makes each name unique within the process, and
/// `O_EXCL` guarantees no name is ever reused.
pub fn temp_name(prefix: &str) -> String {
    static PROCESS_TAG: std::sync::OnceLock<(u32, String)> = std::sync::OnceLock::new();
    let (pid, tag) = PROCESS_TAG.get_or_init(|| {
        let mut r = [0u8; 8];
        getrandom::getrandom(&mut r).expect("OS random source unavailable");
        (std::process::id(), hex::encode(r))
    });
    format!(
        "{prefix}.{pid}.{}.{tag}",
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    )
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
    crate::crash::point("temp_written");
    Ok(Staged {
        tmp_name: name,
        encoded: Encoded {
            digest,
            size: data.len() as u64,
            stored_size: frame.len() as u64,
        },
        synced: false,
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
    /// Opens the object directories below `root`.
    pub fn open(root: Dir) -> Result<Self> {
        let open = |path: &str| -> Result<Dir> {
            let mut d: Option<Dir> = None;
            for part in path.split('/') {
                let parent = d.as_ref().unwrap_or(&root);
                d = Some(
                    parent
                        .open_dir(part)
                        .map_err(|e| StoreError::io(parent.join(part), "open directory", e))?,
                );
            }
            Ok(d.expect("non-empty path"))
        };
        Ok(ObjectDirs {
            objects: open(OBJECTS_DIR)?,
            tmp: open(TMP_DIR)?,
            quarantine: open(QUARANTINE_DIR)?,
            root,
            shards: Mutex::new(vec![None; 256]),
        })
    }

    /// The path of an object's file, for messages.
    pub fn object_path(&self, d: &Digest) -> PathBuf {
        self.objects.join(d.shard()).join(d.hex())
    }

    /// Opens the shard directory of `d`; `None` if it does not exist yet.
    fn shard(&self, d: &Digest) -> Result<Option<Arc<Dir>>> {
        self.shard_with(d, false)
    }

    fn shard_with(&self, d: &Digest, create: bool) -> Result<Option<Arc<Dir>>> {
        let slot = d.as_bytes()[0] as usize;
        if let Some(s) = &self.shards.lock().expect("shard cache poisoned")[slot] {
            return Ok(Some(Arc::clone(s)));
        }
        let opened = if create {
            self.objects.ensure_dir(&d.shard())
        } else {
            self.objects.open_dir(&d.shard())
        };
        let dir = match opened {
            Ok(s) => Arc::new(s),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.entry_error(self.objects.join(d.shard()), e)),
        };
        self.shards.lock().expect("shard cache poisoned")[slot] = Some(Arc::clone(&dir));
        Ok(Some(dir))
    }

    fn entry_error(&self, path: PathBuf, e: io::Error) -> StoreError {
        match e.raw_os_error() {
            Some(c)
                if c == rustix::io::Errno::LOOP.raw_os_error()
                    || c == rustix::io::Errno::NOTDIR.raw_os_error() =>
            {
                StoreError::UnexpectedEntry {
                    path,
                    what: "symlink or non-directory",
                }
            }
            _ => StoreError::io(path, "open", e),
        }
    }

    /// Whether a regular object file exists for `d` (no content check).
    pub fn exists(&self, d: &Digest) -> Result<bool> {
        let Some(shard) = self.shard(d)? else {
            return Ok(false);
        };
        match shard.entry_kind(&d.hex()) {
            Ok(Some((EntryKind::File, _))) => Ok(true),
            Ok(Some((kind, _))) => Err(StoreError::UnexpectedEntry {
                path: self.object_path(d),
                what: kind.describe(),
            }),
            Ok(None) => Ok(false),
            Err(e) => Err(StoreError::io(self.object_path(d), "stat", e)),
        }
    }

    /// Creates a new temp file in `tmp/`.
    fn create_temp(&self) -> Result<(String, File)> {
        create_temp(&self.tmp)
    }

    /// Stages a streamed object of exactly `size` bytes; `subject` names the
    /// input in errors. With `sync`, the temp is fsynced before returning.
    pub fn stage_stream(
        &self,
        input: &mut dyn Read,
        size: u64,
        subject: &std::path::Path,
        sync: bool,
        progress: &dyn Fn(u64),
    ) -> Result<Staged> {
        let (name, f) = self.create_temp()?;
        let result = frame::encode_stream(input, size, &f, progress).and_then(|enc| {
            if sync {
                f.sync_all().map_err(EncodeError::Write)?;
            }
            Ok(enc)
        });
        if result.is_ok() {
            crate::crash::point("temp_written");
        }
        match result {
            Ok(encoded) => Ok(Staged {
                tmp_name: name,
                encoded,
                synced: sync,
            }),
            Err(e) => {
                let _ = self.tmp.remove_file(&name);
                Err(match e {
                    EncodeError::Read(e) => StoreError::io(subject, "read", e),
                    EncodeError::Write(e) => StoreError::io(self.tmp.join(&name), "write temp", e),
                    EncodeError::SizeChanged { .. } => StoreError::SourceChanged {
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
    /// dedup hit; the temp is removed either way). The caller makes the shard
    /// directory durable ([`ObjectDirs::sync_shard`] or a filesystem sync).
    pub fn publish(&self, staged: &Staged) -> Result<bool> {
        let d = staged.encoded.digest;
        let shard = self.shard_with(&d, true)?.expect("created on demand");
        let renamed = self
            .tmp
            .rename_no_replace(&staged.tmp_name, &shard, &d.hex())
            .map_err(|e| StoreError::io(self.object_path(&d), "publish", e))?;
        match renamed {
            Renamed::Done => Ok(true),
            Renamed::TargetExists => {
                self.discard(staged);
                Ok(false)
            }
        }
    }

    /// fsyncs the shard directory of `d`.
    pub fn sync_shard(&self, d: &Digest) -> Result<()> {
        let shard = self
            .shard(d)?
            .ok_or_else(|| StoreError::MissingObject { digest: *d })?;
        shard
            .sync()
            .map_err(|e| StoreError::io(shard.path(), "fsync directory", e))
    }

    /// Opens the stored frame of `d`.
    pub fn open_frame(&self, d: &Digest) -> Result<File> {
        let shard = self.shard(d)?.ok_or(StoreError::NotFound { digest: *d })?;
        shard
            .open_file(&d.hex())
            .map_err(|e| match e.raw_os_error() {
                Some(c) if c == rustix::io::Errno::NOENT.raw_os_error() => {
                    StoreError::NotFound { digest: *d }
                }
                Some(c)
                    if c == rustix::io::Errno::LOOP.raw_os_error()
                        || c == rustix::io::Errno::INVAL.raw_os_error() =>
                {
                    StoreError::UnexpectedEntry {
                        path: self.object_path(d),
                        what: "symlink or non-regular file",
                    }
                }
                _ => StoreError::io(self.object_path(d), "open", e),
            })
    }

    /// Moves the object file of `d` into `quarantine/` (never deleting it);
    /// returns the quarantine name.
    pub fn quarantine(&self, d: &Digest) -> Result<String> {
        let shard = self.shard(d)?.ok_or(StoreError::NotFound { digest: *d })?;
        let name = format!("{}.{}", d.hex(), now_ms());
        let q = shard
            .rename_no_replace(&d.hex(), &self.quarantine, &name)
            .map_err(|e| StoreError::io(self.quarantine.join(&name), "quarantine", e))?;
        if q == Renamed::TargetExists {
            return Err(StoreError::io(
                self.quarantine.join(&name),
                "quarantine",
                io::Error::from(io::ErrorKind::AlreadyExists),
            ));
        }
        let _ = self.quarantine.sync();
        let _ = shard.sync();
        Ok(name)
    }
}
