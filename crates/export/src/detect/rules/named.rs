//! Named credentials: a service's name, then a credential-shaped value,
//! for the services no rule of their own describes.
//!
//! A vendor's token with no fixed prefix is written the same way in
//! every suite and every config: the service's name, perhaps a credential
//! word (`key`, `SECRET`, `ClientId`), an assignment in some syntax, and
//! a random value (`cloudsmith: 3f0c…`, `ayrshare SECRET ABCD1234-…`,
//! `apifonica-SECRET-…`, `<bitbar_key>…</bitbar_key>`). One generic
//! reading covers them all; what varies is data: the service names in
//! `services.txt`, written by `bench/services.py` from public scanners'
//! detector catalogs.
//!
//! The reading, from a name's occurrence:
//! 1. the name starts a word (after a non-letter, or as a camel-case hump);
//! 2. credential words follow, glued, camel-cased or after `_ - . `;
//!    any other word after the name means the name was part of something
//!    else (`stripeCustomerId`, `github.com`);
//! 3. an assignment: blanks, quotes and at most one operator
//!    (`=`, `:`, `:=`, `=>`, `|`, `,`, `(`, `>`, or `-` glued to a
//!    credential word);
//! 4. a value that looks like a credential ([`plausible`]).
//!
//! A name that is also a common word (` ~` in the list) counts only with
//! a credential word after it. A name followed by blanks alone needs a
//! value that is long and random (`cloudsmith 1234…`), since prose puts
//! words there.

use super::spec::{spec, Gate, Spec};
use super::Check;
use super::{
    constant_name, credential_like, identifier, is_placeholder, marked_fake, path_of_words,
    random_case, spells_the_alphabet, typed_filler, versioned_name, word_then_digits,
};

/// The rule's id.
pub const ID: &str = "named-credential";

/// The row of the rule table: its keywords and pattern are the service
/// names.
pub(crate) static SPEC: Spec = Spec {
    generated: Some(|| {
        let keywords = services()
            .map(|(n, common)| (n.to_string(), common.then_some(follows_common as Gate)))
            .collect();
        (keywords, shortest_pattern())
    }),
    ..spec(ID, &[], "", Check::Named)
}
.after_keyword(follows);

/// Bytes a value may start after the end of the name: credential words,
/// separators, quotes.
pub const MAX_GAP: usize = 48;

/// A value's random core (see [`core_run`]) ends within this many bytes
/// of the value's start.
const CORE_WITHIN: usize = 40;

/// The longest value taken.
const MAX_VALUE: usize = 512;

const LIST: &str = include_str!("services.txt");

/// The service names (lower case), and whether each is also a common
/// word.
pub fn services() -> impl Iterator<Item = (&'static str, bool)> {
    LIST.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| match l.strip_suffix(" ~") {
            Some(n) => (n, true),
            None => (l, false),
        })
}

/// The row's regex, which only gives the row its shortest match: the
/// hits come from [`names`], and compiling [`pattern`]'s ~960 folded
/// names took most of a process's start.
fn shortest_pattern() -> String {
    let shortest = services().map(|(n, _)| n.len()).min().unwrap_or(1);
    format!("(?i)[a-z0-9]{{{shortest},}}")
}

/// Any name, longest first (a leftmost-first
/// alternation then prefers `currencylayer` to `currency`): what
/// [`names`] finds, as a regex (the tests compare the two).
#[cfg(test)]
fn pattern() -> String {
    let mut names: Vec<&str> = services().map(|(n, _)| n).collect();
    names.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    format!("(?i)(?:{})", names.join("|"))
}

/// Words that name a credential; one of them makes a common-word name
/// count.
const CREDENTIAL_WORDS: &[&str] = &[
    "apikey",
    "credentials",
    "credential",
    "password",
    "passwd",
    "secret",
    "tokens",
    "token",
    "keys",
    "key",
    "pass",
    "pwd",
    "pat",
    "auth",
    "bearer",
    "sid",
];

/// Words that may stand between a name and its value without naming a
/// credential themselves (`bitbucket_client_secret`). `AUTH0_DOMAIN`
/// names no secret.
const QUALIFIERS: &[&str] = &[
    "access", "account", "admin", "api", "app", "client", "license", "live", "master", "oauth",
    "org", "personal", "private", "prod", "project", "refresh", "server", "service", "session",
    "sdk", "signing", "test", "user", "webhook", "write", ID_WORD,
];

/// The word for the public half of a service's credential pair
/// (`hive_id`, `AUTH0_CLIENT_ID`, `spotify id`): its value is taken when
/// it passes [`plausible`] as any value does (an account's number is
/// digits, a project's name words and digits, and neither passes). A
/// partner has no use for the id that pairs with a secret, and a
/// scanner's pair verifies with both halves, so the id goes with the
/// secret.
const ID_WORD: &str = "id";

/// The test the text after a name's occurrence must pass for the rule to
/// run: a random core within reach, or a credential word and then a run
/// of sixteen letters ([`drawn_letters`]). Every hit passes it (a hit's value
/// starts within [`MAX_GAP`] of the name and holds its core within
/// `CORE_WITHIN` of its start).
pub fn follows(rest: &[u8]) -> bool {
    let window = &rest[..rest.len().min(MAX_GAP + CORE_WITHIN)];
    holds_core_run(window)
        || (credential_words(rest, 0).0.credential
            && window
                .split(|c| !c.is_ascii_alphabetic())
                .any(|run| run.len() >= 16))
}

/// [`follows`] for a name that is also a common word: a credential word
/// must come first ([`credential`] asks the same), which most prose
/// fails at its first byte (`harness` in an agent's log).
fn follows_common(rest: &[u8]) -> bool {
    credential_words(rest, 0).0.names_one() && follows(rest)
}

/// Whether `text` holds a run of eight or more of `[A-Za-z0-9+/=~]` with
/// a digit or both cases: looser than [`core_run`], since a run in a
/// window may reach past a value's ends. In one pass, since it runs at
/// every occurrence of a service's name.
fn holds_core_run(text: &[u8]) -> bool {
    // One pass: the current run's length, and what it holds (bit 0 a
    // digit, 1 an upper-case letter, 2 a lower-case letter).
    let (mut len, mut seen) = (0usize, 0u8);
    for &c in text {
        let class = match c {
            b'0'..=b'9' => 1,
            b'A'..=b'Z' => 2,
            b'a'..=b'z' => 4,
            b'+' | b'/' | b'=' | b'~' => 0,
            _ => {
                (len, seen) = (0, 0);
                continue;
            }
        };
        len += 1;
        seen |= class;
        if len >= 8 && (seen & 1 != 0 || seen & 6 == 6) {
            return true;
        }
    }
    false
}

/// The first run of eight or more of `[A-Za-z0-9+/=~]` that holds a digit
/// and a letter, or changes case like a random string: (start, end).
fn core_run(v: &[u8]) -> Option<(usize, usize)> {
    let mut i = 0;
    while i < v.len() {
        let n = v[i..].iter().take_while(|c| core_byte(**c)).count();
        if n >= 8 {
            let run = &v[i..i + n];
            let digit = run.iter().any(u8::is_ascii_digit);
            let letter = run.iter().any(u8::is_ascii_alphabetic);
            if (digit && letter) || random_case(run) {
                return Some((i, i + n));
            }
        }
        i += n.max(1);
    }
    None
}

fn core_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"+/=~".contains(&c)
}

fn value_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"+/_.=~-".contains(&c)
}

/// Hits of the rule at `rule` in `hay`: each name found by [`names`]
/// that names a credential. `at`: every occurrence of a name (the
/// prefilter's walk), of which the leftmost, then longest, are read,
/// as [`names`] reads them; `None` searches `hay` with [`names`].
pub(crate) fn hits(
    rule: usize,
    hay: &[u8],
    at: Option<&[super::Occurrence]>,
    out: &mut Vec<super::Hit>,
) {
    let (names, common) = names();
    let mut read = |start: usize, end: usize, name: usize| {
        if let Some((start, end)) = credential(hay, start, end, common[name]) {
            out.push(super::Hit { rule, start, end });
        }
    };
    match at {
        Some(at) => {
            let mut from = 0;
            for o in leftmost_longest(at) {
                if o.start >= from {
                    from = o.end;
                    read(o.start, o.end, o.keyword);
                }
            }
        }
        None => {
            for m in names.find_iter(hay) {
                read(m.start(), m.end(), m.pattern().as_usize());
            }
        }
    }
}

/// Occurrences sorted by start, the longest first at each start.
fn leftmost_longest(at: &[super::Occurrence]) -> Vec<super::Occurrence> {
    let mut v = at.to_vec();
    v.sort_unstable_by_key(|o| (o.start, std::cmp::Reverse(o.end)));
    v
}

/// The names as an automaton (leftmost, then longest, ASCII case
/// folded: what [`pattern`]'s alternation finds, tested), and whether
/// each is also a common word. Why not the regex: its lazy DFA over
/// ~960 folded names never fits its cache on source code, where names
/// stand everywhere, and rebuilding states took two thirds of an
/// export's time (`bench/benign.sh`).
fn names() -> &'static (aho_corasick::AhoCorasick, Vec<bool>) {
    static NAMES: std::sync::OnceLock<(aho_corasick::AhoCorasick, Vec<bool>)> =
        std::sync::OnceLock::new();
    NAMES.get_or_init(|| {
        let (names, common): (Vec<&str>, Vec<bool>) = services().unzip();
        let ac = aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::LeftmostLongest)
            .ascii_case_insensitive(true)
            // A DFA: names stand everywhere in source code, and a
            // case-folded set this large has no useful prefilter.
            .kind(Some(aho_corasick::AhoCorasickKind::DFA))
            .build(names)
            .expect("service names build an automaton");
        (ac, common)
    })
}

/// The credential a name's occurrence at `[start, end)` of `hay` names:
/// the value's span.
pub fn credential(hay: &[u8], start: usize, end: usize, common: bool) -> Option<(usize, usize)> {
    if !starts_word(hay, start) {
        return None;
    }
    let (words, mut at) = credential_words(hay, end);
    if common && !words.names_one() {
        return None;
    }
    // The name ran on into another word: it named something else.
    if hay.get(at).is_some_and(u8::is_ascii_alphabetic) {
        return None;
    }
    // `_2`, `1`: a numbered key.
    let digits = hay[at..].iter().take_while(|c| c.is_ascii_digit()).count();
    if digits > 2 {
        return None;
    }
    at += digits;
    let (value_start, operator) = assignment(hay, at, words.any)?;
    if value_start - end > MAX_GAP {
        return None;
    }
    let mut value_end = value_start
        + hay[value_start..]
            .iter()
            .take(MAX_VALUE)
            .take_while(|c| value_byte(**c))
            .count();
    // A sentence's full stop or dash is not part of the value.
    while value_end > value_start && matches!(hay[value_end - 1], b'.' | b'-' | b'_') {
        value_end -= 1;
    }
    let value = &hay[value_start..value_end];
    // A call (`Stripe(key)`), a member (`client.token`), an address
    // (`user@host`), a host and port: code and names, not a value.
    if matches!(hay.get(value_end), Some(b'(' | b'@' | b'[' | b'{')) {
        return None;
    }
    let alone = !operator && !words.any;
    let keyed = words.credential && !words.id;
    let numeric_key = keyed && numeric_token(value);
    let letters_key = keyed && drawn_letters(value);
    (numeric_key || letters_key || plausible(value, alone)).then_some((value_start, value_end))
}

/// Whether a word starts at `start`: after a non-letter, or as a
/// camel-case hump (`newAblyKey`), never inside a word (`inbox`).
fn starts_word(hay: &[u8], start: usize) -> bool {
    match start.checked_sub(1).map(|i| hay[i]) {
        None => true,
        Some(p) if !p.is_ascii_alphanumeric() => true,
        Some(p) => p.is_ascii_lowercase() && hay[start].is_ascii_uppercase(),
    }
}

struct Words {
    /// Some credential or qualifier word followed the name.
    any: bool,
    /// One of them named a credential.
    credential: bool,
    /// The last of them was [`ID_WORD`].
    id: bool,
    /// `client` came before that `id` (`GITHUB_CLIENT_ID`, `clientID`).
    client_id: bool,
}

impl Words {
    /// Whether the words name a credential's half: a credential word, or
    /// an OAuth client's id (`paypal_client_id`, `GITHUB_CLIENT_ID`),
    /// which pairs with the client's secret as a common-word name's
    /// `_id` alone (`harness_id`, a run's) does not.
    fn names_one(&self) -> bool {
        self.credential || self.client_id
    }
}

/// The credential and qualifier words right after a name, each glued,
/// camel-cased or after one of `_ - . ` and a blank: what they are, and
/// where they end.
fn credential_words(hay: &[u8], mut at: usize) -> (Words, usize) {
    let mut words = Words {
        any: false,
        credential: false,
        id: false,
        client_id: false,
    };
    let mut after_client = false;
    loop {
        let sep = usize::from(matches!(hay.get(at), Some(b'_' | b'-' | b'.' | b' ')));
        let from = at + sep;
        // Most text fails at its first letter: no word is compared past it.
        let Some(first) = hay.get(from).map(u8::to_ascii_lowercase) else {
            return (words, at);
        };
        if !word_initial(first) {
            return (words, at);
        }
        let found = CREDENTIAL_WORDS
            .iter()
            .map(|w| (w, true))
            .chain(QUALIFIERS.iter().map(|w| (w, false)))
            .find(|(w, _)| w.as_bytes()[0] == first && word_at(hay, from, w));
        match found {
            Some((w, credential)) => {
                words.any = true;
                words.credential |= credential;
                words.id = *w == ID_WORD;
                words.client_id = words.id && after_client;
                after_client = *w == "client";
                at = from + w.len();
            }
            None => return (words, at),
        }
    }
}

/// `w` at `at` (any case), ending where a word ends: at a non-letter, or
/// where the next hump starts (`KeySecret`, `keySECRET`), or at another
/// credential word (`apikey`, `SECRETTOKEN`).
/// Whether some credential or qualifier word starts with `c` (lower
/// case).
fn word_initial(c: u8) -> bool {
    static INITIALS: std::sync::LazyLock<[bool; 256]> = std::sync::LazyLock::new(|| {
        let mut set = [false; 256];
        for w in CREDENTIAL_WORDS.iter().chain(QUALIFIERS) {
            set[usize::from(w.as_bytes()[0])] = true;
        }
        set
    });
    INITIALS[usize::from(c)]
}

fn word_at(hay: &[u8], at: usize, w: &str) -> bool {
    let Some(got) = hay.get(at..at + w.len()) else {
        return false;
    };
    if !got.eq_ignore_ascii_case(w.as_bytes()) {
        return false;
    }
    let last = got[got.len() - 1];
    match hay.get(at + w.len()) {
        None => true,
        Some(n) if !n.is_ascii_alphabetic() => true,
        Some(n) if n.is_ascii_uppercase() && last.is_ascii_lowercase() => true,
        Some(_) => CREDENTIAL_WORDS.iter().chain(QUALIFIERS).any(|next| {
            hay[at + w.len()..].len() >= next.len() && word_at(hay, at + w.len(), next)
        }),
    }
}

/// The assignment after a name and its words: where the value starts,
/// and whether an operator or quote (not blanks alone) led to it.
fn assignment(hay: &[u8], mut at: usize, after_word: bool) -> Option<(usize, bool)> {
    let mut operator = false;
    let mut operators = 0;
    // `apifonica-SECRET-…`, `codakey-…`: a dash glued to a credential
    // word.
    if after_word && hay.get(at) == Some(&b'-') {
        return Some((at + 1, true));
    }
    // Twelve bytes of quotes and operators at most; blanks that align a
    // column (`TWITTER_ID:      "…"`) count only toward the gap.
    let (limit, mut marks) = ((at + MAX_GAP).min(hay.len()), 0);
    while at < limit && marks < 12 {
        let rest = &hay[at..];
        marks += usize::from(!matches!(rest[0], b' ' | b'\t'));
        // `||` and `??`: a literal a setting falls back to
        // (`process.env.MAILGUN_KEY || 'key-…'`).
        const OPERATORS: [&[u8]; 10] = [
            b"=>", b":=", b"||", b"??", b"=", b":", b"|", b",", b"(", b">",
        ];
        let op = OPERATORS.iter().find(|o| rest.starts_with(o));
        match (rest[0], op) {
            (b' ' | b'\t' | b'\\', _) => at += 1,
            (b'"' | b'\'' | b'`', _) => {
                operator = true;
                at += 1;
            }
            // One operator, perhaps after a closing quote (`"name": "…"`);
            // `::` is a path, not an assignment.
            (_, Some(o)) if operators == 0 && !rest.starts_with(b"::") => {
                operator = true;
                operators += 1;
                at += o.len();
            }
            _ => break,
        }
    }
    let started = hay.get(at).is_some_and(|c| c.is_ascii_alphanumeric());
    started.then_some((at, operator))
}

/// Sixteen digits or more, and nothing else: after a service's name and
/// a credential word (`asana_key = "8195513847023883"`), a numeric token;
/// an account's or a build's number is shorter or named an id.
fn numeric_token(v: &[u8]) -> bool {
    v.len() >= 16 && v.iter().all(u8::is_ascii_digit)
}

/// Sixteen letters or more and nothing else, drawn rather than spoken:
/// the alphabet spelled forwards or backwards, or under one vowel in four
/// (letters drawn at random hold about one in five, words two in five).
/// After a service's name and a credential word (`oanda SECRET key
/// ABCDEFGHIJKLMNOPQRSTUVWX`, `tefter PRIVATE KEY zyxwvutsrqponmlkjihg`)
/// such a value is the credential the syntax announces; one class of
/// character is what fails [`plausible`] there.
fn drawn_letters(v: &[u8]) -> bool {
    if v.len() < 16 || !v.iter().all(u8::is_ascii_alphabetic) {
        return false;
    }
    let backwards: Vec<u8> = v.iter().rev().copied().collect();
    let vowels = v.iter().filter(|c| b"aeiouAEIOU".contains(c)).count();
    (spells_the_alphabet(v) || spells_the_alphabet(&backwards) || vowels * 4 < v.len())
        && !(is_placeholder(v) || typed_filler(v) || marked_fake(v))
}

/// Whether `v` is credential-shaped: 10 bytes or more, a random core
/// near its start, and neither a placeholder, filler, a number, a date,
/// a version, a path, a host name nor an identifier. Standing alone
/// after a name (`alone`), it must be long and random: 20 bytes or more.
pub fn plausible(v: &[u8], alone: bool) -> bool {
    if v.len() < if alone { 20 } else { 10 } {
        return false;
    }
    if core_run(&v[..v.len().min(CORE_WITHIN)]).is_none() {
        return false;
    }
    if is_placeholder(v)
        || typed_filler(v)
        || marked_fake(v)
        || constant_name(v)
        || versioned_name(v)
        || path_of_words(v)
        || dotted_names(v)
        || words_and_digits(v)
        || identifier(v)
        || !credential_like(v)
    {
        return false;
    }
    // A date or time, or a number in any notation (`0xC5E2E5AE4D3A8E9F`
    // is a constant in code).
    let hex_number = (v.starts_with(b"0x") || v.starts_with(b"0X"))
        && v[2..].iter().all(|c| c.is_ascii_hexdigit() || *c == b'_');
    if hex_number
        || v.iter()
            .all(|c| c.is_ascii_digit() || b"-:.+/TZ".contains(c))
    {
        return false;
    }
    true
}

/// `myapp.eu.auth0.com`, `config.api.token`: names joined by dots.
fn dotted_names(v: &[u8]) -> bool {
    v.contains(&b'.')
        && v.split(|c| *c == b'.').all(|p| {
            !p.is_empty()
                && p.iter()
                    .all(|c| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'_')
                && core_run(p).is_none_or(|(a, b)| b - a < 16)
        })
}

/// `mystorageaccount123`, `my_bucket_2024`, `eu-west-1-prod`: words and
/// numbers, as names are made, not drawn at random (six digits at
/// most: `QWRT1234-ZXCV5678-…` is drawn).
fn words_and_digits(v: &[u8]) -> bool {
    if v.iter().filter(|c| c.is_ascii_digit()).count() > 6 {
        return false;
    }
    v.split(|c| b"_-.".contains(c)).all(|part| {
        word_then_digits(part).is_some_and(|w| {
            w.is_empty()
                || w.iter().all(u8::is_ascii_lowercase)
                || w.iter().all(u8::is_ascii_uppercase)
                || (w[0].is_ascii_uppercase() && w[1..].iter().all(u8::is_ascii_lowercase))
        }) && part.iter().filter(|c| c.is_ascii_digit()).count() <= 8
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The run test as first written: split at every byte outside the
    /// run's alphabet, then look at each run whole.
    fn runs_reference(text: &[u8]) -> bool {
        text.split(|c| !core_byte(*c)).any(|run| {
            run.len() >= 8
                && (run.iter().any(u8::is_ascii_digit)
                    || (run.iter().any(u8::is_ascii_uppercase)
                        && run.iter().any(u8::is_ascii_lowercase)))
        })
    }

    proptest! {
        #[test]
        fn the_one_pass_run_test_agrees_with_the_split(
            text in proptest::collection::vec(
                prop_oneof![
                    proptest::sample::select(b"aZ9+/=~ .-_\n\xff".to_vec()),
                    any::<u8>(),
                ],
                0..40,
            ),
        ) {
            prop_assert_eq!(holds_core_run(&text), runs_reference(&text));
        }
    }

    #[test]
    fn a_random_run_needs_eight_bytes_and_a_digit_or_both_cases() {
        assert!(!holds_core_run(b"the cloudsmith docs say to set a key"));
        assert!(!holds_core_run(b"cloudsmith: abcdefghij"));
        assert!(holds_core_run(b"cloudsmith: 9c2e1f7a0b"));
        assert!(holds_core_run(b"x=DjayBenyJ"));
        assert!(!holds_core_run(b"1234567"));
    }

    #[test]
    fn a_common_word_name_wants_a_credential_word_before_the_rule_runs() {
        // `harness` is a service and a word of every agent's log.
        assert!(services().any(|(n, common)| n == "harness" && common));
        assert!(!follows_common(b" output 9c2e1f7a0b1d passed"));
        assert!(!follows_common(b"_id: 9c2e1f7a0b1d"));
        // An OAuth client's id pairs with its secret, under any name.
        assert!(follows_common(b"_CLIENT_ID=ac58d6da7d7a84c039b7"));
        assert!(!follows_common(b"_ID_CLIENT=ac58d6da7d7a84c039b7"));
        assert!(follows_common(b"_TOKEN=9c2e1f7a0b1d"));
        assert!(follows_common(b" api key: 9c2e1f7a0b1d"));
        assert!(!follows_common(b" token: plain words"));
        // The rule table gives each common-word name that test, and the
        // other names the row's.
        let set = crate::detect::rules::RuleSet::new(&[]).unwrap();
        let rule = set.rules().iter().find(|r| r.id == ID).unwrap();
        let passes = |name: &str, rest: &[u8]| {
            let i = rule.keywords.iter().position(|k| k == name).unwrap();
            rule.keyword_gates[i].or(rule.after_keyword).unwrap()(rest)
        };
        assert!(!passes("harness", b" output 9c2e1f7a0b1d"));
        assert!(passes("harness", b"_token 9c2e1f7a0b1d"));
        assert!(passes("cloudsmith", b" output 9c2e1f7a0b1d"));
        assert!(!passes("cloudsmith", b" output words"));
    }

    fn find(s: &str) -> Option<&str> {
        let hay = s.as_bytes();
        let (names, common) = names();
        let found = names.find_iter(hay).find_map(|m| {
            let common = common[m.pattern().as_usize()];
            let (a, b) = credential(hay, m.start(), m.end(), common)?;
            assert!(follows(&hay[m.end()..]), "gate refused {s:?}");
            assert!(
                !common || follows_common(&hay[m.end()..]),
                "gate refused {s:?}"
            );
            Some(&s[a..b])
        });
        found
    }

    /// Any service name.
    fn a_name() -> impl Strategy<Value = &'static str> {
        proptest::sample::select(services().map(|(n, _)| n).collect::<Vec<_>>())
    }

    proptest! {
        /// Read at every occurrence the prefilter reports (overlapping
        /// ones included), the rule finds what its own search finds.
        #[test]
        fn reading_at_the_walks_occurrences_finds_what_a_search_finds(
            parts in proptest::collection::vec(
                prop_oneof![
                    a_name().prop_map(str::to_string),
                    proptest::sample::select(vec![
                        "_token", "_API_KEY", "=", ": ", " ", "\"", "9c2e1f7a0b1dQ", "Zx8",
                        "\n", "_id=", "abcdefghijklmnop12",
                    ])
                    .prop_map(str::to_string),
                ],
                0..24,
            ),
        ) {
            let hay = parts.concat();
            let all = aho_corasick::AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .build(services().map(|(n, _)| n))
                .unwrap();
            let mut at: Vec<crate::detect::rules::Occurrence> = all
                .find_overlapping_iter(hay.as_bytes())
                .map(|m| crate::detect::rules::Occurrence {
                    start: m.start(),
                    end: m.end(),
                    keyword: m.pattern().as_usize(),
                })
                .collect();
            at.sort_unstable();
            let (mut read, mut searched) = (Vec::new(), Vec::new());
            hits(0, hay.as_bytes(), Some(&at), &mut read);
            hits(0, hay.as_bytes(), None, &mut searched);
            prop_assert_eq!(read, searched);
        }

        #[test]
        fn the_automaton_finds_what_the_alternation_finds(
            parts in proptest::collection::vec(
                prop_oneof![
                    a_name().prop_map(str::to_string),
                    a_name().prop_map(|n| n[..n.len() / 2].to_ascii_uppercase()),
                    "[a-zA-Z0-9_ =]{0,4}",
                ],
                0..24,
            ),
        ) {
            let hay = parts.concat();
            let re = regex::bytes::Regex::new(&pattern()).unwrap();
            let want: Vec<(usize, usize)> =
                re.find_iter(hay.as_bytes()).map(|m| (m.start(), m.end())).collect();
            let got: Vec<(usize, usize)> =
                names().0.find_iter(hay.as_bytes()).map(|m| (m.start(), m.end())).collect();
            prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn the_list_is_lower_case_names_without_duplicates() {
        let names: Vec<&str> = services().map(|(n, _)| n).collect();
        assert!(names.len() > 500, "{}", names.len());
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
        for n in names {
            assert!(
                n.bytes()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
                    && n.len() >= 4,
                "{n}"
            );
        }
    }

    #[test]
    fn a_name_then_a_value_in_every_syntax() {
        let v = "q7Hd93KxPz2LmWv8RtY4";
        for text in [
            format!("cloudsmith: {v}9c2e1f7a0b3d5e6f8a9b"),
            format!("ayrshare SECRET {v}"),
            format!("apifonica-SECRET-{v}"),
            format!("buddynsPRIVATE={v}"),
            format!("bitbucket_client_secret={v}"),
            format!("auth0ClientSecret = '{v}'"),
            format!("[DEBUG] Using Browshot Key={v}"),
            format!("<zulip_api_key>{v}</zulip_api_key>"),
            format!("\"mailjet\": \"{v}\""),
            format!("NewTrelloAPI(\"{v}\")"),
            format!("| zenrows | {v} |"),
            format!("stripe_token := \"{v}\""),
            format!("asana :'{v}'"),
            format!("process.env.CLOUDSMITH_API || '{v}'"),
            format!("cloudsmithKey ?? \"{v}\""),
        ] {
            let got = find(&text);
            assert!(got.is_some_and(|g| g.starts_with(v)), "{text:?}: {got:?}");
        }
    }

    #[test]
    fn names_in_other_roles_are_no_credential() {
        for text in [
            "see https://github.com/abc/def1234567890",
            "import stripe; stripe.api_key = os.environ['STRIPE_KEY']",
            "stripeCustomerId = 'cus_9s6XKzkNRiz8i3'",
            "myzulip_token = 'q7Hd93KxPz2LmWv8RtY4'",
            "postgres:14.5-alpine3.17",
            "twilio==7.16.3",
            "AUTH0_DOMAIN=myapp.eu.auth0.com",
            "azure_storage_name=mystorageaccount123",
            "jira ABC-12345678",
            "mailgun 2024-05-01T10:00:00Z",
            "stripe 3f9a8c7d6e5b4a3928171615",
            "bitbucket_id=${BITBUCKET_ID}",
            "github_run_id: 1234567890123456789",
            "stripe_id = 'cus_9s6XKzkNRiz8i3'",
            "sentry_dsn: {{ sentry_dsn_value_2024 }}",
            "cloudflare_zone = 'your_zone_id_here_123'",
            "datadog_key = getDatadogKey2(config)",
            "pub(crate) const TEST_CRC64_REDIS: Crc64TestConfig = Crc64TestConfig {",
            "(\"CRC-64/REDIS\", CRC64_REDIS, 0xC5E2E5AE4D3A8E9F),",
            "use stripe::Client2Factory;",
        ] {
            assert_eq!(find(text), None, "{text:?}");
        }
    }

    #[test]
    fn blanks_that_align_a_column_stand_between_a_name_and_its_value() {
        let v = "q7Hd93KxPz2LmWv8RtY4";
        let aligned = format!("     CLOUDSMITH_ID:               \"{v}\",");
        assert_eq!(find(&aligned), Some(v));
        let tabs = format!("cloudsmith_key\t\t\t\t\t\t\t\t= {v}");
        assert_eq!(find(&tabs), Some(v));
        // The gap still ends at MAX_GAP.
        let far = format!("cloudsmith_key ={}{v}", " ".repeat(MAX_GAP));
        assert_eq!(find(&far), None);
    }

    #[test]
    fn a_common_word_counts_only_before_a_credential_word() {
        let v = "q7Hd93KxPz2LmWv8RtY4";
        assert_eq!(find(&format!("stripe_secret = {v}")), Some(v));
        assert_eq!(find(&format!("stripe = {v}")), None);
        assert_eq!(find(&format!("cloudsmith = {v}")), Some(v));
        // An OAuth client's id, not any id, under a common word's name.
        let id = "ac58d6da7d7a84c039b7";
        assert_eq!(find(&format!("GITHUB_CLIENT_ID={id}")), Some(id));
        assert_eq!(find(&format!("paypal_client_id = '{id}'")), Some(id));
        assert_eq!(find(&format!("stripe_id = {id}")), None);
        assert_eq!(find(&format!("harness_app_id: {id}")), None);
    }

    #[test]
    fn digits_all_through_a_value_are_no_identifiers_digits() {
        assert!(identifier(b"Crc64TestConfig"));
        assert!(identifier(b"CRC64_REDIS"));
        assert!(!identifier(b"ABCD1234EFGH5678IJKL9012"));
        assert_eq!(
            find("ayrshare SECRET QWRT1234-ZXCV5678-PLMK9101-MNBV1121"),
            Some("QWRT1234-ZXCV5678-PLMK9101-MNBV1121")
        );
    }

    #[test]
    fn a_random_id_goes_at_ten_bytes_and_a_number_or_a_name_stays() {
        finds_only(
            &[
                ("AUTH0_CLIENT_ID=q7Hd93KxPz2Lm", "q7Hd93KxPz2Lm"),
                ("algolia_app_id = \"WRB8YLFW7Y\"", "WRB8YLFW7Y"),
                ("planetscale_id: hgtmrnzlv1t7", "hgtmrnzlv1t7"),
            ],
            &[
                "algolia_app_id = \"W8YLFW7Y\"",
                "algolia_app_id = \"8195513847\"",
                "planetscale_id: my_project_2024",
                "planetscale_id: prod-eu-west-1",
            ],
        );
    }

    /// Each text's value is found, exactly `want`, and each miss gives
    /// none.
    fn finds_only(hits: &[(&str, &str)], misses: &[&str]) {
        for (text, want) in hits {
            assert_eq!(find(text), Some(*want), "{text:?}");
        }
        for text in misses {
            assert_eq!(find(text), None, "{text:?}");
        }
    }

    #[test]
    fn digits_alone_count_after_a_credential_word_only() {
        assert_eq!(
            find("asana_key = \"8195513847023883\""),
            Some("8195513847023883")
        );
        assert_eq!(find("asana_id = \"8195513847023883\""), None);
        assert_eq!(find("asana_key = \"819551384702\""), None);
        assert_eq!(find("cloudsmith: 8195513847023883"), None);
    }

    #[test]
    fn drawn_letters_count_after_a_credential_word_only() {
        finds_only(
            &[
                (
                    "oanda SECRET key ABCDEFGHIJKLMNOPQRSTUVWX",
                    "ABCDEFGHIJKLMNOPQRSTUVWX",
                ),
                (
                    "tefter PRIVATE KEY zyxwvutsrqponmlkjihg",
                    "zyxwvutsrqponmlkjihg",
                ),
                (
                    "browshot_token = 'QWRTZPLMKNBVCXYSDFGH'",
                    "QWRTZPLMKNBVCXYSDFGH",
                ),
                (
                    "glassnode KEY abcdefghijklmnopqrstuvwxyzA",
                    "abcdefghijklmnopqrstuvwxyzA",
                ),
            ],
            &[
                // No credential word, an id, too short, spoken, or a marker.
                "cloudsmith: ABCDEFGHIJKLMNOPQRSTUVWX",
                "cloudsmith_id: ABCDEFGHIJKLMNOPQRSTUVWX",
                "oanda SECRET key ABCDEFGHIJKLMNO",
                "oanda_token = accessTokenFromEnvironment",
                "oanda_token = PLACEHOLDERTOKENVALUE",
                "oanda_token = XXXXXXXXXXXXXXXXXXXXXXXX",
                "oanda key responsibilities",
            ],
        );
    }

    #[test]
    fn blanks_alone_need_a_long_random_value() {
        assert_eq!(find("chartmogul a1b2c3d4e5f6"), None);
        assert_eq!(
            find("cloudsmith 9c2e1f7a0b3d5e6f8a9b0c1d2e3f4a5b6c7d8e9f"),
            Some("9c2e1f7a0b3d5e6f8a9b0c1d2e3f4a5b6c7d8e9f")
        );
    }
}
