//! Placeholders and filler: values a writer put where a credential goes
//! (`changeme`, `<your-token>`, `${VAR}`, runs of one character, marked
//! samples), which are not secrets and stay in an export.

use super::*;

/// For a value that references a variable, the offset of its literal part
/// (`${TOKEN:-literal}` → `literal`); `None` when it is only a reference.
pub(crate) fn literal_part(v: &[u8]) -> Option<usize> {
    if let Some(rest) = v.strip_prefix(b"${") {
        let name_len = rest
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
            .count();
        let after = &rest[name_len..];
        for op in [&b":-"[..], b":=", b"-", b"="] {
            if after.starts_with(op) {
                let off = 2 + name_len + op.len();
                let lit = &v[off..];
                let lit = lit.strip_suffix(b"}").unwrap_or(lit);
                return (!lit.is_empty()).then_some(off);
            }
        }
        return None;
    }
    // `"'$PRECOMPILE_PASSWORD'"`: shell quotes around a reference; and
    // `\$PASSWORD`, the dollar escaped for a shell the line is passed to.
    let v = &v[v.iter().take_while(|c| matches!(c, b'\'' | b'"')).count()..];
    let v = v.strip_prefix(b"\\$").map_or(v, |_| &v[1..]);
    let refs: &[&[u8]] = &[
        b"$",
        // A 1Password secret reference, read by `op run`.
        b"op://",
        b"process.env",
        b"os.environ",
        b"os.getenv",
        b"env(",
        b"ENV[",
        b"getenv(",
        b"System.getenv",
    ];
    if refs.iter().any(|r| v.starts_with(r)) {
        return None;
    }
    if v.len() > 2 && v[0] == b'%' && v[v.len() - 1] == b'%' {
        return None;
    }
    Some(0)
}

/// Values that stand for a secret without being one: a stand-in
/// (`stand_in`) or a constant's name in the value's place
/// (`password=DBPASSWORD`).
pub fn is_placeholder(v: &[u8]) -> bool {
    stand_in(v) || constant_in_place(v)
}

/// A value that says by its syntax or a documented marker that it stands
/// for another: `<name>`, `{{ … }}`, `${VAR}`, `%s`, `changeme`, `your_`,
/// `xxxx`, `null`. What a URL's password may be and still stay (see
/// `engine/value.rs`): a word there, even a constant's name, is replaced.
pub fn stand_in(v: &[u8]) -> bool {
    let lower = String::from_utf8_lossy(v).to_ascii_lowercase();
    let s = lower.trim_end_matches('}');
    s.is_empty()
        || PLACEHOLDER_MARKERS.iter().any(|m| s.contains(m))
        // `https://<DATABASE_NAME>.firebaseio.com`: a name in angle
        // brackets stands for what the reader fills in.
        || enclosed_name(
            v,
            b"<",
            |c| c.is_ascii_alphanumeric() || b"_-".contains(&c),
            b'>',
        )
        || one_case_filler(v)
        // Whole values only: a long random token holds `NOnE` or `tRuE`
        // now and then (an Entra refresh token did).
        || ["none", "null", "nil", "undefined", "true", "false"].contains(&s)
        || template(v, s)
        // `{password}`, `%s:%s`: a format string, filled in later.
        || format_only(v)
        || interpolated_call(v)
        || distinct_bytes(s.as_bytes()) <= 2
}

/// Text that marks a value as a stand-in wherever it occurs.
const PLACEHOLDER_MARKERS: &[&str] = &[
    "...",
    "changeme",
    "change_me",
    "change-me",
    "example",
    "your_",
    "your-",
    "yourtoken",
    "placeholder",
    "redacted",
    "****",
    "[redacted",
    "[local_",
    "[workspace]",
    "[home]",
    "dummy",
    "replace_me",
    "replaceme",
    // `REPLACE_WITH_PASSWORD`, `replace-with-your-key`.
    "replace_with",
    "replace-with",
    // Microsoft's SQL Server samples: `YourStrong@Passw0rd`.
    "yourstrong",
];

/// `password=DBPASSWORD`, `MY_API_TOKEN`: a constant's name in the value's
/// place, upper-case letters and `_` around a secret's word. (A key may
/// open with such a word: Finage's `API_KEY` and 32 random characters.)
fn constant_in_place(v: &[u8]) -> bool {
    v.iter().all(|c| c.is_ascii_uppercase() || *c == b'_')
        && ["PASSWORD", "PASSWD", "SECRET", "TOKEN", "APIKEY", "API_KEY"]
            .iter()
            .any(|w| v.len() <= w.len() + 8 && v.windows(w.len()).any(|x| x == w.as_bytes()))
}

/// `{_github_pat(name)}`, `{cfg.get("db", "pw")}`: one interpolated
/// expression with a call in it (a Python f-string's field) stands for the
/// value the code computes; no token is written this way.
fn interpolated_call(v: &[u8]) -> bool {
    let Some(inner) = v.strip_prefix(b"{").and_then(|r| r.strip_suffix(b"}")) else {
        return false;
    };
    let opens = inner.iter().position(|c| *c == b'(');
    inner
        .first()
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        && opens.is_some_and(|i| {
            inner[..i]
                .iter()
                .all(|c| c.is_ascii_alphanumeric() || b"_.".contains(c))
        })
        && inner.ends_with(b")")
        && !inner.contains(&b'{')
        && !inner.contains(&b'}')
}

/// Filler in one case (as in `typed_filler`): a random token holds a
/// mixed-case `XxXx` about once in 20,000. An example file ends a vendor's
/// prefix with three (`sk_test_xxx`, `ghp_xxx`), which a random token does
/// once in 200,000.
fn one_case_filler(v: &[u8]) -> bool {
    v.windows(4).any(|w| w == b"xxxx" || w == b"XXXX") || v.ends_with(b"xxx") || v.ends_with(b"XXX")
}

/// `<secret>`, `{{ secrets.TOKEN }}`: a template, not a value (a password
/// may well contain `<` or `{{` inside). So is a value that interpolates a
/// variable anywhere (`user}:${self:custom.db.password}` in a serverless
/// URL); `${VAR:-literal}` reaches here as its literal. Ruby's
/// `#{password}` and an HTML-escaped `&lt;YOUR_PASSWORD&gt;` are
/// templates too. (`s` is `v` in lower case, closing braces trimmed.)
fn template(v: &[u8], s: &str) -> bool {
    s.starts_with('<')
        || s.starts_with("{{")
        || s.starts_with("${{")
        || interpolates(v)
        || s.starts_with("#{")
        || (s.starts_with("&lt;") && s.ends_with("&gt;"))
}

/// Hexspeak filler: the whole value is made of words programmers write
/// where any hex will do (`deadbeef`, `cafebabe`, `0xDEADBEEF…`), which no
/// random token is.
pub(crate) fn hexspeak(lower: &str) -> bool {
    const WORDS: [&str; 10] = [
        "deadbeef", "cafebabe", "feedface", "deadc0de", "baadf00d", "8badf00d", "decafbad",
        "facefeed", "cafed00d", "defec8ed",
    ];
    let mut rest = lower.strip_prefix("0x").unwrap_or(lower);
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        match WORDS.iter().find(|w| rest.starts_with(*w)) {
            Some(w) => rest = &rest[w.len()..],
            None => return false,
        }
    }
    true
}

/// Whether `v` interpolates a variable somewhere (`${self:custom.db.password}`,
/// `${DB_HOST}`): `${`, a name (letters, digits, `_`, `.`, `:`, `-`), `}`
/// or the value's end; or holds a named format field ([`format_field`]).
/// (`m{{h}o)p${e]Q7…` is a password with `${` in it.)
pub(crate) fn interpolates(v: &[u8]) -> bool {
    format_field(v)
        || memchr::memmem::find_iter(v, b"${").any(|i| {
            let name = v[i + 2..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || b"_.:-".contains(c))
                .count();
            // (An unquoted value may end before the `}`.)
            name > 0 && matches!(v.get(i + 2 + name), Some(b'}') | None)
        })
}

/// Whether `v` holds a named format field, `{bucket}` or `{self.api_key}`,
/// as Python's `str.format` and f-strings, C#'s interpolated strings and
/// Rust's `format!` write them: `{`, a lower-case letter or `_`, at least
/// two more letters, `_` or `.` (no digits), `}`. A random token has no
/// braces, and a random password's braces seldom hold such a name
/// (`aX9{kL2}mQ7…` stays a value).
pub(crate) fn format_field(v: &[u8]) -> bool {
    memchr::memchr_iter(b'{', v).any(|i| {
        let rest = &v[i + 1..];
        let starts = rest
            .first()
            .is_some_and(|c| c.is_ascii_lowercase() || *c == b'_');
        let name = rest
            .iter()
            .take_while(|c| c.is_ascii_alphabetic() || b"_.".contains(c))
            .count();
        starts && name >= 3 && rest.get(name) == Some(&b'}')
    })
}

/// A format string with nothing but fields and punctuation: `{password}`,
/// `{0}:{1}`, `%s:%s`, `%(user)s`. A field names words or a position; a
/// token's random body mixes letters and digits.
pub(crate) fn format_only(v: &[u8]) -> bool {
    let (mut i, mut fields) = (0, 0);
    while i < v.len() {
        match v[i] {
            b'{' => {
                let Some(len) = v[i..].iter().position(|c| *c == b'}') else {
                    return false;
                };
                // (`{ password }`: spaces around the name, as templates
                // write it.)
                let inner = v[i + 1..i + len].trim_ascii();
                let named = inner
                    .iter()
                    .all(|c| c.is_ascii_alphabetic() || b"_.-".contains(c));
                if !(named || inner.iter().all(u8::is_ascii_digit)) {
                    return false;
                }
                fields += 1;
                i += len + 1;
            }
            b'%' => {
                let mut j = i + 1;
                if v.get(j) == Some(&b'(') {
                    match v[j..].iter().position(|c| *c == b')') {
                        Some(len) => j += len + 1,
                        None => return false,
                    }
                }
                while v.get(j).is_some_and(|c| b"-+ #0123456789.".contains(c)) {
                    j += 1;
                }
                if !v.get(j).is_some_and(u8::is_ascii_alphabetic) {
                    return false;
                }
                fields += 1;
                i = j + 1;
            }
            c if c.is_ascii_alphanumeric() => return false,
            _ => i += 1,
        }
    }
    fields > 0
}

/// Whether `v` is a Python format spec (`056d`, `>8`, `,.2f`): fill,
/// alignment, sign, width, grouping, precision and type characters only.
pub(crate) fn format_spec(v: &[u8]) -> bool {
    v.len() <= 12
        && v.iter()
            .all(|c| b"0123456789<>^=+- #,_.%bcdeEfFgGnosxX".contains(c))
}

/// Tokens that have a secret's shape but are made up: documentation
/// markers (`EXAMPLE`, `your_`, `_here`), filler (`ghp_xxxx…`, `0000…`,
/// at least half the value), runs and repeats, hex counting up, or an
/// ending in `here` (`…TokenHere`). (Ascending digits stay:
/// `12345678-ABCD-…` is how test suites write real shapes.)
pub fn typed_filler(v: &[u8]) -> bool {
    const MARKERS: &[&[u8]] = &[
        b"example",
        b"your_",
        b"your-",
        b"_here",
        b"placeholder",
        b"dummy",
        b"insert_",
        b"####",
        b"****",
    ];
    let lower = v.to_ascii_lowercase();
    if MARKERS
        .iter()
        .any(|m| lower.windows(m.len()).any(|w| w == *m))
    {
        return true;
    }
    // Filler is one case (`ghp_xxxx…`, `XXXX`); a random token holds a
    // mixed-case `XXxX` about once in 20,000 and stays a token. (`fake`
    // is no marker: random tokens spell it; the rule tests' generator
    // made `Q7CLzKQKcwHVfakeQ75m…`.)
    if v.windows(4).any(|w| w == b"xxxx" || w == b"XXXX") {
        return true;
    }
    // AWS's documentation marks its keys `…EXAMPLEKEY`; samples made from
    // them say `…SAMPLEKEY`. In capitals only: a password is often a word,
    // and `Sample%password12` is one.
    if v.windows(6).any(|w| w == b"SAMPLE") {
        return true;
    }
    if v.iter().filter(|c| b"xX0*#".contains(c)).count() * 2 >= v.len() || lower.ends_with(b"here")
    {
        return true;
    }
    // Half the value in runs of four or more of one character
    // (`sntryu_aaaa…`, `sgp_5555555dAAAAA7777777…`), or a tail that repeats
    // a unit of two to four (`GR1348941123123123…`): a random token has
    // neither. (This also drops `AKIAZZZZZZZZZZZZZZZZ` and
    // `AGE-SECRET-KEY-1QQQQ…`, which some scanners' suites count as keys.)
    let mut in_runs = 0;
    let mut i = 0;
    while i < v.len() {
        let n = v[i..].iter().take_while(|c| **c == v[i]).count();
        if n >= 4 {
            in_runs += n;
        }
        i += n;
    }
    if in_runs * 2 >= v.len() {
        return true;
    }
    // A tail of eight or more of one character
    // (`ghp_PersonalAccessToken01245678900000000`).
    if v.len() >= 16 && v.iter().rev().take_while(|c| **c == v[v.len() - 1]).count() >= 8 {
        return true;
    }
    if v.len() >= 12 {
        let tail = &v[v.len() - 12..];
        if (2..=4).any(|p| tail[p..].iter().zip(tail).all(|(a, b)| a == b))
            && tail.iter().any(|c| *c != tail[0])
        {
            return true;
        }
    }
    counts_bytes(v)
}

/// A run of eight letters or more in alphabetical order (`abcdefgh`,
/// `KLMNOPQR`): documentation's filler, which a random token spells
/// almost never.
pub(crate) fn spells_the_alphabet(v: &[u8]) -> bool {
    let mut run = 1;
    for w in v.windows(2) {
        if w[0].is_ascii_alphabetic() && w[1] == w[0].wrapping_add(1) && w[1].is_ascii_alphabetic()
        {
            run += 1;
            if run >= 8 {
                return true;
            }
        } else {
            run = 1;
        }
    }
    false
}

/// Hex that counts up byte by byte for eight bytes or more
/// (`000102030405060708090a0b…`, the test key of many standards' vectors).
pub(crate) fn counts_bytes(v: &[u8]) -> bool {
    let nibble = |c: u8| (c as char).to_digit(16);
    (0..2).any(|off| {
        let bytes: Vec<Option<u32>> = v[off.min(v.len())..]
            .chunks_exact(2)
            .map(|p| Some(nibble(p[0])? * 16 + nibble(p[1])?))
            .collect();
        let mut run = 1;
        for w in bytes.windows(2) {
            match (w[0], w[1]) {
                (Some(a), Some(b)) if b == a + 1 => {
                    run += 1;
                    if run >= 8 {
                        return true;
                    }
                }
                _ => run = 1,
            }
        }
        false
    })
}

/// `ACCESS_TOKEN`, `API_KEY`, `HEADER.PAYLOAD.SIGNATURE`: a constant's name (or
/// names) standing for its value.
pub(crate) fn constant_name(v: &[u8]) -> bool {
    (v.contains(&b'_') || v.contains(&b'.'))
        && v[0].is_ascii_uppercase()
        && v.split(|c| *c == b'_' || *c == b'.').all(|part| {
            word_then_digits(part).is_some_and(|w| w.iter().all(u8::is_ascii_uppercase))
        })
}

/// The letters of a part of a name that is letters, then perhaps digits
/// (`SECRET`, `base64`, `v8`); `None` when letters follow a digit.
pub(crate) fn word_then_digits(part: &[u8]) -> Option<&[u8]> {
    let letters = part.iter().take_while(|c| c.is_ascii_alphabetic()).count();
    part[letters..]
        .iter()
        .all(u8::is_ascii_digit)
        .then_some(&part[..letters])
}

/// A value that says it is a test value: `fake` in it, unless what is
/// left without it is still a random token (`PA3XsxZ8d8cPQLmnZzFAKEdzC6…`,
/// a scanner suite's stand-in shaped exactly like a key, which a leak of
/// the real one would look like too): 16 characters or more that mix
/// lower case, upper case and digits, hold fewer than three separators
/// (`a-fake-api-key` is words) and spread over at least 3.5 bits each.
pub(crate) fn marked_fake(value: &[u8]) -> bool {
    let lower = value.to_ascii_lowercase();
    if !lower.windows(4).any(|w| w == b"fake") {
        return false;
    }
    let mut rest = Vec::with_capacity(value.len());
    let mut i = 0;
    while i < value.len() {
        if lower[i..].starts_with(b"fake") {
            i += 4;
        } else {
            rest.push(value[i]);
            i += 1;
        }
    }
    let random = rest.len() >= 16
        && cases_and_digits(&rest)
        && rest.iter().filter(|c| b"-_. ".contains(c)).count() < 3
        && entropy(&rest) >= 3.5;
    !random
}

/// Names that declare a test value: `fakeToken`, `invalid_password`,
/// `nonMatchingToken`, `example_api_key`.
pub(crate) fn sample_name(n: &str) -> bool {
    [
        "fake",
        "dummy",
        "mock",
        "sample",
        "example",
        "invalid",
        "wrong",
        "bad",
        "nonmatching",
    ]
    .iter()
    .any(|p| n.starts_with(p))
}

/// A time-based (version 1) UUID: a timestamp and a node id, an identifier
/// that no service issues as a credential.
pub(crate) fn uuid_v1(value: &[u8]) -> bool {
    value.len() == 36
        && value.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
        && value[14] == b'1'
}

/// A secret-named field's value the writer keeps as any value: a
/// version (`"jsonwebtoken": "^9.0.0"` in a dependency map names a
/// package and its version range, not a credential), or a variable's
/// name that a tool fills in (`"password": "$DB_PASSWORD"` in a compose
/// file, `"$$password"` escaped), as `${…}` and `{{ … }}` are, or an
/// absolute path of words (`"PWD": "/home/alice/proj"` in an environment:
/// `pwd` names a password in a config and the working directory in an
/// environment), or a sentence of four words or more ([`prose`]: a
/// message catalog's `"new_password_intro": "Skriv inn mobilnummeret
/// ditt…"`), as after a password's key in config syntax (`fields.rs`);
/// not a PEM block, whose lines are no words.
pub fn kept_secret_value(v: &str) -> bool {
    let v = v.as_bytes();
    versioned_name(v)
        || variable_reference(v)
        || (v.starts_with(b"/") && path_of_words(v))
        || windows_path(v)
        || (prose(v)
            && v.split(u8::is_ascii_whitespace)
                .filter(|w| !w.is_empty())
                .count()
                >= 4)
}

/// `$DB_PASSWORD`, `$$password`, `$dbPassword`: a dollar or two, then a
/// name in one case or in camel humps (a random token's case breaks
/// that). `$3cr3t`, `$Xk9mQ2vL8pRt` and `$p@ss` are passwords.
fn variable_reference(v: &[u8]) -> bool {
    let name = v.strip_prefix(b"$$").or_else(|| v.strip_prefix(b"$"));
    name.is_some_and(|n| {
        n.len() <= 64
            && n.first()
                .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
            && n.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
            && n.split(|c| *c == b'_' || c.is_ascii_digit())
                .filter(|w| !w.is_empty())
                .all(|w| {
                    w.iter().all(u8::is_ascii_lowercase)
                        || w.iter().all(u8::is_ascii_uppercase)
                        || camel_word(w)
                        || lower_camel_word(w)
                })
    })
}

/// Binary data, not a token that could leak as text: bytes written as
/// escapes (`"\xb0\x32\x35…"`, a test vector's key in code), or what
/// they decode to (invalid UTF-8, control bytes).
pub(crate) fn binary_data(v: &[u8]) -> bool {
    let escapes = v.windows(2).filter(|w| w == br"\x").count();
    (escapes >= 8 && escapes * 16 >= v.len() * 3)
        || std::str::from_utf8(v).is_err()
        || v.iter().any(|c| *c < 0x20 && *c != b'\t')
}

/// A value that is itself a label or a statement: `token:`, `key =`,
/// `telegram_api_token = `.
pub(crate) fn label_text(v: &[u8]) -> bool {
    let t = v.trim_ascii_end();
    t.ends_with(b":") || t.ends_with(b" =") || v.windows(3).any(|w| w == b" = ")
}
