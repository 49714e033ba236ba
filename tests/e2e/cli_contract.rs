//! The CLI contract of DESIGN.md section 6: envelope, statuses, exit codes.

use crate::support::{codes, Env};

#[test]
fn every_command_prints_one_result_envelope() {
    let env = Env::new();
    env.write("a", b"x");
    let d = env.put("a");
    for args in [
        vec!["init"],
        vec!["put", "a"],
        vec!["get", d.as_str(), "-o", "copy"],
        vec!["has", d.as_str()],
        vec!["ls"],
        vec!["fsck"],
        vec!["gc", "--dry-run"],
        vec!["stats"],
    ] {
        let (code, v) = env.json(&args);
        assert_eq!(code, 0, "{args:?}: {v}");
        assert_eq!(v["schemaVersion"], "coffer.result/v1");
        assert_eq!(v["command"], args[0]);
        assert_eq!(v["status"], "accepted");
        assert!(v["issues"].as_array().unwrap().is_empty());
        assert!(v.get("result").is_some());
    }
}

#[test]
fn malformed_digests_are_usage_errors() {
    let env = Env::new();
    for bad in [
        "nope",
        "sha256:abc",
        "SHA256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    ] {
        for cmd in [vec!["get", bad], vec!["has", bad]] {
            let (code, v) = env.json(&cmd);
            assert_eq!(code, 2, "{cmd:?}");
            assert_eq!(codes(&v), vec!["usage.invalid_digest"]);
            assert_eq!(v["status"], "failed");
        }
    }
    let r = env.run(&["get", "nope"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("usage.invalid_digest"), "{}", r.stderr);
}

#[test]
fn unknown_commands_and_flags_exit_2() {
    let env = Env::new();
    let (code, v) = env.json(&["frobnicate"]);
    assert_eq!(code, 2);
    assert_eq!(codes(&v), vec!["usage.unknown_command"]);
    let (code, v) = env.json(&["put", "--no-such-flag", "a"]);
    assert_eq!(code, 2);
    assert_eq!(codes(&v), vec!["usage.unknown_argument"]);
    assert_eq!(env.run(&["frobnicate"]).code, 2);
    assert_eq!(env.run(&["gc", "--grace", "soon"]).code, 2);
}

#[test]
fn missing_object_fails_with_not_found() {
    let env = Env::new();
    let d = crate::support::sha256(b"absent");
    let (code, v) = env.json(&["get", &d, "-o", "x"]);
    assert_eq!(code, 1);
    assert_eq!(codes(&v), vec!["io.not_found"]);
    assert!(!env.path("x").exists());
}

#[test]
fn commands_on_a_missing_store_say_so() {
    let env = Env::bare();
    let (code, v) = env.json(&["ls"]);
    assert_eq!(code, 1);
    assert_eq!(codes(&v), vec!["validation.not_a_store"]);
    assert!(!env.store.exists(), "reading never creates a store");
}

#[test]
fn init_is_idempotent_and_refuses_a_foreign_directory() {
    let env = Env::bare();
    let (code, v) = env.json(&["init"]);
    assert_eq!(
        (code, &v["result"]["created"]),
        (0, &serde_json::json!(true))
    );
    let key = std::fs::read(env.store.join("keys/export.key")).unwrap();
    assert_eq!(key.len(), 32);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(env.store.join("keys/export.key"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let (code, v) = env.json(&["init"]);
    assert_eq!(
        (code, &v["result"]["created"]),
        (0, &serde_json::json!(false))
    );
    assert_eq!(
        std::fs::read(env.store.join("keys/export.key")).unwrap(),
        key,
        "key never replaced"
    );

    let foreign = Env::bare();
    foreign.write("store/notes.txt", b"mine");
    let (code, v) = foreign.json(&["init"]);
    assert_eq!(code, 3);
    assert_eq!(codes(&v), vec!["conflict.store_root_not_empty"]);
    assert!(!foreign.store.join("STORE-FORMAT").exists());
}

#[test]
fn store_layout_matches_the_format_document() {
    let env = Env::new();
    for entry in [
        "STORE-FORMAT",
        "catalog.sqlite",
        "objects/sha256",
        "tmp",
        "quarantine",
        "keys",
    ] {
        assert!(env.store.join(entry).exists(), "{entry}");
    }
    let fmt: serde_json::Value =
        serde_json::from_slice(&std::fs::read(env.store.join("STORE-FORMAT")).unwrap()).unwrap();
    assert_eq!(
        (fmt["format"].as_str(), fmt["version"].as_u64()),
        (Some("coffer"), Some(1))
    );
    env.write("a", b"content size and checksum");
    let d = env.put("a");
    let frame = std::fs::read(env.object_file(&d)).unwrap();
    assert_eq!(&frame[..4], &[0x28, 0xb5, 0x2f, 0xfd], "zstd magic");
    assert_eq!(frame[4] & 0b100, 0b100, "content checksum flag");
    assert!(frame[4] & 0b1110_0000 != 0, "content size present");
}

#[test]
fn store_from_environment_variable() {
    let env = Env::new();
    env.write("a", b"via env");
    let out = std::process::Command::new(crate::support::bin())
        .current_dir(env.dir.path())
        .env("COFFER_STORE", &env.store)
        .args(["--json", "put", "a"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let (_, v) = env.json(&["has", &crate::support::sha256(b"via env")]);
    assert_eq!(v["status"], "accepted");
}
