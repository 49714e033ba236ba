//! Every session event of stored runs, one at a time, with the run it
//! belongs to (`coffer events`): for analysis in DuckDB or pandas without
//! a loop of `bundle cat`. Memory stays flat: bundles are read one after
//! another and each session line by line (bounded as at ingest).

use std::io::{BufRead, BufReader, Read};

use coffer_base::json::{self, JsonlLimits};
use coffer_store::Store;
use serde::Serialize;
use serde_json::Value;

use super::query::Run;
use super::records::bundle_artifacts;
use crate::error::Result;
use crate::vocab::Kind;

/// One event with its run's columns.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventLine<'r> {
    /// The run's bundle.
    pub bundle_id: &'r str,
    /// The run's labels.
    pub labels: &'r std::collections::BTreeMap<String, String>,
    /// `provider/model`.
    pub model: String,
    /// The run's task.
    pub task: &'r str,
    /// How the run ended.
    pub terminal: &'static str,
    /// The verifier's status (`passed`, `failed`, `error`, `not-run`), or
    /// `none` for a run without a verifier result.
    pub verifier: &'static str,
    /// The event's line in the session (from 1).
    pub line: u64,
    /// Its `type` (`""` when it has none).
    #[serde(rename = "type")]
    pub kind: String,
    /// The tool it names, when it names one.
    pub tool: Option<String>,
    /// Its time, when it carries one.
    pub time: Option<String>,
    /// The event itself.
    pub event: Value,
}

/// The members that name an event's tool, in the order they are tried.
pub const TOOL_KEYS: [&str; 4] = ["tool", "toolName", "tool_name", "name"];
/// The members that carry an event's time, in the order they are tried.
pub const TIME_KEYS: [&str; 4] = ["time", "timestamp", "ts", "createdAt"];

/// The first of `keys` that `v` holds as a string or a number, as text.
pub fn member(v: &Value, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| match v.get(*k) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    })
}

/// Calls `each` with every session event of `row`, in order; stops when
/// it returns `false`. A run without a session has none.
pub fn each_event(
    store: &Store,
    run: &Run,
    each: &mut dyn FnMut(&EventLine<'_>) -> Result<bool>,
) -> Result<()> {
    let row = &run.row;
    let artifacts = bundle_artifacts(store.catalog(), &row.bundle_id)?;
    let Some(session) = artifacts.iter().find(|a| a.kind == Kind::Session) else {
        return Ok(());
    };
    let limits = JsonlLimits::EVIDENCE.line;
    let mut r = BufReader::with_capacity(1 << 20, store.open_object(&session.digest)?);
    let mut buf = Vec::new();
    let mut line = 0u64;
    loop {
        buf.clear();
        let n = (&mut r)
            .take(limits.max_bytes as u64 + 2)
            .read_until(b'\n', &mut buf)
            .map_err(|e| coffer_store::StoreError::read(&session.relative_path, e))?;
        if n == 0 {
            return Ok(());
        }
        line += 1;
        let content = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let content = content.strip_suffix(b"\r").unwrap_or(content);
        // Stored sessions passed the JSONL check at ingest; a line that
        // does not parse here (over a bound) is carried as text.
        let event = json::parse(content, &limits)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(content).into_owned()));
        let e = EventLine {
            bundle_id: &row.bundle_id,
            labels: &run.labels,
            model: format!("{}/{}", row.model_provider, row.model_id),
            task: &row.task_id,
            terminal: row.terminal_state.as_str(),
            verifier: run.facts.verifier.as_str(),
            line,
            kind: member(&event, &["type"]).unwrap_or_default(),
            tool: member(&event, &TOOL_KEYS),
            time: member(&event, &TIME_KEYS),
            event,
        };
        if !each(&e)? {
            return Ok(());
        }
    }
}

/// Whether `text` matches `pattern`: `*` any run, `?` one character,
/// anything else itself (as `bundle ls` globs read them, without classes).
pub fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::glob;

    #[test]
    fn globs_match_runs_and_single_characters() {
        assert!(glob("tool.*", "tool.call") && glob("tool.*", "tool."));
        assert!(glob("*error*", "agent.error.retry"));
        assert!(glob("t??l.call", "tool.call") && !glob("t?l.call", "tool.call"));
        assert!(glob("*", "") && glob("", "") && !glob("", "x"));
        assert!(!glob("tool.*", "assistant.message"));
        assert!(glob("a*b*c", "aXXbYYc") && !glob("a*b*c", "aXXbYY"));
    }
}
