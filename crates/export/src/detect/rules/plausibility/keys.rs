//! Key material by its structure: a private key's body, a JWT's header,
//! `Basic` credentials, a connection string's password.

use super::*;

/// Whether a private-key block holds a key: a block that ends in this
/// string needs a base64 run of 24 or more characters, not filler (eight
/// distinct characters at least; markers such as `EXAMPLE` do not count
/// here, a key's body is long enough to hold any), between its markers (`…KEY-----\nXXXX\nXXXX\n-----END…` and
/// `…\nanything\n…` are documentation). A block whose END lies on a later
/// line (a PEM file read line by line) counts from its BEGIN line.
pub(crate) fn key_body(block: &[u8]) -> bool {
    let Some(end) = block.windows(8).rposition(|w| w == b"-----END") else {
        // No END here: the BEGIN line of a block read line by line, or a
        // block cut short, ends at its marker or goes on with a body or
        // header line (or an escaped line end); `r"-----BEGIN PRIVATE
        // KEY-----");`, a pattern in code, goes on with punctuation.
        let marker_end = block
            .windows(5)
            .skip(5)
            .position(|w| w == b"-----")
            .map_or(block.len(), |i| i + 10);
        let rest = block[marker_end..].trim_ascii_start();
        // `'…KEY-----\nXXXXXXXXXXX...'`, `…KEY-----\nMIIEow…...`: filler
        // or a body cut short with an ellipsis is documentation.
        let mut body = rest;
        while let Some(r) = body
            .strip_prefix(br"\n")
            .or_else(|| body.strip_prefix(br"\r"))
        {
            body = r.trim_ascii_start();
        }
        let run = body
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || b"+/=".contains(c))
            .count();
        if run > 0 {
            let cut = body[run..].starts_with(b"...") || body[run..].starts_with("…".as_bytes());
            if cut || (run >= 4 && distinct_bytes(&body[..run]) <= 2) {
                return false;
            }
        }
        return match rest.first() {
            None => true,
            // A literal that closes on the marker: a key when it is
            // joined to the next (`"…KEY-----" +`), not when a call or a
            // statement ends there (`r"…KEY-----");`).
            Some(b'"' | b'\'' | b'`') => {
                let tail = rest[1..].trim_ascii_start();
                tail.is_empty() || b"+.&\\".contains(&tail[0])
            }
            Some(c) => c.is_ascii_alphanumeric() || b"+/\\".contains(c),
        };
    };
    let start = block
        .windows(16)
        .position(|w| w == b"PRIVATE KEY-----")
        .map_or(0, |i| i + 16);
    let inside = &block[start.min(end)..end];
    // Cut short and marked so (`…cUDqmxiieR. -----END`): a scanner's
    // suite shortens keys too, but without the mark, and counts them.
    let marked = inside.contains(&b'.') || memchr::memmem::find(inside, "…".as_bytes()).is_some();
    if marked && der_cut_short(inside) {
        return false;
    }
    inside
        .split(|c| !(c.is_ascii_alphanumeric() || b"+/=".contains(c)))
        .any(|run| run.len() >= 24 && distinct_bytes(run) >= 8)
}

/// How many different bytes `v` holds.
pub(crate) fn distinct_bytes(v: &[u8]) -> usize {
    let mut seen = [false; 256];
    v.iter().for_each(|c| seen[usize::from(*c)] = true);
    seen.iter().filter(|s| **s).count()
}

/// Whether the base64 between a block's markers is a DER SEQUENCE (as
/// PKCS #1, PKCS #8 and SEC 1 keys are) whose header claims at least
/// twice the bytes the block holds: a key cut short (documentation's
/// `MIIEpQIBAAKCAQEAuyf/…(64 characters). -----END…`, where a real
/// 2048-bit key runs to about 1,600).
pub(crate) fn der_cut_short(inside: &[u8]) -> bool {
    use base64::Engine;
    let b64: Vec<u8> = inside
        .iter()
        .copied()
        .filter(|c| c.is_ascii_alphanumeric() || b"+/=".contains(c))
        .collect();
    let Some(head) = b64.get(..8) else {
        return false;
    };
    let Ok(h) = base64::engine::general_purpose::STANDARD.decode(head) else {
        return false;
    };
    let claimed = match h[..] {
        [0x30, 0x81, n, ..] => usize::from(n) + 3,
        [0x30, 0x82, a, b, ..] => (usize::from(a) << 8 | usize::from(b)) + 4,
        _ => return false,
    };
    b64.len() * 3 / 4 * 2 < claimed
}

/// Base64 DER whose outer SEQUENCE opens with another SEQUENCE: a
/// SubjectPublicKeyInfo (`MFkwEwYHKoZIzj0CAQ…`, `MIIBIjANBgkqhkiG9w0B…`)
/// or a certificate, public material. A private key's (PKCS #1, #8, SEC 1)
/// opens with its INTEGER version.
pub(crate) fn public_der(v: &[u8]) -> bool {
    use base64::Engine;
    let Some(head) = v.get(..16) else {
        return false;
    };
    let Ok(b) = base64::engine::general_purpose::STANDARD.decode(head) else {
        return false;
    };
    let inner = match b.get(1) {
        Some(n) if *n < 0x80 => 2,
        Some(0x81) => 3,
        Some(0x82) => 4,
        Some(0x83) => 5,
        _ => return false,
    };
    b[0] == 0x30 && b.get(inner) == Some(&0x30)
}

/// Whether a JWT's first segment decodes (base64url) to a JSON object.
pub(crate) fn jwt_header(v: &[u8]) -> bool {
    use base64::Engine;
    let head = v.split(|c| *c == b'.').next().unwrap_or(b"");
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(head.trim_ascii_end())
        .ok()
        .and_then(|d| serde_json::from_slice::<serde_json::Value>(&d).ok())
        .is_some_and(|j| j.is_object())
}

pub(crate) fn decodes_to_user_password(v: &[u8]) -> bool {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(v)
        .ok()
        .and_then(|d| String::from_utf8(d).ok())
        .is_some_and(|s| s.contains(':') && s.chars().all(|c| !c.is_control()) && s.len() >= 3)
}

/// For a connection string of `key=value;` fields (ADO.NET, ODBC, Azure
/// Storage), whether a credential field (`Password`, `Pwd`, `AccountKey`,
/// `SharedAccessKey`, …) holds a literal that is not a placeholder;
/// `None` for any other value.
pub(crate) fn connection_credential(v: &[u8]) -> Option<bool> {
    let fields: Vec<&[u8]> = v
        .split(|c| *c == b';')
        .filter(|f| !f.trim_ascii().is_empty())
        .collect();
    if fields.len() < 2 || !fields.iter().all(|f| f.contains(&b'=')) {
        return None;
    }
    const CREDENTIALS: &[&str] = &[
        "password",
        "pwd",
        "accountkey",
        "sharedaccesskey",
        "sharedaccesssignature",
        "clientsecret",
        "secret",
        "token",
        "apikey",
        "accesskey",
    ];
    Some(fields.iter().any(|f| {
        let eq = f.iter().position(|c| *c == b'=').expect("checked");
        let key: Vec<u8> = f[..eq]
            .iter()
            .filter(|c| !c.is_ascii_whitespace())
            .map(u8::to_ascii_lowercase)
            .collect();
        let val = f[eq + 1..].trim_ascii();
        CREDENTIALS.iter().any(|k| key == k.as_bytes())
            && !val.is_empty()
            && !val.starts_with(b"{")
            && literal_part(val).is_some()
            && !is_placeholder(val)
    }))
}
