//! Queries across runs: `events`, `bundle stats`, `grep`.

use std::io::Write as _;

use coffer_evidence::bundle::stats::{self, GroupBy};
use serde_json::json;

use super::bundles::{selected, RunFilters};
use super::open_store_for_reading;
use crate::report::or_report;
use crate::report::{Issue, Report};
use crate::Ctx;

/// `events`: which runs, which events, and how to print them.
#[derive(Debug, clap::Args)]
pub struct EventsArgs {
    #[command(flatten)]
    runs: RunFilters,
    /// Only events whose type matches this glob (`*`, `?`).
    #[arg(long = "type", value_name = "GLOB")]
    kind: Option<String>,
    /// One JSON object per event (with the event itself), or CSV (RFC
    /// 4180, with a header; the event's columns only).
    #[arg(long, value_enum, default_value_t = EventsFormat::Jsonl)]
    format: EventsFormat,
}

/// How `events` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EventsFormat {
    /// One JSON object per event, per line.
    Jsonl,
    /// Comma-separated values with a header.
    Csv,
}

/// The CSV columns of `events`.
const EVENT_COLUMNS: [&str; 9] = [
    "bundleId", "model", "task", "terminal", "verifier", "line", "type", "tool", "time",
];

/// `events`: streamed to stdout as it is read (memory stays flat); with
/// `--json`, inside the envelope's `result.events`.
pub fn events(ctx: &Ctx, args: &EventsArgs) -> Report {
    use coffer_evidence::bundle::stream::{each_event, glob};
    let store = or_report!(open_store_for_reading(ctx));
    let rows = or_report!(selected(&store, &args.runs));
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let io = |e: std::io::Error| coffer_store::StoreError::io("<stdout>", "write", e);
    let mut count = 0u64;
    let written = (|| -> Result<(), coffer_evidence::EvidenceError> {
        if ctx.json {
            crate::report::open_streamed_json("events", &mut out)
                .and_then(|()| write!(out, "{{\"events\":["))
                .map_err(io)?;
        } else if args.format == EventsFormat::Csv && !ctx.quiet {
            write!(out, "{}", crate::table::csv(&EVENT_COLUMNS, &[])).map_err(io)?;
        }
        for run in &rows {
            each_event(&store, run, &mut |e| {
                if args.kind.as_deref().is_some_and(|g| !glob(g, &e.kind)) {
                    return Ok(true);
                }
                count += 1;
                if ctx.json {
                    let sep = if count == 1 { "" } else { "," };
                    let j = serde_json::to_string(e).expect("an event serializes");
                    write!(out, "{sep}{j}").map_err(io)?;
                } else if ctx.quiet {
                } else if args.format == EventsFormat::Jsonl {
                    let j = serde_json::to_string(e).expect("an event serializes");
                    writeln!(out, "{j}").map_err(io)?;
                } else {
                    let line = e.line.to_string();
                    let cells = [
                        e.bundle_id,
                        &e.model,
                        e.task,
                        e.terminal,
                        e.verifier,
                        &line,
                        &e.kind,
                        e.tool.as_deref().unwrap_or(""),
                        e.time.as_deref().unwrap_or(""),
                    ];
                    let cells: Vec<String> =
                        cells.iter().map(|c| crate::table::csv_field(c)).collect();
                    writeln!(out, "{}", cells.join(",")).map_err(io)?;
                }
                Ok(true)
            })?;
        }
        if ctx.json {
            write!(out, "]}}").map_err(io)?;
        }
        out.flush().map_err(io)?;
        Ok(())
    })();
    let failure = written.err().map(|e| {
        let pipe = e.store().is_some_and(crate::report::is_broken_pipe);
        (Issue::from(&e), pipe)
    });
    crate::report::streamed_report(failure, if ctx.json { "]}" } else { "" }, &mut out)
}

/// `bundle stats`: which runs, grouped how, printed how.
#[derive(Debug, clap::Args)]
pub struct StatsArgs {
    #[command(flatten)]
    runs: RunFilters,
    /// Group by `model`, `task`, `harness` or `label:KEY`; repeat to group
    /// by several at once (`--by model --by label:experiment`).
    #[arg(long, value_name = "GROUPING", required = true, value_parser = parse_group)]
    by: Vec<GroupBy>,
    /// Output without --json: an aligned table, one JSON object per line,
    /// or CSV (RFC 4180, with a header).
    #[arg(long, value_enum, default_value_t = super::bundles::LsFormat::Table)]
    format: super::bundles::LsFormat,
}

fn parse_group(arg: &str) -> Result<GroupBy, String> {
    GroupBy::parse(arg)
        .ok_or_else(|| format!("{arg:?}: group by model, task, harness or label:KEY"))
}

/// `bundle stats`.
pub fn stats(ctx: &Ctx, args: &StatsArgs) -> Report {
    use super::bundles::LsFormat;
    let store = or_report!(open_store_for_reading(ctx));
    let runs = or_report!(selected(&store, &args.runs));
    let groups = stats::groups(&runs, &args.by);
    let names: Vec<String> = args.by.iter().map(GroupBy::name).collect();
    let objects: Vec<serde_json::Value> = groups.iter().map(|g| group_json(&names, g)).collect();
    let human = match args.format {
        LsFormat::Jsonl => objects.iter().map(|o| o.to_string() + "\n").collect(),
        LsFormat::Csv => {
            let header: Vec<&str> = names
                .iter()
                .map(String::as_str)
                .chain(stats::FIGURES)
                .collect();
            let rows: Vec<Vec<String>> = groups.iter().map(stats_csv).collect();
            crate::table::csv(&header, &rows)
        }
        LsFormat::Table => {
            let header: Vec<&str> = names
                .iter()
                .map(String::as_str)
                .chain(STATS_TABLE)
                .collect();
            let rows: Vec<Vec<String>> = groups.iter().map(stats_table).collect();
            crate::table::aligned(&header, &rows)
        }
    };
    Report::accepted(json!({ "by": names, "groups": objects }), human)
}

/// A group as JSON: its key as one member per grouping (null for a run
/// without that label), then its figures.
fn group_json(names: &[String], g: &stats::Group) -> serde_json::Value {
    let mut v = serde_json::to_value(g).expect("a group serializes");
    let o = v.as_object_mut().expect("an object");
    o.shift_remove("key");
    let mut keyed = serde_json::Map::new();
    for (n, k) in names.iter().zip(&g.key) {
        keyed.insert(n.clone(), json!(k));
    }
    keyed.append(o);
    serde_json::Value::Object(keyed)
}

/// The table's figures: the interval in one column, rates in percent.
const STATS_TABLE: [&str; 8] = [
    "runs",
    "passed",
    "failed",
    "other",
    "pass",
    "95% ci",
    "median ms",
    "median events",
];

fn stats_csv(g: &stats::Group) -> Vec<String> {
    let num = |x: Option<f64>| x.map_or(String::new(), |x| x.to_string());
    let mut cells: Vec<String> = g
        .key
        .iter()
        .map(|k| k.clone().unwrap_or_default())
        .collect();
    cells.extend([
        g.runs.to_string(),
        g.passed.to_string(),
        g.failed.to_string(),
        g.other.to_string(),
        format!("{:.4}", g.pass_rate),
        format!("{:.4}", g.pass_rate_low),
        format!("{:.4}", g.pass_rate_high),
        num(g.median_duration_ms),
        num(g.median_events),
    ]);
    cells
}

fn stats_table(g: &stats::Group) -> Vec<String> {
    let pct = |x: f64| format!("{:.1}", x * 100.0);
    let num = |x: Option<f64>| x.map_or("-".to_string(), |x| x.to_string());
    let mut cells: Vec<String> = g
        .key
        .iter()
        .map(|k| k.clone().unwrap_or_else(|| "-".into()))
        .collect();
    cells.extend([
        g.runs.to_string(),
        g.passed.to_string(),
        g.failed.to_string(),
        g.other.to_string(),
        format!("{}%", pct(g.pass_rate)),
        format!("{}–{}%", pct(g.pass_rate_low), pct(g.pass_rate_high)),
        num(g.median_duration_ms),
        num(g.median_events),
    ]);
    cells
}

/// `grep`: what to look for, in which runs and which evidence.
#[derive(Debug, clap::Args)]
pub struct GrepArgs {
    /// A regular expression (Rust syntax; `\w`, `\d`, `\s` and `-i` are ASCII).
    pattern: String,
    #[command(flatten)]
    runs: RunFilters,
    /// Which evidence: `session`, `patch` or `artifacts` (every artifact,
    /// the default); repeat for several.
    #[arg(long = "in", value_enum, value_name = "WHAT")]
    scopes: Vec<GrepScope>,
    /// Match upper and lower case alike (ASCII).
    #[arg(short = 'i', long)]
    ignore_case: bool,
}

/// `--in` of `grep`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GrepScope {
    /// The session.
    Session,
    /// The workspace patch.
    Patch,
    /// Every artifact.
    Artifacts,
}

/// `grep`: hits stream to stdout as `BUNDLE:PATH:LINE: text` (with
/// `--json`, inside the envelope as `result.matches`, then
/// `result.searched`), each only after its object is verified.
pub fn grep(ctx: &Ctx, args: &GrepArgs) -> Report {
    use coffer_evidence::bundle::grep::{self, Scope, Searched};
    let re = match grep::pattern(&args.pattern, args.ignore_case) {
        Ok(re) => re,
        Err(e) => {
            return Report::usage(
                coffer_base::codes::usage::INVALID_ARGUMENT,
                format!("{:?} is not a regular expression: {e}", args.pattern),
                Some(args.pattern.clone()),
            )
        }
    };
    let scopes: Vec<Scope> = match args.scopes.as_slice() {
        [] => vec![Scope::Artifacts],
        s => s
            .iter()
            .map(|s| match s {
                GrepScope::Session => Scope::Session,
                GrepScope::Patch => Scope::Patch,
                GrepScope::Artifacts => Scope::Artifacts,
            })
            .collect(),
    };
    let store = or_report!(open_store_for_reading(ctx));
    let runs = or_report!(selected(&store, &args.runs));
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let io = |e: std::io::Error| coffer_store::StoreError::io("<stdout>", "write", e);
    let mut searched = Searched::default();
    let written = (|| -> Result<(), coffer_evidence::EvidenceError> {
        if ctx.json {
            crate::report::open_streamed_json("grep", &mut out)
                .and_then(|()| write!(out, "{{\"matches\":["))
                .map_err(io)?;
        }
        let mut first = true;
        for run in &runs {
            let go_on = grep::search(&store, run, &scopes, &re, &mut searched, &mut |h| {
                if ctx.json {
                    let sep = if first { "" } else { "," };
                    write!(out, "{sep}{}", json!(h)).map_err(io)?;
                } else if !ctx.quiet {
                    let line = format!("{}:{}:{}: {}", h.bundle_id, h.path, h.line, h.text);
                    writeln!(out, "{}", crate::report::terminal_safe(&line)).map_err(io)?;
                }
                first = false;
                Ok(true)
            })?;
            if !go_on {
                break;
            }
        }
        Ok(())
    })();
    let closing = match ctx.json {
        true => format!("],\"searched\":{}}}", json!(searched)),
        false => String::new(),
    };
    let done = written.and_then(|()| {
        write!(out, "{closing}")
            .and_then(|()| out.flush())
            .map_err(|e| io(e).into())
    });
    let failure = done.err().map(|e| {
        let pipe = e.store().is_some_and(crate::report::is_broken_pipe);
        (Issue::from(&e), pipe)
    });
    crate::report::streamed_report(failure, &closing, &mut out)
}
