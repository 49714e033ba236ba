//! Field-name classes: which JSON keys hold hidden reasoning, raw API
//! bodies, secrets, user names or identities.
//!
//! Names are compared in EBO's normalized form (lowercase, only `[a-z0-9]`),
//! so `api_key`, `apiKey` and `API-KEY` are one name.

use coffer_base::json::Node;

/// EBO's normalization: lowercase ASCII letters and digits, nothing else.
pub fn normalize(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Hidden reasoning fields (removed with their whole value).
const HIDDEN: &[&str] = &[
    "chainofthought",
    "extendedthinking",
    "hiddenreasoning",
    "encryptedreasoning",
    "encryptedthinking",
    "reasoning",
    "reasoningcontent",
    "reasoningdetails",
    "reasoningsignature",
    "thinking",
    "thinkingcontent",
    "thinkingsignature",
    "textsignature",
    "thoughtsignature",
];

/// Raw API bodies (removed with their whole value).
const RAW_BODIES: &[&str] = &["rawapibody", "rawrequestbody", "rawresponsebody"];

/// EBO's secret-named fields.
const SECRET_EXACT: &[&str] = &[
    "accesskey",
    "accesstoken",
    "apikey",
    "authorization",
    "clientsecret",
    "connectionstring",
    "credential",
    "credentials",
    "credentialsjson",
    "databaseurl",
    "idtoken",
    "oauthtoken",
    "password",
    "privatekey",
    // A config's password (`{"user": "sa", "pwd": "…"}`); an environment's
    // `PWD` holds a path, which the writer keeps (`kept_secret_value`).
    "pwd",
    "refreshtoken",
    "secret",
    "secretaccesskey",
    // AWS Secrets Manager's values; Rails' key base.
    "secretbinary",
    "secretkeybase",
    "secretstring",
    "token",
];

/// Suffixes that make any name secret-named (`githubToken`, `OPENAI_API_KEY`,
/// `db_password`), beyond EBO's exact list.
const SECRET_SUFFIXES: &[&str] = &[
    "token",
    "secret",
    "password",
    "passwd",
    "apikey",
    "accesskey",
    "secretkey",
    "privatekey",
    "clientsecret",
    "credentials",
    "credential",
    "databaseurl",
    "connectionstring",
    "authorization",
    "passphrase",
    // A list of them (`"db_passwords": ["…", "…"]`). Not `tokens`: a
    // model's `output_tokens` is a count.
    "passwords",
    "apikeys",
    "accesstokens",
    "apitokens",
    "authtokens",
    "refreshtokens",
];

/// Names that end like a secret but are not (normalized).
/// `Access-Control-Allow-Credentials: true` is a CORS switch.
const INNOCENT: &[&str] = &["maxtoken", "tokenizer", "accesscontrolallowcredentials"];

/// Endings that make a `…token` name innocent: pagination cursors
/// (`nextPageToken`, `NextContinuationToken`, botocore's `input_token`),
/// idempotency keys, a tokenizer's special tokens (`eos_token: "</s>"`),
/// the `ASKPASS` programs, and words that only end like a secret's
/// (`compass`, `seamonkey`).
/// Not `clienttoken` or `sessiontoken`: some services authenticate with
/// those.
const INNOCENT_SUFFIXES: &[&str] = &[
    "pagetoken",
    "nexttoken",
    "continuationtoken",
    "paginationtoken",
    "inputtoken",
    "outputtoken",
    "idempotencytoken",
    "bostoken",
    "eostoken",
    "padtoken",
    "unktoken",
    "septoken",
    "clstoken",
    "masktoken",
    // `GIT_ASKPASS`, `SSH_ASKPASS`: a program that asks for one.
    "askpass",
    // Words that end in `key`: `BROWSER=…:seamonkey:mozilla:…`.
    "monkey",
    "turkey",
    "hockey",
    "jockey",
    "donkey",
    "whiskey",
    "hotkey",
    "turnkey",
    // Words that end in `pass`.
    "compass",
    "bypass",
    "overpass",
    "underpass",
    "surpass",
    "trespass",
];

/// Fields whose values are user names.
const USER_FIELDS: &[&str] = &["user", "username", "owner", "login"];

/// Fields whose values are correlation identities (rewritten wholesale).
const ID_FIELDS: &[&str] = &[
    "bundleid",
    "runid",
    "attemptid",
    "sessionid",
    "traceid",
    "spanid",
    "parentspanid",
    "parentid",
    "eventid",
    "turnid",
    "requestid",
    "messageid",
    "tooluseid",
    "toolcallid",
    "callid",
    "conversationid",
    "subagentid",
    "connectionid",
    "workspaceid",
    "principalid",
    "agentid",
    "agentinstanceid",
    "surfaceid",
    "approvalid",
];

/// What a key's name says about its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldClass {
    /// Hidden reasoning: removed.
    Hidden,
    /// A raw API request or response body: removed.
    RawBody,
    /// A secret: the value is replaced.
    Secret,
    /// A user name: replaced by a numbered placeholder.
    User,
    /// A correlation identity: rewritten.
    Identity,
    /// Anything else: the value is scrubbed as data.
    Plain,
}

impl FieldClass {
    /// Whether the field is removed from the export.
    pub fn removed(self) -> bool {
        matches!(self, FieldClass::Hidden | FieldClass::RawBody)
    }
}

/// Classifies a key; `allow` holds extra innocent names (normalized).
pub fn classify(name: &str, allow: &[String]) -> FieldClass {
    // A package's or a path's name is no field's (`"@octokit/auth-token":
    // "^4.0.0"` in a dependency map, `"/oauth/token": {…}` in an API's
    // paths): its value is read as any value.
    if name.starts_with('@') || name.contains('/') {
        return match classify_by_name(name, allow) {
            FieldClass::Secret => FieldClass::Plain,
            class => class,
        };
    }
    classify_by_name(name, allow)
}

fn classify_by_name(name: &str, allow: &[String]) -> FieldClass {
    // Keys are short: normalize on the stack (this runs for every key of
    // every record, three times per export).
    let mut buf = [0u8; 64];
    let mut len = 0;
    for c in name.bytes().filter(u8::is_ascii_alphanumeric) {
        if len == buf.len() {
            return classify_normalized(&normalize(name), allow);
        }
        buf[len] = c.to_ascii_lowercase();
        len += 1;
    }
    classify_normalized(std::str::from_utf8(&buf[..len]).expect("ASCII"), allow)
}

fn classify_normalized(n: &str, allow: &[String]) -> FieldClass {
    if HIDDEN.contains(&n) {
        return FieldClass::Hidden;
    }
    if RAW_BODIES.contains(&n) {
        return FieldClass::RawBody;
    }
    if is_secret_name(n, allow) {
        return FieldClass::Secret;
    }
    if USER_FIELDS.contains(&n) {
        return FieldClass::User;
    }
    if ID_FIELDS.contains(&n) {
        return FieldClass::Identity;
    }
    FieldClass::Plain
}

/// In a two-element array `[name, value]` of strings whose name is
/// secret-named (`["OPENAI_API_KEY", "sk-..."]`), the value.
pub fn secret_pair<'v, V: StrLeaf>(a: &'v [V], allow: &[String]) -> Option<&'v V> {
    match a {
        [n, v]
            if v.leaf_str().is_some()
                && n.leaf_str()
                    .is_some_and(|n| is_secret_name(&normalize(n), allow)) =>
        {
            Some(v)
        }
        _ => None,
    }
}

/// In an object that pairs a secret's name with its value, the key of
/// the member holding the value: an env list's entry (`{"name":
/// "GITHUB_TOKEN", "value": "…"}`), an AWS tag or parameter (`{"Key": …,
/// "Value": …}`, SSM's `{"Name": "/prod/db/password", "Value": …}`),
/// CloudFormation's `{"ParameterKey": …, "ParameterValue": …}`,
/// Beanstalk's `{"OptionName": …, "Value": …}`, a form's field.
///
/// The value member's key is `value` (any case), or else the one key
/// that ends in it; a name member's key is `name` or `key`
/// or ends in one, and its string is a secret's name. Why by the ending:
/// every service spells the pair its own way, and a per-service list
/// would leak the next one's.
pub fn pair_value_member<'k, V: StrLeaf + 'k>(
    members: impl IntoIterator<Item = (&'k str, &'k V)> + Clone,
    allow: &[String],
) -> Option<&'k str> {
    let ends = |k: &str, w: &str| {
        k.len() >= w.len() && k.as_bytes()[k.len() - w.len()..].eq_ignore_ascii_case(w.as_bytes())
    };
    // The value member first: most objects have none, and their names
    // are then never read (this runs for every object, three times an
    // export).
    let (mut exact, mut suffixed, mut others) = (None, None, 0);
    for (k, _) in members.clone() {
        if k.eq_ignore_ascii_case("value") {
            exact = Some(k);
        } else if ends(k, "value") {
            others += usize::from(suffixed.is_some());
            suffixed = Some(k);
        }
    }
    // The plain spelling wins over a `defaultValue` beside it; without
    // it, two `…Value` members leave no telling which is the secret.
    let value = exact.or(suffixed.filter(|_| others == 0))?;
    members
        .into_iter()
        .any(|(k, v)| {
            !ends(k, "value")
                && (ends(k, "name") || ends(k, "key"))
                && v.leaf_str().is_some_and(|n| pair_name(n, allow))
        })
        .then_some(value)
}

/// Whether `n`, a pair's name, makes its value a secret: a secret's name,
/// or one ending in what only a credential's name ends in once it is
/// given a value (`PASS`, `db_pwd`, `SSH_KEY`, `basic_auth`), perhaps
/// numbered (`PASSWORD_2`). The text rule `name-value-pair` reads the
/// same endings (`pair_secret_name!` in `rules/catalog.rs`).
fn pair_name(n: &str, allow: &[String]) -> bool {
    let n = normalize(n);
    let n = n.trim_end_matches(|c: char| c.is_ascii_digit());
    is_secret_name(n, allow)
        || (["pass", "pwd", "key", "auth"]
            .iter()
            .any(|w| n.ends_with(w))
            && !normalize_is_innocent(n)
            && !allow.iter().any(|a| a == n))
}

/// A JSON value's string, for rules that read either tree the passes
/// build (pass 1 looks at borrowed [`Node`]s, pass 2 rewrites `Value`s).
pub trait StrLeaf {
    /// The string, when the value is one.
    fn leaf_str(&self) -> Option<&str>;
}

impl StrLeaf for serde_json::Value {
    fn leaf_str(&self) -> Option<&str> {
        self.as_str()
    }
}

impl StrLeaf for Node<'_> {
    fn leaf_str(&self) -> Option<&str> {
        self.as_str()
    }
}

/// Whether a normalized name is secret-named.
pub fn is_secret_name(n: &str, allow: &[String]) -> bool {
    if INNOCENT.contains(&n)
        || INNOCENT_SUFFIXES.iter().any(|s| n.ends_with(s))
        || allow.iter().any(|a| a == n)
    {
        return false;
    }
    SECRET_EXACT.contains(&n) || SECRET_SUFFIXES.iter().any(|s| n.ends_with(s))
}

/// The record type whose content is hidden reasoning (oneshot-v1).
pub const THINKING_RECORD: &str = "observation.agent_thinking";

/// Fields a hidden-reasoning record keeps (everything else is removed).
pub const THINKING_KEEP: &[&str] = &["schema", "type", "id", "sessionId", "timestamp"];

/// Names that look secret but are innocent (`max_tokens`, `token_count`,
/// `*_file`, `*_path`, `*_ttl`), normalized.
pub fn normalize_is_innocent(n: &str) -> bool {
    INNOCENT.contains(&n)
        || INNOCENT_SUFFIXES.iter().any(|s| n.ends_with(s))
        || ["maxtokens", "tokencount", "tokens"].contains(&n)
        // `public_key`, `publicToken`, `publishable_key`: public by name.
        || n.starts_with("public")
        || n.starts_with("publishable")
        // `DOTENV_PUBLIC_KEY`, `VAPID_PUBLIC_KEY`, `ssh_pubkey`.
        || n.ends_with("publickey")
        || n.ends_with("pubkey")
        // Anti-forgery tokens are bound to a session and authenticate
        // nothing on their own.
        || n.starts_with("csrf")
        || n.starts_with("xsrf")
        || [
            "file", "path", "ttl", "count", "limit", "type", "len", "length", "size", "id", "name",
        ]
        .iter()
        .any(|s| n.ends_with(s) && !SECRET_SUFFIXES.iter().any(|x| n.ends_with(x)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_package_or_a_path_is_no_fields_name() {
        for n in [
            "@octokit/auth-token",
            "node_modules/@octokit/auth-token",
            "/oauth/token",
        ] {
            assert_eq!(classify(n, &[]), FieldClass::Plain, "{n}");
        }
        assert_eq!(classify("X-Auth-Token", &[]), FieldClass::Secret);
    }

    #[test]
    fn a_pair_names_its_value_member_in_any_services_spelling() {
        let pair = |members: &[(&'static str, &'static str)]| {
            let values: Vec<(&str, serde_json::Value)> = members
                .iter()
                .map(|(k, v)| (*k, serde_json::Value::from(*v)))
                .collect();
            pair_value_member(values.iter().map(|(k, v)| (*k, v)), &[]).map(str::to_owned)
        };
        let some = |k: &str| Some(k.to_string());
        assert_eq!(
            pair(&[("name", "GITHUB_TOKEN"), ("value", "x")]),
            some("value")
        );
        assert_eq!(
            pair(&[("Key", "DB_PASSWORD"), ("Value", "x")]),
            some("Value")
        );
        assert_eq!(
            pair(&[
                ("Name", "/prod/db/password"),
                ("Type", "SecureString"),
                ("Value", "x")
            ]),
            some("Value")
        );
        assert_eq!(
            pair(&[("ParameterKey", "DbPassword"), ("ParameterValue", "x")]),
            some("ParameterValue")
        );
        assert_eq!(
            pair(&[("OptionName", "DB_PASSWORD"), ("Value", "x")]),
            some("Value")
        );
        assert_eq!(pair(&[("key", "PASS"), ("value", "x")]), some("value"));
        assert_eq!(
            pair(&[("name", "SSH_KEY_2"), ("value", "x")]),
            some("value")
        );
        // A name no secret's, two values, or no name member: no pair.
        assert_eq!(pair(&[("name", "public_key"), ("value", "x")]), None);
        assert_eq!(pair(&[("name", "bypass_cache"), ("value", "x")]), None);
        assert_eq!(pair(&[("Key", "owner"), ("Value", "x")]), None);
        assert_eq!(pair(&[("label", "DB_PASSWORD"), ("value", "x")]), None);
        assert_eq!(pair(&[("value", "DB_PASSWORD")]), None);
    }

    #[test]
    fn ebo_names_in_any_spelling() {
        for n in [
            "apiKey",
            "API_KEY",
            "client-secret",
            "DATABASE_URL",
            "id_token",
            "password",
        ] {
            assert_eq!(classify(n, &[]), FieldClass::Secret, "{n}");
        }
        for n in [
            "thinking",
            "reasoning_content",
            "thoughtSignature",
            "encrypted_thinking",
        ] {
            assert_eq!(classify(n, &[]), FieldClass::Hidden, "{n}");
        }
        assert_eq!(classify("raw_response_body", &[]), FieldClass::RawBody);
        assert_eq!(classify("userName", &[]), FieldClass::User);
        assert_eq!(classify("sessionId", &[]), FieldClass::Identity);
    }

    #[test]
    fn suffixes_and_innocent_names() {
        assert_eq!(classify("githubToken", &[]), FieldClass::Secret);
        assert_eq!(classify("OPENAI_API_KEY", &[]), FieldClass::Secret);
        assert_eq!(classify("max_tokens", &[]), FieldClass::Plain);
        assert_eq!(classify("token_count", &[]), FieldClass::Plain);
        assert_eq!(classify("GITHUB_TOKEN_FILE", &[]), FieldClass::Plain);
        assert_eq!(classify("next_token", &[]), FieldClass::Plain);
        for n in [
            "nextPageToken",
            "NextContinuationToken",
            "input_token",
            "eos_token",
            "pad_token",
            "IdempotencyToken",
        ] {
            assert_eq!(classify(n, &[]), FieldClass::Plain, "{n}");
        }
        for n in [
            "client_token",
            "SessionToken",
            "auth_token",
            "bot_token",
            "SecretString",
            "SecretBinary",
            "secret_key_base",
            "ssh_passphrase",
            "db_passwords",
            "api_tokens",
            "refreshTokens",
        ] {
            assert_eq!(classify(n, &[]), FieldClass::Secret, "{n}");
        }
        // A model's counts of tokens are no list of tokens.
        for n in ["output_tokens", "cached_tokens", "total_tokens", "tokens"] {
            assert_eq!(classify(n, &[]), FieldClass::Plain, "{n}");
        }
        assert_eq!(
            classify("csrf_token", &["csrftoken".into()]),
            FieldClass::Plain
        );
    }
}
