//! Terraform variables with a secret default, as a `variables.tf` in a
//! patch or a tool's output holds them:
//!
//! ```text
//! variable "db_password" {
//!   description = "…"
//!   type        = string
//!   default     = "2afd90c1e7b44c5e9a1d0f3b"
//! }
//! ```
//!
//! The value is lines away from the name that makes it a secret, so no
//! line (and no pair of lines) shows both. The variable's name is judged
//! as an assignment's (`db_password` is secret-named, `log_level` is not)
//! and its default as an assignment's value.

use std::ops::Range;
use std::sync::LazyLock;

use memchr::memmem::Finder;

/// Rule id of a secret-named variable's default.
pub const RULE: &str = "terraform-variable-default";

/// Shorter text cannot hold a variable, a secret name and a default.
const MIN_TEXT: usize = 24;
/// The most bytes a variable's block is read for. Blocks are read one
/// after another, never again from inside one, so a text is read about
/// once however many `variable`s it holds.
const MAX_BLOCK: usize = 16 << 10;

static VARIABLE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"variable"));

/// Whether `s` may hold such a variable: the cheap test before
/// [`secret_defaults`].
#[inline]
pub fn might_hold(s: &[u8]) -> bool {
    s.len() >= MIN_TEXT && mentions_variable(s)
}

/// Whether `s` says `variable` (a block's first line may be short).
pub fn mentions_variable(s: &[u8]) -> bool {
    VARIABLE.find(s).is_some()
}

/// The spans of the defaults of secret-named variables in `s`.
pub fn secret_defaults(s: &[u8], out: &mut Vec<Range<usize>>) {
    let mut read_to = 0;
    for at in VARIABLE.find_iter(s) {
        if at < read_to {
            continue;
        }
        // `variable` starts its line.
        let line_start = memchr::memrchr(b'\n', &s[..at]).map_or(0, |i| i + 1);
        if !s[line_start..at].iter().all(|c| matches!(c, b' ' | b'\t')) {
            continue;
        }
        let Some((name, open)) = header(s, at + b"variable".len()) else {
            continue;
        };
        let n = crate::detect::names::normalize(&String::from_utf8_lossy(&s[name.clone()]));
        if !crate::detect::names::is_secret_name(&n, &[]) {
            continue;
        }
        let (default, end) = default_in_block(s, open + 1);
        read_to = end;
        if let Some(v) = default {
            let value = &s[v.clone()];
            if !(value.len() < 4
                || crate::detect::rules::is_placeholder(value)
                || crate::detect::rules::typed_filler(value)
                || value.windows(2).any(|w| w == b"${")
                || !crate::detect::rules::assignment_value_ok(&s[name], value, true))
            {
                out.push(v);
            }
        }
    }
}

/// After `variable`: blanks, `"name"`, blanks, `{`; the name's span and
/// the brace's offset.
fn header(s: &[u8], mut i: usize) -> Option<(Range<usize>, usize)> {
    let blanks = |s: &[u8], mut i: usize| {
        while s.get(i).is_some_and(|c| matches!(c, b' ' | b'\t')) {
            i += 1;
        }
        i
    };
    i = blanks(s, i);
    if s.get(i) != Some(&b'"') {
        return None;
    }
    let close = i + 1 + memchr::memchr(b'"', &s[i + 1..])?;
    let name = i + 1..close;
    if name.is_empty()
        || s[name.clone()]
            .iter()
            .any(|c| !(c.is_ascii_alphanumeric() || b"_-".contains(c)))
    {
        return None;
    }
    let open = blanks(s, close + 1);
    (s.get(open) == Some(&b'{')).then_some((name, open))
}

/// In a block starting at `from` (after its `{`): the quoted value of a
/// `default = "…"` at the block's own depth, up to the brace that closes
/// it; and where the reading stopped.
fn default_in_block(s: &[u8], from: usize) -> (Option<Range<usize>>, usize) {
    let end = s.len().min(from + MAX_BLOCK);
    let mut depth = 1usize;
    let mut i = from;
    // At the start of a line's content (or right after the `{`).
    let mut line_start = true;
    while i < end {
        let c = s[i];
        if line_start && depth == 1 && s[i..end].starts_with(b"default") {
            let mut j = i + b"default".len();
            while j < end && matches!(s[j], b' ' | b'\t') {
                j += 1;
            }
            if s.get(j) == Some(&b'=') {
                j += 1;
                while j < end && matches!(s[j], b' ' | b'\t') {
                    j += 1;
                }
                if s.get(j) == Some(&b'"') {
                    let v = j + 1;
                    return match memchr::memchr2(b'"', b'\n', &s[v..end]) {
                        Some(n) if s[v + n] == b'"' => (Some(v..v + n), v + n),
                        _ => (None, v),
                    };
                }
            }
        }
        match c {
            b'"' => {
                // A string: skipped whole (escapes included), on its line.
                i += 1;
                while i < end && s[i] != b'"' && s[i] != b'\n' {
                    i += if s[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'#' => {
                // A comment runs to the line's end.
                while i < end && s[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return (None, i);
                }
            }
            _ => {}
        }
        line_start = if c == b'\n' {
            true
        } else {
            line_start && matches!(c, b' ' | b'\t' | b'{')
        };
        i += 1;
    }
    (None, end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(s: &str) -> Vec<&str> {
        let mut out = Vec::new();
        secret_defaults(s.as_bytes(), &mut out);
        out.into_iter().map(|r| &s[r]).collect()
    }

    const V: &str = "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHznB";

    #[test]
    fn a_secret_named_variables_default_is_found_lines_from_its_name() {
        let s = format!(
            "variable \"db_password\" {{\n  description = \"The {{password}} of the DB\"\n  type        = string\n  # default = \"old\"\n  default     = \"{V}\"\n  sensitive   = true\n}}\n"
        );
        assert_eq!(found(&s), [V]);
        let okta = "variable \"corp_okta_api_token\" {\n  default = \"004EWTpRQT_HJtG_nL-agxacgzYHjxPcF99kJsFzWg\"\n}\n";
        assert_eq!(found(okta), ["004EWTpRQT_HJtG_nL-agxacgzYHjxPcF99kJsFzWg"]);
        let one_line = format!("  variable \"api_key\" {{ default = \"{V}\" }}");
        assert_eq!(found(&one_line), [V]);
    }

    #[test]
    fn many_unclosed_blocks_are_read_about_once() {
        // Each header would read 16 KiB on its own: 2 GiB in all.
        let s = "variable \"api_token\" {\n".repeat(130_000);
        assert_eq!(found(&s), Vec::<&str>::new());
        let s = format!("variable \"db_password\" {{\n  default = \"{V}\"\n}}\n{s}");
        assert_eq!(found(&s), [V]);
    }

    #[test]
    fn other_variables_references_and_nested_defaults_stay() {
        for s in [
            format!("variable \"log_level\" {{\n  default = \"{V}\"\n}}\n"),
            "variable \"db_password\" {\n  default = \"${var.fallback}\"\n}\n".to_string(),
            "variable \"db_password\" {\n  default = \"changeme\"\n}\n".to_string(),
            "variable \"api_token\" {\n  type = string\n}\noutput \"x\" {\n  default = \"Zf3D0LXCM3EIMbgJpUNnkRtOfOueHznB\"\n}\n".to_string(),
            format!("variable \"db_password\" {{\n  validation {{\n    default = \"{V}\"\n  }}\n}}\n"),
            format!("# variable \"db_password\" {{ default = \"{V}\" }}"),
            format!("the variable \"db_password\" {{\n  default = \"{V}\"\n}}\n"),
        ] {
            assert_eq!(found(&s), Vec::<&str>::new(), "{s}");
        }
    }
}
