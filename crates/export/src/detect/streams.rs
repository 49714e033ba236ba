//! Text that arrives in pieces: a message streamed as deltas, a tool's
//! output a chunk or a line per record. A secret split over such records
//! is in no single string, so each string's scan misses it; here the
//! pieces of one stream are joined and read as the text they make, and a
//! secret found across pieces is cut out of every piece that holds part of
//! it.
//!
//! **What a piece is** (from the record's own structure, never a vendor
//! list of event names): a record's text in
//! - `delta` when it is a string (OpenAI Responses `*.delta` events), or
//!   `delta.text`, `delta.partial_json`, `delta.content`,
//!   `delta.arguments` (Anthropic `content_block_delta`);
//! - `choices[k].delta.content` and
//!   `choices[k].delta.tool_calls[j].function.arguments` (OpenAI chat
//!   completion chunks), one stream per choice and per tool call;
//! - a `stdout` or `stderr` string member (a tool's output chunk);
//! - the first of `chunk`, `text`, `data`, `output`, `content`, `line`,
//!   `message` in a record whose `stream` (or `channel`) is `stdout` or
//!   `stderr`, or whose `type` (or `event`) names a `delta`, `chunk`,
//!   `stdout`, `stderr` or `output`.
//!
//! A record none of these mark can still hold pieces: a string under a
//! text member at any depth, or in a short top-level array, that may
//! hold part of a secret cut at one of its ends (see [`structural`]).
//! Such a stream is read only where a run of token bytes crosses from
//! one piece into the next, by the rules alone (see
//! `Reassembler::find_at_crossings`).
//!
//! **Which stream** a piece belongs to: the values of the record's
//! identifying members (`index`, `item_id`, `output_index`,
//! `content_index`, `call_id`/`tool_call_id`/`tool_use_id` in their
//! spellings, `message_id`, `session_id`, `stream`, `channel`, and a chunk
//! object's `id`) with the piece's own place (choice, tool call, field).
//! Pieces of one stream join in record order, whatever records of other
//! streams come between. A record whose `type` or `event` says a stream
//! ended (`stop`, `done`, `end`, `complete`, `finish`) ends every open
//! stream; so does the end of the artifact.
//!
//! **How it is read**: each stream's text is scanned, with the detector
//! every string goes through, joined as written (deltas) and joined with a
//! newline between pieces (one line a record), every
//! [`SCAN_STEP`] bytes and when it ends, over the bytes since the last
//! scan and the [`WINDOW`] bytes before them. Only findings that span two
//! pieces or more are reported (a finding within one piece is that
//! string's own), and only those that begin past the region's first
//! [`MARGIN`] bytes, which are read as context (a match there may be an
//! artifact of where the region was cut; it was judged by the scan
//! before). Memory is the window of each open stream and at most
//! [`MAX_STREAMS`] streams (the least recently used ends first); work is
//! linear in the text (each byte is read at most twice per join). A
//! secret longer than the window less the margin, found in the margin and
//! reaching past the last scan, may begin further back than the window
//! holds: that is an error (`limit.stream_window`), never a skip.

use std::collections::BTreeSet;

use coffer_base::json::Node;

use crate::detect::{Detector, Finding};

/// Bytes of a stream kept before its unscanned text: the longest secret a
/// scan can find across the step between two scans.
pub const WINDOW: usize = 16 << 10;
/// New bytes of a stream that trigger a scan.
pub const SCAN_STEP: usize = 16 << 10;
/// Streams open at once.
pub const MAX_STREAMS: usize = 64;
/// Bytes at the start of a scan's region read only as context.
pub const MARGIN: usize = 1 << 10;

/// Where a scan's region starts to count, and where the last scan ended
/// (offsets from the stream's start).
#[derive(Debug, Clone, Copy)]
struct Region {
    margin_end: usize,
    last_scan: usize,
}

/// Members that name where a record's text goes.
const KEY_MEMBERS: &[&str] = &[
    "index",
    "item_id",
    "itemId",
    "output_index",
    "content_index",
    "call_id",
    "callId",
    "tool_call_id",
    "toolCallId",
    "tool_use_id",
    "toolUseId",
    "message_id",
    "messageId",
    "session_id",
    "sessionId",
    "stream",
    "channel",
];
/// Members a chunk's text is in, in order of preference.
const TEXT_MEMBERS: &[&str] = &[
    "chunk", "text", "data", "output", "content", "line", "message",
];
/// Members of a `delta` object that hold text.
const DELTA_MEMBERS: &[&str] = &["text", "partial_json", "content", "arguments"];

/// One piece of a stream's text in a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// The stream it belongs to.
    pub key: String,
    /// Where the text is in the record (a JSON pointer).
    pub pointer: String,
    /// The text.
    pub text: String,
    /// Whether only the record's structure made it a piece (see
    /// [`structural`]): its stream is read only where a run of token bytes
    /// crosses from one piece into the next.
    pub structural: bool,
}

/// What a record is to the streams: pieces, an end, or neither.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Record {
    /// Its pieces.
    pub pieces: Vec<Piece>,
    /// Whether it ends every open stream (before its own pieces, which
    /// are then structural ones).
    pub ends: bool,
}

/// The value of member `k` of an object, as a short string key part.
fn key_part(v: &Node<'_>, k: &str) -> Option<String> {
    match v.get(k)? {
        Node::String(s) if s.len() <= 200 => Some(format!("{k}={s}")),
        Node::Number(n) => Some(format!("{k}={n}")),
        _ => None,
    }
}

fn key_of(v: &Node<'_>) -> String {
    let mut key: Vec<String> = KEY_MEMBERS.iter().filter_map(|k| key_part(v, k)).collect();
    let chunk = v
        .get("object")
        .and_then(Node::as_str)
        .is_some_and(|o| o.ends_with(".chunk"));
    if chunk {
        key.extend(key_part(v, "id"));
    }
    key.join("\u{1f}")
}

fn kind_of(v: &Node<'_>) -> String {
    ["type", "event"]
        .iter()
        .find_map(|k| v.get(k).and_then(Node::as_str))
        .unwrap_or_default()
        .to_ascii_lowercase()
}

/// The pieces of a record, and whether it ends the open streams.
pub fn record(v: &Node<'_>) -> Record {
    record_with(v, true)
}

/// The pieces of a record that names them (no structural ones), and
/// whether it ends the open streams: what the readback joins.
pub fn named_record(v: &Node<'_>) -> Record {
    record_with(v, false)
}

fn record_with<'a>(v: &'a Node<'_>, structural_too: bool) -> Record {
    let mut out = Record::default();
    let Node::Object(members) = v else {
        // A record that is an array (a terminal recording's
        // `[time, "o", text]`) names no stream; its strings may be pieces.
        if structural_too {
            out.pieces = structural(v);
        }
        return out;
    };
    let kind = kind_of(v);
    // A record's type is short: a plain window compare beats building a
    // substring searcher per word and record.
    let chunked = ["delta", "chunk", "stdout", "stderr", "output"]
        .iter()
        .any(|w| {
            kind.as_bytes()
                .windows(w.len())
                .any(|part| part == w.as_bytes())
        });
    // One look at the member names first: most records are no piece.
    // (The first byte is tested first: string compares cost per record.)
    let placed = members.iter().any(|(k, _)| {
        matches!(k.as_bytes().first(), Some(b'd' | b'c' | b's'))
            && matches!(
                k.as_ref(),
                "delta" | "choices" | "stdout" | "stderr" | "stream" | "channel"
            )
    });
    if !placed && !chunked {
        out.ends = ends_streams(&kind);
        if structural_too {
            out.pieces = structural(v);
        }
        return out;
    }
    // (place, pointer, text); the stream's key is read only for a record
    // that holds a piece, since most records hold none.
    let mut found: Vec<(String, String, &'a str)> = Vec::new();
    let mut push = |place: &str, pointer: String, text: &'a str| {
        found.push((place.to_string(), pointer, text));
    };
    if let Some((place, pointer, text)) = delta_piece(v) {
        push(&place, pointer, text);
    }
    if let Some(Node::Array(choices)) = v.get("choices") {
        choice_pieces(choices, &mut push);
    }
    for m in ["stdout", "stderr"] {
        if let Some(s) = v.get(m).and_then(Node::as_str) {
            push(m, format!("/{m}"), s);
        }
    }
    let streamed = ["stream", "channel"].iter().any(|k| {
        v.get(k)
            .and_then(Node::as_str)
            .is_some_and(|s| matches!(s, "stdout" | "stderr"))
    });
    let text = TEXT_MEMBERS.iter().find_map(|m| {
        members
            .iter()
            .find(|(k, _)| k == m)
            .and_then(|(_, x)| x.as_str())
            .map(|s| (m, s))
    });
    match text {
        Some((m, s)) if (streamed || chunked) && !has_pieces(v) => push(m, format!("/{m}"), s),
        _ => {}
    }
    out.ends = found.is_empty() && ends_streams(&kind);
    if !found.is_empty() {
        let key = key_of(v);
        out.pieces = found
            .into_iter()
            .map(|(place, pointer, text)| Piece {
                key: format!("{key}\u{1e}{place}"),
                pointer,
                text: text.to_string(),
                structural: false,
            })
            .collect();
    } else if structural_too {
        out.pieces = structural(v);
    }
    out
}

/// A `delta` record's piece: the delta itself, or its first text member.
fn delta_piece<'a>(v: &'a Node<'_>) -> Option<(String, String, &'a str)> {
    match v.get("delta") {
        Some(Node::String(s)) => Some(("delta".into(), "/delta".into(), s)),
        Some(d @ Node::Object(_)) => DELTA_MEMBERS.iter().find_map(|m| {
            d.get(m)
                .and_then(Node::as_str)
                .map(|s| (format!("delta.{m}"), format!("/delta/{m}"), s))
        }),
        _ => None,
    }
}

/// The pieces of a chat completion chunk's `choices`: each choice's
/// content and each of its tool calls' arguments, a stream each.
fn choice_pieces<'a>(choices: &'a [Node<'_>], push: &mut impl FnMut(&str, String, &'a str)) {
    for (k, c) in choices.iter().enumerate() {
        let Some(d) = c.get("delta") else { continue };
        let choice = key_part(c, "index").unwrap_or_else(|| format!("#{k}"));
        if let Some(s) = d.get("content").and_then(Node::as_str) {
            push(&choice, format!("/choices/{k}/delta/content"), s);
        }
        let Some(Node::Array(calls)) = d.get("tool_calls") else {
            continue;
        };
        for (j, call) in calls.iter().enumerate() {
            let Some(s) = call
                .get("function")
                .and_then(|f| f.get("arguments"))
                .and_then(Node::as_str)
            else {
                continue;
            };
            let which = key_part(call, "index").unwrap_or_else(|| format!("#{j}"));
            push(
                &format!("{choice} call {which}"),
                format!("/choices/{k}/delta/tool_calls/{j}/function/arguments"),
                s,
            );
        }
    }
}

/// Member names that hold text in a record of any schema.
const STRUCTURAL_MEMBERS: &[&str] = &[
    "text",
    "content",
    "data",
    "chunk",
    "output",
    "line",
    "message",
    "token",
    "response",
    "result",
    "delta",
    "textDelta",
    "text_delta",
    "body",
    "log",
    "msg",
];
/// Whether `k` is one of [`STRUCTURAL_MEMBERS`] (one compare of the
/// length and first byte rules most names out).
fn is_text_member(k: &str) -> bool {
    matches!(
        (k.len(), k.as_bytes().first()),
        (
            3..=10,
            Some(b'b' | b'c' | b'd' | b'l' | b'm' | b'o' | b'r' | b't')
        )
    ) && STRUCTURAL_MEMBERS.contains(&k)
}

/// How deep [`structural`] looks for them (members and array elements).
const STRUCTURAL_DEPTH: usize = 6;
/// Elements of an array [`structural`] looks into: a chunk's arrays are
/// short (a candidate, a part); a long one is a document, not a piece.
const STRUCTURAL_ELEMENTS: usize = 4;
/// Pieces [`structural`] takes from one record.
const STRUCTURAL_PIECES: usize = 8;

/// The pieces of a record that no named member marks as a stream: each
/// string under a text member ([`STRUCTURAL_MEMBERS`]) at any depth up to
/// [`STRUCTURAL_DEPTH`], and each string of a short top-level array (a
/// terminal recording's `[time, "o", text]`). Their stream is the record's
/// identifying members with the string's pointer, so the text at one place
/// of one schema joins from record to record whatever the schema is
/// (Gemini's `candidates[0].content.parts[0].text`, an `{"event":"token",
/// "data":…}` feed, a tool's output in two results). Most records hold
/// such strings, so their streams are read only where a run of token
/// bytes crosses from one piece into the next (see [`crossings`]).
fn structural(v: &Node<'_>) -> Vec<Piece> {
    let mut found: Vec<(String, &str)> = Vec::new();
    match v {
        Node::Array(items) if items.len() <= STRUCTURAL_ELEMENTS => {
            for (i, x) in items.iter().enumerate() {
                if let Node::String(t) = x {
                    if may_cross(t.as_bytes()) {
                        found.push((format!("/{i}"), t));
                    }
                }
            }
        }
        Node::Object(_) => {
            let mut path = [Step::Index(0); STRUCTURAL_DEPTH];
            text_members(v, &mut path, 0, &mut found);
        }
        _ => {}
    }
    if found.is_empty() {
        return Vec::new();
    }
    let key = key_of(v);
    found
        .into_iter()
        .map(|(pointer, text)| Piece {
            key: format!("{key}\u{1e}~{pointer}"),
            pointer,
            text: text.to_string(),
            structural: true,
        })
        .collect()
}

/// One step of the path [`text_members`] walks.
#[derive(Debug, Clone, Copy)]
enum Step<'a> {
    Member(&'a str),
    Index(usize),
}

/// The JSON pointer of `path` (RFC 6901 escapes).
fn pointer_of(path: &[Step<'_>]) -> String {
    let mut at = String::new();
    for step in path {
        at.push('/');
        match step {
            Step::Index(i) => at.push_str(&i.to_string()),
            Step::Member(k) => {
                for c in k.chars() {
                    match c {
                        '~' => at.push_str("~0"),
                        '/' => at.push_str("~1"),
                        c => at.push(c),
                    }
                }
            }
        }
    }
    at
}

/// What ends a run of token bytes across pieces: a blank, a quote, and a
/// bracket (a placeholder the export wrote, `[REDACTED_SECRET:…]`, is no
/// part of a token, so the readback never glues one to its neighbour).
fn blank(c: &u8) -> bool {
    c.is_ascii_whitespace() || matches!(c, b'"' | b'\'' | b'[' | b']')
}

/// Whether byte `k` of `t` ends a run of token bytes: a [`blank`], but
/// for the `[` of a terminal escape (`ESC [32m`): a colour code between
/// two writes is no gap in what the terminal shows (the rules read such
/// text as shown, see `Detector::find_written`).
fn ends_run(t: &[u8], k: usize) -> bool {
    blank(&t[k]) && !(t[k] == b'[' && k > 0 && t[k - 1] == 0x1b)
}

/// Whether `c` can be part of an encoded value (base64 and base64url,
/// hex, a token's alphabet): a cut takes the whole run of such bytes
/// around it.
fn encoded(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=' | b'_' | b'-')
}

/// Pieces this short join their stream whatever their edges hold (a
/// token streamed a few bytes a record has plain letters for pieces).
const SHORT_PIECE: usize = 16;

/// Whether a structural piece can hold part of a secret split at one of
/// its ends: it is short, or the run of non-blank bytes at its start or
/// its end is not a plain word (letters, at most the first a capital, with
/// a sentence's punctuation around them). Most text ends and begins with
/// a word or a blank; a secret cut in two leaves a digit, a symbol, a run
/// of capitals or a case change at the cut, but for a few letters (a
/// short piece).
fn may_cross(t: &[u8]) -> bool {
    if t.len() <= SHORT_PIECE {
        return true;
    }
    let head = t.iter().position(blank).unwrap_or(t.len());
    let tail = t.iter().rposition(blank).map_or(0, |i| i + 1);
    !plain_word(&t[..head]) || !plain_word(&t[tail..])
}

/// A word as prose has it: letters (non-ASCII ones too), the first
/// possibly a capital, behind opening and before closing punctuation.
fn plain_word(run: &[u8]) -> bool {
    let start = run
        .iter()
        .position(|c| !matches!(c, b'(' | b'[' | b'{' | b'`' | b'*' | b'_'))
        .unwrap_or(run.len());
    let end = run
        .iter()
        .rposition(|c| {
            !matches!(
                c,
                b'.' | b',' | b';' | b'!' | b'?' | b')' | b']' | b'}' | b'`' | b'*'
            )
        })
        .map_or(start, |i| i + 1)
        .max(start);
    run[start..end]
        .iter()
        .enumerate()
        .all(|(i, c)| c.is_ascii_lowercase() || *c >= 0x80 || (i == 0 && c.is_ascii_uppercase()))
}

/// The strings under text members below `v` (whose path is
/// `path[..depth]`) that [`may_cross`], with their pointers.
fn text_members<'a>(
    v: &'a Node<'_>,
    path: &mut [Step<'a>; STRUCTURAL_DEPTH],
    depth: usize,
    found: &mut Vec<(String, &'a str)>,
) {
    if depth >= STRUCTURAL_DEPTH || found.len() >= STRUCTURAL_PIECES {
        return;
    }
    match v {
        Node::Object(members) => {
            for (k, x) in members {
                path[depth] = Step::Member(k);
                match x {
                    Node::String(t)
                        if found.len() < STRUCTURAL_PIECES
                            && is_text_member(k)
                            && may_cross(t.as_bytes()) =>
                    {
                        found.push((pointer_of(&path[..=depth]), t));
                    }
                    Node::Object(_) | Node::Array(_) => text_members(x, path, depth + 1, found),
                    _ => {}
                }
            }
        }
        Node::Array(items) => {
            for (i, x) in items.iter().take(STRUCTURAL_ELEMENTS).enumerate() {
                if matches!(x, Node::Object(_) | Node::Array(_)) {
                    path[depth] = Step::Index(i);
                    text_members(x, path, depth + 1, found);
                }
            }
        }
        _ => {}
    }
}

/// Where a run of token bytes crosses from one piece of a structural
/// stream into the next: the piece after the boundary, and the run's
/// bytes on either side of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Crossing {
    piece: usize,
    left: usize,
    right: usize,
}

/// A structural piece this long that a match covers whole is a value of
/// its own (a blob, an output, a token's base64 after the token) glued
/// to its neighbours, not part of one secret: a stream's deltas carry a
/// few words each, well under this, and a secret split over two outputs
/// leaves a fragment in each, not a whole output.
const WHOLE_PIECE: usize = 32;
/// Whether match `f` of a structural stream (pieces at `offsets` of the
/// joined text) takes a piece whole that is a value of its own: one of
/// [`WHOLE_PIECE`] bytes or more anywhere, or one longer than a
/// [`SHORT_PIECE`] at either end of the match (a secret split over
/// records ends inside the last piece it reaches and begins inside the
/// first, but for a few bytes; a record that ends where the match does is
/// a value glued to its neighbour: a token's base64 after the token).
fn covers_a_value_whole(f: &Finding, offsets: &[(usize, usize)]) -> bool {
    let whole: Vec<(usize, usize)> = offsets
        .iter()
        .copied()
        .filter(|&(a, len)| len > 0 && f.start <= a && a + len <= f.end)
        .collect();
    whole.iter().any(|&(a, len)| {
        len >= WHOLE_PIECE || (len > SHORT_PIECE && (a == f.start || a + len == f.end))
    })
}

/// Whether match `f` of a structural stream crosses one boundary only to
/// take the next record's first word: what it holds past the boundary is
/// a plain word that a blank ends inside that record (`cargo` of `cargo
/// build` after a record ending `--password Zr8K…`), and the part before
/// the boundary is a secret its own record's scan finds, so it is
/// replaced there already. Cutting the word would delete the next
/// record's text; a secret's real tail after a cut is rarely a whole
/// word with more text after it, and if it is, the word is all of the
/// secret that stays.
fn word_after_a_whole_secret(
    det: &Detector,
    joined: &str,
    offsets: &[(usize, usize)],
    f: &Finding,
) -> bool {
    let t = joined.as_bytes();
    let Some(j) = first_boundary(offsets, f) else {
        return false;
    };
    let (b, len) = offsets[j];
    let ends_in_record = f.end < b + len && t.get(f.end).is_some_and(blank);
    if !ends_in_record || !plain_word(&t[b..f.end]) || j == 0 {
        return false;
    }
    // The record's text before the boundary, from the match's label on
    // (as the crossings' windows read it), not the whole record again.
    secret_ends_at(det, t, offsets[j - 1].0, b, f)
}

/// The first of `offsets`' pieces that starts inside match `f`: the
/// first boundary it crosses.
fn first_boundary(offsets: &[(usize, usize)], f: &Finding) -> Option<usize> {
    offsets
        .iter()
        .position(|&(a, len)| len > 0 && f.start < a && a < f.end)
}

/// Whether the text before boundary `b`, from the match's label on (at
/// most [`CROSSING_CONTEXT`] bytes before `f`, not before `from`), holds
/// a secret that ends at the boundary and starts no later than `f`.
fn secret_ends_at(det: &Detector, t: &[u8], from: usize, b: usize, f: &Finding) -> bool {
    let a = from.max(f.start.saturating_sub(CROSSING_CONTEXT));
    let mut alone = Vec::new();
    det.find_written(&t[a..b], &mut alone);
    alone
        .iter()
        .any(|g| g.end == b - a && a + g.start <= f.start.max(a))
}

/// Whether match `f` of a stream read as written (a stream that may as
/// well be one line a record) crosses a boundary only to take the next
/// record whole, and that record is a plain word: `password:` then
/// `hunter2go` then `done`, each a record, read as written
/// `password:hunter2godone`. The other join, a newline between records,
/// reads the password on its own line; the text before the boundary,
/// from the match's label on, holds it whole (that join's finding cuts
/// it). Cutting the word would delete the record after the secret.
fn record_after_a_whole_secret(
    det: &Detector,
    joined: &str,
    offsets: &[(usize, usize)],
    f: &Finding,
) -> bool {
    let t = joined.as_bytes();
    let Some(j) = first_boundary(offsets, f) else {
        return false;
    };
    let (b, len) = offsets[j];
    f.end == b + len && plain_word(&t[b..f.end]) && secret_ends_at(det, t, offsets[0].0, b, f)
}

/// The shortest run across a boundary that can be a secret split there.
const MIN_CROSSING: usize = 12;
/// Bytes of a run counted on each side of a boundary.
const MAX_RUN: usize = 4 << 10;
/// Bytes read either side of a crossing run (a label before a value).
const CROSSING_CONTEXT: usize = 256;

/// The boundaries between `parts` (a stream's pieces, whose text, from
/// offset `base` on, is `text`) that a run of non-blank bytes crosses, at
/// least [`MIN_CROSSING`] long and shaped like a token (a digit, or both
/// cases, or a `=` or `:` joining a name to its value). A secret split
/// between two records is such a run; two words, or a sentence's end and
/// the next one's start, are not.
fn crossings(text: &str, base: usize, parts: &[Part]) -> Vec<Crossing> {
    let t = text.as_bytes();
    let mut out = Vec::new();
    for (i, p) in parts.iter().enumerate().skip(1) {
        let at = p.at - base;
        if p.len == 0 || at == 0 || at >= t.len() {
            continue;
        }
        let left = (at.saturating_sub(MAX_RUN)..at)
            .rev()
            .take_while(|&k| !ends_run(t, k))
            .count();
        let right = (at..(at + MAX_RUN).min(t.len()))
            .take_while(|&k| !ends_run(t, k))
            .count();
        if left == 0 || right == 0 || left + right < MIN_CROSSING {
            continue;
        }
        // Two pieces that are each one run of token bytes, each long
        // enough to be a value of its own, are two values side by side (a
        // hash's output, then a blob's): a match across them would take
        // one of them whole, which `covers_a_value_whole` refuses, or
        // begin and end inside runs no rule reads a secret from.
        let prev = &parts[i - 1];
        let whole = |len: usize, run: usize| len >= WHOLE_PIECE && run >= len;
        if whole(prev.len, left) && whole(p.len, right) {
            continue;
        }
        let run = &t[at - left..at + right];
        let token = run.iter().any(u8::is_ascii_digit)
            || (run.iter().any(u8::is_ascii_uppercase) && run.iter().any(u8::is_ascii_lowercase))
            || run.iter().any(|c| matches!(c, b'=' | b':'));
        if token {
            out.push(Crossing {
                piece: i,
                left,
                right,
            });
        }
    }
    out
}

/// Whether a record of this (lower-cased) `type` or `event` ends the open
/// streams.
fn ends_streams(kind: &str) -> bool {
    kind.split(|c: char| !c.is_ascii_alphanumeric()).any(|w| {
        matches!(w.as_bytes().first(), Some(b's' | b'd' | b'e' | b'c' | b'f')) && ENDS.contains(&w)
    })
}

/// Whether a record holds text in the places read before its named text
/// members (`delta`, `choices`, `stdout`, `stderr`).
fn has_pieces(v: &Node<'_>) -> bool {
    matches!(v.get("delta"), Some(Node::String(_) | Node::Object(_)))
        || matches!(v.get("choices"), Some(Node::Array(_)))
        || ["stdout", "stderr"]
            .iter()
            .any(|m| v.get(m).and_then(Node::as_str).is_some())
}

/// Words of a record's `type` or `event` that say a stream ended.
const ENDS: &[&str] = &[
    "stop",
    "stopped",
    "done",
    "end",
    "ended",
    "complete",
    "completed",
    "finish",
    "finished",
];

/// Part of a secret in one piece: cut `start..end` out of the string at
/// `pointer` of record `line`; the first part of a secret is replaced by
/// its placeholder, the others by nothing.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cut {
    /// The record's line.
    pub line: u64,
    /// The string in it.
    pub pointer: String,
    /// Where in the string (bytes of the decoded string).
    pub start: usize,
    /// See `start`.
    pub end: usize,
    /// Whether this is the secret's first part (it carries the placeholder).
    pub first: bool,
    /// The whole secret, as the joined text spells it.
    pub secret: String,
    /// The rule that found it.
    pub rule: String,
}

/// A secret found across the pieces of a stream whose beginning lies
/// before what the window holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowExceeded {
    /// The line of the oldest piece the window holds.
    pub line: u64,
}

/// One piece as a stream keeps it.
#[derive(Debug)]
struct Part {
    line: u64,
    pointer: String,
    /// Its offset in the stream's text, counted from the stream's start.
    at: usize,
    len: usize,
}

#[derive(Debug)]
struct Stream {
    key: String,
    /// The text from offset `base` of the stream on, pieces joined as written.
    text: String,
    base: usize,
    parts: Vec<Part>,
    /// Offset up to which the text was scanned.
    scanned: usize,
    used: u64,
    /// Spans (from the stream's start) already reported.
    reported: BTreeSet<(usize, usize)>,
    /// Whether its pieces are structural (read only at crossings).
    structural: bool,
}

/// Joins the pieces of each stream of one artifact, fed record by record
/// in line order, and finds what they hold only together.
pub struct Reassembler<'d> {
    det: &'d Detector,
    streams: Vec<Stream>,
    clock: u64,
    /// The cuts found so far.
    pub cuts: Vec<Cut>,
    /// Set when a secret reached past a window (the export must stop).
    pub exceeded: Option<WindowExceeded>,
    scratch: Vec<Finding>,
}

impl<'d> Reassembler<'d> {
    /// Reads streams with `det`.
    pub fn new(det: &'d Detector) -> Self {
        Reassembler {
            det,
            streams: Vec::new(),
            clock: 0,
            cuts: Vec::new(),
            exceeded: None,
            scratch: Vec::new(),
        }
    }

    /// Feeds record `line`.
    pub fn feed(&mut self, line: u64, r: Record) {
        // An end comes before the record's own (structural) pieces.
        if r.ends {
            self.finish();
        }
        for p in r.pieces {
            self.clock += 1;
            let i = match self.streams.iter().position(|s| s.key == p.key) {
                Some(i) => i,
                None => {
                    if self.streams.len() >= MAX_STREAMS {
                        let oldest = (0..self.streams.len())
                            .min_by_key(|&i| self.streams[i].used)
                            .expect("full");
                        let s = self.streams.swap_remove(oldest);
                        self.close(s);
                    }
                    self.streams.push(Stream {
                        key: p.key,
                        text: String::new(),
                        base: 0,
                        parts: Vec::new(),
                        scanned: 0,
                        used: 0,
                        reported: BTreeSet::new(),
                        structural: p.structural,
                    });
                    self.streams.len() - 1
                }
            };
            let mut s = std::mem::replace(&mut self.streams[i], placeholder_stream());
            s.used = self.clock;
            let at = s.base + s.text.len();
            s.parts.push(Part {
                line,
                pointer: p.pointer,
                at,
                len: p.text.len(),
            });
            s.text.push_str(&p.text);
            if s.base + s.text.len() - s.scanned >= SCAN_STEP {
                self.scan(&mut s);
            }
            self.streams[i] = s;
        }
    }

    /// Ends every open stream (the artifact ended).
    pub fn finish(&mut self) {
        for s in std::mem::take(&mut self.streams) {
            self.close(s);
        }
    }

    fn close(&mut self, mut s: Stream) {
        if s.base + s.text.len() > s.scanned {
            self.scan(&mut s);
        }
    }

    /// Scans the unscanned text of `s` and the window before it, in both
    /// joins, then drops what the next scan will not need.
    fn scan(&mut self, s: &mut Stream) {
        if s.parts.len() < 2 {
            s.scanned = s.base + s.text.len();
            return self.trim(s);
        }
        let from = s.scanned.saturating_sub(WINDOW).max(s.base);
        // Start at a piece's start: a secret that begins inside the window
        // is read from its beginning.
        let first = s.parts.partition_point(|p| p.at + p.len <= from);
        // Text before the region is not read: a match in its first
        // MARGIN bytes may be an artifact of the cut (a label whose opening
        // quote fell outside), so it counts only as a sign of a secret
        // longer than the window, when it reaches past the last scan.
        let region = Region {
            margin_end: match s.parts[first].at {
                0 => 0,
                at => at + MARGIN,
            },
            last_scan: s.scanned,
        };
        if s.parts.len() - first >= 2 {
            let crossed = s
                .structural
                .then(|| crossings(&s.text, s.base, &s.parts[first..]));
            if crossed.as_ref().is_none_or(|c| !c.is_empty()) {
                // A structural stream is read as written only: its
                // crossings are runs of token bytes, which a line break
                // between the pieces would end.
                let joins: &[bool] = if s.structural {
                    &[false]
                } else {
                    &[false, true]
                };
                for &newline in joins {
                    let (joined, offsets) = join(&s.text, s.base, &s.parts[first..], newline);
                    let found = match &crossed {
                        None => self.find_in(&joined, 0..joined.len(), false),
                        Some(c) => self.find_at_crossings(&joined, &offsets, c),
                    };
                    for f in &found {
                        if !newline
                            && !s.structural
                            && record_after_a_whole_secret(self.det, &joined, &offsets, f)
                        {
                            continue;
                        }
                        self.report(s, &joined, &offsets, f, region);
                    }
                    self.scratch = found;
                }
            }
        }
        s.scanned = s.base + s.text.len();
        self.trim(s);
    }

    /// The findings in `joined[range]`, at their offsets in `joined`: of
    /// every view, or (`written`) of the rules in the text as written.
    fn find_in(
        &mut self,
        joined: &str,
        range: std::ops::Range<usize>,
        written: bool,
    ) -> Vec<Finding> {
        let mut found = std::mem::take(&mut self.scratch);
        found.clear();
        let part = &joined.as_bytes()[range.clone()];
        if written {
            self.det.find_written(part, &mut found);
        } else {
            self.det.find(part, &mut found);
        }
        for f in &mut found {
            f.start += range.start;
            f.end += range.start;
        }
        found
    }

    /// The findings of a structural stream: the rules' matches in the text
    /// as written (a decoded view would read two records' dumps as one),
    /// around each crossing run (overlapping windows read once), kept only
    /// when they span a crossing's boundary and no other, and take no
    /// value of its own whole ([`covers_a_value_whole`]), but for a key
    /// between armour lines, which is one block however it was cut.
    fn find_at_crossings(
        &mut self,
        joined: &str,
        offsets: &[(usize, usize)],
        crossed: &[Crossing],
    ) -> Vec<Finding> {
        let bounds: Vec<usize> = crossed.iter().map(|c| offsets[c.piece].0).collect();
        let mut out: Vec<Finding> = Vec::new();
        let mut window: Option<(usize, usize)> = None;
        // Boundaries strictly inside `a..b` among the sorted `at`.
        let inside = |at: &[usize], a: usize, b: usize| {
            at.partition_point(|&x| x < b)
                .saturating_sub(at.partition_point(|&x| x <= a))
        };
        let starts: Vec<usize> = offsets
            .iter()
            .filter(|&&(_, len)| len > 0)
            .map(|&(a, _)| a)
            .collect();
        // A finding counts when it crosses a crossing and no other
        // boundary: one that reaches past a blank between two records
        // glued text that was never one.
        let flush = |me: &mut Self, (x, y): (usize, usize), out: &mut Vec<Finding>| {
            let found = me.find_in(joined, x..y, true);
            out.extend(
                found
                    .iter()
                    .filter(|f| {
                        let crossed = inside(&bounds, f.start, f.end);
                        // A key's armour says where it begins and ends,
                        // whatever lines or records it was cut into.
                        crossed > 0
                            && ((crossed == inside(&starts, f.start, f.end)
                                && !covers_a_value_whole(f, offsets)
                                && !word_after_a_whole_secret(me.det, joined, offsets, f))
                                || me.det.armored(&f.rule))
                    })
                    .cloned(),
            );
            me.scratch = found;
        };
        for (c, &b) in crossed.iter().zip(&bounds) {
            let mut x = b.saturating_sub(c.left + CROSSING_CONTEXT);
            let mut y = (b + c.right + CROSSING_CONTEXT).min(joined.len());
            while !joined.is_char_boundary(x) {
                x -= 1;
            }
            while !joined.is_char_boundary(y) {
                y += 1;
            }
            window = match window {
                Some((wx, wy)) if x <= wy => Some((wx, wy.max(y))),
                Some(w) => {
                    flush(self, w, &mut out);
                    Some((x, y))
                }
                None => Some((x, y)),
            };
        }
        if let Some(w) = window {
            flush(self, w, &mut out);
        }
        out
    }

    /// Reports a finding of the joined text (pieces at `offsets`) that
    /// spans two pieces or more.
    fn report(
        &mut self,
        s: &mut Stream,
        joined: &str,
        offsets: &[(usize, usize)],
        f: &Finding,
        region: Region,
    ) {
        // Which pieces the finding covers, and how much of each.
        let covered: Vec<(usize, usize, usize)> = offsets
            .iter()
            .enumerate()
            .filter_map(|(i, &(a, len))| {
                let (x, y) = (f.start.max(a), f.end.min(a + len));
                (x < y).then(|| (i, x - a, y - a))
            })
            .collect();
        // A finding inside one piece is that string's own, unless the
        // piece alone does not show it: a value on one record's line whose
        // label ended the record before (`Your password is:`, then the
        // password), read in the newline join as a text's two lines are.
        let alone = |det: &Detector| {
            let (i, x, y) = covered[0];
            let (a, len) = offsets[i];
            let mut own = Vec::new();
            det.find(&joined.as_bytes()[a..a + len], &mut own);
            own.iter().any(|o| o.start <= x && y <= o.end)
        };
        if covered.is_empty() || (covered.len() == 1 && alone(self.det)) {
            return;
        }
        let first_part = s.parts.len() - offsets.len();
        let abs = |i: usize, o: usize| s.parts[first_part + i].at + o;
        let span = (
            abs(covered[0].0, covered[0].1),
            abs(covered[covered.len() - 1].0, covered[covered.len() - 1].2),
        );
        if span.0 < region.margin_end {
            if span.1 > region.last_scan && self.exceeded.is_none() {
                self.exceeded = Some(WindowExceeded {
                    line: s.parts[first_part].line,
                });
            }
            return;
        }
        // A piece's part of a secret the stream already gave whole (the
        // newline join reads `token:` then the first piece of a token the
        // written join found whole) adds nothing.
        let within = |&(x, y): &(usize, usize)| x <= span.0 && span.1 <= y;
        if (covered.len() == 1 && s.reported.iter().any(within)) || !s.reported.insert(span) {
            return;
        }
        let (a, b) = crate::detect::collect::char_span(joined, f.start, f.end);
        let secret = joined[a..b].to_string();
        for (n, &(i, x, y)) in covered.iter().enumerate() {
            // The cut takes the whole run of [`encoded`] bytes the
            // finding's part stands in, so that no fragment of an encoded
            // value is left to read wrong (a blob cut at a quad it did not
            // begin at decodes to nothing any rule knows, yet holds the
            // rest of the secret).
            let (a, len) = offsets[i];
            let t = &joined.as_bytes()[a..a + len];
            let (mut x, mut y) = (x, y);
            while x > 0 && encoded(t[x - 1]) {
                x -= 1;
            }
            while y < t.len() && encoded(t[y]) {
                y += 1;
            }
            let p = &s.parts[first_part + i];
            self.cuts.push(Cut {
                line: p.line,
                pointer: p.pointer.clone(),
                start: x,
                end: y,
                first: n == 0,
                secret: secret.clone(),
                rule: f.rule.clone(),
            });
        }
    }

    /// Drops the text and pieces no later scan reaches.
    fn trim(&self, s: &mut Stream) {
        let keep_from = s.scanned.saturating_sub(WINDOW);
        let drop_parts = s.parts.partition_point(|p| p.at + p.len <= keep_from);
        if drop_parts == 0 {
            return;
        }
        let new_base = s
            .parts
            .get(drop_parts)
            .map_or(s.base + s.text.len(), |p| p.at);
        s.text.drain(..new_base - s.base);
        s.base = new_base;
        s.parts.drain(..drop_parts);
        let low = s.base;
        s.reported.retain(|(a, _)| *a >= low);
    }
}

fn placeholder_stream() -> Stream {
    Stream {
        key: String::new(),
        text: String::new(),
        base: 0,
        parts: Vec::new(),
        scanned: 0,
        used: 0,
        reported: BTreeSet::new(),
        structural: false,
    }
}

/// The text of `parts` (a stream's `text` starts at offset `base`), joined
/// as written or with a newline between pieces that lack one, and each
/// piece's (offset, length) in the result.
fn join(text: &str, base: usize, parts: &[Part], newline: bool) -> (String, Vec<(usize, usize)>) {
    let mut out = String::new();
    let mut offsets = Vec::with_capacity(parts.len());
    for p in parts {
        if newline && !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        offsets.push((out.len(), p.len));
        out.push_str(&text[p.at - base..p.at - base + p.len]);
    }
    (out, offsets)
}

/// Applies the cuts of one record to its value: each cut string loses its
/// part of the secret, the first part becoming `placeholder(rule, secret)`.
/// Cuts are applied from the end of each string, so the offsets hold.
pub fn apply(
    v: &mut serde_json::Value,
    cuts: &[Cut],
    placeholder: &mut dyn FnMut(&str, &str) -> String,
) -> u64 {
    let mut sorted: Vec<&Cut> = cuts.iter().collect();
    sorted.sort_by(|a, b| (&a.pointer, b.start).cmp(&(&b.pointer, a.start)));
    let mut n = 0;
    // Per string, where the last (rightmost-first) cut began: an
    // overlapping cut stops there.
    let mut below: Option<(&str, usize)> = None;
    for c in sorted {
        let Some(serde_json::Value::String(s)) = v.pointer_mut(&c.pointer) else {
            continue;
        };
        let limit = match below {
            Some((p, at)) if p == c.pointer => at,
            _ => s.len(),
        };
        if c.start >= limit {
            continue;
        }
        let (a, b) = crate::detect::collect::char_span(s, c.start, c.end.min(limit));
        below = Some((&c.pointer, a));
        let with = if c.first {
            placeholder(&c.rule, &c.secret)
        } else {
            String::new()
        };
        s.replace_range(a..b, &with);
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests;
