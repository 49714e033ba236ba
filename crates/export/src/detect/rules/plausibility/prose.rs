//! Prose and words: a value made of dictionary words or identifiers, as
//! opposed to the random characters of a credential.

use super::*;

/// `"doesnt start right"`, `"Foreign key constraint failed"`: three or
/// more words of letters, no digit or symbol, is prose, not a password.
/// So is a sentence of four words or more with its punctuation, a word
/// perhaps ending in a digit or two (`"OAuth2 token generation or refresh
/// error"`, `"It looks like you're running…\n\nThis is disabled…"`).
pub(crate) fn prose(value: &[u8]) -> bool {
    // A letter of any script: UTF-8's multi-byte sequences are all at or
    // above 0x80 (`For å bekrefte endringen, må vi …`).
    let letter = |c: u8| c.is_ascii_alphabetic() || c >= 0x80;
    if value.iter().filter(|c| **c == b' ').count() >= 2
        && value.iter().any(u8::is_ascii_lowercase)
        && value.iter().all(|c| letter(*c) || *c == b' ')
    {
        return true;
    }
    // (Four words need three blanks or escaped line ends.)
    if value
        .iter()
        .filter(|c| c.is_ascii_whitespace() || **c == b'\\')
        .count()
        < 3
    {
        return false;
    }
    let mut text = value.to_vec();
    for i in 0..text.len().saturating_sub(1) {
        if text[i] == b'\\' && matches!(text[i + 1], b'n' | b'r' | b't') {
            text[i] = b' ';
            text[i + 1] = b' ';
        }
    }
    let words: Vec<&[u8]> = text
        .split(u8::is_ascii_whitespace)
        .filter(|w| !w.is_empty())
        .collect();
    words.len() >= 4
        && value.iter().any(u8::is_ascii_lowercase)
        && words.iter().all(|w| {
            let w = w
                .strip_prefix(b"(")
                .or_else(|| w.strip_prefix(b"'"))
                .or_else(|| w.strip_prefix(b"`"))
                .unwrap_or(w);
            let end = w.len()
                - w.iter()
                    .rev()
                    .take_while(|c| b".,;:!?'\")`".contains(c))
                    .count();
            let w = &w[..end];
            // A word, perhaps ending in a digit or two; or a small number
            // (`minst 6 tegn`).
            let number = w.len() <= 2 && w.iter().all(u8::is_ascii_digit);
            number
                || !w.is_empty()
                    && letter(w[0])
                    && w.iter().filter(|c| c.is_ascii_digit()).count() <= 2
                    && w.iter()
                        .all(|c| letter(*c) || c.is_ascii_digit() || b"'-".contains(c))
        })
}

/// `project-cache-v5-`, `aws_sse_customer_key_base64`, `X-Goog-Signature`,
/// `Software\Python\PythonCore\{sys_version}`: two or more parts split
/// by `-`, `_`, `.`, `/`, `\`, `{`, `}` or `:` (`webpages:Enabled`), each a word (letters in one
/// case, capitalized, or in capitalized humps, then perhaps digits:
/// `base64`, `PythonCore`) or at most three characters. A random token's
/// parts mix cases.
pub(crate) fn words_name(v: &[u8]) -> bool {
    let parts = parts(v, b"-_./\\{}:");
    parts.len() >= 2
        && parts.iter().all(|p| {
            // Capitalized humps of two lower-case letters or more
            // (`PythonCore`, `owningService`); random tokens break that
            // almost at once.
            let one_case_word = word_then_digits(p).is_some_and(|w| {
                !w.is_empty()
                    && (w[1..].iter().all(u8::is_ascii_lowercase)
                        || w.iter().all(u8::is_ascii_uppercase)
                        || camel_word(w)
                        || lower_camel_word(w))
            });
            one_case_word || (p.len() <= 3 && p.iter().all(u8::is_ascii_alphanumeric))
        })
}

/// A label that is one secret word and nothing else (`auth`, `--token`,
/// `Password`), not a setting's own name (`ASANA_TOKEN`).
pub(crate) fn bare_label(name: &[u8]) -> bool {
    let n = crate::detect::names::normalize(&String::from_utf8_lossy(name));
    [
        "auth",
        "token",
        "key",
        "secret",
        "pass",
        "password",
        "passwd",
        "pwd",
        "pw",
        "credential",
        "credentials",
    ]
    .contains(&n.as_str())
}

/// Three or more words of lower-case letters (any script) joined by `-`
/// or `_`: `votre-clé-va-ici`, `not_a_real_token`.
pub(crate) fn lowercase_phrase(v: &[u8]) -> bool {
    let Ok(s) = std::str::from_utf8(v) else {
        return false;
    };
    let words: Vec<&str> = s.split(['-', '_']).collect();
    words.len() >= 3
        && words
            .iter()
            .all(|w| !w.is_empty() && w.chars().all(|c| c.is_alphabetic() && c.is_lowercase()))
}

/// The lower-cased words of an identifier, split at `_`, `-`, `.` and
/// case humps (`AWSAccessKeyId`: aws, access, key, id; `PKCS7KeyTypes`:
/// pkcs7, key, types); `None` when it holds anything else.
pub(crate) fn letter_words(v: &[u8]) -> Option<Vec<String>> {
    if v.is_empty()
        || !v
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || b"_-.".contains(c))
    {
        return None;
    }
    let mut words = Vec::new();
    for part in v.split(|c| b"_-.".contains(c)).filter(|p| !p.is_empty()) {
        let mut start = 0;
        for i in 1..part.len() {
            let (prev, cur) = (part[i - 1], part[i]);
            let next_lower = part.get(i + 1).is_some_and(u8::is_ascii_lowercase);
            if cur.is_ascii_uppercase() && (prev.is_ascii_lowercase() || next_lower) {
                words.push(part[start..i].to_ascii_lowercase());
                start = i;
            }
        }
        words.push(part[start..].to_ascii_lowercase());
    }
    Some(
        words
            .into_iter()
            .map(|w| String::from_utf8(w).expect("ASCII"))
            .collect(),
    )
}

/// One word of letters, its first perhaps capitalized (`Updated`,
/// `token`).
pub(crate) fn plain_word(w: &[u8]) -> bool {
    w.first().is_some_and(u8::is_ascii_alphabetic) && w[1..].iter().all(u8::is_ascii_lowercase)
}

/// Words that name a secret in a value made of words (`aws_access_key_id`,
/// `no-password-required`, `api_token`).
pub(crate) const SECRET_WORDS: &[&str] = &[
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "credential",
    "credentials",
    "auth",
];

/// A value of words, not random: a name made of words, a short run of
/// letters, or an upper-case word and perhaps digits (`static-token`,
/// `STRINGS`, `MYTOKEN1`). A long run of letters may be a key
/// (`?key=seugeupfknprstoe`).
pub(crate) fn word_like(value: &[u8]) -> bool {
    let upper = value.iter().take_while(|c| c.is_ascii_uppercase()).count();
    // (`'Authorization'`: one capitalized word, any length.)
    let capitalized = value.len() > 1
        && value[0].is_ascii_uppercase()
        && value[1..].iter().all(u8::is_ascii_lowercase);
    words_name(value)
        || capitalized
        || (value.len() <= 10 && value.iter().all(u8::is_ascii_alphabetic))
        || (upper >= 4 && value[upper..].iter().all(u8::is_ascii_digit))
}

/// The non-empty parts of `v` between any of the bytes `seps`.
fn parts<'v>(v: &'v [u8], seps: &[u8]) -> Vec<&'v [u8]> {
    v.split(|c| seps.contains(c))
        .filter(|p| !p.is_empty())
        .collect()
}

/// `0010_alter_group_name_max_length`, `v2-final-build`: parts split by
/// `-`, `_` or `.`, each digits alone or letters in one case (perhaps
/// capitalized). A random token's parts mix letters and digits or cases.
pub(crate) fn plain_parts(v: &[u8]) -> bool {
    let parts = parts(v, b"-_.");
    parts.len() >= 2
        && parts.iter().all(|p| {
            p.iter().all(u8::is_ascii_digit)
                || p.iter().all(u8::is_ascii_lowercase)
                || p.iter().all(u8::is_ascii_uppercase)
                || (p[0].is_ascii_uppercase() && p[1..].iter().all(u8::is_ascii_lowercase))
        })
}

/// Lower case, upper case and digits all in `v`, as in a random token.
pub(crate) fn cases_and_digits(v: &[u8]) -> bool {
    v.iter().any(u8::is_ascii_lowercase)
        && v.iter().any(u8::is_ascii_uppercase)
        && v.iter().any(u8::is_ascii_digit)
}

/// `ConnectionString`: capitalized humps of two lower-case letters or more.
pub(crate) fn camel_word(w: &[u8]) -> bool {
    w.first().is_some_and(u8::is_ascii_uppercase)
        && w.split(u8::is_ascii_uppercase)
            .skip(1)
            .all(|h| h.len() >= 2 && h.iter().all(u8::is_ascii_lowercase))
}

/// `owningService`: a lower-case word of two letters or more, then
/// [`camel_word`]'s humps.
pub(crate) fn lower_camel_word(w: &[u8]) -> bool {
    let head = w.iter().take_while(|c| c.is_ascii_lowercase()).count();
    head >= 2 && head < w.len() && camel_word(&w[head..])
}

/// A run of eight letters or more whose case changes at least at every
/// other letter, or a run of sixteen or more in both cases that is
/// neither pronounceable nor an identifier. Identifiers change case once
/// a word (`getAccessToken`, `XMLHttpRequest`: 4 and 3 changes in 14
/// letters); a random token's case changes about every other letter, but
/// one drawn with few capitals (`DjayBenyJrtpvydFCzAphcqc`) is known by
/// its vowels instead: letters drawn at random hold one in five, the
/// words names are made of about two in five.
pub(crate) fn random_case(value: &[u8]) -> bool {
    value.split(|c| !c.is_ascii_alphabetic()).any(|run| {
        let flips = run
            .windows(2)
            .filter(|w| w[0].is_ascii_uppercase() != w[1].is_ascii_uppercase())
            .count();
        run.len() >= 8 && (flips * 2 >= run.len() || unpronounceable(run))
    })
}

/// Sixteen letters or more, in both cases, under one vowel in four, and
/// not split into words the way an identifier is.
fn unpronounceable(run: &[u8]) -> bool {
    let vowels = run.iter().filter(|c| b"aeiouAEIOU".contains(c)).count();
    run.len() >= 16
        && run.iter().any(u8::is_ascii_uppercase)
        && run.iter().any(u8::is_ascii_lowercase)
        && vowels * 4 < run.len()
        && !identifier(run)
}

/// `Crc64TestConfig`, `CRC64_REDIS`, `HttpClient2Factory`: an
/// identifier, whose letters run in words of three or more, each in one
/// case or capitalized, with four digits or fewer between them. A random value's
/// case and digits break it into many short pieces.
pub(crate) fn identifier(v: &[u8]) -> bool {
    // (`ABCD1234EFGH5678…`: digits all through are drawn, not named.)
    if v.iter().filter(|c| c.is_ascii_digit()).count() > 4 {
        return false;
    }
    let mut words = 0;
    for part in v.split(|c| b"_-.".contains(c)) {
        let mut i = 0;
        while i < part.len() {
            if part[i].is_ascii_digit() {
                let n = part[i..].iter().take_while(|c| c.is_ascii_digit()).count();
                if n > 4 {
                    return false;
                }
                i += n;
                continue;
            }
            // One word: a capital and lower case, or one case throughout
            // (an upper-case run gives its last capital to a following
            // capitalized word: `HTTPClient` is `HTTP`, `Client`).
            let upper = part[i..]
                .iter()
                .take_while(|c| c.is_ascii_uppercase())
                .count();
            let lower = part[i + upper..]
                .iter()
                .take_while(|c| c.is_ascii_lowercase())
                .count();
            let n = if upper > 1 && lower > 0 {
                upper - 1
            } else {
                upper + lower
            };
            if n < 3 || !part[i].is_ascii_alphabetic() {
                return false;
            }
            words += 1;
            i += n;
        }
    }
    words > 0
}

/// Names that are too generic to mean "secret" on their own.
pub(crate) fn weak_name(n: &str) -> bool {
    matches!(n, "key" | "pass" | "auth" | "dsn")
        || n.ends_with("pat")
        || (n.ends_with("key")
            && ![
                "apikey",
                "accesskey",
                "secretkey",
                "privatekey",
                "authkey",
                "signingkey",
            ]
            .iter()
            .any(|s| n.ends_with(s)))
}
