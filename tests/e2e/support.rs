//! A temp workspace with a store, and helpers to run `coffer` in it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// A temp directory holding a store at `store/` and inputs beside it.
pub struct Env {
    pub dir: tempfile::TempDir,
    pub store: PathBuf,
}

/// What one run of the binary did.
pub struct Run {
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Run {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not one JSON document ({e}): {}\nstderr: {}",
                String::from_utf8_lossy(&self.stdout),
                self.stderr
            )
        })
    }
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_coffer")
}

fn finish(out: Output) -> Run {
    Run {
        code: out.status.code().expect("exited, not killed"),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

impl Env {
    /// A fresh temp dir with an initialized store.
    pub fn new() -> Env {
        let env = Env::bare();
        let r = env.run(&["init"]);
        assert_eq!(r.code, 0, "init failed: {}", r.stderr);
        env
    }

    /// A fresh temp dir without a store.
    pub fn bare() -> Env {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = dir.path().join("store");
        Env { dir, store }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(bin());
        c.current_dir(self.dir.path())
            .env_remove("COFFER_STORE")
            .arg("--store")
            .arg(&self.store)
            .args(args)
            .stdin(Stdio::null());
        c
    }

    /// Runs `coffer --store <store> ARGS` in the temp dir.
    pub fn run(&self, args: &[&str]) -> Run {
        finish(self.command(args).output().expect("spawn coffer"))
    }

    /// Runs with `--json` and returns (exit code, envelope).
    pub fn json(&self, args: &[&str]) -> (i32, Value) {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let r = self.run(&all);
        let v = r.json();
        (r.code, v)
    }

    /// Runs with `bytes` on stdin.
    pub fn run_stdin(&self, args: &[&str], bytes: &[u8]) -> Run {
        use std::io::Write;
        let mut c = self.command(args);
        c.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().expect("spawn coffer");
        let mut stdin = child.stdin.take().unwrap();
        let data = bytes.to_vec();
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&data);
        });
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap();
        finish(out)
    }

    pub fn write(&self, rel: &str, bytes: &[u8]) -> PathBuf {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
        p
    }

    /// Puts one file and returns its digest.
    pub fn put(&self, rel: &str) -> String {
        let (code, v) = self.json(&["put", rel]);
        assert_eq!(code, 0, "{v}");
        v["result"]["files"][0]["digest"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// The object file of `digest` inside the store.
    pub fn object_file(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap();
        self.store.join("objects/sha256").join(&hex[..2]).join(hex)
    }

    /// Temp entries coffer left beside destinations in the work dir (`.coffer-*`).
    pub fn leftover_temps(&self) -> usize {
        std::fs::read_dir(self.dir.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with(".coffer-")
            })
            .count()
    }

    /// Entries of a store subdirectory.
    pub fn entries(&self, sub: &str) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.store.join(sub))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

/// `../shared/peer-vectors/<system>` beside the checkout, which only CI and
/// the developers' machines have. On a plain clone the interop tests that
/// need it return early with a message; with `COFFER_REQUIRE_PEER_VECTORS`
/// set (as `.ci/run` does) its absence fails the test instead, so CI never
/// skips them silently.
pub fn peer_vectors(system: &str) -> Option<PathBuf> {
    let root = crate::bundles::repo()
        .parent()
        .expect("the checkout has a parent directory")
        .join("shared/peer-vectors")
        .join(system);
    if root.is_dir() {
        return Some(root);
    }
    assert!(
        std::env::var_os("COFFER_REQUIRE_PEER_VECTORS").is_none(),
        "COFFER_REQUIRE_PEER_VECTORS is set but {} is missing",
        root.display()
    );
    skipped(&format!(
        "interop test: no peer vectors at {} (CI copies shared/ beside the clone)",
        root.display()
    ));
    None
}

/// Says that a test is skipping its work, and why, where the user sees it:
/// written to the process's stderr directly, which the test harness does
/// not capture (it captures only `print!` and `eprint!`), so a test that
/// passes by skipping is never silent.
pub fn skipped(why: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr().lock(), "\n*** SKIPPED: {why} ***");
}

/// The ids `bundle ls ARGS` lists, in order.
pub fn bundle_ids(env: &Env, args: &[&str]) -> Vec<String> {
    let mut all = vec!["bundle", "ls"];
    all.extend_from_slice(args);
    let (code, v) = env.json(&all);
    assert_eq!(code, 0, "{args:?}: {v}");
    v["result"]["bundles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["bundleId"].as_str().unwrap().to_string())
        .collect()
}

/// The envelope's issue codes.
pub fn codes(v: &Value) -> Vec<String> {
    v["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["code"].as_str().unwrap().to_string())
        .collect()
}

/// The `path` of every issue of an envelope, in order.
pub fn issue_paths(v: &Value) -> Vec<String> {
    v["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap().to_string())
        .collect()
}

/// Deterministic incompressible bytes.
pub fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(n + 8);
    while out.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(n);
    out
}

/// `sha256:<hex>` of bytes, computed independently of coffer.
pub fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

/// Reads an object file the way FORMAT.md says another tool could.
pub fn decode_object_file(path: &Path) -> Vec<u8> {
    zstd::stream::decode_all(std::fs::File::open(path).unwrap()).unwrap()
}

/// Every file below `dir`: its path relative to `dir` and its bytes,
/// sorted by path.
pub fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(dir) {
        let e = e.unwrap();
        if e.file_type().is_file() {
            let rel = e
                .path()
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .to_string();
            out.push((rel, std::fs::read(e.path()).unwrap()));
        }
    }
    out.sort();
    out
}
