//! Clean interrupts: SIGINT or SIGTERM in the middle of a long command
//! stops it at a safe point with `io.interrupted` and exit 130, says what
//! was stored, and leaves no temp file behind, so `fsck` passes at once.
//! Each command is stopped by a real signal while it stands at a crash
//! point (`COFFER_PAUSE_AT`), then let go.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::bundles::{copy_tree, fixture};
use crate::support::{codes, noise, Env};

/// Runs `coffer ARGS` (`--json` when `json`) until it stands at `point`,
/// sends it `signal` (`INT`, `TERM`), lets it go on, and returns (exit
/// code, stdout, stderr).
fn stopped_at(
    env: &Env,
    point: &str,
    signal: &str,
    json: bool,
    args: &[&str],
) -> (i32, Vec<u8>, String) {
    let pause = env.path(&format!("paused-{point}"));
    let mut all = Vec::new();
    if json {
        all.push("--json");
    }
    all.extend_from_slice(args);
    let child = env
        .command(&all)
        .env("COFFER_PAUSE_AT", format!("{point}:{}", pause.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !pause.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{args:?} never reached {point}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let sent = std::process::Command::new("kill")
        .args(["-s", signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    std::fs::remove_file(&pause).unwrap();
    let out = child.wait_with_output().unwrap();
    let code = out.status.code().unwrap_or_else(|| {
        panic!(
            "{args:?} was killed: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (
        code,
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// [`stopped_at`] with `--json`: checks the exit code and the issue, and
/// returns the issue's message.
fn interrupted(env: &Env, point: &str, signal: &str, args: &[&str]) -> String {
    let (code, stdout, stderr) = stopped_at(env, point, signal, true, args);
    let v: Value = serde_json::from_slice(&stdout)
        .unwrap_or_else(|e| panic!("{args:?}: not one envelope ({e}): {stderr}"));
    assert_eq!(code, 130, "{args:?}: {v}");
    assert_eq!(v["status"], "failed", "{v}");
    assert_eq!(codes(&v), ["io.interrupted"], "{v}");
    v["issues"][0]["message"].as_str().unwrap().to_string()
}

/// Nothing of the stopped command is left: no temp in the store's `tmp/`
/// or beside a destination, and `fsck` finds nothing.
fn nothing_left(env: &Env) {
    let temps: Vec<String> = env.entries("tmp");
    assert!(temps.is_empty(), "temps left in the store: {temps:?}");
    assert_eq!(env.leftover_temps(), 0, "temps left beside a destination");
    let (code, v) = env.json(&["fsck"]);
    assert_eq!(code, 0, "{v}");
}

fn ingested(env: &Env) -> PathBuf {
    let (code, v) = env.json(&[
        "bundle",
        "ingest",
        fixture("run-bundles/complete").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{v}");
    fixture("run-bundles/complete")
}

#[test]
fn an_interrupted_put_stores_nothing_and_says_so() {
    let env = Env::new();
    let big = env.write("big.bin", &noise(3 << 20, 7));
    env.write("small.txt", b"a small file after the big one\n");
    let message = interrupted(
        &env,
        "temp_written",
        "INT",
        &["put", "big.bin", "small.txt"],
    );
    assert_eq!(message, "interrupted: nothing was stored");
    nothing_left(&env);
    let digest = crate::support::sha256(&std::fs::read(big).unwrap());
    assert_eq!(
        env.run(&["has", &digest]).code,
        1,
        "the big file was stored"
    );
}

#[test]
fn an_interrupted_ingest_stores_no_bundle_and_prints_what_happened() {
    let env = Env::new();
    let dir = env.path("bundle");
    copy_tree(&fixture("run-bundles/complete"), &dir);
    // The human form, as a person at a terminal sees it.
    let (code, stdout, stderr) = stopped_at(
        &env,
        "ingest_artifact",
        "INT",
        false,
        &["bundle", "ingest", dir.to_str().unwrap()],
    );
    assert_eq!(code, 130, "{stderr}");
    assert!(stdout.is_empty(), "{}", String::from_utf8_lossy(&stdout));
    assert!(
        stderr.contains("interrupted: nothing was stored"),
        "{stderr}"
    );
    nothing_left(&env);
    let (_, v) = env.json(&["bundle", "ls"]);
    assert_eq!(v["result"]["bundles"], serde_json::json!([]), "{v}");
    // And the same ingest, not interrupted, goes through.
    let (code, v) = env.json(&["bundle", "ingest", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
}

#[test]
fn an_interrupted_export_writes_nothing_and_records_nothing() {
    let env = Env::new();
    let src = ingested(&env);
    let policy = crate::exports::write_policy(&env, "policy.json", "partner", &[]);
    let message = interrupted(
        &env,
        "export_artifact_written",
        "TERM",
        &[
            "export",
            "create",
            src.to_str().unwrap(),
            policy.to_str().unwrap(),
            "out",
        ],
    );
    assert_eq!(message, "interrupted: nothing was written");
    assert!(!env.path("out").exists());
    nothing_left(&env);
    let (_, v) = env.json(&["export", "ls"]);
    assert_eq!(v["result"]["exports"], serde_json::json!([]), "{v}");
}

#[test]
fn an_interrupted_checkout_leaves_no_destination() {
    let env = Env::new();
    ingested(&env);
    let (_, v) = env.json(&["bundle", "ls"]);
    let id = v["result"]["bundles"][0]["bundleId"]
        .as_str()
        .unwrap()
        .to_string();
    // The pause stands on the tree's sync thread, so the rename waits.
    let message = interrupted(
        &env,
        "tree_file_synced",
        "INT",
        &["bundle", "checkout", &id, "co"],
    );
    assert_eq!(message, "interrupted: nothing was written");
    assert!(!env.path("co").exists());
    nothing_left(&env);
}

#[test]
fn an_interrupted_freeze_stores_no_record() {
    let env = Env::new();
    let root = crate::packets::packet_root(&env, "packets");
    let root = root.to_str().unwrap();
    let packet = crate::packets::PACKET;
    let message = interrupted(
        &env,
        "temp_written",
        "INT",
        &["packet", "freeze", root, packet],
    );
    assert_eq!(message, "interrupted: nothing was stored");
    nothing_left(&env);
    let (_, v) = env.json(&["packet", "status", root, packet]);
    assert_eq!(v["result"]["state"], "unfrozen", "{v}");
}

#[test]
fn an_interrupted_mirror_keeps_what_it_copied_and_a_second_run_finishes() {
    let env = Env::new();
    ingested(&env);
    let copy = Env::new();
    let dest = &copy.store;
    let message = interrupted(
        &env,
        "mirror_refs_listed",
        "INT",
        &["mirror", dest.to_str().unwrap()],
    );
    assert!(message.contains("run mirror again"), "{message}");
    nothing_left(&env);
    nothing_left(&copy);
    let (code, v) = env.json(&["mirror", dest.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
}

#[test]
fn an_interrupted_gc_removes_nothing_more() {
    let env = Env::new();
    env.write("a.txt", b"unpinned a\n");
    env.write("b.txt", b"unpinned b\n");
    let (code, v) = env.json(&["put", "--no-pin", "a.txt", "b.txt"]);
    assert_eq!(code, 0, "{v}");
    let digest = v["result"]["files"][0]["digest"]
        .as_str()
        .unwrap()
        .to_string();
    let message = interrupted(&env, "gc_marked", "TERM", &["gc", "--grace", "0s"]);
    assert!(message.starts_with("interrupted: "), "{message}");
    nothing_left(&env);
    assert_eq!(
        env.run(&["has", &digest]).code,
        0,
        "gc removed an object after the stop"
    );
}

#[test]
fn fsck_names_a_stale_temp_and_the_command_that_clears_it() {
    let env = Env::new();
    std::fs::write(env.store.join("tmp/obj.1.2.abcdef"), b"cut off").unwrap();
    let (code, v) = env.json(&["fsck"]);
    assert_ne!(code, 0, "{v}");
    let issue = v["issues"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["code"] == "integrity.stale_temp")
        .unwrap_or_else(|| panic!("{v}"));
    let message = issue["message"].as_str().unwrap();
    assert!(message.contains("tmp/obj.1.2.abcdef"), "{message}");
    assert!(message.contains("coffer gc --grace 0s"), "{message}");
}
