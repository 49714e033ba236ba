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
}

/// What a record is to the streams: pieces, an end, or neither.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Record {
    /// Its pieces.
    pub pieces: Vec<Piece>,
    /// Whether it ends every open stream.
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
pub fn record<'a>(v: &'a Node<'_>) -> Record {
    let mut out = Record::default();
    let Node::Object(members) = v else {
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
    if !found.is_empty() {
        let key = key_of(v);
        out.pieces = found
            .into_iter()
            .map(|(place, pointer, text)| Piece {
                key: format!("{key}\u{1e}{place}"),
                pointer,
                text: text.to_string(),
            })
            .collect();
    }
    out.ends = out.pieces.is_empty() && ends_streams(&kind);
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
        if r.ends {
            self.finish();
            return;
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
            for newline in [false, true] {
                let (joined, offsets) = join(&s.text, s.base, &s.parts[first..], newline);
                self.scratch.clear();
                self.det.find(joined.as_bytes(), &mut self.scratch);
                let found = std::mem::take(&mut self.scratch);
                for f in &found {
                    self.report(s, &joined, &offsets, f, region);
                }
                self.scratch = found;
            }
        }
        s.scanned = s.base + s.text.len();
        self.trim(s);
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
        if covered.len() < 2 {
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
        if !s.reported.insert(span) {
            return;
        }
        let (a, b) = crate::detect::collect::char_span(joined, f.start, f.end);
        let secret = joined[a..b].to_string();
        for (n, &(i, x, y)) in covered.iter().enumerate() {
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
