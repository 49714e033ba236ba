//! Visible truncation: a string cut at the policy's `maxStringBytes` ends
//! with a marker that says so, `…[TRUNCATED: 48213 bytes]`, so a reader
//! can tell a cut tool output from a short one. The marker stands inside
//! the limit; the number is how many bytes of the (scrubbed) string were
//! left out.
//!
//! EBO cuts silently. The marker is plain text a reader of EBO exports
//! sees as part of the string, so nothing there breaks; the count in the
//! export manifest (`truncated`) is the same on both sides.

/// What a cut string ends with, before its count.
pub const MARKER_HEAD: &str = "…[TRUNCATED: ";
/// What a cut string ends with, after its count.
pub const MARKER_TAIL: &str = " bytes]";

/// The marker for `n` bytes left out.
pub fn marker(n: usize) -> String {
    format!("{MARKER_HEAD}{n}{MARKER_TAIL}")
}

/// How many bytes the marker `s` ends with says were left out, and where
/// the marker starts; `None` when `s` does not end with one.
pub fn marked(s: &str) -> Option<(usize, usize)> {
    let body = s.strip_suffix(MARKER_TAIL)?;
    let digits = body.bytes().rev().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 20 {
        return None;
    }
    let head = &body[..body.len() - digits];
    let n = body[head.len()..].parse().ok()?;
    head.strip_suffix(MARKER_HEAD).map(|kept| (kept.len(), n))
}

/// `s` cut to at most `limit` bytes with its marker, at a character
/// boundary and never inside a placeholder (`[REDACTED_SECRET:…]`,
/// `[LOCAL_…]`, `[HOME]`, `[WORKSPACE]`), which would read as a forged
/// one. A limit too small for the marker keeps no text and the marker
/// alone, longer than the limit: a cut is never silent. `None` when `s`
/// fits.
pub fn cut(s: &str, limit: usize) -> Option<String> {
    if s.len() <= limit {
        return None;
    }
    // The count has at most as many digits as the whole length.
    let widest = MARKER_HEAD.len() + s.len().to_string().len() + MARKER_TAIL.len();
    let mut at = limit.saturating_sub(widest);
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    if let Some(open) = s[..at].rfind('[') {
        if !s[open..at].contains(']')
            && crate::detect::PLACEHOLDER_HEADS
                .iter()
                .any(|p| s[open..].starts_with(p))
        {
            at = open;
        }
    }
    Some(format!("{}{}", &s[..at], marker(s.len() - at)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_string_ends_with_its_marker_inside_the_limit() {
        let s = "x".repeat(1000);
        let t = cut(&s, 100).unwrap();
        assert!(t.len() <= 100, "{}", t.len());
        let (kept, n) = marked(&t).unwrap();
        assert_eq!(kept + n, 1000);
        assert_eq!(&t[..kept], &s[..kept]);
        assert!(cut(&s, 1000).is_none());
        let t = cut(&s, 999).unwrap();
        assert!(t.len() <= 999 && t.len() > 990, "{}", t.len());
    }

    #[test]
    fn the_cut_keeps_characters_and_placeholders_whole() {
        // 175 bytes: 25 of marker leave 75, which would split the é.
        let s = format!("{}é{}", "a".repeat(74), "b".repeat(99));
        let t = cut(&s, 100).unwrap();
        assert_eq!(marked(&t), Some((74, 101)));
        let p = "[REDACTED_SECRET:github-pat:0a1b2c3d]";
        let s = format!("{}{p}{}", "a".repeat(50), "b".repeat(100));
        let t = cut(&s, 100).unwrap();
        assert_eq!(marked(&t).unwrap().0, 50, "{t}");
        let s = format!("{}[HOME]/x{}", "a".repeat(73), "b".repeat(100));
        assert_eq!(marked(&cut(&s, 100).unwrap()).unwrap().0, 73);
    }

    #[test]
    fn a_limit_below_the_marker_keeps_the_marker_alone() {
        let t = cut("abcdefghijklmnop", 5).unwrap();
        assert_eq!(t, marker(16));
        assert_eq!(marked(&t), Some((0, 16)));
    }

    #[test]
    fn only_a_whole_marker_at_the_end_counts() {
        assert_eq!(marked("ab…[TRUNCATED: 12 bytes]"), Some((2, 12)));
        assert_eq!(marked("ab[TRUNCATED: 12 bytes]"), None);
        assert_eq!(marked("…[TRUNCATED:  bytes]"), None);
        assert_eq!(marked("…[TRUNCATED: 12 bytes] more"), None);
        assert_eq!(marked("…[TRUNCATED: 99999999999999999999999 bytes]"), None);
    }
}
