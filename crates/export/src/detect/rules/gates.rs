//! Gates: cheap byte tests that decide whether a rule can match at all,
//! so its regex runs only where one passes. A rule without keywords has a
//! gate over the whole string; a rule whose keyword is common has one over
//! the text after each keyword occurrence. `prefilter_is_sound` checks that
//! every match passes its rule's gate.

/// A Mailgun key is `<32 hex>-<8 hex>-<8 hex>`: a dash with eight hex
/// digits and another dash after it, and 32 hex digits before it.
pub(crate) fn hex_dash_hex_dash(hay: &[u8]) -> bool {
    memchr::memchr_iter(b'-', hay).any(|i| {
        i >= 32
            && hay.get(i + 9) == Some(&b'-')
            && hay[i + 1..i + 9].iter().all(u8::is_ascii_hexdigit)
            && hay[i - 32..i].iter().all(u8::is_ascii_hexdigit)
    })
}

/// An Asana token is `<digits>:<32 hex>`: a colon after a digit, with
/// 32 hex digits after it.
pub(crate) fn colon_then_hex32(hay: &[u8]) -> bool {
    memchr::memchr_iter(b':', hay).any(|i| {
        i > 0
            && hay[i - 1].is_ascii_digit()
            && hay
                .get(i + 1..i + 33)
                .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
    })
}

/// A Facebook app token is `<15-16 digit app id>|<secret>`: a bar after
/// fifteen digits.
pub(crate) fn digits_then_bar(hay: &[u8]) -> bool {
    memchr::memchr_iter(b'|', hay).any(|i| i >= 15 && hay[i - 15..i].iter().all(u8::is_ascii_digit))
}

/// A Discord token is `<24-26>.<6>.<27-40>`: two dots seven bytes apart.
pub(crate) fn dots_seven_apart(hay: &[u8]) -> bool {
    let mut last = None;
    for i in memchr::memchr_iter(b'.', hay) {
        if last.is_some_and(|l| i - l == 7) {
            return true;
        }
        last = Some(i);
    }
    false
}

/// After `token ` in `secret-label-spaced`: more blanks, perhaps a quote,
/// then at least 16 characters of a value (most prose has a word there).
pub(crate) fn spaced_value_follows(rest: &[u8]) -> bool {
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

/// After Ionic's `ion_`, which also ends `session_`, `version_`,
/// `region_`: the token's 42 letters and digits.
pub(crate) fn ionic_body(rest: &[u8]) -> bool {
    rest.len() >= 42 && rest[..42].iter().all(u8::is_ascii_alphanumeric)
}

/// After `-u`, which words hold too (`re-use`, `x-user-id`): an option's
/// blank, `=` or the rest of `--user`.
pub(crate) fn option_user(rest: &[u8]) -> bool {
    rest.first()
        .is_some_and(|c| matches!(c, b' ' | b'\t' | b'='))
        || rest.starts_with(b"ser")
}

/// After Salesforce's `00D`, which hex and numbers hold too: the org id's
/// 12 characters and `!`.
pub(crate) fn salesforce_org(rest: &[u8]) -> bool {
    rest.get(12) == Some(&b'!') && rest[..12].iter().all(u8::is_ascii_alphanumeric)
}

/// A generic prefixed token: a `_` or `-`, then a run of 32 letters and
/// digits or more holding a letter past `f` (the row spares hex bodies:
/// digests and ids under their labels, which JSON logs are full of).
pub(crate) fn long_run_after_separator(hay: &[u8]) -> bool {
    memchr::memchr2_iter(b'_', b'-', hay).any(|i| {
        // The run's 32nd byte first: most separators (a JSON key's
        // `tool_use_id`) fail there in one load.
        if !hay.get(i + 32).is_some_and(u8::is_ascii_alphanumeric) {
            return false;
        }
        // One pass over the run: its length, and whether a letter past
        // `f` is in it.
        let (mut n, mut past_f) = (0, false);
        for &c in &hay[i + 1..] {
            if !c.is_ascii_alphanumeric() {
                break;
            }
            n += 1;
            past_f |= (c | 0x20) > b'f';
        }
        n >= 32 && past_f
    })
}
