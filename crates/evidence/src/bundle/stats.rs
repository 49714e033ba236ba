//! `bundle stats`: runs grouped by model, task, harness or a label, with
//! pass rates and their 95% Wilson intervals, and median duration and
//! events: "how did each model do in each experiment" in one command.

use std::collections::BTreeMap;

use serde::Serialize;

use super::query::Run;
use crate::vocab::VerifierOutcome;

/// What runs are grouped by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupBy {
    /// `provider/model`.
    Model,
    /// The task id.
    Task,
    /// The harness id.
    Harness,
    /// The value of one label (runs without it form a group of their own).
    Label(String),
}

impl GroupBy {
    /// Reads `model`, `task`, `harness` or `label:KEY`.
    pub fn parse(arg: &str) -> Option<GroupBy> {
        match arg {
            "model" => Some(GroupBy::Model),
            "task" => Some(GroupBy::Task),
            "harness" => Some(GroupBy::Harness),
            _ => arg
                .strip_prefix("label:")
                .filter(|k| !k.is_empty())
                .map(|k| GroupBy::Label(k.to_string())),
        }
    }

    /// The column name: `model`, `task`, `harness`, or the label's key
    /// (`label:KEY` when the key is one of those or a figure's name).
    pub fn name(&self) -> String {
        match self {
            GroupBy::Model => "model".into(),
            GroupBy::Task => "task".into(),
            GroupBy::Harness => "harness".into(),
            GroupBy::Label(k)
                if FIGURES.contains(&k.as_str())
                    || ["model", "task", "harness"].contains(&k.as_str()) =>
            {
                format!("label:{k}")
            }
            GroupBy::Label(k) => k.clone(),
        }
    }

    fn value(&self, run: &Run) -> Option<String> {
        let r = &run.row;
        match self {
            GroupBy::Model => Some(format!("{}/{}", r.model_provider, r.model_id)),
            GroupBy::Task => Some(r.task_id.to_string()),
            GroupBy::Harness => Some(r.harness_id.to_string()),
            GroupBy::Label(k) => run.labels.get(k).cloned(),
        }
    }
}

/// The names of a [`Group`]'s figures, as it serializes them, in order.
pub const FIGURES: [&str; 9] = [
    "runs",
    "passed",
    "failed",
    "other",
    "passRate",
    "passRateLow",
    "passRateHigh",
    "medianDurationMs",
    "medianEvents",
];

/// One group's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Group {
    /// The group's value of each grouping, in the order asked (`None`: a
    /// run without that label).
    pub key: Vec<Option<String>>,
    /// Runs in the group.
    pub runs: u64,
    /// Runs whose verifier passed.
    pub passed: u64,
    /// Runs whose verifier failed.
    pub failed: u64,
    /// Runs whose verifier errored or did not run, or that have no
    /// verifier result: they count in `runs`, not as passed.
    pub other: u64,
    /// `passed / runs`.
    pub pass_rate: f64,
    /// The 95% Wilson score interval of the pass rate: low end.
    pub pass_rate_low: f64,
    /// High end.
    pub pass_rate_high: f64,
    /// Median session span (first to last event time) over the runs that
    /// have one.
    pub median_duration_ms: Option<f64>,
    /// Median session events.
    pub median_events: Option<f64>,
}

/// `runs` grouped by `by` (all groupings at once), in key order.
pub fn groups(runs: &[Run], by: &[GroupBy]) -> Vec<Group> {
    let mut grouped: BTreeMap<Vec<Option<String>>, Vec<&Run>> = BTreeMap::new();
    for r in runs {
        let key = by.iter().map(|g| g.value(r)).collect();
        grouped.entry(key).or_default().push(r);
    }
    grouped
        .into_iter()
        .map(|(key, members)| {
            let count = |o: VerifierOutcome| {
                members.iter().filter(|r| r.facts.verifier == o).count() as u64
            };
            let (runs, passed, failed) = (
                members.len() as u64,
                count(VerifierOutcome::Passed),
                count(VerifierOutcome::Failed),
            );
            let (low, high) = wilson(passed, runs);
            Group {
                key,
                runs,
                passed,
                failed,
                other: runs - passed - failed,
                pass_rate: passed as f64 / runs as f64,
                pass_rate_low: low,
                pass_rate_high: high,
                median_duration_ms: median(
                    members.iter().filter_map(|r| r.facts.duration_ms).collect(),
                ),
                median_events: median(members.iter().map(|r| r.facts.events).collect()),
            }
        })
        .collect()
}

/// The 95% Wilson score interval of `k` successes in `n` trials (z =
/// 1.959964): unlike `p ± z·se` it stays inside [0, 1] and is not empty
/// at 0 or n successes.
pub fn wilson(k: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    const Z: f64 = 1.959_963_984_540_054;
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let z2 = Z * Z;
    let denom = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denom;
    let half = Z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denom;
    ((center - half).max(0.0), (center + half).min(1.0))
}

/// The median (the mean of the middle two for an even count).
fn median(mut v: Vec<u64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m] as f64
    } else {
        (v[m - 1] as f64 + v[m] as f64) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_name_the_serialized_members_in_order() {
        let g = groups(&[], &[]);
        assert!(g.is_empty());
        let sample = Group {
            key: vec![],
            runs: 1,
            passed: 1,
            failed: 0,
            other: 0,
            pass_rate: 1.0,
            pass_rate_low: 0.2,
            pass_rate_high: 1.0,
            median_duration_ms: None,
            median_events: None,
        };
        let v = serde_json::to_value(&sample).unwrap();
        let names: Vec<&String> = v
            .as_object()
            .unwrap()
            .keys()
            .filter(|k| *k != "key")
            .collect();
        assert_eq!(names, FIGURES);
    }

    #[test]
    fn wilson_intervals_match_published_values() {
        // Wilson (1927) as tabulated by Newcombe (1998), method 3.
        let close = |a: f64, b: f64| (a - b).abs() < 5e-5;
        let (l, h) = wilson(81, 263);
        assert!(close(l, 0.2553) && close(h, 0.3662), "{l} {h}");
        let (l, h) = wilson(15, 148);
        assert!(close(l, 0.0624) && close(h, 0.1605), "{l} {h}");
        let (l, h) = wilson(0, 20);
        assert!(l == 0.0 && close(h, 0.1611), "{l} {h}");
        let (l, h) = wilson(1, 29);
        assert!(close(l, 0.0061) && close(h, 0.1718), "{l} {h}");
        assert_eq!(wilson(0, 0), (0.0, 1.0));
        let (l, h) = wilson(10, 10);
        assert!(close(h, 1.0) && close(l, 0.7225), "{l} {h}");
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![5, 1, 3]), Some(3.0));
        assert_eq!(median(vec![4, 1, 3, 2]), Some(2.5));
    }

    #[test]
    fn groupings_are_read_from_their_names() {
        assert_eq!(GroupBy::parse("model"), Some(GroupBy::Model));
        assert_eq!(
            GroupBy::parse("label:experiment"),
            Some(GroupBy::Label("experiment".into()))
        );
        assert_eq!(GroupBy::parse("label:"), None);
        assert_eq!(GroupBy::parse("colour"), None);
        let name = |k: &str| GroupBy::Label(k.into()).name();
        assert_eq!(name("experiment"), "experiment");
        assert_eq!(
            (name("runs"), name("model")),
            ("label:runs".into(), "label:model".into())
        );
    }
}
