use super::*;
use crate::detect::rules::RuleSet;
use crate::detect::Placeholders;
use serde_json::json;

const TOKEN: &str = "ghp_R2d2C3poLukeLeia0123456789abcdefABCD";

fn det() -> Detector {
    Detector::new(RuleSet::new(&[]).unwrap(), &[], Placeholders::AreExpected)
}

/// Feeds `records` (line 0 on) and returns the cuts.
fn cuts(records: &[serde_json::Value]) -> Vec<Cut> {
    let d = det();
    let mut r = Reassembler::new(&d);
    for (n, v) in records.iter().enumerate() {
        r.feed(n as u64, record(&Node::from(v)));
    }
    r.finish();
    assert_eq!(r.exceeded, None);
    r.cuts
}

/// The records after the cuts, with `[X]` for the placeholder.
fn applied(records: &[serde_json::Value]) -> Vec<serde_json::Value> {
    let c = cuts(records);
    records
        .iter()
        .enumerate()
        .map(|(n, v)| {
            let mut v = v.clone();
            let mine: Vec<Cut> = c.iter().filter(|c| c.line == n as u64).cloned().collect();
            apply(&mut v, &mine, &mut |_, _| "[X]".into());
            v
        })
        .collect()
}

fn text_of(records: &[serde_json::Value]) -> String {
    records.iter().map(|v| v.to_string()).collect()
}

#[test]
fn an_anthropic_text_delta_stream_is_read_as_one_text() {
    let (a, b, z) = (&TOKEN[..7], &TOKEN[7..25], &TOKEN[25..]);
    let records = vec![
        json!({"type": "message_start", "message": {"id": "msg_1"}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": format!("your token is {a}")}}),
        json!({"type": "ping"}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": b}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": format!("{z}, keep it")}}),
        json!({"type": "content_block_stop", "index": 0}),
    ];
    let c = cuts(&records);
    assert_eq!(c.len(), 3, "{c:?}");
    assert!(c.iter().all(|c| c.secret == TOKEN));
    assert_eq!(c.iter().filter(|c| c.first).count(), 1);
    let out = applied(&records);
    let text = text_of(&out);
    assert!(
        !text.contains(a) && !text.contains(b) && !text.contains(z),
        "{text}"
    );
    assert_eq!(out[2]["delta"]["text"], "your token is [X]");
    assert_eq!(out[4]["delta"]["text"], "");
    assert_eq!(out[5]["delta"]["text"], ", keep it");
}

#[test]
fn openai_chat_chunks_and_response_deltas_are_streams_per_choice_and_call() {
    let chunk = |content: serde_json::Value| {
        json!({"id": "chatcmpl-9", "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": content}]})
    };
    let (a, b) = TOKEN.split_at(20);
    let records = vec![
        chunk(json!({"role": "assistant", "content": ""})),
        chunk(json!({"content": format!("export GITHUB_TOKEN={a}")})),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"cmd\": \"echo "}}]}),
        ),
        chunk(json!({"content": b})),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "hello\"}"}}]})),
    ];
    let c = cuts(&records);
    assert_eq!(c.iter().map(|c| c.line).collect::<Vec<_>>(), [1, 3]);
    let out = text_of(&applied(&records));
    assert!(!out.contains(a) && !out.contains(b), "{out}");

    let responses = vec![
        json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": a}),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1, "delta": "{\"x\":"}),
        json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": b}),
        json!({"type": "response.output_text.done", "item_id": "msg_1"}),
    ];
    let c = cuts(&responses);
    assert_eq!(c.iter().map(|c| c.line).collect::<Vec<_>>(), [0, 2]);
}

#[test]
fn a_private_key_printed_one_stdout_line_per_record_goes_whole() {
    let key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAuV3pYtkNH6OgnsuXbFxyNwP3IjQEXAMPLEXXqFQ9Fz1Jw2y1\nR9mK0xJZq3G8vT7cL2nB5wQ1dY6rE4uI8oP0aS3dF5gH7jK9lZ2xC4vB6nM8qW0e\nT2yU4iO6pA8sD0fG2hJ4kL6zX8cV0bN2mQ4wE6rT8yU0iO2pA4sD6fG8hJ0kL2zX\nc9vB1nM3qW5eR7tY9uI1oP3aS5dF7gH9jK1lZ3xC5vB7nM9qW1eR3tY5uI7oP9aS\n-----END RSA PRIVATE KEY-----";
    let records: Vec<serde_json::Value> =
        std::iter::once(json!({"type": "tool.call", "callId": "c1", "cmd": "cat id_rsa"}))
            .chain(key.lines().map(
                |l| json!({"type": "tool.output", "callId": "c1", "stream": "stdout", "line": l}),
            ))
            .chain(std::iter::once(
                json!({"type": "tool.exit", "callId": "c1", "code": 0}),
            ))
            .collect();
    let out = text_of(&applied(&records));
    for l in key.lines().skip(1).take(5) {
        assert!(!out.contains(l), "{l} survived: {out}");
    }
}

#[test]
fn a_private_key_cut_into_long_pieces_of_a_schema_nobody_named_goes_whole() {
    // Gemini-shaped chunks of 100 bytes: each piece is longer than a
    // value a structural match may take whole, and some cuts fall at a
    // line's end; the key's armour says it is one block.
    let key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAuV3pYtkNH6OgnsuXbFxyNwP3IjQEXAMPLEXXqFQ9Fz1Jw2y1\nR9mK0xJZq3G8vT7cL2nB5wQ1dY6rE4uI8oP0aS3dF5gH7jK9lZ2xC4vB6nM8qW0e\nT2yU4iO6pA8sD0fG2hJ4kL6zX8cV0bN2mQ4wE6rT8yU0iO2pA4sD6fG8hJ0kL2zX\nc9vB1nM3qW5eR7tY9uI1oP3aS5dF7gH9jK1lZ3xC5vB7nM9qW1eR3tY5uI7oP9aS\n-----END RSA PRIVATE KEY-----\n";
    let said = format!("Here is the key:\n{key}Keep it safe.");
    let records: Vec<serde_json::Value> = said
        .as_bytes()
        .chunks(100)
        .map(|c| json!({"candidates": [{"content": {"parts": [{"text": std::str::from_utf8(c).unwrap()}]}}]}))
        .collect();
    let out: String = applied(&records)
        .iter()
        .map(|v| {
            v.pointer("/candidates/0/content/parts/0/text")
                .unwrap()
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    for l in key.lines().skip(1).take(4) {
        for part in l.as_bytes().chunks(16) {
            let part = std::str::from_utf8(part).unwrap();
            assert!(!out.contains(part), "{part} survived: {out}");
        }
    }
    assert!(out.starts_with("Here is the key:\n[X]"), "{out}");
    assert!(out.ends_with("Keep it safe."), "{out}");
}

#[test]
fn streams_do_not_mix_and_a_secret_within_one_piece_is_that_pieces_own() {
    let (a, b) = TOKEN.split_at(15);
    let records = vec![
        json!({"type": "content_block_delta", "index": 0, "delta": {"text": a}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"text": b}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"text": format!(" whole {TOKEN} here")}}),
    ];
    assert_eq!(cuts(&records), []);
}

#[test]
fn a_long_stream_keeps_a_bounded_window_and_still_finds_a_late_secret() {
    let d = det();
    let mut r = Reassembler::new(&d);
    let filler = "lorem ipsum dolor sit amet, consectetur adipiscing elit. ";
    let mut n = 0u64;
    for _ in 0..20_000 {
        r.feed(
            n,
            record(&Node::from(
                &json!({"type": "text_delta", "index": 0, "delta": filler}),
            )),
        );
        n += 1;
    }
    let s = &r.streams[0];
    assert!(
        s.text.len() <= WINDOW + SCAN_STEP + filler.len(),
        "{}",
        s.text.len()
    );
    assert!(s.parts.len() < 1_000, "{}", s.parts.len());
    for piece in [&TOKEN[..5], &TOKEN[5..30], &TOKEN[30..]] {
        r.feed(
            n,
            record(&Node::from(
                &json!({"type": "text_delta", "index": 0, "delta": piece}),
            )),
        );
        n += 1;
    }
    r.finish();
    assert_eq!(r.cuts.len(), 3, "{:?}", r.cuts);
    assert!(r.cuts.iter().all(|c| c.line >= 20_000));
}

#[test]
fn a_record_that_ends_a_stream_is_known_by_its_words() {
    for (t, ends) in [
        ("message_stop", true),
        ("content_block_stop", true),
        ("response.output_text.done", true),
        ("response.completed", true),
        ("tool.send_input", false),
        ("pending", false),
    ] {
        assert_eq!(record(&Node::from(&json!({"type": t}))).ends, ends, "{t}");
    }
}

#[test]
fn a_schema_nobody_named_streams_by_its_structure() {
    // Gemini's chunks, a feed of tokens, and a tool's output in two
    // results: no member or type names a stream, the place the text
    // stands at does.
    let gemini =
        |t: &str| json!({"candidates": [{"content": {"parts": [{"text": t}], "role": "model"}}]});
    let text = format!("my token is {TOKEN} ok");
    let mut records: Vec<serde_json::Value> = text
        .as_bytes()
        .chunks(7)
        .map(|c| gemini(std::str::from_utf8(c).unwrap()))
        .collect();
    let fed = format!("export SOME_TOKEN={TOKEN}\n");
    records.extend(
        fed.as_bytes()
            .chunks(3)
            .map(|c| json!({"event": "token", "data": std::str::from_utf8(c).unwrap()})),
    );
    records.push(json!({"type": "tool_result", "output": format!("using {}", &TOKEN[..22])}));
    records.push(json!({"type": "tool_result", "output": format!("{}\nexit 0\n", &TOKEN[22..])}));
    let out = applied(&records);
    let text = text_of(&out);
    for w in TOKEN.as_bytes().windows(8) {
        assert!(!text.contains(std::str::from_utf8(w).unwrap()), "{text}");
    }
    assert_eq!(text.matches("[X]").count(), 3, "{text}");
    assert_eq!(out[records.len() - 2]["output"], "using [X]");
    assert_eq!(out[records.len() - 1]["output"], "\nexit 0\n");
}

#[test]
fn records_that_were_never_one_text_are_not_glued_into_a_secret() {
    // Two hexdumps in a row: read joined, their rows would spell the
    // token across records, but each dump is its own string's to judge.
    let dump = |t: &[u8]| {
        t.chunks(16)
            .enumerate()
            .map(|(i, row)| {
                let hex: Vec<String> = row.iter().map(|b| format!("{b:02x}")).collect();
                format!(
                    "{:08x}: {}  {}",
                    i * 16,
                    hex.join(" "),
                    String::from_utf8_lossy(row)
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let records = vec![
        json!({"type": "tool_result", "output": dump(format!("a {TOKEN}").as_bytes())}),
        json!({"type": "tool_result", "output": dump(format!("x {TOKEN} y").as_bytes())}),
        // Prose and code that end and begin with something other than a
        // word: glued, they make no secret.
        json!({"type": "message", "text": "Set the limit to 4096."}),
        json!({"type": "message", "text": "HTTP/1.1 200 OK then"}),
        json!({"type": "message", "text": "see crates/export/src/detect/streams.rs"}),
        json!({"type": "message", "text": "2026-12-07T10:50:22Z started"}),
        // A short value, a blob, then a label: glued, the value's run goes
        // on through the blob into the label, but the blob is a value of
        // its own.
        json!({"type": "tool_result", "output": "PRIVATE_TOKEN=42fc56d9"}),
        json!({"type": "tool_result", "output": "W3sKCQkiaWQiOiAiN2MyZTkxZDAtNDRhYi00ZjBlLTlhM2QtMmI1YzhlMWY2YTcwIiwKCQkibmFtZSI6ICJBY21lV2lkZ2V0Igp9XQ"}),
        json!({"type": "tool_result", "output": "discordToken=\"468420340764152497\""}),
    ];
    assert_eq!(cuts(&records), vec![], "{records:?}");
}

#[test]
fn a_cut_takes_the_whole_encoded_run_it_lands_in() {
    // A token that ends one output, then the same text in base64: read
    // joined, the token's match runs on into the blob. A cut of only the
    // blob's first bytes would leave the rest misaligned: it decodes to
    // nothing a rule knows, yet holds most of the token.
    use base64::Engine;
    let sg = format!(
        "SG.{}.{}-{}",
        "APhb3zgjtx3hajdas1TjBB", "H7Sgbba3afgKSDyB442aDK0kpGO3SD332313", "L5528K"
    );
    let said = format!("oops {sg}");
    let blob = base64::engine::general_purpose::STANDARD.encode(&said);
    let records = vec![
        json!({"type": "tool_result", "output": said}),
        json!({"type": "tool_result", "output": blob}),
        json!({"type": "tool_result", "output": "done, bye"}),
    ];
    let out = applied(&records);
    assert_eq!(out[1]["output"], "", "{out:?}");
    assert_eq!(out[0]["output"], "oops [X]", "{out:?}");
    assert_eq!(out[2]["output"], "done, bye");
}

#[test]
fn a_piece_joins_its_stream_when_its_ends_could_hold_a_cut_secret() {
    for t in [
        "a",
        "ghp_R2d2",
        "short plain",
        "ends mid token ghp_R2d2C3po",
        "AKIA starts it",
        "words then x9",
    ] {
        assert!(may_cross(t.as_bytes()), "{t}");
    }
    for t in [
        "The agent ran the tests and they passed.",
        "(see the manual) for more",
        "\nexit code was zero\n",
        "Ça marche très bien, merci.",
    ] {
        assert!(!may_cross(t.as_bytes()), "{t}");
    }
}

#[test]
fn every_text_member_passes_the_quick_test() {
    for m in STRUCTURAL_MEMBERS {
        assert!(is_text_member(m), "{m}");
    }
    for m in ["id", "type", "model", "texts", "seq", "timestamp"] {
        assert!(!is_text_member(m), "{m}");
    }
}

#[test]
fn a_terminal_recording_is_read_as_the_terminal_shows_it() {
    // asciinema's `[time, "o", text]` events: the record is an array, and
    // each write is wrapped in colour codes the terminal does not show.
    let t = format!("token in use: {TOKEN}\n");
    let records: Vec<serde_json::Value> = t
        .as_bytes()
        .chunks(3)
        .enumerate()
        .map(|(i, c)| {
            let c = std::str::from_utf8(c).unwrap();
            json!([i as f64 * 0.1, "o", format!("\u{1b}[32m{c}\u{1b}[0m")])
        })
        .collect();
    let shown = |out: &[serde_json::Value]| -> String {
        out.iter()
            .map(|v| {
                v[2].as_str()
                    .unwrap()
                    .replace("\u{1b}[32m", "")
                    .replace("\u{1b}[0m", "")
            })
            .collect()
    };
    assert!(
        shown(&records).contains(TOKEN),
        "the harness reads its input"
    );
    let out = applied(&records);
    let after = shown(&out);
    for i in 0..TOKEN.len() - 6 {
        assert!(!after.contains(&TOKEN[i..i + 6]), "{after}");
    }
    assert!(after.starts_with("token in use: [X]"), "{after}");
}

#[test]
fn a_value_under_the_label_that_ended_the_record_before_is_cut_alone() {
    let line =
        |l: &str| json!({"type": "tool.output", "stream": "stdout", "call_id": "c1", "line": l});
    let records = vec![
        line("Your database password is:"),
        line("Zr8Kq2Vn5Xw1"),
        line("password:"),
        line("hunter2go"),
        line("done"),
    ];
    let out = applied(&records);
    let lines: Vec<&str> = out.iter().map(|v| v["line"].as_str().unwrap()).collect();
    // Each value goes from its own record; the labels and the word after
    // stay (read as written, `hunter2godone` would take `done` too).
    assert_eq!(
        lines,
        [
            "Your database password is:",
            "[X]",
            "password:",
            "[X]",
            "done"
        ]
    );
    // A value its own record shows is that record's, not the stream's.
    let own = vec![line("note"), line("password: hunter2go"), line("done")];
    assert_eq!(cuts(&own), []);
}
