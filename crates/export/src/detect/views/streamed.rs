//! A stream written out inside one string: a tool's output that is the
//! raw body of a streaming API (`curl -N`: `data: {…}` lines of
//! server-sent events) or a session log shown with `cat`. Each line that
//! is a JSON object is read as a record would be (`streams::named_record`),
//! and the pieces of each stream are joined, so a secret the stream's
//! deltas cut is read whole. Each byte of a joined text maps to its whole
//! line: a secret found there takes every line it touches.

use coffer_base::json::{self, Limits};

use super::View;
use crate::detect::streams;

/// Fewest record lines that make a stream worth joining.
const MIN_LINES: usize = 2;
/// Limits of one line read as a record (as a session's lines are).
const LINE: Limits = Limits {
    max_bytes: 1 << 20,
    max_depth: 64,
    max_nodes: 100_000,
};

/// One stream being joined: its key, text, and each byte's line.
struct Joined {
    key: String,
    bytes: Vec<u8>,
    map: Vec<(u32, u32)>,
    pieces: usize,
}

/// The joined text of every stream whose records are lines of `s`, as a
/// view each (when it has two pieces or more).
pub(super) fn streamed_lines(s: &[u8], out: &mut Vec<View>) {
    if !might_hold_records(s) {
        return;
    }
    let mut open: Vec<Joined> = Vec::new();
    for (a, b) in super::line_spans(s) {
        let line = &s[a..b];
        let body = line
            .strip_prefix(b"data:")
            .map_or(line, |rest| rest.strip_prefix(b" ").unwrap_or(rest));
        if body.first() != Some(&b'{') {
            continue;
        }
        let Ok(node) = json::parse_node(body, &LINE) else {
            continue;
        };
        let r = streams::named_record(&node);
        if r.ends {
            close(&mut open, out);
        }
        for p in r.pieces {
            let i = match open.iter().position(|j| j.key == p.key) {
                Some(i) => i,
                None => {
                    open.push(Joined {
                        key: p.key,
                        bytes: Vec::new(),
                        map: Vec::new(),
                        pieces: 0,
                    });
                    open.len() - 1
                }
            };
            let j = &mut open[i];
            j.bytes.extend_from_slice(p.text.as_bytes());
            j.map
                .extend(std::iter::repeat_n((a as u32, b as u32), p.text.len()));
            j.pieces += 1;
        }
    }
    close(&mut open, out);
}

/// Ends the open streams: each of two pieces or more is a view.
fn close(open: &mut Vec<Joined>, out: &mut Vec<View>) {
    for j in open.drain(..) {
        if j.pieces >= 2 && !j.bytes.is_empty() {
            out.push(View::mapped(j.bytes, j.map));
        }
    }
}

/// Whether `s` may hold two record lines that are pieces of a stream: two
/// lines that begin a JSON object (after `data: ` or not), and a word
/// every piece's record has (`delta`, `choices`, `stdout`, `stderr`,
/// `chunk`, `output`). Most strings have neither.
fn might_hold_records(s: &[u8]) -> bool {
    use std::sync::LazyLock;
    static WORDS: LazyLock<Vec<memchr::memmem::Finder<'static>>> = LazyLock::new(|| {
        ["delta", "choices", "stdout", "stderr", "chunk", "output"]
            .iter()
            .map(|w| memchr::memmem::Finder::new(w.as_bytes()))
            .collect()
    });
    // A record line begins `{` at the string's start, after a line end, or
    // after `data: `: one look for a `{` rules most strings out.
    let starts = memchr::memchr_iter(b'{', s)
        .filter(|&i| i == 0 || s[i - 1] == b'\n' || s[..i].ends_with(b"data: "))
        .take(MIN_LINES)
        .count();
    starts >= MIN_LINES && WORDS.iter().any(|w| w.find(s).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "ghp_R2d2C3poLukeLeia0123456789abcdefABCD";

    #[test]
    fn server_sent_events_in_a_tool_output_are_read_as_their_stream() {
        let text = format!("export GH_TOKEN={TOKEN}\n");
        let sse: String = text
            .as_bytes()
            .chunks(5)
            .map(|c| {
                let d = serde_json::json!({"choices": [{"index": 0, "delta": {"content": std::str::from_utf8(c).unwrap()}}]});
                format!("data: {d}\n\n")
            })
            .chain(std::iter::once("data: [DONE]\n".to_string()))
            .collect();
        let mut out = Vec::new();
        streamed_lines(sse.as_bytes(), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].bytes, text.as_bytes());
        // A hit maps to the lines it touches.
        let at = text.find(TOKEN).unwrap();
        let (x, y) = out[0].original_span(at, at + TOKEN.len());
        assert!(sse[x..y].starts_with("data: {"), "{}", &sse[x..y]);
        assert!(!sse[y..].contains("abcdefABCD"));
    }

    #[test]
    fn a_session_log_shown_with_cat_is_read_per_stream() {
        let lines: Vec<String> = TOKEN
            .as_bytes()
            .chunks(8)
            .enumerate()
            .flat_map(|(i, c)| {
                [
                    serde_json::json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": std::str::from_utf8(c).unwrap()}}).to_string(),
                    serde_json::json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": format!("w{i} ")}}).to_string(),
                ]
            })
            .collect();
        let log = format!("$ cat session.jsonl\n{}\n", lines.join("\n"));
        let mut out = Vec::new();
        streamed_lines(log.as_bytes(), &mut out);
        assert!(
            out.iter().any(|v| v.bytes == TOKEN.as_bytes()),
            "{:?}",
            out.len()
        );
    }

    #[test]
    fn json_lines_that_are_no_stream_are_no_view() {
        let log = "{\"level\":\"info\",\"msg\":\"started\"}\n{\"level\":\"info\",\"msg\":\"output ready\"}\n";
        let mut out = Vec::new();
        streamed_lines(log.as_bytes(), &mut out);
        assert!(out.is_empty());
        // One piece is no stream: the string's own scan reads it.
        let one = "x\n{\"type\":\"output\",\"data\":\"hello\"}\n";
        streamed_lines(one.as_bytes(), &mut out);
        assert!(out.is_empty());
    }
}
