//! A trace viewer: one self-contained HTML page for a stored run or an
//! export tree (`bundle view`, `export view`).
//!
//! The page holds the run's header, its artifacts, a timeline of its
//! session events and its patch, diff-coloured. Nothing is fetched: style
//! and script are inline, and a Content-Security-Policy allows no request
//! at all and only the one script whose hash it names. Every value from
//! the evidence is escaped where HTML is written, and reaches the page's
//! script only as JSON data (with `<`, `>` and `&` as `\u` escapes), which
//! the script puts into the DOM as text, never as markup.
//!
//! Long sessions stay usable and memory stays flat: the session is read
//! line by line, twice (the first page is written as HTML, then every
//! event as a compact record of the data block), an event's JSON is
//! folded and cut at [`EVENT_SHOWN_BYTES`], and the script shows
//! [`PAGE`] events at a time.

use std::io::{self, BufReader, Read, Write};

use base64::Engine as _;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::lines::{next_line, split_terminator};

/// Events per page of the timeline.
pub const PAGE: usize = 100;
/// Bytes of an event's pretty JSON shown; the rest is counted.
pub const EVENT_SHOWN_BYTES: usize = 16 << 10;
/// Characters of an event's summary line.
pub const SUMMARY_CHARS: usize = 240;
/// Patch lines shown; the rest is counted.
pub const PATCH_LINES: usize = 20_000;
/// The longest session line read (longer lines are shown as a note).
pub const LINE_BYTES: usize = 64 << 20;

/// What the page shows besides the timeline and the patch.
#[derive(Debug, Clone, Default)]
pub struct View {
    /// The page's title (the bundle id).
    pub title: String,
    /// What kind of thing it is ("Run", "Export").
    pub what: &'static str,
    /// Header facts, in order: label, value.
    pub facts: Vec<(String, String)>,
    /// The artifacts.
    pub artifacts: Vec<Artifact>,
    /// Further tables (an export's transformations and exclusions):
    /// title, column names, rows.
    pub tables: Vec<(String, Vec<String>, Vec<Vec<String>>)>,
    /// The session's path among the artifacts, when there is one.
    pub session: Option<String>,
    /// The patch's path among the artifacts, when there is one.
    pub patch: Option<String>,
}

/// One artifact row as the page shows it: text, not typed ids, because an
/// export tree is shown as it is, before and without validation.
#[derive(Debug, Clone, Default)]
pub struct Artifact {
    /// Its id.
    pub id: String,
    /// Its kind.
    pub kind: String,
    /// Its path in the bundle or export.
    pub path: String,
    /// Its media type.
    pub media_type: String,
    /// Its sharing class.
    pub sharing_class: String,
    /// Its digest.
    pub digest: String,
    /// Its size in bytes.
    pub size: u64,
}

/// Where the page reads an artifact's bytes from.
pub trait Files {
    /// Opens the artifact at `path` (verified as the source verifies it).
    fn open(&self, path: &str) -> io::Result<Box<dyn Read + '_>>;
}

/// Writes the page for `view` to `out`, reading the session and the patch
/// through `files`.
pub fn write(out: &mut dyn Write, view: &View, files: &dyn Files) -> io::Result<()> {
    let script_hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(SCRIPT));
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; script-src 'sha256-{script_hash}'; base-uri 'none'; \
         form-action 'none'\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}: {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        view.what,
        esc(&view.title)
    )?;
    header(out, view)?;
    artifacts(out, view)?;
    for (title, columns, rows) in &view.tables {
        table(out, title, columns, rows)?;
    }
    timeline(out, view, files)?;
    patch(out, view, files)?;
    writeln!(out, "<script>{SCRIPT}</script>\n</body>\n</html>")
}

fn header(out: &mut dyn Write, view: &View) -> io::Result<()> {
    write!(
        out,
        "<h1>{}: <code>{}</code></h1>\n<dl class=\"facts\">\n",
        view.what,
        esc(&view.title)
    )?;
    for (k, v) in &view.facts {
        writeln!(out, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(v))?;
    }
    writeln!(out, "</dl>")
}

fn artifacts(out: &mut dyn Write, view: &View) -> io::Result<()> {
    let rows: Vec<Vec<String>> = view
        .artifacts
        .iter()
        .map(|a| {
            vec![
                a.id.clone(),
                a.kind.clone(),
                a.path.clone(),
                a.media_type.clone(),
                a.sharing_class.clone(),
                a.size.to_string(),
                a.digest.clone(),
            ]
        })
        .collect();
    let columns = [
        "Id",
        "Kind",
        "Path",
        "Media type",
        "Sharing",
        "Bytes",
        "Digest",
    ];
    table(out, "Artifacts", &columns.map(String::from), &rows)
}

fn table(
    out: &mut dyn Write,
    title: &str,
    columns: &[String],
    rows: &[Vec<String>],
) -> io::Result<()> {
    writeln!(out, "<h2>{}</h2>", esc(title))?;
    if rows.is_empty() {
        return writeln!(out, "<p class=\"note\">None.</p>");
    }
    write!(out, "<table>\n<thead><tr>")?;
    for c in columns {
        write!(out, "<th>{}</th>", esc(c))?;
    }
    writeln!(out, "</tr></thead>\n<tbody>")?;
    for r in rows {
        write!(out, "<tr>")?;
        for cell in r {
            write!(out, "<td>{}</td>", esc(cell))?;
        }
        writeln!(out, "</tr>")?;
    }
    writeln!(out, "</tbody>\n</table>")
}

/// One event as the page shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
struct Record {
    /// Type.
    t: String,
    /// Tool name.
    n: String,
    /// Time.
    at: String,
    /// Whether it is an error.
    e: bool,
    /// Summary line.
    s: String,
    /// Pretty JSON, cut at [`EVENT_SHOWN_BYTES`].
    j: String,
}

/// Each session line, as a record, to `each` (stops when it returns false).
fn each_record(
    files: &dyn Files,
    path: &str,
    each: &mut dyn FnMut(Record) -> io::Result<bool>,
) -> io::Result<()> {
    let mut r = BufReader::with_capacity(1 << 20, files.open(path)?);
    let mut buf = Vec::new();
    let mut n = 0u64;
    loop {
        match next_line(&mut r, &mut buf, LINE_BYTES) {
            Ok(false) => return Ok(()),
            Ok(true) => {}
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                // A line over the bound: said, and the rest left unread.
                each(note(&format!("line {}: {e}", n + 1)))?;
                return Ok(());
            }
            Err(e) => return Err(e),
        }
        n += 1;
        if !each(record(split_terminator(&buf).0))? {
            return Ok(());
        }
    }
}

fn note(text: &str) -> Record {
    Record {
        t: "(unreadable)".into(),
        n: String::new(),
        at: String::new(),
        e: true,
        s: text.to_string(),
        j: String::new(),
    }
}

/// The first string among `keys` (or a string inside a one-level object
/// or array there), for the summary.
fn text_of(v: &Value, keys: &[&str]) -> Option<String> {
    for k in keys {
        match v.get(*k) {
            Some(Value::String(s)) if !s.is_empty() => return Some(s.clone()),
            Some(Value::Array(a)) => {
                let joined: Vec<String> = a
                    .iter()
                    .filter_map(|x| match x {
                        Value::String(s) => Some(s.clone()),
                        Value::Object(_) => text_of(x, &["text", "content"]),
                        _ => None,
                    })
                    .collect();
                if !joined.is_empty() {
                    return Some(joined.join(" "));
                }
            }
            Some(o @ Value::Object(_)) => {
                if let Some(s) = text_of(o, &["text", "content", "command", "message"]) {
                    return Some(s);
                }
            }
            _ => {}
        }
    }
    None
}

fn record(line: &[u8]) -> Record {
    let Ok(v) = serde_json::from_slice::<Value>(line) else {
        return note("a line that is not JSON");
    };
    use coffer_evidence::bundle::stream::{member, TIME_KEYS, TOOL_KEYS};
    let field = |keys: &[&str]| member(&v, keys).unwrap_or_default();
    let t = field(&["type", "event", "kind", "role"]);
    let n = field(&TOOL_KEYS);
    let at = field(&TIME_KEYS);
    let e = t.to_ascii_lowercase().contains("error")
        || [v.get("isError"), v.get("is_error")]
            .into_iter()
            .any(|x| x == Some(&Value::Bool(true)))
        || v.get("error")
            .is_some_and(|x| !x.is_null() && x != &Value::Bool(false));
    let summary = text_of(
        &v,
        &[
            "text",
            "content",
            "output",
            "message",
            "error",
            "input",
            "arguments",
            "command",
        ],
    )
    .unwrap_or_default();
    let s: String = summary
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(SUMMARY_CHARS)
        .collect();
    let mut j = serde_json::to_string_pretty(&v).unwrap_or_default();
    if j.len() > EVENT_SHOWN_BYTES {
        let mut cut = EVENT_SHOWN_BYTES;
        while !j.is_char_boundary(cut) {
            cut -= 1;
        }
        let rest = j.len() - cut;
        j.truncate(cut);
        j.push_str(&format!(
            "\n… {rest} more bytes (the whole event is in the session file)"
        ));
    }
    Record { t, n, at, e, s, j }
}

fn timeline(out: &mut dyn Write, view: &View, files: &dyn Files) -> io::Result<()> {
    writeln!(out, "<h2>Timeline</h2>")?;
    let Some(path) = &view.session else {
        return writeln!(
            out,
            "<p class=\"note\">No session in this {}.</p>",
            view.what.to_lowercase()
        );
    };
    writeln!(
        out,
        "<p class=\"note\">From <code>{}</code>, {PAGE} events a page; an event's JSON is \
         folded under its summary.</p>\n<nav class=\"pager\"><button id=\"prev\" hidden>\
         Previous</button> <span id=\"page-info\">first page</span> <button id=\"next\" hidden>\
         Next</button></nav>\n<ol id=\"events\">",
        esc(path)
    )?;
    // The first page as HTML: readable without the script.
    let mut shown = 0;
    each_record(files, path, &mut |r| {
        event_html(out, &r)?;
        shown += 1;
        Ok(shown < PAGE)
    })?;
    writeln!(out, "</ol>")?;
    // Every event as data, for the script's pages.
    write!(
        out,
        "<script id=\"events-data\" type=\"application/json\">["
    )?;
    let mut first = true;
    each_record(files, path, &mut |r| {
        if !first {
            out.write_all(b",")?;
        }
        first = false;
        let json = serde_json::to_string(&r).expect("a record serializes");
        out.write_all(script_safe(&json).as_bytes())?;
        Ok(true)
    })?;
    writeln!(out, "]</script>")
}

fn event_html(out: &mut dyn Write, r: &Record) -> io::Result<()> {
    write!(
        out,
        "<li class=\"{}\"><div class=\"head\"><span class=\"type\">{}</span>",
        if r.e { "event error" } else { "event" },
        esc(&r.t)
    )?;
    if !r.n.is_empty() {
        write!(out, "<span class=\"tool\">{}</span>", esc(&r.n))?;
    }
    if !r.at.is_empty() {
        write!(out, "<span class=\"time\">{}</span>", esc(&r.at))?;
    }
    writeln!(
        out,
        "</div><details><summary>{}</summary><pre class=\"json\">{}</pre></details></li>",
        esc(&r.s),
        esc(&r.j)
    )
}

fn patch(out: &mut dyn Write, view: &View, files: &dyn Files) -> io::Result<()> {
    writeln!(out, "<h2>Patch</h2>")?;
    let Some(path) = &view.patch else {
        return writeln!(
            out,
            "<p class=\"note\">No patch in this {}.</p>",
            view.what.to_lowercase()
        );
    };
    let mut r = BufReader::with_capacity(1 << 20, files.open(path)?);
    let mut buf = Vec::new();
    let mut n = 0usize;
    writeln!(out, "<pre class=\"diff\">")?;
    loop {
        match next_line(&mut r, &mut buf, LINE_BYTES) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                writeln!(
                    out,
                    "<span class=\"note\">(a line over {LINE_BYTES} bytes)</span>"
                )?;
                break;
            }
            Err(e) => return Err(e),
        }
        n += 1;
        if n > PATCH_LINES {
            continue;
        }
        let line = String::from_utf8_lossy(split_terminator(&buf).0);
        let class = match line.as_bytes().first() {
            _ if line.starts_with("+++")
                || line.starts_with("---")
                || line.starts_with("diff ") =>
            {
                "file"
            }
            Some(b'+') => "add",
            Some(b'-') => "del",
            Some(b'@') => "hunk",
            _ => "ctx",
        };
        writeln!(out, "<span class=\"{class}\">{}</span>", esc(&line))?;
    }
    writeln!(out, "</pre>")?;
    if n > PATCH_LINES {
        writeln!(
            out,
            "<p class=\"note\">{} more lines not shown.</p>",
            n - PATCH_LINES
        )?;
    }
    Ok(())
}

/// Escapes text for element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// JSON made safe inside a `<script>` element: no `<`, `>` or `&` (so no
/// `</script>` or `<!--`), and no U+2028/U+2029. Outside strings JSON has
/// none of these, so escaping them everywhere keeps it the same JSON.
fn script_safe(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "
:root { color-scheme: light; --ink: #1f2328; --muted: #59636e; --line: #d1d9e0; --head: #f6f8fa;
  --red: #cf222e; --green: #1a7f37; --blue: #0969da; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1280px; padding: 24px 32px 48px; color: var(--ink);
  font: 14px/1.5 system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; }
h1 { font-size: 22px; margin: 0 0 12px; }
h2 { font-size: 18px; margin: 28px 0 8px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
code, pre, td { font: 12.5px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
table { border-collapse: collapse; width: 100%; margin: 8px 0; }
th, td { border: 1px solid var(--line); padding: 3px 8px; text-align: left; vertical-align: top;
  overflow-wrap: anywhere; }
th { background: var(--head); font-weight: 600; }
.note { color: var(--muted); }
ol#events { padding-left: 56px; }
li.event { margin: 4px 0; padding: 4px 8px; border-left: 3px solid var(--line); }
li.event.error { border-left-color: var(--red); background: #ffebe9; }
.head span { margin-right: 12px; }
.type { font-weight: 600; }
.tool { color: var(--blue); }
.time { color: var(--muted); }
summary { cursor: pointer; overflow-wrap: anywhere; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 4px 0; }
pre.diff span { display: block; }
pre.diff .add { background: #dafbe1; color: var(--green); }
pre.diff .del { background: #ffebe9; color: var(--red); }
pre.diff .hunk { color: var(--blue); }
pre.diff .file { font-weight: 600; }
nav.pager { margin: 8px 0; }
";

/// The page's one script: pages through the data block, building every
/// node with `textContent` (never as markup).
const SCRIPT: &str = r#"
(function () {
  var data = JSON.parse(document.getElementById('events-data').textContent);
  var list = document.getElementById('events');
  var info = document.getElementById('page-info');
  var prev = document.getElementById('prev');
  var next = document.getElementById('next');
  var size = 100;
  var pages = Math.max(1, Math.ceil(data.length / size));
  var page = 0;
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }
  function render() {
    list.replaceChildren();
    list.start = page * size + 1;
    var end = Math.min(data.length, (page + 1) * size);
    for (var i = page * size; i < end; i++) {
      var r = data[i];
      var li = el('li', r.e ? 'event error' : 'event');
      var head = el('div', 'head');
      head.append(el('span', 'type', r.t));
      if (r.n) { head.append(el('span', 'tool', r.n)); }
      if (r.at) { head.append(el('span', 'time', r.at)); }
      li.append(head);
      var d = el('details');
      d.append(el('summary', null, r.s));
      d.append(el('pre', 'json', r.j));
      li.append(d);
      list.append(li);
    }
    info.textContent = 'page ' + (page + 1) + ' of ' + pages + ' (' + data.length + ' events)';
    prev.disabled = page === 0;
    next.disabled = page >= pages - 1;
  }
  prev.addEventListener('click', function () { if (page > 0) { page--; render(); } });
  next.addEventListener('click', function () { if (page < pages - 1) { page++; render(); } });
  prev.hidden = false;
  next.hidden = false;
  render();
})();
"#;

#[cfg(test)]
mod tests {
    use super::*;

    struct Mem(Vec<(String, Vec<u8>)>);

    impl Files for Mem {
        fn open(&self, path: &str) -> io::Result<Box<dyn Read + '_>> {
            let (_, b) = self
                .0
                .iter()
                .find(|(p, _)| p == path)
                .ok_or(io::ErrorKind::NotFound)?;
            Ok(Box::new(&b[..]))
        }
    }

    fn page(session: &str) -> String {
        let files = Mem(vec![
            ("s.jsonl".into(), session.as_bytes().to_vec()),
            (
                "p.patch".into(),
                b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+<b>new</b>\n".to_vec(),
            ),
        ]);
        let view = View {
            title: "run <i>1</i>".into(),
            what: "Run",
            session: Some("s.jsonl".into()),
            patch: Some("p.patch".into()),
            ..View::default()
        };
        let mut out = Vec::new();
        write(&mut out, &view, &files).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn values_are_escaped_in_markup_and_in_the_data_block() {
        let html = page(
            "{\"type\":\"tool.result\",\"tool\":\"<script>alert(1)</script>\",\"output\":\"</script><img src=x onerror=alert(2)>\"}\n",
        );
        assert!(!html.contains("<script>alert(1)"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(
            html.contains("\\u003c/script\\u003e"),
            "data block escapes markup"
        );
        assert!(html.contains("run &lt;i&gt;1&lt;/i&gt;"));
        assert!(html.contains("<span class=\"add\">+&lt;b&gt;new&lt;/b&gt;</span>"));
        // Exactly the two script elements the page brings, and one policy.
        assert_eq!(html.matches("<script").count(), 2, "{html}");
        assert!(!html.contains("http://") && !html.contains("https://"));
    }

    #[test]
    fn the_policy_names_the_hash_of_the_one_script() {
        let html = page("{\"type\":\"message\",\"text\":\"hi\"}\n");
        let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(SCRIPT));
        assert!(html.contains(&format!("script-src 'sha256-{hash}'")));
        assert!(html.contains(&format!("<script>{SCRIPT}</script>")));
    }

    #[test]
    fn the_first_page_is_html_and_every_event_is_data() {
        let mut s = String::new();
        for i in 0..250 {
            s.push_str(&format!(
                "{{\"type\":\"message\",\"text\":\"event number {i}\"}}\n"
            ));
        }
        let html = page(&s);
        assert_eq!(html.matches("<li class=\"event\">").count(), PAGE);
        assert!(html.contains("event number 99<") && !html.contains("event number 100<"));
        let data = html.split("type=\"application/json\">").nth(1).unwrap();
        let data = &data[..data.find("</script>").unwrap()];
        let v: Vec<Value> = serde_json::from_str(data).unwrap();
        assert_eq!(v.len(), 250);
        assert_eq!(v[249]["s"], "event number 249");
    }

    #[test]
    fn errors_are_marked_and_long_events_are_cut() {
        let long = "x".repeat(EVENT_SHOWN_BYTES * 2);
        let r = record(
            format!("{{\"type\":\"tool.result\",\"isError\":true,\"output\":\"{long}\"}}")
                .as_bytes(),
        );
        assert!(r.e);
        assert!(r.j.len() < EVENT_SHOWN_BYTES + 200, "{}", r.j.len());
        assert!(r
            .j
            .ends_with("more bytes (the whole event is in the session file)"));
        assert_eq!(r.s.chars().count(), SUMMARY_CHARS);
        assert!(!record(b"{\"type\":\"message\",\"text\":\"ok\"}").e);
        assert!(record(b"{\"type\":\"agent.error\"}").e);
        assert_eq!(record(b"not json").t, "(unreadable)");
    }
}

/// The view of a stored run, and its files (read from the store,
/// verified as every read is).
pub mod sources {
    use std::collections::BTreeMap;
    use std::io::{self, Read};
    use std::path::Path;

    use coffer_base::digest::Digest;
    use coffer_base::json::{self, Limits};
    use coffer_evidence::bundle::records::{bundle_artifacts, require_bundle};
    use coffer_evidence::bundle::source::BundleDir;
    use coffer_store::Store;
    use serde_json::Value;

    use super::{Artifact, Files, View};
    use crate::error::{ExportError, Result};

    /// A stored run's artifacts, by path.
    pub struct StoredFiles<'s> {
        store: &'s Store,
        digests: BTreeMap<String, Digest>,
    }

    impl Files for StoredFiles<'_> {
        fn open(&self, path: &str) -> io::Result<Box<dyn Read + '_>> {
            let d = self.digests.get(path).ok_or(io::ErrorKind::NotFound)?;
            Ok(Box::new(
                self.store.open_object(d).map_err(io::Error::other)?,
            ))
        }
    }

    /// An export tree's files, opened as the gate opens them (no symlink
    /// followed, regular files only).
    pub struct TreeFiles(BundleDir);

    impl Files for TreeFiles {
        fn open(&self, path: &str) -> io::Result<Box<dyn Read + '_>> {
            let (f, _) = self
                .0
                .open_evidence(path)
                .map_err(|i| io::Error::other(i.message))?;
            Ok(Box::new(f))
        }
    }

    /// The `status` of the verifier result at `path`, when it reads.
    fn verifier_outcome(files: &dyn Files, path: &str) -> Option<String> {
        let mut bytes = Vec::new();
        files
            .open(path)
            .ok()?
            .take(16 << 20)
            .read_to_end(&mut bytes)
            .ok()?;
        let v = json::parse(&bytes, &Limits::DOCUMENT).ok()?;
        v["status"].as_str().map(String::from)
    }

    /// The first artifact of `kind`.
    fn path_of(artifacts: &[Artifact], kind: &str) -> Option<String> {
        artifacts
            .iter()
            .find(|a| a.kind == kind)
            .map(|a| a.path.clone())
    }

    /// The facts a run's header shows, from its catalog row.
    fn run_facts(
        row: &coffer_evidence::bundle::BundleRow,
        verifier: String,
    ) -> Vec<(String, String)> {
        vec![
            ("Bundle".to_string(), row.bundle_id.to_string()),
            ("Manifest".into(), row.manifest_digest.to_string()),
            ("Task".into(), row.task_id.to_string()),
            ("Fixture".into(), row.fixture_id.to_string()),
            (
                "Model".into(),
                format!("{}/{}", row.model_provider, row.model_id),
            ),
            (
                "Harness".into(),
                format!("{}@{}", row.harness_id, row.harness_version),
            ),
            ("Run".into(), row.run_id.to_string()),
            (
                "Attempt".into(),
                format!("{} (#{})", row.attempt_id, row.attempt_number),
            ),
            (
                "Assessment".into(),
                row.assessment_mode.as_str().to_string(),
            ),
            (
                "Terminal".into(),
                format!(
                    "{} / {} / {}",
                    row.terminal_state.as_str(),
                    row.failure_class.as_str(),
                    row.stop_reason.as_str()
                ),
            ),
            ("Verifier".into(), verifier),
            (
                "Qualification".into(),
                row.qualification.as_str().to_string(),
            ),
        ]
    }

    /// The stored run `bundle` names.
    pub fn stored<'s>(
        store: &'s Store,
        bundle: &coffer_evidence::ids::BundleRef,
    ) -> Result<(View, StoredFiles<'s>)> {
        let row = require_bundle(store.catalog(), bundle)?;
        let rows = bundle_artifacts(store.catalog(), &row.bundle_id)?;
        let artifacts: Vec<Artifact> = rows
            .iter()
            .map(|a| Artifact {
                id: a.artifact_id.to_string(),
                kind: a.kind.as_str().to_string(),
                path: a.relative_path.clone(),
                media_type: a.media_type.clone(),
                sharing_class: a.sharing_class.as_str().to_string(),
                digest: a.digest.to_string(),
                size: a.size,
            })
            .collect();
        let files = StoredFiles {
            store,
            digests: rows
                .iter()
                .map(|a| (a.relative_path.clone(), a.digest))
                .collect(),
        };
        let verifier = path_of(&artifacts, "verifier")
            .and_then(|p| verifier_outcome(&files, &p))
            .unwrap_or_else(|| "none".into());
        let mut facts = run_facts(&row, verifier);
        let labels = coffer_evidence::bundle::labels::of(store.catalog(), &row.bundle_id)?;
        let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        facts.push((
            "Labels".into(),
            match labels.is_empty() {
                true => "none".into(),
                false => labels.join(" "),
            },
        ));
        if let Some(r) = &row.retry_of {
            facts.push(("Retry of".into(), r.to_string()));
        }
        let view = View {
            title: row.bundle_id.to_string(),
            what: "Run",
            facts,
            session: path_of(&artifacts, "session"),
            patch: path_of(&artifacts, "workspace"),
            artifacts,
            tables: Vec::new(),
        };
        Ok((view, files))
    }

    /// An export tree at `dir`, as a recipient has it.
    pub fn export_tree(dir: &Path) -> Result<(View, TreeFiles)> {
        let tree = BundleDir::open(dir).map_err(|i| ExportError::Invalid(vec![i]))?;
        let files = TreeFiles(tree);
        let mut bytes = Vec::new();
        files
            .open("manifest.json")
            .and_then(|r| {
                r.take(Limits::DOCUMENT.max_bytes as u64 + 1)
                    .read_to_end(&mut bytes)
            })
            .map_err(|e| ExportError::io(dir.join("manifest.json"), "read", e))?;
        let m = json::parse(&bytes, &Limits::DOCUMENT).map_err(|e| {
            ExportError::Invalid(vec![coffer_base::issue::Issue::from(("manifest.json", e))])
        })?;
        let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let class = s(&m["sharingClass"]);
        let artifacts: Vec<Artifact> = m["artifacts"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .map(|a| Artifact {
                id: s(&a["id"]),
                kind: s(&a["kind"]),
                path: s(&a["relativePath"]),
                media_type: s(&a["mediaType"]),
                sharing_class: class.clone(),
                digest: s(&a["digest"]),
                size: a["sizeBytes"].as_u64().unwrap_or(0),
            })
            .collect();
        let rows = |key: &str, fields: &[&str]| -> Vec<Vec<String>> {
            m[key]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .map(|x| {
                    fields
                        .iter()
                        .map(|f| match &x[*f] {
                            Value::String(t) => t.clone(),
                            other => other.to_string(),
                        })
                        .collect()
                })
                .collect()
        };
        let verifier = path_of(&artifacts, "verifier")
            .and_then(|p| verifier_outcome(&files, &p))
            .unwrap_or_else(|| "none".into());
        let view = View {
            title: s(&m["bundleId"]),
            what: "Export",
            facts: vec![
                ("Bundle".into(), s(&m["bundleId"])),
                ("Status".into(), s(&m["status"])),
                ("Sharing class".into(), class.clone()),
                ("Policy".into(), s(&m["policyDigest"])),
                ("Source manifest".into(), s(&m["sourceManifestDigest"])),
                ("Verifier".into(), verifier),
            ],
            tables: vec![
                (
                    "Transformations".into(),
                    vec!["Artifact".into(), "Action".into(), "Count".into()],
                    rows("transformations", &["artifactId", "action", "count"]),
                ),
                (
                    "Exclusions".into(),
                    vec!["Artifact".into(), "Reason".into()],
                    rows("excludedArtifacts", &["artifactId", "reason"]),
                ),
            ],
            session: path_of(&artifacts, "session"),
            patch: path_of(&artifacts, "workspace"),
            artifacts,
        };
        Ok((view, files))
    }
}
