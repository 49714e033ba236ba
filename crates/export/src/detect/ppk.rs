//! PuTTY private key files (`.ppk`, versions 2 and 3): the lines after
//! `Private-Lines: N` are the private key, base64 of at most 64
//! characters a line (encrypted or not). The public lines, the comment
//! and the MAC stay. Read over whole strings (`cat key.ppk` in a tool's
//! output) and batches of a text artifact's lines, as the other readers
//! of `across.rs` are.

use std::ops::Range;
use std::sync::LazyLock;

use memchr::memmem::Finder;

/// Rule id of a PuTTY key's private line.
pub const RULE: &str = "putty-private-key";

/// The header of the private lines.
const HEADER: &[u8] = b"Private-Lines:";

/// The most private lines a key has (an RSA key of 16,384 bits has 38).
const MAX_LINES: usize = 256;

/// The longest private line (PuTTY writes 64 characters).
const MAX_LINE: usize = 64;

static PRIVATE_LINES: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(HEADER));

/// Whether `s` (a string, or a line of text) may hold a key's private
/// lines or their header.
#[inline]
pub fn might_hold(s: &[u8]) -> bool {
    s.len() >= HEADER.len() && PRIVATE_LINES.find(s).is_some()
}

/// The span of each private line in `s`: the lines after a `Private-Lines:
/// N` header, as many as it says (at most [`MAX_LINES`]), while each is
/// base64 of at most [`MAX_LINE`] characters.
pub fn private_lines(s: &[u8], out: &mut Vec<Range<usize>>) {
    crate::detect::work::visit(s.len());
    for at in PRIVATE_LINES.find_iter(s) {
        // The header starts its line.
        if at > 0 && s[at - 1] != b'\n' {
            continue;
        }
        let Some(eol) = memchr::memchr(b'\n', &s[at..]).map(|i| at + i) else {
            continue;
        };
        let count = std::str::from_utf8(&s[at + HEADER.len()..eol])
            .ok()
            .and_then(|n| n.trim().parse::<usize>().ok())
            .unwrap_or(0)
            .min(MAX_LINES);
        let mut start = eol + 1;
        for _ in 0..count {
            let end =
                memchr::memchr(b'\n', &s[start.min(s.len())..]).map_or(s.len(), |i| start + i);
            let line_end = if end > start && s[end - 1] == b'\r' {
                end - 1
            } else {
                end
            };
            let line = &s[start.min(line_end)..line_end];
            let base64 = line
                .iter()
                .all(|c| c.is_ascii_alphanumeric() || b"+/=".contains(c));
            if line.is_empty() || line.len() > MAX_LINE || !base64 {
                break;
            }
            out.push(start..line_end);
            start = end + 1;
            if start > s.len() {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "PuTTY-User-Key-File-3: ssh-ed25519\r\nEncryption: none\r\nComment: ed25519-key-20241207\r\nPublic-Lines: 2\r\nAAAAC3NzaC1lZDI1NTE5AAAAIBq8l1ZmL3n2yQ0hW5uR7cT9vX4kJ2pD6sF1gH8aN\r\n0eM\r\nPrivate-Lines: 1\r\nAAAAIHk2Qm9xR3pLcTdWbTJOcDRYdzhUY0ZzNmpIMXlCZDVr\r\nPrivate-MAC: 4b1f0c9e2d7a8b3c6f5e1d0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c\r\n";

    fn found(s: &str) -> Vec<&str> {
        let mut out = Vec::new();
        private_lines(s.as_bytes(), &mut out);
        out.into_iter().map(|r| &s[r]).collect()
    }

    #[test]
    fn the_private_lines_go_and_the_rest_stays() {
        assert_eq!(
            found(KEY),
            ["AAAAIHk2Qm9xR3pLcTdWbTJOcDRYdzhUY0ZzNmpIMXlCZDVr"]
        );
        let unix = KEY.replace("\r\n", "\n");
        assert_eq!(
            found(&unix),
            ["AAAAIHk2Qm9xR3pLcTdWbTJOcDRYdzhUY0ZzNmpIMXlCZDVr"]
        );
        // Cut short: the lines there are taken.
        let two = "Private-Lines: 3\nAAAAgQDdx1\nQm9xR3pLcT";
        assert_eq!(found(two), ["AAAAgQDdx1", "Qm9xR3pLcT"]);
    }

    #[test]
    fn a_header_in_prose_or_a_line_that_is_no_base64_stops_it() {
        assert!(found("the Private-Lines: 2 field\nAAAA\nBBBB").is_empty());
        assert_eq!(found("Private-Lines: 2\nAAAA\nPrivate-MAC: 00"), ["AAAA"]);
        assert!(found("Private-Lines: x\nAAAA").is_empty());
    }
}
