//! Secrets in pieces and in disguise (issue 40): each case was accepted
//! by an export and passed its own readback with the secret still in the
//! tree. Every test checks the secret is absent from every file of the
//! export, from stdout and stderr, and from the redaction report.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::bundles::{copy_tree, fixture, rebrand};
use crate::exports::{all_bytes, contains};
use crate::support::Env;

/// A copy of the observational fixture whose session is `session`.
pub fn session_bundle(env: &Env, name: &str, session: &str) -> PathBuf {
    let dir = env.path(name);
    copy_tree(&fixture("run-bundles/observational-completed"), &dir);
    std::fs::write(dir.join("session.jsonl"), session).unwrap();
    rebrand(&dir, &format!("{name}-bundle"), &format!("{name}-attempt"));
    dir
}

/// A partner policy with `extra` members.
pub fn policy(env: &Env, name: &str, extra: Value) -> PathBuf {
    let mut doc = json!({
        "schemaVersion": "coffer.export-policy/v1",
        "sharingClass": "partner",
        "maxArtifactBytes": 16777216,
        "maxStringBytes": 65536,
    });
    for (k, v) in extra.as_object().unwrap() {
        doc[k] = v.clone();
    }
    env.write(name, serde_json::to_string(&doc).unwrap().as_bytes())
}

/// What an export printed and wrote: its exit code and envelope, and every
/// byte a recipient or a terminal could see (tree, stdout, stderr, report).
pub struct Exported {
    pub code: i32,
    pub envelope: Value,
    pub seen: Vec<u8>,
    pub tree: PathBuf,
}

pub fn export(env: &Env, src: &Path, policy: &Path, dest: &str) -> Exported {
    let report = env.path(&format!("{dest}-report.json"));
    let args = [
        "export",
        "create",
        src.to_str().unwrap(),
        policy.to_str().unwrap(),
        dest,
        "--report",
        report.to_str().unwrap(),
    ];
    let r = env.run(&args);
    let json = env.run(&[&["--json"][..], &args[..4], &[&format!("{dest}-json")]].concat());
    let tree = env.path(dest);
    let mut seen = r.stdout.clone();
    seen.extend(r.stderr.as_bytes());
    seen.extend(&json.stdout);
    seen.extend(json.stderr.as_bytes());
    if tree.exists() {
        seen.extend(all_bytes(&tree));
    }
    if let Ok(b) = std::fs::read(&report) {
        seen.extend(b);
    }
    Exported {
        code: r.code,
        envelope: serde_json::from_slice(&json.stdout).unwrap_or(Value::Null),
        seen,
        tree,
    }
}

/// The export was accepted and `secret` is nowhere a recipient could see.
pub fn gone(e: &Exported, secret: &str, what: &str) {
    assert_eq!(e.code, 0, "{what}: {}", e.envelope);
    assert!(
        !contains(&e.seen, secret),
        "{what}: {}... survived",
        &secret[..secret.len().min(8)]
    );
}

fn session_of(e: &Exported) -> Vec<Value> {
    std::fs::read_to_string(e.tree.join("session.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_sensitive_value_or_an_identity_written_as_a_number_is_removed() {
    let env = Env::new();
    let card = "4111111111111111";
    let session = [
        json!({"type": "session.start", "runId": 98765432101u64, "conversationId": 55512345678u64}),
        json!({"type": "tool.result", "amount": 4111111111111111u64, "note": card}),
        json!({"type": "assistant.message", "text": "run 98765432101 in conversation 55512345678"}),
    ]
    .iter()
    .map(|v| format!("{v}\n"))
    .collect::<String>();
    let src = session_bundle(&env, "numbers", &session);
    let pol = policy(&env, "p.json", json!({"sensitiveValues": [card]}));
    let e = export(&env, &src, &pol, "out");
    gone(&e, card, "a card number as a JSON number");
    gone(&e, "98765432101", "a numeric runId");
    gone(&e, "55512345678", "a numeric conversationId");
    let records = session_of(&e);
    assert!(
        records[1]["amount"]
            .as_str()
            .unwrap()
            .starts_with("[REDACTED_SECRET:"),
        "{}",
        records[1]
    );
    assert!(records[0]["runId"].is_string(), "{}", records[0]);
    assert!(e.envelope["result"]["artifacts"]
        .to_string()
        .contains("redacted-secret"));
}

#[test]
fn a_values_file_with_a_byte_order_mark_keeps_its_first_value() {
    let env = Env::new();
    let first = "first-secret-from-powershell";
    env.write(
        "values.txt",
        format!("\u{feff}{first}\r\nsecond-secret-value\r\n").as_bytes(),
    );
    let session = format!(
        "{}\n",
        json!({"type": "assistant.message", "text": format!("the key is {first}")})
    );
    let src = session_bundle(&env, "bom", &session);
    let pol = policy(&env, "p.json", json!({"sensitiveValuesFile": "values.txt"}));
    gone(
        &export(&env, &src, &pol, "out"),
        first,
        "the first value of a BOM file",
    );
}

#[test]
fn a_local_root_matches_however_its_separators_are_spelled() {
    let env = Env::new();
    let session = [
        "cat /data//project/secret-plan.txt",
        "ls /data/./project/notes",
        "cd /data/project/",
    ]
    .iter()
    .map(|t| format!("{}\n", json!({"type": "tool.call", "command": t})))
    .collect::<String>();
    let src = session_bundle(&env, "roots", &session);
    for (i, root) in ["/data/project", "/data//project/", "/data/./project"]
        .iter()
        .enumerate()
    {
        let pol = policy(&env, &format!("p{i}.json"), json!({"localRoots": [root]}));
        let e = export(&env, &src, &pol, &format!("out{i}"));
        assert_eq!(e.code, 0, "{}", e.envelope);
        let text = String::from_utf8_lossy(&e.seen).into_owned();
        assert!(
            !text.contains("project"),
            "{root}: the root survived: {text}"
        );
        assert!(text.contains("[WORKSPACE]/secret-plan.txt"), "{root}");
    }
}

#[test]
fn a_sensitive_value_matches_in_any_case() {
    let env = Env::new();
    let value = "Hunter2-Correct-Horse";
    let session = format!(
        "{}\n",
        json!({"type": "assistant.message", "text": "shouting: HUNTER2-CORRECT-HORSE and whispering: hunter2-correct-horse"})
    );
    let src = session_bundle(&env, "case", &session);
    let pol = policy(&env, "p.json", json!({"sensitiveValues": [value]}));
    let e = export(&env, &src, &pol, "out");
    gone(&e, "HUNTER2-CORRECT-HORSE", "upper case");
    gone(&e, "hunter2-correct-horse", "lower case");
}

/// A GitHub token and an AWS key id no rule list knows as examples.
const GH: &str = "ghp_7Rk2vQ9mXz4LpW8sTn3YbH6cJd1FgA5eUo0i";
const KEY: &str = "Zq8vN3kR7tW2xL9pB4mC6yH1jF5dS0gE";
const AWS: &str = "AKIAQ3J7X2M9P4L8K1N6";

fn jsonl(records: &[Value]) -> String {
    records.iter().map(|v| format!("{v}\n")).collect()
}

pub(crate) fn exported_session(env: &Env, name: &str, records: &[Value]) -> Exported {
    let src = session_bundle(env, name, &jsonl(records));
    let pol = policy(env, &format!("{name}-policy.json"), json!({}));
    export(env, &src, &pol, &format!("{name}-out"))
}

/// Every piece of `secret` of `len` bytes or more is gone: not only the
/// whole, no run of `len` of its bytes survives, in what a recipient sees
/// nor in any stream's text as a reader joins it (the strings at each of
/// `pointers` of the exported session's records, in order).
fn no_run_of_in(e: &Exported, secret: &str, len: usize, what: &str, pointers: &[&str]) {
    assert_eq!(e.code, 0, "{what}: {}", e.envelope);
    let joined: Vec<String> = pointers
        .iter()
        .map(|p| {
            session_of(e)
                .iter()
                .filter_map(|r| r.pointer(p).and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .collect();
    for i in 0..=secret.len() - len {
        let part = &secret[i..i + len];
        assert!(
            !contains(&e.seen, part),
            "{what}: {part:?} of the secret survived"
        );
        for (p, text) in pointers.iter().zip(&joined) {
            assert!(
                !text.contains(part),
                "{what}: {part:?} of the secret survived in the stream at {p}: {text}"
            );
        }
    }
}

fn no_run_of(e: &Exported, secret: &str, len: usize, what: &str) {
    no_run_of_in(e, secret, len, what, &[]);
}

#[test]
fn a_token_streamed_in_anthropic_text_deltas_is_cut_from_every_delta() {
    let env = Env::new();
    let (a, b, c) = (&GH[..9], &GH[9..27], &GH[27..]);
    let delta = |t: &str| json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}});
    let e = exported_session(
        &env,
        "anthropic",
        &[
            json!({"type": "message_start", "message": {"id": "msg_01", "role": "assistant"}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            delta(&format!("Set GITHUB_TOKEN={a}")),
            delta(b),
            delta(&format!("{c} in your shell.")),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "message_stop"}),
        ],
    );
    no_run_of(&e, GH, 9, "anthropic deltas");
}

#[test]
fn a_token_streamed_in_openai_chunks_and_tool_call_arguments_is_cut() {
    let env = Env::new();
    let chunk = |d: Value| json!({"id": "chatcmpl-7", "object": "chat.completion.chunk", "model": "m", "choices": [{"index": 0, "delta": d, "finish_reason": null}]});
    let e = exported_session(
        &env,
        "openai",
        &[
            chunk(json!({"role": "assistant", "content": ""})),
            chunk(json!({"content": "Your key: "})),
            chunk(json!({"content": &GH[..12]})),
            chunk(json!({"content": &GH[12..]})),
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{\"cmd\":\"aws configure set aws_access_key_id "}}]}),
            ),
            chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": &AWS[..10]}}]})),
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": format!("{}\"}}", &AWS[10..])}}]}),
            ),
            json!({"type": "response.output_text.delta", "item_id": "msg_9", "output_index": 0, "content_index": 0, "delta": format!("again {}", &GH[..20])}),
            json!({"type": "response.output_text.delta", "item_id": "msg_9", "output_index": 0, "content_index": 0, "delta": &GH[20..]}),
        ],
    );
    no_run_of(&e, GH, 12, "chat chunks and response deltas");
    no_run_of(&e, AWS, 10, "tool call arguments");
}

#[test]
fn a_token_streamed_in_a_schema_no_rule_names_is_cut_from_every_piece() {
    // Gemini's chunks, a terminal recording's `[time, "o", text]` events
    // and two tool results that split one output: nothing names them as
    // streams; the place the text stands at does.
    let env = Env::new();
    let gemini = |t: &str| json!({"candidates": [{"content": {"parts": [{"text": t}], "role": "model"}, "index": 0}], "modelVersion": "g"});
    let said = format!("Export QUILLSTACK_API_KEY={KEY} first.");
    let mut records: Vec<Value> = said
        .as_bytes()
        .chunks(5)
        .map(|c| gemini(std::str::from_utf8(c).unwrap()))
        .collect();
    let typed = format!("$ gh auth login --with-token {GH}\r\n");
    records.extend(
        typed
            .as_bytes()
            .chunks(2)
            .enumerate()
            .map(|(i, c)| json!([i as f64 * 0.05, "o", std::str::from_utf8(c).unwrap()])),
    );
    records.push(json!({"type": "tool_result", "tool_use_id": "t1", "output": format!("found {}", &AWS[..9])}));
    records.push(json!({"type": "tool_result", "tool_use_id": "t1", "output": format!("{} in ~/.aws/credentials\n", &AWS[9..])}));
    // The recording's writes are wrapped in colour codes, as a shell's
    // prompt and `ls --color` write them.
    records.extend(
        format!("$ export GH_TOKEN={GH}\r\n")
            .as_bytes()
            .chunks(4)
            .enumerate()
            .map(|(i, c)| {
                let c = std::str::from_utf8(c).unwrap();
                json!([
                    1.0 + i as f64 * 0.05,
                    "o",
                    format!("\u{1b}[1;32m{c}\u{1b}[0m")
                ])
            }),
    );
    let e = exported_session(&env, "structural", &records);
    no_run_of_in(
        &e,
        KEY,
        8,
        "gemini chunks",
        &["/candidates/0/content/parts/0/text"],
    );
    no_run_of_in(&e, GH, 8, "terminal recording", &["/2"]);
    let shown: String = session_of(&e)
        .iter()
        .filter_map(|r| r.pointer("/2").and_then(Value::as_str))
        .collect::<String>()
        .replace("\u{1b}[1;32m", "")
        .replace("\u{1b}[0m", "");
    for i in 0..=GH.len() - 8 {
        assert!(
            !shown.contains(&GH[i..i + 8]),
            "coloured recording: {shown}"
        );
    }
    no_run_of_in(&e, AWS, 9, "two tool results", &["/output"]);
    assert!(contains(&e.seen, "\"Expor\""), "the text around stays");
}

/// Whole tool results side by side are no stream of one secret: a
/// record that ends in a secret its own scan finds does not lose the
/// next record's first word (`cargo` of `cargo build`) to a match the
/// two records glued together make; a secret really split there still
/// goes from both.
#[test]
fn the_record_after_a_secret_keeps_its_first_word() {
    let env = Env::new();
    let result = |t: &str| json!({"type": "tool_result", "tool_use_id": "t1", "output": t});
    let records = vec![
        result("deploy --password Zr8Kq2Vn5Xw1"),
        result("cargo build --release"),
        result("export TOKEN=Zr8Kq2Vn5Xw1"),
        result("the python side is done"),
        result(&format!("found {}", &AWS[..9])),
        result(&format!("{} in ~/.aws/credentials\n", &AWS[9..])),
    ];
    let e = exported_session(&env, "glued", &records);
    let outputs: Vec<String> = session_of(&e)
        .iter()
        .filter_map(|r| {
            r.pointer("/output")
                .and_then(Value::as_str)
                .map(String::from)
        })
        .collect();
    assert_eq!(outputs[1], "cargo build --release", "{outputs:?}");
    assert_eq!(outputs[3], "the python side is done", "{outputs:?}");
    // The records before keep their own text around their secrets.
    assert!(
        outputs[2].starts_with("export TOKEN=[REDACTED_SECRET:"),
        "{outputs:?}"
    );
    assert!(
        outputs[4].starts_with("found [REDACTED_SECRET:"),
        "{outputs:?}"
    );
    assert!(!contains(&e.seen, "Zr8Kq2Vn5Xw1"), "{outputs:?}");
    no_run_of_in(&e, AWS, 9, "two tool results", &["/output"]);
}

/// `od -c`'s output for `data`.
fn od_c(data: &[u8]) -> String {
    data.chunks(16)
        .enumerate()
        .map(|(i, row)| {
            let fields: String = row
                .iter()
                .map(|&b| match b {
                    b'\n' => "  \\n".to_string(),
                    b' ' => "    ".to_string(),
                    b => format!("{:>4}", b as char),
                })
                .collect();
            format!("{:07o}{fields}\n", i * 16)
        })
        .collect()
}

#[test]
fn a_token_split_into_concatenated_literals_or_written_as_utf16_hex_or_a_character_dump_goes() {
    let env = Env::new();
    let (a, b, c) = (&GH[..10], &GH[10..24], &GH[24..]);
    let code = format!("const token = \"{a}\" +\n  \"{b}\" +\n  \"{c}\";\n");
    let utf16: String = format!("set TOKEN={GH}")
        .encode_utf16()
        .map(|u| format!("{:02x}{:02x}", u & 0xff, u >> 8))
        .collect();
    let e = exported_session(
        &env,
        "concatenated",
        &[
            json!({"type": "tool_result", "output": code}),
            json!({"type": "tool_result", "output": format!("reg query: {utf16}")}),
            json!({"type": "tool_result", "output": od_c(format!("GITHUB_TOKEN={GH}\n").as_bytes())}),
        ],
    );
    no_run_of(
        &e,
        GH,
        10,
        "concatenated literals, UTF-16 hex, a character dump",
    );
    let dumped: String = GH[4..16].chars().map(|c| format!("{c:>4}")).collect();
    assert!(
        !contains(&e.seen, dumped.trim_start()),
        "the dump's row of the token survived"
    );
    assert!(
        contains(&e.seen, "const token = \\\"[REDACTED_SECRET:"),
        "the placeholder stands in the first literal"
    );
}

#[test]
fn a_secret_spelled_by_an_array_of_bytes_or_characters_is_spelled_as_its_placeholder() {
    let env = Env::new();
    let text = format!("GITHUB_TOKEN={GH}\n");
    let bytes: Vec<Value> = text.bytes().map(Value::from).collect();
    let chars: Vec<Value> = text.chars().map(|c| json!(c.to_string())).collect();
    let e = exported_session(
        &env,
        "spelled",
        &[
            json!({"type": "tool_result", "output": {"type": "Buffer", "data": bytes}}),
            json!({"type": "tool_result", "chars": chars}),
            json!({"type": "tool_result", "sizes": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]}),
        ],
    );
    assert_eq!(e.code, 0, "{}", e.envelope);
    let session = session_of(&e);
    let spelled = |v: &Value| -> String {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| match x {
                Value::Number(n) => char::from(n.as_u64().unwrap() as u8).to_string(),
                Value::String(s) => s.clone(),
                other => panic!("{other}"),
            })
            .collect()
    };
    for got in [
        spelled(&session[0]["output"]["data"]),
        spelled(&session[1]["chars"]),
    ] {
        assert!(got.starts_with("GITHUB_TOKEN=[REDACTED_SECRET:"), "{got}");
        assert!(!got.contains(&GH[4..20]), "{got}");
    }
    assert_eq!(
        session[2]["sizes"][16], 17,
        "numbers that spell nothing stay"
    );
}

#[test]
fn a_private_key_printed_a_line_per_record_and_a_tool_output_in_chunks_go_whole() {
    let env = Env::new();
    let body = [
        "MIIEowIBAAKCAQEAuV3pYtkNH6OgnsuXbFxyNwP3IjQkLmNoPqRsTuVwXyZ01234",
        "R9mK0xJZq3G8vT7cL2nB5wQ1dY6rE4uI8oP0aS3dF5gH7jK9lZ2xC4vB6nM8qW0e",
        "T2yU4iO6pA8sD0fG2hJ4kL6zX8cV0bN2mQ4wE6rT8yU0iO2pA4sD6fG8hJ0kL2zX",
        "c9vB1nM3qW5eR7tY9uI1oP3aS5dF7gH9jK1lZ3xC5vB7nM9qW1eR3tY5uI7oP9aS",
        "x7zC4vN1mQ8wE5rT2yU9iO6pA3sD0fG7hJ4kL1zX8cV5bN2mQ9wE6rT3yU0iO7pA",
    ];
    let mut records =
        vec![json!({"type": "tool.call", "callId": "c1", "command": "cat ~/.ssh/id_rsa"})];
    records.push(json!({"type": "tool.output", "callId": "c1", "stream": "stdout", "text": "-----BEGIN RSA PRIVATE KEY-----"}));
    for l in body {
        records.push(json!({"type": "tool.output", "callId": "c1", "stream": "stdout", "text": l}));
    }
    records.push(json!({"type": "tool.output", "callId": "c1", "stream": "stdout", "text": "-----END RSA PRIVATE KEY-----"}));
    // And a token in stdout chunks that cut it mid-way.
    records.push(json!({"type": "tool.stdout", "toolCallId": "c2", "chunk": format!("GITHUB_TOKEN={}", &GH[..15])}));
    records.push(json!({"type": "tool.stdout", "toolCallId": "c2", "chunk": format!("{}\nDONE\n", &GH[15..])}));
    let e = exported_session(&env, "lines", &records);
    for l in body {
        assert!(!contains(&e.seen, l), "a body line of the key survived");
    }
    no_run_of(&e, GH, 15, "stdout chunks");
}

fn xxd(data: &[u8]) -> String {
    data.chunks(16)
        .enumerate()
        .map(|(i, row)| {
            let hex: Vec<String> = row
                .chunks(2)
                .map(|p| p.iter().map(|b| format!("{b:02x}")).collect())
                .collect();
            let ascii: String = row
                .iter()
                .map(|&b| {
                    if (0x20..0x7f).contains(&b) {
                        b as char
                    } else {
                        '.'
                    }
                })
                .collect();
            format!("{:08x}: {:<40}  {ascii}\n", i * 16, hex.join(" "))
        })
        .collect()
}

#[test]
fn a_hexdump_of_a_dotenv_file_keeps_neither_column() {
    let env = Env::new();
    let dotenv = format!("GITHUB_TOKEN={GH}\nAWS_ACCESS_KEY_ID={AWS}\nDEBUG=1\n");
    let dump = xxd(dotenv.as_bytes());
    let hex_of = |s: &str| s.bytes().map(|b| format!("{b:02x}")).collect::<String>();
    let rows: Vec<Value> = dump
        .lines()
        .map(|l| json!({"type": "tool.output", "callId": "x1", "stream": "stdout", "line": l}))
        .collect();
    let mut records = vec![json!({"type": "tool.result", "callId": "x0", "output": dump})];
    records.extend(rows);
    let e = exported_session(&env, "xxd", &records);
    assert_eq!(e.code, 0, "{}", e.envelope);
    let seen = String::from_utf8_lossy(&e.seen).replace(['\n', ' '], "");
    for (name, secret) in [("GitHub", GH), ("AWS", AWS)] {
        // Neither the ASCII column (joined across rows) nor the hex.
        assert!(
            !seen.contains(&secret[4..16]),
            "{name}: ASCII column survived"
        );
        assert!(
            !seen.contains(&hex_of(&secret[4..12])),
            "{name}: hex column survived"
        );
    }
}

/// Makes the bundle's patch one that adds file `name` of `lines`.
pub(crate) fn add_to_patch<'l>(bundle: &Path, name: &str, lines: impl Iterator<Item = &'l str>) {
    let added: Vec<String> = lines.map(|l| format!("+{l}\n")).collect();
    let patch = format!(
        "diff --git a/{name} b/{name}\nnew file mode 100644\n--- /dev/null\n+++ b/{name}\n@@ -0,0 +1,{} @@\n{}",
        added.len(),
        added.concat()
    );
    std::fs::write(bundle.join("workspace.patch"), patch).unwrap();
}

/// `xxd -i`'s C array of `data`: twelve `0x..` values a row.
fn xxd_i(data: &[u8]) -> String {
    let rows: Vec<String> = data
        .chunks(12)
        .map(|c| {
            let cells: Vec<String> = c.iter().map(|b| format!("0x{b:02x}")).collect();
            format!("  {}", cells.join(", "))
        })
        .collect();
    format!(
        "unsigned char env[] = {{\n{}\n}};\nunsigned int env_len = {};\n",
        rows.join(",\n"),
        data.len()
    )
}

/// Every byte value written in `seen` (`0x..` or a decimal up to 255), in
/// order, as bytes: a list that survived in any layout shows its text.
fn byte_values(seen: &[u8]) -> Vec<u8> {
    let re = regex::bytes::Regex::new(r"\b(?:0x([0-9a-fA-F]{2})|([0-9]{1,3}))\b").unwrap();
    re.captures_iter(seen)
        .filter_map(|c| match (c.get(1), c.get(2)) {
            (Some(h), _) => u8::from_str_radix(std::str::from_utf8(h.as_bytes()).ok()?, 16).ok(),
            (_, Some(d)) => std::str::from_utf8(d.as_bytes()).ok()?.parse().ok(),
            _ => None,
        })
        .collect()
}

#[test]
fn secrets_written_as_lists_of_bytes_or_octal_escapes_go() {
    let env = Env::new();
    let dotenv = |k: &str, v: &str| format!("DEBUG=1\n{k}={v}\n");
    let gh_dump = xxd_i(dotenv("GITHUB_TOKEN", GH).as_bytes());
    let aws_dump = xxd_i(dotenv("AWS_ACCESS_KEY_ID", AWS).as_bytes());
    let decimal: Vec<String> = GH.bytes().map(|b| b.to_string()).collect();
    let octal: String = AWS.bytes().map(|b| format!("\\{b:03o}")).collect();
    let mut records = vec![
        json!({"type": "tool.result", "callId": "x0", "output": gh_dump}),
        json!({"type": "assistant.message", "text": format!("key = bytes([{}])", decimal.join(", "))}),
        json!({"type": "tool.call", "callId": "x2", "command": format!("printf '{octal}' > key")}),
    ];
    // The same dump printed a line a record.
    records.extend(
        aws_dump
            .lines()
            .map(|l| json!({"type": "tool.output", "callId": "x1", "stream": "stdout", "line": l})),
    );
    let src = session_bundle(&env, "bytes", &jsonl(&records));
    // And committed as a header a patch adds.
    add_to_patch(&src, "env.h", gh_dump.lines());
    rebrand(&src, "bytes-bundle", "bytes-attempt");
    let pol = policy(&env, "bytes-policy.json", json!({}));
    let e = export(&env, &src, &pol, "bytes-out");
    assert_eq!(e.code, 0, "{}", e.envelope);
    let values = byte_values(&e.seen);
    for (name, secret) in [("GitHub", GH), ("AWS", AWS)] {
        let piece = &secret.as_bytes()[4..16];
        assert!(
            !values.windows(piece.len()).any(|w| w == piece),
            "{name}: a list of its bytes survived"
        );
    }
    assert!(!contains(&e.seen, &octal[..40]), "octal escapes survived");
    let patch = std::fs::read_to_string(e.tree.join("workspace.patch")).unwrap();
    assert!(patch.contains("+unsigned char env[] = {"), "{patch}");
    assert!(
        !byte_values(patch.as_bytes())
            .windows(12)
            .any(|w| w == &GH.as_bytes()[4..16]),
        "{patch}"
    );
}

/// `text` cut every `width` bytes, as a terminal wraps it.
fn wrap(text: &str, width: usize, eol: &str) -> String {
    let rows: Vec<&str> = text
        .as_bytes()
        .chunks(width)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    rows.join(eol)
}

#[test]
fn a_token_a_terminal_wrap_cuts_goes_from_both_lines() {
    let env = Env::new();
    // The wrap falls inside each token: after 9 bytes of GH, 6 of AWS.
    let log = format!(
        "{:71}{GH} pushed\n{:116}{AWS} configured",
        "remote: authenticating with", "aws: using key"
    );
    let screen = wrap(&log.replace('\n', ""), 80, "\r\n");
    let src = session_bundle(
        &env,
        "wrapped",
        &jsonl(&[json!({"type": "tool.result", "callId": "w0", "output": screen})]),
    );
    // The same screen saved to a log file a change adds.
    add_to_patch(&src, "push.log", screen.split("\r\n"));
    rebrand(&src, "wrapped-bundle", "wrapped-attempt");
    let pol = policy(&env, "wrapped-policy.json", json!({}));
    let e = export(&env, &src, &pol, "wrapped-out");
    assert_eq!(e.code, 0, "{}", e.envelope);
    // Neither piece of either token: the part before the wrap, nor the
    // part after it.
    for (name, secret, at) in [("GitHub", GH, 9), ("AWS", AWS, 6)] {
        for piece in [&secret[..at], &secret[at..]] {
            assert!(!contains(&e.seen, piece), "{name}: {piece:?} survived");
        }
    }
    let patch = std::fs::read_to_string(e.tree.join("workspace.patch")).unwrap();
    assert!(patch.contains("+remote: authenticating with"), "{patch}");
}

#[test]
fn a_json_web_keys_private_members_go_and_its_public_ones_stay() {
    let env = Env::new();
    let (d, p, k) = (
        "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
        "83i-7IvMGXoMXCskv73TKr8637FiO7Z27zv8oj6pbWUQyLPQBQxtPVnwD20R",
        "GawgguFyGrWKav7AX4VKUg",
    );
    let x = "MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4";
    let ec = json!({"kty": "EC", "crv": "P-256", "x": x, "d": d, "kid": "k1"});
    let rsa = json!({"d": d, "e": "AQAB", "kty": "RSA", "n": x, "p": p});
    let set =
        serde_json::to_string_pretty(&json!({"keys": [rsa, {"kty": "oct", "k": k}]})).unwrap();
    let src = session_bundle(
        &env,
        "jwk",
        &jsonl(&[
            // Printed by a tool (text), and held by a record (structure).
            json!({"type": "tool.result", "callId": "j0", "output": format!("$ cat jwks.json\n{set}\n")}),
            json!({"type": "tool.call", "callId": "j1", "input": {"key": ec}}),
        ]),
    );
    add_to_patch(&src, "jwks.json", set.lines());
    rebrand(&src, "jwk-bundle", "jwk-attempt");
    let pol = policy(&env, "jwk-policy.json", json!({}));
    let e = export(&env, &src, &pol, "jwk-out");
    for (what, secret) in [("d", d), ("p", p), ("k", k)] {
        gone(&e, secret, what);
    }
    // The public key is not a secret.
    assert!(contains(&e.seen, x), "the public member went too");
}

#[test]
fn a_putty_keys_private_lines_go_from_an_output_and_a_patch() {
    let env = Env::new();
    let private = [
        "AAAAIHk2Qm9xR3pLcTdWbTJOcDRYdzhUY0ZzNmpIMXlCZDVrQm9xR3pLcTdWbTJO",
        "cDRYdzhUY0ZzNmpIMXlCZDVr",
    ];
    let public = "AAAAC3NzaC1lZDI1NTE5AAAAIBq8l1ZmL3n2yQ0hW5uR7cT9vX4kJ2pD6sF1gH8a";
    let ppk = format!(
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy\nPublic-Lines: 1\n{public}\nPrivate-Lines: 2\n{}\n{}\nPrivate-MAC: 4b1f0c9e2d7a8b3c6f5e1d0a9b8c7d6e\n",
        private[0], private[1]
    );
    let src = session_bundle(
        &env,
        "ppk",
        &jsonl(&[
            json!({"type": "tool.result", "callId": "k0", "output": format!("$ cat deploy.ppk\n{ppk}")}),
        ]),
    );
    add_to_patch(&src, "deploy.ppk", ppk.lines());
    rebrand(&src, "ppk-bundle", "ppk-attempt");
    let pol = policy(&env, "ppk-policy.json", json!({}));
    let e = export(&env, &src, &pol, "ppk-out");
    for line in private {
        gone(&e, line, "a private line");
    }
    assert!(contains(&e.seen, public), "the public line went too");
}

#[test]
fn a_gzipped_secret_in_base64_and_secrets_in_entities_or_split_by_invisible_characters_go() {
    use std::io::Write;
    let env = Env::new();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(format!("GITHUB_TOKEN={GH}\n").as_bytes())
        .unwrap();
    let blob = crate::exports::b64_bytes(&gz.finish().unwrap());
    let dec: String = GH.chars().map(|c| format!("&#{};", c as u32)).collect();
    let hex: String = AWS.chars().map(|c| format!("&#x{:x};", c as u32)).collect();
    let zw = format!("{}\u{200b}{}", &GH[..20], &GH[20..]);
    let e = exported_session(
        &env,
        "disguised",
        &[
            json!({"type": "tool.result", "output": format!("H4sI blob: {blob}")}),
            json!({"type": "assistant.message", "text": format!("<p>{dec}</p>")}),
            json!({"type": "assistant.message", "text": format!("<p>{hex}</p>")}),
            json!({"type": "assistant.message", "text": zw}),
        ],
    );
    gone(&e, &blob[..40], "the gzip blob");
    gone(&e, &dec[..40], "decimal character references");
    gone(&e, &hex[..40], "hex character references");
    gone(&e, &GH[..20], "a token split by a zero-width space");
}

/// A secret that is a JSON key: where a finding is, the pointer, names
/// it. Every output that shows a place shows the key as a digest prefix.
#[test]
fn a_secret_that_is_a_json_key_is_shown_by_no_output() {
    let env = Env::new();
    let leak = env.write(
        "leak.json",
        json!({"env": {GH: {"nested": AWS}}, "list": [{GH: 1}]})
            .to_string()
            .as_bytes(),
    );
    let leak = leak.to_str().unwrap();
    let mut seen = Vec::new();
    for args in [
        &["scan", leak][..],
        &["--json", "scan", leak],
        &["scan", "--format", "sarif", leak],
    ] {
        let r = env.run(args);
        assert_eq!(r.code, 1, "{args:?}: {}", r.stderr);
        seen.extend(&r.stdout);
        seen.extend(r.stderr.as_bytes());
    }
    let text = String::from_utf8_lossy(&seen);
    assert!(!text.contains(&GH[..12]), "{text}");
    assert!(!text.contains(&AWS[..12]), "{text}");
    // Still placed: the masked key and the rest of the pointer.
    assert!(text.contains("/env/[masked:"), "{text}");
    assert!(text.contains("/nested"), "{text}");

    let e = exported_session(
        &env,
        "keys",
        &[json!({"type": "tool.result", "output": {GH: "value", "vars": {AWS: true}}})],
    );
    gone(&e, &GH[..12], "a token as a key");
    gone(&e, &AWS[..12], "a key id as a key");

    // Refused input names the key masked: a duplicate key, in export
    // create's issues (text and JSON) and in verify's on a tree edited
    // after the export, its manifest edited to match.
    let dup = format!("{{\"type\": \"tool.result\", \"output\": {{\"{GH}\": 1, \"{GH}\": 2}}}}\n");
    let src = session_bundle(&env, "dup", &dup);
    let pol = policy(&env, "dup-policy.json", json!({}));
    let e = export(&env, &src, &pol, "dup-out");
    assert_ne!(e.code, 0, "{}", e.envelope);
    assert!(
        e.envelope.to_string().contains("validation.duplicate_key"),
        "{}",
        e.envelope
    );
    assert!(
        !contains(&e.seen, &GH[..12]),
        "{}",
        String::from_utf8_lossy(&e.seen)
    );
    assert!(
        e.envelope.to_string().contains("[masked:"),
        "{}",
        e.envelope
    );

    let tree = env.path("keys-out");
    let session = tree.join("session.jsonl");
    let mut bytes = std::fs::read(&session).unwrap();
    bytes.extend(format!("{}\n", json!({"type": "note", "env": {GH: 1}})).as_bytes());
    std::fs::write(&session, &bytes).unwrap();
    let mpath = tree.join("manifest.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&mpath).unwrap()).unwrap();
    for a in m["artifacts"].as_array_mut().unwrap() {
        if a["relativePath"] == "session.jsonl" {
            a["digest"] = json!(crate::support::sha256(&bytes));
            a["sizeBytes"] = json!(bytes.len());
        }
    }
    std::fs::write(&mpath, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    let t = tree.to_str().unwrap();
    for args in [
        &["export", "verify", t][..],
        &["--json", "export", "verify", t],
    ] {
        let r = env.run(args);
        assert_eq!(r.code, 1, "{args:?}: {}", r.stderr);
        let text = format!("{}{}", String::from_utf8_lossy(&r.stdout), r.stderr);
        assert!(text.contains("secret_in_export"), "{text}");
        assert!(!text.contains(&GH[..12]), "{text}");
        assert!(text.contains("/env/[masked:"), "{text}");
    }
}

/// An artifact whose path carries a token is exported under
/// `evidence/<n>`, as EXPORT.md says, and the token is nowhere.
#[test]
fn an_artifact_path_that_carries_a_token_is_renamed() {
    let env = Env::new();
    let src = session_bundle(
        &env,
        "paths",
        "{\"type\": \"assistant.message\", \"text\": \"ok\"}\n",
    );
    let name = format!("telemetry/{GH}.json");
    std::fs::rename(src.join("telemetry/trace.json"), src.join(&name)).unwrap();
    let mpath = src.join("manifest.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&mpath).unwrap()).unwrap();
    for d in m["evidence"].as_array_mut().unwrap() {
        if d["id"] == "telemetry" {
            d["relativePath"] = json!(name);
        }
    }
    std::fs::write(&mpath, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    let pol = policy(&env, "p.json", json!({}));
    let e = export(&env, &src, &pol, "out");
    gone(&e, &GH[..12], "a token in an artifact's path");
    let paths: Vec<String> = e.envelope["result"]["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["relativePath"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(
        paths.iter().any(|p| p.starts_with("evidence/")),
        "{paths:?}"
    );
    assert!(paths.contains(&"session.jsonl".to_string()), "{paths:?}");
    let out = &e.tree;
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    for a in manifest["artifacts"].as_array().unwrap() {
        assert!(
            out.join(a["relativePath"].as_str().unwrap()).is_file(),
            "{a}"
        );
    }
    assert_eq!(e.code, 0);
    let r = env.run(&["export", "verify", out.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

/// The user of a shell prompt is replaced, in both common prompt forms,
/// even when the name is a common word (issue 41).
#[test]
fn a_prompt_user_goes_even_when_the_name_is_a_common_word() {
    let env = Env::new();
    for (i, prompt) in [
        "alice@build-07:~/work$ make test",
        "[alice@build-07 work]$ make test",
        "[root@ci-runner-3 /]# ls",
    ]
    .iter()
    .enumerate()
    {
        let user = &prompt
            [prompt.find(|c: char| c.is_ascii_alphabetic()).unwrap()..prompt.find('@').unwrap()];
        let e = exported_session(
            &env,
            &format!("prompt{i}"),
            &[json!({"type": "tool.result", "output": format!("{prompt}\nok\n")})],
        );
        assert_eq!(e.code, 0, "{}", e.envelope);
        let session = std::fs::read_to_string(e.tree.join("session.jsonl")).unwrap();
        assert!(
            !session.contains(&format!("{user}@")),
            "{prompt}: {session}"
        );
        assert!(session.contains("[LOCAL_USER:"), "{prompt}: {session}");
        assert!(
            session.contains("make test") || session.contains("ls"),
            "{session}"
        );
    }
}

#[test]
fn a_token_shown_in_colour_in_a_mail_in_a_raw_stream_or_as_numbers_goes() {
    let env = Env::new();
    // `grep --color=always` around the match; fullwidth letters.
    let coloured = format!(
        "GH_TOKEN=\u{1b}[01;31m\u{1b}[K{}\u{1b}[m\u{1b}[K{}\n",
        &GH[..12],
        &GH[12..]
    );
    let wide: String = GH
        .chars()
        .map(|c| char::from_u32(c as u32 + 0xFEE0).unwrap())
        .collect();
    // A mail body in quoted-printable, wrapped at 76 inside the token.
    let head = format!("Your token for the build bot is {}=", &GH[..14]);
    let mail = format!(
        "{}{head}\r\n{} =E2=80=94 ops\r\n",
        "-".repeat(76 - head.len()),
        &GH[14..]
    );
    // `curl -N` of a streaming API: the deltas cut the token.
    let sse: String = format!("export GH_TOKEN={GH}\n")
        .as_bytes()
        .chunks(6)
        .map(|c| {
            let d = json!({"choices": [{"index": 0, "delta": {"content": std::str::from_utf8(c).unwrap()}}]});
            format!("data: {d}\n\n")
        })
        .collect();
    // chr() concatenation, and the token as one big number.
    let chr: String = format!("t={GH}")
        .bytes()
        .map(|b| format!("chr({b})"))
        .collect::<Vec<_>>()
        .join("+");
    let mut digits: Vec<u32> = vec![0];
    for b in format!("token {GH}").bytes() {
        let mut carry = u32::from(b);
        for d in digits.iter_mut() {
            let v = *d * 256 + carry;
            *d = v % 10;
            carry = v / 10;
        }
        while carry > 0 {
            digits.push(carry % 10);
            carry /= 10;
        }
    }
    let big: String = digits
        .iter()
        .rev()
        .map(|d| char::from(b'0' + *d as u8))
        .collect();
    // A value no shape rule knows, after its label, wrapped the same way:
    // the line's part beside the label goes, and so must the next line's.
    let head = format!("Set this in CI: QUILLSTACK_API_KEY={}=", &KEY[..12]);
    let named = format!(
        "{}{head}\r\n{} and rerun.\r\n",
        "-".repeat(76 - head.len()),
        &KEY[12..]
    );
    // A log line that begins inside a blob, three characters into a quad.
    let blob = crate::exports::b64(&format!(
        "Here is the configuration you asked for. Set this before the build: export GITHUB_TOKEN={GH} and run make again.\n"
    ));
    let cut_blob = format!("{} (truncated)", &blob[3..]);
    let records: Vec<Value> = [coloured, wide.clone(), mail, sse, chr, big, named, cut_blob]
        .into_iter()
        .enumerate()
        .map(|(i, o)| json!({"type": "tool_result", "tool_use_id": format!("t{i}"), "output": o}))
        .collect();
    let e = exported_session(&env, "shown", &records);
    no_run_of(&e, GH, 10, "coloured, mailed, streamed");
    no_run_of(&e, KEY, 12, "a named value in a mail");
    assert!(!contains(&e.seen, &wide[..30]), "fullwidth token survived");
    let session = session_of(&e);
    let outputs: Vec<&str> = session
        .iter()
        .filter_map(|r| r["output"].as_str())
        .collect();
    assert!(
        outputs[2].ends_with("=E2=80=94 ops\r\n"),
        "the mail around stays: {:?}",
        outputs[2]
    );
    let streamed: String = outputs[3]
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter_map(|d| {
            d.pointer("/choices/0/delta/content")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect();
    assert!(
        !streamed.contains(&GH[4..14]),
        "the stream's text: {streamed:?}"
    );
    assert!(
        !outputs[4].contains("chr(104)+chr(112)+chr(95)"),
        "chr() list: {}",
        outputs[4]
    );
    assert!(
        outputs[5].chars().filter(|c| c.is_ascii_digit()).count() < 20,
        "big number: {}",
        outputs[5]
    );
    assert!(
        !outputs[7].contains(&blob[8..40]),
        "a blob cut inside a quad: {}",
        outputs[7]
    );
    assert!(outputs[7].ends_with(" (truncated)"), "{}", outputs[7]);
}

/// A label that ends one record's line and the value on the next
/// record's line, one line a record (a tool's stdout) or streamed deltas:
/// the value goes, cut from its own record, although neither record
/// shows it alone; the label and the records around stay.
#[test]
fn a_value_whose_label_ended_the_record_before_is_cut() {
    let env = Env::new();
    let line = |i: usize, l: &str| json!({"type": "tool.output", "stream": "stdout", "call_id": "c1", "seq": i, "line": l});
    let delta = |t: &str| json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}});
    for (name, records, secret) in [
        (
            "stdout-label",
            vec![
                line(0, "Your database password is:"),
                line(1, "Zr8Kq2Vn5Xw1"),
                line(2, "done"),
            ],
            "Zr8Kq2Vn5Xw1",
        ),
        (
            "stdout-key",
            vec![line(0, "password:"), line(1, "hunter2go"), line(2, "done")],
            "hunter2go",
        ),
        (
            "delta-key",
            vec![delta("password: "), delta("hunter2go"), delta("\nok")],
            "hunter2go",
        ),
    ] {
        let e = exported_session(&env, name, &records);
        gone(&e, secret, name);
        let out = session_of(&e);
        let text: String = out.iter().map(|r| r.to_string()).collect();
        assert!(text.contains("[REDACTED_SECRET:"), "{name}: {text}");
        // The records before and after the value keep their text.
        let at = if name.starts_with("delta") {
            "/delta/text"
        } else {
            "/line"
        };
        for i in [0, 2] {
            assert_eq!(
                out[i].pointer(at),
                records[i].pointer(at),
                "{name}: record {i} changed"
            );
        }
    }
}
