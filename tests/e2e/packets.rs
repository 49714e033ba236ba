//! Task packets end to end: validate, freeze, status, materialize, dedup.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use coffer_base::json::canonical::canonical_digest;
use serde_json::{json, Value};

use crate::bundles::{copy_tree, fixture};
use crate::support::{codes, Env};

pub(crate) const PACKET: &str = "packets/calc-add.json";

fn dig(bytes: &[u8]) -> Value {
    let d = crate::support::sha256(bytes);
    json!({"algorithm": "sha256", "value": &d[7..]})
}

fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

fn write_json(p: &Path, v: &Value) {
    std::fs::write(p, format!("{}\n", serde_json::to_string_pretty(v).unwrap())).unwrap();
}

/// A fresh copy of the sample packet root.
pub(crate) fn packet_root(env: &Env, name: &str) -> PathBuf {
    let root = env.path(name);
    copy_tree(&fixture("task-packets"), &root);
    root
}

/// Re-derives the declared digests after an edit, the way a re-review would:
/// every component digest from its file, then the review record's
/// pre-admission binding, then the review record's own digest.
pub(crate) fn rebind(root: &Path, edit: impl FnOnce(&mut Value)) {
    let pp = root.join(PACKET);
    let mut p = read_json(&pp);
    edit(&mut p);
    let file_digest = |loc: &Value| dig(&std::fs::read(root.join(loc.as_str().unwrap())).unwrap());
    p["agentInput"]["fixture"]["source"]["digest"] =
        file_digest(&p["agentInput"]["fixture"]["source"]["locator"]);
    for ptr in [
        "/restricted/referenceSolution",
        "/restricted/verifier",
        "/controlledPerturbation/reference",
    ] {
        if let Some(r) = p.pointer(ptr).cloned() {
            *p.pointer_mut(&format!("{ptr}/digest")).unwrap() = file_digest(&r["locator"]);
        }
    }
    let mut pre = p.clone();
    pre.as_object_mut().unwrap().remove("admission");
    let rr = root.join(
        p["admission"]["review"]["reviewRecord"]["locator"]
            .as_str()
            .unwrap(),
    );
    let mut review = read_json(&rr);
    review["preAdmissionDigest"] =
        json!({"algorithm": "sha256", "value": canonical_digest(&pre).hex()});
    write_json(&rr, &review);
    p["admission"]["review"]["reviewRecord"]["digest"] = dig(&std::fs::read(&rr).unwrap());
    write_json(&pp, &p);
}

fn run(env: &Env, cmd: &str, root: &Path) -> (i32, Value) {
    env.json(&["packet", cmd, root.to_str().unwrap(), PACKET])
}

/// A .tar.gz holding `files` (path, bytes, mode), built with the tar crate.
pub(crate) fn targz(files: &[(String, Vec<u8>, u32)]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (path, data, mode) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(*mode);
        h.set_mtime(0);
        h.set_cksum();
        b.append_data(&mut h, path, &data[..]).unwrap();
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &b.into_inner().unwrap()).unwrap();
    gz.finish().unwrap()
}

#[test]
fn the_sample_packet_validates_freezes_once_and_materializes_privately() {
    let env = Env::new();
    let root = packet_root(&env, "root");
    let (code, v) = run(&env, "validate", &root);
    assert_eq!(code, 0, "{v}");
    assert_eq!(run(&env, "status", &root).1["result"]["state"], "unfrozen");
    let (code, first) = run(&env, "freeze", &root);
    assert_eq!(code, 0, "{first}");
    assert_eq!(first["result"]["created"], true);
    let record_path = root.join("packets/calc-add.json.freeze.json");
    let record_bytes = std::fs::read(&record_path).unwrap();
    let record: Value = serde_json::from_slice(&record_bytes).unwrap();
    assert_eq!(record, first["result"]["record"]);
    assert_eq!(record["schemaVersion"], "ebo.task-packet-freeze/v1");
    assert!(coffer_evidence::schema::validate(
        coffer_evidence::schema::DocKind::PacketFreeze,
        &record
    )
    .is_empty());

    // Frozen again: the first record, unchanged.
    let (code, again) = run(&env, "freeze", &root);
    assert_eq!(code, 0);
    assert_eq!(again["result"]["created"], false);
    assert_eq!(again["result"]["record"], record);
    assert_eq!(std::fs::read(&record_path).unwrap(), record_bytes);
    assert_eq!(run(&env, "status", &root).1["result"]["state"], "frozen");

    // Materialize: only the include paths, private modes, exact bytes.
    let ws = env.path("ws");
    let (code, v) = materialize(&env, &root, &ws);
    assert_eq!(code, 0, "{v}");
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &str| std::fs::metadata(ws.join(p)).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(""), 0o700);
    assert_eq!(mode("src"), 0o700);
    assert_eq!(mode("src/calc.py"), 0o600);
    assert_eq!(mode("scripts/test.sh"), 0o700, "owner execute bit kept");
    assert!(!ws.join("notes").exists(), "not in includePaths");
    assert_eq!(
        std::fs::read(ws.join("src/calc.py")).unwrap(),
        b"def add(a, b):\n    return a - b\n"
    );
    let (code, v) = materialize(&env, &root, &ws);
    assert_eq!(
        (code, codes(&v)),
        (3, vec!["conflict.destination_exists".to_string()])
    );

    // Every member is findable.
    let (_, w) = env.json(&[
        "where",
        &crate::support::sha256(b"def add(a, b):\n    return a - b\n"),
    ]);
    let roots = w["result"]["roots"].as_array().unwrap();
    assert!(
        roots
            .iter()
            .any(|r| r["kind"] == "fixture-member" && r["name"] == "calc-add:src/calc.py"),
        "{w}"
    );
    let r = env.run(&["fsck", "--read-data"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

/// An edit of a packet root (files) and its packet document.
type Edit = dyn Fn(&Path, &mut Value);

#[test]
fn status_names_each_changed_component_and_freeze_refuses_the_change() {
    let env = Env::new();
    let root = packet_root(&env, "root");
    assert_eq!(run(&env, "freeze", &root).0, 0);
    let cases: Vec<(&str, Box<Edit>)> = vec![
        (
            "reference",
            Box::new(|r: &Path, _: &mut Value| {
                std::fs::write(
                    r.join("restricted/reference-solution.json"),
                    b"{\"patch\":\"other\"}\n",
                )
                .unwrap()
            }),
        ),
        (
            "verifier",
            Box::new(|r: &Path, _: &mut Value| {
                std::fs::write(
                    r.join("restricted/verifier.json"),
                    b"{\"command\":\"true\"}\n",
                )
                .unwrap()
            }),
        ),
        (
            "controlledPerturbation",
            Box::new(|r: &Path, _: &mut Value| {
                std::fs::write(
                    r.join("perturbations/calc-add.v1.json"),
                    b"{\"kind\":\"none\"}\n",
                )
                .unwrap()
            }),
        ),
        (
            "prompt",
            Box::new(|_: &Path, p: &mut Value| {
                p["agentInput"]["prompt"] = json!("Fix add() and add a test.")
            }),
        ),
        (
            "fixture",
            Box::new(|r: &Path, _: &mut Value| {
                std::fs::write(
                    r.join("fixtures/calc.tar.gz"),
                    targz(&[
                        ("README.md".into(), b"x".to_vec(), 0o644),
                        ("package.json".into(), b"{}".to_vec(), 0o644),
                        ("src/calc.py".into(), b"y".to_vec(), 0o644),
                        ("scripts/t".into(), b"z".to_vec(), 0o755),
                    ]),
                )
                .unwrap()
            }),
        ),
    ];
    for (component, change) in cases {
        let r = env.path(&format!("root-{component}"));
        copy_tree(&root, &r);
        rebind(&r, |p| change(&r, p));
        let (code, v) = run(&env, "status", &r);
        assert_eq!(code, 0, "{component}: {v}");
        assert_eq!(v["result"]["state"], "changed", "{component}: {v}");
        let changed: Vec<&str> = v["result"]["changed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        assert!(changed.contains(&component), "{component}: {changed:?}");
        let (code, v) = run(&env, "freeze", &r);
        assert_eq!(code, 3, "{component}: {v}");
        assert_eq!(codes(&v), vec!["conflict.packet_changed"]);
        // Nor is a changed packet materialized from the old freeze.
        not_materialized(&env, &r, component);
    }
    // A component edited without re-review is invalid, not changed, and
    // is not materialized: materialize hashes the fixture archive rather
    // than reading its members, which catches a changed archive all the
    // same.
    for (name, file) in [
        ("verifier", "restricted/verifier.json"),
        ("fixture", "fixtures/calc.tar.gz"),
    ] {
        let r = env.path(&format!("root-tampered-{name}"));
        copy_tree(&root, &r);
        let mut bytes = std::fs::read(r.join(file)).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(r.join(file), bytes).unwrap();
        let (code, v) = run(&env, "status", &r);
        assert_eq!(code, 1, "{name}: {v}");
        assert_eq!(v["result"]["state"], "invalid", "{name}");
        assert_eq!(codes(&v), vec!["integrity.digest_mismatch"], "{name}");
        not_materialized(&env, &r, &format!("tampered-{name}"));
    }
}

/// Materialize of `root` is refused as not frozen and writes nothing.
fn not_materialized(env: &Env, root: &Path, label: &str) {
    let ws = env.path(&format!("ws-{label}"));
    let (code, v) = materialize(env, root, &ws);
    assert_eq!(
        (code, codes(&v)),
        (3, vec!["conflict.packet_not_frozen".to_string()]),
        "{label}: {v}"
    );
    assert!(!ws.exists(), "{label}");
}

fn materialize(env: &Env, root: &Path, ws: &Path) -> (i32, Value) {
    env.json(&[
        "packet",
        "materialize",
        root.to_str().unwrap(),
        PACKET,
        ws.to_str().unwrap(),
    ])
}

#[test]
fn unadmitted_packets_cannot_be_frozen() {
    let env = Env::new();
    let root = packet_root(&env, "root");
    rebind(&root, |p| {
        p["admission"]["status"] = json!("rejected");
    });
    let rr = root.join("restricted/review-record.json");
    let mut review = read_json(&rr);
    review["decision"] = json!("rejected");
    write_json(&rr, &review);
    rebind(&root, |_| {});
    assert_eq!(
        run(&env, "status", &root).1["result"]["state"],
        "unadmitted"
    );
    let (code, v) = run(&env, "freeze", &root);
    assert_eq!(
        (code, codes(&v)),
        (3, vec!["policy.not_admitted".to_string()])
    );
    assert!(!root.join("packets/calc-add.json.freeze.json").exists());
}

#[test]
fn review_records_must_bind_the_packet() {
    let env = Env::new();
    let root = packet_root(&env, "root");
    let rr = root.join("restricted/review-record.json");
    let mut review = read_json(&rr);
    review["reviewedBy"] = json!("someone-else");
    review["decision"] = json!("rejected");
    review["preAdmissionDigest"]["value"] = json!("0".repeat(64));
    write_json(&rr, &review);
    let mut p = read_json(&root.join(PACKET));
    p["admission"]["review"]["reviewRecord"]["digest"] = dig(&std::fs::read(&rr).unwrap());
    write_json(&root.join(PACKET), &p);
    let (code, v) = run(&env, "validate", &root);
    assert_eq!(code, 1);
    let mut c = codes(&v);
    c.sort();
    assert_eq!(
        c,
        vec![
            "validation.review_decision_mismatch",
            "validation.review_digest_mismatch",
            "validation.review_mismatch"
        ]
    );
}

#[test]
fn hostile_fixture_archives_are_refused_with_codes() {
    let env = Env::new();
    let ok = |p: &str| (p.to_string(), b"x".to_vec(), 0o644);
    let base = vec![
        ok("README.md"),
        ok("package.json"),
        ok("src/calc.py"),
        ok("scripts/test.sh"),
    ];
    let raw_member = |name: &str, et: tar::EntryType, link: &str| -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (p, d, m) in &base {
            let mut h = tar::Header::new_gnu();
            h.set_size(d.len() as u64);
            h.set_mode(*m);
            h.set_cksum();
            b.append_data(&mut h, p, &d[..]).unwrap();
        }
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(et);
        h.set_size(0);
        h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        h.as_old_mut().linkname[..link.len()].copy_from_slice(link.as_bytes());
        h.set_cksum();
        b.append(&h, &[][..]).unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &b.into_inner().unwrap()).unwrap();
        gz.finish().unwrap()
    };
    let mut many = base.clone();
    many.extend((0..1001).map(|i| ok(&format!("extra/{i}"))));
    let mut bomb = base.clone();
    bomb.push(("zeros".into(), vec![0u8; 11 << 20], 0o644));
    let mut collide = base.clone();
    collide.push(ok("Readme.md"));
    collide.push(ok("README.MD"));
    let good = targz(&base);
    // A last member whose header declares more bytes than the archive holds.
    let short_member = {
        let mut b = tar::Builder::new(Vec::new());
        for (p, d, m) in &base {
            let mut h = tar::Header::new_gnu();
            h.set_size(d.len() as u64);
            h.set_mode(*m);
            h.set_cksum();
            b.append_data(&mut h, p, &d[..]).unwrap();
        }
        let mut raw = b.into_inner().unwrap();
        raw.truncate(raw.len() - 1024); // no end marker
        let mut h = tar::Header::new_gnu();
        h.set_path("big").unwrap();
        h.set_size(3 << 20);
        h.set_mode(0o644);
        h.set_cksum();
        raw.extend_from_slice(h.as_bytes());
        raw.extend_from_slice(&[7u8; 512]);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &raw).unwrap();
        gz.finish().unwrap()
    };
    let mut concatenated = good.clone();
    concatenated.extend_from_slice(&targz(&[ok("evil.sh")]));
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("short member", short_member, "validation.archive_corrupt"),
        (
            "concatenated",
            concatenated,
            "validation.archive_trailing_data",
        ),
        (
            "dot-git alias",
            raw_member(".git.", tar::EntryType::Regular, ""),
            "validation.archive_member_name",
        ),
        (
            "short name",
            raw_member("GIT~1", tar::EntryType::Regular, ""),
            "validation.archive_member_name",
        ),
        (
            "bidi",
            raw_member("src/calc\u{202E}yp.sh", tar::EntryType::Regular, ""),
            "validation.archive_member_name",
        ),
        (
            "device",
            raw_member("CON", tar::EntryType::Regular, ""),
            "validation.device_name",
        ),
        (
            "symlink",
            raw_member("link", tar::EntryType::Symlink, "/etc/passwd"),
            "validation.archive_link",
        ),
        (
            "hardlink",
            raw_member("hard", tar::EntryType::Link, "README.md"),
            "validation.archive_link",
        ),
        (
            "traversal",
            raw_member("../escape", tar::EntryType::Regular, ""),
            "validation.archive_path_traversal",
        ),
        (
            "absolute",
            raw_member("/abs", tar::EntryType::Regular, ""),
            "validation.archive_absolute_path",
        ),
        (
            "fifo",
            raw_member("fifo", tar::EntryType::Fifo, ""),
            "validation.archive_special_member",
        ),
        ("case", targz(&collide), "validation.archive_case_collision"),
        ("members", targz(&many), "limit.archive_members"),
        ("bomb", targz(&bomb), "limit.archive_expanded_bytes"),
        (
            "truncated",
            good[..good.len() - 10].to_vec(),
            "validation.archive_corrupt",
        ),
    ];
    for (name, archive, want) in cases {
        let root = packet_root(&env, &format!("root-{name}"));
        std::fs::write(root.join("fixtures/calc.tar.gz"), &archive).unwrap();
        rebind(&root, |_| {});
        for cmd in ["validate", "freeze"] {
            let (code, v) = run(&env, cmd, &root);
            assert_eq!(code, 1, "{name} {cmd}: {v}");
            assert_eq!(codes(&v), vec![want.to_string()], "{name} {cmd}: {v}");
        }
        assert!(!root.join("packets/calc-add.json.freeze.json").exists());
    }
    let (_, s) = env.json(&["stats"]);
    assert_eq!(s["result"]["objects"], 0, "refused freezes store nothing");
    assert!(env.entries("tmp").is_empty());
}

#[test]
fn include_paths_must_select_something() {
    let env = Env::new();
    let root = packet_root(&env, "root");
    rebind(&root, |p| {
        p["agentInput"]["fixture"]["materializer"]["includePaths"] = json!(["src", "docs"])
    });
    let (code, v) = run(&env, "validate", &root);
    assert_eq!(
        (code, codes(&v)),
        (1, vec!["validation.include_path_unmatched".to_string()])
    );
    assert!(v["issues"][0]["path"]
        .as_str()
        .unwrap()
        .ends_with("/includePaths/1"));
}

#[test]
fn eight_concurrent_freezes_leave_exactly_the_first_record() {
    let env = Env::new();
    let root = packet_root(&env, "root");
    let children: Vec<_> = (0..8)
        .map(|_| {
            env.command(&["--json", "packet", "freeze", root.to_str().unwrap(), PACKET])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<Value> = children
        .into_iter()
        .map(|c| {
            let o = c.wait_with_output().unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
            serde_json::from_slice(&o.stdout).unwrap()
        })
        .collect();
    let record = read_json(&root.join("packets/calc-add.json.freeze.json"));
    assert!(
        outs.iter().all(|o| o["result"]["record"] == record),
        "every caller sees the winner's record"
    );
    assert!(
        outs.iter()
            .filter(|o| o["result"]["created"] == true)
            .count()
            <= 1
    );
    let r = env.run(&["fsck", "--read-data"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn twenty_packets_with_mostly_shared_fixtures_store_the_shared_members_once() {
    let env = Env::new();
    let shared: Vec<(String, Vec<u8>, u32)> = (0..95)
        .map(|i| {
            (
                format!("src/shared{i}.txt"),
                crate::support::noise(2000, i),
                0o644,
            )
        })
        .collect();
    for n in 0..20u64 {
        let root = packet_root(&env, &format!("root{n}"));
        let mut files = shared.clone();
        files.extend((0..5).map(|i| {
            (
                format!("src/own{i}.txt"),
                crate::support::noise(2000, 1000 + n * 10 + i),
                0o644,
            )
        }));
        files.extend([
            ("README.md".to_string(), b"r".to_vec(), 0o644),
            ("package.json".to_string(), b"{}".to_vec(), 0o644),
            ("scripts/t.sh".to_string(), b"t".to_vec(), 0o755),
        ]);
        std::fs::write(root.join("fixtures/calc.tar.gz"), targz(&files)).unwrap();
        rebind(&root, |p| p["id"] = json!(format!("calc-add-{n}")));
        let (code, v) = run(&env, "freeze", &root);
        assert_eq!(code, 0, "{v}");
    }
    let (_, s) = env.json(&["stats"]);
    let f = &s["result"]["fixtures"];
    assert_eq!(f["memberReferences"], 20 * 103);
    let logical = f["logicalBytes"].as_u64().unwrap();
    let unique = f["uniqueBytes"].as_u64().unwrap();
    // 95 shared + 20 x 5 own files of 2000 bytes, plus three tiny files.
    assert!(unique < (95 + 100) * 2000 + 100, "{f}");
    assert!(logical >= 20 * 100 * 2000, "{f}");
    assert!(logical as f64 / unique as f64 > 10.0, "{f}");
}

#[test]
fn the_peer_packet_is_accepted_by_our_schema() {
    let Some(peer) = crate::support::peer_vectors("ebo") else {
        return;
    };
    let p = peer.join("task-packets/task-packet.valid.v1.json");
    let v = read_json(&p);
    assert_eq!(
        coffer_evidence::schema::validate(coffer_evidence::schema::DocKind::TaskPacket, &v),
        vec![]
    );
}
