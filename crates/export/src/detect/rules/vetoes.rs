//! The named vetoes: a rule's own exemptions, each attached to its row in
//! the table. A veto returns `true` to spare a candidate that passed the
//! shared tests. The readback's gate runs without them
//! ([`super::RuleSet::gate`]), so a veto that spares too much is caught
//! there rather than blinding writer and gate alike.

use super::engine::Candidate;
use super::plausibility::*;

/// `url-credentials`: `postgresql://${DB_USER:-app}@db` (the colon is
/// inside an interpolation the user opens, not between a user and a
/// password); `unix://[user[:password]@]` (a syntax's optional parts).
/// Nothing about the password's value spares it: a word, a constant's
/// name or a documentation host's sample (`http://abc:xyz@example.com`)
/// goes, since replacing it costs nothing (issue 41).
pub(crate) fn url_credentials(c: &Candidate) -> bool {
    let user = c.group("u").map_or(&b""[..], |u| u.as_bytes());
    let interpolated =
        memchr::memmem::rfind(user, b"${").is_some_and(|i| !user[i..].contains(&b'}'));
    interpolated || user.contains(&b'[')
}

/// `aws-account-id`: `123456789012`, the account number AWS's own
/// documentation writes in every example ARN, is a stand-in, as
/// `tenant-host` keeps `contoso` (runs such as `111122223333` are filler
/// to every row already).
pub(crate) fn aws_example_account(c: &Candidate) -> bool {
    c.value() == b"123456789012"
}

/// `facebook-app-access-token`: the secret after an app id's bar is
/// random (an app secret's 32 hex digits, or a signature), not words.
pub(crate) fn facebook_app_secret(c: &Candidate) -> bool {
    let value = c.value();
    value.iter().position(|c| *c == b'|').is_some_and(|bar| {
        let v = &value[bar + 1..];
        let hex = v.len() == 32
            && v.iter()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
            && v.iter().any(u8::is_ascii_digit)
            && v.iter().any(u8::is_ascii_lowercase);
        !hex && !cases_and_digits(v)
    })
}

/// `signing-key-literal`: only a random value is a key there.
pub(crate) fn not_random(c: &Candidate) -> bool {
    !credential_like(c.value())
}

/// `curl-user-key`: a user with no password (`-u administrator:`) is a
/// key only when it mixes cases and digits.
pub(crate) fn user_without_password(c: &Candidate) -> bool {
    !cases_and_digits(c.value())
}

/// `cli-secret-flag`: `the --username and --password options`: prose names
/// the option; a lower-case word after it is not its value. (A sentence
/// may end on it: `the new --password options.`)
pub(crate) fn option_in_prose(c: &Candidate) -> bool {
    let value = c.value();
    let word = value.strip_suffix(b".").unwrap_or(value);
    word.iter().all(u8::is_ascii_lowercase)
}

/// `query-secret`: `?key=6254792024915968`, digits alone in a query, are an
/// id (a fuzzer's test case); after `key=` only a random value counts
/// (`?key=STRINGS`, `?key=test_error_package`).
pub(crate) fn query_id_or_word(c: &Candidate) -> bool {
    let value = c.value();
    value.iter().all(u8::is_ascii_digit)
        || (c.start >= 4
            && c.hay[c.start - 4..c.start].eq_ignore_ascii_case(b"key=")
            && word_like(value))
}

/// `session-cookie`: an anti-forgery cookie (`csrftoken`, `XSRF-TOKEN`) is
/// bound to a session and authenticates nothing on its own.
pub(crate) fn anti_forgery_cookie(c: &Candidate) -> bool {
    c.group("n").is_some_and(|n| {
        let n = n.as_bytes();
        n.len() >= 4
            && (n[..4].eq_ignore_ascii_case(b"csrf") || n[..4].eq_ignore_ascii_case(b"xsrf"))
    })
}

/// `authorization-header`: `'Proxy-Authorization' : 'Authorization'` (the
/// header's name again, not its value); `authorization=authorization,` (a
/// keyword argument handing on a variable of that name).
pub(crate) fn header_name_again(c: &Candidate) -> bool {
    let value = c.value();
    memchr::memmem::find(&value.to_ascii_lowercase(), b"authorization").is_some()
        || (c.before().ends_with(b"=")
            && value
                .strip_suffix(b")")
                .unwrap_or(value)
                .iter()
                .all(|c| c.is_ascii_lowercase() || *c == b'_'))
}

/// `xml-named-text`, `config-key-value`: an element's text is mostly what a
/// user reads (`Forgot password?`, `API Key`), and a setting's value may
/// name another (`auth_key_name`): a value is one without blanks, not
/// made of words.
pub(crate) fn text_or_setting_name(c: &Candidate) -> bool {
    let value = c.value();
    value.iter().any(u8::is_ascii_whitespace) || words_name(value)
}

/// `prefixed-token`: spared unless its body is drawn at random. Kept: a
/// digest under its algorithm's name (`sha512-…` in a lock file's
/// `integrity`), a run inside a longer base64 string (a `+` or `/`
/// touches it), an identifier of words, capitals spelling words, hex (a
/// digest or an id under its label), and what the shared tests call
/// filler or a placeholder.
pub(crate) fn unknown_prefix_spared(c: &Candidate) -> bool {
    let value = c.value();
    let body = c.group("body").map_or(value, |b| b.as_bytes());
    let prefix = &value[..value.len() - body.len()];
    let in_base64 = c.start > 0 && b"+/".contains(&c.hay[c.start - 1])
        || c.hay.get(c.end).is_some_and(|b| b"+/".contains(b));
    let digest_name = {
        let p = prefix.to_ascii_lowercase();
        [&b"sha"[..], b"md5", b"blake", b"xxh", b"crc"]
            .iter()
            .any(|a| p.starts_with(a))
    };
    let hex = body.iter().all(u8::is_ascii_hexdigit) && !credential_word(prefix);
    let digits = body.iter().filter(|b| b.is_ascii_digit()).count();
    let drawn = letters_flip_case(body)
        || (digits * 5 >= body.len() && digits < body.len())
        || scattered_digits(body);
    in_base64 || digest_name || hex || !drawn || !crate::detect::rules::named::plausible(body, true)
}

/// A credential's generic words, which make a prefix of them a key's
/// (`credential_word`).
pub(crate) const CREDENTIAL_WORDS: [&str; 9] = [
    "sk", "rk", "key", "apikey", "api", "secret", "token", "live", "auth",
];

/// A prefix made only of a credential's generic words (`sk_`, `key_`,
/// `live_`, `live_auth_`, `secret-`, `token_`): hex after it is a key
/// (ElevenLabs' `sk_`, Cursor's `key_`, Scale's `live_`), not a digest
/// or an id under its label as after `commit-` or `cache_`. None of these
/// stood before 32 hex digits or more in 170 MB of real code (48th
/// session).
fn credential_word(prefix: &[u8]) -> bool {
    let mut parts = prefix
        .split(|c| matches!(c, b'_' | b'-'))
        .filter(|p| !p.is_empty())
        .peekable();
    parts.peek().is_some()
        && parts.all(|p| {
            CREDENTIAL_WORDS
                .iter()
                .any(|w| p.eq_ignore_ascii_case(w.as_bytes()))
        })
}

/// Whether digits stand in three separate runs or more, across both
/// halves of `v`: a random body of 32 characters or more scatters its
/// digits (about five runs) over its whole length, where an identifier
/// puts a number at its end or in a word (`utf8`, `v2`), or gathers them
/// in one stretch (`…VIACONTEXT2D3D5D7D8D`). It catches the random bodies
/// whose letters happen to change case rarely (27 draws of 40
/// characters in 1,000 were spared without it, 3 with it).
fn scattered_digits(v: &[u8]) -> bool {
    let runs = v
        .iter()
        .zip(std::iter::once(&b'a').chain(v.iter()))
        .filter(|(c, prev)| c.is_ascii_digit() && !prev.is_ascii_digit())
        .count();
    let first = v.iter().position(u8::is_ascii_digit);
    let last = v.iter().rposition(u8::is_ascii_digit);
    // Capitals spelling words with numbers between them stay
    // (`ICANVASRENDERINGVIACONTEXT2D3D…`): the drawn bodies this is for
    // mix both cases.
    let mixed = v.iter().any(u8::is_ascii_lowercase) && v.iter().any(u8::is_ascii_uppercase);
    mixed
        && runs >= 3
        && first.is_some_and(|i| i < v.len() / 2)
        && last.is_some_and(|i| i >= v.len() / 2)
}

/// Random letters of both cases change case at least once in three
/// letters (digits between them aside); words in camel case change about
/// once in five, and capitals spelling words hardly at all.
fn letters_flip_case(v: &[u8]) -> bool {
    let mut letters = v.iter().filter(|c| c.is_ascii_alphabetic());
    let Some(first) = letters.next() else {
        return false;
    };
    let (mut n, mut flips, mut upper) = (1, 0, first.is_ascii_uppercase());
    for c in letters {
        n += 1;
        if c.is_ascii_uppercase() != upper {
            flips += 1;
            upper = !upper;
        }
    }
    flips * 3 >= n
}

/// Azure's identifiable keys (`azure-service-key` and its kin): the
/// signature stands at a fixed place, so a key of another length is not
/// one (the pattern reads any run before the signature).
pub(crate) fn azure_key_not_44(c: &Candidate) -> bool {
    c.value().len() != 44
}

/// As [`azure_key_not_44`], for Functions' keys.
pub(crate) fn azure_key_not_56(c: &Candidate) -> bool {
    c.value().len() != 56
}

/// As [`azure_key_not_44`], for Search's and Container Registry's keys.
pub(crate) fn azure_key_not_52(c: &Candidate) -> bool {
    c.value().len() != 52
}

/// As [`azure_key_not_44`], for 64-byte keys (Storage, Cosmos DB, ...).
pub(crate) fn azure_key_not_88(c: &Candidate) -> bool {
    c.value().len() != 88
}
