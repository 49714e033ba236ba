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

/// `coffer events ARGS`, one JSON value per line.
fn jsonl(env: &Env, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["events"];
    all.extend_from_slice(args);
    lines(env, &all)
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

/// One run made from a shipped fixture (`complete`: passed, or
/// `task-failed`): its own id, model and fixture digest, a session of
/// `events` events a second apart from 10:00:00, and a patch touching
/// `file`; sealed and ingested with `labels`.
pub struct Variant<'a> {
    pub id: &'a str,
    pub passed: bool,
    pub model: &'a str,
    pub fixture: Option<&'a str>,
    pub events: usize,
    pub file: &'a str,
    pub labels: &'a [&'a str],
}

pub fn ingest_variant(env: &Env, v: &Variant<'_>) {
    let (base, old) = match v.passed {
        true => ("run-bundles/complete", "coffer-complete"),
        false => ("run-bundles/task-failed", "coffer-task-failed"),
    };
    let dir = env.path(&format!("runs/{}", v.id));
    copy_tree(&fixture(base), &dir);
    for f in crate::support::tree(&dir) {
        let text = String::from_utf8(f.1).unwrap().replace(old, v.id);
        std::fs::write(dir.join(&f.0), text).unwrap();
    }
    let patch = format!(
        "diff --git a/{f} b/{f}\n--- a/{f}\n+++ b/{f}\n@@ -1 +1 @@\n-old line\n+new line with a needle\n",
        f = v.file
    );
    std::fs::write(dir.join("workspace.patch"), &patch).unwrap();
    let mut session = String::new();
    for i in 0..v.events {
        let e = json!({"type": if i == 0 { "session.start" } else { "tool.call" },
                       "tool": "bash", "time": format!("2026-12-05T10:{:02}:{:02}Z", i / 60, i % 60)});
        session.push_str(&format!("{e}\n"));
    }
    std::fs::write(dir.join("session.jsonl"), session).unwrap();
    let edit = |file: &str, f: &dyn Fn(&mut Value)| {
        let p = dir.join(file);
        let mut doc: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        f(&mut doc);
        std::fs::write(&p, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    };
    edit("verifier.json", &|d| {
        d["workspace"]["digest"] = crate::support::sha256(patch.as_bytes()).into()
    });
    edit("manifest.json", &|m| {
        m["run"]["model"]["id"] = v.model.into();
        if let Some(fx) = v.fixture {
            m["run"]["fixture"]["digest"] = fx.into();
        }
    });
    let r = env.run(&["bundle", "seal", dir.to_str().unwrap()]);
    assert_eq!(r.code, 0, "seal {}: {}", v.id, r.stderr);
    let mut args = vec!["bundle", "ingest", dir.to_str().unwrap()];
    for l in v.labels {
        args.extend(["--label", l]);
    }
    let (code, out) = env.json(&args);
    assert_eq!(code, 0, "{out}");
}

/// Six runs over two models and two experiments.
fn experiment(env: &Env) {
    let runs = [
        ("a1", true, "model-a", "exp=one", 3, "src/calc.py"),
        ("a2", true, "model-a", "exp=one", 5, "src/calc.py"),
        ("a3", false, "model-a", "exp=two", 7, "tests/test_calc.py"),
        ("b1", true, "model-b", "exp=one", 2, "README.md"),
        ("b2", false, "model-b", "exp=two", 4, "src/util.py"),
        ("b3", false, "model-b", "exp=two", 6, "src/calc.py"),
    ];
    for (id, passed, model, label, events, file) in runs {
        ingest_variant(
            env,
            &Variant {
                id,
                passed,
                model,
                fixture: None,
                events,
                file,
                labels: &[label],
            },
        );
    }
}

/// `coffer ARGS` (exit 0), one JSON value per line of its output.
fn lines(env: &Env, args: &[&str]) -> Vec<Value> {
    let r = env.run(args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    String::from_utf8(r.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn stats_give_pass_rates_with_wilson_intervals_per_model_and_label() {
    let env = Env::new();
    experiment(&env);
    let groups = lines(
        &env,
        &[
            "bundle",
            "stats",
            "--by",
            "model",
            "--by",
            "label:exp",
            "--format",
            "jsonl",
        ],
    );
    let got: Vec<(String, String, u64, u64, u64)> = groups
        .iter()
        .map(|g| {
            (
                g["model"].as_str().unwrap().to_string(),
                g["exp"].as_str().unwrap().to_string(),
                g["runs"].as_u64().unwrap(),
                g["passed"].as_u64().unwrap(),
                g["failed"].as_u64().unwrap(),
            )
        })
        .collect();
    let s = |x: &str| x.to_string();
    assert_eq!(
        got,
        [
            (s("example-provider/model-a"), s("one"), 2, 2, 0),
            (s("example-provider/model-a"), s("two"), 1, 0, 1),
            (s("example-provider/model-b"), s("one"), 1, 1, 0),
            (s("example-provider/model-b"), s("two"), 2, 0, 2),
        ]
    );
    // 2 of 2: Wilson's interval is [0.342, 1], not the degenerate [1, 1].
    let g = &groups[0];
    assert_eq!(g["passRate"], 1.0);
    assert!(
        (g["passRateLow"].as_f64().unwrap() - 0.3424).abs() < 1e-3,
        "{g}"
    );
    assert!(
        (g["passRateHigh"].as_f64().unwrap() - 1.0).abs() < 1e-9,
        "{g}"
    );
    // Median events of 3 and 5; median span of 2 s and 4 s.
    assert_eq!(g["medianEvents"], 4.0);
    assert_eq!(g["medianDurationMs"], 3000.0);

    // One model over everything, as a table and as CSV.
    let r = env.run(&["bundle", "stats", "--by", "model"]);
    let table = String::from_utf8(r.stdout).unwrap();
    assert!(table.starts_with("MODEL "), "{table}");
    assert!(
        table.contains("example-provider/model-a  3     2       1       0      66.7%"),
        "{table}"
    );
    let r = env.run(&["bundle", "stats", "--by", "label:exp", "--format", "csv"]);
    let csv = String::from_utf8(r.stdout).unwrap();
    assert_eq!(
        csv.lines().next().unwrap(),
        "exp,runs,passed,failed,other,passRate,passRateLow,passRateHigh,medianDurationMs,medianEvents"
    );
    assert!(csv.contains("\none,3,3,0,0,1.0000,"), "{csv}");

    // Filters apply first; --json carries the groups.
    let (code, v) = env.json(&["bundle", "stats", "--by", "task", "--label", "exp=two"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["result"]["groups"][0]["runs"], 3);
    assert_eq!(v["result"]["groups"][0]["passRate"], 0.0);
    // A grouping it does not know is a usage error.
    assert_eq!(env.json(&["bundle", "stats", "--by", "colour"]).0, 2);
}

#[test]
fn ls_shows_outcomes_and_labels_in_every_format_and_selects_by_them() {
    let env = Env::new();
    experiment(&env);
    let ids = crate::support::bundle_ids;
    assert_eq!(ids(&env, &["--verifier", "passed"]), ["a1", "a2", "b1"]);
    assert_eq!(
        ids(&env, &["--verifier", "failed", "--model", "*-b"]),
        ["b2", "b3"]
    );
    assert_eq!(ids(&env, &["--touched", "src/*"]), ["a1", "a2", "b2", "b3"]);
    assert_eq!(
        ids(&env, &["--touched", "*calc*"]),
        ["a1", "a2", "a3", "b3"]
    );
    assert_eq!(ids(&env, &["--touched", "nothing/*"]), Vec::<String>::new());
    let (_, v) = env.json(&["bundle", "ls", "--id", "a3"]);
    let row = &v["result"]["bundles"][0];
    assert_eq!(row["verifier"], "failed");
    assert_eq!(
        (
            row["assertionsPassed"].clone(),
            row["assertionsTotal"].clone()
        ),
        (json!(0), json!(1))
    );
    assert_eq!(row["events"], 7);
    assert_eq!(row["durationMs"], 6000);
    assert_eq!(row["labels"], json!({"exp": "two"}));

    let r = env.run(&["bundle", "ls"]);
    let table = String::from_utf8(r.stdout).unwrap();
    let header = table.lines().next().unwrap();
    assert!(header.ends_with("VERIFIER  LABELS"), "{header}");
    assert!(
        table
            .lines()
            .any(|l| l.contains(" a3 ") && l.ends_with("failed    exp=two")),
        "{table}"
    );
    let r = env.run(&["bundle", "ls", "--format", "csv", "--id", "b1"]);
    let csv = String::from_utf8(r.stdout).unwrap();
    let mut rows = csv.lines();
    assert!(rows.next().unwrap().ends_with(",manifest,verifier,labels"));
    assert!(
        rows.next()
            .unwrap()
            .ends_with(",passed,\"{\"\"exp\"\":\"\"one\"\"}\""),
        "{csv}"
    );
    let jsonl = lines(
        &env,
        &["bundle", "ls", "--format", "jsonl", "--verifier", "failed"],
    );
    assert_eq!(jsonl.len(), 3);
    assert!(jsonl.iter().all(|r| r["verifier"] == "failed"));
    // A verifier outcome outside the vocabulary is a usage error.
    assert_eq!(env.json(&["bundle", "ls", "--verifier", "green"]).0, 2);
}

#[test]
fn grep_searches_verified_evidence_and_names_bundle_path_and_line() {
    let env = Env::new();
    experiment(&env);
    let r = env.run(&["grep", "needle", "--in", "patch", "--label", "exp=one"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        String::from_utf8(r.stdout).unwrap(),
        "a1:workspace.patch:6: +new line with a needle\n\
         a2:workspace.patch:6: +new line with a needle\n\
         b1:workspace.patch:6: +new line with a needle\n"
    );
    // Sessions only, case folded; every artifact by default.
    let r = env.run(&[
        "grep",
        "-i",
        "SESSION\\.START",
        "--in",
        "session",
        "--id",
        "b*",
    ]);
    let out = String::from_utf8(r.stdout).unwrap();
    assert_eq!(out.lines().count(), 3, "{out}");
    assert!(out.starts_with("b1:session.jsonl:1: {"), "{out}");
    let r = env.run(&["grep", "add-works", "--id", "a1"]);
    assert_eq!(String::from_utf8(r.stdout).unwrap().lines().count(), 1);
    let (code, v) = env.json(&["grep", "needle", "--id", "a*", "--in", "patch"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["result"]["matches"].as_array().unwrap().len(), 3);
    assert_eq!(v["result"]["matches"][0]["path"], "workspace.patch");
    assert_eq!(v["result"]["matches"][0]["line"], 6);
    assert_eq!(v["result"]["searched"]["objects"], 3);
    // No match is no error.
    let (code, v) = env.json(&["grep", "absent-everywhere"]);
    assert_eq!(
        (code, v["result"]["matches"].as_array().unwrap().len()),
        (0, 0)
    );

    // A damaged object is refused, and none of its lines is shown.
    let (_, v) = env.json(&["bundle", "ls", "--id", "b3"]);
    let (_, show) = env.json(&[
        "bundle",
        "show",
        v["result"]["bundles"][0]["bundleId"].as_str().unwrap(),
    ]);
    let patch = show["result"]["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["relativePath"] == "workspace.patch")
        .unwrap()["digest"]
        .as_str()
        .unwrap()
        .to_string();
    let file = env.object_file(&patch);
    let same_size_other_bytes = crate::support::decode_object_file(&file)
        .iter()
        .map(|b| if *b == b'n' { b'N' } else { *b })
        .collect::<Vec<u8>>();
    let _ = std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600));
    std::fs::write(
        &file,
        zstd::encode_all(&same_size_other_bytes[..], 3).unwrap(),
    )
    .unwrap();
    let r = env.run(&["grep", "Needle", "--id", "b3", "--in", "patch"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stdout.is_empty(), "nothing from an unverified object");
    assert!(
        r.stderr.contains("integrity.digest_mismatch"),
        "{}",
        r.stderr
    );
    // A pattern that is not one is a usage error.
    assert_eq!(env.json(&["grep", "(unclosed"]).0, 2);
}

#[test]
fn runs_are_found_by_their_fixture_and_packets_list_theirs() {
    let env = Env::new();
    // Freeze a copy of the shipped packet (a freeze writes its record
    // beside the packet): its fixture archive is what the runs name.
    let root = fixture("task-packets");
    let copy = env.path("packets");
    copy_tree(&root, &copy);
    let (code, v) = env.json(&[
        "packet",
        "freeze",
        copy.to_str().unwrap(),
        copy.join("packets/calc-add.json").to_str().unwrap(),
    ]);
    assert!(code == 0, "{v}");
    let archive =
        crate::support::sha256(&std::fs::read(copy.join("fixtures/calc.tar.gz")).unwrap());
    for (id, labels) in [("on-fx-1", &["exp=one"][..]), ("on-fx-2", &["exp=two"][..])] {
        ingest_variant(
            &env,
            &Variant {
                id,
                passed: true,
                model: "model-a",
                fixture: Some(&archive),
                events: 2,
                file: "src/calc.py",
                labels,
            },
        );
    }
    ingest_variant(
        &env,
        &Variant {
            id: "elsewhere",
            passed: true,
            model: "model-a",
            fixture: None,
            events: 2,
            file: "src/calc.py",
            labels: &[],
        },
    );
    let ids = crate::support::bundle_ids;
    assert_eq!(ids(&env, &["--fixture", &archive]), ["on-fx-1", "on-fx-2"]);
    assert_eq!(
        ids(&env, &["--fixture", &archive[7..19]]),
        ["on-fx-1", "on-fx-2"],
        "a prefix"
    );
    let (code, v) = env.json(&["packet", "ls"]);
    assert_eq!(code, 0, "{v}");
    let p = &v["result"]["packets"][0];
    assert_eq!(p["fixtureDigest"], archive.as_str());
    assert_eq!(p["runs"], json!(["on-fx-1", "on-fx-2"]));
    let r = env.run(&["packet", "ls"]);
    assert!(String::from_utf8(r.stdout).unwrap().starts_with("PACKET "));
    let (code, v) = env.json(&["where", &archive]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        v["result"]["fixtureRuns"],
        json!([{"bundleId": "on-fx-1", "labels": {"exp": "one"}},
               {"bundleId": "on-fx-2", "labels": {"exp": "two"}}])
    );
}

#[test]
fn facts_are_derived_again_after_a_rebuild_and_for_an_older_catalog() {
    let env = Env::new();
    experiment(&env);
    let before = lines(&env, &["bundle", "ls", "--format", "jsonl"]);
    // A second store on the same objects: rebuild the catalog from the
    // backend alone. Labels are records; facts are derived again.
    let catalog = env.store.join("catalog.sqlite");
    for suffix in ["", "-wal", "-shm"] {
        let mut p = catalog.clone().into_os_string();
        p.push(suffix);
        let _ = std::fs::remove_file(p);
    }
    let (code, v) = env.json(&["catalog", "rebuild"]);
    assert_eq!(code, 0, "{v}");
    let without_time = |rows: &[Value]| -> Vec<Value> {
        rows.iter()
            .map(|r| {
                let mut r = r.clone();
                r.as_object_mut().unwrap().remove("ingestedMs");
                r
            })
            .collect()
    };
    let after = lines(&env, &["bundle", "ls", "--format", "jsonl"]);
    assert_eq!(without_time(&after), without_time(&before));
    let (_, v) = env.json(&["bundle", "stats", "--by", "label:exp"]);
    assert_eq!(v["result"]["groups"][0]["passed"], 3);

    // A catalog without facts (made before they existed): a reading
    // command derives them, the next write open indexes them.
    let conn = rusqlite::Connection::open(&catalog).unwrap();
    conn.execute_batch("DELETE FROM bundle_touched; DELETE FROM bundle_facts;")
        .unwrap();
    drop(conn);
    assert_eq!(
        crate::support::bundle_ids(&env, &["--verifier", "failed"]),
        ["a3", "b2", "b3"]
    );
    assert_eq!(
        crate::support::bundle_ids(&env, &["--touched", "README.md"]),
        ["b1"]
    );
    let count = || -> i64 {
        let c = rusqlite::Connection::open(&catalog).unwrap();
        c.query_row("SELECT COUNT(*) FROM bundle_facts", [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(count(), 0, "a reading command writes nothing");
    env.write("x.txt", b"x");
    assert_eq!(
        env.run(&["put", env.path("x.txt").to_str().unwrap()]).code,
        0
    );
    assert_eq!(count(), 6, "indexed at the write open");
}

#[test]
fn the_catalogs_views_match_bundle_ls() {
    let env = Env::new();
    experiment(&env);
    let uri = format!(
        "file:{}?mode=ro",
        env.store.join("catalog.sqlite").display()
    );
    let conn = rusqlite::Connection::open_with_flags(
        uri,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
    )
    .unwrap();
    let mut st = conn
        .prepare("SELECT bundle_id, model, verifier, events, duration_ms, labels FROM v_bundles ORDER BY ingested_ms, bundle_id")
        .unwrap();
    let views: Vec<Value> = st
        .query_map([], |r| {
            Ok(json!({
                "bundleId": r.get::<_, String>(0)?,
                "model": r.get::<_, String>(1)?,
                "verifier": r.get::<_, String>(2)?,
                "events": r.get::<_, i64>(3)?,
                "durationMs": r.get::<_, Option<i64>>(4)?,
                "labels": serde_json::from_str::<Value>(&r.get::<_, String>(5)?).unwrap(),
            }))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let ls: Vec<Value> = lines(&env, &["bundle", "ls", "--format", "jsonl"])
        .iter()
        .map(|r| {
            json!({
                "bundleId": r["bundleId"],
                "model": format!("{}/{}", r["modelProvider"].as_str().unwrap(), r["modelId"].as_str().unwrap()),
                "verifier": r["verifier"],
                "events": r["events"],
                "durationMs": r["durationMs"],
                "labels": r["labels"],
            })
        })
        .collect();
    assert_eq!(views, ls);
    for view in [
        "v_labels",
        "v_artifacts",
        "v_touched",
        "v_exports",
        "v_packets",
    ] {
        let n: i64 = conn
            .query_row(&format!("SELECT COUNT(*) FROM {view}"), [], |r| r.get(0))
            .unwrap();
        assert!(n >= 0, "{view}");
    }
    let touched: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM v_touched WHERE path = 'src/calc.py'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(touched, 3);
    // Read-only means read-only.
    assert!(conn.execute("DELETE FROM bundle_facts", []).is_err());
}

#[test]
fn several_directories_ingest_one_by_one_with_the_worst_status() {
    let env = Env::new();
    let (code, v) = env.json(&[
        "bundle",
        "ingest",
        fixture("run-bundles/complete").to_str().unwrap(),
        fixture("invalid/digest-mismatch").to_str().unwrap(),
        fixture("run-bundles/retry").to_str().unwrap(),
        "--label",
        "batch=1",
    ]);
    assert_eq!(code, 1, "{v}");
    let b = v["result"]["bundles"].as_array().unwrap();
    assert_eq!(b.len(), 3);
    assert_eq!(b[0]["created"], true);
    assert!(b[1]["dir"]
        .as_str()
        .unwrap()
        .ends_with("invalid/digest-mismatch"));
    assert_eq!(b[2]["bundleId"], "coffer-retry");
    assert!(v["issues"][0]["message"]
        .as_str()
        .unwrap()
        .contains("digest-mismatch"));
    assert_eq!(
        crate::support::bundle_ids(&env, &["--label", "batch=1"]),
        ["coffer-complete", "coffer-retry"],
        "the refused one stored nothing; the others are stored and labelled"
    );
}

/// A Python with pandas and DuckDB: `$COFFER_TEST_PYTHON` (CI's venv),
/// else `python3` if it has both. Without one the Python examples skip
/// with a message, unless `COFFER_REQUIRE_PYTHON_ANALYSIS` is set (as
/// `.ci/run` does), which fails the test instead.
fn analysis_python() -> Option<String> {
    let python = std::env::var("COFFER_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = std::process::Command::new(&python)
        .args(["-c", "import duckdb, pandas"])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some(python);
    }
    assert!(
        std::env::var_os("COFFER_REQUIRE_PYTHON_ANALYSIS").is_none(),
        "COFFER_REQUIRE_PYTHON_ANALYSIS is set but {python} lacks duckdb or pandas"
    );
    crate::support::skipped(&format!(
        "docs/QUERY.md's pandas and DuckDB examples: {python} lacks duckdb or pandas (set COFFER_TEST_PYTHON)"
    ));
    None
}

/// The fenced blocks of a Markdown text after `from`: (info string, body).
fn fenced_blocks(md: &str, from: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in md[md.find(from).expect("the heading")..].lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => open = Some((info.trim().to_string(), String::new())),
            (Some(_), Some("")) => out.push(open.take().unwrap()),
            (Some((_, body)), _) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

/// What a `sql` example prints in `sqlite3`'s default mode: columns
/// joined by `|`, NULL as nothing.
fn sqlite_rows(catalog: &std::path::Path, sql: &str) -> String {
    let uri = format!("file:{}?mode=ro", catalog.display());
    let conn = rusqlite::Connection::open_with_flags(
        uri,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
    )
    .unwrap();
    let mut st = conn.prepare(sql).unwrap();
    let n = st.column_count();
    let rows = st
        .query_map([], |r| {
            let cells: Vec<String> = (0..n)
                .map(|i| match r.get_ref(i).unwrap() {
                    rusqlite::types::ValueRef::Null => String::new(),
                    rusqlite::types::ValueRef::Integer(x) => x.to_string(),
                    rusqlite::types::ValueRef::Real(x) => x.to_string(),
                    rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                    rusqlite::types::ValueRef::Blob(_) => "<blob>".into(),
                })
                .collect();
            Ok(cells.join("|") + "\n")
        })
        .unwrap();
    rows.map(Result::unwrap).collect()
}

#[test]
fn query_md_examples_print_what_they_say() {
    let env = Env::new();
    experiment(&env);
    let md = std::fs::read_to_string(crate::bundles::repo().join("docs/QUERY.md")).unwrap();
    let blocks = fenced_blocks(&md, "## Worked examples");
    assert!(blocks.len() >= 8, "four examples, each with its output");
    let python = analysis_python();
    let bin_dir = std::path::Path::new(crate::support::bin())
        .parent()
        .unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut ran = Vec::new();
    for pair in blocks.chunks(2) {
        let [(lang, code), (out_lang, expected)] = pair else {
            panic!("an example without its output: {pair:?}");
        };
        assert_eq!(out_lang, "text", "each example is followed by its output");
        let run = |program: &str, args: &[&str]| -> String {
            let out = std::process::Command::new(program)
                .args(args)
                .current_dir(env.dir.path())
                .env("PATH", &path)
                .env("COFFER_STORE", &env.store)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{lang} example failed:\n{code}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8(out.stdout).unwrap()
        };
        let got = match lang.as_str() {
            "sh" => run("bash", &["-euo", "pipefail", "-c", code]),
            "sql" => sqlite_rows(&env.store.join("catalog.sqlite"), code),
            "python" => match &python {
                Some(p) => run(p, &["-c", code]),
                None => continue,
            },
            other => panic!("an example in {other}?"),
        };
        assert_eq!(&got, expected, "docs/QUERY.md's {lang} example:\n{code}");
        ran.push(lang.clone());
    }
    assert!(ran.contains(&"sh".to_string()) && ran.contains(&"sql".to_string()));
}
