//! Untrusted inputs and stores: what an attacker or an unlucky
//! operator hands coffer (foreign records, special files, huge durations,
//! byte names, untrusted export trees). Each test failed before its fix.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::bundles::{copy_tree, fixture};
use crate::support::{codes, issue_paths, Env};

const PACKET: &str = "packets/calc-add.json";

fn objects(env: &Env) -> u64 {
    let (code, v) = env.json(&["stats"]);
    assert_eq!(code, 0, "{v}");
    v["result"]["objects"].as_u64().unwrap()
}

fn mkfifo(p: &Path) {
    let ok = std::process::Command::new("mkfifo")
        .arg(p)
        .status()
        .unwrap()
        .success();
    assert!(ok, "mkfifo {}", p.display());
}

/// Runs coffer with a deadline: a hang is a test failure, not a stuck suite.
fn json_within(env: &Env, args: &[&str], limit: Duration) -> (i32, Value) {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let mut child = env
        .command(&all)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("coffer {args:?} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: not one JSON envelope ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), v)
}

#[test]
fn a_foreign_freeze_record_is_adopted_only_after_this_store_holds_what_it_names() {
    let first = Env::new();
    let root = first.path("root");
    copy_tree(&fixture("task-packets"), &root);
    let r = root.to_str().unwrap();
    let (code, v) = first.json(&["packet", "freeze", r, PACKET]);
    assert_eq!(code, 0, "{v}");
    let due = objects(&first);
    assert!(due > 5, "{due}");

    // Another store meets the committed record beside the packet.
    let second = Env::new();
    let (code, v) = second.json(&["packet", "freeze", r, PACKET]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["result"]["created"], false);
    assert_eq!(
        objects(&second),
        due,
        "every component and member is stored"
    );
    let ws = second.path("ws");
    let (code, v) = second.json(&["packet", "materialize", r, PACKET, ws.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    assert!(ws.join("src/calc.py").is_file());
}

#[test]
fn a_foreign_freeze_record_that_does_not_match_stores_nothing() {
    let first = Env::new();
    let root = first.path("root");
    copy_tree(&fixture("task-packets"), &root);
    let r = root.to_str().unwrap();
    assert_eq!(first.json(&["packet", "freeze", r, PACKET]).0, 0);
    let rec = root.join(format!("{PACKET}.freeze.json"));
    let mut v: Value = serde_json::from_slice(&std::fs::read(&rec).unwrap()).unwrap();
    v["components"]["prompt"]["value"] = Value::String("0".repeat(64));
    std::fs::remove_file(&rec).unwrap();
    std::fs::write(&rec, serde_json::to_vec_pretty(&v).unwrap()).unwrap();

    let second = Env::new();
    let (code, v) = second.json(&["packet", "freeze", r, PACKET]);
    assert_eq!(code, 3, "{v}");
    assert_eq!(codes(&v), ["conflict.packet_changed"]);
    assert_eq!(objects(&second), 0);
}

#[test]
fn a_grace_beyond_the_clock_keeps_fresh_objects() {
    let env = Env::new();
    env.write("a", b"fresh and unrooted");
    let (code, v) = env.json(&["put", "--no-pin", "a"]);
    assert_eq!(code, 0, "{v}");
    for grace in ["300000000y", "18446744073709551615s"] {
        let (code, v) = env.json(&["gc", "--grace", grace]);
        assert!(code == 0 || code == 2, "{grace}: {v}");
        assert_eq!(objects(&env), 1, "--grace {grace} deleted a fresh object");
    }
    assert_eq!(env.json(&["gc", "--grace", "0s"]).0, 0);
    assert_eq!(objects(&env), 0, "a grace of 0 still collects");
}

#[test]
fn put_stores_a_file_whose_name_is_not_utf8_and_names_it_escaped() {
    let env = Env::new();
    let dir = env.path("tree");
    std::fs::create_dir(&dir).unwrap();
    let name = OsStr::from_bytes(b"caf\xe9.txt");
    std::fs::write(dir.join(name), b"latin-1 name").unwrap();
    for arg in [dir.join(name), dir.clone()] {
        let mut c = env.command(&["--json", "put"]);
        c.arg(&arg);
        let out = c.output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let shown = v["result"]["files"][0]["path"].as_str().unwrap();
        assert!(shown.ends_with("caf\\xe9.txt"), "{shown}");
    }
    assert_eq!(objects(&env), 1);
}

#[test]
fn special_files_given_as_inputs_are_refused_at_once() {
    let env = Env::new();
    let fifo = env.path("fifo");
    mkfifo(&fifo);
    let f = fifo.to_str().unwrap();
    let policy = crate::exports::write_policy(&env, "policy.json", "partner", &[]);
    let p = policy.to_str().unwrap();
    let bundle = fixture("run-bundles/complete");
    let b = bundle.to_str().unwrap();
    let limit = Duration::from_secs(20);
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["put", f], "validation.not_regular_file"),
        (vec!["put", "/dev/zero"], "validation.not_regular_file"),
        (vec!["scan", f], "validation.not_regular_file"),
        (
            vec!["export", "create", b, f, "out1"],
            "validation.not_regular_file",
        ),
        (
            vec!["export", "create", b, "/dev/zero", "out2"],
            "validation.not_regular_file",
        ),
        (
            vec!["export", "create", b, p, "out3", "--key-file", f],
            "validation.not_regular_file",
        ),
    ];
    for (args, code) in cases {
        let (exit, v) = json_within(&env, &args, limit);
        assert_ne!(exit, 0, "{args:?}: {v}");
        assert!(codes(&v).iter().any(|c| c == code), "{args:?}: {v}");
    }
    for out in ["out1", "out2", "out3"] {
        assert!(!env.path(out).exists());
    }
    assert_eq!(env.leftover_temps(), 0);
}

#[test]
fn a_sensitive_values_file_that_never_ends_is_refused() {
    let env = Env::new();
    let mut policy: Value = serde_json::from_slice(
        &std::fs::read(crate::exports::write_policy(
            &env,
            "base.json",
            "partner",
            &[],
        ))
        .unwrap(),
    )
    .unwrap();
    policy["sensitiveValuesFile"] = Value::String("/dev/zero".into());
    let p = env.write("policy.json", &serde_json::to_vec(&policy).unwrap());
    let bundle = fixture("run-bundles/complete");
    let (exit, v) = json_within(
        &env,
        &[
            "export",
            "create",
            bundle.to_str().unwrap(),
            p.to_str().unwrap(),
            "out",
        ],
        Duration::from_secs(20),
    );
    assert_ne!(exit, 0, "{v}");
    assert!(!env.path("out").exists());
}

/// A verified export of the sample bundle at `out`.
fn exported(env: &Env, out: &str) -> std::path::PathBuf {
    let policy = crate::exports::write_policy(env, "policy.json", "partner", &[]);
    let bundle = fixture("run-bundles/complete");
    let (code, v) = env.json(&[
        "export",
        "create",
        bundle.to_str().unwrap(),
        policy.to_str().unwrap(),
        out,
    ]);
    assert_eq!(code, 0, "{v}");
    env.path(out)
}

#[test]
fn export_verify_never_follows_a_symlink_or_opens_a_special_file() {
    let env = Env::new();
    let tree = exported(&env, "out");
    let manifest = tree.join("manifest.json");
    let listed = {
        let m: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
        m["artifacts"][0]["relativePath"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let t = tree.to_str().unwrap();
    // The manifest, then a listed artifact, replaced by hostile entries.
    for (victim, plant) in [
        (manifest.clone(), "zero"),
        (manifest.clone(), "fifo"),
        (tree.join(&listed), "zero"),
        (tree.join(&listed), "fifo"),
    ] {
        let saved = std::fs::read(&victim).unwrap();
        std::fs::remove_file(&victim).unwrap();
        match plant {
            "zero" => std::os::unix::fs::symlink("/dev/zero", &victim).unwrap(),
            _ => mkfifo(&victim),
        }
        let (code, v) = json_within(&env, &["export", "verify", t], Duration::from_secs(20));
        assert_eq!(code, 1, "{victim:?} as {plant}: {v}");
        let c = codes(&v);
        assert!(
            c.iter()
                .any(|c| c == "validation.symlink" || c == "validation.not_regular_file"),
            "{victim:?} as {plant}: {v}"
        );
        std::fs::remove_file(&victim).unwrap();
        std::fs::write(&victim, saved).unwrap();
    }
    assert_eq!(
        env.json(&["export", "verify", t]).0,
        0,
        "restored tree verifies"
    );
}

#[test]
fn the_store_key_is_never_read_through_a_symlink_or_from_a_fifo() {
    let env = Env::new();
    let keys = env.store.join("keys");
    let policy = crate::exports::write_policy(&env, "policy.json", "partner", &[]);
    let bundle = fixture("run-bundles/complete");
    let create = |out: &str| {
        json_within(
            &env,
            &[
                "export",
                "create",
                bundle.to_str().unwrap(),
                policy.to_str().unwrap(),
                out,
            ],
            Duration::from_secs(20),
        )
    };
    // A FIFO planted as the key file.
    let key = keys.join("export.key");
    let saved = std::fs::read(&key).unwrap();
    std::fs::remove_file(&key).unwrap();
    mkfifo(&key);
    let (code, v) = create("out1");
    assert_eq!(code, 1, "{v}");
    assert_eq!(codes(&v), ["integrity.unexpected_entry"], "{v}");
    std::fs::remove_file(&key).unwrap();

    // keys/ replaced by a symlink to a directory holding a key.
    let elsewhere = env.path("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let planted = elsewhere.join("export.key");
    std::fs::write(&planted, &saved).unwrap();
    std::fs::set_permissions(
        &planted,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    std::fs::remove_dir(&keys).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &keys).unwrap();
    let (code, v) = create("out2");
    assert_eq!(code, 1, "{v}");
    assert_eq!(codes(&v), ["integrity.unexpected_entry"], "{v}");
    assert!(!env.path("out1").exists() && !env.path("out2").exists());
}

/// Empties a stored object's file behind coffer's back (root can write the
/// 0444 file), as a failing disk or a careless operator would.
fn empty_object(env: &Env, digest: &str) {
    let path = env.object_file(digest);
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
}

#[test]
fn a_dedup_hit_on_a_damaged_object_quarantines_it_and_stores_the_good_bytes() {
    let env = Env::new();
    // One object under the small-object path, one streamed through a temp.
    for (name, bytes) in [
        ("small", crate::support::noise(4000, 1)),
        ("large", crate::support::noise(3 << 20, 2)),
    ] {
        let p = env.write(name, &bytes);
        let d = env.put(name);
        empty_object(&env, &d);
        let (code, v) = env.json(&["put", name]);
        assert_eq!(code, 0, "{name}: {v}");
        assert_eq!(v["result"]["files"][0]["created"], true, "{name}: {v}");
        let out = env.path(&format!("{name}.out"));
        let (code, v) = env.json(&["get", &d, "-o", out.to_str().unwrap()]);
        assert_eq!(code, 0, "{name}: {v}");
        assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(p).unwrap());
    }
    assert_eq!(
        env.entries("quarantine").len(),
        2,
        "the damage is kept for a look"
    );
}

#[test]
fn mirror_never_counts_a_symlink_at_the_destination_as_the_object() {
    let src = Env::new();
    // Objects in many shards; the symlink takes the name of the first in
    // digest order, so a mirror that stopped at it would copy nothing else.
    let mut digests: Vec<String> = (0..24)
        .map(|i| {
            src.write(&format!("o{i}"), format!("mirrored object {i}").as_bytes());
            src.put(&format!("o{i}"))
        })
        .collect();
    digests.sort();
    let d = digests[0].clone();
    let dst = Env::new();
    let planted = dst.object_file(&d);
    std::fs::create_dir_all(planted.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink("/nonexistent/target", &planted).unwrap();
    let (code, v) = src.json(&["mirror", dst.store.to_str().unwrap()]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(codes(&v), ["integrity.unexpected_entry"], "{v}");
    std::fs::remove_file(&planted).unwrap();
    let (code, v) = src.json(&["mirror", dst.store.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["result"]["objectsCopied"], 1, "{v}");
    assert_eq!(dst.json(&["fsck", "--read-data"]).0, 0);
}

/// Ingests the complete sample bundle; returns its id.
fn ingest_complete(env: &Env) -> String {
    let (code, v) = env.json(&[
        "bundle",
        "ingest",
        fixture("run-bundles/complete").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{v}");
    v["result"]["bundleId"].as_str().unwrap().to_string()
}

fn first_artifact(env: &Env, id: &str) -> (String, String) {
    let (code, v) = env.json(&["bundle", "show", id]);
    assert_eq!(code, 0, "{v}");
    let a = &v["result"]["artifacts"][0];
    let rel = a["relativePath"].as_str().unwrap().to_string();
    (rel, a["digest"].as_str().unwrap().to_string())
}

#[test]
fn reingesting_a_bundle_restores_an_object_the_store_lost() {
    let env = Env::new();
    let bundle = fixture("run-bundles/complete");
    let b = bundle.to_str().unwrap();
    let (code, v) = env.json(&["bundle", "ingest", b]);
    assert_eq!(code, 0, "{v}");
    let id = v["result"]["bundleId"].as_str().unwrap().to_string();
    let (_, digest) = first_artifact(&env, &id);
    std::fs::remove_file(env.object_file(&digest)).unwrap();
    assert_eq!(env.json(&["fsck"]).0, 1, "the loss is visible");
    let (code, v) = env.json(&["bundle", "ingest", b]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["result"]["created"], false);
    assert_eq!(v["result"]["objectsRestored"], 1, "{v}");
    assert_eq!(env.json(&["fsck", "--read-data"]).0, 0);
}

#[test]
fn a_changed_copy_of_a_stored_bundle_is_reported_not_called_stored() {
    let env = Env::new();
    let copy = env.path("copy");
    copy_tree(&fixture("run-bundles/complete"), &copy);
    let c = copy.to_str().unwrap();
    let (code, v) = env.json(&["bundle", "ingest", c]);
    assert_eq!(code, 0, "{v}");
    let id = v["result"]["bundleId"].as_str().unwrap().to_string();
    let (rel, digest) = first_artifact(&env, &id);
    let f = copy.join(&rel);
    let mut bytes = std::fs::read(&f).unwrap();
    bytes[0] ^= 0x20;
    std::fs::write(&f, bytes).unwrap();
    let (code, v) = env.json(&["bundle", "ingest", c]);
    assert_eq!(code, 1, "{v}");
    let c = codes(&v);
    assert_eq!(c[0], "integrity.bundle_copy_differs", "{v}");
    assert!(c.iter().any(|c| c == "integrity.digest_mismatch"), "{v}");
    // The stored bundle is untouched and still checks out as it was.
    let out = env.path("out");
    assert_eq!(
        env.json(&["bundle", "checkout", &id, out.to_str().unwrap()])
            .0,
        0
    );
    assert_eq!(
        crate::support::sha256(&std::fs::read(out.join(&rel)).unwrap()),
        digest
    );
}

#[test]
fn checkout_follows_the_stored_manifest_not_an_edited_catalog_row() {
    let env = Env::new();
    let id = ingest_complete(&env);
    let (rel, _) = first_artifact(&env, &id);
    env.write("other", b"bytes the bundle never held");
    let other = env.put("other");
    let conn = rusqlite::Connection::open(env.store.join("catalog.sqlite")).unwrap();
    conn.execute_batch("DROP TRIGGER bundle_artifacts_insert_only")
        .unwrap();
    conn.execute(
        "UPDATE bundle_artifacts SET digest = ?1 WHERE bundle_id = ?2 AND relative_path = ?3",
        rusqlite::params![other, id, rel],
    )
    .unwrap();
    drop(conn);
    let out = env.path("out");
    let (code, v) = env.json(&["bundle", "checkout", &id, out.to_str().unwrap()]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(codes(&v), ["integrity.catalog"], "{v}");
    assert!(!out.exists());
    assert_eq!(env.leftover_temps(), 0);
}

#[test]
fn every_schema_valid_bundle_id_validates_and_ingests_alike() {
    let env = Env::new();
    let ids = [
        "a".repeat(256),
        "é".repeat(256),
        format!("run/{}", "ü-".repeat(100)),
    ];
    for (n, id) in ids.iter().enumerate() {
        let dir = env.path(&format!("b{n}"));
        copy_tree(&fixture("run-bundles/observational-completed"), &dir);
        crate::bundles::rebrand(&dir, id, &format!("attempt-long-{n}"));
        let d = dir.to_str().unwrap();
        let (code, v) = env.json(&["bundle", "validate", d]);
        assert_eq!(code, 0, "validate {n}: {v}");
        let (code, v) = env.json(&["bundle", "ingest", d]);
        assert_eq!(code, 0, "ingest {n}: {v}");
        assert_eq!(v["result"]["created"], true);
        let (code, v) = env.json(&["bundle", "ingest", d]);
        assert_eq!(
            (code, &v["result"]["created"]),
            (0, &Value::Bool(false)),
            "{v}"
        );
        let out = env.path(&format!("out{n}"));
        assert_eq!(
            env.json(&["bundle", "checkout", id, out.to_str().unwrap()])
                .0,
            0
        );
    }
    assert_eq!(env.json(&["fsck"]).0, 0, "no orphans, no stray refs");
}

/// Plants a malformed ref and a ref naming a record that does not exist.
fn plant_broken_refs(env: &Env) -> [String; 2] {
    let dir = env.store.join("refs/records");
    std::fs::create_dir_all(&dir).unwrap();
    let missing = "0".repeat(64);
    std::fs::write(dir.join("garbage"), b"{not a ref").unwrap();
    std::fs::write(
        dir.join(&missing),
        format!(
            r#"{{"createdMs":1,"record":"sha256:{missing}","schema":"coffer.ref/v1","target":"sha256:{missing}"}}"#
        ),
    )
    .unwrap();
    [
        "refs/records/garbage".into(),
        format!("refs/records/{missing}"),
    ]
}

#[test]
fn broken_refs_are_reported_and_every_other_ref_still_applies() {
    let env = Env::new();
    let id = ingest_complete(&env);
    let broken = plant_broken_refs(&env);
    // A lost catalog: rebuild applies the good refs and names the bad ones.
    std::fs::remove_file(env.store.join("catalog.sqlite")).unwrap();
    for side in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(env.store.join(format!("catalog.sqlite{side}")));
    }
    let (code, v) = env.json(&["catalog", "rebuild"]);
    assert_eq!(code, 4, "{v}");
    assert_eq!(issue_paths(&v), broken, "{v}");
    assert!(
        codes(&v).contains(&"integrity.dangling_reference".to_string()),
        "{v}"
    );
    assert!(v["result"]["applied"].as_u64().unwrap() >= 1, "{v}");
    assert_eq!(
        env.json(&["bundle", "show", &id]).0,
        0,
        "the bundle is back"
    );

    // fsck names each broken ref; gc collects what it safely can.
    let (code, v) = env.json(&["fsck"]);
    assert_eq!(code, 1, "{v}");
    for b in &broken {
        assert!(
            v["issues"]
                .as_array()
                .unwrap()
                .iter()
                .any(|i| i["path"] == b.as_str()),
            "{b}: {v}"
        );
    }
    env.write("loose", b"an unpinned object");
    assert_eq!(env.json(&["put", "--no-pin", "loose"]).0, 0);
    let (code, v) = env.json(&["gc", "--grace", "0s"]);
    assert_eq!(code, 4, "{v}");
    assert_eq!(
        v["result"]["unreachable"].as_array().unwrap().len(),
        1,
        "{v}"
    );
    assert_eq!(env.json(&["bundle", "show", &id]).0, 0);
}
