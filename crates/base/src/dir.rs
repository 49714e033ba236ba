//! Directory handles that never follow a symlink below them.
//!
//! A [`Dir`] is a `cap_std::fs::Dir`: it reaches only what lies below it.
//! Every path the program touches is resolved one plain component at a
//! time from an open handle, never following a symlink (`O_NOFOLLOW` on
//! the final component), so a symlink planted inside the store, a bundle or
//! a tree being built fails with `ELOOP`/`ENOTDIR` instead of redirecting a
//! read or a write. Only the root the user named is opened with ambient
//! authority ([`Dir::open`]). The calls cap-std lacks are made here, on the
//! handle's descriptor, and nowhere else: `renameat2` no-replace, `syncfs`,
//! non-blocking `O_NOFOLLOW` opens of a final component, and directory
//! opens that stay readable (cap-std's may be `O_PATH`, which cannot be
//! fsynced).

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use cap_std::fs::{DirBuilder, DirBuilderExt, MetadataExt};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

/// An open directory (a `cap_std::fs::Dir`: it can only reach what lies
/// below it) plus the path it was opened as (for messages only).
#[derive(Debug)]
pub struct Dir {
    inner: cap_std::fs::Dir,
    path: PathBuf,
}

/// What kind of entry a directory listing returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
    /// Anything else (FIFO, socket, device).
    Other,
}

impl EntryKind {
    /// A short name for messages.
    pub fn describe(self) -> &'static str {
        match self {
            EntryKind::File => "file",
            EntryKind::Dir => "directory",
            EntryKind::Symlink => "symlink",
            EntryKind::Other => "special file",
        }
    }

    fn of(ft: cap_std::fs::FileType) -> Self {
        if ft.is_file() {
            EntryKind::File
        } else if ft.is_dir() {
            EntryKind::Dir
        } else if ft.is_symlink() {
            EntryKind::Symlink
        } else {
            EntryKind::Other
        }
    }
}

/// An entry as `lstat` sees it (a symlink is described, never followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// What it is.
    pub kind: EntryKind,
    /// Its size in bytes.
    pub size: u64,
    /// Its hard-link count.
    pub links: u64,
    /// Its modification time, in milliseconds since the epoch.
    pub modified_ms: i64,
}

/// What opening a regular file saw of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStat {
    /// Its size in bytes.
    pub size: u64,
    /// Its modification time, in milliseconds since the epoch.
    pub modified_ms: i64,
}

/// A modification time in milliseconds since the epoch.
fn epoch_ms(secs: i64, nsecs: i64) -> i64 {
    secs * 1000 + nsecs / 1_000_000
}

/// Outcome of a no-replace rename.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Renamed {
    /// The source now lives under the new name.
    Done,
    /// The new name already existed; nothing was moved.
    TargetExists,
}

fn not_plain(name: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{name:?} is not a single path component"),
    )
}

/// Refuses anything but one plain component: every handle walks one level
/// at a time, so no call can name a path through (or out of) a directory.
fn plain(name: &str) -> io::Result<&str> {
    if is_plain_name(OsStr::new(name)) {
        Ok(name)
    } else {
        Err(not_plain(name))
    }
}

/// A directory opened readable (so it can be listed and fsynced), never
/// through a symlink.
const DIR_FLAGS: OFlags = OFlags::DIRECTORY
    .union(OFlags::RDONLY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

impl Dir {
    /// Opens a directory by path, with the ambient authority of the
    /// process (following symlinks in `path` itself: the user named it).
    /// Every other handle descends from one opened here.
    pub fn open(path: &Path) -> io::Result<Dir> {
        // Opened readable (cap-std's own opens may be `O_PATH`, which
        // cannot be fsynced), then handed to cap-std.
        let fd = rustix::fs::open(
            path,
            OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Dir::wrap(fd, path.to_path_buf()))
    }

    fn wrap(fd: OwnedFd, path: PathBuf) -> Dir {
        Dir {
            inner: cap_std::fs::Dir::from_std_file(File::from(fd)),
            path,
        }
    }

    /// A second handle on the same directory (for another thread).
    pub fn try_clone(&self) -> io::Result<Dir> {
        Ok(Dir {
            inner: self.inner.try_clone()?,
            path: self.path.clone(),
        })
    }

    /// The path this handle was opened as.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of `name` below this directory, for messages.
    pub fn join(&self, name: impl AsRef<Path>) -> PathBuf {
        self.path.join(name)
    }

    /// Opens the subdirectory `name`, refusing a symlink.
    pub fn open_dir(&self, name: &str) -> io::Result<Dir> {
        let fd = rustix::fs::openat(self, plain(name)?, DIR_FLAGS, Mode::empty())?;
        Ok(Dir::wrap(fd, self.path.join(name)))
    }

    /// Creates the subdirectory `name` with `mode` (exactly: the umask does
    /// not apply); an existing one is an error.
    pub fn create_dir(&self, name: &str, mode: u32) -> io::Result<()> {
        self.inner
            .create_dir_with(plain(name)?, DirBuilder::new().mode(mode))?;
        self.open_dir(name)?.set_mode(mode)
    }

    /// Creates the subdirectory `name` if missing (fsyncing this directory
    /// when it did), then opens it.
    pub fn ensure_dir(&self, name: &str) -> io::Result<Dir> {
        match self
            .inner
            .create_dir_with(plain(name)?, DirBuilder::new().mode(0o755))
        {
            Ok(()) => self.sync()?,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        self.open_dir(name)
    }

    /// Opens the regular file `name` for reading; a symlink or anything
    /// other than a regular file is refused.
    pub fn open_file(&self, name: &str) -> io::Result<File> {
        Ok(self.open_file_stat(name)?.0)
    }

    /// [`Dir::open_file`], with the size and modification time the check
    /// for a regular file already read (no second stat).
    pub fn open_file_stat(&self, name: &str) -> io::Result<(File, FileStat)> {
        // cap-std cannot open with O_NONBLOCK (a FIFO must not hang the
        // open), so this is one O_NOFOLLOW openat on the handle.
        let fd = rustix::fs::openat(
            self,
            plain(name)?,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
            Mode::empty(),
        )?;
        let st = rustix::fs::fstat(&fd)?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Err(Errno::INVAL.into());
        }
        let stat = FileStat {
            size: st.st_size as u64,
            modified_ms: epoch_ms(st.st_mtime, st.st_mtime_nsec as i64),
        };
        Ok((File::from(fd), stat))
    }

    /// Creates `name`, which must not exist (`O_EXCL`), for writing, with
    /// `mode` (exactly: the umask does not apply).
    pub fn create_new(&self, name: &str, mode: u32) -> io::Result<File> {
        let fd: OwnedFd = rustix::fs::openat(
            self,
            plain(name)?,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        )?;
        Ok(File::from(fd))
    }

    /// What `name` is, without following a symlink; `None` if absent.
    pub fn entry(&self, name: &str) -> io::Result<Option<Entry>> {
        match self.inner.symlink_metadata(plain(name)?) {
            Ok(m) => Ok(Some(Entry {
                kind: EntryKind::of(m.file_type()),
                size: m.len(),
                links: m.nlink(),
                modified_ms: epoch_ms(m.mtime(), m.mtime_nsec()),
            })),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Lists entries (without `.` and `..`), with their kinds, by name.
    pub fn entries(&self) -> io::Result<Vec<(String, EntryKind)>> {
        let mut out = Vec::new();
        for entry in self.inner.entries()? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            out.push((name, EntryKind::of(entry.file_type()?)));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// Renames `from` (in this directory) to `to` in `dest`, never replacing
    /// an existing `to`. Uses `renameat2(RENAME_NOREPLACE)` (which cap-std
    /// lacks); where the filesystem lacks it, `linkat` + `unlinkat` (which
    /// also never replaces). `EXDEV` is an error: the store never copies to
    /// publish.
    pub fn rename_no_replace(&self, from: &str, dest: &Dir, to: &str) -> io::Result<Renamed> {
        let (from, to) = (plain(from)?, plain(to)?);
        match rustix::fs::renameat_with(self, from, dest, to, RenameFlags::NOREPLACE) {
            Ok(()) => Ok(Renamed::Done),
            Err(Errno::EXIST) => Ok(Renamed::TargetExists),
            Err(Errno::INVAL) | Err(Errno::NOSYS) | Err(Errno::OPNOTSUPP) => {
                match rustix::fs::linkat(self, from, dest, to, AtFlags::empty()) {
                    Ok(()) => {
                        self.remove_file(from)?;
                        Ok(Renamed::Done)
                    }
                    Err(Errno::EXIST) => Ok(Renamed::TargetExists),
                    Err(e) => Err(e.into()),
                }
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Renames `from` to `to`, both in this directory, replacing `to`
    /// atomically: for the two files coffer rewrites in place, a bundle's
    /// own manifest (`bundle seal`) and a store's format marker (see
    /// [`Dir::rename_replacing_into`]); everything else is published with
    /// [`Dir::rename_no_replace`].
    pub fn rename_replacing(&self, from: &str, to: &str) -> io::Result<()> {
        self.rename_replacing_into(from, self, to)
    }

    /// Renames `from` to `to` in `dest`, replacing `to` atomically (a
    /// store's `STORE-FORMAT`, once, from version 1 to 2).
    pub fn rename_replacing_into(&self, from: &str, dest: &Dir, to: &str) -> io::Result<()> {
        let (from, to) = (plain(from)?, plain(to)?);
        rustix::fs::renameat(self, from, dest, to).map_err(Into::into)
    }

    /// Removes the file `name`; an absent file is not an error.
    pub fn remove_file(&self, name: &str) -> io::Result<()> {
        match self.inner.remove_file(plain(name)?) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// Removes the directory `name` and everything below it, never
    /// following a symlink (one is removed as an entry); an absent one is
    /// not an error.
    pub fn remove_tree(&self, name: &str) -> io::Result<()> {
        match self.inner.remove_dir_all(plain(name)?) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// Sets this directory's own mode (through the handle: a symlink
    /// swapped in for its name since it was opened changes nothing).
    pub fn set_mode(&self, mode: u32) -> io::Result<()> {
        rustix::fs::fchmod(self, Mode::from_raw_mode(mode)).map_err(Into::into)
    }

    /// Flushes this directory's entries to stable storage.
    pub fn sync(&self) -> io::Result<()> {
        rustix::fs::fsync(self).map_err(Into::into)
    }

    /// Flushes the whole filesystem this directory lives on (one pass for a
    /// batch of writes instead of one fsync per file; cap-std lacks it).
    pub fn sync_filesystem(&self) -> io::Result<()> {
        rustix::fs::syncfs(self).map_err(Into::into)
    }
}

impl AsFd for Dir {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.inner.as_fd()
    }
}

/// True when `name` is a single plain path component.
pub fn is_plain_name(name: &OsStr) -> bool {
    let b = name.as_encoded_bytes();
    !b.is_empty() && b != b"." && b != b".." && !b.contains(&b'/') && !b.contains(&0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn open_file_refuses_a_symlink() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("real"), b"x").unwrap();
        symlink(t.path().join("real"), t.path().join("link")).unwrap();
        let d = Dir::open(t.path()).unwrap();
        assert!(d.open_file("real").is_ok());
        let e = d.open_file("link").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(Errno::LOOP.raw_os_error()));
    }

    #[test]
    fn open_dir_refuses_a_symlinked_directory() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("real")).unwrap();
        symlink(t.path().join("real"), t.path().join("link")).unwrap();
        let d = Dir::open(t.path()).unwrap();
        assert!(d.open_dir("link").is_err());
    }

    #[test]
    fn rename_no_replace_never_replaces_the_target() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("a"), b"new").unwrap();
        std::fs::write(t.path().join("b"), b"old").unwrap();
        let d = Dir::open(t.path()).unwrap();
        assert_eq!(
            d.rename_no_replace("a", &d, "b").unwrap(),
            Renamed::TargetExists
        );
        assert_eq!(std::fs::read(t.path().join("b")).unwrap(), b"old");
        assert_eq!(d.rename_no_replace("a", &d, "c").unwrap(), Renamed::Done);
        assert_eq!(std::fs::read(t.path().join("c")).unwrap(), b"new");
    }

    #[test]
    fn create_new_refuses_an_existing_name() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("a"), b"old").unwrap();
        let d = Dir::open(t.path()).unwrap();
        assert!(d.create_new("a", 0o600).is_err());
        assert_eq!(std::fs::read(t.path().join("a")).unwrap(), b"old");
    }

    #[test]
    fn a_handle_refuses_anything_but_one_plain_component() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("sub")).unwrap();
        std::fs::write(t.path().join("sub/f"), b"x").unwrap();
        let d = Dir::open(t.path()).unwrap();
        for name in ["sub/f", "..", ".", "", "/etc/passwd"] {
            let e = d.open_file(name).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{name:?}");
            assert!(d.entry(name).is_err(), "{name:?}");
        }
        assert!(d.open_dir("sub").unwrap().open_file("f").is_ok());
    }

    #[test]
    fn entry_describes_a_symlink_without_following_it() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("real"), b"abc").unwrap();
        std::fs::hard_link(t.path().join("real"), t.path().join("twin")).unwrap();
        symlink(t.path().join("real"), t.path().join("link")).unwrap();
        let d = Dir::open(t.path()).unwrap();
        let real = d.entry("real").unwrap().unwrap();
        assert_eq!((real.kind, real.size, real.links), (EntryKind::File, 3, 2));
        assert!(real.modified_ms > 0);
        assert_eq!(d.entry("link").unwrap().unwrap().kind, EntryKind::Symlink);
        assert_eq!(d.entry("absent").unwrap(), None);
    }

    #[test]
    fn create_dir_sets_the_exact_mode_and_remove_tree_never_follows() {
        let t = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), b"k").unwrap();
        let d = Dir::open(t.path()).unwrap();
        d.create_dir("tree", 0o750).unwrap();
        let mode = std::fs::metadata(t.path().join("tree")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(mode.permissions().mode() & 0o777, 0o750);
        assert!(d.create_dir("tree", 0o750).is_err());
        let tree = d.open_dir("tree").unwrap();
        tree.create_dir("inner", 0o700).unwrap();
        tree.open_dir("inner")
            .unwrap()
            .create_new("f", 0o600)
            .unwrap();
        symlink(outside.path(), t.path().join("tree/out")).unwrap();
        d.remove_tree("tree").unwrap();
        assert!(!t.path().join("tree").exists());
        assert!(outside.path().join("keep").exists());
        d.remove_tree("tree").unwrap();
    }
}
