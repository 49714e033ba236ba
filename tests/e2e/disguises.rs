//! Secrets in pieces and in disguise (issue 40): each case was accepted
//! by an export and passed its own readback with the secret still in the
//! tree. Every test checks the secret is absent from every file of the
//! export, from stdout and stderr, and from the redaction report.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::bundles::{copy_tree, fixture, rebrand};
use crate::exports::{all_bytes, contains};
use crate::support::Env;

/// A copy of the observational fixture whose session is `session`.
pub fn session_bundle(env: &Env, name: &str, session: &str) -> PathBuf {
    let dir = env.path(name);
    copy_tree(&fixture("run-bundles/observational-completed"), &dir);
    std::fs::write(dir.join("session.jsonl"), session).unwrap();
    rebrand(&dir, &format!("{name}-bundle"), &format!("{name}-attempt"));
    dir
}

/// A partner policy with `extra` members.
pub fn policy(env: &Env, name: &str, extra: Value) -> PathBuf {
    let mut doc = json!({
        "schemaVersion": "coffer.export-policy/v1",
        "sharingClass": "partner",
        "maxArtifactBytes": 16777216,
        "maxStringBytes": 65536,
    });
    for (k, v) in extra.as_object().unwrap() {
        doc[k] = v.clone();
    }
    env.write(name, serde_json::to_string(&doc).unwrap().as_bytes())
}

/// What an export printed and wrote: its exit code and envelope, and every
/// byte a recipient or a terminal could see (tree, stdout, stderr, report).
pub struct Exported {
    pub code: i32,
    pub envelope: Value,
    pub seen: Vec<u8>,
    pub tree: PathBuf,
}

pub fn export(env: &Env, src: &Path, policy: &Path, dest: &str) -> Exported {
    let report = env.path(&format!("{dest}-report.json"));
    let args = [
        "export",
        "create",
        src.to_str().unwrap(),
        policy.to_str().unwrap(),
        dest,
        "--report",
        report.to_str().unwrap(),
    ];
    let r = env.run(&args);
    let json = env.run(&[&["--json"][..], &args[..4], &[&format!("{dest}-json")]].concat());
    let tree = env.path(dest);
    let mut seen = r.stdout.clone();
    seen.extend(r.stderr.as_bytes());
    seen.extend(&json.stdout);
    seen.extend(json.stderr.as_bytes());
    if tree.exists() {
        seen.extend(all_bytes(&tree));
    }
    if let Ok(b) = std::fs::read(&report) {
        seen.extend(b);
    }
    Exported {
        code: r.code,
        envelope: serde_json::from_slice(&json.stdout).unwrap_or(Value::Null),
        seen,
        tree,
    }
}

/// The export was accepted and `secret` is nowhere a recipient could see.
pub fn gone(e: &Exported, secret: &str, what: &str) {
    assert_eq!(e.code, 0, "{what}: {}", e.envelope);
    assert!(
        !contains(&e.seen, secret),
        "{what}: {}... survived",
        &secret[..secret.len().min(8)]
    );
}

fn session_of(e: &Exported) -> Vec<Value> {
    std::fs::read_to_string(e.tree.join("session.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_sensitive_value_or_an_identity_written_as_a_number_is_removed() {
    let env = Env::new();
    let card = "4111111111111111";
    let session = [
        json!({"type": "session.start", "runId": 98765432101u64, "conversationId": 55512345678u64}),
        json!({"type": "tool.result", "amount": 4111111111111111u64, "note": card}),
        json!({"type": "assistant.message", "text": "run 98765432101 in conversation 55512345678"}),
    ]
    .iter()
    .map(|v| format!("{v}\n"))
    .collect::<String>();
    let src = session_bundle(&env, "numbers", &session);
    let pol = policy(&env, "p.json", json!({"sensitiveValues": [card]}));
    let e = export(&env, &src, &pol, "out");
    gone(&e, card, "a card number as a JSON number");
    gone(&e, "98765432101", "a numeric runId");
    gone(&e, "55512345678", "a numeric conversationId");
    let records = session_of(&e);
    assert!(
        records[1]["amount"]
            .as_str()
            .unwrap()
            .starts_with("[REDACTED_SECRET:"),
        "{}",
        records[1]
    );
    assert!(records[0]["runId"].is_string(), "{}", records[0]);
    assert!(e.envelope["result"]["artifacts"]
        .to_string()
        .contains("redacted-secret"));
}

#[test]
fn a_values_file_with_a_byte_order_mark_keeps_its_first_value() {
    let env = Env::new();
    let first = "first-secret-from-powershell";
    env.write(
        "values.txt",
        format!("\u{feff}{first}\r\nsecond-secret-value\r\n").as_bytes(),
    );
    let session = format!(
        "{}\n",
        json!({"type": "assistant.message", "text": format!("the key is {first}")})
    );
    let src = session_bundle(&env, "bom", &session);
    let pol = policy(&env, "p.json", json!({"sensitiveValuesFile": "values.txt"}));
    gone(
        &export(&env, &src, &pol, "out"),
        first,
        "the first value of a BOM file",
    );
}

#[test]
fn a_local_root_matches_however_its_separators_are_spelled() {
    let env = Env::new();
    let session = [
        "cat /data//project/secret-plan.txt",
        "ls /data/./project/notes",
        "cd /data/project/",
    ]
    .iter()
    .map(|t| format!("{}\n", json!({"type": "tool.call", "command": t})))
    .collect::<String>();
    let src = session_bundle(&env, "roots", &session);
    for (i, root) in ["/data/project", "/data//project/", "/data/./project"]
        .iter()
        .enumerate()
    {
        let pol = policy(&env, &format!("p{i}.json"), json!({"localRoots": [root]}));
        let e = export(&env, &src, &pol, &format!("out{i}"));
        assert_eq!(e.code, 0, "{}", e.envelope);
        let text = String::from_utf8_lossy(&e.seen).into_owned();
        assert!(
            !text.contains("project"),
            "{root}: the root survived: {text}"
        );
        assert!(text.contains("[WORKSPACE]/secret-plan.txt"), "{root}");
    }
}

#[test]
fn a_sensitive_value_matches_in_any_case() {
    let env = Env::new();
    let value = "Hunter2-Correct-Horse";
    let session = format!(
        "{}\n",
        json!({"type": "assistant.message", "text": "shouting: HUNTER2-CORRECT-HORSE and whispering: hunter2-correct-horse"})
    );
    let src = session_bundle(&env, "case", &session);
    let pol = policy(&env, "p.json", json!({"sensitiveValues": [value]}));
    let e = export(&env, &src, &pol, "out");
    gone(&e, "HUNTER2-CORRECT-HORSE", "upper case");
    gone(&e, "hunter2-correct-horse", "lower case");
}
