//! `export create`: plan, collect, rewrite, read back, publish, record.

use coffer_base::codes;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use coffer_evidence::bundle::model::Descriptor;
use coffer_evidence::bundle::safe_path::{check_relative_path, MANIFEST};
use coffer_evidence::bundle::source::BundleDir;
use coffer_evidence::exports::{record_export, ExportEdge, ExportRow};
use coffer_evidence::ids::{ArtifactId, BundleId};
use coffer_evidence::vocab::{ExportStatus, Kind, Qualification, SharingClass};

use crate::publish::manifest::{
    Artifact, Correlations, DiagnosticSource, ExcludedRecordRef, ExportManifest, Transformation,
    SCHEMA_VERSION,
};
pub use crate::publish::manifest::{Excluded, ExcludedRecord};
use coffer_base::digest::Digest;
use coffer_base::issue::Issue;
use coffer_base::json::{self, JsonlLimits, Limits, Node};
use coffer_base::publish::NewTree;
use coffer_store::catalog::Root;
use coffer_store::{PutOptions, Store};
use serde_json::{json, Value};

use crate::compat::{Compat, PathWriter};
use crate::detect::collect::{Collected, Collector};
use crate::detect::streams::{Cut, Reassembler};
use crate::error::{ExportError, Result};
use crate::gate::{self, Expectations, ReadbackReport};
use crate::key::ExportKey;
use crate::lines::{next_line, split_terminator, two_core, two_core_ordered, Batch};
use crate::passes::Detectors;
use crate::plan::{plan, Fate};
use crate::policy::Policy;
use crate::publish::review::{self, RedactionReport, ReviewedFile};
use crate::rewrite::{Counts, Scrubber, TextState};
use crate::source::{Artifacts, Source};
use coffer_base::digest::HashingWriter;

/// Options of `export create`.
#[derive(Debug, Default, Clone)]
pub struct CreateOptions {
    /// Export a bundle whose capture is `incomplete`.
    pub allow_incomplete: bool,
    /// Leave out (and list) JSONL records that cannot be verified instead
    /// of refusing the export.
    pub exclude_unverifiable: bool,
    /// Also write a redaction report here (`.html`, `.md` or `.json`),
    /// published with the export or not at all.
    pub report: Option<std::path::PathBuf>,
    /// Whose readback the export is made for (`--compat`).
    pub compat: Compat,
}

/// One exported artifact.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Exported {
    /// Its id in the export (a pseudonym of the source's).
    pub id: ArtifactId,
    /// Path in the tree.
    pub relative_path: String,
    /// Digest of the derivative.
    pub digest: Digest,
    /// Its size.
    pub size_bytes: u64,
    /// Digest of the source.
    pub source_digest: Digest,
    /// Transformations (action → count).
    pub transformations: BTreeMap<&'static str, u64>,
}

/// What `export create` did.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateOutcome {
    /// Where the export was published.
    pub dest: String,
    /// Digest of its `manifest.json`.
    pub manifest_digest: Digest,
    /// The exported bundle id (a pseudonym).
    pub bundle_id: BundleId,
    /// The source bundle id.
    pub source_bundle_id: BundleId,
    /// `partner` or `public`.
    pub sharing_class: SharingClass,
    /// The policy digest.
    pub policy_digest: Digest,
    /// The source capture qualification.
    pub qualification: Qualification,
    /// Exported artifacts.
    pub artifacts: Vec<Exported>,
    /// Excluded artifacts.
    pub excluded: Vec<Excluded>,
    /// Records left out under `--exclude-unverifiable`.
    pub excluded_records: Vec<ExcludedRecord>,
    /// What the readback gate checked.
    pub readback: ReadbackReport,
    /// Where the redaction report went, when one was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report_file: Option<String>,
    /// The redaction report's data, when one was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report: Option<RedactionReport>,
}

impl CreateOutcome {
    /// What the export left out or could not promise, one warning each:
    /// records left out under `--exclude-unverifiable`
    /// (`validation.record_excluded`) and a capture that is not qualified,
    /// exported under `--allow-incomplete` (`validation.capture_incomplete`).
    /// An export with any is incomplete.
    pub fn gaps(&self) -> Vec<Issue> {
        let mut out: Vec<Issue> = self
            .excluded_records
            .iter()
            .map(|rec| {
                Issue::about(
                    codes::validation::RECORD_EXCLUDED,
                    Some(format!("{}#/{}", rec.relative_path, rec.line)),
                    format!(
                        "left out under --exclude-unverifiable: record {} of {} ({})",
                        rec.line + 1,
                        rec.artifact_id,
                        rec.code
                    ),
                )
            })
            .collect();
        if self.qualification != Qualification::Qualified {
            out.push(Issue::about(
                codes::validation::CAPTURE_INCOMPLETE,
                Some("capture-report.json".into()),
                "exported with --allow-incomplete: the source capture is not qualified",
            ));
        }
        out
    }
}

/// Largest JSON document artifact (telemetry, verifier, capture report).
pub const MAX_JSON_DOC_BYTES: usize = Limits::EVIDENCE.max_bytes;

fn line_limits() -> Limits {
    JsonlLimits::EVIDENCE.line
}

fn read_error(d: &Descriptor, e: std::io::Error) -> ExportError {
    match e.kind() {
        std::io::ErrorKind::InvalidData => ExportError::invalid(
            codes::integrity::SOURCE_CHANGED,
            &d.relative_path,
            e.to_string(),
        ),
        std::io::ErrorKind::InvalidInput => ExportError::blocked(
            codes::limit::JSONL_LINE_BYTES,
            &d.relative_path,
            format!("{}: {e}", d.relative_path),
        ),
        _ => ExportError::io(&d.relative_path, "read", e),
    }
}

fn utf8<'b>(bytes: &'b [u8], d: &Descriptor, line: u64) -> Result<&'b str> {
    std::str::from_utf8(bytes).map_err(|e| {
        ExportError::Blocked(vec![Issue::at(
            codes::validation::INVALID_UTF8,
            &d.relative_path,
            format!("/{line}"),
            format!("line {}: not UTF-8 at byte {}", line + 1, e.valid_up_to()),
        )])
    })
}

fn parse_line(bytes: &[u8], d: &Descriptor, line: u64) -> Result<Value> {
    json::parse(bytes, &line_limits()).map_err(|e| line_error(e, d, line))
}

/// [`parse_line`] into a borrowed tree, for pass 1 (which only looks).
fn parse_line_node<'b>(bytes: &'b [u8], d: &Descriptor, line: u64) -> Result<Node<'b>> {
    json::parse_node(bytes, &line_limits()).map_err(|e| line_error(e, d, line))
}

fn line_error(e: json::JsonError, d: &Descriptor, line: u64) -> ExportError {
    ExportError::Blocked(vec![Issue::at(
        e.code,
        &d.relative_path,
        format!("/{line}{}", e.pointer),
        format!("line {}: {}", line + 1, e.message),
    )])
}

fn read_doc(r: &mut dyn Read, d: &Descriptor) -> Result<Value> {
    let Some(buf) =
        json::read_bounded(&mut *r, MAX_JSON_DOC_BYTES).map_err(|e| read_error(d, e))?
    else {
        return Err(ExportError::blocked(
            codes::limit::JSON_BYTES,
            &d.relative_path,
            format!("larger than {MAX_JSON_DOC_BYTES} bytes"),
        ));
    };
    // Drain, so a directory source's digest check runs.
    let mut rest = [0u8; 1];
    let _ = r.read(&mut rest).map_err(|e| read_error(d, e))?;
    json::parse(&buf, &Limits::EVIDENCE)
        .map_err(|e| ExportError::Blocked(vec![Issue::from((d.relative_path.as_str(), e))]))
}

/// One bit a record of a JSONL artifact (memory grows by a bit a line).
#[derive(Debug, Default)]
pub struct LineBits(Vec<u64>);

impl LineBits {
    fn set(&mut self, n: u64) {
        let (w, b) = ((n / 64) as usize, n % 64);
        if self.0.len() <= w {
            self.0.resize(w + 1, 0);
        }
        self.0[w] |= 1 << b;
    }

    fn get(&self, n: u64) -> bool {
        self.0
            .get((n / 64) as usize)
            .is_some_and(|w| w & (1 << (n % 64)) != 0)
    }

    fn unset(&mut self, n: u64) {
        if let Some(w) = self.0.get_mut((n / 64) as usize) {
            *w &= !(1 << (n % 64));
        }
    }
}

/// What the first pass found each record of a JSONL artifact to need.
#[derive(Debug, Default)]
pub struct CleanLines {
    /// Nothing: the record goes out as it came.
    clean: LineBits,
    /// Only the pseudonyms of its per-record ids, in place.
    ids_only: LineBits,
    /// The parts of secrets split over a stream's records, by line.
    cuts: BTreeMap<u64, Vec<Cut>>,
}

/// Replaces, in one raw JSONL record, every string that is the value of a
/// field and shaped like a per-record id with its pseudonym; the rest of
/// the bytes stay as they are. Used only for records the first pass found
/// to need nothing else, which is what makes the byte-level edit equal to
/// the parse-rewrite-serialize path: every field of such a record is plain,
/// and ids are letters, digits and `_`, so they need no escaping.
fn rewrite_record_ids(raw: &[u8], s: &Scrubber<'_>, c: &mut Counts, out: &mut Vec<u8>) {
    let begin = out.len();
    let (mut i, mut copied) = (0, 0);
    while let Some(q) = memchr::memchr(b'"', &raw[i..]) {
        let start = i + q;
        let mut end = start + 1;
        while end < raw.len() && raw[end] != b'"' {
            end += if raw[end] == b'\\' { 2 } else { 1 };
        }
        let end = end.min(raw.len());
        let is_value = raw[..start].iter().rev().find(|b| !b.is_ascii_whitespace()) == Some(&b':');
        let text = &raw[start + 1..end];
        if is_value && !text.contains(&b'\\') {
            if let Some(id) = std::str::from_utf8(text)
                .ok()
                .filter(|t| crate::rewrite::identity::shaped_id(t).is_some())
            {
                out.extend_from_slice(&raw[copied..start + 1]);
                out.extend_from_slice(s.identity(id).as_bytes());
                copied = end;
                c.rewritten_correlation += 1;
            }
        }
        i = end + 1;
        if i >= raw.len() {
            break;
        }
    }
    out.extend_from_slice(&raw[copied..]);
    if out[begin..] != *raw {
        c.canonicalized += 1;
    }
}

/// Pass 1 over one artifact.
fn collect_artifact(
    src: &Artifacts<'_>,
    d: &Descriptor,
    c: &mut Collector<'_>,
) -> Result<CleanLines> {
    let mut r = src.open(d)?;
    let mut clean = CleanLines::default();
    match d.media_type.as_str() {
        "application/json" => {
            let v = read_doc(&mut r, d)?;
            c.value(&Node::from(&v), 0);
        }
        media => {
            // On two cores: batches of lines go to two collectors, whose
            // findings join in line order.
            let jsonl = media == "application/x-ndjson";
            let mut br = BufReader::with_capacity(1 << 20, r);
            let (mut mine, mut theirs) = (c.fork(), c.fork());
            let (done, read) = two_core(
                &mut br,
                line_limits().max_bytes,
                &mut mine,
                &mut theirs,
                |col, b| collect_batch(col, b, d, jsonl),
            );
            // The pieces of streams join in line order, here.
            let det = c.detector();
            let mut streams = Reassembler::new(det);
            for part in done {
                let part = part?;
                c.absorb(part.found);
                part.clean.iter().for_each(|n| clean.clean.set(*n));
                part.ids_only.iter().for_each(|n| clean.ids_only.set(*n));
                for (n, r) in part.streamed {
                    streams.feed(n, r);
                }
            }
            read.map_err(|e| read_error(d, e))?;
            streams.finish();
            if let Some(w) = streams.exceeded {
                return Err(ExportError::invalid(
                    codes::limit::STREAM_WINDOW,
                    &format!("{}#/{}", d.relative_path, w.line),
                    format!(
                        "{}: a secret spread over the records of a stream reaches further back than the {} bytes read with each part of it (line {})",
                        d.relative_path,
                        crate::detect::streams::WINDOW,
                        w.line + 1
                    ),
                ));
            }
            for cut in streams.cuts {
                c.found_elsewhere(&cut.secret, &cut.rule);
                clean.clean.unset(cut.line);
                clean.ids_only.unset(cut.line);
                clean.cuts.entry(cut.line).or_default().push(cut);
            }
        }
    }
    Ok(clean)
}

/// What pass 1 learned from one batch of lines.
struct BatchFindings {
    found: crate::detect::collect::Collected,
    clean: Vec<u64>,
    ids_only: Vec<u64>,
    /// The records that are pieces of a stream, or end streams.
    streamed: Vec<(u64, crate::detect::streams::Record)>,
}

/// Pass 1 over one batch.
fn collect_batch(
    c: &mut Collector<'_>,
    b: &Batch,
    d: &Descriptor,
    jsonl: bool,
) -> Result<BatchFindings> {
    let (mut clean, mut ids_only, mut streamed) = (Vec::new(), Vec::new(), Vec::new());
    for (i, (prev, content)) in b.lines_with_previous().enumerate() {
        let n = b.first + i as u64;
        c.dirty = false;
        c.record_ids = false;
        if jsonl {
            let v = parse_line_node(content, d, n)?;
            c.value(&v, 0);
            let r = crate::detect::streams::record(&v);
            if r.ends || !r.pieces.is_empty() {
                streamed.push((n, r));
            }
        } else {
            let line = utf8(content, d, n)?;
            c.string(line, 0);
            if let Some(prev) = prev {
                c.continued(prev, line);
            }
        }
        if !c.dirty && c.record_ids {
            ids_only.push(n);
        } else if !c.dirty {
            clean.push(n);
        }
    }
    if !jsonl {
        // Text is rewritten line by line with every literal swept, so a
        // value found across lines needs no mark on its line.
        c.text_lines(b.lines(), d.media_type == "text/x-diff");
    }
    Ok(BatchFindings {
        found: std::mem::take(&mut c.found),
        clean,
        ids_only,
        streamed,
    })
}

/// Escapes other serializers use that the literal sweep's JSON-escaped
/// variants do not cover; a record holding one is always rewritten.
fn unusual_escapes(raw: &[u8]) -> bool {
    memchr::memchr_iter(b'\\', raw).any(|i| matches!(raw.get(i + 1), Some(b'u') | Some(b'/')))
}

/// Typed identities of the manifest.
fn collect_manifest(src: &Source, c: &mut Collector<'_>) {
    let m = &src.manifest;
    c.identity("bundle", &m.bundle_id);
    c.identity("run", &m.run.id);
    c.identity("attempt", &m.attempt.id);
    if let Some(r) = &m.attempt.retry_of {
        c.identity("attempt", r);
    }
    if let Some(s) = &m.run.native.session_id {
        c.identity("session", s);
    }
    if let Some(t) = &m.run.native.trace_id {
        c.identity("trace", t);
    }
    for d in &m.evidence {
        // Both go into the export manifest: a secret in either is swept
        // (and a path that changes is exported as `evidence/<n>`).
        c.string(&d.id, 0);
        c.string(&d.relative_path, 0);
        if let Some(n) = &d.native_reference {
            let ns = match n.kind.as_str() {
                "session" => "session",
                "trace" => "trace",
                _ => "native",
            };
            c.identity(ns, &n.id);
        }
    }
}

/// Derivative digests by source relative path (for the verifier's references).
type Written = BTreeMap<String, (ArtifactId, String, u64)>;

/// Pass 2 over one artifact, into `w`.
fn rewrite_artifact(
    p: &Pass2<'_, '_>,
    d: &Descriptor,
    s: &mut Scrubber<'_>,
    w: &mut impl Write,
    written: &Written,
    skip: &BTreeSet<u64>,
) -> Result<Counts> {
    let mut c = Counts::default();
    let clean = &p.clean[&d.id];
    let mut r = p.src.open(d)?;
    let werr = |e: std::io::Error| ExportError::io(&d.relative_path, "write", e);
    match d.media_type.as_str() {
        "application/json" => {
            let mut v = read_doc(&mut r, d)?;
            let truncatable = d.kind == Kind::Telemetry;
            s.value(&mut v, truncatable, &mut c)?;
            if d.kind == Kind::Verifier {
                // The peer's form keeps the source's workspace digest.
                let rebind_workspace = p.compat == Compat::Coffer;
                rebind_verifier(&mut v, written, rebind_workspace, &mut c);
            }
            let mut out = serde_json::to_vec_pretty(&v).expect("values serialize");
            out.push(b'\n');
            c.canonicalized += 1;
            w.write_all(&out).map_err(werr)?;
        }
        "application/x-ndjson" => {
            // On two cores: batches of records go to two forks of this
            // scrubber and are written in line order.
            let mut br = BufReader::with_capacity(1 << 20, r);
            let (mut mine, mut theirs) = (s.fork(), s.fork());
            two_core_ordered(
                &mut br,
                line_limits().max_bytes,
                &mut mine,
                &mut theirs,
                |s, b| rewrite_batch(s, b, d, clean, skip),
                |done| {
                    let (out, counts, removed) = done?;
                    c += counts;
                    s.absorb_removed(removed);
                    w.write_all(&out).map_err(werr)
                },
            )?
            .map_err(|e| read_error(d, e))?;
            s.absorb(mine);
            s.absorb(theirs);
        }
        media => {
            let diff = media == "text/x-diff";
            let mut st = TextState::default();
            let mut br = BufReader::with_capacity(1 << 20, r);
            let mut buf = Vec::new();
            let mut n = 0u64;
            while next_line(&mut br, &mut buf, line_limits().max_bytes)
                .map_err(|e| read_error(d, e))?
            {
                let (content, term) = split_terminator(&buf);
                let line = utf8(content, d, n)?;
                let out = s.line(line, diff, &mut st, &mut c);
                w.write_all(out.as_bytes())
                    .and_then(|()| w.write_all(term))
                    .map_err(werr)?;
                n += 1;
            }
        }
    }
    Ok(c)
}

/// Pass 2 over one batch of JSONL records: what to write, and the counts.
/// A record pass 1 found clean is copied as it came, unless a collected
/// literal or an unusual escape occurs in its bytes; one that needs only
/// its per-record ids gets them in place; any other is parsed, rewritten
/// and serialized. Also hands over the fields it removed.
fn rewrite_batch(
    s: &mut Scrubber<'_>,
    b: &Batch,
    d: &Descriptor,
    clean: &CleanLines,
    skip: &BTreeSet<u64>,
) -> Result<(Vec<u8>, Counts, BTreeMap<String, u64>)> {
    let mut out = Vec::with_capacity(b.byte_len() + b.byte_len() / 8);
    let mut c = Counts::default();
    for (i, content) in b.lines().enumerate() {
        let n = b.first + i as u64;
        if skip.contains(&n) {
            continue;
        }
        let as_is = !unusual_escapes(content) && !s.touches(content);
        if as_is && clean.clean.get(n) {
            out.extend_from_slice(content);
        } else if as_is && clean.ids_only.get(n) {
            rewrite_record_ids(content, s, &mut c, &mut out);
        } else {
            let mut v = parse_line(content, d, n)?;
            if let Some(cuts) = clean.cuts.get(&n) {
                c.redacted_secret +=
                    crate::detect::streams::apply(&mut v, cuts, &mut |rule, secret| {
                        s.secret_placeholder(rule, secret)
                    });
            }
            s.value(&mut v, true, &mut c)?;
            let begin = out.len();
            serde_json::to_writer(&mut out, &v).expect("values serialize");
            if out[begin..] != *content {
                c.canonicalized += 1;
            }
        }
        out.push(b'\n');
    }
    Ok((out, c, s.take_removed_raw()))
}

/// Points the verifier result at the exported workspace and diagnostics.
/// (`workspace`: also its digest, else it keeps naming the source's.)
fn rebind_verifier(v: &mut Value, written: &Written, workspace: bool, c: &mut Counts) {
    if let Some(ws) = v.get_mut("workspace").and_then(Value::as_object_mut) {
        if ws.remove("fingerprint").is_some() {
            c.removed_field += 1;
        }
        let id = ws
            .get("artifactId")
            .and_then(Value::as_str)
            .map(str::to_string);
        if let Some((_, (_, digest, _))) = written
            .iter()
            .find(|(_, (aid, _, _))| workspace && id.as_deref() == Some(aid.as_str()))
        {
            ws.insert("digest".into(), json!(digest));
        }
    }
    if let Some(diags) = v.get_mut("diagnostics").and_then(Value::as_array_mut) {
        for dg in diags {
            let loc = dg
                .get("locator")
                .and_then(Value::as_str)
                .map(str::to_string);
            if let Some((_, digest, size)) = loc.and_then(|l| written.get(&l)) {
                dg["digest"] = json!(digest);
                dg["sizeBytes"] = json!(size);
            }
        }
    }
}

fn counts_map(c: &Counts) -> BTreeMap<&'static str, u64> {
    let mut m = BTreeMap::new();
    m.insert("sanitized", 1);
    for (k, v) in [
        ("canonicalized", c.canonicalized),
        ("removed-field", c.removed_field),
        ("redacted-secret", c.redacted_secret),
        ("redacted-local-identifier", c.redacted_local),
        ("rewritten-correlation", c.rewritten_correlation),
        ("truncated", c.truncated),
    ] {
        if v > 0 {
            m.insert(k, v);
        }
    }
    m
}

/// The action order of EBO's enum, for a stable manifest.
const ACTIONS: &[&str] = &[
    "sanitized",
    "canonicalized",
    "removed-field",
    "redacted-secret",
    "redacted-local-identifier",
    "rewritten-correlation",
    "truncated",
];

/// Builds the export and publishes it at `dest`, with `detectors` (of
/// `policy`). Issues name places as the input spells them: a caller that
/// shows them masks what holds a secret ([`ExportError::masked`]).
pub fn create(
    store: &mut Store,
    src: &Source,
    policy: &Policy,
    detectors: &Detectors,
    key: &ExportKey,
    dest: &Path,
    opts: &CreateOptions,
) -> Result<CreateOutcome> {
    let m = &src.manifest;
    let report_format = match &opts.report {
        Some(path) => Some(review::preflight(path, dest)?),
        None => None,
    };
    let planned = plan(m, policy)?;
    let exported = admit(src, &planned, opts)?;
    if let Some(p) = store.progress() {
        // Each exported artifact is read twice: pass 1, then pass 2.
        p.total(2 * exported.iter().map(|d| d.size_bytes).sum::<u64>());
    }
    // Both passes read through a shared borrow of the store; it ends
    // before the export is recorded with the exclusive one.
    let artifacts = src.artifacts(store);
    let (clean, found) = pass_one(&artifacts, policy, detectors, &exported)?;
    let mut scrubber = detectors.scrubber(policy, key, found)?;
    let pass2 = Pass2 {
        src: &artifacts,
        policy,
        planned: &planned,
        exported: &exported,
        clean: &clean,
        compat: opts.compat,
    };
    let (built, checked, skipped) = build_and_verify(&pass2, &mut scrubber, dest, opts)?;
    coffer_base::crash::point("export_verified");
    let wanted = opts.report.as_deref().zip(report_format);
    let (report, staged) = staged_report(&pass2, &scrubber, &built, &checked, &skipped, wanted)?;

    // Record, then publish: the catalog may name an export whose
    // publication then failed (a crash, a racing writer that took DEST),
    // but never misses one a recipient could have received, so a
    // revocation that asks `where` finds every published export. A
    // report goes first and is taken back if the tree cannot follow.
    // The last safe point: past it, the export is recorded and published.
    coffer_base::interrupt::check().map_err(coffer_store::StoreError::from)?;
    record(
        store,
        &built.tree,
        &recorded_dest(dest)?,
        &built.manifest_digest,
        src,
        policy,
        &built.results,
        exported.as_slice(),
    )?;
    coffer_base::crash::point("export_recorded");
    publish(built.tree, staged)?;
    coffer_base::crash::point("export_published");
    Ok(CreateOutcome {
        dest: dest.display().to_string(),
        manifest_digest: built.manifest_digest,
        bundle_id: built.bundle_id,
        source_bundle_id: m.bundle_id.clone(),
        sharing_class: policy.sharing_class,
        policy_digest: policy.digest,
        qualification: src.qualification,
        artifacts: exported
            .iter()
            .map(|d| built.results[&d.id].clone())
            .collect(),
        excluded: built.excluded,
        excluded_records: skipped.into_iter().collect(),
        readback: checked,
        report_file: opts.report.as_ref().map(|p| p.display().to_string()),
        report,
    })
}

/// The artifacts `planned` exports, once the capture's qualification and
/// the tree's size allow the export at all (refused before any work).
fn admit<'p>(
    src: &Source,
    planned: &'p [(Descriptor, Fate)],
    opts: &CreateOptions,
) -> Result<Vec<&'p Descriptor>> {
    let m = &src.manifest;
    if src.qualification != Qualification::Qualified && !opts.allow_incomplete {
        return Err(ExportError::blocked(
            codes::policy::CAPTURE_INCOMPLETE,
            "capture-report.json",
            "the capture is not qualified; use --allow-incomplete to export it anyway",
        ));
    }
    let exported: Vec<&'p Descriptor> = planned
        .iter()
        .filter(|(_, f)| *f == Fate::Export)
        .map(|(d, _)| d)
        .collect();
    // The tree is the manifest and the exported artifacts: one the
    // readback (and a recipient's verify) would refuse for its size is
    // refused before any work.
    if exported.len() + 1 > crate::gate::MAX_FILES {
        return Err(ExportError::invalid(
            codes::limit::MEMBERS,
            &m.bundle_id,
            format!(
                "bundle {:?} would export {} files (its manifest and {} artifacts); an export holds at most {}",
                m.bundle_id,
                exported.len() + 1,
                exported.len(),
                crate::gate::MAX_FILES
            ),
        ));
    }
    Ok(exported)
}

/// Publishes the report (when one was asked for), then the tree; a
/// report whose tree cannot follow is taken back.
fn publish(tree: NewTree, mut staged: Option<coffer_base::publish::NewFile>) -> Result<()> {
    if let Some(f) = staged.as_mut() {
        f.publish_committed()?;
    }
    if let Err(e) = tree.publish_committed() {
        if let Some(f) = staged {
            let _ = f.retract();
        }
        return Err(e.into());
    }
    Ok(())
}

/// What the final scan expects of a tree (and of its report): the
/// policy, every placeholder issued, and the originals that must be gone.
fn expectations<'p>(policy: &'p Policy, scrubber: &Scrubber<'_>) -> Expectations<'p> {
    Expectations {
        policy: Some(policy),
        issued: Some(scrubber.issued().clone()),
        identities: scrubber.ids().originals().map(str::to_string).collect(),
        users: scrubber.users().map(str::to_string).collect(),
    }
}

/// The redaction report asked for (`wanted`: its path and format), built
/// and staged beside its path after its own final scan; none when none
/// was asked.
fn staged_report(
    p: &Pass2<'_, '_>,
    scrubber: &Scrubber<'_>,
    built: &Built,
    readback: &ReadbackReport,
    skipped: &BTreeSet<ExcludedRecord>,
    wanted: Option<(&Path, review::Format)>,
) -> Result<(
    Option<RedactionReport>,
    Option<coffer_base::publish::NewFile>,
)> {
    let Some((path, format)) = wanted else {
        return Ok((None, None));
    };
    let r = redaction_report(p, scrubber, built, readback, skipped)?;
    let staged = review::stage(&r, format, path, &expectations(p.policy, scrubber))?;
    Ok((Some(r), Some(staged)))
}

/// The redaction report of a verified tree, read from the tree itself.
fn redaction_report(
    p: &Pass2<'_, '_>,
    scrubber: &Scrubber<'_>,
    built: &Built,
    readback: &ReadbackReport,
    skipped: &BTreeSet<ExcludedRecord>,
) -> Result<RedactionReport> {
    let mut files: Vec<ReviewedFile> = p
        .exported
        .iter()
        .map(|d| {
            let e = &built.results[&d.id];
            ReviewedFile {
                file: e.relative_path.clone(),
                media_type: d.media_type.clone(),
                transformations: e
                    .transformations
                    .iter()
                    .map(|(k, n)| (k.to_string(), *n))
                    .collect(),
                removed_fields: built.removed.get(&d.id).cloned().unwrap_or_default(),
            }
        })
        .collect();
    files.push(ReviewedFile {
        file: MANIFEST.to_string(),
        media_type: "application/json".into(),
        transformations: BTreeMap::new(),
        removed_fields: BTreeMap::new(),
    });
    let handle = built
        .tree
        .dir()
        .try_clone()
        .map_err(|e| ExportError::io(built.tree.dest(), "open", e))?;
    let forms = scrubber.ids().pseudonym_forms();
    let g = review::gather(&BundleDir::from_dir(handle), &files, &forms)?;
    Ok(RedactionReport {
        schema_version: review::SCHEMA_VERSION,
        bundle_id: built.bundle_id.clone(),
        sharing_class: p.policy.sharing_class,
        policy_digest: p.policy.digest,
        manifest_digest: built.manifest_digest,
        source_manifest_digest: p.src.manifest_digest(),
        readback: review::Verdict {
            status: "passed",
            checked: readback.clone(),
        },
        total: g.total,
        listed: g.replacements.len() as u64,
        rules: g.rules,
        files: g.files,
        replacements: g.replacements,
        residual_risk: g.residual_risk,
        excluded_artifacts: built.excluded.clone(),
        excluded_records: skipped
            .iter()
            .map(|r| {
                let e = &built.results[&r.artifact_id];
                ExcludedRecord {
                    artifact_id: e.id.clone(),
                    relative_path: e.relative_path.clone(),
                    line: r.line,
                    code: r.code.clone(),
                }
            })
            .collect(),
    })
}

/// Pass 1: reads the manifest and every exported artifact once, collecting
/// what must be replaced and which lines need nothing but id rewriting.
fn pass_one(
    src: &Artifacts<'_>,
    policy: &Policy,
    detectors: &Detectors,
    exported: &[&Descriptor],
) -> Result<(BTreeMap<ArtifactId, CleanLines>, Collected)> {
    let mut col = detectors.collector(policy);
    collect_manifest(src, &mut col);
    let mut clean: BTreeMap<ArtifactId, CleanLines> = BTreeMap::new();
    for d in exported {
        // A safe point: nothing of the export exists yet.
        coffer_base::interrupt::check().map_err(coffer_store::StoreError::from)?;
        clean.insert(d.id.clone(), collect_artifact(src, d, &mut col)?);
    }
    Ok((clean, col.found))
}

/// Pass 2 and the gate. Under --exclude-unverifiable, the JSONL records
/// the gate refuses are left out of a second tree, which must then pass; a
/// finding anywhere else still refuses. (Source records are strict JSON:
/// an invalid bundle is refused before pass 1.)
fn build_and_verify(
    p: &Pass2<'_, '_>,
    scrubber: &mut Scrubber<'_>,
    dest: &Path,
    opts: &CreateOptions,
) -> Result<(Built, ReadbackReport, BTreeSet<ExcludedRecord>)> {
    let mut skipped: BTreeSet<ExcludedRecord> = BTreeSet::new();
    let mut attempts = 0;
    let (built, report) = loop {
        attempts += 1;
        let built = build_tree(p, scrubber, &skipped, dest)?;
        let exp = expectations(p.policy, scrubber);
        // The gate: an independent reader over the bytes on disk.
        let handle = built
            .tree
            .dir()
            .try_clone()
            .map_err(|e| ExportError::io(dest, "open", e))?;
        match gate::verify_tree(&BundleDir::from_dir(handle), &exp) {
            Ok(report) => break (built, report),
            Err(ExportError::Invalid(issues)) if opts.exclude_unverifiable && attempts < 8 => {
                let known = |r: &ExcludedRecord, s: &BTreeSet<ExcludedRecord>| {
                    s.iter()
                        .any(|x| x.artifact_id == r.artifact_id && x.line == r.line)
                };
                let more: Vec<ExcludedRecord> =
                    refused_records(&issues, &built.results, p.exported, &skipped)
                        .unwrap_or_default()
                        .into_iter()
                        .filter(|r| !known(r, &skipped))
                        .collect();
                // Nothing new to leave out (or a finding outside a record):
                // the export is refused as it would be without the flag.
                if more.is_empty() {
                    return Err(ExportError::Invalid(issues));
                }
                // The refused tree is removed with `built`.
                skipped.extend(more);
            }
            Err(e) => return Err(e),
        }
    };
    Ok((built, report, skipped))
}

/// Names of the fields removed (and how often), by source artifact id.
type RemovedFields = BTreeMap<ArtifactId, BTreeMap<String, u64>>;

/// A written, not yet verified export tree.
struct Built {
    tree: NewTree,
    manifest_digest: Digest,
    results: BTreeMap<ArtifactId, Exported>,
    excluded: Vec<Excluded>,
    bundle_id: BundleId,
    removed: RemovedFields,
}

/// What pass 2 writes from: the source, its plan, and pass 1's verdicts.
struct Pass2<'a, 's> {
    src: &'a Artifacts<'s>,
    policy: &'a Policy,
    planned: &'a [(Descriptor, Fate)],
    exported: &'a [&'a Descriptor],
    clean: &'a BTreeMap<ArtifactId, CleanLines>,
    compat: Compat,
}

/// Pass 2 and the export manifest, into a new temp tree beside `dest`.
fn build_tree(
    p: &Pass2<'_, '_>,
    scrubber: &mut Scrubber<'_>,
    skipped: &BTreeSet<ExcludedRecord>,
    dest: &Path,
) -> Result<Built> {
    let mut tree = NewTree::begin(dest, 0o755)?;
    let (results, removed) = write_artifacts(p, scrubber, skipped, &mut tree)?;
    let excluded = excluded_artifacts(p.planned);
    let m = &p.src.manifest;
    let bundle_id = BundleId::from(scrubber.identity(&m.bundle_id));
    let correlations = Correlations {
        bundle_id: bundle_id.clone(),
        run_id: scrubber.identity(&m.run.id).into(),
        attempt_id: scrubber.identity(&m.attempt.id).into(),
        session_id: m
            .run
            .native
            .session_id
            .as_ref()
            .map(|s| scrubber.identity(s).into()),
        trace_id: m
            .run
            .native
            .trace_id
            .as_ref()
            .map(|t| scrubber.identity(t).into()),
    };
    let manifest = export_manifest(p, &results, &excluded, skipped, &bundle_id, correlations);
    let bytes = manifest.to_bytes();
    let manifest_digest = Digest::of(&bytes);
    {
        let mut f = tree.create_file("manifest.json", 0o755, 0o644)?;
        f.write_all(&bytes)
            .map_err(|e| ExportError::io(tree.dest().join("manifest.json"), "write", e))?;
        tree.sync_later(f, "manifest.json")?;
    }
    coffer_base::crash::point("export_tree_built");
    Ok(Built {
        tree,
        manifest_digest,
        results,
        excluded,
        bundle_id,
        removed,
    })
}

/// Rewrites every exported artifact into `tree`, contract documents last
/// so they can point at derivatives; each file is synced before the tree
/// is published.
fn write_artifacts(
    p: &Pass2<'_, '_>,
    scrubber: &mut Scrubber<'_>,
    skipped: &BTreeSet<ExcludedRecord>,
    tree: &mut NewTree,
) -> Result<(BTreeMap<ArtifactId, Exported>, RemovedFields)> {
    let mut order: Vec<&Descriptor> = p.exported.to_vec();
    order.sort_by_key(|d| matches!(d.kind, Kind::Verifier | Kind::CaptureReport));
    let mut written: Written = BTreeMap::new();
    let mut results: BTreeMap<ArtifactId, Exported> = BTreeMap::new();
    let mut removed = BTreeMap::new();
    scrubber.take_removed();
    for (i, d) in order.iter().enumerate() {
        let mut unused = Counts::default();
        let rel = {
            let r = scrubber.string(&d.relative_path, &mut unused);
            if r == d.relative_path && check_relative_path(&r).is_ok() {
                r
            } else {
                format!("evidence/{i}")
            }
        };
        let id = ArtifactId::from(scrubber.string(&d.id, &mut unused));
        let f = tree.create_file(&rel, 0o755, 0o644)?;
        let mut w = HashingWriter::new(BufWriter::with_capacity(coffer_store::WRITE_BUF, f));
        let skip: BTreeSet<u64> = skipped
            .iter()
            .filter(|r| r.artifact_id == d.id)
            .map(|r| r.line)
            .collect();
        let counts = match p.compat {
            Compat::Coffer => rewrite_artifact(p, d, scrubber, &mut w, &written, &skip)?,
            Compat::Ebo => {
                let mut pw = PathWriter::new(&mut w);
                let mut c = rewrite_artifact(p, d, scrubber, &mut pw, &written, &skip)?;
                c.redacted_local += pw.finish().map_err(|e| ExportError::io(&rel, "write", e))?;
                c
            }
        };
        let (bw, digest, size) = w.finish();
        let f = bw
            .into_inner()
            .map_err(|e| ExportError::io(tree.dest().join(&rel), "write", e.into_error()))?;
        // Synced while the next artifact is written and the tree is read
        // back; publication waits for it.
        tree.sync_later(f, &rel)?;
        coffer_base::crash::point("export_artifact_written");
        removed.insert(d.id.clone(), scrubber.take_removed());
        written.insert(
            d.relative_path.clone(),
            (d.id.clone(), digest.to_string(), size),
        );
        results.insert(
            d.id.clone(),
            Exported {
                id,
                relative_path: rel,
                digest,
                size_bytes: size,
                source_digest: d.digest,
                transformations: counts_map(&counts),
            },
        );
    }
    Ok((results, removed))
}

/// The source artifacts the plan leaves out, with their reasons.
fn excluded_artifacts(planned: &[(Descriptor, Fate)]) -> Vec<Excluded> {
    planned
        .iter()
        .filter_map(|(d, f)| match f {
            Fate::Exclude(r) => Some(Excluded {
                artifact_id: d.id.clone(),
                reason: r.to_string(),
            }),
            Fate::Export => None,
        })
        .collect()
}

/// The export manifest, artifacts in source order.
fn export_manifest<'a>(
    p: &'a Pass2<'_, '_>,
    results: &'a BTreeMap<ArtifactId, Exported>,
    excluded: &'a [Excluded],
    skipped: &'a BTreeSet<ExcludedRecord>,
    bundle_id: &'a BundleId,
    correlations: Correlations,
) -> ExportManifest<'a> {
    let mut artifacts = Vec::new();
    let mut transformations = Vec::new();
    for d in p.exported {
        let e = &results[&d.id];
        artifacts.push(Artifact {
            id: &e.id,
            source_artifact_id: &d.id,
            kind: d.kind,
            media_type: &d.media_type,
            digest: &e.digest,
            size_bytes: e.size_bytes,
            relative_path: &e.relative_path,
            source_digest: &d.digest,
            diagnostic_source: d.diagnostic_source.as_ref().and_then(|v| {
                DiagnosticSource::from_source(v, |id| results.get(id).map(|e| e.id.clone()))
            }),
        });
        for action in ACTIONS {
            if let Some(n) = e.transformations.get(action) {
                transformations.push(Transformation {
                    artifact_id: &e.id,
                    action,
                    count: *n,
                });
            }
        }
    }
    ExportManifest {
        schema_version: SCHEMA_VERSION,
        bundle_id,
        status: ExportStatus::Ready,
        sharing_class: p.policy.sharing_class,
        assessment_mode: p.src.manifest.run.mode(),
        policy_digest: p.policy.digest,
        artifact_ids: artifacts.iter().map(|a| a.id).collect(),
        source_manifest_digest: p.src.manifest_digest(),
        correlations,
        artifacts,
        transformations,
        excluded_artifacts: excluded,
        excluded_records: skipped
            .iter()
            .map(|r| ExcludedRecordRef {
                artifact_id: &results[&r.artifact_id].id,
                line: r.line,
                code: &r.code,
            })
            .collect(),
    }
}

/// The JSONL records the gate's findings point into, if every finding
/// does (`file#/<line>...` of an exported JSONL artifact); `None` if any
/// finding is elsewhere, which no exclusion can fix.
fn refused_records(
    issues: &[Issue],
    results: &BTreeMap<ArtifactId, Exported>,
    exported: &[&Descriptor],
    skipped: &BTreeSet<ExcludedRecord>,
) -> Option<BTreeSet<ExcludedRecord>> {
    let mut out: BTreeMap<(ArtifactId, u64), ExcludedRecord> = BTreeMap::new();
    for i in issues {
        let (file, pointer) = (i.file.as_deref()?, i.pointer.as_deref()?);
        let d = exported.iter().find(|d| {
            d.media_type == "application/x-ndjson" && results[&d.id].relative_path == file
        })?;
        let mut line: u64 = pointer.strip_prefix('/')?.split('/').next()?.parse().ok()?;
        // A line of the written tree; each record already left out before
        // it moves it one line on in the source.
        for r in skipped.iter().filter(|r| r.artifact_id == d.id) {
            if r.line <= line {
                line += 1;
            }
        }
        // The first finding in a record names why it was left out.
        out.entry((d.id.clone(), line)).or_insert(ExcludedRecord {
            artifact_id: d.id.clone(),
            relative_path: d.relative_path.clone(),
            line,
            code: i.code.to_string(),
        });
    }
    (!out.is_empty()).then(|| out.into_values().collect())
}

/// The absolute path an export will be published at, as the catalog
/// records it (DEST does not exist yet; its parent does).
fn recorded_dest(dest: &Path) -> Result<String> {
    let parent = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let parent =
        std::fs::canonicalize(parent).map_err(|e| ExportError::io(parent, "resolve", e))?;
    Ok(parent
        .join(dest.file_name().unwrap_or(dest.as_os_str()))
        .display()
        .to_string())
}

/// Stores the finished tree's files (still beside DEST, read through the
/// tree's handle) and records the export at `dest` and its edges.
#[allow(clippy::too_many_arguments)]
fn record(
    store: &mut Store,
    tree: &NewTree,
    dest: &str,
    manifest_digest: &Digest,
    src: &Source,
    policy: &Policy,
    results: &BTreeMap<ArtifactId, Exported>,
    exported: &[&Descriptor],
) -> Result<()> {
    let root = Root {
        kind: coffer_evidence::exports::EXPORT_ROOT.into(),
        name: manifest_digest.to_string(),
    };
    let built = BundleDir::from_dir(
        tree.dir()
            .try_clone()
            .map_err(|e| ExportError::io(tree.dest(), "open", e))?,
    );
    let add = |batch: &mut coffer_store::Batch<'_>, rel: &str, opts: PutOptions| -> Result<()> {
        let (f, _) = built
            .open_evidence(rel)
            .map_err(|i| ExportError::Invalid(vec![i]))?;
        batch.add_open_file(f, &tree.dest().join(rel), opts)?;
        Ok(())
    };
    let mut batch = store.batch()?;
    add(
        &mut batch,
        MANIFEST,
        PutOptions {
            expected_digest: Some(*manifest_digest),
            root: Some(root.clone()),
            ..Default::default()
        },
    )?;
    let mut edges = Vec::new();
    for d in exported {
        let e = &results[&d.id];
        let digest = e.digest;
        add(
            &mut batch,
            &e.relative_path,
            PutOptions {
                expected_digest: Some(digest),
                expected_size: Some(e.size_bytes),
                root: Some(root.clone()),
            },
        )?;
        edges.push(ExportEdge {
            artifact_id: e.id.clone(),
            relative_path: e.relative_path.clone(),
            digest,
            source_digest: e.source_digest,
        });
    }
    let row = ExportRow {
        manifest_digest: *manifest_digest,
        dest: dest.to_string(),
        source_bundle_id: src.manifest.bundle_id.as_str().into(),
        source_manifest_digest: src.manifest_digest(),
        sharing_class: policy.sharing_class,
        policy_digest: policy.digest,
    };
    record_export(batch, &row, &edges)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn descriptor(id: &str, path: &str, media: &str) -> Descriptor {
        serde_json::from_value(json!({
            "id": id, "source": "harness", "kind": "session", "mediaType": media, "relativePath": path,
            "digest": format!("sha256:{}", "0".repeat(64)), "sizeBytes": 1,
            "sharingClass": "restricted", "authority": "semantic"
        }))
        .expect("a descriptor")
    }

    fn exported(id: &str, path: &str) -> Exported {
        Exported {
            id: format!("{id}-x").into(),
            relative_path: path.into(),
            digest: Digest::of(b""),
            size_bytes: 0,
            source_digest: Digest::of(b""),
            transformations: BTreeMap::new(),
        }
    }

    #[test]
    fn findings_map_to_source_records_and_anything_else_maps_to_none() {
        let s = descriptor("session", "session.jsonl", "application/x-ndjson");
        let p = descriptor("patch", "workspace.patch", "text/x-diff");
        let ds = [&s, &p];
        let results: BTreeMap<ArtifactId, Exported> = [
            ("session".into(), exported("session", "session.jsonl")),
            ("patch".into(), exported("patch", "workspace.patch")),
        ]
        .into();
        let at = |file: &str, ptr: &str, code| Issue::at(code, file, ptr, "m");
        let none = BTreeSet::new();
        // Two findings in one record: one entry, the first code.
        let got = refused_records(
            &[
                at("session.jsonl", "/4/output", "validation.secret_in_export"),
                at(
                    "session.jsonl",
                    "/4/text",
                    "validation.local_path_in_export",
                ),
                at("session.jsonl", "/9", "validation.forbidden_field"),
            ],
            &results,
            &ds,
            &none,
        )
        .unwrap();
        let lines: Vec<(u64, &str)> = got.iter().map(|r| (r.line, r.code.as_str())).collect();
        assert_eq!(
            lines,
            [
                (4, "validation.secret_in_export"),
                (9, "validation.forbidden_field")
            ]
        );
        // In a tree written without source lines 4 and 9, written line 8
        // is source line 10 (two left out at or before it).
        let again = refused_records(
            &[at("session.jsonl", "/8", "validation.x")],
            &results,
            &ds,
            &got,
        )
        .unwrap();
        assert_eq!(again.iter().map(|r| r.line).collect::<Vec<_>>(), [10]);
        // A patch line, the manifest, a finding without a pointer: no.
        for i in [
            at("workspace.patch", "/3", "validation.secret_in_export"),
            at("manifest.json", "/artifacts/0", "validation.x"),
            Issue::file("validation.x", "session.jsonl", "m"),
        ] {
            assert!(refused_records(&[i], &results, &ds, &none).is_none());
        }
    }
}
