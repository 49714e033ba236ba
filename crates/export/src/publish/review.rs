//! The redaction report: what an export replaced and removed, where, and
//! why, for a reviewer to sign off (`export create --report FILE`).
//!
//! The report is read from the export tree after the gate passed, never
//! from the source: every context window is text that already left, so a
//! value the scrubber replaced cannot be in it by construction. The
//! rendered report then goes through the same final scan as the tree
//! (`stage`), and is published with the tree or not at all.

mod gather;
mod html;
mod markdown;
pub mod residual;

use coffer_base::codes;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use coffer_base::digest::Digest;
use coffer_base::publish::NewFile;
use coffer_evidence::vocab::SharingClass;
use serde::Serialize;

use crate::error::{ExportError, Result};
use crate::gate::{Expectations, FinalScan, ReadbackReport};
use crate::publish::manifest::{Excluded, ExcludedRecord};

pub use gather::{gather, Gathered, ReviewedFile};

/// `schemaVersion` of the report's JSON form (`schemas/redaction-report.v1.json`).
pub const SCHEMA_VERSION: &str = "coffer.redaction-report/v1";
/// Replacements listed per class; beyond this they are only counted, so
/// the report stays readable and bounded whatever the export's size.
pub const MAX_LISTED_PER_CLASS: usize = 2_000;
/// Characters of exported text shown on each side of a placeholder.
pub const CONTEXT_CHARS: usize = 40;

/// What kind of thing a placeholder or pseudonym stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    /// A credential or sensitive value (`[REDACTED_SECRET:rule:fp]`).
    Secret,
    /// The identifying prefix of an absolute local path (`[LOCAL_PATH]`).
    LocalPath,
    /// A user's home directory (`[HOME]`).
    Home,
    /// A declared local root (`[WORKSPACE]`).
    Workspace,
    /// A host name (`[LOCAL_HOST]`).
    LocalHost,
    /// A local user name (`[LOCAL_USER:n]`).
    LocalUser,
    /// A rewritten identity (its pseudonym).
    Identity,
    /// A string cut at the policy's `maxStringBytes` (its marker,
    /// `crate::rewrite::cut`).
    Truncated,
}

impl Class {
    /// Every class, in report order.
    pub const ALL: [Class; 8] = [
        Class::Secret,
        Class::LocalPath,
        Class::Home,
        Class::Workspace,
        Class::LocalHost,
        Class::LocalUser,
        Class::Identity,
        Class::Truncated,
    ];

    /// The name used in every format.
    pub fn name(self) -> &'static str {
        match self {
            Class::Secret => "secret",
            Class::LocalPath => "local-path",
            Class::Home => "home",
            Class::Workspace => "workspace",
            Class::LocalHost => "local-host",
            Class::LocalUser => "local-user",
            Class::Identity => "identity",
            Class::Truncated => "truncated",
        }
    }

    /// The class and rule of a placeholder (`None` for other text).
    pub fn of_placeholder(p: &str) -> Option<(Class, String)> {
        match p {
            crate::rewrite::local_paths::LOCAL_PATH => {
                return Some((Class::LocalPath, "local-path".into()))
            }
            crate::rewrite::local_paths::HOME => {
                return Some((Class::Home, "home-directory".into()))
            }
            crate::rewrite::local_paths::WORKSPACE => {
                return Some((Class::Workspace, "local-root".into()))
            }
            crate::rewrite::local_paths::LOCAL_HOST => {
                return Some((Class::LocalHost, "host-name".into()))
            }
            _ => {}
        }
        if p.starts_with("[LOCAL_USER:") {
            return Some((Class::LocalUser, "user-name".into()));
        }
        let body = p.strip_prefix("[REDACTED_SECRET:")?.strip_suffix(']')?;
        let (rule, _) = body.rsplit_once(':')?;
        Some((Class::Secret, rule.to_string()))
    }
}

/// One replacement found in the exported tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Replacement {
    /// The exported file.
    pub file: String,
    /// The line (from 1) of a JSONL record or text line; none in a JSON document.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// JSON pointer inside the document or record ("" for text).
    pub pointer: String,
    /// What was replaced.
    pub class: Class,
    /// The rule that found a secret, or the kind of local name, or the
    /// identity's namespace.
    pub rule: String,
    /// What stands in the export instead.
    pub placeholder: String,
    /// Exported text before it (at most [`CONTEXT_CHARS`] characters, more
    /// only to keep a neighbouring placeholder whole).
    pub before: String,
    /// Exported text after it.
    pub after: String,
}

/// Replacements counted by class and rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tally {
    /// The class.
    pub class: Class,
    /// The rule or kind.
    pub rule: String,
    /// How many.
    pub count: u64,
}

/// What happened to one exported file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileSummary {
    /// The exported file.
    pub file: String,
    /// Replacements found in it.
    pub replacements: u64,
    /// Of those, how many per class.
    pub classes: BTreeMap<Class, u64>,
    /// The export manifest's transformation counts for it.
    pub transformations: BTreeMap<String, u64>,
    /// Fields removed from it (hidden reasoning, raw API bodies), by name.
    pub removed_fields: BTreeMap<String, u64>,
}

impl FileSummary {
    /// Its three count columns as both renderings show them: by class,
    /// transformations, and removed fields (`none` when none), each name
    /// passed through `name` (escaping or code-quoting it).
    pub fn count_cells(&self, name: impl Fn(&str) -> String) -> [String; 3] {
        fn joined<'k>(counts: impl Iterator<Item = (String, &'k u64)>) -> String {
            counts
                .map(|(k, n)| format!("{k} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
        let removed = joined(self.removed_fields.iter().map(|(k, n)| (name(k), n)));
        [
            joined(self.classes.iter().map(|(c, n)| (c.name().to_string(), n))),
            joined(self.transformations.iter().map(|(k, n)| (k.clone(), n))),
            if removed.is_empty() {
                "none".into()
            } else {
                removed
            },
        ]
    }
}

/// The readback's verdict on the tree the report describes.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    /// Always `passed`: a tree that fails gets no report, only the refusal.
    pub status: &'static str,
    /// What the reader checked.
    #[serde(flatten)]
    pub checked: ReadbackReport,
}

/// The redaction report.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RedactionReport {
    /// [`SCHEMA_VERSION`].
    pub schema_version: &'static str,
    /// The export's (rewritten) bundle id.
    pub bundle_id: coffer_evidence::ids::BundleId,
    /// The export's sharing class.
    pub sharing_class: SharingClass,
    /// The policy's digest.
    pub policy_digest: Digest,
    /// The export manifest's digest.
    pub manifest_digest: Digest,
    /// The source manifest's digest (as the export manifest carries it).
    pub source_manifest_digest: Digest,
    /// The readback verdict.
    pub readback: Verdict,
    /// Every replacement found.
    pub total: u64,
    /// How many of them are listed (at most [`MAX_LISTED_PER_CLASS`] per class).
    pub listed: u64,
    /// Counts per class and rule, most frequent first.
    pub rules: Vec<Tally>,
    /// Per exported file, in the export manifest's order.
    pub files: Vec<FileSummary>,
    /// The listed replacements: secrets first, then local names, then
    /// identities and cut strings, each class in reading order.
    pub replacements: Vec<Replacement>,
    /// What stayed that a reviewer should look at (never a replaced value).
    pub residual_risk: residual::ResidualRisk,
    /// Source artifacts left out, with the policy's reasons.
    pub excluded_artifacts: Vec<Excluded>,
    /// JSONL records left out under `--exclude-unverifiable`.
    pub excluded_records: Vec<ExcludedRecord>,
}

/// The report's file formats, chosen by the file name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One self-contained HTML page (`.html`, `.htm`).
    Html,
    /// GitHub-flavoured Markdown (`.md`, `.markdown`).
    Markdown,
    /// The JSON form (`.json`).
    Json,
}

impl Format {
    /// The format `path`'s extension names.
    pub fn of(path: &Path) -> Result<Format> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("html" | "htm") => Ok(Format::Html),
            Some("md" | "markdown") => Ok(Format::Markdown),
            Some("json") => Ok(Format::Json),
            _ => Err(ExportError::usage(
                codes::usage::REPORT_FORMAT,
                &path.display().to_string(),
                "the report's name decides its format: .html, .md or .json",
            )),
        }
    }
}

/// The report's sections of replacements, in order: a title, the
/// classes it lists, and the note shown when it is empty.
pub const SECTIONS: [(&str, &[Class], &str); 4] = [
    (
        "Secrets",
        &[Class::Secret],
        "No credential or sensitive value was replaced.",
    ),
    (
        "Local names",
        &[
            Class::LocalPath,
            Class::Home,
            Class::Workspace,
            Class::LocalHost,
            Class::LocalUser,
        ],
        "No local path, user or host was replaced.",
    ),
    (
        "Identities",
        &[Class::Identity],
        "No identity was rewritten.",
    ),
    ("Cut strings", &[Class::Truncated], "No string was cut."),
];

impl RedactionReport {
    /// The listed replacements of one section, with their numbers in the
    /// whole list (which is in section order).
    pub fn section<'r>(
        &'r self,
        classes: &'r [Class],
    ) -> impl Iterator<Item = (usize, &'r Replacement)> + 'r {
        self.replacements
            .iter()
            .enumerate()
            .filter(move |(_, x)| classes.contains(&x.class))
            .map(|(i, x)| (i + 1, x))
    }

    /// One row per exclusion, as both renderings show them: artifact,
    /// what was left out, why. `name` quotes identifiers and paths,
    /// `text` escapes prose (each rendering passes its own).
    pub fn exclusion_rows(
        &self,
        name: impl Fn(&str) -> String,
        text: impl Fn(&str) -> String,
    ) -> Vec<[String; 3]> {
        let artifacts = self.excluded_artifacts.iter().map(|e| {
            [
                name(&e.artifact_id),
                "whole artifact".to_string(),
                text(&e.reason),
            ]
        });
        let records = self.excluded_records.iter().map(|e| {
            [
                name(&e.artifact_id),
                format!(
                    "record at line {} of {}",
                    e.line + 1,
                    name(&e.relative_path)
                ),
                name(&e.code),
            ]
        });
        artifacts.chain(records).collect()
    }

    /// The report rendered in `format`.
    pub fn render(&self, format: Format) -> Vec<u8> {
        match format {
            Format::Html => html::render(self).into_bytes(),
            Format::Markdown => markdown::render(self).into_bytes(),
            Format::Json => {
                let mut v = serde_json::to_vec_pretty(self).expect("the report serializes");
                v.push(b'\n');
                v
            }
        }
    }
}

/// The context fields of a listed row: read joined, in this order.
const CONTEXT_FIELDS: [&str; 4] = ["before", "placeholder", "text", "after"];

fn scan_values(v: &serde_json::Value, scan: &mut FinalScan, name: &str, pointer: &mut String) {
    use serde_json::Value;
    match v {
        Value::String(s) => scan.string(s, name, pointer),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                let len = pointer.len();
                pointer.push_str(&format!("/{i}"));
                scan_values(x, scan, name, pointer);
                pointer.truncate(len);
            }
        }
        Value::Object(m) => {
            let row = m.contains_key("before") && m.contains_key("after");
            if row {
                let joined: String = CONTEXT_FIELDS
                    .iter()
                    .filter_map(|f| m.get(*f).and_then(Value::as_str))
                    .collect();
                scan.string(&joined, name, pointer);
            }
            for (k, x) in m {
                if row && CONTEXT_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                scan.string(k, name, pointer);
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&coffer_base::json::escape_pointer_token(k));
                scan_values(x, scan, name, pointer);
                pointer.truncate(len);
            }
        }
        _ => {}
    }
}

/// Checks, before any work, that a report can go to `path` beside an
/// export at `dest`: a known format, not inside the export tree, and
/// nothing there yet.
pub fn preflight(path: &Path, dest: &Path) -> Result<Format> {
    let format = Format::of(path)?;
    // Compared as the filesystem resolves them: through a symlink or `..`
    // (`link/up/DEST/r.html`), the report would otherwise create DEST
    // before the tree could take it.
    if resolved(path)?.starts_with(resolved(dest)?) {
        return Err(ExportError::usage(
            codes::usage::REPORT_INSIDE_EXPORT,
            &path.display().to_string(),
            "the report cannot go inside the export tree (it would be an unlisted file)",
        ));
    }
    if std::fs::symlink_metadata(path).is_ok() {
        return Err(ExportError::Store(
            coffer_store::StoreError::DestinationExists {
                path: path.to_path_buf(),
            },
        ));
    }
    Ok(format)
}

/// Where `p` is or would be: its longest existing ancestor with every
/// symlink and `..` resolved, then the components that do not exist yet
/// (a `..` among them drops the one before it, as nothing there can be a
/// symlink).
fn resolved(p: &Path) -> Result<PathBuf> {
    let absolute = std::path::absolute(p).map_err(|e| ExportError::io(p, "resolve", e))?;
    let mut existing = absolute.as_path();
    let mut out = loop {
        match (std::fs::canonicalize(existing), existing.parent()) {
            (Ok(base), _) => break base,
            (Err(_), Some(parent)) => existing = parent,
            (Err(_), None) => break existing.to_path_buf(),
        }
    };
    let tail = absolute.strip_prefix(existing).unwrap_or(Path::new(""));
    for c in tail.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    Ok(out)
}

/// Renders the report, runs the final scan over what it says, and writes
/// it to a temp file beside `path`, to be published with the tree.
///
/// The scan reads the report's values, not its rendered lines: every
/// string, except that a listed row's context is read as the one text it
/// was cut from (before, the placeholder or item, after). Read apart, a
/// path's tail after `[HOME]` would stand alone as an absolute path that
/// the tree does not hold. The renderings add only fixed text and escape
/// every value (`html::esc`, `markdown::code`).
pub fn stage(
    report: &RedactionReport,
    format: Format,
    path: &Path,
    exp: &Expectations<'_>,
) -> Result<NewFile> {
    let bytes = report.render(format);
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into(),
    );
    let mut scan = FinalScan::new(exp)?;
    let value = serde_json::to_value(report).expect("the report serializes");
    scan_values(&value, &mut scan, &name, &mut String::new());
    if !scan.findings.is_empty() {
        return Err(ExportError::Invalid(scan.findings));
    }
    Ok(NewFile::write(path, 0o644, |f| {
        use std::io::Write;
        f.write_all(&bytes)
            .map_err(|e| coffer_store::StoreError::io(path, "write", e))
    })?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_name_their_class_and_rule() {
        assert_eq!(
            Class::of_placeholder("[REDACTED_SECRET:github-pat:0a1b2c3d]"),
            Some((Class::Secret, "github-pat".into()))
        );
        assert_eq!(
            Class::of_placeholder("[LOCAL_USER:3]"),
            Some((Class::LocalUser, "user-name".into()))
        );
        assert_eq!(
            Class::of_placeholder("[WORKSPACE]").map(|c| c.0),
            Some(Class::Workspace)
        );
        assert_eq!(Class::of_placeholder("[SOMETHING]"), None);
    }

    #[test]
    fn the_name_decides_the_format() {
        assert_eq!(Format::of(Path::new("r.HTML")).unwrap(), Format::Html);
        assert_eq!(Format::of(Path::new("a/r.md")).unwrap(), Format::Markdown);
        assert_eq!(Format::of(Path::new("r.json")).unwrap(), Format::Json);
        let e = Format::of(Path::new("r.txt")).unwrap_err();
        assert_eq!(e.code(), "usage.report_format");
    }

    fn report_with(before: &str) -> RedactionReport {
        RedactionReport {
            schema_version: SCHEMA_VERSION,
            bundle_id: "bundle-x".into(),
            sharing_class: SharingClass::Partner,
            policy_digest: Digest::of(b"p"),
            manifest_digest: Digest::of(b"m"),
            source_manifest_digest: Digest::of(b"s"),
            readback: Verdict {
                status: "passed",
                checked: ReadbackReport::default(),
            },
            total: 1,
            listed: 1,
            rules: vec![],
            files: vec![],
            replacements: vec![Replacement {
                file: "session.jsonl".into(),
                line: Some(1),
                pointer: "/text".into(),
                class: Class::LocalPath,
                rule: "local-path".into(),
                placeholder: "[LOCAL_PATH]".into(),
                before: before.into(),
                after: String::new(),
            }],
            excluded_artifacts: vec![],
            excluded_records: vec![],
            residual_risk: residual::ResidualRisk::default(),
        }
    }

    #[test]
    fn the_final_scan_runs_on_the_rendered_report() {
        let t = tempfile::tempdir().unwrap();
        let exp = Expectations::default();
        for format in [Format::Html, Format::Markdown, Format::Json] {
            let path = t.path().join("r");
            let ok = report_with("see ");
            let mut staged = stage(&ok, format, &path, &exp).unwrap();
            assert!(!path.exists(), "staged, not yet published");
            staged.publish().unwrap();
            assert!(path.exists());
            staged.retract().unwrap();
            assert!(!path.exists(), "a retracted report is gone");

            let leaked = report_with("token ghp_Q7qSyY3v6ysjB6f2RsDLHZg8RakGnRAxPcTM ");
            let e = stage(&leaked, format, &path, &exp).err().unwrap();
            assert_eq!(e.code(), "validation.secret_in_export", "{format:?}");
            assert_eq!(
                std::fs::read_dir(t.path()).unwrap().count(),
                0,
                "no temp left"
            );
        }
    }

    #[test]
    fn a_report_inside_the_export_or_over_a_file_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let dest = t.path().join("out");
        let e = preflight(&dest.join("r.html"), &dest).unwrap_err();
        assert_eq!(e.code(), "usage.report_inside_export");
        std::fs::write(t.path().join("r.md"), b"mine").unwrap();
        let e = preflight(&t.path().join("r.md"), &dest).unwrap_err();
        assert_eq!(e.code(), "conflict.destination_exists");
        assert_eq!(std::fs::read(t.path().join("r.md")).unwrap(), b"mine");
        assert_eq!(
            preflight(&t.path().join("r.html"), &dest).unwrap(),
            Format::Html
        );
    }
}
