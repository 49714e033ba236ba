//! Credentials carried by code and URLs without a label: the literal a
//! client is built from (`NewQuuxlyAPI("3f2b8c1e-…")`,
//! `new AcmeClient('…')`, `WithAPIKey("…")`), the password given to a
//! login with its user (`smtp.login("alice", "…")`), a URL path segment
//! after `/keys/` or `/tokens/` (`…/v1/keys/pri_9f8e…`), a webhook's path,
//! a token standing as a URL's user (`https://<token>@host/…`), and the
//! first parameter of a JSON-RPC method named for a credential. No
//! service name is needed: the call's or the URL's shape names the
//! credential, and the value must look like one
//! ([`super::named::plausible`]). And an AWS
//! secret access key beside its key id (`connect("AKIA…", "<40>")`, a
//! block's `id: AKIA…` then `secret: <40>`): the id names the pair.

use super::named::plausible;
use super::spec::{spec, Spec, Traits, PLAIN};
use super::Check;
use super::{cases_and_digits, credential_like, typed_filler, Hit};

/// The call rule's id.
pub const CALL_ID: &str = "credential-argument";

/// The path rule's id.
pub const PATH_ID: &str = "url-path-key";

/// Keywords of the call rule: the end of a name that builds a client or
/// takes a key, and the call's parenthesis.
pub const CALL_KEYWORDS: &[&str] = &[
    "api(",
    "client(",
    "key(",
    "token(",
    "secret(",
    "auth(",
    "credential(",
    "credentials(",
    "password(",
];

/// `Name("value"` where the name ends in one of [`CALL_KEYWORDS`]' words
/// (a builder's `.password("…")` too).
pub const CALL_PATTERN: &str = r#"(?i)(?P<n>[A-Za-z0-9_]*(?:api|client|key|token|secret|auth|credentials?|password))\([ \t]*["'`](?P<s>[A-Za-z0-9+/_.=~-]{10,256})["'`][ \t]*[,)]"#;

/// The rule's id for a user and a password given to a login.
pub const LOGIN_ID: &str = "login-argument";

/// Keywords of the login rule.
pub const LOGIN_KEYWORDS: &[&str] = &[
    "login(",
    "auth(",
    "authentication(",
    "credential(",
    "credentials(",
    "auth=(",
    "auth = (",
];

/// Two string literals given to a call named for a login or its
/// credentials (`smtp.login("alice", "…")`, `HTTPBasicAuth('alice', '…')`,
/// `new PasswordAuthentication("alice", "…".toCharArray())`,
/// `auth=("alice", "…")`): the second is the password.
pub const LOGIN_PATTERN: &str = r#"(?i)(?:(?P<n>[A-Za-z0-9_]*(?:login|auth|authentication|credentials?))\(|\bauth[ \t]*=[ \t]*\()[ \t]*["'](?P<u>[^"'\s]{1,128})["'][ \t]*,[ \t]*["'](?P<s>[^"'\s]{8,256})["']"#;

/// Keywords of the path rule.
pub const PATH_KEYWORDS: &[&str] = &["/keys/", "/tokens/", "/key/", "/token/"];

/// A segment after `/keys/`, `/tokens/` (or the singular) in a URL.
pub const PATH_PATTERN: &str =
    r#"(?i)://[^\s"'<>]*?/(?:keys?|tokens?)/(?P<s>[A-Za-z0-9+_.=~-]{10,256})(?:[/?#"'\s<>]|$)"#;

/// The webhook rule's id.
pub const HOOK_ID: &str = "webhook-url";

/// Keywords of the webhook rule.
pub const HOOK_KEYWORDS: &[&str] = &[
    "/hooks/",
    "/hook/",
    "/webhook/",
    "/webhooks/",
    "/webhookb2/",
];

/// The path after a webhook's marker in a URL (`…/hooks/xjd8h3kq…`,
/// `…/webhook/<uuid>@<uuid>/IncomingWebhook/…`): whoever holds the URL
/// may post to the hook, so its segments are the credential. Group `w`
/// marks the rule for [`hits`].
pub const HOOK_PATTERN: &str = r#"(?i)://[^\s"'<>]*?/(?P<w>(?:web)?hooks?(?:b2)?)/(?P<s>[A-Za-z0-9+_.=~@-]+(?:/[A-Za-z0-9+_.=~@-]+)*)"#;

/// The rule's id for a token standing as a URL's user.
pub const USER_TOKEN_ID: &str = "url-user-token";

/// A URL's userinfo without a password, long enough to be a token
/// (`https://<token>@github.com/o/r.git`: git's way to clone with a
/// token, which it sends as the user).
pub const USER_TOKEN_PATTERN: &str =
    r#"(?i)\b(?P<scheme>[a-z][a-z0-9+.-]{1,20})://(?P<s>[A-Za-z0-9_.~%+-]{20,256})@[^\s@/"'<>]"#;

/// Schemes whose user names a container, not an account: Azure storage's
/// `abfss://<filesystem>@<account>.dfs.core.windows.net/…` (a Fabric
/// workspace's filesystem is a GUID).
const CONTAINER_SCHEMES: &[&str] = &["abfs", "abfss", "wasb", "wasbs"];

/// The test after `://`: a run of twenty userinfo bytes or more, then `@`.
pub fn user_token_follows(rest: &[u8]) -> bool {
    let n = rest
        .iter()
        .take(257)
        .take_while(|c| c.is_ascii_alphanumeric() || b"_.~%+-".contains(c))
        .count();
    n >= 20 && rest.get(n) == Some(&b'@')
}

/// The getter rule's id.
pub const GETTER_ID: &str = "credential-getter";

/// Keywords of the getter rule: the end of a getter's name and its empty
/// parameter list.
pub const GETTER_KEYWORDS: &[&str] = &[
    "token()",
    "key()",
    "secret()",
    "password()",
    "credential()",
    "credentials()",
];

/// A getter named for a credential whose one-line body returns a literal
/// (`func getBetterStackToken() string { return "…" }`).
pub const GETTER_PATTERN: &str = r#"(?i)(?P<n>[A-Za-z0-9_]*(?:key|token|secret|password|credentials?))\(\)[^{};\n]{0,40}\{[ \t]*return[ \t]+["'`](?P<s>[A-Za-z0-9+/_.=~-]{10,256})["'`]"#;

/// The rule's id for a key given to a JSON-RPC method named for it.
pub const RPC_ID: &str = "rpc-credential-argument";

/// Keywords of the RPC rule: the request's parameters member.
pub const RPC_KEYWORDS: &[&str] = &["\"params\""];

/// A JSON-RPC request whose method is named for a credential (TrueNAS'
/// `auth.login_with_api_key`, `walletpassphrase`, `token.verify`), then
/// its positional parameters: the first string is the credential, as the
/// first argument of a call named so is ([`CALL_PATTERN`]). A login's
/// first parameter is its user, which is a word and so no hit.
pub const RPC_PATTERN: &str = r#"(?i)"method"[ \t]*:[ \t]*"(?P<n>[A-Za-z0-9_./-]{0,64}(?:api_?key|token|secret|passw(?:or)?d|passphrase|credentials?|login)[A-Za-z0-9_./-]{0,64})"[ \t]*,[ \t]*"params"[ \t]*:[ \t]*\[[ \t]*"(?P<s>[A-Za-z0-9+/_.=~-]{10,256})""#;

/// The pair rule's id.
pub const PAIR_ID: &str = "aws-secret-beside-id";

/// The rows of the rule table.
pub(crate) static CALL: Spec =
    spec(CALL_ID, CALL_KEYWORDS, CALL_PATTERN, Check::Carried).after_keyword(call_follows);
/// See [`CALL`].
pub(crate) static PATH: Spec =
    spec(PATH_ID, PATH_KEYWORDS, PATH_PATTERN, Check::Carried).after_keyword(path_follows);
/// See [`CALL`].
pub(crate) static HOOK: Spec = spec(HOOK_ID, HOOK_KEYWORDS, HOOK_PATTERN, Check::Carried)
    .after_keyword(path_follows)
    .samples(
        &[
            ("https://chat.example.org/hooks/{}", "an:26"),
            (
                "curl -d @m.json https://hooks.example.com/webhook/{} -o x",
                "an:32",
            ),
        ],
        &[
            "https://api.github.com/repos/o/r/hooks/12345678/pings",
            "see https://docs.github.com/en/webhooks/using-webhooks/creating-webhooks",
            "https://example.com/webhooks/stripe",
        ],
    );
/// See [`CALL`].
pub(crate) static USER_TOKEN: Spec =
    spec(USER_TOKEN_ID, &["://"], USER_TOKEN_PATTERN, Check::Carried)
        .after_keyword(user_token_follows)
        .samples(
            &[("git clone https://{}@git.example.org/org/repo.git", "an:32")],
            &[
                "ssh://git@github.com/org/repo.git",
                "https://first.last%40example.com@mail.example.com/",
                "https://build-agent-user-account@ci.example.com/job",
                "abfss://c047b3e34e89407a98d7cf9949ae92a3@c047b3e34e89407a98d7cf9949ae92a3.zc0.dfs.fabric.microsoft.com/f",
            ],
        );
/// See [`CALL`].
pub(crate) static LOGIN: Spec = spec(LOGIN_ID, LOGIN_KEYWORDS, LOGIN_PATTERN, Check::Carried)
    .after_keyword(call_follows)
    .traits(Traits {
        paired_user: true,
        ..PLAIN
    })
    .samples(
        &[
            ("smtp.login(\"alice@example.com\", \"{}\")", "an:16"),
            ("r = requests.get(url, auth=(\"alice\", \"{}\"))", "an:20"),
        ],
        &[
            "session.login(\"username\", \"password\")",
            "creds = get_credentials(\"default\", \"profile_name\")",
        ],
    );
/// See [`CALL`].
pub(crate) static GETTER: Spec = spec(GETTER_ID, GETTER_KEYWORDS, GETTER_PATTERN, Check::Carried)
    .samples(
        &[("func getQuuxlyToken() string { return \"{}\" }", "an:24")],
        &[
            "func getTokenName() string { return \"api_token\" }",
            "public String secretKey() { return SECRET_KEY; }",
        ],
    );
/// See [`CALL`].
pub(crate) static RPC: Spec = spec(RPC_ID, RPC_KEYWORDS, RPC_PATTERN, Check::Carried).samples(
    &[(
        "{\"id\":\"3286a508\", \"msg\":\"method\", \"method\":\"auth.login_with_api_key\", \"params\":[\"{}\"]}",
        "an:64",
    )],
    &[
        "{\"method\":\"auth.login\",\"params\":[\"alice\",\"secret\"]}",
        "{\"method\":\"tools/call\",\"params\":[\"Xk29fLq83ZmP0aRtQw7e\"]}",
        "{\"method\":\"token.list\",\"params\":[\"2024-01-01T00:00:00Z\"]}",
    ],
);
/// See [`CALL`].
pub(crate) static PAIR: Spec =
    spec(PAIR_ID, PAIR_KEYWORDS, PAIR_PATTERN, Check::Paired).after_keyword(pair_follows);

/// Keywords of the pair rule: the key id's prefixes.
pub const PAIR_KEYWORDS: &[&str] = &["AKIA", "ASIA", "ABIA", "ACCA"];

/// A key id, then within 200 bytes a run of exactly 40 base64 characters.
pub const PAIR_PATTERN: &str = r#"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b(?s:.{1,200}?)(?:[^A-Za-z0-9/+]|\\[nrt])(?P<s>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"#;

/// The test after a pair keyword: the rest of a key id.
pub fn pair_follows(rest: &[u8]) -> bool {
    rest.len() >= 56
        && rest[..16]
            .iter()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
}

/// Hits of the pair rule: each 40-character run after a key id that is
/// random base64 (both cases and a digit, a key's entropy, no filler).
pub fn pair_hits(rule: usize, regex: &regex::bytes::Regex, hay: &[u8], out: &mut Vec<Hit>) {
    each_value(rule, regex, hay, out, |_, b| {
        cases_and_digits(b) && credential_like(b) && !typed_filler(b)
    });
}

/// Pushes each match's `s` group for which `ok(captures, value)` holds.
fn each_value(
    rule: usize,
    regex: &regex::bytes::Regex,
    hay: &[u8],
    out: &mut Vec<Hit>,
    ok: impl Fn(&regex::bytes::Captures, &[u8]) -> bool,
) {
    for caps in regex.captures_iter(hay) {
        let Some(v) = caps.name("s") else { continue };
        if ok(&caps, v.as_bytes()) {
            out.push(Hit {
                rule,
                start: v.start(),
                end: v.end(),
            });
        }
    }
}

/// The test after a call keyword: blanks and a quote.
pub fn call_follows(rest: &[u8]) -> bool {
    let blanks = rest
        .iter()
        .take_while(|c| matches!(c, b' ' | b'\t'))
        .count();
    matches!(rest.get(blanks), Some(b'"' | b'\'' | b'`'))
}

/// The test after a path keyword: a value's first byte.
pub fn path_follows(rest: &[u8]) -> bool {
    rest.first().is_some_and(u8::is_ascii_alphanumeric)
}

/// Hits of a carrier rule: each match's `s` group that looks like a
/// credential, and for a row whose user goes with it (`paired_user`),
/// its `u` group.
pub fn hits(
    rule: usize,
    regex: &regex::bytes::Regex,
    hay: &[u8],
    paired_user: bool,
    out: &mut Vec<Hit>,
) {
    if paired_user {
        return login_hits(rule, regex, hay, out);
    }
    each_value(rule, regex, hay, out, carried);
}

/// Hits of a row whose match's `u` group is the account its `s` group
/// logs in with: the password, and the account beside it (docs/EXPORT.md,
/// "The user goes with the password"), also beside a password an earlier
/// step replaced, as the rewrite's rescan and the final scan see it.
fn login_hits(rule: usize, regex: &regex::bytes::Regex, hay: &[u8], out: &mut Vec<Hit>) {
    for caps in regex.captures_iter(hay) {
        let Some(v) = caps.name("s") else { continue };
        let replaced = v.as_bytes().starts_with(super::fields::REPLACED);
        if !replaced && !carried(&caps, v.as_bytes()) {
            continue;
        }
        if !replaced {
            out.push(Hit {
                rule,
                start: v.start(),
                end: v.end(),
            });
        }
        if let Some(u) = caps
            .name("u")
            .filter(|u| super::fields::paired_user(u.as_bytes()))
        {
            out.push(Hit {
                rule,
                start: u.start(),
                end: u.end(),
            });
        }
    }
}

/// Whether a carrier's value is a credential.
fn carried(caps: &regex::bytes::Captures, v: &[u8]) -> bool {
    // A webhook's path is the credential when one of its segments
    // looks like one (a hook's number and a word do not).
    if caps.name("w").is_some() {
        return v.split(|c| *c == b'/').any(|seg| plausible(seg, false));
    }
    if caps.name("scheme").is_some_and(|m| {
        CONTAINER_SCHEMES
            .iter()
            .any(|s| m.as_bytes().eq_ignore_ascii_case(s.as_bytes()))
    }) {
        return false;
    }
    // A public key's constructor (`EcdsaPublicKey("04cf…")`) holds
    // what is published.
    let public = caps.name("n").is_some_and(|n| {
        memchr::memmem::find(&n.as_bytes().to_ascii_lowercase(), b"public").is_some()
    });
    !public && plausible(v, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(pattern: &str, s: &str) -> Vec<String> {
        let re = super::super::compile(pattern).unwrap();
        let mut out = Vec::new();
        if pattern == PAIR_PATTERN {
            pair_hits(0, &re, s.as_bytes(), &mut out);
        } else {
            hits(0, &re, s.as_bytes(), pattern == LOGIN_PATTERN, &mut out);
        }
        out.iter().map(|h| s[h.start..h.end].to_string()).collect()
    }

    #[test]
    fn a_client_built_from_a_literal_holds_a_credential() {
        let uuid = "3f2b8c1e-9a7d-4e6f-b5c4-2d1e0f9a8b7c";
        for text in [
            format!("client := NewQuuxlyAPI(\"{uuid}\")"),
            format!("const c = new AcmeClient('{uuid}', {{}});"),
            format!("opts = WithAPIKey(`{uuid}`)"),
        ] {
            assert_eq!(find(CALL_PATTERN, &text), vec![uuid], "{text}");
        }
        for text in [
            "client := NewQuuxlyAPI(\"https://api.quuxly.io\")",
            "c = HttpClient(\"application/json\")",
            "k = getKey(\"DATABASE_PASSWORD\")",
            "t = parseToken(\"Crc64TestConfig\")",
            "EcdsaPublicKey(\"04cf0d13a3a7577231ea1b66cf4021cd54\")",
        ] {
            assert!(find(CALL_PATTERN, text).is_empty(), "{text}");
        }
    }

    #[test]
    fn a_logins_user_goes_with_its_password() {
        let pw = "AP7JaG9ToerxBc6gWP5LcU2CNpb";
        assert_eq!(
            find(
                LOGIN_PATTERN,
                &format!("$c.Credentials = new-object System.Net.NetworkCredential(\"cidownload\", \"{pw}\");")
            ),
            [pw, "cidownload"]
        );
        // Beside a password the sweep already replaced (the rescan and
        // the final scan), the user alone.
        assert_eq!(
            find(
                LOGIN_PATTERN,
                "smtp.login(\"alice\", \"[REDACTED_SECRET:login-argument:0011aabb]\")"
            ),
            ["alice"]
        );
        // A password that stays keeps its user, and so does a template.
        for text in [
            "session.login(\"username\", \"password\")",
            "session.login(\"${USER}\", \"[REDACTED_SECRET:login-argument:0011aabb]\")",
        ] {
            assert_eq!(find(LOGIN_PATTERN, text), Vec::<String>::new(), "{text}");
        }
    }

    #[test]
    fn a_key_given_to_an_rpc_method_named_for_it_is_one() {
        let key = "8-Lp22ov7halMBLUpG97Wg4y7fibQi3CW19VJiZcCu746zgCs0m";
        for text in [
            format!("{{\"msg\":\"method\", \"method\":\"auth.login_with_api_key\", \"params\":[\"{key}\"]}}"),
            format!("{{\"method\": \"walletpassphrase\", \"params\": [ \"{key}\", 60]}}"),
        ] {
            assert_eq!(find(RPC_PATTERN, &text), vec![key], "{text}");
        }
        for text in [
            // A login's first parameter is its user; a method that names
            // no credential carries none; a date is no key.
            "{\"method\":\"auth.login\",\"params\":[\"alice\",\"Hq7Lm2Xr9Kz4Tb8N\"]}",
            "{\"method\":\"eth_getBalance\",\"params\":[\"Xk29fLq83ZmP0aRtQw7e\"]}",
            "{\"method\":\"token.list\",\"params\":[\"2024-01-01T00:00:00Z\"]}",
        ] {
            assert!(find(RPC_PATTERN, text).is_empty(), "{text}");
        }
    }

    #[test]
    fn an_aws_secret_beside_its_key_id_is_one() {
        let secret = "hjshnk5ex5u34565AWS654/JKGjhz545d89sjkja";
        for text in [
            format!("db = aws_lib.connect(\"AKIAF6BAFJKR45SAWSZ5\", \"{secret}\")"),
            format!("aws:\n  id: AKIAQYLPMN5HHHFPZAM2\n  secret: {secret}\n"),
        ] {
            assert_eq!(find(PAIR_PATTERN, &text), vec![secret], "{text}");
        }
        // A digest or a word run of 40 is not one.
        for text in [
            "AKIAQYLPMN5HHHFPZAM2 at commit 9c2e1f7a0b3d5e6f8a9b0c1d2e3f4a5b6c7d8e9f",
            "AKIAQYLPMN5HHHFPZAM2 is documented in ThisIsAVeryLongIdentifierNameForTestsX",
        ] {
            assert!(find(PAIR_PATTERN, text).is_empty(), "{text}");
        }
    }

    #[test]
    fn a_webhooks_path_is_its_credential() {
        for tail in [
            "xjd8h3kq7bf5z8nmr4tq9c2y1e",
            "9e10b0f2-b994-4bff-b106-473c37cdc555@9e10b0f2-b994-4bff-b106-473c37cdc555/IncomingWebhook/7f3c1a9e2b4d4e8f9a0b1c2d3e4f5a6b",
            "ABCD1234efgh5678i/xYz9QwErTy8UiOp7AsDf6GhJk",
        ] {
            let text = format!("url: https://chat.example.org/hooks/{tail}?x=1");
            assert_eq!(find(HOOK_PATTERN, &text), vec![tail], "{text}");
        }
        for text in [
            "https://gitlab.com/api/v4/projects/42/hooks/1/test",
            "https://example.com/webhooks/stripe/events",
            "ls .git/hooks/pre-commit",
        ] {
            assert!(find(HOOK_PATTERN, text).is_empty(), "{text}");
        }
    }

    #[test]
    fn a_key_in_a_urls_path_is_a_credential() {
        let key = "pri_9f8e7d6c5b4a39281706f5e4d3c2b1a0";
        let text = format!("url := \"https://api.example.com/v1/keys/{key}\"");
        assert_eq!(find(PATH_PATTERN, &text), vec![key]);
        for text in [
            "see https://docs.example.com/api/keys/create-a-key",
            "GET https://api.example.com/v1/tokens/{token_id}",
            "https://github.com/org/repo/settings/keys/new",
        ] {
            assert!(find(PATH_PATTERN, text).is_empty(), "{text}");
        }
    }
}
