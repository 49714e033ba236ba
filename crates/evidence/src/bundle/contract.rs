//! Cross-field rules of the evidence contract (docs/CONTRACT.md), one function
//! per document and one issue code per rule. Schema validation has already
//! run, so enum fields hold known values here.

use coffer_base::codes;
use std::collections::{HashMap, HashSet};

use super::model::{
    Attempt, CaptureReport, Descriptor, ExportManifest, Manifest, Run, VerifierResult,
};
use super::safe_path::{check_path_set, check_relative_path, MANIFEST};
use crate::vocab::{
    AssertionStatus, AssessmentMode, Authority, CapabilityStatus, FailureClass, GapReason, Kind,
    Qualification, SharingClass, TerminalState, VerifierStatus,
};
use coffer_base::digest::Digest;
use coffer_base::issue::Issue;

/// The authority each evidence kind must carry.
pub fn authority_of(kind: Kind) -> Authority {
    match kind {
        Kind::Session | Kind::Hook => Authority::Semantic,
        Kind::Telemetry => Authority::TimingResource,
        Kind::Workspace | Kind::Verifier | Kind::Diagnostic => Authority::Outcome,
        Kind::CaptureReport => Authority::Capture,
        Kind::ExportManifest => Authority::Export,
    }
}

fn m_issue(
    issues: &mut Vec<Issue>,
    code: &'static str,
    pointer: impl Into<String>,
    message: impl Into<String>,
) {
    issues.push(Issue::at(code, MANIFEST, pointer, message));
}

/// Rules that need only the manifest.
pub fn manifest_rules(m: &Manifest) -> Vec<Issue> {
    let mut issues = Vec::new();
    runtime_rules(&m.run, &mut issues);
    attempt_rules(&m.attempt, &mut issues);
    mode_and_terminal_rules(m, &mut issues);
    descriptor_rules(m, &mut issues);
    issues
}

/// Runtime: unique entries, the harness among them.
fn runtime_rules(run: &Run, issues: &mut Vec<Issue>) {
    let mut seen = HashSet::new();
    for (i, c) in run.runtime.iter().enumerate() {
        if !seen.insert(c) {
            m_issue(
                issues,
                codes::validation::DUPLICATE_RUNTIME,
                format!("/run/runtime/{i}"),
                "runtime entry listed twice",
            );
        }
    }
    let h = &run.harness;
    if !run
        .runtime
        .iter()
        .any(|c| c.version == h.version && (c.name == *h.id || c.source == *h.id))
    {
        m_issue(issues, codes::validation::HARNESS_NOT_IN_RUNTIME, "/run/harness", format!("harness {}@{} does not appear in run.runtime (same version, name or source equal to the harness id)", h.id, h.version));
    }
}

/// Attempts and retries.
fn attempt_rules(a: &Attempt, issues: &mut Vec<Issue>) {
    match (&a.retry_of, a.number) {
        (None, n) if n >= 2 => m_issue(
            issues,
            codes::validation::RETRY_OF_REQUIRED,
            "/attempt",
            format!("attempt number {n} needs retryOf"),
        ),
        (Some(_), 1) => m_issue(
            issues,
            codes::validation::RETRY_OF_FORBIDDEN,
            "/attempt/retryOf",
            "a first attempt retries nothing",
        ),
        (Some(r), _) if *r == a.id => m_issue(
            issues,
            codes::validation::RETRY_OF_SELF,
            "/attempt/retryOf",
            "an attempt cannot retry itself",
        ),
        _ => {}
    }
}

/// The assessment mode, and the terminal state's allowed combinations.
fn mode_and_terminal_rules(m: &Manifest, issues: &mut Vec<Issue>) {
    let run = &m.run;
    let observational = run.mode() == AssessmentMode::Observational;
    if observational && run.verifier.is_some() {
        m_issue(
            issues,
            codes::validation::VERIFIER_FORBIDDEN,
            "/run/verifier",
            "observational runs have no verifier",
        );
    }

    let t = &m.terminal;
    let combo_ok = matches!(
        (t.state, t.failure_class.as_str(), t.stop_reason.as_str()),
        (TerminalState::Completed, "none", "none")
            | (TerminalState::Failed, "infrastructure" | "task", "none")
            | (TerminalState::Stopped, "none", "budget" | "policy")
            | (TerminalState::Interrupted, "infrastructure", "none")
    );
    if !combo_ok {
        m_issue(
            issues,
            codes::validation::TERMINAL_COMBINATION,
            "/terminal",
            format!(
                "terminal {}/{}/{} is not an allowed state/failureClass/stopReason combination",
                t.state, t.failure_class, t.stop_reason
            ),
        );
    }
    let task_failure = t.state == TerminalState::Failed && t.failure_class == FailureClass::Task;
    if task_failure && observational {
        m_issue(
            issues,
            codes::validation::OBSERVATIONAL_TASK_FAILURE,
            "/terminal/failureClass",
            "observational runs cannot fail as task",
        );
    }
    match &t.workspace_artifact_id {
        None if task_failure => m_issue(
            issues,
            codes::validation::WORKSPACE_ARTIFACT_REQUIRED,
            "/terminal",
            "a task failure must name its workspaceArtifactId",
        ),
        Some(id) => {
            let ok = m
                .evidence
                .iter()
                .any(|d| d.id == *id && d.kind == Kind::Workspace && d.is_retained());
            if !ok {
                m_issue(
                    issues,
                    codes::validation::WORKSPACE_ARTIFACT_INVALID,
                    "/terminal/workspaceArtifactId",
                    format!("{id:?} does not name a retained, unsanitized workspace descriptor"),
                );
            }
        }
        None => {}
    }
}

/// Descriptor ids seen so far, and the kind each digest first appeared as.
#[derive(Default)]
struct Seen<'m> {
    ids: HashSet<&'m str>,
    digest_kind: HashMap<&'m Digest, Kind>,
}

/// Descriptors indexed by artifact id.
type ById<'m> = HashMap<&'m str, (usize, &'m Descriptor)>;

fn descriptor_rules(m: &Manifest, issues: &mut Vec<Issue>) {
    let ev = &m.evidence;
    let by_id: ById<'_> = ev
        .iter()
        .enumerate()
        .map(|(i, d)| (d.id.as_str(), (i, d)))
        .collect();
    let mut seen = Seen::default();
    for (i, d) in ev.iter().enumerate() {
        descriptor_fields(i, d, &mut seen, issues);
        sharing_rules(i, d, &by_id, issues);
    }
    provenance_chains(ev, &by_id, issues);
    capture_report_descriptors(ev, issues);
    native_ids_bound(m, issues);
    paths_against_each_other(ev, issues);
}

/// One descriptor's own fields: a unique id, the authority its kind
/// needs, the media type of JSON documents, safe paths, one kind per digest.
fn descriptor_fields<'m>(
    i: usize,
    d: &'m Descriptor,
    seen: &mut Seen<'m>,
    issues: &mut Vec<Issue>,
) {
    let at = |f: &str| format!("/evidence/{i}{f}");
    if !seen.ids.insert(d.id.as_str()) {
        m_issue(
            issues,
            codes::validation::DUPLICATE_ARTIFACT_ID,
            at("/id"),
            format!("artifact id {:?} is used twice", d.id),
        );
    }
    if d.authority != authority_of(d.kind) {
        m_issue(
            issues,
            codes::validation::KIND_AUTHORITY,
            at("/authority"),
            format!(
                "{} evidence has authority {}, not {}",
                d.kind,
                authority_of(d.kind),
                d.authority
            ),
        );
    }
    if matches!(
        d.kind,
        Kind::Verifier | Kind::CaptureReport | Kind::ExportManifest
    ) && d.media_type != "application/json"
    {
        m_issue(
            issues,
            codes::validation::MEDIA_TYPE,
            at("/mediaType"),
            format!("{} evidence must be application/json", d.kind),
        );
    }
    if let Err(e) = check_relative_path(&d.relative_path) {
        m_issue(issues, e.code, at("/relativePath"), e.message);
    }
    let locator = d
        .diagnostic_source
        .as_ref()
        .and_then(|s| s["locator"].as_str());
    if let Some(loc) = locator {
        if let Err(e) = check_relative_path(loc) {
            m_issue(issues, e.code, at("/diagnosticSource/locator"), e.message);
        }
    }
    match seen.digest_kind.get(&d.digest) {
        Some(k) if *k != d.kind => m_issue(
            issues,
            codes::validation::DIGEST_CLASS_CONFLICT,
            at("/digest"),
            format!("the same bytes appear as {k} and {} evidence", d.kind),
        ),
        _ => {
            seen.digest_kind.insert(&d.digest, d.kind);
        }
    }
}

/// Partner and public evidence: no native reference, and a derivative of
/// an existing source with the same source, authority and kind.
fn sharing_rules(i: usize, d: &Descriptor, by_id: &ById<'_>, issues: &mut Vec<Issue>) {
    let at = |f: &str| format!("/evidence/{i}{f}");
    let shared = d.sharing_class.is_shared();
    if shared && d.native_reference.is_some() {
        m_issue(
            issues,
            codes::validation::NATIVE_REFERENCE_FORBIDDEN,
            at("/nativeReference"),
            "partner and public evidence carries no native reference",
        );
    }
    match (&d.sanitized_from, shared) {
        (None, true) => m_issue(
            issues,
            codes::validation::SANITIZED_FROM_REQUIRED,
            at(""),
            format!("{} evidence needs sanitizedFrom", d.sharing_class),
        ),
        (Some(sf), _) => match by_id.get(sf.artifact_id.as_str()) {
            None => m_issue(
                issues,
                codes::validation::SANITIZED_SOURCE_MISSING,
                at("/sanitizedFrom/artifactId"),
                format!("source artifact {:?} does not exist", sf.artifact_id),
            ),
            Some((_, src)) => {
                if src.source != d.source || src.authority != d.authority || src.kind != d.kind {
                    m_issue(
                        issues,
                        codes::validation::SANITIZED_SOURCE_MISMATCH,
                        at("/sanitizedFrom"),
                        "a derivative must share source, authority and kind with its source",
                    );
                }
                if src.digest != sf.digest {
                    m_issue(
                        issues,
                        codes::validation::SANITIZED_DIGEST_MISMATCH,
                        at("/sanitizedFrom/digest"),
                        "sanitizedFrom.digest is not the source's digest",
                    );
                }
                if src.relative_path == d.relative_path {
                    m_issue(
                        issues,
                        codes::validation::SANITIZED_SAME_PATH,
                        at("/relativePath"),
                        "a derivative must live at a different path than its source",
                    );
                }
                if src.digest == d.digest {
                    m_issue(
                        issues,
                        codes::validation::SANITIZED_SAME_BYTES,
                        at("/digest"),
                        "a derivative must differ from its source",
                    );
                }
            }
        },
        (None, false) => {}
    }
}

/// Provenance chains must end.
fn provenance_chains(ev: &[Descriptor], by_id: &ById<'_>, issues: &mut Vec<Issue>) {
    for (i, d) in ev.iter().enumerate() {
        let mut cur = d;
        let mut steps = 0;
        while let Some(sf) = &cur.sanitized_from {
            match by_id.get(sf.artifact_id.as_str()) {
                Some((_, next)) => cur = next,
                None => break,
            }
            steps += 1;
            if steps > ev.len() {
                m_issue(
                    issues,
                    codes::validation::PROVENANCE_CYCLE,
                    format!("/evidence/{i}/sanitizedFrom"),
                    "sanitizedFrom chain forms a cycle",
                );
                break;
            }
        }
    }
}

/// Exactly one capture report, never shared.
fn capture_report_descriptors(ev: &[Descriptor], issues: &mut Vec<Issue>) {
    let reports: Vec<usize> = ev
        .iter()
        .enumerate()
        .filter(|(_, d)| d.kind == Kind::CaptureReport)
        .map(|(i, _)| i)
        .collect();
    if reports.len() != 1 {
        m_issue(
            issues,
            codes::validation::CAPTURE_REPORT_COUNT,
            "/evidence",
            format!(
                "a bundle has exactly one capture-report descriptor, found {}",
                reports.len()
            ),
        );
    }
    for i in reports {
        if ev[i].sharing_class.is_shared() {
            m_issue(
                issues,
                codes::validation::CAPTURE_REPORT_SHARED,
                format!("/evidence/{i}/sharingClass"),
                "the capture report is never partner or public",
            );
        }
    }
}

/// Native ids bind to retained evidence.
fn native_ids_bound(m: &Manifest, issues: &mut Vec<Issue>) {
    let ev = &m.evidence;
    let bound = |kind: Kind, ref_type: &str, id: &str| {
        ev.iter().any(|d| {
            d.kind == kind
                && d.is_retained()
                && d.native_reference
                    .as_ref()
                    .is_some_and(|r| r.kind == ref_type && r.id == id)
        })
    };
    if let Some(s) = &m.run.native.session_id {
        if !bound(Kind::Session, "session", s) {
            m_issue(issues, codes::validation::NATIVE_SESSION_UNBOUND, "/run/native/sessionId", format!("no retained session descriptor has nativeReference {{type: session, id: {s:?}}}"));
        }
    }
    if let Some(t) = &m.run.native.trace_id {
        if !bound(Kind::Telemetry, "trace", t) {
            m_issue(issues, codes::validation::NATIVE_TRACE_UNBOUND, "/run/native/traceId", format!("no retained telemetry descriptor has nativeReference {{type: trace, id: {t:?}}}"));
        }
    }
}

/// Paths against each other.
fn paths_against_each_other(ev: &[Descriptor], issues: &mut Vec<Issue>) {
    let paths: Vec<&str> = ev.iter().map(|d| d.relative_path.as_str()).collect();
    for (i, e) in check_path_set(&paths) {
        m_issue(
            issues,
            e.code,
            format!("/evidence/{i}/relativePath"),
            e.message,
        );
    }
}

/// Rules of the capture report against the manifest.
pub fn capture_rules(m: &Manifest, c: &CaptureReport, file: &str) -> Vec<Issue> {
    let mut out = Vec::new();
    let mut add = |code, pointer: &str, msg: String| out.push(Issue::at(code, file, pointer, msg));
    capture_identity(m, c, &mut add);
    capture_gaps(c, &mut add);
    capture_capabilities(m, c, &mut add);
    capture_qualification(c, &mut add);
    out
}

/// Records one issue of a document: code, JSON pointer, message.
type Add<'a> = dyn FnMut(&'static str, &str, String) + 'a;

/// True when a missing-evidence entry affects `cap`.
fn affects(c: &CaptureReport, cap: Authority) -> bool {
    c.missing_evidence.iter().any(|e| e.affects.contains(&cap))
}

/// True when a missing-evidence entry with `reason` affects `cap`.
fn has_reason(c: &CaptureReport, cap: Authority, reason: GapReason) -> bool {
    c.missing_evidence
        .iter()
        .any(|e| e.reason == reason && e.affects.contains(&cap))
}

/// The status the capture report gives capability `cap`.
fn status_of(c: &CaptureReport, cap: Authority) -> Option<CapabilityStatus> {
    c.capabilities
        .by_authority()
        .into_iter()
        .find(|(c2, _)| *c2 == cap)
        .map(|x| x.1)
}

/// The report is about this bundle, in this mode.
fn capture_identity(m: &Manifest, c: &CaptureReport, add: &mut Add<'_>) {
    if c.bundle_id != m.bundle_id {
        add(
            codes::validation::CAPTURE_BUNDLE_MISMATCH,
            "/bundleId",
            format!(
                "capture report is for {:?}, manifest is {:?}",
                c.bundle_id, m.bundle_id
            ),
        );
    }
    if let Some(mode) = &c.assessment_mode {
        if *mode != m.run.mode() {
            add(
                codes::validation::ASSESSMENT_MODE_MISMATCH,
                "/assessmentMode",
                format!("capture report says {mode}, the run is {}", m.run.mode()),
            );
        }
    }
}

/// Each gap's scope.
fn capture_gaps(c: &CaptureReport, add: &mut Add<'_>) {
    for (i, e) in c.missing_evidence.iter().enumerate() {
        if e.reason == GapReason::OptionalBetaUnavailable
            && e.affects != [Authority::TimingResource]
        {
            add(
                codes::validation::BETA_REASON_SCOPE,
                &format!("/missingEvidence/{i}/affects"),
                "optional-beta-unavailable affects exactly timing-resource".into(),
            );
        }
    }
}

/// Each capability's status against the gaps and the evidence present.
fn capture_capabilities(m: &Manifest, c: &CaptureReport, add: &mut Add<'_>) {
    let pointer_of = |cap: Authority| match cap {
        Authority::Semantic => "/capabilities/semantic",
        Authority::TimingResource => "/capabilities/timingResource",
        _ => "/capabilities/outcome",
    };
    for (cap, status) in c.capabilities.by_authority() {
        if status != CapabilityStatus::Available && !affects(c, cap) {
            add(
                codes::validation::CAPABILITY_UNEXPLAINED,
                pointer_of(cap),
                format!("{cap} is {status} but no missingEvidence entry affects it"),
            );
        }
        for (reason, s) in [
            (GapReason::Unsupported, CapabilityStatus::Unsupported),
            (GapReason::NotChecked, CapabilityStatus::NotChecked),
        ] {
            if (status == s) != has_reason(c, cap, reason) {
                add(codes::validation::CAPABILITY_REASON_MISMATCH, pointer_of(cap), format!("{cap} is {status}: it is {reason} exactly when a missingEvidence entry with reason {reason} affects it"));
            }
        }
        if status == CapabilityStatus::Available && !m.evidence.iter().any(|d| d.authority == cap) {
            add(
                codes::validation::CAPABILITY_WITHOUT_EVIDENCE,
                pointer_of(cap),
                format!("{cap} is available but the bundle has no {cap} evidence"),
            );
        }
    }
}

/// The qualification follows from the capabilities and gaps.
fn capture_qualification(c: &CaptureReport, add: &mut Add<'_>) {
    use CapabilityStatus::{Available, Missing, NotChecked, Unsupported};
    if c.qualification == Qualification::Qualified {
        let timing_ok = matches!(
            status_of(c, Authority::TimingResource),
            Some(Available | Unsupported)
        );
        let core_ok = status_of(c, Authority::Semantic) == Some(Available)
            && status_of(c, Authority::Outcome) == Some(Available);
        let gaps_ok = !affects(c, Authority::Semantic)
            && !affects(c, Authority::Outcome)
            && !c.missing_evidence.iter().any(|e| {
                e.affects.contains(&Authority::TimingResource)
                    && !matches!(
                        e.reason,
                        GapReason::Unsupported | GapReason::OptionalBetaUnavailable
                    )
            });
        if !(timing_ok && core_ok && gaps_ok) {
            add(codes::validation::QUALIFICATION_UNJUSTIFIED, "/qualification", "qualified needs semantic and outcome available, timing available or unsupported, and no gap affecting them".into());
        }
    } else {
        let some_gap = matches!(
            status_of(c, Authority::Semantic),
            Some(Missing | Unsupported | NotChecked)
        ) || matches!(
            status_of(c, Authority::TimingResource),
            Some(Missing | NotChecked)
        ) || matches!(
            status_of(c, Authority::Outcome),
            Some(Missing | Unsupported | NotChecked)
        );
        if c.missing_evidence.is_empty() || !some_gap {
            add(codes::validation::INCOMPLETE_WITHOUT_GAPS, "/qualification", "incomplete needs at least one missing evidence entry and a capability that is not available".into());
        }
    }
}

/// Rules of one verifier result against the manifest.
pub fn verifier_rules(m: &Manifest, v: &VerifierResult, file: &str) -> Vec<Issue> {
    let mut out = Vec::new();
    let mut add = |code, pointer: &str, msg: String| out.push(Issue::at(code, file, pointer, msg));
    if v.bundle_id != m.bundle_id {
        add(
            codes::validation::VERIFIER_BUNDLE_MISMATCH,
            "/bundleId",
            format!(
                "verifier result is for {:?}, manifest is {:?}",
                v.bundle_id, m.bundle_id
            ),
        );
    }
    let mut ids = HashSet::new();
    for (i, a) in v.assertions.iter().enumerate() {
        if !ids.insert(&a.id) {
            add(
                codes::validation::DUPLICATE_ASSERTION_ID,
                &format!("/assertions/{i}/id"),
                format!("assertion id {:?} is used twice", a.id),
            );
        }
    }
    let all = |s| v.assertions.iter().all(|a| a.status == s);
    let any = |s| v.assertions.iter().any(|a| a.status == s);
    match v.status {
        VerifierStatus::Passed if v.workspace.is_none() || v.assertions.is_empty() || !all(AssertionStatus::Passed) || v.exit_code.is_some_and(|c| c != 0) || v.error.is_some() => {
            add(codes::validation::VERIFIER_PASSED_INCONSISTENT, "/status", "passed needs a workspace, at least one assertion, all passed, exit code 0 if present, no error".into())
        }
        VerifierStatus::Failed if v.workspace.is_none() || v.exit_code.is_none_or(|c| c == 0) || !any(AssertionStatus::Failed) || v.error.is_some() => {
            add(codes::validation::VERIFIER_FAILED_INCONSISTENT, "/status", "failed needs a workspace, a nonzero exit code, at least one failed assertion, no error".into())
        }
        VerifierStatus::Error if v.error.as_deref().is_none_or(|e| e.trim().is_empty()) => {
            add(codes::validation::VERIFIER_ERROR_INCONSISTENT, "/error", "error needs a non-empty error".into())
        }
        VerifierStatus::NotRun if !all(AssertionStatus::NotRun) || v.workspace.is_some() || v.exit_code.is_some() || v.duration_ms.is_some() || !v.diagnostics.is_empty() => {
            add(codes::validation::VERIFIER_NOT_RUN_INCONSISTENT, "/status", "not-run needs every assertion not-run and no workspace, exit code, duration or diagnostics".into())
        }
        _ => {}
    }
    if let Some(w) = &v.workspace {
        let ok = m
            .evidence
            .iter()
            .any(|d| d.id == w.artifact_id && d.kind == Kind::Workspace && d.digest == w.digest);
        if !ok {
            add(
                codes::validation::VERIFIER_WORKSPACE_UNBOUND,
                "/workspace",
                format!(
                    "workspace {:?} with that digest is not a workspace descriptor of this bundle",
                    w.artifact_id
                ),
            );
        }
    }
    out
}

/// Bundle-level outcome rules: which verifier result the terminal state needs.
pub fn outcome_rules(m: &Manifest, verifiers: &[(usize, &VerifierResult)]) -> Vec<Issue> {
    let mut out = Vec::new();
    let observational = m.run.mode() == AssessmentMode::Observational;
    if observational {
        for (i, _) in verifiers {
            out.push(Issue::at(
                codes::validation::VERIFIER_IN_OBSERVATIONAL,
                MANIFEST,
                format!("/evidence/{i}"),
                "observational runs carry no verifier outcome",
            ));
        }
        return out;
    }
    let t = &m.terminal;
    // A missing or invalid terminal workspace is reported by the manifest
    // rules; judging verifiers against it would only repeat that.
    let terminal_ok = t.workspace_artifact_id.as_ref().is_some_and(|id| {
        m.evidence
            .iter()
            .any(|d| d.id == *id && d.kind == Kind::Workspace && d.is_retained())
    });
    let bound = |status: VerifierStatus| {
        verifiers.iter().any(|(_, v)| {
            v.status == status
                && v.workspace
                    .as_ref()
                    .is_some_and(|w| Some(&w.artifact_id) == t.workspace_artifact_id.as_ref())
        })
    };
    if t.state == TerminalState::Completed && t.workspace_artifact_id.is_some() && !terminal_ok {
        return out;
    }
    if t.state == TerminalState::Completed && !bound(VerifierStatus::Passed) {
        out.push(Issue::at(codes::validation::VERIFIER_OUTCOME_REQUIRED, MANIFEST, "/terminal", "a verified completed run needs a passed verifier result bound to the terminal workspace"));
    }
    if t.state == TerminalState::Failed
        && t.failure_class == FailureClass::Task
        && terminal_ok
        && !bound(VerifierStatus::Failed)
    {
        out.push(Issue::at(
            codes::validation::VERIFIER_OUTCOME_REQUIRED,
            MANIFEST,
            "/terminal",
            "a task failure needs a failed verifier result bound to the terminal workspace",
        ));
    }
    out
}

/// Rules of an in-bundle export manifest against the run manifest.
pub fn export_rules(m: &Manifest, e: &ExportManifest, file: &str) -> Vec<Issue> {
    let mut out = Vec::new();
    let mut add =
        |code, pointer: String, msg: String| out.push(Issue::at(code, file, pointer, msg));
    if e.bundle_id != m.bundle_id {
        add(
            codes::validation::EXPORT_BUNDLE_MISMATCH,
            "/bundleId".into(),
            format!(
                "export manifest is for {:?}, manifest is {:?}",
                e.bundle_id, m.bundle_id
            ),
        );
    }
    let mut seen = HashSet::new();
    for (i, id) in e.artifact_ids.iter().enumerate() {
        if !seen.insert(id) {
            add(
                codes::validation::DUPLICATE_ARTIFACT_ID,
                format!("/artifactIds/{i}"),
                format!("{id:?} listed twice"),
            );
        }
        match m.evidence.iter().find(|d| d.id == *id) {
            None => add(
                codes::validation::EXPORT_UNKNOWN_ARTIFACT,
                format!("/artifactIds/{i}"),
                format!("{id:?} is not an artifact of this bundle"),
            ),
            Some(d)
                if matches!(e.status.as_str(), "ready" | "exported")
                    && d.sharing_class != e.sharing_class =>
            {
                add(
                    codes::validation::EXPORT_CLASS_MISMATCH,
                    format!("/artifactIds/{i}"),
                    format!(
                        "a {} export lists {} artifact {id:?}: changing a class is not sanitizing",
                        e.sharing_class, d.sharing_class
                    ),
                )
            }
            Some(_) => {}
        }
    }
    if matches!(e.status.as_str(), "ready" | "exported") {
        let has_evidence = e.artifact_ids.iter().any(|id| {
            m.evidence
                .iter()
                .any(|d| d.id == *id && d.kind != Kind::ExportManifest)
        });
        if e.sharing_class == SharingClass::Unknown || !has_evidence {
            add(codes::validation::EXPORT_NOT_READY, "/status".into(), "a ready or exported manifest needs a known class and at least one evidence artifact".into());
        }
    }
    out
}
