//! `bundle seal DIR`: writes the digests and sizes a harness did not,
//! for harnesses that produce evidence but do not hash it.
//!
//! Every evidence descriptor's `digest` and `sizeBytes` are recomputed
//! from its file, and each `sanitizedFrom.digest` follows its source's new
//! digest, so a verifier result that names the workspace's real bytes is
//! bound again. The result is then checked like any bundle (schema,
//! contract rules, every file against the new manifest); if anything is
//! still wrong, nothing is written and every problem is returned with its
//! code. Otherwise the manifest alone is rewritten, atomically (a temp in
//! the bundle, fsynced, renamed over `manifest.json`, the directory
//! fsynced), and only if it changed. No other file is touched: a verifier
//! result is the verifier's record, never rewritten here.

use std::io::Write as _;
use std::path::Path;

use coffer_base::codes;
use coffer_base::digest::{Digest, HashingReader};
use coffer_base::issue::Issue;
use coffer_base::json::{self, Limits};
use serde::Serialize;
use serde_json::Value;

use super::inspect::{inspect_head, BundleHead, Reading};
use super::source::BundleDir;
use crate::error::Result;
use crate::ids::BundleId;
use crate::sink::HashOnly;

/// One descriptor whose digest or size changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Resealed {
    /// The descriptor's id.
    pub artifact_id: crate::ids::ArtifactId,
    /// Its path in the bundle.
    pub relative_path: String,
    /// The manifest's digest before (if it held a valid one).
    pub digest_was: Option<String>,
    /// The file's digest.
    pub digest: Digest,
    /// The manifest's size before (if it held a number).
    pub size_was: Option<u64>,
    /// The file's size.
    pub size_bytes: u64,
}

/// What sealing did.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Sealed {
    /// The bundle's id.
    pub bundle_id: Option<crate::ids::BundleId>,
    /// Descriptors whose digest or size changed.
    pub resealed: Vec<Resealed>,
    /// `sanitizedFrom` references moved to their source's new digest, by
    /// descriptor id.
    pub rebound: Vec<String>,
    /// Whether `manifest.json` was rewritten (false when already sealed).
    pub written: bool,
}

/// The outcome: sealed, or the problems that keep the bundle invalid
/// (nothing written).
pub enum Outcome {
    /// The manifest is sealed.
    Sealed(Sealed),
    /// Refused, with every problem.
    Refused(Vec<Issue>),
}

/// Seals the bundle at `path`.
pub fn seal(path: &Path) -> Result<Outcome> {
    let head = BundleHead::open(path);
    let old = head.manifest_bytes().to_vec();
    let dir = match BundleDir::open(path) {
        Ok(d) => d,
        Err(i) => return Ok(Outcome::Refused(vec![i])),
    };
    let mut manifest: Value = match json::parse(&old, &Limits::DOCUMENT) {
        Ok(v) => v,
        Err(e) => return Ok(Outcome::Refused(vec![Issue::from(("manifest.json", e))])),
    };
    let mut out = Sealed {
        bundle_id: manifest["bundleId"].as_str().map(BundleId::from),
        ..Sealed::default()
    };
    let mut issues = Vec::new();
    let Some(evidence) = manifest.get_mut("evidence").and_then(Value::as_array_mut) else {
        // Nothing to recompute: the check below names what is missing.
        return refused_or_written(path, &dir, &old, manifest, out, issues);
    };
    let mut new_digests = std::collections::HashMap::new();
    for (i, d) in evidence.iter_mut().enumerate() {
        let Some(rel) = d["relativePath"].as_str().map(String::from) else {
            continue;
        };
        match measure(&dir, &rel) {
            Ok((digest, size)) => {
                let digest_was = d["digest"].as_str().map(String::from);
                let size_was = d["sizeBytes"].as_u64();
                let id = d["id"].as_str().unwrap_or_default().to_string();
                new_digests.insert(id.clone(), digest);
                if digest_was.as_deref() != Some(digest.to_string().as_str())
                    || size_was != Some(size)
                {
                    d["digest"] = Value::String(digest.to_string());
                    d["sizeBytes"] = Value::from(size);
                    out.resealed.push(Resealed {
                        artifact_id: id.into(),
                        relative_path: rel,
                        digest_was,
                        digest,
                        size_was,
                        size_bytes: size,
                    });
                }
            }
            Err(mut issue) => {
                issue.pointer = Some(format!("/evidence/{i}/relativePath"));
                issues.push(issue);
            }
        }
    }
    for d in evidence.iter_mut() {
        let source = d["sanitizedFrom"]["artifactId"]
            .as_str()
            .and_then(|s| new_digests.get(s));
        if let Some(digest) = source {
            let now = Value::String(digest.to_string());
            if d["sanitizedFrom"]["digest"] != now {
                d["sanitizedFrom"]["digest"] = now;
                out.rebound
                    .push(d["id"].as_str().unwrap_or_default().to_string());
            }
        }
    }
    refused_or_written(path, &dir, &old, manifest, out, issues)
}

/// The file's digest and size, read through the bundle's safe opener.
fn measure(dir: &BundleDir, rel: &str) -> std::result::Result<(Digest, u64), Issue> {
    let (f, stamp) = dir.open_evidence(rel)?;
    let mut r = HashingReader::new(&f);
    if let Err(e) = std::io::copy(&mut r, &mut std::io::sink()) {
        return Err(Issue::file(
            coffer_base::os_code::io_code(&e),
            rel,
            format!("{rel}: read: {e}"),
        ));
    }
    let measured = r.finish();
    if let Some(i) = BundleDir::changed(rel, &f, &stamp) {
        return Err(i);
    }
    Ok(measured)
}

fn refused_or_written(
    path: &Path,
    dir: &BundleDir,
    old: &[u8],
    manifest: Value,
    mut out: Sealed,
    mut issues: Vec<Issue>,
) -> Result<Outcome> {
    let mut bytes = serde_json::to_vec_pretty(&manifest).expect("a JSON value serializes");
    bytes.push(b'\n');
    // The bundle as it would be: schema, rules, every file against it.
    let check = inspect_head(
        BundleHead::with_manifest(path, bytes.clone()),
        &mut HashOnly,
        Reading::Everything,
    )?;
    issues.extend(check.issues);
    if !issues.is_empty() {
        return Ok(Outcome::Refused(issues));
    }
    if out.resealed.is_empty() && out.rebound.is_empty() {
        return Ok(Outcome::Sealed(out));
    }
    write_manifest(dir, old, &bytes)?;
    out.written = true;
    Ok(Outcome::Sealed(out))
}

/// Replaces `manifest.json` with `bytes`, atomically and durably, unless
/// it changed since it was read (`old`): another writer's manifest is
/// never overwritten.
fn write_manifest(dir: &BundleDir, old: &[u8], bytes: &[u8]) -> Result<()> {
    let root = dir.dir();
    let tmp = coffer_base::temp::temp_name(".coffer-seal");
    let io = |op: &'static str, e: std::io::Error| {
        coffer_store::StoreError::io(dir.path().join("manifest.json"), op, e)
    };
    let written = (|| -> Result<()> {
        let mut f = root
            .create_new(&tmp, 0o644)
            .map_err(|e| io("create temp", e))?;
        f.write_all(bytes).map_err(|e| io("write temp", e))?;
        f.sync_all().map_err(|e| io("fsync temp", e))?;
        let (mut now, _) = dir
            .open_evidence("manifest.json")
            .map_err(|i| io("reread", std::io::Error::other(i.message)))?;
        let mut current = Vec::new();
        std::io::Read::read_to_end(&mut now, &mut current).map_err(|e| io("reread", e))?;
        if current != old {
            return Err(crate::EvidenceError::Conflict {
                code: codes::conflict::MANIFEST_CHANGED,
                message: "manifest.json changed while it was sealed; nothing was written".into(),
                subject: dir.path().join("manifest.json").display().to_string(),
            });
        }
        coffer_base::interrupt::check().map_err(coffer_store::StoreError::from)?;
        root.rename_replacing(&tmp, "manifest.json")
            .map_err(|e| io("rename", e))?;
        root.sync().map_err(|e| io("fsync directory", e))?;
        Ok(())
    })();
    if written.is_err() {
        let _ = root.remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy_complete(to: &Path) {
        let from =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/run-bundles/complete");
        for e in walk(&from) {
            let rel = e.strip_prefix(&from).unwrap();
            let dest = to.join(rel);
            std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
            std::fs::copy(&e, &dest).unwrap();
        }
    }

    fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
        out
    }

    #[test]
    fn a_sealed_bundle_is_left_alone_and_an_edited_file_is_resealed() {
        let t = tempfile::tempdir().unwrap();
        let b = t.path().join("b");
        copy_complete(&b);
        let before = std::fs::read(b.join("manifest.json")).unwrap();
        let Outcome::Sealed(s) = seal(&b).unwrap() else {
            panic!("refused")
        };
        assert!(!s.written && s.resealed.is_empty());
        assert_eq!(
            std::fs::read(b.join("manifest.json")).unwrap(),
            before,
            "untouched"
        );

        // An edited hook log: a new digest and size, and nothing else moves.
        let hooks = b.join("hooks.jsonl");
        let mut text = std::fs::read(&hooks).unwrap();
        text.extend_from_slice(b"{\"type\":\"hook.extra\"}\n");
        std::fs::write(&hooks, &text).unwrap();
        let Outcome::Sealed(s) = seal(&b).unwrap() else {
            panic!("refused")
        };
        assert!(s.written);
        assert_eq!(s.resealed.len(), 1, "{:?}", s.resealed);
        assert_eq!(s.resealed[0].digest, Digest::of(&text));
        assert_eq!(s.resealed[0].size_bytes, text.len() as u64);
        let Outcome::Sealed(again) = seal(&b).unwrap() else {
            panic!("refused")
        };
        assert!(!again.written, "sealing is idempotent");
        let temps = std::fs::read_dir(&b)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with(".coffer")
            })
            .count();
        assert_eq!(temps, 0);
    }
}
