//! Real transcripts stay useful after an export (issue 46): cuts are
//! visible, paths keep what identifies nobody, a home is matched through
//! a name with spaces, prompts lose their user and host, and a label
//! beside a value in a tuple is not a credential.

use serde_json::{json, Value};

use crate::exports::{all_bytes, contains, export, session_bundle};
use crate::support::Env;

/// A policy of `class` with a string limit.
fn policy(env: &Env, max_string: u64) -> std::path::PathBuf {
    env.write(
        "policy.json",
        json!({
            "schemaVersion": "coffer.export-policy/v1",
            "sharingClass": "partner",
            "maxArtifactBytes": 16777216,
            "maxStringBytes": max_string,
        })
        .to_string()
        .as_bytes(),
    )
}

/// Exports a session of tool results `outputs` and returns the exported
/// outputs in order, with the command's result.
pub(crate) fn exported(
    env: &Env,
    outputs: &[String],
    max_string: u64,
    extra: &[&str],
) -> (Vec<String>, Value) {
    let mut session =
        String::from("{\"type\":\"session.start\",\"sessionId\":\"sess-transcript\"}\n");
    for (i, o) in outputs.iter().enumerate() {
        session.push_str(&json!({"type": "tool.result", "seq": i, "output": o}).to_string());
        session.push('\n');
    }
    let dir = session_bundle(env, "src", &session, ("transcript", "attempt-transcript"));
    let p = policy(env, max_string);
    let (code, v) = export(env, dir.to_str().unwrap(), &p, "out", extra);
    assert_eq!(code, 0, "{v}");
    let text = std::fs::read_to_string(env.path("out/session.jsonl")).unwrap();
    let outs = text
        .lines()
        .skip(1)
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["output"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    (outs, v)
}

#[test]
fn a_cut_string_says_so_and_the_manifest_report_and_verify_agree() {
    let env = Env::new();
    let long = "traceback line\n".repeat(1000); // 15,000 bytes
    let (outs, _) = exported(
        &env,
        &[long.clone(), "short".into()],
        4096,
        &["--report", "rep.json"],
    );
    let cut = &outs[0];
    assert!(
        cut.len() <= 4096,
        "the marker stands inside the limit: {}",
        cut.len()
    );
    let kept = cut
        .find("…[TRUNCATED: ")
        .expect("a cut string ends with its marker");
    let n: usize = cut[kept + "…[TRUNCATED: ".len()..]
        .strip_suffix(" bytes]")
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(kept + n, long.len(), "the marker counts what was left out");
    assert!(long.starts_with(&cut[..kept]));
    assert_eq!(outs[1], "short", "a short string is not marked");

    // The manifest counts the cut; the report lists it with its pointer.
    let m: Value =
        serde_json::from_slice(&std::fs::read(env.path("out/manifest.json")).unwrap()).unwrap();
    let session = m["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["relativePath"] == "session.jsonl")
        .unwrap();
    let truncated = m["transformations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["action"] == "truncated" && t["artifactId"] == session["id"])
        .unwrap_or_else(|| panic!("no truncated count: {m}"));
    assert_eq!(truncated["count"], 1);
    let r: Value = serde_json::from_slice(&std::fs::read(env.path("rep.json")).unwrap()).unwrap();
    let cuts: Vec<&Value> = r["replacements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["class"] == "truncated")
        .collect();
    assert_eq!(cuts.len(), 1, "{r}");
    assert_eq!(cuts[0]["file"], "session.jsonl");
    assert_eq!(cuts[0]["line"], 2);
    assert_eq!(cuts[0]["pointer"], "/output");

    // The tree as written verifies.
    let (code, v) = env.json(&["export", "verify", env.path("out").to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
}

#[test]
fn paths_keep_their_tails_and_lose_only_what_identifies() {
    let env = Env::new();
    let outputs: Vec<String> = [
        r#"File "/opt/miniconda3/envs/testbed/lib/python3.9/unittest/case.py", line 59, in testPartExecutor"#,
        r#"File "/usr/lib/python3.11/site-packages/django/db/models/base.py", line 12"#,
        r#"File "/home/dave9/proj/app/views.py", line 7, in index"#,
        r#"File "/Users/dave9/proj/tests/test_x.py", line 3"#,
        r"at C:\Users\dave9\proj\src\main.rs:4",
        "PS C:\\Users\\dave9> cargo test",
        "cd /root/.cache && ls /tmp/pytest-of-root/x",
    ]
    .map(String::from)
    .to_vec();
    let (outs, _) = exported(&env, &outputs, 8192, &[]);
    assert_eq!(
        outs[0], outputs[0],
        "an environment's path identifies nobody"
    );
    assert_eq!(outs[1], outputs[1]);
    assert_eq!(
        outs[2],
        r#"File "[HOME]/proj/app/views.py", line 7, in index"#
    );
    assert_eq!(outs[3], r#"File "[HOME]/proj/tests/test_x.py", line 3"#);
    assert_eq!(outs[4], r"at [HOME]\proj\src\main.rs:4");
    assert_eq!(outs[5], "PS [HOME]> cargo test");
    assert_eq!(outs[6], outputs[6]);
    assert!(!contains(&all_bytes(&env.path("out")), "dave9"));
}

#[test]
fn a_home_with_spaces_leaves_no_part_of_the_name() {
    let env = Env::new();
    let outputs: Vec<String> = [
        "open /Users/Jane Doe/proj/x.py",
        r#"cd "/Users/Jane Doe" && ls"#,
        r"cp /Users/Jane\ Doe/a.txt b.txt",
        r"C:\Users\Jane Doe\hub 2.0\main.py",
        "file:///Users/Jane%20Doe/proj/x",
        "cd /Users/Jane Doe",
    ]
    .map(String::from)
    .to_vec();
    let (outs, _) = exported(&env, &outputs, 8192, &[]);
    let bytes = all_bytes(&env.path("out"));
    for part in ["Jane", "Doe"] {
        assert!(!contains(&bytes, part), "{part} survived: {outs:?}");
    }
    assert_eq!(outs[0], "open [HOME]/proj/x.py");
    assert_eq!(outs[3], r"[HOME]\hub 2.0\main.py");
}

#[test]
fn prompts_lose_their_user_and_host_whatever_the_name() {
    let env = Env::new();
    let outputs: Vec<String> = [
        "dev@Devs-MacBook-Air repo % pytest",
        "kim@ws-114:~/src$ make",
        "[kim@ws-114 src]# make",
        "later: the build on Devs-MacBook-Air passed for dev",
    ]
    .map(String::from)
    .to_vec();
    let (outs, _) = exported(&env, &outputs, 8192, &[]);
    let bytes = all_bytes(&env.path("out"));
    for name in ["Devs-MacBook-Air", "ws-114", "kim@", "dev@"] {
        assert!(!contains(&bytes, name), "{name} survived: {outs:?}");
    }
    assert!(outs[0].ends_with(" repo % pytest"), "{}", outs[0]);
}

#[test]
fn a_label_beside_a_value_in_a_tuple_is_data() {
    let env = Env::new();
    let outputs: Vec<String> = [
        "dependencies = [('auth', '0010_alter_group_name_max_length')]",
        r#"migrations.swappable_dependency("auth", "0012_alter_user_first_name_max_length")"#,
    ]
    .map(String::from)
    .to_vec();
    let (outs, v) = exported(&env, &outputs, 8192, &[]);
    assert_eq!(outs, outputs, "{v}");
}
