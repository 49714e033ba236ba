//! Text lines read with the line before them, for the credential layouts
//! that put a line break between a name and its value: an element whose
//! opening tag stands alone on its line, and an assignment a formatter
//! broke after its operator (or before it):
//!
//! ```text
//! <apiToken>                      const apiKey =
//!     2afd90c1e7b44c5e9a1d0f3b      "2afd90c1e7b44c5e9a1d0f3b";
//! </apiToken>                     SECRET_KEY = (
//!                                     "2afd90c1e7b44c5e9a1d0f3b"
//!                                 )
//! ```
//!
//! Text is scanned a line at a time, so neither line alone shows the value
//! next to its name. The pair is read as the one line it stands for
//! (`<apiToken>2afd…</`, `const apiKey = "2afd…";`), and only the verdicts
//! of the rules that read a value next to its label are taken from it:
//! every other rule already saw each line on its own. In a patch, two
//! added (or two removed) lines pair the same way.

/// The longest previous line that can hold the name. Both the batches of
/// a two-core pass and the pairs inside one batch keep to it, so where a
/// batch ends never changes what is found.
pub const MAX_OPENING_LINE: usize = 256;

/// Whether a line holds only blanks: it stands between a name and its
/// value without parting them (`Your password is:`, an empty line, the
/// password), so the line a value is read with is the last one that is
/// not blank.
pub fn blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

/// Whether `line` leaves the line before it as the one the next line is
/// read with: a blank line, or an item of a YAML list under a key that
/// names credentials (`db_passwords:`, then `- "…"` lines), so that each
/// item is read with its key and not with the item before it.
pub fn keeps_previous(prev: Option<&[u8]>, line: &[u8]) -> bool {
    blank(line)
        || prev.is_some_and(|prev| {
            let (prev, rest) = unmarked(prev, line);
            // The cheap test first: this runs on every line.
            rest.trim_ascii_start().first() == Some(&b'-')
                && std::str::from_utf8(rest).is_ok_and(|r| list_item(r.trim()).is_some())
                && std::str::from_utf8(prev).is_ok_and(|p| list_key(p.trim()).is_some())
        })
}

/// The line the line after `line` is read with, when `line` was read
/// with `prev`: `prev` again ([`keeps_previous`]), else `line` when it
/// is short enough to hold a name ([`MAX_OPENING_LINE`]).
pub fn next_previous<'a>(prev: Option<&'a [u8]>, line: &'a [u8]) -> Option<&'a [u8]> {
    if keeps_previous(prev, line) {
        prev
    } else {
        (line.len() <= MAX_OPENING_LINE).then_some(line)
    }
}

/// `prev` and `line` without the patch marker (`+` or `-`) both start
/// with, as [`join`] reads them.
fn unmarked<'a, 'b>(prev: &'a [u8], line: &'b [u8]) -> (&'a [u8], &'b [u8]) {
    match (prev.first(), line.first()) {
        (Some(m @ (b'+' | b'-')), Some(l)) if m == l => (&prev[1..], &line[1..]),
        _ => (prev, line),
    }
}

/// The key of `passwords:` alone on its line (perhaps quoted, perhaps
/// itself a list item) when it names credentials (`names::is_secret_name`:
/// `db_passwords`, `api_keys`; not `secrets`, which in a compose file
/// lists the names of secrets).
fn list_key(prev: &str) -> Option<&str> {
    let key = prev.strip_suffix(':')?;
    let key = key.strip_prefix("- ").map_or(key, str::trim_start);
    let key = ['"', '\'']
        .iter()
        .find_map(|q| key.strip_prefix(*q)?.strip_suffix(*q))
        .unwrap_or(key);
    let is_name = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-');
    (!key.is_empty()
        && key.len() <= 64
        && key.bytes().all(is_name)
        && crate::detect::names::is_secret_name(&crate::detect::names::normalize(key), &[]))
    .then_some(key)
}

/// The scalar of a list item alone (`- hunter2go`, `- "Hunter 2"`): a
/// quoted string, or one token that is not a mapping, an anchor, an
/// alias, a flow collection or a block scalar's indicator.
fn list_item(rest: &str) -> Option<&str> {
    let value = rest.strip_prefix('-')?;
    if !value.starts_with([' ', '\t']) {
        return None;
    }
    let value = value.trim();
    let quoted = ['"', '\'']
        .iter()
        .any(|q| value.len() >= 2 && value.starts_with(*q) && value.ends_with(*q));
    let token = !value.is_empty()
        && !value.contains(char::is_whitespace)
        && !value.starts_with(['#', '{', '[', '&', '*', '|', '>', '-', '!'])
        && !value.ends_with(':');
    (quoted || token).then_some(value)
}

/// A line pair read as one: the second line's part is `text[at..]` up to
/// `len` bytes, and begins at byte `in_line` of the second line.
#[derive(Debug, PartialEq, Eq)]
pub struct Joined {
    /// The pair as one line.
    pub text: String,
    /// Where the second line's part starts in `text`.
    pub at: usize,
    /// Where that part starts in the second line.
    pub in_line: usize,
    /// Its length.
    pub len: usize,
}

/// The pair as one line, when `prev` (at most [`MAX_OPENING_LINE`] bytes)
/// and `line` are one of the layouts above, both perhaps behind the same
/// patch marker (`+` or `-`):
/// - `prev` is a name element (`<name>NAME</name>`, `<key>NAME</key>`)
///   and `line` starts with a `<value>` or `<string>` element: the two
///   joined;
/// - `prev` is an opening tag alone (`<name>`, no attributes) and `line`
///   is element text (no `<` or `>`, not blank): `<name>text</`;
/// - `prev` ends in `:` and `line` is one token alone (a YAML scalar on
///   the next line, a note's label then its value);
/// - `prev` ends in `=`, `= (` or `:` and `line` starts with a quote, or
///   `prev` ends in a name and `line` starts with `=` and then a quote:
///   the two joined by a space;
/// - `prev` is `name: NAME` (perhaps a list item, the name perhaps
///   quoted) and `line` is `value: …`: `NAME: …`;
/// - `prev` ends in `,` and `line` starts with a `"value"` or `"Value"`
///   member (pretty-printed JSON: an env entry's `"name": "DB_PASSWORD",`
///   or an SSM parameter's `"Type": "SecureString",` before it): the two
///   joined by a space.
///
/// Anything else, `None`: this is tested on every line, so it looks at
/// bytes only.
pub fn join(prev: &[u8], line: &str) -> Option<Joined> {
    if prev.len() > MAX_OPENING_LINE {
        return None;
    }
    let marker = match (prev.first(), line.as_bytes().first()) {
        (Some(m @ (b'+' | b'-')), Some(l)) if m == l => 1,
        _ => 0,
    };
    let prev = std::str::from_utf8(prev[marker..].trim_ascii()).ok()?;
    let rest = line[marker..].trim();
    if prev.is_empty() || rest.is_empty() {
        return None;
    }
    let mut in_line = line.len() - line[marker..].trim_start().len();
    let mut rest = rest;
    let (head, tail) = if let Some(value) = list_key(prev).and(list_item(rest)) {
        in_line += rest.len() - value.len();
        rest = value;
        (
            prev.strip_prefix("- ")
                .map_or(prev, str::trim_start)
                .to_string()
                + " ",
            "",
        )
    } else if let Some((name, value)) = yaml_name_value(prev, rest) {
        in_line += rest.len() - value.len();
        rest = value;
        (format!("{name}: "), "")
    } else if named_element(prev) && value_element(rest) {
        (prev.to_string(), "")
    } else if let Some(tag) = opening_tag(prev) {
        if rest.contains(['<', '>']) {
            return None;
        }
        (tag.to_string(), "</")
    } else if let Some(head) = label_over_value(prev, rest) {
        (head, "")
    } else if is_assigned(prev, rest) || value_member_follows(prev, rest) {
        let head = prev.strip_suffix('(').map_or(prev, str::trim_end);
        (format!("{head} "), "")
    } else {
        return None;
    };
    Some(Joined {
        text: format!("{head}{rest}{tail}"),
        at: head.len(),
        in_line,
        len: rest.len(),
    })
}

/// A YAML list item's name and the value on the line after it
/// (`- name: DB_PASSWORD`, then `value: "…"`; Kubernetes' and compose
/// files' `env` lists, `- key: …` lists, CloudFormation's `- Name: …`
/// then `Value: …` and `- ParameterKey: …` then `ParameterValue: …`):
/// the name, and `rest` after the value's key. The keys end in `name` or
/// `key` and in `value`, any case, as the JSON passes read the same pair
/// (`names::pair_value_member`).
fn yaml_name_value<'r>(prev: &str, rest: &'r str) -> Option<(String, &'r str)> {
    let item = prev.strip_prefix('-').map_or(prev, str::trim_start);
    let name = key_ending_in(item, &["name", "key"])?.trim();
    let name = ['"', '\'']
        .iter()
        .find_map(|q| name.strip_prefix(*q)?.strip_suffix(*q))
        .unwrap_or(name);
    let is_name = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-' | b'/');
    if name.is_empty() || !name.bytes().all(is_name) {
        return None;
    }
    let value = key_ending_in(rest, &["value"])?.trim_start();
    (!value.is_empty()).then(|| (name.to_string(), value))
}

/// The longest key [`key_ending_in`] reads.
const MAX_KEY: usize = 29;

/// What follows `key:` at the start of `line` when the key is letters
/// ([`MAX_KEY`] at most, read no further: this runs on every line)
/// ending in one of `ends` (any case).
fn key_ending_in<'l>(line: &'l str, ends: &[&str]) -> Option<&'l str> {
    let b = line.as_bytes();
    let n = letters(b);
    if n > MAX_KEY || b.get(n) != Some(&b':') || !ends_in(&b[..n], ends) {
        return None;
    }
    Some(&line[n + 1..])
}

/// How many letters `b` starts with, counted to [`MAX_KEY`] + 1 at most.
fn letters(b: &[u8]) -> usize {
    b.iter()
        .take(MAX_KEY + 1)
        .take_while(|c| c.is_ascii_alphabetic())
        .count()
}

/// Whether `key` ends in one of `ends` (any case).
fn ends_in(key: &[u8], ends: &[&str]) -> bool {
    ends.iter().any(|e| {
        key.len() >= e.len() && key[key.len() - e.len()..].eq_ignore_ascii_case(e.as_bytes())
    })
}

/// Whether `rest` is a `"value"` member after a member `prev` closed
/// with a comma.
fn value_member_follows(prev: &str, rest: &str) -> bool {
    let Some(r) = rest.strip_prefix('"').filter(|_| prev.ends_with(',')) else {
        return false;
    };
    let b = r.as_bytes();
    let n = letters(b);
    n <= MAX_KEY
        && b.get(n) == Some(&b'"')
        && ends_in(&b[..n], &["value"])
        && r[n + 1..].trim_start().starts_with(':')
}

/// Whether `prev` is a name element alone: `<name>…</name>` (a Hadoop
/// property) or `<key>…</key>` (a property list).
fn named_element(prev: &str) -> bool {
    [("<name>", "</name>"), ("<key>", "</key>")]
        .iter()
        .any(|(open, close)| {
            prev.strip_prefix(open)
                .and_then(|p| p.strip_suffix(close))
                .is_some_and(|n| !n.contains(['<', '>']))
        })
}

/// Whether `rest` opens the value element that follows a name element.
fn value_element(rest: &str) -> bool {
    rest.starts_with("<value>") || rest.starts_with("<string>")
}

/// `prev` when it is `<name>` alone.
fn opening_tag(prev: &str) -> Option<&str> {
    let name = prev.strip_prefix('<')?.strip_suffix('>')?;
    let is_name = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-');
    (!name.is_empty() && name.bytes().all(is_name)).then_some(prev)
}

/// A value alone on its line after a label's colon (YAML's `password:`
/// then an indented `hunter2go`, a note's `zulip api key:` then the key):
/// one token, no list item, comment or mapping.
fn lone_value(rest: &str) -> bool {
    rest.len() >= 4
        && !rest.contains(char::is_whitespace)
        && !rest.starts_with(['-', '#', '{', '[', '<', '/'])
        && !rest.ends_with(':')
}

/// The last words that make a line a label (`zulip api key:`, `eventbrite
/// private access key`).
const LABEL_ENDS: &[&str] = &[
    "password",
    "passphrase",
    "secret",
    "key",
    "apikey",
    "token",
    "tokens",
];

/// Whether `line`'s last word is one of [`LABEL_ENDS`].
fn ends_in_label_word(line: &str) -> bool {
    let last = line.split_whitespace().next_back().unwrap_or("");
    LABEL_ENDS.iter().any(|w| last.eq_ignore_ascii_case(w))
}

/// A sentence that names a credential and ends in a colon (`Please use
/// the following password to proceed:`, `Your new API token is:`): the
/// key its value stands for, as a key (`password`, `token`...). A label
/// that ends in its credential word (`zulip api key:`) is read as it
/// stands, its service's name included.
fn prose_label(prev: &str) -> Option<&'static str> {
    let sentence = prev.strip_suffix(':')?;
    if sentence.split_whitespace().count() < 3 || ends_in_label_word(sentence) {
        return None;
    }
    let lower = sentence.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    // A word of the sentence's own, perhaps plural (`tokens`), not part
    // of another (`tokenizer`, `subtoken`).
    let edge = |b: Option<&u8>| !b.is_some_and(u8::is_ascii_alphanumeric);
    [
        ("password", "password"),
        ("passphrase", "passphrase"),
        ("secret", "secret"),
        ("api key", "api_key"),
        ("apikey", "api_key"),
        ("token", "token"),
    ]
    .iter()
    .find(|(w, _)| {
        lower.match_indices(w).any(|(i, _)| {
            let after = bytes.get(i + w.len());
            edge(i.checked_sub(1).and_then(|j| bytes.get(j)))
                && (edge(after) || after == Some(&b's'))
        })
    })
    .map(|(_, key)| *key)
}

/// A label alone on its line, without a colon, that ends in a
/// credential's word (`eventbrite private access key`, `API token`): a
/// note's heading over the value on the next line.
fn bare_label(prev: &str) -> bool {
    let plain = prev
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b' ' | b'\t' | b'_' | b'-' | b'.'));
    plain && prev.split_whitespace().count() <= 6 && ends_in_label_word(prev)
}

/// The head a sentence or a bare label ([`prose_label`], [`bare_label`])
/// gives the lone token on the line after it, when that token looks made
/// by a machine (prose goes on with words there: `The token types are:`
/// then `bearer`). The cheap test first: most lines hold blanks, and this
/// runs on every line pair.
fn label_over_value(prev: &str, rest: &str) -> Option<String> {
    if !lone_value(rest) {
        return None;
    }
    let head = match prose_label(prev) {
        Some(word) => format!("{word}: "),
        None if bare_label(prev) => format!("{prev}: "),
        None => return None,
    };
    crate::detect::rules::named::plausible(rest.as_bytes(), false).then_some(head)
}

/// Whether `prev` leaves an assignment open that `rest` completes.
fn is_assigned(prev: &str, rest: &str) -> bool {
    let quoted = |s: &str| s.starts_with(['"', '\'', '`']);
    let open = prev.strip_suffix('(').map_or(prev, str::trim_end);
    if open.ends_with(['=', ':']) {
        return quoted(rest) || (prev.ends_with(':') && lone_value(rest));
    }
    let ends_in_name = prev
        .bytes()
        .last()
        .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_');
    ends_in_name
        && rest
            .strip_prefix('=')
            .is_some_and(|r| !r.starts_with('=') && quoted(r.trim_start()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(j: &Joined) -> &str {
        &j.text[j.at..j.at + j.len]
    }

    #[test]
    fn a_list_item_is_read_with_the_credential_key_above_its_list() {
        let j = join(b"  db_passwords:", "    - \"Hunter 2\"").unwrap();
        assert_eq!(j.text, "db_passwords: \"Hunter 2\"");
        assert_eq!(part(&j), "\"Hunter 2\"");
        assert_eq!(j.in_line, 6);
        let j = join(b"+- api_keys:", "+  - Zq8vLm2x").unwrap();
        assert_eq!(
            (j.text.as_str(), part(&j)),
            ("api_keys: Zq8vLm2x", "Zq8vLm2x")
        );
        // The key stays the line items are read with; not under another
        // key, nor for a mapping, an alias or a nested list.
        assert!(keeps_previous(Some(b"passwords:"), b"  - hunter2go"));
        assert!(keeps_previous(Some(b"+passwords:"), b"+  - hunter2go"));
        for (prev, line) in [
            (&b"hosts:"[..], &b"  - primary01"[..]),
            (b"secrets:", b"  - db_password"),
            (b"passwords:", b"  - name: x"),
            (b"passwords:", b"  - *alias"),
            (b"passwords:", b"  - - x"),
            (b"passwords: x", b"  - y"),
        ] {
            assert!(!keeps_previous(Some(prev), line), "{prev:?} {line:?}");
        }
        assert!(join(b"hosts:", "  - primary01").is_none());
    }

    #[test]
    fn a_sentence_naming_a_credential_labels_the_token_after_it() {
        let j = join(
            b"Please use the following password to proceed to installation:",
            "bd9627decc6346d780b3b6ab6ea8fe1f",
        )
        .unwrap();
        assert_eq!(j.text, "password: bd9627decc6346d780b3b6ab6ea8fe1f");
        assert_eq!(part(&j), "bd9627decc6346d780b3b6ab6ea8fe1f");
        assert_eq!(
            join(b"Your new API tokens are:", "  Q7xk29fLq83ZmP0aRt").map(|j| j.text),
            Some("token: Q7xk29fLq83ZmP0aRt".into())
        );
        // A word, a phrase, a sentence naming no credential, a label
        // ending in its word: no key is made up for them.
        for (prev, line) in [
            ("The token types are:", "bearer"),
            (
                "Please use the following password to proceed:",
                "hunter2 and more",
            ),
            (
                "See the tokenizer docs for details:",
                "bd9627decc6346d780b3b6ab6ea8fe1f",
            ),
            ("the zulip api key:", "Q7Hd93KxPz2LmWv8RtY4"),
            (
                "Each of the subtokens is listed here:",
                "Q7Hd93KxPz2LmWv8RtY4",
            ),
        ] {
            let text = join(prev.as_bytes(), line).map(|j| j.text);
            let made_up = ["password: ", "token: ", "api_key: "];
            assert!(
                !text
                    .as_ref()
                    .is_some_and(|t| made_up.iter().any(|m| t.starts_with(m))),
                "{prev} / {line}: {text:?}"
            );
        }
    }

    #[test]
    fn a_label_alone_without_a_colon_labels_the_token_after_it() {
        let j = join(b"eventbrite private access key", "ZXC2JK3HV4TY5UIO6PLK").unwrap();
        assert_eq!(
            j.text,
            "eventbrite private access key: ZXC2JK3HV4TY5UIO6PLK"
        );
        assert_eq!(part(&j), "ZXC2JK3HV4TY5UIO6PLK");
        for (prev, line) in [
            ("API token", "bearer"),
            ("the primary key", "id"),
            ("Set the key and run:", "Q7xk29fLq83ZmP0aRtY4 now"),
            (
                "foreign key (user_id) references users",
                "Q7xk29fLq83ZmP0aRtY4",
            ),
        ] {
            assert_eq!(join(prev.as_bytes(), line), None, "{prev} / {line}");
        }
    }

    #[test]
    fn an_opening_tag_alone_and_a_value_alone_join() {
        let j = join(b"  <apiToken>  ", "\t  2afd90c1 \r").unwrap();
        assert_eq!(j.text, "<apiToken>2afd90c1</");
        assert_eq!(part(&j), "2afd90c1");
        assert_eq!((j.in_line, j.len), (3, 8));
    }

    #[test]
    fn a_name_element_and_a_value_element_join() {
        for (prev, line) in [
            (
                "  <name>fs.s3a.secret.key</name>",
                "  <value>2afd90c1</value>",
            ),
            ("\t<key>API_SECRET</key>", "\t<string>2afd90c1</string>"),
        ] {
            let j = join(prev.as_bytes(), line).unwrap();
            assert_eq!(j.text, format!("{}{}", prev.trim(), line.trim()));
            assert_eq!(part(&j), line.trim());
        }
        for (prev, line) in [
            ("<name>a</name><name>b</name>", "<value>2afd90c1</value>"),
            (
                "<name>fs.s3a.secret.key</name>",
                "<description>x</description>",
            ),
        ] {
            assert_eq!(join(prev.as_bytes(), line), None, "{prev} / {line}");
        }
    }

    #[test]
    fn an_assignment_broken_after_or_before_its_operator_joins() {
        for (prev, line, text) in [
            (
                "const apiKey =",
                "  \"2afd90c1\";",
                "const apiKey = \"2afd90c1\";",
            ),
            (
                "SECRET_KEY = (",
                "    '2afd90c1'",
                "SECRET_KEY = '2afd90c1'",
            ),
            ("SECRET_KEY = (  ", "'2afd90c1'", "SECRET_KEY = '2afd90c1'"),
            (
                "  \"password\":",
                "`2afd90c1`,",
                "\"password\": `2afd90c1`,",
            ),
            (
                "String ACCOUNT_KEY",
                "  = \"2afd90c1\";",
                "String ACCOUNT_KEY = \"2afd90c1\";",
            ),
        ] {
            let j = join(prev.as_bytes(), line).unwrap();
            assert_eq!(j.text, text);
            assert_eq!(part(&j), line.trim());
            assert_eq!(&line[j.in_line..j.in_line + j.len], line.trim());
        }
        for (prev, line) in [
            ("const apiKey =", "2afd90c1;"),
            ("apiKey", "== \"2afd90c1\""),
            ("apiKey)", "= \"2afd90c1\""),
            ("const apiKey = f(", "\"2afd90c1\""),
            ("apiKey ||", "\"2afd90c1\""),
        ] {
            assert_eq!(join(prev.as_bytes(), line), None, "{prev} / {line}");
        }
    }

    #[test]
    fn a_name_item_then_its_value_joins_as_an_assignment() {
        for (prev, line, text, part_of_line) in [
            (
                "  - name: DB_PASSWORD",
                "    value: Zq8vLm3Nx7Rt2Wp",
                "DB_PASSWORD: Zq8vLm3Nx7Rt2Wp",
                "Zq8vLm3Nx7Rt2Wp",
            ),
            (
                "- name: \"api-token\"",
                "  value:   \"ghx8Fq2L\"  ",
                "api-token: \"ghx8Fq2L\"",
                "\"ghx8Fq2L\"",
            ),
            ("name: 'KEY_1'", "value: x", "KEY_1: x", "x"),
            // A key/value list's item, CloudFormation's parameter.
            (
                "    - key: pro_password",
                "      value: hardcoded1",
                "pro_password: hardcoded1",
                "hardcoded1",
            ),
            (
                "- Name: DbSecret",
                "  Value: Zq8vLm3N",
                "DbSecret: Zq8vLm3N",
                "Zq8vLm3N",
            ),
            // The pair as other services spell it.
            (
                "  - ParameterKey: DbPassword",
                "    ParameterValue: hardcoded3",
                "DbPassword: hardcoded3",
                "hardcoded3",
            ),
            (
                "- OptionName: /prod/db/password",
                "  Value: hardcoded4",
                "/prod/db/password: hardcoded4",
                "hardcoded4",
            ),
        ] {
            let j = join(prev.as_bytes(), line).unwrap();
            assert_eq!(j.text, text);
            assert_eq!(part(&j), part_of_line);
            assert_eq!(&line[j.in_line..j.in_line + j.len], part_of_line);
        }
        for (prev, line) in [
            ("- name: DB_PASSWORD", "  valueFrom:"),
            ("- name: DB_PASSWORD", "  value:"),
            ("- name: DB PASSWORD", "  value: x"),
            ("- names: DB_PASSWORD", "  value: x"),
            ("- keys: DB_PASSWORD", "  value: x"),
            ("- key: DB_PASSWORD", "  values: x"),
            ("- name: DB_PASSWORD", "  # value: x"),
        ] {
            assert_eq!(join(prev.as_bytes(), line), None, "{prev} / {line}");
        }
    }

    #[test]
    fn a_lone_value_after_a_labels_colon_joins_it() {
        let j = join(b"password:", "  hunter2go").unwrap();
        assert_eq!(
            (j.text.as_str(), part(&j)),
            ("password: hunter2go", "hunter2go")
        );
        let j = join(b"zulip api key:", "Q7Hd93KxPz2LmWv8RtY4").unwrap();
        assert_eq!(j.text, "zulip api key: Q7Hd93KxPz2LmWv8RtY4");
        for (prev, line) in [
            ("steps:", "  - run: make"),
            ("env:", "  FOO: bar"),
            ("note:", "two words"),
            ("password:", "  # none"),
            ("outer:", "  inner:"),
            ("x:", "abc"),
        ] {
            assert_eq!(join(prev.as_bytes(), line), None, "{prev} / {line}");
        }
    }

    #[test]
    fn a_value_member_joins_the_member_before_it() {
        let j = join(
            b"        \"Type\": \"SecureString\",",
            "        \"Value\": \"hunter2-prod\",",
        )
        .unwrap();
        assert_eq!(
            j.text,
            "\"Type\": \"SecureString\", \"Value\": \"hunter2-prod\","
        );
        assert_eq!(part(&j), "\"Value\": \"hunter2-prod\",");
        let j = join(
            b"{\"ParameterKey\": \"DbPassword\",",
            "  \"ParameterValue\": \"x\"}",
        )
        .unwrap();
        assert_eq!(part(&j), "\"ParameterValue\": \"x\"}");
        let j = join(b"{\"name\": \"DB_PASSWORD\",", " \"value\": \"x\"}").unwrap();
        assert_eq!(j.text, "{\"name\": \"DB_PASSWORD\", \"value\": \"x\"}");
        assert_eq!(
            join(b"\"Type\": \"SecureString\"", "\"Value\": \"x\""),
            None
        );
        assert_eq!(
            join(b"\"Type\": \"SecureString\",", "\"Version\": 1,"),
            None
        );
    }

    #[test]
    fn a_patch_pairs_lines_on_the_same_side_only() {
        let j = join(b"+  <apiToken>", "+    2afd90c1").unwrap();
        assert_eq!(j.text, "<apiToken>2afd90c1</");
        assert_eq!(j.in_line, 5);
        let j = join(b"-<apiToken>", "-2afd90c1").unwrap();
        assert_eq!((j.in_line, j.len), (1, 8));
        let j = join(b"+token =", "+  'x'").unwrap();
        assert_eq!((j.text.as_str(), j.in_line), ("token = 'x'", 3));
        // A context line is indented text; a value may start with `+`.
        let j = join(b" <apiToken>", " +2afd90c1").unwrap();
        assert_eq!(j.text, "<apiToken>+2afd90c1</");
        assert_eq!(join(b"-<apiToken>", "+2afd90c1"), None);
        let j = join(b"<apiToken>", "+2afd90c1").unwrap();
        assert_eq!((j.in_line, j.len), (0, 9));
    }

    #[test]
    fn anything_but_a_bare_tag_then_bare_text_does_not() {
        for (prev, line) in [
            ("<apiToken x=\"1\">", "2afd90c1"),
            ("</apiToken>", "2afd90c1"),
            ("<apiToken>", "<b>2afd90c1</b>"),
            ("<apiToken>", "2afd90c1</apiToken>"),
            ("<apiToken>", "   "),
            ("<>", "2afd90c1"),
            ("text <apiToken>", "2afd90c1"),
            ("<apiToken>x", "2afd90c1"),
        ] {
            assert_eq!(join(prev.as_bytes(), line), None, "{prev}");
        }
        let long = format!("<{}>", "a".repeat(MAX_OPENING_LINE - 1));
        assert_eq!(join(long.as_bytes(), "2afd90c1"), None);
        let fits = format!("<{}>", "a".repeat(MAX_OPENING_LINE - 2));
        assert!(join(fits.as_bytes(), "2afd90c1").is_some());
    }
}
