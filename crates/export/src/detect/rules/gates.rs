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

/// After a credential word in `secret-assignment`: the rest of the name
/// (`_key`, `word`, `_2`), perhaps a closing quote and bracket, blanks,
/// then an operator's first byte, a string's comma, or a type (`str =`).
/// Prose fails at once (`token usage`, `pass the`).
pub(crate) fn operator_follows_name(rest: &[u8]) -> bool {
    let mut i = rest
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
        .count();
    if matches!(rest.get(i), Some(b'"' | b'\'' | b'`')) {
        i += 1;
        if rest.get(i) == Some(&b']') {
            i += 1;
        }
    }
    // The regex's `\s` (ASCII: vertical tab included).
    i += rest[i..]
        .iter()
        .take_while(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
        .count();
    let rest = &rest[i..];
    matches!(
        rest.first(),
        Some(b'=' | b':' | b'!' | b'?' | b'.' | b'+' | b',')
    ) || rest.starts_with(b"str")
        || rest.starts_with(b"String")
        || rest.starts_with(b"&str")
}

/// After a credential word in `secret-element`: the rest of the element's
/// name, then `>`.
pub(crate) fn element_name_closes(rest: &[u8]) -> bool {
    let n = rest
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b':' | b'-'))
        .count();
    rest.get(n) == Some(&b'>')
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

/// After Airtable's `pat`, which `path`, `patch` and `pattern` hold too:
/// 14 letters and digits, then the dot.
pub(crate) fn airtable_body(rest: &[u8]) -> bool {
    rest.get(14) == Some(&b'.') && rest[..14].iter().all(u8::is_ascii_alphanumeric)
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
        // The run's first 32 bytes in one branch-free pass (the compiler
        // vectorizes a fixed-size loop): most separators fail here, and
        // the hex ids of logs (`evt_<32 hex>`) hold no letter past `f`.
        let Some(head) = hay.get(i + 1..i + 33) else {
            return false;
        };
        let (mut alnum, mut past_f) = (true, false);
        for &c in head {
            alnum &= c.is_ascii_alphanumeric();
            past_f |= (c | 0x20) > b'f';
        }
        // A longer hex run may hold its first letter past `f` later on;
        // a hex run after a credential's word is a key (`sk_<48 hex>`).
        alnum
            && (past_f
                || hay[i + 33..]
                    .iter()
                    .take_while(|c| c.is_ascii_alphanumeric())
                    .any(|c| (c | 0x20) > b'f')
                || credential_word_before(&hay[..i]))
    })
}

/// Whether the letters just before a separator are one of
/// [`super::vetoes::CREDENTIAL_WORDS`] (the veto then reads the whole
/// prefix).
fn credential_word_before(before: &[u8]) -> bool {
    let n = before
        .iter()
        .rev()
        .take_while(|c| c.is_ascii_alphabetic())
        .count();
    let word = &before[before.len() - n..];
    super::vetoes::CREDENTIAL_WORDS
        .iter()
        .any(|w| word.eq_ignore_ascii_case(w.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The prefixed-token gate as first written: the whole run after each
    /// separator, then its length and letters (or a credential's word
    /// before the separator).
    fn long_run_reference(hay: &[u8]) -> bool {
        memchr::memchr2_iter(b'_', b'-', hay).any(|i| {
            let run: Vec<u8> = hay[i + 1..]
                .iter()
                .copied()
                .take_while(u8::is_ascii_alphanumeric)
                .collect();
            let word: Vec<u8> = hay[..i]
                .iter()
                .rev()
                .take_while(|c| c.is_ascii_alphabetic())
                .map(u8::to_ascii_lowercase)
                .collect::<Vec<u8>>()
                .into_iter()
                .rev()
                .collect();
            run.len() >= 32
                && (run.iter().any(|c| (c | 0x20) > b'f')
                    || crate::detect::rules::vetoes::CREDENTIAL_WORDS
                        .iter()
                        .any(|w| word == w.as_bytes()))
        })
    }

    proptest! {
        #[test]
        fn the_windowed_prefixed_token_gate_agrees_with_the_whole_run(
            hay in proptest::collection::vec(
                prop_oneof![
                    8 => proptest::sample::select(b"0a9fF".to_vec()),
                    1 => proptest::sample::select(b"_-gZ .".to_vec()),
                    1 => proptest::sample::select(b"skeylivAUTH".to_vec()),
                    1 => any::<u8>(),
                ],
                0..120,
            ),
        ) {
            prop_assert_eq!(long_run_after_separator(&hay), long_run_reference(&hay));
        }
    }

    #[test]
    fn hex_ids_fail_the_prefixed_token_gate_and_tokens_pass() {
        let hex = format!("evt_{}", "f5e2fc574dad2986ce8349606a06e9ab");
        assert!(!long_run_after_separator(hex.as_bytes()));
        // A letter past `f` after the first 32 bytes still counts.
        let long = format!("x_{}g", "0123456789abcdef".repeat(3));
        assert!(long_run_after_separator(long.as_bytes()));
        assert!(long_run_after_separator(
            b"apk_0123456789abcdefghij0123456789ABCDEF"
        ));
        assert!(!long_run_after_separator(
            b"apk_0123456789abcdefghij0123456"
        ));
        // Hex after a credential's word is a key's body.
        assert!(long_run_after_separator(
            b"sk_2a30e5a0d39d5f2c5f6a9d2f95cd016049a6323985479bfd"
        ));
        assert!(!long_run_after_separator(
            b"commit-2a30e5a0d39d5f2c5f6a9d2f95cd016049a63239"
        ));
    }

    #[test]
    fn an_assignment_needs_an_operator_after_the_name() {
        for rest in [
            &b"=abc"[..],
            b"_KEY: x",
            b"word\" => x",
            b"_2 := x",
            b"\"] = x",
            b"', 'x'",
            b" string = x",
            b" &str = x",
            b"\n    = x",
            b".value = x",
        ] {
            assert!(
                operator_follows_name(rest),
                "{}",
                String::from_utf8_lossy(rest)
            );
        }
        for rest in [
            &b" usage was high"[..],
            b"s in the prompt",
            b" the test",
            b"",
        ] {
            assert!(
                !operator_follows_name(rest),
                "{}",
                String::from_utf8_lossy(rest)
            );
        }
    }

    #[test]
    fn an_element_needs_its_name_closed() {
        assert!(element_name_closes(b">abc</x>"));
        assert!(element_name_closes(b"word>abc"));
        assert!(element_name_closes(b"s:x>abc"));
        assert!(!element_name_closes(b" usage"));
        assert!(!element_name_closes(b"Name attr=\"1\">"));
    }

    #[test]
    fn airtables_pat_needs_its_body_and_dot() {
        assert!(airtable_body(b"AbCdEf0123456z.0a1b"));
        assert!(!airtable_body(b"h: src/main.rs"));
        assert!(!airtable_body(b"tern"));
        assert!(!airtable_body(b"AbCdEf0123456z0a1b"));
    }
}
