//! The built-in rule table (docs/EXPORT.md, "Coverage"): one row a rule,
//! in the order that breaks ties between rules claiming one span. Rows
//! that depart from the shared tests say so with their traits, gate and
//! veto; nothing outside this table refers to a rule by its id.

use super::prefixed::PREFIXED;
use super::spec::{spec, Spec, Traits, UserFlags, PLAIN};
use super::{carriers, fields, gates, named, vetoes, Check};

/// Every built-in row, in the order that breaks ties between rules that
/// claim one span: shape rules, then the vendors' prefixed tokens, then
/// the rules that read a value next to a label, then the generic
/// detectors. Where two claim one span, the more specific names the
/// placeholder.
pub(crate) fn all() -> impl Iterator<Item = &'static Spec> {
    CATALOG
        .iter()
        .filter(|r| r.check.by_shape())
        .chain(PREFIXED)
        .chain(CATALOG.iter().filter(|r| !r.check.by_shape()))
        .chain([
            &fields::SPEC,
            &named::SPEC,
            &carriers::CALL,
            &carriers::LOGIN,
            &carriers::PATH,
            &carriers::HOOK,
            &carriers::USER_TOKEN,
            &carriers::GETTER,
            &carriers::RPC,
            &carriers::PAIR,
            &super::tenants::SPEC,
            &super::prefixed::UNKNOWN_PREFIX,
        ])
}

/// The id of the private-key rule, whose placeholder the scrubber also
/// writes for a key it reassembles across lines.
pub(crate) const PRIVATE_KEY: &str = "private-key";

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
        r"[A-Za-z0-9_./-]*(?:token|secret|passw(?:or)?d|pass|pwd|api_?key|apikey|key|auth|credentials?)(?:[_-]?[0-9]{1,2})?"
    };
}

/// The rules written as regexes (docs/EXPORT.md, "Coverage").
const CATALOG: &[Spec] = &[
    spec(
        PRIVATE_KEY,
        &["PRIVATE KEY"],
        r"(?s)(?P<s>-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----|\z))",
        Check::Shape,
    )
    .traits(Traits { key_block: true, ..PLAIN }),
    spec(
        "aws-access-key-id",
        &["AKIA", "ASIA", "ABIA", "ACCA", "A3T"],
        r"\b(?P<s>(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16})\b",
        Check::Shape,
    ),
    spec(
        "aws-secret-access-key",
        &["secret"],
        // Also `aws configure set aws_secret_access_key VALUE`.
        r#"(?i)(?:aws_?secret_?access_?key|secret_?access_?key|aws_?secret_?key)["']?(?:\s*(?:=>|:=|=|:)\s*|[ \t]+)["']?(?P<s>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+]|$)"#,
        Check::Value,
    ),
    spec(
        // An STS session token (`aws sts assume-role`, `AWS_SESSION_TOKEN`):
        // its serialized header makes the same base64 opening every time
        // (`FQoG…`, in AWS's documentation, is the older one; `//////////`
        // runs are part of real tokens).
        "aws-session-token",
        &["IQoJb3JpZ2luX2Vj", "FwoGZXIvYXdzE", "FQoGZXIvYXdzE"],
        r"(?P<s>(?:IQoJb3JpZ2luX2Vj|F[wQ]oGZXIvYXdzE)[A-Za-z0-9+/]{100,}={0,2})",
        Check::Shape,
    ),
    spec(
        // An AWS account's number where it names the account: in a
        // resource's ARN, or after an account label (`aws sts
        // get-caller-identity` prints `"Account": "…"`). Not a credential:
        // whose account the evidence shows, an identity as a tenant's host
        // is (`tenant-host`). The documentation's stand-ins stay.
        "aws-account-id",
        &["arn:aws", "account"],
        r#"(?i)(?:\barn:aws[a-z-]*:[a-z0-9-]*:[a-z0-9-]*:|\b(?:aws_?)?account(?:_?id)?["']?\s*[:=]\s*["']?)(?P<s>[0-9]{12})(?:[^0-9]|$)"#,
        Check::Shape,
    )
    .veto(vetoes::aws_example_account)
    .samples(
        &[
            ("\"Arn\": \"arn:aws:iam::{}:user/build\"", "dig:12"),
            ("aws-kms://arn:aws:kms:us-east-1:{}:key/84a66985-f968", "dig:12"),
            ("{\"UserId\": \"AIDAJQABLZS4A3QDU576Q\", \"Account\": \"{}\"}", "dig:12"),
            ("AWS_ACCOUNT_ID={}", "dig:12"),
        ],
        &[
            "arn:aws:s3:::my-bucket/key",
            "arn:aws:iam::111122223333:role/Admin",
            "arn:aws:sns:us-west-2:123456789012:CloudwatchAlarm",
            "account_number: 1234567890123",
            "\"accounts\": 123456789012",
            "arn:aws:iam::aws:policy/AdministratorAccess",
        ],
    ),
    spec(
        "aws-bedrock-api-key",
        &["ABSK", "bedrock-api-key-"],
        r"(?P<s>\bABSK[A-Za-z0-9+/]{40,}={0,2}|bedrock-api-key-(?:YmVkcm9jay5hbWF6b25hd3MuY29t[A-Za-z0-9+/=%]*|[A-Za-z0-9+/=%]{40,}))",
        Check::Shape,
    ),
    spec(
        "google-api-key",
        &["AIza"],
        r"(?:^|[^0-9A-Za-z_-])(?P<s>AIza[0-9A-Za-z_-]{35})(?:[^0-9A-Za-z_-]|$)",
        Check::Shape,
    ),
    spec(
        "google-oauth-client-secret",
        &["GOCSPX-"],
        r"(?P<s>GOCSPX-[0-9A-Za-z_-]{28})",
        Check::Shape,
    ),
    spec(
        // An OAuth client's id: the number of its project, 32 letters and
        // digits, and Google's fixed domain. Public in a page's script, but
        // the half of a pair whose other half is the client's secret.
        "google-oauth-client-id",
        &[".apps.googleusercontent.com"],
        r"(?:^|[^0-9A-Za-z_-])(?P<s>[0-9]{6,14}-[a-z0-9]{32})\.apps\.googleusercontent\.com",
        Check::Shape,
    )
    .samples(
        &[("'clientID' : '{}.apps.googleusercontent.com',", "dig:12|lit:-|low:32")],
        &["https://accounts.google.com/o/oauth2/auth?client_id=YOUR_CLIENT_ID.apps.googleusercontent.com"],
    ),
    spec(
        "google-oauth-access-token",
        &["ya29."],
        r"(?P<s>ya29\.[0-9A-Za-z_-]{20,})",
        Check::Shape,
    ),
    spec(
        "azure-ad-client-secret",
        &["Q~"],
        r"(?:^|[^0-9A-Za-z_~.+/-])(?P<s>[0-9A-Za-z_~.-]{3}[0-9]Q~[0-9A-Za-z_~.-]{31,34})(?:[^0-9A-Za-z_~.-]|$)",
        Check::Shape,
    ),
    spec(
        "azure-storage-account-key",
        &["AccountKey="],
        r"AccountKey=(?P<s>[A-Za-z0-9+/]{86}==)",
        Check::Shape,
    ),
    spec(
        // Base64 in storage SAS URLs, base64url in Power Automate
        // workflow webhooks (`…/invoke?…&sig=r2h9kxq06-gWOJ…`).
        "azure-sas-signature",
        &["sig="],
        r"[?&]sig=(?P<s>[A-Za-z0-9%+/_-]{20,}(?:%3D|=){0,2})",
        Check::Shape,
    ),
    spec(
        "github-fine-grained-pat",
        &["github_pat_"],
        // 82 characters as GitHub issues them; 30 or more of a token cut
        // short in a log line are still most of one.
        r"(?P<s>github_pat_[A-Za-z0-9_]{30,255})",
        Check::Shape,
    ),
    spec(
        "github-app-installation-token",
        &["ghs_"],
        // Newer ones carry `_` inside (`ghs_RWGUZ6kS8_Ut7…`). A letter or
        // digit before the prefix makes it part of a word
        // (`Soghs_ICANVAS…`), as it does for the other prefixes below; an
        // escaped line end (`\nghs_…` in a log's JSON) does not.
        r"(?:^|[^A-Za-z0-9]|\\[nrt])(?P<s>ghs_[A-Za-z0-9_]{36,}[A-Za-z0-9._-]*)",
        Check::Shape,
    ),
    spec(
        "github-token",
        &["ghp_", "gho_", "ghu_", "ghr_"],
        r"(?:^|[^A-Za-z0-9]|\\[nrt])(?P<s>gh[pour]_[A-Za-z0-9]{36,255})",
        Check::Shape,
    ),
    spec(
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
    spec(
        "slack-token",
        &[
            "xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-", "xoxe-", "xoxo-", "xapp-",
        ],
        // Bot and user tokens carry 8-14 digit ids (`xoxb-<id>-<id>-<secret>`)
        // or, in older ones, shorter ids and a 32-hex secret
        // (`xoxp-123-456-789-<32 hex>`),
        // legacy tokens any ids, workspace tokens any or none; refresh and
        // configuration tokens a one-digit version and a long body; a bot
        // or user token whose three segments or more mix letters in is
        // still one (`xoxb-853BAAEE-1B2eDb6A4c75-…`).
        r"(?P<s>xox[bpe]-[0-9]{8,14}-(?:[0-9]{8,14}-)*[0-9A-Za-z]{8,}(?:-[0-9A-Za-z]+)*|xox[bp]-[0-9]{1,14}(?:-[0-9]{1,14}){1,3}-[0-9a-f]{32}|xox[os]-(?:[0-9]+-)+[0-9A-Za-z]{8,}(?:-[0-9A-Za-z]+)*|xox[ar]-(?:[0-9]+-)*[0-9A-Za-z]{8,}(?:-[0-9A-Za-z]+)*|xox[bp]-[0-9A-Za-z]{6,}(?:-[0-9A-Za-z]{6,}){2,}|(?:xoxe\.xox[bp]|xoxe)-[0-9]-[0-9A-Za-z]{40,}|xapp-[0-9]-[A-Z0-9]+-[0-9]+-[a-z0-9]+)(?:[^0-9A-Za-z-]|$)",
        Check::Shape,
    )
    .samples(
        &[("SLACK_BOT_TOKEN={}", "lit:xoxb-|an:8|lit:-|an:12|lit:-|an:32")],
        &["xoxb-your-bot-token-here", "see xoxb-0000000000-0000000000000-xxxxxxxxxxxxxxxxxxxxxxxx"],
    ),
    spec(
        "slack-webhook",
        &["hooks.slack.com"],
        r"(?P<s>(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,})",
        Check::Shape,
    ),
    spec(
        "stripe-key",
        &[
            "sk_live_", "rk_live_", "sk_test_", "rk_test_", "sk_prod_", "rk_prod_", "whsec_",
        ],
        // 12 or more: a key cut short in a transcript is still a key.
        r"\b(?P<s>(?:sk|rk)_(?:live|test|prod)_[0-9A-Za-z]{12,}|whsec_[0-9A-Za-z+/=]{20,})",
        Check::Shape,
    )
    .samples(
        &[("stripe.api_key = '{}'", "lit:sk_live_|an:15")],
        &["sk_live_1234", "pk_live_51HQS0j4H75XpthOWabc"],
    ),
    spec(
        "anthropic-api-key",
        &["sk-ant-"],
        r"(?P<s>sk-ant-[a-z]{2,8}[0-9]{2,4}-[A-Za-z0-9_-]{40,})",
        Check::Shape,
    ),
    spec(
        "openai-api-key",
        &["sk-"],
        r"\b(?P<s>sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|sk-[A-Za-z0-9]{20,}T3BlbkFJ[A-Za-z0-9]{20,}|sk-[A-Za-z0-9]{40,})",
        Check::Shape,
    ),
    spec(
        "huggingface-token",
        &["hf_"],
        r"\b(?P<s>hf_[A-Za-z0-9]{34,40})\b",
        Check::Shape,
    ),
    spec(
        "npm-token",
        &["npm_"],
        r"\b(?P<s>npm_[A-Za-z0-9]{36})\b",
        Check::Shape,
    ),
    spec(
        "npmrc-auth",
        &["_auth"],
        // .npmrc syntax only: `//host/path:_authToken=...` or `_auth=` at
        // the start of a line (not `_AUTH =` in code, not `re.compile(r`).
        r#"(?m)(?:^[ \t]*|:)_(?:authToken|auth)[ \t]*=[ \t]*["']?(?P<s>[^\s"']+)"#,
        Check::Value,
    )
    .traits(Traits { random_only: true, uuid_token: true, ..PLAIN }),
    spec(
        "pypi-token",
        &["pypi-AgEIcHlwaS5vcmc", "pypi-AgENdGVzdC5weXBpLm9yZw"],
        r"(?P<s>pypi-(?:AgEIcHlwaS5vcmc|AgENdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,})",
        Check::Shape,
    ),
    spec(
        "jwt",
        &["eyJ"],
        // Unsigned tokens too (`header.payload` or `header.payload.`),
        // and signed ones whose payload is not JSON (a JWS over bytes, a
        // JWE's first three parts), whose header must then decode.
        r"\b(?P<s>eyJ[A-Za-z0-9_-]{8,}\.(?:eyJ[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]*)?|[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}))",
        Check::Jwt,
    )
    .samples(
        &[
            ("Authorization: Bearer {}", "lit:eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ|url:40|lit:.|url:43"),
            ("token = {}", "lit:eyJhbGciOiJIUzI1NiJ9.AO9g|url:80|lit:.|url:43"),
        ],
        // Unsigned, with a header that is not JSON.
        &[
            "eyJhbasdGciOiJIUaddasdasfsasdasdzI1NiIasdsInR5cCI6IkpXVCasdJasd9.eyJzdWIiOiIxMjM0NTY3ODkwIn0",
            // Signed, its payload not JSON, and its header not JSON either.
            "eyJhbasdGciOiJIUaddasdasfsasdasdzI1NiIasdsInR5cCI6IkpXVCasdJasd9.AO9gWJy6UnMceCzA4Lig0VV4.pXQPQg6j4Zpp",
        ],
    ),
    spec(
        "url-credentials",
        &["://"],
        // `postgres://postgres:postgres@`: a user name repeated is a sample.
        // Redis URLs carry no user (`redis://:password@host`).
        r#"(?i)\b[a-z][a-z0-9+.-]{1,20}://(?P<u>[^\s:@/"'<>]{0,256}):(?P<s>[^\s@/"'<>]{1,256})@[^\s@/"'<>]"#,
        Check::Value,
    )
    .traits(Traits {
        url_password: true,
        paired_user: true,
        ..PLAIN
    })
    .veto(vetoes::url_credentials)
    .samples(
        &[
        ("postgres://app:{}@db.internal:5432/x", "an:16"),
        ("git clone https://{}:x-oauth-basic@github.com/o/r", "hex:40"),
    ],
        &[
        "DATABASE_URL: postgresql://${DB_USER:-app}@db:5432/x",
        "// unix://[user[:password]@]/path/to/sock[?db=N]",
    ],
    ),
    spec(
        "authorization-header",
        &["authorization"],
        // Any scheme: `Bearer`, `token`, Okta's `SSWS`, `GenieKey`, ...
        r#"(?i)authorization["']?\s*[:=]\s*["']?(?:[a-z][a-z0-9_-]{1,30}\s+)?(?P<s>[^\s"',;]{8,})"#,
        Check::Value,
    )
    .veto(vetoes::header_name_again)
    .samples(
        &[("Authorization: token {}", "an:32")],
        &[
        "    my $header = $mode eq 'proxy' ? 'Proxy-Authorization' : 'Authorization';",
        "endpoint = OriginEndpoint(\n    arn=arn,\n    authorization=authorization,\n)",
    ],
    ),
    spec(
        // A session cookie is a bearer credential (`curl -v`, a HAR, a
        // browser's request headers); other cookies in the header stay.
        "session-cookie",
        &["cookie"],
        // (A value, not an assignment: a name ending in `id` is innocent
        // as a variable's, and a session id is the credential.)
        r#"(?i)\b(?:set-)?cookie["']?(?:\s*[:=]\s*|\s+)["']?(?:[^\r\n"']*?[;\s])?(?P<n>__(?:secure|host)-[a-z0-9_.-]+|[a-z0-9_.-]*(?:sess(?:ion)?(?:id)?|sid|auth|token|jwt|remember[a-z0-9_]*))=(?P<s>[^;\s"',]{16,})"#,
        Check::Value,
    )
    .traits(Traits {
        gate_trusts_veto: true,
        ..PLAIN
    })
    .veto(vetoes::anti_forgery_cookie)
    .samples(
        &[("Cookie: theme=dark; sessionid={}; csrftoken=x", "an:32")],
        &[
        "Cookie: csrftoken=Zf3D0LXCM3EIMbgJpUNnkRtOfOueHznB; theme=dark",
        "set-cookie: XSRF-TOKEN=Zf3D0LXCM3EIMbgJpUNnkRtOfOueHznB; Path=/",
    ],
    ),
    spec(
        // `dd-apikey-3c0c…`, `prospect-secret-5f4d…`: a credential word
        // glued by a dash to a long random value names it without any
        // service's name. (A bare `key-` is also a cache key's shape.)
        "dashed-credential",
        &["apikey-", "api-key-", "api_key-", "secret-", "token-", "access-"],
        r"(?i)(?:^|[^A-Za-z0-9])(?:api[-_]?key|secret(?:-key)?|token|access(?:-key)?)-(?P<s>[A-Za-z0-9]{24,128})(?:[^A-Za-z0-9_-]|$)",
        Check::Value,
    )
    .traits(Traits {
        random_only: true,
        ..PLAIN
    })
    .samples(
        &[
            ("dd-apikey-{}", "hex:32"),
            ("prospect-secret-{}", "hex:32"),
            ("less-secret-key-{}", "an:48"),
        ],
        &[
            "kubernetes.io/service-account-token-abcde",
            "access-control-allow-origin",
            "cache-key-9f2c4e1a7b3d5f6e8a9b0c1d2e3f4a5b",
            "secret-manager-secret-accessor",
        ],
    ),
    spec(
        "bearer-token",
        &["bearer"],
        r"(?i)\bbearer\s+(?P<s>[A-Za-z0-9._~+/-]{16,}=*)",
        Check::Value,
    )
    .traits(Traits { random_only: true, ..PLAIN }),
    spec(
        "basic-auth",
        &["basic"],
        r"(?i)\bbasic\s+(?P<s>[A-Za-z0-9+/]{8,}={0,2})",
        Check::Basic,
    ),
    spec(
        // A Docker `config.json`: `"auths": {"host": {"auth": "<base64 of
        // user:password>"}}`.
        "docker-config-auth",
        &["\"auth\""],
        r#""auth"\s*:\s*"(?P<s>[A-Za-z0-9+/]{8,}={0,2})""#,
        Check::Basic,
    ),
    spec(
        "curl-user",
        &["-u"],
        // (A password already replaced is read as one, for its user.)
        r#"(?:\s|^)(?:-u|--user|-U|--proxy-user)(?:\s+|=)["']?(?P<u>[^\s:"'\[<]{0,128})["']?:["']?(?P<s>\[REDACTED_SECRET:[^\]\s]*\]|[^\s"'\[]{1,256})"#,
        Check::Value,
    )
    .traits(Traits {
        paired_user: true,
        ..PLAIN
    }),
    spec(
        // `curl -u "sk_live_…:"`: an API key given as the user with an
        // empty password (the password form is `curl-user`).
        "curl-user-key",
        &["-u"],
        r#"(?:\s|^)(?:-u|--user)(?:\s+|=)["']?(?P<s>[^\s:"'\[<{}$]{12,128}):(?:["']|\s|$)"#,
        Check::Value,
    )
    .after_keyword(gates::option_user)
    .veto(vetoes::user_without_password)
    .samples(
        &[("curl -u \"{}:\" https://h", "an:16")],
        &["curl --user administrator: https://x"],
    ),
    spec(
        // An app access token, `<app id>|<app secret or signature>`; no
        // fixed literal, so behind its gate.
        "facebook-app-access-token",
        &[],
        r"(?:^|[^A-Za-z0-9_])(?P<s>[0-9]{15,16}\|[A-Za-z0-9_-]{27,40})(?:[^A-Za-z0-9_-]|$)",
        Check::Shape,
    )
    .gate(gates::digits_then_bar)
    .traits(Traits {
        gate_trusts_veto: true,
        ..PLAIN
    })
    .veto(vetoes::facebook_app_secret)
    .samples(&[], &["id 1234567890123456|the_second_column_is_words_x"]),
    spec(
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
    )
    .veto(vetoes::option_in_prose)
    .traits(Traits {
        cli_user: Some(UserFlags::Long),
        ..PLAIN
    })
    .samples(
        &[("tool --api-key {} run", "an:24")],
        &[
        "    via the --username and --password options",
        "\tthe new --password options.",
    ],
    ),
    spec(
        // A password on a command line: `docker login -u ci -p VALUE`
        // (also podman, buildah, skopeo, nerdctl, helm, oras, `az`, `oc`),
        // `mysql -uroot -pVALUE` (with a space, `-p` prompts and takes
        // nothing), `sshpass -p VALUE`, `redis-cli -a VALUE`, OpenSSL's
        // `-passin pass:VALUE` and `-k VALUE`, `psexec \\host -u USER -p
        // VALUE`, `mongosh -u admin -p VALUE`, `htpasswd -b FILE USER
        // VALUE`. A value that opens with `-` is the next option.
        "cli-login-password",
        &[
            "login", "mysql", "sshpass", "redis-cli", "pass:", "psexec", "openssl", "mongo",
            "htpasswd",
        ],
        r#"(?:\b(?:docker|podman|buildah|skopeo|nerdctl|helm|oras|az|oc)\b[^\n]{0,200}?\blogin\b[^\n]{0,200}?\s(?:-p|--password)(?:\s+|=)|\bmysql(?:dump|admin|sh)?\b[^\n]{0,200}?\s-p|\bsshpass\s+-p\s*|\bredis-cli\b[^\n]{0,200}?\s-a\s+|\s-pass(?:in|out)?\s+pass:|\bopenssl\b[^\n]{0,200}?\s-k\s+|(?i:\bpsexec)(?:\.exe)?\b[^\n]{0,200}?\s-p\s+|\bmongo(?:sh|dump|restore|import|export|stat|top|files)?\b[^\n]{0,200}?\s(?:-p|--password)(?:\s+|=)|\bhtpasswd(?:\s+-[A-Za-z]+)*\s+-[A-Za-z]*b[A-Za-z]*(?:\s+-[A-Za-z]+)*\s+[^\s-]\S*\s+\S+\s+)["']?(?P<s>[^\s"'-][^\s"']{3,})"#,
        Check::Value,
    )
    .traits(Traits {
        cli_user: Some(UserFlags::Short),
        ..PLAIN
    })
    .samples(
        &[
            ("openssl enc -d -aes-256-cbc -k {} -in backup.enc", "an:18"),
            ("mongosh mongodb://db:27017 -u admin -p {} --quiet", "an:16"),
            ("htpasswd -bc /etc/nginx/.htpasswd admin {}", "an:14"),
        ],
        &[
            "mongosh -u admin -p --authenticationDatabase admin",
            "openssl rand -hex 32 -k",
            "htpasswd -c /etc/nginx/.htpasswd admin",
        ],
    ),
    spec(
        // A password piped to a login that reads it from standard input
        // (`echo VALUE | docker login -u bob --password-stdin`, helm,
        // podman, oras and every other `--password-stdin`).
        "stdin-password",
        &["password-stdin"],
        r#"\b(?:echo|printf)(?:[ \t]+-[neE]+)*[ \t]+["']?(?P<s>[^\s"'|;&-][^\s"'|;&]{3,255})["']?[ \t]*\|[^\n|;&]{0,200}?--password-stdin\b"#,
        Check::Value,
    )
    .samples(
        &[
            ("echo \"{}\" | docker login ghcr.io -u bob --password-stdin", "an:24"),
            ("echo -n {} | helm registry login r.example.org --username ci --password-stdin", "an:20"),
        ],
        &[
            "echo $CR_PAT | docker login ghcr.io -u bob --password-stdin",
            "echo \"${{ secrets.GITHUB_TOKEN }}\" | docker login ghcr.io -u x --password-stdin",
            "echo done | tee log; docker login --password-stdin < pw.txt",
        ],
    ),
    spec(
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
    )
    .traits(Traits { random_only: true, ..PLAIN }),
    spec(
        // A variable set by a command, with a space where shells put `=`:
        // Dockerfile's `ENV NAME value`, fish's `set -gx NAME value`,
        // csh's `setenv NAME value`, Windows' `setx NAME value`, macOS's
        // `launchctl setenv NAME value`. The name is judged as an
        // assignment's is.
        "command-assignment",
        &["ENV ", "setenv", "setx", "set -"],
        r#"(?im)(?:^|[;&|(]|\s)(?:(?-i:ENV)|setenv|setx|set(?:[ \t]+-[a-z-]+)+)[ \t]+"?(?P<n>[A-Za-z0-9_]*(?:token|secret|passw(?:or)?d|pass|pwd|api_?key|apikey|access_?key|private_?key|key|auth|credentials?)(?:_?[0-9]{1,2})?)"?[ \t]+(?:"(?P<q>[^"\r\n]+)"|'(?P<a>[^'\r\n]+)'|(?P<s>[^\s"'`;&|]+))"#,
        Check::Assignment,
    )
    .traits(Traits { sets_literal: true, ..PLAIN }),
    spec(
        // `.netrc`: `machine HOST login USER password VALUE` on one line.
        "netrc-password",
        &["machine"],
        r#"\bmachine[ \t]+\S+[ \t]+(?:login[ \t]+(?P<u>\S+)[ \t]+)?password[ \t]+(?P<s>\S+)"#,
        Check::Value,
    )
    .traits(Traits {
        paired_user: true,
        ..PLAIN
    }),
    spec(
        // A line that is only `password VALUE`: a `.netrc` entry over
        // lines, a Gradle `credentials { password '…' }` block. (A line
        // of prose that wraps there, `password combination.`, ends a
        // sentence: its word is judged without the stop.)
        "password-line",
        &["password", "passwd"],
        r#"(?im)^[ \t]*(?P<n>password|passwd)[ \t]+(?:"(?P<q>[^"\r\n]+)"|'(?P<a>[^'\r\n]+)'|(?P<s>[^\s"']+?)[.,]?)[ \t]*$"#,
        Check::Assignment,
    ),
    spec(
        // What `vault operator init` prints, and the key `unseal` takes.
        "vault-init-secret",
        &["unseal", "root token"],
        r#"(?i)(?:\bunseal key(?:[ \t][0-9]{1,2})?:[ \t]*|\bvault[ \t]+operator[ \t]+unseal[ \t]+(?:-[a-z-]+(?:=\S+)?[ \t]+)*|\binitial root token:[ \t]*)(?P<s>[A-Za-z0-9+/.]{20,}={0,2})"#,
        Check::Value,
    ),
    spec(
        // .NET credentials in code: `new NetworkCredential("user", "…")`,
        // `new DirectoryEntry("LDAP://…", "user", "…")`.
        "dotnet-credential",
        &["NetworkCredential", "DirectoryEntry"],
        r#"(?:NetworkCredential\(\s*"[^"\r\n]*"\s*,|DirectoryEntry\(\s*"[^"\r\n]*"\s*,\s*"[^"\r\n]*"\s*,)\s*"(?P<q>[^"\r\n]+)""#,
        Check::Value,
    ),
    spec(
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
    spec(
        // `the password is 'centipede'`: a quoted password in a sentence,
        // also `the password for user 'postgres' is 'admin'`.
        "password-is-quoted",
        &[" is "],
        r#"(?i)\b(?P<n>password|passwd|passphrase)(?:[ \t]+for(?:[ \t]+the)?[ \t]+(?:user|account|login)[ \t]+(?:"[^"\s]{1,64}"|'[^'\s]{1,64}'|[A-Za-z0-9_.@-]{1,64}))?[ \t]+is[ \t]+(?:"(?P<q>[^"\s]{4,64})"|'(?P<a>[^'\s]{4,64})')"#,
        Check::Assignment,
    ),
    spec(
        // `my API key is 2afd…`: a secret's name, `is`, and a long token in
        // a sentence (short words after `is` are prose: `is required`).
        // After the weak `key` (`Your API2CART key is …`) the value must be
        // strong, as in an assignment.
        "secret-label-is",
        &[" is "],
        // `for` and up to three words may name whose it is (`The password
        // for the admin account is …`); a sentence's full stop is not the
        // value's.
        r#"(?i)\b(?P<n>api[ _-]?key|access[ _-]?key|secret[ _-]?key|token|secret|password|key)(?:[ \t]+for(?:[ \t]+[A-Za-z0-9_.@'"-]{1,32}){1,3})?[ \t]* is [ \t]*["'`]?(?P<s>[A-Za-z0-9+/_=.-]{15,}[A-Za-z0-9+/_=-])"#,
        Check::Assignment,
    )
    .samples(
        &[
            ("Your API key is {}, which you need", "hex:32"),
            ("The password for the admin account is {}.", "an:16"),
        ],
        &[
            "        * This routine returns CK_TRUE if this token is write-protected.",
            "        * This routine returns CK_TRUE if this token is write-protected-by-policy.",
            "The session token is valid-until-the-next-login.",
        ],
    ),
    spec(
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
        Check::Spaced,
    )
    .after_keyword(gates::spaced_value_follows),
    spec(
        "query-secret",
        &["token=", "key=", "secret=", "passwd=", "password=", "pass=", "pwd="],
        // A password parameter by its endings (`userpass`, `db_pass`,
        // `pwd`), not a word that ends in `pass` (`bypass`, `compass`).
        r#"(?i)[?&](?:[a-z_]*token|api_?key|key|[a-z_]*secret|[a-z_]*passw(?:or)?d|(?:[a-z]*_)?(?:user|db|admin|login)?pass|[a-z_]*pwd)=(?P<s>[^&\s"'`#<>]{6,})"#,
        Check::Value,
    )
    .veto(vetoes::query_id_or_word)
    .samples(
        &[
            ("https://h/p?api_key={}", "an:24"),
            ("jdbc:mysql://db/app?user=admin&userpass={}", "an:12"),
            ("https://h/login?pwd={}", "an:12"),
        ],
        &[
        "https://h/p?bypass=cache_all_entries",
        "    [subset] fuzzer fix: https://oss-fuzz.com/testcase?key=6254792024915968",
        "(\"topic?key=STRINGS\", \"Pydoc: TOPIC STRINGS\"),",
    ],
    ),
    spec(
        // An AWS Systems Manager parameter read with decryption: the
        // `Value` after `"Type": "SecureString"` (`aws ssm get-parameter
        // --with-decryption`; pretty-printed, the two lines pair).
        "ssm-secure-string",
        &["SecureString"],
        r#""Type"[ \t]*:[ \t]*"SecureString"[ \t]*,[ \t]*"Value"[ \t]*:[ \t]*"(?P<q>[^"\\\r\n]+)""#,
        Check::Value,
    ),
    spec(
        // A variable written as a name and a value member: Kubernetes and
        // ECS `env` lists, Azure `secrets`, Postman environments
        // (`{"name": "DB_PASSWORD", "value": "…"}`, `"key"`/`"value"`),
        // and the pair as other services spell it: AWS tags and SSM
        // (`"Key"`/`"Name"` and `"Value"`), CloudFormation's
        // `"ParameterKey"`/`"ParameterValue"`, Beanstalk's `"OptionName"`.
        // Up to two string members may stand between (`"Type": "String"`).
        // The JSON passes read the same pair by the same endings
        // (`names::pair_value_member`). The name is judged as an
        // assignment's.
        "name-value-pair",
        &["value\""],
        concat!(
            r#"(?i)"[a-z]*(?:name|key)"[ \t]*:[ \t]*"(?P<n>"#,
            pair_secret_name!(),
            r#")"[ \t]*,[ \t]*(?:"[a-z_]+"[ \t]*:[ \t]*"[^"\\\r\n]*"[ \t]*,[ \t]*){0,2}"#,
            r#""[a-z]*value"[ \t]*:[ \t]*"(?P<q>[^"\\\r\n]+)""#,
        ),
        Check::Assignment,
    )
    .traits(Traits {
        pair_name: true,
        ..PLAIN
    })
    .samples(
        &[],
        &[
            r#"{"Key": "owner", "Value": "Zq8vLmw2RtK9"}"#,
            r#"{"name": "DB_PASSWORD", "description": "the database's", "value": "${DB_PASSWORD}"}"#,
            r#"{"ParameterKey": "ApiTokenName", "ParameterValue": "deploy-bot"}"#,
        ],
    ),
    spec(
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
    )
    .traits(Traits {
        pair_name: true,
        ..PLAIN
    })
    .samples(
        &[("<key>PASS</key><value>{}</value>", "alpha:9")],
        &["<key>pass</key><value>true</value>"],
    ),
    spec(
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
    )
    .veto(vetoes::not_random)
    .samples(
        &[("const t = jwt.sign(payload, '{}')", "an:24")],
        &["const t = jwt.sign(payload, 'supersecret')"],
    ),
    spec(
        // An Infura project's key, in its endpoint's path.
        "infura-api-key",
        &["infura.io/"],
        r"infura\.io/(?:ws/)?v3/(?P<s>[0-9a-f]{32})\b",
        Check::Shape,
    ),
    spec(
        // A classic OAuth token (40 hex) as a clone URL's user.
        "github-url-token",
        &["@github.com"],
        r"://(?P<s>[0-9a-f]{40})@github\.com\b",
        Check::Shape,
    ),
    spec(
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
    spec(
        // A secret's name, an operator and a value. A quoted value may
        // follow a line break (`const apiKey =` then the string, as
        // Prettier wraps a long one); a bare one on a later line (`l`)
        // must stand alone there and look random (`## Save pass:`, a
        // blank line, the password; not `class ApiKey:` then `@property`).
        // A quote may carry its language's prefix: Python's `b`, `r`, `u`,
        // `f` (an f-string that interpolates is a template, judged as
        // one), C#'s `@` and `$`, C's `L` and `u8`.
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
        r#"(?i)(?:^|[^A-Za-z0-9_.-])(?P<n>[A-Za-z0-9_.-]*(?:token|secret|passw(?:or)?d|pass|pwd|api_?key|apikey|access_?key|secret_?key|private_?key|client_?secret|credentials?|auth_?token|database_?url|connection_?string|secret_?string|secret_?key_?base|dsn|key|auth|pw)(?:[_-]?[0-9]{1,2})?|[A-Za-z0-9_.-]*passw(?:or)?d(?:[_-][A-Za-z0-9]+){1,2})(?:[ \t]*:[ \t]*(?:str|string|String|&str|&'static str|Optional\[str\])[ \t]*=|(?:["'`]\]?)?\s*(?:={2,3}|!==?|=>|:{1,3}=|[?.+]?=|:)|["']\s*,|[ \t]+(?:string|String|str|&str)[ \t]*=)(?:\s*(?:(?:@|\$@?|@\$|u8|[bBrRuUfFL]|[rR][bBfF]|[bBfF][rR])?"(?P<q>[^"\r\n]+)"|(?:[bBrRuUfF]|[rR][bBfF]|[bBfF][rR])?'(?P<a>[^'\r\n]+)'|`(?P<b>[^`\r\n]+)`)|[ \t]*(?P<s>[^\s"'`,;&<>)\]}]+)|[ \t]*\r?\n\s*(?P<l>[^\s"'`,;&<>)\]}]{16,}))"#,
        Check::Assignment,
    )
    .after_keyword(gates::operator_follows_name)
    .traits(Traits {
        sibling_user: true,
        ..PLAIN
    }),
    spec(
        // A personal access token by its usual name in CI (`ADO_PAT`,
        // `GITHUB_PAT`, `azure_devops_pat`). `pat` also abbreviates
        // "pattern" (`glob_pat = "*.rs"`), so the name is weak and the value
        // a long token.
        "pat-assignment",
        &["_pat", "-pat"],
        r#"(?i)(?:^|[^A-Za-z0-9_.-])(?P<n>[A-Za-z0-9.-]*[A-Za-z0-9][_-]pat)(?:["'`]\]?)?[ \t]*(?:=|:=|=>|:)[ \t]*["'`]?(?P<s>[A-Za-z0-9_-]{20,})(?:[^A-Za-z0-9_-]|$)"#,
        Check::Assignment,
    ),
    spec(
        // `deploy token - 'value'`: a dash between a secret's name and its
        // quoted value, as in notes and logs. Only a quoted value counts
        // (`key - offset` is arithmetic).
        "secret-label-dash",
        &[" - "],
        r#"(?i)(?:^|[^A-Za-z0-9_.-])(?P<n>[A-Za-z0-9_.-]*(?:token|secret|passw(?:or)?d|pwd|api_?key|apikey|access_?key|secret_?key|private_?key|client_?secret|credentials?|key)(?:[_-]?[0-9]{1,2})?)[ \t]* - [ \t]*(?:"(?P<q>[^"\r\n]+)"|'(?P<a>[^'\r\n]+)')"#,
        Check::Assignment,
    ),
    spec(
        "sidekiq-secret",
        &["CONTRIBSYS__COM"],
        r#"(?i)BUNDLE_(?:ENTERPRISE|GEMS)__CONTRIBSYS__COM["']?\s*[:=]\s*["']?(?P<s>[a-f0-9]{8}:[a-f0-9]{8})"#,
        Check::Value,
    ),
    spec(
        "sonar-login",
        &["sonar"],
        r#"(?i)sonar[._-]?login["']?(?:\s*(?:=>|:{1,3}=|[?]?=|:|,)|\s+value\s*=)\s*["']?(?P<s>[A-Za-z0-9_]{40,44})"#,
        Check::Value,
    ),
    spec(
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
    )
    .samples(
        &[("<add key=\"ClearTextPassword\" value=\"{}\" />", "an:14")],
        &[
            "<param name=\"authKey\" value=\"auth_key_name\"/>",
            "<add key=\"ClientSecret\" value=\"Set in Key Vault\" />",
        ],
    ),
    spec(
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
    )
    .veto(vetoes::text_or_setting_name)
    .samples(
        &[("<entry key=\"jdbc.password\">{}</entry>", "an:24")],
        &["<string name=\"action_forgot_password\">Forgot password?</string>"],
    ),
    spec(
        // Maven's `settings-security.xml`: the master password, encrypted
        // with a key every Maven holds, so as good as plain.
        "maven-master-password",
        &["<master>"],
        r"<master>\s*(?P<s>\{[A-Za-z0-9+/=\\]{20,}\}?)\s*</master>",
        Check::Shape,
    ),
    spec(
        "secret-element",
        &["token", "secret", "pass", "pwd", "key", "credential"],
        // `<apiToken>value</apiToken>`, the value alone on its line or not.
        // Element text is data, not code, so it is read as a literal
        // (group `q`), spaces inside included: Jenkins keeps its
        // credentials as `<secret>{AQAAABAAAA…}</secret>`.
        r#"(?i)<(?P<n>[A-Za-z0-9_.:-]*(?:token|secret|passw(?:or)?d|pwd|key|client_?secret|credentials?))>\s*(?P<q>[^<>\s](?:[^<>\r\n]*[^<>\s])?)\s*</"#,
        Check::Assignment,
    )
    .after_keyword(gates::element_name_closes),
];
