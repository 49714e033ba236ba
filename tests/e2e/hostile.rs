//! Hostile inputs at every layer, generated here (large cases would not
//! belong in git): each must give a coded error, no panic, and write nothing.
//! docs/RELIABILITY.md lists the cases with their codes.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::bundles::{copy_tree, fixture};
use crate::support::{codes, sha256, Env};

/// A copy of the complete fixture, edited by `edit`, with every descriptor's
/// digest and size recomputed from the files (so only the edit is wrong).
fn bundle(env: &Env, name: &str, edit: impl FnOnce(&Path, &mut Value)) -> PathBuf {
    let dir = env.path(name);
    copy_tree(&fixture("run-bundles/complete"), &dir);
    let mut m: Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    edit(&dir, &mut m);
    for d in m["evidence"].as_array_mut().unwrap() {
        if let Ok(bytes) = std::fs::read(dir.join(d["relativePath"].as_str().unwrap_or("-"))) {
            d["digest"] = sha256(&bytes).into();
            d["sizeBytes"] = bytes.len().into();
        }
    }
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_vec_pretty(&m).unwrap(),
    )
    .unwrap();
    dir
}

fn refused(env: &Env, dir: &Path, want: &str) {
    for cmd in ["validate", "ingest"] {
        let (code, v) = env.json(&["bundle", cmd, dir.to_str().unwrap()]);
        assert_eq!(code, 1, "{cmd} {}: {v}", dir.display());
        assert!(
            codes(&v).contains(&want.to_string()),
            "{cmd} {}: want {want}: {v}",
            dir.display()
        );
    }
    let (_, s) = env.json(&["stats"]);
    assert_eq!(s["result"]["objects"], 0, "nothing written");
    assert!(env.entries("tmp").is_empty());
}

/// An edit of a bundle copy (its files and manifest).
type Edit = dyn Fn(&Path, &mut Value);

#[test]
fn hostile_bundles_are_refused_with_codes() {
    let env = Env::new();
    let cases: Vec<(&str, Box<Edit>, &str)> = vec![
        (
            "diagnostic-locator-traversal",
            Box::new(|d: &Path, m: &mut Value| {
                std::fs::write(d.join("stdout.txt"), b"ok\n").unwrap();
                m["evidence"].as_array_mut().unwrap().push(json!({"id": "diag", "source": "ebo-verifier", "kind": "diagnostic", "authority": "outcome",
                "mediaType": "text/plain", "digest": null, "sizeBytes": null, "sharingClass": "restricted", "relativePath": "stdout.txt",
                "diagnosticSource": {"verifierId": "verifier", "stream": "stdout", "locator": "../../etc/passwd", "digest": sha256(b"x"), "sizeBytes": 1, "truncated": false}}));
            }),
            "validation.unsafe_path",
        ),
        // No filesystem here holds a 256-byte name; the manifest can still
        // claim one, and must be refused before any file is looked for.
        (
            "over-long-segment",
            Box::new(|_d: &Path, m: &mut Value| {
                m["evidence"][1]["relativePath"] = "h".repeat(256).into();
            }),
            "limit.path_segment_bytes",
        ),
        (
            "deep-duplicate-key-in-verifier",
            Box::new(|d: &Path, _m: &mut Value| {
                let v = std::fs::read_to_string(d.join("verifier.json")).unwrap();
                std::fs::write(
                    d.join("verifier.json"),
                    v.replacen(
                        "\"id\": \"add-works\",",
                        "\"id\": \"add-works\", \"id\": \"again\",",
                        1,
                    ),
                )
                .unwrap();
            }),
            "validation.duplicate_key",
        ),
        (
            "invalid-utf8-in-capture-report",
            Box::new(|d: &Path, _m: &mut Value| {
                let mut v = std::fs::read(d.join("capture-report.json")).unwrap();
                let i = v.iter().position(|b| *b == b'q').unwrap();
                v[i] = 0xff;
                std::fs::write(d.join("capture-report.json"), v).unwrap();
            }),
            "validation.invalid_utf8",
        ),
        (
            "invalid-utf8-in-session",
            Box::new(|d: &Path, _m: &mut Value| {
                std::fs::write(d.join("session.jsonl"), b"{\"text\":\"\xc3\x28\"}\n").unwrap();
            }),
            "validation.invalid_utf8",
        ),
        (
            "unsafe-integer-in-verifier",
            Box::new(|d: &Path, _m: &mut Value| {
                let v = std::fs::read_to_string(d.join("verifier.json")).unwrap();
                std::fs::write(
                    d.join("verifier.json"),
                    v.replacen("\"exitCode\": 0", "\"exitCode\": 9007199254740993", 1),
                )
                .unwrap();
            }),
            "validation.integer_out_of_range",
        ),
        (
            "session-line-over-32-mib",
            Box::new(|d: &Path, _m: &mut Value| {
                let mut line = b"{\"t\":\"".to_vec();
                line.resize(33 << 20, b'a');
                line.extend_from_slice(b"\"}\n");
                std::fs::write(d.join("session.jsonl"), line).unwrap();
            }),
            "limit.jsonl_line_bytes",
        ),
        (
            "telemetry-100k-deep",
            Box::new(|d: &Path, _m: &mut Value| {
                std::fs::write(d.join("telemetry/trace.json"), "[".repeat(100_000)).unwrap();
            }),
            "limit.json_depth",
        ),
    ];
    for (name, edit, want) in cases {
        let dir = bundle(&env, name, |d, m| edit(d, m));
        refused(&env, &dir, want);
    }
}

#[test]
fn a_manifest_too_deep_or_too_large_is_refused_before_anything_is_read() {
    let env = Env::new();
    let deep = env.path("deep");
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(deep.join("manifest.json"), "[".repeat(100_000)).unwrap();
    refused(&env, &deep, "limit.json_depth");

    // A manifest listing 1,000,000 artifacts is far over the 8 MiB budget.
    let big = env.path("big");
    std::fs::create_dir_all(&big).unwrap();
    let one = r#"{"id":"a000000","source":"s","kind":"hook","authority":"semantic","mediaType":"application/x-ndjson","digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000","sizeBytes":1,"sharingClass":"restricted","relativePath":"a000000"},"#;
    let mut text = String::with_capacity(one.len() * 1_000_000 + 100);
    text.push_str(r#"{"schemaVersion":"run-manifest/v1","evidence":["#);
    for _ in 0..1_000_000 {
        text.push_str(one);
    }
    text.push_str("{}]}");
    std::fs::write(big.join("manifest.json"), text).unwrap();
    refused(&env, &big, "limit.json_bytes");
}

#[test]
fn hostile_packet_locators_are_refused() {
    let env = Env::new();
    let cases: Vec<(&str, &str, Value, &str)> = vec![
        (
            "verifier-locator-traversal",
            "/restricted/verifier/locator",
            json!("../../outside.json"),
            "validation.unsafe_path",
        ),
        (
            "fixture-locator-absolute",
            "/agentInput/fixture/source/locator",
            json!("/etc/passwd"),
            "validation.unsafe_path",
        ),
        (
            "include-path-traversal",
            "/agentInput/fixture/materializer/includePaths",
            json!(["src", "../x"]),
            "validation.unsafe_path",
        ),
        (
            "repository-url-credentials",
            "/provenance/repositoryUrl",
            json!("https://user:token@example.test/x.git"),
            "validation.repository_url",
        ),
    ];
    for (name, pointer, value, want) in cases {
        let root = env.path(name);
        copy_tree(&fixture("task-packets"), &root);
        let pp = root.join("packets/calc-add.json");
        let mut p: Value = serde_json::from_slice(&std::fs::read(&pp).unwrap()).unwrap();
        *p.pointer_mut(pointer).unwrap() = value;
        std::fs::write(&pp, serde_json::to_vec_pretty(&p).unwrap()).unwrap();
        for cmd in ["validate", "freeze"] {
            let (code, v) = env.json(&[
                "packet",
                cmd,
                root.to_str().unwrap(),
                "packets/calc-add.json",
            ]);
            assert_eq!(code, 1, "{name} {cmd}: {v}");
            assert!(codes(&v).contains(&want.to_string()), "{name} {cmd}: {v}");
        }
        assert!(!root.join("packets/calc-add.json.freeze.json").exists());
    }
    let (_, s) = env.json(&["stats"]);
    assert_eq!(s["result"]["objects"], 0);
}

/// A session file swapped for a symlink while ingest reads the bundle: the
/// symlink is never followed. Each run either stores exactly the original
/// bytes (the swap came after the file was opened) or is refused with a
/// code; the symlink target's bytes are never stored.
#[test]
fn a_file_swapped_for_a_symlink_during_a_read_is_never_followed() {
    let env = Env::new();
    let mut line = String::new();
    for i in 0..60_000 {
        line.push_str(&format!(
            "{{\"type\":\"assistant.message\",\"text\":\"record {i:08}\"}}\n"
        ));
    }
    let original = line.into_bytes();
    let mut decoy = original.clone();
    decoy[20] = b'X';
    let decoy_path = env.write("decoy.jsonl", &decoy);
    let decoy_digest = sha256(&decoy);
    let mut outcomes = std::collections::BTreeMap::new();
    for delay_us in [0u64, 200, 1000, 3000, 8000, 20000] {
        let dir = env.path(&format!("b{delay_us}"));
        copy_tree(&fixture("run-bundles/complete"), &dir);
        std::fs::write(dir.join("session.jsonl"), &original).unwrap();
        crate::exports::refresh(&dir, "session.jsonl");
        let child = env
            .command(&["--json", "bundle", "ingest", dir.to_str().unwrap()])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_micros(delay_us));
        let tmp = dir.join("swap.tmp");
        std::os::unix::fs::symlink(&decoy_path, &tmp).unwrap();
        std::fs::rename(&tmp, dir.join("session.jsonl")).unwrap();
        let out = child.wait_with_output().unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let code = out.status.code().expect("exited, not killed");
        let found = codes(&v);
        // Once an earlier run stored the bundle, a refused run says first
        // that the directory no longer matches the stored copy, then why.
        if found.first().map(String::as_str) == Some("integrity.bundle_copy_differs") {
            assert!(outcomes.contains_key("stored"), "{delay_us}us: {v}");
        }
        let label = if code == 0 {
            "stored".to_string()
        } else {
            found
                .iter()
                .find(|c| c.as_str() != "integrity.bundle_copy_differs")
                .cloned()
                .unwrap_or_else(|| found[0].clone())
        };
        assert!(
            [
                "stored",
                "validation.symlink",
                "io.source_changed",
                "conflict.bundle_exists"
            ]
            .contains(&label.as_str()),
            "{delay_us}us: {v}"
        );
        *outcomes.entry(label).or_insert(0) += 1;
        assert_ne!(
            env.run(&["has", &decoy_digest]).code,
            0,
            "the decoy was stored"
        );
    }
    assert_eq!(env.json(&["fsck", "--read-data"]).0, 0);
    eprintln!("swap outcomes: {outcomes:?}");
}

/// Every case of `fixtures/hostile/` (made by `fixtures/make-hostile.py`)
/// is refused with its expected code, and nothing is written.
#[test]
fn the_hostile_export_corpus_is_refused_with_its_codes() {
    let env = Env::new();
    let root = crate::bundles::repo().join("fixtures/hostile");
    let expected: Value =
        serde_json::from_slice(&std::fs::read(root.join("EXPECTED.json")).unwrap()).unwrap();
    let src = fixture("run-bundles/complete");
    for (i, (rel, want)) in expected.as_object().unwrap().iter().enumerate() {
        let input = root.join(rel);
        let dest = format!("out{i}");
        let (code, v) = match want["command"].as_str().unwrap() {
            "export unpack" => env.json(&["export", "unpack", input.to_str().unwrap(), &dest]),
            _ => env.json(&[
                "export",
                "create",
                src.to_str().unwrap(),
                input.to_str().unwrap(),
                &dest,
            ]),
        };
        assert_ne!(code, 0, "{rel}: {v}");
        assert_eq!(
            codes(&v).first().map(String::as_str),
            want["code"].as_str(),
            "{rel}: {v}"
        );
        assert!(!env.path(&dest).exists(), "{rel}: wrote its destination");
    }
    let temps = env.leftover_temps();
    assert_eq!(temps, 0);
}
