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

/// Whether the line that `before` ends opens a block: a Python `def`,
/// `class`, `if`, `elif`, `else`, `for`, `while`, `with`, `try` or
/// `except` (perhaps `async`), whose `:` ends a header, not a label.
fn block_header(before: &[u8]) -> bool {
    let line = before
        .iter()
        .rposition(|c| *c == b'\n')
        .map_or(before, |i| &before[i + 1..])
        .trim_ascii_start();
    let line = line.strip_prefix(b"async ").unwrap_or(line);
    [
        &b"def"[..],
        b"class",
        b"if",
        b"elif",
        b"else",
        b"for",
        b"while",
        b"with",
        b"try",
        b"except",
    ]
    .iter()
    .any(|k| {
        line.starts_with(k)
            && line
                .get(k.len())
                .is_none_or(|c| matches!(c, b' ' | b'\t' | b':' | b'('))
    })
}

/// Whether `v` is a Python format spec (`056d`, `>8`, `,.2f`): fill,
/// alignment, sign, width, grouping, precision and type characters only.
fn format_spec(v: &[u8]) -> bool {
    v.len() <= 12
        && v.iter()
            .all(|c| b"0123456789<>^=+- #,_.%bcdeEfFgGnosxX".contains(c))
}

/// For a value that references a variable, the offset of its literal part
/// (`${TOKEN:-literal}` → `literal`); `None` when it is only a reference.
fn literal_part(v: &[u8]) -> Option<usize> {
    if let Some(rest) = v.strip_prefix(b"${") {
        let name_len = rest
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
            .count();
        let after = &rest[name_len..];
        for op in [&b":-"[..], b":=", b"-", b"="] {
            if after.starts_with(op) {
                let off = 2 + name_len + op.len();
                let lit = &v[off..];
                let lit = lit.strip_suffix(b"}").unwrap_or(lit);
                return (!lit.is_empty()).then_some(off);
            }
        }
        return None;
    }
    // `"'$PRECOMPILE_PASSWORD'"`: shell quotes around a reference; and
    // `\$PASSWORD`, the dollar escaped for a shell the line is passed to.
    let v = &v[v.iter().take_while(|c| matches!(c, b'\'' | b'"')).count()..];
    let v = v.strip_prefix(b"\\$").map_or(v, |_| &v[1..]);
    let refs: &[&[u8]] = &[
        b"$",
        // A 1Password secret reference, read by `op run`.
        b"op://",
        b"process.env",
        b"os.environ",
        b"os.getenv",
        b"env(",
        b"ENV[",
        b"getenv(",
        b"System.getenv",
    ];
    if refs.iter().any(|r| v.starts_with(r)) {
        return None;
    }
    if v.len() > 2 && v[0] == b'%' && v[v.len() - 1] == b'%' {
        return None;
    }
    Some(0)
}

/// Values that stand for a secret without being one.
pub fn is_placeholder(v: &[u8]) -> bool {
    let s = String::from_utf8_lossy(v).to_ascii_lowercase();
    let s = s.trim_end_matches('}');
    if s.is_empty() {
        return true;
    }
    let markers = [
        "...",
        "changeme",
        "change_me",
        "change-me",
        "example",
        "your_",
        "your-",
        "yourtoken",
        "placeholder",
        "redacted",
        "****",
        "[redacted",
        "[local_",
        "[workspace]",
        "[home]",
        "dummy",
        "replace_me",
        "replaceme",
        // Microsoft's SQL Server samples: `YourStrong@Passw0rd`.
        "yourstrong",
    ];
    if markers.iter().any(|m| s.contains(m)) {
        return true;
    }
    // `https://<DATABASE_NAME>.firebaseio.com`: a name in angle brackets
    // stands for what the reader fills in.
    if enclosed_name(
        v,
        b"<",
        |c| c.is_ascii_alphanumeric() || b"_-".contains(&c),
        b'>',
    ) {
        return true;
    }
    // `password=DBPASSWORD`, `MY_API_TOKEN`: a constant's name in the
    // value's place, upper-case letters and `_` around a secret's word.
    // (A key may open with such a word: Finage's `API_KEY` and 32
    // random characters.)
    if v.iter().all(|c| c.is_ascii_uppercase() || *c == b'_')
        && ["PASSWORD", "PASSWD", "SECRET", "TOKEN", "APIKEY", "API_KEY"]
            .iter()
            .any(|w| v.len() <= w.len() + 8 && v.windows(w.len()).any(|x| x == w.as_bytes()))
    {
        return true;
    }
    // Filler in one case (as in `looks_fake`): a random token holds a
    // mixed-case `XxXx` about once in 20,000. An example file ends a
    // vendor's prefix with three (`sk_test_xxx`, `ghp_xxx`), which a
    // random token does once in 200,000.
    if v.windows(4).any(|w| w == b"xxxx" || w == b"XXXX")
        || v.ends_with(b"xxx")
        || v.ends_with(b"XXX")
    {
        return true;
    }
    // Whole values only: a long random token holds `NOnE` or `tRuE` now
    // and then (an Entra refresh token did).
    if ["none", "null", "nil", "undefined", "true", "false"].contains(&s) {
        return true;
    }
    // `<secret>`, `{{ secrets.TOKEN }}`: a template, not a value (a
    // password may well contain `<` or `{{` inside). So is a value that
    // interpolates a variable anywhere (`user}:${self:custom.db.password}`
    // in a serverless URL); `${VAR:-literal}` reaches here as its literal.
    // Ruby's `#{password}` and an HTML-escaped `&lt;YOUR_PASSWORD&gt;`
    // are templates too.
    if s.starts_with('<')
        || s.starts_with("{{")
        || s.starts_with("${{")
        || interpolates(v)
        || s.starts_with("#{")
        || (s.starts_with("&lt;") && s.ends_with("&gt;"))
    {
        return true;
    }
    // `{password}`, `%s:%s`: a format string, filled in later.
    if format_only(v) {
        return true;
    }
    let mut distinct: Vec<u8> = s.bytes().collect();
    distinct.sort_unstable();
    distinct.dedup();
    distinct.len() <= 2
}

/// Hexspeak filler: the whole value is made of words programmers write
/// where any hex will do (`deadbeef`, `cafebabe`, `0xDEADBEEF…`), which no
/// random token is.
fn hexspeak(lower: &str) -> bool {
    const WORDS: [&str; 10] = [
        "deadbeef", "cafebabe", "feedface", "deadc0de", "baadf00d", "8badf00d", "decafbad",
        "facefeed", "cafed00d", "defec8ed",
    ];
    let mut rest = lower.strip_prefix("0x").unwrap_or(lower);
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        match WORDS.iter().find(|w| rest.starts_with(*w)) {
            Some(w) => rest = &rest[w.len()..],
            None => return false,
        }
    }
    true
}

/// Whether `v` interpolates a variable somewhere (`${self:custom.db.password}`,
/// `${DB_HOST}`): `${`, a name (letters, digits, `_`, `.`, `:`, `-`), `}`
/// or the value's end; or holds a named format field ([`format_field`]).
/// (`m{{h}o)p${e]Q7…` is a password with `${` in it.)
fn interpolates(v: &[u8]) -> bool {
    format_field(v)
        || memchr::memmem::find_iter(v, b"${").any(|i| {
            let name = v[i + 2..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || b"_.:-".contains(c))
                .count();
            // (An unquoted value may end before the `}`.)
            name > 0 && matches!(v.get(i + 2 + name), Some(b'}') | None)
        })
}

/// Whether `v` holds a named format field, `{bucket}` or `{self.api_key}`,
/// as Python's `str.format` and f-strings, C#'s interpolated strings and
/// Rust's `format!` write them: `{`, a lower-case letter or `_`, at least
/// two more letters, `_` or `.` (no digits), `}`. A random token has no
/// braces, and a random password's braces seldom hold such a name
/// (`aX9{kL2}mQ7…` stays a value).
fn format_field(v: &[u8]) -> bool {
    memchr::memchr_iter(b'{', v).any(|i| {
        let rest = &v[i + 1..];
        let starts = rest
            .first()
            .is_some_and(|c| c.is_ascii_lowercase() || *c == b'_');
        let name = rest
            .iter()
            .take_while(|c| c.is_ascii_alphabetic() || b"_.".contains(c))
            .count();
        starts && name >= 3 && rest.get(name) == Some(&b'}')
    })
}

/// A format string with nothing but fields and punctuation: `{password}`,
/// `{0}:{1}`, `%s:%s`, `%(user)s`. A field names words or a position; a
/// token's random body mixes letters and digits.
fn format_only(v: &[u8]) -> bool {
    let (mut i, mut fields) = (0, 0);
    while i < v.len() {
        match v[i] {
            b'{' => {
                let Some(len) = v[i..].iter().position(|c| *c == b'}') else {
                    return false;
                };
                // (`{ password }`: spaces around the name, as templates
                // write it.)
                let inner = v[i + 1..i + len].trim_ascii();
                let named = inner
                    .iter()
                    .all(|c| c.is_ascii_alphabetic() || b"_.-".contains(c));
                if !(named || inner.iter().all(u8::is_ascii_digit)) {
                    return false;
                }
                fields += 1;
                i += len + 1;
            }
            b'%' => {
                let mut j = i + 1;
                if v.get(j) == Some(&b'(') {
                    match v[j..].iter().position(|c| *c == b')') {
                        Some(len) => j += len + 1,
                        None => return false,
                    }
                }
                while v.get(j).is_some_and(|c| b"-+ #0123456789.".contains(c)) {
                    j += 1;
                }
                if !v.get(j).is_some_and(u8::is_ascii_alphabetic) {
                    return false;
                }
                fields += 1;
                i = j + 1;
            }
            c if c.is_ascii_alphanumeric() => return false,
            _ => i += 1,
        }
    }
    fields > 0
}

/// Tokens that have a secret's shape but are made up: documentation
/// markers (`EXAMPLE`, `your_`, `_here`), filler (`ghp_xxxx…`, `0000…`,
/// at least half the value), runs and repeats, or a run of eight ascending letters
/// (`abcdefgh`), which a random token practically never has, or an ending
/// in `here` (`…TokenHere`). (Ascending digits stay: `12345678-ABCD-…` is
/// how test suites write real shapes.)
pub fn looks_fake(v: &[u8]) -> bool {
    const MARKERS: &[&[u8]] = &[
        b"example",
        b"your_",
        b"your-",
        b"_here",
        b"placeholder",
        b"dummy",
        b"insert_",
        b"####",
        b"****",
    ];
    let lower = v.to_ascii_lowercase();
    if MARKERS
        .iter()
        .any(|m| lower.windows(m.len()).any(|w| w == *m))
    {
        return true;
    }
    // Filler is one case (`ghp_xxxx…`, `XXXX`); a random token holds a
    // mixed-case `XXxX` about once in 20,000 and stays a token.
    if v.windows(4).any(|w| w == b"xxxx" || w == b"XXXX") {
        return true;
    }
    if v.iter().filter(|c| b"xX0*#".contains(c)).count() * 2 >= v.len() || lower.ends_with(b"here")
    {
        return true;
    }
    // Half the value in runs of four or more of one character
    // (`sntryu_aaaa…`, `sgp_5555555dAAAAA7777777…`), or a tail that repeats
    // a unit of two to four (`GR1348941123123123…`): a random token has
    // neither. (This also drops `AKIAZZZZZZZZZZZZZZZZ` and
    // `AGE-SECRET-KEY-1QQQQ…`, which some scanners' suites count as keys.)
    let mut in_runs = 0;
    let mut i = 0;
    while i < v.len() {
        let n = v[i..].iter().take_while(|c| **c == v[i]).count();
        if n >= 4 {
            in_runs += n;
        }
        i += n;
    }
    if in_runs * 2 >= v.len() {
        return true;
    }
    // A tail of eight or more of one character
    // (`ghp_PersonalAccessToken01245678900000000`).
    if v.len() >= 16 && v.iter().rev().take_while(|c| **c == v[v.len() - 1]).count() >= 8 {
        return true;
    }
    if v.len() >= 12 {
        let tail = &v[v.len() - 12..];
        if (2..=4).any(|p| tail[p..].iter().zip(tail).all(|(a, b)| a == b))
            && tail.iter().any(|c| *c != tail[0])
        {
            return true;
        }
    }
    if counts_bytes(v) {
        return true;
    }
    let mut run = 1;
    for w in v.windows(2) {
        if w[0].is_ascii_alphabetic() && w[1] == w[0].wrapping_add(1) && w[1].is_ascii_alphabetic()
        {
            run += 1;
            if run >= 8 {
                return true;
            }
        } else {
            run = 1;
        }
    }
    false
}

/// Hex that counts up byte by byte for eight bytes or more
/// (`000102030405060708090a0b…`, the test key of many standards' vectors).
fn counts_bytes(v: &[u8]) -> bool {
    let nibble = |c: u8| (c as char).to_digit(16);
    (0..2).any(|off| {
        let bytes: Vec<Option<u32>> = v[off.min(v.len())..]
            .chunks_exact(2)
            .map(|p| Some(nibble(p[0])? * 16 + nibble(p[1])?))
            .collect();
        let mut run = 1;
        for w in bytes.windows(2) {
            match (w[0], w[1]) {
                (Some(a), Some(b)) if b == a + 1 => {
                    run += 1;
                    if run >= 8 {
                        return true;
                    }
                }
                _ => run = 1,
            }
        }
        false
    })
}

/// `ACCESS_TOKEN`, `API_KEY`, `HEADER.PAYLOAD.SIGNATURE`: a constant's name (or
/// names) standing for its value.
fn constant_name(v: &[u8]) -> bool {
    (v.contains(&b'_') || v.contains(&b'.'))
        && v[0].is_ascii_uppercase()
        && v.split(|c| *c == b'_' || *c == b'.').all(|part| {
            word_then_digits(part).is_some_and(|w| w.iter().all(u8::is_ascii_uppercase))
        })
}

/// The letters of a part of a name that is letters, then perhaps digits
/// (`SECRET`, `base64`, `v8`); `None` when letters follow a digit.
fn word_then_digits(part: &[u8]) -> Option<&[u8]> {
    let letters = part.iter().take_while(|c| c.is_ascii_alphabetic()).count();
    part[letters..]
        .iter()
        .all(u8::is_ascii_digit)
        .then_some(&part[..letters])
}

/// Whether the code after a string literal fills it in as a template:
/// Python's `%` operator or `.format(`.
fn format_applied(after: &[u8]) -> bool {
    let a = after.trim_ascii_start();
    (a.starts_with(b"%") && !a.starts_with(b"%=")) || a.starts_with(b".format(")
}

/// Code around a quote that closed the label's own string:
/// `"Password: " + getPassword() + ","`, `'password = '.$p['x']`,
/// `"…:_password = "+new Buffer(…)`.
fn concatenation(v: &[u8]) -> bool {
    // (`'Unknown token: "' . $unk->raw . '"'`: the value opens with the
    // quote that closes the label's string in another quoting; `"Token: ",
    // $token->dump, "\n"`: an argument list goes on.)
    let v = v.strip_prefix(b"'").unwrap_or(v);
    if v.trim_ascii_start().starts_with(b",") && (v.contains(&b'$') || v.contains(&b'(')) {
        return true;
    }
    let t = v.trim_ascii();
    let Some((&op, rest)) = t.split_first() else {
        return false;
    };
    matches!(op, b'+' | b'.')
        && (v.first().is_some_and(u8::is_ascii_whitespace)
            || rest.first() == Some(&b'$')
            || rest.contains(&b'(')
            || (!rest.is_empty() && rest.iter().all(u8::is_ascii_lowercase))
            || t.ends_with(b"+")
            || t.ends_with(b"."))
}

/// Whether the text before a name ends inside an ARN (`arn:aws:…:`, up
/// to the name, with no blank or quote between) or a URN
/// (`urn:ietf:params:oauth:grant-type:jwt-bearer`). An ARN a template builds
/// (`f"arn:aws:secretsmanager:{region}:{account}:secret:…"`) is read
/// through its interpolations.
fn in_arn(before: &[u8]) -> bool {
    let mut depth = 0usize;
    let mut start = 0;
    for (i, &c) in before.iter().enumerate().rev() {
        match c {
            b'}' => depth += 1,
            b'{' if depth > 0 => depth -= 1,
            _ if depth > 0 => {}
            _ if c.is_ascii_whitespace() || b"\"'`=,([{<>*".contains(&c) => {
                start = i + 1;
                break;
            }
            _ => {}
        }
    }
    let token = &before[start..];
    (token.starts_with(b"arn:") || token.starts_with(b"urn:")) && token.ends_with(b":")
}

/// Whether a name is the end of a base64 run, its padding read as an
/// operator: `integrity="sha384-…YWV+pw==" crossorigin="…"` is no
/// comparison of `pw`, nor `…abcDkey=" x="…` an assignment to `key`. The
/// name follows a `+` or `/` that ends 16 or more base64 characters mixing
/// cases and digits, or is itself a long run whose case flips like
/// base64's. (A patch's `+password=` starts its line; a comment's
/// `//token =` and a path's `config/token` are no such run.)
fn in_base64(before: &[u8], name: &[u8]) -> bool {
    let glued = before
        .strip_suffix(b"+")
        .or_else(|| before.strip_suffix(b"/"))
        .is_some_and(|b| {
            let n = b
                .iter()
                .rev()
                .take_while(|c| c.is_ascii_alphanumeric() || b"+/".contains(c))
                .count();
            let run = &b[b.len() - n..];
            n >= 16 && cases_and_digits(run)
        });
    glued || (name.len() >= 16 && random_case(name))
}

/// A path, route or resource name made of words: `cms/sites/passwords#update`,
/// `/en/enterprise-server@3.0/auth`, `/tmp`, an ARN
/// (`arn:aws:iam::aws:policy/…`).
/// A secret is one random run, not words between slashes.
fn path_of_words(v: &[u8]) -> bool {
    if v.starts_with(b"arn:aws") || windows_path(v) {
        return true;
    }
    // An AWS signature's credential scope (`AKID/20220809/us-east-1/s3/
    // aws4_request`): a key id, a date and names, none of them secret.
    if v.windows(13).any(|w| w == b"/aws4_request") {
        return true;
    }
    // A file that holds the secret, named in its place
    // (`key='param:secp384r1.pem'`, `private_key = "tls.key"`).
    let lower = v.to_ascii_lowercase();
    if [
        &b".pem"[..],
        b".key",
        b".crt",
        b".p12",
        b".pfx",
        b".jks",
        b".der",
        b".json",
        b".txt",
    ]
    .iter()
    .any(|e| lower.ends_with(e))
        && lower.len() > 4
    {
        return true;
    }
    let parts: Vec<&[u8]> = v
        .split(|c| b"/#@.:-_".contains(c))
        .filter(|p| !p.is_empty())
        .collect();
    v.contains(&b'/')
        && (parts.len() >= 2 || v.starts_with(b"/"))
        && !parts.is_empty()
        && parts.iter().all(|p| {
            word_then_digits(p).is_some_and(|w| {
                w.is_empty() || w.len() <= 3 || w[1..].iter().all(u8::is_ascii_lowercase)
            }) || (p.len() <= 3 && p.iter().all(u8::is_ascii_alphanumeric))
        })
}

/// A Windows path or registry key (`SOFTWARE\Microsoft\MSBuild`,
/// `C:\Program Files\…`, `\\server\share`): names, not a secret.
fn windows_path(v: &[u8]) -> bool {
    let first = v.split(|c| *c == b'\\').next().unwrap_or(b"");
    v.contains(&b'\\')
        && (v.starts_with(br"\\")
            || (first.len() == 2 && first[0].is_ascii_alphabetic() && first[1] == b':')
            || first.starts_with(b"HKEY_")
            || [
                &b"SOFTWARE"[..],
                b"SYSTEM",
                b"HKLM",
                b"HKCU",
                b"HKCR",
                b"HKU",
            ]
            .iter()
            .any(|root| first.eq_ignore_ascii_case(root)))
}

/// For a connection string of `key=value;` fields (ADO.NET, ODBC, Azure
/// Storage), whether a credential field (`Password`, `Pwd`, `AccountKey`,
/// `SharedAccessKey`, …) holds a literal that is not a placeholder;
/// `None` for any other value.
fn connection_credential(v: &[u8]) -> Option<bool> {
    let fields: Vec<&[u8]> = v
        .split(|c| *c == b';')
        .filter(|f| !f.trim_ascii().is_empty())
        .collect();
    if fields.len() < 2 || !fields.iter().all(|f| f.contains(&b'=')) {
        return None;
    }
    const CREDENTIALS: &[&str] = &[
        "password",
        "pwd",
        "accountkey",
        "sharedaccesskey",
        "sharedaccesssignature",
        "clientsecret",
        "secret",
        "token",
        "apikey",
        "accesskey",
    ];
    Some(fields.iter().any(|f| {
        let eq = f.iter().position(|c| *c == b'=').expect("checked");
        let key: Vec<u8> = f[..eq]
            .iter()
            .filter(|c| !c.is_ascii_whitespace())
            .map(u8::to_ascii_lowercase)
            .collect();
        let val = f[eq + 1..].trim_ascii();
        CREDENTIALS.iter().any(|k| key == k.as_bytes())
            && !val.is_empty()
            && !val.starts_with(b"{")
            && literal_part(val).is_some()
            && !is_placeholder(val)
    }))
}

/// A name and operator of a match arm or a table of variants:
/// `ExporterMasterSecret =>`, `Self::PrivateKey =>` (a capitalized name
/// with no `_`, not a Ruby symbol's `:password =>`).
fn match_arm(before: &[u8], name: &[u8], between: &[u8]) -> bool {
    between.trim_ascii().starts_with(b"=>")
        && name.first().is_some_and(u8::is_ascii_uppercase)
        && name.iter().any(u8::is_ascii_lowercase)
        && name.iter().all(u8::is_ascii_alphanumeric)
        && (!before.ends_with(b":") || before.ends_with(b"::"))
}

/// Binary data, not a token that could leak as text: bytes written as
/// escapes (`"\xb0\x32\x35…"`, a test vector's key in code), or what
/// they decode to (invalid UTF-8, control bytes).
fn binary_data(v: &[u8]) -> bool {
    let escapes = v.windows(2).filter(|w| w == br"\x").count();
    (escapes >= 8 && escapes * 16 >= v.len() * 3)
        || std::str::from_utf8(v).is_err()
        || v.iter().any(|c| *c < 0x20 && *c != b'\t')
}

/// A value that is itself a label or a statement: `token:`, `key =`,
/// `telegram_api_token = `.
fn label_text(v: &[u8]) -> bool {
    let t = v.trim_ascii_end();
    t.ends_with(b":") || t.ends_with(b" =") || v.windows(3).any(|w| w == b" = ")
}

/// Whether a JWT's first segment decodes (base64url) to a JSON object.
fn jwt_header(v: &[u8]) -> bool {
    use base64::Engine;
    let head = v.split(|c| *c == b'.').next().unwrap_or(b"");
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(head.trim_ascii_end())
        .ok()
        .and_then(|d| serde_json::from_slice::<serde_json::Value>(&d).ok())
        .is_some_and(|j| j.is_object())
}

/// Names that are too generic to mean "secret" on their own.
fn weak_name(n: &str) -> bool {
    matches!(n, "key" | "pass" | "auth" | "dsn")
        || n.ends_with("pat")
        || (n.ends_with("key")
            && ![
                "apikey",
                "accesskey",
                "secretkey",
                "privatekey",
                "authkey",
                "signingkey",
            ]
            .iter()
            .any(|s| n.ends_with(s)))
}

/// Words of common languages that stand where a literal would in code: a
/// value equal to one of them is a reference, a type or a keyword.
const CODE_WORDS: &[&str] = &[
    "self",
    "this",
    "cls",
    "super",
    "none",
    "nil",
    "null",
    "undefined",
    "true",
    "false",
    // Perl's `Config.sh`: `d_pwpasswd='define'`, `i_pwd='undef'`.
    "define",
    "undef",
    "str",
    "string",
    "int",
    "bool",
    "bytes",
    "bytearray",
    "dict",
    "list",
    "tuple",
    "set",
    "object",
    "any",
    "optional",
    "union",
    "callable",
    "option",
    "some",
    "ok",
    "err",
    "result",
    "vec",
    "box",
    "arc",
    "rc",
    "cow",
    "hashmap",
    "btreemap",
    "u8",
    "u16",
    "u32",
    "u64",
    "u128",
    "usize",
    "i8",
    "i16",
    "i32",
    "i64",
    "i128",
    "isize",
    "f32",
    "f64",
    "char",
    "void",
    "float",
    "double",
    "long",
    "short",
    "byte",
    "number",
    "boolean",
    "symbol",
    "let",
    "var",
    "const",
    "mut",
    "ref",
    "impl",
    "fn",
    "def",
    "return",
    "await",
    "async",
    "yield",
    "new",
    "match",
    "if",
    "else",
    "for",
    "while",
    "in",
    "is",
    "not",
    "and",
    "or",
    "lambda",
    "function",
    "default",
    "static",
    "pub",
    "type",
    "struct",
    "enum",
    "class",
    "interface",
    "secret",
    "secrets",
    "password",
    "passwd",
    "pass",
    "pwd",
    "token",
    "tokens",
    "key",
    "keys",
    "auth",
    "credentials",
    "credential",
    "value",
    "values",
    "required",
    "optional",
];

/// A value next to a secret name that is code, not a literal credential:
/// a call, a path, a method chain, a type or keyword, or (unquoted) a
/// bare identifier followed by a generic (`Option<`), a call or a path.
fn is_code(before: &[u8], value: &[u8], after: &[u8], quoted: bool) -> bool {
    let lower = value.to_ascii_lowercase();
    let word = std::str::from_utf8(&lower).unwrap_or("");
    if CODE_WORDS.contains(&word) {
        return true;
    }
    // `"postgres://$(whoami)@localhost"`: a shell's command
    // substitution, even in double quotes.
    if enclosed_name(
        value,
        b"$(",
        |c| c.is_ascii_lowercase() || b"_- ".contains(&c),
        b')',
    ) {
        return true;
    }
    // A quoted string is a literal whatever it holds.
    if quoted {
        return false;
    }
    let has = |needle: &[u8]| value.windows(needle.len()).any(|w| w == needle);
    // `!publicKey.expires` (a negation), `/^Unexpected token…/` (a regex
    // literal).
    // `token = 1*tchar`: a grammar's repetition (ABNF), in HTTP's docs.
    let abnf = value.iter().position(|c| *c == b'*').is_some_and(|i| {
        value[..i].iter().all(u8::is_ascii_digit)
            && value[i + 1..]
                .iter()
                .skip_while(|c| c.is_ascii_digit())
                .all(|c| c.is_ascii_alphabetic() || *c == b'-')
            && value[i + 1..].iter().any(u8::is_ascii_alphabetic)
    });
    // `1ULL << 35` (an integer literal's suffix), `\undef` (Perl's
    // reference).
    let digits = value.iter().take_while(|c| c.is_ascii_digit()).count();
    let int_suffix = digits > 0
        && (1..=3).contains(&(value.len() - digits))
        && value[digits..].iter().all(|c| b"uUlL".contains(c));
    let perl_ref = value.first() == Some(&b'\\')
        && value
            .get(1)
            .is_some_and(|c| c.is_ascii_alphabetic() || b"$@%&".contains(c))
        && value[1..]
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || b"_$@%&:".contains(c));
    // `lastToken === 43`: a comparison, not an assignment.
    let op = before.trim_ascii_end();
    let compared = [&b"=="[..], b"!=", b"<=", b">="]
        .iter()
        .any(|o| op.ends_with(o));
    if abnf
        || int_suffix
        || perl_ref
        || compared
        // Optional chaining and nullish defaults (`options?.createKey`,
        // `a ?? b`): JavaScript.
        || has(b"?.")
        || has(b"??")
        || value.first().is_some_and(|c| b"(:[{.!".contains(c))
        || value.starts_with(b"/^")
        // `/*#__PURE__*/function () {`: a comment opens code.
        || value.starts_with(b"/*")
        || has(b"(")
        || has(b"::")
        || has(b"->")
        || has(b"=>")
        || has(b"[")
    {
        return true;
    }
    // (`$` as JavaScript allows it: `app$1`, `CommaToken$1`.)
    let ident = |w: &[u8]| {
        !w.is_empty()
            && (w[0].is_ascii_alphabetic() || w[0] == b'_')
            && w.iter()
                .all(|c| c.is_ascii_alphanumeric() || b"_$".contains(c))
    };
    // A bundler's or compiler's renaming suffix (`CommaToken$1`,
    // `messages_1`) is no digit of the name's own.
    let renamed = |w: &[u8]| {
        let digits = w.iter().rev().take_while(|c| c.is_ascii_digit()).count();
        digits > 0 && digits < w.len() && b"$_".contains(&w[w.len() - digits - 1])
    };
    if ident(value) && value.contains(&b'$') && renamed(value) {
        return true;
    }
    // `token = @token` (Ruby's instance variable), `: @blakeembrey` (a
    // handle): a name, not a value.
    if value.strip_prefix(b"@").is_some_and(ident) {
        return true;
    }
    // A statement's end or the next member after `name: value` or
    // `name = value` in code: `public streamToken: Uint8Array;`,
    // `withXSRFToken: defaultToConfig2,`, `this.password = arg2;` (a
    // type or a variable; `.env` and YAML write neither `;` nor `, `
    // after a bare value). Letters whose case flips at every other one
    // are a token all the same.
    let code_op = op.ends_with(b":")
        || (before.ends_with(b" ") && op.ends_with(b"="))
        || before.ends_with(b"private ");
    // A name's words around digits (`defaultToConfig2`, `Uint8Array`);
    // not `Q7yWk6WLjKNiwxX4vXVx`.
    let words_around_digits = |v: &[u8]| {
        !random_case(v)
            && v.split(|c| c.is_ascii_digit() || b"_$".contains(c))
                .filter(|p| !p.is_empty())
                .all(|p| {
                    // Humps that each end in lower-case letters.
                    p.split_inclusive(u8::is_ascii_lowercase)
                        .all(|h| h.iter().filter(|c| c.is_ascii_uppercase()).count() <= 1)
                        && p.last().is_some_and(u8::is_ascii_lowercase)
                })
    };
    // (A TypeScript union of such names: `Buffer|Uint8Array|string;`.)
    let union = |v: &[u8]| v.split(|c| *c == b'|').all(ident);
    if code_op
        && union(value)
        && (after.starts_with(b";")
            || ((after.starts_with(b",") || after.starts_with(b")"))
                && value.split(|c| *c == b'|').all(words_around_digits)))
    {
        return true;
    }
    // Declarations in C and Rust bindings: `secret: *const u8`,
    // `token: __u64` (reserved names), `TOKEN: _bindgen_ty_5 = …` (a
    // type, then the value).
    if value.strip_prefix(b"*").is_some_and(ident)
        || (value.starts_with(b"__") && ident(value))
        || (ident(value) && {
            let rest = after.trim_ascii_start();
            rest.starts_with(b"=") && !rest.starts_with(b"==")
        })
    {
        return true;
    }
    // Unquoted: `self.password`, `config.api_key`, `Option<String>`,
    // `EncapsulationKey::new`, `tokens[0]`, `exports2.STRICT_TOKEN`; and
    // minified chained assignments (`P.isWritable=P.isReadable=void`).
    let member_path = |v: &[u8]| {
        // (After the first, JavaScript's private `#field` and `$__field`.)
        let segments: Vec<&[u8]> = v
            .split(|c| *c == b'.')
            .enumerate()
            .map(|(i, s)| match s.first() {
                Some(b'#' | b'$') if i > 0 => &s[1..],
                _ => s,
            })
            .collect();
        if segments.len() < 2 || !segments.iter().all(|s| ident(s)) {
            return false;
        }
        let first = String::from_utf8_lossy(segments[0]).to_ascii_lowercase();
        CODE_OBJECTS.contains(&first.trim_end_matches(|c: char| c.is_ascii_digit()))
            || segments
                .iter()
                .all(|s| renamed(s) || !s.iter().any(u8::is_ascii_digit))
    };
    if member_path(value) {
        return true;
    }
    // Python's annotations: `key: PrivateKeyTypes | None`,
    // `startToken:Token=None` (a capitalized type, then a union or a
    // default of nothing).
    let capitalized = |w: &[u8]| ident(w) && w[0].is_ascii_uppercase();
    let nothing = |w: &[u8]| [&b"None"[..], b"null", b"nil"].contains(&w);
    if capitalized(value)
        && after
            .trim_ascii_start()
            .strip_prefix(b"|")
            .is_some_and(|t| {
                capitalized(
                    t.trim_ascii_start()
                        .split(|c| !c.is_ascii_alphanumeric() && *c != b'_')
                        .next()
                        .unwrap_or(b""),
                )
            })
    {
        return true;
    }
    if let Some(i) = value.iter().position(|c| *c == b'=') {
        if capitalized(&value[..i]) && nothing(&value[i + 1..]) {
            return true;
        }
    }
    // `ssl.need.client.auth=true|false`: the choices a setting takes.
    if value.contains(&b'|')
        && value
            .split(|c| *c == b'|')
            .all(|w| CODE_WORDS.contains(&String::from_utf8_lossy(w).to_ascii_lowercase().as_str()))
    {
        return true;
    }
    if value.contains(&b'=') {
        let pieces: Vec<&[u8]> = value.split(|c| *c == b'=').collect();
        if pieces.len() >= 2
            && pieces.iter().all(|p| {
                member_path(p) || CODE_WORDS.contains(&String::from_utf8_lossy(p).as_ref())
            })
        {
            return true;
        }
    }
    ident(value)
        && (after.first().is_some_and(|c| b"<(.[".contains(c))
            || after.starts_with(b"::")
            || type_name(value))
}

/// `EncapsulationKey`, `PublicKeyComponents`: two or more capitalized
/// humps of at least three letters, no digit (random tokens have digits or
/// short humps: `AbCdEf`).
fn type_name(value: &[u8]) -> bool {
    let mut humps = 0;
    let mut len = 0;
    for (i, c) in value.iter().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 && len < 3 {
                return false;
            }
            humps += 1;
            len = 1;
        } else if c.is_ascii_lowercase() {
            if humps == 0 {
                return false;
            }
            len += 1;
        } else {
            return false;
        }
    }
    humps >= 2 && len >= 3
}

/// Receivers whose attributes are references, never literals.
const CODE_OBJECTS: &[&str] = &[
    "self",
    "exports",
    "module",
    "this",
    "cls",
    "os",
    "process",
    "config",
    "settings",
    "env",
    "args",
    "opts",
    "options",
    "ctx",
    "context",
    "req",
    "request",
    "params",
    "props",
    "state",
    "data",
    "obj",
    "creds",
    "credentials",
    "secrets",
    "app",
    "client",
    "conf",
    "cfg",
];

/// Whether an unquoted value is an identifier with no digit: in code, a
/// variable (`password = password`, `token = tok`); kept as a literal only
/// in env-file style `NAME=value`. Letters whose case flips at every other
/// one (`YXNkZmZmZmZm_HARDcoded`) name no variable: that is base64 or a
/// random token, a literal in YAML's `apikey: …`.
fn bare_word(value: &[u8]) -> bool {
    !value.is_empty()
        && value
            .iter()
            .all(|c| c.is_ascii_alphabetic() || *c == b'_' || *c == b'-')
        && !random_case(value)
}

/// Lower case, upper case and digits all in `v`, as in a random token.
fn cases_and_digits(v: &[u8]) -> bool {
    v.iter().any(u8::is_ascii_lowercase)
        && v.iter().any(u8::is_ascii_uppercase)
        && v.iter().any(u8::is_ascii_digit)
}

/// `ConnectionString`: capitalized humps of two lower-case letters or more.
fn camel_word(w: &[u8]) -> bool {
    w.first().is_some_and(u8::is_ascii_uppercase)
        && w.split(u8::is_ascii_uppercase)
            .skip(1)
            .all(|h| h.len() >= 2 && h.iter().all(u8::is_ascii_lowercase))
}

/// `owningService`: a lower-case word of two letters or more, then
/// [`camel_word`]'s humps.
fn lower_camel_word(w: &[u8]) -> bool {
    let head = w.iter().take_while(|c| c.is_ascii_lowercase()).count();
    head >= 2 && head < w.len() && camel_word(&w[head..])
}

/// A run of eight letters or more whose case changes at least at every
/// other letter. Identifiers change case once a word (`getAccessToken`,
/// `XMLHttpRequest`: 4 and 3 changes in 14 letters).
fn random_case(value: &[u8]) -> bool {
    value.split(|c| !c.is_ascii_alphabetic()).any(|run| {
        let flips = run
            .windows(2)
            .filter(|w| w[0].is_ascii_uppercase() != w[1].is_ascii_uppercase())
            .count();
        run.len() >= 8 && flips * 2 >= run.len()
    })
}

/// `"doesnt start right"`, `"Foreign key constraint failed"`: three or
/// more words of letters, no digit or symbol, is prose, not a password.
/// So is a sentence of four words or more with its punctuation, a word
/// perhaps ending in a digit or two (`"OAuth2 token generation or refresh
/// error"`, `"It looks like you're running…\n\nThis is disabled…"`).
fn prose(value: &[u8]) -> bool {
    if value.iter().filter(|c| **c == b' ').count() >= 2
        && value.iter().any(u8::is_ascii_lowercase)
        && value.iter().all(|c| c.is_ascii_alphabetic() || *c == b' ')
    {
        return true;
    }
    // (Four words need three blanks or escaped line ends.)
    if value
        .iter()
        .filter(|c| c.is_ascii_whitespace() || **c == b'\\')
        .count()
        < 3
    {
        return false;
    }
    let mut text = value.to_vec();
    for i in 0..text.len().saturating_sub(1) {
        if text[i] == b'\\' && matches!(text[i + 1], b'n' | b'r' | b't') {
            text[i] = b' ';
            text[i + 1] = b' ';
        }
    }
    let words: Vec<&[u8]> = text
        .split(u8::is_ascii_whitespace)
        .filter(|w| !w.is_empty())
        .collect();
    words.len() >= 4
        && value.iter().any(u8::is_ascii_lowercase)
        && words.iter().all(|w| {
            let w = w
                .strip_prefix(b"(")
                .or_else(|| w.strip_prefix(b"'"))
                .or_else(|| w.strip_prefix(b"`"))
                .unwrap_or(w);
            let end = w.len()
                - w.iter()
                    .rev()
                    .take_while(|c| b".,;:!?'\")`".contains(c))
                    .count();
            let w = &w[..end];
            !w.is_empty()
                && w[0].is_ascii_alphabetic()
                && w.iter().filter(|c| c.is_ascii_digit()).count() <= 2
                && w.iter()
                    .all(|c| c.is_ascii_alphanumeric() || b"'-".contains(c))
        })
}

/// A value that says it is a test value: `fake` in it, unless what is
/// left without it is still a random token (`PA3XsxZ8d8cPQLmnZzFAKEdzC6…`,
/// a scanner suite's stand-in shaped exactly like a key, which a leak of
/// the real one would look like too): 16 characters or more that mix
/// lower case, upper case and digits, hold fewer than three separators
/// (`a-fake-api-key` is words) and spread over at least 3.5 bits each.
fn marked_fake(value: &[u8]) -> bool {
    let lower = value.to_ascii_lowercase();
    if !lower.windows(4).any(|w| w == b"fake") {
        return false;
    }
    let mut rest = Vec::with_capacity(value.len());
    let mut i = 0;
    while i < value.len() {
        if lower[i..].starts_with(b"fake") {
            i += 4;
        } else {
            rest.push(value[i]);
            i += 1;
        }
    }
    let random = rest.len() >= 16
        && cases_and_digits(&rest)
        && rest.iter().filter(|c| b"-_. ".contains(c)).count() < 3
        && entropy(&rest) >= 3.5;
    !random
}

/// Whether `v`'s first `open` is followed by one or more bytes of
/// `name` and then `close` (`<DATABASE_NAME>`, `$(whoami)`).
fn enclosed_name(v: &[u8], open: &[u8], name: fn(u8) -> bool, close: u8) -> bool {
    memchr::memmem::find(v, open).is_some_and(|i| {
        let rest = &v[i + open.len()..];
        let n = rest.iter().take_while(|c| name(**c)).count();
        n > 0 && rest.get(n) == Some(&close)
    })
}

/// Whether the line before an `.npmrc` value names its registry
/// (`//registry.npmjs.org/:_authToken=`): there a UUID is one of npm's
/// legacy tokens, whatever its version.
fn registry_scoped(before: &[u8]) -> bool {
    let line = before.rsplit(|c| *c == b'\n').next().unwrap_or(before);
    let line = line.trim_ascii_start();
    line.starts_with(b"//")
        && line.get(2).is_some_and(|c| !matches!(c, b'/' | b':'))
        && memchr::memmem::find(line, b"/:_").is_some()
}

/// Whether the host that opens `rest` (what follows a URL's `@`) is one
/// RFC 2606 reserves for documentation: `example.com` (`.net`, `.org`)
/// or a name under `.example`, `.test` or `.invalid`.
fn documentation_host(rest: &[u8]) -> bool {
    let host = rest
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || b".-".contains(c))
        .count();
    let host = rest[..host].to_ascii_lowercase();
    let host = host.strip_suffix(b".").unwrap_or(&host);
    ["example.com", "example.net", "example.org"]
        .iter()
        .any(|d| host == d.as_bytes() || host.ends_with(format!(".{d}").as_bytes()))
        || [".example", ".test", ".invalid"]
            .iter()
            .any(|t| host.ends_with(t.as_bytes()))
}

/// A time-based (version 1) UUID: a timestamp and a node id, an identifier
/// that no service issues as a credential.
fn uuid_v1(value: &[u8]) -> bool {
    value.len() == 36
        && value.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
        && value[14] == b'1'
}

/// Names that declare a test value: `fakeToken`, `invalid_password`,
/// `nonMatchingToken`, `example_api_key`.
fn sample_name(n: &str) -> bool {
    [
        "fake",
        "dummy",
        "mock",
        "sample",
        "example",
        "invalid",
        "wrong",
        "bad",
        "nonmatching",
    ]
    .iter()
    .any(|p| n.starts_with(p))
}

/// Shannon entropy of `v`, in bits per byte.
/// A credential-like value: at least 8 bytes, no whitespace, two or more
/// character classes, and enough entropy per character (the export's
/// sweep takes such values across a whole export, `scrub.rs`).
pub fn credential_like(v: &[u8]) -> bool {
    if v.len() < 8 || v.iter().any(u8::is_ascii_whitespace) {
        return false;
    }
    let classes = [
        v.iter().any(u8::is_ascii_lowercase),
        v.iter().any(u8::is_ascii_uppercase),
        v.iter().any(u8::is_ascii_digit),
        v.iter().any(|c| !c.is_ascii_alphanumeric()),
    ];
    if classes.iter().filter(|c| **c).count() < 2 {
        return false;
    }
    // Short values cannot reach 3 bits per character: ask what their
    // length allows, less half a bit.
    let n = v.len() as f64;
    entropy(v) >= 3.0_f64.min(n.log2() - 0.5)
}

fn entropy(v: &[u8]) -> f64 {
    let mut counts = [0u32; 256];
    for c in v {
        counts[*c as usize] += 1;
    }
    let n = v.len() as f64;
    counts
        .iter()
        .filter(|c| **c > 0)
        .map(|c| {
            let p = f64::from(*c) / n;
            -p * p.log2()
        })
        .sum()
}

/// A secret-named field's value the writer keeps as any value: a
/// version (`"jsonwebtoken": "^9.0.0"` in a dependency map names a
/// package and its version range, not a credential).
pub fn kept_secret_value(v: &str) -> bool {
    versioned_name(v.as_bytes())
}

/// `jjwt-jackson-0.11.2`, `SalesResults-1.2`, `v2.4.1`, `~1.0.3`: a name
/// and a dotted version (a package coordinate, a release label, a
/// dependency's range), not a credential.
fn versioned_name(value: &[u8]) -> bool {
    let s = String::from_utf8_lossy(value);
    let (head, version) = match s.rfind(['-', '_', ':', '@']) {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => ("", &s[..]),
    };
    // (A dependency's range: `"basic-auth": "~1.0.3"`, `^2.1.0`, `>=1.2`.)
    let version = version.trim_start_matches(['~', '^', '=', '<', '>']);
    let version = version.strip_prefix(['v', 'V']).unwrap_or(version);
    let parts: Vec<&str> = version.split('.').collect();
    parts.len() >= 2
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 6 && p.bytes().all(|c| c.is_ascii_digit()))
        && head
            .bytes()
            .all(|c| c.is_ascii_alphabetic() || matches!(c, b'-' | b'_' | b'.' | b':'))
}

pub(crate) fn assignment_value_ok(name: &[u8], value: &[u8], literal_syntax: bool) -> bool {
    // `API_KEY_2`, `token1`: a numbered name is judged as the name.
    let n = crate::names::normalize(&String::from_utf8_lossy(name));
    let n = match n.trim_end_matches(|c: char| c.is_ascii_digit()) {
        "" => n.as_str(),
        trimmed => trimmed,
    }
    .to_string();
    if crate::names::normalize_is_innocent(&n)
        || sample_name(&n)
        || versioned_name(value)
        || prose(value)
    {
        return false;
    }
    // Hexspeak filler after a key (`os.environ["OPENAI_API_KEY"] =
    // "deadbeef"` in a test). Only here: in a URL's userinfo the same word
    // is a real Sidekiq credential's shape, and stays replaced.
    if hexspeak(&String::from_utf8_lossy(value).to_ascii_lowercase()) {
        return false;
    }
    if !literal_syntax && bare_word(value) {
        return false;
    }
    // `* signing-key: Updated.`: a word that ends a sentence.
    if !literal_syntax && value.strip_suffix(b".").is_some_and(plain_word) {
        return false;
    }
    // `password_last_used = "not_supported"`: words after the password's
    // name make it an attribute of one (`password_super_secure` keeps a
    // random value); and `NOPASSWORD = "no-password-required"`: three
    // words or more, one a secret's, name a kind of secret.
    let suffixed = n.contains("passw")
        && !["password", "passwd", "pass", "pwd"]
            .iter()
            .any(|w| n.ends_with(w));
    if words_name(value)
        && (suffixed
            || letter_words(value).is_some_and(|w| {
                w.len() >= 3 && w.iter().any(|w| SECRET_WORDS.contains(&w.as_str()))
            }))
    {
        return false;
    }
    // `ANTHROPIC_API_KEY=votre-clé-va-ici`, `api_token: not-a-real-one`:
    // a key or a token is made by a machine, and three or more lower-case
    // words joined by `-` or `_` are a phrase in any language. (Not so
    // after a password's name: a passphrase is one.)
    if !n.contains("pass") && !n.contains("pwd") && lowercase_phrase(value) {
        return false;
    }
    // `credentials: 'include'`, `=== 'same-origin'`: the Fetch API's modes;
    // `credentials` names a structure, and a word in it is a setting.
    if n.ends_with("credentials")
        && value
            .iter()
            .all(|c| c.is_ascii_lowercase() || *c == b'-' || *c == b'_')
    {
        return false;
    }
    if public_der(value) {
        return false;
    }
    if names_itself(name, &n, value, literal_syntax) {
        return false;
    }
    // `token: "error"`, `Token => "invalid token"`: what is named only
    // a token, a key or a secret is not a short lower-case word or a
    // phrase, whose words may be capitalized (`Invalid Token: 'Invalid
    // token'`); nor is what an auth setting names, its scheme
    // (`httpBearerAuth: 'bearer'`) or a message (`SQLITE_AUTH =>
    // "Authorization denied"`). A password can be, and so can a named
    // variable's value: `AWS_SECRET_ACCESS_KEY=bench`.
    if (["token", "secret", "key"].contains(&n.as_str()) || n.ends_with("auth"))
        && ((value.iter().all(u8::is_ascii_lowercase) && value.len() <= 10)
            || (value.contains(&b' ')
                && value
                    .split(|c| *c == b' ')
                    .filter(|w| !w.is_empty())
                    .all(plain_word)))
    {
        return false;
    }
    if weak_name(&n) {
        // `key="ClearTextPassword"`, `key="jetbrains.mps.v8_elimination"`,
        // `key = "x-hello-world-64"`, `<key>key inside an array2</key>`: a
        // word, a name made of words or a phrase, not a credential.
        // (A dotted name is words too; a JWT or a token with dots inside
        // has random parts and stays a value.)
        // (`key="ConnectionString1"`: a name numbered.)
        if words_name(value)
            || value.iter().any(u8::is_ascii_whitespace)
            || (value.iter().all(u8::is_ascii_alphabetic) && !random_case(value))
            || word_then_digits(value).is_some_and(|w| w.len() + 2 >= value.len() && camel_word(w))
        {
            return false;
        }
        let classes = [
            value.iter().any(u8::is_ascii_lowercase),
            value.iter().any(u8::is_ascii_uppercase),
            value.iter().any(u8::is_ascii_digit),
        ];
        return value.len() >= 16 && classes.iter().filter(|c| **c).count() >= 2;
    }
    if value.iter().all(u8::is_ascii_digit) && value.len() < 6 {
        return false;
    }
    value.len() >= 4
}

/// The value of `secret-label-spaced`, which only spaces separate from
/// its name, with `before` the text before the name and `next` the byte
/// after the value. A token mixes letters and digits; a value that runs
/// into other text (`token api_key=…`, `key abc…:def`) or is made of
/// words (`secret storage_backend_v2_path`) is something else.
/// Upper-case hex is a key's id or fingerprint (`using RSA key 5DE3…`,
/// `NO_PUBKEY 8719…`), and a name after `public`, `primary` or `cache`
/// (`primary key`, `cache key 9f86…`) names no secret.
fn spaced_value_ok(before: &[u8], value: &[u8], next: Option<u8>) -> bool {
    if next.is_some_and(|c| !(c.is_ascii_whitespace() || b"\"',;".contains(&c))) {
        return false;
    }
    if !value.iter().any(u8::is_ascii_digit)
        || !value.iter().any(u8::is_ascii_alphabetic)
        || words_name(value)
    {
        return false;
    }
    if value
        .iter()
        .all(|c| c.is_ascii_digit() || (b'A'..=b'F').contains(c))
    {
        return false;
    }
    let word: Vec<u8> = before
        .trim_ascii_end()
        .rsplit(|c| !c.is_ascii_alphanumeric() && *c != b'_')
        .next()
        .unwrap_or(b"")
        .to_ascii_lowercase();
    ![
        &b"public"[..],
        b"pub",
        b"primary",
        b"foreign",
        b"unique",
        b"sort",
        b"partition",
        b"cache",
        b"host",
        b"signing",
        b"rsa",
        b"dsa",
        b"ecdsa",
        b"gpg",
        b"pgp",
    ]
    .contains(&word.as_slice())
}

/// A value of words, not random: a name made of words, a short run of
/// letters, or an upper-case word and perhaps digits (`static-token`,
/// `STRINGS`, `MYTOKEN1`). A long run of letters may be a key
/// (`?key=seugeupfknprstoe`).
fn word_like(value: &[u8]) -> bool {
    let upper = value.iter().take_while(|c| c.is_ascii_uppercase()).count();
    // (`'Authorization'`: one capitalized word, any length.)
    let capitalized = value.len() > 1
        && value[0].is_ascii_uppercase()
        && value[1..].iter().all(u8::is_ascii_lowercase);
    words_name(value)
        || capitalized
        || (value.len() <= 10 && value.iter().all(u8::is_ascii_alphabetic))
        || (upper >= 4 && value[upper..].iter().all(u8::is_ascii_digit))
}

/// A value that names a secret instead of holding one, `n` being the
/// normalized name: a field read from another value or an identifier
/// built on the name (`colon2_token: node.colon2_token`,
/// `self.dot2_token == other.dot2_token`, `generate_private_key:
/// x25519_generate_private_key`, `credential: AzureCredential`), a
/// secret's name (`secretKey: api-key`, a selector `"#add-password"`),
/// or, quoted or not, words that end in a secret's word
/// (`AccessKey => "azure_storage_account_key"`, `MYTOKEN1`).
fn names_itself(name: &[u8], n: &str, value: &[u8], literal_syntax: bool) -> bool {
    // (A password set to one lower-case word that only ends in
    // `password`, `Password=thisismypassword`, is a weak password.)
    let named = value.strip_prefix(b"#").unwrap_or(value);
    let weak_password = n.ends_with("password")
        && value.len() > "password".len()
        && value.ends_with(b"password")
        && value.iter().all(u8::is_ascii_lowercase);
    if named
        .iter()
        .all(|c| c.is_ascii_alphabetic() || *c == b'-' || *c == b'_')
        && !weak_password
        && crate::names::classify(&String::from_utf8_lossy(named), &[])
            == crate::names::FieldClass::Secret
    {
        return true;
    }
    let alnum = |b: &[u8]| -> Vec<u8> {
        b.iter()
            .filter(|c| c.is_ascii_alphanumeric())
            .map(u8::to_ascii_lowercase)
            .collect()
    };
    let own = alnum(name.rsplit(|c| *c == b'.').next().unwrap_or(name));
    let trimmed = value
        .iter()
        .rposition(u8::is_ascii_alphanumeric)
        .map_or(&value[..0], |i| &value[..=i]);
    let identifier = !trimmed.is_empty()
        && trimmed
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.'));
    if !literal_syntax && identifier && own.len() >= 3 && alnum(trimmed).ends_with(&own) {
        return true;
    }
    // `ACCESS_KEY = 'aws_access_key_id'`, `'AWSAccessKeyId'`,
    // `SERVER_AUTH: "serverAuth"`: the name of a setting or a field, or
    // the name itself, as the value.
    if let Some(words) = letter_words(value) {
        let setting = words.len() >= 2
            && SECRET_WORDS.contains(&words[words.len() - 2].as_str())
            && [
                "id", "name", "file", "path", "env", "var", "field", "header", "param", "arn",
                "type", "types",
            ]
            .contains(&words[words.len() - 1].as_str());
        if setting || (own.len() >= 3 && words.concat() == String::from_utf8_lossy(&own)) {
            return true;
        }
    }
    let last_word = value
        .rsplit(|c| matches!(c, b'_' | b'-' | b'.'))
        .next()
        .unwrap_or(b"")
        .to_ascii_lowercase();
    if words_name(value) && SECRET_WORDS.contains(&String::from_utf8_lossy(&last_word).as_ref()) {
        return true;
    }
    // One word of one case that ends in `token`, `key` or `secret`, and
    // perhaps a digit: `_authToken=MYTOKEN1`, `api_key = "apikey"`.
    let letters = value.iter().take_while(|c| c.is_ascii_alphabetic()).count();
    let word = value[..letters].to_ascii_lowercase();
    letters > 0
        && value[letters..].iter().all(u8::is_ascii_digit)
        && (value[..letters].iter().all(u8::is_ascii_uppercase)
            || value[..letters].iter().all(u8::is_ascii_lowercase))
        && [&b"token"[..], b"key", b"secret"]
            .iter()
            .any(|w| word.ends_with(w))
}

/// Words that name a secret in a value made of words (`aws_access_key_id`,
/// `no-password-required`, `api_token`).
const SECRET_WORDS: &[&str] = &[
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "credential",
    "credentials",
    "auth",
];

/// One word of letters, its first perhaps capitalized (`Updated`,
/// `token`).
fn plain_word(w: &[u8]) -> bool {
    w.first().is_some_and(u8::is_ascii_alphabetic) && w[1..].iter().all(u8::is_ascii_lowercase)
}

/// The lower-cased words of an identifier, split at `_`, `-`, `.` and
/// case humps (`AWSAccessKeyId`: aws, access, key, id; `PKCS7KeyTypes`:
/// pkcs7, key, types); `None` when it holds anything else.
fn letter_words(v: &[u8]) -> Option<Vec<String>> {
    if v.is_empty()
        || !v
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || b"_-.".contains(c))
    {
        return None;
    }
    let mut words = Vec::new();
    for part in v.split(|c| b"_-.".contains(c)).filter(|p| !p.is_empty()) {
        let mut start = 0;
        for i in 1..part.len() {
            let (prev, cur) = (part[i - 1], part[i]);
            let next_lower = part.get(i + 1).is_some_and(u8::is_ascii_lowercase);
            if cur.is_ascii_uppercase() && (prev.is_ascii_lowercase() || next_lower) {
                words.push(part[start..i].to_ascii_lowercase());
                start = i;
            }
        }
        words.push(part[start..].to_ascii_lowercase());
    }
    Some(
        words
            .into_iter()
            .map(|w| String::from_utf8(w).expect("ASCII"))
            .collect(),
    )
}

/// Whether a private-key block holds a key: a block that ends in this
/// string needs a base64 run of 24 or more characters, not filler (eight
/// distinct characters at least; markers such as `EXAMPLE` do not count
/// here, a key's body is long enough to hold any), between its markers (`…KEY-----\nXXXX\nXXXX\n-----END…` and
/// `…\nanything\n…` are documentation). A block whose END lies on a later
/// line (a PEM file read line by line) counts from its BEGIN line.
fn key_body(block: &[u8]) -> bool {
    let Some(end) = block.windows(8).rposition(|w| w == b"-----END") else {
        // No END here: the BEGIN line of a block read line by line, or a
        // block cut short, ends at its marker or goes on with a body or
        // header line (or an escaped line end); `r"-----BEGIN PRIVATE
        // KEY-----");`, a pattern in code, goes on with punctuation.
        let marker_end = block
            .windows(5)
            .skip(5)
            .position(|w| w == b"-----")
            .map_or(block.len(), |i| i + 10);
        let rest = block[marker_end..].trim_ascii_start();
        // `'…KEY-----\nXXXXXXXXXXX...'`, `…KEY-----\nMIIEow…...`: filler
        // or a body cut short with an ellipsis is documentation.
        let mut body = rest;
        while let Some(r) = body
            .strip_prefix(br"\n")
            .or_else(|| body.strip_prefix(br"\r"))
        {
            body = r.trim_ascii_start();
        }
        let run = body
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || b"+/=".contains(c))
            .count();
        if run > 0 {
            let cut = body[run..].starts_with(b"...") || body[run..].starts_with("…".as_bytes());
            if cut || (run >= 4 && distinct_bytes(&body[..run]) <= 2) {
                return false;
            }
        }
        return match rest.first() {
            None => true,
            // A literal that closes on the marker: a key when it is
            // joined to the next (`"…KEY-----" +`), not when a call or a
            // statement ends there (`r"…KEY-----");`).
            Some(b'"' | b'\'' | b'`') => {
                let tail = rest[1..].trim_ascii_start();
                tail.is_empty() || b"+.&\\".contains(&tail[0])
            }
            Some(c) => c.is_ascii_alphanumeric() || b"+/\\".contains(c),
        };
    };
    let start = block
        .windows(16)
        .position(|w| w == b"PRIVATE KEY-----")
        .map_or(0, |i| i + 16);
    let inside = &block[start.min(end)..end];
    // Cut short and marked so (`…cUDqmxiieR. -----END`): a scanner's
    // suite shortens keys too, but without the mark, and counts them.
    let marked = inside.contains(&b'.') || memchr::memmem::find(inside, "…".as_bytes()).is_some();
    if marked && der_cut_short(inside) {
        return false;
    }
    inside
        .split(|c| !(c.is_ascii_alphanumeric() || b"+/=".contains(c)))
        .any(|run| run.len() >= 24 && distinct_bytes(run) >= 8)
}

/// How many different bytes `v` holds.
fn distinct_bytes(v: &[u8]) -> usize {
    let mut seen = [false; 256];
    v.iter().for_each(|c| seen[usize::from(*c)] = true);
    seen.iter().filter(|s| **s).count()
}

/// Whether the base64 between a block's markers is a DER SEQUENCE (as
/// PKCS #1, PKCS #8 and SEC 1 keys are) whose header claims at least
/// twice the bytes the block holds: a key cut short (documentation's
/// `MIIEpQIBAAKCAQEAuyf/…(64 characters). -----END…`, where a real
/// 2048-bit key runs to about 1,600).
fn der_cut_short(inside: &[u8]) -> bool {
    use base64::Engine;
    let b64: Vec<u8> = inside
        .iter()
        .copied()
        .filter(|c| c.is_ascii_alphanumeric() || b"+/=".contains(c))
        .collect();
    let Some(head) = b64.get(..8) else {
        return false;
    };
    let Ok(h) = base64::engine::general_purpose::STANDARD.decode(head) else {
        return false;
    };
    let claimed = match h[..] {
        [0x30, 0x81, n, ..] => usize::from(n) + 3,
        [0x30, 0x82, a, b, ..] => (usize::from(a) << 8 | usize::from(b)) + 4,
        _ => return false,
    };
    b64.len() * 3 / 4 * 2 < claimed
}

/// Base64 DER whose outer SEQUENCE opens with another SEQUENCE: a
/// SubjectPublicKeyInfo (`MFkwEwYHKoZIzj0CAQ…`, `MIIBIjANBgkqhkiG9w0B…`)
/// or a certificate, public material. A private key's (PKCS #1, #8, SEC 1)
/// opens with its INTEGER version.
fn public_der(v: &[u8]) -> bool {
    use base64::Engine;
    let Some(head) = v.get(..16) else {
        return false;
    };
    let Ok(b) = base64::engine::general_purpose::STANDARD.decode(head) else {
        return false;
    };
    let inner = match b.get(1) {
        Some(n) if *n < 0x80 => 2,
        Some(0x81) => 3,
        Some(0x82) => 4,
        Some(0x83) => 5,
        _ => return false,
    };
    b[0] == 0x30 && b.get(inner) == Some(&0x30)
}

/// `project-cache-v5-`, `aws_sse_customer_key_base64`, `X-Goog-Signature`,
/// `Software\Python\PythonCore\{sys_version}`: two or more parts split
/// by `-`, `_`, `.`, `/`, `\`, `{`, `}` or `:` (`webpages:Enabled`), each a word (letters in one
/// case, capitalized, or in capitalized humps, then perhaps digits:
/// `base64`, `PythonCore`) or at most three characters. A random token's
/// parts mix cases.
fn words_name(v: &[u8]) -> bool {
    let parts: Vec<&[u8]> = v
        .split(|c| b"-_./\\{}:".contains(c))
        .filter(|p| !p.is_empty())
        .collect();
    parts.len() >= 2
        && parts.iter().all(|p| {
            // Capitalized humps of two lower-case letters or more
            // (`PythonCore`, `owningService`); random tokens break that
            // almost at once.
            let one_case_word = word_then_digits(p).is_some_and(|w| {
                !w.is_empty()
                    && (w[1..].iter().all(u8::is_ascii_lowercase)
                        || w.iter().all(u8::is_ascii_uppercase)
                        || camel_word(w)
                        || lower_camel_word(w))
            });
            one_case_word || (p.len() <= 3 && p.iter().all(u8::is_ascii_alphanumeric))
        })
}

/// A label that is one secret word and nothing else (`auth`, `--token`,
/// `Password`), not a setting's own name (`ASANA_TOKEN`).
fn bare_label(name: &[u8]) -> bool {
    let n = crate::names::normalize(&String::from_utf8_lossy(name));
    [
        "auth",
        "token",
        "key",
        "secret",
        "pass",
        "password",
        "passwd",
        "pwd",
        "pw",
        "credential",
        "credentials",
    ]
    .contains(&n.as_str())
}

/// Three or more words of lower-case letters (any script) joined by `-`
/// or `_`: `votre-clé-va-ici`, `not_a_real_token`.
fn lowercase_phrase(v: &[u8]) -> bool {
    let Ok(s) = std::str::from_utf8(v) else {
        return false;
    };
    let words: Vec<&str> = s.split(['-', '_']).collect();
    words.len() >= 3
        && words
            .iter()
            .all(|w| !w.is_empty() && w.chars().all(|c| c.is_alphabetic() && c.is_lowercase()))
}

/// Whether what stands between a name and its value is a comma, with
/// no `=` or `:` (a tuple's or a call's neighbours, not an assignment).
fn side_by_side(between: &[u8]) -> bool {
    between.contains(&b',') && !between.iter().any(|c| matches!(c, b'=' | b':'))
}

/// `0010_alter_group_name_max_length`, `v2-final-build`: parts split by
/// `-`, `_` or `.`, each digits alone or letters in one case (perhaps
/// capitalized). A random token's parts mix letters and digits or cases.
fn plain_parts(v: &[u8]) -> bool {
    let parts: Vec<&[u8]> = v
        .split(|c| b"-_.".contains(c))
        .filter(|p| !p.is_empty())
        .collect();
    parts.len() >= 2
        && parts.iter().all(|p| {
            p.iter().all(u8::is_ascii_digit)
                || p.iter().all(u8::is_ascii_lowercase)
                || p.iter().all(u8::is_ascii_uppercase)
                || (p[0].is_ascii_uppercase() && p[1..].iter().all(u8::is_ascii_lowercase))
        })
}

fn decodes_to_user_password(v: &[u8]) -> bool {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(v)
        .ok()
        .and_then(|d| String::from_utf8(d).ok())
        .is_some_and(|s| s.contains(':') && s.chars().all(|c| !c.is_control()) && s.len() >= 3)
}

pub mod carriers;
pub mod fields;
pub mod named;
pub mod prefixed;

#[cfg(test)]
mod tests;
