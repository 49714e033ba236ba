//! Secrets that show only across lines, read over a whole string (a
//! tool's output in a record) or over a batch of a text artifact's lines:
//! a Kubernetes Secret's data ([`crate::detect::kube`]), a Terraform
//! variable's default ([`crate::detect::hcl`]), a JSON Web Key's
//! private members ([`crate::detect::jwk`]) and a PuTTY key's private
//! lines ([`crate::detect::ppk`]). The readers' values are swept
//! everywhere, so the line-by-line rewrite of text needs none of them.

use std::ops::Range;

/// Rule ids of the readers here.
pub const RULES: [&str; 4] = [
    crate::detect::kube::RULE,
    crate::detect::hcl::RULE,
    crate::detect::jwk::RULE,
    crate::detect::ppk::RULE,
];

/// Whether `s` may hold anything the readers find (each reader's own
/// word search: one Aho-Corasick search for the four words cost 1.8%
/// more instructions on a 16 MiB export than the four memmem searches,
/// 2026-12-07; one packed search for two words cost more per call).
#[inline]
pub fn might_hold(s: &[u8]) -> bool {
    crate::detect::kube::might_hold(s)
        || crate::detect::hcl::might_hold(s)
        || crate::detect::jwk::might_hold(s)
        || crate::detect::ppk::might_hold(s)
}

/// Every value the readers find in `s`, with its rule id.
pub fn find(s: &[u8], out: &mut Vec<(Range<usize>, &'static str)>) {
    crate::detect::work::visit(s.len());
    let mut spans = Vec::new();
    if crate::detect::kube::might_hold(s) {
        crate::detect::kube::secret_values(s, &mut spans);
        out.extend(spans.drain(..).map(|r| (r, crate::detect::kube::RULE)));
    }
    if crate::detect::hcl::might_hold(s) {
        crate::detect::hcl::secret_defaults(s, &mut spans);
        out.extend(spans.drain(..).map(|r| (r, crate::detect::hcl::RULE)));
    }
    if crate::detect::jwk::might_hold(s) {
        crate::detect::jwk::private_values(s, &mut spans);
        out.extend(spans.drain(..).map(|r| (r, crate::detect::jwk::RULE)));
    }
    if crate::detect::ppk::might_hold(s) {
        crate::detect::ppk::private_lines(s, &mut spans);
        out.extend(spans.drain(..).map(|r| (r, crate::detect::ppk::RULE)));
    }
}

/// A value found across lines, in the line that holds it.
#[derive(Debug, PartialEq, Eq)]
pub struct InLine<'a> {
    /// The line's index among those given.
    pub index: usize,
    /// The line.
    pub line: &'a [u8],
    /// The value's span in it.
    pub span: Range<usize>,
    /// The reader's rule id.
    pub rule: &'static str,
}

/// What the readers find in consecutive lines of text (a batch of a
/// text artifact's lines, without their terminators): each value in its
/// line. In a `diff` the
/// lines are read from their content after their `+`, `-` or space
/// (headers read as blank lines). A block that a batch boundary cuts is
/// read in the parts each batch holds.
pub fn in_lines<'a>(lines: impl Iterator<Item = &'a [u8]> + Clone, diff: bool) -> Vec<InLine<'a>> {
    if !lines_might_hold(lines.clone()) {
        return Vec::new();
    }
    // Each line's start in `text`, and how much of it was skipped.
    let (mut text, mut starts, mut all) = (Vec::new(), Vec::new(), Vec::new());
    for l in lines {
        all.push(l);
        let skip = match l.first() {
            _ if !diff => 0,
            Some(b'+' | b'-') if l.starts_with(b"+++ ") || l.starts_with(b"--- ") => l.len(),
            Some(b'+' | b'-' | b' ') => 1,
            _ => l.len(),
        };
        starts.push((text.len(), skip));
        text.extend_from_slice(&l[skip..]);
        text.push(b'\n');
    }
    let mut found = Vec::new();
    find(&text, &mut found);
    found
        .into_iter()
        .filter_map(|(r, rule)| {
            let i = starts.partition_point(|(s, _)| *s <= r.start) - 1;
            let (start, skip) = starts[i];
            let line_end = starts.get(i + 1).map_or(text.len(), |(n, _)| n - 1);
            (r.end <= line_end).then(|| InLine {
                index: i,
                line: all[i],
                span: r.start - start + skip..r.end - start + skip,
                rule,
            })
        })
        .collect()
}

/// Whether the lines hold the words a reader needs: `kind` and
/// `secret` (on any lines), `variable`, `"kty"` or `Private-Lines:`.
fn lines_might_hold<'a>(lines: impl Iterator<Item = &'a [u8]>) -> bool {
    let (mut kind, mut secret) = (false, false);
    for l in lines {
        if crate::detect::hcl::mentions_variable(l)
            || crate::detect::jwk::mentions_kty(l)
            || crate::detect::ppk::might_hold(l)
        {
            return true;
        }
        kind = kind || crate::detect::kube::mentions_kind(l);
        secret = secret || crate::detect::kube::mentions_secret(l);
    }
    kind && secret
}

#[cfg(test)]
mod tests {
    use super::*;

    const PW: &str = "UyFCXCpkJHpEc2I9";

    #[test]
    fn lines_of_text_give_each_value_with_its_line_and_rule() {
        let text = format!("$ kubectl get secret db -o yaml\napiVersion: v1\ndata:\n  password: {PW}\nkind: Secret");
        let lines: Vec<&[u8]> = text.lines().map(str::as_bytes).collect();
        let found = |lines: &[&[u8]], diff| {
            in_lines(lines.iter().copied(), diff)
                .into_iter()
                .map(|f| (f.index, f.span, f.rule))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            found(&lines, false),
            [(3, 12..12 + PW.len(), crate::detect::kube::RULE)]
        );
        let plain: Vec<&[u8]> = vec![b"data:", b"  password: x"];
        assert_eq!(found(&plain, false), []);
        // A patch that adds a manifest and a variable: the spans are in
        // the patch's lines.
        let patch = format!("diff --git a/s.yaml b/s.yaml\n--- /dev/null\n+++ b/s.yaml\n@@ -0,0 +1,4 @@\n+apiVersion: v1\n+kind: Secret\n+data:\n+  extra: {PW}\n+variable \"api_token\" {{\n+  type    = string\n+  default = \"{PW}\"\n+}}");
        let lines: Vec<&[u8]> = patch.lines().map(str::as_bytes).collect();
        assert_eq!(
            found(&lines, true),
            [
                (7, 10..10 + PW.len(), crate::detect::kube::RULE),
                (10, 14..14 + PW.len(), crate::detect::hcl::RULE)
            ]
        );
        assert_eq!(found(&lines, false), []);
    }
}
