//! What queries across runs need beyond a bundle's row: the verifier's
//! outcome and assertion counts, the configuration and fixture digests,
//! the session's event count and time span, and the files the workspace
//! patch touches.
//!
//! Facts are kept in unrecorded catalog tables (`bundle_facts`,
//! `bundle_touched`): nothing in them is new information, so they need no
//! record in the backend and can always be derived again. Ingest gathers
//! them from the bytes on their way into the store ([`Tee`], [`Reading`])
//! and writes them in the bundle's own transaction; a bundle that arrives
//! otherwise (`catalog rebuild`, `mirror`, a catalog made before facts
//! existed) has them derived from its stored objects, every read verified,
//! at the next write open. A reading command derives the facts of such a
//! bundle in memory.

use std::collections::BTreeSet;
use std::io::Read;

use coffer_base::digest::Digest;
use coffer_base::json::Node;
use coffer_base::json::{self, JsonlLimits};
use coffer_store::rows::Writer;
use coffer_store::{Store, StoreError};
use serde::Serialize;

use super::model::{Manifest, VerifierResult};
use super::records::{bundle_artifacts, ArtifactRow, BundleRow};
use crate::error::Result;
use crate::vocab::{AssertionStatus, Kind, VerifierOutcome};

/// Most paths indexed for one bundle's patch; a patch touching more is
/// indexed up to this many and says so in [`Facts::problem`].
pub const MAX_TOUCHED: usize = 100_000;

/// The facts of one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Facts {
    /// The verifier's status, or `none` without a verifier result.
    pub verifier: VerifierOutcome,
    /// Assertions that passed (with a verifier result).
    pub assertions_passed: Option<u64>,
    /// Assertions in the verifier result.
    pub assertions_total: Option<u64>,
    /// `configuration.digest` of the manifest.
    pub configuration_digest: Option<Digest>,
    /// `run.fixture.digest` of the manifest.
    pub fixture_digest: Option<Digest>,
    /// Lines (events) of the session; 0 without a session.
    pub events: u64,
    /// From the first to the last time the session's events carry, in ms
    /// (`None` when fewer than two carry one).
    pub duration_ms: Option<u64>,
    /// Files the workspace patch names, old and new paths, sorted.
    #[serde(skip)]
    pub touched: BTreeSet<String>,
    /// What could not be read (a lost or damaged object), when something
    /// could not; the other facts are still given.
    pub problem: Option<String>,
}

impl Default for Facts {
    fn default() -> Facts {
        Facts::empty()
    }
}

impl Facts {
    fn empty() -> Facts {
        Facts {
            verifier: VerifierOutcome::None,
            assertions_passed: None,
            assertions_total: None,
            configuration_digest: None,
            fixture_digest: None,
            events: 0,
            duration_ms: None,
            touched: BTreeSet::new(),
            problem: None,
        }
    }
}

/// Derives the facts of `row` from its stored objects.
pub fn derive(store: &Store, row: &BundleRow) -> Result<Facts> {
    let mut f = Facts::empty();
    let mut problems = Vec::new();
    match read_document(store, &row.manifest_digest) {
        Ok(bytes) => {
            if let Ok(m) = serde_json::from_slice::<Manifest>(&bytes) {
                f.from_manifest(&m);
            }
        }
        Err(e) => problems.push(lost("manifest.json", e)?),
    }
    for a in bundle_artifacts(store.catalog(), &row.bundle_id)? {
        let mut reading = Reading::of(a.kind);
        if matches!(reading, Reading::Other) {
            continue;
        }
        match feed_object(store, &a, &mut reading) {
            Ok(()) => reading.finish(&mut f),
            Err(e) => problems.push(lost(&a.relative_path, e)?),
        }
    }
    f.problem = f
        .problem
        .take()
        .into_iter()
        .chain(problems)
        .reduce(|a, b| a + "; " + &b);
    Ok(f)
}

/// A lost or damaged object is a fact about its bundle; a store that
/// cannot be read at all is an error.
fn lost(what: &str, e: StoreError) -> Result<String> {
    match e {
        e @ (StoreError::MissingObject { .. }
        | StoreError::DigestMismatch { .. }
        | StoreError::SizeMismatch { .. }
        | StoreError::CorruptObject { .. }) => Ok(format!("{what}: {e}")),
        e => Err(e.into()),
    }
}

/// A stored document, bounded as documents are at ingest.
fn read_document(store: &Store, d: &Digest) -> std::result::Result<Vec<u8>, StoreError> {
    let mut bytes = Vec::new();
    store
        .open_object(d)?
        .take(json::Limits::DOCUMENT.max_bytes as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| StoreError::read(d.to_string(), e))?;
    Ok(bytes)
}

/// Feeds the whole of object `a` (so it is verified) to `reading`.
fn feed_object(
    store: &Store,
    a: &ArtifactRow,
    reading: &mut Reading,
) -> std::result::Result<(), StoreError> {
    let mut r = store.open_object(&a.digest)?;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = r
            .read(&mut buf)
            .map_err(|e| StoreError::read(&a.relative_path, e))?;
        if n == 0 {
            return Ok(());
        }
        reading.feed(&buf[..n]);
    }
}

impl Facts {
    /// The facts the manifest holds.
    pub fn from_manifest(&mut self, m: &Manifest) {
        self.configuration_digest = Some(m.configuration.digest);
        self.fixture_digest = Some(m.run.fixture.digest);
    }
}

/// How much of a session's start and end is kept to find its first and
/// last times: the span runs from the first event in the first 64 KiB
/// that carries a time to the last such event in the last 64 KiB.
pub const SESSION_EDGE: usize = 64 << 10;

/// What one artifact adds to its run's facts, read as a stream: at ingest
/// from the bytes on their way into the store, later from the stored
/// object. Memory is bounded: a session keeps its first and last 64 KiB,
/// a patch one line, a verifier result one document.
#[derive(Debug)]
pub enum Reading {
    /// The session: its lines, and its edges for the times.
    Session {
        /// Bytes seen.
        bytes: u64,
        /// Line ends seen.
        newlines: u64,
        /// The last byte seen.
        last: Option<u8>,
        /// The first [`SESSION_EDGE`] bytes.
        head: Vec<u8>,
        /// The last [`SESSION_EDGE`] bytes.
        tail: Vec<u8>,
    },
    /// The workspace patch: the files it names.
    Patch {
        /// The paths so far.
        paths: PatchPaths,
        /// The line not yet ended (at most a line's bound).
        partial: Vec<u8>,
    },
    /// The verifier result, whole (a document: bounded at ingest).
    Verifier(Vec<u8>),
    /// An artifact with no facts.
    Other,
}

impl Reading {
    /// The reading for an artifact of `kind`.
    pub fn of(kind: Kind) -> Reading {
        match kind {
            Kind::Session => Reading::Session {
                bytes: 0,
                newlines: 0,
                last: None,
                head: Vec::new(),
                tail: Vec::new(),
            },
            Kind::Workspace => Reading::Patch {
                paths: PatchPaths::default(),
                partial: Vec::new(),
            },
            Kind::Verifier => Reading::Verifier(Vec::new()),
            _ => Reading::Other,
        }
    }

    /// Reads the next bytes.
    pub fn feed(&mut self, chunk: &[u8]) {
        match self {
            Reading::Session {
                bytes,
                newlines,
                last,
                head,
                tail,
            } => {
                *bytes += chunk.len() as u64;
                *newlines += memchr::memchr_iter(b'\n', chunk).count() as u64;
                *last = chunk.last().copied().or(*last);
                let room = SESSION_EDGE - head.len();
                head.extend_from_slice(&chunk[..chunk.len().min(room)]);
                keep_tail(tail, chunk);
            }
            Reading::Patch { paths, partial } => {
                let mut rest = chunk;
                while let Some(i) = memchr::memchr(b'\n', rest) {
                    let line = &rest[..i];
                    match partial.is_empty() {
                        true => paths.line(line.strip_suffix(b"\r").unwrap_or(line)),
                        false => {
                            partial.extend_from_slice(line);
                            let whole = std::mem::take(partial);
                            paths.line(whole.strip_suffix(b"\r").unwrap_or(&whole));
                        }
                    }
                    rest = &rest[i + 1..];
                }
                let room = super::grep::MAX_LINE.saturating_sub(partial.len());
                partial.extend_from_slice(&rest[..rest.len().min(room)]);
            }
            Reading::Verifier(doc) => {
                let room = (json::Limits::DOCUMENT.max_bytes + 1).saturating_sub(doc.len());
                doc.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            Reading::Other => {}
        }
    }

    /// Adds what was read to `f`.
    pub fn finish(self, f: &mut Facts) {
        match self {
            Reading::Session {
                bytes,
                newlines,
                last,
                head,
                tail,
            } => {
                // Blank lines are refused at ingest: every line is an event.
                f.events = newlines + u64::from(last.is_some_and(|b| b != b'\n'));
                let whole = bytes as usize <= SESSION_EDGE;
                let first = edge_lines(&head, false, !whole).find_map(line_ms);
                let end = edge_lines(&tail, !whole, false).rev().find_map(line_ms);
                f.duration_ms = match (first, end) {
                    (Some(a), Some(b)) if b > a => Some((b - a) as u64),
                    _ => None,
                };
            }
            Reading::Patch { mut paths, partial } => {
                if !partial.is_empty() {
                    paths.line(&partial);
                }
                f.touched = paths.found;
                if f.touched.len() >= MAX_TOUCHED {
                    f.problem = Some(format!(
                        "the workspace patch names more than {MAX_TOUCHED} files; the first {MAX_TOUCHED} are indexed"
                    ));
                }
            }
            Reading::Verifier(doc) => {
                // The stored result passed its schema at ingest.
                if let Ok(v) = serde_json::from_slice::<VerifierResult>(&doc) {
                    f.verifier = v.status.into();
                    f.assertions_total = Some(v.assertions.len() as u64);
                    f.assertions_passed = Some(
                        v.assertions
                            .iter()
                            .filter(|a| a.status == AssertionStatus::Passed)
                            .count() as u64,
                    );
                }
            }
            Reading::Other => {}
        }
    }
}

/// Keeps the last [`SESSION_EDGE`] bytes of a stream in `tail`.
fn keep_tail(tail: &mut Vec<u8>, chunk: &[u8]) {
    if chunk.len() >= SESSION_EDGE {
        tail.clear();
        tail.extend_from_slice(&chunk[chunk.len() - SESSION_EDGE..]);
        return;
    }
    let over = (tail.len() + chunk.len()).saturating_sub(SESSION_EDGE);
    tail.drain(..over);
    tail.extend_from_slice(chunk);
}

/// The whole lines of an edge: without a cut first line (`cut_start`) or
/// a cut last one (`cut_end`).
fn edge_lines(
    edge: &[u8],
    cut_start: bool,
    cut_end: bool,
) -> impl DoubleEndedIterator<Item = &[u8]> {
    let mut lines: Vec<&[u8]> = edge.split(|b| *b == b'\n').collect();
    if cut_end || edge.last() == Some(&b'\n') {
        lines.pop();
    }
    if cut_start && !lines.is_empty() {
        lines.remove(0);
    }
    lines.into_iter()
}

/// The time of one session line, if it carries one.
fn line_ms(line: &[u8]) -> Option<i64> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    json::parse_node(line, &JsonlLimits::EVIDENCE.line)
        .ok()
        .and_then(|e| event_ms(&e))
}

/// An event's time in ms since the epoch, from the first of
/// [`super::stream::TIME_KEYS`] it carries: an RFC 3339 time in UTC
/// (`2026-12-05T10:00:00.250Z`), or a number of seconds (below 10^11) or
/// milliseconds since the epoch.
pub fn event_ms(event: &Node<'_>) -> Option<i64> {
    let v = super::stream::TIME_KEYS
        .iter()
        .find_map(|k| event.get(k).filter(|v| !matches!(v, Node::Null)))?;
    match v {
        Node::Number(n) => {
            let x = n.as_f64()?;
            let ms = if x.abs() < 1e11 { x * 1000.0 } else { x };
            ms.is_finite().then_some(ms as i64)
        }
        Node::String(s) => {
            let t = humantime::parse_rfc3339_weak(s.trim_end_matches('Z')).ok()?;
            let d = t.duration_since(std::time::UNIX_EPOCH).ok()?;
            i64::try_from(d.as_millis()).ok()
        }
        _ => None,
    }
}

/// The files a unified diff (git's or plain) names, read line by line:
/// `diff --git`, `---`/`+++`, `rename`/`copy` headers. Lines inside a hunk
/// are counted off by its header, so a removed line that reads
/// `--- a/x` is content, not a header.
#[derive(Debug, Default)]
pub struct PatchPaths {
    /// Old and new lines still due in the current hunk.
    due: (u64, u64),
    /// Every path named so far.
    pub found: BTreeSet<String>,
}

impl PatchPaths {
    /// Reads one line (without its line end).
    pub fn line(&mut self, line: &[u8]) {
        if self.due != (0, 0) {
            match line.first() {
                Some(b'-') => self.due.0 = self.due.0.saturating_sub(1),
                Some(b'+') => self.due.1 = self.due.1.saturating_sub(1),
                Some(b'\\') => {}
                _ => {
                    self.due.0 = self.due.0.saturating_sub(1);
                    self.due.1 = self.due.1.saturating_sub(1);
                }
            }
            return;
        }
        let text = String::from_utf8_lossy(line);
        if let Some(h) = text.strip_prefix("@@ ") {
            self.due = hunk_lengths(h);
        } else if let Some(rest) = text.strip_prefix("diff --git ") {
            if let Some(p) = same_path_pair(rest) {
                self.add(&p);
            }
        } else if let Some(p) = text.strip_prefix("--- ").or(text.strip_prefix("+++ ")) {
            // A plain diff may follow the name with a tab and a time.
            let p = unquote(p.split('\t').next().unwrap_or(p));
            if p != "/dev/null" {
                let p = p.strip_prefix("a/").or(p.strip_prefix("b/")).unwrap_or(&p);
                self.add(p);
            }
        } else {
            for header in ["rename from ", "rename to ", "copy from ", "copy to "] {
                if let Some(p) = text.strip_prefix(header) {
                    self.add(&unquote(p));
                }
            }
        }
    }

    fn add(&mut self, p: &str) {
        if !p.is_empty() && self.found.len() < MAX_TOUCHED {
            self.found.insert(p.to_string());
        }
    }
}

/// The old and new line counts of a hunk header (`-a,b +c,d @@`); a count
/// left out is 1.
fn hunk_lengths(h: &str) -> (u64, u64) {
    let mut parts = h.split_whitespace();
    let count = |part: Option<&str>, sign: char| -> u64 {
        part.and_then(|p| p.strip_prefix(sign))
            .and_then(|p| p.split_once(',').map_or(Some(1), |(_, n)| n.parse().ok()))
            .unwrap_or(0)
    };
    (count(parts.next(), '-'), count(parts.next(), '+'))
}

/// The path of `a/P b/P` (the same path twice): how git names a file whose
/// change has no `---`/`+++` lines (a mode change, a binary file).
fn same_path_pair(rest: &str) -> Option<String> {
    let rest = unquote_pair(rest);
    let n = rest.len();
    if n % 2 == 0 || !rest.is_char_boundary(n / 2) {
        return None;
    }
    let (a, b) = (&rest[..n / 2], &rest[n / 2 + 1..]);
    let (a, b) = (a.strip_prefix("a/")?, b.strip_prefix("b/")?);
    (a == b).then(|| a.to_string())
}

fn unquote_pair(rest: &str) -> String {
    match rest.strip_prefix('"') {
        Some(_) => rest
            .split("\" \"")
            .map(|s| unquote(&format!("\"{}\"", s.trim_matches('"'))))
            .collect::<Vec<_>>()
            .join(" "),
        None => rest.to_string(),
    }
}

/// A path as git writes it: as is, or in double quotes with C escapes
/// (octal bytes for anything outside printable ASCII).
fn unquote(p: &str) -> String {
    let Some(inner) = p.strip_prefix('"').and_then(|p| p.strip_suffix('"')) else {
        return p.to_string();
    };
    let mut out = Vec::new();
    let mut bytes = inner.bytes();
    while let Some(b) = bytes.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        match bytes.next() {
            Some(b'n') => out.push(b'\n'),
            Some(b't') => out.push(b'\t'),
            Some(d @ b'0'..=b'7') => {
                let mut v = u32::from(d - b'0');
                for _ in 0..2 {
                    match bytes.clone().next() {
                        Some(d @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(d - b'0');
                            bytes.next();
                        }
                        _ => break,
                    }
                }
                out.push(v as u8);
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

const FACT_COLUMNS: &str = "verifier, assertions_passed, assertions_total, configuration_digest, fixture_digest, events, duration_ms, problem";

/// Stores the facts of `bundle_id` (replacing earlier ones: they are
/// derived, so a later derivation is the better one).
pub fn put(store: &mut Store, bundle_id: &str, f: &Facts) -> Result<()> {
    store.write_derived(|w| write_rows(w, bundle_id, f))?;
    Ok(())
}

/// Writes the rows of `f` in the transaction of `w` (the ingest's own, or
/// one for derived rows).
pub fn write_rows(w: &Writer<'_>, bundle_id: &str, f: &Facts) -> coffer_store::Result<()> {
    {
        w.execute(
            "DELETE FROM bundle_touched WHERE bundle_id = ?1",
            &[&bundle_id],
        )?;
        w.execute(
            &format!(
                "INSERT OR REPLACE INTO bundle_facts (bundle_id, {FACT_COLUMNS}) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
            ),
            &[
                &bundle_id,
                &f.verifier,
                &f.assertions_passed,
                &f.assertions_total,
                &f.configuration_digest,
                &f.fixture_digest,
                &f.events,
                &f.duration_ms,
                &f.problem,
            ],
        )?;
        for p in &f.touched {
            w.execute(
                "INSERT INTO bundle_touched (bundle_id, path) VALUES (?1, ?2)",
                &[&bundle_id, p],
            )?;
        }
        Ok(())
    }
}

/// A reader that shows each chunk it passes on to a [`Reading`]: how
/// ingest gathers a run's facts from the bytes on their way into the store,
/// without reading them again.
pub struct Tee<'a> {
    /// The input.
    pub inner: &'a mut dyn Read,
    /// What sees it.
    pub reading: &'a mut Reading,
}

impl Read for Tee<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.reading.feed(&buf[..n]);
        Ok(n)
    }
}

/// The stored facts of `bundle_id` (without its touched paths), if any.
pub fn stored(store: &Store, bundle_id: &str) -> Result<Option<Facts>> {
    Ok(store.catalog().reader().query_one(
        &format!("SELECT {FACT_COLUMNS} FROM bundle_facts WHERE bundle_id = ?1"),
        &[&bundle_id],
        |r| {
            Ok(Facts {
                verifier: r.get(0)?,
                assertions_passed: r.get(1)?,
                assertions_total: r.get(2)?,
                configuration_digest: r.get(3)?,
                fixture_digest: r.get(4)?,
                events: r.get(5)?,
                duration_ms: r.get(6)?,
                touched: BTreeSet::new(),
                problem: r.get(7)?,
            })
        },
    )?)
}

/// The facts of `row`: stored, or derived now when the catalog has none.
pub fn of(store: &Store, row: &BundleRow) -> Result<Facts> {
    match stored(store, &row.bundle_id)? {
        Some(f) => Ok(f),
        None => derive(store, row),
    }
}

/// The paths `row`'s patch touches: indexed, or derived now.
pub fn touched(store: &Store, row: &BundleRow) -> Result<BTreeSet<String>> {
    if stored(store, &row.bundle_id)?.is_none() {
        return Ok(derive(store, row)?.touched);
    }
    let paths: Vec<String> = store.catalog().reader().query(
        "SELECT path FROM bundle_touched WHERE bundle_id = ?1 ORDER BY path",
        &[&row.bundle_id],
        |r| r.get(0),
    )?;
    Ok(paths.into_iter().collect())
}

/// The bundles whose fixture digest is `d`, in ingest order: indexed,
/// and derived now for bundles the catalog has no facts of.
pub fn bundles_on_fixture(store: &Store, d: &Digest) -> Result<Vec<BundleRow>> {
    let r = store.catalog().reader();
    let ids: Vec<String> = r.query(
        "SELECT b.bundle_id FROM bundles b LEFT JOIN bundle_facts f ON f.bundle_id = b.bundle_id \
         WHERE f.fixture_digest = ?1 OR f.bundle_id IS NULL ORDER BY b.ingested_ms, b.bundle_id",
        &[d],
        |row| row.get(0),
    )?;
    let mut out = Vec::new();
    for id in ids {
        let Some(row) = super::records::bundle_by_id(store.catalog(), &id)? else {
            continue;
        };
        if of(store, &row)?.fixture_digest == Some(*d) {
            out.push(row);
        }
    }
    Ok(out)
}

/// [`index_missing`] as a step of a command that has done its work: a
/// failure here never fails the command, since what is not indexed now is
/// indexed at the next write open, and reading commands derive it
/// meanwhile.
pub fn index_pending(store: &mut Store) {
    let _ = index_missing(store);
}

/// Derives and stores the facts of every bundle the catalog has none of
/// (or whose facts could not all be read: the object may be back), in
/// ingest order; stops at an interrupt between bundles (the rest are
/// indexed next time). Returns how many were indexed.
pub fn index_missing(store: &mut Store) -> Result<usize> {
    let r = store.catalog().reader();
    let counts = |sql: &str| r.query_one(sql, &[], |row| row.get::<u64>(0));
    let (all, with) = (
        counts("SELECT COUNT(*) FROM bundles")?,
        counts("SELECT COUNT(*) FROM bundle_facts WHERE problem IS NULL")?,
    );
    if all == with {
        return Ok(0);
    }
    let ids: Vec<String> = r.query(
        "SELECT b.bundle_id FROM bundles b WHERE NOT EXISTS \
         (SELECT 1 FROM bundle_facts f WHERE f.bundle_id = b.bundle_id AND f.problem IS NULL) \
         ORDER BY b.ingested_ms, b.bundle_id",
        &[],
        |row| row.get(0),
    )?;
    let mut done = 0;
    for id in ids {
        if coffer_base::interrupt::requested() {
            break;
        }
        let Some(row) = super::records::bundle_by_id(store.catalog(), &id)? else {
            continue;
        };
        let f = derive(store, &row)?;
        put(store, &id, &f)?;
        done += 1;
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(patch: &str) -> Vec<String> {
        let mut p = PatchPaths::default();
        for l in patch.lines() {
            p.line(l.as_bytes());
        }
        p.found.into_iter().collect()
    }

    #[test]
    fn a_git_patch_names_old_new_renamed_and_binary_files() {
        let patch = "\
diff --git a/src/calc.py b/src/calc.py
index 1..2 100644
--- a/src/calc.py
+++ b/src/calc.py
@@ -1,3 +1,3 @@
 def add(a, b):
--- a/not/a/header
+++ b/not/a/header either
 end
diff --git a/old.txt b/new.txt
similarity index 100%
rename from old.txt
rename to new.txt
diff --git a/logo.png b/logo.png
new file mode 100644
Binary files /dev/null and b/logo.png differ
diff --git a/gone.md b/gone.md
deleted file mode 100644
--- a/gone.md
+++ /dev/null
@@ -1 +0,0 @@
-bye
diff --git \"a/sp ace\\303\\251.txt\" \"b/sp ace\\303\\251.txt\"
--- \"a/sp ace\\303\\251.txt\"
+++ \"b/sp ace\\303\\251.txt\"
@@ -1 +1 @@
-x
+y
";
        assert_eq!(
            paths(patch),
            [
                "gone.md",
                "logo.png",
                "new.txt",
                "old.txt",
                "sp aceé.txt",
                "src/calc.py"
            ]
        );
    }

    #[test]
    fn a_plain_diff_names_its_files_without_the_time() {
        let patch = "--- calc.py.orig\t2026-12-01 10:00:00\n+++ calc.py\t2026-12-01 10:01:00\n@@ -1 +1 @@\n-a\n+b\n";
        assert_eq!(paths(patch), ["calc.py", "calc.py.orig"]);
    }

    /// The facts of `bytes` read as one artifact of `kind`, fed in chunks
    /// of `chunk` bytes.
    fn read_in_chunks(kind: Kind, bytes: &[u8], chunk: usize) -> Facts {
        let mut r = Reading::of(kind);
        for c in bytes.chunks(chunk.max(1)) {
            r.feed(c);
        }
        let mut f = Facts::default();
        r.finish(&mut f);
        f
    }

    fn session(events: usize, pad: usize) -> Vec<u8> {
        let mut s = String::new();
        for i in 0..events {
            let e = serde_json::json!({"type": "x", "pad": "p".repeat(pad),
                "time": format!("2026-12-05T10:{:02}:{:02}Z", i / 60 % 60, i % 60)});
            s.push_str(&format!("{e}\n"));
        }
        s.into_bytes()
    }

    #[test]
    fn a_session_reads_the_same_in_any_chunks_and_spans_first_to_last_time() {
        for (events, pad) in [(1, 10), (3, 10), (50, 10), (900, 200)] {
            let bytes = session(events, pad);
            let whole = read_in_chunks(Kind::Session, &bytes, bytes.len());
            assert_eq!(whole.events, events as u64);
            let want = (events > 1).then(|| (events as u64 - 1) * 1000);
            assert_eq!(whole.duration_ms, want, "{events} events of {pad}");
            for chunk in [1, 7, 4096, 65_535, 65_537] {
                let f = read_in_chunks(Kind::Session, &bytes, chunk);
                assert_eq!(
                    (f.events, f.duration_ms),
                    (whole.events, whole.duration_ms),
                    "{chunk}"
                );
            }
        }
        // A last line without its line end is an event too.
        let f = read_in_chunks(Kind::Session, b"{\"time\":1}\n{\"time\":3}", 4);
        assert_eq!((f.events, f.duration_ms), (2, Some(2000)));
        // No times: no span.
        let f = read_in_chunks(Kind::Session, b"{\"a\":1}\n{\"a\":2}\n", 3);
        assert_eq!((f.events, f.duration_ms), (2, None));
    }

    #[test]
    fn a_patch_reads_the_same_in_any_chunks() {
        let patch = b"diff --git a/x.py b/x.py\r\n--- a/x.py\r\n+++ b/x.py\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n--- a/y.py\n+++ b/y.py";
        for chunk in [1, 3, 10, patch.len()] {
            let f = read_in_chunks(Kind::Workspace, patch, chunk);
            let got: Vec<&str> = f.touched.iter().map(String::as_str).collect();
            assert_eq!(got, ["x.py", "y.py"], "{chunk}");
        }
    }

    #[test]
    fn hunk_headers_count_lines_with_one_when_left_out() {
        assert_eq!(hunk_lengths("-1,3 +1,4 @@ fn x"), (3, 4));
        assert_eq!(hunk_lengths("-1 +1 @@"), (1, 1));
        assert_eq!(hunk_lengths("-0,0 +1 @@"), (0, 1));
        assert_eq!(hunk_lengths("garbage"), (0, 0));
    }

    #[test]
    fn times_are_rfc3339_seconds_or_milliseconds() {
        let t = |v: serde_json::Value| event_ms(&Node::from(&serde_json::json!({ "time": v })));
        assert_eq!(
            t("2026-12-05T10:00:00.250Z".into()),
            Some(1_796_464_800_250)
        );
        assert_eq!(t(1_796_464_800.into()), Some(1_796_464_800_000));
        assert_eq!(t(1_796_464_800_250u64.into()), Some(1_796_464_800_250));
        assert_eq!(t("yesterday".into()), None);
        assert_eq!(
            event_ms(&Node::from(&serde_json::json!({ "ts": 1, "createdAt": 5 }))),
            Some(1000),
            "the first key in TIME_KEYS order"
        );
    }
}
