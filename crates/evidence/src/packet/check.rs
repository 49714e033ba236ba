//! Loading and validating a task packet and reading its components.
//!
//! Every locator is a root-relative safe path opened through the root's
//! directory handle one component at a time without following symlinks
//! (the same reader as run bundles). Component bytes go to a
//! [`Sink`]: a hasher for `packet validate`, a store batch for
//! `packet freeze`.

use crate::vocab::AssessmentMode;
use coffer_base::codes;
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use super::model::{DigestObject, Packet, Reference};
use crate::archive::{
    check_member_name, read_archive, ArchiveError, ArchiveLimits, Compression, Member, MemberKind,
    ANY_NAME, READ_FAILED,
};
use crate::bundle::safe_path::check_relative_path;
use crate::bundle::source::BundleDir;
use crate::schema::{self, DocKind};
use crate::sink::Sink;
use coffer_base::digest::Digest;
use coffer_base::issue::Issue;
use coffer_base::json::canonical::canonical_digest;
use coffer_base::json::{self, Limits};
use coffer_store::catalog::Root;
use coffer_store::error::StoreError;

use crate::error::{EvidenceError, Result};

/// A packet read from disk and checked as far as the packet file alone allows.
pub struct Loaded {
    /// The packet root.
    pub root: BundleDir,
    /// The packet file, relative to the root.
    pub locator: String,
    /// The packet's parsed JSON.
    pub value: Value,
    /// The typed packet, when schema-valid.
    pub packet: Option<Packet>,
    /// Problems found.
    pub issues: Vec<Issue>,
}

/// A fixture archive's members, each with its digest when it is a file.
pub type Members = Vec<(Member, Option<Digest>)>;

/// How far a read of the components goes into the fixture archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixtureDepth {
    /// Every member is read, checked against the packet's limits and
    /// include paths, and handed to the sink.
    Members,
    /// The archive is hashed, not opened up: enough where a freeze record
    /// is about to vouch for it, since the same archive bytes under the
    /// same packet (whose digest covers the limits and include paths) give
    /// the members they gave when frozen. No members are returned.
    DigestOnly,
}

/// The packet's components, as frozen.
#[derive(Debug, Clone)]
pub struct Components {
    /// Digest of the prompt's UTF-8 bytes.
    pub prompt: Digest,
    /// Digest of the fixture archive.
    pub fixture: Digest,
    /// The fixture's members (with file digests), in archive order.
    pub members: Members,
    /// Reference solution component (`{status, digest?}`).
    pub reference: Value,
    /// Verifier digest (verified packets).
    pub verifier: Option<Digest>,
    /// Review record digest.
    pub review_record: Option<Digest>,
    /// Perturbation component (`{status, digest?}`).
    pub perturbation: Value,
}

impl Components {
    /// The `components` object of a freeze record.
    pub fn json(&self) -> Value {
        serde_json::json!({
            "prompt": DigestObject::json(&self.prompt),
            "fixture": DigestObject::json(&self.fixture),
            "reference": self.reference,
            "verifier": self.verifier.as_ref().map(DigestObject::json),
            "reviewRecord": self.review_record.as_ref().map(DigestObject::json),
            "controlledPerturbation": self.perturbation,
        })
    }
}

/// The packet's locator relative to `root`: `packet` may be given relative
/// to the root or as a path that starts with the root.
pub fn locator_of(root: &Path, packet: &Path) -> Option<String> {
    let norm = |p: &Path| -> PathBuf {
        p.components()
            .filter(|c| !matches!(c, Component::CurDir))
            .collect()
    };
    let (root_n, packet_n) = (norm(root), norm(packet));
    let rel = match packet_n.strip_prefix(&root_n) {
        Ok(r) if !root_n.as_os_str().is_empty() => r.to_path_buf(),
        _ if packet.is_relative() => packet_n,
        _ => return None,
    };
    let s = rel.to_str()?.to_string();
    check_relative_path(&s).ok().map(|_| s)
}

/// JCS digest of the packet without `admission`.
pub fn pre_admission_digest(value: &Value) -> Digest {
    let mut v = value.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("admission");
    }
    canonical_digest(&v)
}

fn safe_locator(loc: &str, pointer: &str, file: &str, issues: &mut Vec<Issue>) {
    if let Err(e) = check_relative_path(loc) {
        issues.push(Issue::at(
            e.code,
            file,
            pointer,
            format!("{file}: {pointer}: {}", e.message),
        ));
    }
}

/// Reads and checks the packet file.
pub fn load(root: &Path, packet: &Path) -> Result<Loaded> {
    let dir = BundleDir::open(root)
        .map_err(|i| StoreError::io(root, "open packet root", std::io::Error::other(i.message)))?;
    let shown = packet.display().to_string();
    let mut loaded = Loaded {
        root: dir,
        locator: shown.clone(),
        value: Value::Null,
        packet: None,
        issues: Vec::new(),
    };
    let Some(locator) = locator_of(root, packet) else {
        loaded.issues.push(Issue::file(
            codes::validation::UNSAFE_PATH,
            &shown,
            format!("{shown}: the packet must be a safe path inside the packet root"),
        ));
        return Ok(loaded);
    };
    loaded.locator = locator.clone();
    let file = locator.as_str();
    let Some(p) = read_packet(&mut loaded, file) else {
        return Ok(loaded);
    };
    packet_rules(&p, file, &mut loaded.issues);
    locator_rules(&p, file, &mut loaded.issues);
    loaded.packet = Some(p);
    Ok(loaded)
}

/// Reads the packet document: strict JSON, its schema version, its schema,
/// then the typed packet. Problems go to `loaded.issues`.
fn read_packet(loaded: &mut Loaded, file: &str) -> Option<Packet> {
    let (mut f, _) = match loaded.root.open_evidence(file) {
        Ok(x) => x,
        Err(i) => {
            loaded.issues.push(i);
            return None;
        }
    };
    let v = match json::read_document(&mut f, &Limits::DOCUMENT, file) {
        Ok(v) => v,
        Err(i) => {
            loaded.issues.push(i);
            return None;
        }
    };
    if v.get("schemaVersion").and_then(Value::as_str) != Some("ebo.task-packet/v1") {
        loaded.issues.push(Issue::at(
            codes::validation::UNKNOWN_SCHEMA_VERSION,
            file,
            "/schemaVersion",
            format!("{file}: not an ebo.task-packet/v1 document"),
        ));
        return None;
    }
    let schema_issues = schema::validate(DocKind::TaskPacket, &v);
    loaded.value = v;
    if !schema_issues.is_empty() {
        loaded.issues.extend(schema_issues.into_iter().map(|s| {
            Issue::at(
                codes::validation::SCHEMA,
                file,
                s.pointer,
                format!("{file}: {}", s.message),
            )
        }));
        return None;
    }
    match serde_json::from_value(loaded.value.clone()) {
        Ok(p) => Some(p),
        Err(e) => {
            loaded.issues.push(Issue::file(
                codes::validation::SCHEMA,
                file,
                format!("{file}: {e}"),
            ));
            None
        }
    }
}

/// Rules between the packet's fields: restricted components follow the
/// assessment mode; the repository is an https URL without credentials.
fn packet_rules(p: &Packet, file: &str, issues: &mut Vec<Issue>) {
    match (p.mode(), p.restricted.is_some()) {
        (AssessmentMode::Observational, true) => issues.push(Issue::at(
            codes::validation::RESTRICTED_FORBIDDEN,
            file,
            "/restricted",
            "observational packets carry no restricted components",
        )),
        (AssessmentMode::Verified, false) => issues.push(Issue::at(
            codes::validation::RESTRICTED_REQUIRED,
            file,
            "/restricted",
            "verified packets need a reference solution and a verifier",
        )),
        _ => {}
    }
    let url = &p.provenance.repository_url;
    let authority = url
        .strip_prefix("https://")
        .map(|r| r.split('/').next().unwrap_or(""));
    if authority.is_none_or(|a| a.is_empty() || a.contains('@') || a.contains(char::is_whitespace))
        || url.contains(char::is_whitespace)
    {
        issues.push(Issue::at(
            codes::validation::REPOSITORY_URL,
            file,
            "/provenance/repositoryUrl",
            "repositoryUrl must be https with a host and no credentials",
        ));
    }
}

/// Every locator and include path is a safe relative path.
fn locator_rules(p: &Packet, file: &str, issues: &mut Vec<Issue>) {
    safe_locator(
        &p.agent_input.fixture.source.locator,
        "/agentInput/fixture/source/locator",
        file,
        issues,
    );
    for (i, inc) in p
        .agent_input
        .fixture
        .materializer
        .include_paths
        .iter()
        .enumerate()
    {
        if let Err(e) = check_member_name(inc.as_bytes(), false) {
            issues.push(Issue::at(
                codes::validation::UNSAFE_PATH,
                file,
                format!("/agentInput/fixture/materializer/includePaths/{i}"),
                format!("{file}: include path: {}", e.message),
            ));
        }
    }
    if let Some(r) = p.perturbation() {
        safe_locator(
            &r.locator,
            "/controlledPerturbation/reference/locator",
            file,
            issues,
        );
    }
    if let Some(r) = &p.restricted {
        safe_locator(
            &r.verifier.locator,
            "/restricted/verifier/locator",
            file,
            issues,
        );
        if let Some(rs) = p.reference_solution() {
            safe_locator(
                &rs.locator,
                "/restricted/referenceSolution/locator",
                file,
                issues,
            );
        }
    }
    if let Some(rv) = &p.admission.review {
        safe_locator(
            &rv.review_record.locator,
            "/admission/review/reviewRecord/locator",
            file,
            issues,
        );
    }
}

/// Streams one referenced file to the sink, verifying its declared digest.
fn put_reference(
    loaded: &Loaded,
    r: &Reference,
    sink: &mut dyn Sink,
    root: &Root,
    issues: &mut Vec<Issue>,
) -> Result<Option<Digest>> {
    let Some(expected) = r.digest.digest() else {
        return Ok(None);
    };
    let (mut f, stamp) = match loaded.root.open_evidence(&r.locator) {
        Ok(x) => x,
        Err(i) => {
            issues.push(i);
            return Ok(None);
        }
    };
    match sink.put(
        &mut f,
        stamp.size(),
        Path::new(&r.locator),
        Some(expected),
        Some(root.clone()),
    ) {
        Ok(d) => {
            if let Some(i) = BundleDir::changed(&r.locator, &f, &stamp) {
                issues.push(i);
            }
            Ok(Some(d))
        }
        Err(e) => {
            issues.push(crate::sink::input_issue(e, &r.locator)?);
            Ok(None)
        }
    }
}

/// The fixture archive: stored (or hashed) once, then parsed from the file
/// again with the declared limits, members going to the sink as they
/// stream. Returns the archive's digest and its members.
fn read_fixture(
    loaded: &Loaded,
    p: &Packet,
    sink: &mut dyn Sink,
    root: &Root,
    depth: FixtureDepth,
    issues: &mut Vec<Issue>,
) -> Result<(Option<Digest>, Members)> {
    let src = &p.agent_input.fixture.source;
    let archive_ref = Reference {
        locator: src.locator.clone(),
        digest: src.digest.clone(),
    };
    let limits = ArchiveLimits {
        max_compressed: src.limits.max_compressed_bytes,
        max_expanded: src.limits.max_expanded_bytes,
        max_members: src.limits.max_members,
    };
    let mut fixture = None;
    match loaded.root.open_evidence(&src.locator) {
        Err(i) => issues.push(i),
        Ok((_, stamp)) if stamp.size() > limits.max_compressed => issues.push(Issue::file(
            codes::limit::ARCHIVE_COMPRESSED_BYTES,
            &src.locator,
            format!(
                "{}: {} bytes, over maxCompressedBytes {}",
                src.locator,
                stamp.size(),
                limits.max_compressed
            ),
        )),
        Ok(_) => fixture = put_reference(loaded, &archive_ref, sink, root, issues)?,
    }
    let members = match (fixture, depth) {
        (Some(_), FixtureDepth::Members) => stream_members(loaded, p, limits, sink, issues)?,
        _ => Vec::new(),
    };
    Ok((fixture, members))
}

/// Puts one member's stream into the sink as a root of the packet,
/// noting its digest. A failure of the member's stream is the archive's
/// (corrupt, or a limit), which the reader names; any other is kept in
/// `fatal`, to be returned as it is.
fn put_member(
    sink: &mut dyn Sink,
    packet_id: &str,
    m: &Member,
    r: &mut dyn std::io::Read,
    digests: &mut Vec<Digest>,
    fatal: &mut Option<EvidenceError>,
) -> Result<(), ArchiveError> {
    let member_root = Root {
        kind: super::MEMBER_ROOT.into(),
        name: format!("{packet_id}:{}", m.path),
    };
    let mut watched = Watched {
        inner: r,
        failed: false,
    };
    match sink.put(
        &mut watched,
        m.size,
        Path::new(&m.path),
        None,
        Some(member_root),
    ) {
        Ok(d) => {
            digests.push(d);
            Ok(())
        }
        Err(e) if watched.failed => Err(ArchiveError {
            code: READ_FAILED,
            member: m.path.clone(),
            message: e.to_string(),
        }),
        Err(e) => {
            let message = e.to_string();
            *fatal = Some(e);
            Err(ArchiveError {
                code: codes::io::ERROR,
                member: m.path.clone(),
                message,
            })
        }
    }
}

/// Streams the archive's members to the sink under the packet's limits,
/// and checks the include paths against them.
fn stream_members(
    loaded: &Loaded,
    p: &Packet,
    limits: ArchiveLimits,
    sink: &mut dyn Sink,
    issues: &mut Vec<Issue>,
) -> Result<Members> {
    let src = &p.agent_input.fixture.source;
    let file = loaded.locator.as_str();
    let (mut f, stamp) = loaded
        .root
        .open_evidence(&src.locator)
        .map_err(|i| StoreError::io(&src.locator, "reopen", std::io::Error::other(i.message)))?;
    let mut digests: Vec<Digest> = Vec::new();
    let mut fatal: Option<EvidenceError> = None;
    let packet_id = p.id.clone();
    // The packet format is tar-gzip-v1: a zstd fixture is not one.
    let result = read_archive(
        &mut f,
        limits,
        &[Compression::Gzip],
        ANY_NAME,
        &mut |m, r| put_member(sink, &packet_id, m, r, &mut digests, &mut fatal),
    );
    // A limit tripped inside a member's stream surfaces in the sink as a
    // read error; the archive reader knows it was the limit.
    let limit_hit = matches!(&result, Err(e) if e.code.starts_with("limit."));
    if let Some(e) = fatal.filter(|_| !limit_hit) {
        return Err(e);
    }
    let members = match result {
        Ok(list) => {
            let members = pair_digests(list, digests);
            let plain: Vec<Member> = members.iter().map(|(m, _)| m.clone()).collect();
            let include = &p.agent_input.fixture.materializer.include_paths;
            for (i, msg) in check_include_paths(&plain, include) {
                issues.push(Issue::at(
                    codes::validation::INCLUDE_PATH_UNMATCHED,
                    file,
                    format!("/agentInput/fixture/materializer/includePaths/{i}"),
                    msg,
                ));
            }
            members
        }
        Err(e) => {
            issues.push(archive_issue(&e, &src.locator));
            Vec::new()
        }
    };
    if let Some(i) = BundleDir::changed(&src.locator, &f, &stamp) {
        issues.push(i);
    }
    Ok(members)
}

/// Checks that every include path selects at least one member (itself or
/// something below it).
pub fn check_include_paths(members: &[Member], include: &[String]) -> Vec<(usize, String)> {
    include
        .iter()
        .enumerate()
        .filter(|(_, p)| {
            let below = format!("{p}/");
            !members
                .iter()
                .any(|m| m.path == **p || m.path.starts_with(&below))
        })
        .map(|(i, p)| {
            (
                i,
                format!("include path {p:?} selects no file or directory of the fixture"),
            )
        })
        .collect()
}

/// A member's stream that remembers whether reading it failed, so that a
/// failure of the sink is told apart from one of the archive.
struct Watched<'r> {
    inner: &'r mut dyn std::io::Read,
    failed: bool,
}

impl std::io::Read for Watched<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let r = self.inner.read(buf);
        self.failed |= r.is_err();
        r
    }
}

/// Pairs each file member with its digest, in archive order.
fn pair_digests(list: Vec<Member>, digests: Vec<Digest>) -> Members {
    let mut it = digests.into_iter();
    list.into_iter()
        .map(|m| {
            let d = if m.kind == MemberKind::File {
                it.next()
            } else {
                None
            };
            (m, d)
        })
        .collect()
}

/// An archive error as an issue about the archive (and member).
fn archive_issue(e: &ArchiveError, locator: &str) -> Issue {
    let pointer = if e.member.is_empty() {
        String::new()
    } else {
        format!("/{}", e.member)
    };
    Issue::at(
        e.code,
        locator,
        pointer,
        format!("{locator}: {}", e.message),
    )
}

/// A component's entry when the packet references it: its digest, or
/// null when it could not be read (an issue says why).
fn referenced(digest: Option<Digest>) -> Value {
    match digest {
        Some(d) => serde_json::json!({"status": "referenced", "digest": DigestObject::json(&d)}),
        None => Value::Null,
    }
}

/// Reads, verifies and sends every component to `sink`. Member files go to
/// the sink too, rooted as (`fixture-member`, `<packet id>:<path>`).
pub fn read_components(
    loaded: &Loaded,
    sink: &mut dyn Sink,
    depth: FixtureDepth,
) -> Result<(Option<Components>, Vec<Issue>)> {
    let p = loaded
        .packet
        .as_ref()
        .expect("called on a schema-valid packet");
    let mut issues = Vec::new();
    let root = Root {
        kind: super::PACKET_ROOT.into(),
        name: p.id.to_string(),
    };
    let prompt_bytes = p.agent_input.prompt.as_bytes();
    let prompt = sink.put(
        &mut &prompt_bytes[..],
        prompt_bytes.len() as u64,
        Path::new("agentInput.prompt"),
        None,
        Some(root.clone()),
    )?;

    let (fixture, members) = read_fixture(loaded, p, sink, &root, depth, &mut issues)?;

    let reference = match p.reference_solution() {
        Some(r) => referenced(put_reference(loaded, &r, sink, &root, &mut issues)?),
        None => match p
            .restricted
            .as_ref()
            .and_then(|r| r.reference_solution.get("status"))
            .cloned()
        {
            Some(s) => serde_json::json!({ "status": s }),
            None => serde_json::json!({"status": "not-provided"}),
        },
    };
    let verifier = match &p.restricted {
        Some(r) => put_reference(loaded, &r.verifier, sink, &root, &mut issues)?,
        None => None,
    };
    let perturbation = match p.perturbation() {
        Some(r) => referenced(put_reference(loaded, &r, sink, &root, &mut issues)?),
        None => {
            serde_json::json!({ "status": p.controlled_perturbation.get("status").cloned().unwrap_or(Value::Null) })
        }
    };
    let review_record = match &p.admission.review {
        Some(rv) => {
            let d = put_reference(loaded, &rv.review_record, sink, &root, &mut issues)?;
            if d.is_some() {
                check_review_record(loaded, p, &mut issues);
            }
            d
        }
        None => None,
    };
    let Some(fixture) = fixture else {
        return Ok((None, issues));
    };
    Ok((
        Some(Components {
            prompt,
            fixture,
            members,
            reference,
            verifier,
            review_record,
            perturbation,
        }),
        issues,
    ))
}

/// The review record must bind the pre-admission digest and agree with the
/// packet's admission decision, reviewer and time.
fn check_review_record(loaded: &Loaded, p: &Packet, issues: &mut Vec<Issue>) {
    let rv = p.admission.review.as_ref().expect("admitted or rejected");
    let loc = rv.review_record.locator.as_str();
    let Ok((mut f, _)) = loaded.root.open_evidence(loc) else {
        return;
    };
    let rec = match json::read_document(&mut f, &Limits::DOCUMENT, loc) {
        Ok(v) => v,
        // An unreadable record is reported where its component is read.
        Err(i) if i.code == codes::io::ERROR => return,
        Err(i) => {
            issues.push(i);
            return;
        }
    };
    let want = DigestObject::json(&pre_admission_digest(&loaded.value));
    if rec.get("preAdmissionDigest") != Some(&want) {
        issues.push(Issue::at(
            codes::validation::REVIEW_DIGEST_MISMATCH,
            loc,
            "/preAdmissionDigest",
            format!(
                "{loc}: the review record does not bind this packet's pre-admission digest {}",
                want["value"]
            ),
        ));
    }
    if rec.get("decision").and_then(Value::as_str) != Some(p.admission.status.as_str()) {
        issues.push(Issue::at(
            codes::validation::REVIEW_DECISION_MISMATCH,
            loc,
            "/decision",
            format!(
                "{loc}: decision differs from admission.status {:?}",
                p.admission.status
            ),
        ));
    }
    if rec.get("reviewedAt").and_then(Value::as_str) != Some(rv.reviewed_at.as_str())
        || rec.get("reviewedBy").and_then(Value::as_str) != Some(rv.reviewed_by.as_str())
    {
        issues.push(Issue::at(
            codes::validation::REVIEW_MISMATCH,
            loc,
            "",
            format!("{loc}: reviewedAt/reviewedBy differ from the packet's admission.review"),
        ));
    }
}
