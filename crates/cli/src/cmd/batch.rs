//! `has --stdin` and `get --stdin -o DIR`: digests read one per line from
//! standard input, answered one line each as they are read, in the form
//! of `git cat-file --batch-check`: `<digest> <size>`, or the name as
//! given and why it is not there (`missing`, `ambiguous`, `invalid`).
//!
//! Output is flushed whenever standard input has nothing more buffered,
//! so a process that writes a digest and waits for its answer gets it,
//! while a batch piped in is answered in large writes. Nothing is kept per
//! line: memory stays flat however many digests arrive.

use std::io::{BufRead, BufWriter, Read, Write};
use std::path::Path;

use coffer_base::codes;
use coffer_base::Digest;
use coffer_store::lookup::{Lookup, MAX_NAME_BYTES};
use coffer_store::{Store, StoreError};
use serde_json::json;

use super::open_store_for_reading;
use crate::report::{or_report, Issue, Report, Status};
use crate::Ctx;

/// How the names that were not answered with an object add up.
#[derive(Default)]
struct Tally {
    names: u64,
    missing: (u64, Option<String>),
    ambiguous: (u64, Option<String>),
    invalid: (u64, Option<String>),
    refused: Vec<Issue>,
}

impl Tally {
    fn count(&mut self, name: &str, found: Lookup) {
        self.names += 1;
        let slot = match found {
            Lookup::Present { .. } => return,
            Lookup::Missing => &mut self.missing,
            Lookup::Ambiguous => &mut self.ambiguous,
            Lookup::Invalid => &mut self.invalid,
        };
        slot.0 += 1;
        slot.1
            .get_or_insert_with(|| name.chars().take(100).collect());
    }

    /// The batch's status: failed when any name was not answered with an
    /// object (as `has` fails when one is absent), blocked when every name
    /// was but a file in the way held other bytes.
    fn status(&self) -> Status {
        if self.missing.0 + self.ambiguous.0 + self.invalid.0 > 0 {
            Status::Failed
        } else if !self.refused.is_empty() {
            Status::Blocked
        } else {
            Status::Accepted
        }
    }

    /// One issue per kind of failure, the first name of each as its place.
    fn issues(self) -> Vec<Issue> {
        let of = self.names;
        let mut out = Vec::new();
        let mut add = |code, (n, first): (u64, Option<String>), what: &str| {
            if n > 0 {
                out.push(Issue::about(
                    code,
                    first,
                    format!("{n} of {of} names {what}"),
                ));
            }
        };
        add(
            codes::io::NOT_FOUND,
            self.missing,
            "found no object in the store",
        );
        add(
            codes::usage::AMBIGUOUS_DIGEST,
            self.ambiguous,
            "start more than one object's digest",
        );
        add(
            codes::usage::INVALID_DIGEST,
            self.invalid,
            "are not a digest (64 hex digits, with or without sha256:) nor a prefix of 8 or more",
        );
        out.extend(self.refused);
        out
    }
}

/// One name of the batch, answered.
struct Answer<'a> {
    name: &'a str,
    found: Lookup,
    /// For `get`: where the object was written (or found already there).
    file: Option<String>,
    /// For `get`: why an object present in the store was not written.
    refused: Option<&'static str>,
}

impl Answer<'_> {
    fn write(&self, ctx: &Ctx, first: bool, out: &mut impl Write) -> std::io::Result<()> {
        if ctx.json {
            let mut v = match self.found {
                Lookup::Present { digest, size } => {
                    json!({"name": self.name, "digest": digest, "present": true, "size": size})
                }
                other => json!({"name": self.name, "present": false, "reason": other.word()}),
            };
            if let Some(f) = &self.file {
                v["file"] = json!(f);
            }
            if let Some(r) = self.refused {
                v["refused"] = json!(r);
            }
            write!(out, "{}{v}", if first { "" } else { "," })
        } else if ctx.quiet {
            Ok(())
        } else {
            match (self.found, self.refused) {
                (Lookup::Present { digest, size }, None) => writeln!(out, "{digest} {size}"),
                (Lookup::Present { digest, .. }, Some(why)) => writeln!(out, "{digest} {why}"),
                (other, _) => {
                    let shown = crate::report::terminal_safe(self.name);
                    writeln!(out, "{shown} {}", other.word().unwrap_or("missing"))
                }
            }
        }
    }
}

/// Reads the next name: one line, at most [`MAX_NAME_BYTES`] kept (a
/// longer line is read to its end without being kept, and named by its
/// start and `…`: it is invalid), `\r\n` and surrounding blanks dropped.
/// `None` at the end of input.
fn next_name(input: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<Option<String>> {
    buf.clear();
    let n = input
        .by_ref()
        .take(MAX_NAME_BYTES as u64 + 2)
        .read_until(b'\n', buf)?;
    if n == 0 {
        return Ok(None);
    }
    if buf.last() != Some(&b'\n') {
        // Too long: skip the rest of the line without keeping it.
        let mut rest = Vec::new();
        while input.by_ref().take(1 << 16).read_until(b'\n', &mut rest)? > 0 {
            if rest.last() == Some(&b'\n') {
                break;
            }
            rest.clear();
        }
        if buf.len() > MAX_NAME_BYTES {
            // Answered with what was kept and a mark that it goes on.
            buf.truncate(MAX_NAME_BYTES);
            let kept = String::from_utf8_lossy(buf).trim().to_string();
            return Ok(Some(format!("{kept}…")));
        }
    }
    Ok(Some(String::from_utf8_lossy(buf).trim().to_string()))
}

/// Runs a batch: `answer` resolves each name (and, for `get`, writes the
/// object); lines stream to stdout; the tally becomes the issues.
fn run(
    ctx: &Ctx,
    command: &str,
    answer: &mut dyn FnMut(&Store, &str) -> coffer_store::Result<Answer<'static>>,
) -> Report {
    let store = or_report!(open_store_for_reading(ctx));
    or_report!(store.catalog().widen_cache_for_lookups());
    let mut input = std::io::BufReader::with_capacity(1 << 16, std::io::stdin().lock());
    let mut out = BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let io = |e: std::io::Error| StoreError::io("<stdout>", "write", e);
    let mut tally = Tally::default();
    let mut buf = Vec::new();
    let streamed = (|| -> coffer_store::Result<()> {
        if ctx.json {
            crate::report::open_streamed_json(command, &mut out)
                .and_then(|()| write!(out, "{{\"objects\":["))
                .map_err(io)?;
        }
        let mut first = true;
        // One read transaction per stretch of input, renewed whenever the
        // input runs dry and every 8,192 names.
        let mut snapshot = Some(store.catalog().read_snapshot()?);
        let mut since = 0u32;
        loop {
            let name = next_name(&mut input, &mut buf)
                .map_err(|e| StoreError::io("<stdin>", "read", e))?;
            let Some(name) = name else { break };
            if name.is_empty() {
                continue;
            }
            let a = answer(&store, &name)?;
            tally.count(&name, a.found);
            if let (Some(why), Lookup::Present { digest, .. }) = (a.refused, a.found) {
                tally.refused.push(Issue::about(
                    codes::conflict::DESTINATION_EXISTS,
                    a.file.clone(),
                    format!("{why}: the file there is not {digest}; it was left as it is"),
                ));
            }
            let a = Answer { name: &name, ..a };
            a.write(ctx, std::mem::take(&mut first), &mut out)
                .map_err(io)?;
            since += 1;
            let dry = input.buffer().is_empty();
            if dry || since == 8192 {
                since = 0;
                drop(snapshot.take());
                if dry {
                    out.flush().map_err(io)?;
                }
                snapshot = Some(store.catalog().read_snapshot()?);
            }
        }
        drop(snapshot);
        if ctx.json {
            write!(out, "]}}").map_err(io)?;
        }
        out.flush().map_err(io)
    })();
    let mut issues = Vec::new();
    let mut status = tally.status();
    if let Err(e) = &streamed {
        if crate::report::is_broken_pipe(e) {
            return crate::report::streamed_report(None, "", &mut out);
        }
        if ctx.json {
            let _ = write!(out, "]}}").and_then(|()| out.flush());
        }
        issues.push(Issue::from(e));
        status = Status::for_code(issues[0].code);
    }
    issues.extend(tally.issues());
    let mut r = Report::new(status, issues, serde_json::Value::Null, String::new());
    r.streamed = true;
    r
}

/// `has --stdin`.
pub fn has(ctx: &Ctx) -> Report {
    run(ctx, "has", &mut |store, name| {
        Ok(Answer {
            name: "",
            found: store.lookup(name)?,
            file: None,
            refused: None,
        })
    })
}

/// `get --stdin -o DIR`: each object present is written, verified, to
/// `DIR/<64 hex>`. A file already there is never replaced: one holding
/// exactly the object counts as written, any other is refused.
pub fn get(ctx: &Ctx, dir: &Path) -> Report {
    if let Err(e) = std::fs::create_dir(dir) {
        if e.kind() != std::io::ErrorKind::AlreadyExists || !dir.is_dir() {
            return Report::error(&StoreError::io(dir, "create", e));
        }
    }
    run(ctx, "get", &mut |store, name| {
        let found = store.lookup(name)?;
        let Lookup::Present { digest, .. } = found else {
            return Ok(Answer {
                name: "",
                found,
                file: None,
                refused: None,
            });
        };
        let path = dir.join(digest.hex());
        // A file already there (a batch run again) is checked, not
        // rewritten; one that appears meanwhile is caught at publication.
        let there = std::fs::symlink_metadata(&path).is_ok();
        let written = match there {
            true => Err(StoreError::DestinationExists { path: path.clone() }),
            false => store.get_to_new_file(&digest, &path),
        };
        let refused = match written {
            Ok(_) => None,
            Err(StoreError::DestinationExists { .. }) => {
                (!holds(&path, &digest)).then_some("exists")
            }
            Err(e) => return Err(e),
        };
        Ok(Answer {
            name: "",
            found,
            file: Some(path.display().to_string()),
            refused,
        })
    })
}

/// Whether the regular file at `path` holds exactly the bytes of `d`.
fn holds(path: &Path, d: &Digest) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false;
    };
    if !meta.is_file() {
        return false;
    }
    let Ok(mut f) = std::fs::File::open(path) else {
        return false;
    };
    let mut w = coffer_base::digest::HashingWriter::new(std::io::sink());
    std::io::copy(&mut f, &mut w).is_ok() && w.finish().1 == *d
}
