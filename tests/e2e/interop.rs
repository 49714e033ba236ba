//! Interop with the peer system: its public fixtures validate and ingest,
//! and our schemas accept what its schema accepts for those documents.
//! (Reads ../shared/peer-vectors; nothing from there is copied into the repo.)

use std::path::{Path, PathBuf};

use coffer_evidence::schema::{self, DocKind};
use serde_json::{json, Value};

use crate::bundles::{copy_tree, repo};
use crate::support::{codes, Env};

/// The peer's vectors, or `None` (after saying so) on a plain clone.
fn peer() -> Option<PathBuf> {
    crate::support::peer_vectors("ebo")
}

fn peer_bundles(peer: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(peer.join("run-bundles"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    assert!(v.len() >= 4);
    v
}

#[test]
fn every_peer_run_bundle_validates_ingests_and_checks_out_unchanged() {
    let Some(peer) = peer() else { return };
    let env = Env::new();
    for dir in peer_bundles(&peer) {
        let d = dir.to_str().unwrap();
        let (code, v) = env.json(&["bundle", "validate", d]);
        assert!(code == 0 || code == 4, "{d}: {v}");
        assert!(
            codes(&v)
                .iter()
                .all(|c| c == "validation.capture_incomplete"),
            "{d}: {v}"
        );
        let (code, v) = env.json(&["bundle", "ingest", d]);
        assert!(code == 0 || code == 4, "{d}: {v}");
        let id = v["result"]["bundleId"].as_str().unwrap().to_string();
        let out = env.path(&format!("out-{id}"));
        assert_eq!(
            env.json(&["bundle", "checkout", &id, out.to_str().unwrap()])
                .0,
            0
        );
        let copy = env.path(&format!("copy-{id}"));
        copy_tree(&dir, &copy);
        let diff = std::process::Command::new("diff")
            .arg("-r")
            .arg(&copy)
            .arg(&out)
            .status()
            .unwrap();
        assert!(diff.success(), "{d}: checkout differs");
    }
}

/// Validates `doc` against a `$defs` entry of the peer's bundled schema.
fn peer_accepts(peer: &Path, def: &str, doc: &Value) -> bool {
    let bundle: Value =
        serde_json::from_slice(&std::fs::read(peer.join("schemas/run-bundles.v1.json")).unwrap())
            .unwrap();
    let mut wrapper = bundle.clone();
    wrapper["$ref"] = json!(format!("#/$defs/{def}"));
    jsonschema::validator_for(&wrapper).unwrap().is_valid(doc)
}

#[test]
fn our_schemas_accept_every_document_the_peer_schema_accepts() {
    let Some(peer) = peer() else { return };
    let mut checked = 0;
    for dir in peer_bundles(&peer) {
        let manifest: Value =
            serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
        assert!(peer_accepts(&peer, "runManifest", &manifest));
        assert_eq!(
            schema::validate(DocKind::RunManifest, &manifest),
            vec![],
            "{}",
            dir.display()
        );
        for d in manifest["evidence"].as_array().unwrap() {
            assert!(schema::validate(DocKind::EvidenceDescriptor, d).is_empty());
            let (ours, theirs) = match d["kind"].as_str().unwrap() {
                "capture-report" => (DocKind::CaptureReport, "captureReport"),
                "verifier" => (DocKind::VerifierResult, "verifierResult"),
                "export-manifest" => (DocKind::ExportManifest, "exportManifest"),
                _ => continue,
            };
            let doc: Value = serde_json::from_slice(
                &std::fs::read(dir.join(d["relativePath"].as_str().unwrap())).unwrap(),
            )
            .unwrap();
            assert!(peer_accepts(&peer, theirs, &doc));
            assert_eq!(
                schema::validate(ours, &doc),
                vec![],
                "{}: {theirs}",
                dir.display()
            );
            checked += 1;
        }
    }
    assert!(checked >= 8, "checked {checked} typed documents");
}

#[test]
fn our_fixture_documents_are_accepted_by_the_peer_schema_too() {
    let Some(peer) = peer() else { return };
    for e in std::fs::read_dir(repo().join("fixtures/run-bundles")).unwrap() {
        let dir = e.unwrap().path();
        let manifest: Value =
            serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
        assert!(
            peer_accepts(&peer, "runManifest", &manifest),
            "{}",
            dir.display()
        );
    }
}

#[test]
fn our_export_manifests_satisfy_the_peer_export_manifest_definition() {
    let Some(peer) = peer() else { return };
    let env = crate::support::Env::new();
    let policy = crate::exports::write_policy(&env, "policy.json", "public", &[]);
    let p = crate::exports::planted_bundle(&env, "src", "Tr0ub4dor&3-horse");
    for (i, src) in [p.dir.clone(), peer.join("run-bundles/complete")]
        .iter()
        .enumerate()
    {
        let dest = format!("out{i}");
        let (code, v) = env.json(&[
            "export",
            "create",
            src.to_str().unwrap(),
            policy.to_str().unwrap(),
            &dest,
        ]);
        assert_eq!(code, 0, "{v}");
        let m: Value =
            serde_json::from_slice(&std::fs::read(env.path(&dest).join("manifest.json")).unwrap())
                .unwrap();
        assert!(peer_accepts(&peer, "exportManifest", &m), "{m}");
    }
}

/// The peer's four exports, as its own exporter wrote them.
fn peer_exports(peer: &Path) -> Vec<PathBuf> {
    let names = [
        "complete",
        "interrupted",
        "task-failed",
        "telemetry-incomplete",
    ];
    names.iter().map(|n| peer.join("exports").join(n)).collect()
}

/// Replaces the file of artifact `id` in the export at `dir` with `bytes`,
/// and its manifest entry's digest and size with theirs: a tree whose
/// digests all hold, so only the content is wrong.
fn rewrite_artifact(dir: &Path, id: &str, bytes: &[u8]) {
    let path = dir.join("manifest.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let a = m["artifacts"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|a| a["id"] == id)
        .unwrap();
    std::fs::write(dir.join(a["relativePath"].as_str().unwrap()), bytes).unwrap();
    a["digest"] = crate::support::sha256(bytes).into();
    a["sizeBytes"] = bytes.len().into();
    std::fs::write(&path, serde_json::to_vec(&m).unwrap()).unwrap();
}

#[test]
fn the_peers_exports_verify_and_their_mutations_are_refused() {
    let Some(peer) = peer() else { return };
    let env = Env::new();
    let policy = peer.join("exports/policy.json");
    for export in peer_exports(&peer) {
        let name = export.file_name().unwrap().to_str().unwrap().to_string();
        let (code, v) = env.json(&[
            "export",
            "verify",
            export.to_str().unwrap(),
            policy.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{name}: {v}");
        assert_eq!(v["status"], "accepted");

        let mutant = |what: &str| -> PathBuf {
            let dir = env.path(&format!("{name}-{what}"));
            copy_tree(&export, &dir);
            dir
        };
        let verify = |dir: &Path| -> Value {
            let (code, v) = env.json(&["export", "verify", dir.to_str().unwrap()]);
            assert_ne!(code, 0, "{}: {v}", dir.display());
            v
        };
        // A changed byte.
        let dir = mutant("byte");
        let first = dir.join("evidence/0000.jsonl");
        let mut bytes = std::fs::read(&first).unwrap();
        bytes[2] ^= 0x01;
        std::fs::write(&first, bytes).unwrap();
        assert!(
            codes(&verify(&dir)).contains(&"integrity.digest_mismatch".to_string()),
            "{name}"
        );
        // A missing file.
        let dir = mutant("missing");
        std::fs::remove_file(dir.join("evidence/0000.jsonl")).unwrap();
        assert!(!codes(&verify(&dir)).is_empty(), "{name}");
        // A session with something planted, its digests made to hold:
        // each refused with its code.
        let session = std::fs::read_to_string(export.join("evidence/0000.jsonl")).unwrap();
        let planted = [
            (
                "secret",
                session.replacen(
                    "\"type\"",
                    "\"note\":\"pushed with ghp_Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp9Oo8\",\"type\"",
                    1,
                ),
                "validation.secret_in_export",
            ),
            (
                // The record the peer's stripper misses (see EXPORT.md).
                "reasoning",
                session.clone()
                    + "{\"type\":\"observation.agent_thinking\",\"text\":\"I should not say this\"}\n",
                "validation.hidden_reasoning",
            ),
            (
                "thinking",
                session.clone()
                    + "{\"type\":\"assistant.message\",\"thinking\":\"I should not say this\"}\n",
                "validation.forbidden_field",
            ),
        ];
        for (what, text, code) in planted {
            let dir = mutant(what);
            rewrite_artifact(&dir, "session", text.as_bytes());
            let c = codes(&verify(&dir));
            assert!(c.contains(&code.to_string()), "{name} {what}: {c:?}");
        }
    }
    // The source's digest holds only for a workspace recorded as transformed.
    let dir = env.path("complete-untransformed");
    copy_tree(&peer.join("exports/complete"), &dir);
    let path = dir.join("manifest.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    m["transformations"]
        .as_array_mut()
        .unwrap()
        .retain(|t| t["artifactId"] != "workspace");
    std::fs::write(&path, serde_json::to_vec(&m).unwrap()).unwrap();
    let (code, v) = env.json(&["export", "verify", dir.to_str().unwrap()]);
    assert_ne!(code, 0, "{v}");
    // (Every exported artifact needs its transformation record anyway.)
    assert!(
        codes(&v).contains(&"validation.export_manifest".to_string()),
        "{v}"
    );
    // A verifier bound to neither the exported workspace nor its source.
    let dir = env.path("complete-binding");
    copy_tree(&peer.join("exports/complete"), &dir);
    let m: Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    let ver = m["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == "verifier")
        .unwrap();
    let path = dir.join(ver["relativePath"].as_str().unwrap());
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    doc["workspace"]["digest"] = crate::support::sha256(b"other bytes").into();
    rewrite_artifact(&dir, "verifier", &serde_json::to_vec(&doc).unwrap());
    let (code, v) = env.json(&["export", "verify", dir.to_str().unwrap()]);
    assert_ne!(code, 0, "{v}");
    assert!(
        codes(&v).contains(&"validation.reference".to_string()),
        "{v}"
    );
}

/// The peer's final-scan rule as its README states it: a `/`-path right
/// after whitespace (or at the start of the buffer) refuses the buffer.
fn peer_final_scan_refuses(bytes: &[u8]) -> bool {
    let re = regex::bytes::Regex::new(r#"(^|[ \t\r\n\x0b\x0c])/[^ \t\r\n\x0b\x0c"\\]"#).unwrap();
    re.is_match(bytes)
}

#[test]
fn exports_made_for_the_peer_pass_its_final_scan_rule_and_our_verify() {
    let env = Env::new();
    let mut fixtures: Vec<PathBuf> = std::fs::read_dir(repo().join("fixtures/run-bundles"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    fixtures.sort();
    for policy in ["ebo-public.json", "partner.json"] {
        let policy = repo().join("fixtures/policies").join(policy);
        for (i, b) in fixtures.iter().enumerate() {
            let name = b.file_name().unwrap().to_str().unwrap().to_string();
            let dest = env.path(&format!(
                "ebo-{i}-{}",
                policy.file_stem().unwrap().to_str().unwrap()
            ));
            let (code, v) = env.json(&[
                "export",
                "create",
                b.to_str().unwrap(),
                policy.to_str().unwrap(),
                dest.to_str().unwrap(),
                "--compat",
                "ebo",
                "--allow-incomplete",
            ]);
            assert!(code == 0 || code == 4, "{name}: {v}");
            for (rel, bytes) in crate::support::tree(&dest) {
                assert!(
                    !peer_final_scan_refuses(&bytes),
                    "{name}/{rel} holds a /-path after whitespace:\n{}",
                    String::from_utf8_lossy(&bytes)
                );
            }
            let (code, v) = env.json(&[
                "export",
                "verify",
                dest.to_str().unwrap(),
                policy.to_str().unwrap(),
            ]);
            assert_eq!(code, 0, "{name}: {v}");
            // The verifier names the source's workspace, as the peer's does.
            let m: Value =
                serde_json::from_slice(&std::fs::read(dest.join("manifest.json")).unwrap())
                    .unwrap();
            let arts = m["artifacts"].as_array().unwrap();
            if let Some(ver) = arts.iter().find(|a| a["kind"] == "verifier") {
                let doc: Value = serde_json::from_slice(
                    &std::fs::read(dest.join(ver["relativePath"].as_str().unwrap())).unwrap(),
                )
                .unwrap();
                let ws = arts
                    .iter()
                    .find(|a| a["id"] == doc["workspace"]["artifactId"])
                    .unwrap();
                assert_eq!(doc["workspace"]["digest"], ws["sourceDigest"], "{name}");
            }
        }
    }
    // Our own form is unchanged: the patch keeps `--- /dev/null`, so it
    // applies, and the peer's rule would refuse it.
    let dest = env.path("ours");
    let policy = repo().join("fixtures/policies/ebo-public.json");
    let complete = repo().join("fixtures/run-bundles/complete");
    let (code, v) = env.json(&[
        "export",
        "create",
        complete.to_str().unwrap(),
        policy.to_str().unwrap(),
        dest.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{v}");
    let patch = std::fs::read(dest.join("workspace.patch")).unwrap();
    assert!(String::from_utf8_lossy(&patch).contains("--- /dev/null"));
    assert!(peer_final_scan_refuses(&patch));
    // With the peer's vectors at hand: its policy form matches too.
    if let Some(peer) = peer() {
        let dest = env.path("with-peer-policy");
        let policy = peer.join("exports/policy.json");
        let (code, v) = env.json(&[
            "export",
            "create",
            complete.to_str().unwrap(),
            policy.to_str().unwrap(),
            dest.to_str().unwrap(),
            "--compat",
            "ebo",
        ]);
        assert_eq!(code, 0, "{v}");
        let (code, v) = env.json(&[
            "export",
            "verify",
            dest.to_str().unwrap(),
            policy.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{v}");
        assert!(crate::support::tree(&dest)
            .iter()
            .all(|(_, b)| !peer_final_scan_refuses(b)));
    }
}
