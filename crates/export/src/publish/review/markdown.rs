//! The report as GitHub-flavoured Markdown.

use std::fmt::Write as _;

use super::residual::MAX_LISTED_PER_KIND;
use super::{RedactionReport, MAX_LISTED_PER_CLASS, SECTIONS};

/// `text` as an inline code span that shows it literally, even inside a
/// table cell: a fence longer than any backtick run in it, `|` escaped.
fn code(text: &str) -> String {
    if text.is_empty() {
        return String::new();
    }
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let body = text.replace('|', "\\|");
    let pad = if text.starts_with('`') || text.ends_with('`') || text.starts_with(' ') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{body}{pad}{fence}")
}

/// Renders the document.
pub fn render(r: &RedactionReport) -> String {
    let mut m = String::with_capacity(2048 + r.replacements.len() * 300);
    let c = &r.readback.checked;
    let _ = write!(
        m,
        "# Redaction report\n\nWhat this export replaced and removed, read back from the \
         exported files after they passed verification. Every context shown is exported text.\n\n\
         - Export bundle: {}\n- Sharing class: {}\n- Policy digest: `{}`\n\
         - Export manifest: `{}`\n- Source manifest: `{}`\n\n\
         **Read back: {}**: {} artifacts, {} bytes re-hashed, {} strings scanned, {} \
         placeholders accounted for, {} rules over every decoded view, {} literals; 0 findings.\n\n",
        code(&r.bundle_id),
        r.sharing_class,
        r.policy_digest,
        r.manifest_digest,
        r.source_manifest_digest,
        r.readback.status,
        c.artifacts,
        c.bytes,
        c.strings_scanned,
        c.placeholders,
        c.rules,
        c.literals
    );
    let _ = write!(
        m,
        "## By rule\n\n{} replacement(s) in all.\n\n| Class | Rule or kind | Count |\n|---|---|--:|\n",
        r.total
    );
    for t in &r.rules {
        let _ = writeln!(
            m,
            "| {} | {} | {} |",
            t.class.name(),
            code(&t.rule),
            t.count
        );
    }
    m.push_str("\n## By file\n\n| File | Replacements | By class | Transformations | Fields removed |\n|---|--:|---|---|---|\n");
    for f in &r.files {
        let [classes, transformations, removed] = f.count_cells(code);
        let _ = writeln!(
            m,
            "| {} | {} | {classes} | {transformations} | {removed} |",
            code(&f.file),
            f.replacements,
        );
    }
    exclusions(&mut m, r);
    replacements(&mut m, r);
    residual_risk(&mut m, r);
    m.push_str(
        "\n## Sign-off\n\nI reviewed the replacements, exclusions and residual risk above and approve this \
         export for its sharing class.\n\nReviewer: ____________________\n\nDate: ____________________\n",
    );
    m
}

fn exclusions(m: &mut String, r: &RedactionReport) {
    m.push_str("\n## Exclusions\n\n");
    if r.excluded_artifacts.is_empty() && r.excluded_records.is_empty() {
        m.push_str("Nothing was left out.\n");
        return;
    }
    m.push_str("| Artifact | What | Why |\n|---|---|---|\n");
    for [artifact, what, why] in r.exclusion_rows(code, |t| t.replace('|', "\\|")) {
        let _ = writeln!(m, "| {artifact} | {what} | {why} |");
    }
}

fn replacements(m: &mut String, r: &RedactionReport) {
    if r.listed < r.total {
        let _ = write!(
            m,
            "\n{} of {} replacements listed: at most {MAX_LISTED_PER_CLASS} per class; the counts above are complete.\n",
            r.listed, r.total
        );
    }
    for (title, classes, none) in SECTIONS {
        let _ = write!(m, "\n## {title}\n\n");
        let rows: Vec<_> = r.section(classes).collect();
        if rows.is_empty() {
            let _ = writeln!(m, "{none}");
            continue;
        }
        m.push_str("| # | File | Line | JSON pointer | Class | Rule or kind | Placeholder | Exported text around it |\n|--:|---|--:|---|---|---|---|---|\n");
        for (n, x) in rows {
            let around = format!("{}{}{}", x.before, x.placeholder, x.after);
            let _ = writeln!(
                m,
                "| {n} | {} | {} | {} | {} | {} | {} | {} |",
                code(&x.file),
                x.line.map(|l| l.to_string()).unwrap_or_default(),
                code(&x.pointer),
                x.class.name(),
                code(&x.rule),
                code(&x.placeholder),
                code(&around)
            );
        }
    }
}

fn residual_risk(m: &mut String, r: &RedactionReport) {
    let risk = &r.residual_risk;
    m.push_str("\n## Residual risk\n\nWhat stayed in the export and deserves a look before sign-off: addresses, internal host names, users at hosts, and made-up tokens kept on purpose. Each is shown as it stands in the export.\n\n");
    if risk.counts.is_empty() {
        m.push_str("Nothing of these kinds stayed.\n");
        return;
    }
    m.push_str("| Kind | Count |\n|---|--:|\n");
    for (kind, n) in &risk.counts {
        let _ = writeln!(m, "| {} | {n} |", kind.name());
    }
    let _ = write!(
        m,
        "\nAt most {MAX_LISTED_PER_KIND} listed per kind.\n\n| Kind | File | Line | JSON pointer | Item | Exported text around it |\n|---|---|--:|---|---|---|\n"
    );
    for x in &risk.listed {
        let around = format!("{}{}{}", x.before, x.text, x.after);
        let _ = writeln!(
            m,
            "| {} | {} | {} | {} | {} | {} |",
            x.kind.name(),
            code(&x.file),
            x.line.map(|l| l.to_string()).unwrap_or_default(),
            code(&x.pointer),
            code(&x.text),
            code(&around)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_spans_survive_backticks_and_pipes() {
        assert_eq!(code("a|b"), "`a\\|b`");
        assert_eq!(code("x `y` z"), "``x `y` z``");
        assert_eq!(code("`edge"), "`` `edge ``");
        assert_eq!(code(""), "");
    }
}
