//! What both passes of an export run, built from one policy in one place:
//! `export create` and the in-memory sanitizer of the property and fuzz
//! tests use exactly this setup.

use crate::detect::collect::{Collected, Collector};
use crate::detect::rules::RuleSet;
use crate::detect::{Detector, Placeholders};
use crate::error::{ExportError, Result};
use crate::key::ExportKey;
use crate::policy::Policy;
use crate::rewrite::Scrubber;
use coffer_base::codes;

/// The two detectors of an export, compiled from the policy's rules and
/// sensitive values.
pub struct Detectors {
    /// Pass 1's: text shaped like a placeholder is a finding (a forgery).
    collect: Detector,
    /// The scrubber's own: no such finding, since pass 2 writes
    /// placeholders.
    scrub: Detector,
}

impl Detectors {
    /// Compiles both; a policy rule that does not compile is
    /// `validation.policy_rule`.
    pub fn for_policy(policy: &Policy) -> Result<Detectors> {
        let rules = || {
            RuleSet::new(&policy.extra_rules).map_err(|e| {
                ExportError::invalid(codes::validation::POLICY_RULE, &e.id, e.to_string())
            })
        };
        Ok(Detectors {
            collect: Detector::new(
                rules()?,
                &policy.sensitive_values,
                Placeholders::AreForgeries,
            ),
            scrub: Detector::new(
                rules()?,
                &policy.sensitive_values,
                Placeholders::AreExpected,
            ),
        })
    }

    /// Whether `s` holds a credential or a policy value: what an error
    /// must not show of the place it names (`crate::shown`).
    pub fn holds_secret(&self, s: &str) -> bool {
        self.scrub.holds_credential(s)
    }

    /// Pass 1's collector.
    pub fn collector<'d>(&'d self, policy: &'d Policy) -> Collector<'d> {
        Collector::new(
            &self.collect,
            &policy.allow_names,
            &policy.local_roots,
            max_string(policy),
        )
    }

    /// Pass 2's scrubber, with what pass 1 collected and the policy's keys.
    pub fn scrubber<'d>(
        &'d self,
        policy: &'d Policy,
        key: &ExportKey,
        found: Collected,
    ) -> Result<Scrubber<'d>> {
        Scrubber::new(
            &self.scrub,
            key.for_policy(&policy.digest),
            found,
            &policy.sensitive_values,
            &policy.local_roots,
            &policy.allow_names,
            max_string(policy),
        )
    }
}

/// The policy's string bound, as a length.
fn max_string(policy: &Policy) -> usize {
    usize::try_from(policy.max_string_bytes).unwrap_or(usize::MAX)
}
