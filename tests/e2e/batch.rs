//! Batch lookups: `has --stdin` and `get --stdin -o DIR` answer one line per
//! name read, in the form of `git cat-file --batch-check`.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use crate::support::{codes, sha256, Env};

/// A store with two objects; their digests.
fn two_objects() -> (Env, String, String) {
    let env = Env::new();
    env.write("a", b"alpha\n");
    env.write("b", b"beta beta\n");
    let (a, b) = (env.put("a"), env.put("b"));
    (env, a, b)
}

#[test]
fn has_stdin_answers_each_name_in_order_and_fails_when_one_is_not_there() {
    let (env, a, b) = two_objects();
    let missing = sha256(b"not stored");
    let bare_hex = b.trim_start_matches("sha256:").to_uppercase();
    let input = format!(
        "{a}\r\n\n  {bare_hex}  \n{}\n{missing}\nHEAD\n{}\n",
        &a[7..19],
        "f".repeat(300)
    );
    let r = env.run_stdin(&["has", "--stdin"], input.as_bytes());
    let lines: Vec<String> = String::from_utf8(r.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(
        lines,
        [
            format!("{a} 6"),
            format!("{b} 10"),
            format!("{a} 6"),
            format!("{missing} missing"),
            "HEAD invalid".to_string(),
            format!("{}… invalid", "f".repeat(256)),
        ],
        "a blank line is skipped; a prefix answers with the whole digest"
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("io.not_found") && r.stderr.contains("1 of 6 names"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("usage.invalid_digest") && r.stderr.contains("2 of 6"),
        "{}",
        r.stderr
    );

    let all_there = format!("{a}\n{b}\n");
    let r = env.run_stdin(&["has", "--stdin"], all_there.as_bytes());
    assert_eq!((r.code, r.stderr.as_str()), (0, ""));
}

#[test]
fn has_stdin_under_json_streams_one_envelope() {
    let (env, a, _) = two_objects();
    let missing = sha256(b"not stored");
    let input = format!("{a}\n{missing}\n");
    let r = env.run_stdin(&["--json", "has", "--stdin"], input.as_bytes());
    assert_eq!(r.code, 1);
    let v = r.json();
    assert_eq!(v["command"], "has");
    assert_eq!(v["status"], "failed");
    let objects = v["result"]["objects"].as_array().unwrap();
    assert_eq!(objects.len(), 2);
    assert_eq!(objects[0]["digest"], a.as_str());
    assert_eq!(
        (objects[0]["present"].as_bool(), objects[0]["size"].as_u64()),
        (Some(true), Some(6))
    );
    assert_eq!(objects[1]["name"], missing.as_str());
    assert_eq!(
        (
            objects[1]["present"].as_bool(),
            objects[1]["reason"].as_str()
        ),
        (Some(false), Some("missing"))
    );
    assert_eq!(codes(&v), ["io.not_found"]);
    assert_eq!(v["issues"][0]["path"], missing.as_str());
}

/// A caller that writes a name and waits for its answer gets it before
/// it closes its end: output is flushed when input runs dry. (Answers are
/// read on a thread, so a build that holds them back fails here within a
/// minute instead of hanging the suite.)
#[test]
fn has_stdin_answers_a_name_before_the_next_is_written() {
    let (env, a, b) = two_objects();
    let mut child = env
        .command(&["has", "--stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    for d in [&a, &b] {
        writeln!(stdin, "{d}").unwrap();
        stdin.flush().unwrap();
        let line = rx.recv_timeout(std::time::Duration::from_secs(60));
        let Ok(line) = line else {
            let _ = child.kill();
            panic!("no answer to {d} while stdin stayed open");
        };
        assert!(line.starts_with(d.as_str()), "answer to {d}: {line:?}");
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

#[test]
fn get_stdin_writes_each_object_verified_into_the_directory_and_replaces_nothing() {
    let (env, a, b) = two_objects();
    let missing = sha256(b"not stored");
    let input = format!("{a}\n{}\n{missing}\n", &b[..20]);
    let r = env.run_stdin(&["get", "--stdin", "-o", "out"], input.as_bytes());
    assert_eq!(r.code, 1, "one name is missing: {}", r.stderr);
    let out = String::from_utf8(r.stdout).unwrap();
    assert_eq!(out, format!("{a} 6\n{b} 10\n{missing} missing\n"));
    let file = |d: &str| env.path("out").join(d.trim_start_matches("sha256:"));
    assert_eq!(std::fs::read(file(&a)).unwrap(), b"alpha\n");
    assert_eq!(std::fs::read(file(&b)).unwrap(), b"beta beta\n");
    let listed = std::fs::read_dir(env.path("out")).unwrap().count();
    assert_eq!(listed, 2, "nothing but the two objects");

    // Run again: files holding the objects already are fine.
    let again = format!("{a}\n{b}\n");
    let r = env.run_stdin(&["get", "--stdin", "-o", "out"], again.as_bytes());
    assert_eq!((r.code, r.stderr.as_str()), (0, ""));

    // A file in the way that holds other bytes is left as it is.
    std::fs::remove_file(file(&b)).unwrap();
    std::fs::write(file(&b), b"someone else's").unwrap();
    let r = env.run_stdin(&["--json", "get", "--stdin", "-o", "out"], again.as_bytes());
    assert_eq!(r.code, 3, "a conflict blocks");
    let v = r.json();
    assert_eq!(codes(&v), ["conflict.destination_exists"]);
    assert_eq!(v["result"]["objects"][1]["refused"], "exists");
    assert_eq!(std::fs::read(file(&b)).unwrap(), b"someone else's");
    assert_eq!(std::fs::read(file(&a)).unwrap(), b"alpha\n");
}

#[test]
fn batch_flags_are_checked_before_anything_is_read() {
    let (env, a, _) = two_objects();
    assert_eq!(env.run(&["get", "--stdin"]).code, 2, "--stdin needs -o DIR");
    assert_eq!(
        env.run(&["has", "--stdin", &a]).code,
        2,
        "names or --stdin, not both"
    );
    env.write("plain", b"x");
    let r = env.run_stdin(
        &["get", "--stdin", "-o", "plain"],
        format!("{a}\n").as_bytes(),
    );
    assert_eq!(r.code, 1, "-o names a file, not a directory: {}", r.stderr);
    assert_eq!(std::fs::read(env.path("plain")).unwrap(), b"x");
}
