//! Putting a directory tree: every regular file below a directory, in
//! sorted order, through batches of bounded size.
//!
//! Symlinks are never followed and special files are never read; both are
//! reported as skipped so the caller can say the put was incomplete.

use coffer_base::codes;
use std::path::{Path, PathBuf};

use crate::catalog::Root;
use crate::error::{Result, StoreError};
use crate::store::{PutOptions, PutOutcome, Store};
use coffer_base::Digest;

/// Files per batch: one filesystem sync and one transaction per this many.
pub const BATCH_FILES: usize = 8192;
/// Input bytes per batch.
pub const BATCH_BYTES: u64 = 512 << 20;

/// One file of a tree put.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TreeFile {
    /// The path as walked (the given directory joined with the relative
    /// path); serialized in [`escaped`](coffer_base::input::escaped) form.
    #[serde(serialize_with = "coffer_base::input::serialize_escaped")]
    pub path: PathBuf,
    /// What the put did.
    #[serde(flatten)]
    pub outcome: PutOutcome,
}

/// An entry that was not stored.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Skipped {
    /// The path (serialized in escaped form).
    #[serde(serialize_with = "coffer_base::input::serialize_escaped")]
    pub path: PathBuf,
    /// Stable code of the reason.
    pub code: &'static str,
    /// Why.
    pub message: String,
}

/// The result of a tree put.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct TreeReport {
    /// Files stored, in walk order.
    pub files: Vec<TreeFile>,
    /// Entries skipped.
    pub skipped: Vec<Skipped>,
}

/// The result of putting several inputs ([`Store::put_inputs`]): what
/// was stored and skipped before the error that stopped it, if one did.
#[derive(Debug, Default)]
pub struct InputsPut {
    /// Files stored, in input order (a directory's in walk order).
    pub files: Vec<TreeFile>,
    /// Entries skipped below directories.
    pub skipped: Vec<Skipped>,
    /// The error that stopped the put; the inputs after it were not read.
    pub fatal: Option<StoreError>,
}

impl Store {
    /// Puts each input in order: `-` is standard input, a directory is
    /// put as a tree (unless a digest is expected: then it is read as a
    /// file, and refused as one), anything else as one file. Each is
    /// rooted as `(root_kind, <input path>)` when `root_kind` is given
    /// (below a directory, `(root_kind, <file path>)`). The first error
    /// stops the put; what was stored before it stays stored.
    pub fn put_inputs(
        &mut self,
        inputs: &[PathBuf],
        root_kind: Option<&str>,
        expected_digest: Option<Digest>,
        progress: &dyn Fn(u64),
    ) -> InputsPut {
        let mut out = InputsPut::default();
        // Consecutive file inputs share batches (`put *.json` is one
        // transaction and one sync per BATCH_FILES, as a directory is).
        let mut run: Vec<PathBuf> = Vec::new();
        let mut run_bytes = 0u64;
        for p in inputs {
            let is_file = expected_digest.is_none() && p.as_os_str() != "-" && !p.is_dir();
            if is_file {
                run_bytes += std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
                run.push(p.clone());
                if run.len() < BATCH_FILES && run_bytes < BATCH_BYTES {
                    continue;
                }
            }
            let flushed = self.put_batch(&run, root_kind, progress, &mut out.files);
            run.clear();
            run_bytes = 0;
            if let Err(e) = flushed {
                out.fatal = Some(e);
                return out;
            }
            if is_file {
                continue;
            }
            let opts = PutOptions {
                expected_digest,
                expected_size: None,
                root: root_kind.map(|kind| Root {
                    kind: kind.into(),
                    name: coffer_base::input::escaped(p),
                }),
            };
            let file = |outcome| TreeFile {
                path: p.clone(),
                outcome,
            };
            let done = if p.as_os_str() == "-" {
                self.put_reader(&mut std::io::stdin().lock(), opts, progress)
                    .map(|o| out.files.push(file(o)))
            } else if p.is_dir() && expected_digest.is_none() {
                self.put_tree(p, root_kind, progress).map(|r| {
                    out.files.extend(r.files);
                    out.skipped.extend(r.skipped);
                })
            } else {
                self.put_file(p, opts, progress)
                    .map(|o| out.files.push(file(o)))
            };
            if let Err(e) = done {
                out.fatal = Some(e);
                return out;
            }
        }
        if let Err(e) = self.put_batch(&run, root_kind, progress, &mut out.files) {
            out.fatal = Some(e);
        }
        out
    }

    /// Puts every regular file below `dir`; each is rooted as
    /// `(root_kind, <path>)` when `root_kind` is given. `progress` receives
    /// bytes read.
    pub fn put_tree(
        &mut self,
        dir: &Path,
        root_kind: Option<&str>,
        progress: &dyn Fn(u64),
    ) -> Result<TreeReport> {
        let mut report = TreeReport::default();
        let mut pending: Vec<PathBuf> = Vec::new();
        let mut pending_bytes = 0u64;
        let walk = walkdir::WalkDir::new(dir)
            .follow_links(false)
            .follow_root_links(true)
            .sort_by_file_name();
        for entry in walk {
            let entry = entry.map_err(|e| {
                let path = e
                    .path()
                    .map(Path::to_path_buf)
                    .unwrap_or_else(|| dir.to_path_buf());
                StoreError::io(path, "walk", e.into())
            })?;
            let ft = entry.file_type();
            if ft.is_dir() {
                continue;
            }
            if !ft.is_file() {
                let what = if ft.is_symlink() {
                    "symlink"
                } else {
                    "special file"
                };
                report.skipped.push(Skipped {
                    path: entry.path().to_path_buf(),
                    code: codes::validation::NOT_REGULAR_FILE,
                    message: format!("{what} skipped: only regular files are stored"),
                });
                continue;
            }
            pending_bytes += entry.metadata().map(|m| m.len()).unwrap_or(0);
            pending.push(entry.into_path());
            if pending.len() >= BATCH_FILES || pending_bytes >= BATCH_BYTES {
                self.put_batch(&pending, root_kind, progress, &mut report.files)?;
                pending.clear();
                pending_bytes = 0;
            }
        }
        self.put_batch(&pending, root_kind, progress, &mut report.files)?;
        Ok(report)
    }

    /// Puts `paths` in one batch, each rooted by its path when `root_kind`
    /// is given. A file that cannot be read stops the batch: the files
    /// added before it are still committed (unless the batch itself can no
    /// longer commit), and its error is returned.
    fn put_batch(
        &mut self,
        paths: &[PathBuf],
        root_kind: Option<&str>,
        progress: &dyn Fn(u64),
        files: &mut Vec<TreeFile>,
    ) -> Result<()> {
        if paths.is_empty() {
            return Ok(());
        }
        let mut batch = self.batch()?;
        batch.on_progress(progress);
        let mut failed = None;
        let mut added = 0;
        for p in paths {
            let root = root_kind.map(|kind| Root {
                kind: kind.to_string(),
                name: coffer_base::input::escaped(p),
            });
            let opts = PutOptions {
                root,
                ..PutOptions::default()
            };
            if let Err(e) = batch.add_file(p, opts) {
                failed = Some(e);
                break;
            }
            added += 1;
        }
        let committed = match (added, &failed) {
            (0, Some(_)) => Vec::new(),
            // An interrupt or a failed stager fails the commit too, which
            // then writes nothing; the first error is the one reported.
            (_, Some(_)) => batch.commit().unwrap_or_default(),
            (_, None) => batch.commit()?,
        };
        for (p, outcome) in paths.iter().zip(committed) {
            files.push(TreeFile {
                path: p.clone(),
                outcome,
            });
        }
        failed.map_or(Ok(()), Err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Schema;

    #[test]
    fn inputs_go_in_order_and_the_first_error_stops_the_rest() {
        let t = tempfile::tempdir().unwrap();
        let (mut s, _) = Store::init(&t.path().join("s"), &Schema::CAS).unwrap();
        let dir = t.path().join("d");
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/b.txt"), b"bee").unwrap();
        std::fs::write(dir.join("a.txt"), b"ay").unwrap();
        let one = t.path().join("one.txt");
        std::fs::write(&one, b"one").unwrap();
        // Shares a batch with the missing file after it; still stored.
        let before = t.path().join("before.txt");
        std::fs::write(&before, b"before").unwrap();
        let missing = t.path().join("missing.txt");
        let after = t.path().join("after.txt");
        std::fs::write(&after, b"after").unwrap();

        let put = s.put_inputs(
            &[one.clone(), dir.clone(), before.clone(), missing, after],
            Some("put"),
            None,
            &|_| {},
        );
        let paths: Vec<PathBuf> = put.files.iter().map(|f| f.path.clone()).collect();
        assert_eq!(
            paths,
            vec![one, dir.join("a.txt"), dir.join("sub/b.txt"), before]
        );
        assert!(put.fatal.is_some(), "the missing input stops the put");
        assert!(put.skipped.is_empty());
        // What was stored before the error stays stored; the input after it
        // was never read.
        assert!(s.has(&Digest::of(b"ay")).unwrap());
        assert!(s.has(&Digest::of(b"before")).unwrap());
        assert!(!s.has(&Digest::of(b"after")).unwrap());
    }
}
