//! Credentials no vendor rule names (issue 41), through the binary: a
//! service's name and a value, a credential field in config syntax, a
//! connection string's or a URL's password, a client built from a
//! literal, a key in a URL's path. Each must be gone from everything a
//! recipient or a terminal sees; code and placeholders beside the same
//! names must come through unchanged.

use serde_json::json;

use crate::disguises::{export, gone, policy, session_bundle, Exported};
use crate::support::Env;

/// A session whose tool results are `outputs`.
fn session(outputs: &[String]) -> String {
    let mut s = String::from("{\"type\":\"session.start\"}\n");
    for (i, o) in outputs.iter().enumerate() {
        s.push_str(&json!({"type": "tool.result", "seq": i, "output": o}).to_string());
        s.push('\n');
    }
    s
}

/// A partner export (no policy values) of a session whose tool results
/// are `outputs`, and its exported session's text. The `Env` holds the
/// export's directory.
fn exported(name: &str, outputs: &[&str]) -> (Env, Exported, String) {
    let outputs: Vec<String> = outputs.iter().map(|s| s.to_string()).collect();
    let env = Env::new();
    let src = session_bundle(&env, name, &session(&outputs));
    let pol = policy(&env, "p.json", json!({"sensitiveValues": []}));
    let e = export(&env, &src, &pol, "out");
    let out = std::fs::read_to_string(e.tree.join("session.jsonl")).unwrap();
    (env, e, out)
}

#[test]
fn each_shape_of_a_credential_no_rule_names_is_gone_from_a_partner_export() {
    // (shape, text, secret): services with no rule of their own
    // (`zenrows`, `cloudsmith`, `bitbar`, `browshot`) and one no list
    // knows (`Quuxly`).
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "service token",
            "zenrows token = 'Q3k9XvB2mT7pL0sWz8YcN4rJ6hF1dG5a'".into(),
            "Q3k9XvB2mT7pL0sWz8YcN4rJ6hF1dG5a",
        ),
        (
            "service: 40 hex",
            "cloudsmith: 9c2e1f7a0b3d5e6f8a9b0c1d2e3f4a5b6c7d8e9f".into(),
            "9c2e1f7a0b3d5e6f8a9b0c1d2e3f4a5b6c7d8e9f",
        ),
        (
            "service 'short'",
            "bitbar 'Xk29fLq83ZmP0aRt'".into(),
            "Xk29fLq83ZmP0aRt",
        ),
        (
            "debug line",
            "[DEBUG] Using Browshot Key=Zq81mXk2Lr9vT4bN7cW3pY6s".into(),
            "Zq81mXk2Lr9vT4bN7cW3pY6s",
        ),
        (
            "table row",
            "| apiKey | Hq7Lm2Xr9Kz4Tb8Nc3Wp6Ys1 |".into(),
            "Hq7Lm2Xr9Kz4Tb8Nc3Wp6Ys1",
        ),
        (
            "table row without its outer bars",
            "Variable name | Initial Value\napiKey |e9e1f062f587b423bb6cc6328eb786d75b45783e\n"
                .into(),
            "e9e1f062f587b423bb6cc6328eb786d75b45783e",
        ),
        (
            "a webhook's URL",
            "POST https://chat.example.org/hooks/xjd8h3kq7bf5z8nmr4tq9c2y1e".into(),
            "xjd8h3kq7bf5z8nmr4tq9c2y1e",
        ),
        (
            "a Bot API token in its URL",
            "curl https://api.telegram.org/bot6123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/getMe"
                .into(),
            "6123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw",
        ),
        (
            "an .npmrc password scoped to a registry",
            "//npm.example.org/releases:_password=CorrectHorseBatteryStaple".into(),
            "CorrectHorseBatteryStaple",
        ),
        (
            "a token after a sentence naming it, a blank line between",
            "Please use the following password to proceed to installation:\n\nbd9627decc6346d780b3b6ab6ea8fe1f\n".into(),
            "bd9627decc6346d780b3b6ab6ea8fe1f",
        ),
        (
            "a label alone, then its token on the next line",
            "cloudsmith private access key\nZXC2JK3HV4TY5UIO6PLQ\n".into(),
            "ZXC2JK3HV4TY5UIO6PLQ",
        ),
        (
            "a column aligned with blanks",
            "     CLOUDSMITH_ID:               \"DkWLqcP3ace3wHuJ7fiw\",".into(),
            "DkWLqcP3ace3wHuJ7fiw",
        ),
        (
            "a token as a URL's user",
            "git clone https://Zq81mXk2Lr9vT4bN7cW3pY6s@git.example.org/org/repo.git".into(),
            "Zq81mXk2Lr9vT4bN7cW3pY6s",
        ),
        (
            "a user and a password given to a login",
            "smtp.login(\"alice@example.com\", \"Hq7Lm2Xr9Kz4Tb8N\")".into(),
            "Hq7Lm2Xr9Kz4Tb8N",
        ),
        (
            "a sentence saying whose password it is",
            "The password for the admin account is Wq7Lm2Xr9Kz4Tb8N.".into(),
            "Wq7Lm2Xr9Kz4Tb8N",
        ),
        (
            "XML block",
            "<credentials>\n  <secret>Pq3Zr8Lm2Xk9Tb4Nc7Wv</secret>\n</credentials>".into(),
            "Pq3Zr8Lm2Xk9Tb4Nc7Wv",
        ),
        (
            "URL path key",
            "url := \"https://api.example.com/v1/keys/pri_9f8e7d6c5b4a39281706f5e4d3c2b1a0\""
                .into(),
            "pri_9f8e7d6c5b4a39281706f5e4d3c2b1a0",
        ),
        (
            "a key given to a JSON-RPC method named for it",
            "{\"id\":1, \"method\": \"auth.login_with_api_key\", \"params\": [\"9-Qs7Kd2Lm8Xr4Tb6Nc3Wv5Zp1Yh0Gj\"]}".into(),
            "9-Qs7Kd2Lm8Xr4Tb6Nc3Wv5Zp1Yh0Gj",
        ),
        (
            "client from a literal",
            "client := NewQuuxlyAPI(\"3f2b8c1e-9a7d-4e6f-b5c4-2d1e0f9a8b7c\")".into(),
            "3f2b8c1e-9a7d-4e6f-b5c4-2d1e0f9a8b7c",
        ),
        (
            "YAML block, second line",
            "aws:\n  id: AKIAQYLPMN5HHHFPZAM2\n  secret: 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"
                .into(),
            "Xk29fLq83ZmP0aRtQw7eYu1iOp4aSd6fGh8jKl0z",
        ),
        (
            "a value on the line after its label",
            "db:\n  password:\n    plumtree42\n".into(),
            "plumtree42",
        ),
        (
            "password=word",
            "password=quokkaberry".into(),
            "quokkaberry",
        ),
        ("pwd: Word", "pwd: SomeWordle".into(), "SomeWordle"),
        (
            "\"pw\" : Value",
            "{\"pw\" : \"Valuemint\"}".into(),
            "Valuemint",
        ),
        (
            "properties",
            "spring.datasource.password=hunter2go".into(),
            "hunter2go",
        ),
        (
            "Authorization header",
            "Authorization: Bearer this_is_a_test".into(),
            "this_is_a_test",
        ),
        (
            "Maven master",
            "<settingsSecurity><master>orangejuice</master></settingsSecurity>".into(),
            "orangejuice",
        ),
        (
            "JDBC",
            "jdbc:sqlserver://db:1433;user=sa;password=Summer2024x".into(),
            "Summer2024x",
        ),
        (
            "ODBC",
            "Driver={ODBC};Server=x;Uid=me;Pwd=letmeinplz;".into(),
            "letmeinplz",
        ),
        (
            "URL userinfo word",
            "git remote add o https://alice:tangerine@example.org/x.git".into(),
            "tangerine",
        ),
        (
            "URL userinfo constant's name",
            "DATABASE_URL=mysql://app:PASSWORD@db.internal:3306/shop".into(),
            "PASSWORD@db.internal",
        ),
        (
            "URL userinfo user repeated as the password",
            "docker run -e DB=postgres://postgres:postgres@db:5432/app img".into(),
            "postgres:postgres@",
        ),
        (
            "URL userinfo short word on a documentation host",
            "const u = new URL('http://abc:xyz@example.com');".into(),
            ":xyz@",
        ),
        (
            "URL userinfo user beside its password",
            "uri: mongodb+srv://svcfetcher:CPCdZH5k0F6dxQ9V@cluster0.mongodb.net/db".into(),
            "svcfetcher",
        ),
        (
            "connection string user beside its password",
            "Data Source=db7;User ID=kmwulfliq;Password=sK!g2Ex_jJ6Gx5v;".into(),
            "kmwulfliq",
        ),
        (
            "a credential word glued to a value",
            "export DD=qz-apikey-4f9c2b7e1d3a5c6b8e0f2a4c6e8b0d1f".into(),
            "4f9c2b7e1d3a5c6b8e0f2a4c6e8b0d1f",
        ),
        (
            "a literal a setting falls back to",
            "const k = process.env.ZENROWS_KEY || 'Wm4Rt8Kx2Pq9Lz3Nv7Bc5Hd1'".into(),
            "Wm4Rt8Kx2Pq9Lz3Nv7Bc5Hd1",
        ),
        (
            "digits after a credential word",
            "cloudsmith_key = \"8195513847023883\"".into(),
            "8195513847023883",
        ),
        (
            "the id of a credential pair",
            "zenrows_client_id = 'dBpXUZS34Rhg6WUKTLLj3E9yWGY6IJgV'".into(),
            "dBpXUZS34Rhg6WUKTLLj3E9yWGY6IJgV",
        ),
        (
            "letters with few capitals",
            "quuxly_key = \"DjayBenyJrtpvydFCzAphcqc\"".into(),
            "DjayBenyJrtpvydFCzAphcqc",
        ),
        (
            "a getter returning a literal",
            "func getQuuxlyToken() string { return \"Rk3Lp9Xw2Mq7Zt4Vb8Nc1Hd5\" }".into(),
            "Rk3Lp9Xw2Mq7Zt4Vb8Nc1Hd5",
        ),
        (
            "a token behind a vendor prefix no row knows",
            "deploy --with qxv1_Rk3Lp9Xw2Mq7Zt4Vb8Nc1Hd5Jf6Gs0Ta2Ye4Wu".into(),
            "Rk3Lp9Xw2Mq7Zt4Vb8Nc1Hd5Jf6Gs0Ta2Ye4Wu",
        ),
        (
            "a scheme word, then a prefixed token",
            "QUUXLY_AUTH=Quux1 qx2_Zq81mXk2Lr9vT4bN7cW3pY6sHd5Jf6Gs0Ta2".into(),
            "Zq81mXk2Lr9vT4bN7cW3pY6sHd5Jf6Gs0Ta2",
        ),
        (
            "a password piped to a login",
            "echo \"Wk3Lp9Xw2Mq7Zt4Vb8Nc\" | docker login ghcr.io -u bob --password-stdin"
                .into(),
            "Wk3Lp9Xw2Mq7Zt4Vb8Nc",
        ),
        (
            "openssl's -k",
            "openssl enc -d -aes-256-cbc -k Tr0ub4dor3xq -in db.enc -out db.sql".into(),
            "Tr0ub4dor3xq",
        ),
        (
            "htpasswd -b",
            "htpasswd -bc /etc/nginx/.htpasswd admin quietMeadow41".into(),
            "quietMeadow41",
        ),
        (
            "mongosh -p",
            "mongosh \"mongodb://db:27017\" -u admin -p s7vJq2Lm9xRt --quiet".into(),
            "s7vJq2Lm9xRt",
        ),
        (
            "a login call's user, beside its password",
            "$wc.Credentials = New-Object System.Net.NetworkCredential(\"quillanby\", \"Wq7Lm2Xr9Kz4Tb8Nc3Wp\")"
                .into(),
            "quillanby",
        ),
        (
            "prompt user",
            "quillon@build-07:~/work$ ls".into(),
            "quillon",
        ),
    ];
    let env = Env::new();
    let outputs: Vec<String> = cases.iter().map(|c| c.1.clone()).collect();
    let src = session_bundle(&env, "leaks", &session(&outputs));
    let pol = policy(&env, "p.json", json!({"sensitiveValues": []}));
    let e = export(&env, &src, &pol, "out");
    for (shape, _, secret) in &cases {
        gone(&e, secret, shape);
    }
}

#[test]
fn code_and_placeholders_beside_the_same_names_come_through() {
    let lines = [
        "password = getpass()",
        "token: ${{ secrets.GITHUB_TOKEN }}",
        "password: <your password>",
        "import stripe; stripe.api_key = os.environ['STRIPE_KEY']",
        "image: postgres:14.5-alpine3.17",
        "pub(crate) const TEST_CRC64_REDIS: Crc64TestConfig = Crc64TestConfig {",
        "request.password = XMLHttpRequest",
        "see https://github.com/org/repo/settings/keys/new",
        "github_run_id: 1234567890123456789",
        "access-control-allow-origin: *",
        "const ctx = new XMLHttpRequestContext();",
        // Prefixed, but a digest, an id and words.
        "\"integrity\": \"sha512-oqVuAfXRKap7fdgcCY5uykM6+BWm2l2GzRkm3h0MwzUSHp5sEjbZSLvHXeH3bQnAV0bq/Q1NwZzEtLwUXNBQMw==\"",
        "tool_use_id: toolu_01A09q90qw90lq917835lq9X",
        "fn test_ICANVASRENDERINGVIACONTEXT2D3D5D7D8D() {}",
        // A URL's password that is code or a stand-in keeps its user too,
        // and a user with no password is no credential.
        "url = f\"https://user123:{_github_pat(github_secret_name)}@github.com/\"",
        "DOC = \"mysql://admin:REPLACE_WITH_PASSWORD@mysql.server.com:3306/db\"",
        "mysql -h db --url mysql://app:{password}@db:3306/shop",
        "psql postgres://postgres@db:5432/app",
    ];
    let (_env, e, out) = exported("code", &lines);
    assert_eq!(e.code, 0, "{}", e.envelope);
    for line in &lines {
        let written = serde_json::to_string(line).unwrap();
        assert!(out.contains(&written), "{line} changed:\n{out}");
    }
}

/// A customer's name in a multi-tenant service's host is an identity:
/// gone, the same placeholder wherever it stands, while the service's
/// suffix, its own hosts and the same word in prose stay
/// (docs/EXPORT.md, "A customer's name in a multi-tenant host").
#[test]
fn a_tenants_name_in_a_service_host_is_replaced_the_same_everywhere() {
    let lines = [
        "npm config set registry https://acme-corp.jfrog.io/artifactory/api/npm/npm/",
        "curl -u ci https://acme-corp.jfrog.io/artifactory/api/system/ping",
        // `AUTH0_DOMAIN` names no credential: the tenant goes as a
        // tenant, not as the value of a named credential.
        "AUTH0_DOMAIN=myapp.eu.auth0.com",
        "BlobEndpoint=https://acmeprod.blob.core.windows.net/;",
        "DefaultEndpointsProtocol=https;AccountName=hanatour9833;EndpointSuffix=core.windows.net",
        "see https://api.slack.com/methods and https://developer.okta.com/docs/",
        // A name with two kinds of character is swept as other values
        // are; a plain word only goes in its hosts.
        "acme-corp ships on Fridays",
        "acmeprod backups run nightly",
    ];
    let (_env, e, out) = exported("tenants", &lines);
    for tenant in [
        "acme-corp.jfrog.io",
        "myapp.eu.auth0",
        "acmeprod.blob",
        "hanatour9833",
    ] {
        gone(&e, tenant, tenant);
    }
    let marker = "[REDACTED_SECRET:tenant-host:";
    let registries: Vec<&str> = out
        .match_indices(marker)
        .map(|(i, _)| &out[i..])
        .filter_map(|rest| {
            rest.split_once("].jfrog.io/artifactory/api/")
                .map(|(p, _)| p)
        })
        .collect();
    assert_eq!(registries.len(), 2, "{out}");
    assert_eq!(registries[0], registries[1], "one tenant, one placeholder");
    let swept = format!("{}] ships on Fridays", registries[0]);
    assert!(out.contains(&swept), "{swept} is not in\n{out}");
    for kept in [
        "].auth0.com",
        "].blob.core.windows.net/;",
        "see https://api.slack.com/methods and https://developer.okta.com/docs/",
        "acmeprod backups run nightly",
    ] {
        assert!(out.contains(kept), "{kept} is not in\n{out}");
    }
}

/// An AWS account's number goes from every ARN and account label, the
/// rest of the ARN stays, and AWS's documentation stand-in stays; a
/// letters-only token a service's credential word announces goes too.
#[test]
fn an_aws_account_and_a_drawn_letters_token_leave_a_partner_export() {
    let lines = [
        r#"{"UserId": "AIDAQX3LZUEXAMPLE", "Account": "003084325827", "Arn": "arn:aws:iam::003084325827:user/alice"}"#,
        "aws kms decrypt --key-id arn:aws:kms:us-east-1:891511536143:key/84a66985-f968-4bac-82c2-365518adf157",
        "see arn:aws:iam::123456789012:role/Example in the AWS docs",
        "oanda SECRET key QWRTZPLMKNBVCXYSDFGHJKLM",
    ];
    let (_env, e, out) = exported("accounts", &lines);
    for value in ["003084325827", "891511536143", "QWRTZPLMKNBVCXYSDFGHJKLM"] {
        gone(&e, value, value);
    }
    for kept in [
        "arn:aws:iam::[REDACTED_SECRET:aws-account-id:",
        ":key/84a66985-f968-4bac-82c2-365518adf157",
        "arn:aws:iam::123456789012:role/Example",
        "oanda SECRET key [REDACTED_SECRET:named-credential:",
    ] {
        assert!(out.contains(kept), "{kept} is not in\n{out}");
    }
}

/// A connection URL percent-encoded inside another URL loses its user
/// with its password, as it does in plain text: the tenant of its host
/// must not take the escaped `@`'s digits, or the decoded text no longer
/// shows `user:password@host`.
#[test]
fn a_percent_encoded_urls_user_goes_with_its_password() {
    let lines = [
        "GET https://h.test/cb?q=uri%3A%20%22mongodb%2Bsrv%3A%2F%2Fsvcfetcher%3ACPCdZH5k0F6dxQ9V%40acme-prince.mongodb.net%2F%3FretryWrites%3Dtrue%22",
    ];
    let (_env, e, out) = exported("encoded", &lines);
    for value in ["svcfetcher", "CPCdZH5k0F6dxQ9V", "acme-prince"] {
        gone(&e, value, value);
    }
    assert!(out.contains("]%40[REDACTED_SECRET:tenant-host:"), "{out}");
}

/// A command's user flag goes with the password option of the same
/// command; `-u` counts only for the login commands whose short option
/// is the user.
#[test]
fn a_commands_user_goes_with_its_password_option() {
    let lines = [
        r"cmd.exe /C PSEXEC \\10.0.94.120 -u opsadmin7 -p Dev_Admin_2024 CMD /C ECHO",
        "mysql -ureporting -pQ7vWx2Lm9Rt db",
        "Connect-VIServer -Server 192.168.1.51 -User vcops@vsphere.local -Password VMware1!",
        "python -u train.py --password Zr8Kq2Vn5Xw1",
    ];
    let (_env, e, out) = exported("cli", &lines);
    for value in [
        "opsadmin7",
        "Dev_Admin_2024",
        "reporting",
        "Q7vWx2Lm9Rt",
        "vcops@vsphere.local",
        "VMware1!",
        "Zr8Kq2Vn5Xw1",
    ] {
        gone(&e, value, value);
    }
    assert!(
        out.contains("python -u train.py --password [REDACTED_SECRET:"),
        "{out}"
    );
}

/// In a tool's output, the user a sibling key names goes with a replaced
/// password (`$user` beside `$password`, on its line or two lines away);
/// a user beside a password that stays (code) stays too.
#[test]
fn a_sibling_keys_user_goes_with_a_replaced_password() {
    let lines = [
        "$user = \"mg1021\"; $password = \"goodspec42\";",
        "$db_user = 'reporting7';\n$db_host = 'db';\n$db_pass = 'Hq3kZp9XwLm2Rt7Y';",
        "$user = \"reader9\"; $password = getenv(\"DB_PASS\");",
    ];
    let (_env, e, out) = exported("siblings", &lines);
    for value in ["mg1021", "goodspec42", "reporting7", "Hq3kZp9XwLm2Rt7Y"] {
        gone(&e, value, value);
    }
    for kept in [
        "$db_host = 'db';",
        "$user = \\\"reader9\\\"; $password = getenv(",
    ] {
        assert!(out.contains(kept), "{kept} is not in\n{out}");
    }
}

/// A JSON object pairing a secret's name with its value, however the
/// service spells the pair (SSM's `Name`/`Value`, CloudFormation's
/// `ParameterKey`/`ParameterValue`, an env list's `name`/`value`), loses
/// the value in a tool's output; a pair whose name is no secret's keeps
/// it.
#[test]
fn a_named_pairs_value_goes_whatever_the_service_calls_the_pair() {
    let lines = [
        r#"{"Parameter": {"Name": "/prod/db/password", "Type": "SecureString", "Value": "hunter2horse"}}"#,
        r#"{"Parameters": [{"ParameterKey": "DbPassword", "ParameterValue": "Tr0ub4dor3"}, {"ParameterKey": "Stage", "ParameterValue": "blue-stage"}]}"#,
        r#"{"OptionSettings": [{"Namespace": "aws:elasticbeanstalk:application:environment", "OptionName": "SMTP_PASSWORD", "Value": "correcthorse9"}]}"#,
        r#"{"Tags": [{"Key": "owner", "Value": "data-team"}]}"#,
    ];
    let (_env, e, out) = exported("pairs", &lines);
    for value in ["hunter2horse", "Tr0ub4dor3", "correcthorse9"] {
        gone(&e, value, value);
    }
    for kept in ["blue-stage", "data-team", "/prod/db/password"] {
        assert!(out.contains(kept), "{kept} is not in\n{out}");
    }
}

/// An element's attributes do not hide its password (FileZilla's
/// `<Pass encoding="base64">`), and an OAuth client's id goes under a
/// service's name that is also a common word (`GITHUB_CLIENT_ID`), as
/// it does under any other service's.
#[test]
fn an_elements_attributes_and_a_common_names_client_id_hide_nothing() {
    let lines = [
        "<Server><Host>ftp.example.org</Host><Pass encoding=\"base64\">aHVudGVyMmhvcnNl</Pass></Server>",
        "GITHUB_CLIENT_ID=ac58d6da7d7a84c039b7\nGITHUB_RUN_ID=7718293041",
    ];
    let (_env, e, out) = exported("attrs", &lines);
    for value in ["aHVudGVyMmhvcnNl", "ac58d6da7d7a84c039b7"] {
        gone(&e, value, value);
    }
    for kept in ["<Host>ftp.example.org</Host>", "GITHUB_RUN_ID=7718293041"] {
        assert!(out.contains(kept), "{kept} is not in\n{out}");
    }
}

/// A password key's word glued into a weak password is the password,
/// not the field's name: it goes; the name in capitals stays.
#[test]
fn a_weak_password_holding_its_keys_word_goes() {
    let lines = [
        "[SupportSite]\nUsername=supportdesk\nPassword=thisismypassword",
        "jdbc:postgresql://db/app?password=DBPASSWORD",
    ];
    let (_env, e, out) = exported("glued", &lines);
    gone(&e, "thisismypassword", "thisismypassword");
    assert!(out.contains("password=DBPASSWORD"), "{out}");
}

/// A Gradle `credentials` block gives its password as a DSL's key and a
/// quoted value, with no operator: the value goes; a placeholder there
/// stays.
#[test]
fn a_gradle_credentials_blocks_password_goes() {
    let lines = [
        "credentials {\n    username \"deploy\"\n    password \"Zr8Kq2Vn5Xw1\"\n}",
        "credentials {\n    password \"SOME_PASSWORD\"\n}",
    ];
    let (_env, e, out) = exported("gradle", &lines);
    gone(&e, "Zr8Kq2Vn5Xw1", "Zr8Kq2Vn5Xw1");
    assert!(out.contains("password \\\"SOME_PASSWORD\\\""), "{out}");
}

#[test]
fn each_item_of_a_yaml_list_of_passwords_goes_from_an_output_and_a_patch() {
    // Each item is read with the key above the list, not with the item
    // before it; a list under any other key keeps its words.
    let yaml = [
        "db:",
        "  admin_passwords:",
        "    - \"Hunter2go\"",
        "    - tr0ub4dor",
        "",
        "    - s3cretSauce",
        "  hosts:",
        "    - primary01",
        "    - replica02",
    ];
    let env = Env::new();
    let src = session_bundle(
        &env,
        "yaml-list",
        &session(&[format!("$ cat db.yml\n{}", yaml.join("\n"))]),
    );
    crate::disguises::add_to_patch(&src, "db.yml", yaml.iter().copied());
    crate::bundles::rebrand(&src, "yaml-list-bundle", "yaml-list-attempt");
    let pol = policy(&env, "p.json", json!({"sensitiveValues": []}));
    let e = export(&env, &src, &pol, "out");
    for secret in ["Hunter2go", "tr0ub4dor", "s3cretSauce"] {
        gone(&e, secret, secret);
    }
    let out = std::fs::read_to_string(e.tree.join("session.jsonl")).unwrap();
    let patch = std::fs::read_to_string(e.tree.join("workspace.patch")).unwrap();
    for kept in ["primary01", "replica02", "admin_passwords:"] {
        assert!(
            out.contains(kept) && patch.contains(kept),
            "{kept}: {out}\n{patch}"
        );
    }
}

#[test]
fn a_secret_fields_variable_reference_or_sentence_stays_and_a_password_with_a_dollar_goes() {
    let env = Env::new();
    let e = crate::disguises::exported_session(
        &env,
        "dollar",
        &[
            json!({"type": "tool.call", "input": {"password": "$DB_PASSWORD", "token": "$$apiToken",
                "new_password_intro": "Lag et nytt passord og skriv det inn her."}}),
            json!({"type": "tool.call", "input": {"password": "$Xk9mQ2vL8pRt"}}),
        ],
    );
    gone(&e, "Xk9mQ2vL8pRt", "a password that starts with a dollar");
    let out = std::fs::read_to_string(e.tree.join("session.jsonl")).unwrap();
    for kept in [
        "\"$DB_PASSWORD\"",
        "\"$$apiToken\"",
        "Lag et nytt passord og skriv det inn her.",
    ] {
        assert!(out.contains(kept), "{kept}: {out}");
    }
}

#[test]
fn a_urls_password_parameter_goes_by_its_names_ending() {
    // A word is a URL's password as any value is (issue 41, item 3).
    let lines = [
        "  - \"jdbc:mysql://db/app?user=admin&userpass=sunshine\"",
        "fetch(\"https://h.test/login?db_pwd=letmein99&next=/\")",
        "GET https://h.test/page?bypass=cache_all_entries",
    ];
    let (_env, e, out) = exported("query-pass", &lines);
    gone(&e, "sunshine", "userpass");
    gone(&e, "letmein99", "db_pwd");
    assert!(out.contains("bypass=cache_all_entries"), "{out}");
}

#[test]
fn azures_identifiable_keys_go_by_their_signature_alone() {
    // Made up here, each the shape of Azure's identifiable keys: random
    // base64 with the service's signature at its fixed place.
    let random = "Xk29fLq83ZmP0aRtY4vB/c7Nd1We5Hs6Jg2Ku8Mo9Pi3Qy+Tz0Ab4Cd5Ef6Gh7Ij8Kl9Mn0Op1Qr2St3";
    let storage = format!("{}+ASt7kLm2Q==", &random[..76]);
    let bus = format!("{}+ASbB3xY2Z=", &random[4..37]);
    let search = format!("{}AzSeC7xY2k", &random[..42].replace(['/', '+'], "q"));
    assert_eq!((storage.len(), bus.len(), search.len()), (88, 44, 52));
    let lines = [
        // `az storage account keys list -o table`; a log line.
        format!("  key1  {storage}  FULL"),
        format!("INFO listener {bus} ok"),
        format!("search admin: {search}"),
        "the APIM gateway and AIoT hub are named in prose".to_string(),
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let (_env, e, out) = exported("azure-keys", &lines);
    for (key, what) in [
        (&storage, "storage"),
        (&bus, "service bus"),
        (&search, "search"),
    ] {
        gone(&e, key, what);
    }
    assert!(out.contains("the APIM gateway and AIoT hub"), "{out}");
}

#[test]
fn a_quoted_value_with_its_languages_prefix_goes_and_an_f_strings_template_stays() {
    let lines = [
        "if password == f\"Zr8Kq2Vn5Xw1\":",
        "var apiKey = $\"Hq7Lm2Xr9Vn4Kp8Wz1Yb\";",
        "auto secret = L\"Tc3Gd6Jf0Ns2Qe7U\";",
        "token = f\"Bearer {token}\"",
    ];
    let (_env, e, out) = exported("string-prefixes", &lines);
    gone(&e, "Zr8Kq2Vn5Xw1", "f-string");
    gone(&e, "Hq7Lm2Xr9Vn4Kp8Wz1Yb", "C# interpolated string");
    gone(&e, "Tc3Gd6Jf0Ns2Qe7U", "wide string");
    assert!(out.contains("token = f\\\"Bearer {token}\\\""), "{out}");
}

#[test]
fn a_yaml_list_of_passwords_printed_one_line_per_record_goes() {
    let lines = [
        "db:",
        "  admin_passwords:",
        "    - \"Hunter2go\"",
        "    - tr0ub4dor",
        "  hosts:",
        "    - primary01",
    ];
    let records: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| json!({"type": "tool.output.line", "stream": "stdout", "text": l}))
        .collect();
    let env = Env::new();
    let e = crate::disguises::exported_session(&env, "yaml-lines", &records);
    for secret in ["Hunter2go", "tr0ub4dor"] {
        gone(&e, secret, secret);
    }
    let out = std::fs::read_to_string(e.tree.join("session.jsonl")).unwrap();
    assert!(out.contains("primary01"), "{out}");
}

#[test]
fn a_pairs_value_goes_when_its_name_is_pass() {
    let lines = [
        "<entry>\n  <key>PASS</key>\n  <value>sunshine</value>\n</entry>",
        "{\"name\": \"pass\", \"value\": \"letmein99\"}",
        "<key>bypass</key><value>cache_all_entries</value>",
    ];
    let (_env, e, out) = exported("pass-pair", &lines);
    gone(&e, "sunshine", "an XML pair");
    gone(&e, "letmein99", "a JSON pair in text");
    assert!(out.contains("cache_all_entries"), "{out}");
}

#[test]
fn hex_after_a_credentials_word_goes_and_a_digest_under_its_label_stays() {
    // Made-up bodies in the shapes of ElevenLabs' `sk_`, Cursor's `key_`
    // and Scale's `live_` keys, none of which a vendor row names.
    let sk = format!("sk_{}", "2a30e5a0d39d5f2c5f6a9d2f95cd016049a6323985479bfd");
    let key = format!(
        "key_{}",
        "8c5a7657fc397e114def1b51dd520410ad50ece61e30b64261ff369ab275ef29"
    );
    let live = format!("live_{}", "8df31399ec4a4755a7cf9e0fb59f967a");
    let commit = "commit-3f786850e387550fdab836ed7e6dc881de23001b";
    let lines = [
        format!("voice = \"{sk}\""),
        format!("curl -u {key}: https://api.example.test/v0/me"),
        format!("client = Client(\"{live}\")"),
        format!("built from {commit}"),
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let (_env, e, out) = exported("hex-keys", &lines);
    for (secret, what) in [(&sk, "sk_"), (&key, "key_"), (&live, "live_")] {
        gone(&e, &secret[secret.len() - 24..], what);
    }
    assert!(out.contains(commit), "{out}");
}
