//! The generic engine: a rule's regex captures a candidate, the rule's
//! [`Check`] judges its form, the shared plausibility tests judge whether
//! it is a credential at all, and the row's veto has the last word. No
//! rule is known here by its id; what differs between rules is in their
//! rows ([`super::spec::Spec`]).

use regex::bytes::{Captures, Match};

use super::plausibility::*;
use super::spec::UserFlags;
use super::{carriers, fields, named, tenants, Check, Hit, Rule};

mod assignment;
mod value;

/// A span a rule's regex captured, with the match it came from.
pub(crate) struct Candidate<'h> {
    /// The searched text.
    pub(crate) hay: &'h [u8],
    /// The rule's captures.
    pub(crate) caps: Captures<'h>,
    /// Where the captured group began, before the span was narrowed to
    /// the literal inside it.
    pub(crate) group_start: usize,
    /// The credential's span.
    pub(crate) start: usize,
    /// Its end (exclusive).
    pub(crate) end: usize,
    /// Whether the value was captured inside quotes (groups `q`, `a`,
    /// `b`).
    pub(crate) quoted: bool,
    /// Whether the span is a URL's user standing for a token (GitHub's
    /// `TOKEN:x-oauth-basic@`).
    pub(crate) oauth_user: bool,
}

impl<'h> Candidate<'h> {
    /// The credential.
    pub(crate) fn value(&self) -> &'h [u8] {
        &self.hay[self.start..self.end]
    }

    /// The text before it.
    pub(crate) fn before(&self) -> &'h [u8] {
        &self.hay[..self.start]
    }

    /// The text after it.
    pub(crate) fn after(&self) -> &'h [u8] {
        self.hay.get(self.end..).unwrap_or(b"")
    }

    /// A named group of the match.
    pub(crate) fn group(&self, name: &str) -> Option<Match<'h>> {
        self.caps.name(name)
    }

    /// The secret-sounding name: group `n`, or one of the alternatives'
    /// (`env-default-literal` reads five syntaxes).
    pub(crate) fn name(&self) -> Option<Match<'h>> {
        ["n", "n2", "n3", "n4", "n5"]
            .iter()
            .find_map(|g| self.caps.name(g))
    }
}

/// Every credential `r` finds in `hay`, appended to `out` as rule `i`.
/// `at`: for a row that reads at its keywords, every occurrence of them
/// (the prefilter's), sorted; `None` has the row find them itself.
pub(super) fn rule_hits(
    i: usize,
    r: &Rule,
    hay: &[u8],
    at: Option<&[super::Occurrence]>,
    out: &mut Vec<Hit>,
) {
    crate::detect::work::visit(hay.len());
    match r.check {
        Check::Named => return named::hits(i, hay, at, out),
        Check::Field => return fields::hits(i, &r.regex, hay, at, out),
        Check::Carried => return carriers::hits(i, &r.regex, hay, r.traits.paired_user, out),
        Check::Paired => return carriers::pair_hits(i, &r.regex, hay, out),
        Check::Tenant => return tenants::hits(i, &r.regex, hay, at, out),
        _ => {}
    }
    if !r.regex.is_match(hay) {
        return;
    }
    for caps in r.regex.captures_iter(hay) {
        let Some(mut c) = capture(r, hay, caps) else {
            continue;
        };
        // A password an earlier step replaced still pairs with its user.
        let pairs = r.traits.paired_user || r.traits.cli_user.is_some() || r.traits.sibling_user;
        let replaced = pairs && c.value().starts_with(fields::REPLACED);
        if replaced || (credential(r, &mut c) && !vetoed(r, &c) && c.end > c.start) {
            if !replaced {
                out.push(Hit {
                    rule: i,
                    start: c.start,
                    end: scheme_token_end(r, hay, c.start, c.end),
                });
            }
            // The account goes with its password (see `fields::paired_user`).
            let user = c
                .group("u")
                .filter(|_| r.traits.paired_user && !c.oauth_user)
                .map(|u| (u.start(), u.end()))
                .or_else(|| {
                    let flags = r.traits.cli_user?;
                    fields::cli_user(hay, c.start, flags == UserFlags::Short)
                })
                .or_else(|| {
                    let key = c.name().filter(|_| r.traits.sibling_user)?;
                    fields::sibling_user(hay, key.start(), key.end())
                });
            if let Some((start, end)) = user.filter(|(a, b)| fields::paired_user(&hay[*a..*b])) {
                out.push(Hit {
                    rule: i,
                    start,
                    end,
                });
            }
        }
    }
}

/// `TOKEN=FlyV1 fm2_…`, `AUTH=Bearer …`: a value that is a short word
/// (an auth scheme) with one blank and a random run after it names only
/// the scheme; the credential is that run, and the hit takes it in.
fn scheme_token_end(r: &Rule, hay: &[u8], start: usize, end: usize) -> usize {
    let by_label = matches!(r.check, Check::Value | Check::Assignment);
    let scheme = end - start <= 12 && hay[start..end].iter().all(u8::is_ascii_alphanumeric);
    if !by_label || !scheme || hay.get(end) != Some(&b' ') {
        return end;
    }
    let run = hay[end + 1..]
        .iter()
        .take_while(|c| !c.is_ascii_whitespace() && !b"\"'`,;".contains(c))
        .count();
    if named::plausible(&hay[end + 1..end + 1 + run], true) {
        end + 1 + run
    } else {
        end
    }
}

/// Whether the row's veto spares the candidate; in the gate, a veto may
/// not spare a credential-shaped value (see [`super::RuleSet::gate`]).
fn vetoed(r: &Rule, c: &Candidate) -> bool {
    r.veto.is_some_and(|spared| spared(c))
        && !(r.overrule_random_vetoes && named::plausible(c.value(), false))
}

/// The candidate a match makes: the first of the credential groups (`s`,
/// `q`, `a`, `b`, `l`), else the whole match.
fn capture<'h>(r: &Rule, hay: &'h [u8], caps: Captures<'h>) -> Option<Candidate<'h>> {
    let m = ["s", "q", "a", "b", "l"]
        .iter()
        .find_map(|g| caps.name(g))
        .or_else(|| caps.get(0))
        .expect("group 0 always matches");
    let (mut start, mut end) = (m.start(), m.end());
    // `https://TOKEN:x-oauth-basic@github.com/…`: GitHub's fixed
    // password; the user is the token.
    let oauth_user =
        r.traits.url_password && hay[start..end].eq_ignore_ascii_case(b"x-oauth-basic");
    if oauth_user {
        let u = caps.name("u").filter(|u| !u.is_empty())?;
        (start, end) = (u.start(), u.end());
    }
    let quoted = ["q", "a", "b"].iter().any(|g| caps.name(g).is_some());
    Some(Candidate {
        hay,
        group_start: m.start(),
        start,
        end,
        quoted,
        oauth_user,
        caps,
    })
}

/// Whether the candidate passes its rule's check and the shared tests
/// (a value's check may narrow its span to the literal inside it).
fn credential(r: &Rule, c: &mut Candidate) -> bool {
    match r.check {
        Check::Shape => shape(r, c.value()),
        Check::Jwt => jwt(c.value()),
        Check::Basic => decodes_to_user_password(c.value()),
        Check::Value => value::credential(r, c),
        Check::Assignment => value::credential(r, c) && assignment::credential(r, c),
        Check::Spaced => value::credential(r, c) && assignment::credential(r, c) && spaced_alone(c),
        Check::Custom
        | Check::Named
        | Check::Field
        | Check::Carried
        | Check::Paired
        | Check::Tenant => true,
    }
}

/// A token by its shape is one unless it is marked as a sample; a
/// private key's body is long enough to hold any marker, so its own
/// structure judges it.
fn shape(r: &Rule, value: &[u8]) -> bool {
    if r.traits.key_block {
        key_body(value)
    } else {
        !typed_filler(value)
    }
}

/// A signed JWT is one by its shape: a test's token, or one planted with
/// random segments, is still a credential's shape. An unsigned
/// `header.payload`, and a signed token whose payload is not JSON, must
/// prove it is a JWT by its header.
fn jwt(value: &[u8]) -> bool {
    let signed = value.iter().filter(|c| **c == b'.').count() == 2 && !value.ends_with(b".");
    let json_payload = value
        .split(|c| *c == b'.')
        .nth(1)
        .is_some_and(|p| p.starts_with(b"eyJ"));
    ((signed && json_payload) || jwt_header(value)) && !typed_filler(value)
}

/// A value after a label and blanks must stand alone and look random;
/// and `typedef struct set_mem_access
/// set_mem_access_t;` is a name, then a name built on it.
fn spaced_alone(c: &Candidate) -> bool {
    let value = c.value();
    let n = c.group("n");
    let at = n.map_or(c.start, |n| n.start());
    spaced_value_ok(&c.hay[..at], value, c.hay.get(c.end).copied())
        && !n.is_some_and(|n| {
            value.len() > n.len() && value[..n.len()].eq_ignore_ascii_case(n.as_bytes())
        })
}
