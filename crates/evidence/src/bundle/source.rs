//! Reading a bundle directory safely.
//!
//! The bundle root is opened once; every evidence path is then walked one
//! component at a time with `O_NOFOLLOW`, so a symlink anywhere on a path is
//! refused rather than followed. A file counts as evidence only if it is a
//! regular file with exactly one link, and it must be the same file, with
//! the same size and modification time, after it was read.

use coffer_base::codes;
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rustix::io::Errno;

use coffer_base::dir::{Dir, EntryKind};
use coffer_base::issue::Issue;

/// An opened bundle root.
pub struct BundleDir {
    root: Dir,
}

/// Identity of a file when it was opened, to detect change while reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
}

impl FileStamp {
    /// Reads the stamp of an open file.
    pub fn of(f: &File) -> std::io::Result<FileStamp> {
        let m = f.metadata()?;
        Ok(FileStamp {
            dev: m.dev(),
            ino: m.ino(),
            size: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
        })
    }

    /// The file size.
    pub fn size(&self) -> u64 {
        self.size
    }
}

impl BundleDir {
    /// Opens `path` as a bundle root; the root itself must not be a symlink.
    pub fn open(path: &Path) -> Result<BundleDir, Issue> {
        let shown = path.display().to_string();
        match std::fs::symlink_metadata(path) {
            Err(e) => return Err(Issue::file(codes::io::NOT_FOUND, &shown, format!("{shown}: {e}"))),
            Ok(m) if m.file_type().is_symlink() => {
                return Err(Issue::file(codes::validation::SYMLINK, &shown, format!("{shown}: the bundle root is a symlink; coffer reads bundles only through real directories")))
            }
            Ok(m) if !m.is_dir() => return Err(Issue::file(codes::validation::NOT_A_DIRECTORY, &shown, format!("{shown}: not a directory"))),
            Ok(_) => {}
        }
        let root = Dir::open(path)
            .map_err(|e| Issue::file(codes::io::ERROR, &shown, format!("{shown}: {e}")))?;
        Ok(BundleDir { root })
    }

    /// A bundle rooted at an open handle (a tree being built, reached
    /// through the handle that built it).
    pub fn from_dir(root: Dir) -> BundleDir {
        BundleDir { root }
    }

    /// The handle on the bundle root.
    pub fn dir(&self) -> &Dir {
        &self.root
    }

    /// The root path, for messages.
    pub fn path(&self) -> &Path {
        self.root.path()
    }

    /// The directory holding `rel`'s final component (walked one
    /// directory at a time, refusing a symlink or a non-directory on the
    /// way; `None` for the root) and that component.
    fn parent_of<'r>(&self, rel: &'r str) -> Result<(Option<Dir>, &'r str), Issue> {
        let mut parts: Vec<&str> = rel.split('/').collect();
        let name = parts.pop().expect("split yields at least one part");
        let mut dir: Option<Dir> = None;
        let mut walked = PathBuf::new();
        for part in parts {
            walked.push(part);
            let parent = dir.as_ref().unwrap_or(&self.root);
            match parent.entry(part).map(|e| e.map(|e| e.kind)) {
                Ok(Some(EntryKind::Dir)) => {}
                Ok(Some(EntryKind::Symlink)) => {
                    return Err(Issue::file(
                        codes::validation::SYMLINK,
                        rel,
                        format!("{rel}: {} is a symlink; never followed", walked.display()),
                    ))
                }
                Ok(Some(_)) => {
                    return Err(Issue::file(
                        codes::validation::NOT_A_DIRECTORY,
                        rel,
                        format!("{rel}: {} is not a directory", walked.display()),
                    ))
                }
                Ok(None) => {
                    return Err(Issue::file(
                        codes::validation::MISSING_FILE,
                        rel,
                        format!("{rel}: {} does not exist", walked.display()),
                    ))
                }
                Err(e) => return Err(Issue::file(codes::io::ERROR, rel, format!("{rel}: {e}"))),
            }
            dir = Some(parent.open_dir(part).map_err(|e| self.open_error(rel, e))?);
        }
        Ok((dir, name))
    }

    /// Refuses anything at `name` but a regular file with one link.
    fn check_final(parent: &Dir, name: &str, rel: &str) -> Result<(), Issue> {
        match parent.entry(name).map(|e| e.map(|e| (e.kind, e.links))) {
            Ok(Some((EntryKind::File, links))) if links > 1 => {
                return Err(Issue::file(
                    codes::validation::HARD_LINK,
                    rel,
                    format!("{rel}: has {} links; evidence must have exactly one", links),
                ))
            }
            Ok(Some((EntryKind::File, _))) => {}
            Ok(Some((EntryKind::Symlink, _))) => {
                return Err(Issue::file(
                    codes::validation::SYMLINK,
                    rel,
                    format!("{rel}: is a symlink; never followed"),
                ))
            }
            Ok(Some((EntryKind::Dir, _))) => {
                return Err(Issue::file(
                    codes::validation::NOT_REGULAR_FILE,
                    rel,
                    format!("{rel}: is a directory"),
                ))
            }
            Ok(Some((EntryKind::Other, _))) => {
                return Err(Issue::file(
                    codes::validation::SPECIAL_FILE,
                    rel,
                    format!("{rel}: is a FIFO, socket or device"),
                ))
            }
            Ok(None) => {
                return Err(Issue::file(
                    codes::validation::MISSING_FILE,
                    rel,
                    format!("{rel}: does not exist"),
                ))
            }
            Err(e) => return Err(Issue::file(codes::io::ERROR, rel, format!("{rel}: {e}"))),
        }
        Ok(())
    }

    /// Opens the evidence file at a (validated) bundle-relative path.
    pub fn open_evidence(&self, rel: &str) -> Result<(File, FileStamp), Issue> {
        let (dir, name) = self.parent_of(rel)?;
        let parent = dir.as_ref().unwrap_or(&self.root);
        Self::check_final(parent, name, rel)?;
        let f = parent
            .open_file(name)
            .map_err(|e| self.open_error(rel, e))?;
        let stamp = FileStamp::of(&f)
            .map_err(|e| Issue::file(codes::io::ERROR, rel, format!("{rel}: {e}")))?;
        // Re-check the link count on the open file: a link made between the
        // lstat and the open must not slip through.
        let nlink = f.metadata().map(|m| m.nlink()).unwrap_or(0);
        if nlink != 1 {
            return Err(Issue::file(
                codes::validation::HARD_LINK,
                rel,
                format!("{rel}: has {nlink} links; evidence must have exactly one"),
            ));
        }
        Ok((f, stamp))
    }

    fn open_error(&self, rel: &str, e: std::io::Error) -> Issue {
        match e.raw_os_error() {
            Some(c) if c == Errno::LOOP.raw_os_error() || c == Errno::NOTDIR.raw_os_error() => {
                Issue::file(
                    codes::validation::SYMLINK,
                    rel,
                    format!("{rel}: a path component became a symlink while opening"),
                )
            }
            Some(c) if c == Errno::INVAL.raw_os_error() => Issue::file(
                codes::validation::SPECIAL_FILE,
                rel,
                format!("{rel}: not a regular file"),
            ),
            Some(c) if c == Errno::NOENT.raw_os_error() => Issue::file(
                codes::validation::MISSING_FILE,
                rel,
                format!("{rel}: does not exist"),
            ),
            _ => Issue::file(codes::io::ERROR, rel, format!("{rel}: {e}")),
        }
    }

    /// An issue if the file is no longer what it was when opened.
    pub fn changed(rel: &str, f: &File, before: &FileStamp) -> Option<Issue> {
        match FileStamp::of(f) {
            Ok(now) if now == *before => None,
            _ => Some(Issue::file(
                codes::io::SOURCE_CHANGED,
                rel,
                format!("{rel}: changed while it was read"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_file_that_changes_while_read_is_reported() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("e.jsonl"), b"{}\n").unwrap();
        let b = BundleDir::open(t.path()).unwrap();
        let (f, stamp) = b.open_evidence("e.jsonl").unwrap();
        assert!(BundleDir::changed("e.jsonl", &f, &stamp).is_none());
        std::fs::OpenOptions::new()
            .append(true)
            .open(t.path().join("e.jsonl"))
            .unwrap()
            .write_all(b"{}\n")
            .unwrap();
        let issue = BundleDir::changed("e.jsonl", &f, &stamp).unwrap();
        assert_eq!(issue.code, "io.source_changed");
    }

    #[test]
    fn missing_and_non_directory_components_are_coded() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("file"), b"x").unwrap();
        let b = BundleDir::open(t.path()).unwrap();
        assert_eq!(
            b.open_evidence("absent").err().unwrap().code,
            "validation.missing_file"
        );
        assert_eq!(
            b.open_evidence("file/x").err().unwrap().code,
            "validation.not_a_directory"
        );
        assert_eq!(
            b.open_evidence("nodir/x").err().unwrap().code,
            "validation.missing_file"
        );
    }
}
