//! The one shape every command returns, and its two renderings: the
//! `coffer.result/v1` JSON envelope and human text.
//!
//! Status and exit code follow docs/CLI.md: 0 accepted, 1 failed,
//! 2 usage, 3 blocked, 4 incomplete. The status of a failure follows from the
//! class of its first issue code (`policy`/`conflict` refuse: blocked;
//! `usage`: exit 2; anything else: failed).

use std::borrow::Cow;
use std::io::Write;
use std::process::ExitCode;

use serde_json::{json, Value};

/// How a command ended, ordered from best to worst (so the worst of
/// several is their `max`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    /// Did what was asked.
    Accepted,
    /// Did it, with stated gaps.
    Incomplete,
    /// Refused by policy or contract; nothing written.
    Blocked,
    /// An error; nothing half-written.
    Failed,
    /// The command line was wrong; nothing done.
    Usage,
}

impl Status {
    fn name(self) -> &'static str {
        match self {
            Status::Accepted => "accepted",
            Status::Incomplete => "incomplete",
            Status::Blocked => "blocked",
            Status::Failed | Status::Usage => "failed",
        }
    }

    /// The process exit code of this status.
    pub fn exit_code(self) -> u8 {
        match self {
            Status::Accepted => 0,
            Status::Failed => 1,
            Status::Usage => 2,
            Status::Blocked => 3,
            Status::Incomplete => 4,
        }
    }

    /// The status an error with this code ends a command in.
    pub fn for_code(code: &str) -> Status {
        match code.split('.').next() {
            Some("usage") => Status::Usage,
            Some("policy") | Some("conflict") => Status::Blocked,
            _ => Status::Failed,
        }
    }
}

pub use coffer_base::issue::Issue;

/// A finished command: what to print and how to exit.
#[derive(Debug)]
pub struct Report {
    /// Command name as typed (`"put"`, `"bundle ingest"`).
    pub command: String,
    /// Outcome.
    pub status: Status,
    /// Problems found.
    pub issues: Vec<Issue>,
    /// Machine result.
    pub result: Value,
    /// Human text for stdout (without the issues, which go to stderr).
    pub human: String,
    /// The human text already lists the issues (`scan` prints findings on
    /// stdout, as rg and gitleaks do): stderr gets only a count.
    pub listed: bool,
    /// The human text is a document the user asked for (a SARIF log):
    /// printed even under `-q`.
    pub document: bool,
    /// The result was already streamed to stdout (`ls`): under `--json`
    /// only the envelope's closing (status and issues) is left to print.
    pub streamed: bool,
}

impl Report {
    /// A report with this status. The command name is filled in by
    /// `main`, which knows what was typed.
    pub fn new(status: Status, issues: Vec<Issue>, result: Value, human: String) -> Self {
        Report {
            command: String::new(),
            status,
            issues,
            result,
            human,
            listed: false,
            document: false,
            streamed: false,
        }
    }

    /// A successful report.
    pub fn accepted(result: Value, human: String) -> Self {
        Report::new(Status::Accepted, Vec::new(), result, human)
    }

    /// A usage error (exit 2): the command line was wrong, nothing was done.
    pub fn usage(code: &'static str, message: impl Into<String>, path: Option<String>) -> Self {
        Report::from_issues(
            vec![Issue::about(code, path, message)],
            Value::Null,
            String::new(),
        )
    }

    /// A report for a command that stopped on an error (a store's, the
    /// evidence domain's: anything that is a coded issue).
    pub fn error(e: impl Into<Issue>) -> Self {
        Report::from_issues(vec![e.into()], Value::Null, String::new())
    }

    /// A report whose status follows from its issues (accepted if none).
    pub fn from_issues(issues: Vec<Issue>, result: Value, human: String) -> Self {
        let status = issues
            .first()
            .map(|i| Status::for_code(i.code))
            .unwrap_or(Status::Accepted);
        Report::new(status, issues, result, human)
    }

    /// The exit status: the status's (docs/CLI.md), or 130 when the
    /// command was interrupted.
    pub fn exit_code(&self) -> u8 {
        let interrupted = self
            .issues
            .iter()
            .any(|i| i.code == coffer_base::codes::io::INTERRUPTED);
        match interrupted {
            true => crate::interrupt::EXIT,
            false => self.status.exit_code(),
        }
    }

    /// Prints the report and returns the exit code.
    pub fn emit(self, json_out: bool, quiet: bool) -> ExitCode {
        let code = self.exit_code();
        if json_out && self.streamed {
            let mut out = std::io::stdout().lock();
            let issues: Vec<Value> = self.issues.iter().map(envelope_issue).collect();
            let _ = write!(
                out,
                ",\"status\":{},\"issues\":{}}}",
                json!(self.status.name()),
                Value::Array(issues)
            );
            let _ = writeln!(out);
        } else if json_out {
            let env = json!({
                "schemaVersion": "coffer.result/v1",
                "command": self.command,
                "status": self.status.name(),
                "issues": self.issues.iter().map(envelope_issue).collect::<Vec<_>>(),
                "result": self.result,
            });
            let mut out = std::io::stdout().lock();
            let _ = serde_json::to_writer(&mut out, &env);
            let _ = writeln!(out);
        } else {
            if (!quiet || self.document) && !self.streamed && !self.human.is_empty() {
                let mut out = std::io::stdout().lock();
                // A document (a SARIF log) is JSON: its strings are escaped.
                let text = match self.document {
                    true => Cow::Borrowed(self.human.as_str()),
                    false => terminal_safe(&self.human),
                };
                let _ = out.write_all(text.as_bytes());
                if !self.human.ends_with('\n') {
                    let _ = writeln!(out);
                }
            }
            let mut err = std::io::stderr().lock();
            let label = match self.status {
                Status::Accepted | Status::Incomplete => "warning",
                _ => "error",
            };
            if self.listed && !quiet && !self.issues.is_empty() {
                let _ = writeln!(err, "{label}: {} finding(s)", self.issues.len());
                return ExitCode::from(code);
            }
            for i in &self.issues {
                let at = place_shown(i);
                let _ = writeln!(
                    err,
                    "{label}[{}]: {}{}",
                    i.code,
                    terminal_safe(&at),
                    terminal_safe(&i.message)
                );
            }
        }
        ExitCode::from(code)
    }
}

/// Where an issue happened, for its human form, when its message does
/// not already say: `FILE:LINE:COL: ` or `FILE#POINTER: ` (`--json` has
/// both in `path`). A message that names its file keeps just that.
fn place_shown(i: &Issue) -> String {
    let Some(file) = i.file.as_deref().filter(|f| !f.is_empty()) else {
        return String::new();
    };
    let pointer = i.pointer.as_deref().filter(|p| !p.is_empty());
    if i.message.contains(file) {
        return String::new();
    }
    match (i.position, pointer) {
        (Some(p), _) => format!("{file}:{}:{}: ", p.line, p.column),
        (None, Some(ptr)) if !i.message.contains(ptr) => format!("{file}#{ptr}: "),
        _ => format!("{file}: "),
    }
}

/// `text` as a terminal may show it: control characters other than newline
/// and tab (ESC, BEL, C1 controls, DEL) and the bidirectional overrides
/// that reorder what is shown are written as escapes (`\x1B`, `\u{202E}`),
/// so an id or a file name from a bundle cannot move the cursor, ring,
/// retitle the terminal or disguise the text around it.
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
    };
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if unsafe_char(c) && (c as u32) < 0x80 => {
                out.push_str(&format!("\\x{:02X}", c as u32))
            }
            c if unsafe_char(c) => out.push_str(&format!("\\u{{{:X}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Whether `e` is a write to a reader that went away (`coffer ls | head`):
/// such a command ends quietly, as `cat` does.
pub fn is_broken_pipe(e: &coffer_store::StoreError) -> bool {
    matches!(e, coffer_store::StoreError::Io { source, .. }
        if source.kind() == std::io::ErrorKind::BrokenPipe)
}

/// Opens a `--json` envelope whose `result` the command streams itself:
/// `result` comes before `status` and `issues` (JSON objects are
/// unordered), so a failure half-way still closes a valid envelope with
/// the right status. [`Report::emit`] of a `streamed` report closes it.
pub fn open_streamed_json(command: &str, out: &mut impl Write) -> std::io::Result<()> {
    write!(
        out,
        "{{\"schemaVersion\":\"coffer.result/v1\",\"command\":{},\"result\":",
        json!(command)
    )
}

/// The report of a command that streamed its result: accepted when the
/// stream ended, or when its reader left early (`broken_pipe`: as for
/// `cat`); else the error, after `closing` is written (and flushed) so a
/// `--json` envelope's open result still closes.
pub fn streamed_report(
    failure: Option<(Issue, bool)>,
    closing: &str,
    out: &mut impl Write,
) -> Report {
    let mut r = match failure {
        None | Some((_, true)) => Report::accepted(Value::Null, String::new()),
        Some((issue, false)) => {
            let _ = write!(out, "{closing}").and_then(|()| out.flush());
            Report::error(issue)
        }
    };
    r.streamed = true;
    r
}

/// An issue as the envelope shows it: code, message, and one `path`
/// (`file#pointer`, a file, a path, a key or a digest) when there is one.
fn envelope_issue(i: &Issue) -> Value {
    let mut v = json!({"code": i.code, "message": i.message});
    if let Some(path) = i.location() {
        v["path"] = json!(path);
    }
    v
}

/// `expr?` for command bodies that return a [`Report`]: a store error
/// becomes the command's error report.
macro_rules! or_report {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => return $crate::report::Report::error(&e),
        }
    };
}
pub(crate) use or_report;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_follows_the_class_of_the_first_issue() {
        assert_eq!(
            Status::for_code("conflict.destination_exists"),
            Status::Blocked
        );
        assert_eq!(
            Status::for_code("policy.unknown_sharing_class"),
            Status::Blocked
        );
        assert_eq!(Status::for_code("usage.invalid_digest"), Status::Usage);
        assert_eq!(
            Status::for_code("integrity.digest_mismatch"),
            Status::Failed
        );
        assert_eq!(Status::for_code("io.no_space"), Status::Failed);
    }

    #[test]
    fn every_code_exits_as_docs_cli_md_says_for_its_class() {
        for code in coffer_base::codes::ALL {
            let want = match code.split('.').next().unwrap() {
                _ if *code == coffer_base::codes::io::INTERRUPTED => 130,
                "usage" => 2,
                "policy" | "conflict" => 3,
                "validation" | "integrity" | "limit" | "io" => 1,
                other => panic!("{code}: class {other} is not in docs/CLI.md"),
            };
            let r = Report::from_issues(
                vec![Issue::about(code, None, "x")],
                Value::Null,
                String::new(),
            );
            assert_eq!(r.exit_code(), want, "{code}");
        }
    }

    #[test]
    fn exit_codes_match_the_cli_contract() {
        let codes: Vec<u8> = [
            Status::Accepted,
            Status::Failed,
            Status::Usage,
            Status::Blocked,
            Status::Incomplete,
        ]
        .iter()
        .map(|s| s.exit_code())
        .collect();
        assert_eq!(codes, vec![0, 1, 2, 3, 4]);
    }
}
