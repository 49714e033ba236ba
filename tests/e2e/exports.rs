//! `export create|verify` and `scan`: EBO's export behaviours, fail-closed
//! cases, determinism, tampering. Planted secrets are generated here at
//! test time; the repository holds none.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::bundles::{copy_tree, fixture};
use crate::support::{codes, sha256, tree, Env};

/// Deterministic credential-shaped strings.
pub struct Gen(u64);

impl Gen {
    pub fn new(seed: u64) -> Gen {
        Gen(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn chars(&mut self, alphabet: &str, n: usize) -> String {
        let a = alphabet.as_bytes();
        (0..n)
            .map(|_| {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                a[(self.0 % a.len() as u64) as usize] as char
            })
            .collect()
    }
    pub fn alnum(&mut self, n: usize) -> String {
        format!(
            "Q7{}",
            self.chars(
                "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789",
                n - 2
            )
        )
    }
}

/// The secrets planted in [`planted_bundle`].
pub struct Planted {
    pub dir: PathBuf,
    pub secrets: Vec<String>,
    pub user: String,
    pub ids: Vec<String>,
}

pub fn b64(s: &str) -> String {
    b64_bytes(s.as_bytes())
}

/// Standard base64 of any bytes, padded.
pub fn b64_bytes(b: &[u8]) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in b.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= c.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

pub fn pct(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Rewrites the manifest's digest and size of `rel` after its file changed.
pub fn refresh(dir: &Path, rel: &str) {
    let mpath = dir.join("manifest.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&mpath).unwrap()).unwrap();
    let bytes = std::fs::read(dir.join(rel)).unwrap();
    for e in m["evidence"].as_array_mut().unwrap() {
        if e["relativePath"] == rel {
            e["digest"] = json!(sha256(&bytes));
            e["sizeBytes"] = json!(bytes.len());
        }
    }
    std::fs::write(&mpath, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
}

/// A copy of the `complete` fixture with credentials, paths, a user name,
/// hidden reasoning and encoded sensitive values planted in every artifact.
pub fn planted_bundle(env: &Env, name: &str, sensitive: &str) -> Planted {
    let dir = env.path(name);
    copy_tree(&fixture("run-bundles/complete"), &dir);
    let mut g = Gen::new(7);
    let ghp = format!("ghp_{}", g.alnum(36));
    let aws = format!("AKIA{}", g.chars("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16));
    let db_pass = g.alnum(16);
    let client_secret = g.alnum(30);
    let pk_body = g.chars(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
        64,
    );
    let basic = b64(&format!("deploy:{}", g.alnum(14)));
    let password = g.alnum(12);
    let refresh_tok = g.alnum(28);
    let id_token = g.alnum(28);
    let escaped_gh = format!("ghp_{}", g.alnum(36));
    // Pretty-printed XML: the value alone on the line after its name.
    let xml_tok = g.alnum(32);
    // A tool's output holding a Kubernetes env list (the value on the
    // line after its name) and a JSON name/value pair, as text.
    let k8s_pass = g.alnum(18);
    let nv_tok = g.alnum(24);
    // A Secret as `kubectl get secret -o yaml` prints it (its data before
    // its kind, entries under any name) and as a structured result.
    let kube_key = b64(&g.alnum(40));
    let kube_struct = b64(&g.alnum(20));
    let kube_patch = b64(&g.alnum(32));
    // A Terraform variable's default, two lines below its name.
    let tf_default = g.alnum(26);
    // Too weak to be swept everywhere: only its line may lose it.
    let weak = "hunter2";
    let user = "jdoe7";
    let session = [
        json!({"type": "session.start", "sessionId": "sess-coffer-complete", "cwd": format!("/home/{user}/work/calc"), "user": user}),
        json!({"type": "assistant.message", "text": "Setting the key.", "thinking": "I should not reveal my plan", "apiKey": ghp}),
        json!({"type": "tool.call", "input": {"command": format!("export AWS_ACCESS_KEY_ID={aws}\nls /home/{user}/.aws")}, "client_secret": client_secret, "private_key": format!("-----BEGIN RSA PRIVATE KEY-----\n{pk_body}\n-----END RSA PRIVATE KEY-----")}),
        json!({"type": "tool.result", "output": format!("{{\"config\": {{\"note\": \"{sensitive}\"}}}}"), "encoded": b64(&format!("value={sensitive}")), "url": format!("https://h.test/cb?x={}", pct(sensitive))}),
        json!({"type": "tool.result", "output": format!("token line\\n{escaped_gh} after escape")}),
        json!({"type": "tool.result", "output": format!("env:\n  - name: LOG_LEVEL\n    value: debug\n  - name: DB_PASSWORD\n    value: {k8s_pass}\n"), "stdout": format!("[{{\"name\": \"API_TOKEN\", \"value\": \"{nv_tok}\"}}]")}),
        json!({"type": "tool.result", "output": format!("apiVersion: v1\ndata:\n  bundle.pem: {kube_key}\nkind: Secret\nmetadata:\n  name: web-tls\ntype: kubernetes.io/tls\n"), "resource": {"kind": "Secret", "data": {".dockerconfigjson": kube_struct}}}),
        json!({"schema": "oneshot-v1", "type": "observation.agent_thinking", "id": "obs-9", "content": "hidden plan"}),
        json!({"type": "assistant.message", "text": "ran in /home/jdoe7/work/calc/src", "raw_response_body": {"id": "x"}}),
    ];
    let mut s = String::new();
    for r in &session {
        s.push_str(&serde_json::to_string(r).unwrap());
        s.push('\n');
    }
    std::fs::write(dir.join("session.jsonl"), s).unwrap();
    let hooks = format!(
        "{}\n{}\n",
        json!({"type": "PostToolUse", "tool": "edit", "file": "src/calc.py", "sessionId": "sess-coffer-complete"}),
        json!({"type": "PreToolUse", "tool": "bash", "command": format!("curl -H 'Authorization: Basic {basic}' https://api.test/"), "env": {"DATABASE_URL": format!("postgres://app:{db_pass}@db.internal/x")}})
    );
    std::fs::write(dir.join("hooks.jsonl"), hooks).unwrap();
    std::fs::write(
        dir.join("telemetry/trace.json"),
        serde_json::to_vec_pretty(&json!({"traceId": "trace-coffer-complete", "sessionId": "sess-coffer-complete", "spans": [{"name": "turn", "durationMs": 1200, "attributes": {"host.user": user}}]})).unwrap(),
    )
    .unwrap();
    let patch = format!(
        "diff --git a/config.env b/config.env\nnew file mode 100644\n--- /dev/null\n+++ b/config.env\n@@ -0,0 +1,23 @@\n+DATABASE_URL=postgres://app:{db_pass}@db.internal/x\n+password=\"{password}\"\n+refresh_token={refresh_tok}\n+id_token='{id_token}'\n+Authorization: Basic {basic}\n+GITHUB={ghp}\n+-----BEGIN RSA PRIVATE KEY-----\n+{pk_body}\n+-----END RSA PRIVATE KEY-----\n+<apiToken>\n+    {xml_tok}\n+</apiToken>\n+<password>\n+  {weak}\n+</password>\n+apiVersion: v1\n+kind: Secret\n+data:\n+  bundle.pem: {kube_patch}\n+variable \"db_password\" {{\n+  type    = string\n+  default = \"{tf_default}\"\n+}}\n"
    );
    std::fs::write(dir.join("workspace.patch"), patch).unwrap();
    // The verifier is bound to the workspace's digest.
    let vpath = dir.join("verifier.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(&vpath).unwrap()).unwrap();
    v["workspace"]["digest"] = json!(sha256(&std::fs::read(dir.join("workspace.patch")).unwrap()));
    std::fs::write(&vpath, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    for rel in [
        "session.jsonl",
        "hooks.jsonl",
        "telemetry/trace.json",
        "workspace.patch",
        "verifier.json",
    ] {
        refresh(&dir, rel);
    }
    let r = env.run(&["bundle", "validate", dir.to_str().unwrap()]);
    assert_eq!(r.code, 0, "planted bundle must be valid: {}", r.stderr);
    Planted {
        dir,
        secrets: vec![
            ghp,
            aws,
            db_pass,
            client_secret,
            pk_body,
            basic,
            password,
            refresh_tok,
            id_token,
            escaped_gh,
            xml_tok,
            k8s_pass,
            nv_tok,
            kube_key,
            kube_struct,
            kube_patch,
            tf_default,
            weak.to_string(),
            sensitive.to_string(),
        ],
        user: user.to_string(),
        ids: vec![
            "sess-coffer-complete".into(),
            "trace-coffer-complete".into(),
            "coffer-complete".into(),
            "attempt-coffer-complete".into(),
            "run-coffer-complete".into(),
        ],
    }
}

pub fn write_policy(env: &Env, name: &str, class: &str, sensitive: &[&str]) -> PathBuf {
    env.write(
        name,
        serde_json::to_string(&json!({
            "schemaVersion": "coffer.export-policy/v1",
            "sharingClass": class,
            "maxArtifactBytes": 16777216,
            "maxStringBytes": 8192,
            "sensitiveValues": sensitive,
            "localRoots": ["/home/jdoe7/work/calc"],
        }))
        .unwrap()
        .as_bytes(),
    )
}

pub fn all_bytes(dir: &Path) -> Vec<u8> {
    tree(dir).into_iter().flat_map(|(_, b)| b).collect()
}

pub fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// A copy of the observational fixture at `name` whose session.jsonl is
/// `session`, rebranded with `ids` (bundle id, attempt id).
pub(crate) fn session_bundle(env: &Env, name: &str, session: &str, ids: (&str, &str)) -> PathBuf {
    let dir = env.path(name);
    copy_tree(&fixture("run-bundles/observational-completed"), &dir);
    std::fs::write(dir.join("session.jsonl"), session).unwrap();
    crate::bundles::rebrand(&dir, ids.0, ids.1);
    dir
}

pub const SENSITIVE: &str = "Tr0ub4dor&3-horse";

pub(crate) fn export(
    env: &Env,
    source: &str,
    policy: &Path,
    dest: &str,
    extra: &[&str],
) -> (i32, Value) {
    let mut args = vec!["export", "create", source, policy.to_str().unwrap(), dest];
    args.extend_from_slice(extra);
    env.json(&args)
}

#[test]
fn public_export_removes_every_planted_secret_and_rewrites_ids_consistently() {
    let env = Env::new();
    let p = planted_bundle(&env, "src", SENSITIVE);
    let policy = write_policy(&env, "policy.json", "public", &[SENSITIVE]);
    let (code, v) = export(&env, p.dir.to_str().unwrap(), &policy, "out", &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["status"], "accepted");
    let out = env.path("out");
    let bytes = all_bytes(&out);
    for s in &p.secrets {
        assert!(!contains(&bytes, s), "secret {}... survived", &s[..6]);
        for enc in [b64(s), pct(s), serde_json::to_string(s).unwrap()] {
            assert!(
                !contains(&bytes, enc.trim_end_matches('=').trim_matches('"')),
                "an encoding of {}... survived",
                &s[..6]
            );
        }
    }
    assert!(
        !contains(&bytes, &b64(&format!("value={SENSITIVE}"))[..20]),
        "the base64 blob survived"
    );
    for id in &p.ids {
        assert!(!contains(&bytes, id), "identity {id} survived");
    }
    assert!(!contains(&bytes, "/home/"), "a home path survived");
    assert!(!contains(&bytes, &p.user), "the user name survived");
    assert!(
        !contains(&bytes, "I should not reveal"),
        "hidden reasoning survived"
    );
    assert!(
        !contains(&bytes, "hidden plan"),
        "agent_thinking content survived"
    );
    assert!(
        !contains(&bytes, "raw_response_body"),
        "a raw API body survived"
    );
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(
        text.contains("[WORKSPACE]/src"),
        "local roots keep their tail"
    );
    assert!(text.contains("[LOCAL_USER:1]"));
    assert!(text.contains("[REDACTED_SECRET:"));
    assert!(
        text.contains("--- /dev/null\n+++ b/config.env"),
        "diff headers survive"
    );

    // Correlations are consistent across artifacts and the manifest.
    let m: Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    let sid = m["correlations"]["sessionId"].as_str().unwrap().to_string();
    let tid = m["correlations"]["traceId"].as_str().unwrap().to_string();
    let session = std::fs::read_to_string(out.join("session.jsonl")).unwrap();
    let first: Value = serde_json::from_str(session.lines().next().unwrap()).unwrap();
    assert_eq!(first["sessionId"], sid.as_str());
    let hooks = std::fs::read_to_string(out.join("hooks.jsonl")).unwrap();
    let h: Value = serde_json::from_str(hooks.lines().next().unwrap()).unwrap();
    assert_eq!(h["sessionId"], sid.as_str());
    let t: Value =
        serde_json::from_slice(&std::fs::read(out.join("telemetry/trace.json")).unwrap()).unwrap();
    assert_eq!(t["traceId"], tid.as_str());
    assert_eq!(t["sessionId"], sid.as_str());
    let ver: Value =
        serde_json::from_slice(&std::fs::read(out.join("verifier.json")).unwrap()).unwrap();
    assert_eq!(ver["bundleId"], m["bundleId"]);
    let ws = m["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == "workspace")
        .unwrap();
    assert_eq!(
        ver["workspace"]["digest"], ws["digest"],
        "the verifier points at the exported patch"
    );
    assert_eq!(m["status"], "ready");
    assert_eq!(
        m["excludedArtifacts"],
        json!([{"artifactId": "export-manifest", "reason": "source-export-manifest"}])
    );
    let actions: Vec<&str> = m["transformations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["artifactId"] == "session")
        .map(|t| t["action"].as_str().unwrap())
        .collect();
    for a in [
        "sanitized",
        "removed-field",
        "redacted-secret",
        "redacted-local-identifier",
        "rewritten-correlation",
    ] {
        assert!(actions.contains(&a), "session lacks {a}: {actions:?}");
    }

    // A recipient verifies without source or key; scan agrees.
    let (code, v) = env.json(&["export", "verify", "out"]);
    assert_eq!(code, 0, "{v}");
    let (code, v) = env.json(&["export", "verify", "out", policy.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    let files: Vec<String> = tree(&out)
        .into_iter()
        .map(|(r, _)| format!("out/{r}"))
        .collect();
    let mut args = vec!["scan"];
    args.extend(files.iter().map(String::as_str));
    let (code, v) = env.json(&args);
    assert_eq!(code, 0, "{v}");
    // ... and scan finds the planted secrets in the source.
    let (code, v) = env.json(&["scan", "src/session.jsonl", "src/workspace.patch"]);
    assert_eq!(code, 1, "{v}");
    assert!(codes(&v).iter().any(|c| c == "validation.secret_in_export"));
    let element = v["issues"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| {
            i["message"]
                .as_str()
                .unwrap()
                .contains("rule secret-element")
        })
        .unwrap_or_else(|| panic!("the split element is found: {v}"));
    assert_eq!(element["path"], "src/workspace.patch#/15");
    assert!(codes(&v)
        .iter()
        .any(|c| c == "validation.local_path_in_export"));
}

#[test]
fn exports_are_deterministic_keyed_and_recorded() {
    let env = Env::new();
    let p = planted_bundle(&env, "src", SENSITIVE);
    let policy = write_policy(&env, "policy.json", "partner", &[SENSITIVE]);
    let (code, v) = env.json(&["bundle", "ingest", p.dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    let (c1, v1) = export(&env, "coffer-complete", &policy, "a", &[]);
    let (c2, v2) = export(&env, p.dir.to_str().unwrap(), &policy, "b", &[]);
    assert_eq!((c1, c2), (0, 0), "{v1} {v2}");
    assert_eq!(
        tree(&env.path("a")),
        tree(&env.path("b")),
        "same source, policy and key: same bytes"
    );
    // Another key: other pseudonyms and fingerprints, same shape.
    let key = env.write("other.key", &[42u8; 32]);
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let (c3, v3) = export(
        &env,
        "coffer-complete",
        &policy,
        "c",
        &["--key-file", "other.key"],
    );
    assert_eq!(c3, 0, "{v3}");
    let ma: Value =
        serde_json::from_slice(&std::fs::read(env.path("a/manifest.json")).unwrap()).unwrap();
    let mc: Value =
        serde_json::from_slice(&std::fs::read(env.path("c/manifest.json")).unwrap()).unwrap();
    assert_ne!(ma["bundleId"], mc["bundleId"]);
    assert_eq!(ma["policyDigest"], mc["policyDigest"]);
    // where: the source session lists every export derived from it.
    let src_session = sha256(&std::fs::read(p.dir.join("session.jsonl")).unwrap());
    let (code, w) = env.json(&["where", &src_session]);
    assert_eq!(code, 0, "{w}");
    let dests: Vec<String> = w["result"]["exports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["dest"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(dests.len(), 3, "{dests:?}");
    // The derivatives are objects in the store and survive gc.
    let exported = ma["artifacts"][0]["digest"].as_str().unwrap();
    assert_eq!(env.run(&["gc", "--grace", "0s"]).code, 0);
    assert_eq!(env.run(&["has", exported]).code, 0);
    assert_eq!(env.run(&["fsck", "--read-data"]).code, 0);
}

#[test]
fn fail_closed_cases_write_nothing() {
    let env = Env::new();
    let p = planted_bundle(&env, "src", SENSITIVE);
    let policy = write_policy(&env, "policy.json", "partner", &[SENSITIVE]);

    // A sensitive value equal to a manifest word fails the final scan.
    let word = write_policy(&env, "word.json", "partner", &["capture-report"]);
    let (code, v) = export(&env, p.dir.to_str().unwrap(), &word, "w", &[]);
    assert_eq!(code, 1, "{v}");
    assert!(
        codes(&v).contains(&"validation.sensitive_value_in_export".to_string()),
        "{v}"
    );
    assert!(!env.path("w").exists());

    // Unknown sharing class; unsupported media type.
    let bad = env.path("bad");
    copy_tree(&p.dir, &bad);
    let mpath = bad.join("manifest.json");
    let orig: Value = serde_json::from_slice(&std::fs::read(&mpath).unwrap()).unwrap();
    let mut m = orig.clone();
    m["evidence"][1]["sharingClass"] = json!("unknown");
    std::fs::write(&mpath, serde_json::to_vec(&m).unwrap()).unwrap();
    let (code, v) = export(&env, bad.to_str().unwrap(), &policy, "u", &[]);
    assert_eq!(code, 3, "{v}");
    assert_eq!(v["status"], "blocked");
    assert_eq!(codes(&v)[0], "policy.unknown_sharing_class");
    let mut m = orig.clone();
    m["evidence"][1]["mediaType"] = json!("application/octet-stream");
    std::fs::write(&mpath, serde_json::to_vec(&m).unwrap()).unwrap();
    let (code, v) = export(&env, bad.to_str().unwrap(), &policy, "u", &[]);
    assert_eq!(code, 3, "{v}");
    assert_eq!(codes(&v)[0], "policy.unsupported_media_type");
    assert!(!env.path("u").exists());

    // A short sensitive value is refused unless forced.
    let short = write_policy(&env, "short.json", "partner", &["abc123"]);
    let (code, v) = export(&env, p.dir.to_str().unwrap(), &short, "s", &[]);
    assert_eq!(code, 3, "{v}");
    assert_eq!(codes(&v)[0], "policy.sensitive_value_too_short");

    // An existing destination is never touched.
    env.write("taken/keep.txt", b"mine");
    let (code, v) = export(&env, p.dir.to_str().unwrap(), &policy, "taken", &[]);
    assert_eq!(code, 3, "{v}");
    assert_eq!(codes(&v)[0], "conflict.destination_exists");
    assert_eq!(std::fs::read(env.path("taken/keep.txt")).unwrap(), b"mine");
    assert_eq!(std::fs::read_dir(env.path("taken")).unwrap().count(), 1);

    // No temp trees are left beside the destinations.
    let temps = env.leftover_temps();
    assert_eq!(temps, 0);
}

#[test]
fn incomplete_capture_needs_the_flag() {
    let env = Env::new();
    let policy = write_policy(&env, "policy.json", "partner", &[]);
    let src = fixture("run-bundles/telemetry-incomplete");
    let (code, v) = export(&env, src.to_str().unwrap(), &policy, "x", &[]);
    assert_eq!(code, 3, "{v}");
    assert_eq!(codes(&v)[0], "policy.capture_incomplete");
    assert!(!env.path("x").exists());
    let (code, v) = export(
        &env,
        src.to_str().unwrap(),
        &policy,
        "x",
        &["--allow-incomplete"],
    );
    assert_eq!(code, 4, "{v}");
    assert_eq!(v["status"], "incomplete");
    assert_eq!(env.run(&["export", "verify", "x"]).code, 0);
}

#[test]
fn redact_env_names_the_variables_whose_values_go() {
    let env = Env::new();
    let p = planted_bundle(&env, "src", SENSITIVE);
    let policy = write_policy(&env, "policy.json", "partner", &[]);
    // The sensitive value is not in the policy; it comes from the environment.
    let out = env
        .command(&[
            "--json",
            "export",
            "create",
            p.dir.to_str().unwrap(),
            policy.to_str().unwrap(),
            "e",
            "--redact-env",
            "COFFER_TEST_SECRET",
        ])
        .env("COFFER_TEST_SECRET", SENSITIVE)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!contains(&all_bytes(&env.path("e")), SENSITIVE));
    let (code, v) = env.json(&[
        "export",
        "create",
        p.dir.to_str().unwrap(),
        policy.to_str().unwrap(),
        "f",
        "--redact-env",
        "COFFER_TEST_UNSET_VAR",
    ]);
    assert_eq!(code, 2, "{v}");
    assert_eq!(codes(&v)[0], "usage.env_not_set");
}

#[test]
fn tampering_makes_verify_fail() {
    let env = Env::new();
    let policy = write_policy(&env, "policy.json", "partner", &[]);
    let src = fixture("run-bundles/complete");
    let (code, v) = export(&env, src.to_str().unwrap(), &policy, "t", &[]);
    assert_eq!(code, 0, "{v}");
    let orig = tree(&env.path("t"));
    let restore = |env: &Env| {
        for (rel, b) in &orig {
            std::fs::write(env.path("t").join(rel), b).unwrap();
        }
    };
    // An artifact edited after export.
    let p = env.path("t/session.jsonl");
    let mut b = std::fs::read(&p).unwrap();
    b[2] ^= 1;
    std::fs::write(&p, &b).unwrap();
    let (code, v) = env.json(&["export", "verify", "t"]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(codes(&v), vec!["integrity.digest_mismatch"]);
    restore(&env);
    // A secret smuggled in with a matching manifest entry.
    let mut g = Gen::new(99);
    let line = format!(
        "{}\n",
        json!({"type": "note", "text": format!("ghp_{}", g.alnum(36))})
    );
    let mut s = std::fs::read(&p).unwrap();
    s.extend_from_slice(line.as_bytes());
    std::fs::write(&p, &s).unwrap();
    let mpath = env.path("t/manifest.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&mpath).unwrap()).unwrap();
    m["artifacts"][0]["digest"] = json!(sha256(&s));
    m["artifacts"][0]["sizeBytes"] = json!(s.len());
    std::fs::write(&mpath, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    let (code, v) = env.json(&["export", "verify", "t"]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(codes(&v), vec!["validation.secret_in_export"]);
    restore(&env);
    // An extra file; a forged placeholder; the manifest's status.
    env.write("t/extra.txt", b"x");
    let (code, v) = env.json(&["export", "verify", "t"]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(codes(&v), vec!["validation.unlisted_file"]);
    std::fs::remove_file(env.path("t/extra.txt")).unwrap();
    let mut m: Value = serde_json::from_slice(&std::fs::read(&mpath).unwrap()).unwrap();
    m["status"] = json!("blocked");
    std::fs::write(&mpath, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    let (code, v) = env.json(&["export", "verify", "t"]);
    assert_eq!(code, 1, "{v}");
    assert!(
        codes(&v).contains(&"validation.export_manifest".to_string()),
        "{v}"
    );
    restore(&env);
    assert_eq!(env.run(&["export", "verify", "t"]).code, 0);
    // Another policy does not match.
    let other = write_policy(&env, "other.json", "public", &[]);
    let (code, v) = env.json(&["export", "verify", "t", other.to_str().unwrap()]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(codes(&v), vec!["validation.policy_mismatch"]);
}

#[test]
fn an_unredacted_patch_still_applies() {
    let env = Env::new();
    let policy = write_policy(&env, "policy.json", "partner", &[]);
    let src = fixture("run-bundles/complete");
    let (code, v) = export(&env, src.to_str().unwrap(), &policy, "p", &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        std::fs::read(env.path("p/workspace.patch")).unwrap(),
        std::fs::read(src.join("workspace.patch")).unwrap(),
        "a patch that needed no redaction is unchanged"
    );
    let repo = env.path("repo");
    copy_tree(
        &src.join("..")
            .join("..")
            .join("..")
            .join("fixtures/run-bundles/complete"),
        &env.path("unused"),
    );
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::write(
        repo.join("src/calc.py"),
        "def add(a, b):\n    return a - b\n",
    )
    .unwrap();
    let git = std::process::Command::new("git")
        .args([
            "apply",
            "--check",
            env.path("p/workspace.patch").to_str().unwrap(),
        ])
        .current_dir(&repo)
        .output();
    if let Ok(out) = git {
        assert!(
            out.status.success(),
            "git apply --check: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn concurrent_exports_to_one_destination_exactly_one_wins() {
    let env = Env::new();
    let policy = write_policy(&env, "policy.json", "partner", &[]);
    let src = fixture("run-bundles/complete");
    let children: Vec<_> = (0..8)
        .map(|_| {
            env.command(&[
                "--json",
                "export",
                "create",
                src.to_str().unwrap(),
                policy.to_str().unwrap(),
                "same",
            ])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    let mut won = 0;
    for c in children {
        let out = c.wait_with_output().unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        match out.status.code() {
            Some(0) => won += 1,
            Some(3) => assert_eq!(codes(&v), vec!["conflict.destination_exists"], "{v}"),
            other => panic!("{other:?}: {v}"),
        }
    }
    assert_eq!(won, 1);
    assert_eq!(env.run(&["export", "verify", "same"]).code, 0);
    let temps = env.leftover_temps();
    assert_eq!(temps, 0, "losers remove their temp trees");
    assert_eq!(env.json(&["fsck", "--read-data"]).0, 0);
}

/// Every file below `dir` with one of `exts`, sorted, as (path, text).
fn sources(dir: &Path, exts: &[&str]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let e = e.unwrap();
        let p = e.path();
        if e.file_type().is_file() && exts.iter().any(|x| p.extension().is_some_and(|e| e == *x)) {
            out.push((
                p.strip_prefix(crate::bundles::repo())
                    .unwrap()
                    .display()
                    .to_string(),
                std::fs::read_to_string(p).unwrap(),
            ));
        }
    }
    out
}

#[test]
fn a_benign_code_session_exports_intact_with_its_patch_byte_identical() {
    // Real content, as an agent reads it: this repository's own sources
    // (code full of secret-sounding names: passwords, tokens, keys, rules)
    // and docs as tool outputs, and a real unified diff as the patch.
    let env = Env::new();
    let repo = crate::bundles::repo();
    let mut files = sources(&repo.join("crates/store/src"), &["rs"]);
    files.extend(sources(&repo.join("crates/evidence/src"), &["rs"]));
    files.extend(sources(&repo.join("crates/cli/src"), &["rs"]));
    files.extend(sources(&repo.join("docs"), &["md"]));
    files.extend(sources(&repo.join("bench"), &["py", "sh"]));
    let mut session =
        String::from("{\"type\":\"session.start\",\"sessionId\":\"sess-coffer-observational\"}\n");
    for (i, (path, text)) in files.iter().enumerate() {
        let call = format!("toolu_{i:024}");
        session.push_str(&serde_json::to_string(&json!({"type": "tool.call", "seq": i, "callId": call, "tool": "read_file", "input": {"path": path}})).unwrap());
        session.push('\n');
        session.push_str(
            &serde_json::to_string(
                &json!({"type": "tool.result", "seq": i, "callId": call, "output": text}),
            )
            .unwrap(),
        );
        session.push('\n');
    }
    let patch = std::process::Command::new("diff")
        .args([
            "-ruN",
            "crates/evidence/src/bundle",
            "crates/evidence/src/packet",
        ])
        .current_dir(&repo)
        .output()
        .unwrap()
        .stdout;
    assert!(patch.len() > 10_000);
    let dir = env.path("benign");
    copy_tree(&fixture("run-bundles/observational-completed"), &dir);
    std::fs::write(dir.join("session.jsonl"), &session).unwrap();
    std::fs::write(dir.join("workspace.patch"), &patch).unwrap();
    crate::bundles::rebrand(&dir, "benign-code", "attempt-benign");
    let policy = env.write(
        "policy.json",
        br#"{"schemaVersion":"coffer.export-policy/v1","sharingClass":"partner","maxArtifactBytes":67108864,"maxStringBytes":1048576,"sensitiveValues":[]}"#,
    );
    let (code, v) = export(&env, dir.to_str().unwrap(), &policy, "out", &[]);
    assert_eq!(code, 0, "benign code is exported, not refused: {v}");
    let exported = std::fs::read(env.path("out/workspace.patch")).unwrap();
    let differing: Vec<String> = String::from_utf8_lossy(&patch)
        .lines()
        .zip(String::from_utf8_lossy(&exported).lines())
        .filter(|(a, b)| a != b)
        .take(5)
        .map(|(a, b)| format!("{a:?}\n  -> {b:?}"))
        .collect();
    assert!(
        exported == patch,
        "a patch with no secret in it comes out byte-identical:\n{}",
        differing.join("\n")
    );
    let out = std::fs::read_to_string(env.path("out/session.jsonl")).unwrap();
    // Our own code and docs quote placeholders; count only new ones.
    let count = |t: &str| t.matches("[REDACTED_").count() + t.matches("[LOCAL_").count();
    let placeholders = count(&out).saturating_sub(count(&session));
    let mb = session.len() as f64 / 1e6;
    assert!(
        placeholders as f64 / mb <= 50.0,
        "{placeholders} placeholders in {mb:.2} MB"
    );
    let (mut lines, mut changed) = (0usize, 0usize);
    for (a, b) in session.lines().zip(out.lines()) {
        let (a, b): (Value, Value) = (
            serde_json::from_str(a).unwrap(),
            serde_json::from_str(b).unwrap(),
        );
        if let (Some(x), Some(y)) = (a["output"].as_str(), b["output"].as_str()) {
            lines += x.lines().count();
            changed += x.lines().zip(y.lines()).filter(|(p, q)| p != q).count();
        }
    }
    assert!(
        changed * 100 <= lines * 2,
        "{changed} of {lines} lines changed"
    );
}

#[test]
fn real_world_token_kinds_and_labelled_forms_are_removed_and_look_alikes_stay() {
    // The token kinds and labelled forms issue 16 found missed, generated
    // here, each as a tool output line of code or config; and the
    // look-alikes that must stay.
    let env = Env::new();
    let mut g = Gen::new(16);
    let hex = "0123456789abcdef";
    let url = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
    let tokens = vec![
        format!("AKCp{}", g.alnum(69)),
        format!("MTk4NjIy{}.{}.{}", g.alnum(16), g.alnum(6), g.alnum(38)),
        format!("SK{}", g.chars(hex, 32)),
        format!("{}-us12", g.chars(hex, 32)),
        format!("dckr_pat_{}", g.chars(url, 27)),
        format!("ops_eyJ{}", g.chars(url, 250)),
        format!("hvs.{}", g.chars(url, 95)),
        format!("glc_{}", g.alnum(60)),
        // 40 characters and an 8-hex checksum (trufflehog's and
        // secretlint's rules agree).
        format!("cfut_{}{}", g.alnum(40), g.chars(hex, 8)),
        format!("figd_{}", g.chars(url, 40)),
        format!("gsk_{}", g.alnum(52)),
        format!("ntn_{}{}", g.chars("0123456789", 11), g.alnum(35)),
        format!("lin_api_{}", g.alnum(40)),
        format!("sgp_{}", g.chars(hex, 40)),
        format!("SG.{}.{}", g.chars(url, 22), g.chars(url, 43)),
        format!("shpat_{}", g.chars(hex, 32)),
        format!("pcsk_{}", g.alnum(70)),
        format!("lsv2_pt_{}_{}", g.chars(hex, 32), g.chars(hex, 10)),
        format!("pscale_tkn_{}", g.chars(url, 43)),
        format!("tskey-auth-{}-{}", g.alnum(17), g.alnum(30)),
        format!("sq0csp-{}", g.chars(url, 43)),
        format!("{}:AA{}", g.chars("0123456789", 10), g.chars(url, 33)),
        format!("squ_{}", g.chars(hex, 40)),
    ];
    let labelled = [
        ("password = \"m{{h}o)p${e]", "\""),
        ("password_super_secure = \"", "\""),
        ("if (pw == \"", "\") {"),
        ("svcToken := `", "`"),
        ("var svcToken string = \"", "\""),
        ("SVC_TOKEN ::= \"", "\""),
        ("System.setProperty(\"SVC_TOKEN\", \"", "\")"),
        ("<add key=\"ClearTextPassword\" value=\"", "\" />"),
    ];
    let mut secrets = tokens.clone();
    let mut lines: Vec<String> = tokens.iter().map(|t| format!("config: {t}")).collect();
    for (before, after) in labelled {
        let v = g.alnum(14);
        lines.push(format!("{before}{v}{after}"));
        secrets.push(v);
    }
    let stay = [
        "notes = Maven - io.jsonwebtoken:jjwt-jackson-0.11.2",
        "bucket_key: SalesResults-1.2",
        "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "    - secretKey: api-key",
        "public_key = 9Cnzj4p4WGeKLs1Pt8QuKUpRKfFLfRYC9AIKjbJTWit",
        "video_box.ico-7a388b69018576d24b59331fd60aab0c.png",
    ];
    lines.extend(stay.iter().map(|s| s.to_string()));
    let mut session =
        String::from("{\"type\":\"session.start\",\"sessionId\":\"sess-coffer-observational\"}\n");
    for (i, l) in lines.iter().enumerate() {
        session.push_str(
            &serde_json::to_string(&json!({"type": "tool.result", "seq": i, "output": l})).unwrap(),
        );
        session.push('\n');
    }
    let dir = session_bundle(&env, "kinds", &session, ("kinds", "attempt-kinds"));
    let policy = write_policy(&env, "policy.json", "partner", &[]);
    let (code, v) = export(&env, dir.to_str().unwrap(), &policy, "out", &[]);
    assert_eq!(code, 0, "{v}");
    let bytes = all_bytes(&env.path("out"));
    for s in &secrets {
        assert!(!contains(&bytes, s), "{}... survived", &s[..8]);
    }
    let out = std::fs::read_to_string(env.path("out/session.jsonl")).unwrap();
    for s in stay {
        let quoted = serde_json::to_string(s).unwrap();
        assert!(out.contains(&quoted), "{s:?} was changed");
    }
}

#[test]
fn per_record_ids_are_rewritten_in_place_and_the_rest_of_a_record_keeps_its_bytes() {
    // A record whose only change is its per-record ids goes out with the
    // ids replaced where they stand: its spacing and key order stay.
    let env = Env::new();
    let evt = "evt_0a1b2c3d4e5f60718293a4b5c6d7e8f9";
    let tool = "toolu_01AbCdEf2345GhJk6789LmNp";
    let rec1 = format!(
        "{{\"seq\": 1,  \"id\": \"{evt}\", \"type\": \"tool.call\", \"parent\": \"{tool}\", \"input\": {{\"path\": \"src/a.rs\"}}}}"
    );
    let rec2 = format!(
        "{{\"seq\": 2, \"id\": \"{tool}\", \"refs\": [\"{evt}\"], \"text\": \"after {evt}\"}}"
    );
    let session = format!(
        "{{\"type\":\"session.start\",\"sessionId\":\"sess-coffer-observational\"}}\n{rec1}\n{rec2}\n"
    );
    let dir = session_bundle(&env, "ids", &session, ("ids", "attempt-ids"));
    let policy = write_policy(&env, "policy.json", "partner", &[]);
    let (code, v) = export(&env, dir.to_str().unwrap(), &policy, "out", &[]);
    assert_eq!(code, 0, "{v}");
    let out = std::fs::read_to_string(env.path("out/session.jsonl")).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    let r1: Value = serde_json::from_str(lines[1]).unwrap();
    let r2: Value = serde_json::from_str(lines[2]).unwrap();
    let (new_evt, new_tool) = (r1["id"].as_str().unwrap(), r1["parent"].as_str().unwrap());
    for (old, new) in [(evt, new_evt), (tool, new_tool)] {
        assert_ne!(old, new);
        assert_eq!(old.len(), new.len(), "{old} -> {new}");
        let prefix = &old[..old.find('_').unwrap() + 1];
        assert!(new.starts_with(prefix), "{old} -> {new}");
    }
    assert_eq!(
        lines[1],
        rec1.replace(evt, new_evt).replace(tool, new_tool),
        "only the ids change, in place"
    );
    assert_eq!(r2["id"], new_tool, "one pseudonym per id");
    // Array elements and free text are not fields that hold an id.
    assert_eq!(r2["refs"][0], evt);
    assert_eq!(r2["text"], format!("after {evt}"));
    assert_eq!(lines[2], rec2.replace(tool, new_tool));
}

#[test]
fn verify_reports_findings_of_a_long_artifact_in_line_order_and_stops_at_a_broken_line() {
    // The readback scans batches of lines on two threads; what it reports
    // must be what one pass in line order reports.
    let env = Env::new();
    let policy = write_policy(&env, "policy.json", "partner", &[]);
    let src = fixture("run-bundles/complete");
    let (code, v) = export(&env, src.to_str().unwrap(), &policy, "t", &[]);
    assert_eq!(code, 0, "{v}");
    let p = env.path("t/session.jsonl");
    let base = std::fs::read(&p).unwrap();
    // Batches hold 4,096 lines and alternate between the two threads.
    let planted = [1_000usize, 5_000, 9_000, 30_001];
    let write = |broken: Option<usize>| {
        let mut s = base.clone();
        let first = base.iter().filter(|b| **b == b'\n').count();
        for i in first..40_000 {
            let rec = if planted.contains(&i) {
                json!({"type": "note", "seq": i, "text": format!("ghp_{}", Gen::new(i as u64).alnum(36))})
            } else {
                json!({"type": "note", "seq": i, "text": "plain"})
            };
            let mut line = serde_json::to_vec(&rec).unwrap();
            if broken == Some(i) {
                line.truncate(line.len() - 1);
            }
            s.extend_from_slice(&line);
            s.push(b'\n');
        }
        std::fs::write(&p, &s).unwrap();
        let mpath = env.path("t/manifest.json");
        let mut m: Value = serde_json::from_slice(&std::fs::read(&mpath).unwrap()).unwrap();
        m["artifacts"][0]["digest"] = json!(sha256(&s));
        m["artifacts"][0]["sizeBytes"] = json!(s.len());
        std::fs::write(&mpath, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    };
    write(None);
    let (code, v) = env.json(&["export", "verify", "t"]);
    assert_eq!(code, 1, "{v}");
    let lines: Vec<usize> = v["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            assert_eq!(i["code"], "validation.secret_in_export", "{i}");
            let ptr = i["path"].as_str().unwrap().split('#').nth(1).unwrap();
            ptr.split('/').nth(1).unwrap().parse().unwrap()
        })
        .collect();
    assert_eq!(lines, planted.to_vec(), "{v}");
    // A broken line between the second and third secret (in the worker's
    // batch): the first two and the parse error, nothing after it.
    write(Some(7_000));
    let (code, v) = env.json(&["export", "verify", "t"]);
    assert_eq!(code, 1, "{v}");
    let issues = v["issues"].as_array().unwrap();
    let paths: Vec<&str> = issues.iter().map(|i| i["path"].as_str().unwrap()).collect();
    // (The file's error comes first, then the scan's findings.)
    assert_eq!(
        paths,
        vec![
            "session.jsonl#/7000",
            "session.jsonl#/1000/text",
            "session.jsonl#/5000/text"
        ],
        "{v}"
    );
}

#[test]
fn a_secret_found_in_any_batch_of_a_long_session_is_swept_from_all_of_it() {
    // Pass 1 reads batches of 4,096 lines on two threads; what either finds
    // is swept from every line in pass 2.
    let env = Env::new();
    let secret = format!("{}9x", Gen::new(77).alnum(22));
    let mut session =
        String::from("{\"type\":\"session.start\",\"sessionId\":\"sess-coffer-observational\"}\n");
    for i in 1..20_000 {
        let text = match i {
            5_000 => format!("export DEPLOY_PASSWORD={secret}"),
            100 | 13_000 | 19_999 => format!("the value {secret} again"),
            _ => "plain".to_string(),
        };
        session.push_str(&json!({"type": "note", "seq": i, "text": text}).to_string());
        session.push('\n');
    }
    let dir = session_bundle(&env, "long", &session, ("long", "attempt-long"));
    let policy = write_policy(&env, "policy.json", "partner", &[]);
    let (code, v) = export(&env, dir.to_str().unwrap(), &policy, "out", &[]);
    assert_eq!(code, 0, "{v}");
    let out = std::fs::read_to_string(env.path("out/session.jsonl")).unwrap();
    assert!(!out.contains(&secret), "the value survived somewhere");
    let lines: Vec<&str> = out.lines().collect();
    for i in [100, 5_000, 13_000, 19_999] {
        assert!(
            lines[i].contains("[REDACTED_SECRET:"),
            "line {i}: {}",
            lines[i]
        );
    }
}

#[test]
fn records_rewritten_on_either_thread_of_pass_two_keep_their_order_and_placeholders() {
    // Pass 2 rewrites batches of 4,096 records alternately on two threads.
    // Placeholders issued and fields removed on the worker must reach the
    // gate and the report, and records must come out in line order.
    let env = Env::new();
    let mut session =
        String::from("{\"type\":\"session.start\",\"sessionId\":\"sess-coffer-observational\"}\n");
    let (mut keyed, mut hidden) = (0u64, 0u64);
    for i in 1..20_000u64 {
        let mut r = json!({"type": "note", "seq": i, "text": "plain"});
        if i % 997 == 0 {
            // A secret-named field: its placeholder is issued in pass 2.
            r["apiKey"] = json!(format!("value-{i}-of-a-field"));
            keyed += 1;
        }
        if i % 1_499 == 0 {
            r["hiddenReasoning"] = json!(format!("thought {i}"));
            hidden += 1;
        }
        session.push_str(&r.to_string());
        session.push('\n');
    }
    let dir = session_bundle(&env, "two-core", &session, ("two-core", "attempt-two-core"));
    let policy = write_policy(&env, "policy.json", "partner", &[]);
    let report = env.path("report.json");
    let (code, v) = export(
        &env,
        dir.to_str().unwrap(),
        &policy,
        "out",
        &["--report", report.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{v}");
    let out = std::fs::read_to_string(env.path("out/session.jsonl")).unwrap();
    let records: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 20_000);
    for (i, r) in records.iter().enumerate().skip(1) {
        assert_eq!(r["seq"], json!(i), "record {i} out of place");
        let key = r.get("apiKey").and_then(Value::as_str);
        assert_eq!(key.is_some(), i % 997 == 0, "record {i}");
        if let Some(k) = key {
            assert!(k.starts_with("[REDACTED_SECRET:"), "record {i}: {k}");
        }
        assert!(r.get("hiddenReasoning").is_none(), "record {i}");
    }
    assert!(!out.contains("-of-a-field") && !out.contains("thought "));
    let session_file = v["result"]["report"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["file"] == "session.jsonl")
        .unwrap()
        .clone();
    assert_eq!(
        session_file["removedFields"]["hiddenReasoning"],
        json!(hidden)
    );
    let t = &session_file["transformations"];
    assert_eq!(t["redacted-secret"], json!(keyed), "{t}");
    assert_eq!(t["removed-field"], json!(hidden), "{t}");
}

#[test]
fn exclude_unverifiable_changes_nothing_when_every_record_verifies() {
    // The flag only acts on records the gate refuses (the mapping from
    // findings to records is unit-tested in export::create). With none,
    // the export is the plain one: accepted, no excludedRecords, and the
    // same manifest as without the flag.
    let env = Env::new();
    let policy = write_policy(&env, "policy.json", "partner", &[]);
    let src = fixture("run-bundles/complete");
    let (code, v) = export(&env, src.to_str().unwrap(), &policy, "a", &[]);
    assert_eq!(code, 0, "{v}");
    let (code, w) = export(
        &env,
        src.to_str().unwrap(),
        &policy,
        "b",
        &["--exclude-unverifiable"],
    );
    assert_eq!(code, 0, "{w}");
    assert_eq!(w["status"], "accepted");
    assert_eq!(w["result"]["excludedRecords"], json!([]));
    assert_eq!(v["result"]["manifestDigest"], w["result"]["manifestDigest"]);
    let m: Value =
        serde_json::from_slice(&std::fs::read(env.path("b/manifest.json")).unwrap()).unwrap();
    assert!(m.get("excludedRecords").is_none());
}

/// Exports, into `out` under a partner policy, a session whose tool
/// results are `outputs`; the export must be accepted.
fn export_outputs(env: &Env, outputs: &[&str], ids: (&str, &str)) {
    let mut session =
        String::from("{\"type\":\"session.start\",\"sessionId\":\"sess-coffer-observational\"}\n");
    for (i, o) in outputs.iter().enumerate() {
        session.push_str(&json!({"type": "tool.result", "seq": i, "output": o}).to_string());
        session.push('\n');
    }
    let dir = session_bundle(env, "src", &session, ids);
    let policy = write_policy(env, "policy.json", "partner", &[]);
    let (code, v) = export(env, dir.to_str().unwrap(), &policy, "out", &[]);
    assert_eq!(code, 0, "{v}");
}

#[test]
fn user_names_in_percent_encoded_and_unc_paths_are_removed() {
    // `%2Fhome%2F<user>` and `C%3A%5CUsers%5C<user>`: a percent-encoded
    // local path is a local path; `\\host\share\<user>` too.
    let env = Env::new();
    let outputs = [
        "open %2Fhome%2Fjdoe7%2Fwork%2Fcalc in the editor",
        "see C%3A%5CUsers%5Cgrace9%5Cproj now",
        "copied to \\\\fs01\\team$\\henry4\\notes.txt",
    ];
    export_outputs(&env, &outputs, ("pct", "attempt-pct"));
    let bytes = all_bytes(&env.path("out"));
    for user in ["jdoe7", "grace9", "henry4", "fs01"] {
        assert!(!contains(&bytes, user), "{user} survived");
    }
    // The encoded path is a local path, replaced whole.
    let out = std::fs::read_to_string(env.path("out/session.jsonl")).unwrap();
    assert!(out.contains("open [LOCAL_PATH] in the editor"), "{out}");
    assert!(out.contains("see [LOCAL_PATH] now"), "{out}");
}

#[test]
fn a_name_a_document_puts_under_home_stays_a_word_and_the_users_name_goes() {
    // clap's doc tests say `/home/clap`: the path goes, the crate's name
    // on the other lines stays. The local user's name, which `USER=` and
    // the agent's paths show, goes everywhere, also where it stands alone.
    let env = Env::new();
    let outputs = [
        "assert_eq!(m.get_one::<String>(\"location\").unwrap(), \"/home/clap\");",
        "$ cargo add clap --features derive",
        "USER=qjones7",
        "ls -l /home/qjones7/work\n-rw-r--r-- 1 qjones7 staff 12 a.txt",
    ];
    export_outputs(&env, &outputs, ("docs", "attempt-docs"));
    let out = std::fs::read_to_string(env.path("out/session.jsonl")).unwrap();
    assert!(out.contains("$ cargo add clap --features derive"), "{out}");
    assert!(!out.contains("/home/clap"), "{out}");
    assert!(!out.contains("qjones7"), "{out}");
    assert!(out.contains("1 [LOCAL_USER:"), "{out}");
}

#[test]
fn nfd_values_key_value_pairs_shifted_base64_and_unprefixed_tokens_leave_nothing() {
    // Each leak the issue lists, planted through the real binary: a policy
    // value written in NFD while the policy has NFC; a secret in a
    // `["OPENAI_API_KEY", "<value>"]` pair; a collected secret's base64 at
    // the two other byte alignments; an `ops_eyJ…` token (no long prefix
    // may stay); `curl -u` whose placeholder must not nest; and every
    // prefixed id kind of the harness schema, shape kept.
    let env = Env::new();
    let mut g = Gen::new(1616);
    let nfc = "Zoë-Brontë-7731";
    let nfd = "Zoe\u{308}-Bronte\u{308}-7731";
    let pair_secret = format!("sk-{}", g.alnum(48));
    let collected = g.alnum(24);
    let b64_at = |pad: &str| b64(&format!("{pad}{collected}"));
    let ops = format!(
        "ops_eyJ{}",
        g.chars(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
            300
        )
    );
    let curl_pw = g.alnum(16);
    let kinds = [
        "sess", "run", "subg", "conn", "wrkspc", "prin", "agent", "aini", "surf", "approval",
        "evt", "toolu", "call", "msg", "req",
    ];
    let ids: Vec<String> = kinds
        .iter()
        .map(|k| format!("{k}_{}9", g.alnum(23)))
        .collect();
    let mut records = vec![
        json!({"type": "session.start", "sessionId": "sess-coffer-observational"}),
        json!({"type": "tool.result", "output": format!("user wrote {nfd} here")}),
        json!({"type": "tool.call", "input": {"env": ["OPENAI_API_KEY", pair_secret]}}),
        json!({"type": "tool.result", "output": format!("export SERVICE_PASSWORD={collected}")}),
        json!({"type": "tool.result", "output": b64_at("a")}),
        json!({"type": "tool.result", "output": b64_at("ab")}),
        json!({"type": "tool.result", "output": format!("token: {ops}")}),
        json!({"type": "tool.call", "input": {"command": format!("curl -u admin:{curl_pw} https://api.test/x")}}),
    ];
    for id in &ids {
        records.push(json!({"type": "note", "id": id, "frozen_context": {"workspace_id": id}}));
    }
    let session: String = records.iter().map(|r| format!("{r}\n")).collect();
    let dir = session_bundle(&env, "src", &session, ("leaks", "attempt-leaks"));
    let policy = write_policy(&env, "policy.json", "public", &[nfc]);
    let (code, v) = export(&env, dir.to_str().unwrap(), &policy, "out", &[]);
    assert_eq!(code, 0, "{v}");
    let bytes = all_bytes(&env.path("out"));
    let out = std::fs::read_to_string(env.path("out/session.jsonl")).unwrap();
    for (what, s) in [
        ("NFD form of the policy value", nfd.to_string()),
        ("pair value", pair_secret.clone()),
        ("collected secret", collected.clone()),
        ("curl password", curl_pw.clone()),
    ] {
        assert!(!contains(&bytes, &s), "{what} survived");
    }
    for pad in ["a", "ab"] {
        let enc = b64_at(pad);
        assert!(
            !contains(&bytes, &enc[4..enc.len() - 4]),
            "base64 after {pad:?} survived"
        );
    }
    for w in ops.as_bytes().windows(40).step_by(20) {
        assert!(
            !contains(&bytes, std::str::from_utf8(w).unwrap()),
            "a piece of ops_ survived"
        );
    }
    // One placeholder for the curl password and one for its user (which
    // goes with it), not one inside another.
    let curl_line = out.lines().find(|l| l.contains("curl -u ")).unwrap();
    assert_eq!(
        curl_line.matches("[REDACTED_SECRET:").count(),
        2,
        "{curl_line}"
    );
    assert!(
        curl_line.contains("curl -u [REDACTED_SECRET:curl-user:")
            && curl_line.contains("]:[REDACTED_SECRET:")
            && !curl_line.contains("[REDACTED_SECRET:["),
        "{curl_line}"
    );
    // Every id kind: prefix and length kept, value changed, one pseudonym
    // per id in both fields that hold it.
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for (k, id) in kinds.iter().zip(&ids) {
        let r = lines
            .iter()
            .find(|r| {
                r["type"] == "note"
                    && r["id"]
                        .as_str()
                        .is_some_and(|x| x.starts_with(&format!("{k}_")))
            })
            .unwrap_or_else(|| panic!("{k}: no record kept the prefix"));
        let new = r["id"].as_str().unwrap();
        assert_ne!(new, id.as_str(), "{k}");
        assert_eq!(new.len(), id.len(), "{k}");
        assert_eq!(r["frozen_context"]["workspace_id"], new, "{k}");
        assert!(!contains(&bytes, id), "{k}: the original id survived");
    }
}

#[test]
fn a_diagnostic_exports_with_the_export_forms_diagnostic_source() {
    // The descriptor's diagnosticSource names a local locator; the export
    // manifest's carries its digest instead (export-manifest/v1 requires
    // verifierId, stream, locatorDigest, sizeBytes and nothing else).
    let env = Env::new();
    let dir = env.path("diag");
    copy_tree(&fixture("run-bundles/complete"), &dir);
    let data = b"2 tests passed\n";
    std::fs::write(dir.join("diag.txt"), data).unwrap();
    let mpath = dir.join("manifest.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&mpath).unwrap()).unwrap();
    let source = m["evidence"][0]["source"].clone();
    let digest = crate::support::sha256(data);
    m["evidence"].as_array_mut().unwrap().push(json!({
        "id": "diag-out", "source": source, "kind": "diagnostic", "authority": "outcome",
        "mediaType": "text/plain", "digest": digest, "sizeBytes": data.len(),
        "sharingClass": "internal", "relativePath": "diag.txt",
        "diagnosticSource": {"verifierId": "verifier", "stream": "stdout", "locator": "diag.txt",
            "digest": digest, "sizeBytes": data.len(), "truncated": false}
    }));
    std::fs::write(&mpath, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    let policy = write_policy(&env, "policy.json", "partner", &[]);
    let (code, v) = export(&env, dir.to_str().unwrap(), &policy, "out", &[]);
    assert_eq!(code, 0, "{v}");
    let out: Value =
        serde_json::from_slice(&std::fs::read(env.path("out").join("manifest.json")).unwrap())
            .unwrap();
    let a = out["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["kind"] == "diagnostic")
        .unwrap();
    assert_eq!(
        a["diagnosticSource"],
        json!({"verifierId": "verifier", "stream": "stdout",
            "locatorDigest": crate::support::sha256(b"diag.txt"), "sizeBytes": data.len()})
    );
}

#[test]
fn an_export_too_large_to_read_back_is_refused_before_any_work() {
    // 10,001 artifacts: the readback refused the finished tree with
    // `limit.members` and an empty path, after every file was scrubbed.
    let env = Env::new();
    let dir = env.path("wide");
    crate::bundles::copy_tree(&fixture("run-bundles/complete"), &dir);
    let mut m: Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    let template = m["evidence"][2].clone();
    assert_eq!(template["kind"], "telemetry");
    for i in 0..10_000 {
        let rel = format!("telemetry/t{i}.json");
        let bytes = format!("{{\"i\":{i}}}");
        std::fs::write(dir.join(&rel), &bytes).unwrap();
        let mut d = template.clone();
        d["id"] = format!("telemetry-{i}").into();
        d["relativePath"] = rel.into();
        d["digest"] = crate::support::sha256(bytes.as_bytes()).into();
        d["sizeBytes"] = bytes.len().into();
        d["nativeReference"]["id"] = format!("trace-{i}").into();
        m["evidence"].as_array_mut().unwrap().push(d);
    }
    std::fs::write(dir.join("manifest.json"), serde_json::to_vec(&m).unwrap()).unwrap();
    let policy = write_policy(&env, "policy.json", "partner", &[]);
    let (code, v) = env.json(&[
        "export",
        "create",
        dir.to_str().unwrap(),
        policy.to_str().unwrap(),
        "out",
    ]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(codes(&v), ["limit.members"], "{v}");
    assert_eq!(v["issues"][0]["path"], "coffer-complete", "{v}");
    let message = v["issues"][0]["message"].as_str().unwrap();
    assert!(message.contains("10000"), "{message}");
    assert!(!env.path("out").exists());
    assert_eq!(env.leftover_temps(), 0);
}
