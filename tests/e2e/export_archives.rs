//! `export pack|unpack`: reproducible archives; hostile archives refused
//! with a code and nothing left behind.

use std::io::Write;

use crate::bundles::fixture;
use crate::exports::write_policy;
use crate::support::{codes, sha256, tree, Env};

/// An archive member: name, type, bytes.
type Member = (String, tar::EntryType, Vec<u8>);

fn exported(env: &Env, dest: &str) {
    let policy = write_policy(env, "policy.json", "partner", &[]);
    let src = fixture("run-bundles/complete");
    let (code, v) = env.json(&[
        "export",
        "create",
        src.to_str().unwrap(),
        policy.to_str().unwrap(),
        dest,
    ]);
    assert_eq!(code, 0, "{v}");
}

#[test]
fn archives_are_reproducible_and_round_trip() {
    let env = Env::new();
    exported(&env, "a");
    exported(&env, "b");
    for ext in ["tar.zst", "tar.gz"] {
        let (c1, v1) = env.json(&["export", "pack", "a", &format!("a.{ext}")]);
        let (c2, v2) = env.json(&["export", "pack", "b", &format!("b.{ext}")]);
        assert_eq!((c1, c2), (0, 0), "{v1} {v2}");
        assert_eq!(
            v1["result"]["digest"], v2["result"]["digest"],
            "{ext}: same tree, same archive"
        );
        assert_eq!(
            sha256(&std::fs::read(env.path(&format!("a.{ext}"))).unwrap()),
            v1["result"]["digest"].as_str().unwrap()
        );
        let (code, v) = env.json(&["export", "unpack", &format!("a.{ext}"), &format!("u-{ext}")]);
        assert_eq!(code, 0, "{v}");
        assert_eq!(tree(&env.path(&format!("u-{ext}"))), tree(&env.path("a")));
    }
    // Never over an existing archive or directory.
    let (code, v) = env.json(&["export", "pack", "a", "a.tar.zst"]);
    assert_eq!(code, 3, "{v}");
    let (code, v) = env.json(&["export", "unpack", "a.tar.zst", "b"]);
    assert_eq!(code, 3, "{v}");
    let (code, v) = env.json(&["export", "pack", "a", "a.zip"]);
    assert_eq!(code, 2, "{v}");
}

/// Builds a .tar.gz from `(name, kind, bytes)` members with raw headers.
fn hostile(env: &Env, name: &str, members: &[(&str, tar::EntryType, Vec<u8>)]) -> String {
    let mut b = tar::Builder::new(Vec::new());
    for (path, kind, bytes) in members {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(*kind);
        h.set_size(if kind.is_file() {
            bytes.len() as u64
        } else {
            0
        });
        h.set_mode(0o644);
        {
            let raw = h.as_old_mut();
            raw.name[..path.len()].copy_from_slice(path.as_bytes());
            if kind.is_symlink() || kind.is_hard_link() {
                raw.linkname[..6].copy_from_slice(b"target");
            }
        }
        h.set_cksum();
        let body: &[u8] = if kind.is_file() { bytes } else { &[] };
        b.append(&h, body).unwrap();
    }
    let tar_bytes = b.into_inner().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&tar_bytes).unwrap();
    let file = format!("{name}.tar.gz");
    env.write(&file, &gz.finish().unwrap());
    file
}

#[test]
fn hostile_archives_are_refused_and_leave_nothing() {
    let env = Env::new();
    exported(&env, "a");
    let files = tree(&env.path("a"));
    let manifest = files
        .iter()
        .find(|(r, _)| r == "manifest.json")
        .unwrap()
        .1
        .clone();
    let session = files
        .iter()
        .find(|(r, _)| r == "session.jsonl")
        .unwrap()
        .1
        .clone();
    let all: Vec<Member> = files
        .iter()
        .map(|(r, b)| (r.clone(), tar::EntryType::Regular, b.clone()))
        .collect();
    let with = |extra: (&str, tar::EntryType, Vec<u8>)| {
        let mut v: Vec<Member> = all.clone();
        v.push((extra.0.to_string(), extra.1, extra.2));
        v
    };
    let mut tampered = session.clone();
    tampered[3] ^= 1;
    let cases: Vec<(&str, Vec<Member>, &str)> = vec![
        (
            "traversal",
            with(("../escape", tar::EntryType::Regular, b"x".to_vec())),
            "validation.archive_path_traversal",
        ),
        (
            "absolute",
            with(("/tmp/abs", tar::EntryType::Regular, b"x".to_vec())),
            "validation.archive_absolute_path",
        ),
        (
            "symlink",
            with(("link", tar::EntryType::Symlink, vec![])),
            "validation.archive_link",
        ),
        (
            "hardlink",
            with(("hard", tar::EntryType::Link, vec![])),
            "validation.archive_link",
        ),
        (
            "fifo",
            with(("pipe", tar::EntryType::Fifo, vec![])),
            "validation.archive_special_member",
        ),
        (
            "device",
            with(("con", tar::EntryType::Char, vec![])),
            "validation.archive_special_member",
        ),
        (
            "duplicate",
            with(("session.jsonl", tar::EntryType::Regular, session.clone())),
            "validation.archive_duplicate_member",
        ),
        (
            "git",
            with((".git/config", tar::EntryType::Regular, b"x".to_vec())),
            "validation.archive_member_name",
        ),
        (
            "device-name",
            with(("nul.txt", tar::EntryType::Regular, b"x".to_vec())),
            "validation.device_name",
        ),
        (
            "extra",
            with(("notes.txt", tar::EntryType::Regular, b"x".to_vec())),
            "validation.unlisted_file",
        ),
        (
            "reserved",
            with(("manifest.json/x", tar::EntryType::Regular, b"x".to_vec())),
            "validation.reserved_path",
        ),
        (
            "tampered",
            all.iter()
                .map(|(r, k, b)| {
                    (
                        r.clone(),
                        *k,
                        if r == "session.jsonl" {
                            tampered.clone()
                        } else {
                            b.clone()
                        },
                    )
                })
                .collect(),
            "integrity.digest_mismatch",
        ),
        (
            "missing",
            all.iter()
                .filter(|(r, _, _)| r != "hooks.jsonl")
                .cloned()
                .collect(),
            "validation.missing_file",
        ),
        (
            "no-manifest",
            all.iter()
                .filter(|(r, _, _)| r != "manifest.json")
                .cloned()
                .collect(),
            "validation.missing_file",
        ),
    ];
    let _ = manifest;
    for (name, members, code) in cases {
        let m: Vec<(&str, tar::EntryType, Vec<u8>)> = members
            .iter()
            .map(|(r, k, b)| (r.as_str(), *k, b.clone()))
            .collect();
        let file = hostile(&env, name, &m);
        let dest = format!("out-{name}");
        let (rc, v) = env.json(&["export", "unpack", &file, &dest]);
        assert_eq!(rc, 1, "{name}: {v}");
        assert_eq!(codes(&v)[0], code, "{name}: {v}");
        assert!(!env.path(&dest).exists(), "{name}: nothing published");
    }
    let leftovers = env.leftover_temps();
    assert_eq!(leftovers, 0, "failed unpacks leave no temp trees");
    // Not an archive at all.
    env.write("junk.tar.gz", b"not an archive");
    let (rc, v) = env.json(&["export", "unpack", "junk.tar.gz", "j"]);
    assert_eq!(rc, 1, "{v}");
    assert_eq!(codes(&v)[0], "validation.archive_format");
}

#[test]
fn unpack_is_bounded_against_bombs_and_member_floods() {
    let env = Env::new();
    // 600 MiB of zeros in one member compresses to almost nothing.
    let mut enc = zstd::Encoder::new(Vec::new(), 1).unwrap();
    {
        let mut b = tar::Builder::new(&mut enc);
        let mut h = tar::Header::new_gnu();
        h.set_size(600 << 20);
        h.set_mode(0o644);
        h.set_entry_type(tar::EntryType::Regular);
        h.set_path("session.jsonl").unwrap();
        h.set_cksum();
        b.append(&h, std::io::repeat(0).take(600 << 20)).unwrap();
        b.finish().unwrap();
    }
    env.write("bomb.tar.zst", &enc.finish().unwrap());
    let (rc, v) = env.json(&["export", "unpack", "bomb.tar.zst", "b"]);
    assert_eq!(rc, 1, "{v}");
    assert_eq!(codes(&v)[0], "limit.archive_bytes");
    assert!(!env.path("b").exists());

    let many: Vec<Member> = (0..10_001)
        .map(|i| (format!("f{i}"), tar::EntryType::Regular, vec![]))
        .collect();
    let m: Vec<(&str, tar::EntryType, Vec<u8>)> = many
        .iter()
        .map(|(r, k, b)| (r.as_str(), *k, b.clone()))
        .collect();
    let file = hostile(&env, "flood", &m);
    let (rc, v) = env.json(&["export", "unpack", &file, "f"]);
    assert_eq!(rc, 1, "{v}");
    assert_eq!(codes(&v)[0], "limit.members");
    assert!(!env.path("f").exists());
}

use std::io::Read as _;
