//! `bundle view` and `export view`: one self-contained HTML page per run or
//! export, checked in a real headless browser: the first events' text is in
//! the DOM, planted markup stays text, nothing is fetched, the console
//! stays quiet, and the page renders to a non-blank image.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::bundles::{copy_tree, fixture, rebrand};
use crate::review::{chromium, headless};
use crate::support::Env;

const HOSTILE_ID: &str = "run-<script>alert(1)</script>-<img src=x onerror=alert(2)>";

/// An observational run whose session has `events` events, with markup and
/// script planted in its bundle id, event text, tool names and the patch's
/// file names; ingested, and its id returned.
fn hostile_run(env: &Env, events: usize) -> (PathBuf, String) {
    let dir = env.path("run");
    copy_tree(&fixture("run-bundles/observational-completed"), &dir);
    let mut s =
        String::from("{\"type\":\"session.start\",\"sessionId\":\"sess-coffer-observational\"}\n");
    for i in 1..events {
        let e = match i % 4 {
            1 => {
                json!({"type": "assistant.message", "seq": i, "text": format!("step {i}: <b>bold</b> </script><script>alert({i})</script>")})
            }
            2 => {
                json!({"type": "tool.call", "seq": i, "tool": "<img src=x onerror=alert(3)>", "input": {"command": "ls -la"}})
            }
            3 => {
                json!({"type": "tool.result", "seq": i, "isError": i % 12 == 3, "output": "x".repeat(if i == 3 { 40_000 } else { 20 })})
            }
            _ => {
                json!({"type": "user.message", "seq": i, "text": format!("continue {i}"), "time": "2026-12-05T10:00:00Z"})
            }
        };
        s.push_str(&e.to_string());
        s.push('\n');
    }
    std::fs::write(dir.join("session.jsonl"), s).unwrap();
    std::fs::write(
        dir.join("workspace.patch"),
        "--- a/<img src=y onerror=alert(4)>.py\n+++ b/<img src=y onerror=alert(4)>.py\n@@ -1 +1 @@\n-old line\n+new line\n",
    )
    .unwrap();
    rebrand(&dir, HOSTILE_ID, "attempt-hostile");
    let (code, v) = env.json(&["bundle", "ingest", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    (dir, HOSTILE_ID.to_string())
}

/// Loads `page` in the browser: (DOM after the script ran, console lines).
fn load(browser: &str, page: &Path) -> (String, Vec<String>) {
    let url = format!("file://{}", page.display());
    let out = headless(
        browser,
        &[
            "--enable-logging=stderr",
            "--v=0",
            // Any name lookup fails: a request would show as an error.
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--dump-dom",
            &url,
        ],
    );
    let console = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains("CONSOLE"))
        .map(String::from)
        .collect();
    (String::from_utf8(out.stdout).unwrap(), console)
}

fn assert_self_contained(html: &str) {
    for needle in [
        "http://", "https://", "<link", "url(", "<img", "<iframe", "<object", "<embed", "<video",
        "<audio", "<source", "@import",
    ] {
        assert!(!html.contains(needle), "the page names {needle:?}");
    }
}

#[test]
fn a_stored_run_of_a_hundred_thousand_events_views_in_a_browser_with_its_markup_as_text() {
    let Some(browser) = chromium() else { return };
    let env = Env::new();
    let (_, id) = hostile_run(&env, 100_000);
    let (code, v) = env.json(&["bundle", "label", &id, "experiment=<i>x</i>"]);
    assert_eq!(code, 0, "{v}");
    let page = env.path("run.html");
    let (code, v) = env.json(&["bundle", "view", &id, "-o", page.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html);
    assert_eq!(
        html.matches("<script").count(),
        2,
        "only the page's own data and script"
    );

    let (dom, console) = load(browser, &page);
    assert!(console.is_empty(), "console: {console:?}");
    // The header, the first events, the pager over every event.
    assert!(
        dom.contains("run-&lt;script&gt;alert(1)&lt;/script&gt;"),
        "the id as text"
    );
    assert!(dom.contains("step 1: &lt;b&gt;bold&lt;/b&gt; &lt;/script&gt;&lt;script&gt;alert(1)"));
    assert!(dom.contains("page 1 of 1000 (100000 events)"), "pager");
    assert!(
        dom.contains("experiment=&lt;i&gt;x&lt;/i&gt;"),
        "labels, as text"
    );
    assert_eq!(
        dom.matches("<li class=\"event").count(),
        100,
        "one page in the DOM"
    );
    assert!(
        dom.contains("<li class=\"event error\">"),
        "an error is marked"
    );
    assert!(
        dom.contains("more bytes (the whole event is in the session file)"),
        "folded"
    );
    // Planted markup never became elements.
    assert!(
        !dom.contains("<img") && !dom.contains("<b>bold"),
        "markup became elements"
    );
    assert_eq!(dom.matches("<script").count(), 2);
    // The patch, coloured, its file names as text.
    assert!(dom.contains("<span class=\"add\">+new line</span>"));
    assert!(dom.contains("a/&lt;img src=y onerror=alert(4)&gt;.py"));

    let shot = env.path("run.png");
    headless(
        browser,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1280,2000",
            &format!("file://{}", page.display()),
        ],
    );
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(png.len() > 30_000, "a blank image: {} bytes", png.len());
}

#[test]
fn an_export_views_with_its_manifest_class_and_exclusions() {
    let env = Env::new();
    let (_, id) = hostile_run(&env, 300);
    let policy = crate::exports::write_policy(&env, "policy.json", "partner", &[]);
    let (code, v) = env.json(&["export", "create", &id, policy.to_str().unwrap(), "out"]);
    assert_eq!(code, 0, "{v}");
    let page = env.path("export.html");
    let (code, v) = env.json(&["export", "view", "out", "-o", page.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html);
    for want in [
        "Export: <code>",
        "<dt>Sharing class</dt><dd>partner</dd>",
        "<h2>Transformations</h2>",
        "<h2>Exclusions</h2>",
        "<h2>Timeline</h2>",
        "<h2>Patch</h2>",
    ] {
        assert!(html.contains(want), "{want} missing");
    }
    assert!(!html.contains("<img"), "markup");
    // Never over an existing file.
    let (code, v) = env.json(&["export", "view", "out", "-o", page.to_str().unwrap()]);
    assert_eq!(code, 3, "{v}");
    if let Some(browser) = chromium() {
        let (dom, console) = load(browser, &page);
        assert!(console.is_empty(), "console: {console:?}");
        assert!(dom.contains("page 1 of 3 (300 events)"), "pager");
    }
}
