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
