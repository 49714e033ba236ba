//! Stable codes for OS errors (`io.no_space`, `io.read_only`, ...), the
//! one mapping every error type of the workspace uses.

use crate::codes;
use std::io;

/// Classifies an OS error into a stable code.
pub fn io_code(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(c) if c == rustix::io::Errno::NOSPC.raw_os_error() => codes::io::NO_SPACE,
        Some(c) if c == rustix::io::Errno::DQUOT.raw_os_error() => codes::io::NO_SPACE,
        Some(c) if c == rustix::io::Errno::ROFS.raw_os_error() => codes::io::READ_ONLY,
        Some(c) if c == rustix::io::Errno::ACCESS.raw_os_error() => codes::io::PERMISSION_DENIED,
        Some(c) if c == rustix::io::Errno::PERM.raw_os_error() => codes::io::PERMISSION_DENIED,
        Some(c) if c == rustix::io::Errno::LOOP.raw_os_error() => {
            codes::integrity::UNEXPECTED_ENTRY
        }
        Some(c) if c == rustix::io::Errno::XDEV.raw_os_error() => codes::io::CROSS_DEVICE,
        // Errors wrapped by a library (tempfile adds the path) keep their
        // kind but lose the raw code.
        _ => match e.kind() {
            io::ErrorKind::NotFound => codes::io::NOT_FOUND,
            io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => codes::io::NO_SPACE,
            io::ErrorKind::ReadOnlyFilesystem => codes::io::READ_ONLY,
            io::ErrorKind::PermissionDenied => codes::io::PERMISSION_DENIED,
            io::ErrorKind::CrossesDevices => codes::io::CROSS_DEVICE,
            _ => codes::io::ERROR,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_errors_map_to_stable_codes() {
        let e = |errno: rustix::io::Errno| io::Error::from_raw_os_error(errno.raw_os_error());
        assert_eq!(io_code(&e(rustix::io::Errno::NOSPC)), "io.no_space");
        assert_eq!(io_code(&e(rustix::io::Errno::ROFS)), "io.read_only");
        assert_eq!(
            io_code(&e(rustix::io::Errno::LOOP)),
            "integrity.unexpected_entry"
        );
        assert_eq!(io_code(&e(rustix::io::Errno::NOENT)), "io.not_found");
        // As tempfile returns them: the OS error wrapped with its path.
        let wrapped = |errno: rustix::io::Errno| {
            let inner = e(errno);
            io::Error::new(inner.kind(), format!("{inner} at /x/.coffer-new.abc"))
        };
        assert_eq!(
            io_code(&wrapped(rustix::io::Errno::ACCESS)),
            "io.permission_denied"
        );
        assert_eq!(io_code(&wrapped(rustix::io::Errno::NOSPC)), "io.no_space");
        assert_eq!(io_code(&wrapped(rustix::io::Errno::ROFS)), "io.read_only");
        assert_eq!(io_code(&e(rustix::io::Errno::IO)), "io.error");
    }
}
