//! Residual risk: what stayed in the export that a reviewer should look at
//! before signing off. Nothing here was replaced (a replaced value is never
//! in the tree the report reads), so each item is shown as it stands.
//!
//! Four kinds, each found by its shape alone:
//! - e-mail addresses;
//! - internal-looking host names: names under `.local`, `.internal`,
//!   `.intranet`, `.corp`, `.lan`, `.localdomain` or `.home.arpa`, and
//!   private IPv4 addresses (10/8, 172.16/12, 192.168/16);
//! - users at hosts: `name@host` followed by `:` or by a prompt's `$`, `%`,
//!   `#` or `~` (a prompt, an `scp` or `ssh` target), shown with what
//!   follows it up to a blank;
//! - made-up tokens kept on purpose: runs of 16 or more token characters
//!   with a letter and a digit, `_` or `-`, that the rules judge made up
//!   ([`crate::detect::rules::typed_filler`]: documentation markers, filler, runs),
//!   which the export keeps as documented (docs/EXPORT.md).

use std::collections::BTreeMap;

use regex::Regex;
use serde::Serialize;

/// Residuals listed per kind; beyond this they are only counted.
pub const MAX_LISTED_PER_KIND: usize = 200;

/// What kind of residual an item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// An e-mail address.
    Email,
    /// An internal-looking host name or private address.
    InternalHost,
    /// A user at a host, as a prompt or a copy target writes it.
    UserAtHost,
    /// A token the export judged made up and kept.
    MadeUpToken,
}

impl Kind {
    /// Every kind, in report order.
    pub const ALL: [Kind; 4] = [
        Kind::Email,
        Kind::InternalHost,
        Kind::UserAtHost,
        Kind::MadeUpToken,
    ];

    /// The name every format uses.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Email => "email",
            Kind::InternalHost => "internal-host",
            Kind::UserAtHost => "user-at-host",
            Kind::MadeUpToken => "made-up-token",
        }
    }
}

/// One item that stayed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Residual {
    /// What it is.
    pub kind: Kind,
    /// The exported file.
    pub file: String,
    /// The line (from 1) of a JSONL record or text line; none in a JSON document.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// JSON pointer inside the document or record ("" for text).
    pub pointer: String,
    /// The text as it stands in the export.
    pub text: String,
    /// Exported text before it.
    pub before: String,
    /// Exported text after it.
    pub after: String,
}

/// The residual-risk section: counts per kind (complete) and the items
/// listed (at most [`MAX_LISTED_PER_KIND`] per kind), file by file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResidualRisk {
    /// How many of each kind stayed.
    pub counts: BTreeMap<Kind, u64>,
    /// The listed items, in reading order.
    pub listed: Vec<Residual>,
}

/// The shapes, compiled once per report.
pub(crate) struct Finder {
    email: Regex,
    host: Regex,
    user_at_host: Regex,
    token: Regex,
}

impl Finder {
    pub(crate) fn new() -> Finder {
        let label = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?";
        Finder {
            email: Regex::new(&format!(
                r"(?i)\b[a-z0-9][a-z0-9._%+-]{{0,63}}@{label}(?:\.{label})*\.[a-z]{{2,24}}\b"
            ))
            .expect("compiles"),
            host: Regex::new(&format!(
                r"(?i)\b{label}(?:\.{label})*\.(?:local|internal|intranet|corp|lan|localdomain|home\.arpa)\b|\b(?:10(?:\.\d{{1,3}}){{3}}|192\.168(?:\.\d{{1,3}}){{2}}|172\.(?:1[6-9]|2\d|3[01])(?:\.\d{{1,3}}){{2}})\b"
            ))
            .expect("compiles"),
            user_at_host: Regex::new(
                r"(?i)\b[a-z_][a-z0-9_.-]{0,31}@[a-z][a-z0-9-]{0,62}(?::|\s*[$%#~])",
            )
            .expect("compiles"),
            token: Regex::new(r"[A-Za-z0-9][A-Za-z0-9_-]{15,}").expect("compiles"),
        }
    }

    /// The residuals in `s` as (kind, start, end), left to right, none
    /// overlapping another or a span in `taken` (placeholders, pseudonyms).
    pub(crate) fn find(&self, s: &str, taken: &[(usize, usize)]) -> Vec<(Kind, usize, usize)> {
        let mut found: Vec<(Kind, usize, usize)> = Vec::new();
        let free = |found: &[(Kind, usize, usize)], a: usize, b: usize| {
            !taken.iter().any(|&(x, y)| a < y && x < b)
                && !found.iter().any(|&(_, x, y)| a < y && x < b)
        };
        if s.contains('@') {
            for m in self.email.find_iter(s) {
                if free(&found, m.start(), m.end()) {
                    found.push((Kind::Email, m.start(), m.end()));
                }
            }
            for m in self.user_at_host.find_iter(s) {
                // With what follows up to a blank (`bob@nas:/srv/x`,
                // `alice@ci:~/w$`): a remote path cut off from its host
                // would read as a local one.
                // (Up to a placeholder, too: `bob@nas:[LOCAL_PATH]`.)
                let blank = s[m.start()..]
                    .find(char::is_whitespace)
                    .map_or(s.len(), |i| m.start() + i);
                let end = taken
                    .iter()
                    .map(|&(x, _)| x)
                    .filter(|&x| x >= m.end().min(blank) && x < blank)
                    .min()
                    .unwrap_or(blank);
                if free(&found, m.start(), end) {
                    found.push((Kind::UserAtHost, m.start(), end));
                }
            }
        }
        for m in self.host.find_iter(s) {
            if free(&found, m.start(), m.end()) {
                found.push((Kind::InternalHost, m.start(), m.end()));
            }
        }
        for m in self.token.find_iter(s) {
            let t = m.as_str().as_bytes();
            let shaped = t.iter().any(u8::is_ascii_alphabetic)
                && t.iter()
                    .any(|c| c.is_ascii_digit() || *c == b'_' || *c == b'-');
            if shaped && crate::detect::rules::typed_filler(t) && free(&found, m.start(), m.end()) {
                found.push((Kind::MadeUpToken, m.start(), m.end()));
            }
        }
        found.sort_by_key(|f| f.1);
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(s: &str) -> Vec<(Kind, String)> {
        Finder::new()
            .find(s, &[])
            .into_iter()
            .map(|(k, a, b)| (k, s[a..b].to_string()))
            .collect()
    }

    #[test]
    fn each_kind_is_found_by_its_shape() {
        assert_eq!(
            kinds("mail jane.doe@example.org, build at ci-7.corp.internal and 10.2.3.4"),
            [
                (Kind::Email, "jane.doe@example.org".into()),
                (Kind::InternalHost, "ci-7.corp.internal".into()),
                (Kind::InternalHost, "10.2.3.4".into()),
            ]
        );
        assert_eq!(
            kinds("alice@build-07:~/work$ scp f bob@nas:/tmp"),
            [
                (Kind::UserAtHost, "alice@build-07:~/work$".into()),
                (Kind::UserAtHost, "bob@nas:/tmp".into()),
            ]
        );
        assert_eq!(
            kinds("key AKIAIOSFODNN7EXAMPLE and ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
            [
                (Kind::MadeUpToken, "AKIAIOSFODNN7EXAMPLE".into()),
                (
                    Kind::MadeUpToken,
                    "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx".into()
                ),
            ]
        );
    }

    #[test]
    fn ordinary_text_has_no_residual() {
        for s in [
            "version 1.2.3 at 8.8.8.8, see https://docs.rs/regex",
            "@decorator def f(self): pass",
            "npm i react@18.2.0 @types/node",
            "the function parse_configuration_file_contents is long",
            "a 172.32.0.1 public address, host example.com",
        ] {
            assert_eq!(kinds(s), [], "{s}");
        }
    }

    #[test]
    fn a_user_at_host_stops_at_a_placeholder() {
        let s = "scp f bob@nas:[LOCAL_PATH] now";
        let at = s.find('[').unwrap();
        let found = Finder::new().find(s, &[(at, at + "[LOCAL_PATH]".len())]);
        assert_eq!(found, [(Kind::UserAtHost, 6, at)]);
    }

    #[test]
    fn a_taken_span_is_not_a_residual() {
        let s = "to a@b.org";
        assert_eq!(Finder::new().find(s, &[(3, 10)]), []);
    }
}
