//! `mirror` and `catalog rebuild` against what runs beside them: gc on the
//! destination, puts on the source, objects gc reclaimed, dangling refs and
//! damaged copies. Each test failed before its fix (reliability round 3).

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::bundles::{copy_tree, fixture, rebrand};
use crate::support::{codes, Env};

/// Starts `coffer --json ARGS` in `env`, stopped at crash point `point`
/// (`COFFER_PAUSE_AT`), and waits until it stands there; removing the
/// returned file lets it go on.
fn paused(env: &Env, point: &str, args: &[&str]) -> (Child, std::path::PathBuf) {
    let flag = env.path(&format!("paused-at-{point}"));
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let child = env
        .command(&all)
        .env("COFFER_PAUSE_AT", format!("{point}:{}", flag.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !flag.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{args:?} never reached {point}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    (child, flag)
}

/// Waits for a child started by [`paused`] or [`spawned`]: (exit code, envelope).
fn finished(child: Child) -> (i32, Value) {
    let out = child.wait_with_output().unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not one envelope ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap(), v)
}

fn spawned(env: &Env, args: &[&str]) -> Child {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    env.command(&all)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Ingests a copy of the observational fixture rebranded as bundle `id`.
fn ingest_as(env: &Env, id: &str) {
    let dir = env.path(&format!("bundles/{id}"));
    copy_tree(&fixture("run-bundles/observational-completed"), &dir);
    rebrand(&dir, id, &format!("{id}-attempt"));
    let (code, v) = env.json(&["bundle", "ingest", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
}

fn bundle_ids(env: &Env) -> Vec<String> {
    let r = env.run(&["bundle", "ls", "--format", "jsonl"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let mut ids: Vec<String> = String::from_utf8(r.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["bundleId"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    ids.sort();
    ids
}

/// `fsck --read-data` finds every cataloged object present and re-hashing
/// to its name, and no ref the catalog lacks. Orphans (objects copied for a
/// ref a later mirror brings, or whose ref was not copied) are legal, and
/// so is what `allowed` names.
fn clean_but(env: &Env, what: &str, allowed: &[&str]) {
    let (_, v) = env.json(&["fsck", "--read-data"]);
    let bad: Vec<String> = codes(&v)
        .into_iter()
        .filter(|c| c != "integrity.orphan_object" && !allowed.contains(&c.as_str()))
        .collect();
    assert!(bad.is_empty(), "{what}: {v}");
    assert!(v["result"]["verified"].as_u64().unwrap() > 0, "{what}: {v}");
}

fn clean(env: &Env, what: &str) {
    clean_but(env, what, &[]);
}

fn store_arg(env: &Env) -> &str {
    env.store.to_str().unwrap()
}

#[test]
fn gc_on_the_destination_waits_for_a_mirror_into_it() {
    // The mirror stands after its objects are copied and before the refs
    // that keep them alive: a gc of the destination then would reclaim
    // every copy as an orphan (594 of 600 in the red team's run).
    let (src, dst) = (Env::new(), Env::new());
    ingest_as(&src, "mirrored-a");
    ingest_as(&src, "mirrored-b");
    let (mirror, flag) = paused(&src, "mirror_objects_synced", &["mirror", store_arg(&dst)]);
    let mut gc = spawned(&dst, &["gc", "--grace", "0s"]);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        gc.try_wait().unwrap().is_none(),
        "gc ran while a mirror into its store was under way"
    );
    std::fs::remove_file(&flag).unwrap();
    let (code, v) = finished(mirror);
    assert_eq!(code, 0, "{v}");
    let (code, v) = finished(gc);
    assert_eq!(code, 0, "{v}");
    assert_eq!(bundle_ids(&dst), ["mirrored-a", "mirrored-b"]);
    clean(&dst, "after mirror and gc");
    for id in ["mirrored-a", "mirrored-b"] {
        let out = dst.path(&format!("checkout-{id}"));
        let (code, v) = dst.json(&["bundle", "checkout", id, out.to_str().unwrap()]);
        assert_eq!(code, 0, "{id}: {v}");
    }
}

#[test]
fn a_put_that_finishes_during_a_mirror_arrives_whole_or_not_at_all() {
    // The new bundle's ref appears after the mirror listed the objects: it
    // used to be copied without them, leaving the destination cataloging
    // evidence it does not hold while mirror said `accepted`.
    let (src, dst) = (Env::new(), Env::new());
    ingest_as(&src, "before");
    let (mirror, flag) = paused(&src, "mirror_objects_synced", &["mirror", store_arg(&dst)]);
    ingest_as(&src, "during");
    std::fs::remove_file(&flag).unwrap();
    let (code, v) = finished(mirror);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["status"], "accepted");
    assert_eq!(bundle_ids(&dst), ["before"]);
    clean(&dst, "after the first mirror");
    // The next mirror brings the rest.
    let (code, v) = src.json(&["mirror", store_arg(&dst)]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(bundle_ids(&dst), ["before", "during"]);
    clean(&dst, "after the second mirror");
}

#[test]
fn mirrors_running_against_concurrent_puts_leave_every_cataloged_object_present() {
    let (src, dst) = (Env::new(), Env::new());
    ingest_as(&src, "seed");
    let writer = {
        let store = src.store.clone();
        let dir = src.path("puts");
        std::thread::spawn(move || {
            std::fs::create_dir_all(&dir).unwrap();
            for i in 0..40 {
                let f = dir.join(format!("p{i}"));
                std::fs::write(&f, format!("put during mirrors {i}\n").repeat(i + 1)).unwrap();
                let out = std::process::Command::new(crate::support::bin())
                    .arg("--store")
                    .arg(&store)
                    .arg("put")
                    .arg(&f)
                    .env_remove("COFFER_STORE")
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        })
    };
    let mut mirrors = 0;
    while !writer.is_finished() || mirrors < 3 {
        let (code, v) = src.json(&["mirror", store_arg(&dst)]);
        assert_eq!(code, 0, "mirror {mirrors}: {v}");
        clean(&dst, &format!("after mirror {mirrors}"));
        mirrors += 1;
    }
    writer.join().unwrap();
    let (code, v) = src.json(&["mirror", store_arg(&dst)]);
    assert_eq!(code, 0, "{v}");
    clean(&dst, "after the last mirror");
    assert_eq!(
        crate::backends::dump_catalog(&dst),
        crate::backends::dump_catalog(&src)
    );
}

/// Deletes every object file of `env` whose digest is `d` (sha256:hex).
fn delete_object(env: &Env, d: &str) {
    let f = env.object_file(d);
    std::fs::remove_file(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
}

#[test]
fn objects_gc_reclaimed_never_come_back_through_rebuild_or_mirror() {
    let src = Env::new();
    src.write("gone.txt", b"reclaimed by gc: nothing roots a plain put\n");
    let (code, v) = src.json(&["put", "--no-pin", "gone.txt"]);
    assert_eq!(code, 0, "{v}");
    let gone = v["result"]["files"][0]["digest"]
        .as_str()
        .unwrap()
        .to_string();
    ingest_as(&src, "rooted");
    let (code, v) = src.json(&["gc", "--grace", "0s"]);
    assert_eq!(code, 0, "{v}");
    assert!(!src.object_file(&gone).exists());
    let listed = |env: &Env| String::from_utf8(env.run(&["ls"]).stdout).unwrap();
    assert!(!listed(&src).contains(&gone));

    // A mirror replays the put's record into a new catalog.
    let dst = Env::new();
    let (code, v) = src.json(&["mirror", store_arg(&dst)]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["result"]["catalog"]["objectsAbsent"], 1, "{v}");
    assert!(!listed(&dst).contains(&gone), "{}", listed(&dst));
    clean(&dst, "mirror");

    // So does the documented recovery, on a catalog lost whole.
    for f in std::fs::read_dir(&src.store).unwrap() {
        let name = f.unwrap().file_name().to_string_lossy().into_owned();
        if name.starts_with("catalog") {
            std::fs::remove_file(src.store.join(name)).unwrap();
        }
    }
    let (code, v) = src.json(&["catalog", "rebuild"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["result"]["objectsAbsent"], 1, "{v}");
    assert!(!listed(&src).contains(&gone));
    assert_eq!(bundle_ids(&src), ["rooted"]);
    clean(&src, "rebuild");
}

#[test]
fn a_rooted_object_the_store_lost_breaks_its_ref_instead_of_being_cataloged() {
    // A bundle's artifact is gone: rebuild leaves the bundle out and says
    // so (`incomplete`), rather than catalog what the store does not hold.
    let src = Env::new();
    ingest_as(&src, "lost-one");
    let (_, v) = src.json(&["bundle", "show", "lost-one"]);
    let artifact = v["result"]["artifacts"][0]["digest"]
        .as_str()
        .unwrap()
        .to_string();
    delete_object(&src, &artifact);
    for f in std::fs::read_dir(&src.store).unwrap() {
        let name = f.unwrap().file_name().to_string_lossy().into_owned();
        if name.starts_with("catalog") {
            std::fs::remove_file(src.store.join(name)).unwrap();
        }
    }
    let (code, v) = src.json(&["catalog", "rebuild"]);
    assert_eq!(code, 4, "{v}");
    assert_eq!(v["status"], "incomplete");
    assert!(
        codes(&v).contains(&"integrity.missing_object".to_string()),
        "{v}"
    );
    assert!(bundle_ids(&src).is_empty());
    clean_but(&src, "rebuild", &["integrity.unapplied_ref"]);
}

#[test]
fn a_dangling_ref_is_reported_and_not_copied() {
    let (src, dst) = (Env::new(), Env::new());
    ingest_as(&src, "whole");
    ingest_as(&src, "dangling");
    let key = "refs/bundles/dangling";
    let doc: Value = serde_json::from_slice(&std::fs::read(src.store.join(key)).unwrap()).unwrap();
    delete_object(&src, doc["record"].as_str().unwrap());
    let (code, v) = src.json(&["mirror", store_arg(&dst)]);
    assert_eq!(code, 4, "{v}");
    assert_eq!(v["status"], "incomplete");
    assert_eq!(v["result"]["refsSkipped"][0]["key"], key, "{v}");
    assert!(
        codes(&v).contains(&"integrity.dangling_reference".to_string()),
        "{v}"
    );
    assert!(!dst.store.join(key).exists());
    assert_eq!(bundle_ids(&dst), ["whole"]);
    clean(&dst, "mirror");
}

#[test]
fn a_mirror_repairs_an_emptied_object_at_the_destination() {
    let (src, dst) = (Env::new(), Env::new());
    ingest_as(&src, "repaired");
    let (code, v) = src.json(&["mirror", store_arg(&dst)]);
    assert_eq!(code, 0, "{v}");
    let (_, v) = dst.json(&["bundle", "show", "repaired"]);
    let digest = v["result"]["artifacts"][0]["digest"]
        .as_str()
        .unwrap()
        .to_string();
    let f = dst.object_file(&digest);
    let mut perms = std::fs::metadata(&f).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o644);
    std::fs::set_permissions(&f, perms).unwrap();
    std::fs::write(&f, b"").unwrap();
    let (code, v) = src.json(&["mirror", store_arg(&dst)]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["result"]["objectsCopied"], 1, "{v}");
    let (code, v) = dst.json(&["get", &digest, "-o", dst.path("out").to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    clean_but(&dst, "after the repair", &["integrity.quarantined_object"]);
    assert!(
        Path::new(&dst.store.join("quarantine"))
            .read_dir()
            .unwrap()
            .count()
            > 0
    );
}
