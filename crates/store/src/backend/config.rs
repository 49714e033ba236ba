//! Which backend a store uses, as `init` records it in `STORE-FORMAT`.
//!
//! Only the location is recorded (bucket, prefix, endpoint). Credentials are
//! never part of it: the S3 backend takes them from the environment or the
//! standard AWS configuration, so they stay out of the store and out of
//! shell history.

use coffer_base::codes;
use std::sync::Arc;

use serde_json::{json, Value};

use super::{Backend, LocalBackend};
use crate::error::{Result, StoreError};
use coffer_base::dir::Dir;

/// Where a store's objects and refs live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackendConfig {
    /// The store root's own directories.
    Local,
    /// An S3-compatible bucket.
    S3 {
        /// Bucket name.
        bucket: String,
        /// Key prefix inside the bucket (no leading or trailing `/`; may be empty).
        prefix: String,
        /// Endpoint URL of an S3-compatible server (`None`: AWS).
        endpoint: Option<String>,
    },
}

fn usage(detail: String) -> StoreError {
    StoreError::Conflict {
        code: codes::usage::INVALID_BACKEND,
        message: detail,
        subject: "--backend".into(),
    }
}

impl BackendConfig {
    /// Parses `--backend` (`s3://bucket/prefix`) and `--endpoint`.
    pub fn parse(url: &str, endpoint: Option<&str>) -> Result<Self> {
        let Some(rest) = url.strip_prefix("s3://") else {
            return Err(usage(format!(
                "backend {url:?}: only s3://bucket/prefix is supported"
            )));
        };
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        let prefix = prefix.trim_end_matches('/');
        let bucket_ok = (3..=63).contains(&bucket.len())
            && bucket
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
        if !bucket_ok {
            return Err(usage(format!(
                "backend {url:?}: {bucket:?} is not a bucket name"
            )));
        }
        let prefix_ok = prefix.split('/').all(|p| {
            prefix.is_empty()
                || (!p.is_empty()
                    && p != "."
                    && p != ".."
                    && p.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)))
        });
        if !prefix_ok {
            return Err(usage(format!(
                "backend {url:?}: the prefix may hold only letters, digits, '-', '_', '.' and '/'"
            )));
        }
        if let Some(e) = endpoint {
            if !(e.starts_with("http://") || e.starts_with("https://")) {
                return Err(usage(format!("endpoint {e:?} is not an http(s) URL")));
            }
        }
        Ok(BackendConfig::S3 {
            bucket: bucket.to_string(),
            prefix: prefix.to_string(),
            endpoint: endpoint.map(|e| e.trim_end_matches('/').to_string()),
        })
    }

    /// The `backend` member of `STORE-FORMAT` (absent for a local store).
    pub fn to_json(&self) -> Option<Value> {
        match self {
            BackendConfig::Local => None,
            BackendConfig::S3 {
                bucket,
                prefix,
                endpoint,
            } => {
                let mut v = json!({"kind": "s3", "bucket": bucket, "prefix": prefix});
                if let Some(e) = endpoint {
                    v["endpoint"] = json!(e);
                }
                Some(v)
            }
        }
    }

    /// Reads the `backend` member of `STORE-FORMAT`.
    pub fn from_json(v: Option<&Value>) -> std::result::Result<Self, String> {
        let Some(v) = v else {
            return Ok(BackendConfig::Local);
        };
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        match s("kind").as_deref() {
            Some("s3") => Ok(BackendConfig::S3 {
                bucket: s("bucket").ok_or("backend.bucket is missing")?,
                prefix: s("prefix").unwrap_or_default(),
                endpoint: s("endpoint"),
            }),
            other => Err(format!("backend kind {other:?} is unknown to this build")),
        }
    }

    /// `s3://bucket/prefix` or `local`.
    pub fn describe(&self) -> String {
        match self {
            BackendConfig::Local => "local".into(),
            BackendConfig::S3 { bucket, prefix, .. } if prefix.is_empty() => {
                format!("s3://{bucket}")
            }
            BackendConfig::S3 { bucket, prefix, .. } => format!("s3://{bucket}/{prefix}"),
        }
    }

    /// Opens the backend of the store at `root`.
    pub fn open(&self, root: &Dir) -> Result<Arc<dyn Backend>> {
        match self {
            BackendConfig::Local => Ok(Arc::new(LocalBackend::open(
                root.try_clone()
                    .map_err(|e| StoreError::io(root.path(), "dup", e))?,
            )?)),
            #[cfg(feature = "aws")]
            BackendConfig::S3 { .. } => Ok(Arc::new(super::S3Backend::open(self)?)),
            #[cfg(not(feature = "aws"))]
            BackendConfig::S3 { .. } => Err(StoreError::UnsupportedFormat {
                path: root.join(crate::entries::FORMAT_FILE),
                detail: format!(
                    "the store's objects are in {}; this build has no S3 support (build with --features aws)",
                    self.describe()
                ),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bucket_prefix_and_endpoint() {
        let c =
            BackendConfig::parse("s3://evidence/team-a/", Some("http://127.0.0.1:9000/")).unwrap();
        assert_eq!(
            c,
            BackendConfig::S3 {
                bucket: "evidence".into(),
                prefix: "team-a".into(),
                endpoint: Some("http://127.0.0.1:9000".into())
            }
        );
        assert_eq!(BackendConfig::from_json(c.to_json().as_ref()).unwrap(), c);
        assert_eq!(c.describe(), "s3://evidence/team-a");
        assert_eq!(
            BackendConfig::from_json(None).unwrap(),
            BackendConfig::Local
        );
    }

    #[test]
    fn refuses_what_is_not_a_bucket_location() {
        for bad in [
            "file:///tmp/x",
            "s3://",
            "s3://Upper",
            "s3://ok-bucket/../up",
            "s3://ok-bucket/a//b",
            "s3://ok-bucket/sp ace",
        ] {
            let e = BackendConfig::parse(bad, None).unwrap_err();
            assert_eq!(e.code(), "usage.invalid_backend", "{bad}");
        }
        let e = BackendConfig::parse("s3://ok-bucket", Some("ftp://x")).unwrap_err();
        assert_eq!(e.code(), "usage.invalid_backend");
    }
}
