//! `scan --format sarif`: findings as a SARIF 2.1.0 log, for code-scanning
//! tools. One run, one rule per detector found (`aws-access-key-id`, as
//! gitleaks names its rules; the issue code where no detector stands
//! behind a finding), one result per finding with a `partialFingerprints`
//! entry that code-scanning tools track it by; like every other output of
//! `scan`, it names rules and places, never a matched value.

use coffer_base::codes;
use std::collections::BTreeMap;
use std::path::Path;

use coffer_base::digest::Hasher;
use coffer_base::issue::Issue;
use serde_json::{json, Value};

/// Where the SARIF 2.1.0 schema is published (the log's `$schema`).
const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// What each code means, for the rule's short description.
fn describe(code: &str) -> &'static str {
    match code {
        codes::validation::SECRET_IN_EXPORT => "A credential found by a detection rule",
        codes::validation::SENSITIVE_VALUE_IN_EXPORT => "A sensitive value named by the policy",
        codes::validation::IDENTITY_IN_EXPORT => {
            "An original identity that should have been rewritten"
        }
        codes::validation::LOCAL_USER_IN_EXPORT => "A local user name",
        codes::validation::LOCAL_PATH_IN_EXPORT => "An absolute local path",
        codes::validation::PLACEHOLDER_UNKNOWN => "A placeholder this export did not issue",
        codes::validation::FORBIDDEN_FIELD => "Hidden reasoning or a raw API body",
        codes::validation::SECRET_FIELD_IN_EXPORT => "A secret-named field that keeps a value",
        codes::validation::HIDDEN_REASONING => "A thinking record that keeps its content",
        _ => "A file that could not be scanned",
    }
}

/// What to do about a finding of `code` (a rule's `help`).
fn help(code: &str) -> &'static str {
    match code {
        codes::validation::SECRET_IN_EXPORT
        | codes::validation::SENSITIVE_VALUE_IN_EXPORT
        | codes::validation::SECRET_FIELD_IN_EXPORT => {
            "Rotate the credential if it is real. Files shared with partners or the public should \
             go through `coffer export create`, which replaces it with a placeholder and reads \
             the tree back before publishing it."
        }
        codes::validation::IDENTITY_IN_EXPORT => {
            "Export through `coffer export create`, which rewrites every identity with a keyed \
             pseudonym of the same shape."
        }
        codes::validation::LOCAL_USER_IN_EXPORT | codes::validation::LOCAL_PATH_IN_EXPORT => {
            "Export through `coffer export create`, which replaces user names and the identifying \
             prefix of local paths, keeping the rest of a path readable."
        }
        codes::validation::PLACEHOLDER_UNKNOWN => {
            "The text looks like a coffer placeholder that this export did not issue: check where \
             it came from; it may hide a value that was never scanned."
        }
        codes::validation::FORBIDDEN_FIELD | codes::validation::HIDDEN_REASONING => {
            "Hidden reasoning and raw API bodies do not leave: `coffer export create` removes them."
        }
        _ => "The file could not be read as its type requires; the message says why.",
    }
}

/// A path as a SARIF URI reference: relative paths stay relative, absolute
/// ones become `file://` URIs; bytes outside the unreserved set and `/`
/// are percent-encoded.
fn uri(path: &str) -> String {
    let mut out = String::with_capacity(path.len() + 8);
    if Path::new(path).is_absolute() {
        out.push_str("file://");
    }
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The message without the `file#pointer: ` prefix the envelope's
/// messages carry (the location says it).
fn message(i: &Issue) -> &str {
    i.location()
        .and_then(|l| i.message.strip_prefix(&format!("{l}: ")))
        .unwrap_or(&i.message)
}

/// The rule a finding is reported under: its detector, as the final
/// scan's message names it (`rule github-token matched 40 bytes`), else
/// its code.
fn rule_id(i: &Issue) -> &str {
    message(i)
        .strip_prefix("rule ")
        .and_then(|r| r.split(' ').next())
        .filter(|r| !r.is_empty())
        .unwrap_or(i.code)
}

/// The SARIF log of a scan's findings.
pub fn log(issues: &[Issue]) -> Value {
    // Rule id -> (index, the code of its findings).
    let mut index: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
    for i in issues {
        let n = index.len();
        index.entry(rule_id(i)).or_insert((n, i.code));
    }
    let mut rules: Vec<(&str, usize, &str)> = index
        .iter()
        .map(|(id, (n, code))| (*id, *n, *code))
        .collect();
    rules.sort_by_key(|(_, n, _)| *n);
    let rules: Vec<Value> = rules
        .iter()
        .map(|(id, _, code)| {
            let text = if id == code {
                describe(code).to_string()
            } else {
                format!("{}: rule {id}", describe(code))
            };
            json!({
                "id": id,
                "name": id.replace(['.', '_', '-'], " "),
                "shortDescription": {"text": text},
                "help": {"text": help(code)},
                "defaultConfiguration": {"level": "error"},
                "properties": {"code": code},
            })
        })
        .collect();
    // The n-th finding of one rule with one message in one file: what
    // stays the same when lines move above it, and never the value.
    let mut seen: BTreeMap<(String, String, String), u32> = BTreeMap::new();
    let results: Vec<Value> = issues
        .iter()
        .map(|i| {
            let key = (
                rule_id(i).to_string(),
                i.file.clone().unwrap_or_default(),
                message(i).to_string(),
            );
            let n = seen.entry(key.clone()).or_insert(0);
            *n += 1;
            let fingerprint = fingerprint(&key, *n);
            result(i, index[rule_id(i)].0, &fingerprint)
        })
        .collect();
    json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "coffer",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    })
}

/// 32 hex digits of SHA-256 over a finding's rule, file, message and
/// occurrence.
fn fingerprint((rule, file, message): &(String, String, String), n: u32) -> String {
    let mut h = Hasher::new();
    for part in [rule.as_bytes(), file.as_bytes(), message.as_bytes()] {
        h.update(&(part.len() as u64).to_le_bytes());
        h.update(part);
    }
    h.update(&n.to_le_bytes());
    h.finish().0.hex()[..32].to_string()
}

fn result(i: &Issue, rule_index: usize, fingerprint: &str) -> Value {
    let mut r = json!({
        "ruleId": rule_id(i),
        "ruleIndex": rule_index,
        "level": "error",
        "message": {"text": message(i)},
        "partialFingerprints": {"findingHash/v1": fingerprint},
        "properties": {"code": i.code},
    });
    if let Some(file) = i.file.as_deref() {
        let mut physical = json!({"artifactLocation": {"uri": uri(file)}});
        if let Some(p) = i.position {
            physical["region"] = json!({"startLine": p.line, "startColumn": p.char_column});
        }
        let mut location = json!({"physicalLocation": physical});
        if let Some(pointer) = i.pointer.as_deref().filter(|p| !p.is_empty()) {
            location["logicalLocations"] =
                json!([{"fullyQualifiedName": format!("{file}#{pointer}"), "kind": "element"}]);
        }
        r["locations"] = json!([location]);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_become_uri_references() {
        assert_eq!(uri("dir/a b.jsonl"), "dir/a%20b.jsonl");
        assert_eq!(uri("/tmp/x#1"), "file:///tmp/x%231");
        assert_eq!(uri("é"), "%C3%A9");
    }

    #[test]
    fn rules_are_listed_once_and_results_point_at_them() {
        let mut a = Issue::at(
            "validation.secret_in_export",
            "s.jsonl",
            "/0/t",
            "s.jsonl#/0/t: rule x matched 40 bytes",
        );
        a.position = Some(coffer_base::issue::Position {
            line: 1,
            column: 9,
            char_column: 8,
        });
        let b = Issue::at(
            "validation.local_path_in_export",
            "p.txt",
            "/3",
            "p.txt#/3: an absolute local path",
        );
        let mut c = a.clone();
        c.message = "s.jsonl#/0/t: rule aws-access-key-id matched 20 bytes".into();
        let log = log(&[a.clone(), b, a, c.clone(), c]);
        let run = &log["runs"][0];
        let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
        assert_eq!(rules.len(), 3);
        let r = &run["results"];
        assert_eq!(r[0]["ruleIndex"], 0);
        assert_eq!(r[1]["ruleIndex"], 1);
        assert_eq!(r[2]["ruleId"], "x");
        // A detector is its own rule; the code stays in the properties.
        assert_eq!(r[3]["ruleId"], "aws-access-key-id");
        assert_eq!(r[3]["ruleIndex"], 2);
        assert_eq!(r[3]["properties"]["code"], "validation.secret_in_export");
        assert_eq!(rules[2]["id"], "aws-access-key-id");
        assert_eq!(
            rules[2]["properties"]["code"],
            "validation.secret_in_export"
        );
        // Every finding has its own fingerprint: the same finding twice
        // is told apart by its occurrence.
        let prints: std::collections::BTreeSet<&str> = (0..5)
            .map(|k| {
                r[k]["partialFingerprints"]["findingHash/v1"]
                    .as_str()
                    .unwrap()
            })
            .collect();
        assert_eq!(prints.len(), 5);
        assert_eq!(r[0]["message"]["text"], "rule x matched 40 bytes");
        assert_eq!(
            r[0]["locations"][0]["physicalLocation"]["region"]["startColumn"],
            8
        );
        assert_eq!(
            r[0]["locations"][0]["logicalLocations"][0]["fullyQualifiedName"],
            "s.jsonl#/0/t"
        );
    }
}
