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

/// Runs `cmd` to its end, sampling its peak resident memory (`VmHWM`, KiB)
/// from /proc as it runs: (exit code, stdout, highest peak seen). A child's
/// rusage would count what it shared with this process when forked.
fn peak_rss_kib(mut cmd: std::process::Command) -> (i32, Vec<u8>, u64) {
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        stdout.read_to_end(&mut out).unwrap();
        out
    });
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if let Ok(s) = std::fs::read_to_string(&status_file) {
            let hwm = s
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok());
            peak = peak.max(hwm.unwrap_or(0));
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    };
    (status.code().unwrap(), reader.join().unwrap(), peak)
}

#[test]
fn a_huge_long_name_is_refused_unread_in_bounded_memory_and_output() {
    // A 100 MiB GNU long name compresses to a few KB; unpack peaked at
    // 642 MiB and printed a 200 MiB envelope before names were bounded.
    let env = Env::new();
    // Level 3: a level-19 encoder would leave this process large, and a
    // child's peak RSS counts what it shared with its parent at fork.
    let mut enc = zstd::Encoder::new(Vec::new(), 3).unwrap();
    {
        let mut b = tar::Builder::new(&mut enc);
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::GNULongName);
        h.set_size(100 << 20);
        h.set_path("././@LongLink").unwrap();
        h.set_cksum();
        b.append(&h, std::io::repeat(b'a').take(100 << 20)).unwrap();
        let mut f = tar::Header::new_gnu();
        f.set_size(1);
        f.set_mode(0o644);
        f.set_path("x").unwrap();
        f.set_cksum();
        b.append(&f, &b"x"[..]).unwrap();
        b.finish().unwrap();
    }
    let bytes = enc.finish().unwrap();
    assert!(bytes.len() < 64 << 10, "{}", bytes.len());
    env.write("longname.tar.zst", &bytes);
    let mut cmd = env.command(&["--json", "export", "unpack", "longname.tar.zst", "out"]);
    cmd.stdin(std::process::Stdio::null());
    let (code, out, rss) = peak_rss_kib(cmd);
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(code, 1, "{v}");
    assert_eq!(codes(&v), ["limit.archive_member_name"], "{v}");
    assert!(out.len() < 4096, "envelope of {} bytes", out.len());
    assert!(rss < 64 << 10, "peak RSS {rss} KiB");
    assert!(!env.path("out").exists());
}

#[test]
fn unpack_checks_a_real_export_archive_to_its_last_byte() {
    let env = Env::new();
    exported(&env, "a");
    for ext in ["tar.gz", "tar.zst"] {
        let (code, v) = env.json(&["export", "pack", "a", &format!("a.{ext}")]);
        assert_eq!(code, 0, "{v}");
    }
    let gz = std::fs::read(env.path("a.tar.gz")).unwrap();
    let zs = std::fs::read(env.path("a.tar.zst")).unwrap();
    // The tar crate ends an archive with exactly its two zero blocks.
    let tar_bytes = {
        let mut t = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut t)
            .unwrap();
        t
    };
    let gzip = |bytes: &[u8]| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    };
    let n = gz.len();
    let with = |base: &[u8], f: &dyn Fn(&mut Vec<u8>)| {
        let mut b = base.to_vec();
        f(&mut b);
        b
    };
    let cases: Vec<(&str, &str, Vec<u8>)> = vec![
        (
            "no gzip trailer",
            "validation.archive_corrupt",
            gz[..n - 8].to_vec(),
        ),
        (
            "bad CRC",
            "validation.archive_corrupt",
            with(&gz, &|b| b[n - 8] ^= 0xff),
        ),
        (
            "bad ISIZE",
            "validation.archive_corrupt",
            with(&gz, &|b| b[n - 1] ^= 0x40),
        ),
        (
            "a second gzip member",
            "validation.archive_trailing_data",
            with(&gz, &|b| b.extend(gzip(b"more"))),
        ),
        (
            "bytes after the gzip stream",
            "validation.archive_trailing_data",
            with(&gz, &|b| b.extend(b"junk")),
        ),
        (
            "garbage after the tar end marker",
            "validation.archive_trailing_data",
            gzip(&with(&tar_bytes, &|b| b.extend(b"garbage"))),
        ),
        (
            "no end marker",
            "validation.archive_corrupt",
            gzip(&tar_bytes[..tar_bytes.len() - 1024]),
        ),
        (
            "bytes after the zstd stream",
            "validation.archive_trailing_data",
            with(&zs, &|b| b.extend(b"junk")),
        ),
        (
            "a cut zstd frame",
            "validation.archive_corrupt",
            zs[..zs.len() - 5].to_vec(),
        ),
    ];
    for (what, want, bytes) in cases {
        let name = format!(
            "{}.tar.{}",
            what.replace(' ', "-"),
            if what.contains("zstd") { "zst" } else { "gz" }
        );
        env.write(&name, &bytes);
        let dest = format!("u-{}", what.replace(' ', "-"));
        let (code, v) = env.json(&["export", "unpack", &name, &dest]);
        assert_eq!(
            (code, codes(&v)),
            (1, vec![want.to_string()]),
            "{what}: {v}"
        );
        assert!(!env.path(&dest).exists(), "{what}");
    }
    // Valid streams in other shapes are the same archive: a gzip stream of
    // two members, a zstd stream behind a skippable frame.
    let mut two = gzip(&tar_bytes[..700]);
    two.extend(gzip(&tar_bytes[700..]));
    let mut skipping = vec![0x5e, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, b'a', b'b', b'c'];
    skipping.extend(&zs);
    for (name, bytes) in [("two.tar.gz", two), ("skip.tar.zst", skipping)] {
        env.write(name, &bytes);
        let (code, v) = env.json(&["export", "unpack", name, &format!("u-{name}")]);
        assert_eq!(code, 0, "{name}: {v}");
        assert_eq!(tree(&env.path(&format!("u-{name}"))), tree(&env.path("a")));
    }
}

#[test]
fn unpack_and_packet_fixtures_share_one_set_of_name_rules() {
    // A case collision and a file under a file's name were io errors or
    // unchecked at unpack, and refused by the fixture reader.
    let env = Env::new();
    let file = |p: &'static str| (p, tar::EntryType::Regular, b"x".to_vec());
    for (name, members, want) in [
        (
            "case",
            vec![file("Notes.md"), file("notes.md")],
            "validation.archive_case_collision",
        ),
        (
            "clash",
            vec![file("a/b.txt"), file("a")],
            "validation.archive_path_conflict",
        ),
    ] {
        let archive = hostile(&env, name, &members);
        let (code, v) = env.json(&["export", "unpack", &archive, &format!("u-{name}")]);
        assert_eq!(
            (code, codes(&v)),
            (1, vec![want.to_string()]),
            "{name}: {v}"
        );
        assert!(!env.path(&format!("u-{name}")).exists());
    }
}
