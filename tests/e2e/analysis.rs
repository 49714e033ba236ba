//! `coffer events`: every session event of the selected runs, one line
//! each, with the run's columns, streamed as JSONL, CSV or inside the
//! `--json` envelope.

use serde_json::{json, Value};

use crate::bundles::{copy_tree, fixture, rebrand};
use crate::support::Env;

/// Two runs: the complete fixture (verified, passed) and an observational
/// one whose session has `events` events of several types.
fn two_runs(env: &Env, events: usize) {
    let (code, v) = env.json(&[
        "bundle",
        "ingest",
        fixture("run-bundles/complete").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{v}");
    let dir = env.path("obs");
    copy_tree(&fixture("run-bundles/observational-completed"), &dir);
    let mut s =
        String::from("{\"type\":\"session.start\",\"sessionId\":\"sess-coffer-observational\"}\n");
    for i in 1..events {
        let e = match i % 3 {
            0 => {
                json!({"type": "tool.call", "tool": "bash", "time": format!("2026-12-05T10:00:{:02}Z", i % 60)})
            }
            1 => json!({"type": "tool.result", "tool": "bash", "output": "ok"}),
            _ => {
                json!({"type": "assistant.message", "text": format!("step {i}, \"quoted\", with a comma")})
            }
        };
        s.push_str(&e.to_string());
        s.push('\n');
    }
    std::fs::write(dir.join("session.jsonl"), s).unwrap();
    rebrand(&dir, "obs-run", "obs-attempt");
    let (code, v) = env.json(&["bundle", "ingest", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
}

fn jsonl(env: &Env, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["events"];
    all.extend_from_slice(args);
    let r = env.run(&all);
    assert_eq!(r.code, 0, "{}", r.stderr);
    String::from_utf8(r.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn events_stream_every_session_event_with_its_runs_columns() {
    let env = Env::new();
    two_runs(&env, 301);
    let all = jsonl(&env, &[]);
    assert_eq!(all.len(), 2 + 301, "every line of both sessions");
    let first = &all[0];
    assert_eq!(first["bundleId"], "coffer-complete");
    assert_eq!(first["verifier"], "passed");
    assert_eq!(first["terminal"], "completed");
    assert_eq!(first["line"], 1);
    assert_eq!(first["type"], "session.start");
    assert_eq!(first["event"]["sessionId"], "sess-coffer-complete");
    let obs: Vec<&Value> = all.iter().filter(|e| e["bundleId"] == "obs-run").collect();
    assert_eq!(obs.len(), 301);
    assert!(obs
        .iter()
        .all(|e| e["verifier"] == "none" && e["task"] == "task-calc-add"));
    assert_eq!(obs[3]["line"], 4);
    assert_eq!(obs[3]["tool"], "bash");
    assert_eq!(obs[3]["time"], "2026-12-05T10:00:03Z");

    // Filters: by event type (a glob) and by run.
    let calls = jsonl(&env, &["--type", "tool.*"]);
    assert_eq!(calls.len(), 200);
    assert!(calls
        .iter()
        .all(|e| e["type"].as_str().unwrap().starts_with("tool.")));
    let passed_runs = jsonl(&env, &["--assessment-mode", "verified"]);
    assert!(passed_runs
        .iter()
        .all(|e| e["bundleId"] == "coffer-complete"));

    // CSV: a header, one row per event, fields quoted where they must be.
    let r = env.run(&["events", "--format", "csv", "--type", "assistant.*"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let text = String::from_utf8(r.stdout).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        "bundleId,model,task,terminal,verifier,line,type,tool,time"
    );
    assert_eq!(lines.count(), 1 + 100);

    // --json: one envelope, the events inside it.
    let (code, v) = env.json(&["events", "--type", "session.*"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["status"], "accepted");
    assert_eq!(v["result"]["events"].as_array().unwrap().len(), 2);
}

#[test]
fn labels_are_set_at_ingest_or_later_select_runs_and_travel_with_a_mirror() {
    let env = Env::new();
    let (code, v) = env.json(&[
        "bundle",
        "ingest",
        fixture("run-bundles/complete").to_str().unwrap(),
        "--label",
        "experiment=ablation-3",
    ]);
    assert_eq!(code, 0, "{v}");
    two_runs_second_only(&env);
    let (code, v) = env.json(&[
        "bundle",
        "label",
        "obs-run",
        "experiment=baseline",
        "reviewer=jane",
    ]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        v["result"]["labels"],
        json!({"experiment": "baseline", "reviewer": "jane"})
    );
    let (code, v) = env.json(&["bundle", "label", "obs-run", "--remove", "reviewer"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["result"]["labels"], json!({"experiment": "baseline"}));

    let ids = crate::support::bundle_ids;
    assert_eq!(
        ids(&env, &["--label", "experiment=ablation-*"]),
        ["coffer-complete"]
    );
    assert_eq!(
        ids(&env, &["--label", "experiment=*"]),
        ["coffer-complete", "obs-run"]
    );
    assert_eq!(
        ids(&env, &["--label", "reviewer=*"]),
        Vec::<String>::new(),
        "removed"
    );
    assert_eq!(ids(&env, &["--id", "obs-*"]), ["obs-run"]);
    let (_, v) = env.json(&["bundle", "ls", "--id", "coffer-*"]);
    assert_eq!(
        v["result"]["bundles"][0]["labels"],
        json!({"experiment": "ablation-3"})
    );
    // Events carry them.
    let events = jsonl(&env, &["--label", "experiment=baseline"]);
    assert!(
        !events.is_empty()
            && events
                .iter()
                .all(|e| e["labels"] == json!({"experiment": "baseline"}))
    );
    // A bad label is a usage error; an unknown bundle is not found.
    assert_eq!(env.json(&["bundle", "label", "obs-run", "no value"]).0, 2);
    assert_eq!(env.json(&["bundle", "label", "nope", "a=b"]).0, 1);

    // Labels are recorded with the catalog: a mirror has them.
    let copy = Env::new();
    let (code, v) = env.json(&["mirror", copy.store.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(ids(&copy, &["--label", "experiment=baseline"]), ["obs-run"]);
}

/// The second run of [`two_runs`] alone (the first is ingested with a label).
fn two_runs_second_only(env: &Env) {
    let dir = env.path("obs");
    copy_tree(&fixture("run-bundles/observational-completed"), &dir);
    rebrand(&dir, "obs-run", "obs-attempt");
    let (code, v) = env.json(&["bundle", "ingest", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
}
