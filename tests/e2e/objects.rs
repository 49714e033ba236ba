//! put / get / has / ls round trips, dedup and concurrency.

use std::process::Stdio;

use serde_json::json;

use crate::support::{codes, decode_object_file, noise, sha256, Env};

fn round_trip(env: &Env, name: &str, bytes: &[u8]) {
    env.write(name, bytes);
    let digest = env.put(name);
    assert_eq!(
        digest,
        sha256(bytes),
        "{name}: key is the SHA-256 of the raw bytes"
    );
    // Via -o (verified, no-clobber) and via stdout.
    let out = format!("{name}.out");
    let r = env.run(&["get", &digest, "-o", &out]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        std::fs::read(env.path(&out)).unwrap() == bytes,
        "{name}: -o copy differs"
    );
    let r = env.run(&["get", &digest]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout == bytes, "{name}: stdout copy differs");
    // The object file is one zstd frame another tool can decode.
    assert!(decode_object_file(&env.object_file(&digest)) == bytes);
}

#[test]
fn shard_directories_are_made_by_the_puts_that_need_them() {
    let env = Env::new();
    assert_eq!(env.entries("objects/sha256"), Vec::<String>::new());
    let d = {
        env.write("one", &noise(3000, 5));
        env.put("one")
    };
    let shard = d[7..9].to_string();
    let made = env.entries("objects/sha256");
    // The put's record may have needed a shard of its own.
    assert!(made.contains(&shard) && made.len() <= 2, "{made:?}");
    assert!(env.object_file(&d).exists());
    let (code, v) = env.json(&["fsck", "--read-data"]);
    assert_eq!(code, 0, "{v}");
}

#[test]
fn round_trip_of_empty_small_and_incompressible_files() {
    let env = Env::new();
    round_trip(&env, "empty", b"");
    round_trip(&env, "small", b"{\"event\":\"tool_use\"}\n");
    round_trip(&env, "one-mib-exact", &noise(1 << 20, 1));
    round_trip(&env, "one-mib-plus-one", &noise((1 << 20) + 1, 2));
    round_trip(&env, "incompressible", &noise(5 << 20, 3));
    let r = env.run(&["fsck", "--read-data"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn round_trip_of_a_100_mib_file_compresses_text() {
    let env = Env::new();
    let line = b"{\"type\":\"observation.tool_use\",\"tool\":\"bash\",\"seq\":0000000}\n";
    let mut data = Vec::with_capacity(100 << 20);
    let mut i = 0u64;
    while data.len() < 100 << 20 {
        data.extend_from_slice(&line[..line.len() - 10]);
        data.extend_from_slice(format!("{i:07}}}\n").as_bytes());
        i += 1;
    }
    round_trip(&env, "big.jsonl", &data);
    let (_, v) = env.json(&["stats"]);
    let stored = v["result"]["storedBytes"].as_u64().unwrap();
    assert!(
        stored < data.len() as u64 / 4,
        "text should compress, stored {stored}"
    );
}

#[test]
fn re_putting_identical_content_is_a_dedup_hit() {
    let env = Env::new();
    env.write("a", b"same bytes");
    env.write("b", b"same bytes");
    let (_, first) = env.json(&["put", "a"]);
    assert_eq!(first["result"]["files"][0]["created"], true);
    let (_, again) = env.json(&["put", "a", "b"]);
    assert_eq!(again["result"]["files"][0]["created"], false);
    assert_eq!(again["result"]["files"][1]["created"], false);
    let (_, ls) = env.json(&["ls"]);
    assert_eq!(ls["result"]["objects"].as_array().unwrap().len(), 1);
    let (_, stats) = env.json(&["stats"]);
    assert_eq!(stats["result"]["objects"], 1);
    assert_eq!(stats["result"]["logicalBytes"], 20);
    assert_eq!(stats["result"]["uniqueBytes"], 10);
    assert_eq!(stats["result"]["dedupRatio"], 2.0);
}

#[test]
fn put_of_a_directory_stores_every_file_and_reports_each_digest() {
    let env = Env::new();
    env.write("tree/a.txt", b"alpha");
    env.write("tree/sub/b.txt", b"beta");
    env.write("tree/sub/dup.txt", b"alpha");
    let (code, v) = env.json(&["put", "tree"]);
    assert_eq!(code, 0, "{v}");
    let files = v["result"]["files"].as_array().unwrap();
    let got: Vec<(&str, &str)> = files
        .iter()
        .map(|f| (f["path"].as_str().unwrap(), f["digest"].as_str().unwrap()))
        .collect();
    let (a, b) = (sha256(b"alpha"), sha256(b"beta"));
    assert_eq!(
        got,
        vec![
            ("tree/a.txt", a.as_str()),
            ("tree/sub/b.txt", b.as_str()),
            ("tree/sub/dup.txt", a.as_str())
        ]
    );
    assert_eq!(v["result"]["totals"]["newObjects"], 2);
}

#[test]
fn put_of_a_tree_with_a_symlink_skips_it_and_is_incomplete() {
    let env = Env::new();
    env.write("tree/a", b"alpha");
    std::os::unix::fs::symlink("/etc/passwd", env.path("tree/link")).unwrap();
    let (code, v) = env.json(&["put", "tree"]);
    assert_eq!(code, 4, "{v}");
    assert_eq!(v["status"], "incomplete");
    assert_eq!(codes(&v), vec!["validation.not_regular_file"]);
    assert_eq!(v["issues"][0]["path"], "tree/link");
    assert_eq!(v["result"]["files"].as_array().unwrap().len(), 1);
}

#[test]
fn put_from_stdin_small_and_spooled() {
    let env = Env::new();
    for data in [b"from stdin".to_vec(), noise(3 << 20, 9)] {
        let r = env.run_stdin(&["--json", "put", "-"], &data);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let v = r.json();
        assert_eq!(v["result"]["files"][0]["digest"], sha256(&data));
        assert_eq!(v["result"]["files"][0]["size"], data.len());
    }
    assert!(env.entries("tmp").is_empty(), "spool removed");
}

#[test]
fn put_with_a_wrong_expected_digest_stores_nothing() {
    let env = Env::new();
    env.write("a", b"actual");
    let (code, v) = env.json(&["put", "a", "--expect", &sha256(b"other")]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(codes(&v), vec!["integrity.digest_mismatch"]);
    let big = noise(2 << 20, 4);
    env.write("big", &big);
    let (code, v) = env.json(&["put", "big", "--expect", &sha256(b"other")]);
    assert_eq!(
        (code, codes(&v)),
        (1, vec!["integrity.digest_mismatch".to_string()])
    );
    assert!(env.entries("tmp").is_empty(), "temp deleted");
    let (_, ls) = env.json(&["ls"]);
    assert_eq!(ls["result"]["objects"].as_array().unwrap().len(), 0);
    // The right digest is accepted.
    let (code, _) = env.json(&["put", "big", "--expect", &sha256(&big)]);
    assert_eq!(code, 0);
}

/// A large input whose expected digest names a stored object is hashed,
/// not encoded: with staging armed to crash, the re-put still succeeds;
/// bytes that differ (same size) are still refused.
#[test]
fn a_known_large_object_put_again_with_its_digest_is_only_hashed() {
    let env = Env::new();
    let big = noise(3 << 20, 7);
    env.write("big", &big);
    let d = env.put("big");
    let out = env
        .command(&["--json", "put", "big", "--expect", &d])
        .env("COFFER_CRASH_AT", "temp_written")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "the re-put staged a temp: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["result"]["files"][0]["digest"], d);
    assert!(env.entries("tmp").is_empty());
    let mut changed = big.clone();
    changed[1 << 20] ^= 1;
    env.write("changed", &changed);
    let (code, v) = env.json(&["put", "changed", "--expect", &d]);
    assert_eq!(
        (code, codes(&v)),
        (1, vec!["integrity.digest_mismatch".to_string()])
    );
    let (code, v) = env.json(&["fsck", "--read-data"]);
    assert_eq!(code, 0, "{v}");
}

#[test]
fn has_reports_presence_and_fails_when_anything_is_missing() {
    let env = Env::new();
    env.write("a", b"here");
    let d = env.put("a");
    let (code, v) = env.json(&["has", &d]);
    assert_eq!((code, v["status"].as_str()), (0, Some("accepted")));
    let missing = sha256(b"not here");
    let (code, v) = env.json(&["has", &d, &missing]);
    assert_eq!(code, 1);
    assert_eq!(v["result"]["objects"][0]["present"], true);
    assert_eq!(v["result"]["objects"][1]["present"], false);
    assert_eq!(codes(&v), vec!["io.not_found"]);
}

#[test]
fn sixteen_concurrent_processes_store_each_digest_once() {
    let env = Env::new();
    let shared = noise(3 << 20, 42);
    env.write("shared", &shared);
    for i in 0..16 {
        env.write(&format!("own/{i}"), &noise(200_000 + i, 100 + i as u64));
    }
    let children: Vec<_> = (0..16)
        .map(|i| {
            env.command(&["--json", "put", "shared", &format!("own/{i}"), "own"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let (_, ls) = env.json(&["ls"]);
    let objects = ls["result"]["objects"].as_array().unwrap();
    assert_eq!(objects.len(), 17, "one object per digest");
    let files: usize = std::fs::read_dir(env.store.join("objects/sha256"))
        .unwrap()
        .map(|s| std::fs::read_dir(s.unwrap().path()).unwrap().count())
        .sum();
    // Besides the 17 objects, each put that inserted rows committed one
    // catalog record (a put whose rows all existed already writes none).
    let (_, stats) = env.json(&["stats"]);
    let records = stats["result"]["records"].as_u64().unwrap();
    assert!((1..=16).contains(&records), "{stats}");
    assert_eq!(files, 17 + records as usize);
    let r = env.run(&["fsck", "--read-data"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn a_tree_put_of_more_files_than_one_batch_records_every_file() {
    // Tree puts commit every 8,192 files: this one takes two batches, two
    // transactions and two sealed records.
    let env = Env::new();
    let n = 8_192 + 9;
    for i in 0..n {
        env.write(
            &format!("many/d{}/f{i}", i % 64),
            format!("file {i}\n").as_bytes(),
        );
    }
    let (code, v) = env.json(&["put", "many"]);
    assert_eq!(code, 0, "{v}");
    let files = v["result"]["files"].as_array().unwrap();
    assert_eq!(files.len(), n);
    for f in files {
        let name = f["path"].as_str().unwrap();
        let i: usize = name.rsplit("/f").next().unwrap().parse().unwrap();
        assert_eq!(
            f["digest"],
            sha256(format!("file {i}\n").as_bytes()),
            "{name}"
        );
    }
    let (_, stats) = env.json(&["stats"]);
    assert_eq!(stats["result"]["objects"], json!(n), "{stats}");
    assert_eq!(
        stats["result"]["records"],
        json!(2),
        "one record per batch: {stats}"
    );
    let (code, v) = env.json(&["fsck"]);
    assert_eq!(code, 0, "{v}");
    // Every file is pinned by its own root and listed.
    let (_, ls) = env.json(&["ls"]);
    assert_eq!(ls["result"]["objects"].as_array().unwrap().len(), n);
}
