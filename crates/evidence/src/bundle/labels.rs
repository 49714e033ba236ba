//! Labels of stored bundles (`experiment=ablation-3`): catalog metadata a
//! user adds at ingest or later, never part of the immutable bundle.
//! Every change is kept with its time (a removal is a change to nothing),
//! in a recorded table, so `catalog rebuild` and `mirror` keep labels.

use std::collections::BTreeMap;

use coffer_base::codes;
use coffer_base::issue::Issue;
use coffer_store::catalog::Catalog;
use coffer_store::Store;

use super::records::BundleRow;
use crate::error::Result;

/// Longest label key, in bytes.
pub const MAX_KEY_BYTES: usize = 64;
/// Longest label value, in bytes.
pub const MAX_VALUE_BYTES: usize = 256;

/// One change: set `key` to `value`, or remove it (`None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The key: letters, digits, `_`, `-`, `.` and `/`, 1 to 64 bytes.
    pub key: String,
    /// The new value (any text of 1 to 256 bytes without control
    /// characters), or `None` to remove the label.
    pub value: Option<String>,
}

impl Change {
    /// Reads `KEY=VALUE`.
    pub fn parse_set(arg: &str) -> std::result::Result<Change, Issue> {
        let Some((key, value)) = arg.split_once('=') else {
            return Err(Issue::about(
                codes::usage::INVALID_ARGUMENT,
                Some(arg.to_string()),
                format!("{arg:?}: a label is KEY=VALUE"),
            ));
        };
        let c = Change {
            key: key.to_string(),
            value: Some(value.to_string()),
        };
        c.check().map(|()| c)
    }

    /// A removal of `key`.
    pub fn parse_remove(key: &str) -> std::result::Result<Change, Issue> {
        let c = Change {
            key: key.to_string(),
            value: None,
        };
        c.check().map(|()| c)
    }

    fn check(&self) -> std::result::Result<(), Issue> {
        let key_ok = !self.key.is_empty()
            && self.key.len() <= MAX_KEY_BYTES
            && self
                .key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-./".contains(&b));
        let value_ok = self.value.as_ref().is_none_or(|v| {
            !v.is_empty() && v.len() <= MAX_VALUE_BYTES && !v.chars().any(char::is_control)
        });
        if key_ok && value_ok {
            return Ok(());
        }
        Err(Issue::about(
            codes::usage::INVALID_ARGUMENT,
            Some(self.key.clone()),
            format!(
                "label {:?}: a key is 1 to {MAX_KEY_BYTES} bytes of letters, digits, _ - . /; \
                 a value 1 to {MAX_VALUE_BYTES} bytes without control characters",
                self.key
            ),
        ))
    }
}

/// Applies `changes` to the bundle `row` in one recorded transaction;
/// each gets a time of its own (later than any earlier change of its key).
pub fn apply(store: &mut Store, row: &BundleRow, changes: &[Change]) -> Result<()> {
    if changes.is_empty() {
        return Ok(());
    }
    let last: i64 = store
        .catalog()
        .reader()
        .query_one(
            "SELECT MAX(changed_ms) FROM bundle_label_changes WHERE bundle_id = ?1",
            &[&row.bundle_id],
            |r| r.get::<Option<i64>>(0),
        )?
        .flatten()
        .unwrap_or(0);
    let start = coffer_store::objects::now_ms().max(last + 1);
    let batch = store.batch()?;
    crate::error::commit_rows(batch, |tx| {
        for (i, c) in changes.iter().enumerate() {
            tx.execute(
                "INSERT INTO bundle_label_changes (bundle_id, key, value, changed_ms) \
                 VALUES (?1, ?2, ?3, ?4)",
                &[&row.bundle_id, &c.key, &c.value, &(start + i as i64)],
            )?;
        }
        Ok(())
    })?;
    Ok(())
}

/// The current labels of `bundle_id`: the latest change of each key that
/// set a value.
pub fn of(catalog: &Catalog, bundle_id: &str) -> Result<BTreeMap<String, String>> {
    let rows: Vec<(String, Option<String>)> = catalog.reader().query(
        "SELECT key, value FROM bundle_label_changes WHERE bundle_id = ?1 \
         ORDER BY key, changed_ms",
        &[&bundle_id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let mut out = BTreeMap::new();
    for (k, v) in rows {
        match v {
            Some(v) => out.insert(k, v),
            None => out.remove(&k),
        };
    }
    Ok(out)
}

/// Whether `labels` satisfy every `KEY=GLOB` of `wanted` (a key that is
/// absent matches nothing).
pub fn matches(labels: &BTreeMap<String, String>, wanted: &[(String, String)]) -> bool {
    wanted
        .iter()
        .all(|(k, g)| labels.get(k).is_some_and(|v| super::stream::glob(g, v)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_key_value_with_bounded_plain_keys() {
        let c = Change::parse_set("experiment=ablation 3").unwrap();
        assert_eq!(
            (c.key.as_str(), c.value.as_deref()),
            ("experiment", Some("ablation 3"))
        );
        assert!(
            Change::parse_set("a/b.c-d_e=x=y").is_ok(),
            "a value may hold ="
        );
        for bad in ["novalue", "=x", "bad key=x", "k=", "k=\u{7}"] {
            assert!(Change::parse_set(bad).is_err(), "{bad}");
        }
        assert!(Change::parse_set(&format!("{}=x", "k".repeat(65))).is_err());
        assert!(Change::parse_remove("experiment").is_ok());
    }

    #[test]
    fn a_glob_selects_by_value() {
        let labels: BTreeMap<String, String> =
            [("experiment".to_string(), "ablation-3".to_string())].into();
        let want = |k: &str, g: &str| vec![(k.to_string(), g.to_string())];
        assert!(matches(&labels, &want("experiment", "ablation-*")));
        assert!(!matches(&labels, &want("experiment", "baseline")));
        assert!(
            !matches(&labels, &want("model", "*")),
            "absent matches nothing"
        );
        assert!(matches(&labels, &[]));
    }
}
