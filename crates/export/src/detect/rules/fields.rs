//! Credential fields: a value that stands right after a key naming a
//! password, secret, token or credential, in config syntax, whatever the
//! value looks like; and the password of a connection string or a URL.
//!
//! The label rules ask a value to look made by a machine, since in code
//! a name is followed by expressions. In config syntax the value is a
//! literal, and a password is often a word (`password=qwerty`,
//! `<master>…</master>`, `Pwd=letmein;`, `ftp://user:secret@host`).
//! So here the syntax decides, not the value:
//! - a line that is only `KEY = VALUE` or `KEY: VALUE` (properties, `.env`,
//!   YAML, INI, a shell's `export`), perhaps with a trailing `,` `;` or
//!   comment;
//! - a JSON member `"KEY": "VALUE"`;
//! - an XML element `<KEY>VALUE</KEY>`, perhaps with attributes;
//! - a line that is only `KEY "VALUE"` (Gradle's and Groovy's DSL);
//! - a connection string's `;Password=VALUE` or `;Pwd=VALUE`;
//! - a URL's `scheme://user:VALUE@host`.
//!
//! The key's last word names the credential (`spring.datasource.password`,
//! `dbPassword`, `pwd`, `client_secret`; not `password_hash` or
//! `max_tokens`). A value stays only when it is visibly code or a
//! placeholder (`kept`): a reference (`$VAR`, `${…}`, `{{ … }}`,
//! `%(name)s`), a call or a member (`getpass()`, `self.password`), a
//! type (`password: str`), a literal of the language (`null`, `true`),
//! a documented placeholder, a mask, or the key's own name.

use super::spec::{spec, Spec};
use super::Check;
use super::{
    bare_word, constant_name, credential_like, entropy, is_placeholder, lowercase_phrase,
    marked_fake, prose, random_case, stand_in, typed_filler, uuid_v1, Hit, CODE_OBJECTS,
};

/// The rule's id.
pub const ID: &str = "credential-field";

/// The row of the rule table.
pub(crate) static SPEC: Spec = spec(ID, KEYWORDS, PATTERN, Check::Field).after_keyword(follows);

/// Prefilter keywords: every hit's key ends in one of them, or holds
/// one (`://` for a URL).
pub const KEYWORDS: &[&str] = &[
    "apikey",
    "api_key",
    "api-key",
    "password",
    "passwd",
    "passphrase",
    "pass",
    "pwd",
    "pw",
    "secret",
    "token",
    "credential",
    "master",
    "_auth",
    "://",
];

/// The syntaxes, one alternative each; `k*` is the key, `v*` the value
/// (quoted or not), `u` a URL's user. The URL comes first: where a line
/// opens with one (`https://u:p@host`), it is not a `key:value` line.
pub const PATTERN: &str = concat!(
    r#"(?m)(?:\b[A-Za-z][A-Za-z0-9+.-]{1,20}://(?P<u>[^\s:@/"'<>]{1,128}):(?P<v5>[^\s@/"'<>]{1,256})@[^\s@/"'<>])"#,
    r#"|(?:^[ \t]*(?:export[ \t]+|set[ \t]+)?["']?(?P<k1>[A-Za-z0-9_.-]{1,64})["']?[ \t]*[=:][ \t]*"#,
    r#"(?P<v1>"[^"\r\n]*"|'[^'\r\n]*'|[^\s"'#;,=:][^\s"'#;,]*)[ \t]*[,;]?(?:[ \t]+(?:#|//)[^\r\n]*|[ \t]*)\r?$)"#,
    r#"|(?:"(?P<k2>[A-Za-z0-9_.-]{1,64})"[ \t]*:[ \t]*(?P<v2>"(?:[^"\\\r\n]|\\.)*"))"#,
    // An element, perhaps with attributes (FileZilla's `<Pass
    // encoding="base64">…</Pass>`).
    // (Unbounded runs here, not counted ones: each counted repetition is
    // that many automaton states, and the lazy DFA's cache grew by
    // megabytes with them; the line bounds the match.)
    r#"|(?:<(?P<k3>[A-Za-z0-9_.-]{1,64})(?:[ \t][^<>\r\n]*)?>(?P<v3>[^<\r\n]{1,256})</)"#,
    r#"|(?:[;?&"'][ \t]*(?P<k4>(?i:password|pwd))[ \t]*=[ \t]*(?P<v4>[^;&"'\s]{1,256}))"#,
    // A table row of two cells; the outer bars are optional (GitHub's
    // tables allow it, and a console's export writes `apiKey |e9e0…`),
    // but without the first one a blank must stand before the middle
    // bar, which keeps a shell pattern (`token|key)`) out.
    r#"|(?:^[ \t]*(?:\|[ \t]*`?(?P<k6>[A-Za-z0-9_.-]{1,64})`?[ \t]*|`?(?P<k7>[A-Za-z0-9_.-]{1,64})`?[ \t]+)"#,
    r#"\|[ \t]*`?(?P<v6>[^|`\s]{1,256})`?[ \t]*(?:\|[ \t]*)?\r?$)"#,
    // An .npmrc password or `_auth` (a user and password in base64)
    // scoped to a registry's path (`//host/path:_password=…`; its tokens
    // are `npmrc-auth`'s). Unscoped, `_auth=…` is a `key=value` line.
    r#"|(?:^[ \t]*//[^\s=:]*:(?P<k8>_password|_auth)[ \t]*=[ \t]*(?P<v8>[^\s"'#;,]+))"#,
    // A line that is only a key and a quoted value, no operator: Gradle's
    // and Groovy's DSL (`password "…"` in a `credentials` block), Ruby's
    // and nginx's directives.
    r#"|(?:^[ \t]*(?P<k9>[A-Za-z][A-Za-z0-9_.-]*)[ \t]+(?P<v9>"[^"\r\n]+"|'[^'\r\n]+')[ \t]*;?[ \t]*\r?$)"#,
);

/// The test the text after a keyword must pass: a key's end, then an
/// assignment (`=`, `:`, `>`, a table's `|`); or, after `://`, a user, a
/// colon and an `@` before the authority ends.
pub fn follows(rest: &[u8]) -> bool {
    let skipped = rest
        .iter()
        .take(6)
        .take_while(|c| matches!(c, b' ' | b'\t' | b'"' | b'\'' | b's' | b'S'))
        .count();
    if matches!(rest.get(skipped), Some(b'=' | b':' | b'>' | b'|' | b'`')) {
        return true;
    }
    // A key, blanks and a quoted value (`password "…"`).
    let blanks = rest
        .iter()
        .take_while(|c| matches!(c, b' ' | b'\t'))
        .count();
    if blanks > 0 && matches!(rest.get(blanks), Some(b'"' | b'\'')) {
        return true;
    }
    if attributes_then_close(rest) {
        return true;
    }
    let authority = rest
        .iter()
        .take(400)
        .take_while(|c| !c.is_ascii_whitespace() && !matches!(c, b'/' | b'"' | b'\'' | b'<' | b'>'))
        .count();
    let a = &rest[..authority];
    a.contains(&b':') && a.contains(&b'@')
}

/// Whether `rest`, after an element's name, is its attributes and then
/// the `>` that closes its tag (`<Pass encoding="base64">`): a blank, an
/// `=` and a quote before a `>`, with no `<` or line end between.
fn attributes_then_close(rest: &[u8]) -> bool {
    // Most keywords are followed by something else: the first byte
    // settles it before the line is read.
    if !matches!(rest.first(), Some(b' ' | b'\t')) {
        return false;
    }
    let head = &rest[..rest.len().min(160)];
    let Some(close) = memchr::memchr3(b'>', b'<', b'\n', head) else {
        return false;
    };
    let attrs = &head[..close];
    head[close] == b'>' && memchr::memchr2(b'"', b'\'', attrs).is_some() && attrs.contains(&b'=')
}

/// The last words of a key that make it a credential's: a password's
/// names, and `secret`, `token`, `credential(s)`, Maven's `master`.
const LAST_WORDS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "pw",
    "pass",
    "secret",
    "token",
    "credential",
    "credentials",
    "master",
];

/// Last words that name a credential even glued to the word before
/// them (`SSHpassword`, `dbpassword`, `clientsecret`): few names end in
/// them otherwise, as `bypass`, `webmaster` or `oldpwd` end in the
/// shorter ones, and C's `grpasswd` (Perl's `d_grpasswd='define'`) in
/// `passwd`.
const GLUED_WORDS: &[&[u8]] = &[b"password", b"passphrase", b"secret"];

/// Hits of the rule at `rule` in `hay`, read on the lines that hold a
/// keyword: every match lies on one line, and a hit's line holds one (a
/// URL's `://`, or the key's credential word). Source code is full of
/// `key = value` and `"key": "value"` lines that name no credential, so
/// the other lines are not searched at all. `at`: the keywords'
/// occurrences (the prefilter's); `None` finds them.
pub(crate) fn hits(
    rule: usize,
    regex: &regex::bytes::Regex,
    hay: &[u8],
    at: Option<&[super::Occurrence]>,
    out: &mut Vec<Hit>,
) {
    let starts: Vec<usize> = match at {
        Some(at) => at.iter().map(|o| o.start).collect(),
        None => keyword_starts(hay),
    };
    let mut last_line = None;
    for start in starts {
        let (line_start, line_end) = line_around(hay, start);
        if last_line != Some(line_start) {
            last_line = Some(line_start);
            line_hits(rule, regex, hay, (line_start, line_end), out);
        }
    }
}

/// [`hits`] on the line `line_start..line_end` of `hay`. A match whose
/// key names no credential is searched again from its value on, so a
/// line's URL or connection string is still read
/// (`DATABASE_URL=postgres://u:p@db`).
fn line_hits(
    rule: usize,
    regex: &regex::bytes::Regex,
    hay: &[u8],
    (line_start, line_end): (usize, usize),
    out: &mut Vec<Hit>,
) {
    const GROUPS: [(&str, &str); 9] = [
        ("u", "v5"),
        ("k1", "v1"),
        ("k2", "v2"),
        ("k3", "v3"),
        ("k4", "v4"),
        ("k6", "v6"),
        ("k7", "v6"),
        ("k8", "v8"),
        ("k9", "v9"),
    ];
    // The search ends with the line; the groups' context is the whole
    // string (a connection string's user, what follows a value).
    let line = &hay[..line_end];
    let mut from = line_start;
    while let Some(caps) = regex.captures_at(line, from) {
        let whole = caps.get(0).expect("group 0 always matches");
        // The form is the number in the key's group name (`u`: 5).
        let Some((form, key, value)) = GROUPS.iter().find_map(|(k, v)| {
            let form = k[1..].parse().unwrap_or(5);
            Some((form, caps.name(k)?, caps.name(v)?))
        }) else {
            break;
        };
        let key_span = Some((key.start(), key.end()));
        from = whole.end();
        // A URL needs no key; the others need one that names a
        // credential (and `master` names one only as Maven's element).
        let key = singular(key.as_bytes());
        if form != 5
            && (!names_credential(key) || (key.eq_ignore_ascii_case(b"master") && form != 3))
        {
            // An element's attributes are read too (`<a
            // href="https://u:p@host">`).
            let resume = if form == 3 {
                key_span.map_or(0, |k| k.1)
            } else {
                value.start()
            };
            from = resume.max(whole.start() + 1);
            continue;
        }
        let (mut start, mut end) = (value.start(), value.end());
        let quoted = matches!(hay[start], b'"' | b'\'') && end - start >= 2;
        if quoted {
            start += 1;
            end -= 1;
        }
        // An element's text, without the blanks around it.
        if form == 3 {
            while start < end && matches!(hay[start], b' ' | b'\t') {
                start += 1;
            }
            while end > start && matches!(hay[end - 1], b' ' | b'\t') {
                end -= 1;
            }
        }
        // A password an earlier step replaced still pairs with its user:
        // the rewrite's rescan sees the placeholder, and the user is left.
        let replaced = hay[start..end].starts_with(REPLACED);
        if replaced || !kept(key, &hay[start..end], quoted, form, &hay[end..]) {
            if !replaced {
                out.push(Hit { rule, start, end });
            }
            let user = match form {
                5 => Some((whole.start() + url_user_offset(whole.as_bytes()), key.len())),
                4 => connection_user(hay, value.start()),
                1 | 2 => key_span
                    .and_then(|(a, b)| sibling_user(hay, a, b))
                    .map(|(a, b)| (a, b - a)),
                _ => None,
            };
            if let Some((at, len)) = user.filter(|&(at, len)| paired_user(&hay[at..at + len])) {
                out.push(Hit {
                    rule,
                    start: at,
                    end: at + len,
                });
            }
        }
    }
}

/// A key naming a list of passwords, one of which it holds
/// (`<o2_1_passwords>…</o2_1_passwords>`, `db_passwords = …`), read as
/// the singular. Only passwords: `secrets: inherit` and `tokens: 5`
/// name a setting and a count.
fn singular(key: &[u8]) -> &[u8] {
    let plural = key.len() >= 9 && key[key.len() - 9..].eq_ignore_ascii_case(b"passwords");
    &key[..key.len() - usize::from(plural)]
}

/// The line holding byte `at`: (start, end), its `\n` left out.
fn line_around(hay: &[u8], at: usize) -> (usize, usize) {
    let start = memchr::memrchr(b'\n', &hay[..at]).map_or(0, |i| i + 1);
    let end = memchr::memchr(b'\n', &hay[at..]).map_or(hay.len(), |i| at + i);
    (start, end)
}

/// Where each of [`KEYWORDS`] starts in `hay` (ASCII case folded,
/// overlapping ones included), in order.
fn keyword_starts(hay: &[u8]) -> Vec<usize> {
    static WORDS: std::sync::LazyLock<aho_corasick::AhoCorasick> = std::sync::LazyLock::new(|| {
        aho_corasick::AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(KEYWORDS)
            .expect("the keywords build an automaton")
    });
    let mut starts: Vec<usize> = WORDS
        .find_overlapping_iter(hay)
        .map(|m| m.start())
        .collect();
    starts.sort_unstable();
    starts
}

/// How a replaced secret starts (`[REDACTED_SECRET:rule:fp]`).
pub(crate) const REPLACED: &[u8] = b"[REDACTED_SECRET:";

/// Where a URL match's user starts: after its `://`.
fn url_user_offset(url: &[u8]) -> usize {
    memchr::memmem::find(url, b"://").map_or(0, |i| i + 3)
}

/// The words a password's key ends in, longest first.
const PASSWORD_WORDS: &[&str] = &["password", "passwd", "pass", "pwd"];
/// The words the key of the same account's user ends in instead.
const USER_WORDS: &[&str] = &[
    "user_name",
    "username",
    "user_id",
    "userid",
    "login",
    "user",
    "uid",
];
/// Lines either side of a password's line its user's key may stand on.
const SIBLING_LINES: usize = 2;
/// Bytes either side of a password's key, or before a command's password
/// option, that are read for its user: a line of minified JSON holding a
/// password key at every record would otherwise be read whole at each.
const USER_REACH: usize = 1 << 10;

/// The user a sibling key names beside a password's key at
/// `key_start..key_end`: the same key with a user word in place of the
/// password word (`SMTP_USER` beside `SMTP_PASSWORD`, `$user` beside
/// `$password`, `spring.datasource.username` beside
/// `spring.datasource.password`, `"username"` beside `"password"`),
/// assigned with `=`, `:`, `=>` or `:=` on the password's line or within
/// [`SIBLING_LINES`] of it (in a string; a text artifact is read a line
/// at a time), and within [`USER_REACH`] bytes: (start, end) of its
/// value, the nearest such one.
pub(crate) fn sibling_user(hay: &[u8], key_start: usize, key_end: usize) -> Option<(usize, usize)> {
    let key = hay[key_start..key_end].to_ascii_lowercase();
    let word = PASSWORD_WORDS
        .iter()
        .find(|w| key.ends_with(w.as_bytes()))?;
    let stem = &key[..key.len() - word.len()];
    // Lines are found inside the reach, so a long line costs no more
    // than a short one.
    let lo = key_start.saturating_sub(USER_REACH);
    let near = &hay[lo..(key_end + USER_REACH).min(hay.len())];
    let (mut from, mut to) = line_around(near, key_start - lo);
    for _ in 0..SIBLING_LINES {
        if from > 0 {
            from = line_around(near, from - 1).0;
        }
        if to < near.len() {
            to = line_around(near, to + 1).1;
        }
    }
    let (from, to) = (lo + from, lo + to);
    let key_byte = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-');
    let mut best: Option<(usize, usize)> = None;
    let mut i = from;
    while i + stem.len() < to {
        let at_key =
            (i == 0 || !key_byte(hay[i - 1])) && hay[i..i + stem.len()].eq_ignore_ascii_case(stem);
        let user = at_key
            .then(|| {
                let rest = &hay[i + stem.len()..to];
                USER_WORDS.iter().find(|w| {
                    rest.len() > w.len()
                        && rest[..w.len()].eq_ignore_ascii_case(w.as_bytes())
                        && !key_byte(rest[w.len()])
                })
            })
            .flatten();
        if let Some(w) = user {
            // Code (`config.user`, `os.environ["USER"]`, `true`) names
            // no account.
            let value = assigned_value(hay, i + stem.len() + w.len(), to)
                .filter(|&(a, b)| !code(&hay[a..b]));
            let nearer = |(a, _): (usize, usize)| {
                best.is_none_or(|(b, _)| a.abs_diff(key_start) < b.abs_diff(key_start))
            };
            if let Some(v) = value.filter(|v| nearer(*v)) {
                best = Some(v);
            }
        }
        i += 1;
    }
    best
}

/// The value assigned after a key that ends at `at` (`"user": "alice"`,
/// `USER=alice`, `$user = 'alice';`), up to `to`: (start, end) without
/// its quotes.
fn assigned_value(hay: &[u8], mut at: usize, to: usize) -> Option<(usize, usize)> {
    let skip = |at: &mut usize, set: &[u8]| {
        while *at < to && set.contains(&hay[*at]) {
            *at += 1;
        }
    };
    skip(&mut at, b"\"'`]");
    skip(&mut at, b" \t");
    let op = [&b"=>"[..], b":=", b"=", b":"]
        .into_iter()
        .find(|o| hay[at..to].starts_with(o))?;
    at += op.len();
    skip(&mut at, b" \t");
    skip(&mut at, b"\"'`");
    let len = hay[at..to]
        .iter()
        .take_while(|c| !c.is_ascii_whitespace() && !b"\"'`;,&".contains(c))
        .count();
    (len > 0).then_some((at, at + len))
}

/// The user a command line names by a flag before the password option
/// whose value starts at `value` (`psexec \\\\host -u Administrator -p …`,
/// `mysql --user=deployer --password=…`, PowerShell's `-User alice
/// -Password …`, `net use … /user:CORP\\svc …`): (start, end) of the last
/// such flag's value in the same command (back to a line end, `;`, `|` or
/// `&`, and at most [`USER_REACH`] bytes). `-u` and `-U` count only with `short`, glued or not
/// (`mysql -uroot`).
pub(crate) fn cli_user(hay: &[u8], value: usize, short: bool) -> Option<(usize, usize)> {
    static FLAG: std::sync::LazyLock<regex::bytes::Regex> = std::sync::LazyLock::new(|| {
        regex::bytes::Regex::new(
            r#"(?:^|\s)(?:(?:--user(?:name)?|(?i:-user(?:name)?))(?:[ \t]+|=)|(?i:/user:)|(?P<short>-[uU])(?:[ \t]+|=)?)["']?(?P<v>[^\s"'=-][^\s"']*)"#,
        )
        .expect("the user flag's regex compiles")
    });
    let reach = value.saturating_sub(USER_REACH);
    let from = hay[reach..value]
        .iter()
        .rposition(|c| matches!(c, b'\n' | b'\r' | b';' | b'|' | b'&'))
        .map_or(reach, |i| reach + i + 1);
    let v = FLAG
        .captures_iter(&hay[from..value])
        .filter(|c| short || c.name("short").is_none())
        .last()?
        .name("v")?;
    Some((from + v.start(), from + v.end()))
}

/// A connection string's user field (`User ID=`, `Uid=`, `user=`,
/// `Username=`) in the same string as the password field whose value
/// starts at `value`: (start, length) of its value. The string ends at
/// a quote, a backquote or a line end.
fn connection_user(hay: &[u8], value: usize) -> Option<(usize, usize)> {
    static USER: std::sync::LazyLock<regex::bytes::Regex> = std::sync::LazyLock::new(|| {
        regex::bytes::Regex::new(
            r#"(?i)(?:^|[;?&\s])(?:user ?id|uid|user ?name|user)[ \t]*=[ \t]*(?P<v>[^;&\s"'`]{1,128})"#,
        )
        .expect("the user field's regex compiles")
    });
    let edge = |c: &u8| matches!(c, b'"' | b'\'' | b'`' | b'\n' | b'\r');
    let from = hay[..value].iter().rposition(edge).map_or(0, |i| i + 1);
    let to = hay[value..]
        .iter()
        .position(edge)
        .map_or(hay.len(), |i| value + i);
    let v = USER.captures(&hay[from..to])?.name("v")?;
    Some((from + v.start(), v.len()))
}

/// Whether a user beside a replaced password goes with it: the account
/// is half of the credential (a scanner's pair verifies with both), and a
/// partner has no use for it. A reference or a template stays, as the
/// password would (`${DB_USER}`, `{user}`, `<user>`, `%(user)s`); a word
/// goes like the password beside it (`user:pass@`).
pub(crate) fn paired_user(user: &[u8]) -> bool {
    user.iter().any(u8::is_ascii_alphanumeric)
        && !reference(user)
        && !user.iter().any(|c| b"${}<>[]%".contains(c))
}

/// Whether the key's last word names a credential: after `_ - .`, a
/// camel hump, or the key alone (`PASSWORD`, `dbPassword`, `db.pass`).
fn names_credential(key: &[u8]) -> bool {
    // An .npmrc's `_auth`: a user and password in base64.
    if key == b"_auth" {
        return true;
    }
    let lower = key.to_ascii_lowercase();
    // A page's, a sync's or a form's token (`nextPageToken`,
    // `csrf-token`) authenticates nothing on its own; a public one is
    // published (`publicToken`); a negated or a made-up one names none
    // (`not_secret`, `fakeApiKey`).
    if [
        "page",
        "next",
        "continuation",
        "cursor",
        "sync",
        "csrf",
        "xsrf",
        "cancel",
        "public",
        "publishable",
        "fake",
        "dummy",
        "mock",
        "example",
        "sample",
    ]
    .iter()
    .any(|w| memchr::memmem::find(&lower, w.as_bytes()).is_some())
        || ["not_", "no_", "non_", "not-", "no-"]
            .iter()
            .any(|w| lower.starts_with(w.as_bytes()))
    {
        return false;
    }
    // `apiKey`, `api_key`, `API-KEY`: an API key is a credential by name.
    let joined: Vec<u8> = lower
        .iter()
        .filter(|c| !matches!(c, b'_' | b'-'))
        .copied()
        .collect();
    if joined.ends_with(b"apikey") {
        return true;
    }
    LAST_WORDS.iter().any(|w| {
        let w = w.as_bytes();
        lower.ends_with(w) && {
            let at = key.len() - w.len();
            at == 0
                || matches!(key[at - 1], b'_' | b'-' | b'.')
                || (key[at].is_ascii_uppercase() && key[at - 1].is_ascii_lowercase())
                || GLUED_WORDS.contains(&w)
        }
    })
}

/// Whether `key` names its credential only glued to the word before it
/// (`SSHpassword`, not `ssh_password` or `sshPassword`).
fn glued(key: &[u8]) -> bool {
    let lower = key.to_ascii_lowercase();
    GLUED_WORDS.iter().any(|w| {
        let at = key.len().saturating_sub(w.len());
        lower.ends_with(w)
            && at > 0
            && key[at - 1].is_ascii_alphanumeric()
            && !key[at].is_ascii_uppercase()
    })
}

/// A value that stays: visibly code, or a placeholder. `key` is a
/// URL's user for `form` 5.
fn kept(key: &[u8], v: &[u8], quoted: bool, form: usize, after: &[u8]) -> bool {
    let t = v.trim_ascii();
    if t.is_empty() || !t.iter().any(u8::is_ascii_alphanumeric) || filler(t, form == 5) {
        return true;
    }
    // `password = "123"`, `pass: 1`: a count or a sample, not a secret
    // (any URL's password still goes).
    if form != 5 && (t.len() < 4 || (t.len() < 6 && t.iter().all(u8::is_ascii_digit))) {
        return true;
    }
    if form == 5 {
        return url_syntax(key, t);
    }
    // The key's own name, or a value that holds the whole key or its
    // last word as one of its words (`password: password`,
    // `token = "token = "`, `addPassword = "#add-password"`,
    // `DB_PASSWORD=db_password_here`), names the field instead of filling
    // it, and so does the key glued into a name in capitals
    // (`password=DBPASSWORD`). Otherwise a key of one word is looked for
    // as a word only: glued to other letters in lower case
    // (`Password=thisismypassword`, `password=mypassword`) it is a weak
    // password, not the field's name.
    let lower_key = key.to_ascii_lowercase();
    let last = last_word(&lower_key);
    let lower = t.to_ascii_lowercase();
    let named = lower_key.len() > last.len() || !t.iter().any(u8::is_ascii_lowercase);
    if (named && memchr::memmem::find(&lower, &lower_key).is_some()) || words(t).any(|w| w == last)
    {
        return true;
    }
    // A URL is where a credential is used, not the credential; a
    // constant's name (`HEADER.PAYLOAD.SIGNATURE`) stands for one.
    if memchr::memmem::find(t, b"://").is_some() || constant_name(t) {
        return true;
    }
    if !quoted && (code(t) || (form == 1 && variable(key, t, after))) {
        return true;
    }
    // `credentials` names a structure or a setting
    // (`Access-Control-Allow-Credentials: true`, `credentials: 'include'`):
    // only a long machine-made value under it is one.
    if lower_key.ends_with(b"credentials") && (t.len() < 16 || !credential_like(t) || bare_word(t))
    {
        return true;
    }
    let password = LAST_WORDS[..6]
        .iter()
        .any(|w| lower_key.ends_with(w.as_bytes()));
    // A sentence is a message or a description, not a password; and a
    // key or a token is made by a machine, so words (`'secret': 'will be
    // replaced'`) or three lower-case words joined by `-` or `_` are a
    // phrase (`api_token: not-a-real-one`), though a passphrase may be
    // one.
    if password {
        // After a glued name (`someotherpassword = "doesnt start right"`)
        // any blank makes it a phrase: the name is less sure.
        let blanks = t.iter().filter(|c| **c == b' ').count();
        blanks >= 3 || (blanks > 0 && glued(key))
    } else {
        prose(t) || lowercase_phrase(t)
    }
}

/// References, placeholders, filler and masks, in any syntax: the
/// documented placeholders of EXPORT.md ("What is not a secret"). A
/// URL's password (`in_url`) stays only as a stand-in by syntax or
/// marker: a constant's name there (`user:PASSWORD@db`) or a time-based
/// UUID is replaced like any other value.
fn filler(t: &[u8], in_url: bool) -> bool {
    let placeholder = if in_url {
        stand_in(t)
    } else {
        is_placeholder(t) || uuid_v1(t)
    };
    placeholder
        || reference(t)
        || typed_filler(t)
        || marked_fake(t)
        || mask(t)
        // (`abababababababababab12`: two bits a byte.)
        || (t.len() >= 16 && entropy(t) < 2.0)
}

/// A URL's user and password that are syntax, not a credential: an
/// interpolation opened in the user (`${DB_USER:-app}@`), optional parts
/// (`[user[:password]@]`), GitHub's fixed `x-oauth-basic` after a token.
/// (A user repeated as the password, `postgres:postgres@`, is an image's
/// default credential, and goes.)
fn url_syntax(user: &[u8], password: &[u8]) -> bool {
    let open = |s: &[u8]| {
        s.iter().filter(|c| **c == b'{').count() > s.iter().filter(|c| **c == b'}').count()
    };
    open(user)
        || user.contains(&b'[')
        || password.contains(&b']')
        || password.eq_ignore_ascii_case(b"x-oauth-basic")
}

/// The words of a value, lower case: split at anything but a letter or
/// a digit, and where a capital starts a hump (`SuperSecretToken`).
fn words(v: &[u8]) -> impl Iterator<Item = Vec<u8>> + '_ {
    v.split(|c| !c.is_ascii_alphanumeric()).flat_map(|part| {
        let mut out = Vec::new();
        let mut from = 0;
        for i in 1..part.len() {
            if part[i].is_ascii_uppercase() && part[i - 1].is_ascii_lowercase() {
                out.push(part[from..i].to_ascii_lowercase());
                from = i;
            }
        }
        out.push(part[from..].to_ascii_lowercase());
        out
    })
}

/// A key's last word, lower case: after `_ - .`, or its camel hump
/// (`addPassword` is `password` once lowered, found as a suffix).
fn last_word(lower_key: &[u8]) -> &[u8] {
    let tail = lower_key
        .rsplit(|c| matches!(c, b'_' | b'-' | b'.'))
        .next()
        .unwrap_or(lower_key);
    LAST_WORDS
        .iter()
        .map(|w| w.as_bytes())
        .find(|w| tail.ends_with(w))
        .unwrap_or(tail)
}

/// `$VAR`, `${…}`, `{{ … }}`, `%(name)s`, `%s`, `#{…}`, and a name
/// enclosed (`<password>`, `{CONFIGURE_ME}`, `[secret]`, `@db.pass@`): a
/// value filled in elsewhere. (Maven's encrypted `{jSMOWnoPF…=}` is no
/// name.)
fn reference(v: &[u8]) -> bool {
    let name = |inner: &[u8]| {
        inner
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || b"_ .-".contains(c))
    };
    let enclosed = |open: u8, close: u8| {
        v.len() >= 2 && v[0] == open && v[v.len() - 1] == close && name(&v[1..v.len() - 1])
    };
    v.starts_with(b"$")
        || v.starts_with(b"%")
        || memchr::memmem::find(v, b"${").is_some()
        || memchr::memmem::find(v, b"{{").is_some()
        || memchr::memmem::find(v, b"#{").is_some()
        || memchr::memmem::find(v, b"%(").is_some()
        || memchr::memmem::find(v, b"%s").is_some()
        || enclosed(b'<', b'>')
        || enclosed(b'{', b'}')
        || enclosed(b'[', b']')
        || enclosed(b'@', b'@')
}

/// An unquoted name assigned in a statement of code: to a receiver's
/// member (`request.password = XMLHttpRequest`, `self.token = tok`), or
/// ended by `;` (`password = input;`) or `,` (a call's keyword argument,
/// `secret=match,`; an object's member, `token: tok,`). In config syntax
/// a word is a literal (`pwd: SomeWord`, `spring.datasource.password=hunter`),
/// and a string in JSON or YAML's flow style is quoted.
fn variable(key: &[u8], v: &[u8], after: &[u8]) -> bool {
    let name = v
        .iter()
        .all(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'$')
        && v[0].is_ascii_alphabetic()
        && !random_case(v);
    if !name {
        return false;
    }
    let receiver = key
        .split(|c| *c == b'.')
        .next()
        .and_then(|r| std::str::from_utf8(r).ok())
        .is_some_and(|r| key.contains(&b'.') && CODE_OBJECTS.contains(&r));
    receiver || matches!(after.trim_ascii_start().first(), Some(b';' | b','))
}

/// `****`, `xxxxxx`, `•••`: a mask.
fn mask(v: &[u8]) -> bool {
    v.iter()
        .all(|c| matches!(c, b'*' | b'x' | b'X' | b'.' | b'-'))
        || v.iter().all(|c| *c >= 0x80)
}

/// An unquoted value that is code: a call or an index (`getpass()`,
/// `env['X']`), a member (`self.password`, `config.db.pass`), a type
/// (`str`, `String`, `Option<String>`, `&str`), a dereference or a YAML
/// alias (`*semi`, `*db_password`) or a literal of the language. (`!`, `?`, `*`, `+` and `&` inside are a password's.)
fn code(v: &[u8]) -> bool {
    const LITERALS: &[&str] = &[
        "null",
        "none",
        "nil",
        "true",
        "false",
        "undefined",
        "str",
        "string",
        "bool",
        "int",
        "number",
        "any",
        "bytes",
        "secretstr",
        "optional",
        "required",
        "object",
        "char",
    ];
    if v.iter().any(|c| b"()[]".contains(c))
        || v.starts_with(b"&")
        || v.starts_with(b"*")
        || (v.ends_with(b">") && v.contains(&b'<'))
    {
        return true;
    }
    let lower = String::from_utf8_lossy(v).to_ascii_lowercase();
    if LITERALS.contains(&lower.as_str()) {
        return true;
    }
    // A member chain: names joined by dots, each starting with a letter
    // or `_` (a host or a version has a digit or a dash in a part).
    v.contains(&b'.')
        && v.split(|c| *c == b'.').all(|p| {
            p.first()
                .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
                && p.iter()
                    .all(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'$')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sibling_keys_user_beside_a_password() {
        let user = |s: &str| {
            let at = s.find("!PW!").unwrap();
            let s = s.replacen("!PW!", "", 1);
            let end = at
                + s[at..]
                    .find(|c: char| !(c.is_alphanumeric() || "_.$-".contains(c)))
                    .unwrap();
            sibling_user(s.as_bytes(), at, end).map(|(a, b)| s[a..b].to_string())
        };
        for (s, want) in [
            (
                "SMTP_USER=mailer7\nSMTP_HOST=smtp.x\n!PW!SMTP_PASSWORD=hunter2",
                "mailer7",
            ),
            (
                "$user = \"mg1021\"; $!PW!password = \"goodspec\";",
                "mg1021",
            ),
            (
                "spring.datasource.username=app\n!PW!spring.datasource.password=pw",
                "app",
            ),
            (
                "  \"username\": \"ci-bot\",\n  \"!PW!password\": \"x\"",
                "ci-bot",
            ),
            ("!PW!DB_PASS=x\nDB_USER=reporting", "reporting"),
            (
                "[site]\nUsername=thisismyunsername\n!PW!Password=x",
                "thisismyunsername",
            ),
        ] {
            assert_eq!(user(s).as_deref(), Some(want), "{s:?}");
        }
        for s in [
            // Another account's key, code, too far, or no password word.
            "SMTP_USER=a\n!PW!DB_PASSWORD=x",
            "db_user = config.user\n!PW!db_password = x",
            "user=a\n1\n2\n3\n!PW!password=x",
            "API_USER=a\n!PW!API_TOKEN=x",
        ] {
            assert_eq!(user(s), None, "{s:?}");
        }
        // Past the reach on one long line, as far as lines go.
        let far = format!("user=a;{}!PW!password=x", " ".repeat(USER_REACH));
        assert_eq!(user(&far), None);
        let near = format!("user=a;{}!PW!password=x", " ".repeat(USER_REACH - 16));
        assert_eq!(user(&near).as_deref(), Some("a"));
    }

    #[test]
    fn a_commands_user_flag_before_its_password() {
        let user = |s: &str, short: bool| {
            let at = s.rfind(' ').unwrap() + 1;
            cli_user(s.as_bytes(), at, short).map(|(a, b)| s[a..b].to_string())
        };
        for (s, want) in [
            ("psexec \\\\host -u Administrator -p x", "Administrator"),
            ("mysql -uroot -p x", "root"),
            ("mysql --user=deployer --password=x", "deployer"),
            (
                "Connect-VIServer -Server h -User admin@vsphere.local -Password x",
                "admin@vsphere.local",
            ),
            ("net use \\\\fs\\share /user:CORP\\svc x", "CORP\\svc"),
            ("psql -U postgres -h db --password x", "postgres"),
        ] {
            assert_eq!(user(s, true).as_deref(), Some(want), "{s}");
        }
        assert_eq!(user("python -u app.py --password x", false), None);
        assert_eq!(user("cd /srv; -u alice; tool --password x", true), None);
        let far = format!("psexec -u adm {}-p x", " ".repeat(USER_REACH));
        assert_eq!(user(&far, true), None);
        assert_eq!(
            user("Connect-VIServer -User admin -Password x", false).as_deref(),
            Some("admin")
        );
    }

    fn find(s: &str) -> Vec<&str> {
        let re = super::super::compile(PATTERN).unwrap();
        let mut out = Vec::new();
        hits(0, &re, s.as_bytes(), None, &mut out);
        out.iter().map(|h| &s[h.start..h.end]).collect()
    }

    proptest::proptest! {
        /// Reading only the lines that hold a keyword finds what one
        /// search of the whole string finds.
        #[test]
        fn lines_with_a_keyword_are_all_there_is_to_read(
            parts in proptest::collection::vec(
                proptest::sample::select(vec![
                    "password", "Token", "api_key", "master", "secret", "pass", "x", "db_url",
                    "=", ": ", " = ", "\"", "'", "\n", "\r\n", " ", "\t", ",", ";", "#",
                    "hunter2", "Zq9xY7wV", "${X}", "https://", "postgres://", "u:", "p@h",
                    "<password>", "</password>", "<", ">", ";Pwd=", "| key | ", "|", " |", "export ",
                ]),
                0..40,
            ),
        ) {
            let text = parts.concat();
            let re = super::super::compile(PATTERN).unwrap();
            let (mut by_line, mut whole) = (Vec::new(), Vec::new());
            hits(0, &re, text.as_bytes(), None, &mut by_line);
            line_hits(0, &re, text.as_bytes(), (0, text.len()), &mut whole);
            proptest::prop_assert_eq!(by_line, whole, "{:?}", text);
        }
    }

    #[test]
    fn a_word_after_a_credential_key_in_config_syntax_is_replaced() {
        for (text, want) in [
            ("password=qwerty", &["qwerty"][..]),
            ("pwd: SomeWord", &["SomeWord"]),
            ("\"pw\" : \"Value\"", &["Value"]),
            ("spring.datasource.password=hunter2go", &["hunter2go"]),
            ("  dbPassword: open_sesame  # prod", &["open_sesame"]),
            ("export DB_PASS='letmein'", &["letmein"]),
            ("<master>orangejuice</master>", &["orangejuice"]),
            ("<password>tiger</password>", &["tiger"]),
            (
                "<Pass encoding=\"base64\">aHVudGVyMg==</Pass>",
                &["aHVudGVyMg=="],
            ),
            ("<password data='123'> letmein </password>", &["letmein"]),
            // A URL in an element's attribute is read as well.
            (
                "<a href=\"http://admin:hunter2go@db.local\">db</a>",
                &["hunter2go", "admin"],
            ),
            (
                "apiKey |e9e0f062f587b423bb6cc6328eb786d75b45783e",
                &["e9e0f062f587b423bb6cc6328eb786d75b45783e"],
            ),
            ("password | hunter2go |", &["hunter2go"]),
            // An .npmrc line scoped to a registry's path.
            (
                "//acme.npm/releases:_password=CorrectHorseBatteryStaple",
                &["CorrectHorseBatteryStaple"],
            ),
            (
                "{\"user\": \"a\", \"client_secret\": \"swordfish\"}",
                &["swordfish"],
            ),
            (
                "//somewhere.example/another:_auth=CorrectHorseBatteryStaple",
                &["CorrectHorseBatteryStaple"],
            ),
            ("_auth = dXNlcjpodW50ZXIy", &["dXNlcjpodW50ZXIy"]),
            // One of a list of passwords.
            (
                "<o2_1_passwords>Hardcoded1</o2_1_passwords>",
                &["Hardcoded1"],
            ),
            ("DB_PASSWORDS=Zk2pass", &["Zk2pass"]),
            // The key's word glued into a weak password, not its name.
            ("Password=thisismypassword", &["thisismypassword"]),
            // A DSL's key and quoted value, alone on the line.
            ("          password \"Zr8Kq2Vn5Xw1\"", &["Zr8Kq2Vn5Xw1"]),
            (
                "  pass 'A:J$NL9~6:u:L$_:VO4tf))h#v0i}O';",
                &["A:J$NL9~6:u:L$_:VO4tf))h#v0i}O"],
            ),
            ("password: mypassword", &["mypassword"]),
        ] {
            assert_eq!(find(text), want, "{text:?}");
        }
    }

    /// The user of a connection string or a URL goes with the password
    /// beside it, not without one, and not when it is a reference.
    #[test]
    fn the_user_beside_a_replaced_password_goes_with_it() {
        for (text, want) in [
            (
                "Server=host;Port=5432;User Id=username;Password=secret;Database=db;",
                &["secret", "username"][..],
            ),
            ("Driver={ODBC};Server=x;Uid=me;Pwd=letmein;", &["letmein", "me"]),
            (
                "jdbc:sqlserver://db:1433;user=sa;password=Summer2024",
                &["Summer2024", "sa"],
            ),
            (
                "conn = \"Data Source=db;User ID=kmwulfliq;Password=sK!g2Ex_=jJ6Gx5v\" ; user=other",
                &["sK!g2Ex_=jJ6Gx5v", "kmwulfliq"],
            ),
            (
                "connectionString=\"Server=qa1; Database=Yogurt; User Id=kmwulfliq; password= sK!g2Ex_jJ6Gx5v\"",
                &["sK!g2Ex_jJ6Gx5v", "kmwulfliq"],
            ),
            ("https://alice:pass@example.org/x", &["pass", "alice"]),
            ("ftp://user:secret@ftp.trusted.com", &["secret", "user"]),
            ("mysql://${DB_USER}:Summer2024@db/x", &["Summer2024"]),
            ("Server=x;Uid=${DB_USER};Pwd=letmein;", &["letmein"]),
            // No password, or one that stays: the user stays too.
            ("Server=x;Uid=me;Database=app;", &[]),
            ("Server=x;Uid=me;Pwd=${DB_PASSWORD};", &[]),
        ] {
            assert_eq!(find(text), want, "{text:?}");
        }
    }

    #[test]
    fn code_references_and_placeholders_stay() {
        for text in [
            // The field's own name, as a word or in capitals.
            "DB_PASSWORD=db_password_here",
            "password=DBPASSWORD",
            "    password \"SOME_PASSWORD\"",
            "echo 'password'",
            "the password 'is' here",
            "password = getpass()",
            "password = self.password",
            "password: str",
            "password: Option<String>,",
            "password=${DB_PASSWORD}",
            "password: \"{{ vault_db_password }}\"",
            "PASSWORD=$PASSWORD",
            "password = None",
            "password: <your password>",
            "password=changeme",
            "password: '****'",
            "password: password",
            "password_hash = bcrypt",
            "max_tokens: 4096x",
            "https://${USER}:${PASS}@host",
            "if password == secret:",
            "        job_token::JobToken,",
            "                    secret=match,",
            "            'secret': 'will be replaced',",
            "                    'token': tok,",
            "    semi_token: *semi,",
            "        'X-TOKEN-SECRET': 'SuperSecretToken',",
            "  withCredentials: kEnumerableProperty",
            "| token | the token you were sent by mail |",
            "| apiKey | string | yes |",
            "apiKey | string",
            "  token|key)",
            "password | base64 -d",
            "| 1 | session.jsonl | 3 | /3/output | secret | credential-field | [REDACTED_SECRET:credential-field:0a1b2c3d] | x |",
            "token: ${{ secrets.GITHUB_TOKEN }}",
            "\"token\": \"Enter the token you received by mail\"",
            "<master>https://example.com</master> is the main branch",
        ] {
            assert_eq!(find(text), Vec::<&str>::new(), "{text:?}");
        }
    }

    #[test]
    fn every_hit_passes_the_gate() {
        for text in [
            "password=qwerty",
            "\"pw\" : \"Value\"",
            "<master>orangejuice</master>",
            "https://alice:pass@example.org/x",
            "x;Pwd=letmein;",
        ] {
            let hay = text.as_bytes();
            let lower = text.to_ascii_lowercase();
            let passed = KEYWORDS.iter().any(|k| {
                lower
                    .match_indices(k)
                    .any(|(i, _)| follows(&hay[i + k.len()..]))
            });
            assert!(passed, "{text:?}");
        }
    }
}
