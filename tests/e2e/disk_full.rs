//! Disk full and read-only stores, on a small tmpfs mounted for the test
//! (needs root, as CI has; set COFFER_SKIP_MOUNT_TESTS=1 to skip elsewhere).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{codes, noise, Env};

/// Runs `coffer --json --store STORE ARGS`; the process must exit, not crash.
fn run_in(env: &Env, store: &Path, args: &[&str]) -> (i32, serde_json::Value) {
    let mut all = vec!["--json", "--store", store.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = Command::new(crate::support::bin())
        .current_dir(env.dir.path())
        .args(&all)
        .output()
        .unwrap();
    let code = out
        .status
        .code()
        .unwrap_or_else(|| panic!("crashed: {}", String::from_utf8_lossy(&out.stderr)));
    (code, serde_json::from_slice(&out.stdout).unwrap())
}

/// Whether a setup that needs root succeeded; when it did not, the test is
/// skipped only if COFFER_SKIP_MOUNT_TESTS says so (CI runs as root).
fn root_only(ok: bool, what: &str) -> bool {
    if !ok {
        assert!(
            std::env::var_os("COFFER_SKIP_MOUNT_TESTS").is_some(),
            "could not {what} (run as root, or set COFFER_SKIP_MOUNT_TESTS=1)"
        );
        crate::support::skipped(&format!("could not {what}"));
    }
    ok
}

struct Mount(PathBuf);

impl Mount {
    fn tmpfs(dir: &Path, size: &str) -> Option<Mount> {
        std::fs::create_dir_all(dir).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        root_only(ok, &format!("mount a tmpfs at {}", dir.display()))
            .then(|| Mount(dir.to_path_buf()))
    }

    fn remount(&self, opts: &str) {
        assert!(Command::new("mount")
            .args(["-o", &format!("remount,{opts}")])
            .arg(&self.0)
            .status()
            .unwrap()
            .success());
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_gives_io_no_space_and_keeps_everything_already_stored() {
    let env = Env::bare();
    let Some(_m) = Mount::tmpfs(&env.path("small"), "12m") else {
        return;
    };
    let store = env.path("small/store");
    let run = |args: &[&str]| run_in(&env, &store, args);
    assert_eq!(run(&["init"]).0, 0);
    env.write("keep", &noise(1 << 20, 1));
    let (code, v) = run(&["put", "keep"]);
    assert_eq!(code, 0, "{v}");
    let keep = v["result"]["files"][0]["digest"]
        .as_str()
        .unwrap()
        .to_string();

    // One large incompressible file that cannot fit.
    env.write("huge", &noise(20 << 20, 2));
    let (code, v) = run(&["put", "huge"]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(codes(&v), vec!["io.no_space"]);
    // Many small files until the disk fills.
    for i in 0..400 {
        env.write(&format!("many/f{i}"), &noise(40_000, 100 + i));
    }
    let (code, v) = run(&["put", "many"]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(codes(&v), vec!["io.no_space"]);

    assert_eq!(
        std::fs::read_dir(store.join("tmp")).unwrap().count(),
        0,
        "temps removed"
    );
    let (code, v) = run(&["has", &keep]);
    assert_eq!(code, 0, "{v}");
    let (_, v) = run(&["fsck", "--read-data"]);
    for c in codes(&v) {
        assert!(c == "integrity.orphan_object", "after ENOSPC: {v}");
    }
    assert_eq!(run(&["gc", "--grace", "0s"]).0, 0);
    let (code, v) = run(&["fsck", "--read-data"]);
    assert_eq!(code, 0, "{v}");
}

#[test]
fn a_read_only_store_refuses_writes_clearly_and_still_reads() {
    let env = Env::bare();
    let Some(m) = Mount::tmpfs(&env.path("ro"), "16m") else {
        return;
    };
    let store = env.path("ro/store");
    let run = |args: &[&str]| run_in(&env, &store, args);
    assert_eq!(run(&["init"]).0, 0);
    env.write("a", b"stored before the remount");
    let (_, v) = run(&["put", "a"]);
    let d = v["result"]["files"][0]["digest"]
        .as_str()
        .unwrap()
        .to_string();
    m.remount("ro");
    env.write("b", b"new");
    let (code, v) = run(&["put", "b"]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(codes(&v), vec!["io.read_only"], "{v}");
    let out = env.path("copy");
    let (code, v) = run(&["get", &d, "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(std::fs::read(&out).unwrap(), b"stored before the remount");
    m.remount("rw");
}

#[test]
fn an_export_onto_a_full_disk_fails_cleanly_and_leaves_nothing() {
    let env = Env::new();
    let small = env.path("small");
    let Some(_m) = Mount::tmpfs(&small, "64k") else {
        return;
    };
    // A bundle whose session is larger than the whole tmpfs.
    let src = env.path("big");
    crate::bundles::copy_tree(&crate::bundles::fixture("run-bundles/complete"), &src);
    let mut session = String::new();
    for i in 0..4000 {
        session.push_str(&format!(
            "{{\"type\":\"assistant.message\",\"text\":\"line {i} of a long session\"}}\n"
        ));
    }
    std::fs::write(src.join("session.jsonl"), session).unwrap();
    crate::exports::refresh(&src, "session.jsonl");
    let policy = crate::exports::write_policy(&env, "policy.json", "partner", &[]);
    let dest = small.join("out");
    let (code, v) = run_in(
        &env,
        &env.store,
        &[
            "export",
            "create",
            src.to_str().unwrap(),
            policy.to_str().unwrap(),
            dest.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 1, "{v}");
    assert_eq!(codes(&v)[0], "io.no_space", "{v}");
    assert!(!dest.exists());
    assert_eq!(
        std::fs::read_dir(&small).unwrap().count(),
        0,
        "the temp tree is gone"
    );
}

#[test]
fn an_ingest_onto_a_full_disk_fails_cleanly_and_stores_nothing() {
    let env = Env::bare();
    let Some(_m) = Mount::tmpfs(&env.path("small"), "12m") else {
        return;
    };
    let store = env.path("small/store");
    let run = |args: &[&str]| run_in(&env, &store, args);
    assert_eq!(run(&["init"]).0, 0);
    // A valid bundle whose incompressible telemetry cannot fit.
    let src = env.path("big");
    crate::bundles::copy_tree(&crate::bundles::fixture("run-bundles/complete"), &src);
    let blob: String = noise(16 << 20, 9)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    std::fs::write(
        src.join("telemetry/trace.json"),
        serde_json::to_vec(&serde_json::json!({"traceId": "trace-coffer-complete", "blob": blob}))
            .unwrap(),
    )
    .unwrap();
    crate::exports::refresh(&src, "telemetry/trace.json");
    let (code, v) = run(&["bundle", "ingest", src.to_str().unwrap()]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(codes(&v), vec!["io.no_space"], "{v}");
    assert_eq!(
        std::fs::read_dir(store.join("tmp")).unwrap().count(),
        0,
        "temps removed"
    );
    let (code, v) = run(&["bundle", "ls", "--json"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        v["result"]["bundles"].as_array().unwrap().len(),
        0,
        "no partial bundle"
    );
    assert_eq!(run(&["gc", "--grace", "0s"]).0, 0);
    let (code, v) = run(&["fsck", "--read-data"]);
    assert_eq!(code, 0, "{v}");
}

/// Fills the filesystem holding `dir` until a write fails with ENOSPC.
fn fill(dir: &Path) {
    use std::io::Write;
    let mut f = std::fs::File::create(dir.join("filler")).unwrap();
    let block = vec![0x5a_u8; 64 << 10];
    loop {
        match f.write_all(&block) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(28) => break,
            Err(e) => panic!("filling: {e}"),
        }
    }
    let tail = [0x5a_u8; 1];
    while f.write_all(&tail).is_ok() {}
}

#[test]
fn an_unpack_onto_a_full_disk_is_io_no_space_not_a_bad_archive() {
    let env = Env::new();
    let policy = crate::exports::write_policy(&env, "policy.json", "partner", &[]);
    let src = crate::bundles::fixture("run-bundles/complete");
    let (code, v) = env.json(&[
        "export",
        "create",
        src.to_str().unwrap(),
        policy.to_str().unwrap(),
        "out",
    ]);
    assert_eq!(code, 0, "{v}");
    let archive = env.path("out.tar.zst");
    assert_eq!(
        env.json(&["export", "pack", "out", archive.to_str().unwrap()])
            .0,
        0
    );
    let Some(_m) = Mount::tmpfs(&env.path("small"), "256k") else {
        return;
    };
    fill(&env.path("small"));
    let dest = env.path("small/unpacked");
    let (code, v) = env.json(&[
        "export",
        "unpack",
        archive.to_str().unwrap(),
        dest.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(codes(&v), ["io.no_space"], "{v}");
    let left: Vec<_> = std::fs::read_dir(env.path("small")).unwrap().collect();
    assert_eq!(left.len(), 1, "only the filler: {left:?}");
}

/// Makes a directory immutable (even to root) for the test's duration.
struct Immutable(PathBuf);

impl Immutable {
    fn new(dir: &Path) -> Option<Immutable> {
        std::fs::create_dir_all(dir).unwrap();
        let ok = Command::new("chattr")
            .arg("+i")
            .arg(dir)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        root_only(ok, &format!("chattr +i {} (ext4)", dir.display()))
            .then(|| Immutable(dir.to_path_buf()))
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

#[test]
fn get_into_a_directory_it_may_not_write_is_permission_denied() {
    let env = Env::new();
    env.write("a", b"some bytes");
    let d = env.put("a");
    let Some(_guard) = Immutable::new(&env.path("locked")) else {
        return;
    };
    let out = env.path("locked/out");
    let (code, v) = env.json(&["get", &d, "-o", out.to_str().unwrap()]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(codes(&v), ["io.permission_denied"], "{v}");
    assert!(
        !v["issues"][0]["message"]
            .as_str()
            .unwrap()
            .contains(".coffer-new"),
        "no internal temp names: {v}"
    );
}

#[test]
fn a_full_disk_still_reads_and_gc_frees_it() {
    let env = Env::bare();
    let Some(_m) = Mount::tmpfs(&env.path("small"), "12m") else {
        return;
    };
    let store = env.path("small/store");
    let run = |args: &[&str]| run_in(&env, &store, args);
    assert_eq!(run(&["init"]).0, 0);
    assert!(
        store.join("reserve").is_file(),
        "init sets the reserve aside"
    );
    env.write("keep", &noise(64 << 10, 1));
    let (code, v) = run(&["put", "keep"]);
    assert_eq!(code, 0, "{v}");
    let keep = v["result"]["files"][0]["digest"]
        .as_str()
        .unwrap()
        .to_string();
    // Unrooted objects until the disk is full, then the last bytes too.
    for i in 0.. {
        env.write("loose", &noise(256 << 10, 100 + i));
        let (code, v) = run(&["put", "--no-pin", "loose"]);
        if code != 0 {
            assert_eq!(codes(&v), ["io.no_space"], "{v}");
            break;
        }
    }
    fill(&store);
    // Reads work and write nothing.
    let before: Vec<_> = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let out = env.path("keep.out");
    let (code, v) = run(&["get", &keep, "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "get on a full disk: {v}");
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(env.path("keep")).unwrap()
    );
    let (code, v) = run(&["ls"]);
    assert_eq!(code, 0, "ls on a full disk: {v}");
    let (code, v) = run(&["has", &keep]);
    assert_eq!(code, 0, "has on a full disk: {v}");
    let (code, v) = run(&["fsck"]);
    assert!(
        code == 0 || codes(&v).iter().all(|c| c.starts_with("integrity.")),
        "fsck on a full disk: {v}"
    );
    let (code, v) = run(&["stats"]);
    assert_eq!(code, 0, "stats on a full disk: {v}");
    let after: Vec<_> = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(before, after, "reads created nothing in the store root");

    // gc gives the reserve back, frees the loose objects, and sets the
    // reserve aside again.
    std::fs::remove_file(store.join("filler")).ok();
    fill(&store);
    let (code, v) = run(&["gc", "--grace", "0s"]);
    assert_eq!(code, 0, "gc on a full disk: {v}");
    assert!(
        !v["result"]["unreachable"].as_array().unwrap().is_empty(),
        "{v}"
    );
    std::fs::remove_file(store.join("filler")).unwrap();
    assert!(
        store.join("reserve").is_file(),
        "gc sets the reserve aside again"
    );
    let (code, v) = run(&["fsck", "--read-data"]);
    assert_eq!(code, 0, "{v}");
    let (code, v) = run(&["put", "keep"]);
    assert_eq!(code, 0, "{v}");
}
