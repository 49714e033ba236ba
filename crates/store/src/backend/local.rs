//! The store root's own directories as a backend: a key is a path below the
//! root, resolved one component at a time without following symlinks.
//!
//! Publication is a no-replace rename from the staging directory (same
//! filesystem), so a published name never holds a partial frame; a ref is
//! written to a temp in `tmp/`, fsynced, and renamed the same way.

use std::io;
use std::sync::{Arc, Mutex};

use super::{Backend, Body, Listed, Meta, Put, OBJECTS_PREFIX, QUARANTINE_PREFIX};
use crate::entries::TMP_DIR;
use crate::error::{Result, StoreError};
use coffer_base::dir::{is_plain_name, Dir, EntryKind, Renamed};

/// Directory levels a listing descends (`objects/sha256/<2hex>/<64hex>` is 4).
const MAX_LIST_DEPTH: usize = 6;

/// A backend on the store root's directories.
#[derive(Debug)]
pub struct LocalBackend {
    root: Dir,
    /// `file://<absolute root>`, for messages.
    location: String,
    /// `objects/sha256`.
    objects: Dir,
    /// Shard directories opened so far, by name. Handles stay valid even if
    /// the name is later swapped for a symlink.
    shards: Mutex<Vec<Option<Shard>>>,
}

/// An opened shard directory. Shards are made on demand (a store of packs
/// needs few of them), so one that this process found already made may
/// be another process's mkdir whose parent is not yet synced.
#[derive(Debug, Clone)]
struct Shard {
    dir: Arc<Dir>,
    /// Its entry in `objects/sha256` is known to be durable: this process
    /// made it (and synced the parent), or synced the parent since.
    entry_durable: bool,
}

fn meta_of(e: &coffer_base::dir::Entry) -> Meta {
    Meta {
        size: e.size,
        modified_ms: e.modified_ms,
    }
}

/// A symlink or non-directory where a directory was expected.
fn entry_error(path: std::path::PathBuf, e: io::Error, op: &'static str) -> StoreError {
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
        _ => StoreError::io(path, op, e),
    }
}

impl LocalBackend {
    /// The backend of the store whose root is `root`.
    pub fn open(root: Dir) -> Result<Self> {
        let objects = existing_dir(&root, OBJECTS_PREFIX.trim_end_matches('/'))?;
        let abs = std::fs::canonicalize(root.path()).unwrap_or_else(|_| root.path().to_path_buf());
        Ok(LocalBackend {
            location: format!("file://{}", abs.display()),
            root,
            objects,
            shards: Mutex::new(vec![None; 256]),
        })
    }

    /// Splits a key into its parent directory (opened, or created when
    /// `missing` says so) and its file name. `None`: the parent does not exist.
    fn parent_of(&self, key: &str, missing: Missing) -> Result<Option<(Arc<Dir>, String)>> {
        let (dir, name) = key.rsplit_once('/').unwrap_or(("", key));
        if !is_plain_name(name.as_ref()) {
            return Err(StoreError::CatalogData(format!("invalid key {key:?}")));
        }
        if let Some(shard) = dir
            .strip_prefix(OBJECTS_PREFIX)
            .filter(|s| s.len() == 2 && s.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            let slot = usize::from_str_radix(shard, 16).expect("two hex digits");
            if let Some(s) = &self.shards.lock().expect("shard cache poisoned")[slot] {
                return Ok(Some((Arc::clone(&s.dir), name.to_string())));
            }
            let made = missing == Missing::Create && self.make_shard(shard)?;
            let d = match self.objects.open_dir(shard) {
                Ok(d) => Arc::new(d),
                // With `Create`, a missing directory here means `objects/`
                // itself went away: an error, never "absent".
                Err(e) if e.kind() == io::ErrorKind::NotFound && missing == Missing::Absent => {
                    return Ok(None)
                }
                Err(e) => return Err(entry_error(self.objects.join(shard), e, "open")),
            };
            self.shards.lock().expect("shard cache poisoned")[slot] = Some(Shard {
                dir: Arc::clone(&d),
                entry_durable: made,
            });
            return Ok(Some((d, name.to_string())));
        }
        Ok(open_path(&self.root, dir, missing)?.map(|d| (Arc::new(d), name.to_string())))
    }

    /// Makes the shard directory `shard` and syncs `objects/sha256`;
    /// `false` when it already existed (its entry may not be durable yet).
    fn make_shard(&self, shard: &str) -> Result<bool> {
        match self.objects.create_dir(shard, 0o755) {
            Ok(_) => {
                self.sync_objects_dir()?;
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(entry_error(self.objects.join(shard), e, "create directory")),
        }
    }

    fn sync_objects_dir(&self) -> Result<()> {
        self.objects
            .sync()
            .map_err(|e| StoreError::io(self.objects.path(), "fsync directory", e))
    }

    /// Makes the entry of `key`'s shard durable, once per shard and
    /// process, unless this process made the shard itself. One fsync of
    /// the shard directory makes a published object's own entry durable,
    /// but not the shard's entry in its parent, which a concurrent put may
    /// have made a moment ago.
    fn sync_shard_entry(&self, key: &str) -> Result<()> {
        let Some(slot) = key
            .strip_prefix(OBJECTS_PREFIX)
            .and_then(|k| k.get(..2))
            .and_then(|s| usize::from_str_radix(s, 16).ok())
        else {
            return Ok(());
        };
        let unsure = {
            let shards = self.shards.lock().expect("shard cache poisoned");
            matches!(&shards[slot], Some(s) if !s.entry_durable)
        };
        if unsure {
            self.sync_objects_dir()?;
            if let Some(s) = &mut self.shards.lock().expect("shard cache poisoned")[slot] {
                s.entry_durable = true;
            }
        }
        Ok(())
    }

    /// Opens the regular file of `key` (never through a symlink).
    fn open_key(&self, key: &str) -> Result<Option<(std::fs::File, Meta)>> {
        let Some((dir, name)) = self.parent_of(key, Missing::Absent)? else {
            return Ok(None);
        };
        let (f, st) = match dir.open_file_stat(&name) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(match e.raw_os_error() {
                    Some(c)
                        if c == rustix::io::Errno::LOOP.raw_os_error()
                            || c == rustix::io::Errno::INVAL.raw_os_error() =>
                    {
                        StoreError::UnexpectedEntry {
                            path: self.path_of(key),
                            what: "symlink or non-regular file",
                        }
                    }
                    _ => StoreError::io(self.path_of(key), "open", e),
                })
            }
        };
        let meta = Meta {
            size: st.size,
            modified_ms: st.modified_ms,
        };
        Ok(Some((f, meta)))
    }

    fn path_of(&self, key: &str) -> std::path::PathBuf {
        self.root.join(key)
    }
}

/// Opens (or creates) the directory `path` below `root`, one component at a
/// time; `None` when a component is absent and `missing` is `Absent`.
/// What to do about a directory on a key's path that does not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Missing {
    /// Create it (publishing).
    Create,
    /// Report the key as absent (reading, listing).
    Absent,
}

/// Opens a directory of the store's layout, which must exist: a store
/// missing one is damaged, and says so, naming it.
fn existing_dir(root: &Dir, path: &str) -> Result<Dir> {
    open_path(root, path, Missing::Absent)?.ok_or_else(|| {
        let gone = io::Error::from_raw_os_error(rustix::io::Errno::NOENT.raw_os_error());
        StoreError::io(root.join(path), "open directory", gone)
    })
}

fn open_path(root: &Dir, path: &str, missing: Missing) -> Result<Option<Dir>> {
    let mut d: Option<Dir> = None;
    for part in path.split('/').filter(|p| !p.is_empty()) {
        if !is_plain_name(part.as_ref()) {
            return Err(StoreError::CatalogData(format!(
                "invalid key path {path:?}"
            )));
        }
        let parent = d.as_ref().unwrap_or(root);
        let next = if missing == Missing::Create {
            parent.ensure_dir(part)
        } else {
            parent.open_dir(part)
        };
        d = Some(match next {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::NotFound && missing == Missing::Absent => {
                return Ok(None)
            }
            Err(e) => return Err(entry_error(parent.join(part), e, "open directory")),
        });
    }
    match d {
        Some(d) => Ok(Some(d)),
        None => root
            .try_clone()
            .map(Some)
            .map_err(|e| StoreError::io(root.path(), "dup", e)),
    }
}

impl Backend for LocalBackend {
    fn location(&self) -> String {
        self.location.clone()
    }

    fn shared(&self) -> bool {
        false
    }

    fn publish(&self, key: &str, tmp: &Dir, tmp_name: &str) -> Result<Put> {
        let (dir, name) = self
            .parent_of(key, Missing::Create)?
            .expect("created on demand");
        let renamed = tmp
            .rename_no_replace(tmp_name, &dir, &name)
            .map_err(|e| StoreError::io(self.path_of(key), "publish", e))?;
        match renamed {
            Renamed::Done => Ok(Put::Created),
            Renamed::TargetExists => {
                let _ = tmp.remove_file(tmp_name);
                Ok(Put::Existed)
            }
        }
    }

    fn put_bytes(&self, key: &str, bytes: &[u8]) -> Result<Put> {
        let tmp = existing_dir(&self.root, TMP_DIR)?;
        let (dir, name) = self
            .parent_of(key, Missing::Create)?
            .expect("created on demand");
        let renamed = coffer_base::publish::write_new(&tmp, "ref", &dir, &name, bytes, 0o444)?;
        self.sync_published(&[key.to_string()])?;
        Ok(match renamed {
            Renamed::Done => Put::Created,
            Renamed::TargetExists => Put::Existed,
        })
    }

    fn get(&self, key: &str) -> Result<Option<(Body, Meta)>> {
        Ok(self
            .open_key(key)?
            .map(|(f, meta)| (Box::new(f) as Body, meta)))
    }

    fn get_range(&self, key: &str, offset: u64, len: u64) -> Result<Option<Body>> {
        use std::io::{Read, Seek};
        let Some((mut f, _)) = self.open_key(key)? else {
            return Ok(None);
        };
        f.seek(io::SeekFrom::Start(offset))
            .map_err(|e| StoreError::io(self.path_of(key), "seek", e))?;
        Ok(Some(Box::new(f.take(len))))
    }

    fn head(&self, key: &str) -> Result<Option<Meta>> {
        let Some((dir, name)) = self.parent_of(key, Missing::Absent)? else {
            return Ok(None);
        };
        match dir.entry(&name) {
            Ok(Some(e)) if e.kind == EntryKind::File => Ok(Some(meta_of(&e))),
            Ok(Some(e)) => Err(StoreError::UnexpectedEntry {
                path: self.path_of(key),
                what: e.kind.describe(),
            }),
            Ok(None) => Ok(None),
            Err(e) => Err(StoreError::io(self.path_of(key), "stat", e)),
        }
    }

    fn list(&self, prefix: &str) -> Result<Vec<Listed>> {
        let mut out = Vec::new();
        self.list_each(prefix, &mut |l| {
            out.push(l);
            Ok(())
        })?;
        Ok(out)
    }

    fn list_each(&self, prefix: &str, f: &mut dyn FnMut(Listed) -> Result<()>) -> Result<()> {
        match open_path(&self.root, prefix, Missing::Absent)? {
            Some(start) => walk(&start, prefix.trim_end_matches('/'), 0, f),
            None => Ok(()),
        }
    }

    fn delete(&self, key: &str) -> Result<()> {
        let Some((dir, name)) = self.parent_of(key, Missing::Absent)? else {
            return Ok(());
        };
        dir.remove_file(&name)
            .map_err(|e| StoreError::io(self.path_of(key), "remove", e))
    }

    fn sync_published(&self, keys: &[String]) -> Result<()> {
        match keys {
            [] => Ok(()),
            [one] => {
                let (dir, _) = self.parent_of(one, Missing::Absent)?.ok_or_else(|| {
                    StoreError::io(
                        self.path_of(one),
                        "fsync directory",
                        io::ErrorKind::NotFound.into(),
                    )
                })?;
                dir.sync()
                    .map_err(|e| StoreError::io(dir.path(), "fsync directory", e))?;
                self.sync_shard_entry(one)
            }
            _ => self
                .root
                .sync_filesystem()
                .map_err(|e| StoreError::io(self.root.path(), "syncfs", e)),
        }
    }

    fn quarantine(&self, key: &str, name: &str) -> Result<()> {
        let (dir, file) = self.parent_of(key, Missing::Absent)?.ok_or_else(|| {
            StoreError::io(
                self.path_of(key),
                "quarantine",
                io::ErrorKind::NotFound.into(),
            )
        })?;
        let q = open_path(&self.root, QUARANTINE_PREFIX, Missing::Create)?.expect("created");
        let renamed = dir
            .rename_no_replace(&file, &q, name)
            .map_err(|e| StoreError::io(q.join(name), "quarantine", e))?;
        if renamed == Renamed::TargetExists {
            return Err(StoreError::io(
                q.join(name),
                "quarantine",
                io::ErrorKind::AlreadyExists.into(),
            ));
        }
        let _ = q.sync();
        let _ = dir.sync();
        Ok(())
    }
}

/// Hands `f` every entry below `dir` in key order: each directory's
/// entries are sorted as their keys sort, a directory walked into as its
/// name plus `/` (so `ab.txt` comes before `ab/x`, as the keys do).
fn walk(dir: &Dir, rel: &str, depth: usize, f: &mut dyn FnMut(Listed) -> Result<()>) -> Result<()> {
    let descend = |kind: &EntryKind| *kind == EntryKind::Dir && depth < MAX_LIST_DEPTH;
    let mut entries = dir
        .entries()
        .map_err(|e| StoreError::io(dir.path(), "list", e))?;
    entries.sort_by(|(a, ka), (b, kb)| {
        let slash = |descends: bool| descends.then_some(b'/');
        (a.as_bytes().iter().copied().chain(slash(descend(ka))))
            .cmp(b.as_bytes().iter().copied().chain(slash(descend(kb))))
    });
    for (name, kind) in entries {
        let key = format!("{rel}/{name}");
        if descend(&kind) {
            let sub = dir
                .open_dir(&name)
                .map_err(|e| entry_error(dir.join(&name), e, "open directory"))?;
            walk(&sub, &key, depth + 1, f)?;
            continue;
        }
        let st = dir
            .entry(&name)
            .map_err(|e| StoreError::io(dir.join(&name), "stat", e))?;
        let Some(e) = st else { continue };
        f(Listed {
            key,
            meta: meta_of(&e),
            regular: e.kind == EntryKind::File,
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listing_is_in_key_order_and_streams_the_same_keys() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        for d in [
            "objects/sha256/ab",
            "objects/sha256/ab/x",
            "objects/sha256/0f",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        // Names that sort before and after `/`, beside a directory.
        for f in [
            "objects/sha256/ab.txt",
            "objects/sha256/ab-",
            "objects/sha256/ab0",
            "objects/sha256/ab/x/y",
            "objects/sha256/ab/z",
            "objects/sha256/0f/e",
            "objects/sha256/a",
        ] {
            std::fs::write(root.join(f), b"v").unwrap();
        }
        let b = LocalBackend::open(Dir::open(root).unwrap()).unwrap();
        let keys: Vec<String> = b
            .list(OBJECTS_PREFIX)
            .unwrap()
            .into_iter()
            .map(|l| l.key)
            .collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        assert_eq!(keys.len(), 7);
        let mut streamed = Vec::new();
        b.list_each(OBJECTS_PREFIX, &mut |l| {
            streamed.push(l.key);
            Ok(())
        })
        .unwrap();
        assert_eq!(streamed, keys);
        // The first error from the callee stops the walk.
        let mut seen = 0;
        let stopped = b.list_each(OBJECTS_PREFIX, &mut |_| {
            seen += 1;
            Err(StoreError::CatalogData("stop".into()))
        });
        assert!(stopped.is_err());
        assert_eq!(seen, 1);
    }
}
