//! Run bundles end to end: validate, ingest, query, checkout, adversarial trees.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{codes, tree, Env};

pub fn repo() -> PathBuf {
    // The binary's crate is crates/cli; resolved, so that `parent()` of
    // the checkout is the directory beside it, not `crates/cli/..`.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the checkout exists")
}

pub fn fixture(rel: &str) -> PathBuf {
    repo().join("fixtures").join(rel)
}

/// Copies a directory tree (regular files only).
pub fn copy_tree(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
}

fn valid_fixtures() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(fixture("run-bundles"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    assert!(
        v.len() >= 7,
        "fixtures/run-bundles holds the seven contract cases"
    );
    v
}

/// Gives a copy of the observational fixture at `dir` its own bundle and
/// attempt ids, after the caller edited its files, and re-derives every
/// descriptor's digest and size.
pub fn rebrand(dir: &Path, id: &str, attempt: &str) {
    let quoted = serde_json::to_string(id).unwrap();
    let cap = std::fs::read_to_string(dir.join("capture-report.json"))
        .unwrap()
        .replace("coffer-observational", &quoted[1..quoted.len() - 1]);
    std::fs::write(dir.join("capture-report.json"), cap).unwrap();
    let mut m: Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    m["bundleId"] = id.into();
    m["attempt"]["id"] = attempt.into();
    for d in m["evidence"].as_array_mut().unwrap() {
        let bytes = std::fs::read(dir.join(d["relativePath"].as_str().unwrap())).unwrap();
        d["digest"] = crate::support::sha256(&bytes).into();
        d["sizeBytes"] = bytes.len().into();
    }
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_vec_pretty(&m).unwrap(),
    )
    .unwrap();
}

fn bundle_id(dir: &Path) -> String {
    let m: Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    m["bundleId"].as_str().unwrap().to_string()
}

fn object_count(env: &Env) -> u64 {
    env.json(&["stats"]).1["result"]["objects"]
        .as_u64()
        .unwrap()
}

#[test]
fn every_valid_fixture_ingests_and_checks_out_byte_identical() {
    let env = Env::new();
    for dir in valid_fixtures() {
        let d = dir.to_str().unwrap();
        let (code, v) = env.json(&["bundle", "validate", d]);
        assert!(code == 0 || code == 4, "{d}: {v}");
        let (code, v) = env.json(&["bundle", "ingest", d]);
        assert!(code == 0 || code == 4, "{d}: {v}");
        assert_eq!(v["result"]["created"], true);
        let id = bundle_id(&dir);
        let dest = env.path(&format!("out-{id}"));
        let (code, v) = env.json(&["bundle", "checkout", &id, dest.to_str().unwrap()]);
        assert_eq!(code, 0, "{v}");
        assert_eq!(
            tree(&dest),
            tree(&dir),
            "{d}: checkout differs from the original"
        );
    }
    let r = env.run(&["fsck", "--read-data"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn every_invalid_fixture_is_rejected_with_exactly_its_code_and_stores_nothing() {
    let env = Env::new();
    let expected: Value =
        serde_json::from_slice(&std::fs::read(fixture("invalid/EXPECTED.json")).unwrap()).unwrap();
    let cases = expected.as_object().unwrap();
    assert!(cases.len() >= 60);
    for (name, want) in cases {
        let dir = fixture(&format!("invalid/{name}"));
        let d = dir.to_str().unwrap();
        let mut want: Vec<String> = want
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_string())
            .collect();
        want.sort();
        for cmd in ["validate", "ingest"] {
            let (code, v) = env.json(&["bundle", cmd, d]);
            let mut got = codes(&v);
            got.sort();
            got.dedup();
            assert_eq!(got, want, "{cmd} {name}: {v}");
            assert_eq!(code, 1, "{cmd} {name}");
            assert_eq!(v["status"], "failed");
            for issue in v["issues"].as_array().unwrap() {
                assert!(
                    issue["path"].is_string(),
                    "{name}: every issue names where: {issue}"
                );
            }
        }
    }
    assert_eq!(object_count(&env), 0, "a refused bundle stores nothing");
    assert!(env.entries("tmp").is_empty(), "and leaves no temp");
    let (_, ls) = env.json(&["bundle", "ls"]);
    assert!(ls["result"]["bundles"].as_array().unwrap().is_empty());
}

#[test]
fn re_ingest_is_a_no_op_and_a_different_manifest_under_the_same_id_conflicts() {
    let env = Env::new();
    let src = fixture("run-bundles/complete");
    let (code, _) = env.json(&["bundle", "ingest", src.to_str().unwrap()]);
    assert_eq!(code, 0);
    let before = object_count(&env);
    let (code, v) = env.json(&["bundle", "ingest", src.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(v["result"]["created"], false);
    assert_eq!(object_count(&env), before);

    // Same bundle id, different (still valid) manifest.
    let copy = env.path("changed");
    copy_tree(&src, &copy);
    let m = std::fs::read_to_string(copy.join("manifest.json")).unwrap();
    std::fs::write(
        copy.join("manifest.json"),
        m.replace("\"os\"", "\"kernel\""),
    )
    .unwrap();
    let (code, v) = env.json(&["bundle", "validate", copy.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    let (code, v) = env.json(&["bundle", "ingest", copy.to_str().unwrap()]);
    assert_eq!(code, 3, "{v}");
    assert_eq!(v["status"], "blocked");
    assert_eq!(codes(&v), vec!["conflict.bundle_exists"]);
    assert_eq!(object_count(&env), before, "nothing changed");
    let (_, show) = env.json(&["bundle", "show", "coffer-complete"]);
    let digest = show["result"]["bundle"]["manifestDigest"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        digest,
        crate::support::sha256(&std::fs::read(src.join("manifest.json")).unwrap())
    );
}

#[test]
fn a_retry_is_a_new_attempt_and_an_attempt_id_cannot_be_reused() {
    let env = Env::new();
    for name in ["task-failed", "retry"] {
        let (code, v) = env.json(&[
            "bundle",
            "ingest",
            fixture(&format!("run-bundles/{name}")).to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{v}");
    }
    let (_, v) = env.json(&["bundle", "show", "coffer-retry"]);
    assert_eq!(v["result"]["bundle"]["attemptNumber"], 2);
    assert_eq!(
        v["result"]["bundle"]["retryOf"],
        "attempt-coffer-task-failed"
    );
    let (_, v) = env.json(&["bundle", "show", "coffer-task-failed"]);
    assert_eq!(v["result"]["bundle"]["terminalState"], "failed");

    // Another bundle claiming the first attempt's id.
    let copy = env.path("thief");
    copy_tree(&fixture("run-bundles/retry"), &copy);
    let m = std::fs::read_to_string(copy.join("manifest.json")).unwrap();
    std::fs::write(
        copy.join("manifest.json"),
        m.replace(
            "\"bundleId\": \"coffer-retry\"",
            "\"bundleId\": \"coffer-thief\"",
        )
        .replace(
            "\"id\": \"attempt-coffer-retry\"",
            "\"id\": \"attempt-coffer-task-failed\"",
        )
        .replace(
            "\"retryOf\": \"attempt-coffer-task-failed\"",
            "\"retryOf\": \"attempt-zero\"",
        ),
    )
    .unwrap();
    for f in ["capture-report.json", "verifier.json"] {
        let t = std::fs::read_to_string(copy.join(f)).unwrap();
        std::fs::write(copy.join(f), t.replace("coffer-retry", "coffer-thief")).unwrap();
    }
    // Fix the digests of the edited files in the manifest.
    let mut man: Value =
        serde_json::from_slice(&std::fs::read(copy.join("manifest.json")).unwrap()).unwrap();
    for d in man["evidence"].as_array_mut().unwrap() {
        let bytes = std::fs::read(copy.join(d["relativePath"].as_str().unwrap())).unwrap();
        d["digest"] = crate::support::sha256(&bytes).into();
        d["sizeBytes"] = bytes.len().into();
    }
    std::fs::write(
        copy.join("manifest.json"),
        serde_json::to_vec_pretty(&man).unwrap(),
    )
    .unwrap();
    let (code, v) = env.json(&["bundle", "ingest", copy.to_str().unwrap()]);
    assert_eq!(code, 3, "{v}");
    assert_eq!(codes(&v), vec!["conflict.attempt_exists"]);
}

#[test]
fn an_incomplete_capture_is_retained_but_not_qualified() {
    let env = Env::new();
    let (code, v) = env.json(&[
        "bundle",
        "ingest",
        fixture("run-bundles/interrupted").to_str().unwrap(),
    ]);
    assert_eq!(code, 4, "{v}");
    assert_eq!(v["status"], "incomplete");
    assert_eq!(v["result"]["qualification"], "incomplete");
    assert_eq!(v["result"]["gaps"].as_array().unwrap().len(), 2);
    assert!(codes(&v)
        .iter()
        .all(|c| c == "validation.capture_incomplete"));
    let (_, ls) = env.json(&["bundle", "ls", "--qualification", "incomplete"]);
    assert_eq!(ls["result"]["bundles"][0]["bundleId"], "coffer-interrupted");
    let (_, ls) = env.json(&["bundle", "ls", "--qualification", "qualified"]);
    assert!(ls["result"]["bundles"].as_array().unwrap().is_empty());
}

#[test]
fn bundle_ls_filters_show_and_where() {
    let env = Env::new();
    for dir in valid_fixtures() {
        env.json(&["bundle", "ingest", dir.to_str().unwrap()]);
    }
    let ids = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["bundle", "ls"];
        all.extend_from_slice(args);
        let (code, v) = env.json(&all);
        assert_eq!(code, 0);
        let mut ids: Vec<String> = v["result"]["bundles"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["bundleId"].as_str().unwrap().to_string())
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(ids(&[]).len(), 7);
    assert_eq!(ids(&["--terminal", "failed"]), vec!["coffer-task-failed"]);
    assert_eq!(
        ids(&["--assessment-mode", "observational"]),
        vec!["coffer-observational"]
    );
    assert_eq!(
        ids(&["--terminal", "interrupted", "--qualification", "incomplete"]),
        vec!["coffer-interrupted"]
    );
    assert_eq!(
        ids(&[
            "--task",
            "task-calc-add",
            "--model",
            "model-large",
            "--harness",
            "agent-cli"
        ])
        .len(),
        7
    );
    assert!(ids(&["--task", "other"]).is_empty());
    assert_eq!(env.run(&["bundle", "ls", "--terminal", "exploded"]).code, 2);

    // The workspace patch is the same bytes in several bundles: one object.
    let patch = std::fs::read(fixture("run-bundles/complete/workspace.patch")).unwrap();
    let d = crate::support::sha256(&patch);
    let (code, v) = env.json(&["where", &d]);
    assert_eq!(code, 0);
    let holders = v["result"]["bundleArtifacts"].as_array().unwrap();
    assert!(holders.len() >= 5, "{v}");
    assert!(holders
        .iter()
        .all(|h| h["relativePath"] == "workspace.patch"));
    let (_, show) = env.json(&["bundle", "show", "coffer-complete"]);
    let ws = show["result"]["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["artifactId"] == "workspace")
        .unwrap()
        .clone();
    assert_eq!(
        ws["sharedWith"].as_array().unwrap().len(),
        holders.len() - 1
    );
    // Addressed by manifest digest too.
    let md = show["result"]["bundle"]["manifestDigest"].as_str().unwrap();
    let (code, by_digest) = env.json(&["bundle", "show", md]);
    assert_eq!(code, 0);
    assert_eq!(by_digest["result"]["bundle"]["bundleId"], "coffer-complete");
    // And by a unique prefix of it, as `where` takes one (8 hex digits or
    // more, with or without `sha256:`, any case); a shorter one is no prefix.
    let upper = md[7..23].to_ascii_uppercase();
    for prefix in [&md[..15], &md[7..19], upper.as_str()] {
        let (code, by_prefix) = env.json(&["bundle", "show", prefix]);
        assert_eq!(code, 0, "{prefix}: {by_prefix}");
        assert_eq!(by_prefix["result"]["bundle"]["bundleId"], "coffer-complete");
    }
    let (code, v) = env.json(&["bundle", "show", &md[..13]]);
    assert_eq!((code, codes(&v)), (1, vec!["io.not_found".to_string()]));
    let (code, v) = env.json(&["bundle", "show", "no-such-bundle"]);
    assert_eq!((code, codes(&v)), (1, vec!["io.not_found".to_string()]));
}

#[test]
fn checkout_refuses_an_existing_destination() {
    let env = Env::new();
    env.json(&[
        "bundle",
        "ingest",
        fixture("run-bundles/complete").to_str().unwrap(),
    ]);
    env.write("dest/keep.txt", b"mine");
    let (code, v) = env.json(&[
        "bundle",
        "checkout",
        "coffer-complete",
        env.path("dest").to_str().unwrap(),
    ]);
    assert_eq!(code, 3);
    assert_eq!(codes(&v), vec!["conflict.destination_exists"]);
    assert_eq!(
        tree(&env.path("dest")),
        vec![("keep.txt".to_string(), b"mine".to_vec())]
    );
    assert_eq!(env.leftover_temps(), 0);
}

#[test]
fn fifty_bundles_sharing_one_large_session_store_it_once() {
    let env = Env::new();
    let session: Vec<u8> = (0..60_000)
        .flat_map(|i| {
            format!(
                "{{\"type\":\"assistant.message\",\"seq\":{i},\"text\":\"same long session\"}}\n"
            )
            .into_bytes()
        })
        .collect();
    let base = fixture("run-bundles/observational-completed");
    for n in 0..50 {
        let dir = env.path(&format!("b{n}"));
        copy_tree(&base, &dir);
        std::fs::write(dir.join("session.jsonl"), &session).unwrap();
        rebrand(&dir, &format!("shared-{n}"), &format!("attempt-{n}"));
        let (code, v) = env.json(&["bundle", "ingest", dir.to_str().unwrap()]);
        assert_eq!(code, 0, "{v}");
    }
    let (_, s) = env.json(&["stats"]);
    let r = &s["result"];
    let logical = r["logicalBytes"].as_u64().unwrap();
    let unique = r["uniqueBytes"].as_u64().unwrap();
    assert!(logical >= 50 * session.len() as u64, "{r}");
    assert!(
        unique < 2 * session.len() as u64,
        "the session is stored once: {r}"
    );
    let (_, w) = env.json(&["where", &crate::support::sha256(&session)]);
    assert_eq!(w["result"]["bundleArtifacts"].as_array().unwrap().len(), 50);
}

/// Builds a valid bundle copy in the env and returns its path.
fn scratch(env: &Env, name: &str) -> PathBuf {
    let dir = env.path(name);
    copy_tree(&fixture("run-bundles/complete"), &dir);
    dir
}

fn assert_refused(env: &Env, dir: &Path, code: &str) {
    for cmd in ["validate", "ingest"] {
        let (exit, v) = env.json(&["bundle", cmd, dir.to_str().unwrap()]);
        assert_eq!(exit, 1, "{cmd}: {v}");
        assert!(
            codes(&v).contains(&code.to_string()),
            "{cmd}: want {code}: {v}"
        );
    }
    assert_eq!(object_count(env), 0);
}

#[test]
fn a_symlinked_evidence_file_is_refused() {
    let env = Env::new();
    let dir = scratch(&env, "b");
    std::fs::rename(dir.join("hooks.jsonl"), env.path("outside-hooks.jsonl")).unwrap();
    std::os::unix::fs::symlink(env.path("outside-hooks.jsonl"), dir.join("hooks.jsonl")).unwrap();
    assert_refused(&env, &dir, "validation.symlink");
}

#[test]
fn a_symlinked_directory_on_an_evidence_path_is_refused() {
    let env = Env::new();
    let dir = scratch(&env, "b");
    std::fs::rename(dir.join("telemetry"), env.path("real-telemetry")).unwrap();
    std::os::unix::fs::symlink(env.path("real-telemetry"), dir.join("telemetry")).unwrap();
    assert_refused(&env, &dir, "validation.symlink");
}

#[test]
fn a_symlinked_manifest_or_bundle_root_is_refused() {
    let env = Env::new();
    let dir = scratch(&env, "b");
    std::fs::rename(dir.join("manifest.json"), env.path("m.json")).unwrap();
    std::os::unix::fs::symlink(env.path("m.json"), dir.join("manifest.json")).unwrap();
    assert_refused(&env, &dir, "validation.symlink");
    let real = scratch(&env, "real");
    std::os::unix::fs::symlink(&real, env.path("link")).unwrap();
    assert_refused(&env, &env.path("link"), "validation.symlink");
}

#[test]
fn a_hard_linked_evidence_file_is_refused() {
    let env = Env::new();
    let dir = scratch(&env, "b");
    std::fs::hard_link(dir.join("session.jsonl"), env.path("second-name")).unwrap();
    assert_refused(&env, &dir, "validation.hard_link");
}

#[test]
fn a_fifo_in_place_of_evidence_is_refused_without_blocking() {
    let env = Env::new();
    let dir = scratch(&env, "b");
    std::fs::remove_file(dir.join("hooks.jsonl")).unwrap();
    let st = std::process::Command::new("mkfifo")
        .arg(dir.join("hooks.jsonl"))
        .status()
        .unwrap();
    assert!(st.success());
    assert_refused(&env, &dir, "validation.special_file");
}

#[test]
fn the_same_bundle_ingested_four_times_at_once_is_stored_once_and_every_ingest_is_accepted() {
    // Each ingest found no row, then one committed first: the others were
    // refused as "already stored with another manifest" naming their own.
    for round in 0..5 {
        let env = Env::new();
        let dir = fixture("run-bundles/complete");
        let children: Vec<_> = (0..4)
            .map(|_| {
                env.command(&["--json", "bundle", "ingest", dir.to_str().unwrap()])
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let mut created = 0;
        for c in children {
            let out = c.wait_with_output().unwrap();
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(out.status.code(), Some(0), "round {round}: {v}");
            assert_eq!(v["status"], "accepted", "round {round}: {v}");
            created += usize::from(v["result"]["created"] == true);
        }
        assert_eq!(created, 1, "round {round}");
        let r = env.run(&["bundle", "ls", "--format", "jsonl"]);
        assert_eq!(String::from_utf8(r.stdout).unwrap().lines().count(), 1);
        let (code, v) = env.json(&["fsck", "--read-data"]);
        let bad: Vec<String> = codes(&v)
            .into_iter()
            .filter(|c| c != "integrity.orphan_object")
            .collect();
        assert!(bad.is_empty() && code <= 1, "round {round}: {v}");
    }
}

#[test]
fn control_characters_in_ids_never_reach_the_terminal_raw() {
    let env = Env::new();
    let dir = env.path("evil");
    copy_tree(&fixture("run-bundles/observational-completed"), &dir);
    let id = "evil\u{1b}]0;pwned\u{7}\u{202e}id";
    let mut m: Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    m["run"]["task"]["id"] = "task\u{1b}[2J".into();
    std::fs::write(dir.join("manifest.json"), serde_json::to_vec(&m).unwrap()).unwrap();
    rebrand(&dir, id, "evil-attempt");
    let (code, v) = env.json(&["bundle", "ingest", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    for args in [
        vec!["bundle", "ls"],
        vec!["bundle", "ls", "--format", "csv"],
        vec!["bundle", "show", id],
        vec!["bundle", "show", "no\u{7}such"],
    ] {
        let r = env.run(&args);
        let all = [r.stdout.clone(), r.stderr.clone().into_bytes()].concat();
        let text = String::from_utf8(all).unwrap();
        assert!(
            !text.contains(['\u{1b}', '\u{7}', '\u{202e}']),
            "{args:?}: {text:?}"
        );
        let shown = ["\\x1B", "\\x07", "\\u{7}"];
        assert!(shown.iter().any(|s| text.contains(s)), "{args:?}: {text:?}");
    }
}
