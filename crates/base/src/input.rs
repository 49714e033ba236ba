//! Files a user names on the command line or in a document: opened as
//! regular files only, read with a bound, and shown in escaped form.
//!
//! A path the user typed may pass through symlinks (the user chose it), but
//! what it finally names must be a regular file: a FIFO would block a read
//! forever and `/dev/zero` would never end. The open is non-blocking, so a
//! FIFO without a writer is refused at once instead of hanging in `open(2)`,
//! and the type is checked on the open descriptor (no race with a rename).
//! Every whole-file read stops one byte past its bound.

use crate::codes;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{FileType, Mode, OFlags};

/// Why a named input could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// It is a directory, FIFO, socket or device.
    #[error("{}: is a {what}, not a regular file", escaped(path))]
    NotRegular {
        /// The input as named.
        path: PathBuf,
        /// What it is instead.
        what: &'static str,
    },
    /// It holds more than the caller's bound.
    #[error("{}: larger than {max} bytes", escaped(path))]
    TooLarge {
        /// The input as named.
        path: PathBuf,
        /// The bound, in bytes.
        max: u64,
    },
    /// The operating system refused an operation.
    #[error("{}: {op}: {source}", escaped(path))]
    Io {
        /// The input as named.
        path: PathBuf,
        /// What was being done.
        op: &'static str,
        /// The OS error.
        source: io::Error,
    },
}

impl InputError {
    /// The stable issue code.
    pub fn code(&self) -> &'static str {
        match self {
            InputError::NotRegular { .. } => codes::validation::NOT_REGULAR_FILE,
            InputError::TooLarge { .. } => codes::limit::INPUT_BYTES,
            InputError::Io { source, .. } => crate::os_code::io_code(source),
        }
    }

    /// The input the error is about.
    pub fn path(&self) -> &Path {
        match self {
            InputError::NotRegular { path, .. }
            | InputError::TooLarge { path, .. }
            | InputError::Io { path, .. } => path,
        }
    }
}

/// Names a non-regular file type for messages.
pub fn describe(ft: FileType) -> &'static str {
    match ft {
        FileType::RegularFile => "regular file",
        FileType::Directory => "directory",
        FileType::Symlink => "symlink",
        FileType::Fifo => "FIFO",
        FileType::Socket => "socket",
        FileType::CharacterDevice => "character device",
        FileType::BlockDevice => "block device",
        FileType::Unknown => "special file",
    }
}

/// Opens a user-named input for reading; anything but a regular file is
/// refused without blocking.
pub fn open(path: &Path) -> Result<File, InputError> {
    let io_err = |op, source: io::Error| InputError::Io {
        path: path.to_path_buf(),
        op,
        source,
    };
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )
    .map_err(|e| io_err("open", e.into()))?;
    let st = rustix::fs::fstat(&fd).map_err(|e| io_err("stat", e.into()))?;
    let ft = FileType::from_raw_mode(st.st_mode);
    if ft != FileType::RegularFile {
        return Err(InputError::NotRegular {
            path: path.to_path_buf(),
            what: describe(ft),
        });
    }
    Ok(File::from(fd))
}

/// Reads at most `max` bytes from `r`; more is [`InputError::TooLarge`].
pub fn read_bounded(r: impl Read, path: &Path, max: u64) -> Result<Vec<u8>, InputError> {
    let mut buf = Vec::new();
    r.take(max.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|source| InputError::Io {
            path: path.to_path_buf(),
            op: "read",
            source,
        })?;
    if buf.len() as u64 > max {
        return Err(InputError::TooLarge {
            path: path.to_path_buf(),
            max,
        });
    }
    Ok(buf)
}

/// Opens and reads a whole user-named input of at most `max` bytes.
pub fn read(path: &Path, max: u64) -> Result<Vec<u8>, InputError> {
    read_bounded(open(path)?, path, max)
}

/// A path as text for messages and JSON: UTF-8 as it is, every byte of an
/// invalid sequence as `\xNN`, and then a backslash itself as `\\`
/// (ordinary paths read as typed). Distinct paths give distinct texts.
pub fn escaped(path: &Path) -> String {
    let bytes = path.as_os_str().as_bytes();
    match std::str::from_utf8(bytes) {
        // A valid name that reads like an escape is escaped too, so it
        // stays distinct from the name it imitates.
        Ok(s) if !s.contains("\\x") => s.to_string(),
        _ => {
            let mut out = String::with_capacity(bytes.len() + 8);
            for chunk in bytes.utf8_chunks() {
                for c in chunk.valid().chars() {
                    if c == '\\' {
                        out.push_str("\\\\");
                    } else {
                        out.push(c);
                    }
                }
                for b in chunk.invalid() {
                    let _ = write!(out, "\\x{b:02x}");
                }
            }
            out
        }
    }
}

/// Serializes a path with [`escaped`] (for `#[serde(serialize_with)]`).
pub fn serialize_escaped<S: serde::Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&escaped(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &p,
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let e = open(&p).unwrap_err();
        assert_eq!(e.code(), "validation.not_regular_file");
        assert!(e.to_string().contains("FIFO"), "{e}");
    }

    #[test]
    fn a_device_is_refused_and_a_directory_too() {
        let e = read(Path::new("/dev/zero"), 16).unwrap_err();
        assert_eq!(e.code(), "validation.not_regular_file");
        let t = tempfile::tempdir().unwrap();
        assert_eq!(
            open(t.path()).unwrap_err().code(),
            "validation.not_regular_file"
        );
    }

    #[test]
    fn reads_stop_one_byte_past_the_bound() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("f");
        std::fs::write(&p, [7u8; 17]).unwrap();
        assert_eq!(read(&p, 17).unwrap().len(), 17);
        let e = read(&p, 16).unwrap_err();
        assert_eq!(e.code(), "limit.input_bytes");
    }

    #[test]
    fn escaped_keeps_utf8_and_marks_invalid_bytes() {
        assert_eq!(escaped(Path::new("a/b c.txt")), "a/b c.txt");
        assert_eq!(escaped(Path::new("dir\\name")), "dir\\name");
        let p = Path::new(OsStr::from_bytes(b"a/\xff\xfeb"));
        assert_eq!(escaped(p), "a/\\xff\\xfeb");
        // A real name that reads like an escape stays distinct from one.
        let lookalike = Path::new("a/\\xff\\xfeb");
        assert_ne!(escaped(lookalike), escaped(p));
    }
}
