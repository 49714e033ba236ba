//! Tokens that announce themselves: a vendor's fixed prefix and a body of
//! a documented alphabet and length. Each is a shape rule (the whole token
//! goes, body included, wherever it stands) whose prefix is its prefilter
//! keyword. Formats are taken from the vendors' documentation and the
//! public rule sets of secret scanners, written here as our own regexes.
//!
//! Each entry also carries a sample shape, so the tests generate one true
//! positive per rule from the same row: `lit:TEXT` is literal text, and
//! `CLASS:N` is N characters of a class (`an` mixed alphanumerics, `hex`,
//! `HEX`, `b64`, `url` URL-safe base64, `up` upper case and digits, `low`
//! lower case and digits, `dig` digits, `alpha` letters, `b32` the bech32 alphabet in upper
//! case), joined by `|`.

use super::gates;
use super::spec::{token, Spec};
use super::vetoes;

/// The traits of a row whose veto checks a token's length: the
/// readback's gate keeps its verdict, which says nothing about how random
/// the value looks.
const BY_LENGTH: super::spec::Traits = super::spec::Traits {
    gate_trusts_veto: true,
    ..super::spec::PLAIN
};

/// The table; order only breaks ties between rules claiming one span.
pub(crate) const PREFIXED: &[Spec] = &[
    token(
        "1password-service-account-token",
        &["ops_eyJ"],
        r"(?P<s>ops_eyJ[A-Za-z0-9+/_=-]{100,})",
        "lit:ops_eyJ|b64:250",
    ),
    token(
        "1password-secret-key",
        &["A3-"],
        r"\b(?P<s>A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5})",
        "lit:A3-|up:6|lit:-|up:11|lit:-|up:5|lit:-|up:5|lit:-|up:5",
    ),
    token(
        "adobe-client-secret",
        &["p8e-"],
        r"\b(?P<s>p8e-[A-Za-z0-9_-]{32})",
        "lit:p8e-|url:32",
    ),
    token(
        "age-secret-key",
        &["AGE-SECRET-KEY-1"],
        r"(?P<s>AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58})",
        "lit:AGE-SECRET-KEY-1|b32:58",
    ),
    token(
        "alibaba-access-key-id",
        &["LTAI"],
        r"\b(?P<s>LTAI[A-Za-z0-9]{20})\b",
        "lit:LTAI|an:20",
    ),
    token(
        "artifactory-api-key",
        &["AKCp"],
        r"\b(?P<s>AKCp[A-Za-z0-9]{69})",
        "lit:AKCp|an:69",
    ),
    token(
        "artifactory-reference-token",
        &["cmVmdGtu"],
        r"\b(?P<s>cmVmdGtu[A-Za-z0-9]{56})",
        "lit:cmVmdGtu|an:56",
    ),
    token(
        "atlassian-api-token",
        &["ATATT3"],
        r"\b(?P<s>ATATT3[A-Za-z0-9_=-]{150,220})",
        "lit:ATATT3|url:186",
    ),
    token(
        "clojars-api-token",
        &["CLOJARS_"],
        r"(?P<s>CLOJARS_[a-z0-9]{60})",
        "lit:CLOJARS_|low:60",
    ),
    token(
        "databricks-api-token",
        &["dapi"],
        r"\b(?P<s>dapi[a-f0-9]{32}(?:-[0-9]+)?)",
        "lit:dapi|hex:32",
    ),
    token(
        "digitalocean-token",
        &["dop_v1_", "doo_v1_", "dor_v1_"],
        r"\b(?P<s>do[opr]_v1_[a-f0-9]{64})",
        "lit:dop_v1_|hex:64",
    ),
    token(
        "docker-pat",
        &["dckr_pat_", "dckr_oat_"],
        r"(?P<s>dckr_(?:pat|oat)_[A-Za-z0-9_-]{20,})",
        "lit:dckr_pat_|url:27",
    ),
    token(
        "doppler-token",
        &[
            "dp.pt.",
            "dp.st.",
            "dp.sa.",
            "dp.ct.",
            "dp.scim.",
            "dp.audit.",
        ],
        // A service token names its environment: `dp.st.prd.…`.
        r"(?P<s>dp\.(?:pt|st|sa|ct|scim|audit)\.(?:[a-z0-9_-]{1,32}\.)?[A-Za-z0-9]{40,44})",
        "lit:dp.st.dev.|an:43",
    ),
    token(
        "duffel-api-token",
        &["duffel_"],
        r"(?P<s>duffel_(?:test|live)_[A-Za-z0-9_=-]{43})",
        "lit:duffel_live_|url:43",
    ),
    token(
        "dynatrace-api-token",
        &["dt0c01."],
        r"(?P<s>dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64})",
        "lit:dt0c01.|up:24|lit:.|an:64",
    ),
    token(
        "easypost-api-token",
        &["EZAK", "EZTK"],
        r"(?:^|[^A-Za-z0-9+/])(?P<s>EZ[AT]K[A-Za-z0-9]{54})",
        "lit:EZAK|an:54",
    ),
    token(
        "facebook-access-token",
        &["EAAM", "EAAC", "EAAG"],
        r"\b(?P<s>EAA[MCG][A-Za-z0-9]{100,})",
        "lit:EAAG|an:160",
    ),
    token(
        "figma-token",
        &["figd_"],
        r"(?P<s>figd_[A-Za-z0-9_-]{38,})",
        "lit:figd_|url:40",
    ),
    token(
        "flutterwave-key",
        &["FLWSECK", "FLWPUBK"],
        r"(?P<s>FLW(?:SECK|PUBK)(?:_TEST)?-(?:[a-hA-H0-9]{12,32}|[a-z0-9]{32})(?:-X)?)",
        "lit:FLWSECK_TEST-|hex:32|lit:-X",
    ),
    token(
        "flyio-token",
        &["fo1_", "fm1r_", "fm1a_", "fm2_"],
        r"(?:^|[^A-Za-z0-9+/_-])(?P<s>fo1_[A-Za-z0-9_-]{43}|fm(?:1[ar]|2)_[A-Za-z0-9+/]{100,}={0,3})",
        "lit:fo1_|url:43",
    ),
    token(
        "contentful-personal-access-token",
        &["CFPAT-"],
        r"\b(?P<s>CFPAT-[A-Za-z0-9_-]{43})(?:[^A-Za-z0-9_-]|$)",
        "lit:CFPAT-|url:43",
    ),
    token(
        "clickup-personal-token",
        &["pk_"],
        r"\b(?P<s>pk_[0-9]{6,10}_[0-9A-Z]{32})\b",
        "lit:pk_|dig:8|lit:_|up:32",
    ),
    token(
        "frameio-api-token",
        &["fio-u-"],
        r"(?P<s>fio-u-[A-Za-z0-9_=-]{64})",
        "lit:fio-u-|url:64",
    ),
    token(
        "grafana-token",
        &["glc_", "glsa_", "eyJrIjoi"],
        r"(?P<s>glc_[A-Za-z0-9+/]{32,400}={0,3}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|eyJrIjoi[A-Za-z0-9]{70,400}={0,3})",
        "lit:glsa_|an:32|lit:_|hex:8",
    ),
    token(
        "groq-api-key",
        &["gsk_"],
        r"\b(?P<s>gsk_[A-Za-z0-9]{48,})",
        "lit:gsk_|an:52",
    ),
    token(
        "harness-api-key",
        &["pat.", "sat."],
        r"\b(?P<s>(?:pat|sat)\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20})",
        "lit:pat.|url:22|lit:.|an:24|lit:.|an:20",
    ),
    token(
        "hashicorp-terraform-token",
        &["atlasv1"],
        r"(?P<s>[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70})",
        "an:14|lit:.atlasv1.|url:67",
    ),
    token(
        "heroku-api-key",
        &["HRKU-"],
        r"(?P<s>HRKU-[A-Za-z0-9_-]{20,})",
        "lit:HRKU-AA|url:58",
    ),
    token(
        "huggingface-org-token",
        &["api_org_"],
        r"(?P<s>api_org_[A-Za-z]{34})",
        "lit:api_org_|alpha:34",
    ),
    token(
        "infracost-api-token",
        &["ico-"],
        r"(?:^|[^A-Za-z0-9_.-])(?P<s>ico-[A-Za-z0-9]{32})\b",
        "lit:ico-|an:32",
    ),
    token(
        "langsmith-api-key",
        &["lsv2_"],
        r"(?P<s>lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10})",
        "lit:lsv2_pt_|hex:32|lit:_|hex:10",
    ),
    token(
        "linear-api-key",
        &["lin_api_", "lin_oauth_"],
        r"(?P<s>lin_(?:api|oauth)_[A-Za-z0-9]{40})",
        "lit:lin_api_|an:40",
    ),
    token(
        "mailchimp-api-key",
        &["-us"],
        r"\b(?P<s>[a-f0-9]{32}-us[0-9]{1,2})\b",
        "hex:32|lit:-us|dig:2",
    ),
    token(
        "maxmind-license-key",
        &["_mmk"],
        r"\b(?P<s>[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk)\b",
        "an:6|lit:_|an:29|lit:_mmk",
    ),
    token(
        "new-relic-key",
        &["NRJS-", "NRII-", "NRAK-", "NRAA-", "NRBR-"],
        r"\b(?P<s>NR(?:JS|BR)-[a-f0-9]{19}|NRII-[A-Za-z0-9_-]{32}|NRA[AK]-[A-Za-z0-9]{27})",
        "lit:NRAK-|up:27",
    ),
    token(
        // Ingest license keys and mobile app tokens end in their marker.
        "new-relic-license-key",
        &["NRAL", "-NRMA"],
        r"\b(?P<s>(?:[0-9a-fA-F]{36}|[a-z]{2}[0-9]{2}xx[0-9a-fA-F]{30})NRAL|(?:AA[0-9a-f]{40}|eu01xx[0-9a-f]{36})-NRMA)\b",
        "hex:32|lit:FFFFNRAL",
    ),
    token(
        "notion-api-token",
        &["ntn_", "secret_"],
        r"\b(?P<s>ntn_[0-9]{11}[A-Za-z0-9]{35}|secret_[A-Za-z0-9]{43})\b",
        "lit:ntn_|dig:11|an:35",
    ),
    token(
        "openshift-user-token",
        &["sha256~"],
        r"(?P<s>sha256~[A-Za-z0-9_-]{43})",
        "lit:sha256~|url:43",
    ),
    token(
        "perplexity-api-key",
        &["pplx-"],
        r"\b(?P<s>pplx-[A-Za-z0-9]{48})",
        "lit:pplx-|an:48",
    ),
    token(
        "pinecone-api-key",
        &["pcsk_"],
        r"(?P<s>pcsk_[A-Za-z0-9_]{50,})",
        "lit:pcsk_|an:70",
    ),
    token(
        "planetscale-token",
        &["pscale_tkn_", "pscale_oauth_", "pscale_pw_"],
        r"(?P<s>pscale_(?:tkn|oauth|pw)_[A-Za-z0-9=_.-]{32,64})",
        "lit:pscale_tkn_|url:43",
    ),
    token(
        "postman-api-token",
        &["PMAK-"],
        r"\b(?P<s>PMAK-(?:[a-f0-9]{24}-[a-f0-9]{34}|[A-Za-z0-9]{59}))\b",
        "lit:PMAK-|hex:24|lit:-|hex:34",
    ),
    token(
        "prefect-api-token",
        &["pnu_"],
        r"\b(?P<s>pnu_[A-Za-z0-9]{36})",
        "lit:pnu_|an:36",
    ),
    token(
        "pulumi-api-token",
        &["pul-"],
        r"\b(?P<s>pul-[a-z0-9]{40})",
        "lit:pul-|hex:40",
    ),
    token(
        "readme-api-token",
        &["rdme_"],
        r"(?P<s>rdme_[a-z0-9]{70})",
        "lit:rdme_|low:70",
    ),
    token(
        "replicate-api-token",
        &["r8_"],
        r"\b(?P<s>r8_[A-Za-z0-9]{37})\b",
        "lit:r8_|an:37",
    ),
    token(
        "rubygems-api-token",
        &["rubygems_"],
        r"(?P<s>rubygems_[a-z0-9]{48})",
        "lit:rubygems_|hex:48",
    ),
    token(
        "scalingo-api-token",
        &["tk-us-"],
        r"(?P<s>tk-us-[A-Za-z0-9_-]{48})",
        "lit:tk-us-|url:48",
    ),
    token(
        "sendgrid-api-key",
        &["SG."],
        r"\b(?P<s>SG\.[A-Za-z0-9=_-]{16,32}\.[A-Za-z0-9=_-]{16,64})",
        "lit:SG.|url:22|lit:.|url:43",
    ),
    token(
        "sendinblue-api-key",
        &["xkeysib-", "xsmtpsib-"],
        r"(?P<s>x(?:keysib|smtpsib)-[a-f0-9]{64}-[A-Za-z0-9]{16})",
        "lit:xkeysib-|hex:64|lit:-|an:16",
    ),
    token(
        "sentry-token",
        &["sntrys_", "sntryu_"],
        r"(?P<s>sntrys_eyJ[A-Za-z0-9+/=_-]{60,}|sntryu_[a-f0-9]{64}\b)",
        "lit:sntryu_|hex:64",
    ),
    token(
        "settlemint-token",
        &["sm_aat_", "sm_pat_", "sm_sat_"],
        r"(?P<s>sm_(?:aat|pat|sat)_[A-Za-z0-9]{16})",
        "lit:sm_pat_|an:16",
    ),
    token(
        "mongodb-atlas-service-account-secret",
        &["mdb_sa_sk_"],
        r"\b(?P<s>mdb_sa_sk_[A-Za-z0-9_-]{40})(?:[^A-Za-z0-9_-]|$)",
        "lit:mdb_sa_sk_|url:40",
    ),
    token(
        "shippo-api-token",
        &["shippo_"],
        r"(?P<s>shippo_(?:live|test)_[a-fA-F0-9]{40})",
        "lit:shippo_live_|hex:40",
    ),
    token(
        "shopify-token",
        &["shpat_", "shpca_", "shppa_", "shpss_"],
        r"\b(?P<s>shp(?:at|ca|pa|ss)_[A-Za-z0-9]{32,64})\b",
        "lit:shpat_|hex:32",
    ),
    token(
        "segment-public-api-token",
        &["sgp_"],
        r"\b(?P<s>sgp_[A-Za-z0-9]{64})\b",
        "lit:sgp_|an:64",
    ),
    token(
        "sourcegraph-token",
        &["sgp_"],
        r"\b(?P<s>sgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40})",
        "lit:sgp_|hex:40",
    ),
    token(
        "square-token",
        &["sq0atp-", "sq0csp-", "EAAA"],
        // Alone, not a look-alike inside a base64 run (`…AAB/EAAAoBUA…`
        // in an embedded wasm module).
        r"(?:^|[^A-Za-z0-9+/_-])(?P<s>sq0atp-[A-Za-z0-9_-]{22}|sq0csp-[A-Za-z0-9_-]{43}|EAAA[A-Za-z0-9_-]{22,64})(?:[^A-Za-z0-9+/_-]|$)",
        "lit:sq0csp-|url:43",
    ),
    token(
        // A personal access token's secret: 16 bytes in base64, a colon,
        // 32 letters and digits.
        "tableau-personal-access-token",
        &["==:"],
        r"(?:^|[^A-Za-z0-9+/=])(?P<s>[A-Za-z0-9+/]{22}==:[A-Za-z0-9]{32})(?:[^A-Za-z0-9]|$)",
        "b64:22|lit:==:|an:32",
    ),
    token(
        "tailscale-key",
        &["tskey-"],
        r"(?P<s>tskey-(?:[a-z]{3,8}-)?[A-Za-z0-9]{6,}-[A-Za-z0-9_]{10,})",
        "lit:tskey-auth-|an:17|lit:-|an:30",
    ),
    token(
        "twilio-api-key",
        &["SK"],
        r"\b(?P<s>SK[0-9a-fA-F]{32})\b",
        "lit:SK|hex:32",
    ),
    token(
        "typeform-api-token",
        &["tfp_"],
        r"(?P<s>tfp_(?:[A-Za-z0-9_.=-]{59}|[A-Za-z0-9_]{40,58}\b))",
        "lit:tfp_|url:59",
    ),
    token(
        "teamwork-api-token",
        &["tkn.v1_"],
        r"\b(?P<s>tkn\.v1_[A-Za-z0-9+/]{60,}={0,2})",
        "lit:tkn.v1_|an:71|lit:=",
    ),
    token(
        "voiceflow-api-key",
        &["VF."],
        r"\b(?P<s>VF\.(?:(?:DM|WS)\.)?[a-fA-F0-9]{24}\.[A-Za-z0-9]{16})\b",
        "lit:VF.DM.|hex:24|lit:.|an:16",
    ),
    token(
        // Vercel's prefixed tokens: personal, integration, app access,
        // app refresh, API key.
        "vercel-token",
        &["vcp_", "vci_", "vca_", "vcr_", "vck_"],
        r"\b(?P<s>vc[pirak]_[A-Za-z0-9]{20,60})\b",
        "lit:vcp_|an:40",
    ),
    token(
        "vault-token",
        &["hvs.", "hvb.", "hvr."],
        r"\b(?P<s>hv[sbr]\.[A-Za-z0-9_-]{24,})",
        "lit:hvs.|url:95",
    ),
    token(
        "xai-api-key",
        &["xai-"],
        r"\b(?P<s>xai-[A-Za-z0-9]{70,})",
        "lit:xai-|an:80",
    ),
    token(
        "cloudflare-token",
        &["cfut_", "cfk_", "cfat_"],
        // 40 characters and an 8-hex checksum, no letter before, nothing
        // after.
        r"(?:^|[^A-Za-z])(?P<s>cf(?:ut|k|at)_[A-Za-z0-9]{40}[0-9a-f]{8})(?:[^A-Za-z0-9]|$)",
        "lit:cfut_|an:40|hex:8",
    ),
    token(
        "deepseek-style-key",
        &["sk-"],
        r"\b(?P<s>sk-[a-f0-9]{32})\b",
        "lit:sk-|hex:32",
    ),
    token(
        "gitlab-feature-flag-token",
        &["glffct-"],
        r"(?P<s>glffct-[A-Za-z0-9_-]{20,})",
        "lit:glffct-|url:20",
    ),
    token(
        "authress-key",
        &["sc_", "ext_", "scauth_", "authress_"],
        r"\b(?P<s>(?:sc|ext|scauth|authress)_[a-z0-9]{5,30}\.[a-z0-9]{4,6}\.acc[_-][a-z0-9-]{10,32}\.[A-Za-z0-9+/_=-]{30,120})",
        "lit:sc_|low:12|lit:.|low:5|lit:.acc_|low:16|lit:.|url:60",
    ),
    token(
        // The Bot API puts the token in the path after `bot`
        // (`api.telegram.org/bot123…:AA…/sendMessage`), glued to it.
        // Tokens of 33 and 34 characters after the colon stand in
        // scanners' suites beside the usual 35.
        "telegram-bot-token",
        &[":A"],
        r"(?:\b|bot)(?P<s>[0-9]{5,16}:A[A-Za-z0-9_-]{32,34})(?:[^A-Za-z0-9_-]|$)",
        "dig:10|lit::AA|url:33",
    )
    .samples(
        &[
            ("https://api.telegram.org/bot{}/sendMessage", "dig:10|lit::AA|url:33"),
            ("TELEGRAM={}", "dig:10|lit::AA|url:32"),
        ],
        &["id 12345:A1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6q7r8s9t0u1v2w3"],
    ),
    token(
        // The first segment is the base64 of a decimal user id, so it
        // starts with M, N or O; there is no fixed literal, so the rule
        // always runs behind its gate.
        "discord-bot-token",
        &[],
        r"(?:^|[^A-Za-z0-9_-])(?P<s>[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40})(?:[^A-Za-z0-9_-]|$)",
        "lit:MT|an:22|lit:.|an:6|lit:.|an:38",
    )
    .gate(gates::dots_seven_apart),
    token(
        // Mailgun's private API keys since 2023 (the older `key-…` form
        // is also a cache key's shape, so it needs Mailgun's name).
        "mailgun-api-key",
        &[],
        r"\b(?P<s>[a-f0-9]{32}-[a-f0-9]{8}-[a-f0-9]{8})\b",
        "hex:32|lit:-|hex:8|lit:-|hex:8",
    )
    .gate(gates::hex_dash_hex_dash),
    token(
        // A personal access token: `1/<user id>:<32 hex>`, or since 2023
        // `2/<user id>/<app id>:<32 hex>`; no fixed literal, so behind its
        // gate.
        "asana-personal-access-token",
        &[],
        r"(?:^|[^A-Za-z0-9_./-])(?P<s>[12]/[0-9]{10,19}(?:/[0-9]{10,19})?:[0-9a-f]{32})\b",
        "lit:1/|dig:16|lit::|hex:32",
    )
    .gate(gates::colon_then_hex32),
    token(
        // A session id: the 15-character org id (`00D…`), `!`, then the
        // session's secret.
        "salesforce-access-token",
        &["00D"],
        r"\b(?P<s>00D[A-Za-z0-9]{12}![A-Za-z0-9_.]{80,120})",
        "lit:00D|an:12|lit:!|an:96",
    )
    .after_keyword(gates::salesforce_org),
    token(
        "ionic-personal-access-token",
        &["ion_"],
        r"\b(?P<s>ion_[A-Za-z0-9]{42})\b",
        "lit:ion_|an:42",
    )
    .after_keyword(gates::ionic_body),
    token(
        "adafruit-io-key",
        &["aio_"],
        r"\b(?P<s>aio_[A-Za-z0-9]{28})\b",
        "lit:aio_|an:28",
    ),
    token(
        "alchemy-api-key",
        &["alcht_"],
        r"\b(?P<s>alcht_[A-Za-z0-9]{30})\b",
        "lit:alcht_|an:30",
    ),
    token(
        "apify-api-token",
        &["apify_api_"],
        r"\b(?P<s>apify_api_[A-Za-z0-9-]{36})\b",
        "lit:apify_api_|an:36",
    ),
    token(
        "atlassian-api-token-v2",
        &["ATCTT3"],
        r"\b(?P<s>ATCTT3xFfG[A-Za-z0-9+/=_-]+=[A-Za-z0-9]{8})\b",
        "lit:ATCTT3xFfG|url:180|lit:=|an:8",
    ),
    token(
        "bannerbear-api-key",
        &["bb_pr_", "bb_ma_"],
        r"\b(?P<s>bb_(?:pr|ma)_[a-f0-9]{30})\b",
        "lit:bb_pr_|hex:30",
    ),
    token(
        "buildkite-user-token",
        &["bkua_"],
        r"\b(?P<s>bkua_[a-z0-9]{40})\b",
        "lit:bkua_|low:40",
    ),
    token(
        "figma-personal-access-token",
        &["figp_"],
        r"(?P<s>figp_[A-Za-z0-9_=-]{40,54})(?:[^A-Za-z0-9_=-]|$)",
        "lit:figp_|url:40",
    ),
    token(
        "flexport-api-key",
        &["shltm_"],
        r"\b(?P<s>shltm_[A-Za-z0-9_-]{40})",
        "lit:shltm_|url:40",
    ),
    token(
        "hubspot-private-app-token",
        &["pat-eu1-", "pat-na1-"],
        r"\b(?P<s>pat-(?:eu|na)1-[A-Za-z0-9]{8}-[A-Za-z0-9]{4}-[A-Za-z0-9]{4}-[A-Za-z0-9]{4}-[A-Za-z0-9]{12})\b",
        "lit:pat-na1-|hex:8|lit:-|hex:4|lit:-|hex:4|lit:-|hex:4|lit:-|hex:12",
    ),
    token(
        "nvidia-api-key",
        &["nvapi-"],
        r"\b(?P<s>nvapi-[A-Za-z0-9_-]{64})(?:[^A-Za-z0-9_-]|$)",
        "lit:nvapi-|url:64",
    ),
    token(
        "openrouter-api-key",
        &["sk-or-v1-"],
        r"\b(?P<s>sk-or-v1-[0-9a-f]{64})\b",
        "lit:sk-or-v1-|hex:64",
    ),
    token(
        "posthog-personal-api-key",
        &["phx_"],
        r"\b(?P<s>phx_[A-Za-z0-9_]{43,48})\b",
        "lit:phx_|an:43",
    ),
    token(
        "salad-cloud-api-key",
        &["salad_cloud_"],
        r"\b(?P<s>salad_cloud_[A-Za-z0-9]{1,7}_[A-Za-z0-9]{7,235})\b",
        "lit:salad_cloud_org_|an:43",
    ),
    token(
        "sourcegraph-cody-token",
        &["slk_"],
        r"\b(?P<s>slk_[a-f0-9]{64})\b",
        "lit:slk_|hex:64",
    ),
    token(
        // LaunchDarkly's server-side SDK and REST API access tokens:
        // `sdk-` or `api-` and a UUID (the `mob-` mobile key is public),
        // not as a URL's path segment (`/v2/api-<uuid>` names a resource).
        "launchdarkly-access-token",
        &["sdk-", "api-"],
        // (Lower-case letters past `f` too: test suites draw the groups
        // from the whole alphabet, and the grouping alone is the shape.)
        r"(?:^|[^A-Za-z0-9_/-])(?P<s>(?:sdk|api)-[0-9a-z]{8}-[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{12})(?:[^A-Za-z0-9_-]|$)",
        "lit:sdk-|hex:8|lit:-|hex:4|lit:-4|hex:3|lit:-a|hex:3|lit:-|hex:12",
    )
    .samples(
        &[("ld_key: {}", "lit:api-|low:8|lit:-|low:4|lit:-|low:4|lit:-|low:4|lit:-|low:12")],
        &["GET /v2/api-3f2b8c1e-9a7d-4e6f-b5c4-2d1e0f9a8b7c"],
    ),
    token(
        "supabase-access-token",
        &["sbp_"],
        r"\b(?P<s>sbp_[a-z0-9]{40})\b",
        "lit:sbp_|low:40",
    ),
    token(
        // The secret API key of Supabase's key system since 2025 (the
        // `sb_publishable_` one is meant for browsers).
        "supabase-secret-key",
        &["sb_secret_"],
        r"\b(?P<s>sb_secret_[A-Za-z0-9_-]{20,})",
        "lit:sb_secret_|url:31",
    ),
    token(
        "ubidots-token",
        &["BBFF-"],
        r"\b(?P<s>BBFF-[A-Za-z0-9]{30})\b",
        "lit:BBFF-|an:30",
    ),
    token(
        "zoho-crm-token",
        &["1000."],
        r"\b(?P<s>1000\.[a-f0-9]{32}\.[a-f0-9]{32})\b",
        "lit:1000.|hex:32|lit:.|hex:32",
    ),
    token(
        // A Microsoft identity platform (Entra ID) refresh token: a
        // client-info part, then the encrypted `AgAB…` blob.
        "azure-entra-refresh-token",
        &[".AgAB"],
        r"\b(?P<s>[01]\.A[A-Za-z0-9_-]{50,}(?:\.[0-9])?\.AgAB[A-Za-z0-9_-]{200,}(?:\.A[A-Za-z0-9_-]{200,})?)",
        "lit:0.AXEA|url:60|lit:.AgABAAEAAAD|url:300",
    ),
    token(
        "rootly-api-key",
        &["rootly_"],
        r"\b(?P<s>rootly_[a-f0-9]{64})\b",
        "lit:rootly_|hex:64",
    ),
    token(
        "spectralops-token",
        &["spu-"],
        r"\b(?P<s>spu-[a-z0-9]{32})\b",
        "lit:spu-|low:32",
    ),
    token(
        "bitbucket-data-center-token",
        &["BBDC-"],
        r"\b(?P<s>BBDC-[A-Za-z0-9+/@_-]{40,50})(?:[^A-Za-z0-9+/@_-]|$)",
        "lit:BBDC-|an:44",
    ),
    token(
        // `pat` + 14 characters, a dot, 64 hex digits.
        "airtable-personal-access-token",
        &["pat"],
        r"\b(?P<s>pat[A-Za-z0-9]{14}\.[a-f0-9]{64})\b",
        "lit:pat|an:14|lit:.|hex:64",
    )
    .after_keyword(gates::airtable_body),
    token(
        "discord-webhook",
        &["/api/webhooks/"],
        r"(?P<s>https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/[A-Za-z0-9_-]{60,68})",
        "lit:https://discord.com/api/webhooks/|dig:19|lit:/|url:68",
    ),
    token(
        "sonarqube-token",
        &["squ_", "sqp_", "sqa_"],
        r"\b(?P<s>sq[upa]_[a-f0-9]{40})\b",
        "lit:squ_|hex:40",
    ),
    token(
        "intra42-client-secret",
        &["s-s4t2"],
        r"\b(?P<s>s-s4t2(?:ud|af)-[a-f0-9]{64})\b",
        "lit:s-s4t2ud-|hex:64",
    ),
    token(
        "microsoft-teams-webhook",
        &["webhook.office.com"],
        r"(?P<s>https://[A-Za-z0-9-]+\.webhook\.office\.com/webhookb2/[A-Za-z0-9@/_-]{60,})",
        "lit:https://acme.webhook.office.com/webhookb2/|low:36|lit:@|low:36|lit:/IncomingWebhook/|hex:32",
    ),
    token(
        "clickhouse-cloud-secret",
        &["4b1d"],
        r"\b(?P<s>4b1d[A-Za-z0-9]{38})\b",
        "lit:4b1d|an:38",
    ),
    token(
        "defined-networking-token",
        &["dnkey-"],
        r"(?P<s>dnkey-[a-z0-9=_-]{26}-[a-z0-9=_-]{52})",
        "lit:dnkey-|low:26|lit:-|low:52",
    ),
    token(
        "gitlab-session-cookie",
        &["_gitlab_session="],
        r"(?P<s>_gitlab_session=[0-9a-z]{32})\b",
        "lit:_gitlab_session=|low:32",
    ),
    token(
        "lob-api-key",
        &["live_", "test_"],
        r"\b(?P<s>(?:live|test)_(?:pub_[a-f0-9]{31}|[a-f0-9]{35}))\b",
        "lit:live_|hex:35",
    ),
    // Keys of the search and scraping APIs agents call, package registry
    // and supply-chain tokens, stream keys, and the Azure DevOps personal
    // access tokens of the 84-character format (`AZDO` at a fixed place).
    token(
        "tavily-api-key",
        &["tvly-"],
        r"\b(?P<s>tvly-(?:dev-|prod-)?[A-Za-z0-9]{32})\b",
        "lit:tvly-|an:32",
    ),
    token(
        "firecrawl-api-key",
        &["fc-"],
        r"\b(?P<s>fc-[a-f0-9]{32})\b",
        "lit:fc-|hex:32",
    ),
    token(
        "jina-api-key",
        &["jina_"],
        r"\b(?P<s>jina_[A-Za-z0-9]{60})\b",
        "lit:jina_|an:60",
    ),
    token(
        "crates-io-token",
        &["cio"],
        r"\b(?P<s>cio[A-Za-z0-9]{32})\b",
        "lit:cio|an:32",
    ),
    token(
        "nuget-api-key",
        &["oy2"],
        r"\b(?P<s>oy2[a-z0-9]{43})\b",
        "lit:oy2|low:43",
    ),
    token(
        "dependency-track-api-key",
        &["odt_"],
        r"\b(?P<s>odt_[A-Za-z0-9]{32,255})\b",
        "lit:odt_|an:32",
    ),
    token(
        "twitch-stream-key",
        &["live_"],
        r"\b(?P<s>live_[0-9]{8,12}_[A-Za-z0-9]{30,36})\b",
        "lit:live_|dig:9|lit:_|an:30",
    ),
    token(
        // CircleCI's personal and project API tokens.
        "circleci-token",
        &["CCIPAT_", "CCIPRJ_"],
        r"\b(?P<s>CCIP(?:AT|RJ)_[A-Za-z0-9]{22}_[0-9a-fA-F]{40})\b",
        "lit:CCIPAT_|an:22|lit:_|hex:40",
    ),
    token(
        "azure-devops-pat",
        &["AZDO"],
        r"\b(?P<s>[A-Za-z0-9]{76}AZDO[A-Za-z0-9]{4})\b",
        "an:76|lit:AZDO|an:4",
    ),
    // Azure's other identifiable keys of the same 84-character format
    // (AI services, Container Registry, App Configuration, ...): a fixed
    // `JQQJ9` after the first 52 characters, the service's tag near the end.
    token(
        "azure-identifiable-key",
        &["JQQJ9"],
        r"(?:^|[^A-Za-z0-9+/])(?P<s>[A-Za-z0-9+/]{52}JQQJ9[A-Za-z0-9+/]{27})(?:[^A-Za-z0-9+/]|$)",
        "an:52|lit:JQQJ99|an:26",
    ),
    // Azure's identifiable keys (Microsoft's `security-utilities`): a
    // random base64 key with the service's four-character signature at a
    // fixed place, 32-byte keys (44 characters: Relay `+ARm`, Event Hubs
    // `+AEh`, Service Bus `+ASb`, IoT `AIoT`, Cache for Redis `AzCa`,
    // Event Grid `AZEG`) and 64-byte ones (88: Storage `+ASt`, Cosmos DB
    // `ACDb`, Batch `+ABa`, Machine Learning `+AMC`, API Management
    // `APIM`); Functions' URL-safe keys (`AzFu`), Search's (`AzSe`) and
    // Container Registry's (`+ACR`) have their own lengths. Written as a
    // run and a length (the vetoes): a counted run of 76 cost the dense
    // export 3 MiB of automaton.
    token(
        "azure-service-key",
        &["+ARm", "+AEh", "+ASb", "AIoT", "AzCa", "AZEG"],
        r"(?:^|[^A-Za-z0-9+/_-])(?P<s>[A-Za-z0-9+/]+(?:\+ARm|\+AEh|\+ASb|AIoT|AzCa|AZEG)[A-P][A-Za-z0-9+/]{5}=)(?:[^A-Za-z0-9+/=_-]|$)",
        "b64:33|lit:+ASbB|b64:5|lit:=",
    )
    .veto(vetoes::azure_key_not_44)
    .traits(BY_LENGTH)
    .samples(&[], &["Q7xk29fLq83ZmP0aRtY4vB8c7Nd1We5Hs6Jg2K+ASbB3xY2Z="]),
    token(
        "azure-account-key",
        &["+ASt", "ACDb", "+ABa", "+AMC", "APIM"],
        r"(?:^|[^A-Za-z0-9+/_-])(?P<s>[A-Za-z0-9+/]+(?:\+ASt|ACDb|\+ABa|\+AMC|APIM)[A-Za-z0-9+/]{5}[AQgw]==)(?:[^A-Za-z0-9+/=_-]|$)",
        "b64:76|lit:+ASt|b64:5|lit:Q==",
    )
    .veto(vetoes::azure_key_not_88)
    .traits(BY_LENGTH)
    .samples(&[], &["Q7xk29fLq83ZmP0aRtY4vB8c7Nd1We5Hs6Jg2K+AStB3xY2Q=="]),
    token(
        "azure-functions-key",
        &["AzFu"],
        r"(?:^|[^A-Za-z0-9_-])(?P<s>[A-Za-z0-9_-]+AzFu[A-Za-z0-9_-]{5}[AQgw]==)(?:[^A-Za-z0-9_-]|$)",
        "url:44|lit:AzFu|url:5|lit:g==",
    )
    .veto(vetoes::azure_key_not_56)
    .traits(BY_LENGTH)
    .samples(&[], &["Q7xk29fLq83ZmP0aRtY4vB8c7Nd1We5Hs6Jg2KAzFuB3xY2g=="]),
    token(
        "azure-search-key",
        &["AzSe"],
        r"(?:^|[^A-Za-z0-9+/_-])(?P<s>[A-Za-z0-9]+AzSe[A-D][A-Za-z0-9]{5})(?:[^A-Za-z0-9+/=_-]|$)",
        "an:42|lit:AzSeC|an:5",
    )
    .veto(vetoes::azure_key_not_52)
    .traits(BY_LENGTH)
    .samples(&[], &["Q7xk29fLq83ZmP0aRtY4vB8c7Nd1We5Hs6Jg2KAzSeCB3xY2"]),
    token(
        "azure-container-registry-key",
        &["+ACR"],
        r"(?:^|[^A-Za-z0-9+/_-])(?P<s>[A-Za-z0-9+/]+\+ACR[A-D][A-Za-z0-9+/]{5})(?:[^A-Za-z0-9+/=_-]|$)",
        "b64:42|lit:+ACRA|b64:5",
    )
    .veto(vetoes::azure_key_not_52)
    .traits(BY_LENGTH)
    .samples(&[], &["Q7xk29fLq83ZmP0aRtY4vB8c7Nd1We5Hs6Jg2K+ACRAB3xY2"]),
    token(
        "sonarcloud-token",
        &["sqco_"],
        r"\b(?P<s>sqco_[A-Za-z0-9]{59})\b",
        "lit:sqco_|an:59",
    ),
    token(
        "pagarme-api-key",
        &["ak_live_"],
        r"\b(?P<s>ak_live_[A-Za-z0-9]{30})\b",
        "lit:ak_live_|an:30",
    ),
    token(
        // Short-lived access tokens; `\b` keeps `ssl.` out.
        "dropbox-access-token",
        &["sl."],
        r"\b(?P<s>sl\.(?:u\.)?[A-Za-z0-9_-]{130,})",
        "lit:sl.|url:138",
    ),
    token(
        "microsoft-teams-outlook-webhook",
        &["outlook.office"],
        r"(?P<s>https://outlook\.office(?:365)?\.com/webhook/[0-9a-f-]{36}@[0-9a-f-]{36}/IncomingWebhook/[0-9a-f]{32}/[0-9a-f-]{36})",
        "lit:https://outlook.office.com/webhook/|hex:8|lit:-1a2b-3c4d-5e6f-|hex:12|lit:@|hex:8|lit:-1a2b-3c4d-5e6f-|hex:12|lit:/IncomingWebhook/|hex:32|lit:/|hex:8|lit:-1a2b-3c4d-5e6f-|hex:12",
    ),
    token(
        "amazon-mws-auth-token",
        &["amzn.mws."],
        r"\b(?P<s>amzn\.mws\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b",
        "lit:amzn.mws.|hex:8|lit:-|hex:4|lit:-|hex:4|lit:-|hex:4|lit:-|hex:12",
    ),
    token(
        // An AppSync GraphQL API's key (`x-api-key`).
        "aws-appsync-api-key",
        &["da2-"],
        r"\b(?P<s>da2-[a-z0-9]{26})\b",
        "lit:da2-|low:26",
    ),
    token(
        "kolide-api-key",
        &["k2sk_v"],
        r"\b(?P<s>k2sk_v[0-9]_[A-Za-z0-9]{24})\b",
        "lit:k2sk_v1_|an:24",
    ),
    token(
        // Live and sandbox tokens, with a region (`api_live_us.`) or not.
        "onfido-api-token",
        &["api_live", "api_sandbox"],
        r"\b(?P<s>api_(?:live|sandbox)(?:_[a-z]{2})?\.[A-Za-z0-9_-]{11}\.[A-Za-z0-9_-]{32})(?:[^A-Za-z0-9_-]|$)",
        "lit:api_live.|url:11|lit:.|url:32",
    ),
    token(
        "braintree-access-token",
        &["access_token$production$", "access_token$sandbox$"],
        r"\b(?P<s>access_token\$(?:production|sandbox)\$[0-9a-z]{16}\$[0-9a-f]{32})\b",
        "lit:access_token$production$|low:16|lit:$|hex:32",
    ),
    token(
        // A swarm's join token: the cluster CA's digest, then the secret.
        "docker-swarm-join-token",
        &["SWMTKN-1-"],
        r"\b(?P<s>SWMTKN-1-[0-9a-z]{50}-[0-9a-z]{25})\b",
        "lit:SWMTKN-1-|low:50|lit:-|low:25",
    ),
    token(
        // A private key's DER in base64 without its PEM lines: PKCS#8
        // RSA (`MII…IBADANBgkqhkiG9w0BAQEFAAS`), PKCS#1 RSA
        // (`MII…IBAAKC`), SEC1 EC keys on P-256, secp256k1, P-384 and
        // P-521. (A public key or a certificate opens otherwise.)
        "private-key-der",
        &["MII", "MHcCAQEEI", "MHQCAQEEI", "MIGkAgEBBDA", "MIHcAgEBBEIB"],
        r"(?:^|[^A-Za-z0-9+/])(?P<s>(?:MII[A-Za-z0-9+/]{3}IBADANBgkqhkiG9w0BAQEFAAS|MII[A-Za-z0-9+/]{3}IBAAKC|MHcCAQEEI|MHQCAQEEI|MIGkAgEBBDA|MIHcAgEBBEIB)[A-Za-z0-9+/]{100,}={0,2})(?:[^A-Za-z0-9+/=]|$)",
        "lit:MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ|b64:400|lit:==",
    ),
];

/// A token of a vendor no row names: a short prefix (`fm2_`, `CCDB1_`,
/// `apk_user_`, `xyz-live-`), then a body of 32 letters and digits or
/// more drawn at random. Most vendors now mint tokens in this form, so
/// this one row finds the formats the table does not know yet. It is a
/// fallback: a row of the table that finds the same span names it
/// ([`super::RuleSet::find`]). Its veto ([`unknown_prefix_spared`]) keeps
/// identifiers, digests under their algorithm's name, and pieces of a
/// longer base64 string.
pub(crate) const UNKNOWN_PREFIX: Spec = token(
    "prefixed-token",
    &[],
    r"(?:^|[^A-Za-z0-9+/_.=-])(?P<s>[A-Za-z][A-Za-z0-9]{0,11}(?:[_-][A-Za-z0-9]{1,11}){0,2}[_-](?P<body>[A-Za-z0-9]{32,})(?:[_-][A-Za-z0-9]+)*=*)",
    "lit:qzv2_|an:40",
)
.gate(super::gates::long_run_after_separator)
.veto(super::vetoes::unknown_prefix_spared)
.traits(super::spec::Traits {
    // The veto judges the body, which the whole token's shape (a prefix
    // of words) can hide from the gate's own test.
    gate_trusts_veto: true,
    fallback: true,
    ..super::spec::PLAIN
})
.samples(
    &[
        ("args: [\"Zorb {}\"]", "lit:zrb2_|an:120"),
        ("x = '{}'", "lit:CCDB1_|an:48"),
        ("{}", "lit:apk_user_|an:40"),
        // Hex after a credential's words (ElevenLabs, Scale).
        ("{}", "lit:sk_|hex:48"),
        ("x = \"{}\"", "lit:live_auth_|hex:32"),
    ],
    &[
        "\"integrity\": \"sha512-Wk9XQ3Fqb2xUgM2k5LzR8aNpV7cY1eH0dTj6sBwK4uGy\"",
        "toolu_01A09q90qw90lq917835lq9X",
        "my_function_name_is_very_long_and_descriptive_indeed",
        "commit_3f786850e387550fdab836ed7e6dc881de23001b",
        "cache_key_3f786850e387550fdab836ed7e6dc881de23001b",
        "data/ab_Zk3mN8pQ2rT6vX9yB4cF7hJ1kL5oS0uW3eR6tY9iP2a/c",
    ],
);
