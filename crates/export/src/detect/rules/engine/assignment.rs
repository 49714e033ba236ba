//! The second half of `Check::Assignment`: a value after a secret-sounding
//! name is a credential unless the name and what stands between them
//! show code or data (each exemption below is one named case), and the
//! value must be plausible for the name ([`assignment_value_ok`]).

use regex::bytes::Match;

use super::super::plausibility::*;
use super::super::Rule;
use super::Candidate;

/// A candidate of an assignment rule, with its name and separator.
struct Assignment<'c, 'h> {
    c: &'c Candidate<'h>,
    /// The name's match, when the rule captured one.
    name: Option<Match<'h>>,
    /// What stands between the name and its value (`" = "`, `":\n  '"`);
    /// empty without a name.
    sep: &'h [u8],
}

impl Assignment<'_, '_> {
    /// The text before the name (empty without one).
    fn before_name(&self) -> &[u8] {
        self.name.map_or(&b""[..], |n| &self.c.hay[..n.start()])
    }
}

/// The exemptions, each a case of code or data that only looks like an
/// assignment.
const EXEMPT: &[fn(&Assignment) -> bool] = &[
    in_arn_or_base64,
    compared_with_a_word,
    block_header_colon,
    labelled_argument,
    format_spec_field,
    appended_suffix,
    user_and_variable,
    module_keys_a_word,
    openpgp_id,
    url_scheme,
    list_of_items,
    keyword_argument,
    match_arm_constant,
    connection_without_credential,
    interpolated_literal,
];

/// Whether the candidate of assignment rule `r` is a credential.
pub(super) fn credential(r: &Rule, c: &Candidate) -> bool {
    let name = c.name();
    let a = Assignment {
        c,
        name,
        sep: name.map_or(&[][..], |n| &c.hay[n.end()..c.start]),
    };
    if EXEMPT.iter().any(|exempt| exempt(&a)) {
        return false;
    }
    // `API_KEY=value` and a command's `ENV API_KEY value` set a literal,
    // as a quoted value does.
    let env_style = r.traits.sets_literal
        || name.is_some_and(|n| {
            c.hay.get(n.end()) == Some(&b'=')
                && n.as_bytes().iter().all(|c| !c.is_ascii_lowercase())
        });
    let name = name.map(|n| n.as_bytes()).unwrap_or(b"");
    let name = if r.traits.pair_name && name.eq_ignore_ascii_case(b"pass") {
        &b"password"[..]
    } else {
        name
    };
    assignment_value_ok(name, c.value(), c.quoted || env_style)
}

/// `arn:aws:secretsmanager:…:secret:db-creds-a1B2c3`: an ARN's resource
/// type, then the resource's name; or a name inside base64.
fn in_arn_or_base64(a: &Assignment) -> bool {
    a.name
        .is_some_and(|n| in_arn(a.before_name()) || in_base64(a.before_name(), n.as_bytes()))
}

/// `elif token == 'account'`, `name_token != "name"`: code comparing a
/// token's or a key's name with a word tests a kind, not a secret. (A
/// password compared with a word, `password == 'logmein'`, is one; and
/// `elif token == "#bygroup"` compares a marker word.)
fn compared_with_a_word(a: &Assignment) -> bool {
    let compared = a.sep.windows(2).any(|w| w == b"==" || w == b"!=");
    let lower = a
        .name
        .map_or(Vec::new(), |n| n.as_bytes().to_ascii_lowercase());
    let password_like = [&b"pass"[..], b"pwd", b"passwd", b"password", b"secret"]
        .iter()
        .any(|w| lower.ends_with(w));
    let value = a.c.value();
    let marked = value.strip_prefix(b"#").unwrap_or(value);
    compared && !password_like && (bare_word(marked) || words_name(marked))
}

/// `def t_FLOAT(self, t: _RuleToken) -> _RuleToken:` then a docstring,
/// `class ApiToken:` then its body: the colon ends a block's header.
fn block_header_colon(a: &Assignment) -> bool {
    a.name.is_some() && {
        let sep = a.sep.trim_ascii_start();
        sep.first() == Some(&b':') && !sep.contains(&b'=') && block_header(a.before_name())
    }
}

/// `log.info('token', 'creating')`, `delete('_token', 'user')`: a name
/// passed next to another argument labels a word or a phrase, not a
/// value, unless a random value ends the line.
fn labelled_argument(a: &Assignment) -> bool {
    let value = a.c.value();
    a.c.group("l").is_some()
        && !(matches!(a.c.hay.get(a.c.end), None | Some(b'\r' | b'\n'))
            && value.iter().any(u8::is_ascii_digit)
            && value.iter().any(u8::is_ascii_alphabetic))
}

/// `f"{self.seq_token:056d}"`, `"{key:>8}".format(…)`: a format field's
/// spec after the name it formats.
fn format_spec_field(a: &Assignment) -> bool {
    a.name
        .is_some_and(|n| n.start() > 0 && a.c.hay[n.start() - 1] == b'{' && a.sep == b":")
        && a.c.hay.get(a.c.end) == Some(&b'}')
        && format_spec(a.c.value())
}

/// `share_token += "-principals"`: a suffix appended to a token built in
/// code.
fn appended_suffix(a: &Assignment) -> bool {
    let value = a.c.value();
    a.sep.windows(2).any(|w| w == b"+=")
        && value.len() > 1
        && b"-_./:".contains(&value[0])
        && value[1..]
            .iter()
            .all(|c| c.is_ascii_lowercase() || b"-_".contains(c))
}

/// `-auth=anonymous:$FROM_EMAIL`: a user, and the password a variable
/// holds.
fn user_and_variable(a: &Assignment) -> bool {
    let value = a.c.value();
    let Some(colon) = value.iter().position(|c| *c == b':') else {
        return false;
    };
    let (user, pass) = (&value[..colon], &value[colon + 1..]);
    let reference = pass.strip_prefix(b"$").is_some_and(|r| {
        let r = r
            .strip_prefix(b"{")
            .and_then(|r| r.strip_suffix(b"}"))
            .unwrap_or(r);
        !r.is_empty() && r.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
    });
    reference
        && user
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || b"_.-".contains(c))
}

/// `'Pod::Simple::PullParserEndToken' => 'cpan'`: a module's name,
/// quoted, keys a word.
fn module_keys_a_word(a: &Assignment) -> bool {
    let hay = a.c.hay;
    let value = a.c.value();
    a.name.is_some_and(|n| {
        let path = hay[..n.start()]
            .iter()
            .rev()
            .take_while(|c| c.is_ascii_alphanumeric() || b"_:".contains(c))
            .count();
        let head = &hay[n.start() - path..n.start()];
        head.ends_with(b"::")
            && n.start() > path
            && matches!(hay[n.start() - path - 1], b'\'' | b'"')
    }) && value.len() <= 10
        && value.iter().all(u8::is_ascii_lowercase)
}

/// `GnuPG key: 0x7EC2DBB6F4DBF434`: an OpenPGP key's id or fingerprint,
/// which is public.
fn openpgp_id(a: &Assignment) -> bool {
    a.name.is_some()
        && {
            let before = a.before_name().trim_ascii_end();
            let word = before
                .iter()
                .rev()
                .take_while(|c| c.is_ascii_alphanumeric())
                .count();
            let word = before[before.len() - word..].to_ascii_lowercase();
            ["gpg", "gnupg", "pgp", "openpgp"].contains(&String::from_utf8_lossy(&word).as_ref())
        }
        && {
            let value = a.c.value();
            let hex = value.strip_prefix(b"0x").unwrap_or(value);
            (8..=40).contains(&hex.len()) && hex.iter().all(u8::is_ascii_hexdigit)
        }
}

/// `otpauth://…`: a URL's scheme, not a name.
fn url_scheme(a: &Assignment) -> bool {
    a.name
        .is_some_and(|n| a.c.hay[n.end()..].starts_with(b"://"))
}

/// A list broken over lines (`'_token',` then `'_tokenStart'`) holds
/// items, not a name and its value.
fn list_of_items(a: &Assignment) -> bool {
    a.sep.contains(&b',') && a.sep.contains(&b'\n')
}

/// `scrypt(b'password', salt=b'salt')`: after a comma, a keyword argument
/// or a word follows, not a value.
fn keyword_argument(a: &Assignment) -> bool {
    let value = a.c.value();
    a.sep.contains(&b',')
        && (value.iter().all(|c| c.is_ascii_alphabetic() || *c == b'_')
            || value.iter().any(u8::is_ascii_whitespace)
            || (!a.c.quoted && (value.contains(&b'=') || value.starts_with(b"**")))
            || words_name(value))
}

/// `ExporterMasterSecret => b"exp master"`, `Self::RsaPrivateKey => "RSA
/// PRIVATE KEY"`: a match arm maps a variant (a capitalized name, no Ruby
/// symbol's colon before it) to a constant; only a random value there is
/// a credential.
fn match_arm_constant(a: &Assignment) -> bool {
    a.name
        .is_some_and(|n| match_arm(a.before_name(), n.as_bytes(), a.sep))
        && !credential_like(a.c.value())
}

/// A connection string is a secret by the credential it holds:
/// `Server=db;Trusted_Connection=True`, or a `Password={CONFIGURE_ME}`,
/// holds none.
fn connection_without_credential(a: &Assignment) -> bool {
    connection_credential(a.c.value()) == Some(false)
}

/// `f"prefix_{name}"`, `$"Bearer {token}"`: a Python f-string or a C#
/// interpolated string with a `{…}` field is a template (without the
/// prefix, `"prefix_{name}"` is a literal with braces in it). The
/// prefix is the run of letters, `$` and `@` just before the quote.
fn interpolated_literal(a: &Assignment) -> bool {
    let c = a.c;
    let Some((quote, before)) = c.hay[..c.start].split_last() else {
        return false;
    };
    let prefix_len = before
        .iter()
        .rev()
        .take_while(|b| b.is_ascii_alphabetic() || matches!(b, b'$' | b'@'))
        .count();
    let prefix = &before[before.len() - prefix_len..];
    matches!(quote, b'"' | b'\'')
        && (1..=3).contains(&prefix_len)
        && prefix.iter().all(|b| b"fFrRbBuU$@".contains(b))
        && prefix.iter().any(|b| b"fF$".contains(b))
        && c.value().contains(&b'{')
        && c.value().contains(&b'}')
}
