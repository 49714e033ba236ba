//! One row of the rule table. A rule is data: its id, its prefilter, its
//! pattern, the check its captures pass, what it may skip before the
//! regex runs, the traits that tune the shared plausibility tests, an
//! optional named veto, and samples that show what it finds and what it
//! spares. The engine ([`super::engine`]) reads rows and knows no rule by
//! its id.

use super::engine::Candidate;
use super::Check;

/// A byte test that decides cheaply whether a rule can match at all.
pub type Gate = fn(&[u8]) -> bool;

/// A rule's own exemption, run after the shared tests: `true` spares the
/// candidate (it is not a credential).
pub(crate) type Veto = fn(&Candidate) -> bool;

/// How a rule's value departs from the shared plausibility tests. Each
/// trait is a fact about where the rule's value stands, not a list of
/// values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Traits {
    /// The value is a PEM block: its own structure ([`super::plausibility::key_body`])
    /// judges it, since a key's body is long enough to spell any marker.
    pub(crate) key_block: bool,
    /// Only a random value counts: a word there is prose or a sentinel
    /// (`Bearer static-token`, `|| "not-set"`, `_authToken=MYTOKEN`).
    pub(crate) random_only: bool,
    /// The value is a URL's password: no type name stands there, and
    /// GitHub's fixed `x-oauth-basic` password makes the user the token.
    pub(crate) url_password: bool,
    /// The match's `u` group is the account the credential belongs to:
    /// it goes with the credential, also beside a credential an earlier
    /// step replaced (docs/EXPORT.md, "The user goes with the password").
    pub(crate) paired_user: bool,
    /// The value is a command's password option, and the user the same
    /// command names by a flag goes with it ([`super::fields::cli_user`]);
    /// which flags name a user depends on the command the row reads.
    pub(crate) cli_user: Option<UserFlags>,
    /// The match's name is a password's key, and the user its sibling
    /// key names nearby goes with the password
    /// ([`super::fields::sibling_user`]: `$user` beside `$password`).
    pub(crate) sibling_user: bool,
    /// The syntax sets a literal even unquoted (`ENV API_KEY value`).
    pub(crate) sets_literal: bool,
    /// The name is a variable's, given as a name/value pair's name
    /// (`<key>PASS</key><value>…`): `pass` there is a password's name,
    /// as the JSON passes read the pair (`names::pair_value_member`),
    /// not the word it may be in a sentence.
    pub(crate) pair_name: bool,
    /// A registry's scoped auth line: a UUID there is npm's token format.
    pub(crate) uuid_token: bool,
    /// The readback's gate keeps the row's veto verdict even on a
    /// credential-shaped value: the veto spares random values by design (an
    /// anti-forgery cookie is random and authenticates nothing), or judges
    /// a part the whole value's shape does not show (the secret after a
    /// Facebook app id's bar).
    pub(crate) gate_trusts_veto: bool,
    /// A generic row that names a span only when no other row does (a
    /// vendor's own row gives the placeholder its name).
    pub(crate) fallback: bool,
}

/// The flags that name a command's user ([`Traits::cli_user`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UserFlags {
    /// `--user`, `--username`, PowerShell's `-User` and `-UserName`, and
    /// Windows' `/user:`: what any command means by them.
    Long,
    /// Those, and `-u` or `-U`: for the login commands whose short
    /// option is the user (`mysql -u`, `psexec -u`, `docker login -u`),
    /// which elsewhere means something else (`python -u`, `sort -u`).
    Short,
}

/// A sample: a context with `{}` where the credential goes, and the
/// credential's shape ([`super::prefixed`] names the shape syntax). The
/// tests generate the value, so the repository never holds a
/// working-looking credential.
pub(crate) type Sample = (&'static str, &'static str);

/// Makes a rule's keywords and pattern from data. A keyword may carry its
/// own after-keyword test in place of the row's (a name that is also a
/// common word needs a credential word after it).
pub(crate) type Generated = fn() -> (Vec<(String, Option<Gate>)>, String);

/// One rule, as written in the table.
#[derive(Clone, Copy)]
pub(crate) struct Spec {
    /// Stable id, shown in placeholders and findings.
    pub(crate) id: &'static str,
    /// Prefilter keywords (ASCII case-insensitive); empty means the rule
    /// runs wherever its `gate` passes.
    pub(crate) keywords: &'static [&'static str],
    /// The byte regex (Unicode off); the credential is group `s`, `q`,
    /// `a`, `b` or `l`, else the whole match.
    pub(crate) pattern: &'static str,
    /// Keywords and pattern made from data at build time (the service
    /// names of [`super::named`]), in place of the two fields above.
    pub(crate) generated: Option<Generated>,
    /// What a capture must pass.
    pub(crate) check: Check,
    /// For a rule without keywords: a byte test every match passes.
    pub(crate) gate: Option<Gate>,
    /// For a rule with keywords: a test of the text after a keyword
    /// occurrence; the rule runs only where one passes.
    pub(crate) after_keyword: Option<Gate>,
    /// The rule's own exemption, if it has one.
    pub(crate) veto: Option<Veto>,
    /// How the shared tests apply to its values.
    pub(crate) traits: Traits,
    /// A vendor token's shape: the tests place one alone and one inside
    /// JSON.
    // Read by the tests, which run every row's samples.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) shape: Option<&'static str>,
    /// What it finds, beyond the generated positives of the tests.
    // Read by the tests, which run every row's samples.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) samples: &'static [Sample],
    /// Text it must not flag; for a rule with a veto, at least one of
    /// these is what the veto spares.
    // Read by the tests, which run every row's samples.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) near_misses: &'static [&'static str],
}

/// A row with nothing but its id, keywords, pattern and check.
pub(crate) const fn spec(
    id: &'static str,
    keywords: &'static [&'static str],
    pattern: &'static str,
    check: Check,
) -> Spec {
    Spec {
        id,
        keywords,
        pattern,
        generated: None,
        check,
        gate: None,
        after_keyword: None,
        veto: None,
        traits: PLAIN,
        shape: None,
        samples: &[],
        near_misses: &[],
    }
}

/// A vendor's prefixed token ([`super::prefixed`]): a shape rule with
/// a sample shape.
pub(crate) const fn token(
    id: &'static str,
    keywords: &'static [&'static str],
    pattern: &'static str,
    shape: &'static str,
) -> Spec {
    Spec {
        shape: Some(shape),
        ..spec(id, keywords, pattern, Check::Shape)
    }
}

impl Spec {
    /// With a gate (a rule without keywords).
    pub(crate) const fn gate(self, gate: Gate) -> Spec {
        Spec {
            gate: Some(gate),
            ..self
        }
    }

    /// With a test of the text after each keyword.
    pub(crate) const fn after_keyword(self, gate: Gate) -> Spec {
        Spec {
            after_keyword: Some(gate),
            ..self
        }
    }

    /// With its own exemption.
    pub(crate) const fn veto(self, veto: Veto) -> Spec {
        Spec {
            veto: Some(veto),
            ..self
        }
    }

    /// With its traits.
    pub(crate) const fn traits(self, traits: Traits) -> Spec {
        Spec { traits, ..self }
    }

    /// With samples and near misses.
    pub(crate) const fn samples(
        self,
        samples: &'static [Sample],
        near_misses: &'static [&'static str],
    ) -> Spec {
        Spec {
            samples,
            near_misses,
            ..self
        }
    }
}

/// [`Traits`] with nothing set, for struct-update syntax in the table.
pub(crate) const PLAIN: Traits = Traits {
    key_block: false,
    random_only: false,
    url_password: false,
    paired_user: false,
    cli_user: None,
    sibling_user: false,
    sets_literal: false,
    pair_name: false,
    uuid_token: false,
    gate_trusts_veto: false,
    fallback: false,
};
