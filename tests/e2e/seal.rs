//! `bundle seal DIR`: a harness that writes evidence but not its digests
//! gets a valid manifest; the manifest alone is rewritten, atomically, and
//! only when the result validates.

use std::path::Path;

use serde_json::Value;

use crate::bundles::{copy_tree, fixture};
use crate::support::{codes, tree, Env};

fn manifest(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap()
}

fn write_manifest(dir: &Path, m: &Value) {
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_vec_pretty(m).unwrap(),
    )
    .unwrap();
}

/// Every file but the manifest, with its bytes.
fn others(dir: &Path) -> Vec<(String, Vec<u8>)> {
    tree(dir)
        .into_iter()
        .filter(|(rel, _)| rel != "manifest.json")
        .collect()
}

#[test]
fn a_harness_bundle_without_digests_is_sealed_and_then_ingests() {
    let env = Env::new();
    let dir = env.path("b");
    copy_tree(&fixture("run-bundles/complete"), &dir);
    let mut m = manifest(&dir);
    for d in m["evidence"].as_array_mut().unwrap() {
        let d = d.as_object_mut().unwrap();
        d.remove("digest");
        d.remove("sizeBytes");
    }
    write_manifest(&dir, &m);
    let (code, v) = env.json(&["bundle", "validate", dir.to_str().unwrap()]);
    assert_eq!(code, 1, "{v}");
    let files = others(&dir);

    let (code, v) = env.json(&["bundle", "seal", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["result"]["written"], true, "{v}");
    let n = m["evidence"].as_array().unwrap().len();
    assert_eq!(v["result"]["resealed"].as_array().unwrap().len(), n, "{v}");
    assert_eq!(others(&dir), files, "only the manifest is rewritten");
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // The sealed manifest is the original fixture's, digest for digest.
    let sealed = manifest(&dir);
    let original = manifest(&fixture("run-bundles/complete"));
    for (a, b) in sealed["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .zip(original["evidence"].as_array().unwrap())
    {
        assert_eq!(
            (&a["digest"], &a["sizeBytes"]),
            (&b["digest"], &b["sizeBytes"])
        );
    }
    let (code, v) = env.json(&["bundle", "ingest", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    // Sealing again changes nothing.
    let before = std::fs::read(dir.join("manifest.json")).unwrap();
    let (code, v) = env.json(&["bundle", "seal", dir.to_str().unwrap()]);
    assert_eq!(
        (code, &v["result"]["written"]),
        (0, &Value::Bool(false)),
        "{v}"
    );
    assert_eq!(std::fs::read(dir.join("manifest.json")).unwrap(), before);
}

#[test]
fn validate_names_the_expected_digest_and_size_and_seal_rebinds_an_edited_file() {
    let env = Env::new();
    let dir = env.path("b");
    copy_tree(&fixture("run-bundles/complete"), &dir);
    let session = dir.join("session.jsonl");
    let mut bytes = std::fs::read(&session).unwrap();
    bytes.extend_from_slice(b"{\"type\":\"session.note\",\"text\":\"appended\"}\n");
    std::fs::write(&session, &bytes).unwrap();
    let actual = crate::support::sha256(&bytes);
    let (code, v) = env.json(&["bundle", "validate", dir.to_str().unwrap()]);
    assert_eq!(code, 1, "{v}");
    let text = v["issues"].to_string();
    assert!(text.contains(&actual), "the file's digest is named: {text}");
    assert!(
        text.contains(&bytes.len().to_string()),
        "the file's size is named: {text}"
    );

    let (code, v) = env.json(&["bundle", "seal", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    let resealed = &v["result"]["resealed"];
    assert_eq!(resealed.as_array().unwrap().len(), 1, "{v}");
    assert_eq!(resealed[0]["relativePath"], "session.jsonl");
    assert_eq!(resealed[0]["digest"], actual.as_str());
    let (code, v) = env.json(&["bundle", "validate", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
}

#[test]
fn what_seal_cannot_make_valid_is_refused_with_codes_and_nothing_is_written() {
    let env = Env::new();
    let dir = env.path("b");
    copy_tree(&fixture("run-bundles/complete"), &dir);
    let mut m = manifest(&dir);
    m["terminal"]["failureClass"] = "task".into();
    for d in m["evidence"].as_array_mut().unwrap() {
        d.as_object_mut().unwrap().remove("digest");
    }
    write_manifest(&dir, &m);
    let before = std::fs::read(dir.join("manifest.json")).unwrap();
    let (code, v) = env.json(&["bundle", "seal", dir.to_str().unwrap()]);
    assert_eq!(code, 1, "{v}");
    assert!(
        codes(&v).contains(&"validation.terminal_combination".to_string()),
        "{v}"
    );
    assert_eq!(
        std::fs::read(dir.join("manifest.json")).unwrap(),
        before,
        "nothing written"
    );
    // A patch changed after the verifier ran: the verifier's record names
    // other bytes, and seal never rewrites that record.
    copy_tree(&fixture("run-bundles/complete"), &env.path("w"));
    let patch = env.path("w/workspace.patch");
    let mut bytes = std::fs::read(&patch).unwrap();
    bytes.extend_from_slice(b"\n");
    std::fs::write(&patch, bytes).unwrap();
    let verifier = std::fs::read(env.path("w/verifier.json")).unwrap();
    let (code, v) = env.json(&["bundle", "seal", env.path("w").to_str().unwrap()]);
    assert_eq!(code, 1, "{v}");
    assert!(
        codes(&v).contains(&"validation.verifier_workspace_unbound".to_string()),
        "{v}"
    );
    assert_eq!(
        std::fs::read(env.path("w/verifier.json")).unwrap(),
        verifier
    );
    // A file the manifest names that is missing is refused too.
    copy_tree(&fixture("run-bundles/complete"), &env.path("c"));
    std::fs::remove_file(env.path("c/hooks.jsonl")).unwrap();
    let (code, v) = env.json(&["bundle", "seal", env.path("c").to_str().unwrap()]);
    assert_eq!(code, 1, "{v}");
    assert!(v["issues"].to_string().contains("hooks.jsonl"), "{v}");
}
