//! The credential rule catalog and its keyword prefilter.
//!
//! Every rule is a byte regex with Unicode off (`(?-u)`), anchored on a
//! literal that also serves as its prefilter keyword: a rule's regex runs
//! only on text where one of its keywords occurs (ASCII case-insensitively).
//! Soundness, that every match contains one of its rule's keywords, is what
//! `prefilter_is_sound` checks over every fixture. Each rule names the exact
//! span that is the credential (`s` group, else the whole match): the value,
//! never its label, and never less than the whole value.

use regex::bytes::Regex;

use crate::walker::Walker;

pub(crate) use plausibility::assignment_value_ok;
use plausibility::*;
pub use plausibility::{credential_like, is_placeholder, kept_secret_value, looks_fake};

/// Extra checks a candidate match must pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// The match is a credential by shape alone.
    Shape,
    /// A value next to a label: placeholders and variable references are not
    /// secrets.
    Value,
    /// A value next to a secret-sounding name: the name must not be
    /// innocent, and weak names need a strong value.
    Assignment,
    /// `Basic` credentials: the value must decode to `user:password`.
    Basic,
    /// A JSON Web Token: the header must decode to a JSON object.
    Jwt,
    /// A policy's own rule: every match counts, exactly as written.
    Custom,
    /// A service's name, then a credential-shaped value
    /// ([`named`]): the regex finds names, the check reads what follows.
    Named,
    /// A value after a credential's key in config syntax, or a URL's
    /// password ([`fields`]): kept only when it is code or a placeholder.
    Field,
    /// A credential-shaped literal a call or a URL path carries
    /// ([`carriers`]).
    Carried,
    /// An AWS secret access key beside its key id ([`carriers`]).
    Paired,
}

impl Check {
    /// Whether a match is a credential by its shape (not by a label next
    /// to it): such values are swept across the whole export.
    pub fn by_shape(self) -> bool {
        matches!(self, Check::Shape | Check::Jwt | Check::Custom)
    }
}

/// One rule.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Stable id (appears in placeholders).
    pub id: String,
    /// Prefilter keywords; empty means "always run" (after the gate).
    pub keywords: Vec<String>,
    /// For a rule with no literal to prefilter on: a cheap byte test every
    /// match passes (checked by `prefilter_is_sound`).
    pub gate: Option<prefixed::Gate>,
    /// For a rule with keywords: a cheap test of the text after a keyword
    /// occurrence; the rule runs only where one passes (checked by
    /// `prefilter_is_sound`).
    pub after_keyword: Option<prefixed::Gate>,
    /// The compiled regex.
    pub regex: Regex,
    /// The fewest bytes a match of `regex` can span: a shorter string is
    /// not searched.
    pub min_len: usize,
    /// Extra check.
    pub check: Check,
}

/// A credential found in a byte string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// Index of the rule in its [`RuleSet`].
    pub rule: usize,
    /// Start of the credential.
    pub start: usize,
    /// End of the credential (exclusive).
    pub end: usize,
}

type Spec = (&'static str, &'static [&'static str], &'static str, Check);

/// Rules whose keywords occur far more often than their matches, and the
/// test the text after a keyword must pass for the rule to run.
const AFTER_KEYWORD: &[(&str, prefixed::Gate)] = &[
    ("secret-label-spaced", spaced_value_follows),
    // `ion_` ends `session_`, `version_`, `region_`: the token's 42
    // letters and digits must follow.
    ("ionic-personal-access-token", |rest| {
        rest.len() >= 42 && rest[..42].iter().all(u8::is_ascii_alphanumeric)
    }),
    // `-u` in words (`re-use`, `x-user-id`): an option's blank, `=` or
    // the rest of `--user`.
    ("curl-user-key", |rest| {
        rest.first()
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'='))
            || rest.starts_with(b"ser")
    }),
    // `00D` in hex and numbers: the org id's 12 characters and `!`.
    ("salesforce-access-token", |rest| {
        rest.get(12) == Some(&b'!') && rest[..12].iter().all(u8::is_ascii_alphanumeric)
    }),
];

/// After `token ` in `secret-label-spaced`: more blanks, perhaps a quote,
/// then at least 16 characters of a value (most prose has a word there).
fn spaced_value_follows(rest: &[u8]) -> bool {
    let rest = &rest[rest
        .iter()
        .take_while(|c| matches!(c, b' ' | b'\t'))
        .count()..];
    let rest = rest
        .strip_prefix(b"\"")
        .or_else(|| rest.strip_prefix(b"'"))
        .unwrap_or(rest);
    rest.iter()
        .take(16)
        .take_while(|c| c.is_ascii_alphanumeric() || b"+/_.-".contains(c))
        .count()
        == 16
}

/// A variable name that holds a secret, as `env-default-literal` reads
/// it in each of its five syntaxes.
macro_rules! env_secret_name {
    () => {
        r"(?i:[A-Za-z0-9_]*(?:token|secret|passw(?:or)?d|pass|pwd|key|auth|credentials?|dsn)(?:_?[0-9]{1,2})?)"
    };
}

/// The name in a name/value pair (`{"name": …, "value": …}`,
/// `<name>…</name><value>…</value>`) that makes the value a secret.
macro_rules! pair_secret_name {
    () => {
        r"[A-Za-z0-9_.-]*(?:token|secret|passw(?:or)?d|pass|pwd|api_?key|apikey|key|auth|credentials?)(?:[_-]?[0-9]{1,2})?"
    };
}

/// The built-in catalog (docs/EXPORT.md, "Coverage"). Order breaks ties between rules that
/// claim the same span.
const CATALOG: &[Spec] = &[
    (
        "private-key",
        &["PRIVATE KEY"],
        r"(?s)(?P<s>-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----|\z))",
        Check::Shape,
    ),
    (
        "aws-access-key-id",
        &["AKIA", "ASIA", "ABIA", "ACCA", "A3T"],
        r"\b(?P<s>(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16})\b",
        Check::Shape,
    ),
    (
        "aws-secret-access-key",
        &["secret"],
        // Also `aws configure set aws_secret_access_key VALUE`.
        r#"(?i)(?:aws_?secret_?access_?key|secret_?access_?key|aws_?secret_?key)["']?(?:\s*(?:=>|:=|=|:)\s*|[ \t]+)["']?(?P<s>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+]|$)"#,
        Check::Value,
    ),
    (
        // An STS session token (`aws sts assume-role`, `AWS_SESSION_TOKEN`):
        // its serialized header makes the same base64 opening every time
        // (`FQoG…`, in AWS's documentation, is the older one; `//////////`
        // runs are part of real tokens).
        "aws-session-token",
        &["IQoJb3JpZ2luX2Vj", "FwoGZXIvYXdzE", "FQoGZXIvYXdzE"],
        r"(?P<s>(?:IQoJb3JpZ2luX2Vj|F[wQ]oGZXIvYXdzE)[A-Za-z0-9+/]{100,}={0,2})",
        Check::Shape,
    ),
    (
        "aws-bedrock-api-key",
        &["ABSK", "bedrock-api-key-"],
        r"(?P<s>\bABSK[A-Za-z0-9+/]{40,}={0,2}|bedrock-api-key-(?:YmVkcm9jay5hbWF6b25hd3MuY29t[A-Za-z0-9+/=%]*|[A-Za-z0-9+/=%]{40,}))",
        Check::Shape,
    ),
    (
        "google-api-key",
        &["AIza"],
        r"(?:^|[^0-9A-Za-z_-])(?P<s>AIza[0-9A-Za-z_-]{35})(?:[^0-9A-Za-z_-]|$)",
        Check::Shape,
    ),
    (
        "google-oauth-client-secret",
        &["GOCSPX-"],
        r"(?P<s>GOCSPX-[0-9A-Za-z_-]{28})",
        Check::Shape,
    ),
    (
        "google-oauth-access-token",
        &["ya29."],
        r"(?P<s>ya29\.[0-9A-Za-z_-]{20,})",
        Check::Shape,
    ),
    (
        "azure-ad-client-secret",
        &["Q~"],
        r"(?:^|[^0-9A-Za-z_~.+/-])(?P<s>[0-9A-Za-z_~.-]{3}[0-9]Q~[0-9A-Za-z_~.-]{31,34})(?:[^0-9A-Za-z_~.-]|$)",
        Check::Shape,
    ),
    (
        "azure-storage-account-key",
        &["AccountKey="],
        r"AccountKey=(?P<s>[A-Za-z0-9+/]{86}==)",
        Check::Shape,
    ),
    (
        // Base64 in storage SAS URLs, base64url in Power Automate
        // workflow webhooks (`…/invoke?…&sig=r2h9kxq06-gWOJ…`).
        "azure-sas-signature",
        &["sig="],
        r"[?&]sig=(?P<s>[A-Za-z0-9%+/_-]{20,}(?:%3D|=){0,2})",
        Check::Shape,
    ),
    (
        "github-fine-grained-pat",
        &["github_pat_"],
        // 82 characters as GitHub issues them; 30 or more of a token cut
        // short in a log line are still most of one.
        r"(?P<s>github_pat_[A-Za-z0-9_]{30,255})",
        Check::Shape,
    ),
    (
        "github-app-installation-token",
        &["ghs_"],
        // Newer ones carry `_` inside (`ghs_RWGUZ6kS8_Ut7…`). A letter or
        // digit before the prefix makes it part of a word
        // (`Soghs_ICANVAS…`), as it does for the other prefixes below; an
        // escaped line end (`\nghs_…` in a log's JSON) does not.
        r"(?:^|[^A-Za-z0-9]|\\[nrt])(?P<s>ghs_[A-Za-z0-9_]{36,}[A-Za-z0-9._-]*)",
        Check::Shape,
    ),
    (
        "github-token",
        &["ghp_", "gho_", "ghu_", "ghr_"],
        r"(?:^|[^A-Za-z0-9]|\\[nrt])(?P<s>gh[pour]_[A-Za-z0-9]{36,255})",
        Check::Shape,
    ),
    (
        "gitlab-token",
        &[
            "glpat-",
            "gldt-",
            "glrt-",
            "glptt-",
            "glft-",
            "glsoat-",
            "glcbt-",
            "glimt-",
            "glagent-",
            "gloas-",
            "GR1348941",
        ],
        r"(?P<s>(?:glpat|gldt|glrt|glft|glsoat|glcbt)-[0-9A-Za-z_-]{20,50}(?:\.[0-9a-z]{9})?|glpat-[0-9A-Za-z_-]{27,300}\.[0-9a-z]{9}|glimt-[0-9A-Za-z_-]{25}|glptt-[0-9A-Za-z_-]{40}|glagent-[0-9A-Za-z_-]{50,1024}|gloas-[0-9A-Za-z_-]{64}|GR1348941[0-9A-Za-z_-]{20,50})(?:[^0-9A-Za-z_-]|$)",
        Check::Shape,
    ),
    (
        "slack-token",
        &[
            "xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-", "xoxe-", "xoxo-", "xapp-",
        ],
        // Bot and user tokens carry 8-14 digit ids (`xoxb-<id>-<id>-<secret>`)
        // or, in older ones, shorter ids and a 32-hex secret
        // (`xoxp-123-456-789-<32 hex>`),
        // legacy tokens any ids, workspace tokens any or none; refresh and
        // configuration tokens a one-digit version and a long body.
        r"(?P<s>xox[bpe]-[0-9]{8,14}-(?:[0-9]{8,14}-)*[0-9A-Za-z]{8,}(?:-[0-9A-Za-z]+)*|xox[bp]-[0-9]{1,14}(?:-[0-9]{1,14}){1,3}-[0-9a-f]{32}|xox[os]-(?:[0-9]+-)+[0-9A-Za-z]{8,}(?:-[0-9A-Za-z]+)*|xox[ar]-(?:[0-9]+-)*[0-9A-Za-z]{8,}(?:-[0-9A-Za-z]+)*|(?:xoxe\.xox[bp]|xoxe)-[0-9]-[0-9A-Za-z]{40,}|xapp-[0-9]-[A-Z0-9]+-[0-9]+-[a-z0-9]+)(?:[^0-9A-Za-z-]|$)",
        Check::Shape,
    ),
    (
        "slack-webhook",
        &["hooks.slack.com"],
        r"(?P<s>(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,})",
        Check::Shape,
    ),
    (
        "stripe-key",
        &[
            "sk_live_", "rk_live_", "sk_test_", "rk_test_", "sk_prod_", "rk_prod_", "whsec_",
        ],
        r"\b(?P<s>(?:sk|rk)_(?:live|test|prod)_[0-9A-Za-z]{20,}|whsec_[0-9A-Za-z+/=]{20,})",
        Check::Shape,
    ),
    (
        "anthropic-api-key",
        &["sk-ant-"],
        r"(?P<s>sk-ant-[a-z]{2,8}[0-9]{2,4}-[A-Za-z0-9_-]{40,})",
        Check::Shape,
    ),
    (
        "openai-api-key",
        &["sk-"],
        r"\b(?P<s>sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|sk-[A-Za-z0-9]{20,}T3BlbkFJ[A-Za-z0-9]{20,}|sk-[A-Za-z0-9]{40,})",
        Check::Shape,
    ),
    (
        "huggingface-token",
        &["hf_"],
        r"\b(?P<s>hf_[A-Za-z0-9]{34,40})\b",
        Check::Shape,
    ),
    (
        "npm-token",
        &["npm_"],
        r"\b(?P<s>npm_[A-Za-z0-9]{36})\b",
        Check::Shape,
    ),
    (
        "npmrc-auth",
        &["_auth", "_password"],
        // .npmrc syntax only: `//host/:_authToken=...` or `_auth=` at the
        // start of a line (not `_AUTH =` in code, not `re.compile(r`).
        r#"(?m)(?:^[ \t]*|/:)_(?:authToken|auth|password)[ \t]*=[ \t]*["']?(?P<s>[^\s"']+)"#,
        Check::Value,
    ),
    (
        "pypi-token",
        &["pypi-AgEIcHlwaS5vcmc", "pypi-AgENdGVzdC5weXBpLm9yZw"],
        r"(?P<s>pypi-(?:AgEIcHlwaS5vcmc|AgENdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,})",
        Check::Shape,
    ),
    (
        "jwt",
        &["eyJ"],
        // Unsigned tokens too (`header.payload` or `header.payload.`).
        r"\b(?P<s>eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]*)?)",
        Check::Jwt,
    ),
    (
        "url-credentials",
        &["://"],
        // `postgres://postgres:postgres@`: a user name repeated is a sample.
        // Redis URLs carry no user (`redis://:password@host`).
        r#"(?i)\b[a-z][a-z0-9+.-]{1,20}://(?P<u>[^\s:@/"'<>]{0,256}):(?P<s>[^\s@/"'<>]{1,256})@[^\s@/"'<>]"#,
        Check::Value,
    ),
    (
        "authorization-header",
        &["authorization"],
        // Any scheme: `Bearer`, `token`, Okta's `SSWS`, `GenieKey`, ...
        r#"(?i)authorization["']?\s*[:=]\s*["']?(?:[a-z][a-z0-9_-]{1,30}\s+)?(?P<s>[^\s"',;]{8,})"#,
        Check::Value,
    ),
    (
        // A session cookie is a bearer credential (`curl -v`, a HAR, a
        // browser's request headers); other cookies in the header stay.
        "session-cookie",
        &["cookie"],
        // (A value, not an assignment: a name ending in `id` is innocent
        // as a variable's, and a session id is the credential.)
        r#"(?i)\b(?:set-)?cookie["']?(?:\s*[:=]\s*|\s+)["']?(?:[^\r\n"']*?[;\s])?(?P<n>__(?:secure|host)-[a-z0-9_.-]+|[a-z0-9_.-]*(?:sess(?:ion)?(?:id)?|sid|auth|token|jwt|remember[a-z0-9_]*))=(?P<s>[^;\s"',]{16,})"#,
        Check::Value,
    ),
    (
        "bearer-token",
        &["bearer"],
        r"(?i)\bbearer\s+(?P<s>[A-Za-z0-9._~+/-]{16,}=*)",
        Check::Value,
    ),
    (
        "basic-auth",
        &["basic"],
        r"(?i)\bbasic\s+(?P<s>[A-Za-z0-9+/]{8,}={0,2})",
        Check::Basic,
    ),
    (
        // A Docker `config.json`: `"auths": {"host": {"auth": "<base64 of
        // user:password>"}}`.
        "docker-config-auth",
        &["\"auth\""],
        r#""auth"\s*:\s*"(?P<s>[A-Za-z0-9+/]{8,}={0,2})""#,
        Check::Basic,
    ),
    (
        "curl-user",
        &["-u"],
        r#"(?:\s|^)(?:-u|--user|-U|--proxy-user)(?:\s+|=)["']?(?P<u>[^\s:"'\[<]{0,128})["']?:["']?(?P<s>[^\s"'\[]{1,256})"#,
        Check::Value,
    ),
    (
        // `curl -u "sk_live_…:"`: an API key given as the user with an
        // empty password (the password form is `curl-user`).
        "curl-user-key",
        &["-u"],
        r#"(?:\s|^)(?:-u|--user)(?:\s+|=)["']?(?P<s>[^\s:"'\[<{}$]{12,128}):(?:["']|\s|$)"#,
        Check::Value,
    ),
    (
        // An app access token, `<app id>|<app secret or signature>`; no
        // fixed literal, so behind its gate.
        "facebook-app-access-token",
        &[],
        r"(?:^|[^A-Za-z0-9_])(?P<s>[0-9]{15,16}\|[A-Za-z0-9_-]{27,40})(?:[^A-Za-z0-9_-]|$)",
        Check::Shape,
    ),
    (
        "cli-secret-flag",
        &[
            "-api-key",
            "_api-key",
            "-api_key",
            "_api_key",
            "-apikey",
            "_apikey",
            "-token",
            "_token",
            "-password",
            "_password",
            "-secret",
            "_secret",
            "storepass",
            "keypass",
            "tlspassword",
        ],
        // `--api-key`, `--softlayer-api-key`, `--client_secret`: the last
        // word follows `-` or `_`, which is what the keywords hold. One
        // dash too: PowerShell's `-Password VALUE`, keytool's `-storepass`
        // and `-keypass`; curl's `--tlspassword` and
        // `--proxy-tlspassword`. A value holds no `=` but its padding:
        // `--secret id=npmrc,src=…` names a file, it is not one.
        r#"(?i)(?:\s|^)--?(?:(?:[a-z0-9]+[-_])*(?:api[-_]?key|token|password|secret)|(?:src|dest|new)?(?:store|key)pass|(?:proxy-)?tlspassword)(?:\s+|=)["']?(?P<s>[^\s"'=]{6,}={0,2})(?:[\s"']|$)"#,
        Check::Value,
    ),
    (
        // A password on a command line: `docker login -u ci -p VALUE`
        // (also podman, buildah, skopeo, nerdctl, helm, oras, `az`, `oc`),
        // `mysql -uroot -pVALUE` (with a space, `-p` prompts and takes
        // nothing), `sshpass -p VALUE`, `redis-cli -a VALUE`, OpenSSL's
        // `-passin pass:VALUE`, `psexec \\host -u USER -p VALUE`.
        "cli-login-password",
        &["login", "mysql", "sshpass", "redis-cli", "pass:", "psexec"],
        r#"(?:\b(?:docker|podman|buildah|skopeo|nerdctl|helm|oras|az|oc)\b[^\n]{0,200}?\blogin\b[^\n]{0,200}?\s(?:-p|--password)(?:\s+|=)|\bmysql(?:dump|admin|sh)?\b[^\n]{0,200}?\s-p|\bsshpass\s+-p\s*|\bredis-cli\b[^\n]{0,200}?\s-a\s+|\s-pass(?:in|out)?\s+pass:|(?i:\bpsexec)(?:\.exe)?\b[^\n]{0,200}?\s-p\s+)["']?(?P<s>[^\s"']{4,})"#,
        Check::Value,
    ),
    (
        // A literal default for a secret read from the environment, the
        // code form of `${TOKEN:-literal}`: `process.env.API_KEY ||
        // "…"` (or `??`), `os.environ.get("API_KEY", "…")`,
        // `os.getenv("API_KEY", "…")`, Ruby's `ENV.fetch("API_KEY", "…")`,
        // `ENV["API_KEY"] || "…"` and django-environ's
        // `env("SECRET_KEY", default="…")`. The variable's name is judged
        // as an assignment's.
        "env-default-literal",
        &[
            "process.env",
            "environ.get",
            "getenv",
            "ENV.fetch",
            "ENV[",
            "env(",
        ],
        concat!(
            r#"(?:process\.env(?:\.|\[["'`])(?P<n>"#,
            env_secret_name!(),
            r#")["'`]?\]?[ \t]*(?:\|\||\?\?)|\bos\.(?:environ\.get|getenv)\([ \t]*["'](?P<n2>"#,
            env_secret_name!(),
            r#")["'][ \t]*,|\bENV\.fetch\([ \t]*["'](?P<n3>"#,
            env_secret_name!(),
            r#")["'][ \t]*,|\bENV\[["'](?P<n4>"#,
            env_secret_name!(),
            r#")["']\][ \t]*\|\||\benv\([ \t]*["'](?P<n5>"#,
            env_secret_name!(),
            r#")["'][ \t]*,[ \t]*default[ \t]*=)[ \t]*(?:"(?P<q>[^"\r\n]+)"|'(?P<a>[^'\r\n]+)'|`(?P<b>[^`\r\n]+)`)"#,
        ),
        Check::Assignment,
    ),
    (
        // A variable set by a command, with a space where shells put `=`:
        // Dockerfile's `ENV NAME value`, fish's `set -gx NAME value`,
        // csh's `setenv NAME value`, Windows' `setx NAME value`, macOS's
        // `launchctl setenv NAME value`. The name is judged as an
        // assignment's is.
        "command-assignment",
        &["ENV ", "setenv", "setx", "set -"],
        r#"(?im)(?:^|[;&|(]|\s)(?:(?-i:ENV)|setenv|setx|set(?:[ \t]+-[a-z-]+)+)[ \t]+"?(?P<n>[A-Za-z0-9_]*(?:token|secret|passw(?:or)?d|pass|pwd|api_?key|apikey|access_?key|private_?key|key|auth|credentials?)(?:_?[0-9]{1,2})?)"?[ \t]+(?:"(?P<q>[^"\r\n]+)"|'(?P<a>[^'\r\n]+)'|(?P<s>[^\s"'`;&|]+))"#,
        Check::Assignment,
    ),
    (
        // `.netrc`: `machine HOST login USER password VALUE` on one line.
        "netrc-password",
        &["machine"],
        r#"\bmachine[ \t]+\S+[ \t]+(?:login[ \t]+\S+[ \t]+)?password[ \t]+(?P<s>\S+)"#,
        Check::Value,
    ),
    (
        // A line that is only `password VALUE`: a `.netrc` entry over
        // lines, a Gradle `credentials { password '…' }` block. (A line
        // of prose that wraps there, `password combination.`, ends a
        // sentence: its word is judged without the stop.)
        "password-line",
        &["password", "passwd"],
        r#"(?im)^[ \t]*(?P<n>password|passwd)[ \t]+(?:"(?P<q>[^"\r\n]+)"|'(?P<a>[^'\r\n]+)'|(?P<s>[^\s"']+?)[.,]?)[ \t]*$"#,
        Check::Assignment,
    ),
    (
        // What `vault operator init` prints, and the key `unseal` takes.
        "vault-init-secret",
        &["unseal", "root token"],
        r#"(?i)(?:\bunseal key(?:[ \t][0-9]{1,2})?:[ \t]*|\bvault[ \t]+operator[ \t]+unseal[ \t]+(?:-[a-z-]+(?:=\S+)?[ \t]+)*|\binitial root token:[ \t]*)(?P<s>[A-Za-z0-9+/.]{20,}={0,2})"#,
        Check::Value,
    ),
    (
        // .NET credentials in code: `new NetworkCredential("user", "…")`,
        // `new DirectoryEntry("LDAP://…", "user", "…")`.
        "dotnet-credential",
        &["NetworkCredential", "DirectoryEntry"],
        r#"(?:NetworkCredential\(\s*"[^"\r\n]*"\s*,|DirectoryEntry\(\s*"[^"\r\n]*"\s*,\s*"[^"\r\n]*"\s*,)\s*"(?P<q>[^"\r\n]+)""#,
        Check::Value,
    ),
    (
        // A crypt(3) or Kerberos hash of a password: bcrypt `$2b$`, SHA-crypt
        // `$5$`/`$6$`, MD5-crypt `$1$` and Apache's `$apr1$` (`htpasswd -m`),
        // Cisco `$8$`/`$9$`, and the AS-REP and
        // TGS hashes of Kerberos roasting. Offline cracking turns one into
        // the password.
        "password-hash",
        &[
            "$2a$", "$2b$", "$2x$", "$2y$", "$1$", "$apr1$", "$5$", "$6$", "$8$", "$9$", "$krb5",
        ],
        r#"(?P<s>\$2[abxy]\$[0-9]{2}\$[./A-Za-z0-9]{53}|\$[56]\$(?:rounds=[0-9]{1,9}\$)?[./A-Za-z0-9]{1,16}\$[./A-Za-z0-9]{43,86}|\$(?:1|apr1)\$[./A-Za-z0-9]{1,8}\$[./A-Za-z0-9]{22}|\$[89]\$[./A-Za-z0-9]{14}\$[./A-Za-z0-9]{43}|\$krb5(?:asrep|tgs)\$[0-9]{2}\$[^\s"'<>]{32,})"#,
        Check::Shape,
    ),
    (
        // `the password is 'centipede'`: a quoted password in a sentence,
        // also `the password for user 'postgres' is 'admin'`.
        "password-is-quoted",
        &[" is "],
        r#"(?i)\b(?P<n>password|passwd|passphrase)(?:[ \t]+for(?:[ \t]+the)?[ \t]+(?:user|account|login)[ \t]+(?:"[^"\s]{1,64}"|'[^'\s]{1,64}'|[A-Za-z0-9_.@-]{1,64}))?[ \t]+is[ \t]+(?:"(?P<q>[^"\s]{4,64})"|'(?P<a>[^'\s]{4,64})')"#,
        Check::Assignment,
    ),
    (
        // `my API key is 2afd…`: a secret's name, `is`, and a long token in
        // a sentence (short words after `is` are prose: `is required`).
        // After the weak `key` (`Your API2CART key is …`) the value must be
        // strong, as in an assignment.
        "secret-label-is",
        &[" is "],
        r#"(?i)\b(?P<n>api[ _-]?key|access[ _-]?key|secret[ _-]?key|token|secret|password|key)[ \t]* is [ \t]*["'`]?(?P<s>[A-Za-z0-9+/_=.-]{16,})"#,
        Check::Assignment,
    ),
    (
        // A name and its value with only spaces between: the rows of
        // `vault kv get` and `vault read` tables (`password   A1a-…`),
        // prose (`clarifai access key dkHL49…`), a vendor's name glued to
        // the word (`weatherbitSECRET ff9c…`). Spaces separate words
        // everywhere, so the value must look random: see
        // `spaced_value_ok`.
        "secret-label-spaced",
        // The word and the space after it: far fewer strings hold those
        // than the word alone (`max_tokens`, `"key":`).
        &[
            "secret ",
            "token ",
            "key ",
            "password ",
            "passwd ",
            "pwd ",
            "private ",
            "access ",
            "secret\t",
            "token\t",
            "key\t",
            "password\t",
            "passwd\t",
            "pwd\t",
            "private\t",
            "access\t",
        ],
        r#"(?i)(?:^|[^A-Za-z0-9_.-])(?P<n>[A-Za-z0-9_.-]*?(?:secret|token|api_?key|key|passw(?:or)?d|pwd|private|access)(?:[ _-](?:secret|token|key|access)){0,2})[ \t]+["']?(?P<s>[A-Za-z0-9+/_.-]{16,}={0,2})"#,
        Check::Assignment,
    ),
    (
        "query-secret",
        &["token=", "key=", "secret=", "password=", "passwd="],
        r#"(?i)[?&](?:[a-z_]*token|api_?key|key|[a-z_]*secret|password|passwd)=(?P<s>[^&\s"'`#<>]{6,})"#,
        Check::Value,
    ),
    (
        // An AWS Systems Manager parameter read with decryption: the
        // `Value` after `"Type": "SecureString"` (`aws ssm get-parameter
        // --with-decryption`; pretty-printed, the two lines pair).
        "ssm-secure-string",
        &["SecureString"],
        r#""Type"[ \t]*:[ \t]*"SecureString"[ \t]*,[ \t]*"Value"[ \t]*:[ \t]*"(?P<q>[^"\\\r\n]+)""#,
        Check::Value,
    ),
    (
        // A variable written as a name and a value member: Kubernetes and
        // ECS `env` lists, Azure `secrets`, Postman environments
        // (`{"name": "DB_PASSWORD", "value": "…"}`, `"key"`/`"value"`).
        // The name is judged as an assignment's.
        "name-value-pair",
        &["\"value\""],
        concat!(
            r#"(?i)"(?:name|key)"[ \t]*:[ \t]*"(?P<n>"#,
            pair_secret_name!(),
            r#")"[ \t]*,[ \t]*"value"[ \t]*:[ \t]*"(?P<q>[^"\\\r\n]+)""#,
        ),
        Check::Assignment,
    ),
    (
        // The same pair in XML: a Hadoop or Hive property
        // (`<name>fs.s3a.secret.key</name>` then `<value>…</value>`) and a
        // property list's `<key>API_SECRET</key>` then `<string>…</string>`,
        // on one line or, through `continued.rs`, on two.
        "xml-name-value",
        &["<value>", "<string>"],
        concat!(
            r#"(?i)<(?:name|key)>[ \t]*(?P<n>"#,
            pair_secret_name!(),
            r#")[ \t]*</(?:name|key)>\s*<(?:value|string)>[ \t]*(?P<q>[^<>\s](?:[^<>\r\n]*[^<>\s])?)[ \t]*</"#,
        ),
        Check::Assignment,
    ),
    (
        // A literal key handed to a signing call, where no name says what
        // it is: `crypto.createHmac('sha256', '…')`, `jwt.sign(payload,
        // '…')` and `jwt.encode(…, '…')` (jsonwebtoken, PyJWT, Ruby's
        // `JWT.encode payload, '…'`), java-jwt's `Algorithm.HMAC256("…")`,
        // Python's `hmac.new(b'…', …)`. Only a random value counts
        // (`'shhhhh'`, `'secret'` are samples).
        "signing-key-literal",
        &[
            "createHmac",
            "jwt.",
            "JWT.",
            "HMAC256",
            "HMAC384",
            "HMAC512",
            "hmac.new",
        ],
        r#"(?:\bcreateHmac\([ \t]*["'][\w-]+["'][ \t]*,|\b(?:jwt|JWT)\.(?:sign|encode|verify|decode)[ \t]*\(?[ \t]*(?:[\w.]+(?:\([^()]*\))?|\{[^{}]*\})[ \t]*,|\bAlgorithm\.HMAC(?:256|384|512)\(|\bhmac\.new\()[ \t]*b?(?:"(?P<q>[^"\r\n]{8,})"|'(?P<a>[^'\r\n]{8,})')"#,
        Check::Value,
    ),
    (
        // An Infura project's key, in its endpoint's path.
        "infura-api-key",
        &["infura.io/"],
        r"infura\.io/(?:ws/)?v3/(?P<s>[0-9a-f]{32})\b",
        Check::Shape,
    ),
    (
        // A classic OAuth token (40 hex) as a clone URL's user.
        "github-url-token",
        &["@github.com"],
        r"://(?P<s>[0-9a-f]{40})@github\.com\b",
        Check::Shape,
    ),
    (
        // A whole line of a `.env` file or a shell's `export`: an
        // upper-case name, `=`, and the rest of the line, which may hold
        // `&`, `)`, `;` or `#` (Django's generated keys do:
        // `SECRET_KEY=r&lvyb…*k+qq)=x-!=0yd5…#1gx…`), where the
        // assignment rule's value stops at the first of them.
        "env-file-line",
        &[
            "SECRET=",
            "TOKEN=",
            "PASS=",
            "PASSWORD=",
            "PASSWD=",
            "PWD=",
            "KEY=",
            "CREDENTIALS=",
            "CREDENTIAL=",
            "AUTH=",
        ],
        r#"(?m)^[ \t]*(?:export[ \t]+)?(?P<n>[A-Z][A-Z0-9_]*(?:SECRET|TOKEN|PASSWORD|PASSWD|PASS|PWD|KEY|CREDENTIALS?|AUTH))=(?P<s>[^\s"'`]*[&;)#<>,\]}][^\s"'`]*)[ \t]*$"#,
        Check::Assignment,
    ),
    (
        // A secret's name, an operator and a value. A quoted value may
        // follow a line break (`const apiKey =` then the string, as
        // Prettier wraps a long one); a bare one on a later line (`l`)
        // must stand alone there and look random (`## Save pass:`, a
        // blank line, the password; not `class ApiKey:` then `@property`).
        "secret-assignment",
        &[
            "token",
            "secret",
            "pass",
            "pw",
            "key",
            "credential",
            "database",
            "connection",
            "dsn",
            // (`auth` alone is a name: without it the rule ran on such a
            // line only when another keyword was near.)
            "auth",
        ],
        r#"(?i)(?:^|[^A-Za-z0-9_.-])(?P<n>[A-Za-z0-9_.-]*(?:token|secret|passw(?:or)?d|pass|pwd|api_?key|apikey|access_?key|secret_?key|private_?key|client_?secret|credentials?|auth_?token|database_?url|connection_?string|secret_?string|secret_?key_?base|dsn|key|auth|pw)(?:[_-]?[0-9]{1,2})?|[A-Za-z0-9_.-]*passw(?:or)?d(?:[_-][A-Za-z0-9]+){1,2})(?:[ \t]*:[ \t]*(?:str|string|String|&str|&'static str|Optional\[str\])[ \t]*=|(?:["'`]\]?)?\s*(?:={2,3}|!==?|=>|:{1,3}=|[?.+]?=|:)|["']\s*,|[ \t]+(?:string|String|str|&str)[ \t]*=)(?:\s*(?:(?:@|[bBrRuU]|[rR][bB]|[bB][rR])?"(?P<q>[^"\r\n]+)"|(?:[bBrRuU]|[rR][bB]|[bB][rR])?'(?P<a>[^'\r\n]+)'|`(?P<b>[^`\r\n]+)`)|[ \t]*(?P<s>[^\s"'`,;&<>)\]}]+)|[ \t]*\r?\n\s*(?P<l>[^\s"'`,;&<>)\]}]{16,}))"#,
        Check::Assignment,
    ),
    (
        // A personal access token by its usual name in CI (`ADO_PAT`,
        // `GITHUB_PAT`, `azure_devops_pat`). `pat` also abbreviates
        // "pattern" (`glob_pat = "*.rs"`), so the name is weak and the value
        // a long token.
        "pat-assignment",
        &["_pat", "-pat"],
        r#"(?i)(?:^|[^A-Za-z0-9_.-])(?P<n>[A-Za-z0-9.-]*[A-Za-z0-9][_-]pat)(?:["'`]\]?)?[ \t]*(?:=|:=|=>|:)[ \t]*["'`]?(?P<s>[A-Za-z0-9_-]{20,})(?:[^A-Za-z0-9_-]|$)"#,
        Check::Assignment,
    ),
    (
        // `deploy token - 'value'`: a dash between a secret's name and its
        // quoted value, as in notes and logs. Only a quoted value counts
        // (`key - offset` is arithmetic).
        "secret-label-dash",
        &[" - "],
        r#"(?i)(?:^|[^A-Za-z0-9_.-])(?P<n>[A-Za-z0-9_.-]*(?:token|secret|passw(?:or)?d|pwd|api_?key|apikey|access_?key|secret_?key|private_?key|client_?secret|credentials?|key)(?:[_-]?[0-9]{1,2})?)[ \t]* - [ \t]*(?:"(?P<q>[^"\r\n]+)"|'(?P<a>[^'\r\n]+)')"#,
        Check::Assignment,
    ),
    (
        "sidekiq-secret",
        &["CONTRIBSYS__COM"],
        r#"(?i)BUNDLE_(?:ENTERPRISE|GEMS)__CONTRIBSYS__COM["']?\s*[:=]\s*["']?(?P<s>[a-f0-9]{8}:[a-f0-9]{8})"#,
        Check::Value,
    ),
    (
        "sonar-login",
        &["sonar"],
        r#"(?i)sonar[._-]?login["']?(?:\s*(?:=>|:{1,3}=|[?]?=|:|,)|\s+value\s*=)\s*["']?(?P<s>[A-Za-z0-9_]{40,44})"#,
        Check::Value,
    ),
    (
        // A setting as an element's name and value attributes: NuGet and
        // .NET config (`<add key="ClearTextPassword" value="…"/>`), Spring
        // and Ant (`<property name="db.password" value="…"/>`), `<param>`,
        // `<setting>`, `<env>`. The name ends in a secret's word, so
        // `TokenCacheMode` holds a setting.
        "config-key-value",
        &[
            "<add",
            "<property",
            "<param",
            "<setting",
            "<env",
            "<variable",
        ],
        concat!(
            r#"(?i)<(?:add|property|param|parameter|setting|env|variable)\s+(?:key|name)\s*=\s*"(?P<n>"#,
            pair_secret_name!(),
            r#")"\s+value\s*=\s*"(?P<q>[^"\r\n]+)""#,
        ),
        Check::Assignment,
    ),
    (
        // A named element's text: an Android string resource
        // (`<string name="maps_api_key" translatable="false">…</string>`),
        // Java's XML properties (`<entry key="db.password">…</entry>`).
        "xml-named-text",
        &["<string", "<entry"],
        concat!(
            r#"(?i)<(?:string|entry)\s+(?:name|key)\s*=\s*"(?P<n>"#,
            pair_secret_name!(),
            r#")"(?:\s+[^<>/]*)?>[ \t]*(?P<q>[^<>\s](?:[^<>\r\n]*[^<>\s])?)[ \t]*</(?:string|entry)>"#,
        ),
        Check::Assignment,
    ),
    (
        // Maven's `settings-security.xml`: the master password, encrypted
        // with a key every Maven holds, so as good as plain.
        "maven-master-password",
        &["<master>"],
        r"<master>\s*(?P<s>\{[A-Za-z0-9+/=\\]{20,}\}?)\s*</master>",
        Check::Shape,
    ),
    (
        "secret-element",
        &["token", "secret", "pass", "pwd", "key", "credential"],
        // `<apiToken>value</apiToken>`, the value alone on its line or not.
        // Element text is data, not code, so it is read as a literal
        // (group `q`), spaces inside included: Jenkins keeps its
        // credentials as `<secret>{AQAAABAAAA…}</secret>`.
        r#"(?i)<(?P<n>[A-Za-z0-9_.:-]*(?:token|secret|passw(?:or)?d|pwd|key|client_?secret|credentials?))>\s*(?P<q>[^<>\s](?:[^<>\r\n]*[^<>\s])?)\s*</"#,
        Check::Assignment,
    ),
];

/// A compiled rule set with its prefilter.
#[derive(Debug, Clone)]
pub struct RuleSet {
    rules: Vec<Rule>,
    prefilter: Walker,
    /// Keyword index → rule index.
    keyword_rule: Vec<usize>,
    /// Rules without keywords (always run).
    always: Vec<usize>,
    /// The least `min_len` of any rule.
    shortest: usize,
}

/// An extra rule from a policy (`extraRules`).
#[derive(Debug, Clone)]
pub struct ExtraRule {
    /// Rule id.
    pub id: String,
    /// Regex source (compiled as a byte regex, Unicode off).
    pub regex: String,
    /// Prefilter keywords.
    pub keywords: Vec<String>,
}

/// A rule that failed to compile.
#[derive(Debug, thiserror::Error)]
#[error("rule {id}: {message}")]
pub struct RuleError {
    /// Rule id.
    pub id: String,
    /// Why.
    pub message: String,
}

fn compile(src: &str) -> Result<Regex, regex::Error> {
    regex::bytes::RegexBuilder::new(&format!("(?-u){src}"))
        .size_limit(16 << 20)
        .dfa_size_limit(RULE_DFA_CACHE)
        .build()
}

/// The lazy DFA cache of each rule, per thread. The regex crate's default
/// (2 MiB) let a session dense with secrets fill about 60 MiB of caches
/// across the rules; a rule whose cache fills is cleared and refilled, as
/// the regex crate does at any size.
const RULE_DFA_CACHE: usize = 1 << 20;

/// The fewest bytes a match of `src` (as [`compile`] reads it) can span;
/// 0 when unknown, which never skips a string.
fn min_len(src: &str) -> usize {
    regex_syntax::ParserBuilder::new()
        .utf8(false)
        .build()
        .parse(&format!("(?-u){src}"))
        .ok()
        .and_then(|hir| hir.properties().minimum_len())
        .unwrap_or(0)
}

impl RuleSet {
    /// The built-in catalog plus `extra`. The built-in set is compiled once
    /// per process (regexes and automata are shared, cheap to clone).
    pub fn new(extra: &[ExtraRule]) -> Result<RuleSet, RuleError> {
        static BUILTIN: std::sync::OnceLock<RuleSet> = std::sync::OnceLock::new();
        if extra.is_empty() {
            return Ok(BUILTIN
                .get_or_init(|| RuleSet::build(&[]).expect("built-in rules compile"))
                .clone());
        }
        RuleSet::build(extra)
    }

    fn build(extra: &[ExtraRule]) -> Result<RuleSet, RuleError> {
        let mut rules = Vec::new();
        let rule = |id: &str, kws: &[&str], src: &str, check: Check| Rule {
            id: id.to_string(),
            keywords: kws.iter().map(|k| k.to_string()).collect(),
            regex: compile(src).expect("built-in rules compile"),
            min_len: min_len(src),
            check,
            gate: prefixed::GATES
                .iter()
                .find(|(g, _)| *g == id)
                .map(|(_, f)| *f),
            after_keyword: AFTER_KEYWORD
                .iter()
                .find(|(g, _)| *g == id)
                .map(|(_, f)| *f),
        };
        // Shape rules first, then the vendors' prefixed tokens, then the
        // rules that read a value next to a label: where two claim one
        // span, the more specific names the placeholder.
        for (id, kws, src, check) in CATALOG.iter().filter(|r| r.3.by_shape()) {
            rules.push(rule(id, kws, src, *check));
        }
        for (id, kws, src, _) in prefixed::PREFIXED {
            rules.push(rule(id, kws, src, Check::Shape));
        }
        for (id, kws, src, check) in CATALOG.iter().filter(|r| !r.3.by_shape()) {
            rules.push(rule(id, kws, src, *check));
        }
        rules.push(Rule {
            id: fields::ID.to_string(),
            keywords: fields::KEYWORDS.iter().map(|k| k.to_string()).collect(),
            gate: None,
            after_keyword: Some(fields::follows),
            regex: compile(fields::PATTERN).expect("field syntaxes compile"),
            min_len: min_len(fields::PATTERN),
            check: Check::Field,
        });
        rules.push(Rule {
            id: named::ID.to_string(),
            keywords: named::services().map(|(n, _)| n.to_string()).collect(),
            gate: None,
            after_keyword: Some(named::follows),
            regex: compile(&named::pattern()).expect("service names compile"),
            min_len: 4,
            check: Check::Named,
        });
        for (id, kws, src, gate) in [
            (
                carriers::CALL_ID,
                carriers::CALL_KEYWORDS,
                carriers::CALL_PATTERN,
                carriers::call_follows as prefixed::Gate,
            ),
            (
                carriers::PATH_ID,
                carriers::PATH_KEYWORDS,
                carriers::PATH_PATTERN,
                carriers::path_follows,
            ),
        ] {
            rules.push(Rule {
                id: id.to_string(),
                keywords: kws.iter().map(|k| k.to_string()).collect(),
                gate: None,
                after_keyword: Some(gate),
                regex: compile(src).expect("carrier rules compile"),
                min_len: min_len(src),
                check: Check::Carried,
            });
        }
        rules.push(Rule {
            id: carriers::PAIR_ID.to_string(),
            keywords: carriers::PAIR_KEYWORDS
                .iter()
                .map(|k| k.to_string())
                .collect(),
            gate: None,
            after_keyword: Some(carriers::pair_follows),
            regex: compile(carriers::PAIR_PATTERN).expect("the pair rule compiles"),
            min_len: min_len(carriers::PAIR_PATTERN),
            check: Check::Paired,
        });
        for e in extra {
            let regex = compile(&e.regex).map_err(|err| RuleError {
                id: e.id.clone(),
                message: err.to_string(),
            })?;
            rules.push(Rule {
                id: e.id.clone(),
                keywords: e.keywords.clone(),
                regex,
                min_len: min_len(&e.regex),
                check: Check::Custom,
                gate: None,
                after_keyword: None,
            });
        }
        let mut keywords = Vec::new();
        let mut keyword_rule = Vec::new();
        let mut always = Vec::new();
        for (i, r) in rules.iter().enumerate() {
            if r.keywords.is_empty() {
                always.push(i);
            }
            for k in &r.keywords {
                keywords.push(k.as_bytes().to_vec());
                keyword_rule.push(i);
            }
        }
        let prefilter = Walker::new(&keywords, true);
        Ok(RuleSet {
            shortest: rules.iter().map(|r| r.min_len).min().unwrap_or(0),
            rules,
            prefilter,
            keyword_rule,
            always,
        })
    }

    /// The rules, in catalog order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Credentials in `hay`, non-overlapping, in order of position.
    pub fn find(&self, hay: &[u8], out: &mut Vec<Hit>) {
        if hay.len() < self.shortest {
            return;
        }
        crate::work::visit(hay.len());
        // Called for every string: the set of rules to run lives on the
        // stack for up to 256 rules (the built-ins are about 170).
        let mut small = [0u64; 4];
        let mut large = Vec::new();
        let wanted: &mut [u64] = if self.rules.len() <= 256 {
            &mut small
        } else {
            large.resize(self.rules.len().div_ceil(64), 0);
            &mut large
        };
        let mut any = false;
        for i in &self.always {
            let r = &self.rules[*i];
            if hay.len() >= r.min_len && r.gate.is_none_or(|g| g(hay)) {
                wanted[i / 64] |= 1 << (i % 64);
                any = true;
            }
        }
        self.prefilter.each_unordered(hay, |k, end| {
            let i = self.keyword_rule[k];
            let r = &self.rules[i];
            if hay.len() >= r.min_len && r.after_keyword.is_none_or(|g| g(&hay[end..])) {
                wanted[i / 64] |= 1 << (i % 64);
                any = true;
            }
        });
        if !any {
            return;
        }
        let mut hits = Vec::new();
        // The wanted rules in catalog order, one set bit at a time.
        for (w, &word) in wanted.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let i = w * 64 + bits.trailing_zeros() as usize;
                rule_hits(i, &self.rules[i], hay, &mut hits);
                bits &= bits - 1;
            }
        }
        mask_placeholders(hay, &mut hits);
        resolve(hits, out);
    }

    /// [`RuleSet::find`] without the prefilter (every rule runs); used to
    /// prove the prefilter loses nothing.
    pub fn find_unfiltered(&self, hay: &[u8], out: &mut Vec<Hit>) {
        let mut hits = Vec::new();
        for (i, r) in self.rules.iter().enumerate() {
            rule_hits(i, r, hay, &mut hits);
        }
        mask_placeholders(hay, &mut hits);
        resolve(hits, out);
    }
}

/// Drops hits that touch a placeholder coffer issues (`[REDACTED_SECRET:…]`,
/// `[LOCAL_…]`, `[WORKSPACE]`): a rescan of scrubbed text must never match
/// inside one, or placeholders would nest. (A forged placeholder in input
/// is found and replaced whole by the forgery rule of the detector.)
fn mask_placeholders(hay: &[u8], hits: &mut Vec<Hit>) {
    if hits.is_empty() || memchr::memchr(b'[', hay).is_none() {
        return;
    }
    let mut spans = Vec::new();
    for open in memchr::memchr_iter(b'[', hay) {
        let rest = &hay[open..];
        if [&b"[REDACTED_SECRET:"[..], b"[LOCAL_", b"[WORKSPACE]"]
            .iter()
            .any(|p| rest.starts_with(p))
        {
            if let Some(close) = memchr::memchr(b']', rest) {
                spans.push((open, open + close + 1));
            }
        }
    }
    if !spans.is_empty() {
        hits.retain(|h| !spans.iter().any(|&(a, b)| h.start < b && a < h.end));
    }
}

/// Keeps the leftmost, then longest, then earliest-rule hit of each
/// overlapping group.
fn resolve(mut hits: Vec<Hit>, out: &mut Vec<Hit>) {
    hits.sort_by(|a, b| {
        a.start
            .cmp(&b.start)
            .then(b.end.cmp(&a.end))
            .then(a.rule.cmp(&b.rule))
    });
    let mut last_end: Option<usize> = None;
    for h in hits {
        if last_end.is_none_or(|e| h.start >= e) {
            last_end = Some(h.end);
            out.push(h);
        }
    }
}

fn rule_hits(i: usize, r: &Rule, hay: &[u8], out: &mut Vec<Hit>) {
    crate::work::visit(hay.len());
    match r.check {
        Check::Named => return named::hits(i, &r.regex, hay, out),
        Check::Field => return fields::hits(i, &r.regex, hay, out),
        Check::Carried => return carriers::hits(i, &r.regex, hay, out),
        Check::Paired => return carriers::pair_hits(i, &r.regex, hay, out),
        _ => {}
    }
    if !r.regex.is_match(hay) {
        return;
    }
    for caps in r.regex.captures_iter(hay) {
        let m = ["s", "q", "a", "b", "l"]
            .iter()
            .find_map(|g| caps.name(g))
            .or_else(|| caps.get(0))
            .expect("group 0 always matches");
        let (mut start, mut end) = (m.start(), m.end());
        // `postgresql://${DB_USER:-app}@db`: the colon is inside an
        // interpolation that the user opens, not between a user and a
        // password.
        if r.id == "url-credentials"
            && caps.name("u").is_some_and(|u| {
                let u = u.as_bytes();
                memchr::memmem::rfind(u, b"${").is_some_and(|i| !u[i..].contains(&b'}'))
            })
        {
            continue;
        }
        // `https://TOKEN:x-oauth-basic@github.com/…`: GitHub's fixed
        // password; the user is the token.
        let oauth_user =
            r.id == "url-credentials" && hay[start..end].eq_ignore_ascii_case(b"x-oauth-basic");
        if oauth_user {
            let Some(u) = caps.name("u").filter(|u| !u.is_empty()) else {
                continue;
            };
            (start, end) = (u.start(), u.end());
        }
        let value = &hay[start..end];
        match r.check {
            Check::Custom | Check::Named | Check::Field | Check::Carried | Check::Paired => {}
            Check::Shape => {
                // A private key's body is long enough to hold any marker.
                if r.id != "private-key" && looks_fake(value) {
                    continue;
                }
                if r.id == "private-key" && !key_body(value) {
                    continue;
                }
                // The secret after an app id's bar is random (an app
                // secret's 32 hex digits, or a signature), not words.
                if r.id == "facebook-app-access-token"
                    && value.iter().position(|c| *c == b'|').is_some_and(|bar| {
                        let v = &value[bar + 1..];
                        let hex = v.len() == 32
                            && v.iter()
                                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
                            && v.iter().any(u8::is_ascii_digit)
                            && v.iter().any(u8::is_ascii_lowercase);
                        !hex && !cases_and_digits(v)
                    })
                {
                    continue;
                }
            }
            Check::Jwt => {
                // An unsigned `header.payload` must prove it is one.
                let signed =
                    value.iter().filter(|c| **c == b'.').count() == 2 && !value.ends_with(b".");
                if (!signed && !jwt_header(value)) || looks_fake(value) {
                    continue;
                }
            }
            Check::Basic => {
                if !decodes_to_user_password(value) {
                    continue;
                }
            }
            Check::Value | Check::Assignment => {
                let Some(inner) = literal_part(value) else {
                    continue;
                };
                start += inner;
                // Escaped line ends close a line inside a literal
                // (`"…Credentials : true\r\n"`): they are not the value.
                while end - start > 2 && matches!(&hay[end - 2..end], br"\n" | br"\r" | br"\t") {
                    end -= 2;
                }
                let value = &hay[start..end];
                // Below two bits a byte a long value is mostly one
                // character (`glc_1111…`); a random one is near four.
                // (Shape rules skip this test; `looks_fake` alone judges
                // their runs.)
                if is_placeholder(value)
                    || looks_fake(value)
                    || (value.len() >= 16 && entropy(value) < 2.0)
                    || (uuid_v1(value) && !(r.id == "npmrc-auth" && registry_scoped(&hay[..start])))
                    || constant_name(value)
                    || marked_fake(value)
                    || binary_data(value)
                {
                    continue;
                }
                let quoted = ["q", "a", "b"].iter().any(|g| caps.name(g).is_some());
                // `"VS%0.f0COMNTOOLS" % version`, `'{}:{}'.format(…)`: a
                // template filled in by the code after it. And a value with
                // no ASCII letter or digit (`"compass": "🧭"`) is no token.
                if (quoted && format_applied(hay.get(end + 1..).unwrap_or(b"")))
                    || !value.iter().any(u8::is_ascii_alphanumeric)
                {
                    continue;
                }
                if r.id == "signing-key-literal" && !credential_like(value) {
                    continue;
                }
                // `('auth', '0010_alter_group_name_max_length')`,
                // `add_argument("--token", "refresh_token")`: a bare label
                // word and a value side by side in a tuple or a call's
                // arguments are data, not an assignment; only a
                // credential-shaped value counts there. (A setting's own
                // name, `setProperty("ASANA_TOKEN", "…")`, still assigns.)
                if caps.name("n").is_some_and(|n| {
                    side_by_side(&hay[n.end()..m.start()]) && bare_label(n.as_bytes())
                }) && (!credential_like(value) || plain_parts(value))
                {
                    continue;
                }
                // A user with no password (`-u administrator:`) is a key
                // only when it mixes cases and digits.
                if r.id == "curl-user-key" && !cases_and_digits(value) {
                    continue;
                }
                // `the --username and --password options`: prose names the
                // option; a lower-case word after it is not its value.
                // (A sentence may end on it: `the new --password options.`)
                let sentence_word = value.strip_suffix(b".").unwrap_or(value);
                if r.id == "cli-secret-flag" && sentence_word.iter().all(u8::is_ascii_lowercase) {
                    continue;
                }
                // `?key=6254792024915968`: digits alone in a query are an
                // id (a fuzzer's test case), not a key.
                if r.id == "query-secret" && value.iter().all(u8::is_ascii_digit) {
                    continue;
                }
                // An anti-forgery cookie (`csrftoken`, `XSRF-TOKEN`) is bound
                // to a session and authenticates nothing on its own.
                if r.id == "session-cookie"
                    && caps.name("n").is_some_and(|n| {
                        let n = n.as_bytes();
                        n.len() >= 4
                            && (n[..4].eq_ignore_ascii_case(b"csrf")
                                || n[..4].eq_ignore_ascii_case(b"xsrf"))
                    })
                {
                    continue;
                }
                // Values that are words, where only a random value is a
                // credential: `Bearer static-token` in prose, `?key=STRINGS`,
                // `?key=test_error_package`, `_authToken=MYTOKEN`.
                // (Also a default read from the environment: `|| "not-set"`
                // is a sentinel.)
                let random_only = matches!(
                    r.id.as_str(),
                    "bearer-token" | "npmrc-auth" | "env-default-literal"
                ) || (r.id == "query-secret"
                    && start >= 4
                    && hay[start - 4..start].eq_ignore_ascii_case(b"key="));
                if random_only && word_like(value) {
                    continue;
                }
                // `'Proxy-Authorization' : 'Authorization'`: the header's
                // name again, not its value.
                if r.id == "authorization-header"
                    && memchr::memmem::find(&value.to_ascii_lowercase(), b"authorization").is_some()
                {
                    continue;
                }
                // `authorization=authorization,`: a keyword argument
                // handing on a variable of that name.
                if r.id == "authorization-header"
                    && hay[..start].ends_with(b"=")
                    && value
                        .strip_suffix(b")")
                        .unwrap_or(value)
                        .iter()
                        .all(|c| c.is_ascii_lowercase() || *c == b'_')
                {
                    continue;
                }
                // A URL's password stands where no type name can
                // (`mysql://python:HelloSecretScanning@host`).
                let password_in_url = r.id == "url-credentials" && type_name(value);
                if (is_code(&hay[..start], value, hay.get(end..).unwrap_or(b""), quoted)
                    && !password_in_url)
                    || label_text(value)
                    || concatenation(value)
                    || path_of_words(value)
                {
                    continue;
                }
                // A coverage badge's `graph/badge.svg?token=`: Codecov's
                // graph token, public by design (it only shows the badge).
                if hay[..start].ends_with(b"badge.svg?token=") {
                    continue;
                }
                // Shell command substitution: `` `etcdctl get /x` ``; a
                // JavaScript template literal: `` `r${next++}` ``.
                if caps.name("b").is_some()
                    && (value.iter().any(u8::is_ascii_whitespace)
                        || memchr::memmem::find(value, b"${").is_some())
                {
                    continue;
                }
                // `http://abc:xyz@example.com`: a short word (eight
                // letters or fewer) as the password of a host RFC 2606
                // reserves for documentation (anything more, `secret123`,
                // `awfasefsd`, counts as a leak there too, as the scanners'
                // suites have it);
                // `unix://[user[:password]@]`: a syntax's optional parts.
                if r.id == "url-credentials"
                    && ((documentation_host(hay.get(end + 1..).unwrap_or(b""))
                        && value.len() <= 8
                        && value.iter().all(u8::is_ascii_alphabetic))
                        || caps.name("u").is_some_and(|u| u.as_bytes().contains(&b'[')))
                {
                    continue;
                }
                // `-u test:test`: a user name repeated is a sample.
                if !oauth_user && caps.name("u").is_some_and(|u| u.as_bytes() == value) {
                    continue;
                }
                // No user and a colon after it: CVS's
                // `:pserver:anoncvs@host:/cvs`, not a password.
                if caps.name("u").is_some_and(|u| u.is_empty()) && value.contains(&b':') {
                    continue;
                }
                // An element's text is mostly what a user reads
                // (`Forgot password?`, `API Key`), and a setting's value
                // may name another (`auth_key_name`): a value is one
                // without blanks, not made of words.
                if matches!(r.id.as_str(), "xml-named-text" | "config-key-value")
                    && (value.iter().any(u8::is_ascii_whitespace) || words_name(value))
                {
                    continue;
                }
                if r.id == "secret-label-spaced" {
                    let n = caps.name("n").map_or(start, |n| n.start());
                    if !spaced_value_ok(&hay[..n], value, hay.get(end).copied()) {
                        continue;
                    }
                    // `typedef struct set_mem_access set_mem_access_t;`: a
                    // name, then a name built on it.
                    if caps.name("n").is_some_and(|n| {
                        value.len() > n.len() && value[..n.len()].eq_ignore_ascii_case(n.as_bytes())
                    }) {
                        continue;
                    }
                }
                // `if this token is write-protected.`: prose names a state.
                if r.id == "secret-label-is" && words_name(value) {
                    continue;
                }
                if r.check == Check::Assignment {
                    // The name's group: `n`, or one of the alternatives'
                    // (`env-default-literal` reads five syntaxes).
                    let name_m = ["n", "n2", "n3", "n4", "n5"]
                        .iter()
                        .find_map(|g| caps.name(g));
                    let name = name_m.map(|n| n.as_bytes()).unwrap_or(b"");
                    // What stands between the name and its value (`" = "`,
                    // `":\n  '`); empty without a name.
                    let sep: &[u8] = name_m.map_or(&[][..], |n| &hay[n.end()..start]);
                    // `elif token == 'account'`, `name_token != "name"`:
                    // code comparing a token's or a key's name with a word
                    // tests a kind, not a secret. (A password compared
                    // with a word, `password == 'logmein'`, is one.)
                    let compared = sep.windows(2).any(|w| w == b"==" || w == b"!=");
                    // `arn:aws:secretsmanager:…:secret:db-creds-a1B2c3`:
                    // an ARN's resource type, then the resource's name.
                    if name_m.is_some_and(|n| {
                        in_arn(&hay[..n.start()]) || in_base64(&hay[..n.start()], n.as_bytes())
                    }) {
                        continue;
                    }
                    let lower = name.to_ascii_lowercase();
                    let password_like = [&b"pass"[..], b"pwd", b"passwd", b"password", b"secret"]
                        .iter()
                        .any(|w| lower.ends_with(w));
                    // (`elif token == "#bygroup"`: a marker word.)
                    let marked = value.strip_prefix(b"#").unwrap_or(value);
                    if compared && !password_like && (bare_word(marked) || words_name(marked)) {
                        continue;
                    }
                    // `def t_FLOAT(self, t: _RuleToken) -> _RuleToken:` then
                    // a docstring, `class ApiToken:` then its body: the
                    // colon ends a block's header.
                    if name_m.is_some_and(|n| {
                        let sep = sep.trim_ascii_start();
                        sep.first() == Some(&b':')
                            && !sep.contains(&b'=')
                            && block_header(&hay[..n.start()])
                    }) {
                        continue;
                    }
                    // `log.info('token', 'creating')`, `delete('_token',
                    // 'user')`: a name passed next to another argument
                    // labels a word or a phrase, not a value.
                    let comma = sep.contains(&b',');
                    if caps.name("l").is_some()
                        && !(matches!(hay.get(end), None | Some(b'\r' | b'\n'))
                            && value.iter().any(u8::is_ascii_digit)
                            && value.iter().any(u8::is_ascii_alphabetic))
                    {
                        continue;
                    }
                    // `f"{self.seq_token:056d}"`, `"{key:>8}".format(…)`: a
                    // format field's spec after the name it formats.
                    if name_m
                        .is_some_and(|n| n.start() > 0 && hay[n.start() - 1] == b'{' && sep == b":")
                        && hay.get(end) == Some(&b'}')
                        && format_spec(value)
                    {
                        continue;
                    }
                    // `share_token += "-principals"`: a suffix appended
                    // to a token built in code.
                    if sep.windows(2).any(|w| w == b"+=")
                        && value.len() > 1
                        && b"-_./:".contains(&value[0])
                        && value[1..]
                            .iter()
                            .all(|c| c.is_ascii_lowercase() || b"-_".contains(c))
                    {
                        continue;
                    }
                    // `-auth=anonymous:$FROM_EMAIL`: a user, and the
                    // password a variable holds.
                    if let Some(colon) = value.iter().position(|c| *c == b':') {
                        let (user, pass) = (&value[..colon], &value[colon + 1..]);
                        let reference = pass.strip_prefix(b"$").is_some_and(|r| {
                            let r = r
                                .strip_prefix(b"{")
                                .and_then(|r| r.strip_suffix(b"}"))
                                .unwrap_or(r);
                            !r.is_empty()
                                && r.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
                        });
                        if reference
                            && user
                                .iter()
                                .all(|c| c.is_ascii_alphanumeric() || b"_.-".contains(c))
                        {
                            continue;
                        }
                    }
                    // `'Pod::Simple::PullParserEndToken' => 'cpan'`: a
                    // module's name, quoted, keys a word.
                    if name_m.is_some_and(|n| {
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
                    {
                        continue;
                    }
                    // `GnuPG key: 0x7EC2DBB6F4DBF434`: an OpenPGP key's id
                    // or fingerprint, which is public.
                    if name_m.is_some_and(|n| {
                        let before = hay[..n.start()].trim_ascii_end();
                        let word = before
                            .iter()
                            .rev()
                            .take_while(|c| c.is_ascii_alphanumeric())
                            .count();
                        let word = before[before.len() - word..].to_ascii_lowercase();
                        ["gpg", "gnupg", "pgp", "openpgp"]
                            .contains(&String::from_utf8_lossy(&word).as_ref())
                    }) && {
                        let hex = value.strip_prefix(b"0x").unwrap_or(value);
                        (8..=40).contains(&hex.len()) && hex.iter().all(u8::is_ascii_hexdigit)
                    } {
                        continue;
                    }
                    // `otpauth://…`: a URL's scheme, not a name.
                    if name_m.is_some_and(|n| hay[n.end()..].starts_with(b"://")) {
                        continue;
                    }
                    // A list broken over lines (`'_token',` then
                    // `'_tokenStart'`) holds items, not a name and its value.
                    if comma && sep.contains(&b'\n') {
                        continue;
                    }
                    // (`scrypt(b'password', salt=b'salt')`: a keyword
                    // argument follows, not a value.)
                    if comma
                        && (value.iter().all(|c| c.is_ascii_alphabetic() || *c == b'_')
                            || value.iter().any(u8::is_ascii_whitespace)
                            || (!quoted && (value.contains(&b'=') || value.starts_with(b"**")))
                            || words_name(value))
                    {
                        continue;
                    }
                    // `ExporterMasterSecret => b"exp master"`,
                    // `Self::RsaPrivateKey => "RSA PRIVATE KEY"`: a match
                    // arm maps a variant (a capitalized name, no Ruby
                    // symbol's colon before it) to a constant; only a
                    // random value there is a credential.
                    if name_m.is_some_and(|n| match_arm(&hay[..n.start()], n.as_bytes(), sep))
                        && !credential_like(value)
                    {
                        continue;
                    }
                    // `API_KEY=value` and a command's `ENV API_KEY value`
                    // set a literal, as a quoted value does.
                    let env_style = r.id == "command-assignment"
                        || name_m.is_some_and(|n| {
                            hay.get(n.end()) == Some(&b'=')
                                && n.as_bytes().iter().all(|c| !c.is_ascii_lowercase())
                        });
                    // A connection string is a secret by the credential
                    // it holds: `Server=db;Trusted_Connection=True`, or a
                    // `Password={CONFIGURE_ME}`, holds none.
                    if connection_credential(value) == Some(false) {
                        continue;
                    }
                    if !assignment_value_ok(name, value, quoted || env_style) {
                        continue;
                    }
                }
            }
        }
        if end > start {
            out.push(Hit {
                rule: i,
                start,
                end,
            });
        }
    }
}

pub mod carriers;
pub mod fields;
pub mod named;
mod plausibility;
pub mod prefixed;

#[cfg(test)]
mod tests;
