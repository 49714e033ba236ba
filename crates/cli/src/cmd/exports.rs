//! `export create|verify|pack|unpack` and `scan`.

use coffer_base::codes;
use std::path::{Path, PathBuf};

use coffer_export::create::{create as create_export, CreateOptions};
use coffer_export::error::ExportError;
use coffer_export::gate::{self, Expectations};
use coffer_export::key::ExportKey;
use coffer_export::passes::Detectors;
use coffer_export::policy::{Policy, PolicyOptions};
use coffer_export::source::Source;
use serde_json::json;

use super::{open_store, open_store_for_reading};
use crate::report::or_report;
use crate::report::{Issue, Report, Status};
use crate::Ctx;

/// Arguments of `export create`.
#[derive(Debug, clap::Args)]
pub struct CreateArgs {
    /// A stored bundle (id or manifest digest) or a bundle directory.
    source: String,
    /// The export policy (EBO's form or coffer.export-policy/v1).
    policy: PathBuf,
    /// Destination directory; must not exist.
    dest: PathBuf,
    /// Identity key (32 raw bytes or 64 hex digits, mode 0600) instead of
    /// the store's keys/export.key.
    #[arg(long, value_name = "FILE")]
    key_file: Option<PathBuf>,
    /// Environment variables whose values are sensitive (none are read otherwise).
    #[arg(long, value_name = "NAME", num_args = 1..)]
    redact_env: Vec<String>,
    /// Accept sensitive values shorter than 8 bytes.
    #[arg(long)]
    force_short_values: bool,
    /// Export a bundle whose capture is incomplete (status: incomplete).
    #[arg(long)]
    allow_incomplete: bool,
    /// Leave out JSONL records that are not strict JSON or that the final
    /// scan refuses, list them in the export manifest's excludedRecords,
    /// and publish the rest (status: incomplete).
    #[arg(long)]
    exclude_unverifiable: bool,
    /// Also write a redaction report for a reviewer (.html, .md or .json;
    /// must not exist): every replacement with its rule and exported
    /// context, counts per rule and file, exclusions, the readback verdict.
    /// The JSON result carries the same data as `report`.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Make the export in another system's form: `ebo` for the peer
    /// evidence system's readback (paths after whitespace, `--- /dev/null`
    /// included, become [LOCAL_PATH]; the verifier keeps the source's
    /// workspace digest). See docs/EXPORT.md.
    #[arg(long, value_enum, value_name = "SYSTEM")]
    compat: Option<CompatArg>,
}

/// `--compat` of `export create`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompatArg {
    /// The peer evidence system (EBO).
    Ebo,
}

/// `export view DIR -o FILE`: the export as one HTML page.
pub fn view(dest: &Path, output: &Path) -> Report {
    match coffer_export::view::sources::export_tree(dest) {
        Ok((view, files)) => write_view(&view, &files, output),
        Err(e) => export_error(&e),
    }
}

/// Writes a viewer page to `output`, a new file (never replacing one).
pub fn write_view(
    view: &coffer_export::view::View,
    files: &dyn coffer_export::view::Files,
    output: &Path,
) -> Report {
    use std::io::Write as _;
    let written =
        coffer_base::publish::write_new_file(output, |f| -> Result<(), coffer_store::StoreError> {
            let io = |e| coffer_store::StoreError::io(output, "write", e);
            let mut w = std::io::BufWriter::with_capacity(1 << 16, f);
            coffer_export::view::write(&mut w, view, files).map_err(io)?;
            w.flush().map_err(io)
        });
    match written {
        Ok(()) => Report::accepted(
            json!({"output": output.display().to_string(), "bundleId": view.title, "artifacts": view.artifacts.len()}),
            format!(
                "{}: {} of {}",
                output.display(),
                view.what.to_lowercase(),
                view.title
            ),
        ),
        Err(e) => Report::error(&e),
    }
}

/// The report of a failed export step.
pub fn export_error(e: &ExportError) -> Report {
    match e {
        ExportError::Store(s) => Report::error(s),
        ExportError::Evidence(e) => Report::error(e),
        ExportError::Blocked(i) => {
            let mut r = Report::from_issues(i.clone(), json!(null), String::new());
            r.status = Status::Blocked;
            r
        }
        ExportError::Invalid(i) => {
            let mut r = Report::from_issues(i.clone(), json!(null), String::new());
            r.status = Status::Failed;
            r
        }
        ExportError::Usage(i) => {
            let mut r = Report::from_issues(i.clone(), json!(null), String::new());
            r.status = Status::Usage;
            r
        }
    }
}

fn load_policy(
    path: &Path,
    redact_env: &[String],
    force_short: bool,
) -> Result<Policy, ExportError> {
    Policy::load(
        path,
        &PolicyOptions {
            redact_env: redact_env.to_vec(),
            force_short,
        },
    )
}

pub fn create(ctx: &Ctx, a: &CreateArgs) -> Report {
    match run_create(ctx, a) {
        Ok(r) => r,
        Err(e) => export_error(&e),
    }
}

/// The export, its issues shown with every key or name that holds a
/// secret masked: the source's own errors (a duplicate key) as well as
/// the export's.
fn run_create(ctx: &Ctx, a: &CreateArgs) -> Result<Report, ExportError> {
    let policy = load_policy(&a.policy, &a.redact_env, a.force_short_values)?;
    let detectors = Detectors::for_policy(&policy)?;
    create_with(ctx, a, &policy, &detectors).map_err(|e| e.masked(&|t| detectors.holds_secret(t)))
}

fn create_with(
    ctx: &Ctx,
    a: &CreateArgs,
    policy: &Policy,
    detectors: &Detectors,
) -> Result<Report, ExportError> {
    let mut store = open_store(ctx)?;
    let key = match &a.key_file {
        Some(path) => ExportKey::load(path)?,
        None => ExportKey::of_store(&store)?,
    };
    let opts = CreateOptions {
        allow_incomplete: a.allow_incomplete,
        exclude_unverifiable: a.exclude_unverifiable,
        report: a.report.clone(),
        compat: match a.compat {
            Some(CompatArg::Ebo) => coffer_export::compat::Compat::Ebo,
            None => coffer_export::compat::Compat::Coffer,
        },
    };
    let src = Source::locate(&store, &a.source)?;
    let outcome = crate::progress::shown(ctx, &mut store, "export", |s| {
        create_export(s, &src, policy, detectors, &key, &a.dest, &opts)
    })?;
    let mut human = format!(
        "exported {} as {} to {} ({} artifact(s), {} excluded, {} record(s) left out; read back: {} strings, {} placeholders, 0 findings)\nmanifest {}",
        outcome.source_bundle_id,
        outcome.bundle_id,
        outcome.dest,
        outcome.artifacts.len(),
        outcome.excluded.len(),
        outcome.excluded_records.len(),
        outcome.readback.strings_scanned,
        outcome.readback.placeholders,
        outcome.manifest_digest,
    );
    if let (Some(file), Some(report)) = (&outcome.report_file, &outcome.report) {
        human.push_str(&format!(
            "\nreport {file} ({} replacement(s), {} listed)",
            report.total, report.listed
        ));
    }
    let gaps = outcome.gaps();
    let result = serde_json::to_value(&outcome).expect("outcome serializes");
    Ok(match gaps.is_empty() {
        true => Report::accepted(result, human),
        false => Report::new(Status::Incomplete, gaps, result, human),
    })
}

pub fn verify(_ctx: &Ctx, dest: &Path, policy: Option<&Path>, redact_env: &[String]) -> Report {
    let run = || -> Result<Report, ExportError> {
        let policy = match policy {
            Some(p) => Some(load_policy(p, redact_env, true)?),
            None => None,
        };
        let exp = Expectations {
            policy: policy.as_ref(),
            ..Default::default()
        };
        let report = gate::verify(dest, &exp)?;
        let human = format!(
            "{}: verified {} artifact(s), {} bytes, {} strings scanned, {} placeholders, 0 findings{}",
            dest.display(),
            report.artifacts,
            report.bytes,
            report.strings_scanned,
            report.placeholders,
            if policy.is_some() { "; policy matches" } else { "" }
        );
        Ok(Report::accepted(
            serde_json::to_value(&report).expect("serializes"),
            human,
        ))
    };
    run().unwrap_or_else(|e| export_error(&e))
}

/// How `scan` prints its findings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ScanFormat {
    /// One `PATH:LINE:COL: CODE MESSAGE` line per finding.
    Text,
    /// A SARIF 2.1.0 log.
    Sarif,
}

pub fn scan(ctx: &Ctx, paths: &[PathBuf], policy: Option<&Path>, format: ScanFormat) -> Report {
    if ctx.json && format == ScanFormat::Sarif {
        return Report::usage(
            codes::usage::INVALID_ARGUMENT,
            "--format sarif prints its own document; it cannot be combined with --json",
            None,
        );
    }
    let run = || -> Result<Report, ExportError> {
        let policy = match policy {
            Some(p) => Some(load_policy(p, &[], true)?),
            None => None,
        };
        let exp = Expectations {
            policy: policy.as_ref(),
            ..Default::default()
        };
        let out = coffer_export::gate::scan::scan_paths(paths, &exp)?;
        let issues = out.issues;
        let result = json!({
            "files": out.files,
            "stringsScanned": out.report.strings_scanned,
            "bytes": out.report.bytes,
            "findings": issues.len(),
        });
        if format == ScanFormat::Sarif {
            let log =
                serde_json::to_string_pretty(&crate::sarif::log(&issues)).expect("serializes");
            let mut r = Report::from_issues(issues, result, log);
            if r.status != Status::Accepted {
                r.status = Status::Failed;
            }
            r.listed = true;
            r.document = true;
            return Ok(r);
        }
        if issues.is_empty() {
            return Ok(Report::accepted(
                result,
                format!(
                    "{} file(s), {} strings: no findings",
                    out.files, out.report.strings_scanned
                ),
            ));
        }
        let mut result = result;
        result["locations"] = json!(issues
            .iter()
            .filter_map(|i| Some(json!({
                "file": i.file.as_ref()?,
                "pointer": i.pointer,
                "line": i.position?.line,
                "column": i.position?.column,
                "code": i.code,
            })))
            .collect::<Vec<_>>());
        let human: String = issues.iter().map(finding_line).collect();
        let mut r = Report::from_issues(issues, result, human);
        r.status = Status::Failed;
        r.listed = true;
        Ok(r)
    };
    run().unwrap_or_else(|e| export_error(&e))
}

/// One finding as rg and gitleaks print them: `path:line:col: code
/// message` (the message describes the match, never its value); a problem
/// without a position (an unreadable file) is `path: code message`.
fn finding_line(i: &Issue) -> String {
    let file = i.file.as_deref().unwrap_or("-");
    // Scan messages start with the issue's `file#pointer: ` for the
    // envelope; the line already says where.
    let message = i
        .location()
        .and_then(|l| i.message.strip_prefix(&format!("{l}: ")))
        .unwrap_or(&i.message);
    match i.position {
        Some(p) => format!("{file}:{}:{}: {} {message}\n", p.line, p.column, i.code),
        None => format!("{file}: {} {message}\n", i.code),
    }
}

pub fn pack(_ctx: &Ctx, dest: &Path, archive: &Path) -> Report {
    match coffer_export::publish::pack::pack(dest, archive) {
        Ok(o) => {
            let human = format!(
                "packed {} into {} ({} members, {} bytes)\n{}",
                dest.display(),
                o.archive,
                o.members,
                o.size_bytes,
                o.digest
            );
            Report::accepted(serde_json::to_value(&o).expect("serializes"), human)
        }
        Err(e) => export_error(&e),
    }
}

pub fn unpack(_ctx: &Ctx, archive: &Path, dest: &Path) -> Report {
    match coffer_export::publish::pack::unpack(archive, dest) {
        Ok(r) => {
            let human = format!(
                "unpacked {} into {}: verified {} artifact(s), 0 findings",
                archive.display(),
                dest.display(),
                r.artifacts
            );
            Report::accepted(serde_json::to_value(&r).expect("serializes"), human)
        }
        Err(e) => export_error(&e),
    }
}

/// `export ls`: the exports the catalog recorded, oldest first.
pub fn ls(ctx: &Ctx, source: Option<&str>) -> Report {
    let store = or_report!(open_store_for_reading(ctx));
    let rows = match coffer_evidence::exports::recorded_exports(store.catalog(), source) {
        Ok(rows) => rows,
        Err(e) => return Report::error(&e),
    };
    let mut human = String::new();
    for e in &rows {
        let when =
            std::time::UNIX_EPOCH + std::time::Duration::from_millis(e.created_ms.max(0) as u64);
        human.push_str(&format!(
            "{}  {:<7}  {}  {}  manifest {}  policy {}\n",
            humantime::format_rfc3339_seconds(when),
            e.row.sharing_class.as_str(),
            e.row.source_bundle_id,
            coffer_base::input::escaped(std::path::Path::new(&e.row.dest)),
            e.row.manifest_digest,
            e.row.policy_digest,
        ));
    }
    if rows.is_empty() {
        human.push_str("no exports recorded\n");
    }
    Report::accepted(json!({ "exports": rows }), human)
}
