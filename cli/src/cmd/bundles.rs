//! `bundle validate|ingest|ls|show|checkout` and `where`.

use std::path::Path;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use coffer_evidence::bundle::inspect::Reading;
use coffer_evidence::bundle::{self, inspect, records, BundleFilter, HashOnly};
use coffer_evidence::provenance;
use coffer_evidence::vocab::{AssessmentMode, Qualification, TerminalState, Vocabulary};
use serde_json::json;

use super::{open_store, open_store_for_reading, resolve_digest};
use crate::report::or_report;
use crate::report::{Issue, Report, Status};
use crate::Ctx;

/// Filters of `bundle ls`.
#[derive(Debug, clap::Args)]
pub struct LsFilters {
    /// Only this task id.
    #[arg(long)]
    task: Option<String>,
    /// Only this model id.
    #[arg(long)]
    model: Option<String>,
    /// Only this harness id.
    #[arg(long)]
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
}

/// A clap parser for one value of a closed vocabulary: the values are
/// listed in help and completions, anything else is a usage error.
fn one_of<T: Vocabulary + Send + Sync>(all: &'static [T]) -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(all.iter().map(|v| v.as_str())).try_map(|s| s.parse::<T>())
}

fn gap_issues(gaps: &[coffer_evidence::bundle::model::MissingEvidence]) -> Vec<Issue> {
    gaps.iter()
        .enumerate()
        .map(|(i, g)| {
            Issue::about(
                "validation.capture_incomplete",
                Some(format!("capture-report.json#/missingEvidence/{i}")),
                format!(
                    "evidence gap: {} ({}), affects {}",
                    g.kind,
                    g.reason,
                    g.affects
                        .iter()
                        .map(|a| a.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })
        .collect()
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
        .map(|c| gap_issues(&c.missing_evidence));
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

pub fn ingest(ctx: &Ctx, dir: &Path) -> Report {
    let mut store = or_report!(open_store(ctx));
    let out = or_report!(bundle::ingest::ingest(&mut store, dir));
    let result = serde_json::to_value(&out).expect("serializable");
    if !out.issues.is_empty() {
        let human = format!(
            "{}: refused, {} problem(s); nothing stored",
            dir.display(),
            out.issues.len()
        );
        return Report::from_issues(out.issues.clone(), result, human);
    }
    let id = out.bundle_id.clone().unwrap_or_default();
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
        Report::new(Status::Incomplete, gap_issues(&out.gaps), result, human)
    }
}

pub fn ls(ctx: &Ctx, f: &LsFilters) -> Report {
    let filter = BundleFilter {
        task: f.task.clone(),
        model: f.model.clone(),
        harness: f.harness.clone(),
        assessment_mode: f.assessment_mode,
        terminal: f.terminal,
        qualification: f.qualification,
    };
    let rows = or_report!(
        open_store_for_reading(ctx).and_then(|s| records::bundles(s.catalog(), &filter))
    );
    let mut human = String::new();
    for b in &rows {
        human.push_str(&format!(
            "{}  task={} model={} harness={} {} {} {}\n",
            b.bundle_id,
            b.task_id,
            b.model_id,
            b.harness_id,
            b.assessment_mode,
            b.terminal_state,
            b.qualification
        ));
    }
    Report::accepted(json!({ "bundles": rows }), human)
}

pub fn show(ctx: &Ctx, id: &str) -> Report {
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
            let shared_with = shared.remove(&a.artifact_id).unwrap_or_default();
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
        Ok::<_, coffer_store::StoreError>((json!({"bundle": row, "artifacts": artifacts}), human))
    })();
    match shown {
        Ok((result, human)) => Report::accepted(result, human),
        Err(e) => Report::error(&e),
    }
}

pub fn checkout(ctx: &Ctx, id: &str, dest: &Path) -> Report {
    let store = or_report!(open_store_for_reading(ctx));
    match bundle::checkout::checkout(&store, id, dest) {
        Ok(n) => Report::accepted(
            json!({"bundle": id, "dest": dest.display().to_string(), "files": n}),
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
    let w = or_report!(provenance::locate(store.catalog(), &d));
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
    let result = serde_json::to_value(&w).expect("serializable");
    if !w.is_known() {
        return Report::from_issues(
            vec![Issue::about(
                "io.not_found",
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
pub fn cat(ctx: &Ctx, bundle: &str, file: &str, output: Option<&Path>) -> Report {
    let store = or_report!(open_store_for_reading(ctx));
    match records::file_digest(store.catalog(), bundle, file) {
        Ok(d) => super::objects::write_object(ctx, &store, &d, output),
        Err(e) => Report::error(&e),
    }
}
