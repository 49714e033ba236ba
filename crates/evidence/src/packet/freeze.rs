//! `packet freeze`, `packet status` and `packet materialize`.
//!
//! Freeze stores every component and every fixture member as its own object
//! (so fixtures that differ in one file share the rest), plus a tree object
//! listing the members; only when all of that is durable is the freeze
//! record written beside the packet, no-clobber: the first writer wins and
//! every later freeze returns that record unchanged.

use coffer_base::codes;
use std::io::Write;
use std::path::Path;

use serde_json::{json, Value};

use super::check::{load, pre_admission_digest, read_components, Components, FixtureDepth, Loaded};
use super::model::{DigestObject, FreezeRecord, Packet};
use super::{MEMBER_ROOT, PACKET_ROOT};
use crate::schema::{self, DocKind};
use crate::sink::{HashOnly, Sink};
use coffer_base::digest::Digest;
use coffer_base::dir::Dir;
use coffer_base::issue::Issue;
use coffer_base::json::canonical::{canonical_digest, canonicalize};
use coffer_base::json::{self, Limits};
use coffer_base::publish::NewTree;
use coffer_store::catalog::Root;
use coffer_store::error::StoreError;

use crate::error::{EvidenceError, Result};
use crate::vocab::AdmissionStatus;
use coffer_store::layout::write_new_durable;
use coffer_store::store::{Batch, PutOptions, Store};

/// Where a packet stands.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PacketState {
    /// A freeze record exists and matches the packet.
    Frozen,
    /// A freeze record exists and these components differ.
    Changed,
    /// Admitted, valid, no freeze record yet.
    Unfrozen,
    /// Proposed or rejected.
    Unadmitted,
    /// The packet or its components are invalid.
    Invalid,
}

/// What a packet command found or did.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PacketReport {
    /// The packet's locator under its root.
    pub locator: String,
    /// The packet id, when readable.
    pub packet_id: Option<crate::ids::PacketId>,
    /// Where it stands.
    pub state: PacketState,
    /// Components that differ from the freeze record (state `changed`).
    pub changed: Vec<String>,
    /// The freeze record (frozen, or just written).
    pub record: Option<Value>,
    /// True when this call wrote the freeze record.
    pub created: bool,
    /// Fixture members.
    pub members: usize,
    /// Problems (state `invalid`).
    pub issues: Vec<Issue>,
}

fn freeze_name(locator: &str) -> String {
    format!("{locator}.freeze.json")
}

/// The tree object: the sorted member list, canonical JSON.
fn tree_object(c: &Components) -> Vec<u8> {
    let mut members: Vec<Value> = c
        .members
        .iter()
        .map(|(m, d)| {
            json!({
                "path": m.path,
                "kind": m.kind,
                "mode": format!("{:o}", m.mode),
                "size": m.size,
                "digest": d.map(|d| d.to_string()),
            })
        })
        .collect();
    members.sort_by(|a, b| a["path"].as_str().cmp(&b["path"].as_str()));
    canonicalize(&json!({"schemaVersion": "coffer.fixture-tree/v1", "archive": c.fixture.to_string(), "members": members})).into_bytes()
}

/// Reads the existing freeze record beside the packet (value and bytes), if any.
fn read_record(loaded: &Loaded) -> Result<Option<(Value, Vec<u8>)>> {
    let name = freeze_name(&loaded.locator);
    match loaded.root.open_evidence(&name) {
        Ok((mut f, _)) => {
            let bytes = json::read_bounded(&mut f, Limits::DOCUMENT.max_bytes)
                .map_err(|e| StoreError::io(&name, "read", e))?
                .ok_or_else(|| {
                    StoreError::CatalogData(format!(
                        "{name}: larger than {} bytes",
                        Limits::DOCUMENT.max_bytes
                    ))
                })?;
            let v = json::parse(&bytes, &Limits::DOCUMENT)
                .map_err(|e| StoreError::CatalogData(format!("{name}: {e}")))?;
            let problems = schema::validate(DocKind::PacketFreeze, &v);
            if let Some(p) = problems.first() {
                return Err(StoreError::CatalogData(format!(
                    "{name}: not a freeze record: {}: {}",
                    p.pointer, p.message
                ))
                .into());
            }
            Ok(Some((v, bytes)))
        }
        Err(i) if i.code == codes::validation::MISSING_FILE => Ok(None),
        Err(i) => Err(StoreError::io(&name, "open", std::io::Error::other(i.message)).into()),
    }
}

/// Names of the components that differ between a record and the current packet.
fn differences(record: &Value, packet_digest: &Value, components: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if record.get("packetDigest") != Some(packet_digest) {
        out.push("packet".to_string());
    }
    for name in [
        "prompt",
        "fixture",
        "reference",
        "verifier",
        "reviewRecord",
        "controlledPerturbation",
    ] {
        if record["components"].get(name) != components.get(name) {
            out.push(name.to_string());
        }
    }
    out
}

/// Reads the components into `sink`: the components and a report to fill
/// in, or a finished report of state `invalid` listing what is wrong.
fn checked_components(
    loaded: &Loaded,
    sink: &mut dyn Sink,
    depth: FixtureDepth,
) -> Result<std::result::Result<(Components, PacketReport), PacketReport>> {
    let (components, issues) = read_components(loaded, sink, depth)?;
    let mut out = report(loaded, PacketState::Invalid);
    out.issues = issues;
    Ok(match components.filter(|_| out.issues.is_empty()) {
        Some(c) => {
            out.members = c.members.len();
            Ok((c, out))
        }
        None => Err(out),
    })
}

fn report(loaded: &Loaded, state: PacketState) -> PacketReport {
    PacketReport {
        locator: loaded.locator.clone(),
        packet_id: loaded.packet.as_ref().map(|p| p.id.clone()),
        state,
        changed: Vec::new(),
        record: None,
        created: false,
        members: 0,
        issues: loaded.issues.clone(),
    }
}

/// Validates a packet and its components without storing anything.
pub fn status(root: &Path, packet: &Path) -> Result<PacketReport> {
    status_to(root, packet, FixtureDepth::Members)
}

/// [`status`], reading the fixture archive to `depth`.
fn status_to(root: &Path, packet: &Path, depth: FixtureDepth) -> Result<PacketReport> {
    let loaded = load(root, packet)?;
    if !loaded.issues.is_empty() || loaded.packet.is_none() {
        return Ok(report(&loaded, PacketState::Invalid));
    }
    let (c, mut out) = match checked_components(&loaded, &mut HashOnly, depth)? {
        Ok(x) => x,
        Err(invalid) => return Ok(invalid),
    };
    let p = loaded.packet.as_ref().expect("checked");
    if p.admission.status != AdmissionStatus::Admitted {
        out.state = PacketState::Unadmitted;
        return Ok(out);
    }
    match read_record(&loaded)? {
        None => out.state = PacketState::Unfrozen,
        Some((rec, _)) => {
            let diff = differences(
                &rec,
                &DigestObject::json(&canonical_digest(&loaded.value)),
                &c.json(),
            );
            out.state = if diff.is_empty() {
                PacketState::Frozen
            } else {
                PacketState::Changed
            };
            out.changed = diff;
            out.record = Some(rec);
        }
    }
    Ok(out)
}

/// Freezes a packet: see the module documentation.
pub fn freeze(store: &mut Store, root: &Path, packet: &Path) -> Result<PacketReport> {
    let loaded = load(root, packet)?;
    if !loaded.issues.is_empty() || loaded.packet.is_none() {
        return Ok(report(&loaded, PacketState::Invalid));
    }
    let p = loaded.packet.clone().expect("checked");
    if p.admission.status != AdmissionStatus::Admitted {
        return Err(EvidenceError::Conflict {
            code: codes::policy::NOT_ADMITTED,
            message: format!(
                "packet {:?} is {}; only admitted packets can be frozen",
                p.id, p.admission.status
            ),
            subject: loaded.locator.clone(),
        });
    }
    let packet_digest = DigestObject::json(&canonical_digest(&loaded.value));
    let mut batch = store.batch()?;
    let (c, mut out) = match checked_components(&loaded, &mut batch, FixtureDepth::Members)? {
        Ok(x) => x,
        Err(invalid) => return Ok(invalid),
    };
    let comp_json = c.json();
    // A record already beside the packet may come from another store (a
    // copied or committed packet root): it vouches for objects this
    // store may lack. One that does not match the packet is refused
    // before anything is stored; one that does is adopted only after
    // every component and member it names is stored here too.
    let found = read_record(&loaded)?;
    if let Some((rec, _)) = &found {
        if let Err(e) = existing(out.clone(), rec.clone(), &packet_digest, &comp_json) {
            drop(batch);
            return Err(e);
        }
    }
    // Objects first: members, components, and the tree.
    commit_objects(batch, &c, &p.id)?;

    coffer_base::crash::point("freeze_objects_committed");
    let adopt = |store: &mut Store, out, found| {
        adopt_record(
            store,
            out,
            found,
            &packet_digest,
            &comp_json,
            &p.id,
            &loaded.locator,
        )
    };
    if let Some(found) = found {
        return adopt(store, out, found);
    }
    // Then the record, no-clobber beside the packet.
    let (record, bytes) = new_record(&p, &loaded, &packet_digest, &comp_json);
    let (parent, name) = packet_parent(&loaded)?;
    if !write_new_durable(&parent, &name, &bytes, 0o444)? {
        // Another freeze won the race: its record is the record.
        let found = read_record(&loaded)?
            .ok_or_else(|| StoreError::CatalogData("freeze record vanished".into()))?;
        return adopt(store, out, found);
    }
    coffer_base::crash::point("freeze_record_written");
    record_freeze(store, &p.id, &loaded.locator, &bytes, &record)?;
    out.state = PacketState::Frozen;
    out.record = Some(record);
    out.created = true;
    Ok(out)
}

/// A new freeze record for the packet and its checked components, and the
/// bytes written (pretty JSON and a newline).
fn new_record(
    p: &Packet,
    loaded: &Loaded,
    packet_digest: &Value,
    comp_json: &Value,
) -> (Value, Vec<u8>) {
    let frozen_at = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
    let pre = DigestObject::json(&pre_admission_digest(&loaded.value));
    let aggregate = canonical_digest(&json!({
        "packetId": p.id, "packetLocator": loaded.locator, "preAdmissionDigest": pre,
        "packetDigest": packet_digest, "components": comp_json, "frozenAt": frozen_at,
    }));
    let mut record = json!({
        "schemaVersion": "ebo.task-packet-freeze/v1",
        "packetId": p.id,
        "assessmentMode": p.mode(),
        "packetLocator": loaded.locator,
        "preAdmissionDigest": pre,
        "packetDigest": packet_digest,
        "components": comp_json,
        "aggregateDigest": DigestObject::json(&aggregate),
        "frozenAt": frozen_at,
    });
    if p.assessment_mode.is_none() {
        record
            .as_object_mut()
            .expect("object")
            .remove("assessmentMode");
    }
    let bytes = format!(
        "{}\n",
        serde_json::to_string_pretty(&record).expect("serializable")
    )
    .into_bytes();
    (record, bytes)
}

/// Adds in-memory bytes of a packet (its tree object, its freeze record)
/// to `batch`, rooted by the packet.
fn add_packet_bytes(
    batch: &mut Batch<'_>,
    bytes: &[u8],
    what: &str,
    packet_id: &str,
) -> Result<Digest> {
    let opts = PutOptions {
        root: Some(Root {
            kind: PACKET_ROOT.into(),
            name: packet_id.to_string(),
        }),
        ..PutOptions::default()
    };
    let (d, _) = batch.add_stream(&mut &bytes[..], bytes.len() as u64, Path::new(what), opts)?;
    Ok(d)
}

/// Commits the batch (members and components already in it) with the
/// fixture's tree object and its catalog row.
fn commit_objects(mut batch: Batch<'_>, c: &Components, packet_id: &str) -> Result<()> {
    let tree_digest = add_packet_bytes(&mut batch, &tree_object(c), "fixture tree", packet_id)?;
    let fixture = c.fixture;
    batch.commit_with(|tx| {
        tx.execute(
            "INSERT INTO fixture_trees (archive_digest, tree_digest) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
            &[&fixture, &tree_digest],
        )?;
        Ok(())
    })?;
    Ok(())
}

/// Returns an existing freeze record if it matches the packet (else
/// `conflict.packet_changed`), cataloging it if an interrupted freeze
/// wrote it without doing so (cataloging is idempotent).
fn adopt_record(
    store: &mut Store,
    out: PacketReport,
    (rec, bytes): (Value, Vec<u8>),
    packet_digest: &Value,
    components: &Value,
    packet_id: &str,
    locator: &str,
) -> Result<PacketReport> {
    let out = existing(out, rec, packet_digest, components)?;
    record_freeze(
        store,
        packet_id,
        locator,
        &bytes,
        out.record.as_ref().expect("frozen"),
    )?;
    Ok(out)
}

/// The typed view of a record document [`read_record`] or [`new_record`]
/// gave (both schema-valid).
fn typed(record: &Value) -> Result<FreezeRecord> {
    FreezeRecord::of(record)
        .map_err(|e| StoreError::CatalogData(format!("freeze record: {e}")).into())
}

fn record_freeze(
    store: &mut Store,
    packet_id: &str,
    locator: &str,
    bytes: &[u8],
    record: &Value,
) -> Result<()> {
    let mut batch = store.batch()?;
    let d = add_packet_bytes(&mut batch, bytes, "freeze record", packet_id)?;
    let r = typed(record)?;
    let agg = &r.aggregate_digest.value;
    let fixture = &r.components.fixture.value;
    let frozen_at = &r.frozen_at;
    batch.commit_with(|tx| {
        tx.execute(
            "INSERT INTO freezes (record_digest, packet_id, packet_locator, aggregate_digest, fixture_digest, frozen_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING",
            &[&d, &packet_id, &locator, &format!("sha256:{agg}"), &format!("sha256:{fixture}"), frozen_at],
        )?;
        Ok(())
    })?;
    Ok(())
}

/// The tree object frozen with the fixture archive that the freeze record
/// `rec` names: the members to materialize.
fn frozen_tree(store: &Store, rec: &Value) -> Result<Value> {
    let fixture =
        typed(rec)?.components.fixture.digest().ok_or_else(|| {
            StoreError::CatalogData("freeze record without a fixture digest".into())
        })?;
    let tree_digest: Digest = store
        .catalog()
        .reader()
        .query_one(
            "SELECT tree_digest FROM fixture_trees WHERE archive_digest = ?1",
            &[&fixture],
            |r| r.get(0),
        )?
        .ok_or_else(|| {
            StoreError::CatalogData(format!(
                "no tree object for fixture {fixture}; freeze it with this store"
            ))
        })?;
    let mut tree_bytes = Vec::new();
    store.copy_object(&tree_digest, &mut tree_bytes)?;
    let tree = json::parse(&tree_bytes, &Limits::EVIDENCE)
        .map_err(|e| StoreError::CatalogData(format!("tree object: {e}")))?;
    Ok(tree)
}

/// Writes the packet's allowlisted workspace from the store into `dest`
/// (a new directory): directories 0700, files 0600 (0700 when the owner
/// could execute), every file verified against the tree object. The packet
/// must be frozen: its digest and every component's (the fixture archive
/// hashed as a whole) equal to its freeze record's.
pub fn materialize(store: &Store, root: &Path, packet: &Path, dest: &Path) -> Result<usize> {
    // The files come from the tree object frozen with the archive, so the
    // archive need only be the frozen one: hashed, not inflated again.
    let status = status_to(root, packet, FixtureDepth::DigestOnly)?;
    if status.state != PacketState::Frozen {
        return Err(EvidenceError::Conflict {
            code: codes::conflict::PACKET_NOT_FROZEN,
            message: format!(
                "packet {} is {:?}, not frozen",
                status.locator, status.state
            ),
            subject: status.locator,
        });
    }
    let rec = status.record.expect("frozen has a record");
    let tree = frozen_tree(store, &rec)?;
    let loaded = load(root, packet)?;
    let include = loaded
        .packet
        .as_ref()
        .map(|p| p.agent_input.fixture.materializer.include_paths.clone())
        .unwrap_or_default();
    let selected = |path: &str| {
        include
            .iter()
            .any(|i| path == i || path.starts_with(&format!("{i}/")))
    };

    let mut out = NewTree::begin(dest, 0o700)?;
    let mut written = 0;
    for m in tree["members"].as_array().into_iter().flatten() {
        let path = m["path"].as_str().unwrap_or_default();
        if !selected(path) {
            continue;
        }
        crate::archive::check_member_name(path.as_bytes(), false)
            .map_err(|e| StoreError::CatalogData(format!("tree object: {}", e.message)))?;
        if m["kind"] == "dir" {
            out.create_dir(path, 0o700)?;
            continue;
        }
        let d: Digest = m["digest"]
            .as_str()
            .unwrap_or_default()
            .parse()
            .map_err(|_| StoreError::CatalogData(format!("tree object: bad digest for {path}")))?;
        let exec = u32::from_str_radix(m["mode"].as_str().unwrap_or("644"), 8).unwrap_or(0o644)
            & 0o100
            != 0;
        let mut f = out.create_file(path, 0o700, if exec { 0o700 } else { 0o600 })?;
        let n = store.copy_object(&d, &mut f)?;
        if Some(n) != m["size"].as_u64() {
            return Err(StoreError::SizeMismatch {
                subject: path.to_string(),
                expected: m["size"].as_u64().unwrap_or(0),
                actual: n,
            }
            .into());
        }
        f.flush()
            .map_err(|e| StoreError::io(dest.join(path), "write", e))?;
        out.sync_later(f, path)?;
        written += 1;
    }
    out.publish()?;
    Ok(written)
}

/// Totals over fixture members only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FixtureStats {
    /// Member references, every packet's counted.
    pub member_references: u64,
    /// Bytes of those references.
    pub logical_bytes: u64,
    /// Distinct member objects.
    pub objects: u64,
    /// Bytes of those objects.
    pub unique_bytes: u64,
    /// Bytes they take stored.
    pub stored_bytes: u64,
}

/// Totals over fixture members only (every packet's reference counted).
pub fn fixture_stats(store: &Store) -> Result<FixtureStats> {
    let t = store.catalog().root_kind_totals(MEMBER_ROOT)?;
    Ok(FixtureStats {
        member_references: t.references,
        logical_bytes: t.logical_bytes,
        objects: t.objects,
        unique_bytes: t.unique_bytes,
        stored_bytes: t.stored_bytes,
    })
}

fn existing(
    mut out: PacketReport,
    rec: Value,
    packet_digest: &Value,
    comp: &Value,
) -> Result<PacketReport> {
    let diff = differences(&rec, packet_digest, comp);
    if !diff.is_empty() {
        return Err(EvidenceError::Conflict {
            code: codes::conflict::PACKET_CHANGED,
            message: format!(
                "packet {} changed since it was frozen: {}",
                out.locator,
                diff.join(", ")
            ),
            subject: out.locator.clone(),
        });
    }
    out.state = PacketState::Frozen;
    out.record = Some(rec);
    Ok(out)
}

/// The packet's parent directory (opened without following symlinks) and
/// the freeze record's file name.
fn packet_parent(loaded: &Loaded) -> Result<(Dir, String)> {
    let name = freeze_name(&loaded.locator);
    let (dir_part, file) = match name.rsplit_once('/') {
        Some((d, f)) => (Some(d), f.to_string()),
        None => (None, name.clone()),
    };
    let root =
        Dir::open(loaded.root.path()).map_err(|e| StoreError::io(loaded.root.path(), "open", e))?;
    let mut cur = root;
    if let Some(d) = dir_part {
        for part in d.split('/') {
            cur = cur
                .open_dir(part)
                .map_err(|e| StoreError::io(cur.join(part), "open directory", e))?;
        }
    }
    Ok((cur, file))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::SCHEMA;

    const PACKET: &str = "packets/calc-add.json";

    fn copy_tree(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                copy_tree(&e.path(), &to.join(e.file_name()));
            } else {
                std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
            }
        }
    }

    /// The shipped task packets copied to a temp root, and the fixture
    /// packet frozen into a new store there.
    fn frozen_fixture() -> (tempfile::TempDir, PacketReport) {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("root");
        copy_tree(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/task-packets"),
            &root,
        );
        let (mut store, _) = Store::init(&t.path().join("store"), &SCHEMA).unwrap();
        let frozen = freeze(&mut store, &root, Path::new(PACKET)).unwrap();
        (t, frozen)
    }

    #[test]
    fn a_digest_only_status_agrees_without_reading_the_members() {
        let (t, frozen) = frozen_fixture();
        let root = t.path().join("root");
        assert_eq!(frozen.state, PacketState::Frozen, "{:?}", frozen.issues);

        let full = status(&root, Path::new(PACKET)).unwrap();
        let quick = status_to(&root, Path::new(PACKET), FixtureDepth::DigestOnly).unwrap();
        assert_eq!(full.state, PacketState::Frozen);
        assert_eq!(quick.state, PacketState::Frozen);
        assert_eq!(quick.record, full.record);
        assert!(full.members > 0);
        assert_eq!(quick.members, 0, "the archive was not opened up");
    }

    #[test]
    fn a_written_record_reads_back_typed_and_a_stray_field_is_refused() {
        let (_t, frozen) = frozen_fixture();
        let doc = frozen.record.expect("a new record");
        let rec = FreezeRecord::of(&doc).unwrap();
        assert_eq!(rec.schema_version, "ebo.task-packet-freeze/v1");
        assert_eq!(rec.packet_locator, PACKET);
        assert!(rec.components.fixture.digest().is_some());
        assert_eq!(
            frozen.packet_id.as_deref(),
            Some(rec.packet_id.as_str()),
            "the record names its packet"
        );
        let mut stray = doc.clone();
        stray["extra"] = Value::Bool(true);
        assert!(FreezeRecord::of(&stray).is_err());
    }
}
