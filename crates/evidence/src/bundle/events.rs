//! Event-level alignment of two sessions (`bundle diff`): each record is
//! keyed by its content with the fields that always differ between two
//! runs set aside (ids, timestamps, durations), and the two key sequences
//! are aligned with Myers' diff, so a retry or another model's attempt
//! reads as "these events match, these were only in A, these only in B".

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::time::{Duration, Instant};

use coffer_base::json::{self, canonical::canonicalize, JsonlLimits};
use serde::Serialize;
use serde_json::Value;
use similar::{Algorithm, DiffTag};

/// Sessions longer than this (either side) get counts, not an alignment:
/// keys and labels are held in memory, a few dozen bytes per event.
pub const MAX_ALIGNED_EVENTS: usize = 100_000;
/// Events listed in the hunks of one diff; counts stay complete past it.
pub const MAX_LISTED_EVENTS: usize = 1_000;
/// After this the diff settles for a valid but not minimal alignment.
const DEADLINE: Duration = Duration::from_secs(2);
/// Longest label kept for an event.
const MAX_LABEL_CHARS: usize = 60;

/// One session record, as the alignment shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Event {
    /// Its line (from 1).
    pub line: u64,
    /// Its `type` as the harness wrote it (an open vocabulary each harness
    /// defines), or `(none)`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The tool or name it is about, when it says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

/// An event and the key it aligns by.
#[derive(Debug, Clone)]
pub struct Keyed {
    key: u64,
    /// The event.
    pub event: Event,
}

/// Whether a field always differs between two runs of the same work, so
/// it must not make two events differ: ids, times and durations.
fn is_volatile(name: &str) -> bool {
    const EXACT: [&str; 8] = [
        "id",
        "uuid",
        "ts",
        "time",
        "timestamp",
        "date",
        "created",
        "updated",
    ];
    // camelCase and snake_case: sessionId, trace_id, createdAt, started_at,
    // durationMs, latency_ms. Case matters: `paid`, `chat`, `items` stay.
    const SUFFIXES: [&str; 9] = ["Id", "ID", "_id", "At", "_at", "Ms", "_ms", "Ns", "_ns"];
    EXACT.iter().any(|e| name.eq_ignore_ascii_case(e))
        || SUFFIXES
            .iter()
            .any(|s| name.len() > s.len() && name.ends_with(s))
}

fn strip_volatile(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|k, _| !is_volatile(k));
            m.values_mut().for_each(strip_volatile);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_volatile),
        _ => {}
    }
}

fn hash(bytes: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

/// Keys record `line` (1-based) of a session.
pub fn keyed(line: u64, raw: &[u8]) -> Keyed {
    let Ok(mut v) = json::parse(raw, &JsonlLimits::EVIDENCE.line) else {
        return Keyed {
            key: hash(raw),
            event: Event {
                line,
                kind: "(none)".into(),
                label: None,
            },
        };
    };
    let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let kind = text("type").unwrap_or_else(|| "(none)".into());
    let label = ["tool", "toolName", "tool_name", "name"]
        .iter()
        .find_map(|k| text(k))
        .map(|l| l.chars().take(MAX_LABEL_CHARS).collect());
    strip_volatile(&mut v);
    Keyed {
        key: hash(canonicalize(&v).as_bytes()),
        event: Event { line, kind, label },
    }
}

/// Which side a run of events is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum On {
    /// Both: the events match once volatile fields are set aside.
    Both,
    /// Only in A.
    A,
    /// Only in B.
    B,
}

/// A run of consecutive events on one side, or matched on both.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hunk {
    /// Where.
    pub on: On,
    /// The run's first line in A (for a B run: the A line it follows).
    pub a_line: u64,
    /// Its length in A.
    pub a_len: u64,
    /// Its first line in B (for an A run: the B line it follows).
    pub b_line: u64,
    /// Its length in B.
    pub b_len: u64,
    /// The events of a one-sided run (none for a matched one), while
    /// fewer than [`MAX_LISTED_EVENTS`] have been listed.
    pub events: Vec<Event>,
}

/// Two sessions aligned event by event.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Alignment {
    /// Events matched on both sides.
    pub matched: u64,
    /// Events only in A.
    pub only_a: u64,
    /// Events only in B.
    pub only_b: u64,
    /// The runs, in order.
    pub hunks: Vec<Hunk>,
    /// Whether every one-sided event is listed.
    pub complete: bool,
}

/// Aligns two keyed sessions.
pub fn align(a: &[Keyed], b: &[Keyed]) -> Alignment {
    let (ka, kb): (Vec<u64>, Vec<u64>) = (
        a.iter().map(|k| k.key).collect(),
        b.iter().map(|k| k.key).collect(),
    );
    let ops = similar::capture_diff_slices_deadline(
        Algorithm::Myers,
        &ka,
        &kb,
        Some(Instant::now() + DEADLINE),
    );
    let mut out = Alignment {
        complete: true,
        ..Alignment::default()
    };
    let mut listed = 0usize;
    let mut take = |side: &[Keyed], r: std::ops::Range<usize>| -> Vec<Event> {
        let room = MAX_LISTED_EVENTS.saturating_sub(listed);
        let events: Vec<Event> = side[r.clone()]
            .iter()
            .take(room)
            .map(|k| k.event.clone())
            .collect();
        listed += events.len();
        events
    };
    for op in ops {
        let (tag, ra, rb) = op.as_tag_tuple();
        let hunk = |on, events| Hunk {
            on,
            a_line: ra.start as u64 + 1,
            a_len: if on == On::B { 0 } else { ra.len() as u64 },
            b_line: rb.start as u64 + 1,
            b_len: if on == On::A { 0 } else { rb.len() as u64 },
            events,
        };
        match tag {
            DiffTag::Equal => {
                out.matched += ra.len() as u64;
                out.hunks.push(hunk(On::Both, Vec::new()));
            }
            DiffTag::Delete | DiffTag::Insert | DiffTag::Replace => {
                if !ra.is_empty() {
                    out.only_a += ra.len() as u64;
                    let events = take(a, ra.clone());
                    out.complete &= events.len() == ra.len();
                    out.hunks.push(hunk(On::A, events));
                }
                if !rb.is_empty() {
                    out.only_b += rb.len() as u64;
                    let events = take(b, rb.clone());
                    out.complete &= events.len() == rb.len();
                    out.hunks.push(hunk(On::B, events));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(lines: &[&str]) -> Vec<Keyed> {
        lines
            .iter()
            .enumerate()
            .map(|(i, l)| keyed(i as u64 + 1, l.as_bytes()))
            .collect()
    }

    #[test]
    fn ids_and_times_do_not_make_events_differ() {
        let a = keyed(1, br#"{"type":"tool.call","tool":"bash","id":"toolu_1","timestamp":"t1","sessionId":"s1","durationMs":5,"input":{"cmd":"ls","callId":"c1"}}"#);
        let b = keyed(1, br#"{"durationMs":9,"tool":"bash","type":"tool.call","id":"toolu_2","timestamp":"t2","sessionId":"s2","input":{"callId":"c2","cmd":"ls"}}"#);
        assert_eq!(a.key, b.key);
        assert_eq!(a.event.label.as_deref(), Some("bash"));
        let c = keyed(
            1,
            br#"{"type":"tool.call","tool":"bash","input":{"cmd":"rm"}}"#,
        );
        assert_ne!(a.key, c.key, "content still counts");
    }

    #[test]
    fn volatile_names_are_ids_times_and_durations_only() {
        for v in [
            "id",
            "ID",
            "sessionId",
            "trace_id",
            "createdAt",
            "started_at",
            "durationMs",
            "latency_ms",
            "timestamp",
        ] {
            assert!(is_volatile(v), "{v}");
        }
        for keep in [
            "type", "text", "paid", "format", "data", "valid", "items", "hat", "grams", "chat",
        ] {
            assert!(!is_volatile(keep), "{keep}");
        }
    }

    #[test]
    fn a_retry_aligns_around_what_it_inserted_and_dropped() {
        let a = session(&[
            r#"{"type":"start","id":"1"}"#,
            r#"{"type":"tool.call","tool":"read"}"#,
            r#"{"type":"tool.call","tool":"edit"}"#,
            r#"{"type":"end"}"#,
        ]);
        let b = session(&[
            r#"{"type":"start","id":"2"}"#,
            r#"{"type":"tool.call","tool":"read"}"#,
            r#"{"type":"tool.call","tool":"grep"}"#,
            r#"{"type":"tool.call","tool":"test"}"#,
            r#"{"type":"end"}"#,
        ]);
        let al = align(&a, &b);
        assert_eq!((al.matched, al.only_a, al.only_b), (3, 1, 2));
        let ons: Vec<On> = al.hunks.iter().map(|h| h.on).collect();
        assert_eq!(ons, [On::Both, On::A, On::B, On::Both]);
        assert_eq!(al.hunks[1].events[0].label.as_deref(), Some("edit"));
        assert_eq!((al.hunks[2].b_line, al.hunks[2].b_len), (3, 2));
        assert!(al.complete);
    }

    #[test]
    fn listing_stops_at_its_cap_and_says_so() {
        let a = session(&[]);
        let lines: Vec<String> = (0..MAX_LISTED_EVENTS + 5)
            .map(|i| format!(r#"{{"type":"x","n":{i}}}"#))
            .collect();
        let b: Vec<Keyed> = lines
            .iter()
            .enumerate()
            .map(|(i, l)| keyed(i as u64 + 1, l.as_bytes()))
            .collect();
        let al = align(&a, &b);
        assert_eq!(al.only_b, (MAX_LISTED_EVENTS + 5) as u64);
        assert_eq!(al.hunks[0].events.len(), MAX_LISTED_EVENTS);
        assert!(!al.complete);
    }
}
