//! Code: a value that is visibly source (a call, a member, a type, a
//! format string, a path of words) stands where a credential might, and is
//! not one.

use super::*;

/// Whether the line that `before` ends opens a block: a Python `def`,
/// `class`, `if`, `elif`, `else`, `for`, `while`, `with`, `try` or
/// `except` (perhaps `async`), whose `:` ends a header, not a label.
pub(crate) fn block_header(before: &[u8]) -> bool {
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

/// Whether the code after a string literal fills it in as a template:
/// Python's `%` operator or `.format(`.
pub(crate) fn format_applied(after: &[u8]) -> bool {
    let a = after.trim_ascii_start();
    (a.starts_with(b"%") && !a.starts_with(b"%=")) || a.starts_with(b".format(")
}

/// Code around a quote that closed the label's own string:
/// `"Password: " + getPassword() + ","`, `'password = '.$p['x']`,
/// `"…:_password = "+new Buffer(…)`.
pub(crate) fn concatenation(v: &[u8]) -> bool {
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
pub(crate) fn in_arn(before: &[u8]) -> bool {
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
pub(crate) fn in_base64(before: &[u8], name: &[u8]) -> bool {
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
pub(crate) fn path_of_words(v: &[u8]) -> bool {
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
pub(crate) fn windows_path(v: &[u8]) -> bool {
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

/// A name and operator of a match arm or a table of variants:
/// `ExporterMasterSecret =>`, `Self::PrivateKey =>` (a capitalized name
/// with no `_`, not a Ruby symbol's `:password =>`).
pub(crate) fn match_arm(before: &[u8], name: &[u8], between: &[u8]) -> bool {
    between.trim_ascii().starts_with(b"=>")
        && name.first().is_some_and(u8::is_ascii_uppercase)
        && name.iter().any(u8::is_ascii_lowercase)
        && name.iter().all(u8::is_ascii_alphanumeric)
        && (!before.ends_with(b":") || before.ends_with(b"::"))
}

/// Words of common languages that stand where a literal would in code: a
/// value equal to one of them is a reference, a type or a keyword.
pub(crate) const CODE_WORDS: &[&str] = &[
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

/// Whether `value`, standing after `before` and before `after`, is code
/// rather than a credential: a code word or a command substitution
/// anywhere, and, unquoted, any of the [`UNQUOTED`] shapes.
pub(crate) fn is_code(before: &[u8], value: &[u8], after: &[u8], quoted: bool) -> bool {
    let c = Code {
        before,
        op: before.trim_ascii_end(),
        value,
        after,
    };
    code_word(&c) || command_substitution(&c) || (!quoted && UNQUOTED.iter().any(|shape| shape(&c)))
}

/// A value in its place.
struct Code<'a> {
    before: &'a [u8],
    /// `before` without its trailing blanks: the operator, if any.
    op: &'a [u8],
    value: &'a [u8],
    after: &'a [u8],
}

/// The shapes of code an unquoted value may have (a quoted string is a
/// literal whatever it holds).
const UNQUOTED: &[fn(&Code) -> bool] = &[
    syntax_marks,
    renamed_identifier,
    instance_variable,
    statement_end,
    c_declaration,
    member_path_value,
    python_annotation,
    setting_choices,
    chained_assignment,
    called_or_typed,
];

fn code_word(c: &Code) -> bool {
    let lower = c.value.to_ascii_lowercase();
    CODE_WORDS.contains(&std::str::from_utf8(&lower).unwrap_or(""))
}

/// `"postgres://$(whoami)@localhost"`: a shell's command substitution,
/// even in double quotes.
fn command_substitution(c: &Code) -> bool {
    enclosed_name(
        c.value,
        b"$(",
        |c| c.is_ascii_lowercase() || b"_- ".contains(&c),
        b')',
    )
}

/// Operators and literals only code writes.
fn syntax_marks(c: &Code) -> bool {
    let value = c.value;
    let has = |needle: &[u8]| value.windows(needle.len()).any(|w| w == needle);
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
    let compared = [&b"=="[..], b"!=", b"<=", b">="]
        .iter()
        .any(|o| c.op.ends_with(o));
    abnf
        || int_suffix
        || perl_ref
        || compared
        // Optional chaining and nullish defaults (`options?.createKey`,
        // `a ?? b`): JavaScript.
        || has(b"?.")
        || has(b"??")
        // `!publicKey.expires` (a negation), `/^Unexpected token…/` (a
        // regex literal).
        || value.first().is_some_and(|c| b"(:[{.!".contains(c))
        || value.starts_with(b"/^")
        // `/*#__PURE__*/function () {`: a comment opens code.
        || value.starts_with(b"/*")
        || has(b"(")
        || has(b"::")
        || has(b"->")
        || has(b"=>")
        || has(b"[")
}

/// An identifier (`$` as JavaScript allows it: `app$1`, `CommaToken$1`).
fn ident(w: &[u8]) -> bool {
    !w.is_empty()
        && (w[0].is_ascii_alphabetic() || w[0] == b'_')
        && w.iter()
            .all(|c| c.is_ascii_alphanumeric() || b"_$".contains(c))
}

/// A bundler's or compiler's renaming suffix (`CommaToken$1`,
/// `messages_1`) is no digit of the name's own.
fn renamed(w: &[u8]) -> bool {
    let digits = w.iter().rev().take_while(|c| c.is_ascii_digit()).count();
    digits > 0 && digits < w.len() && b"$_".contains(&w[w.len() - digits - 1])
}

fn renamed_identifier(c: &Code) -> bool {
    ident(c.value) && c.value.contains(&b'$') && renamed(c.value)
}

/// `token = @token` (Ruby's instance variable), `: @blakeembrey` (a
/// handle): a name, not a value.
fn instance_variable(c: &Code) -> bool {
    c.value.strip_prefix(b"@").is_some_and(ident)
}

/// A name's words around digits (`defaultToConfig2`, `Uint8Array`); not
/// `Q7yWk6WLjKNiwxX4vXVx`.
fn words_around_digits(v: &[u8]) -> bool {
    !random_case(v)
        && v.split(|c| c.is_ascii_digit() || b"_$".contains(c))
            .filter(|p| !p.is_empty())
            .all(|p| {
                // Humps that each end in lower-case letters.
                p.split_inclusive(u8::is_ascii_lowercase)
                    .all(|h| h.iter().filter(|c| c.is_ascii_uppercase()).count() <= 1)
                    && p.last().is_some_and(u8::is_ascii_lowercase)
            })
}

/// A statement's end or the next member after `name: value` or `name =
/// value` in code: `public streamToken: Uint8Array;`, `withXSRFToken:
/// defaultToConfig2,`, `this.password = arg2;` (a type or a variable;
/// `.env` and YAML write neither `;` nor `, ` after a bare value). Letters
/// whose case flips at every other one are a token all the same. (A
/// TypeScript union of such names: `Buffer|Uint8Array|string;`.)
fn statement_end(c: &Code) -> bool {
    let code_op = c.op.ends_with(b":")
        || (c.before.ends_with(b" ") && c.op.ends_with(b"="))
        || c.before.ends_with(b"private ");
    let mut names = c.value.split(|c| *c == b'|');
    code_op
        && names.clone().all(ident)
        && (c.after.starts_with(b";")
            || ((c.after.starts_with(b",") || c.after.starts_with(b")"))
                && names.all(words_around_digits)))
}

/// Declarations in C and Rust bindings: `secret: *const u8`, `token:
/// __u64` (reserved names), `TOKEN: _bindgen_ty_5 = …` (a type, then the
/// value).
fn c_declaration(c: &Code) -> bool {
    let value = c.value;
    value.strip_prefix(b"*").is_some_and(ident)
        || (value.starts_with(b"__") && ident(value))
        || (ident(value) && {
            let rest = c.after.trim_ascii_start();
            rest.starts_with(b"=") && !rest.starts_with(b"==")
        })
}

/// `self.password`, `config.api_key`, `exports2.STRICT_TOKEN`: a member
/// of a known object, or a path of names without digits of their own.
/// (After the first, JavaScript's private `#field` and `$__field`.)
fn member_path(v: &[u8]) -> bool {
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
}

fn member_path_value(c: &Code) -> bool {
    member_path(c.value)
}

fn capitalized(w: &[u8]) -> bool {
    ident(w) && w[0].is_ascii_uppercase()
}

/// Python's annotations: `key: PrivateKeyTypes | None`,
/// `startToken:Token=None` (a capitalized type, then a union or a default
/// of nothing).
fn python_annotation(c: &Code) -> bool {
    let union = capitalized(c.value)
        && c.after
            .trim_ascii_start()
            .strip_prefix(b"|")
            .is_some_and(|t| {
                capitalized(
                    t.trim_ascii_start()
                        .split(|c| !c.is_ascii_alphanumeric() && *c != b'_')
                        .next()
                        .unwrap_or(b""),
                )
            });
    let nothing = |w: &[u8]| [&b"None"[..], b"null", b"nil"].contains(&w);
    let default_none = c
        .value
        .iter()
        .position(|c| *c == b'=')
        .is_some_and(|i| capitalized(&c.value[..i]) && nothing(&c.value[i + 1..]));
    union || default_none
}

/// `ssl.need.client.auth=true|false`: the choices a setting takes.
fn setting_choices(c: &Code) -> bool {
    c.value.contains(&b'|')
        && c.value
            .split(|c| *c == b'|')
            .all(|w| CODE_WORDS.contains(&String::from_utf8_lossy(w).to_ascii_lowercase().as_str()))
}

/// Minified chained assignments (`P.isWritable=P.isReadable=void`).
fn chained_assignment(c: &Code) -> bool {
    let pieces: Vec<&[u8]> = c.value.split(|c| *c == b'=').collect();
    pieces.len() >= 2
        && pieces
            .iter()
            .all(|p| member_path(p) || CODE_WORDS.contains(&String::from_utf8_lossy(p).as_ref()))
}

/// `Option<String>`, `EncapsulationKey::new`, `tokens[0]`: a name called,
/// indexed, or a type's name.
fn called_or_typed(c: &Code) -> bool {
    // A member follows a dot (`token.value`); a sentence's full stop
    // ends at a blank or the text's end.
    let member = c.after.first() == Some(&b'.')
        && c.after
            .get(1)
            .is_some_and(|n| n.is_ascii_alphabetic() || *n == b'_');
    ident(c.value)
        && (c.after.first().is_some_and(|c| b"<([".contains(c))
            || member
            || c.after.starts_with(b"::")
            || type_name(c.value))
}

/// `EncapsulationKey`, `PublicKeyComponents`: two or more capitalized
/// humps of at least three letters, no digit (random tokens have digits or
/// short humps: `AbCdEf`).
pub(crate) fn type_name(value: &[u8]) -> bool {
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
pub(crate) const CODE_OBJECTS: &[&str] = &[
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
pub(crate) fn bare_word(value: &[u8]) -> bool {
    !value.is_empty()
        && value
            .iter()
            .all(|c| c.is_ascii_alphabetic() || *c == b'_' || *c == b'-')
        && !random_case(value)
}

/// Whether `v`'s first `open` is followed by one or more bytes of
/// `name` and then `close` (`<DATABASE_NAME>`, `$(whoami)`).
pub(crate) fn enclosed_name(v: &[u8], open: &[u8], name: fn(u8) -> bool, close: u8) -> bool {
    memchr::memmem::find(v, open).is_some_and(|i| {
        let rest = &v[i + open.len()..];
        let n = rest.iter().take_while(|c| name(**c)).count();
        n > 0 && rest.get(n) == Some(&close)
    })
}

/// Whether the line before an `.npmrc` value names its registry
/// (`//registry.npmjs.org/:_authToken=`): there a UUID is one of npm's
/// legacy tokens, whatever its version.
pub(crate) fn registry_scoped(before: &[u8]) -> bool {
    let line = before.rsplit(|c| *c == b'\n').next().unwrap_or(before);
    let line = line.trim_ascii_start();
    line.starts_with(b"//")
        && line.get(2).is_some_and(|c| !matches!(c, b'/' | b':'))
        && memchr::memmem::find(line, b"/:_").is_some()
}

/// Whether what stands between a name and its value is a comma, with
/// no `=` or `:` (a tuple's or a call's neighbours, not an assignment).
pub(crate) fn side_by_side(between: &[u8]) -> bool {
    between.contains(&b',') && !between.iter().any(|c| matches!(c, b'=' | b':'))
}
