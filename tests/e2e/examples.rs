//! Every example in `--help` (and so in `coffer man`), run for real: in a
//! work directory laid out as the examples expect, in the order the help
//! shows them, with the placeholder digests replaced by real ones. An
//! example that stops working fails here.

use std::path::Path;
use std::process::Command;

use crate::bundles::{copy_tree, fixture, rebrand};
use crate::support::{bin, Env};

/// The leaf commands, read from `--help` as a user reads them.
fn leaves(env: &Env, path: &[&str], out: &mut Vec<Vec<String>>) {
    let mut args: Vec<&str> = path.to_vec();
    args.push("--help");
    let help = String::from_utf8(env.command(&args).output().unwrap().stdout).unwrap();
    let Some(list) = help.split("Commands:\n").nth(1) else {
        out.push(path.iter().map(|s| s.to_string()).collect());
        return;
    };
    for line in list.lines().take_while(|l| l.starts_with("  ")) {
        let name = line.split_whitespace().next().unwrap();
        if name != "help" {
            let mut sub = path.to_vec();
            sub.push(name);
            leaves(env, &sub, out);
        }
    }
}

/// The example lines of a help text (comments left out).
fn examples(help: &str) -> Vec<String> {
    let Some(block) = help.split("Examples:\n").nth(1) else {
        return Vec::new();
    };
    block
        .lines()
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.trim().to_string())
        .filter(|l| !l.starts_with('#'))
        .collect()
}

fn targz(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (name, data) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, name, *data).unwrap();
    }
    let tar = b.into_inner().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &tar).unwrap();
    gz.finish().unwrap()
}

/// Runs `line` with `sh` in `work`, `coffer` on the PATH and the store in
/// `$COFFER_STORE`: (exit status, output).
fn run(work: &Path, store: &Path, line: &str) -> (i32, String) {
    let dir = Path::new(bin()).parent().unwrap();
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg(line)
        .current_dir(work)
        .env("PATH", path)
        .env("HOME", work)
        .env("COFFER_STORE", store)
        .env(
            "OPENAI_API_KEY",
            "sk-proj-examplesmakeupavalue0123456789abcdefXYZ",
        )
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// The work directory the examples expect, with its store; returns the
/// replacements for the placeholder digests.
fn lay_out(env: &Env) -> Vec<(String, String)> {
    let w = env.dir.path();
    for (id, attempt) in [("attempt-16", "a-16"), ("attempt-17", "a-17")] {
        let dir = w.join("runs").join(id);
        copy_tree(&fixture("run-bundles/observational-completed"), &dir);
        rebrand(&dir, id, attempt);
        let (code, v) = env.json(&["bundle", "ingest", dir.to_str().unwrap()]);
        assert_eq!(code, 0, "{v}");
    }
    let tasks = w.join("tasks/calc");
    copy_tree(&fixture("task-packets"), &tasks);
    std::fs::copy(
        tasks.join("packets/calc-add.json"),
        tasks.join("packet.json"),
    )
    .unwrap();
    std::fs::copy(
        fixture("policies/partner.json"),
        w.join("partner-policy.json"),
    )
    .unwrap();
    let fixture_tgz = targz(&[("calc/add.py", b"def add(a, b):\n    return a + b\n")]);
    std::fs::write(w.join("fixture.tar.gz"), &fixture_tgz).unwrap();
    std::fs::create_dir_all(w.join("fixtures")).unwrap();
    std::fs::write(w.join("fixtures/notes.txt"), b"fixture notes\n").unwrap();
    std::fs::write(
        w.join("session.jsonl"),
        b"{\"type\":\"message\",\"text\":\"hello\"}\n",
    )
    .unwrap();
    std::fs::create_dir_all(w.join("notes")).unwrap();
    std::fs::write(w.join("notes/todo.md"), b"- read the diff\n").unwrap();
    std::fs::create_dir_all(w.join("src")).unwrap();
    std::fs::write(w.join("src/main.py"), b"print('hi')\n").unwrap();
    std::fs::create_dir_all(w.join(".local/share/bash-completion/completions")).unwrap();
    let other = crate::support::sha256(b"fixture notes\n");
    let object = crate::support::sha256(&fixture_tgz);
    let (_, v) = env.json(&["bundle", "show", "attempt-17"]);
    let manifest = v["result"]["bundle"]["manifestDigest"]
        .as_str()
        .unwrap()
        .to_string();
    vec![
        ("sha256:3f0c…".into(), object.clone()),
        (
            "3f0c1a2b".into(),
            object["sha256:".len()..][..8].to_string(),
        ),
        ("sha256:9b1e…".into(), other),
        (
            "77751c20".into(),
            manifest["sha256:".len()..][..8].to_string(),
        ),
    ]
}

#[test]
fn every_example_in_the_help_runs_against_a_fixture_store() {
    let env = Env::new();
    let mut commands = Vec::new();
    leaves(&env, &[], &mut commands);
    assert!(commands.len() > 25, "{commands:?}");
    let replacements = lay_out(&env);
    let mut ran = 0;
    for cmd in &commands {
        let mut args: Vec<&str> = cmd.iter().map(String::as_str).collect();
        args.push("--help");
        let help = String::from_utf8(env.command(&args).output().unwrap().stdout).unwrap();
        let lines = examples(&help);
        assert!(!lines.is_empty(), "{cmd:?} has no example");
        for line in lines {
            // A bucket is the one thing this machine may not have.
            if line.contains("--backend s3://") {
                continue;
            }
            let mut real = line.clone();
            for (placeholder, value) in &replacements {
                real = real.replace(placeholder, value);
            }
            let (code, out) = run(env.dir.path(), &env.store, &real);
            assert_eq!(code, 0, "`{line}` (as `{real}`) failed:\n{out}");
            ran += 1;
        }
    }
    assert!(ran > 40, "only {ran} examples ran");
}

#[test]
fn the_tour_in_coffer_help_runs_on_a_fresh_store() {
    let env = Env::bare();
    let dir = env.path("runs/attempt-17");
    copy_tree(&fixture("run-bundles/observational-completed"), &dir);
    rebrand(&dir, "attempt-17", "a-17");
    std::fs::copy(
        fixture("policies/partner.json"),
        env.path("partner-policy.json"),
    )
    .unwrap();
    let help = String::from_utf8(env.command(&["--help"]).output().unwrap().stdout).unwrap();
    let lines = examples(&help);
    assert!(lines.len() >= 5, "{help}");
    for line in lines {
        let (code, out) = run(env.dir.path(), &env.store, &line);
        assert_eq!(code, 0, "`{line}` failed:\n{out}");
    }
}
