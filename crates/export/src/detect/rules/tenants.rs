//! Tenants: the customer a multi-tenant service's host names.
//!
//! `acme-corp.jfrog.io`, `acme.atlassian.net`, `acmeprod.blob.core.windows.net`
//! and `acme.eu.auth0.com` each name one organization's instance of a
//! service, and so does an Azure connection string's `AccountName=acme`: who the evidence came from, and where a leaked key of that
//! service is used. Scanners carry such hosts as the other half of a
//! credential (Kingfisher's Artifactory, Auth0 and Jira rules, Azure's
//! storage account names). In a partner or public export the labels left
//! of the service's suffix are replaced, as a credential is (the same
//! tenant gets the same placeholder everywhere), and the suffix stays so
//! the reader still sees which service it was:
//! `https://[REDACTED_SECRET:tenant-host:…].jfrog.io/artifactory/…`.
//!
//! What varies is data: the suffixes in `tenants.txt`. The service's own
//! hosts under the same suffix (`api.slack.com`, `developer.okta.com`)
//! start with a label of [`VENDOR_LABELS`] and stay, and so do the
//! documentation's stand-ins ([`STAND_INS`]). The labels are swept
//! through the export only when they pass the value test every swept
//! value passes (`acme-corp`): a tenant named `acmeprod` is replaced in
//! its hosts, not in every sentence.

use super::spec::{spec, Spec};
use super::{Check, Hit, Occurrence};

/// The rule's id.
pub const ID: &str = "tenant-host";

/// The row of the rule table: its keywords are the suffixes, each with
/// the dot before it.
pub(crate) static SPEC: Spec = Spec {
    generated: Some(|| {
        let keywords = suffixes()
            .map(|s| (format!(".{s}"), None))
            .chain([(ACCOUNT_NAME.to_string(), None)])
            .collect();
        (keywords, pattern())
    }),
    ..spec(ID, &[], "", Check::Tenant)
}
.samples(
    &[
        (
            "npm config set registry https://{}.jfrog.io/artifactory/api/npm/npm/",
            "low:12",
        ),
        ("AUTH0_DOMAIN={}.auth0.com", "low:9"),
        (
            "{\"url\": \"https://{}.atlassian.net/rest/api/3/issue\"}",
            "low:10",
        ),
        (
            "DefaultEndpointsProtocol=https;BlobEndpoint=https://{}.blob.core.windows.net/;",
            "low:14",
        ),
        ("alice@{}.okta.com:", "low:8"),
        (
            "DefaultEndpointsProtocol=https;AccountName={};AccountKey=…;EndpointSuffix=core.windows.net",
            "low:13",
        ),
        ("HostName={}.azure-devices.net;SharedAccessKeyName=iothubowner", "low:10"),
    ],
    &[
        "curl -X POST https://hooks.slack.com/services/ -d @payload.json",
        "see https://developer.okta.com/docs/ and https://www.atlassian.net/",
        "import jfrog.io.client",
        "host: acme.jfrog.io.evil.example",
        "https://cdn.auth0.com/js/auth0/9.0/auth0.min.js",
        "const slack = require('slack'); slack.com",
        "az appconfig kv list --connection-string Endpoint=https://contoso.azconfig.io;Id=xxx",
        "AUTH0_DOMAIN=your-tenant.auth0.com",
        "UseDevelopmentStorage=true;AccountName=devstoreaccount1;",
        "let myAccountName=foo;",
    ],
);

const LIST: &str = include_str!("tenants.txt");

/// The suffixes (lower case), in the list's order.
pub fn suffixes() -> impl Iterator<Item = &'static str> {
    LIST.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
}

/// Any suffix with its dot: what the prefilter's keywords find, as a
/// regex for a search without them; the hits come from [`tenant`].
fn pattern() -> String {
    let alternatives: Vec<String> = suffixes().map(regex::escape).collect();
    format!(r"(?i)\.(?:{})|{ACCOUNT_NAME}", alternatives.join("|"))
}

/// The key of an Azure connection string that names the storage account
/// its endpoints' hosts start with (`AccountName=acme;AccountKey=…`).
const ACCOUNT_NAME: &str = "accountname=";

/// First labels of the services' own hosts under a tenant suffix: the
/// service's site, API, documentation and sign-in, not a customer's.
pub const VENDOR_LABELS: &[&str] = &[
    "academy",
    "account",
    "accounts",
    "api",
    "apis",
    "app",
    "apps",
    "assets",
    "auth",
    "blog",
    "careers",
    "cdn",
    "code",
    "community",
    "console",
    "dashboard",
    "developer",
    "developers",
    "doc",
    "docs",
    "download",
    "downloads",
    "email",
    "events",
    "files",
    "forum",
    "forums",
    "go",
    "help",
    "hooks",
    "id",
    "images",
    "img",
    "jobs",
    "join",
    "learn",
    "login",
    "mail",
    "manage",
    "management",
    "marketplace",
    "media",
    "my",
    "news",
    "partners",
    "portal",
    "releases",
    "security",
    "signin",
    "static",
    "status",
    "support",
    "training",
    "trust",
    "university",
    "www",
    "www2",
];

/// Tenants documentation writes in place of a real one: Microsoft's
/// fictitious companies and `example` (RFC 2606's word); a label starting
/// with `your` (`your-org.atlassian.net`) is one too.
pub const STAND_INS: &[&str] = &[
    "adventureworks",
    "contoso",
    "example",
    "fabrikam",
    "northwind",
];

/// Hits of the row: for each suffix occurrence (the prefilter's, else the
/// row's regex), the tenant's labels before it.
pub(crate) fn hits(
    rule: usize,
    regex: &regex::bytes::Regex,
    hay: &[u8],
    at: Option<&[Occurrence]>,
    out: &mut Vec<Hit>,
) {
    let mut read = |start: usize, end: usize| {
        let found = if hay[start..end].eq_ignore_ascii_case(ACCOUNT_NAME.as_bytes()) {
            account(hay, start, end)
        } else {
            tenant(hay, start, end)
        };
        if let Some((start, end)) = found {
            out.push(Hit { rule, start, end });
        }
    };
    match at {
        Some(at) => at.iter().for_each(|o| read(o.start, o.end)),
        None => regex.find_iter(hay).for_each(|m| read(m.start(), m.end())),
    }
}

/// The account after `AccountName=` (`start..end`), up to the `;` that
/// ends the field. A storage account's name is 3 to 24 lower-case letters
/// and digits (Azure's rule), so `AccountName=X` is a stand-in; the key
/// must start the string or a field.
fn account(hay: &[u8], start: usize, end: usize) -> Option<(usize, usize)> {
    if start > 0 && (hay[start - 1].is_ascii_alphanumeric() || hay[start - 1] == b'_') {
        return None;
    }
    let len = hay[end..]
        .iter()
        .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        .count();
    if !(3..=24).contains(&len) {
        return None;
    }
    let stops = matches!(
        hay.get(end + len),
        None | Some(b';' | b'"' | b'\'' | b' ' | b'\n')
    );
    let name = &hay[end..end + len];
    let stand_in = STAND_INS
        .iter()
        .any(|v| name.eq_ignore_ascii_case(v.as_bytes()));
    (stops && !stand_in && !name.eq_ignore_ascii_case(b"devstoreaccount1"))
        .then_some((end, end + len))
}

/// A byte of a host's label.
fn label_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-'
}

/// The tenant's labels before the suffix at `start..end` (its dot
/// included): the host must end with the suffix, stand after a byte no
/// host holds (not `_`, which makes it part of an identifier), and not
/// start with one of the service's own labels.
pub fn tenant(hay: &[u8], start: usize, end: usize) -> Option<(usize, usize)> {
    match hay.get(end) {
        Some(&c) if label_byte(c) || c == b'_' => return None,
        Some(b'.') if hay.get(end + 1).is_some_and(|&c| label_byte(c)) => return None,
        _ => {}
    }
    let mut from = start;
    while from > 0 && (label_byte(hay[from - 1]) || hay[from - 1] == b'.') {
        from -= 1;
    }
    if from > 0 && hay[from - 1] == b'_' {
        return None;
    }
    // A percent escape's two digits are not the host's
    // (`%40acme.jfrog.io`, `%2F%2Facme.jfrog.io`): taking them would
    // replace the escaped `@` or `/` with the tenant and leave the URL's
    // user unpaired in the decoded text.
    if from > 0
        && hay[from - 1] == b'%'
        && hay[from..start].len() > 2
        && hay[from..from + 2].iter().all(u8::is_ascii_hexdigit)
    {
        from += 2;
    }
    while from < start && matches!(hay[from], b'.' | b'-') {
        from += 1;
    }
    let labels = &hay[from..start];
    if labels.is_empty() || labels.len() > 253 || labels.ends_with(b".") {
        return None;
    }
    let first = labels.split(|&c| c == b'.').next().unwrap_or(labels);
    let lower = first.to_ascii_lowercase();
    if VENDOR_LABELS.iter().any(|v| lower == v.as_bytes())
        || STAND_INS.iter().any(|v| lower == v.as_bytes())
        || lower.starts_with(b"your")
    {
        return None;
    }
    Some((from, start))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tenants(s: &str) -> Vec<&str> {
        let re = super::super::compile(&pattern()).unwrap();
        let mut out = Vec::new();
        hits(0, &re, s.as_bytes(), None, &mut out);
        out.iter().map(|h| &s[h.start..h.end]).collect()
    }

    #[test]
    fn the_labels_before_a_tenant_suffix_are_the_tenant() {
        assert_eq!(
            tenants("https://acme-corp.jfrog.io/artifactory"),
            ["acme-corp"]
        );
        assert_eq!(tenants("AUTH0_DOMAIN=myapp.eu.auth0.com"), ["myapp.eu"]);
        assert_eq!(
            tenants("AccountName=acmeprod;BlobEndpoint=https://acmeprod.blob.core.windows.net/"),
            ["acmeprod", "acmeprod"]
        );
        assert_eq!(tenants("see Acme.Atlassian.NET."), ["Acme"]);
        assert_eq!(tenants("alice@build.atlassian.net: ok"), ["build"]);
        assert_eq!(
            tenants("a.jfrog.io and b.jfrog.io"),
            ["a", "b"],
            "every host, each its own"
        );
    }

    #[test]
    fn a_percent_escape_before_the_host_is_not_the_tenant() {
        assert_eq!(
            tenants("mongodb%2Bsrv%3A%2F%2Fsvc%3Apw%40acme-prod.mongodb.net%2F"),
            ["acme-prod"]
        );
        assert_eq!(
            tenants("https%3A%2F%2Facme.jfrog.io%2Fartifactory"),
            ["acme"]
        );
        // The escape's digits go, the label's stay.
        assert_eq!(tenants("q=%4042.jfrog.io"), ["42"]);
    }

    #[test]
    fn an_azure_connection_strings_account_is_its_tenant() {
        assert_eq!(
            tenants("DefaultEndpointsProtocol=https;AccountName=hanatour9833;AccountKey=x=="),
            ["hanatour9833"]
        );
        assert_eq!(tenants("\"accountname=acmeprod\""), ["acmeprod"]);
        for s in [
            "AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNO",
            "AccountName=contoso;",
            "myAccountName=acme;",
            "AccountName=${STORAGE};",
            "AccountName=;",
            "AccountName=X;AccountKey=X;",
            "AccountName=MyAccount;",
        ] {
            assert_eq!(tenants(s), Vec::<&str>::new(), "{s}");
        }
    }

    #[test]
    fn the_services_own_hosts_and_lookalikes_are_not_tenants() {
        for s in [
            "https://hooks.slack.com/services/T0/B0/x",
            "https://api.slack.com/methods",
            "https://developer.okta.com/docs/",
            "https://www.atlassian.net",
            "acme.jfrog.io.evil.example",
            "acme.jfrog.iox",
            "my_acme.jfrog.io",
            "[LOCAL_HOST].jfrog.io",
            ".jfrog.io",
            "jfrog.io",
            "https://contoso.blob.core.windows.net/",
            "https://Example.atlassian.net",
            "yourcompany.okta.com",
        ] {
            assert_eq!(tenants(s), Vec::<&str>::new(), "{s}");
        }
    }

    /// The prefilter reports every occurrence and the regex only
    /// non-overlapping ones; they agree because no suffix ends another.
    #[test]
    fn no_suffix_ends_another_and_each_is_lower_case() {
        let all: Vec<&str> = suffixes().collect();
        for a in &all {
            assert_eq!(*a, a.to_ascii_lowercase());
            for b in &all {
                assert!(
                    a == b || !a.ends_with(&format!(".{b}")),
                    "{a} ends with {b}"
                );
            }
        }
        assert!(all.len() >= 40);
    }
}
