//! The SQLite catalog: which objects exist, what holds them, and (in later
//! schema versions) the evidence built from them.
//!
//! The catalog is opened in WAL mode with `synchronous=FULL` and a busy
//! timeout, so concurrent writers queue instead of failing. Schema changes
//! are numbered migrations applied in one `BEGIN IMMEDIATE` transaction and
//! tracked in `PRAGMA user_version`; a catalog newer than this build is
//! refused. Rows are insert-only: triggers reject every `UPDATE`, and only
//! garbage collection deletes `objects` rows (of objects nothing roots).

use std::path::Path;
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use crate::error::{Result, StoreError};
use coffer_base::digest::Digest;

/// How long a writer waits for another writer's transaction.
const BUSY_TIMEOUT: Duration = Duration::from_secs(120);
/// SQLite's page cache while recording a batch, in KiB.
const WRITE_CACHE_KIB: i64 = 64 << 10;

/// The first migration of every catalog: objects and the roots that hold
/// them.
pub const OBJECTS_MIGRATION: &str = r#"
CREATE TABLE objects (
    digest        TEXT    PRIMARY KEY CHECK (length(digest) = 71 AND substr(digest, 1, 7) = 'sha256:'),
    size          INTEGER NOT NULL CHECK (size >= 0),
    stored_size   INTEGER NOT NULL CHECK (stored_size > 0),
    first_seen_ms INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE roots (
    kind       TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    digest     TEXT    NOT NULL REFERENCES objects (digest),
    created_ms INTEGER NOT NULL,
    PRIMARY KEY (kind, name, digest)
) STRICT, WITHOUT ROWID;
CREATE INDEX roots_by_digest ON roots (digest);

-- The one definition of what garbage collection must keep.
CREATE VIEW reachable (digest) AS SELECT DISTINCT digest FROM roots;

CREATE TRIGGER objects_insert_only BEFORE UPDATE ON objects
BEGIN SELECT RAISE(ABORT, 'objects rows are insert-only'); END;
CREATE TRIGGER roots_insert_only BEFORE UPDATE ON roots
BEGIN SELECT RAISE(ABORT, 'roots rows are insert-only'); END;
"#;

/// The migration that adds the refs table (see `refs.rs`). A layer's
/// schema places it where its history put it.
pub const REFS_MIGRATION: &str = r#"
-- Refs this catalog has applied: each names the record object holding the
-- rows one transaction inserted (see refs.rs); `catalog rebuild` applies
-- the refs a backend holds that are not here yet.
CREATE TABLE refs (
    key           TEXT    PRIMARY KEY,
    target        TEXT    NOT NULL,
    record_digest TEXT    NOT NULL REFERENCES objects (digest),
    created_ms    INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE TRIGGER refs_insert_only BEFORE UPDATE ON refs
BEGIN SELECT RAISE(ABORT, 'refs rows are insert-only'); END;
"#;

/// The tables of a catalog: the CAS's own and those of the layer built on
/// it (which the CAS knows nothing about).
///
/// Migrations are numbered by their index (`user_version` is index + 1
/// after one is applied), so a schema only ever grows at the end. Every
/// schema starts with [`OBJECTS_MIGRATION`] and contains
/// [`REFS_MIGRATION`]. A catalog remembers which schema made it in
/// `PRAGMA application_id`, and is only opened with that schema.
#[derive(Debug)]
pub struct Schema {
    /// Stored as the catalog's `application_id`.
    pub application_id: i32,
    /// The migrations, in order.
    pub migrations: &'static [&'static str],
    /// Tables whose inserted rows a record carries, in dependency order;
    /// starts with `objects` and `roots`.
    pub recorded: &'static [&'static str],
}

impl Schema {
    /// The CAS on its own: objects, roots and refs.
    pub const CAS: Schema = Schema {
        application_id: 0x4346_4153, // "CFAS"
        migrations: &[OBJECTS_MIGRATION, REFS_MIGRATION],
        recorded: &["objects", "roots"],
    };

    /// The schema version a catalog has when every migration is applied.
    pub fn version(&self) -> i64 {
        self.migrations.len() as i64
    }

    /// A layer's schema that breaks the rules above (a programming error,
    /// reported rather than applied).
    fn check(&self) -> Result<()> {
        let ok = self.migrations.first() == Some(&OBJECTS_MIGRATION)
            && self.migrations.contains(&REFS_MIGRATION)
            && self.recorded.starts_with(&["objects", "roots"])
            && self
                .recorded
                .iter()
                .all(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'));
        if ok {
            Ok(())
        } else {
            Err(StoreError::CatalogData(
                "catalog schema must start with the objects migration, contain the refs migration, and record plain table names".into(),
            ))
        }
    }
}

/// One cataloged object.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRow {
    /// Its key.
    pub digest: Digest,
    /// Raw size in bytes.
    pub size: u64,
    /// Size of the stored frame.
    pub stored_size: u64,
    /// When it was first cataloged (ms since the epoch).
    pub first_seen_ms: i64,
}

/// What the catalog's own checks found ([`Catalog::integrity_problems`]).
#[derive(Debug, Default)]
pub struct CatalogProblems {
    /// SQLite's `integrity_check` and `foreign_key_check` messages.
    pub problems: Vec<String>,
    /// Each root naming an uncataloged digest, and that digest.
    pub dangling: Vec<(Root, String)>,
}

/// A read transaction over the catalog (see [`Catalog::read_snapshot`]);
/// dropping it ends the transaction, having written nothing.
pub struct ReadSnapshot<'c>(#[allow(dead_code)] rusqlite::Transaction<'c>);

/// A named reason to keep an object (a put, a bundle, a freeze...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// What kind of holder (`put`, `bundle`, ...): text, because each layer
    /// names its own kinds and the CAS may not name the evidence domain's.
    pub kind: String,
    /// The holder's name within its kind.
    pub name: String,
}

/// Publishes the rows a catalog transaction inserted (as a record and its
/// ref: see `refs`), in two steps around the wait for the objects they
/// name to be durable.
pub trait Seal {
    /// The rows written down, not yet published.
    type Staged;
    /// Writes `rows` down durably; publishes nothing.
    fn stage(&self, rows: &[crate::capture::Row]) -> Result<Self::Staged>;
    /// Removes what [`Seal::stage`] wrote, when it will not be published.
    fn discard(&self, staged: Self::Staged);
    /// Publishes what was staged, inside the transaction, once the objects
    /// its rows name are durable.
    fn seal(&self, tx: &rusqlite::Transaction<'_>, staged: Self::Staged) -> Result<()>;
}

/// The sealer of a transaction that writes no record ([`Catalog::record`]).
enum NoRecord {}

impl Seal for NoRecord {
    type Staged = ();
    fn stage(&self, _: &[crate::capture::Row]) -> Result<()> {
        match *self {}
    }
    fn discard(&self, _: ()) {
        match *self {}
    }
    fn seal(&self, _: &rusqlite::Transaction<'_>, _: ()) -> Result<()> {
        match *self {}
    }
}

/// Totals over the catalog.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogStats {
    /// Distinct objects.
    pub objects: u64,
    /// References from roots (one object held twice counts twice).
    pub references: u64,
    /// Bytes as the users put them: every reference counted (objects no
    /// root holds count once).
    pub logical_bytes: u64,
    /// Raw bytes of distinct objects.
    pub unique_bytes: u64,
    /// Bytes of the stored frames.
    pub stored_bytes: u64,
    /// Catalog records (refs applied); not counted above.
    pub records: u64,
}

/// Totals over the objects roots of one kind hold.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RootKindTotals {
    /// References from roots of the kind (one object held twice counts twice).
    pub references: u64,
    /// Bytes over every reference.
    pub logical_bytes: u64,
    /// Distinct objects held.
    pub objects: u64,
    /// Raw bytes of the distinct objects.
    pub unique_bytes: u64,
    /// Bytes of their stored frames.
    pub stored_bytes: u64,
}

impl CatalogStats {
    /// Logical bytes per unique byte (what deduplication saves), to three
    /// decimals; `None` for an empty store.
    pub fn dedup_ratio(&self) -> Option<f64> {
        ratio(self.logical_bytes, self.unique_bytes)
    }

    /// Unique bytes per stored byte (what compression saves), to three
    /// decimals; `None` for an empty store.
    pub fn compression_ratio(&self) -> Option<f64> {
        ratio(self.unique_bytes, self.stored_bytes)
    }
}

fn ratio(num: u64, den: u64) -> Option<f64> {
    (den > 0).then(|| (num as f64 / den as f64 * 1000.0).round() / 1000.0)
}

/// Refuses a catalog whose `application_id` is not `schema`'s: the same
/// version number means different tables in different schemas.
fn check_identity(conn: &Connection, schema: &Schema) -> Result<()> {
    let id: i32 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
    if id == schema.application_id {
        Ok(())
    } else {
        Err(StoreError::CatalogData(format!(
            "catalog belongs to another kind of store (application_id {id:#x}; this build opens {:#x})",
            schema.application_id
        )))
    }
}

/// A connection to the catalog.
pub struct Catalog {
    conn: Connection,
    schema: &'static Schema,
}

fn digest_col(s: String) -> rusqlite::Result<Digest> {
    s.parse().map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
    })
}

fn row_to_object(r: &rusqlite::Row<'_>) -> rusqlite::Result<ObjectRow> {
    Ok(ObjectRow {
        digest: digest_col(r.get(0)?)?,
        size: r.get::<_, i64>(1)? as u64,
        stored_size: r.get::<_, i64>(2)? as u64,
        first_seen_ms: r.get(3)?,
    })
}

/// SQLite's failures when it cannot create or grow the WAL index.
fn no_room_for_wal_index(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::SystemIoFailure)
            | Some(rusqlite::ErrorCode::DiskFull)
            | Some(rusqlite::ErrorCode::CannotOpen)
    )
}

/// Free space below which a reading command does not set up a WAL index.
const READ_SPACE_MIN: u64 = 1 << 20;

/// True when the filesystem holding `path` has less than
/// [`READ_SPACE_MIN`] bytes available.
fn nearly_full(path: &Path) -> bool {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    rustix::fs::statvfs(dir)
        .map(|st| st.f_bavail.saturating_mul(st.f_frsize) < READ_SPACE_MIN)
        .unwrap_or(false)
}

/// True when the catalog's WAL is absent or empty (every change is in the
/// catalog file itself).
fn wal_is_empty(path: &Path) -> bool {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    match std::fs::symlink_metadata(Path::new(&wal)) {
        Ok(m) => m.is_file() && m.len() == 0,
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

impl Catalog {
    /// Opens (creating if needed) and migrates the catalog at `path`.
    pub fn open(path: &Path, schema: &'static Schema) -> Result<Self> {
        schema.check()?;
        let conn = Connection::open(path)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::CatalogData(format!(
                "could not switch {} to WAL (got {mode})",
                path.display()
            )));
        }
        // Statement journals (every insert runs the capture triggers) and
        // temp tables stay in memory: they never hold committed data.
        conn.execute_batch(
            "PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA temp_store = MEMORY;",
        )?;
        let mut cat = Catalog { conn, schema };
        cat.migrate()?;
        crate::capture::install_capture(&cat.conn, schema.recorded)?;
        Ok(cat)
    }

    fn migrate(&mut self) -> Result<()> {
        let migrations = self.schema.migrations;
        let version: i64 = self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version == self.schema.version() {
            return self.check_identity();
        }
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version == 0 {
            tx.pragma_update(None, "application_id", self.schema.application_id)?;
        }
        check_identity(&tx, self.schema)?;
        if version < 0 || version as usize > migrations.len() {
            return Err(StoreError::CatalogData(format!(
                "catalog schema version {version} is newer than this build ({})",
                migrations.len()
            )));
        }
        for (i, sql) in migrations.iter().enumerate().skip(version as usize) {
            tx.execute_batch(sql)?;
            tx.pragma_update(None, "user_version", (i + 1) as i64)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Opens the catalog for a command that only reads: a read-only
    /// connection that never migrates and writes no row. When SQLite cannot
    /// set up its WAL index (a full disk: the `-shm` file cannot grow) and
    /// no WAL holds uncheckpointed changes, the catalog file alone is the
    /// whole truth and is read as immutable, so reads still work on a full
    /// disk. A catalog that needs a migration is opened as by
    /// [`Catalog::open`].
    pub fn open_for_reading(path: &Path, schema: &'static Schema) -> Result<Self> {
        // Nearly full (no room for the WAL index): do not even try, or
        // SQLite leaves half-made index files behind.
        if nearly_full(path) && wal_is_empty(path) {
            return Catalog::open_immutable(path, schema);
        }
        let opened = Connection::open_with_flags(
            path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(StoreError::from)
        .and_then(|conn| {
            conn.busy_timeout(BUSY_TIMEOUT)?;
            let cat = Catalog { conn, schema };
            // The first read sets up the WAL index: this is where a full
            // disk fails.
            let v = cat.schema_version()?;
            Ok((cat, v))
        });
        match opened {
            Ok((cat, v)) if v == schema.version() => cat.check_identity().map(|()| cat),
            Ok(_) => Catalog::open(path, schema),
            Err(StoreError::Catalog(e))
                if no_room_for_wal_index(e.engine()) && wal_is_empty(path) =>
            {
                Catalog::open_immutable(path, schema)
            }
            Err(e) => Err(e),
        }
    }

    /// Opens the catalog of a store on a read-only filesystem: nothing can
    /// change it, so SQLite may read it as immutable (no WAL index needed).
    pub fn open_immutable(path: &Path, schema: &'static Schema) -> Result<Self> {
        let mut uri = String::from("file:");
        for c in path.display().to_string().chars() {
            match c {
                '%' | '?' | '#' => uri.push_str(&format!("%{:02X}", c as u32)),
                c => uri.push(c),
            }
        }
        uri.push_str("?immutable=1");
        let conn = Connection::open_with_flags(
            &uri,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
                | rusqlite::OpenFlags::SQLITE_OPEN_URI
                | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        let cat = Catalog { conn, schema };
        let v = cat.schema_version()?;
        if v != schema.version() {
            return Err(StoreError::CatalogData(format!(
                "catalog schema version {v} on a read-only store; this build needs {} and cannot migrate it",
                schema.version()
            )));
        }
        cat.check_identity()?;
        Ok(cat)
    }

    /// Refuses a catalog made with another schema.
    fn check_identity(&self) -> Result<()> {
        check_identity(&self.conn, self.schema)
    }

    /// The schema this catalog was opened with.
    pub fn schema(&self) -> &'static Schema {
        self.schema
    }

    /// A write transaction, for `catalog rebuild`.
    pub(crate) fn transaction(&mut self) -> Result<rusqlite::Transaction<'_>> {
        Ok(self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?)
    }

    /// The connection, for the CAS's own modules.
    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }

    /// Reads the tables of the layer that registered the [`Schema`]; its
    /// rows are written inside [`crate::Batch::commit_with`].
    pub fn reader(&self) -> crate::rows::Reader<'_> {
        crate::rows::Reader::new(&self.conn)
    }

    /// The schema version in force.
    pub fn schema_version(&self) -> Result<i64> {
        Ok(self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?)
    }

    /// Records objects (already durable on disk) and the roots holding them,
    /// in one transaction. Existing rows are left as they are.
    pub fn record(&mut self, objects: &[(ObjectRow, Option<Root>)]) -> Result<()> {
        self.record_with(objects, |_| Ok(()), || Ok(()), None::<&NoRecord>)
    }

    /// Like [`Catalog::record`], and runs `extra` in the same transaction
    /// (e.g. the rows of a bundle that names these objects); then has
    /// `sealer` stage every row the transaction inserted as a record,
    /// waits for `durable` (the objects may still be on their way to the
    /// disk while all this is done), and has `sealer` publish the record
    /// and its ref before committing. If `extra`, `durable` or the sealer
    /// fails, nothing is recorded. Without a sealer (tests), no record is
    /// written.
    pub fn record_with<S: Seal>(
        &mut self,
        objects: &[(ObjectRow, Option<Root>)],
        extra: impl FnOnce(&crate::rows::Writer<'_>) -> Result<()>,
        durable: impl FnOnce() -> Result<()>,
        sealer: Option<&S>,
    ) -> Result<()> {
        coffer_base::crash::point("catalog_before_txn");
        // A batch inserts thousands of rows at random keys, touching most
        // leaf pages of a large catalog: within SQLite's default 2 MB cache
        // it spills them to the WAL mid-transaction and reads them back.
        // Only writers get the larger cache, so a read that walks every
        // row (`ls`) keeps its memory flat.
        self.conn
            .pragma_update(None, "cache_size", -WRITE_CACHE_KIB)?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        crate::capture::clear_capture(&tx)?;
        {
            let mut ins_obj = tx.prepare_cached(
                "INSERT INTO objects (digest, size, stored_size, first_seen_ms) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (digest) DO NOTHING",
            )?;
            let mut ins_root = tx.prepare_cached(
                "INSERT INTO roots (kind, name, digest, created_ms) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT DO NOTHING",
            )?;
            for (o, root) in objects {
                let d = o.digest.to_string();
                ins_obj.execute(params![
                    d,
                    o.size as i64,
                    o.stored_size as i64,
                    o.first_seen_ms
                ])?;
                if let Some(root) = root {
                    ins_root.execute(params![root.kind, root.name, d, o.first_seen_ms])?;
                }
            }
        }
        extra(&crate::rows::Writer::new(&tx))?;
        let rows = crate::capture::take_capture(&tx)?;
        let staged = match sealer {
            Some(sealer) if !rows.is_empty() => Some((sealer, sealer.stage(&rows)?)),
            _ => None,
        };
        drop(rows);
        coffer_base::crash::point("catalog_rows_inserted");
        if let Err(e) = durable() {
            if let Some((sealer, r)) = staged {
                sealer.discard(r);
            }
            return Err(e);
        }
        if let Some((sealer, r)) = staged {
            sealer.seal(&tx, r)?;
        }
        coffer_base::crash::point("catalog_in_txn");
        tx.commit()?;
        coffer_base::crash::point("catalog_committed");
        Ok(())
    }

    /// Runs `write` in a transaction of its own, for rows of tables that
    /// are not recorded: indexes a layer derives from stored objects and
    /// can derive again, so they need no record in the backend. A write
    /// to a recorded table here would never reach the backend, so it is
    /// refused and the transaction rolled back.
    pub fn write_derived<T>(
        &mut self,
        write: impl FnOnce(&crate::rows::Writer<'_>) -> Result<T>,
    ) -> Result<T> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        crate::capture::clear_capture(&tx)?;
        let out = write(&crate::rows::Writer::new(&tx))?;
        let recorded = crate::capture::take_capture(&tx)?;
        if let Some((table, _)) = recorded.first() {
            return Err(StoreError::CatalogData(format!(
                "table {table} is recorded: its rows are written with a batch, not as derived rows"
            )));
        }
        tx.commit()?;
        Ok(out)
    }

    /// Up to `limit` cataloged digests whose hex starts with `hex_prefix`
    /// (lower-case hex), in order: a range scan of the primary key.
    pub fn digests_with_prefix(&self, hex_prefix: &str, limit: usize) -> Result<Vec<Digest>> {
        let lo = format!("sha256:{hex_prefix}");
        let hi = format!("{lo}~");
        let mut st = self.conn.prepare_cached(
            "SELECT digest FROM objects WHERE digest >= ?1 AND digest < ?2 ORDER BY digest LIMIT ?3",
        )?;
        let rows = st
            .query_map(rusqlite::params![lo, hi, limit as i64], |r| {
                r.get::<_, String>(0)
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        rows.iter()
            .map(|d| {
                d.parse()
                    .map_err(|_| StoreError::CatalogData(format!("bad digest {d}")))
            })
            .collect()
    }

    /// The size of object `d` when it is cataloged: the batch lookups'
    /// query, which reads one column and parses no digest back.
    pub fn object_size(&self, d: &Digest) -> Result<Option<u64>> {
        Ok(self
            .conn
            .prepare_cached("SELECT size FROM objects WHERE digest = ?1")?
            .query_row([d.to_string()], |r| r.get::<_, i64>(0))
            .optional()?
            .map(|n| n as u64))
    }

    /// Opens one read transaction for a run of lookups, held until the
    /// returned guard drops. Without it each lookup is a transaction of
    /// its own, and SQLite's lock and file checks around it cost three
    /// system calls, more than the lookup. The run sees one snapshot; a
    /// caller that runs for long drops and reopens it now and then, so a
    /// writer's checkpoint is never held back for long.
    pub fn read_snapshot(&self) -> Result<ReadSnapshot<'_>> {
        Ok(ReadSnapshot(self.conn.unchecked_transaction()?))
    }

    /// Gives this connection a writer's page cache (64 MiB at most) for
    /// a run of lookups at random keys (`has --stdin`): with the default
    /// 2 MB, nearly every lookup in a large catalog reads its leaf page
    /// again. Bounded, so memory stays flat however many lookups follow.
    pub fn widen_cache_for_lookups(&self) -> Result<()> {
        self.conn
            .pragma_update(None, "cache_size", -WRITE_CACHE_KIB)?;
        Ok(())
    }

    /// The row of `d`, if cataloged.
    pub fn object(&self, d: &Digest) -> Result<Option<ObjectRow>> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT digest, size, stored_size, first_seen_ms FROM objects WHERE digest = ?1",
            )?
            .query_row([d.to_string()], row_to_object)
            .optional()?)
    }

    /// Hands `f` a cursor over every object row, in digest order: each
    /// call of `next` yields the next row (`None` after the last), one
    /// row at a time, so memory stays flat however many there are.
    pub fn with_object_rows(
        &self,
        f: impl FnOnce(&mut dyn FnMut() -> Result<Option<ObjectRow>>) -> Result<()>,
    ) -> Result<()> {
        let mut st = self.conn.prepare(
            "SELECT digest, size, stored_size, first_seen_ms FROM objects ORDER BY digest",
        )?;
        let mut rows = st.query([])?;
        f(&mut || Ok(rows.next()?.map(row_to_object).transpose()?))
    }

    /// Calls `f` with every stored object (catalog records aside), in
    /// digest order, one row at a time: memory stays flat however many
    /// there are. Stops at the first error `f` returns.
    pub fn each_stored_object(&self, f: &mut dyn FnMut(ObjectRow) -> Result<()>) -> Result<()> {
        let mut st = self.conn.prepare(
            "SELECT digest, size, stored_size, first_seen_ms FROM objects
             WHERE digest NOT IN (SELECT record_digest FROM refs) ORDER BY digest",
        )?;
        let mut rows = st.query([])?;
        while let Some(row) = rows.next()? {
            f(row_to_object(row)?)?;
        }
        Ok(())
    }

    /// Objects no root holds, first seen before `cutoff_ms`.
    pub fn unreachable_before(&self, cutoff_ms: i64) -> Result<Vec<ObjectRow>> {
        let mut st = self.conn.prepare(
            "SELECT digest, size, stored_size, first_seen_ms FROM objects
             WHERE digest NOT IN (SELECT digest FROM reachable) AND first_seen_ms < ?1
             ORDER BY digest",
        )?;
        let rows = st.query_map([cutoff_ms], row_to_object)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Deletes the rows of unreachable objects, in one transaction; a row that
    /// became reachable meanwhile is kept. Returns the digests deleted.
    pub fn delete_unreachable(&mut self, digests: &[Digest]) -> Result<Vec<Digest>> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut deleted = Vec::new();
        {
            let mut del = tx.prepare_cached(
                "DELETE FROM objects WHERE digest = ?1
                 AND digest NOT IN (SELECT digest FROM reachable)",
            )?;
            for d in digests {
                if del.execute([d.to_string()])? == 1 {
                    deleted.push(*d);
                }
            }
        }
        tx.commit()?;
        Ok(deleted)
    }

    /// References from roots to digests with no `objects` row.
    fn dangling_roots(&self) -> Result<Vec<(Root, String)>> {
        let mut st = self.conn.prepare(
            "SELECT kind, name, digest FROM roots WHERE digest NOT IN (SELECT digest FROM objects)",
        )?;
        let rows = st.query_map([], |r| {
            Ok((
                Root {
                    kind: r.get(0)?,
                    name: r.get(1)?,
                },
                r.get(2)?,
            ))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// SQLite's own `integrity_check` and `foreign_key_check` (empty
    /// when sound), and the roots naming an uncataloged digest.
    ///
    /// The roots' one reference is checked by the query of
    /// [`Catalog::dangling_roots`] instead, which names each root and
    /// whose count stands for the pragma's: `foreign_key_check` looks
    /// each root's digest up in `objects` one at a time, 3.1 s of a
    /// million-object store's fsck against 0.47 s (`bench/HISTORY.md`,
    /// 44th session).
    pub fn integrity_problems(&self) -> Result<CatalogProblems> {
        let mut out = Vec::new();
        let mut st = self.conn.prepare("PRAGMA integrity_check")?;
        for r in st.query_map([], |r| r.get::<_, String>(0))? {
            let r = r?;
            if r != "ok" {
                out.push(r);
            }
        }
        let tables: Vec<String> = self
            .conn
            .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY rowid")?
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        let dangling = self.dangling_roots()?;
        for table in tables {
            let violations = if table == "roots" {
                dangling.len()
            } else {
                let sql = format!(
                    "PRAGMA foreign_key_check(\"{}\")",
                    table.replace('"', "\"\"")
                );
                self.conn
                    .prepare(&sql)?
                    .query_map([], |_| Ok(()))?
                    .collect::<rusqlite::Result<Vec<()>>>()?
                    .len()
            };
            out.extend((0..violations).map(|_| format!("foreign key violation in {table}")));
        }
        Ok(CatalogProblems {
            problems: out,
            dangling,
        })
    }

    /// Roots (kind, name) holding `digest`.
    pub fn roots_of(&self, digest: &Digest) -> Result<Vec<(String, String)>> {
        let mut st = self
            .conn
            .prepare("SELECT kind, name FROM roots WHERE digest = ?1 ORDER BY kind, name")?;
        let rows = st.query_map([digest.to_string()], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Totals over what roots of `kind` hold (a layer's view of its share
    /// of the store).
    pub fn root_kind_totals(&self, kind: &str) -> Result<RootKindTotals> {
        let [references, logical_bytes, objects, unique_bytes, stored_bytes] = self.counts(
            "WITH held AS (SELECT * FROM objects WHERE digest IN (SELECT digest FROM roots WHERE kind = ?1))
             SELECT
               (SELECT count(*) FROM roots WHERE kind = ?1),
               (SELECT coalesce(sum(o.size), 0) FROM roots r JOIN objects o USING (digest) WHERE r.kind = ?1),
               (SELECT count(*) FROM held),
               (SELECT coalesce(sum(size), 0) FROM held),
               (SELECT coalesce(sum(stored_size), 0) FROM held)",
            [kind],
        )?;
        Ok(RootKindTotals {
            references,
            logical_bytes,
            objects,
            unique_bytes,
            stored_bytes,
        })
    }

    /// The one row `sql` returns, as counts.
    fn counts<const N: usize>(&self, sql: &str, params: impl rusqlite::Params) -> Result<[u64; N]> {
        Ok(self.conn.query_row(sql, params, |r| {
            let mut out = [0u64; N];
            for (i, o) in out.iter_mut().enumerate() {
                *o = r.get::<_, i64>(i)? as u64;
            }
            Ok(out)
        })?)
    }

    /// How many objects the catalog names (records' own objects included).
    pub fn object_count(&self) -> Result<u64> {
        let [n] = self.counts("SELECT count(*) FROM objects", [])?;
        Ok(n)
    }

    /// Totals for `coffer stats`.
    pub fn stats(&self) -> Result<CatalogStats> {
        // Record objects (the catalog's own copy in the backend) are counted
        // apart, so the figures describe what users stored.
        let [objects, references, logical_bytes, unique_bytes, stored_bytes, records] = self.counts(
            "WITH ev AS (SELECT * FROM objects WHERE digest NOT IN (SELECT record_digest FROM refs)),
                  rt AS (SELECT * FROM roots WHERE kind <> 'ref')
             SELECT
               (SELECT count(*) FROM ev),
               (SELECT count(*) FROM rt),
               (SELECT coalesce(sum(o.size), 0) FROM rt r JOIN ev o USING (digest))
                 + (SELECT coalesce(sum(size), 0) FROM ev WHERE digest NOT IN (SELECT digest FROM rt)),
               (SELECT coalesce(sum(size), 0) FROM ev),
               (SELECT coalesce(sum(stored_size), 0) FROM ev),
               (SELECT count(*) FROM refs)",
            [],
        )?;
        Ok(CatalogStats {
            objects,
            references,
            logical_bytes,
            unique_bytes,
            stored_bytes,
            records,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entries::CATALOG_FILE;

    fn row(b: &[u8]) -> ObjectRow {
        ObjectRow {
            digest: Digest::of(b),
            size: b.len() as u64,
            stored_size: 9 + b.len() as u64,
            first_seen_ms: 1,
        }
    }

    fn put_root(name: &str) -> Option<Root> {
        Some(Root {
            kind: "put".into(),
            name: name.into(),
        })
    }

    #[test]
    fn integrity_problems_say_what_foreign_key_check_says_of_every_table() {
        let t = tempfile::tempdir().unwrap();
        let c = Catalog::open(&t.path().join(CATALOG_FILE), &Schema::CAS).unwrap();
        let ghost = format!("sha256:{}", "0".repeat(64));
        c.conn.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
        for name in ["a", "b"] {
            c.conn
                .execute(
                    "INSERT INTO roots (kind, name, digest, created_ms) VALUES ('put', ?1, ?2, 1)",
                    params![name, ghost],
                )
                .unwrap();
        }
        c.conn
            .execute(
                "INSERT INTO refs (key, target, record_digest, created_ms) VALUES ('k', 't', ?1, 1)",
                [&ghost],
            )
            .unwrap();
        let whole: Vec<String> = c
            .conn
            .prepare("PRAGMA foreign_key_check")
            .unwrap()
            .query_map([], |r| r.get::<_, String>(0))
            .unwrap()
            .map(|t| format!("foreign key violation in {}", t.unwrap()))
            .collect();
        let found = c.integrity_problems().unwrap();
        assert_eq!(found.dangling.len(), 2);
        let mut got = found.problems;
        let mut want = whole.clone();
        got.sort();
        want.sort();
        assert_eq!(got, want);
        assert_eq!(want.len(), 3, "{whole:?}");
    }

    #[test]
    fn catalog_opens_in_wal_with_full_sync_and_latest_schema() {
        let t = tempfile::tempdir().unwrap();
        let c = Catalog::open(&t.path().join(CATALOG_FILE), &Schema::CAS).unwrap();
        let mode: String = c
            .conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        let sync: i64 = c
            .conn
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .unwrap();
        assert_eq!((mode.as_str(), sync), ("wal", 2));
        let temp: i64 = c
            .conn
            .query_row("PRAGMA temp_store", [], |r| r.get(0))
            .unwrap();
        assert_eq!(temp, 2, "temp files in memory");
        assert_eq!(c.schema_version().unwrap(), Schema::CAS.version());
        drop(c);
        // Reopening applies nothing and keeps the version.
        let c = Catalog::open(&t.path().join(CATALOG_FILE), &Schema::CAS).unwrap();
        assert_eq!(c.schema_version().unwrap(), Schema::CAS.version());
    }

    #[test]
    fn only_a_writer_gets_the_large_page_cache() {
        let t = tempfile::tempdir().unwrap();
        let mut c = Catalog::open(&t.path().join(CATALOG_FILE), &Schema::CAS).unwrap();
        let size = |c: &Catalog| -> i64 {
            c.conn
                .query_row("PRAGMA cache_size", [], |r| r.get(0))
                .unwrap()
        };
        assert!(size(&c) > -WRITE_CACHE_KIB, "a reader keeps the default");
        c.record(&[(row(b"a"), put_root("a"))]).unwrap();
        assert_eq!(size(&c), -WRITE_CACHE_KIB);
    }

    #[test]
    fn catalog_newer_than_this_build_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join(CATALOG_FILE);
        drop(Catalog::open(&p, &Schema::CAS).unwrap());
        let conn = Connection::open(&p).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
        drop(conn);
        let err = Catalog::open(&p, &Schema::CAS).err().unwrap();
        assert_eq!(err.code(), "integrity.catalog");
    }

    #[test]
    fn a_catalog_opens_only_with_the_schema_that_made_it() {
        static LAYER: Schema = Schema {
            application_id: 7,
            migrations: &[
                OBJECTS_MIGRATION,
                "CREATE TABLE notes (digest TEXT NOT NULL REFERENCES objects (digest)) STRICT;",
                REFS_MIGRATION,
            ],
            recorded: &["objects", "roots", "notes"],
        };
        let t = tempfile::tempdir().unwrap();
        let (cas, layer) = (t.path().join("cas"), t.path().join("layer"));
        drop(Catalog::open(&cas, &Schema::CAS).unwrap());
        let c = Catalog::open(&layer, &LAYER).unwrap();
        assert_eq!(c.schema_version().unwrap(), 3);
        drop(c);
        // Version 2 of the CAS and of the layer are different tables.
        for (path, schema) in [(&cas, &LAYER), (&layer, &Schema::CAS)] {
            let e = Catalog::open(path, schema).err().unwrap();
            assert_eq!(e.code(), "integrity.catalog", "{e}");
            assert!(e.to_string().contains("another kind of store"), "{e}");
            let e = Catalog::open_for_reading(path, schema).err().unwrap();
            assert_eq!(e.code(), "integrity.catalog", "{e}");
        }
        assert!(Catalog::open_for_reading(&layer, &LAYER).is_ok());
        static BROKEN: Schema = Schema {
            application_id: 8,
            migrations: &[REFS_MIGRATION],
            recorded: &["objects", "roots"],
        };
        let e = Catalog::open(&t.path().join("broken"), &BROKEN)
            .err()
            .unwrap();
        assert_eq!(e.code(), "integrity.catalog");
    }

    #[test]
    fn derived_rows_commit_alone_and_recorded_tables_are_refused() {
        static LAYER: Schema = Schema {
            application_id: 9,
            migrations: &[
                OBJECTS_MIGRATION,
                "CREATE TABLE notes (n TEXT) STRICT; CREATE TABLE derived (n TEXT) STRICT;",
                REFS_MIGRATION,
            ],
            recorded: &["objects", "roots", "notes"],
        };
        let t = tempfile::tempdir().unwrap();
        let mut c = Catalog::open(&t.path().join(CATALOG_FILE), &LAYER).unwrap();
        c.write_derived(|w| w.execute("INSERT INTO derived (n) VALUES ('a')", &[]))
            .unwrap();
        let e = c
            .write_derived(|w| {
                w.execute("INSERT INTO derived (n) VALUES ('b')", &[])?;
                w.execute("INSERT INTO notes (n) VALUES ('x')", &[])
            })
            .unwrap_err();
        assert_eq!(e.code(), "integrity.catalog");
        assert!(e.to_string().contains("notes is recorded"), "{e}");
        let count = |table: &str| -> i64 {
            c.conn
                .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
                .unwrap()
        };
        assert_eq!(
            (count("derived"), count("notes")),
            (1, 0),
            "rolled back whole"
        );
    }

    #[test]
    fn rows_are_insert_only() {
        let t = tempfile::tempdir().unwrap();
        let mut c = Catalog::open(&t.path().join(CATALOG_FILE), &Schema::CAS).unwrap();
        c.record(&[(row(b"a"), put_root("a"))]).unwrap();
        for sql in ["UPDATE objects SET size = 5", "UPDATE roots SET name = 'x'"] {
            assert!(c.conn.execute(sql, []).is_err(), "{sql}");
        }
        // Recording the same object again changes nothing.
        let mut again = row(b"a");
        again.first_seen_ms = 99;
        c.record(&[(again, put_root("a"))]).unwrap();
        assert_eq!(
            c.object(&Digest::of(b"a")).unwrap().unwrap().first_seen_ms,
            1
        );
    }

    #[test]
    fn only_unrooted_objects_are_unreachable_and_deletable() {
        let t = tempfile::tempdir().unwrap();
        let mut c = Catalog::open(&t.path().join(CATALOG_FILE), &Schema::CAS).unwrap();
        c.record(&[(row(b"kept"), put_root("k")), (row(b"loose"), None)])
            .unwrap();
        let un: Vec<Digest> = c
            .unreachable_before(2)
            .unwrap()
            .iter()
            .map(|r| r.digest)
            .collect();
        assert_eq!(un, vec![Digest::of(b"loose")]);
        assert!(
            c.unreachable_before(1).unwrap().is_empty(),
            "grace period respected"
        );
        let deleted = c
            .delete_unreachable(&[Digest::of(b"kept"), Digest::of(b"loose")])
            .unwrap();
        assert_eq!(deleted, vec![Digest::of(b"loose")]);
        assert!(c.object(&Digest::of(b"kept")).unwrap().is_some());
    }

    #[test]
    fn stats_count_every_reference_as_logical_bytes() {
        let t = tempfile::tempdir().unwrap();
        let mut c = Catalog::open(&t.path().join(CATALOG_FILE), &Schema::CAS).unwrap();
        c.record(&[
            (row(b"12345"), put_root("a")),
            (row(b"12345"), put_root("b")),
            (row(b"xy"), None),
        ])
        .unwrap();
        let s = c.stats().unwrap();
        assert_eq!(s.dedup_ratio(), Some(1.714));
        assert_eq!(s.compression_ratio(), Some(0.28));
        assert_eq!(CatalogStats::default().dedup_ratio(), None);
        assert_eq!((s.objects, s.references), (2, 2));
        assert_eq!((s.logical_bytes, s.unique_bytes), (12, 7));
        assert_eq!(s.stored_bytes, 14 + 11);
    }

    #[test]
    fn root_kind_totals_count_only_that_kind() {
        let t = tempfile::tempdir().unwrap();
        let mut c = Catalog::open(&t.path().join(CATALOG_FILE), &Schema::CAS).unwrap();
        let member = |name: &str| {
            Some(Root {
                kind: "member".into(),
                name: name.into(),
            })
        };
        c.record(&[
            (row(b"12345"), member("a")),
            (row(b"12345"), member("b")),
            (row(b"xy"), put_root("c")),
        ])
        .unwrap();
        let m = c.root_kind_totals("member").unwrap();
        assert_eq!((m.references, m.logical_bytes), (2, 10));
        assert_eq!((m.objects, m.unique_bytes, m.stored_bytes), (1, 5, 14));
        assert_eq!(
            c.root_kind_totals("none").unwrap(),
            RootKindTotals::default()
        );
    }
}
