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

impl Store {
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
                self.put_batch(&pending, root_kind, progress, &mut report)?;
                pending.clear();
                pending_bytes = 0;
            }
        }
        self.put_batch(&pending, root_kind, progress, &mut report)?;
        Ok(report)
    }

    fn put_batch(
        &mut self,
        paths: &[PathBuf],
        root_kind: Option<&str>,
        progress: &dyn Fn(u64),
        report: &mut TreeReport,
    ) -> Result<()> {
        if paths.is_empty() {
            return Ok(());
        }
        let mut batch = self.batch()?;
        batch.on_progress(progress);
        for p in paths {
            let root = root_kind.map(|kind| Root {
                kind: kind.to_string(),
                name: coffer_base::input::escaped(p),
            });
            batch.add_file(
                p,
                PutOptions {
                    root,
                    ..PutOptions::default()
                },
            )?;
        }
        for (p, outcome) in paths.iter().zip(batch.commit()?) {
            report.files.push(TreeFile {
                path: p.clone(),
                outcome,
            });
        }
        Ok(())
    }
}
