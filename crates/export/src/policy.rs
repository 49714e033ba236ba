//! Export policies: EBO's form and `coffer.export-policy/v1`.
//!
//! The policy digest follows EBO: SHA-256 of the JCS form of
//! `{sharingClass, maxArtifactBytes, maxStringBytes, sensitiveValueDigests}`,
//! where the value digests are the hex SHA-256 of each distinct value, sorted
//! by value (UTF-16 order). coffer's own form adds its extra fields to the
//! digested object (local roots only as digests), so two policies that
//! scrub differently never share a digest. Values never appear anywhere but
//! in memory.

use coffer_base::codes;
use std::path::Path;

use coffer_base::digest::Digest;
use coffer_base::issue::Issue;
use coffer_base::json::{self, canonical, Limits};
use coffer_evidence::schema::{self, DocKind};
use coffer_evidence::vocab::SharingClass;
use serde_json::{json, Value};
use sha2::{Digest as _, Sha256};

use crate::detect::rules::ExtraRule;
use crate::error::{ExportError, Result};

/// Shortest sensitive value accepted without `force_short`: shorter values
/// match innocent text everywhere and their digests are easy to invert.
pub const MIN_SENSITIVE_BYTES: usize = 8;
/// Largest `sensitiveValuesFile`.
pub const MAX_VALUES_FILE_BYTES: u64 = 16 << 20;

/// How the policy was loaded.
#[derive(Debug, Default, Clone)]
pub struct PolicyOptions {
    /// Environment variables whose values are sensitive (`--redact-env`).
    pub redact_env: Vec<String>,
    /// Accept sensitive values shorter than [`MIN_SENSITIVE_BYTES`].
    pub force_short: bool,
}

/// A loaded, checked policy.
#[derive(Debug, Clone)]
pub struct Policy {
    /// `partner` or `public`.
    pub sharing_class: SharingClass,
    /// Largest source artifact exported.
    pub max_artifact_bytes: u64,
    /// Longest string leaf kept whole.
    pub max_string_bytes: u64,
    /// Every sensitive value (list, file and environment), distinct.
    pub sensitive_values: Vec<String>,
    /// Local roots (rewritten to `[WORKSPACE]`), longest first.
    pub local_roots: Vec<String>,
    /// Extra credential rules.
    pub extra_rules: Vec<ExtraRule>,
    /// Innocent key names (normalized).
    pub allow_names: Vec<String>,
    /// `sha256:<hex>` policy digest.
    pub digest: Digest,
}

fn sha_hex(s: &str) -> String {
    hex::encode(Sha256::digest(s.as_bytes()))
}

fn utf16_sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
    v.dedup();
    v
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

impl Policy {
    /// Reads and checks the policy at `path`.
    pub fn load(path: &Path, opts: &PolicyOptions) -> Result<Policy> {
        let shown = path.display().to_string();
        let bytes = coffer_base::input::read(path, Limits::DOCUMENT.max_bytes as u64)?;
        let doc = json::parse(&bytes, &Limits::DOCUMENT)
            .map_err(|e| ExportError::Invalid(vec![Issue::from((shown.as_str(), e))]))?;
        let base = path.parent().unwrap_or(Path::new("."));
        Policy::from_value(&doc, &shown, base, opts)
    }

    /// Checks a parsed policy document; `base` resolves `sensitiveValuesFile`.
    pub fn from_value(
        doc: &Value,
        file: &str,
        base: &Path,
        opts: &PolicyOptions,
    ) -> Result<Policy> {
        let problems = schema::validate(DocKind::ExportPolicy, doc);
        if !problems.is_empty() {
            return Err(ExportError::Invalid(
                problems
                    .into_iter()
                    .map(|p| Issue::at(codes::validation::SCHEMA, file, p.pointer, p.message))
                    .collect(),
            ));
        }
        let coffer_form = doc.get("schemaVersion").is_some();
        let max_artifact_bytes = doc["maxArtifactBytes"].as_u64().expect("schema: integer");
        let max_string_bytes = doc["maxStringBytes"].as_u64().expect("schema: integer");
        if max_string_bytes > max_artifact_bytes {
            return Err(ExportError::Invalid(vec![Issue::at(
                codes::validation::POLICY_LIMITS,
                file,
                "/maxStringBytes",
                "maxStringBytes is larger than maxArtifactBytes",
            )]));
        }
        let values = sensitive_values(doc, file, base, opts)?;
        let local_roots = local_roots(doc);
        let extra_rules = extra_rules(doc);
        let allow_names = allow_names(doc);

        let mut digested = json!({
            "sharingClass": doc["sharingClass"],
            "maxArtifactBytes": max_artifact_bytes,
            "maxStringBytes": max_string_bytes,
            "sensitiveValueDigests": values.iter().map(|v| sha_hex(v)).collect::<Vec<_>>(),
        });
        if coffer_form {
            let roots = utf16_sorted(local_roots.clone());
            digested["schemaVersion"] = json!("coffer.export-policy/v1");
            digested["localRootDigests"] =
                json!(roots.iter().map(|r| sha_hex(r)).collect::<Vec<_>>());
            digested["extraRules"] = json!(extra_rules
                .iter()
                .map(|r| json!({"id": r.id, "regex": r.regex, "keywords": r.keywords}))
                .collect::<Vec<_>>());
            digested["allowNames"] = json!(allow_names);
        }
        Ok(Policy {
            sharing_class: doc["sharingClass"]
                .as_str()
                .and_then(|s| s.parse().ok())
                .expect("the schema allows partner or public only"),
            max_artifact_bytes,
            max_string_bytes,
            sensitive_values: values,
            local_roots,
            extra_rules,
            allow_names,
            digest: canonical::canonical_digest(&digested),
        })
    }
}

/// The sensitive values: the policy's own, its values file's and those of
/// the named environment variables, sorted as EBO sorts them; a value
/// shorter than the minimum blocks the export unless forced.
fn sensitive_values(
    doc: &Value,
    file: &str,
    base: &Path,
    opts: &PolicyOptions,
) -> Result<Vec<String>> {
    let mut values = strings(doc, "sensitiveValues");
    if let Some(rel) = doc.get("sensitiveValuesFile").and_then(Value::as_str) {
        values.extend(read_values_file(&base.join(rel))?);
    }
    for name in &opts.redact_env {
        match std::env::var(name) {
            Ok(v) if !v.is_empty() => values.push(v),
            _ => {
                return Err(ExportError::usage(
                    codes::usage::ENV_NOT_SET,
                    name,
                    format!("--redact-env {name}: the variable is not set or empty"),
                ))
            }
        }
    }
    let values = utf16_sorted(values);
    let mut issues = Vec::new();
    for (i, v) in values.iter().enumerate() {
        if v.len() < MIN_SENSITIVE_BYTES && !opts.force_short {
            issues.push(Issue::file(
                codes::policy::SENSITIVE_VALUE_TOO_SHORT,
                file,
                format!(
                    "sensitive value #{} (sorted) is shorter than {MIN_SENSITIVE_BYTES} bytes; \
                     it would match innocent text (use --force-short-values to accept)",
                    i + 1
                ),
            ));
        }
    }
    if !issues.is_empty() {
        return Err(ExportError::Blocked(issues));
    }
    Ok(values)
}

/// Declared local roots, normalized as [`normalize_root`] says, longest
/// first.
fn local_roots(doc: &Value) -> Vec<String> {
    let mut local_roots: Vec<String> = strings(doc, "localRoots")
        .iter()
        .map(|r| normalize_root(r))
        .collect();
    local_roots.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    local_roots.dedup();
    local_roots
}

/// A root as one path names it: repeated separators and `.` segments
/// dropped, no trailing separator (`/data//x/./` is `/data/x`). The data
/// is matched however its own separators are spelled
/// (`crate::rewrite::local_paths::find_root`).
pub fn normalize_root(r: &str) -> String {
    let unix = r.starts_with('/');
    if !unix {
        let t = r.trim_end_matches(['/', '\\']);
        return if t.is_empty() {
            r.to_string()
        } else {
            t.to_string()
        };
    }
    let segments: Vec<&str> = r
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    format!("/{}", segments.join("/"))
}

/// The policy's own credential rules.
fn extra_rules(doc: &Value) -> Vec<ExtraRule> {
    doc.get("extraRules")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|r| ExtraRule {
                    id: r["id"].as_str().unwrap_or_default().to_string(),
                    regex: r["regex"].as_str().unwrap_or_default().to_string(),
                    keywords: strings(r, "keywords"),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Names never treated as local user names, normalized, sorted.
fn allow_names(doc: &Value) -> Vec<String> {
    let mut allow_names: Vec<String> = strings(doc, "allowNames")
        .iter()
        .map(|n| crate::detect::names::normalize(n))
        .collect();
    allow_names.sort();
    allow_names.dedup();
    allow_names
}

fn read_values_file(path: &Path) -> Result<Vec<String>> {
    let shown = path.display().to_string();
    let bytes = match coffer_base::input::read(path, MAX_VALUES_FILE_BYTES) {
        Err(coffer_base::input::InputError::TooLarge { .. }) => {
            return Err(ExportError::invalid(
                codes::limit::VALUES_FILE_BYTES,
                &shown,
                format!("sensitiveValuesFile is larger than {MAX_VALUES_FILE_BYTES} bytes"),
            ))
        }
        other => other?,
    };
    let text = String::from_utf8(bytes).map_err(|e| {
        ExportError::invalid(
            codes::validation::INVALID_UTF8,
            &shown,
            format!(
                "sensitiveValuesFile is not UTF-8 (byte {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })?;
    // PowerShell 5 writes UTF-8 with a byte order mark: it is not part of
    // the first value.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    Ok(text
        .lines()
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(doc: Value) -> Result<Policy> {
        Policy::from_value(
            &doc,
            "policy.json",
            Path::new("."),
            &PolicyOptions::default(),
        )
    }

    #[test]
    fn ebo_policy_digest_matches_peer_vector() {
        let p = load(
            json!({"sharingClass": "partner", "maxArtifactBytes": 16777216,
            "maxStringBytes": 8192, "sensitiveValues": []}),
        )
        .unwrap();
        assert_eq!(
            p.digest.to_string(),
            "sha256:2ee6b8b36acf06476798c87fc2290bd13b0f0299a53301a33cab364ebf62981c"
        );
    }

    #[test]
    fn values_enter_the_digest_only_as_digests() {
        let a = load(json!({"sharingClass": "public", "maxArtifactBytes": 100,
            "maxStringBytes": 10, "sensitiveValues": ["correct horse battery", "another-secret-1"]}))
        .unwrap();
        let b = load(json!({"sharingClass": "public", "maxArtifactBytes": 100,
            "maxStringBytes": 10, "sensitiveValues": ["another-secret-1", "correct horse battery", "another-secret-1"]}))
        .unwrap();
        assert_eq!(a.digest, b.digest, "order and duplicates do not matter");
        assert_eq!(a.sensitive_values.len(), 2);
        let expected = canonical::canonical_digest(&json!({"sharingClass": "public",
            "maxArtifactBytes": 100, "maxStringBytes": 10, "sensitiveValueDigests":
            [sha_hex("another-secret-1"), sha_hex("correct horse battery")]}));
        assert_eq!(a.digest, expected);
    }

    #[test]
    fn short_values_are_refused_unless_forced() {
        let doc = json!({"sharingClass": "public", "maxArtifactBytes": 100,
            "maxStringBytes": 10, "sensitiveValues": ["1234567"]});
        let e = load(doc.clone()).unwrap_err();
        assert!(
            matches!(e, ExportError::Blocked(ref i) if i[0].code == "policy.sensitive_value_too_short")
        );
        let opts = PolicyOptions {
            force_short: true,
            ..Default::default()
        };
        assert!(Policy::from_value(&doc, "p", Path::new("."), &opts).is_ok());
        let ok = json!({"sharingClass": "public", "maxArtifactBytes": 100,
            "maxStringBytes": 10, "sensitiveValues": ["12345678"]});
        assert!(load(ok).is_ok());
    }

    #[test]
    fn coffer_fields_need_the_coffer_form() {
        let e = load(json!({"sharingClass": "public", "maxArtifactBytes": 100,
            "maxStringBytes": 10, "localRoots": ["/home/a/w"]}))
        .unwrap_err();
        assert!(matches!(e, ExportError::Invalid(ref i) if i[0].code == "validation.schema"));
        let p = load(json!({"schemaVersion": "coffer.export-policy/v1", "sharingClass": "public",
            "maxArtifactBytes": 100, "maxStringBytes": 10, "localRoots": ["/home/a/w/", "/home/a/w/x"],
            "allowNames": ["csrf_token"]}))
        .unwrap();
        assert_eq!(p.local_roots, vec!["/home/a/w/x", "/home/a/w"]);
        for (spelled, root) in [
            ("/data//x/", "/data/x"),
            ("/data/./x", "/data/x"),
            ("//data/x//", "/data/x"),
            ("/", "/"),
            ("C:\\work\\", "C:\\work"),
        ] {
            assert_eq!(normalize_root(spelled), root, "{spelled}");
        }
        assert_eq!(p.allow_names, vec!["csrftoken"]);
        let q =
            load(json!({"sharingClass": "public", "maxArtifactBytes": 100, "maxStringBytes": 10}))
                .unwrap();
        assert_ne!(p.digest, q.digest);
        let e =
            load(json!({"sharingClass": "public", "maxArtifactBytes": 10, "maxStringBytes": 100}))
                .unwrap_err();
        assert!(
            matches!(e, ExportError::Invalid(ref i) if i[0].code == "validation.policy_limits")
        );
        let e =
            load(json!({"sharingClass": "internal", "maxArtifactBytes": 10, "maxStringBytes": 1}))
                .unwrap_err();
        assert!(matches!(e, ExportError::Invalid(_)));
    }

    #[test]
    fn values_file_and_environment() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("values.txt"),
            // With the byte order mark PowerShell 5 writes.
            "\u{feff}first-secret-value\r\n\nsecond-secret-value\n",
        )
        .unwrap();
        let doc = json!({"schemaVersion": "coffer.export-policy/v1", "sharingClass": "partner",
            "maxArtifactBytes": 100, "maxStringBytes": 10, "sensitiveValuesFile": "values.txt"});
        std::env::set_var("COFFER_POLICY_TEST_VALUE", "env-secret-value-1");
        let opts = PolicyOptions {
            redact_env: vec!["COFFER_POLICY_TEST_VALUE".into()],
            ..Default::default()
        };
        let p = Policy::from_value(&doc, "p", dir.path(), &opts).unwrap();
        assert_eq!(
            p.sensitive_values,
            vec![
                "env-secret-value-1",
                "first-secret-value",
                "second-secret-value"
            ]
        );
        let without = Policy::from_value(&doc, "p", dir.path(), &PolicyOptions::default()).unwrap();
        assert_ne!(p.digest, without.digest);
        let opts = PolicyOptions {
            redact_env: vec!["COFFER_POLICY_TEST_UNSET".into()],
            ..Default::default()
        };
        let e = Policy::from_value(&doc, "p", dir.path(), &opts).unwrap_err();
        assert!(matches!(e, ExportError::Usage(ref i) if i[0].code == "usage.env_not_set"));
    }
}
