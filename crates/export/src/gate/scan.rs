//! `coffer scan`: the readback's final scan over files a user names, so a
//! tree made by other means can be checked the way an export is.

use coffer_base::codes;
use std::path::PathBuf;

use coffer_base::issue::Issue;

use crate::error::Result;
use crate::gate::{Expectations, FinalScan, ReadbackReport};

/// What a scan read and found.
#[derive(Debug)]
pub struct ScanOutcome {
    /// Files read.
    pub files: usize,
    /// Bytes and strings read.
    pub report: ReadbackReport,
    /// Files that could not be read, then findings (each a leak, with its
    /// line and column when the scan could place it).
    pub issues: Vec<Issue>,
}

/// How the scan reads a file, from its name: JSON Lines, a JSON document,
/// a patch (lines whose content follows a `+`, `-` or space), or lines of
/// text.
pub fn media_type_of(name: &str) -> &'static str {
    if name.ends_with(".jsonl") || name.ends_with(".ndjson") {
        "application/x-ndjson"
    } else if name.ends_with(".json") {
        "application/json"
    } else if name.ends_with(".patch") || name.ends_with(".diff") {
        "text/x-diff"
    } else {
        "text/plain"
    }
}

/// Every regular file named or below a named directory (sorted; symlinks
/// are not followed); a directory that cannot be read is an issue.
fn files_of(paths: &[PathBuf], issues: &mut Vec<Issue>) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for p in paths {
        if !p.is_dir() {
            files.push(p.clone());
            continue;
        }
        for e in walkdir::WalkDir::new(p).sort_by_file_name() {
            match e {
                Ok(e) if e.file_type().is_file() => files.push(e.into_path()),
                Ok(_) => {}
                Err(err) => issues.push(Issue::file(
                    codes::io::ERROR,
                    &p.display().to_string(),
                    err.to_string(),
                )),
            }
        }
    }
    files
}

/// Runs the final scan over `paths` with what `exp` expects.
pub fn scan_paths(paths: &[PathBuf], exp: &Expectations<'_>) -> Result<ScanOutcome> {
    let mut scan = FinalScan::new(exp)?.locating();
    let mut issues = Vec::new();
    let files = files_of(paths, &mut issues);
    for p in &files {
        let shown = coffer_base::input::escaped(p);
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let open = || {
            coffer_base::input::open(p).map_err(|e| Issue::file(e.code(), &shown, e.to_string()))
        };
        let media = media_type_of(name);
        let (found, report) = (scan.findings.len(), scan.report.clone());
        match open().and_then(|f| scan.file(f, &shown, media)) {
            Ok(_) => {}
            Err(i) if media.starts_with("application/") && malformed(&i) => {
                // A malformed document is still read, as lines of text, so
                // the secrets in it are reported beside the error instead
                // of hidden behind it. What its structured pass found
                // before it stopped is found again by the text pass.
                scan.findings.truncate(found);
                scan.report = report;
                let code = i.code;
                issues.push(i);
                match open().and_then(|f| scan.file(f, &shown, "text/plain")) {
                    Err(again) if again.code != code => issues.push(again),
                    _ => {}
                }
            }
            Err(i) => issues.push(i),
        }
    }
    issues.append(&mut scan.findings);
    for i in &mut issues {
        crate::shown::mask_issue(i, &|t| scan.holds_secret(t));
    }
    Ok(ScanOutcome {
        files: files.len(),
        report: scan.report,
        issues,
    })
}

/// True for a file refused for its content (not for a failure to read it).
fn malformed(i: &Issue) -> bool {
    i.code.starts_with("validation.") || i.code.starts_with("limit.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_choose_how_a_file_is_read() {
        assert_eq!(media_type_of("session.jsonl"), "application/x-ndjson");
        assert_eq!(media_type_of("x.ndjson"), "application/x-ndjson");
        assert_eq!(media_type_of("manifest.json"), "application/json");
        assert_eq!(media_type_of("workspace.patch"), "text/x-diff");
        assert_eq!(media_type_of("fix.diff"), "text/x-diff");
        assert_eq!(media_type_of("notes.txt"), "text/plain");
        assert_eq!(media_type_of("json"), "text/plain");
    }
}
