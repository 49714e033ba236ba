//! Decoded views of a string: where escapes and encodings hide credentials.
//!
//! A rule run on raw text misses a secret written as `\u0067hp_...`, as
//! `ghp%5F...` or inside a base64 blob. Each view decodes one layer and keeps
//! the way back: every decoded byte knows the span of original bytes it came
//! from, so a hit in a view becomes a span of the original string, which is
//! then redacted as a literal everywhere. A hit inside a base64 run maps to
//! the whole run: a secret inside a blob removes the blob.

use base64::Engine;

/// Shortest base64 run decoded (SCRUB.md: runs of 20 or more).
pub const MIN_BASE64_RUN: usize = 20;
/// How many layers of encoding are peeled (a view of a view).
pub const MAX_VIEW_DEPTH: usize = 2;

/// One decoded view.
#[derive(Debug, Clone)]
pub struct View {
    /// The decoded bytes.
    pub bytes: Vec<u8>,
    origin: Origin,
}

#[derive(Debug, Clone)]
enum Origin {
    /// Per decoded byte: the original span it came from.
    Map(Vec<(u32, u32)>),
    /// Every decoded byte came from this one original span.
    Whole(usize, usize),
}

impl View {
    /// The original span behind decoded bytes `start..end`.
    pub fn original_span(&self, start: usize, end: usize) -> (usize, usize) {
        match &self.origin {
            Origin::Whole(s, e) => (*s, *e),
            Origin::Map(m) => {
                if start >= end || end > m.len() {
                    return (0, 0);
                }
                (m[start].0 as usize, m[end - 1].1 as usize)
            }
        }
    }

    /// Re-bases a view of `inner` (itself a view of the original) onto the original.
    fn compose(&self, inner: View) -> View {
        let origin = match inner.origin {
            Origin::Whole(s, e) => {
                let (a, b) = self.original_span(s, e);
                Origin::Whole(a, b)
            }
            Origin::Map(m) => Origin::Map(
                m.iter()
                    .map(|(s, e)| {
                        let (a, b) = self.original_span(*s as usize, *e as usize);
                        (a as u32, b as u32)
                    })
                    .collect(),
            ),
        };
        View {
            bytes: inner.bytes,
            origin,
        }
    }
}

/// Every decoded view of `s` (not `s` itself), peeling up to
/// [`MAX_VIEW_DEPTH`] layers.
pub fn decoded_views(s: &[u8]) -> Vec<View> {
    let mut out = Vec::new();
    one_layer(s, &mut out);
    let mut frontier = 0;
    for _ in 1..MAX_VIEW_DEPTH {
        let end = out.len();
        for i in frontier..end {
            let mut inner = Vec::new();
            one_layer(&out[i].bytes.clone(), &mut inner);
            for v in inner {
                let composed = out[i].compose(v);
                out.push(composed);
            }
        }
        frontier = end;
    }
    out
}

fn one_layer(s: &[u8], out: &mut Vec<View>) {
    // One search for both escape bytes: most strings hold neither.
    if memchr::memchr2(b'\\', b'%', s).is_some() {
        if memchr::memchr(b'\\', s).is_some() {
            if let Some(v) = unescape(s) {
                out.push(v);
            }
        }
        if has_percent_escape(s) {
            out.push(percent_decode(s));
        }
    }
    base64_runs(s, out);
}

fn has_percent_escape(s: &[u8]) -> bool {
    memchr::memchr_iter(b'%', s).any(|i| {
        s.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
            && s.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
    })
}

fn hex_val(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => c - b'A' + 10,
    }
}

fn percent_decode(s: &[u8]) -> View {
    let mut bytes = Vec::with_capacity(s.len());
    let mut map = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'%'
            && i + 2 < s.len()
            && s[i + 1].is_ascii_hexdigit()
            && s[i + 2].is_ascii_hexdigit()
        {
            bytes.push(hex_val(s[i + 1]) << 4 | hex_val(s[i + 2]));
            map.push((i as u32, (i + 3) as u32));
            i += 3;
        } else {
            bytes.push(s[i]);
            map.push((i as u32, (i + 1) as u32));
            i += 1;
        }
    }
    View {
        bytes,
        origin: Origin::Map(map),
    }
}

/// JSON / JavaScript string escapes (`\n`, `\"`, `\uXXXX` with surrogate
/// pairs, `\xHH`); `None` when nothing was decoded.
fn unescape(s: &[u8]) -> Option<View> {
    let mut bytes = Vec::with_capacity(s.len());
    let mut map = Vec::with_capacity(s.len());
    let mut i = 0;
    let mut changed = false;
    let push = |bytes: &mut Vec<u8>, map: &mut Vec<(u32, u32)>, b: &[u8], a: usize, e: usize| {
        for x in b {
            bytes.push(*x);
            map.push((a as u32, e as u32));
        }
    };
    while i < s.len() {
        if s[i] != b'\\' || i + 1 >= s.len() {
            push(&mut bytes, &mut map, &s[i..i + 1], i, i + 1);
            i += 1;
            continue;
        }
        let simple = match s[i + 1] {
            b'n' => Some(b'\n'),
            b't' => Some(b'\t'),
            b'r' => Some(b'\r'),
            b'"' => Some(b'"'),
            b'\'' => Some(b'\''),
            b'\\' => Some(b'\\'),
            b'/' => Some(b'/'),
            b'b' => Some(8),
            b'f' => Some(12),
            _ => None,
        };
        if let Some(c) = simple {
            push(&mut bytes, &mut map, &[c], i, i + 2);
            i += 2;
            changed = true;
            continue;
        }
        let hex_at = |at: usize, n: usize| -> Option<u32> {
            let h = s.get(at..at + n)?;
            if !h.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            Some(h.iter().fold(0u32, |acc, c| acc << 4 | hex_val(*c) as u32))
        };
        if s[i + 1] == b'x' {
            if let Some(v) = hex_at(i + 2, 2) {
                push(&mut bytes, &mut map, &[v as u8], i, i + 4);
                i += 4;
                changed = true;
                continue;
            }
        }
        if s[i + 1] == b'u' {
            if let Some(hi) = hex_at(i + 2, 4) {
                let (cp, len) =
                    if (0xD800..0xDC00).contains(&hi) && s.get(i + 6..i + 8) == Some(b"\\u") {
                        match hex_at(i + 8, 4) {
                            Some(lo) if (0xDC00..0xE000).contains(&lo) => {
                                (0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00), 12)
                            }
                            _ => (0xFFFD, 6),
                        }
                    } else {
                        (hi, 6)
                    };
                let c = char::from_u32(cp).unwrap_or('\u{FFFD}');
                let mut buf = [0u8; 4];
                push(
                    &mut bytes,
                    &mut map,
                    c.encode_utf8(&mut buf).as_bytes(),
                    i,
                    i + len,
                );
                i += len;
                changed = true;
                continue;
            }
        }
        push(&mut bytes, &mut map, &s[i..i + 1], i, i + 1);
        i += 1;
    }
    changed.then_some(View {
        bytes,
        origin: Origin::Map(map),
    })
}

/// Base64 and base64url alphabet membership, by byte.
const B64: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || b == b'-' || b == b'_';
        c += 1;
    }
    t
};

fn is_b64(c: u8) -> bool {
    B64[c as usize]
}

/// Base64 / base64url runs of at least [`MIN_BASE64_RUN`] characters that
/// decode to UTF-8 text.
///
/// Any such run starting in `i..i + MIN` covers byte `i + MIN - 1`, so
/// that one byte is probed first and a miss skips the whole window: most
/// text is words and spaces, and this walk was a byte at a time before.
fn base64_runs(s: &[u8], out: &mut Vec<View>) {
    // No run crosses `i - 1 | i`: `i` is 0, or one of those two bytes is
    // outside the alphabet.
    let mut i = 0;
    while let Some(&probe) = s.get(i + MIN_BASE64_RUN - 1) {
        let at = i + MIN_BASE64_RUN - 1;
        if !is_b64(probe) {
            i = at + 1;
            continue;
        }
        let mut start = at;
        while start > i && is_b64(s[start - 1]) {
            start -= 1;
        }
        let mut run_end = at + 1;
        while run_end < s.len() && is_b64(s[run_end]) {
            run_end += 1;
        }
        let mut end = run_end;
        while end < s.len() && s[end] == b'=' && end - run_end < 2 {
            end += 1;
        }
        if run_end - start >= MIN_BASE64_RUN {
            if let Some(text) = decode_text(&s[start..run_end]) {
                out.push(View {
                    bytes: text,
                    origin: Origin::Whole(start, end),
                });
            }
        }
        i = end;
    }
}

fn decode_text(run: &[u8]) -> Option<Vec<u8>> {
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    // A length of 1 mod 4 is never valid base64: drop the stray character.
    let trimmed = if run.len() % 4 == 1 {
        &run[..run.len() - 1]
    } else {
        run
    };
    let engine = if trimmed.iter().any(|c| matches!(c, b'-' | b'_')) {
        URL_SAFE_NO_PAD
    } else {
        STANDARD_NO_PAD
    };
    if head_is_not_text(&engine, trimmed) {
        return None;
    }
    text_of(&engine, trimmed)
}

/// Whether the first six bytes `run` decodes to hold an invalid UTF-8
/// sequence. Most runs are ids and hashes, whose bytes are not text, and
/// [`text_of`] refuses any such run (the sequence is before byte 64), so
/// this spares decoding them whole.
fn head_is_not_text(engine: &base64::engine::GeneralPurpose, run: &[u8]) -> bool {
    const _: () = assert!(MIN_BASE64_RUN > 8);
    let mut head = [0u8; 6];
    engine.decode_slice(&run[..8], &mut head).is_ok()
        && std::str::from_utf8(&head).is_err_and(|e| e.error_len().is_some())
}

/// The text a base64 run decodes to, if it is text.
fn text_of(engine: &base64::engine::GeneralPurpose, trimmed: &[u8]) -> Option<Vec<u8>> {
    // A run cut short (a log line truncated inside a blob) ends in bits
    // that do not complete a byte: decode the whole quads before them.
    let whole = &trimmed[..trimmed.len() - trimmed.len() % 4];
    let d = engine
        .decode(trimmed)
        .or_else(|_| engine.decode(whole))
        .ok()?;
    // A stray invalid byte (a PEM damaged in transit) does not hide the
    // text around it; it counts against the text like a control byte. Only
    // after 64 good bytes: random bytes fail within a few, and reading
    // every opaque blob through would cost the export 3% of its CPU.
    let text = match std::str::from_utf8(&d) {
        Ok(t) => std::borrow::Cow::Borrowed(t),
        Err(e) if e.valid_up_to() >= 64 => String::from_utf8_lossy(&d),
        Err(_) => return None,
    };
    let printable = text
        .chars()
        .filter(|c| (!c.is_control() || matches!(c, '\n' | '\r' | '\t')) && *c != '\u{FFFD}')
        .count();
    (printable * 10 >= text.chars().count() * 9).then(|| text.into_owned().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(s: &str, needle: &str) -> Vec<(usize, usize)> {
        decoded_views(s.as_bytes())
            .iter()
            .filter_map(|v| {
                let pos = v
                    .bytes
                    .windows(needle.len())
                    .position(|w| w == needle.as_bytes())?;
                Some(v.original_span(pos, pos + needle.len()))
            })
            .collect()
    }

    #[test]
    fn unicode_escapes_map_back_to_their_source() {
        let s = r"x \u0067hp_abc\n y";
        let sp = spans(s, "ghp_abc");
        assert!(sp.contains(&(2, 14)), "{sp:?}");
        assert_eq!(&s[2..14], r"\u0067hp_abc");
        let pair = r"a\ud83d\ude00b";
        assert!(!spans(pair, "\u{1F600}").is_empty());
    }

    #[test]
    fn percent_and_partial_percent() {
        let s = "q=sk%2Dproj%2dAB&x";
        let sp = spans(s, "sk-proj-AB");
        assert!(sp.contains(&(2, 16)), "{sp:?}");
    }

    #[test]
    fn base64_maps_to_the_whole_run() {
        use base64::Engine;
        let blob = base64::engine::general_purpose::STANDARD.encode("token=supersecretvalue123");
        let s = format!("data {blob} end");
        let sp = spans(&s, "supersecretvalue123");
        assert_eq!(sp, vec![(5, 5 + blob.len())]);
        let url =
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("a?b>c~~~ secret-value-here!!");
        assert!(!spans(&url, "secret-value-here").is_empty());
    }

    #[test]
    fn a_blob_cut_short_is_decoded_up_to_its_last_whole_quad() {
        use base64::Engine;
        let blob = base64::engine::general_purpose::STANDARD
            .encode("-----BEGIN RSA PRIVATE KEY-----\nMIIEogIBAAKCAQEAoy1XXuVAQpqHbQ");
        // Cut where the last symbol's low bits are not zero.
        let cut = (blob.len() - 6..blob.len() - 1)
            .find(|n| n % 4 != 0 && decode_text_strict(&blob.as_bytes()[..*n]).is_none())
            .expect("some cut leaves stray bits");
        let s = format!("KEY_B64={}", &blob[..cut]);
        assert_eq!(spans(&s, "PRIVATE KEY"), vec![(8, 8 + cut)]);
        // One damaged byte inside does not hide the text around it; random
        // bytes stay opaque.
        let mut pem = b"-----BEGIN RSA PRIVATE KEY-----\nMIIEogIBAAKCAQEAoy1XXuVAQpqHbQE05mkhrNg/124F/2K9OanizZTZUUhK08U8".to_vec();
        pem[70] = 0xa1;
        let blob = base64::engine::general_purpose::STANDARD.encode(&pem);
        assert!(!spans(&format!("KEY_B64={blob}"), "PRIVATE KEY").is_empty());
        let noise: Vec<u8> = (0u32..96)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        let blob = base64::engine::general_purpose::STANDARD.encode(&noise);
        assert!(decoded_views(blob.as_bytes()).is_empty());
    }

    fn decode_text_strict(run: &[u8]) -> Option<Vec<u8>> {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD_NO_PAD
            .decode(run)
            .ok()
    }

    #[test]
    fn two_layers_percent_of_base64() {
        use base64::Engine;
        let blob = base64::engine::general_purpose::STANDARD.encode("password=abcdefghijkl");
        let enc = blob
            .replace('=', "%3D")
            .replace('+', "%2B")
            .replace('/', "%2F");
        let s = format!("v={enc}");
        assert!(!spans(&s, "abcdefghijkl").is_empty());
    }

    #[test]
    fn random_hex_is_not_text() {
        assert!(decoded_views(b"0123456789abcdef0123456789abcdef").is_empty());
    }

    /// Every maximal run, a byte at a time: what the probing walk must equal.
    fn runs_bytewise(s: &[u8]) -> Vec<(usize, usize, Vec<u8>)> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < s.len() {
            if !is_b64(s[i]) {
                i += 1;
                continue;
            }
            let start = i;
            while i < s.len() && is_b64(s[i]) {
                i += 1;
            }
            let mut end = i;
            while end < s.len() && s[end] == b'=' && end - i < 2 {
                end += 1;
            }
            if i - start >= MIN_BASE64_RUN {
                if let Some(text) = decode_text(&s[start..i]) {
                    out.push((start, end, text));
                }
            }
            i = end;
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn probing_finds_the_runs_a_bytewise_walk_finds(
            parts in proptest::collection::vec(
                proptest::sample::select(vec![
                    "a", "Q", "0", "+", "/", "-", "_", "=", " ", ".", "\n",
                    "c2stcHJvai1hYmNkZWZnaGlqa2xtbm9w", "Z2hwX3Rva2VuX3ZhbHVlXzEyMzQ1Ng==",
                    "aGVsbG8gd29ybGQgaGVsbG8gd29ybGQ", "word ", "abcdefghijklmnopqrs",
                ]),
                0..24,
            ),
        ) {
            let s = parts.concat();
            let mut views = Vec::new();
            base64_runs(s.as_bytes(), &mut views);
            let got: Vec<(usize, usize, Vec<u8>)> = views
                .into_iter()
                .map(|v| match v.origin {
                    Origin::Whole(a, b) => (a, b, v.bytes),
                    Origin::Map(_) => unreachable!("base64 views are whole"),
                })
                .collect();
            proptest::prop_assert_eq!(got, runs_bytewise(s.as_bytes()));
        }
    }

    use proptest::strategy::Strategy;

    proptest::proptest! {
        /// The head test refuses only runs that the whole decoding refuses:
        /// runs of encoded text (valid or damaged after some bytes) and of
        /// random bytes, in both alphabets, cut to any length.
        #[test]
        fn a_run_refused_by_its_head_is_refused_whole(
            bytes in proptest::prop_oneof![
                // Text, with characters of two and three bytes.
                "[a-z0-9 é€\n]{15,100}".prop_map(String::into_bytes),
                // Text whose bytes are damaged somewhere.
                ("[a-zé€ ]{15,100}", 0usize..200, proptest::num::u8::ANY).prop_map(
                    |(t, at, b)| {
                        let mut v = t.into_bytes();
                        let n = v.len();
                        v[at % n] = b;
                        v
                    }
                ),
                proptest::collection::vec(proptest::num::u8::ANY, 15..120),
            ],
            url in proptest::bool::ANY,
            cut in 0usize..3,
        ) {
            use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
            use base64::Engine;
            let engine = if url { URL_SAFE_NO_PAD } else { STANDARD_NO_PAD };
            let encoded = engine.encode(&bytes);
            let run = &encoded.as_bytes()[..encoded.len() - cut];
            let trimmed = if run.len() % 4 == 1 { &run[..run.len() - 1] } else { run };
            if head_is_not_text(&engine, trimmed) {
                proptest::prop_assert_eq!(text_of(&engine, trimmed), None);
            }
        }
    }
}
