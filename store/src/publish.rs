//! Publishing new files and trees without ever replacing one: the one
//! temp -> fsync -> no-replace rename sequence, for small files inside the
//! store ([`write_new`]: refs, keys, markers, freeze records) and for new
//! trees outside it ([`NewTree`]: `get -o`, `bundle checkout`, `packet
//! materialize`, exports).
//!
//! Content is written into a temp entry beside the destination; only when it
//! is complete and synced is it renamed into place with `RENAME_NOREPLACE`,
//! so a destination is either absent or complete, and an existing one is
//! never touched. On failure (or drop before [`NewTree::publish`]) the temp
//! entry is removed.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::dir::{Dir, Renamed};
use crate::error::{Result, StoreError};

/// The directory a destination will live in.
fn parent_of(dest: &Path) -> &Path {
    match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// The destination's parent, created with its missing ancestors (as `init
/// --store a/b/c` does): a destination in a directory that does not exist
/// yet is a destination, not an error.
fn made_parent(dest: &Path) -> Result<&Path> {
    let parent = parent_of(dest);
    fs::create_dir_all(parent).map_err(|e| StoreError::io(parent, "create directory", e))?;
    Ok(parent)
}

/// The error of one that tempfile wrapped with its temp path, without that
/// path (tempfile keeps only the kind reachable): users are shown the
/// directory they named, never our internal temp names.
fn os_error(e: std::io::Error) -> std::io::Error {
    match e.raw_os_error() {
        Some(_) => e,
        None => std::io::Error::from(e.kind()),
    }
}

fn refuse_existing(dest: &Path) -> Result<()> {
    if dest.symlink_metadata().is_ok() {
        return Err(StoreError::DestinationExists {
            path: dest.to_path_buf(),
        });
    }
    Ok(())
}

fn rename_into_place(tmp: &Path, dest: &Path) -> Result<()> {
    let parent = parent_of(dest);
    let parent_dir = Dir::open(parent).map_err(|e| StoreError::io(parent, "open", e))?;
    let tmp_name = tmp
        .file_name()
        .and_then(|n| n.to_str())
        .expect("temp names are UTF-8");
    let name = dest.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
        StoreError::io(
            dest,
            "publish",
            std::io::Error::other("destination needs a UTF-8 final component"),
        )
    })?;
    match parent_dir
        .rename_no_replace(tmp_name, &parent_dir, name)
        .map_err(|e| StoreError::io(dest, "publish", e))?
    {
        Renamed::Done => parent_dir
            .sync()
            .map_err(|e| StoreError::io(parent, "fsync directory", e)),
        Renamed::TargetExists => Err(StoreError::DestinationExists {
            path: dest.to_path_buf(),
        }),
    }
}

/// Writes `bytes` as `name` in `dest` and never replaces an existing entry:
/// a temp `<prefix>.<pid>.<n>.<random>` in `tmp` (which may be `dest`) is
/// created, written and fsynced, then renamed into place with
/// `RENAME_NOREPLACE`; the temp is removed whatever happens. The caller
/// syncs `dest`'s directory entry as its durability rule requires.
pub fn write_new(
    tmp: &Dir,
    prefix: &str,
    dest: &Dir,
    name: &str,
    bytes: &[u8],
    mode: u32,
) -> Result<Renamed> {
    use std::io::Write;
    let tmp_name = crate::names::temp_name(prefix);
    let mut f = tmp
        .create_new(&tmp_name, mode)
        .map_err(|e| StoreError::io(tmp.join(&tmp_name), "create temp", e))?;
    if let Err(e) = f.write_all(bytes).and_then(|()| f.sync_all()) {
        let _ = tmp.remove_file(&tmp_name);
        return Err(StoreError::io(tmp.join(&tmp_name), "write temp", e));
    }
    drop(f);
    let renamed = tmp.rename_no_replace(&tmp_name, dest, name);
    if renamed.as_ref().ok() != Some(&Renamed::Done) {
        let _ = tmp.remove_file(&tmp_name);
    }
    renamed.map_err(|e| StoreError::io(dest.join(name), "publish", e))
}

/// A directory being built beside its destination.
pub struct NewTree {
    tmp: tempfile::TempDir,
    dest: PathBuf,
    made: Vec<PathBuf>,
}

impl NewTree {
    /// Starts a new tree for `dest` (which must not exist); the temp
    /// directory gets `mode`.
    pub fn begin(dest: &Path, mode: u32) -> Result<NewTree> {
        refuse_existing(dest)?;
        let parent = made_parent(dest)?;
        let tmp = tempfile::Builder::new()
            .prefix(".coffer-new.")
            .tempdir_in(parent)
            .map_err(|e| StoreError::io(parent, "create directory", os_error(e)))?;
        fs::set_permissions(tmp.path(), fs::Permissions::from_mode(mode))
            .map_err(|e| StoreError::io(tmp.path(), "chmod", e))?;
        let made = vec![tmp.path().to_path_buf()];
        Ok(NewTree {
            tmp,
            dest: dest.to_path_buf(),
            made,
        })
    }

    /// Where the tree is being built (for reading it back before publishing).
    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    /// Creates a new file at the (already validated) relative path `rel`,
    /// making missing parent directories with `dir_mode`; the file gets
    /// `file_mode`.
    pub fn create_file(&mut self, rel: &str, dir_mode: u32, file_mode: u32) -> Result<fs::File> {
        let target = self.tmp.path().join(rel);
        if let Some(p) = target.parent() {
            self.make_dirs(p, dir_mode)?;
        }
        let f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&target)
            .map_err(|e| StoreError::io(&target, "create", e))?;
        fs::set_permissions(&target, fs::Permissions::from_mode(file_mode))
            .map_err(|e| StoreError::io(&target, "chmod", e))?;
        Ok(f)
    }

    /// Creates the directory `rel` (and its parents) with `mode`.
    pub fn create_dir(&mut self, rel: &str, mode: u32) -> Result<()> {
        let target = self.tmp.path().join(rel);
        self.make_dirs(&target, mode)
    }

    fn make_dirs(&mut self, abs: &Path, mode: u32) -> Result<()> {
        let rel = abs
            .strip_prefix(self.tmp.path())
            .unwrap_or(abs)
            .to_path_buf();
        let mut cur = self.tmp.path().to_path_buf();
        for c in rel.components() {
            cur.push(c);
            if cur.symlink_metadata().is_err() {
                fs::create_dir(&cur).map_err(|e| StoreError::io(&cur, "create directory", e))?;
                fs::set_permissions(&cur, fs::Permissions::from_mode(mode))
                    .map_err(|e| StoreError::io(&cur, "chmod", e))?;
                self.made.push(cur.clone());
            }
        }
        Ok(())
    }

    /// Syncs every directory made and renames the tree into place.
    pub fn publish(self) -> Result<()> {
        for d in self.made.iter().rev() {
            fs::File::open(d)
                .and_then(|f| f.sync_all())
                .map_err(|e| StoreError::io(d, "fsync directory", e))?;
        }
        rename_into_place(self.tmp.path(), &self.dest)?;
        // The tree now lives at dest; keep tempfile from deleting it.
        let _ = self.tmp.keep();
        Ok(())
    }
}

/// Writes a new file at `dest` (which must not exist) through `write`,
/// fsyncs it and renames it into place.
pub fn write_new_file(dest: &Path, write: impl FnOnce(&mut fs::File) -> Result<()>) -> Result<()> {
    refuse_existing(dest)?;
    let parent = made_parent(dest)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".coffer-new.")
        .tempfile_in(parent)
        .map_err(|e| StoreError::io(parent, "create file", os_error(e)))?;
    write(tmp.as_file_mut())?;
    tmp.as_file()
        .sync_all()
        .map_err(|e| StoreError::io(tmp.path(), "fsync", e))?;
    rename_into_place(tmp.path(), dest)?;
    // Renamed away: nothing left for the guard to delete.
    let _ = tmp.keep();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_new_never_replaces_and_leaves_no_temp() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("tmp")).unwrap();
        let (dir, tmp) = (
            Dir::open(t.path()).unwrap(),
            Dir::open(&t.path().join("tmp")).unwrap(),
        );
        assert_eq!(
            write_new(&tmp, "k", &dir, "key", b"first", 0o600).unwrap(),
            Renamed::Done
        );
        assert_eq!(
            write_new(&tmp, "k", &dir, "key", b"second", 0o600).unwrap(),
            Renamed::TargetExists
        );
        // The same directory as temp and destination.
        assert_eq!(
            write_new(&dir, "key", &dir, "key", b"third", 0o600).unwrap(),
            Renamed::TargetExists
        );
        assert_eq!(std::fs::read(t.path().join("key")).unwrap(), b"first");
        let mode = std::fs::metadata(t.path().join("key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(tmp.entries().unwrap().is_empty(), "no temp left");
        let names: Vec<String> = dir.entries().unwrap().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[test]
    fn a_tree_appears_only_when_published_and_never_replaces() {
        let t = tempfile::tempdir().unwrap();
        let dest = t.path().join("out");
        let mut tree = NewTree::begin(&dest, 0o755).unwrap();
        std::io::Write::write_all(
            &mut tree.create_file("a/b.txt", 0o755, 0o644).unwrap(),
            b"x",
        )
        .unwrap();
        assert!(!dest.exists());
        tree.publish().unwrap();
        assert_eq!(fs::read(dest.join("a/b.txt")).unwrap(), b"x");
        assert!(NewTree::begin(&dest, 0o755).is_err());
        assert_eq!(
            fs::read_dir(t.path()).unwrap().count(),
            1,
            "no temp left behind"
        );
    }

    #[test]
    fn a_dropped_tree_leaves_nothing() {
        let t = tempfile::tempdir().unwrap();
        let mut tree = NewTree::begin(&t.path().join("out"), 0o700).unwrap();
        tree.create_file("x", 0o700, 0o600).unwrap();
        drop(tree);
        assert_eq!(fs::read_dir(t.path()).unwrap().count(), 0);
    }

    #[test]
    fn write_new_file_refuses_an_existing_destination() {
        let t = tempfile::tempdir().unwrap();
        let dest = t.path().join("f");
        fs::write(&dest, b"old").unwrap();
        let r = write_new_file(&dest, |f| {
            std::io::Write::write_all(f, b"new").map_err(|e| StoreError::io("f", "write", e))
        });
        assert!(matches!(r, Err(StoreError::DestinationExists { .. })));
        assert_eq!(fs::read(&dest).unwrap(), b"old");
    }
}
