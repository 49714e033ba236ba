//! What a credential-shaped value is: its length, classes and entropy,
//! and whether the value after a secret-sounding name is one.

use super::*;

/// A credential-like value: at least 8 bytes, no whitespace, two or more
/// character classes, and enough entropy per character (the export's
/// sweep takes such values across a whole export, `scrub.rs`).
pub fn credential_like(v: &[u8]) -> bool {
    if v.len() < 8 || v.iter().any(u8::is_ascii_whitespace) {
        return false;
    }
    let classes = [
        v.iter().any(u8::is_ascii_lowercase),
        v.iter().any(u8::is_ascii_uppercase),
        v.iter().any(u8::is_ascii_digit),
        v.iter().any(|c| !c.is_ascii_alphanumeric()),
    ];
    if classes.iter().filter(|c| **c).count() < 2 {
        return false;
    }
    // Short values cannot reach 3 bits per character: ask what their
    // length allows, less half a bit.
    let n = v.len() as f64;
    entropy(v) >= 3.0_f64.min(n.log2() - 0.5)
}

/// Shannon entropy of `v`, in bits per byte.
pub(crate) fn entropy(v: &[u8]) -> f64 {
    let mut counts = [0u32; 256];
    for c in v {
        counts[*c as usize] += 1;
    }
    let n = v.len() as f64;
    counts
        .iter()
        .filter(|c| **c > 0)
        .map(|c| {
            let p = f64::from(*c) / n;
            -p * p.log2()
        })
        .sum()
}

/// `jjwt-jackson-0.11.2`, `SalesResults-1.2`, `v2.4.1`, `~1.0.3`: a name
/// and a dotted version (a package coordinate, a release label, a
/// dependency's range), not a credential.
pub(crate) fn versioned_name(value: &[u8]) -> bool {
    let s = String::from_utf8_lossy(value);
    let (head, version) = match s.rfind(['-', '_', ':', '@']) {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => ("", &s[..]),
    };
    // (A dependency's range: `"basic-auth": "~1.0.3"`, `^2.1.0`, `>=1.2`.)
    let version = version.trim_start_matches(['~', '^', '=', '<', '>']);
    let version = version.strip_prefix(['v', 'V']).unwrap_or(version);
    let parts: Vec<&str> = version.split('.').collect();
    parts.len() >= 2
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 6 && p.bytes().all(|c| c.is_ascii_digit()))
        && head
            .bytes()
            .all(|c| c.is_ascii_alphabetic() || matches!(c, b'-' | b'_' | b'.' | b':'))
}

/// Whether `value`, assigned to a secret-sounding `name`, is a credential
/// (`literal_syntax`: the syntax sets a literal, a quoted or an
/// environment-style value).
pub(crate) fn assignment_value_ok(name: &[u8], value: &[u8], literal_syntax: bool) -> bool {
    let n = judged_name(name);
    if innocent(&n, value, literal_syntax)
        || words_not_secret(&n, value)
        || names_itself(name, &n, value, literal_syntax)
    {
        return false;
    }
    if weak_name(&n) {
        return weak_names_value(value);
    }
    !(value.iter().all(u8::is_ascii_digit) && value.len() < 6) && value.len() >= 4
}

/// The name as judged: normalized, and `API_KEY_2`, `token1` (a numbered
/// name) as the name.
fn judged_name(name: &[u8]) -> String {
    let n = crate::detect::names::normalize(&String::from_utf8_lossy(name));
    match n.trim_end_matches(|c: char| c.is_ascii_digit()) {
        "" => n.as_str(),
        trimmed => trimmed,
    }
    .to_string()
}

/// An innocent or sample name, a version, prose, filler, or a bare word
/// where no literal is set.
fn innocent(n: &str, value: &[u8], literal_syntax: bool) -> bool {
    crate::detect::names::normalize_is_innocent(n)
        || sample_name(n)
        || versioned_name(value)
        || prose(value)
        // Hexspeak filler after a key (`os.environ["OPENAI_API_KEY"] =
        // "deadbeef"` in a test). Only here: in a URL's userinfo the same
        // word is a real Sidekiq credential's shape, and stays replaced.
        || hexspeak(&String::from_utf8_lossy(value).to_ascii_lowercase())
        || (!literal_syntax && bare_word(value))
        // `* signing-key: Updated.`: a word that ends a sentence.
        || (!literal_syntax && value.strip_suffix(b".").is_some_and(plain_word))
}

/// Words where the name says they are no secret.
fn words_not_secret(n: &str, value: &[u8]) -> bool {
    // `password_last_used = "not_supported"`: words after the password's
    // name make it an attribute of one (`password_super_secure` keeps a
    // random value); and `NOPASSWORD = "no-password-required"`: three
    // words or more, one a secret's, name a kind of secret.
    let suffixed = n.contains("passw")
        && !["password", "passwd", "pass", "pwd"]
            .iter()
            .any(|w| n.ends_with(w));
    let attribute = words_name(value)
        && (suffixed
            || letter_words(value).is_some_and(|w| {
                w.len() >= 3 && w.iter().any(|w| SECRET_WORDS.contains(&w.as_str()))
            }));
    // `ANTHROPIC_API_KEY=votre-clé-va-ici`, `api_token: not-a-real-one`:
    // a key or a token is made by a machine, and three or more lower-case
    // words joined by `-` or `_` are a phrase in any language. (Not so
    // after a password's name: a passphrase is one.)
    let phrase = !n.contains("pass") && !n.contains("pwd") && lowercase_phrase(value);
    // `credentials: 'include'`, `=== 'same-origin'`: the Fetch API's
    // modes; `credentials` names a structure, and a word in it is a
    // setting.
    let fetch_mode = n.ends_with("credentials")
        && value
            .iter()
            .all(|c| c.is_ascii_lowercase() || *c == b'-' || *c == b'_');
    attribute || phrase || fetch_mode || public_der(value) || message_or_scheme(n, value)
}

/// `token: "error"`, `Token => "invalid token"`: what is named only a
/// token, a key or a secret is not a short lower-case word or a phrase,
/// whose words may be capitalized (`Invalid Token: 'Invalid token'`); nor
/// is what an auth setting names, its scheme (`httpBearerAuth: 'bearer'`)
/// or a message (`SQLITE_AUTH => "Authorization denied"`). A password can
/// be, and so can a named variable's value: `AWS_SECRET_ACCESS_KEY=bench`.
fn message_or_scheme(n: &str, value: &[u8]) -> bool {
    (["token", "secret", "key"].contains(&n) || n.ends_with("auth"))
        && ((value.iter().all(u8::is_ascii_lowercase) && value.len() <= 10)
            || (value.contains(&b' ')
                && value
                    .split(|c| *c == b' ')
                    .filter(|w| !w.is_empty())
                    .all(plain_word)))
}

/// After a weak name (`key`): `key="ClearTextPassword"`,
/// `key="jetbrains.mps.v8_elimination"`, `key = "x-hello-world-64"`,
/// `<key>key inside an array2</key>` are a word, a name made of words or
/// a phrase, not a credential. (A dotted name is words too; a JWT or a
/// token with dots inside has random parts and stays a value;
/// `key="ConnectionString1"` is a name numbered.) A value must be long and
/// mix classes.
fn weak_names_value(value: &[u8]) -> bool {
    if words_name(value)
        || value.iter().any(u8::is_ascii_whitespace)
        || (value.iter().all(u8::is_ascii_alphabetic) && !random_case(value))
        || word_then_digits(value).is_some_and(|w| w.len() + 2 >= value.len() && camel_word(w))
    {
        return false;
    }
    let classes = [
        value.iter().any(u8::is_ascii_lowercase),
        value.iter().any(u8::is_ascii_uppercase),
        value.iter().any(u8::is_ascii_digit),
    ];
    value.len() >= 16 && classes.iter().filter(|c| **c).count() >= 2
}

/// The value of `secret-label-spaced`, which only spaces separate from
/// its name, with `before` the text before the name and `next` the byte
/// after the value. A token mixes letters and digits; a value that runs
/// into other text (`token api_key=…`, `key abc…:def`) or is made of
/// words (`secret storage_backend_v2_path`) is something else.
/// Upper-case hex is a key's id or fingerprint (`using RSA key 5DE3…`,
/// `NO_PUBKEY 8719…`), and a name after `public`, `primary` or `cache`
/// (`primary key`, `cache key 9f86…`) names no secret.
pub(crate) fn spaced_value_ok(before: &[u8], value: &[u8], next: Option<u8>) -> bool {
    if next.is_some_and(|c| !(c.is_ascii_whitespace() || b"\"',;".contains(&c))) {
        return false;
    }
    if !value.iter().any(u8::is_ascii_digit)
        || !value.iter().any(u8::is_ascii_alphabetic)
        || words_name(value)
    {
        return false;
    }
    if value
        .iter()
        .all(|c| c.is_ascii_digit() || (b'A'..=b'F').contains(c))
    {
        return false;
    }
    let word: Vec<u8> = before
        .trim_ascii_end()
        .rsplit(|c| !c.is_ascii_alphanumeric() && *c != b'_')
        .next()
        .unwrap_or(b"")
        .to_ascii_lowercase();
    ![
        &b"public"[..],
        b"pub",
        b"primary",
        b"foreign",
        b"unique",
        b"sort",
        b"partition",
        b"cache",
        b"host",
        b"signing",
        b"rsa",
        b"dsa",
        b"ecdsa",
        b"gpg",
        b"pgp",
    ]
    .contains(&word.as_slice())
}

/// A value that names a secret instead of holding one, `n` being the
/// normalized name: a field read from another value or an identifier
/// built on the name (`colon2_token: node.colon2_token`,
/// `self.dot2_token == other.dot2_token`, `generate_private_key:
/// x25519_generate_private_key`, `credential: AzureCredential`), a
/// secret's name (`secretKey: api-key`, a selector `"#add-password"`),
/// or, quoted or not, words that end in a secret's word
/// (`AccessKey => "azure_storage_account_key"`, `MYTOKEN1`).
pub(crate) fn names_itself(name: &[u8], n: &str, value: &[u8], literal_syntax: bool) -> bool {
    // (A password set to one lower-case word that only ends in
    // `password`, `Password=thisismypassword`, is a weak password.)
    let named = value.strip_prefix(b"#").unwrap_or(value);
    let weak_password = n.ends_with("password")
        && value.len() > "password".len()
        && value.ends_with(b"password")
        && value.iter().all(u8::is_ascii_lowercase);
    if named
        .iter()
        .all(|c| c.is_ascii_alphabetic() || *c == b'-' || *c == b'_')
        && !weak_password
        && crate::detect::names::classify(&String::from_utf8_lossy(named), &[])
            == crate::detect::names::FieldClass::Secret
    {
        return true;
    }
    let alnum = |b: &[u8]| -> Vec<u8> {
        b.iter()
            .filter(|c| c.is_ascii_alphanumeric())
            .map(u8::to_ascii_lowercase)
            .collect()
    };
    let own = alnum(name.rsplit(|c| *c == b'.').next().unwrap_or(name));
    let trimmed = value
        .iter()
        .rposition(u8::is_ascii_alphanumeric)
        .map_or(&value[..0], |i| &value[..=i]);
    let identifier = !trimmed.is_empty()
        && trimmed
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.'));
    if !literal_syntax && identifier && own.len() >= 3 && alnum(trimmed).ends_with(&own) {
        return true;
    }
    // `ACCESS_KEY = 'aws_access_key_id'`, `'AWSAccessKeyId'`,
    // `SERVER_AUTH: "serverAuth"`: the name of a setting or a field, or
    // the name itself, as the value.
    if let Some(words) = letter_words(value) {
        let setting = words.len() >= 2
            && SECRET_WORDS.contains(&words[words.len() - 2].as_str())
            && [
                "id", "name", "file", "path", "env", "var", "field", "header", "param", "arn",
                "type", "types",
            ]
            .contains(&words[words.len() - 1].as_str());
        if setting || (own.len() >= 3 && words.concat() == String::from_utf8_lossy(&own)) {
            return true;
        }
    }
    let last_word = value
        .rsplit(|c| matches!(c, b'_' | b'-' | b'.'))
        .next()
        .unwrap_or(b"")
        .to_ascii_lowercase();
    if words_name(value) && SECRET_WORDS.contains(&String::from_utf8_lossy(&last_word).as_ref()) {
        return true;
    }
    // One word of one case that ends in `token`, `key` or `secret`, and
    // perhaps a digit: `_authToken=MYTOKEN1`, `api_key = "apikey"`.
    let letters = value.iter().take_while(|c| c.is_ascii_alphabetic()).count();
    let word = value[..letters].to_ascii_lowercase();
    letters > 0
        && value[letters..].iter().all(u8::is_ascii_digit)
        && (value[..letters].iter().all(u8::is_ascii_uppercase)
            || value[..letters].iter().all(u8::is_ascii_lowercase))
        && [&b"token"[..], b"key", b"secret"]
            .iter()
            .any(|w| word.ends_with(w))
}
