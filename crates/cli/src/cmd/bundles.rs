//! `bundle validate|ingest|ls|show|checkout` and `where`.

use coffer_base::codes;
use coffer_evidence::bundle::labels;
use coffer_evidence::ids::BundleRef;
use std::path::Path;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use coffer_evidence::bundle::inspect::Reading;
use coffer_evidence::bundle::query::{Run, RunQuery};
use coffer_evidence::bundle::{self, inspect, records, BundleFilter, HashOnly};
use coffer_evidence::provenance;
use coffer_evidence::vocab::{
    AssessmentMode, Qualification, TerminalState, VerifierOutcome, Vocabulary,
};
use coffer_evidence::EvidenceError;
use serde_json::json;

use super::{open_store, open_store_for_reading, resolve_digest};
use crate::report::or_report;
use crate::report::{Issue, Report, Status};
use crate::Ctx;

/// Filters of `bundle ls` and `events`: which runs.
#[derive(Debug, clap::Args)]
pub struct RunFilters {
    /// Only tasks matching this id or glob (`*`, `?`, `[...]`; case-sensitive).
    #[arg(long, value_name = "GLOB")]
    task: Option<String>,
    /// Only models matching this id or `provider/model`, or a glob of either.
    #[arg(long, value_name = "GLOB")]
    model: Option<String>,
    /// Only harnesses matching this id or glob.
    #[arg(long, value_name = "GLOB")]
    harness: Option<String>,
    /// observational or verified.
    #[arg(long, value_parser = one_of(AssessmentMode::ALL))]
    assessment_mode: Option<AssessmentMode>,
    /// completed, failed, stopped or interrupted.
    #[arg(long, value_parser = one_of(TerminalState::ALL))]
    terminal: Option<TerminalState>,
    /// qualified or incomplete.
    #[arg(long, value_parser = one_of(Qualification::ALL))]
    qualification: Option<Qualification>,
    /// Only bundles ingested since: a duration back from now (`36h`, `7d`),
    /// a date (`2026-12-01`, UTC midnight) or an RFC 3339 time.
    #[arg(long, value_name = "WHEN", value_parser = parse_since)]
    since: Option<i64>,
    /// Only bundles whose id matches this glob (`*`, `?`).
    #[arg(long = "id", value_name = "GLOB")]
    id: Option<String>,
    /// Only bundles with this label, its value matching the glob
    /// (`experiment=ablation-*`); repeat to require several.
    #[arg(long = "label", value_name = "KEY=GLOB", value_parser = parse_label_filter)]
    labels: Vec<(String, String)>,
    /// Only runs whose verifier outcome is this (`none`: no verifier result).
    #[arg(long, value_parser = one_of(VerifierOutcome::ALL))]
    verifier: Option<VerifierOutcome>,
    /// Only runs whose workspace patch touches a file matching this glob
    /// (`*` also crosses `/`: `src/*.py`, `*/tests/*`).
    #[arg(long, value_name = "GLOB")]
    touched: Option<String>,
    /// Only runs on this fixture: its digest, or a prefix of its hex.
    #[arg(long, value_name = "DIGEST")]
    fixture: Option<String>,
}

fn parse_label_filter(arg: &str) -> Result<(String, String), String> {
    arg.split_once('=')
        .map(|(k, g)| (k.to_string(), g.to_string()))
        .ok_or_else(|| format!("{arg:?}: a label filter is KEY=GLOB"))
}

/// A `KEY=VALUE` label to set, checked as labels are.
pub fn parse_label(arg: &str) -> Result<labels::Change, String> {
    labels::Change::parse_set(arg).map_err(|i| i.message)
}

/// The runs `f` selects, each with its labels and facts, in ingest order.
pub fn selected(store: &coffer_store::Store, f: &RunFilters) -> Result<Vec<Run>, EvidenceError> {
    bundle::query::select(store, &f.query())
}

impl RunFilters {
    /// The library's query.
    pub fn query(&self) -> RunQuery {
        RunQuery {
            filter: BundleFilter {
                task: self.task.clone(),
                model: self.model.clone(),
                harness: self.harness.clone(),
                assessment_mode: self.assessment_mode,
                terminal: self.terminal,
                qualification: self.qualification,
                since_ms: self.since,
            },
            id: self.id.clone(),
            labels: self.labels.clone(),
            verifier: self.verifier,
            touched: self.touched.clone(),
            fixture: self.fixture.clone(),
        }
    }
}

/// `bundle ls`: which runs, and how to print them.
#[derive(Debug, clap::Args)]
pub struct LsFilters {
    #[command(flatten)]
    runs: RunFilters,
    /// Output without --json: an aligned table, one JSON object per line,
    /// or CSV (RFC 4180, with a header).
    #[arg(long, value_enum, default_value_t = LsFormat::Table)]
    format: LsFormat,
}

/// How `bundle ls` prints its rows (the --json envelope is unchanged).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LsFormat {
    /// Aligned columns with a header.
    Table,
    /// One JSON object per bundle, per line.
    Jsonl,
    /// Comma-separated values with a header.
    Csv,
}

/// `--since`: ms since the epoch.
fn parse_since(s: &str) -> Result<i64, String> {
    let now = std::time::SystemTime::now();
    let at = if let Ok(d) = humantime::parse_duration(s) {
        now.checked_sub(d).ok_or("too far back")?
    } else if let Ok(t) = humantime::parse_rfc3339_weak(s) {
        t
    } else if let Ok(t) = humantime::parse_rfc3339_weak(&format!("{s} 00:00:00")) {
        t
    } else {
        return Err(format!(
            "{s:?} is neither a duration (36h, 7d), a date (2026-12-01) nor an RFC 3339 time"
        ));
    };
    Ok(at
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64))
}

/// RFC 3339 (UTC, seconds) of a time in ms since the epoch.
fn rfc3339(ms: i64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.max(0) as u64);
    humantime::format_rfc3339_seconds(t).to_string()
}

/// The columns of `bundle ls` in CSV; the table leaves out the manifest
/// digest (`bundle show` has it). Columns added later go at the end.
const LS_HEADER: [&str; 11] = [
    "ingested",
    "bundle",
    "task",
    "model",
    "harness",
    "mode",
    "terminal",
    "qualification",
    "manifest",
    "verifier",
    "labels",
];

fn ls_cells(run: &Run, table: bool) -> Vec<String> {
    let b = &run.row;
    let mut cells = vec![
        rfc3339(b.ingested_ms),
        b.bundle_id.to_string(),
        b.task_id.to_string(),
        format!("{}/{}", b.model_provider, b.model_id),
        b.harness_id.to_string(),
        b.assessment_mode.to_string(),
        b.terminal_state.to_string(),
        b.qualification.to_string(),
        b.manifest_digest.to_string(),
        run.facts.verifier.to_string(),
        // A table shows labels as KEY=VALUE; CSV as a JSON object, since a
        // value may hold any separator.
        if table {
            let l: Vec<String> = run.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
            l.join(",")
        } else if run.labels.is_empty() {
            String::new()
        } else {
            json!(run.labels).to_string()
        },
    ];
    if table {
        cells.remove(8);
    }
    cells
}

/// The human rendering of `bundle ls` rows in `format`.
fn ls_text(runs: &[Run], format: LsFormat) -> String {
    match format {
        LsFormat::Jsonl => runs.iter().map(|r| json!(r).to_string() + "\n").collect(),
        LsFormat::Csv => {
            let rows: Vec<Vec<String>> = runs.iter().map(|r| ls_cells(r, false)).collect();
            crate::table::csv(&LS_HEADER, &rows)
        }
        LsFormat::Table => {
            let mut header = LS_HEADER.to_vec();
            header.remove(8);
            let rows: Vec<Vec<String>> = runs.iter().map(|r| ls_cells(r, true)).collect();
            crate::table::aligned(&header, &rows)
        }
    }
}

/// A clap parser for one value of a closed vocabulary: the values are
/// listed in help and completions, anything else is a usage error.
pub fn one_of<T: Vocabulary + Send + Sync>(all: &'static [T]) -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(all.iter().map(|v| v.as_str())).try_map(|s| s.parse::<T>())
}

pub fn validate(_ctx: &Ctx, dir: &Path) -> Report {
    let insp = or_report!(inspect(dir, &mut HashOnly, Reading::Everything));
    let issues = insp.issues.clone();
    let bundle_id = insp.manifest.as_ref().map(|m| m.bundle_id.clone());
    let qualification = insp.qualification();
    let result = json!({
        "bundleId": bundle_id,
        "valid": issues.is_empty(),
        "qualification": qualification,
        "artifacts": insp.manifest.as_ref().map(|m| m.evidence.len()),
    });
    if !issues.is_empty() {
        let human = format!("{}: {} problem(s)", dir.display(), issues.len());
        return Report::from_issues(issues, result, human);
    }
    let gaps = insp
        .capture
        .as_ref()
        .filter(|c| c.qualification != Qualification::Qualified)
        .map(|c| coffer_evidence::bundle::model::gap_issues(&c.missing_evidence));
    let human = format!(
        "{}: valid ({})",
        dir.display(),
        qualification.map_or("?", Qualification::as_str)
    );
    match gaps {
        Some(g) => Report::new(Status::Incomplete, g, result, human),
        None => Report::accepted(result, human),
    }
}

/// `bundle view ID -o FILE`: the run as one HTML page.
pub fn view(ctx: &Ctx, id: &BundleRef, output: &Path) -> Report {
    let store = or_report!(open_store_for_reading(ctx));
    match coffer_export::view::sources::stored(&store, id) {
        Ok((view, files)) => crate::cmd::exports::write_view(&view, &files, output),
        Err(e) => crate::cmd::exports::export_error(&e),
    }
}

/// `bundle seal DIR`: the manifest's digests and sizes from the files.
pub fn seal(dir: &Path) -> Report {
    use coffer_evidence::bundle::seal::{seal, Outcome};
    match or_report!(seal(dir)) {
        Outcome::Refused(issues) => {
            let human = format!("{}: not sealed, {} problem(s)", dir.display(), issues.len());
            Report::from_issues(issues, json!(null), human)
        }
        Outcome::Sealed(s) => {
            let mut human = String::new();
            for r in &s.resealed {
                human.push_str(&format!(
                    "{}: {} ({} bytes)\n",
                    r.relative_path, r.digest, r.size_bytes
                ));
            }
            for id in &s.rebound {
                human.push_str(&format!("{id}: sanitizedFrom follows its source\n"));
            }
            human.push_str(&match s.written {
                true => format!("{}: manifest sealed", dir.display()),
                false => format!("{}: already sealed, nothing written", dir.display()),
            });
            Report::accepted(serde_json::to_value(&s).expect("serializable"), human)
        }
    }
}

/// `bundle ingest DIR...`: one directory reports as it always has; several
/// are ingested one after another (each on its own, so one refused leaves
/// the others stored), reported together with the worst status.
pub fn ingest(ctx: &Ctx, dirs: &[std::path::PathBuf], set: &[labels::Change]) -> Report {
    let mut store = or_report!(open_store(ctx));
    if let [dir] = dirs {
        return ingest_one(ctx, &mut store, dir, set);
    }
    let (mut results, mut issues, mut human) = (Vec::new(), Vec::new(), Vec::new());
    let mut status = Status::Accepted;
    for dir in dirs {
        let r = ingest_one(ctx, &mut store, dir, set);
        let interrupted = r.issues.iter().any(|i| i.code == codes::io::INTERRUPTED);
        let mut result = json!({ "dir": coffer_base::input::escaped(dir) });
        if let serde_json::Value::Object(m) = r.result {
            result.as_object_mut().expect("an object").extend(m);
        }
        results.push(result);
        issues.extend(r.issues.into_iter().map(|mut i| {
            i.message = format!("{}: {}", dir.display(), i.message);
            i
        }));
        status = status.max(r.status);
        human.push(match r.human.is_empty() {
            true => format!("{}: refused", dir.display()),
            false => r.human,
        });
        if interrupted {
            break;
        }
    }
    Report::new(
        status,
        issues,
        json!({ "bundles": results }),
        human.join("\n"),
    )
}

fn ingest_one(
    ctx: &Ctx,
    store: &mut coffer_store::Store,
    dir: &Path,
    set: &[labels::Change],
) -> Report {
    let out = crate::progress::shown(ctx, store, "ingest", |s| bundle::ingest::ingest(s, dir));
    let out = or_report!(out);
    // Labels go to the stored bundle, new or already there.
    if let (true, Some(id)) = (out.issues.is_empty() && !set.is_empty(), &out.bundle_id) {
        let labelled = records::bundle_by_id(store.catalog(), id).and_then(|row| match row {
            Some(row) => labels::apply(store, &row, set),
            None => Ok(()),
        });
        or_report!(labelled);
    }
    let result = serde_json::to_value(&out).expect("serializable");
    if !out.issues.is_empty() {
        let human = format!(
            "{}: refused, {} problem(s); nothing stored",
            dir.display(),
            out.issues.len()
        );
        return Report::from_issues(out.issues.clone(), result, human);
    }
    let id = out.bundle_id.as_deref().unwrap_or_default();
    let mut human = format!(
        "{} {id} ({} artifacts, {})",
        if out.created {
            "ingested"
        } else {
            "already stored:"
        },
        out.artifacts,
        out.qualification.map_or("?", Qualification::as_str)
    );
    if out.objects_restored > 0 {
        human.push_str(&format!(
            "; {} lost object(s) restored from this copy",
            out.objects_restored
        ));
    }
    if out.gaps.is_empty() {
        Report::accepted(result, human)
    } else {
        Report::new(
            Status::Incomplete,
            coffer_evidence::bundle::model::gap_issues(&out.gaps),
            result,
            human,
        )
    }
}

pub fn ls(ctx: &Ctx, f: &LsFilters) -> Report {
    let store = or_report!(open_store_for_reading(ctx));
    let rows = or_report!(selected(&store, &f.runs));
    let human = ls_text(&rows, f.format);
    Report::accepted(json!({ "bundles": rows }), human)
}

/// `bundle label ID KEY=VALUE... [--remove KEY]...`.
pub fn label(ctx: &Ctx, id: &BundleRef, set: &[labels::Change], remove: &[String]) -> Report {
    let mut changes = set.to_vec();
    for k in remove {
        match labels::Change::parse_remove(k) {
            Ok(c) => changes.push(c),
            Err(i) => return Report::from_issues(vec![i], serde_json::Value::Null, String::new()),
        }
    }
    if changes.is_empty() {
        return Report::usage(
            codes::usage::MISSING_ARGUMENT,
            "give KEY=VALUE labels to set or --remove KEY",
            None,
        );
    }
    let mut store = or_report!(open_store(ctx));
    let done = (|| {
        let row = records::require_bundle(store.catalog(), id)?;
        labels::apply(&mut store, &row, &changes)?;
        let now = labels::of(store.catalog(), &row.bundle_id)?;
        Ok::<_, coffer_evidence::EvidenceError>((row, now))
    })();
    let (row, now) = or_report!(done);
    let human = format!(
        "{}: {}",
        row.bundle_id,
        now.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    Report::accepted(json!({"bundleId": row.bundle_id, "labels": now}), human)
}

pub fn show(ctx: &Ctx, id: &BundleRef) -> Report {
    let store = or_report!(open_store_for_reading(ctx));
    let shown = (|| {
        let row = records::require_bundle(store.catalog(), id)?;
        let mut artifacts = Vec::new();
        let mut human = format!(
            "bundle {}\n  manifest {}\n  run {} attempt {} (#{}{})\n  task {} model {}/{} harness {}@{}\n  {} {} / {} / {} ({})\n",
            row.bundle_id,
            row.manifest_digest,
            row.run_id,
            row.attempt_id,
            row.attempt_number,
            row.retry_of.as_deref().map(|r| format!(", retry of {r}")).unwrap_or_default(),
            row.task_id,
            row.model_provider,
            row.model_id,
            row.harness_id,
            row.harness_version,
            row.assessment_mode,
            row.terminal_state,
            row.failure_class,
            row.stop_reason,
            row.qualification
        );
        let mut shared = records::shared_with(store.catalog(), &row.bundle_id)?;
        for a in records::bundle_artifacts(store.catalog(), &row.bundle_id)? {
            let shared_with = shared.remove(a.artifact_id.as_str()).unwrap_or_default();
            human.push_str(&format!(
                "  {:<24} {:<15} {:<10} {:>10}  {}{}\n",
                a.relative_path,
                a.kind,
                a.sharing_class,
                a.size,
                a.digest,
                if shared_with.is_empty() {
                    String::new()
                } else {
                    format!("  (also in {} other bundle(s))", shared_with.len())
                }
            ));
            let mut v = serde_json::to_value(&a).expect("serializable");
            v["sharedWith"] = json!(shared_with);
            artifacts.push(v);
        }
        Ok::<_, coffer_evidence::EvidenceError>((
            json!({"bundle": row, "artifacts": artifacts}),
            human,
        ))
    })();
    match shown {
        Ok((result, human)) => Report::accepted(result, human),
        Err(e) => Report::error(&e),
    }
}

pub fn checkout(ctx: &Ctx, id: &BundleRef, dest: &Path) -> Report {
    let mut store = or_report!(open_store_for_reading(ctx));
    let done = crate::progress::shown(ctx, &mut store, "checkout", |s| {
        bundle::checkout::checkout(s, id, dest)
    });
    match done {
        Ok(n) => Report::accepted(
            json!({"bundle": id.to_string(), "dest": dest.display().to_string(), "files": n}),
            format!("checked out {id} to {} ({n} files)", dest.display()),
        ),
        Err(e) => Report::error(&e),
    }
}

pub fn where_is(ctx: &Ctx, digest: &str) -> Report {
    let store = or_report!(open_store_for_reading(ctx));
    let d = match resolve_digest(&store, digest) {
        Ok(d) => d,
        Err(r) => return *r,
    };
    let w = or_report!(provenance::locate(&store, &d));
    let mut human = String::new();
    for b in &w.bundle_manifests {
        human.push_str(&format!("bundle {b}  manifest.json\n"));
    }
    for a in &w.bundle_artifacts {
        human.push_str(&format!(
            "bundle {}  {} ({})\n",
            a.bundle_id, a.relative_path, a.artifact_id
        ));
    }
    for e in &w.exports {
        human.push_str(&format!(
            "export {}  {} of bundle {} ({})\n",
            e.dest, e.sharing_class, e.source_bundle_id, e.manifest_digest
        ));
    }
    for r in w.other_roots() {
        human.push_str(&format!("{} {}\n", r.kind, r.name));
    }
    for r in &w.fixture_runs {
        let labels: Vec<String> = r.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let line = format!("run {}  on this fixture  {}", r.bundle_id, labels.join(","));
        human.push_str(line.trim_end());
        human.push('\n');
    }
    let result = serde_json::to_value(&w).expect("serializable");
    if !w.is_known() {
        return Report::from_issues(
            vec![Issue::about(
                codes::io::NOT_FOUND,
                Some(d.to_string()),
                format!("object {d} is not in the store"),
            )],
            result,
            human,
        );
    }
    Report::accepted(result, human)
}

/// `bundle cat`: one file of a stored bundle, verified, to stdout or a new
/// file.
pub fn cat(ctx: &Ctx, bundle: &BundleRef, file: &str, output: Option<&Path>) -> Report {
    let store = or_report!(open_store_for_reading(ctx));
    match records::file_digest(store.catalog(), bundle, file) {
        Ok(d) => super::objects::write_object(ctx, &store, &d, output),
        Err(e) => Report::error(&e),
    }
}

/// `bundle diff`: two stored bundles side by side.
pub fn diff(ctx: &Ctx, a: &BundleRef, b: &BundleRef) -> Report {
    let store = or_report!(open_store_for_reading(ctx));
    let d = or_report!(bundle::diff::diff(&store, a, b));
    let result = serde_json::to_value(&d).expect("a diff serializes");
    Report::accepted(result, diff_text(&d))
}

fn diff_text(d: &bundle::diff::BundleDiff) -> String {
    let mut h = format!(
        "--- {} ({})\n+++ {} ({})\n",
        d.a.bundle_id, d.a.manifest_digest, d.b.bundle_id, d.b.manifest_digest
    );
    for f in &d.fields {
        h.push_str(&format!("field {}: {} -> {}\n", f.field, f.a, f.b));
    }
    let a = &d.artifacts;
    h.push_str(&format!(
        "artifacts: {} same, {} changed, {} only in {}, {} only in {}\n",
        a.same.len(),
        a.changed.len(),
        a.only_a.len(),
        d.a.bundle_id,
        a.only_b.len(),
        d.b.bundle_id
    ));
    for c in &a.changed {
        h.push_str(&format!("  ~ {}\n", c.path));
    }
    for p in &a.only_a {
        h.push_str(&format!("  - {p}\n"));
    }
    for p in &a.only_b {
        h.push_str(&format!("  + {p}\n"));
    }
    if let Some(s) = &d.session {
        h.push_str(&format!(
            "session: {} vs {} events, first {} identical{}\n",
            s.events_a,
            s.events_b,
            s.common_prefix,
            s.first_difference
                .map(|n| format!(", first difference at event {n}"))
                .unwrap_or_default()
        ));
        for (t, c) in &s.types {
            if c.a != c.b {
                h.push_str(&format!("  {t}: {} -> {}\n", c.a, c.b));
            }
        }
        match &s.alignment {
            Some(al) => alignment_text(&mut h, al),
            None => h.push_str(&format!(
                "events: not aligned (a session is over {} events)\n",
                bundle::events::MAX_ALIGNED_EVENTS
            )),
        }
    }
    h
}

/// The aligned sessions as a unified diff of events: `=` for a matched
/// run, `-` for an event only in A, `+` for one only in B.
fn alignment_text(h: &mut String, al: &bundle::events::Alignment) {
    use bundle::events::On;
    h.push_str(&format!(
        "events: {} matched (ids and times aside), {} only in A, {} only in B\n",
        al.matched, al.only_a, al.only_b
    ));
    for hunk in &al.hunks {
        let (sign, side) = match hunk.on {
            On::Both => {
                h.push_str(&format!(
                    "  = A:{}-{} B:{}-{} ({} matched)\n",
                    hunk.a_line,
                    hunk.a_line + hunk.a_len - 1,
                    hunk.b_line,
                    hunk.b_line + hunk.b_len - 1,
                    hunk.a_len
                ));
                continue;
            }
            On::A => ('-', 'A'),
            On::B => ('+', 'B'),
        };
        for e in &hunk.events {
            let label = e
                .label
                .as_deref()
                .map(|l| format!(" {l}"))
                .unwrap_or_default();
            h.push_str(&format!("  {sign} {side}:{} {}{label}\n", e.line, e.kind));
        }
        let len = hunk.a_len.max(hunk.b_len);
        if (hunk.events.len() as u64) < len {
            h.push_str(&format!(
                "  {sign} ... {} more not listed\n",
                len - hunk.events.len() as u64
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_a_duration_a_date_or_a_time() {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        let hour_ago = parse_since("1h").unwrap();
        assert!((now - 3_600_000 - hour_ago).abs() < 60_000);
        assert_eq!(parse_since("2026-12-01").unwrap(), 1_796_083_200_000);
        assert_eq!(
            parse_since("2026-12-01T12:00:00Z").unwrap(),
            1_796_126_400_000
        );
        assert!(parse_since("soon").is_err());
    }
}
