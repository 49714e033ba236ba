//! The report as one self-contained HTML page: inline style, no scripts,
//! nothing fetched, readable printed.

use std::fmt::Write as _;

use crate::view::esc;

use super::residual::MAX_LISTED_PER_KIND;
use super::{Class, RedactionReport, MAX_LISTED_PER_CLASS, SECTIONS};

const STYLE: &str = "
:root { color-scheme: light; --ink: #1f2328; --muted: #59636e; --line: #d1d9e0;
  --head: #f6f8fa; --ok: #1a7f37; --mark: #fff8c5; --red: #cf222e; --amber: #9a6700;
  --blue: #0969da; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1280px; padding: 24px 32px 48px; color: var(--ink);
  font: 14px/1.5 system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 32px 0 8px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
p.sub { color: var(--muted); margin: 0 0 16px; }
code, td.mono, .ctx { font: 12.5px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.verdict { display: flex; gap: 16px; align-items: center; margin: 16px 0; padding: 12px 16px;
  border: 1px solid var(--ok); border-radius: 6px; background: #dafbe1; }
.verdict strong { color: var(--ok); font-size: 16px; white-space: nowrap; }
table { border-collapse: collapse; width: 100%; margin: 8px 0; }
th, td { border: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: var(--head); font-weight: 600; position: sticky; top: 0; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tbody tr:nth-child(even) { background: #fafbfc; }
.ctx { white-space: pre-wrap; overflow-wrap: anywhere; }
mark { background: var(--mark); border: 1px solid #d4a72c; border-radius: 3px; padding: 0 2px; }
.class { font-weight: 600; white-space: nowrap; }
td.rule { white-space: nowrap; }
.k1 { color: var(--red); }
.k2 { color: var(--amber); }
.k3 { color: var(--blue); }
.note { color: var(--muted); }
.signoff { display: grid; grid-template-columns: max-content 320px; gap: 20px 12px; margin-top: 12px; }
.signoff span.blank { border-bottom: 1px solid var(--ink); min-height: 22px; }
@media print { th { position: static; } body { padding: 0; } }
";

/// A class cell, coloured by group (CSS class names stay free of words
/// such as "secret" that the final scan would read as a label).
fn class_cell(c: Class) -> String {
    let group = match c {
        Class::Secret => "k1",
        Class::Identity => "k3",
        _ => "k2",
    };
    format!("<td class=\"class {group}\">{}</td>", c.name())
}

/// Renders the page.
pub fn render(r: &RedactionReport) -> String {
    let mut h = String::with_capacity(4096 + r.replacements.len() * 400);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>Redaction report: {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        esc(&r.bundle_id)
    );
    header(&mut h, r);
    rules(&mut h, r);
    files(&mut h, r);
    exclusions(&mut h, r);
    replacements(&mut h, r);
    residual_risk(&mut h, r);
    signoff(&mut h);
    h.push_str("</body>\n</html>\n");
    h
}

fn header(h: &mut String, r: &RedactionReport) {
    let _ = write!(
        h,
        "<h1>Redaction report</h1>\n<p class=\"sub\">What this export replaced and removed, \
         read back from the exported files after they passed verification. Every context \
         shown is exported text.</p>\n<dl class=\"facts\">\n\
         <dt>Export bundle</dt><dd><code>{}</code></dd>\n\
         <dt>Sharing class</dt><dd>{}</dd>\n\
         <dt>Policy digest</dt><dd><code>{}</code></dd>\n\
         <dt>Export manifest</dt><dd><code>{}</code></dd>\n\
         <dt>Source manifest</dt><dd><code>{}</code></dd>\n</dl>\n",
        esc(&r.bundle_id),
        r.sharing_class,
        r.policy_digest,
        r.manifest_digest,
        r.source_manifest_digest
    );
    let c = &r.readback.checked;
    let _ = writeln!(
        h,
        "<div class=\"verdict\" id=\"verdict\"><strong>Read back: {}</strong><span>{} artifacts, \
         {} bytes re-hashed, {} strings scanned, {} placeholders accounted for, {} rules over \
         every decoded view, {} literals; 0 findings.</span></div>",
        r.readback.status,
        c.artifacts,
        c.bytes,
        c.strings_scanned,
        c.placeholders,
        c.rules,
        c.literals
    );
}

fn rules(h: &mut String, r: &RedactionReport) {
    let _ = write!(
        h,
        "<h2>By rule</h2>\n<p>{} replacement(s) in all.</p>\n<table id=\"rules\">\n\
         <thead><tr><th>Class</th><th>Rule or kind</th><th class=\"num\">Count</th></tr></thead>\n<tbody>\n",
        r.total
    );
    for t in &r.rules {
        let _ = writeln!(
            h,
            "<tr>{}<td class=\"mono\">{}</td><td class=\"num\">{}</td></tr>",
            class_cell(t.class),
            esc(&t.rule),
            t.count
        );
    }
    h.push_str("</tbody>\n</table>\n");
}

fn files(h: &mut String, r: &RedactionReport) {
    h.push_str(
        "<h2>By file</h2>\n<table id=\"files\">\n<thead><tr><th>File</th>\
         <th class=\"num\">Replacements</th><th>By class</th><th>Transformations</th>\
         <th>Fields removed</th></tr></thead>\n<tbody>\n",
    );
    for f in &r.files {
        let [classes, transformations, removed] =
            f.count_cells(|k| format!("<code>{}</code>", esc(k)));
        let _ = writeln!(
            h,
            "<tr><td class=\"mono\">{}</td><td class=\"num\">{}</td><td>{classes}</td><td>{}</td><td>{removed}</td></tr>",
            esc(&f.file),
            f.replacements,
            esc(&transformations),
        );
    }
    h.push_str("</tbody>\n</table>\n");
}

fn exclusions(h: &mut String, r: &RedactionReport) {
    h.push_str("<h2>Exclusions</h2>\n");
    if r.excluded_artifacts.is_empty() && r.excluded_records.is_empty() {
        h.push_str("<p class=\"note\">Nothing was left out.</p>\n");
        return;
    }
    h.push_str(
        "<table id=\"exclusions\">\n<thead><tr><th>Artifact</th><th>What</th><th>Why</th></tr></thead>\n<tbody>\n",
    );
    let code = |s: &str| format!("<code>{}</code>", esc(s));
    for [artifact, what, why] in r.exclusion_rows(code, esc) {
        let _ = writeln!(
            h,
            "<tr><td class=\"mono\">{artifact}</td><td>{what}</td><td>{why}</td></tr>"
        );
    }
    h.push_str("</tbody>\n</table>\n");
}

fn replacements(h: &mut String, r: &RedactionReport) {
    if r.listed < r.total {
        let _ = writeln!(
            h,
            "<p class=\"note\">{} of {} replacements listed: at most {MAX_LISTED_PER_CLASS} per class; \
             the counts above are complete.</p>",
            r.listed, r.total
        );
    }
    for (title, classes, none) in SECTIONS {
        let _ = writeln!(h, "<h2>{title}</h2>");
        let rows: Vec<_> = r.section(classes).collect();
        if rows.is_empty() {
            let _ = writeln!(h, "<p class=\"note\">{none}</p>");
            continue;
        }
        h.push_str(
            "<table class=\"replacements\">\n<thead><tr><th class=\"num\">#</th><th>File</th>\
             <th class=\"num\">Line</th><th>JSON pointer</th><th>Class</th><th>Rule or kind</th>\
             <th>Exported text (replacement marked)</th></tr></thead>\n<tbody>\n",
        );
        for (n, x) in rows {
            let _ = writeln!(
                h,
                "<tr class=\"replacement\"><td class=\"num\">{n}</td><td class=\"mono\">{}</td>\
                 <td class=\"num\">{}</td><td class=\"mono\">{}</td>{}<td class=\"mono rule\">{}</td>\
                 <td class=\"ctx\">{}<mark>{}</mark>{}</td></tr>",
                esc(&x.file),
                x.line.map(|l| l.to_string()).unwrap_or_default(),
                esc(&x.pointer),
                class_cell(x.class),
                esc(&x.rule),
                esc(&x.before),
                esc(&x.placeholder),
                esc(&x.after)
            );
        }
        h.push_str("</tbody>\n</table>\n");
    }
}

fn residual_risk(h: &mut String, r: &RedactionReport) {
    let risk = &r.residual_risk;
    h.push_str(
        "<h2>Residual risk</h2>\n<p class=\"sub\">What stayed in the export and deserves a look \
         before sign-off: addresses, internal host names, users at hosts, and made-up tokens \
         kept on purpose. Each is shown as it stands in the export.</p>\n",
    );
    if risk.counts.is_empty() {
        h.push_str("<p class=\"note\">Nothing of these kinds stayed.</p>\n");
        return;
    }
    h.push_str("<table id=\"residual-counts\">\n<thead><tr><th>Kind</th><th class=\"num\">Count</th></tr></thead>\n<tbody>\n");
    for (kind, n) in &risk.counts {
        let _ = writeln!(
            h,
            "<tr><td class=\"mono\">{}</td><td class=\"num\">{n}</td></tr>",
            kind.name()
        );
    }
    h.push_str("</tbody>\n</table>\n");
    let _ = writeln!(
        h,
        "<table id=\"residuals\">\n<thead><tr><th>Kind</th><th>File</th><th class=\"num\">Line</th>\
         <th>JSON pointer</th><th>Exported text (item marked; at most {MAX_LISTED_PER_KIND} per kind)</th></tr></thead>\n<tbody>"
    );
    for x in &risk.listed {
        let _ = writeln!(
            h,
            "<tr class=\"residual\"><td class=\"mono\">{}</td><td class=\"mono\">{}</td>\
             <td class=\"num\">{}</td><td class=\"mono\">{}</td>\
             <td class=\"ctx\">{}<mark>{}</mark>{}</td></tr>",
            x.kind.name(),
            esc(&x.file),
            x.line.map(|l| l.to_string()).unwrap_or_default(),
            esc(&x.pointer),
            esc(&x.before),
            esc(&x.text),
            esc(&x.after)
        );
    }
    h.push_str("</tbody>\n</table>\n");
}

fn signoff(h: &mut String) {
    h.push_str(
        "<h2>Sign-off</h2>\n<p>I reviewed the replacements, exclusions and residual risk above and approve \
         this export for its sharing class.</p>\n<div class=\"signoff\"><span>Reviewer</span>\
         <span class=\"blank\"></span><span>Date</span><span class=\"blank\"></span></div>\n",
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_exported_text_is_escaped() {
        assert_eq!(
            esc("<script>alert('x') & \"y\"</script>"),
            "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;"
        );
    }
}
