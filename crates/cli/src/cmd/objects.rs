//! `put`, `get`, `has`, `ls`.

use coffer_base::codes;
use std::io::Write;
use std::path::{Path, PathBuf};

use coffer_base::input::escaped;
use coffer_base::Digest;
use coffer_store::tree::{Skipped, TreeFile};
use coffer_store::Store;
use serde_json::json;

use super::{open_store, open_store_for_reading, parse_digest, resolve_digest};
use crate::progress;
use crate::report::or_report;
use crate::report::{Issue, Report, Status};
use crate::Ctx;

/// The root kind of objects stored with `coffer put`.
const PUT_ROOT: &str = "put";

/// The total size when every input is a file of known size, for a bar
/// with a percentage; `None` (a spinner) for stdin and directories, which
/// walking first would read twice.
fn known_total(paths: &[PathBuf]) -> Option<u64> {
    paths
        .iter()
        .map(|p| {
            (p.as_os_str() != "-")
                .then(|| {
                    std::fs::metadata(p)
                        .ok()
                        .filter(|m| m.is_file())
                        .map(|m| m.len())
                })
                .flatten()
        })
        .sum()
}

/// What `put` reports: every file stored, every input skipped, and the
/// error that stopped it, if one did.
fn put_report(
    files: &[TreeFile],
    skipped: &[Skipped],
    fatal: Option<&coffer_store::StoreError>,
) -> Report {
    let mut human = String::new();
    for f in files {
        human.push_str(&format!("{}  {}\n", f.outcome.digest, escaped(&f.path)));
    }
    let new_objects = files.iter().filter(|f| f.outcome.created).count();
    let bytes: u64 = files.iter().map(|f| f.outcome.size).sum();
    let result = json!({
        "files": files,
        "skipped": skipped,
        "totals": {"files": files.len(), "bytes": bytes, "newObjects": new_objects},
    });
    let mut issues: Vec<Issue> = Vec::new();
    if let Some(e) = fatal {
        issues.push(Issue::from(e));
    }
    issues.extend(
        skipped
            .iter()
            .map(|s| Issue::about(s.code, Some(escaped(&s.path)), s.message.clone())),
    );
    let status = match fatal {
        Some(e) => Status::for_code(e.code()),
        None if !skipped.is_empty() => Status::Incomplete,
        None => Status::Accepted,
    };
    Report::new(status, issues, result, human)
}

pub fn put(ctx: &Ctx, paths: &[PathBuf], no_pin: bool, expect: Option<&str>) -> Report {
    let expected_digest = match expect.map(parse_digest).transpose() {
        Ok(d) => d,
        Err(r) => return *r,
    };
    if expected_digest.is_some() && paths.len() != 1 {
        return Report::usage(
            codes::usage::INVALID_ARGUMENT,
            "--expect takes exactly one input",
            None,
        );
    }
    let mut store = or_report!(open_store(ctx));
    let pb = progress::bytes(ctx, known_total(paths), "put");
    let tick = |n: u64| pb.inc(n);
    let root_kind = (!no_pin).then_some(PUT_ROOT);
    let put = store.put_inputs(paths, root_kind, expected_digest, &tick);
    pb.finish_and_clear();
    put_report(&put.files, &put.skipped, put.fatal.as_ref())
}

pub fn get(ctx: &Ctx, digest: &str, output: Option<&Path>) -> Report {
    let store = or_report!(open_store_for_reading(ctx));
    let d = match resolve_digest(&store, digest) {
        Ok(d) => d,
        Err(r) => return *r,
    };
    write_object(ctx, &store, &d, output)
}

/// Writes object `d`, verified, to a new file or to stdout.
pub(super) fn write_object(ctx: &Ctx, store: &Store, d: &Digest, output: Option<&Path>) -> Report {
    let d = *d;
    match output {
        Some(path) => match store.get_to_new_file(&d, path) {
            Ok(n) => Report::accepted(
                json!({"digest": d, "size": n, "output": path.display().to_string()}),
                String::new(),
            ),
            Err(e) => Report::error(&e),
        },
        None if ctx.json => Report::usage(
            codes::usage::INVALID_ARGUMENT,
            "with --json, give -o FILE (stdout carries the JSON result)",
            None,
        ),
        None => {
            // Verify the whole object before the first byte leaves, so a
            // pipeline never consumes corrupt bytes; the copy verifies again.
            let copied = store.verify_object(&d).and_then(|_| {
                let mut out = std::io::BufWriter::with_capacity(
                    coffer_store::WRITE_BUF,
                    std::io::stdout().lock(),
                );
                let n = store.copy_object(&d, &mut out)?;
                out.flush()
                    .map_err(|e| coffer_store::StoreError::io("<stdout>", "write", e))?;
                Ok(n)
            });
            match copied {
                Ok(_) => Report::accepted(serde_json::Value::Null, String::new()),
                // The reader stopped early (`coffer get D | head`): quiet,
                // as `cat` is. Nothing was stored or changed.
                Err(e) if crate::report::is_broken_pipe(&e) => {
                    Report::accepted(serde_json::Value::Null, String::new())
                }
                Err(e) => Report::error(&e),
            }
        }
    }
}

pub fn has(ctx: &Ctx, digests: &[String]) -> Report {
    let store = or_report!(open_store_for_reading(ctx));
    let mut parsed = Vec::new();
    for a in digests {
        match resolve_digest(&store, a) {
            Ok(d) => parsed.push(d),
            Err(r) => return *r,
        }
    }
    let mut objects = Vec::new();
    let mut issues = Vec::new();
    let mut human = String::new();
    for d in parsed {
        let present = or_report!(store.has(&d));
        if !present {
            issues.push(Issue::about(
                codes::io::NOT_FOUND,
                Some(d.to_string()),
                format!("object {d} is not in the store"),
            ));
        }
        human.push_str(&format!(
            "{}  {d}\n",
            if present { "present" } else { "missing" }
        ));
        objects.push(json!({"digest": d, "present": present}));
    }
    Report::from_issues(issues, json!({ "objects": objects }), human)
}

/// `ls`: every stored object, streamed row by row as the catalog yields
/// it (memory stays flat). A closed stdout (`coffer ls | head`) ends the
/// listing quietly.
pub fn ls(ctx: &Ctx) -> Report {
    use coffer_store::StoreError;
    let store = or_report!(open_store_for_reading(ctx));
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let io = |e: std::io::Error| StoreError::io("<stdout>", "write", e);
    let listed = (|| -> coffer_store::Result<()> {
        if ctx.json {
            crate::report::open_streamed_json("ls", &mut out)
                .and_then(|()| write!(out, "{{\"objects\":["))
                .map_err(io)?;
        }
        let mut first = true;
        store.each_object(&mut |row| {
            if ctx.json {
                let sep = if std::mem::take(&mut first) { "" } else { "," };
                let j = serde_json::to_string(&row).expect("a row serializes");
                write!(out, "{sep}{j}").map_err(io)
            } else if ctx.quiet {
                Ok(())
            } else {
                writeln!(
                    out,
                    "{}  {:>12}  {:>12}",
                    row.digest, row.size, row.stored_size
                )
                .map_err(io)
            }
        })?;
        if ctx.json {
            write!(out, "]}}").map_err(io)?;
        }
        out.flush().map_err(io)
    })();
    // A catalog failure half-way: the rows so far stay, the envelope
    // still closes, and its status says what happened.
    let failure = listed
        .err()
        .map(|e| (Issue::from(&e), crate::report::is_broken_pipe(&e)));
    crate::report::streamed_report(failure, if ctx.json { "]}" } else { "" }, &mut out)
}
