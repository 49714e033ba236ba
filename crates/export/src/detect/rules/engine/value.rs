//! The check of a value next to a label (`Check::Value`, and the first
//! half of `Check::Assignment`): the span narrows to the literal inside
//! the capture, then the value must not be filler, a template, data beside
//! a label word, code, or a sample user's.

use super::super::plausibility::*;
use super::super::Rule;
use super::Candidate;

/// Whether the value `c` holds is a credential; narrows `c` to it.
pub(super) fn credential(r: &Rule, c: &mut Candidate) -> bool {
    narrow(c)
        && !(filler(r, c)
            || template(c)
            || data_beside_label(c)
            || (r.traits.random_only && word_like(c.value()))
            || code(r, c)
            || sample_user(r, c))
}

/// Narrows the span to the literal inside it; false when there is none.
fn narrow(c: &mut Candidate) -> bool {
    let Some(inner) = literal_part(c.value()) else {
        return false;
    };
    c.start += inner;
    // Escaped line ends close a line inside a literal
    // (`"…Credentials : true\r\n"`): they are not the value.
    while c.end - c.start > 2 && matches!(&c.hay[c.end - 2..c.end], br"\n" | br"\r" | br"\t") {
        c.end -= 2;
    }
    true
}

/// Placeholders, samples and filler. Below two bits a byte a long value
/// is mostly one character (`glc_1111…`); a random one is near four.
/// (Shape rules skip this test; `typed_filler` alone judges their runs.)
/// A URL's password stays only as a stand-in by syntax or marker: a
/// constant's name there (`user:PASSWORD@db`) is replaced.
fn filler(r: &Rule, c: &Candidate) -> bool {
    let value = c.value();
    let named = if r.traits.url_password {
        stand_in(value)
    } else {
        is_placeholder(value)
            || constant_name(value)
            || (uuid_v1(value) && !(r.traits.uuid_token && registry_scoped(c.before())))
    };
    named
        || typed_filler(value)
        || (value.len() >= 16 && entropy(value) < 2.0)
        || marked_fake(value)
        || binary_data(value)
}

/// `"VS%0.f0COMNTOOLS" % version`, `'{}:{}'.format(…)`: a template filled
/// in by the code after it. And a value with no ASCII letter or digit
/// (`"compass": "🧭"`) is no token.
fn template(c: &Candidate) -> bool {
    (c.quoted && format_applied(c.hay.get(c.end + 1..).unwrap_or(b"")))
        || !c.value().iter().any(u8::is_ascii_alphanumeric)
}

/// `('auth', '0010_alter_group_name_max_length')`,
/// `add_argument("--token", "refresh_token")`: a bare label word and a
/// value side by side in a tuple or a call's arguments are data, not an
/// assignment; only a credential-shaped value counts there. (A setting's
/// own name, `setProperty("ASANA_TOKEN", "…")`, still assigns.)
fn data_beside_label(c: &Candidate) -> bool {
    let value = c.value();
    c.group("n")
        .is_some_and(|n| side_by_side(&c.hay[n.end()..c.group_start]) && bare_label(n.as_bytes()))
        && (!credential_like(value) || plain_parts(value))
}

/// Code in the value's place, a label's own text, a concatenation, a path
/// of words, a public badge token, a shell substitution or a template
/// literal.
fn code(r: &Rule, c: &Candidate) -> bool {
    let value = c.value();
    // A URL's password stands where no type name can
    // (`mysql://python:HelloSecretScanning@host`).
    let password_in_url = r.traits.url_password && type_name(value);
    (is_code(c.before(), value, c.after(), c.quoted) && !password_in_url)
        || label_text(value)
        || concatenation(value)
        || path_of_words(value)
        // A coverage badge's `graph/badge.svg?token=`: Codecov's graph
        // token, public by design (it only shows the badge).
        || c.before().ends_with(b"badge.svg?token=")
        // Shell command substitution: `` `etcdctl get /x` ``; a
        // JavaScript template literal: `` `r${next++}` ``.
        || (c.group("b").is_some()
            && (value.iter().any(u8::is_ascii_whitespace)
                || memchr::memmem::find(value, b"${").is_some()))
}

/// `-u test:test`: a user name repeated is a sample, except in a URL,
/// where `postgres:postgres@` is an image's default credential. No user
/// and a colon after it: CVS's `:pserver:anoncvs@host:/cvs`, not a
/// password.
fn sample_user(r: &Rule, c: &Candidate) -> bool {
    let value = c.value();
    (!c.oauth_user && !r.traits.url_password && c.group("u").is_some_and(|u| u.as_bytes() == value))
        || (c.group("u").is_some_and(|u| u.is_empty()) && value.contains(&b':'))
}
