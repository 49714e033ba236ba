//! The one safe-path validator: bundle-relative paths as docs/CONTRACT.md defines them.
//!
//! `/`-separated, no leading `/`, no empty, `.` or `..` segment; a segment
//! starts with `[A-Za-z0-9]`, ends with `[A-Za-z0-9_-]`, holds only
//! `[A-Za-z0-9._-]`, is at most 255 bytes; at most 64 segments and 960 bytes;
//! no `.git` segment; no Windows device name (with or without extension).
//! Across a set: unique under case folding, and no path is an ancestor of
//! another. `manifest.json` is reserved for the manifest.

use coffer_base::codes;
use std::collections::HashMap;

/// Longest path, in bytes.
pub const MAX_PATH_BYTES: usize = 960;
/// Longest segment, in bytes.
pub const MAX_SEGMENT_BYTES: usize = 255;
/// Most segments in a path.
pub const MAX_SEGMENTS: usize = 64;
/// The manifest's own name, reserved.
pub const MANIFEST: &str = "manifest.json";

const DEVICES: &[&str] = &["con", "prn", "aux", "nul"];

/// Why a path is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathError {
    /// Stable code.
    pub code: &'static str,
    /// Explanation.
    pub message: String,
}

fn refuse(code: &'static str, message: String) -> Result<(), PathError> {
    Err(PathError { code, message })
}

/// True for a Windows device name, with or without an extension (`CON`,
/// `nul.txt`, `COM1`): such a name opens the device there.
pub fn is_device(segment: &str) -> bool {
    let stem = segment.split('.').next().unwrap_or("").to_ascii_lowercase();
    DEVICES.contains(&stem.as_str())
        || ((stem.starts_with("com") || stem.starts_with("lpt"))
            && stem.len() == 4
            && matches!(stem.as_bytes()[3], b'1'..=b'9'))
}

/// Checks one segment of `path`: not empty, `.` or `..`, within the
/// segment limit, not `.git`, in the safe set, and no Windows device name.
fn check_segment(path: &str, seg: &str) -> Result<(), PathError> {
    match seg {
        "" => {
            return refuse(
                codes::validation::UNSAFE_PATH,
                format!("{path:?} has an empty segment"),
            )
        }
        "." | ".." => {
            return refuse(
                codes::validation::UNSAFE_PATH,
                format!("{path:?} has a {seg:?} segment"),
            )
        }
        _ => {}
    }
    if seg.len() > MAX_SEGMENT_BYTES {
        return refuse(
            codes::limit::PATH_SEGMENT_BYTES,
            format!("a segment of {path:?} is longer than {MAX_SEGMENT_BYTES} bytes"),
        );
    }
    if seg.eq_ignore_ascii_case(".git") {
        return refuse(
            codes::validation::RESERVED_PATH,
            format!("{path:?} has a .git segment"),
        );
    }
    let b = seg.as_bytes();
    let inner_ok = b
        .iter()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'));
    let first_ok = b[0].is_ascii_alphanumeric();
    let last_ok = b[b.len() - 1].is_ascii_alphanumeric() || matches!(b[b.len() - 1], b'_' | b'-');
    if !(inner_ok && first_ok && last_ok) {
        return refuse(
            codes::validation::UNSAFE_PATH,
            format!("segment {seg:?} of {path:?} has characters outside the safe set"),
        );
    }
    if is_device(seg) {
        return refuse(
            codes::validation::DEVICE_NAME,
            format!("segment {seg:?} of {path:?} is a Windows device name"),
        );
    }
    Ok(())
}

/// Checks one bundle-relative path.
pub fn check_relative_path(path: &str) -> Result<(), PathError> {
    if path.is_empty() {
        return refuse(codes::validation::UNSAFE_PATH, "empty path".into());
    }
    if path.starts_with('/') {
        return refuse(
            codes::validation::UNSAFE_PATH,
            format!("{path:?} is absolute"),
        );
    }
    if path.len() > MAX_PATH_BYTES {
        return refuse(
            codes::limit::PATH_BYTES,
            format!(
                "path is {} bytes; the limit is {MAX_PATH_BYTES}",
                path.len()
            ),
        );
    }
    let segments: Vec<&str> = path.split('/').collect();
    if segments.len() > MAX_SEGMENTS {
        return refuse(
            codes::limit::PATH_SEGMENTS,
            format!(
                "path has {} segments; the limit is {MAX_SEGMENTS}",
                segments.len()
            ),
        );
    }
    for seg in &segments {
        check_segment(path, seg)?;
    }
    if segments[0] == MANIFEST {
        return refuse(
            codes::validation::RESERVED_PATH,
            format!("{path:?} is reserved for the bundle manifest"),
        );
    }
    Ok(())
}

/// Checks a set of paths against each other: exact duplicates, case-fold
/// collisions and ancestors. Returns `(index, error)` for each offender
/// (the later of a colliding pair; the ancestor of an ancestor pair).
pub fn check_path_set(paths: &[&str]) -> Vec<(usize, PathError)> {
    let mut out = Vec::new();
    let mut folded: HashMap<String, usize> = HashMap::new();
    for (i, p) in paths.iter().enumerate() {
        let f = p.to_ascii_lowercase();
        if let Some(&j) = folded.get(&f) {
            let code = if paths[j] == *p {
                codes::validation::DUPLICATE_PATH
            } else {
                codes::validation::CASE_FOLD_COLLISION
            };
            out.push((
                i,
                PathError {
                    code,
                    message: format!("{p:?} collides with {:?}", paths[j]),
                },
            ));
        } else {
            folded.insert(f, i);
        }
    }
    for p in paths {
        let f = p.to_ascii_lowercase();
        let mut prefix = String::new();
        for seg in f.split('/').take(f.split('/').count() - 1) {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(seg);
            if let Some(&j) = folded.get(&prefix) {
                // Reported on the ancestor: it is the entry that cannot be a
                // file when the other path needs it to be a directory.
                out.push((
                    j,
                    PathError {
                        code: codes::validation::PATH_ANCESTOR,
                        message: format!("{:?} is an ancestor of {p:?}", paths[j]),
                    },
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(p: &str) -> &'static str {
        check_relative_path(p).err().map(|e| e.code).unwrap_or("ok")
    }

    #[test]
    fn ordinary_paths_pass() {
        for p in [
            "session.jsonl",
            "telemetry/trace.json",
            "a",
            "A-b_c.d-",
            "x/y/z_",
            "con2.txt",
            "com0",
            "lpt10",
        ] {
            assert_eq!(code(p), "ok", "{p}");
        }
    }

    #[test]
    fn traversal_absolute_and_odd_characters_are_unsafe() {
        for p in [
            "",
            "/etc/passwd",
            "../x",
            "a/../b",
            "a/./b",
            "a//b",
            "a/",
            ".hidden",
            "a.",
            "a b",
            "a\\b",
            "é",
            "a\0b",
            "x/-y",
        ] {
            assert_eq!(code(p), "validation.unsafe_path", "{p:?}");
        }
    }

    #[test]
    fn reserved_names_and_devices_are_refused() {
        assert_eq!(code("manifest.json"), "validation.reserved_path");
        assert_eq!(code("manifest.json/x"), "validation.reserved_path");
        assert_eq!(
            code("a/manifest.json"),
            "ok",
            "only the bundle root name is reserved"
        );
        for p in ["con", "NUL.txt", "a/Com1", "lpt9.log", "aux/x", "prn"] {
            assert_eq!(code(p), "validation.device_name", "{p}");
        }
        assert_eq!(code("x/.git/config"), "validation.reserved_path");
        assert_eq!(code("x/.GIT"), "validation.reserved_path");
    }

    #[test]
    fn limits_are_enforced_at_the_boundary() {
        let seg = "a".repeat(MAX_SEGMENT_BYTES);
        assert_eq!(code(&seg), "ok");
        assert_eq!(code(&format!("{seg}a")), "limit.path_segment_bytes");
        let deep = vec!["a"; MAX_SEGMENTS].join("/");
        assert_eq!(code(&deep), "ok");
        assert_eq!(code(&format!("{deep}/a")), "limit.path_segments");
        let long = format!(
            "{}/{}/{}/{}",
            seg,
            seg,
            seg,
            "b".repeat(MAX_PATH_BYTES - 3 * 256)
        );
        assert_eq!(long.len(), MAX_PATH_BYTES);
        assert_eq!(code(&long), "ok");
        assert_eq!(code(&format!("{long}b")), "limit.path_bytes");
    }

    #[test]
    fn collisions_and_ancestors_are_found_across_the_set() {
        let found = check_path_set(&["a/b.txt", "A/B.TXT", "a", "c/d", "c/d", "e/f/g", "E/f"]);
        let codes: Vec<(usize, &str)> = found.iter().map(|(i, e)| (*i, e.code)).collect();
        assert!(codes.contains(&(1, "validation.case_fold_collision")));
        assert!(codes.contains(&(4, "validation.duplicate_path")));
        assert!(
            codes.contains(&(2, "validation.path_ancestor")),
            "{codes:?}"
        );
        assert!(
            codes.contains(&(6, "validation.path_ancestor")),
            "{codes:?}"
        );
        assert!(check_path_set(&["a/b", "a/c", "ab"]).is_empty());
    }
}
