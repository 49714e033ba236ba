//! `export create --report`: the redaction report a reviewer signs off, in
//! HTML, Markdown and JSON, checked against the exported tree itself and,
//! for HTML, rendered in a real headless browser.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::bundles::{copy_tree, fixture};
use crate::exports::{
    all_bytes, b64, contains, pct, planted_bundle, refresh, write_policy, Gen, SENSITIVE,
};
use crate::support::{codes, tree, Env};

/// Every placeholder in the exported files (what the report must list).
fn placeholders_in(dir: &Path) -> Vec<(String, String)> {
    let re = regex::Regex::new(
        r"\[(?:REDACTED_SECRET:[a-z0-9-]{1,64}:[0-9a-f]{8}|LOCAL_PATH|HOME|WORKSPACE|LOCAL_HOST|LOCAL_USER:[0-9]{1,6})\]",
    )
    .unwrap();
    let mut out = Vec::new();
    for (rel, bytes) in tree(dir) {
        let text = String::from_utf8(bytes).unwrap();
        for m in re.find_iter(&text) {
            out.push((rel.clone(), m.as_str().to_string()));
        }
    }
    out.sort();
    out
}

/// `r` is what schemas/redaction-report.v1.json describes.
fn assert_report_schema(r: &Value) {
    let schema: Value = serde_json::from_slice(
        &std::fs::read(crate::bundles::repo().join("schemas/redaction-report.v1.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(r).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
}

fn export_with_report(env: &Env, src: &Path, policy: &Path, dest: &str, report: &str) -> Value {
    let (code, v) = env.json(&[
        "export",
        "create",
        src.to_str().unwrap(),
        policy.to_str().unwrap(),
        dest,
        "--report",
        report,
    ]);
    assert_eq!(code, 0, "{v}");
    v
}

fn assert_no_value_in(bytes: &[u8], secrets: &[String], ids: &[String], user: &str, what: &str) {
    for s in secrets {
        assert!(
            !contains(bytes, s),
            "{what}: a secret ({}...) is shown",
            &s[..6]
        );
        for enc in [b64(s), pct(s), serde_json::to_string(s).unwrap()] {
            let enc = enc.trim_end_matches('=').trim_matches('"').to_string();
            assert!(
                !contains(bytes, &enc),
                "{what}: an encoding of {}...",
                &s[..6]
            );
        }
    }
    for id in ids {
        assert!(!contains(bytes, id), "{what}: identity {id} is shown");
    }
    assert!(!contains(bytes, user), "{what}: the user name is shown");
    assert!(!contains(bytes, "/home/"), "{what}: a home path is shown");
    assert!(
        !contains(bytes, "I should not reveal"),
        "{what}: hidden reasoning"
    );
}

#[test]
fn the_report_lists_every_replacement_the_tree_holds_and_never_a_value() {
    let env = Env::new();
    let p = planted_bundle(&env, "src", SENSITIVE);
    let policy = write_policy(&env, "policy.json", "public", &[SENSITIVE]);
    let v = export_with_report(&env, &p.dir, &policy, "out", "rep.json");
    let r = &v["result"]["report"];
    assert_eq!(r["schemaVersion"], "coffer.redaction-report/v1");
    assert_eq!(v["result"]["reportFile"], "rep.json");
    // The JSON result and the JSON file hold the same data.
    let file: Value =
        serde_json::from_slice(&std::fs::read(env.path("rep.json")).unwrap()).unwrap();
    assert_eq!(&file, r);
    // It is what schemas/redaction-report.v1.json describes.
    assert_report_schema(r);

    // Every placeholder in the tree is listed, once, at its file; nothing
    // else is (the report is read from the tree, not from the writer).
    let mut listed: Vec<(String, String)> = r["replacements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["class"] != "identity")
        .map(|x| {
            (
                x["file"].as_str().unwrap().to_string(),
                x["placeholder"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    listed.sort();
    assert_eq!(listed, placeholders_in(&env.path("out")));
    assert_eq!(r["total"], r["listed"], "a small export lists everything");

    // Classes and rules: secrets by their rule, the user, the workspace
    // root, and pseudonyms by namespace; counts add up per file and rule.
    let rules: Vec<(String, String)> = r["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["class"].as_str().unwrap().into(),
                t["rule"].as_str().unwrap().into(),
            )
        })
        .collect();
    for want in [
        ("secret", "github-token"),
        ("secret", "aws-access-key-id"),
        ("secret", "sensitive-value"),
        ("secret", "secret-field"),
        ("secret", "private-key"),
        ("local-user", "user-name"),
        ("workspace", "local-root"),
        ("identity", "session"),
        ("identity", "bundle"),
    ] {
        assert!(
            rules.contains(&(want.0.into(), want.1.into())),
            "{want:?} missing from {rules:?}"
        );
    }
    let by_rule: u64 = r["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["count"].as_u64().unwrap())
        .sum();
    let by_file: u64 = r["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["replacements"].as_u64().unwrap())
        .sum();
    assert_eq!(by_rule, r["total"].as_u64().unwrap());
    assert_eq!(by_file, by_rule);

    // Each listed replacement stands where it says: its context, joined,
    // is in that string of that file.
    let session = std::fs::read_to_string(env.path("out/session.jsonl")).unwrap();
    let records: Vec<Value> = session
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for x in r["replacements"].as_array().unwrap() {
        if x["file"] != "session.jsonl" {
            continue;
        }
        let rec = &records[x["line"].as_u64().unwrap() as usize - 1];
        let at = rec.pointer(x["pointer"].as_str().unwrap());
        let shown = format!(
            "{}{}{}",
            x["before"].as_str().unwrap().trim_start_matches('…'),
            x["placeholder"].as_str().unwrap(),
            x["after"].as_str().unwrap().trim_end_matches('…')
        );
        let key = x["pointer"].as_str().unwrap().rsplit('/').next().unwrap();
        let holds = at
            .and_then(Value::as_str)
            .is_some_and(|s| s.replace(['\n', '\t'], " ").contains(&shown))
            || key.contains(&shown);
        assert!(holds, "{x} does not stand at its pointer");
    }

    // Removed fields by name, exclusions with reasons, the verdict.
    let files = r["files"].as_array().unwrap();
    let s = files.iter().find(|f| f["file"] == "session.jsonl").unwrap();
    for name in ["thinking", "raw_response_body"] {
        assert!(s["removedFields"][name].as_u64().unwrap() >= 1, "{s}");
    }
    assert!(s["transformations"]["removed-field"].as_u64().unwrap() >= 3);
    assert_eq!(
        r["excludedArtifacts"][0]["reason"],
        "source-export-manifest"
    );
    assert_eq!(r["readback"]["status"], "passed");
    assert_eq!(
        r["readback"]["placeholders"],
        v["result"]["readback"]["placeholders"]
    );

    // No value, in any encoding, in any format.
    let mut secrets = p.secrets.clone();
    secrets.push(SENSITIVE.into());
    for (name, dest) in [("rep.html", "out-h"), ("rep.md", "out-m")] {
        export_with_report(&env, &p.dir, &policy, dest, name);
        let bytes = std::fs::read(env.path(name)).unwrap();
        assert_no_value_in(&bytes, &secrets, &p.ids, &p.user, name);
        let text = String::from_utf8(bytes).unwrap();
        for (_, placeholder) in placeholders_in(&env.path("out")) {
            assert!(text.contains(&placeholder), "{name} lacks {placeholder}");
        }
    }
    let bytes = std::fs::read(env.path("rep.json")).unwrap();
    assert_no_value_in(&bytes, &secrets, &p.ids, &p.user, "rep.json");
    assert_no_value_in(
        &serde_json::to_vec(r).unwrap(),
        &secrets,
        &p.ids,
        &p.user,
        "result.report",
    );
    assert_eq!(env.leftover_temps(), 0);
}

#[test]
fn a_report_is_published_with_its_export_or_not_at_all() {
    let env = Env::new();
    let p = planted_bundle(&env, "src", SENSITIVE);
    let policy = write_policy(&env, "policy.json", "partner", &[SENSITIVE]);
    let src = p.dir.to_str().unwrap();
    let pol = policy.to_str().unwrap();
    let run = |dest: &str, report: &str| {
        env.json(&["export", "create", src, pol, dest, "--report", report])
    };

    // An existing file is never replaced, and nothing is exported.
    env.write("taken.html", b"mine");
    let (code, v) = run("a", "taken.html");
    assert_eq!(code, 3, "{v}");
    assert_eq!(codes(&v)[0], "conflict.destination_exists");
    assert_eq!(std::fs::read(env.path("taken.html")).unwrap(), b"mine");
    assert!(!env.path("a").exists());

    // Inside the export tree, or an unknown format: usage errors.
    let (code, v) = run("b", "b/report.html");
    assert_eq!(code, 2, "{v}");
    assert_eq!(codes(&v)[0], "usage.report_inside_export");
    // Also when the path reaches the tree through a symlink and `..`: it
    // used to create DEST, fail with destination_exists, leave DEST
    // empty and record an export that never was.
    std::fs::create_dir_all(env.path("deep/er")).unwrap();
    std::os::unix::fs::symlink(env.path("deep/er"), env.path("link")).unwrap();
    let (code, v) = run("d", "link/../../d/report.html");
    assert_eq!(
        (code, codes(&v)[0].as_str()),
        (2, "usage.report_inside_export"),
        "{v}"
    );
    assert!(!env.path("d").exists());
    let (_, v) = env.json(&["export", "ls"]);
    assert_eq!(v["result"]["exports"], serde_json::json!([]), "{v}");
    let (code, v) = run("c", "report.txt");
    assert_eq!(code, 2, "{v}");
    assert_eq!(codes(&v)[0], "usage.report_format");
    assert!(!env.path("b").exists() && !env.path("c").exists());

    // An export the gate refuses leaves no report either.
    let word = write_policy(&env, "word.json", "partner", &["capture-report"]);
    let (code, v) = env.json(&[
        "export",
        "create",
        src,
        word.to_str().unwrap(),
        "w",
        "--report",
        "w.md",
    ]);
    assert_eq!(code, 1, "{v}");
    assert!(!env.path("w").exists() && !env.path("w.md").exists());

    // Missing parents are made, as for DEST; the file gets 0644.
    let (code, v) = run("d", "reports/new/d.md");
    assert_eq!(code, 0, "{v}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(env.path("reports/new/d.md"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o644);
    assert_eq!(env.leftover_temps(), 0);
}

/// A bundle whose session holds `n` records, each with distinct credentials
/// of three kinds and a home path: a report with many rows.
fn many_findings_bundle(env: &Env, n: usize) -> (PathBuf, Vec<String>) {
    let dir = env.path("many");
    copy_tree(&fixture("run-bundles/complete"), &dir);
    let mut g = Gen::new(11);
    let mut secrets = Vec::new();
    let mut s = String::new();
    for i in 0..n {
        let ghp = format!("ghp_{}", g.alnum(36));
        let aws = format!("AKIA{}", g.chars("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16));
        let slack = format!(
            "xoxb-{}-{}-{}",
            1_000_000_000 + i,
            2_000_000_000 + i,
            g.alnum(24)
        );
        let rec = json!({
            "type": "tool.result",
            "output": format!("step {i}: <b>pushed</b> with {ghp} & \"AWS_ACCESS_KEY_ID={aws}\" from /home/rev{i}/x"),
            "note": format!("notify {slack} | done"),
        });
        s.push_str(&rec.to_string());
        s.push('\n');
        secrets.extend([ghp, aws, slack]);
    }
    std::fs::write(dir.join("session.jsonl"), s).unwrap();
    refresh(&dir, "session.jsonl");
    (dir, secrets)
}

/// Chromium, or a reason the browser test cannot run here (CI installs it
/// and sets `COFFER_REQUIRE_CHROMIUM`, so there it never skips).
pub(crate) fn chromium() -> Option<&'static str> {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        let found = Command::new(name)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if found {
            return Some(name);
        }
    }
    assert!(
        std::env::var_os("COFFER_REQUIRE_CHROMIUM").is_none(),
        "COFFER_REQUIRE_CHROMIUM is set but no chromium is installed"
    );
    crate::support::skipped("browser test: no chromium installed (apt-get install chromium)");
    None
}

pub(crate) fn headless(browser: &str, args: &[&str]) -> std::process::Output {
    let out = Command::new("timeout")
        .arg("180")
        .arg(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
        ])
        .args([
            "--no-first-run",
            "--disable-extensions",
            "--hide-scrollbars",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn the_html_report_renders_every_row_in_a_real_browser_and_shows_no_value() {
    let Some(browser) = chromium() else { return };
    let env = Env::new();
    let (src, secrets) = many_findings_bundle(&env, 150);
    let policy = write_policy(&env, "policy.json", "partner", &[]);
    let v = export_with_report(&env, &src, &policy, "out", "rep.html");
    let r = &v["result"]["report"];
    let rows = r["replacements"].as_array().unwrap();
    assert!(
        rows.len() >= 600,
        "three credentials and a path per record: {}",
        rows.len()
    );
    for s in &secrets {
        assert!(!contains(&all_bytes(&env.path("out")), s));
    }

    let url = format!("file://{}", env.path("rep.html").display());
    let dom = String::from_utf8(headless(browser, &["--dump-dom", &url]).stdout).unwrap();
    // Every row is in the rendered document, in order, with its placeholder
    // marked; the verdict and the counts are there.
    assert_eq!(
        dom.matches("<tr class=\"replacement\">").count(),
        rows.len()
    );
    let mut at = 0;
    for x in rows {
        let mark = format!("<mark>{}</mark>", x["placeholder"].as_str().unwrap());
        let found = dom[at..].find(&mark).map(|i| at + i);
        assert!(found.is_some(), "row {x} is not rendered in order");
        at = found.unwrap() + mark.len();
    }
    assert!(dom.contains("Read back: passed"), "verdict missing");
    assert!(
        dom.contains("&lt;b&gt;pushed&lt;/b&gt;"),
        "exported markup must show as text"
    );
    assert!(
        !dom.contains("<b>pushed</b>"),
        "exported markup must not become markup"
    );
    for s in &secrets {
        assert!(!dom.contains(s.as_str()), "the rendered page shows a value");
    }
    assert!(
        !dom.contains("/home/"),
        "the rendered page shows a home path"
    );
    assert!(!dom.contains("<script"), "the page needs no script");
    let html = std::fs::read_to_string(env.path("rep.html")).unwrap();
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "nothing is fetched"
    );

    // A screenshot: the page renders to a real, non-blank image.
    let shot = env.path("report.png");
    headless(
        browser,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1400,2400",
            &url,
        ],
    );
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(
        png.len() > 50_000,
        "a page of rows is not a blank image: {} bytes",
        png.len()
    );
}

#[test]
fn a_long_report_lists_up_to_its_cap_per_class_and_counts_everything() {
    let env = Env::new();
    // 700 records: 2,100 secrets (over the cap of 2,000) and 700 homes.
    let (src, _) = many_findings_bundle(&env, 700);
    let policy = write_policy(&env, "policy.json", "partner", &[]);
    let v = export_with_report(&env, &src, &policy, "out", "rep.md");
    let r = &v["result"]["report"];
    let rows = r["replacements"].as_array().unwrap();
    let of = |class: &str| rows.iter().filter(|x| x["class"] == class).count();
    assert_eq!(of("secret"), 2_000, "secrets are listed up to the cap");
    assert_eq!(of("home"), 700, "another class keeps its own room");
    let secrets: u64 = r["rules"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["class"] == "secret")
        .map(|t| t["count"].as_u64().unwrap())
        .sum();
    assert_eq!(secrets, 2_100, "counts stay complete");
    assert_eq!(r["listed"].as_u64().unwrap(), rows.len() as u64);
    assert!(r["total"].as_u64().unwrap() > r["listed"].as_u64().unwrap());
    let md = std::fs::read_to_string(env.path("rep.md")).unwrap();
    assert!(md.contains("at most 2000 per class; the counts above are complete"));
    assert_eq!(
        md.lines()
            .filter(|l| l.starts_with("| ") && l.contains("`session.jsonl`"))
            .count(),
        rows.iter().filter(|x| x["file"] == "session.jsonl").count() + 1,
        "one table row per listed replacement, plus the file's summary row"
    );
}

#[test]
fn the_report_lists_secrets_first_and_what_stayed_as_residual_risk() {
    let env = Env::new();
    let token = format!("ghp_{}", "Q7qSyY3v6ysjB6f2RsDLHZg8RakGnRAxPcTM");
    let outputs = [
        format!("export GITHUB_TOKEN={token}"),
        "mail the results to jane.doe@example.org when done".to_string(),
        "the runner is ci-7.build.internal, fallback 10.20.30.40".to_string(),
        "copy it with scp report.txt bob@nas:/srv/share".to_string(),
        "docs use AKIAIOSFODNN7EXAMPLE as the sample key".to_string(),
        "open /home/qjones7/work/calc/main.py".to_string(),
    ];
    let mut session =
        String::from("{\"type\":\"session.start\",\"sessionId\":\"sess-coffer-observational\"}\n");
    for (i, o) in outputs.iter().enumerate() {
        session.push_str(&json!({"type": "tool.result", "seq": i, "output": o}).to_string());
        session.push('\n');
    }
    let dir = crate::exports::session_bundle(&env, "src", &session, ("resid", "attempt-resid"));
    let policy = write_policy(&env, "policy.json", "partner", &[]);
    let v = export_with_report(&env, &dir, &policy, "out", "rep.json");
    let r = &v["result"]["report"];
    assert_report_schema(r);

    // Secrets, then local names, then identities.
    let classes: Vec<&str> = r["replacements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["class"].as_str().unwrap())
        .collect();
    let rank = |c: &str| match c {
        "secret" => 0,
        "identity" => 2,
        "truncated" => 3,
        _ => 1,
    };
    assert!(
        classes.contains(&"secret") && classes.contains(&"identity"),
        "{classes:?}"
    );
    assert!(
        classes.windows(2).all(|w| rank(w[0]) <= rank(w[1])),
        "not secrets first: {classes:?}"
    );

    // What stayed, by kind, shown as it stands.
    let risk = &r["residualRisk"];
    let listed: Vec<(String, String)> = risk["listed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["kind"].as_str().unwrap().into(),
                x["text"].as_str().unwrap().into(),
            )
        })
        .collect();
    // (A user at a host is listed when the export kept it: the prompt and
    // copy-target rules replace the user where they see one.)
    let exported = std::fs::read_to_string(env.path("out/session.jsonl")).unwrap();
    assert_eq!(
        exported.contains("bob@nas"),
        listed
            .iter()
            .any(|(kind, text)| kind == "user-at-host" && text.starts_with("bob@nas:")),
        "{exported}\n{listed:?}"
    );
    for want in [
        ("email", "jane.doe@example.org"),
        ("internal-host", "ci-7.build.internal"),
        ("internal-host", "10.20.30.40"),
        ("made-up-token", "AKIAIOSFODNN7EXAMPLE"),
    ] {
        assert!(
            listed.contains(&(want.0.to_string(), want.1.to_string())),
            "{want:?} not in {listed:?}"
        );
        assert!(risk["counts"][want.0].as_u64().unwrap() >= 1, "{risk}");
    }
    // Never a replaced value.
    let text = serde_json::to_string(r).unwrap();
    assert!(!text.contains(&token), "the token is in the report");
    assert!(!text.contains("qjones7"), "the user is in the report");

    // The other renderings: sections in order, residual risk before sign-off.
    let policy2 = write_policy(&env, "policy2.json", "partner", &[]);
    export_with_report(&env, &dir, &policy2, "out2", "rep.md");
    let md = std::fs::read_to_string(env.path("rep.md")).unwrap();
    let at = |h: &str| md.find(h).unwrap_or_else(|| panic!("{h} missing:\n{md}"));
    assert!(at("## Secrets") < at("## Local names"));
    assert!(at("## Local names") < at("## Identities"));
    assert!(at("## Identities") < at("## Residual risk"));
    assert!(at("## Residual risk") < at("## Sign-off"));
    assert!(md.contains("`jane.doe@example.org`"), "{md}");
}
