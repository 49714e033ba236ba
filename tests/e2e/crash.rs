//! Crash-point injection: abort put, ingest and freeze at every step of
//! publication and cataloging (debug builds honour COFFER_CRASH_AT), then
//! prove the store recovers: no catalog row names a missing or corrupt
//! object, nothing partial is visible, gc reclaims the leftovers after the
//! grace period, and the same operation then succeeds.

use std::path::PathBuf;

use serde_json::Value;

use crate::bundles::{copy_tree, fixture};
use crate::support::{codes, noise, Env};

const PUBLICATION: &[&str] = &[
    "temp_written",
    "temps_synced",
    "published",
    "shards_synced",
    "catalog_before_txn",
    // The rows are in the open transaction; the objects may not be durable yet.
    "catalog_rows_inserted",
    "record_published",
    "ref_published",
    "catalog_in_txn",
    "catalog_committed",
];

/// Runs `args` with a crash point armed; the process must die by SIGABRT.
fn crash(env: &Env, point: &str, args: &[&str]) {
    let out = env
        .command(args)
        .env("COFFER_CRASH_AT", point)
        .output()
        .unwrap();
    let sig = std::os::unix::process::ExitStatusExt::signal(&out.status);
    assert_eq!(
        sig,
        Some(6),
        "{point} was never reached by {args:?}: {:?} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// fsck after a crash finds only legal leftovers: orphans, temps and
/// refs the catalog has not applied yet. Returns its envelope.
fn only_leftovers(env: &Env, point: &str) -> Value {
    let (_, v) = env.json(&["fsck", "--read-data"]);
    for c in codes(&v) {
        assert!(
            c == "integrity.orphan_object"
                || c == "integrity.stale_temp"
                || c == "integrity.unapplied_ref",
            "{point}: {c}: {v}"
        );
    }
    v
}

/// After a crash: only legal leftovers, then gc makes fsck clean.
fn recover(env: &Env, point: &str) {
    let v = only_leftovers(env, point);
    if point.starts_with("ref_published") {
        assert!(
            codes(&v).contains(&"integrity.unapplied_ref".to_string()),
            "{point}: {v}"
        );
        // What the ref keeps alive is spared by a dry run as by the real run.
        let (_, dry) = env.json(&["gc", "--dry-run", "--grace", "0s"]);
        assert_eq!(
            dry["result"]["orphans"],
            serde_json::json!([]),
            "{point}: {dry}"
        );
    }
    assert_eq!(env.json(&["gc", "--grace", "0s"]).0, 0);
    let (code, v) = env.json(&["fsck", "--read-data"]);
    assert_eq!(code, 0, "{point}: {v}");
}

#[test]
fn put_recovers_from_a_crash_at_every_publication_step() {
    for point in PUBLICATION {
        for (label, make) in [("one file", 1usize), ("a small batch", 5), ("a batch", 40)] {
            let env = Env::new();
            for i in 0..make {
                env.write(&format!("in/f{i}"), &noise(3000 + i, i as u64));
            }
            let target = if make == 1 { "in/f0" } else { "in" };
            crash(&env, point, &["put", target]);
            recover(&env, &format!("{point} ({label})"));
            let (code, v) = env.json(&["put", target]);
            assert_eq!(code, 0, "{point} ({label}): {v}");
            assert_eq!(v["result"]["files"].as_array().unwrap().len(), make);
            let (code, v) = env.json(&["fsck", "--read-data"]);
            assert_eq!(code, 0, "{point} ({label}): {v}");
        }
    }
}

#[test]
fn a_packed_put_recovers_from_a_crash_at_every_step() {
    let points = [
        "temp_written",
        "temps_synced",
        "pack_published",
        "index_published",
        "shards_synced",
        "catalog_rows_inserted",
        "record_published",
        "ref_published",
        "catalog_committed",
    ];
    for point in points {
        let env = Env::new();
        for i in 0..120 {
            env.write(&format!("in/f{i}"), &noise(300 + i, i as u64));
        }
        crash(&env, point, &["put", "in"]);
        recover(&env, &format!("{point} (packed)"));
        let (code, v) = env.json(&["put", "in"]);
        assert_eq!(code, 0, "{point}: {v}");
        assert_eq!(v["result"]["files"].as_array().unwrap().len(), 120);
        let (code, v) = env.json(&["fsck", "--read-data"]);
        assert_eq!(code, 0, "{point}: {v}");
        assert_eq!(v["result"]["packs"], 1, "{point}: {v}");
    }
}

#[test]
fn repack_recovers_from_a_crash_at_every_step() {
    for point in ["repack_temps_synced", "pack_published", "repack_published"] {
        let env = Env::new();
        let files: Vec<Vec<u8>> = (0..60).map(|i| noise(400 + i, 7 + i as u64)).collect();
        for (i, f) in files.iter().enumerate() {
            env.write(&format!("in/f{i}"), f);
        }
        assert_eq!(env.json(&["put", "in"]).0, 0);
        crash(&env, point, &["repack"]);
        // Every object is readable, loose or packed, at every step.
        for f in &files {
            let (code, v) = env.json(&["has", &crate::support::sha256(f)]);
            assert_eq!(code, 0, "{point}: {v}");
        }
        recover(&env, &format!("{point} (repack)"));
        let (code, v) = env.json(&["repack"]);
        assert_eq!(code, 0, "{point}: {v}");
        let (code, v) = env.json(&["fsck", "--read-data"]);
        assert_eq!(code, 0, "{point}: {v}");
        assert_eq!(v["result"]["packs"], 1, "{point}: {v}");
        for f in &files {
            let d = crate::support::sha256(f);
            assert!(!env.object_file(&d).exists(), "{point}: {d} is still loose");
        }
    }
}

#[test]
fn gc_recovers_from_a_crash_at_every_step_of_a_pack_rewrite() {
    // gc rewrites a pack of which fewer than half the objects are live:
    // the new pack and its index are published, then the old index and
    // the old pack removed. At each step every live object reads back.
    let points = [
        "pack_published",
        "index_published",
        "gc_pack_rewritten",
        "gc_old_index_removed",
    ];
    for point in points {
        let env = Env::new();
        let files: Vec<Vec<u8>> = (0..120).map(|i| noise(300 + i, 11 + i as u64)).collect();
        for (i, f) in files.iter().enumerate() {
            env.write(&format!("in/f{i}"), f);
            if i < 20 {
                env.write(&format!("pin/f{i}"), f);
            }
        }
        assert_eq!(env.json(&["put", "--no-pin", "in"]).0, 0, "{point}");
        assert_eq!(env.json(&["put", "pin"]).0, 0, "{point}");
        let before = env.entries("packs");
        assert_eq!(before.len(), 2, "{point}: {before:?}");
        // The pack must be older than gc's cutoff (`--grace 0s` is now).
        std::thread::sleep(std::time::Duration::from_millis(20));
        crash(&env, point, &["gc", "--grace", "0s"]);
        let read_back = |when: &str| {
            for (i, f) in files[..20].iter().enumerate() {
                let out = env.path(&format!("out-{when}-{i}"));
                let d = crate::support::sha256(f);
                let (code, v) = env.json(&["get", &d, "-o", out.to_str().unwrap()]);
                assert_eq!(code, 0, "{point} ({when}): {v}");
                assert_eq!(&std::fs::read(&out).unwrap(), f, "{point} ({when})");
            }
        };
        read_back("after the crash");
        recover(&env, &format!("{point} (gc)"));
        read_back("after recovery");
        let (code, v) = env.json(&["fsck", "--read-data"]);
        assert_eq!(code, 0, "{point}: {v}");
        assert_eq!(v["result"]["packs"], 1, "{point}: {v}");
        let after = env.entries("packs");
        assert!(
            after.iter().all(|p| !before.contains(p)),
            "{point}: the old pack is still there: {after:?}"
        );
        for f in &files[20..] {
            let (code, _) = env.json(&["has", &crate::support::sha256(f)]);
            assert_ne!(code, 0, "{point}: an unpinned object survived gc");
        }
    }
}

fn bundle_copy(env: &Env) -> PathBuf {
    let dir = env.path("bundle");
    copy_tree(&fixture("run-bundles/complete"), &dir);
    dir
}

#[test]
fn ingest_recovers_from_a_crash_at_every_step_and_between_artifacts() {
    let mut points: Vec<String> = PUBLICATION.iter().map(|p| p.to_string()).collect();
    points.extend(["ingest_artifact@1", "ingest_artifact@4"].map(String::from));
    for point in &points {
        let env = Env::new();
        let dir = bundle_copy(&env);
        let d = dir.to_str().unwrap();
        crash(&env, point, &["bundle", "ingest", d]);
        let (_, ls) = env.json(&["bundle", "ls"]);
        let visible = ls["result"]["bundles"].as_array().unwrap().len();
        if point != "catalog_committed" {
            assert_eq!(visible, 0, "{point}: no partial bundle is visible");
        }
        recover(&env, point);
        let (code, v) = env.json(&["bundle", "ingest", d]);
        assert_eq!(code, 0, "{point}: {v}");
        let out = env.path("out");
        assert_eq!(
            env.json(&[
                "bundle",
                "checkout",
                "coffer-complete",
                out.to_str().unwrap()
            ])
            .0,
            0
        );
        let diff = std::process::Command::new("diff")
            .arg("-r")
            .arg(&dir)
            .arg(&out)
            .status()
            .unwrap();
        assert!(diff.success(), "{point}: checkout differs");
    }
}

#[test]
fn freeze_recovers_from_a_crash_at_every_step() {
    let mut points: Vec<String> = PUBLICATION.iter().map(|p| p.to_string()).collect();
    points.extend(["freeze_objects_committed", "freeze_record_written"].map(String::from));
    for point in &points {
        let env = Env::new();
        let root = env.path("root");
        copy_tree(&fixture("task-packets"), &root);
        let r = root.to_str().unwrap();
        crash(
            &env,
            point,
            &["packet", "freeze", r, "packets/calc-add.json"],
        );
        let record = root.join("packets/calc-add.json.freeze.json");
        let state = env
            .json(&["packet", "status", r, "packets/calc-add.json"])
            .1["result"]["state"]
            .clone();
        if point == "freeze_record_written" {
            assert_eq!(state, "frozen", "{point}");
        } else {
            assert!(
                !record.exists(),
                "{point}: no record before the objects are durable"
            );
            assert_eq!(state, "unfrozen", "{point}");
        }
        recover(&env, point);
        let (code, v) = env.json(&["packet", "freeze", r, "packets/calc-add.json"]);
        assert_eq!(code, 0, "{point}: {v}");
        let rec: Value = serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
        assert_eq!(v["result"]["record"], rec);
        let ws = env.path("ws");
        let (code, v) = env.json(&[
            "packet",
            "materialize",
            r,
            "packets/calc-add.json",
            ws.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{point}: {v}");
        let (code, v) = env.json(&["fsck", "--read-data"]);
        assert_eq!(code, 0, "{point}: {v}");
    }
}

#[test]
fn export_recovers_from_a_crash_at_every_step() {
    // Built and read back, then recorded (the publication points), then
    // published: a crash anywhere leaves DEST absent or complete, and a
    // complete DEST is always in the catalog.
    let points: Vec<&str> = [
        "export_artifact_written",
        // A file's sync, on the tree's sync thread, runs beside the rest.
        "tree_file_synced",
        "export_tree_built",
        "export_verified",
    ]
    .iter()
    .chain(PUBLICATION)
    .chain(&["export_recorded", "export_published"])
    .copied()
    .collect();
    for point in &points {
        let env = Env::new();
        let policy = crate::exports::write_policy(&env, "policy.json", "partner", &[]);
        let src = fixture("run-bundles/complete");
        let args = [
            "export",
            "create",
            src.to_str().unwrap(),
            policy.to_str().unwrap(),
            "out",
        ];
        crash(&env, point, &args);
        recover(&env, point);
        if *point == "export_published" {
            assert_eq!(env.leftover_temps(), 0, "{point}");
            let (code, v) = env.json(&args);
            assert_eq!(code, 3, "{point}: {v}");
        } else {
            // Nothing at DEST; the abandoned temp tree is hidden beside it.
            assert!(
                !env.path("out").exists(),
                "{point}: a partial export is visible"
            );
            assert_eq!(env.leftover_temps(), 1, "{point}");
            let (code, v) = env.json(&args);
            assert_eq!(code, 0, "{point}: {v}");
        }
        let (code, v) = env.json(&["export", "verify", "out"]);
        assert_eq!(code, 0, "{point}: {v}");
        let manifest = std::fs::read(env.path("out/manifest.json")).unwrap();
        let (code, v) = env.json(&["where", &crate::support::sha256(&manifest)]);
        assert_eq!(code, 0, "{point}: {v}");
        assert_eq!(
            v["result"]["exports"].as_array().map(Vec::len),
            Some(1),
            "{point}: the published export is recorded: {v}"
        );
        let (code, v) = env.json(&["fsck", "--read-data"]);
        assert_eq!(code, 0, "{point}: {v}");
    }
}

#[test]
fn a_checkout_cut_off_while_its_files_sync_leaves_nothing_at_its_destination() {
    // The files of a checkout are synced on a thread of their own while
    // the next are written; publication waits for every one of them.
    for point in ["tree_file_synced", "tree_file_synced@3"] {
        let env = Env::new();
        let src = fixture("run-bundles/complete");
        let (code, v) = env.json(&["bundle", "ingest", src.to_str().unwrap()]);
        assert_eq!(code, 0, "{v}");
        let dest = env.path("dest");
        let args = [
            "bundle",
            "checkout",
            "coffer-complete",
            dest.to_str().unwrap(),
        ];
        crash(&env, point, &args);
        assert!(!dest.exists(), "{point}: a partial checkout is visible");
        assert_eq!(env.leftover_temps(), 1, "{point}");
        let (code, v) = env.json(&args);
        assert_eq!(code, 0, "{point}: {v}");
        assert_eq!(
            crate::support::tree(&dest),
            crate::support::tree(&src),
            "{point}"
        );
    }
}

#[test]
fn a_materialize_of_many_files_cut_off_before_its_sync_leaves_nothing() {
    // The first 64 files of a tree are synced one by one as they are
    // written; past them, the files wait for one syncfs before the tree is
    // published. A crash at either leaves nothing at the destination, and
    // materializing again gives every file.
    let env = Env::new();
    let root = crate::packets::packet_root(&env, "root");
    let mut files: Vec<(String, Vec<u8>, u32)> = (0..100)
        .map(|i| (format!("src/f{i:03}.txt"), noise(3000, i), 0o644))
        .collect();
    files.extend([
        ("README.md".to_string(), b"r".to_vec(), 0o644),
        ("package.json".to_string(), b"{}".to_vec(), 0o644),
        ("scripts/t.sh".to_string(), b"t".to_vec(), 0o755),
    ]);
    std::fs::write(
        root.join("fixtures/calc.tar.gz"),
        crate::packets::targz(&files),
    )
    .unwrap();
    crate::packets::rebind(&root, |_| {});
    let r = root.to_str().unwrap();
    let (code, v) = env.json(&["packet", "freeze", r, "packets/calc-add.json"]);
    assert_eq!(code, 0, "{v}");
    // No 65th file is synced on its own.
    let ws = env.path("ws-all");
    let out = env
        .command(&[
            "packet",
            "materialize",
            r,
            "packets/calc-add.json",
            ws.to_str().unwrap(),
        ])
        .env("COFFER_CRASH_AT", "tree_file_synced@65")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    for (n, point) in ["tree_file_synced@64", "tree_synced"]
        .into_iter()
        .enumerate()
    {
        let ws = env.path(&format!("ws-{}", point.replace('@', "-")));
        let args = [
            "packet",
            "materialize",
            r,
            "packets/calc-add.json",
            ws.to_str().unwrap(),
        ];
        crash(&env, point, &args);
        assert!(!ws.exists(), "{point}: a partial workspace is visible");
        // Each abandoned temp tree stays hidden beside its destination.
        assert_eq!(env.leftover_temps(), n + 1, "{point}");
        let (code, v) = env.json(&args);
        assert_eq!(code, 0, "{point}: {v}");
        for (path, bytes, _) in &files {
            assert_eq!(
                &std::fs::read(ws.join(path)).unwrap(),
                bytes,
                "{point}: {path}"
            );
        }
    }
}

#[test]
fn mirror_recovers_from_a_crash_at_every_step() {
    // Copies are verified into temps, made durable by one sync, then
    // published; then the names are synced, refs copied and the catalog
    // rebuilt. A crash anywhere leaves the destination with only complete,
    // verified objects (orphans until their refs apply), and mirroring
    // again over what was left completes it.
    let src = Env::new();
    let bundle = fixture("run-bundles/complete");
    let (code, v) = src.json(&["bundle", "ingest", bundle.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    let objects = |env: &Env| {
        walkdir::WalkDir::new(env.store.join("objects"))
            .into_iter()
            .filter(|e| e.as_ref().unwrap().file_type().is_file())
            .count()
    };
    let total = objects(&src);
    assert!(total > 3, "{total}");
    for point in [
        "temp_written",
        "temp_written@3",
        "temps_synced",
        "published",
        "published@3",
        "mirror_objects_synced",
        "mirror_ref_copied",
        "rebuild_committed",
    ] {
        let dst = Env::new();
        let args = ["mirror", dst.store.to_str().unwrap()];
        crash(&src, point, &args);
        // Nothing is published before every copy of its batch is durable.
        let published = match point {
            "temp_written" | "temp_written@3" | "temps_synced" => 0,
            "published" => 1,
            "published@3" => 3,
            _ => total,
        };
        assert_eq!(objects(&dst), published, "{point}");
        only_leftovers(&dst, point);
        let (code, v) = src.json(&args);
        assert_eq!(code, 0, "{point}: {v}");
        assert_eq!(
            crate::backends::dump_catalog(&dst),
            crate::backends::dump_catalog(&src),
            "{point}"
        );
        assert_eq!(dst.json(&["gc", "--grace", "0s"]).0, 0, "{point}");
        let (code, v) = dst.json(&["fsck", "--read-data"]);
        assert_eq!(code, 0, "{point}: {v}");
        assert_eq!(objects(&dst), total, "{point}");
    }
}
