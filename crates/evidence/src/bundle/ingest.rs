//! `bundle ingest`: validate and archive a run bundle in one pass.
//!
//! Each evidence file is read once, streamed into a store batch while its
//! digest, size and content are checked. Only if the whole bundle is clean
//! are the objects made durable and published, and the bundle recorded with
//! its objects in one catalog transaction. Any issue drops the batch: no
//! object is published and no row written.

use coffer_base::codes;
use std::path::Path;

use std::collections::HashMap;

use super::facts::{self, Facts, Tee};
use super::inspect::{inspect_head, BundleHead, Reading};
use super::model::{Manifest, MissingEvidence};
use super::records::{bundle_by_id, insert_bundle, BundleRow, BUNDLE_ROOT};
use super::safe_path::MANIFEST;
use crate::sink::Sink;
use coffer_base::digest::Digest;
use coffer_base::issue::Issue;
use coffer_store::catalog::Root;

use crate::error::{EvidenceError, Result};
use coffer_store::objects::now_ms;
use coffer_store::refs::RefSpec;

use crate::ids::BundleId;
use crate::vocab::Qualification;
use coffer_store::store::{Batch, PutOptions, Store};

/// What an ingest did.
#[derive(Debug, Clone, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IngestOutcome {
    /// The bundle id (when the manifest could be read).
    pub bundle_id: Option<BundleId>,
    /// Digest of the stored manifest bytes.
    pub manifest_digest: Option<Digest>,
    /// True when this call recorded the bundle; false for an identical re-ingest.
    pub created: bool,
    /// qualified | incomplete (when known).
    pub qualification: Option<Qualification>,
    /// Evidence gaps declared by an incomplete capture report.
    pub gaps: Vec<MissingEvidence>,
    /// Artifacts recorded.
    pub artifacts: usize,
    /// On a re-ingest of a stored bundle: objects the store had lost (or
    /// held damaged) and now holds again.
    pub objects_restored: usize,
    /// Why the bundle was refused (empty when it was ingested).
    pub issues: Vec<Issue>,
}

struct BatchSink<'b, 's> {
    batch: &'b mut Batch<'s>,
    bundle_id: String,
    /// The facts each artifact path adds, read as its bytes go by.
    readings: HashMap<String, facts::Reading>,
}

impl Sink for BatchSink<'_, '_> {
    fn put(
        &mut self,
        input: &mut dyn std::io::Read,
        size: u64,
        subject: &Path,
        expected: Option<Digest>,
        _root: Option<Root>,
    ) -> Result<Digest> {
        let root = Root {
            kind: BUNDLE_ROOT.into(),
            name: self.bundle_id.clone(),
        };
        let d = match subject.to_str().and_then(|p| self.readings.get_mut(p)) {
            Some(reading) => {
                let mut tee = Tee {
                    inner: input,
                    reading,
                };
                self.batch
                    .put(&mut tee, size, subject, expected, Some(root))?
            }
            None => self.batch.put(input, size, subject, expected, Some(root))?,
        };
        coffer_base::crash::point("ingest_artifact");
        Ok(d)
    }
}

/// The issue of a bundle stored with these manifest bytes whose
/// directory no longer matches them.
fn copy_differs(bundle_id: &str) -> Issue {
    Issue::file(
        codes::integrity::BUNDLE_COPY_DIFFERS,
        MANIFEST,
        format!(
            "bundle {bundle_id:?} is stored with this manifest, but this directory no longer matches it (the stored copy is unchanged)"
        ),
    )
}

/// Adds the manifest's bytes to `batch` as the bundle's root object: its
/// digest.
fn add_manifest(batch: &mut Batch<'_>, bytes: &[u8], bundle_id: &str) -> Result<Digest> {
    let digest = Digest::of(bytes);
    batch.add_stream(
        &mut &bytes[..],
        bytes.len() as u64,
        Path::new(MANIFEST),
        PutOptions {
            expected_digest: Some(digest),
            expected_size: None,
            root: Some(Root {
                kind: BUNDLE_ROOT.into(),
                name: bundle_id.to_string(),
            }),
        },
    )?;
    Ok(digest)
}

/// Validates the bundle at `path` and archives it. Contract problems are
/// returned in [`IngestOutcome::issues`] (nothing stored); store failures
/// and conflicts are errors.
pub fn ingest(store: &mut Store, path: &Path) -> Result<IngestOutcome> {
    let mut out = IngestOutcome::default();
    // The row of a bundle already stored with these manifest bytes: the
    // directory is still read whole, so a copy whose files changed is
    // reported, and objects the store lost are put back.
    let head = BundleHead::open(path);
    if let (Some(p), Some(m)) = (store.progress(), head.manifest()) {
        p.total(m.evidence.iter().map(|d| d.size_bytes).sum());
    }
    let bundle_id = head
        .manifest()
        .map(|m| m.bundle_id.to_string())
        .unwrap_or_default();
    let stored = match head.manifest() {
        Some(_) => settled_row(store, &bundle_id, Digest::of(head.manifest_bytes()))?,
        None => None,
    };

    let readings = head.manifest().map(readings).unwrap_or_default();
    let mut batch = store.batch()?;
    let mut sink = BatchSink {
        batch: &mut batch,
        bundle_id: bundle_id.clone(),
        readings,
    };
    let insp = inspect_head(head, &mut sink, Reading::StopAtManifestIssues)?;
    let readings = std::mem::take(&mut sink.readings);
    out.issues = insp.issues.clone();
    let Some(manifest) = insp.manifest.as_ref() else {
        return Ok(out);
    };
    out.bundle_id = Some(manifest.bundle_id.clone());
    if !out.issues.is_empty() {
        if stored.is_some() {
            out.issues.insert(0, copy_differs(&manifest.bundle_id));
        }
        return Ok(out); // dropping the batch removes every staged temp
    }
    let capture = insp
        .capture
        .as_ref()
        .expect("a clean bundle has its capture report");
    out.qualification = Some(capture.qualification);
    if capture.qualification != Qualification::Qualified {
        out.gaps = capture.missing_evidence.clone();
    }
    let manifest_digest = add_manifest(&mut batch, &insp.manifest_bytes, &manifest.bundle_id)?;
    if let Some(row) = stored {
        // Identical re-ingest: no row changes; the commit publishes only
        // objects that were missing or damaged.
        let outcomes = batch.commit()?;
        out.manifest_digest = Some(manifest_digest);
        out.qualification = Some(row.qualification);
        out.artifacts = manifest.evidence.len();
        out.objects_restored = outcomes.iter().filter(|o| o.created).count();
        return Ok(out);
    }
    let qualification = capture.qualification;
    batch.name_ref(bundle_ref(&manifest.bundle_id, manifest_digest));
    // The facts, from the bytes just read: recorded with the bundle.
    let run_facts = gathered(manifest, readings);
    let mut created = false;
    crate::error::commit_rows(batch, |tx| {
        created = insert_bundle(tx, manifest, &manifest_digest, qualification, now_ms())?;
        if created {
            facts::write_rows(tx, &manifest.bundle_id, &run_facts)?;
        }
        Ok(())
    })?;
    out.manifest_digest = Some(manifest_digest);
    out.created = created;
    out.artifacts = manifest.evidence.len();
    Ok(out)
}

/// A [`facts::Reading`] for each artifact that adds to its run's facts,
/// by path.
fn readings(m: &Manifest) -> HashMap<String, facts::Reading> {
    m.evidence
        .iter()
        .map(|d| (d.relative_path.clone(), facts::Reading::of(d.kind)))
        .filter(|(_, r)| !matches!(r, facts::Reading::Other))
        .collect()
}

/// The run's facts from its manifest and what its artifacts' readings saw.
fn gathered(m: &Manifest, readings: HashMap<String, facts::Reading>) -> Facts {
    let mut f = Facts::default();
    f.from_manifest(m);
    for (_, r) in readings {
        r.finish(&mut f);
    }
    f
}

/// Settles, before anything is uploaded, whether bundle `id` may be
/// stored with the manifest `digest`: the row of the same bundle already
/// stored with these bytes (`Some`), nothing yet (`None`), or a conflict
/// when the id is taken, here or (through its ref) by another store on a
/// shared backend.
fn settled_row(store: &mut Store, id: &str, digest: Digest) -> Result<Option<BundleRow>> {
    if bundle_by_id(store.catalog(), id)?.is_none() {
        // Another store may have recorded this id in a shared
        // backend: its ref decides before anything is uploaded.
        let spec = bundle_ref(id, digest);
        if let Some(target) = store.adopt_ref(&spec)? {
            if target != digest {
                return Err(EvidenceError::Conflict {
                    code: spec.conflict,
                    message: format!(
                        "bundle {id:?} is already stored with another manifest ({target}) in {}",
                        store.backend().location()
                    ),
                    subject: id.to_string(),
                });
            }
        }
    }
    match bundle_by_id(store.catalog(), id)? {
        Some(row) if row.manifest_digest == digest => Ok(Some(row)),
        Some(row) => Err(EvidenceError::Conflict {
            code: codes::conflict::BUNDLE_EXISTS,
            message: format!(
                "bundle {id:?} is already stored with another manifest ({})",
                row.manifest_digest
            ),
            subject: id.to_string(),
        }),
        None => Ok(None),
    }
}

/// The ref that settles which manifest a bundle id names, across every
/// store writing to one backend: `refs/bundles/<bundle id>`.
fn bundle_ref(bundle_id: &str, manifest: Digest) -> RefSpec {
    RefSpec::named(
        "bundles",
        bundle_id,
        manifest,
        codes::conflict::BUNDLE_EXISTS,
    )
}
