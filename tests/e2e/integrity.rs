//! Corruption, planted symlinks, no-clobber, fsck and gc.

use std::os::unix::fs::PermissionsExt;

use crate::support::{codes, issue_paths, noise, sha256, Env};

fn make_writable(p: &std::path::Path) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o644)).unwrap();
}

fn corrupt_middle(p: &std::path::Path) {
    make_writable(p);
    let mut b = std::fs::read(p).unwrap();
    let mid = b.len() / 2;
    b[mid] ^= 0x5a;
    std::fs::write(p, b).unwrap();
}

#[test]
fn corrupt_object_is_detected_by_get_and_quarantined() {
    let env = Env::new();
    env.write("a", &b"evidence line\n".repeat(1000));
    let d = env.put("a");
    corrupt_middle(&env.object_file(&d));
    let r = env.run(&["get", &d]);
    assert_eq!(r.code, 1);
    assert!(
        r.stdout.is_empty(),
        "no byte of a corrupt object reaches stdout"
    );
    assert!(
        r.stderr.contains("integrity.digest_mismatch"),
        "{}",
        r.stderr
    );
    assert!(!env.object_file(&d).exists(), "moved out of objects/");
    assert_eq!(env.entries("quarantine").len(), 1);
    // The catalog still names it, so fsck reports it missing and quarantined.
    let (code, v) = env.json(&["fsck"]);
    assert_eq!(code, 1);
    let c = codes(&v);
    assert!(c.contains(&"integrity.missing_object".to_string()), "{c:?}");
    assert!(
        c.contains(&"integrity.quarantined_object".to_string()),
        "{c:?}"
    );
    // Putting the good bytes again restores the object.
    env.put("a");
    let r = env.run(&["get", &d, "-o", "restored"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn get_to_a_file_never_publishes_corrupt_bytes() {
    let env = Env::new();
    env.write("a", &noise(3 << 20, 5));
    let d = env.put("a");
    corrupt_middle(&env.object_file(&d));
    let (code, v) = env.json(&["get", &d, "-o", "out"]);
    assert_eq!(code, 1);
    assert_eq!(codes(&v), vec!["integrity.digest_mismatch"]);
    assert!(!env.path("out").exists());
    assert_eq!(
        env.leftover_temps(),
        0,
        "temp beside the destination removed"
    );
}

#[test]
fn fsck_read_data_finds_and_quarantines_corruption() {
    let env = Env::new();
    env.write("a", b"first object");
    env.write("b", b"second object");
    let da = env.put("a");
    let db = env.put("b");
    assert_eq!(env.run(&["fsck"]).code, 0);
    corrupt_middle(&env.object_file(&db));
    // Without --read-data the damage is invisible (sizes match).
    assert_eq!(env.run(&["fsck"]).code, 0);
    let (code, v) = env.json(&["fsck", "--read-data"]);
    assert_eq!(code, 1);
    assert_eq!(v["status"], "failed");
    assert_eq!(codes(&v), vec!["integrity.digest_mismatch"]);
    assert_eq!(v["issues"][0]["path"], db.as_str());
    assert!(env.object_file(&da).exists());
    assert!(!env.object_file(&db).exists());
    assert_eq!(env.entries("quarantine").len(), 1);
}

#[test]
fn a_symlink_planted_in_objects_is_never_followed() {
    let env = Env::new();
    let secret = env.write("outside/secret", b"not an object");
    let d = sha256(b"not an object");
    let obj = env.object_file(&d);
    std::fs::create_dir_all(obj.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&secret, &obj).unwrap();
    let r = env.run(&["get", &d]);
    assert_ne!(r.code, 0);
    assert!(r.stdout.is_empty());
    let (code, v) = env.json(&["fsck"]);
    assert_eq!(code, 1);
    assert_eq!(codes(&v), vec!["integrity.unexpected_entry"]);
    // A symlinked shard directory is refused too.
    let other = sha256(b"x");
    let hex = &other[7..];
    let shard = env.store.join("objects/sha256").join(&hex[..2]);
    // Shards are made on demand, so the link takes a name no put has
    // made yet, which the put must not adopt.
    assert!(
        std::fs::symlink_metadata(&shard).is_err(),
        "test needs a shard no object uses yet"
    );
    std::os::unix::fs::symlink(env.path("outside"), &shard).unwrap();
    env.write("x", b"x");
    let (code, v) = env.json(&["put", "x"]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(codes(&v), vec!["integrity.unexpected_entry"]);
    assert_eq!(
        std::fs::read_dir(env.path("outside")).unwrap().count(),
        1,
        "nothing written through the link"
    );
    assert_eq!(std::fs::read(&secret).unwrap(), b"not an object");
}

#[test]
fn get_refuses_to_overwrite_an_existing_file() {
    let env = Env::new();
    env.write("a", b"object");
    let d = env.put("a");
    env.write("dest", b"precious");
    let (code, v) = env.json(&["get", &d, "-o", "dest"]);
    assert_eq!(code, 3);
    assert_eq!(v["status"], "blocked");
    assert_eq!(codes(&v), vec!["conflict.destination_exists"]);
    assert_eq!(std::fs::read(env.path("dest")).unwrap(), b"precious");
}

#[test]
fn fsck_reports_orphans_stale_temps_and_gc_reclaims_them_after_grace() {
    let env = Env::new();
    env.write("kept", b"pinned object");
    let kept = env.put("kept");
    env.write("loose", b"unpinned object");
    let (_, v) = env.json(&["put", "--no-pin", "loose"]);
    let loose = v["result"]["files"][0]["digest"]
        .as_str()
        .unwrap()
        .to_string();
    // An orphan: a valid object file with no catalog row (a put that died
    // between publication and commit), and a stale temp.
    let orphan_bytes = b"orphan";
    let orphan = sha256(orphan_bytes);
    let path = env.object_file(&orphan);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, zstd::encode_all(&orphan_bytes[..], 3).unwrap()).unwrap();
    std::fs::write(env.store.join("tmp/obj.1.1.dead"), b"partial").unwrap();

    let (code, v) = env.json(&["fsck"]);
    assert_eq!(code, 1);
    let mut c = codes(&v);
    c.sort();
    assert_eq!(c, vec!["integrity.orphan_object", "integrity.stale_temp"]);

    // Within the grace period nothing goes.
    let (code, v) = env.json(&["gc"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["result"]["unreachable"].as_array().unwrap().len(), 0);
    assert_eq!(v["result"]["orphans"].as_array().unwrap().len(), 0);

    // A dry run names everything and removes nothing.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let (code, v) = env.json(&["gc", "--dry-run", "--grace", "0s"]);
    assert_eq!(code, 0);
    assert_eq!(v["result"]["unreachable"], serde_json::json!([loose]));
    assert_eq!(v["result"]["orphans"], serde_json::json!([orphan]));
    assert_eq!(v["result"]["temps"].as_array().unwrap().len(), 1);
    assert!(env.object_file(&loose).exists());

    let (code, _) = env.json(&["gc", "--grace", "0s"]);
    assert_eq!(code, 0);
    assert!(!env.object_file(&loose).exists());
    assert!(!env.object_file(&orphan).exists());
    assert!(env.object_file(&kept).exists(), "rooted object kept");
    assert!(env.entries("tmp").is_empty());
    let r = env.run(&["fsck", "--read-data"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = env.run(&["has", &kept]);
    assert_eq!(r.code, 0);
}

#[test]
fn gc_never_deletes_quarantined_objects() {
    let env = Env::new();
    env.write("a", b"will be damaged");
    let d = env.put("a");
    corrupt_middle(&env.object_file(&d));
    assert_eq!(env.run(&["fsck", "--read-data"]).code, 1);
    let q = env.entries("quarantine");
    assert_eq!(q.len(), 1);
    assert_eq!(env.run(&["gc", "--grace", "0s"]).code, 0);
    assert_eq!(env.entries("quarantine"), q);
}

#[test]
fn a_symlinked_catalog_is_refused() {
    let env = Env::new();
    let cat = env.store.join("catalog.sqlite");
    std::fs::rename(&cat, env.path("real.sqlite")).unwrap();
    std::os::unix::fs::symlink(env.path("real.sqlite"), &cat).unwrap();
    let (code, v) = env.json(&["ls"]);
    assert_eq!(code, 1);
    assert_eq!(codes(&v), vec!["integrity.unexpected_entry"]);
}

#[test]
fn gc_racing_puts_never_loses_an_object_a_put_reported() {
    let env = Env::new();
    for i in 0..150 {
        env.write(&format!("tree/f{i}"), &noise(500 + i * 13, i as u64));
    }
    // Unrooted copies first: exactly what gc may delete while the pinned
    // puts below find them by dedup.
    assert_eq!(env.json(&["put", "--no-pin", "tree"]).0, 0);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let mut kids: Vec<std::process::Child> = Vec::new();
    for i in 0..12 {
        let args: &[&str] = if i % 3 == 0 {
            &["gc", "--grace", "0s"]
        } else {
            &["put", "tree"]
        };
        kids.push(
            env.command(args)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap(),
        );
    }
    for k in kids {
        assert!(k.wait_with_output().unwrap().status.success());
    }
    let digests: Vec<String> = (0..150)
        .map(|i| crate::support::sha256(&noise(500 + i * 13, i as u64)))
        .collect();
    let mut args = vec!["has"];
    args.extend(digests.iter().map(String::as_str));
    let (code, v) = env.json(&args);
    assert_eq!(code, 0, "a pinned object vanished: {v}");
    let (code, v) = env.json(&["fsck", "--read-data"]);
    assert_eq!(code, 0, "{v}");
}

#[test]
fn a_planted_decompression_bomb_is_stopped_by_the_frame_size() {
    let env = Env::new();
    // An uncataloged "object": a frame without a content size that inflates
    // to 64 MiB. Reads are bounded by a known size, so it is refused unread.
    let claimed = sha256(b"0123456789");
    let path = env.object_file(&claimed);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut enc = zstd::stream::Encoder::new(Vec::new(), 19).unwrap();
    enc.set_pledged_src_size(None).unwrap();
    std::io::Write::write_all(&mut enc, &vec![0u8; 64 << 20]).unwrap();
    let bomb = enc.finish().unwrap();
    assert!(bomb.len() < 64 << 10);
    std::fs::write(&path, &bomb).unwrap();
    let (code, v) = env.json(&["fsck", "--read-data"]);
    assert_eq!(code, 1);
    let c = codes(&v);
    assert!(c.contains(&"integrity.orphan_object".to_string()), "{v}");
    assert!(c.contains(&"integrity.digest_mismatch".to_string()), "{v}");
    assert!(!path.exists(), "quarantined");
}

#[test]
fn fsck_reports_the_catalog_s_own_problems_first_then_the_objects() {
    // SQLite's checks run on a second connection beside the listing of
    // the objects; the report keeps the order of one pass.
    let env = Env::new();
    env.write("a", b"kept");
    env.put("a");
    env.write("b", b"lost");
    let lost = env.put("b");
    let ghost = format!("sha256:{}", "0".repeat(64));
    let conn = rusqlite::Connection::open(env.store.join("catalog.sqlite")).unwrap();
    conn.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
    conn.execute(
        "INSERT INTO roots (kind, name, digest, created_ms) VALUES ('put', 'ghost', ?1, 1)",
        [&ghost],
    )
    .unwrap();
    drop(conn);
    std::fs::remove_file(env.object_file(&lost)).unwrap();
    let (code, v) = env.json(&["fsck"]);
    assert_ne!(code, 0, "{v}");
    assert_eq!(
        codes(&v),
        [
            "integrity.catalog",
            "integrity.dangling_reference",
            "integrity.missing_object"
        ],
        "{v}"
    );
    let paths = issue_paths(&v);
    assert_eq!(paths[1], ghost);
    assert_eq!(paths[2], lost);
}

#[test]
fn a_store_missing_a_layout_directory_says_which_and_does_not_crash() {
    for (gone, named) in [("objects", "objects/sha256"), ("tmp", "tmp")] {
        let env = Env::new();
        env.write("a", b"evidence\n");
        std::fs::remove_dir_all(env.store.join(gone)).unwrap();
        for args in [
            &["put", "a"][..],
            &["fsck"],
            &["has", &sha256(b"evidence\n")],
        ] {
            let (code, v) = env.json(args);
            assert_eq!(code, 1, "{gone} {args:?}: {v}");
            assert_eq!(codes(&v), vec!["io.not_found"], "{gone} {args:?}: {v}");
            let path = &issue_paths(&v)[0];
            assert!(path.ends_with(named), "{gone} {args:?}: {v}");
        }
    }
}
