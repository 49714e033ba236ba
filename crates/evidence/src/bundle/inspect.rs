//! Validation of a bundle directory: manifest, contract rules, and every
//! evidence file, each read once and handed to a [`Sink`] (a plain
//! hasher for `bundle validate`, a store batch for `bundle ingest`).

use coffer_base::codes;
use std::collections::HashSet;
use std::path::Path;

use serde_json::Value;

use super::content::{CheckingReader, ContentCheck};
use super::contract;
use super::model::{CaptureReport, Descriptor, ExportManifest, Manifest, VerifierResult};
use super::safe_path::{check_path_set, check_relative_path, MANIFEST};
use super::source::{BundleDir, FileStamp};
use crate::error::Result;
use crate::schema::{self, DocKind};
use crate::sink::Sink;
use crate::vocab::{Kind, Qualification};
use coffer_base::digest::Digest;
use coffer_base::issue::Issue;
use coffer_base::json::{self, Limits};

/// What inspection learned.
#[derive(Debug, Default)]
pub struct Inspection {
    /// The manifest's raw bytes (what is stored; nothing is re-serialized).
    pub manifest_bytes: Vec<u8>,
    /// The typed manifest, when it parsed and matched the schema.
    pub manifest: Option<Manifest>,
    /// The capture report, when it was read.
    pub capture: Option<CaptureReport>,
    /// Every problem found.
    pub issues: Vec<Issue>,
}

impl Inspection {
    /// `qualified` or `incomplete` (from the capture report), when known.
    pub fn qualification(&self) -> Option<Qualification> {
        self.capture.as_ref().map(|c| c.qualification)
    }
}

/// Parses and schema-checks a contract document; issues are appended.
fn parse_doc(bytes: &[u8], kind: DocKind, rel: &str, issues: &mut Vec<Issue>) -> Option<Value> {
    let v = match json::parse(bytes, &Limits::DOCUMENT) {
        Ok(v) => v,
        Err(e) => {
            issues.push(Issue::from((rel, e)));
            return None;
        }
    };
    let expected = kind.schema_version().expect("documents carry a version");
    if v.get("schemaVersion").and_then(Value::as_str) != Some(expected) {
        issues.push(Issue::at(
            codes::validation::UNKNOWN_SCHEMA_VERSION,
            rel,
            "/schemaVersion",
            format!(
                "{rel}: schemaVersion {} is not {expected}",
                v.get("schemaVersion")
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| "(missing)".into())
            ),
        ));
        return None;
    }
    let schema_issues = schema::validate(kind, &v);
    if !schema_issues.is_empty() {
        issues.extend(schema_issues.into_iter().map(|s| {
            path_issue(&v, rel, &s.pointer).unwrap_or_else(|| {
                Issue::at(
                    codes::validation::SCHEMA,
                    rel,
                    s.pointer,
                    format!("{rel}: {}", s.message),
                )
            })
        }));
        return None;
    }
    Some(v)
}

/// A schema complaint about a path field gets the safe-path validator's
/// precise code (`validation.unsafe_path`, `validation.device_name`...).
fn path_issue(doc: &Value, rel: &str, pointer: &str) -> Option<Issue> {
    if !(pointer.ends_with("/relativePath") || pointer.ends_with("/locator")) {
        return None;
    }
    let value = doc.pointer(pointer)?.as_str()?;
    let e = check_relative_path(value).err()?;
    Some(Issue::at(
        e.code,
        rel,
        pointer,
        format!("{rel}: {}", e.message),
    ))
}

fn typed<T: serde::de::DeserializeOwned>(
    v: Value,
    rel: &str,
    issues: &mut Vec<Issue>,
) -> Option<T> {
    serde_json::from_value(v)
        .map_err(|e| {
            issues.push(Issue::file(
                codes::validation::SCHEMA,
                rel,
                format!("{rel}: {e}"),
            ))
        })
        .ok()
}

/// Checks manifest bytes on their own (strict JSON, schema, every rule
/// that needs only the manifest); issues are appended. Touches no file.
pub fn check_manifest(bytes: &[u8], issues: &mut Vec<Issue>) -> Option<Manifest> {
    let raw = parse_doc(bytes, DocKind::RunManifest, MANIFEST, issues)?;
    let manifest = typed::<Manifest>(raw, MANIFEST, issues)?;
    issues.extend(contract::manifest_rules(&manifest));
    Some(manifest)
}

/// How much of a bundle [`inspect`] reads when its manifest has issues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// Every evidence file anyway, to report every problem (`validate`).
    Everything,
    /// Nothing more: the bundle is refused anyway (`ingest`).
    StopAtManifestIssues,
}

/// A bundle directory opened, with its manifest read and checked: the
/// first step of [`inspect`], for a caller that needs the manifest before
/// the evidence is read (ingest names its objects' root after the bundle
/// id). The manifest is read and parsed once for both.
pub struct BundleHead {
    dir: Option<BundleDir>,
    out: Inspection,
}

impl BundleHead {
    /// Opens the bundle at `path` and reads its manifest; problems are
    /// kept as issues for [`inspect_head`] to return.
    pub fn open(path: &Path) -> BundleHead {
        BundleHead::reading(path, read_manifest_bytes)
    }

    /// Opens the bundle at `path` as if its manifest held `manifest`
    /// (`bundle seal` checks a manifest before it writes it).
    pub fn with_manifest(path: &Path, manifest: Vec<u8>) -> BundleHead {
        BundleHead::reading(path, |_| Ok(manifest))
    }

    /// Opens the bundle at `path` and checks the manifest `manifest`
    /// gives for it.
    fn reading(
        path: &Path,
        manifest: impl FnOnce(&BundleDir) -> Result<Vec<u8>, Issue>,
    ) -> BundleHead {
        let mut out = Inspection::default();
        let dir = match BundleDir::open(path) {
            Ok(d) => d,
            Err(i) => {
                out.issues.push(i);
                return BundleHead { dir: None, out };
            }
        };
        match manifest(&dir) {
            Ok(b) => out.manifest_bytes = b,
            Err(i) => {
                out.issues.push(i);
                return BundleHead { dir: None, out };
            }
        }
        out.manifest = check_manifest(&out.manifest_bytes, &mut out.issues);
        BundleHead {
            dir: Some(dir),
            out,
        }
    }

    /// The typed manifest, when it parsed and matched its schema (it may
    /// still have rule issues).
    pub fn manifest(&self) -> Option<&Manifest> {
        self.out.manifest.as_ref()
    }

    /// The manifest's bytes as read.
    pub fn manifest_bytes(&self) -> &[u8] {
        &self.out.manifest_bytes
    }
}

/// Inspects the bundle at `path`, sending each evidence file (never the
/// manifest) to `sink`; `reading` says whether evidence is read once the
/// manifest itself has issues.
pub fn inspect(path: &Path, sink: &mut dyn Sink, reading: Reading) -> Result<Inspection> {
    inspect_head(BundleHead::open(path), sink, reading)
}

/// The rest of [`inspect`], after [`BundleHead::open`].
pub fn inspect_head(head: BundleHead, sink: &mut dyn Sink, reading: Reading) -> Result<Inspection> {
    let BundleHead { dir, mut out } = head;
    let (Some(dir), Some(manifest)) = (dir, out.manifest.take()) else {
        return Ok(out);
    };
    if reading == Reading::StopAtManifestIssues && !out.issues.is_empty() {
        out.manifest = Some(manifest);
        return Ok(out);
    }
    // Files whose path the manifest rules refused are not opened (those
    // rules reported them).
    let paths: Vec<&str> = manifest
        .evidence
        .iter()
        .map(|d| d.relative_path.as_str())
        .collect();
    let refused: HashSet<usize> = check_path_set(&paths).into_iter().map(|(i, _)| i).collect();
    let mut verifiers: Vec<(usize, VerifierResult)> = Vec::new();
    for (i, d) in manifest.evidence.iter().enumerate() {
        if refused.contains(&i) || check_relative_path(&d.relative_path).is_err() {
            continue;
        }
        let expected = d.digest;
        let rel = d.relative_path.as_str();
        let (mut f, stamp) = match dir.open_evidence(rel) {
            Ok(x) => x,
            Err(issue) => {
                out.issues.push(issue);
                continue;
            }
        };
        if stamp.size() != d.size_bytes {
            // What the manifest should say, digest too (streamed: a
            // failing check reads the file once more, in bounded memory).
            let mut h = coffer_base::digest::HashingReader::new(&mut f);
            let on_disk = match std::io::copy(&mut h, &mut std::io::sink()) {
                Ok(_) => format!(" ({})", h.finish().0),
                Err(_) => String::new(),
            };
            out.issues.push(Issue::file(
                codes::integrity::SIZE_MISMATCH,
                rel,
                format!(
                    "{rel}: {} bytes on disk{on_disk}, the manifest says {} \
                     (`coffer bundle seal` writes what is on disk)",
                    stamp.size(),
                    d.size_bytes
                ),
            ));
            continue;
        }
        let file = Opened {
            f: &mut f,
            stamp: &stamp,
            expected,
        };
        match contract_document(d.kind) {
            Some(kind) => {
                if let Some(vr) = read_document(file, d, kind, &manifest, sink, &mut out)? {
                    if d.is_retained() {
                        verifiers.push((i, vr));
                    }
                }
            }
            None => stream_evidence(file, d, sink, &mut out.issues)?,
        }
    }
    let vrefs: Vec<(usize, &VerifierResult)> = verifiers.iter().map(|(i, v)| (*i, v)).collect();
    out.issues
        .extend(contract::outcome_rules(&manifest, &vrefs));
    out.manifest = Some(manifest);
    Ok(out)
}

/// The manifest's bytes, bounded, from a file that did not change while
/// read.
fn read_manifest_bytes(dir: &BundleDir) -> Result<Vec<u8>, Issue> {
    let (mut mf, stamp) = dir.open_evidence(MANIFEST)?;
    let bytes = coffer_base::json::read_bytes(&mut mf, &Limits::DOCUMENT, MANIFEST)?;
    match BundleDir::changed(MANIFEST, &mf, &stamp) {
        Some(i) => Err(i),
        None => Ok(bytes),
    }
}

/// The schema of the contract documents among evidence kinds.
fn contract_document(kind: Kind) -> Option<DocKind> {
    match kind {
        Kind::CaptureReport => Some(DocKind::CaptureReport),
        Kind::Verifier => Some(DocKind::VerifierResult),
        Kind::ExportManifest => Some(DocKind::ExportManifest),
        _ => None,
    }
}

/// An evidence file opened for reading, with what it must be.
struct Opened<'f> {
    f: &'f mut std::fs::File,
    stamp: &'f FileStamp,
    expected: Digest,
}

/// A contract document: read whole (bounded), sent to the sink, parsed,
/// and checked against the manifest. Returns it when it is a verifier
/// result, for the outcome rules.
fn read_document(
    file: Opened<'_>,
    d: &Descriptor,
    kind: DocKind,
    manifest: &Manifest,
    sink: &mut dyn Sink,
    out: &mut Inspection,
) -> Result<Option<VerifierResult>> {
    let rel = d.relative_path.as_str();
    let bytes = match coffer_base::json::read_bytes(&mut *file.f, &Limits::DOCUMENT, rel) {
        Ok(b) => b,
        Err(issue) => {
            out.issues.push(issue);
            return Ok(None);
        }
    };
    if let Some(issue) = BundleDir::changed(rel, file.f, file.stamp) {
        out.issues.push(issue);
        return Ok(None);
    }
    let put = sink.put(
        &mut &bytes[..],
        d.size_bytes,
        Path::new(rel),
        Some(file.expected),
        None,
    );
    if let Err(e) = put {
        out.issues.push(crate::sink::input_issue(e, rel)?);
        return Ok(None);
    }
    let Some(v) = parse_doc(&bytes, kind, rel, &mut out.issues) else {
        return Ok(None);
    };
    match kind {
        DocKind::CaptureReport => {
            if let Some(c) = typed::<CaptureReport>(v, rel, &mut out.issues) {
                out.issues
                    .extend(contract::capture_rules(manifest, &c, rel));
                out.capture = Some(c);
            }
        }
        DocKind::VerifierResult => {
            if let Some(vr) = typed::<VerifierResult>(v, rel, &mut out.issues) {
                out.issues
                    .extend(contract::verifier_rules(manifest, &vr, rel));
                return Ok(Some(vr));
            }
        }
        _ => {
            if let Some(e) = typed::<ExportManifest>(v, rel, &mut out.issues) {
                out.issues.extend(contract::export_rules(manifest, &e, rel));
            }
        }
    }
    Ok(None)
}

/// Any other evidence file: streamed to the sink through the content check
/// of its media type.
fn stream_evidence(
    file: Opened<'_>,
    d: &Descriptor,
    sink: &mut dyn Sink,
    issues: &mut Vec<Issue>,
) -> Result<()> {
    let rel = d.relative_path.as_str();
    let mut reader = CheckingReader::for_size(
        &mut *file.f,
        ContentCheck::for_media_type(&d.media_type),
        d.size_bytes,
    );
    let accepted = sink.put(
        &mut reader,
        d.size_bytes,
        Path::new(rel),
        Some(file.expected),
        None,
    );
    if let Some(e) = reader.failure() {
        issues.push(Issue::from((rel, e.clone())));
        return Ok(());
    }
    if let Err(e) = accepted {
        issues.push(crate::sink::input_issue(e, rel)?);
        return Ok(());
    }
    if let Some(issue) = BundleDir::changed(rel, file.f, file.stamp) {
        issues.push(issue);
    }
    Ok(())
}
