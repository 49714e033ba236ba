//! `bundle diff`: two stored bundles side by side, for retries and
//! model-vs-model comparisons: the manifest fields that differ, which
//! artifacts are shared, changed or only on one side, and the two sessions
//! event by event: streamed for counts and the common prefix, and aligned
//! (`events`) while both are at most `MAX_ALIGNED_EVENTS` long, which
//! bounds the memory the alignment holds.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read};

use coffer_base::digest::Digest;
use coffer_base::json::JsonlLimits;
use coffer_store::error::StoreError;

use crate::error::Result;
use coffer_store::Store;
use serde::Serialize;
use serde_json::Value;

use super::events::{align, keyed, Alignment, Keyed, MAX_ALIGNED_EVENTS};
use super::records::{bundle_artifacts, require_bundle, ArtifactRow, BundleRow};
use crate::vocab::Kind;

/// One side of a diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Side {
    /// Bundle id.
    pub bundle_id: crate::ids::BundleId,
    /// Its manifest digest.
    pub manifest_digest: Digest,
}

/// A manifest field that differs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldChange {
    /// The field, as `bundle ls --json` names it.
    pub field: String,
    /// Its value in A.
    pub a: Value,
    /// Its value in B.
    pub b: Value,
}

/// An artifact path both bundles hold with other bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Changed {
    /// The path in both bundles.
    pub path: String,
    /// Its digest in A.
    pub a: Digest,
    /// Its digest in B.
    pub b: Digest,
}

/// Artifacts by relative path.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactDiff {
    /// Same path, same bytes (one object in the store).
    pub same: Vec<String>,
    /// Same path, other bytes.
    pub changed: Vec<Changed>,
    /// Only in A.
    pub only_a: Vec<String>,
    /// Only in B.
    pub only_b: Vec<String>,
}

/// Event counts of one record `type` on each side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Records of this type in A's session.
    pub a: u64,
    /// In B's.
    pub b: u64,
}

/// The two sessions, record by record.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionDiff {
    /// Records in A's session.
    pub events_a: u64,
    /// Records in B's session.
    pub events_b: u64,
    /// Leading records that are byte-identical on both sides.
    pub common_prefix: u64,
    /// The first record (1-based line) that differs, if any.
    pub first_difference: Option<u64>,
    /// Records per `type` (records without one count as `(none)`).
    pub types: BTreeMap<String, Counts>,
    /// The two sessions aligned event by event (ids, times and durations
    /// set aside); none when either is longer than
    /// [`MAX_ALIGNED_EVENTS`].
    pub alignment: Option<Alignment>,
}

/// What `bundle diff` reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BundleDiff {
    /// The first bundle.
    pub a: Side,
    /// The second bundle.
    pub b: Side,
    /// Manifest fields that differ (ids, digests and ingest time aside).
    pub fields: Vec<FieldChange>,
    /// Artifacts by path.
    pub artifacts: ArtifactDiff,
    /// The sessions, when both bundles have one.
    pub session: Option<SessionDiff>,
}

/// Fields that always differ between two bundles, so say nothing.
const IDENTITY_FIELDS: [&str; 3] = ["bundleId", "manifestDigest", "ingestedMs"];

/// Compares the stored bundles `a` and `b` name.
pub fn diff(
    store: &Store,
    a: &crate::ids::BundleRef,
    b: &crate::ids::BundleRef,
) -> Result<BundleDiff> {
    let (ra, rb) = (
        require_bundle(store.catalog(), a)?,
        require_bundle(store.catalog(), b)?,
    );
    let (aa, ab) = (
        bundle_artifacts(store.catalog(), &ra.bundle_id)?,
        bundle_artifacts(store.catalog(), &rb.bundle_id)?,
    );
    let session = match (session_of(&aa), session_of(&ab)) {
        (Some(x), Some(y)) => Some(sessions(store, x, y)?),
        _ => None,
    };
    Ok(BundleDiff {
        a: side(&ra),
        b: side(&rb),
        fields: fields(&ra, &rb),
        artifacts: artifacts(&aa, &ab),
        session,
    })
}

fn side(r: &BundleRow) -> Side {
    Side {
        bundle_id: r.bundle_id.clone(),
        manifest_digest: r.manifest_digest,
    }
}

fn fields(a: &BundleRow, b: &BundleRow) -> Vec<FieldChange> {
    let (Value::Object(va), Value::Object(vb)) = (
        serde_json::to_value(a).expect("a row serializes"),
        serde_json::to_value(b).expect("a row serializes"),
    ) else {
        unreachable!("rows serialize as objects")
    };
    va.into_iter()
        .filter(|(k, _)| !IDENTITY_FIELDS.contains(&k.as_str()))
        .filter_map(|(k, x)| {
            let y = vb.get(&k).cloned().unwrap_or(Value::Null);
            (x != y).then_some(FieldChange {
                field: k,
                a: x,
                b: y,
            })
        })
        .collect()
}

fn artifacts(a: &[ArtifactRow], b: &[ArtifactRow]) -> ArtifactDiff {
    let by_path = |rows: &[ArtifactRow]| -> BTreeMap<String, Digest> {
        rows.iter()
            .map(|r| (r.relative_path.clone(), r.digest))
            .collect()
    };
    let (pa, pb) = (by_path(a), by_path(b));
    let mut out = ArtifactDiff::default();
    let paths: BTreeSet<&String> = pa.keys().chain(pb.keys()).collect();
    for p in paths {
        match (pa.get(p), pb.get(p)) {
            (Some(x), Some(y)) if x == y => out.same.push(p.clone()),
            (Some(x), Some(y)) => out.changed.push(Changed {
                path: p.clone(),
                a: *x,
                b: *y,
            }),
            (Some(_), None) => out.only_a.push(p.clone()),
            (None, _) => out.only_b.push(p.clone()),
        }
    }
    out
}

fn session_of(rows: &[ArtifactRow]) -> Option<&ArtifactRow> {
    rows.iter().find(|r| r.kind == Kind::Session)
}

/// One session's records, streamed from the store (verified as read).
struct Records<'s> {
    lines: BufReader<Box<dyn std::io::Read + 's>>,
    buf: Vec<u8>,
    subject: String,
}

impl Records<'_> {
    /// The next record (without its newline), or `None` at the end.
    fn next(&mut self) -> Result<Option<&[u8]>> {
        self.buf.clear();
        let max = JsonlLimits::EVIDENCE.line.max_bytes as u64;
        let n = (&mut self.lines)
            .take(max + 2)
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| StoreError::io(&self.subject, "read", e))?;
        if n == 0 {
            return Ok(None);
        }
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
        }
        Ok(Some(&self.buf))
    }
}

fn open_records<'s>(store: &'s Store, r: &ArtifactRow) -> Result<Records<'s>> {
    Ok(Records {
        lines: BufReader::with_capacity(1 << 20, Box::new(store.open_object(&r.digest)?)),
        buf: Vec::new(),
        subject: format!("{}:{}", r.bundle_id, r.relative_path),
    })
}

/// One session's events, kept for alignment while the session is short
/// enough (then dropped, and only counted).
struct Kept {
    keyed: Option<Vec<Keyed>>,
}

impl Kept {
    fn new() -> Kept {
        Kept {
            keyed: Some(Vec::new()),
        }
    }

    fn push(&mut self, k: Keyed) {
        if let Some(v) = &mut self.keyed {
            if v.len() < MAX_ALIGNED_EVENTS {
                v.push(k);
            } else {
                self.keyed = None;
            }
        }
    }
}

fn sessions(store: &Store, a: &ArtifactRow, b: &ArtifactRow) -> Result<SessionDiff> {
    let (mut ra, mut rb) = (open_records(store, a)?, open_records(store, b)?);
    let mut out = SessionDiff::default();
    let (mut sa, mut sb) = (Kept::new(), Kept::new());
    let mut diverged = false;
    loop {
        let la = ra.next()?.map(<[u8]>::to_vec);
        let lb = rb.next()?;
        if la.is_none() && lb.is_none() {
            break;
        }
        if let Some(l) = &la {
            out.events_a += 1;
            let k = keyed(out.events_a, l);
            out.types.entry(k.event.kind.clone()).or_default().a += 1;
            sa.push(k);
        }
        if let Some(l) = lb {
            out.events_b += 1;
            let k = keyed(out.events_b, l);
            out.types.entry(k.event.kind.clone()).or_default().b += 1;
            sb.push(k);
        }
        if !diverged {
            if la.as_deref() == lb {
                out.common_prefix += 1;
            } else {
                diverged = true;
                out.first_difference = Some(out.common_prefix + 1);
            }
        }
    }
    if let (Some(x), Some(y)) = (&sa.keyed, &sb.keyed) {
        out.alignment = Some(align(x, y));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(path: &str, bytes: &[u8]) -> ArtifactRow {
        ArtifactRow {
            bundle_id: "b".into(),
            artifact_id: path.into(),
            relative_path: path.into(),
            digest: Digest::of(bytes),
            size: bytes.len() as u64,
            kind: Kind::Session,
            authority: crate::vocab::Authority::Semantic,
            sharing_class: crate::vocab::SharingClass::Restricted,
            media_type: "text/plain".into(),
        }
    }

    #[test]
    fn artifacts_are_same_changed_or_on_one_side() {
        let a = [row("x", b"1"), row("y", b"2"), row("only-a", b"3")];
        let b = [row("x", b"1"), row("y", b"other"), row("only-b", b"4")];
        let d = artifacts(&a, &b);
        assert_eq!(d.same, ["x"]);
        assert_eq!(d.changed.len(), 1);
        assert_eq!(d.changed[0].path, "y");
        assert_eq!(
            (d.only_a.as_slice(), d.only_b.as_slice()),
            (&["only-a".to_string()][..], &["only-b".to_string()][..])
        );
    }

    #[test]
    fn record_types_come_from_the_type_field() {
        let kind = |l: &[u8]| keyed(1, l).event.kind;
        assert_eq!(kind(br#"{"type":"tool.call","x":[1]}"#), "tool.call");
        assert_eq!(kind(br#"{"x":1}"#), "(none)");
        assert_eq!(kind(b"not json"), "(none)");
    }
}
