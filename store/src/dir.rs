//! Directory handles that never follow a symlink below them.
//!
//! Every path the store touches is resolved one component at a time with
//! `*at` system calls relative to an open directory descriptor, with
//! `O_NOFOLLOW`. A symlink planted anywhere inside the store therefore fails
//! with `ELOOP`/`ENOTDIR` instead of redirecting a read or a write. Only the
//! store root itself is opened by path, as the user named it.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

/// An open directory plus the path it was opened as (for messages only).
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
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

    fn of(ft: FileType) -> Self {
        match ft {
            FileType::RegularFile => EntryKind::File,
            FileType::Directory => EntryKind::Dir,
            FileType::Symlink => EntryKind::Symlink,
            _ => EntryKind::Other,
        }
    }
}

/// Outcome of a no-replace rename.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Renamed {
    /// The source now lives under the new name.
    Done,
    /// The new name already existed; nothing was moved.
    TargetExists,
}

const DIR_FLAGS: OFlags = OFlags::DIRECTORY
    .union(OFlags::RDONLY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

impl Dir {
    /// Opens a directory by path (following symlinks in `path` itself: the
    /// caller chose it).
    pub fn open(path: &Path) -> io::Result<Dir> {
        let fd = rustix::fs::open(
            path,
            OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Dir {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// A second handle on the same directory (for another thread).
    pub fn try_clone(&self) -> io::Result<Dir> {
        Ok(Dir {
            fd: rustix::io::fcntl_dupfd_cloexec(&self.fd, 0)?,
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
        let fd = rustix::fs::openat(&self.fd, name, DIR_FLAGS, Mode::empty())?;
        Ok(Dir {
            fd,
            path: self.path.join(name),
        })
    }

    /// Creates the subdirectory `name` if missing (fsyncing this directory
    /// when it did), then opens it.
    pub fn ensure_dir(&self, name: &str) -> io::Result<Dir> {
        match rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(0o755)) {
            Ok(()) => self.sync()?,
            Err(Errno::EXIST) => {}
            Err(e) => return Err(e.into()),
        }
        self.open_dir(name)
    }

    /// Opens the regular file `name` for reading; a symlink or anything
    /// other than a regular file is refused.
    pub fn open_file(&self, name: &str) -> io::Result<File> {
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
            Mode::empty(),
        )?;
        let st = rustix::fs::fstat(&fd)?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Err(Errno::INVAL.into());
        }
        Ok(File::from(fd))
    }

    /// Creates `name`, which must not exist (`O_EXCL`), for writing.
    pub fn create_new(&self, name: &str, mode: u32) -> io::Result<File> {
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        )?;
        Ok(File::from(fd))
    }

    /// What `name` is, without following a symlink; `None` if absent.
    pub fn entry_kind(&self, name: &str) -> io::Result<Option<(EntryKind, rustix::fs::Stat)>> {
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some((
                EntryKind::of(FileType::from_raw_mode(st.st_mode)),
                st,
            ))),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Lists entries (without `.` and `..`), with their kinds.
    pub fn entries(&self) -> io::Result<Vec<(String, EntryKind)>> {
        let dup = rustix::fs::openat(&self.fd, ".", DIR_FLAGS, Mode::empty())?;
        let mut out = Vec::new();
        for entry in rustix::fs::Dir::read_from(&dup)? {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            let name = String::from_utf8_lossy(name).into_owned();
            let kind = match entry.file_type() {
                FileType::Unknown => match self.entry_kind(&name)? {
                    Some((k, _)) => k,
                    None => continue,
                },
                ft => EntryKind::of(ft),
            };
            out.push((name, kind));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// Renames `from` (in this directory) to `to` in `dest`, never replacing
    /// an existing `to`. Uses `renameat2(RENAME_NOREPLACE)`; where the
    /// filesystem lacks it, `linkat` + `unlinkat` (which also never
    /// replaces). `EXDEV` is an error: the store never copies to publish.
    pub fn rename_no_replace(&self, from: &str, dest: &Dir, to: &str) -> io::Result<Renamed> {
        match rustix::fs::renameat_with(&self.fd, from, &dest.fd, to, RenameFlags::NOREPLACE) {
            Ok(()) => Ok(Renamed::Done),
            Err(Errno::EXIST) => Ok(Renamed::TargetExists),
            Err(Errno::INVAL) | Err(Errno::NOSYS) | Err(Errno::OPNOTSUPP) => {
                match rustix::fs::linkat(&self.fd, from, &dest.fd, to, AtFlags::empty()) {
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

    /// Removes the file `name`; an absent file is not an error.
    pub fn remove_file(&self, name: &str) -> io::Result<()> {
        match rustix::fs::unlinkat(&self.fd, name, AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Flushes this directory's entries to stable storage.
    pub fn sync(&self) -> io::Result<()> {
        rustix::fs::fsync(&self.fd).map_err(Into::into)
    }

    /// Flushes the whole filesystem this directory lives on (one pass for a
    /// batch of writes instead of one fsync per file).
    pub fn sync_filesystem(&self) -> io::Result<()> {
        rustix::fs::syncfs(&self.fd).map_err(Into::into)
    }
}

impl AsFd for Dir {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
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
}
