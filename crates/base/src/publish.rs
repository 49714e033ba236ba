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

use crate::codes;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread;

use crate::dir::{Dir, EntryKind, Renamed};

/// Why a file or tree could not be published.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The destination already exists; nothing is ever replaced.
    #[error("{path}: already exists; coffer never replaces an existing file")]
    DestinationExists {
        /// The destination.
        path: PathBuf,
    },
    /// Something on the way is a symlink or another unexpected type.
    #[error("{path}: unexpected {what} inside the store; it is never followed")]
    UnexpectedEntry {
        /// The entry.
        path: PathBuf,
        /// What kind of entry it is.
        what: &'static str,
    },
    /// A stop was requested before the rename; nothing was published.
    #[error(transparent)]
    Interrupted(#[from] crate::interrupt::Interrupted),
    /// A filesystem call failed.
    #[error("{path}: {op}: {source}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// What was being done.
        op: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
}

impl PublishError {
    /// Wraps an OS error with the path and operation it came from.
    pub fn io(path: impl Into<PathBuf>, op: &'static str, source: std::io::Error) -> Self {
        PublishError::Io {
            path: path.into(),
            op,
            source,
        }
    }

    /// The stable `class.name` code.
    pub fn code(&self) -> &'static str {
        match self {
            PublishError::DestinationExists { .. } => codes::conflict::DESTINATION_EXISTS,
            PublishError::UnexpectedEntry { .. } => codes::integrity::UNEXPECTED_ENTRY,
            PublishError::Interrupted(_) => codes::io::INTERRUPTED,
            PublishError::Io { source, .. } => crate::os_code::io_code(source),
        }
    }
}

/// Results of publication.
pub type Result<T, E = PublishError> = std::result::Result<T, E>;

/// Prefix of the temp entry a new tree or file is built under.
const NEW_PREFIX: &str = ".coffer-new";

/// The directory a destination will live in.
fn parent_of(dest: &Path) -> &Path {
    match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// The destination's parent (the root the user named: the one directory
/// opened by path), created with its missing ancestors (as `init --store
/// a/b/c` does): a destination in a directory that does not exist yet is a
/// destination, not an error. Also returns the destination's final name.
fn open_parent(dest: &Path) -> Result<(Dir, String)> {
    let name = dest
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| crate::dir::is_plain_name(std::ffi::OsStr::new(n)))
        .ok_or_else(|| {
            PublishError::io(
                dest,
                "publish",
                std::io::Error::other("destination needs a UTF-8 final component"),
            )
        })?
        .to_string();
    let parent = parent_of(dest);
    fs::create_dir_all(parent).map_err(|e| PublishError::io(parent, "create directory", e))?;
    let dir = Dir::open(parent).map_err(|e| PublishError::io(parent, "open", e))?;
    match dir.entry(&name) {
        Ok(None) => Ok((dir, name)),
        Ok(Some(_)) => Err(PublishError::DestinationExists {
            path: dest.to_path_buf(),
        }),
        Err(e) => Err(PublishError::io(dest, "stat", e)),
    }
}

/// Renames the finished temp entry to the destination, never replacing
/// one, and makes the new name durable.
fn rename_into_place(parent: &Dir, tmp_name: &str, name: &str, dest: &Path) -> Result<()> {
    match parent
        .rename_no_replace(tmp_name, parent, name)
        .map_err(|e| PublishError::io(dest, "publish", e))?
    {
        Renamed::Done => parent
            .sync()
            .map_err(|e| PublishError::io(parent.path(), "fsync directory", e)),
        Renamed::TargetExists => Err(PublishError::DestinationExists {
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
    let tmp_name = crate::temp::temp_name(prefix);
    let mut f = tmp
        .create_new(&tmp_name, mode)
        .map_err(|e| PublishError::io(tmp.join(&tmp_name), "create temp", e))?;
    if let Err(e) = f.write_all(bytes).and_then(|()| f.sync_all()) {
        let _ = tmp.remove_file(&tmp_name);
        return Err(PublishError::io(tmp.join(&tmp_name), "write temp", e));
    }
    drop(f);
    let renamed = tmp.rename_no_replace(&tmp_name, dest, name);
    if renamed.as_ref().ok() != Some(&Renamed::Done) {
        let _ = tmp.remove_file(&tmp_name);
    }
    renamed.map_err(|e| PublishError::io(dest.join(name), "publish", e))
}

/// A directory being built beside its destination, through handles: no
/// component of it is ever reached through a symlink, and a tree dropped
/// before [`NewTree::publish`] is removed.
pub struct NewTree {
    parent: Dir,
    tmp_name: String,
    root: Dir,
    name: String,
    dest: PathBuf,
    /// Directories made below the root (relative paths), to fsync.
    made: Vec<String>,
    /// Files still being synced (see [`NewTree::sync_later`]).
    syncer: Option<Syncer>,
    /// Files handed to [`NewTree::sync_later`] so far.
    handed: usize,
    published: bool,
}

/// Files of a tree synced one by one, each on the sync thread as soon as
/// it is written. Past these, files are left to one `syncfs` before the
/// tree is published: a checkout or a materialized fixture of thousands of
/// files would otherwise wait for thousands of fsyncs. An export (a few
/// files, one of them large) stays under the bound, so its large file's
/// sync still runs beside its readback.
const SYNCED_ONE_BY_ONE: usize = 64;

/// Files made durable on a thread of their own. The queue is bounded:
/// each waiting file holds a descriptor.
struct Syncer {
    tx: Option<mpsc::SyncSender<(fs::File, PathBuf)>>,
    thread: Option<thread::JoinHandle<Result<()>>>,
}

impl Syncer {
    /// Files that may wait for the sync thread.
    const QUEUE: usize = 64;

    fn spawn() -> std::io::Result<Syncer> {
        let (tx, rx) = mpsc::sync_channel::<(fs::File, PathBuf)>(Self::QUEUE);
        let thread = thread::Builder::new()
            .name("coffer-sync".into())
            .spawn(move || {
                let mut first = Ok(());
                // After a failure the rest are only drained: the tree will
                // not be published.
                for (f, path) in rx {
                    if first.is_ok() {
                        first = f.sync_all().map_err(|e| PublishError::io(path, "fsync", e));
                        crate::crash::point("tree_file_synced");
                    }
                }
                first
            })?;
        Ok(Syncer {
            tx: Some(tx),
            thread: Some(thread),
        })
    }

    /// Queues `f`; gives it back if the thread is gone.
    fn send(&self, f: fs::File, path: PathBuf) -> std::result::Result<(), (fs::File, PathBuf)> {
        match &self.tx {
            Some(tx) => tx.send((f, path)).map_err(|mpsc::SendError(x)| x),
            None => Err((f, path)),
        }
    }

    /// Waits until every queued file is synced; the first failure.
    fn finish(&mut self, dest: &Path) -> Result<()> {
        self.tx = None;
        match self.thread.take().map(thread::JoinHandle::join) {
            None => Ok(()),
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(PublishError::io(
                dest,
                "fsync",
                std::io::Error::other("the sync thread panicked"),
            )),
        }
    }
}

impl NewTree {
    /// Starts a new tree for `dest` (which must not exist); the temp
    /// directory gets `mode`.
    pub fn begin(dest: &Path, mode: u32) -> Result<NewTree> {
        let (parent, name) = open_parent(dest)?;
        let tmp_name = crate::temp::temp_name(NEW_PREFIX);
        parent
            .create_dir(&tmp_name, mode)
            .map_err(|e| PublishError::io(parent.path(), "create directory", e))?;
        let root = match parent.open_dir(&tmp_name) {
            Ok(root) => root,
            Err(e) => {
                let _ = parent.remove_tree(&tmp_name);
                return Err(PublishError::io(parent.path(), "open directory", e));
            }
        };
        Ok(NewTree {
            parent,
            tmp_name,
            root,
            name,
            dest: dest.to_path_buf(),
            made: Vec::new(),
            syncer: None,
            handed: 0,
            published: false,
        })
    }

    /// The path the tree will have once published (what messages name:
    /// users never see the temp entry's name).
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// A handle on the tree being built (for reading it back before
    /// publishing).
    pub fn dir(&self) -> &Dir {
        &self.root
    }

    /// Creates a new file at the (already validated) relative path `rel`,
    /// making missing parent directories with `dir_mode`; the file gets
    /// exactly `file_mode`.
    pub fn create_file(&mut self, rel: &str, dir_mode: u32, file_mode: u32) -> Result<fs::File> {
        crate::interrupt::check()?;
        let (dirs, name) = match rel.rsplit_once('/') {
            Some((dirs, name)) => (Some(dirs), name),
            None => (None, rel),
        };
        let at = self.dest.join(rel);
        let parent = match dirs {
            Some(dirs) => self.make_dirs(dirs, dir_mode)?,
            None => self
                .root
                .try_clone()
                .map_err(|e| PublishError::io(&self.dest, "open", e))?,
        };
        let f = parent
            .create_new(name, file_mode)
            .map_err(|e| PublishError::io(&at, "create", e))?;
        f.set_permissions(fs::Permissions::from_mode(file_mode))
            .map_err(|e| PublishError::io(&at, "chmod", e))?;
        Ok(f)
    }

    /// Creates the directory `rel` (and its parents) with `mode`.
    pub fn create_dir(&mut self, rel: &str, mode: u32) -> Result<()> {
        self.make_dirs(rel, mode).map(drop)
    }

    /// Walks `rel` from the root, making what is missing; returns a handle
    /// on its last directory.
    fn make_dirs(&mut self, rel: &str, mode: u32) -> Result<Dir> {
        let mut cur = self
            .root
            .try_clone()
            .map_err(|e| PublishError::io(&self.dest, "open", e))?;
        let mut walked = String::new();
        for part in rel.split('/') {
            if !walked.is_empty() {
                walked.push('/');
            }
            walked.push_str(part);
            let at = self.dest.join(&walked);
            match cur
                .entry(part)
                .map_err(|e| PublishError::io(&at, "stat", e))?
            {
                None => {
                    cur.create_dir(part, mode)
                        .map_err(|e| PublishError::io(&at, "create directory", e))?;
                    self.made.push(walked.clone());
                }
                Some(e) if e.kind == EntryKind::Dir => {}
                Some(e) => {
                    return Err(PublishError::UnexpectedEntry {
                        path: at,
                        what: e.kind.describe(),
                    })
                }
            }
            cur = cur
                .open_dir(part)
                .map_err(|e| PublishError::io(&at, "open directory", e))?;
        }
        Ok(cur)
    }

    /// Makes `f`, a complete file created in this tree at `rel`, durable
    /// before the tree is published, on a thread of its own: the caller
    /// goes on writing the next file, or reading the tree back, while the
    /// disk catches up. [`NewTree::publish`] waits for every such sync.
    /// Past `SYNCED_ONE_BY_ONE` files, `f` is only closed, and
    /// publication syncs the filesystem once instead.
    pub fn sync_later(&mut self, f: fs::File, rel: &str) -> Result<()> {
        self.handed += 1;
        if self.handed > SYNCED_ONE_BY_ONE {
            return Ok(());
        }
        let path = self.dest.join(rel);
        if self.syncer.is_none() {
            // Without a thread, the file is synced here and now.
            self.syncer = Syncer::spawn().ok();
        }
        let back = match &self.syncer {
            Some(s) => s.send(f, path),
            None => Err((f, path)),
        };
        match back {
            Ok(()) => Ok(()),
            Err((f, path)) => f.sync_all().map_err(|e| PublishError::io(path, "fsync", e)),
        }
    }

    /// Waits for every file handed to [`NewTree::sync_later`]; the first
    /// that could not be synced.
    pub fn wait_synced(&mut self) -> Result<()> {
        match self.syncer.take() {
            Some(mut s) => s.finish(&self.dest),
            None => Ok(()),
        }
    }

    /// Waits for the files' syncs (and syncs the filesystem when more
    /// files were handed over than are synced one by one), syncs every
    /// directory made and renames the tree into place.
    pub fn publish(self) -> Result<()> {
        self.publish_inner(true)
    }

    /// [`NewTree::publish`] past the caller's point of no return: a
    /// requested stop no longer keeps the tree back (the export recorded
    /// it first, and a recorded export is published if it can be).
    pub fn publish_committed(self) -> Result<()> {
        self.publish_inner(false)
    }

    fn publish_inner(mut self, interruptible: bool) -> Result<()> {
        self.wait_synced()?;
        if self.handed > SYNCED_ONE_BY_ONE {
            self.root
                .sync_filesystem()
                .map_err(|e| PublishError::io(&self.dest, "syncfs", e))?;
            crate::crash::point("tree_synced");
        }
        for rel in self.made.iter().rev() {
            let mut d = self
                .root
                .try_clone()
                .map_err(|e| PublishError::io(self.root.path(), "open", e))?;
            for part in rel.split('/') {
                d = d
                    .open_dir(part)
                    .map_err(|e| PublishError::io(self.root.join(rel), "open directory", e))?;
            }
            d.sync()
                .map_err(|e| PublishError::io(self.root.join(rel), "fsync directory", e))?;
        }
        self.root
            .sync()
            .map_err(|e| PublishError::io(self.root.path(), "fsync directory", e))?;
        // The last safe point: the tree is complete, and only the rename
        // would make it visible.
        if interruptible {
            crate::interrupt::check()?;
        }
        rename_into_place(&self.parent, &self.tmp_name, &self.name, &self.dest)?;
        self.published = true;
        Ok(())
    }
}

impl Drop for NewTree {
    fn drop(&mut self) {
        // No sync thread outlives its tree.
        let _ = self.wait_synced();
        if !self.published {
            let _ = self.parent.remove_tree(&self.tmp_name);
        }
    }
}

/// Writes a new file at `dest` (which must not exist) through `write`,
/// fsyncs it and renames it into place; on failure nothing is left.
pub fn write_new_file<E: From<PublishError>>(
    dest: &Path,
    write: impl FnOnce(&mut fs::File) -> Result<(), E>,
) -> Result<(), E> {
    Ok(NewFile::write(dest, 0o600, write)?.publish()?)
}

/// A file written and synced under a temp name beside its destination,
/// published later (with something else, say) or removed when dropped.
pub struct NewFile {
    parent: Dir,
    tmp_name: String,
    name: String,
    dest: PathBuf,
    published: bool,
}

impl NewFile {
    /// Creates the temp file for `dest` with exactly `mode`, writes it
    /// through `write` and fsyncs it.
    pub fn write<E: From<PublishError>>(
        dest: &Path,
        mode: u32,
        write: impl FnOnce(&mut fs::File) -> Result<(), E>,
    ) -> Result<NewFile, E> {
        let (parent, name) = open_parent(dest)?;
        let tmp_name = crate::temp::temp_name(NEW_PREFIX);
        let mut f = parent
            .create_new(&tmp_name, mode)
            .map_err(|e| PublishError::io(parent.path(), "create file", e))?;
        let staged = NewFile {
            parent,
            tmp_name,
            name,
            dest: dest.to_path_buf(),
            published: false,
        };
        f.set_permissions(fs::Permissions::from_mode(mode))
            .map_err(|e| PublishError::io(dest, "chmod", e))?;
        write(&mut f)?;
        f.sync_all()
            .map_err(|e| PublishError::io(dest, "fsync", e))?;
        Ok(staged)
    }

    /// Renames the file into place, never replacing an entry, and makes
    /// the name durable.
    pub fn publish(&mut self) -> Result<()> {
        crate::interrupt::check()?;
        self.publish_committed()
    }

    /// [`NewFile::publish`] past the caller's point of no return (see
    /// [`NewTree::publish_committed`]).
    pub fn publish_committed(&mut self) -> Result<()> {
        rename_into_place(&self.parent, &self.tmp_name, &self.name, &self.dest)?;
        self.published = true;
        Ok(())
    }

    /// Takes a published file back (what it was published with failed).
    /// The name is removed through the handle the rename used, which
    /// `RENAME_NOREPLACE` made ours.
    pub fn retract(mut self) -> Result<()> {
        if self.published {
            self.parent
                .remove_file(&self.name)
                .map_err(|e| PublishError::io(&self.dest, "remove", e))?;
            self.published = false;
            self.tmp_name.clear();
            self.parent
                .sync()
                .map_err(|e| PublishError::io(self.parent.path(), "fsync directory", e))?;
        }
        Ok(())
    }
}

impl Drop for NewFile {
    fn drop(&mut self) {
        if !self.published && !self.tmp_name.is_empty() {
            let _ = self.parent.remove_file(&self.tmp_name);
        }
    }
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
    fn a_tree_waits_for_its_files_syncs_and_is_not_published_if_one_fails() {
        let t = tempfile::tempdir().unwrap();
        let dest = t.path().join("out");
        let mut tree = NewTree::begin(&dest, 0o755).unwrap();
        let mut f = tree.create_file("a", 0o755, 0o644).unwrap();
        std::io::Write::write_all(&mut f, b"x").unwrap();
        tree.sync_later(f, "a").unwrap();
        // A pipe cannot be synced (EINVAL): the failure surfaces at
        // publication, which must not happen.
        let (r, _w) = std::io::pipe().unwrap();
        let pipe = fs::File::from(std::os::fd::OwnedFd::from(r));
        tree.sync_later(pipe, "b").unwrap();
        let e = tree.publish().unwrap_err();
        assert!(
            matches!(&e, PublishError::Io { op: "fsync", path, .. } if path.ends_with("out/b")),
            "{e}"
        );
        assert!(!dest.exists());
        assert_eq!(fs::read_dir(t.path()).unwrap().count(), 0, "no temp left");

        // Many files (more than the queue holds) all synced, then published.
        let mut tree = NewTree::begin(&dest, 0o755).unwrap();
        for i in 0..(Syncer::QUEUE * 3) {
            let rel = format!("d/{i}");
            let mut f = tree.create_file(&rel, 0o755, 0o644).unwrap();
            std::io::Write::write_all(&mut f, rel.as_bytes()).unwrap();
            tree.sync_later(f, &rel).unwrap();
        }
        tree.wait_synced().unwrap();
        tree.publish().unwrap();
        assert_eq!(fs::read(dest.join("d/7")).unwrap(), b"d/7");
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
            std::io::Write::write_all(f, b"new").map_err(|e| PublishError::io("f", "write", e))
        });
        assert!(matches!(r, Err(PublishError::DestinationExists { .. })));
        assert_eq!(fs::read(&dest).unwrap(), b"old");
    }

    #[test]
    fn a_symlink_planted_in_a_tree_being_built_is_never_followed() {
        let t = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let mut tree = NewTree::begin(&t.path().join("out"), 0o755).unwrap();
        let tmp = fs::read_dir(t.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(NEW_PREFIX)
            })
            .expect("the temp tree");
        std::os::unix::fs::symlink(outside.path(), tmp.join("a")).unwrap();
        let e = tree.create_file("a/x", 0o755, 0o644).unwrap_err();
        assert!(matches!(e, PublishError::UnexpectedEntry { .. }), "{e}");
        assert!(
            e.to_string().contains("out/a"),
            "names the destination: {e}"
        );
        assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0);
        drop(tree);
        assert_eq!(fs::read_dir(t.path()).unwrap().count(), 0);
        assert!(outside.path().exists());
    }

    #[test]
    fn files_and_directories_get_exact_modes() {
        let t = tempfile::tempdir().unwrap();
        let dest = t.path().join("out");
        let mut tree = NewTree::begin(&dest, 0o700).unwrap();
        tree.create_file("d/run", 0o711, 0o751).unwrap();
        tree.create_dir("e/f", 0o705).unwrap();
        tree.publish().unwrap();
        let mode = |p: &str| fs::metadata(dest.join(p)).unwrap().permissions().mode() & 0o777;
        assert_eq!(
            (mode(""), mode("d"), mode("d/run"), mode("e/f")),
            (0o700, 0o711, 0o751, 0o705)
        );
    }
}
