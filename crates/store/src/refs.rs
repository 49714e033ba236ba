//! Refs and records: the catalog, kept as immutable objects in the backend.
//!
//! Every catalog transaction that inserts rows (a put, an ingest, a freeze,
//! an export) also writes, before it commits:
//! 1. a **record**: an ordinary content-addressed object holding every row
//!    the transaction inserted, captured by temporary SQLite triggers, as
//!    canonical JSON (`coffer.catalog-record/v1`);
//! 2. a **ref** naming it, created put-if-absent: a named ref
//!    ([`RefSpec::named`]) when the layer above asks for one (the evidence
//!    layer's `refs/bundles/<bundle id>`, so two stores ingesting one bundle
//!    id with different manifests cannot both win: the loser gets
//!    `conflict.bundle_exists`), `refs/records/<record hex>` otherwise.
//!
//! `catalog rebuild` lists `refs/`, and replays the records of the refs the
//! catalog has not applied, oldest first, so an empty catalog becomes the
//! catalog of every store that wrote to the backend. Ref then commit: a
//! crash in between leaves a ref the local catalog lacks, which rebuild
//! (or ingesting the same bundle again) applies.

use coffer_base::codes;
use std::collections::{HashMap, HashSet};
use std::io::Read;

use rusqlite::{params, types::Value as SqlValue, Transaction};
use serde_json::{json, Value};

use crate::backend::{read_small, Put, REFS_PREFIX};
use crate::capture::{clear_capture, columns};
use crate::catalog::Catalog;
use crate::error::{Result, StoreError};
use crate::frame::{SmallEncoder, VerifyingDecoder};
use crate::objects::{stage_small, ObjectDirs};
use coffer_base::digest::Digest;
use coffer_base::json::canonical::canonicalize;

/// Schema of a record object.
pub const RECORD_SCHEMA: &str = "coffer.catalog-record/v1";
/// Schema of a ref.
pub const REF_SCHEMA: &str = "coffer.ref/v1";
/// Root kind that keeps record objects alive.
pub const REF_ROOT: &str = "ref";
/// Largest ref document read.
const REF_MAX_BYTES: u64 = 4 << 10;
/// Largest record object read (a bundle with many thousands of artifacts).
const RECORD_MAX_BYTES: u64 = 64 << 20;
/// Records larger than this are applied in a transaction of their own,
/// not in a savepoint: inside a savepoint each statement costs SQLite more
/// the more the savepoint has journaled, so a put batch's record (8,192
/// objects and their roots) took minutes in one and seconds alone. Small
/// records (an ingest's few dozen rows) share one transaction. The size is
/// the record's bytes, known before its rows are parsed: about 1,000 rows
/// of a put (a row of `objects` or `roots` takes 130-250 bytes).
const OWN_TRANSACTION_BYTES: usize = 192 << 10;

pub use crate::capture::Row;

/// A named ref a transaction must create (or find naming the same target).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefSpec {
    /// Its key (`refs/<namespace>/<name>`).
    pub key: String,
    /// What it names (for the evidence layer, a bundle's manifest digest).
    pub target: Digest,
    /// Code of the error when the key names another target.
    pub conflict: &'static str,
}

impl RefSpec {
    /// The ref `refs/<namespace>/<name>`: one name within a namespace a
    /// layer above owns (`records` is the CAS's own), held by at most one
    /// target; `conflict` is the code when another target holds it.
    pub fn named(namespace: &str, name: &str, target: Digest, conflict: &'static str) -> Self {
        debug_assert!(namespace != "records" && key_segment(namespace) == namespace);
        RefSpec {
            key: format!("{REFS_PREFIX}{namespace}/{}", key_segment(name)),
            target,
            conflict,
        }
    }
}

/// Longest key segment written: file names on local disks stop at 255
/// bytes, and a schema-valid id may be 256 characters (1,024 bytes).
const KEY_SEGMENT_MAX: usize = 200;

/// A name usable as one key segment: kept as is when it is plain, else `~`
/// and its hex, else (when that would be longer than [`KEY_SEGMENT_MAX`])
/// `~sha256-` and the hex of its SHA-256. Any id maps to exactly one safe
/// segment, and no two ids share one: the three forms cannot collide (a
/// plain name never starts with `~`, hex has no `s`).
fn key_segment(name: &str) -> String {
    let plain = !name.is_empty()
        && name.len() <= KEY_SEGMENT_MAX
        && !name.starts_with('.')
        && !name.starts_with('~')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b));
    if plain {
        name.to_string()
    } else if 2 * name.len() < KEY_SEGMENT_MAX {
        format!("~{}", hex::encode(name.as_bytes()))
    } else {
        format!("~sha256-{}", Digest::of(name.as_bytes()).hex())
    }
}

fn record_bytes(named: Option<&RefSpec>, created_ms: i64, rows: &[Row]) -> Vec<u8> {
    let mut v = json!({
        "schema": RECORD_SCHEMA,
        "createdMs": created_ms,
        "rows": rows.iter().map(|(t, m)| json!([t, m])).collect::<Vec<_>>(),
    });
    if let Some(n) = named {
        v["ref"] = json!(n.key);
        v["target"] = json!(n.target.to_string());
    }
    canonicalize(&v).into_bytes()
}

fn ref_bytes(doc: &RefDoc) -> Vec<u8> {
    canonicalize(&json!({
        "schema": REF_SCHEMA,
        "target": doc.target.to_string(),
        "record": doc.record.to_string(),
        "createdMs": doc.created_ms,
    }))
    .into_bytes()
}

/// A parsed ref document.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RefDoc {
    target: Digest,
    record: Digest,
    /// The record's time: refs sort by it without reading the records.
    created_ms: i64,
}

fn parse_ref(key: &str, bytes: &[u8]) -> Result<RefDoc> {
    let bad = |why: &str| StoreError::CatalogData(format!("{key}: not a coffer ref: {why}"));
    let v: Value = serde_json::from_slice(bytes).map_err(|_| bad("not JSON"))?;
    if v.get("schema").and_then(Value::as_str) != Some(REF_SCHEMA) {
        return Err(bad("unknown schema"));
    }
    let digest = |k: &str| -> Result<Digest> {
        v.get(k)
            .and_then(Value::as_str)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad(k))
    };
    Ok(RefDoc {
        target: digest("target")?,
        record: digest("record")?,
        created_ms: v
            .get("createdMs")
            .and_then(Value::as_i64)
            .ok_or_else(|| bad("createdMs"))?,
    })
}

/// The record a ref document names (`key` for messages).
pub(crate) fn record_of(key: &str, bytes: &[u8]) -> Result<Digest> {
    Ok(parse_ref(key, bytes)?.record)
}

/// Reads a small object through the backend, verifying digest and size.
fn read_verified(dirs: &ObjectDirs, d: &Digest, max: u64) -> Result<(Vec<u8>, u64)> {
    let (body, stored) = dirs.open_frame(d)?;
    let mut dec = VerifyingDecoder::new(body, *d, None)
        .map_err(|e| StoreError::io(dirs.object_path(d), "open", e))?;
    let mut out = Vec::new();
    (&mut dec)
        .take(max + 1)
        .read_to_end(&mut out)
        .map_err(|e| StoreError::CorruptObject {
            digest: *d,
            detail: e.to_string(),
        })?;
    if out.len() as u64 > max {
        return Err(StoreError::CatalogData(format!(
            "record {d} is larger than {max} bytes"
        )));
    }
    Ok((out, stored))
}

fn insert_ref_rows(
    tx: &Transaction<'_>,
    key: &str,
    doc: &RefDoc,
    record_size: u64,
    stored_size: u64,
) -> Result<()> {
    let rec = doc.record.to_string();
    let created_ms = doc.created_ms;
    tx.execute(
        "INSERT INTO objects (digest, size, stored_size, first_seen_ms) VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
        params![rec, record_size as i64, stored_size as i64, created_ms],
    )?;
    tx.execute(
        "INSERT INTO roots (kind, name, digest, created_ms) VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
        params![REF_ROOT, key, rec, created_ms],
    )?;
    tx.execute(
        "INSERT INTO refs (key, target, record_digest, created_ms) VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
        params![key, doc.target.to_string(), rec, created_ms],
    )?;
    Ok(())
}

/// What a catalog transaction needs to publish its rows as a record and
/// its ref (see the module documentation), in two steps: staging writes
/// the record to a durable temp while the objects its rows name may still
/// be on their way to the disk; sealing publishes it and the ref once they
/// are durable (see [`crate::catalog::Seal`]).
pub(crate) struct Sealer<'a> {
    /// Where the record and the ref go.
    pub dirs: &'a ObjectDirs,
    /// The tables a record may hold rows of.
    pub recorded: &'a [&'a str],
    /// The named ref to create, if any (else `refs/records/<hex>`).
    pub named: Option<&'a RefSpec>,
    /// The record's and the ref's time.
    pub created_ms: i64,
}

/// A transaction's record, durable in `tmp/`, not yet published.
pub struct StagedRecord {
    staged: crate::objects::Staged,
    size: u64,
}

impl crate::catalog::Seal for Sealer<'_> {
    type Staged = StagedRecord;

    /// Writes the record of `rows` to a temp and syncs it; publishes
    /// nothing.
    fn stage(&self, rows: &[Row]) -> Result<StagedRecord> {
        let dirs = self.dirs;
        let record = record_bytes(self.named, self.created_ms, rows);
        let digest = Digest::of(&record);
        let mut enc =
            SmallEncoder::new().map_err(|e| StoreError::io(dirs.tmp.path(), "compress", e))?;
        let staged = stage_small(&dirs.tmp, &record, digest, &mut enc)?;
        let synced = dirs
            .tmp
            .open_file(&staged.tmp_name)
            .and_then(|f| f.sync_all());
        if let Err(e) = synced {
            dirs.discard(&staged);
            return Err(StoreError::io(dirs.tmp.join(&staged.tmp_name), "fsync", e));
        }
        Ok(StagedRecord {
            staged,
            size: record.len() as u64,
        })
    }

    /// Removes a staged record that will not be published.
    fn discard(&self, r: StagedRecord) {
        self.dirs.discard(&r.staged);
    }

    /// Publishes the staged record and its ref, and inserts their rows;
    /// runs inside the transaction whose rows the record holds, once the
    /// objects those rows name are durable.
    fn seal(&self, tx: &Transaction<'_>, r: StagedRecord) -> Result<()> {
        let (dirs, named, created_ms) = (self.dirs, self.named, self.created_ms);
        let StagedRecord { staged, size } = r;
        let digest = staged.encoded.digest;
        dirs.publish(&staged)?;
        dirs.sync_published(&[digest])?;
        coffer_base::crash::point("record_published");
        let (key, target) = match named {
            Some(n) => (n.key.clone(), n.target),
            None => (format!("{REFS_PREFIX}records/{}", digest.hex()), digest),
        };
        let ours = RefDoc {
            target,
            record: digest,
            created_ms,
        };
        match dirs.backend.put_bytes(&key, &ref_bytes(&ours))? {
            Put::Created => {
                coffer_base::crash::point("ref_published");
                insert_ref_rows(tx, &key, &ours, size, staged.encoded.stored_size)
            }
            Put::Existed => {
                let found = read_ref(dirs, &key)?;
                if found.target != target {
                    let n = named.expect("an anonymous ref is named by its own record");
                    return Err(StoreError::Conflict {
                        code: n.conflict,
                        message: format!(
                            "{key} already names {} (written by another store or process); this one has {target}",
                            found.target
                        ),
                        subject: key,
                    });
                }
                // The same content, recorded first elsewhere: theirs is the record.
                apply(dirs, self.recorded, tx, &key, &found)
            }
        }
    }
}

fn read_ref(dirs: &ObjectDirs, key: &str) -> Result<RefDoc> {
    let bytes = read_small(&*dirs.backend, key, REF_MAX_BYTES)?
        .ok_or_else(|| StoreError::CatalogData(format!("{key} vanished")))?;
    parse_ref(key, &bytes)
}

/// A record object read back and verified; its rows are parsed only as
/// they are applied (see [`each_row`]).
struct Loaded {
    bytes: Vec<u8>,
    stored_size: u64,
}

fn load_record(dirs: &ObjectDirs, doc: &RefDoc) -> Result<Loaded> {
    let (bytes, stored_size) = read_verified(dirs, &doc.record, RECORD_MAX_BYTES)?;
    Ok(Loaded { bytes, stored_size })
}

impl Loaded {
    /// Hands the record's rows to `f` one at a time (see [`each_row`]);
    /// errors name the ref and the record.
    fn each_row(
        &self,
        recorded: &[&str],
        key: &str,
        doc: &RefDoc,
        f: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<()> {
        each_row(&self.bytes, recorded, doc.created_ms, f).map_err(|stop| match stop {
            Stop::Malformed(why) => {
                StoreError::CatalogData(format!("{key}: record {}: {why}", doc.record))
            }
            Stop::Failed(e) => e,
        })
    }
}

/// Why a walk over a record's rows stopped early.
#[derive(Debug)]
enum Stop {
    /// The document is not a record for this catalog and ref: what is wrong.
    Malformed(&'static str),
    /// What was done with a row failed.
    Failed(StoreError),
}

/// Hands the rows of a record document to `f`, one at a time and in order,
/// after checking the document's schema and that its `createdMs` is the
/// ref's; each row must be a `[table, object]` pair whose table is one of
/// `recorded`.
///
/// Rows are parsed as the walk reaches them, so memory holds the record's
/// bytes and one row, never every row as values (a 64 MiB record parsed
/// whole took ten times that). The header is checked in a first pass that
/// skips the rows, so `f` sees no row of a document it must refuse; a row
/// found malformed stops the walk after `f` has seen the rows before it,
/// which is why callers apply rows inside a transaction they roll back.
fn each_row(
    bytes: &[u8],
    recorded: &[&str],
    created_ms: i64,
    f: &mut dyn FnMut(Row) -> Result<()>,
) -> std::result::Result<(), Stop> {
    let mut head = Walk::new(recorded, None);
    head.run(bytes)?;
    if head.schema.as_ref().and_then(Value::as_str) != Some(RECORD_SCHEMA) {
        return Err(Stop::Malformed("unknown schema"));
    }
    if head.created_ms != Some(created_ms) {
        return Err(Stop::Malformed("createdMs differs from its ref's"));
    }
    if !head.rows {
        return Err(Stop::Malformed("rows"));
    }
    Walk::new(recorded, Some(f)).run(bytes)
}

/// One serde pass over a record document: the top-level members, and the
/// rows either skipped (`apply` is `None`) or parsed one by one.
struct Walk<'w> {
    recorded: &'w [&'w str],
    apply: Option<&'w mut dyn FnMut(Row) -> Result<()>>,
    schema: Option<Value>,
    created_ms: Option<i64>,
    rows: bool,
    /// What a data error from serde means (a syntax error is "not JSON").
    why: &'static str,
    failed: Option<StoreError>,
}

impl<'w> Walk<'w> {
    fn new(recorded: &'w [&'w str], apply: Option<&'w mut dyn FnMut(Row) -> Result<()>>) -> Self {
        Walk {
            recorded,
            apply,
            schema: None,
            created_ms: None,
            rows: false,
            why: "unknown schema",
            failed: None,
        }
    }

    fn run(&mut self, bytes: &[u8]) -> std::result::Result<(), Stop> {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let walked =
            serde::Deserializer::deserialize_map(&mut de, &mut *self).and_then(|()| de.end());
        match (self.failed.take(), walked) {
            (Some(e), _) => Err(Stop::Failed(e)),
            (None, Ok(())) => Ok(()),
            (None, Err(e)) if e.is_data() => Err(Stop::Malformed(self.why)),
            (None, Err(_)) => Err(Stop::Malformed("not JSON")),
        }
    }

    /// A row as the record holds it, checked and moved out of its value.
    fn row(&self, v: Value) -> Option<Row> {
        let Value::Array(pair) = v else { return None };
        match <[Value; 2]>::try_from(pair).ok()? {
            [Value::String(t), Value::Object(m)] if self.recorded.contains(&t.as_str()) => {
                Some((t, m))
            }
            _ => None,
        }
    }
}

impl<'de> serde::de::Visitor<'de> for &mut Walk<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a record document")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<(), A::Error> {
        use serde::de::Error;
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                self.why = "duplicate member";
                return Err(A::Error::custom("duplicate member"));
            }
            match key.as_str() {
                "schema" => self.schema = Some(map.next_value()?),
                "createdMs" => self.created_ms = map.next_value::<Value>()?.as_i64(),
                "rows" => {
                    self.why = "rows";
                    map.next_value_seed(Rows(&mut *self))?;
                    self.rows = true;
                }
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// The `rows` member of a [`Walk`].
struct Rows<'a, 'w>(&'a mut Walk<'w>);

impl<'de> serde::de::DeserializeSeed<'de> for Rows<'_, '_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Rows<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of rows")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<(), A::Error> {
        use serde::de::Error;
        let walk = self.0;
        if walk.apply.is_none() {
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            return Ok(());
        }
        while let Some(v) = seq.next_element::<Value>()? {
            let Some(row) = walk.row(v) else {
                walk.why = "a row is not [captured table, object]";
                return Err(A::Error::custom(walk.why));
            };
            let apply = walk.apply.as_mut().expect("checked above");
            if let Err(e) = apply(row) {
                walk.failed = Some(e);
                return Err(A::Error::custom("stopped"));
            }
        }
        Ok(())
    }
}

fn sql_value(v: &Value) -> Option<SqlValue> {
    match v {
        Value::Null => Some(SqlValue::Null),
        Value::String(s) => Some(SqlValue::Text(s.clone())),
        Value::Number(n) => n.as_i64().map(SqlValue::Integer),
        _ => None,
    }
}

fn replay(
    tx: &Transaction<'_>,
    recorded: &[&str],
    key: &str,
    doc: &RefDoc,
    loaded: &Loaded,
    presence: &mut Presence<'_>,
) -> Result<Replayed> {
    let mut done = Replayed::default();
    // A record holds thousands of rows of a few tables: each table's
    // columns are read once, and each INSERT shape is prepared once.
    let mut tables: HashMap<String, Vec<String>> = HashMap::new();
    // Objects the record catalogs that the backend no longer holds: their
    // rows are left out (gc reclaimed them after the record was written),
    // and a row of any other table that names one makes the whole ref
    // broken, since something still needed it.
    let mut absent: HashSet<String> = HashSet::new();
    loaded.each_row(recorded, key, doc, &mut |(table, m)| {
        if table == "objects" {
            let digest = m.get("digest").and_then(Value::as_str);
            if let Some(d) = digest.and_then(|d| d.parse::<Digest>().ok()) {
                if !presence.holds(&d)? {
                    absent.insert(d.to_string());
                    done.absent += 1;
                    return Ok(());
                }
            }
        } else if let Some(d) = m
            .values()
            .filter_map(Value::as_str)
            .find(|v| absent.contains(*v))
        {
            return Err(StoreError::MissingObject {
                digest: d.parse().expect("only digests are remembered"),
            });
        }
        if !tables.contains_key(&table) {
            let cols = columns(tx, &table)?;
            tables.insert(table.clone(), cols);
        }
        let known = &tables[&table];
        let mut cols = Vec::new();
        let mut vals = Vec::new();
        for (c, v) in &m {
            let value = sql_value(v).filter(|_| known.contains(c)).ok_or_else(|| {
                StoreError::CatalogData(format!(
                    "{key}: record row of {table} has a bad column {c:?}"
                ))
            })?;
            cols.push(c.as_str());
            vals.push(value);
        }
        let marks: Vec<String> = (1..=cols.len()).map(|i| format!("?{i}")).collect();
        let sql = format!(
            "INSERT INTO {table} ({}) VALUES ({}) ON CONFLICT DO NOTHING",
            cols.join(", "),
            marks.join(", ")
        );
        done.rows += tx
            .prepare_cached(&sql)?
            .execute(rusqlite::params_from_iter(vals))
            .map_err(|e| names_a_missing_row(e, key, &table))? as u64;
        Ok(())
    })?;
    Ok(done)
}

/// What replaying one record inserted and left out.
#[derive(Debug, Default, Clone, Copy)]
struct Replayed {
    /// Rows inserted.
    rows: u64,
    /// Object rows left out: the backend no longer holds their objects.
    absent: u64,
}

/// A row that names what the catalog lacks (a foreign key) breaks its
/// ref, not the rebuild: the other refs still apply.
fn names_a_missing_row(e: rusqlite::Error, key: &str, table: &str) -> StoreError {
    match e.sqlite_error() {
        Some(f) if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY => {
            StoreError::CatalogData(format!(
                "{key}: a row of {table} names an object or row the catalog does not hold"
            ))
        }
        _ => e.into(),
    }
}

/// Which objects the backend holds, for a replay deciding which object
/// rows to restore. A local store answers with one `stat` per object; a
/// bucket lists each shard once, on first need, and keeps its digests
/// (32 bytes an object), since a request per object would cost more than
/// the rebuild.
pub(crate) struct Presence<'a> {
    dirs: &'a ObjectDirs,
    shards: HashMap<String, Vec<Digest>>,
}

impl<'a> Presence<'a> {
    pub(crate) fn new(dirs: &'a ObjectDirs) -> Self {
        Presence {
            dirs,
            shards: HashMap::new(),
        }
    }

    /// Whether the backend holds a regular stored frame for `d`, loose
    /// or packed.
    fn holds(&mut self, d: &Digest) -> Result<bool> {
        if self.dirs.packed(d, false)?.is_some() {
            return Ok(true);
        }
        if !self.dirs.backend.shared() {
            return match self.dirs.backend.head(&crate::backend::object_key(d)) {
                Ok(found) => Ok(found.is_some()),
                // A symlink or directory under the name is not the object.
                Err(StoreError::UnexpectedEntry { .. }) => Ok(false),
                Err(e) => Err(e),
            };
        }
        let shard = d.shard();
        if !self.shards.contains_key(&shard) {
            let prefix = format!("{}{shard}/", crate::backend::OBJECTS_PREFIX);
            let mut listed: Vec<Digest> = Vec::new();
            self.dirs.backend.list_each(&prefix, &mut |l| {
                listed.extend(crate::backend::object_of_key(&l.key).filter(|_| l.regular));
                Ok(())
            })?;
            listed.sort_unstable();
            self.shards.insert(shard.clone(), listed);
        }
        Ok(self.shards[&shard].binary_search(d).is_ok())
    }
}

fn apply(
    dirs: &ObjectDirs,
    recorded: &[&str],
    tx: &Transaction<'_>,
    key: &str,
    doc: &RefDoc,
) -> Result<()> {
    let loaded = load_record(dirs, doc)?;
    apply_loaded(tx, recorded, key, doc, &loaded, &mut Presence::new(dirs))?;
    Ok(())
}

fn apply_loaded(
    tx: &Transaction<'_>,
    recorded: &[&str],
    key: &str,
    doc: &RefDoc,
    loaded: &Loaded,
    presence: &mut Presence<'_>,
) -> Result<Replayed> {
    let done = replay(tx, recorded, key, doc, loaded, presence)?;
    insert_ref_rows(tx, key, doc, loaded.bytes.len() as u64, loaded.stored_size)?;
    Ok(done)
}

/// A ref in the backend that the catalog has not applied (its record is
/// read only when needed, so memory does not grow with the backlog).
pub(crate) struct Pending {
    /// The ref's key.
    pub key: String,
    doc: RefDoc,
}

impl Pending {
    /// Every object the ref keeps alive: its record and the objects the
    /// record catalogs.
    pub fn objects(&self, dirs: &ObjectDirs, recorded: &[&str]) -> Result<Vec<Digest>> {
        let loaded = load_record(dirs, &self.doc)?;
        let mut out = vec![self.doc.record];
        loaded.each_row(recorded, &self.key, &self.doc, &mut |(t, m)| {
            if t == "objects" {
                out.extend(
                    m.get("digest")
                        .and_then(Value::as_str)
                        .and_then(|d| d.parse::<Digest>().ok()),
                );
            }
            Ok(())
        })?;
        Ok(out)
    }
}

/// A ref that cannot be applied: not a regular file, not a ref document,
/// or naming a record that is missing, corrupt or malformed. Commands that
/// walk refs report it and go on with the rest.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BrokenRef {
    /// The ref's key.
    pub key: String,
    /// Stable code of what is wrong.
    pub code: &'static str,
    /// What is wrong.
    pub message: String,
}

impl BrokenRef {
    pub(crate) fn new(key: &str, e: &StoreError) -> Self {
        BrokenRef {
            key: key.to_string(),
            code: match e.code() {
                // A missing record is a reference to nothing.
                codes::io::NOT_FOUND => codes::integrity::DANGLING_REFERENCE,
                code => code,
            },
            message: format!("{key}: {e}"),
        }
    }
}

/// The refs the backend holds that the catalog has not applied.
pub(crate) struct PendingRefs {
    /// How many refs the backend holds in all.
    pub total: u64,
    /// Readable unapplied refs, oldest record first.
    pub pending: Vec<Pending>,
    /// Unapplied refs that cannot be read.
    pub broken: Vec<BrokenRef>,
}

/// The refs the backend holds and the catalog has not applied.
pub(crate) fn pending_refs(dirs: &ObjectDirs, catalog: &Catalog) -> Result<PendingRefs> {
    let known: HashSet<String> = {
        let mut st = catalog.conn().prepare("SELECT key FROM refs")?;
        let keys = st
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<HashSet<_>>>()?;
        keys
    };
    let listed = dirs.backend.list(REFS_PREFIX)?;
    let mut pending = Vec::new();
    let mut broken = Vec::new();
    for entry in listed.iter().filter(|e| !known.contains(&e.key)) {
        let doc = if entry.regular {
            read_ref(dirs, &entry.key)
        } else {
            Err(StoreError::UnexpectedEntry {
                path: entry.key.clone().into(),
                what: "non-regular entry among refs",
            })
        };
        match doc {
            Ok(doc) => pending.push(Pending {
                key: entry.key.clone(),
                doc,
            }),
            Err(e) => broken.push(BrokenRef::new(&entry.key, &e)),
        }
    }
    pending.sort_by(|a, b| (a.doc.created_ms, &a.key).cmp(&(b.doc.created_ms, &b.key)));
    Ok(PendingRefs {
        total: listed.len() as u64,
        pending,
        broken,
    })
}

/// What `catalog rebuild` did.
#[derive(Debug, Clone, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RebuildReport {
    /// Refs the backend holds.
    pub refs: u64,
    /// Refs applied by this run (the rest were already in the catalog).
    pub applied: u64,
    /// Catalog rows inserted.
    pub rows: u64,
    /// Object rows of applied records left out because the backend no
    /// longer holds the object (gc reclaimed it after the record was
    /// written): a rebuild never catalogs a missing object.
    pub objects_absent: u64,
    /// Refs that could not be applied (the rest were).
    pub broken: Vec<BrokenRef>,
}

/// Applies every ref in the backend that the catalog has not applied,
/// oldest record first, in one transaction (see
/// [`crate::Store::rebuild_catalog`]).
pub(crate) fn rebuild(dirs: &ObjectDirs, catalog: &mut Catalog) -> Result<RebuildReport> {
    let found = pending_refs(dirs, catalog)?;
    let mut report = RebuildReport {
        refs: found.total,
        broken: found.broken,
        ..RebuildReport::default()
    };
    let recorded = catalog.schema().recorded;
    let mut presence = Presence::new(dirs);
    let mut tx = catalog.transaction()?;
    for p in &found.pending {
        // A record that cannot be read writes nothing (one that cannot be
        // parsed is rolled back below).
        let loaded = match load_record(dirs, &p.doc) {
            Ok(loaded) => loaded,
            Err(e) if matches!(e, StoreError::Catalog(_)) => return Err(e),
            Err(e) => {
                report.broken.push(BrokenRef::new(&p.key, &e));
                continue;
            }
        };
        // Each ref applies whole or not at all, and the others still
        // apply: a small record in a savepoint of the shared transaction,
        // a large one in a transaction of its own.
        let alone = loaded.bytes.len() > OWN_TRANSACTION_BYTES;
        if alone {
            commit(tx)?;
            tx = catalog.transaction()?;
        } else {
            tx.execute_batch("SAVEPOINT apply_ref")?;
        }
        match apply_loaded(&tx, recorded, &p.key, &p.doc, &loaded, &mut presence) {
            Ok(done) => {
                if alone {
                    commit(tx)?;
                    tx = catalog.transaction()?;
                } else {
                    tx.execute_batch("RELEASE apply_ref")?;
                }
                report.rows += done.rows;
                report.objects_absent += done.absent;
                report.applied += 1;
            }
            Err(e) if matches!(e, StoreError::Catalog(_)) => return Err(e),
            Err(e) => {
                if alone {
                    tx.rollback()?;
                    tx = catalog.transaction()?;
                } else {
                    tx.execute_batch("ROLLBACK TO apply_ref; RELEASE apply_ref")?;
                }
                report.broken.push(BrokenRef::new(&p.key, &e));
            }
        }
    }
    commit(tx)?;
    Ok(report)
}

/// Commits a rebuild's transaction, dropping the rows its inserts
/// captured (replayed rows are not sealed again).
fn commit(tx: Transaction<'_>) -> Result<()> {
    clear_capture(&tx)?;
    tx.commit()?;
    coffer_base::crash::point("rebuild_committed");
    Ok(())
}

/// What the backend's ref `spec.key` names, applying it to the catalog if
/// the catalog lacks it (see [`crate::Store::adopt_ref`]); `before_apply`
/// runs just before the catalog is written.
pub(crate) fn adopt(
    dirs: &ObjectDirs,
    catalog: &mut Catalog,
    spec: &RefSpec,
    before_apply: impl FnOnce() -> Result<()>,
) -> Result<Option<Digest>> {
    let Some(bytes) = read_small(&*dirs.backend, &spec.key, REF_MAX_BYTES)? else {
        return Ok(None);
    };
    let doc = parse_ref(&spec.key, &bytes)?;
    if doc.target == spec.target {
        before_apply()?;
        let loaded = load_record(dirs, &doc)?;
        let recorded = catalog.schema().recorded;
        let tx = catalog.transaction()?;
        let presence = &mut Presence::new(dirs);
        match apply_loaded(&tx, recorded, &spec.key, &doc, &loaded, presence) {
            Ok(_) => {
                clear_capture(&tx)?;
                tx.commit()?;
            }
            // The record names an object the backend lost: the catalog
            // stays as it was (the transaction rolls back), and the caller
            // goes on as for an unapplied ref of the same target; an ingest
            // of the same bundle puts the object back and applies it then.
            Err(StoreError::MissingObject { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Some(doc.target))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rows `each_row` hands over, or why it stopped.
    fn walk(bytes: &[u8], created: i64) -> std::result::Result<Vec<Row>, &'static str> {
        let mut rows = Vec::new();
        each_row(bytes, &["objects", "roots"], created, &mut |r| {
            rows.push(r);
            Ok(())
        })
        .map_err(|stop| match stop {
            Stop::Malformed(why) => why,
            Stop::Failed(e) => panic!("{e}"),
        })?;
        Ok(rows)
    }

    fn record(rows: &str) -> Vec<u8> {
        format!(r#"{{"createdMs":7,"rows":{rows},"schema":"{RECORD_SCHEMA}"}}"#).into_bytes()
    }

    #[test]
    fn a_record_is_walked_row_by_row_or_refused_with_the_reason() {
        let rows = walk(
            &record(r#"[["objects",{"digest":"d","size":1}],["roots",{"kind":"put"}]]"#),
            7,
        )
        .unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].0, "objects");
        assert_eq!(rows[0].1["size"], 1);
        assert_eq!(rows[1].0, "roots");
        assert_eq!(walk(&record("[]"), 7).unwrap().len(), 0);
        // Members other than these are the ref's business, not the walk's.
        let named = format!(
            r#"{{"createdMs":7,"ref":"refs/bundles/b","rows":[],"schema":"{RECORD_SCHEMA}","target":"x"}}"#
        );
        assert_eq!(walk(named.as_bytes(), 7).unwrap().len(), 0);

        let refused = |bytes: &[u8], created: i64| walk(bytes, created).unwrap_err();
        assert_eq!(refused(b"{", 7), "not JSON");
        assert_eq!(refused(&record("[[\"objects\",{}]"), 7), "not JSON");
        assert_eq!(
            refused(&[record("[]"), b"x".to_vec()].concat(), 7),
            "not JSON"
        );
        assert_eq!(refused(b"[]", 7), "unknown schema");
        assert_eq!(
            refused(br#"{"createdMs":7,"rows":[],"schema":"x"}"#, 7),
            "unknown schema"
        );
        assert_eq!(
            refused(&record("[]"), 8),
            "createdMs differs from its ref's"
        );
        assert_eq!(refused(&record(r#"{"a":1}"#), 7), "rows");
        let no_rows = format!(r#"{{"createdMs":7,"schema":"{RECORD_SCHEMA}"}}"#);
        assert_eq!(refused(no_rows.as_bytes(), 7), "rows");
        let twice = format!(r#"{{"createdMs":7,"rows":[],"rows":[],"schema":"{RECORD_SCHEMA}"}}"#);
        assert_eq!(refused(twice.as_bytes(), 7), "duplicate member");
        let bad_row = "a row is not [captured table, object]";
        for row in [
            r#""objects""#,
            r#"["objects"]"#,
            r#"["objects",{},{}]"#,
            r#"["objects",[]]"#,
            r#"[1,{}]"#,
            r#"["sqlite_master",{"name":"x"}]"#,
        ] {
            assert_eq!(refused(&record(&format!("[{row}]")), 7), bad_row, "{row}");
        }
    }

    #[test]
    fn a_refused_header_hands_over_no_row_and_a_bad_row_stops_the_walk() {
        // The header is checked before the first row, though canonical
        // order puts "rows" before "schema".
        let other = br#"{"createdMs":7,"rows":[["objects",{}]],"schema":"x"}"#;
        let mut seen = 0;
        let stop = each_row(other, &["objects"], 7, &mut |_| {
            seen += 1;
            Ok(())
        });
        assert!(matches!(stop, Err(Stop::Malformed("unknown schema"))));
        assert_eq!(seen, 0);

        // The rows before a malformed one were handed over (and are rolled
        // back by the caller); none after it.
        let bytes = record(r#"[["objects",{"n":1}],["objects",2],["objects",{"n":3}]]"#);
        let mut seen = Vec::new();
        let stop = each_row(&bytes, &["objects"], 7, &mut |(_, m)| {
            seen.push(m["n"].clone());
            Ok(())
        });
        assert!(matches!(stop, Err(Stop::Malformed(_))));
        assert_eq!(seen, [1]);

        // What `f` fails with is what the walk fails with, and it stops.
        let mut calls = 0;
        let stop = each_row(&bytes, &["objects"], 7, &mut |_| {
            calls += 1;
            Err(StoreError::CatalogData("full".into()))
        });
        assert!(matches!(stop, Err(Stop::Failed(StoreError::CatalogData(m))) if m == "full"));
        assert_eq!(calls, 1);
    }

    #[test]
    fn key_segments_are_plain_or_hex() {
        assert_eq!(key_segment("bndl_0123-abc.x"), "bndl_0123-abc.x");
        assert_eq!(key_segment("a/b"), format!("~{}", hex::encode("a/b")));
        assert_eq!(key_segment(".."), format!("~{}", hex::encode("..")));
        assert_eq!(key_segment("~x"), format!("~{}", hex::encode("~x")));
        assert_ne!(key_segment("a b"), key_segment("a_b"));
    }

    #[test]
    fn every_schema_valid_id_fits_one_file_name() {
        let longest_plain = "a".repeat(KEY_SEGMENT_MAX);
        assert_eq!(key_segment(&longest_plain), longest_plain);
        for id in [
            "a".repeat(KEY_SEGMENT_MAX + 1),
            "a".repeat(256),
            "é".repeat(256),
            "x/".repeat(128),
        ] {
            let seg = key_segment(&id);
            assert!(seg.len() <= KEY_SEGMENT_MAX, "{} bytes", seg.len());
            assert!(seg.starts_with("~sha256-"), "{seg}");
        }
        assert_ne!(key_segment(&"a".repeat(256)), key_segment(&"a".repeat(255)));
        // The hex form stays as it was for the ids it always served.
        let id = "é".repeat(49);
        assert_eq!(key_segment(&id), format!("~{}", hex::encode(id.as_bytes())));
    }

    #[test]
    fn refs_parse_strictly() {
        let t = Digest::of(b"t");
        let r = Digest::of(b"r");
        let doc = RefDoc {
            target: t,
            record: r,
            created_ms: 7,
        };
        assert_eq!(parse_ref("k", &ref_bytes(&doc)).unwrap(), doc);
        assert!(parse_ref("k", b"{}").is_err());
        assert!(parse_ref(
            "k",
            br#"{"schema":"coffer.ref/v1","target":"x","record":"y"}"#
        )
        .is_err());
    }
}
