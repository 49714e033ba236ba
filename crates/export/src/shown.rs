//! How a place is shown without what was found there. A JSON key can be
//! the secret itself (`{"ghp_…": 1}`), and every output that names where
//! a finding or an error is (scan text, JSON and SARIF, export and verify
//! issues, the redaction report) names it by its pointer: a token that
//! holds a finding is shown as [`masked_token`] instead.

use coffer_base::issue::Issue;
use coffer_base::json::escape_pointer_token;

/// How a pointer token that holds a finding is shown: `[masked:` and the
/// first 8 hex digits of its SHA-256, enough to tell two keys apart and
/// nothing a reader could use of the key itself.
pub fn masked_token(token: &str) -> String {
    let hex = coffer_base::digest::Digest::of(token.as_bytes()).hex();
    format!("[masked:{}]", &hex[..8])
}

/// Masks, in `issue`'s pointer, file and message, every pointer token
/// and path component for which `holds` is true (a token as it reads
/// unescaped). The message is rewritten wherever it repeats one, escaped
/// or not, as a parser's "duplicate key" message does.
pub fn mask_issue(issue: &mut Issue, holds: &dyn Fn(&str) -> bool) {
    let mut masked = Vec::new();
    if let Some(pointer) = issue.pointer.take() {
        let mut shown = String::with_capacity(pointer.len());
        for raw in pointer.split('/').skip(1) {
            let token = raw.replace("~1", "/").replace("~0", "~");
            shown.push('/');
            if holds(&token) {
                let m = masked_token(&token);
                shown.push_str(&m);
                masked.push((token, m));
            } else {
                shown.push_str(raw);
            }
        }
        issue.pointer = Some(shown);
    }
    if let Some(file) = issue.file.take() {
        let parts: Vec<String> = file
            .split('/')
            .map(|c| {
                if c.is_empty() || !holds(c) {
                    return c.to_string();
                }
                let m = masked_token(c);
                masked.push((c.to_string(), m.clone()));
                m
            })
            .collect();
        issue.file = Some(parts.join("/"));
    }
    if masked.is_empty() {
        return;
    }
    // Longest first, so a token that holds another is replaced whole.
    masked.sort_by_key(|(t, _)| std::cmp::Reverse(t.len()));
    for (token, m) in &masked {
        for form in [
            format!("{token:?}"),
            escape_pointer_token(token),
            token.clone(),
        ] {
            if !form.is_empty() {
                issue.message = issue.message.replace(&form, m);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_that_holds_a_finding_is_masked_in_pointer_and_message() {
        let secret = "ghp_abc/def~x";
        let escaped = escape_pointer_token(secret);
        let mut i = Issue::at(
            "validation.duplicate_key",
            "session.jsonl",
            format!("/3/env/{escaped}/v"),
            format!("session.jsonl#/3/env/{escaped}/v: duplicate key {secret:?}"),
        );
        mask_issue(&mut i, &|t| t.starts_with("ghp_"));
        let m = masked_token(secret);
        assert_eq!(i.pointer.as_deref(), Some(format!("/3/env/{m}/v").as_str()));
        assert!(!i.message.contains("ghp_"), "{}", i.message);
        assert!(
            i.message.ends_with(&format!("duplicate key {m}")),
            "{}",
            i.message
        );
        assert_eq!(m.len(), "[masked:]".len() + 8);
        assert_ne!(masked_token("a"), masked_token("b"));
    }

    #[test]
    fn a_file_name_that_holds_a_finding_is_masked() {
        let mut i = Issue::file("io.error", "evidence/ghp_x.log", "evidence/ghp_x.log: gone");
        mask_issue(&mut i, &|t| t.starts_with("ghp_"));
        let m = masked_token("ghp_x.log");
        assert_eq!(i.file.as_deref(), Some(format!("evidence/{m}").as_str()));
        assert_eq!(i.message, format!("evidence/{m}: gone"));
    }

    #[test]
    fn a_pointer_with_nothing_to_hide_is_left_alone() {
        let mut i = Issue::at("x.y", "f", "/a/0/b", "f#/a/0/b: m");
        let before = i.clone();
        mask_issue(&mut i, &|_| false);
        assert_eq!(i, before);
        let mut root = Issue::at("x.y", "f", "", "m");
        mask_issue(&mut root, &|_| true);
        assert_eq!(root.pointer.as_deref(), Some(""));
    }
}
