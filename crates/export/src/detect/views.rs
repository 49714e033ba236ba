//! Decoded views of a string: where escapes and encodings hide credentials.
//!
//! A rule run on raw text misses a secret written as `\u0067hp_...`, as
//! `ghp%5F...` or inside a base64 blob. Each view decodes one layer and keeps
//! the way back: every decoded byte knows the span of original bytes it came
//! from, so a hit in a view becomes a span of the original string, which is
//! then redacted as a literal everywhere. A hit inside a base64 run maps to
//! the whole run: a secret inside a blob removes the blob.
//!
//! The views: JSON/JavaScript escapes (and C's octal ones), percent-encoding, HTML and XML
//! character references (`&#103;`, `&#x73;`, `&amp;`), the text as a
//! terminal shows it ([`shown`]: escape sequences and invisible format
//! characters out, fullwidth forms folded), quoted-printable with its soft
//! breaks, big decimal numbers that spell text, streams written a record
//! a line inside one string (`streamed`), base64 and base64url runs that decode to text, or to gzip, zlib
//! or zstd data that inflates (at most [`MAX_INFLATED`] bytes, read as
//! bytes), runs of hex digits that decode to text (UTF-8, or UTF-16 in
//! either order) or to compressed data that inflates, and hexdumps (`xxd`,
//! `hexdump -C`, `od -A x -t x1z`): the bytes of their hex columns, and
//! their ASCII column joined across rows, and character dumps (`od -c`),
//! each byte mapped to its whole row, so a secret found in either takes every row it touches. And lists
//! of byte values (`xxd -i`'s `0x67, 0x68, …`, `bytes([103, 104, …])`,
//! `new byte[]{…}`, `chr(103)+chr(104)`) that decode to text, each byte mapped to its line;
//! and lines a terminal's wrap cut, joined ([`wrapped`]).

use base64::Engine;

mod streamed;

/// Shortest base64 run decoded (docs/EXPORT.md: runs of 20 or more).
pub const MIN_BASE64_RUN: usize = 20;
/// How many layers of encoding are peeled (a view of a view).
pub const MAX_VIEW_DEPTH: usize = 2;

/// Most bytes a compressed blob is inflated to. One that inflates
/// further is not read on: it is a finding as a whole (it cannot be shown
/// clean), [`OVERFLOW_RULE`].
pub const MAX_INFLATED: usize = 1 << 20;
/// Rule id of a compressed blob that inflates past [`MAX_INFLATED`].
pub const OVERFLOW_RULE: &str = "compressed-blob";
/// Rule id of a hexdump row that holds part of a secret spread over rows
/// (lines of a text artifact): the row goes whole, wherever it stands.
pub const ROW_RULE: &str = "hexdump-row";
/// Shortest run of hex digits decoded (20 bytes).
pub const MIN_HEX_RUN: usize = 40;
/// Fewest values a list of bytes holds to be decoded: a token's worth
/// (the shortest rule's value is 16 bytes or more), more than the short
/// tuples code writes (`(255, 128, 0)`, a version, a date).
pub const MIN_BYTE_LIST: usize = 16;

/// One decoded view.
#[derive(Debug, Clone)]
pub struct View {
    /// The decoded bytes.
    pub bytes: Vec<u8>,
    origin: Origin,
    /// Set when the view stopped at its limit: what it did not read may
    /// hold anything, so its whole span is a finding.
    pub overflow: bool,
    /// Where the view took out line breaks (original positions of the
    /// breaks; see [`wrapped`]): only a hit across one of them is news,
    /// the rest the lines show on their own. Empty for other views.
    joins: Vec<u32>,
    /// Whether every rule reads across its joins (see [`concatenated`]),
    /// not only those that know a token by its shape.
    reads_labels: bool,
}

#[derive(Debug, Clone)]
enum Origin {
    /// Per decoded byte: the original span it came from.
    Map(Vec<(u32, u32)>),
    /// Every decoded byte came from this one original span.
    Whole(usize, usize),
}

impl View {
    /// The original span behind decoded bytes `start..end`.
    pub fn original_span(&self, start: usize, end: usize) -> (usize, usize) {
        match &self.origin {
            Origin::Whole(s, e) => (*s, *e),
            Origin::Map(m) => {
                if start >= end || end > m.len() {
                    return (0, 0);
                }
                (m[start].0 as usize, m[end - 1].1 as usize)
            }
        }
    }

    /// Re-bases a view of `inner` (itself a view of the original) onto the original.
    fn compose(&self, inner: View) -> View {
        let origin = match inner.origin {
            Origin::Whole(s, e) => {
                let (a, b) = self.original_span(s, e);
                Origin::Whole(a, b)
            }
            Origin::Map(m) => Origin::Map(
                m.iter()
                    .map(|(s, e)| {
                        let (a, b) = self.original_span(*s as usize, *e as usize);
                        (a as u32, b as u32)
                    })
                    .collect(),
            ),
        };
        let mut joins = self.joins.clone();
        joins.extend(
            inner
                .joins
                .iter()
                .map(|j| self.original_span(*j as usize, *j as usize + 1).0 as u32),
        );
        View {
            bytes: inner.bytes,
            origin,
            overflow: inner.overflow,
            joins,
            reads_labels: self.reads_labels || inner.reads_labels,
        }
    }

    fn mapped(bytes: Vec<u8>, map: Vec<(u32, u32)>) -> View {
        View {
            bytes,
            origin: Origin::Map(map),
            overflow: false,
            joins: Vec::new(),
            reads_labels: false,
        }
    }

    fn whole(bytes: Vec<u8>, start: usize, end: usize) -> View {
        View {
            bytes,
            origin: Origin::Whole(start, end),
            overflow: false,
            joins: Vec::new(),
            reads_labels: false,
        }
    }

    /// Whether the view joins lines a wrap cut (see [`wrapped`]): only
    /// a rule that knows a token by its shape reads across the joins.
    pub fn joined(&self) -> bool {
        !self.joins.is_empty() && !self.reads_labels
    }

    /// Whether a hit at original span `start..end` is news: any hit in
    /// most views, only one across a join in a view of joined lines.
    pub fn news(&self, start: usize, end: usize) -> bool {
        self.joins.is_empty()
            || self
                .joins
                .iter()
                .any(|j| start <= *j as usize && (*j as usize) < end)
    }

    /// The original span the whole view came from.
    pub fn whole_span(&self) -> (usize, usize) {
        match &self.origin {
            Origin::Whole(s, e) => (*s, *e),
            Origin::Map(m) => (
                m.first().map_or(0, |x| x.0 as usize),
                m.last().map_or(0, |x| x.1 as usize),
            ),
        }
    }
}

/// Every decoded view of `s` (not `s` itself), peeling up to
/// [`MAX_VIEW_DEPTH`] layers.
pub fn decoded_views(s: &[u8]) -> Vec<View> {
    let mut out = Vec::new();
    one_layer(s, &mut out);
    let mut frontier = 0;
    for _ in 1..MAX_VIEW_DEPTH {
        let end = out.len();
        for i in frontier..end {
            let mut inner = Vec::new();
            one_layer(&out[i].bytes.clone(), &mut inner);
            for v in inner {
                let composed = out[i].compose(v);
                out.push(composed);
            }
        }
        frontier = end;
    }
    out
}

fn one_layer(s: &[u8], out: &mut Vec<View>) {
    crate::detect::work::visit(s.len());
    // One search for the escape bytes: most strings hold none.
    if memchr::memchr3(b'\\', b'%', b'&', s).is_some() {
        if memchr::memchr(b'\\', s).is_some() {
            if let Some(v) = unescape(s) {
                out.push(v);
            }
        }
        if has_percent_escape(s) {
            out.push(percent_decode(s));
        }
        if let Some(v) = char_refs(s) {
            out.push(v);
        }
    }
    if let Some(v) = shown(s) {
        out.push(v);
    }
    if let Some(v) = quoted_printable(s) {
        out.push(v);
    }
    base64_runs(s, out);
    hex_runs(s, out);
    hexdump(s, out);
    byte_lists(s, out);
    wrapped(s, out);
    concatenated(s, out);
    letter_spaced(s, out);
    streamed::streamed_lines(s, out);
}

/// HTML and XML character references decoded: numeric (`&#103;`,
/// `&#x73;`, the `;` optional as browsers take it) and the five XML names
/// plus `&nbsp;`; `None` when there is none.
fn char_refs(s: &[u8]) -> Option<View> {
    // Most `&` begin no reference: nothing is allocated before one does.
    let mut at = memchr::memchr_iter(b'&', s).find(|&i| char_ref_at(&s[i..]).is_some())?;
    let (mut bytes, mut map) = (Vec::with_capacity(s.len()), Vec::with_capacity(s.len()));
    let mut copied = 0;
    let mut changed = false;
    let copy = |bytes: &mut Vec<u8>, map: &mut Vec<(u32, u32)>, from: usize, to: usize| {
        for (i, &b) in s.iter().enumerate().take(to).skip(from) {
            bytes.push(b);
            map.push((i as u32, i as u32 + 1));
        }
    };
    while at < s.len() {
        if let Some((c, len)) = char_ref_at(&s[at..]) {
            copy(&mut bytes, &mut map, copied, at);
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                bytes.push(b);
                map.push((at as u32, (at + len) as u32));
            }
            copied = at + len;
            changed = true;
            at += len;
        } else {
            at += 1;
        }
        match memchr::memchr(b'&', &s[at.min(s.len())..]) {
            Some(i) => at += i,
            None => break,
        }
    }
    copy(&mut bytes, &mut map, copied, s.len());
    changed.then(|| View::mapped(bytes, map))
}

/// The character a reference at the start of `s` stands for, and its
/// length.
fn char_ref_at(s: &[u8]) -> Option<(char, usize)> {
    const NAMED: [(&[u8], char); 6] = [
        (b"&amp;", '&'),
        (b"&lt;", '<'),
        (b"&gt;", '>'),
        (b"&quot;", '"'),
        (b"&apos;", '\''),
        (b"&nbsp;", ' '),
    ];
    if let Some((name, c)) = NAMED.iter().find(|(n, _)| s.starts_with(n)) {
        return Some((*c, name.len()));
    }
    let rest = s.strip_prefix(b"&#")?;
    let (hex, digits) = match rest.first() {
        Some(b'x' | b'X') => (true, &rest[1..]),
        _ => (false, rest),
    };
    let n = digits
        .iter()
        .take(8)
        .take_while(|c| {
            if hex {
                c.is_ascii_hexdigit()
            } else {
                c.is_ascii_digit()
            }
        })
        .count();
    if n == 0 || n > 7 {
        return None;
    }
    let text = std::str::from_utf8(&digits[..n]).ok()?;
    let cp = u32::from_str_radix(text, if hex { 16 } else { 10 }).ok()?;
    let c = char::from_u32(cp)?;
    let len = 2 + usize::from(hex) + n + usize::from(digits.get(n) == Some(&b';'));
    Some((c, len))
}

/// Whether `c` is an invisible format character that may sit inside a
/// token unseen: zero-width spaces and joiners, direction marks, word
/// joiners and invisible operators, the BOM, the soft hyphen and the
/// Mongolian vowel separator.
fn is_format_char(c: char) -> bool {
    matches!(c, '\u{00AD}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

/// Longest terminal escape sequence skipped (an OSC title or hyperlink);
/// an unterminated one longer than this is left as text.
const MAX_ESCAPE: usize = 512;

/// The length of the terminal escape sequence at the start of `s` (which
/// begins with ESC): CSI (`ESC [` parameters, intermediates, a final
/// byte; colours, cursor moves), OSC (`ESC ]` up to BEL or `ESC \`;
/// titles, hyperlinks), a character-set choice (`ESC (` and one byte) or
/// any other two-byte escape.
fn escape_len(s: &[u8]) -> Option<usize> {
    match s.get(1)? {
        b'[' => {
            let body = s[2..]
                .iter()
                .take(MAX_ESCAPE)
                .position(|c| !(0x20..0x40).contains(c))?;
            (0x40..0x7f).contains(&s[2 + body]).then_some(3 + body)
        }
        b']' => {
            let tail = &s[2..s.len().min(2 + MAX_ESCAPE)];
            let end = tail.iter().position(|&c| c == 0x07 || c == 0x1b)?;
            match tail[end] {
                0x07 => Some(3 + end),
                _ => (tail.get(end + 1) == Some(&b'\\')).then_some(4 + end),
            }
        }
        b'(' | b')' | b'*' | b'+' => s.get(2).map(|_| 3),
        0x40..=0x7e => Some(2),
        _ => None,
    }
}

/// `s` as a terminal or a reader shows it: terminal escape sequences
/// (colours around a match, a cursor move between two writes) and
/// invisible format characters taken out, and the fullwidth forms of
/// ASCII (`ｇｈｐ＿`, U+FF01 to U+FF5E, and the ideographic space) read
/// as ASCII. `None` when there is nothing to take out or fold.
pub(crate) fn shown(s: &[u8]) -> Option<View> {
    // ESC, and the first bytes of every format character and fullwidth
    // form: most strings hold none, and most that do hold only dashes and
    // quotes (E2 80 …): nothing is allocated before one would change.
    let changes = |i: usize| match s[i] {
        0x1b => escape_len(&s[i..]).is_some(),
        _ => hidden_or_wide(&s[i..]).is_some(),
    };
    memchr::memchr3_iter(0x1b, 0xC2, 0xE1, s)
        .chain(memchr::memchr3_iter(0xE2, 0xE3, 0xEF, s))
        .find(|&i| changes(i))?;
    let (mut bytes, mut map) = (Vec::with_capacity(s.len()), Vec::with_capacity(s.len()));
    let mut changed = false;
    let mut i = 0;
    while i < s.len() {
        if s[i] == 0x1b {
            if let Some(n) = escape_len(&s[i..]) {
                i += n;
                changed = true;
                continue;
            }
        }
        let n = utf8_len(s[i]).min(s.len() - i);
        match hidden_or_wide(&s[i..]) {
            Some(None) => changed = true,
            Some(Some(b)) => {
                bytes.push(b);
                map.push((i as u32, (i + n) as u32));
                changed = true;
            }
            None => {
                bytes.extend_from_slice(&s[i..i + n]);
                map.extend((i..i + n).map(|k| (k as u32, k as u32 + 1)));
            }
        }
        i += n;
    }
    changed.then(|| View::mapped(bytes, map))
}

/// What the character at the start of `s` is shown as, when it is not
/// itself: nothing (`Some(None)`, an invisible format character) or an
/// ASCII byte (`Some(Some(b))`, a fullwidth form or the ideographic
/// space).
fn hidden_or_wide(s: &[u8]) -> Option<Option<u8>> {
    let n = utf8_len(s[0]).min(s.len());
    let c = std::str::from_utf8(&s[..n]).ok()?.chars().next()?;
    match c {
        c if is_format_char(c) => Some(None),
        '\u{FF01}'..='\u{FF5E}' => Some(Some((c as u32 - 0xFEE0) as u8)),
        '\u{3000}' => Some(Some(b' ')),
        _ => None,
    }
}

/// The length of the UTF-8 sequence a lead byte `b` begins (1 for a byte
/// that begins none, so a stray byte is copied as it is).
fn utf8_len(b: u8) -> usize {
    match b {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => 1,
    }
}

/// Runs of at least [`MIN_HEX_RUN`] hex digits (of even length) that
/// decode to text, each a view of its whole run (`xxd -p` output, a
/// hex-encoded value).
fn hex_runs(s: &[u8], out: &mut Vec<View>) {
    let mut i = 0;
    while let Some(&probe) = s.get(i + MIN_HEX_RUN - 1) {
        let at = i + MIN_HEX_RUN - 1;
        if !probe.is_ascii_hexdigit() {
            i = at + 1;
            continue;
        }
        let mut start = at;
        while start > i && s[start - 1].is_ascii_hexdigit() {
            start -= 1;
        }
        let mut end = at + 1;
        while end < s.len() && s[end].is_ascii_hexdigit() {
            end += 1;
        }
        let run = &s[start..end - (end - start) % 2];
        if run.len() >= MIN_HEX_RUN {
            hex_run(run, start, out);
        }
        let whole = &s[start..end];
        if (MIN_HEX_RUN..=MAX_DECIMAL_RUN).contains(&whole.len())
            && whole.iter().all(u8::is_ascii_digit)
        {
            if let Some(text) = printable(big_endian(whole)) {
                out.push(View::whole(text, start, end));
            }
        }
        i = end;
    }
}

/// Longest run of decimal digits read as a number (a token of about 800
/// bytes); its bytes take time quadratic in its length. The shortest is
/// [`MIN_HEX_RUN`] (17 bytes).
const MAX_DECIMAL_RUN: usize = 2000;

/// The bytes of the number `digits` (decimal) spells, big-endian: text
/// written as one big integer (`int.from_bytes(token, "big")`).
fn big_endian(digits: &[u8]) -> Vec<u8> {
    let mut bytes: Vec<u8> = Vec::with_capacity(digits.len() / 2);
    for d in digits {
        let mut carry = u32::from(d - b'0');
        for b in bytes.iter_mut().rev() {
            let v = u32::from(*b) * 10 + carry;
            *b = v as u8;
            carry = v >> 8;
        }
        while carry > 0 {
            bytes.insert(0, carry as u8);
            carry >>= 8;
        }
    }
    bytes
}

/// The view of one hex run (at `start`): the text it spells, as bytes or
/// as UTF-16 (either order), or what it inflates to when it is gzip, zlib
/// or zstd data.
fn hex_run(run: &[u8], start: usize, out: &mut Vec<View>) {
    let decode = || -> Vec<u8> {
        run.chunks(2)
            .map(|p| hex_val(p[0]) << 4 | hex_val(p[1]))
            .collect()
    };
    // Most hex runs are digests: their first bytes are neither text nor a
    // compressed format's magic, and nothing is decoded whole.
    let head: Vec<u8> = run[..8]
        .chunks(2)
        .map(|p| hex_val(p[0]) << 4 | hex_val(p[1]))
        .collect();
    let text = |b: &u8| *b == b'\n' || *b == b'\t' || (0x20..0x7f).contains(b);
    let end = start + run.len();
    if head.iter().all(text) {
        if let Some(t) = printable(decode()) {
            out.push(View::whole(t, start, end));
        }
    } else if let Some(odd) = utf16_order(&head) {
        let bytes = decode();
        let units = bytes.chunks_exact(2).map(|u| {
            let (hi, lo) = if odd { (u[1], u[0]) } else { (u[0], u[1]) };
            u16::from(hi) << 8 | u16::from(lo)
        });
        let t: Option<String> = char::decode_utf16(units).collect::<Result<_, _>>().ok();
        if let Some(t) = t.and_then(|t| printable(t.into_bytes())) {
            out.push(View::whole(t, start, end));
        }
    } else if compression(&head).is_some() {
        out.extend(inflate(&decode(), start, end));
    }
}

/// Whether four bytes are two UTF-16 units of ASCII text: `Some(true)`
/// little-endian (`t\0o\0`), `Some(false)` big-endian (`\0t\0o`).
fn utf16_order(head: &[u8]) -> Option<bool> {
    let ascii = |b: u8| b == b'\n' || b == b'\t' || (0x20..0x7f).contains(&b);
    match head {
        [a, 0, b, 0] if ascii(*a) && ascii(*b) => Some(true),
        [0, a, 0, b] if ascii(*a) && ascii(*b) => Some(false),
        _ => None,
    }
}

/// `bytes` if they are text: UTF-8, nine in ten characters printable.
pub(crate) fn printable(bytes: Vec<u8>) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(&bytes).ok()?;
    let printable = text
        .chars()
        .filter(|c| !c.is_control() || matches!(c, '\n' | '\r' | '\t'))
        .count();
    (printable * 10 >= text.chars().count() * 9).then_some(bytes)
}

/// One row of a hexdump: the span of the row (its line), the bytes of its
/// hex columns and its ASCII column.
struct Row {
    span: (usize, usize),
    bytes: Vec<u8>,
    ascii: (usize, usize),
}

/// The row `line` (at `at` in the string) is, if it is one: an offset of
/// at least four hex digits (then `:` or spaces), groups of hex digits,
/// and an ASCII column as long as the row's bytes: after two spaces
/// (`xxd`), or between `|` (`hexdump -C`) or `>` and `<` (`od -t x1z`).
fn row(line: &[u8], at: usize) -> Option<Row> {
    let lead = line.iter().take_while(|c| **c == b' ').count();
    let body = &line[lead..];
    let offset = body.iter().take_while(|c| c.is_ascii_hexdigit()).count();
    if offset < 4 {
        return None;
    }
    let mut i = lead + offset;
    if line.get(i) == Some(&b':') {
        i += 1;
    }
    if line.get(i) != Some(&b' ') {
        return None;
    }
    let trimmed_end = line.len()
        - line
            .iter()
            .rev()
            .take_while(|c| **c == b' ' || **c == b'\r')
            .count();
    let line = &line[..trimmed_end];
    let (hex_end, ascii) = match line.last() {
        Some(b'|') => {
            let open = line[..line.len() - 1].iter().rposition(|&c| c == b'|')?;
            (open, (open + 1, line.len() - 1))
        }
        Some(b'<') => {
            let open = line[..line.len() - 1].iter().rposition(|&c| c == b'>')?;
            (open, (open + 1, line.len() - 1))
        }
        _ => {
            let gap = memchr::memmem::find(&line[i..], b"  ").map(|g| g + i)?;
            let text = gap + line[gap..].iter().take_while(|c| **c == b' ').count();
            (gap, (text, line.len()))
        }
    };
    let mut bytes = Vec::with_capacity(32);
    for group in line
        .get(i..hex_end)?
        .split(|c| *c == b' ')
        .filter(|g| !g.is_empty())
    {
        if group.len() % 2 != 0 || group.len() > 8 || !group.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        bytes.extend(group.chunks(2).map(|p| hex_val(p[0]) << 4 | hex_val(p[1])));
    }
    let ascii_len = std::str::from_utf8(&line[ascii.0..ascii.1])
        .ok()?
        .chars()
        .count();
    if bytes.is_empty() || bytes.len() > 32 || ascii_len != bytes.len() {
        return None;
    }
    Some(Row {
        span: (at, at + trimmed_end),
        bytes,
        ascii: (at + ascii.0, at + ascii.1),
    })
}

/// The views of `s` that rows make (see [`decoded_views`]): hexdumps,
/// lists of bytes, wrapped lines, quoted-printable soft breaks and
/// streams written a record a line, for lines of a text artifact joined,
/// whose other views each line had on its own.
pub fn hexdump_views(s: &[u8]) -> Vec<View> {
    let mut out = Vec::new();
    hexdump(s, &mut out);
    byte_lists(s, &mut out);
    wrapped(s, &mut out);
    out.extend(quoted_printable(s));
    streamed::streamed_lines(s, &mut out);
    out
}

/// The narrowest width at which lines are taken as cut by a wrap.
pub const MIN_WRAP_WIDTH: usize = 40;
/// The shortest run of token characters a wrap is taken to cut.
const MIN_WRAPPED_RUN: usize = 16;
/// The width a terminal and `fold` wrap at unless told otherwise.
const DEFAULT_WIDTH: usize = 80;
/// The most bytes one run of joined lines holds.
const MAX_WRAPPED: usize = 64 << 10;

/// Lines cut at a fixed width (a terminal's, `fold`'s, a log viewer's):
/// where a line as long as the longest line of `s` (at least
/// [`MIN_WRAP_WIDTH`], and that width held by two lines or more, or
/// [`DEFAULT_WIDTH`]) ends inside a run of token characters that the
/// next line goes on with, and the run is [`MIN_WRAPPED_RUN`] or longer,
/// the lines are joined without their breaks, each run of such lines one
/// view, each byte mapped to itself. A hit counts only across a break it
/// took out ([`View::news`]): the lines' own hits are found in them. And
/// only a rule that knows a token by its shape may read across one
/// (the detector's rule): a value after a label runs on into whatever
/// the next line starts with (`SECRET_KEY_BASE=<hex>` above
/// `TOTP_VAULT_KEY=…` of the same width), where a vendor's token ends
/// where its shape does.
fn wrapped(s: &[u8], out: &mut Vec<View>) {
    if s.len() < 2 * MIN_WRAP_WIDTH || memchr::memchr(b'\n', s).is_none() {
        return;
    }
    let token = |c: &u8| c.is_ascii_alphanumeric() || b"_-+/=.".contains(c);
    // One pass: the width, and each break after a wide line that cuts a
    // run (kept only if its line turns out as wide as the widest).
    let (mut width, mut full, mut cuts) = (0, 0, Vec::new());
    let mut prev: Option<(usize, usize)> = None;
    for (c, d) in line_spans(s) {
        match (d - c).cmp(&width) {
            std::cmp::Ordering::Greater => (width, full) = (d - c, 1),
            std::cmp::Ordering::Equal => full += 1,
            std::cmp::Ordering::Less => {}
        }
        if let Some((a, b)) = prev.filter(|(a, b)| b - a >= MIN_WRAP_WIDTH) {
            let tail = s[a..b].iter().rev().take_while(|x| token(x)).count();
            let head = s[c..d].iter().take_while(|x| token(x)).count();
            if tail > 0 && head > 0 && tail + head >= MIN_WRAPPED_RUN {
                cuts.push(((a, b), (c, d)));
            }
        }
        prev = Some((c, d));
    }
    // A wrap cuts every long line at one width: two lines of it, or the
    // width every terminal and `fold` start with. One longest line alone
    // is only the longest (`PrivateKey = <key>` above `DNS = 8.8.8.8`).
    if full < 2 && width != DEFAULT_WIDTH {
        return;
    }
    cuts.retain(|((a, b), _)| b - a == width);
    // Runs of cut lines: each cut's second line may be the next cut's
    // first.
    let mut run: Option<View> = None;
    for (k, &((a, b), (c, d))) in cuts.iter().enumerate() {
        let v = run.get_or_insert_with(|| View::mapped(Vec::new(), Vec::new()));
        if v.bytes.is_empty() {
            push_line(v, s, a, b);
        }
        v.joins.push(b as u32);
        push_line(v, s, c, d);
        let goes_on = cuts.get(k + 1).is_some_and(|(first, _)| first.0 == c);
        if !goes_on || v.bytes.len() > MAX_WRAPPED {
            out.extend(run.take());
        }
    }
}

/// Fewest characters of letter-spaced text read (`t o k e n`).
const MIN_SPACED: usize = 16;

/// Text written a character at a time with a space after each (`g h p _
/// R 2 d 2`, a word gap three spaces): every other byte, from a run of
/// at least [`MIN_SPACED`] ASCII characters each followed by one space,
/// each mapped to itself.
fn letter_spaced(s: &[u8], out: &mut Vec<View>) {
    // A run of 31 bytes or more holds a whole 16-byte block at a multiple
    // of 16, spaced in it: one look per block rules most strings out.
    let spaced_block = |b: &[u8]| {
        (0..2).any(|odd| {
            (0..4).all(|k| b[2 * k + odd] == b' ')
                && (0..4).filter(|k| b[2 * k + 1 - odd] != b' ').count() >= 3
        })
    };
    if !s.chunks_exact(16).any(spaced_block) {
        return;
    }
    let spaced_at = |k: usize| {
        s.get(k).is_some_and(|c| c.is_ascii_graphic() || *c == b' ') && s.get(k + 1) == Some(&b' ')
    };
    let mut i = 0;
    while let Some(j) = memchr::memchr(b' ', &s[i..]).map(|j| i + j) {
        // A run is found from the space after its first character.
        let Some(start) = j.checked_sub(1).filter(|&k| s[k].is_ascii_graphic()) else {
            i = j + 1;
            continue;
        };
        let mut k = start;
        while spaced_at(k) {
            k += 2;
        }
        let end = if s.get(k).is_some_and(u8::is_ascii_graphic) {
            k + 1
        } else {
            k
        };
        let chars = (end - start).div_ceil(2);
        if chars >= MIN_SPACED {
            let mut v = View::mapped(Vec::with_capacity(chars), Vec::with_capacity(chars));
            for p in (start..end).step_by(2) {
                push_line(&mut v, s, p, p + 1);
            }
            let words = v.bytes.iter().filter(|c| **c != b' ').count();
            if words * 3 >= chars * 2 {
                out.push(v);
            }
        }
        i = end.max(j + 1);
    }
}

/// The shortest run of token characters a concatenation is taken to cut.
const MIN_CONCATENATED_RUN: usize = 12;

/// String literals joined by an operator (`"xoxb-667" + "1276…"`, `'a' .
/// 'b'`, `"a" || "b"`, `"a" & "b"`, or side by side as C and Python join
/// them, across line breaks too): where a literal ends and the next
/// begins inside a run of token characters, [`MIN_CONCATENATED_RUN`] or
/// longer together, the string is read with the quotes and operator
/// between them taken out, each byte mapped to itself. A hit counts only
/// across such a junction ([`View::news`]); the literals close where the
/// secret does, so every rule reads there, labels too (`key = "…" + "…"`).
fn concatenated(s: &[u8], out: &mut Vec<View>) {
    if memchr::memchr2(b'"', b'\'', s).is_none() {
        return;
    }
    let token = |c: &u8| c.is_ascii_alphanumeric() || b"_-/=".contains(c);
    let mut junctions: Vec<(usize, usize)> = Vec::new();
    for i in memchr::memchr2_iter(b'"', b'\'', s) {
        if i == 0 || !token(&s[i - 1]) || junctions.last().is_some_and(|j| i < j.1) {
            continue;
        }
        let Some(j) = literal_after(s, i) else {
            continue;
        };
        let tail = s[..i].iter().rev().take_while(|c| token(c)).count();
        let head = s[j + 1..].iter().take_while(|c| token(c)).count();
        if head > 0 && tail + head >= MIN_CONCATENATED_RUN {
            junctions.push((i, j + 1));
        }
    }
    if junctions.is_empty() {
        return;
    }
    let mut v = View::mapped(Vec::with_capacity(s.len()), Vec::with_capacity(s.len()));
    let mut at = 0;
    for &(a, b) in &junctions {
        push_line(&mut v, s, at, a);
        v.joins.push(a as u32);
        at = b;
    }
    push_line(&mut v, s, at, s.len());
    v.reads_labels = true;
    out.push(v);
}

/// Where the literal that follows the one closing at `s[close]` opens:
/// blanks (and a `\` line continuation), at most one concatenation
/// operator, blanks, and the same quote.
fn literal_after(s: &[u8], close: usize) -> Option<usize> {
    let q = s[close];
    let blank = |c: &u8| matches!(c, b' ' | b'\t' | b'\r' | b'\n' | b'\\');
    let mut k = close + 1;
    while s.get(k).is_some_and(blank) {
        k += 1;
    }
    for op in [&b"||"[..], b"..", b"+", b".", b"&"] {
        if s[k.min(s.len())..].starts_with(op) {
            k += op.len();
            break;
        }
    }
    while s.get(k).is_some_and(blank) {
        k += 1;
    }
    // Side by side with nothing between is one literal with an escaped
    // quote inside (SQL's `''`), not two.
    (s.get(k) == Some(&q) && k > close + 1).then_some(k)
}

/// Appends `s[a..b]` to a view of joined lines, each byte mapped to
/// itself.
fn push_line(v: &mut View, s: &[u8], a: usize, b: usize) {
    v.bytes.extend_from_slice(&s[a..b]);
    if let Origin::Map(m) = &mut v.origin {
        m.extend((a..b).map(|p| (p as u32, p as u32 + 1)));
    }
}

/// The spans of the lines of `s`, without their `\r\n` or `\n`.
fn line_spans(s: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        if at >= s.len() {
            return None;
        }
        let end = memchr::memchr(b'\n', &s[at..]).map_or(s.len(), |i| at + i);
        let text_end = if end > at && s[end - 1] == b'\r' {
            end - 1
        } else {
            end
        };
        let line = (at, text_end);
        at = end + 1;
        Some(line)
    })
}

/// Longest separator between two values of a list of bytes, blanks
/// around it aside (`)+chr(`, `+[char]`).
const MAX_SEPARATOR: usize = 8;

/// Lists of at least [`MIN_BYTE_LIST`] byte values, decimal or `0x` hex,
/// with the same separator between every two of them, blanks and line
/// ends around it aside ([`might_hold_a_list`]: `xxd -i`, Python's `bytes([…])`, Java's
/// `new byte[]{…}`, a JSON array, `chr(103)+chr(104)`), that decode to
/// text. Each byte maps to its whole line (as
/// a hexdump row's): a secret found takes every line of the list it
/// touches, never a few numbers that occur anywhere.
fn byte_lists(s: &[u8], out: &mut Vec<View>) {
    if !might_hold_a_list(s) {
        return;
    }
    let mut lines = Lines::new(s);
    let mut i = 0;
    while i < s.len() {
        let Some(first) = byte_at(s, i) else {
            i += 1;
            i += s[i.min(s.len())..]
                .iter()
                .position(u8::is_ascii_digit)
                .unwrap_or(s.len());
            continue;
        };
        let (mut bytes, mut map) = (Vec::new(), Vec::new());
        let (mut at, mut token) = (i, first);
        let mut separator: Option<&[u8]> = None;
        loop {
            bytes.push(token.0);
            map.push(lines.around(at));
            let Some(k) = next_value(s, token.1) else {
                break;
            };
            let sep = trim_blanks(&s[token.1..k]);
            // `&#103;&#104;`, `%67%68` and `\147\150` are escapes, each
            // read by its own view with its own spans.
            let escape = sep.iter().any(|c| matches!(c, b'&' | b'#' | b'%' | b'\\'));
            if escape || sep.len() > MAX_SEPARATOR || separator.is_some_and(|x| x != sep) {
                break;
            }
            separator = Some(sep);
            match byte_at(s, k) {
                Some(next) => (at, token) = (k, next),
                None => break,
            }
        }
        i = token.1;
        if bytes.len() >= MIN_BYTE_LIST {
            if let Some(text) = printable(bytes) {
                out.push(View::mapped(text, map));
            }
        }
    }
}

/// Whether `s` may hold a list of [`MIN_BYTE_LIST`] values: the commas or
/// the `+` signs between them (`0x67, 0x68`, `chr(103)+chr(104)`). Most
/// strings have neither, and two `memchr` passes say so; columns of
/// numbers between blanks (`od -An -tu1`) are not looked for, as telling
/// them from prose and digests took a pass over every byte (1.5% of an
/// export's work).
fn might_hold_a_list(s: &[u8]) -> bool {
    let enough = |b: u8| memchr::memchr_iter(b, s).nth(MIN_BYTE_LIST - 2).is_some();
    enough(b',') || enough(b'+')
}

/// Where the next value of a list starts after a value ending at `j`:
/// the next digit, when what stands before it is a separator (at most
/// [`MAX_SEPARATOR`] bytes, and at most 64 blanks and line ends around
/// it); `None` at anything longer, which ends the list.
fn next_value(s: &[u8], j: usize) -> Option<usize> {
    let (mut core, mut blank) = (0, 0);
    for (k, c) in s.iter().enumerate().skip(j) {
        match c {
            b'0'..=b'9' => return Some(k),
            b' ' | b'\t' | b'\r' | b'\n' => blank += 1,
            _ => core += 1,
        }
        if core > MAX_SEPARATOR || blank > 64 {
            return None;
        }
    }
    None
}

/// `s` without the blanks and line ends at either end.
fn trim_blanks(s: &[u8]) -> &[u8] {
    let a = blanks(s);
    let b = s[a..]
        .iter()
        .rev()
        .take_while(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
        .count();
    &s[a..s.len() - b]
}

/// Blanks and line ends at the start of `s`.
fn blanks(s: &[u8]) -> usize {
    s.iter()
        .take_while(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
        .count()
}

/// The byte value written at `i` and where it ends: `0x` and one or two
/// hex digits, or a decimal number up to 255, standing alone (not part of
/// a name, a longer number or a decimal fraction).
fn byte_at(s: &[u8], i: usize) -> Option<(u8, usize)> {
    let glued = |c: &u8| c.is_ascii_alphanumeric() || b"_.".contains(c);
    if !s.get(i).is_some_and(u8::is_ascii_digit) || (i > 0 && glued(&s[i - 1])) {
        return None;
    }
    let (value, end) = if s[i] == b'0' && matches!(s.get(i + 1), Some(b'x' | b'X')) {
        let n = s[i + 2..]
            .iter()
            .take(3)
            .take_while(|c| c.is_ascii_hexdigit())
            .count();
        if !(1..=2).contains(&n) {
            return None;
        }
        (hex_at(s, i + 2, n)?, i + 2 + n)
    } else {
        let n = s[i..]
            .iter()
            .take(4)
            .take_while(|c| c.is_ascii_digit())
            .count();
        let v = s[i..i + n]
            .iter()
            .fold(0u32, |acc, c| acc * 10 + u32::from(c - b'0'));
        if n > 3 || v > 255 {
            return None;
        }
        (v, i + n)
    };
    if s.get(end).is_some_and(glued) {
        return None;
    }
    Some((value as u8, end))
}

/// The line around a position, for positions that only move forward:
/// each line is found once.
struct Lines<'a> {
    s: &'a [u8],
    line: (usize, usize),
}

impl<'a> Lines<'a> {
    fn new(s: &'a [u8]) -> Self {
        Lines { s, line: (0, 0) }
    }

    /// The span of the line holding `at` (without its line end).
    fn around(&mut self, at: usize) -> (u32, u32) {
        if at >= self.line.1 || at < self.line.0 {
            let start = memchr::memrchr(b'\n', &self.s[..at]).map_or(0, |i| i + 1);
            let end = memchr::memchr(b'\n', &self.s[at..]).map_or(self.s.len(), |i| at + i);
            self.line = (start, end);
        }
        (self.line.0 as u32, self.line.1 as u32)
    }
}

/// The views of the hexdump rows among `s`'s lines (see [`row`]): the
/// bytes of the hex columns, and the ASCII columns joined, each byte
/// mapped to its whole row.
fn hexdump(s: &[u8], out: &mut Vec<View>) {
    // A row starts with a hex digit (or spaces, then one) and holds a
    // two-space gap or a column mark: most strings fail at once.
    // (The searcher is built once: building it per string cost more than
    // the search.)
    static GAP: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"  "));
    if GAP.find(s).is_none() && memchr::memchr2(b'|', b'<', s).is_none() {
        return;
    }
    let (mut hex, mut hex_map) = (Vec::new(), Vec::new());
    let (mut ascii, mut ascii_map) = (Vec::new(), Vec::new());
    let (mut chars, mut chars_map) = (Vec::new(), Vec::new());
    let mut at = 0;
    while at <= s.len() {
        // Lines found with memchr: most strings are long and hold no row.
        let end = memchr::memchr(b'\n', &s[at..]).map_or(s.len(), |i| at + i);
        let line = &s[at..end];
        let starts_hex = line
            .iter()
            .find(|c| **c != b' ')
            .is_some_and(u8::is_ascii_hexdigit);
        if let Some(r) = starts_hex.then(|| row(line, at)).flatten() {
            let span = (r.span.0 as u32, r.span.1 as u32);
            hex_map.extend(std::iter::repeat_n(span, r.bytes.len()));
            hex.extend(r.bytes);
            let column = &s[r.ascii.0..r.ascii.1];
            ascii_map.extend(std::iter::repeat_n(span, column.len()));
            ascii.extend_from_slice(column);
        } else if let Some(bytes) = starts_hex
            .then(|| char_row(line, !chars.is_empty()))
            .flatten()
        {
            let span = (at as u32, end as u32);
            chars_map.extend(std::iter::repeat_n(span, bytes.len()));
            chars.extend(bytes);
        }
        at = end + 1;
    }
    if !hex.is_empty() {
        out.push(View::mapped(hex, hex_map));
        out.push(View::mapped(ascii, ascii_map));
    }
    if !chars.is_empty() {
        out.push(View::mapped(chars, chars_map));
    }
}

/// The fewest characters the first row of a character dump holds (`od
/// -c` prints sixteen; a later row, the last, may hold fewer).
const MIN_CHAR_ROW: usize = 4;

/// The bytes of one row of a character dump (`od -c`, `hexdump -c`): an
/// offset of at least six digits, then fields four wide, each a
/// character right-aligned, an escape (`\n`, `\t`, `\r`, `\0`) or three
/// octal digits; a blank field is a space. `more` when a row came before.
fn char_row(line: &[u8], more: bool) -> Option<Vec<u8>> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let offset = line.iter().take_while(|c| c.is_ascii_hexdigit()).count();
    if offset < 6 || line.len() <= offset {
        return None;
    }
    let fields = &line[offset..];
    let mut bytes = Vec::with_capacity(fields.len().div_ceil(4));
    for f in fields.chunks(4) {
        let c = &f[f.iter().take_while(|c| **c == b' ').count()..];
        bytes.push(match c {
            [] => b' ',
            [b'\\', b'n'] => b'\n',
            [b'\\', b't'] => b'\t',
            [b'\\', b'r'] => b'\r',
            [b'\\', b'0'] => 0,
            [x] if x.is_ascii_graphic() => *x,
            [a @ b'0'..=b'3', b @ b'0'..=b'7', c @ b'0'..=b'7'] => {
                (a - b'0') << 6 | (b - b'0') << 3 | (c - b'0')
            }
            _ => return None,
        });
    }
    // A dump's own padding ends a short last row: no trailing spaces.
    while bytes.last() == Some(&b' ') && fields.len() % 4 != 0 {
        bytes.pop();
    }
    let enough = more || bytes.len() >= MIN_CHAR_ROW;
    (enough && bytes.iter().any(u8::is_ascii_graphic)).then_some(bytes)
}

fn has_percent_escape(s: &[u8]) -> bool {
    memchr::memchr_iter(b'%', s).any(|i| {
        s.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
            && s.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
    })
}

fn hex_val(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => c - b'A' + 10,
    }
}

fn percent_decode(s: &[u8]) -> View {
    let mut bytes = Vec::with_capacity(s.len());
    let mut map = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'%'
            && i + 2 < s.len()
            && s[i + 1].is_ascii_hexdigit()
            && s[i + 2].is_ascii_hexdigit()
        {
            bytes.push(hex_val(s[i + 1]) << 4 | hex_val(s[i + 2]));
            map.push((i as u32, (i + 3) as u32));
            i += 3;
        } else {
            bytes.push(s[i]);
            map.push((i as u32, (i + 1) as u32));
            i += 1;
        }
    }
    View::mapped(bytes, map)
}

/// Fewest `=XX` escapes that make a string quoted-printable when no soft
/// line break does (`a=1F` is code; a mail body escapes many bytes).
const MIN_QP_ESCAPES: usize = 4;
/// The widths of a quoted-printable line that ends in a soft break (the
/// `=` included): encoders wrap at 76, none much earlier.
const QP_WIDTHS: std::ops::RangeInclusive<usize> = 70..=76;

/// Quoted-printable text (RFC 2045: a mail body, a MIME part) decoded:
/// `=XX` escapes (upper-case hex, as the RFC writes them) become their
/// byte, and soft line breaks (`=` ending a line of 70 to 76 bytes) are
/// taken out, so a token an encoder wrapped is read whole. `None` unless
/// there is a soft break or [`MIN_QP_ESCAPES`] escapes.
fn quoted_printable(s: &[u8]) -> Option<View> {
    // Most strings with a `=` are code or `key=value`: they are told apart
    // before anything is allocated.
    let mut escapes = 0;
    let quoted = memchr::memchr_iter(b'=', s).any(|i| {
        if upper_hex(s.get(i + 1)) && upper_hex(s.get(i + 2)) {
            escapes += 1;
            return escapes >= MIN_QP_ESCAPES;
        }
        soft_break(s, i).is_some()
    });
    if !quoted {
        return None;
    }
    let (mut bytes, mut map) = (Vec::with_capacity(s.len()), Vec::with_capacity(s.len()));
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if c == b'=' && upper_hex(s.get(i + 1)) && upper_hex(s.get(i + 2)) {
            bytes.push(hex_val(s[i + 1]) << 4 | hex_val(s[i + 2]));
            map.push((i as u32, (i + 3) as u32));
            i += 3;
            continue;
        }
        if c == b'=' {
            if let Some(n) = soft_break(s, i) {
                i += n;
                continue;
            }
        }
        bytes.push(c);
        map.push((i as u32, i as u32 + 1));
        i += 1;
    }
    Some(View::mapped(bytes, map))
}

/// Whether `c` is an upper-case hex digit.
fn upper_hex(c: Option<&u8>) -> bool {
    c.is_some_and(|c| c.is_ascii_digit() || (b'A'..=b'F').contains(c))
}

/// The length of the soft line break (`=` and a line end) at `s[i]`, a
/// `=` that ends a line [`QP_WIDTHS`] wide.
fn soft_break(s: &[u8], i: usize) -> Option<usize> {
    let n = match (s.get(i + 1), s.get(i + 2)) {
        (Some(b'\n'), _) => 2,
        (Some(b'\r'), Some(b'\n')) => 3,
        _ => return None,
    };
    let line_start = memchr::memrchr(b'\n', &s[..i]).map_or(0, |k| k + 1);
    QP_WIDTHS.contains(&(i + 1 - line_start)).then_some(n)
}

/// JSON / JavaScript string escapes (`\n`, `\"`, `\uXXXX` with surrogate
/// pairs, `\xHH`) and C's octal ones (`\147`); `None` when nothing was
/// decoded.
fn unescape(s: &[u8]) -> Option<View> {
    let mut bytes = Vec::with_capacity(s.len());
    let mut map = Vec::with_capacity(s.len());
    let mut i = 0;
    let mut changed = false;
    let mut push = |b: &[u8], a: usize, e: usize| {
        for x in b {
            bytes.push(*x);
            map.push((a as u32, e as u32));
        }
    };
    while i < s.len() {
        match escape_at(s, i) {
            Some((buf, n, len)) => {
                push(&buf[..n], i, i + len);
                i += len;
                changed = true;
            }
            None => {
                push(&s[i..i + 1], i, i + 1);
                i += 1;
            }
        }
    }
    changed.then_some(View::mapped(bytes, map))
}

/// The escape at `i`, if one starts there: its UTF-8 bytes, how many of
/// them, and how many bytes the escape spans.
fn escape_at(s: &[u8], i: usize) -> Option<([u8; 4], usize, usize)> {
    if s[i] != b'\\' {
        return None;
    }
    let simple = match *s.get(i + 1)? {
        b'n' => Some(b'\n'),
        b't' => Some(b'\t'),
        b'r' => Some(b'\r'),
        b'"' => Some(b'"'),
        b'\'' => Some(b'\''),
        b'\\' => Some(b'\\'),
        b'/' => Some(b'/'),
        b'b' => Some(8),
        b'f' => Some(12),
        _ => None,
    };
    if let Some(c) = simple {
        return Some(([c, 0, 0, 0], 1, 2));
    }
    let octal = |c: &u8| (b'0'..=b'7').contains(c);
    match s[i + 1] {
        b'x' => hex_at(s, i + 2, 2).map(|v| ([v as u8, 0, 0, 0], 1, 4)),
        // C's, Python's and printf's three octal digits (`\147\150\160`).
        b'0'..=b'3' if s.get(i + 2..i + 4).is_some_and(|d| d.iter().all(octal)) => {
            let v = s[i + 1..i + 4]
                .iter()
                .fold(0u8, |acc, c| acc << 3 | (c - b'0'));
            Some(([v, 0, 0, 0], 1, 4))
        }
        b'u' => {
            let hi = hex_at(s, i + 2, 4)?;
            let (cp, len) = if (0xD800..0xDC00).contains(&hi) && s.get(i + 6..i + 8) == Some(b"\\u")
            {
                match hex_at(s, i + 8, 4) {
                    Some(lo) if (0xDC00..0xE000).contains(&lo) => {
                        (0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00), 12)
                    }
                    _ => (0xFFFD, 6),
                }
            } else {
                (hi, 6)
            };
            let c = char::from_u32(cp).unwrap_or('\u{FFFD}');
            let mut buf = [0u8; 4];
            let n = c.encode_utf8(&mut buf).len();
            Some((buf, n, len))
        }
        _ => None,
    }
}

/// The value of the `n` hex digits at `at`, if they are all hex digits.
fn hex_at(s: &[u8], at: usize, n: usize) -> Option<u32> {
    let h = s.get(at..at + n)?;
    if !h.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    Some(h.iter().fold(0u32, |acc, c| acc << 4 | hex_val(*c) as u32))
}

/// Base64 and base64url alphabet membership, by byte.
const B64: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || b == b'-' || b == b'_';
        c += 1;
    }
    t
};

fn is_b64(c: u8) -> bool {
    B64[c as usize]
}

/// Base64 / base64url runs of at least [`MIN_BASE64_RUN`] characters that
/// decode to UTF-8 text.
///
/// Any such run starting in `i..i + MIN` covers byte `i + MIN - 1`, so
/// that one byte is probed first and a miss skips the whole window: most
/// text is words and spaces, and this walk was a byte at a time before.
fn base64_runs(s: &[u8], out: &mut Vec<View>) {
    // No run crosses `i - 1 | i`: `i` is 0, or one of those two bytes is
    // outside the alphabet.
    let mut i = 0;
    while let Some(&probe) = s.get(i + MIN_BASE64_RUN - 1) {
        let at = i + MIN_BASE64_RUN - 1;
        if !is_b64(probe) {
            i = at + 1;
            continue;
        }
        let mut start = at;
        while start > i && is_b64(s[start - 1]) {
            start -= 1;
        }
        let mut run_end = at + 1;
        while run_end < s.len() && is_b64(s[run_end]) {
            run_end += 1;
        }
        let mut end = run_end;
        while end < s.len() && s[end] == b'=' && end - run_end < 2 {
            end += 1;
        }
        if run_end - start >= MIN_BASE64_RUN {
            if let Some(text) = decode_text(&s[start..run_end]) {
                out.push(View::whole(text, start, end));
            } else if let Some(v) = inflated(&s[start..run_end], start, end) {
                out.push(v);
            } else if let Some(text) = base32_text(&s[start..run_end]) {
                let padded = s[run_end..]
                    .iter()
                    .take(6)
                    .take_while(|c| **c == b'=')
                    .count();
                out.push(View::whole(text, start, run_end + padded));
            } else if let Some(text) = misaligned_text(&s[start..run_end]) {
                // A blob cut at a byte that began no quad (a log line or
                // a record that starts inside it) is read from its next
                // quad; the whole run goes.
                out.push(View::whole(text, start, end));
            }
        }
        i = end;
    }
}

/// The text a base64 run decodes to from its second, third or fourth
/// character, if it is text there: a blob cut at a byte that began no
/// quad. Runs of hex digits (digests, ids) are read by the hex view and
/// skipped here; they are most runs that decode to no text.
fn misaligned_text(run: &[u8]) -> Option<Vec<u8>> {
    if run.len() < MIN_BASE64_RUN + 1 || run.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    (1..4)
        .filter(|k| run.len() - k >= MIN_BASE64_RUN)
        .find(|&k| ascii_quads(&run[k..]))
        .and_then(|k| decode_text(&run[k..]))
}

/// Whether the first four quads of base64 `run` can decode to ASCII (a
/// byte under 0x80 each): the top bit of each byte is one bit of one
/// character's value, so this needs no decoding. Most runs that spell no
/// text fail it within a quad or two.
fn ascii_quads(run: &[u8]) -> bool {
    run.chunks_exact(4).take(4).all(|q| {
        let v = |c: u8| B64_VALUE[c as usize];
        v(q[0]) < 32 && v(q[1]) & 8 == 0 && v(q[2]) & 2 == 0
    })
}

/// Each base64 or base64url character's value (0 to 63; 64 for others).
const B64_VALUE: [u8; 256] = {
    let mut t = [64u8; 256];
    let mut i = 0;
    while i < 26 {
        t[b'A' as usize + i] = i as u8;
        t[b'a' as usize + i] = 26 + i as u8;
        i += 1;
    }
    let mut d = 0;
    while d < 10 {
        t[b'0' as usize + d] = 52 + d as u8;
        d += 1;
    }
    t[b'+' as usize] = 62;
    t[b'-' as usize] = 62;
    t[b'/' as usize] = 63;
    t[b'_' as usize] = 63;
    t
};

/// Shortest base32 run decoded: fifteen bytes of text.
const MIN_BASE32_RUN: usize = 24;

/// The text a run of RFC 4648 base32 (`A-Z`, `2-7`) decodes to, if it is
/// text; any other run is `None` (its first eight characters, five bytes,
/// decide for most).
fn base32_text(run: &[u8]) -> Option<Vec<u8>> {
    let digit = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'2'..=b'7' => Some(c - b'2' + 26),
        _ => None,
    };
    if run.len() < MIN_BASE32_RUN {
        return None;
    }
    let (mut bits, mut n, mut out) = (0u32, 0, Vec::with_capacity(run.len() * 5 / 8));
    for (k, &c) in run.iter().enumerate() {
        bits = bits << 5 | u32::from(digit(c)?);
        n += 5;
        if n >= 8 {
            n -= 8;
            out.push((bits >> n) as u8);
            bits &= (1 << n) - 1;
        }
        if k == 7
            && !out
                .iter()
                .all(|b| (0x20..0x7f).contains(b) || matches!(b, b'\n' | b'\t'))
        {
            return None;
        }
    }
    printable(out)
}

/// The base64 run `run` (at `start..end`) decoded, when it is gzip, zlib
/// or zstd data, inflated to at most [`MAX_INFLATED`] bytes (read as bytes,
/// text or not: a tar inside a gzip holds text among its headers); past
/// that the view is marked `overflow`.
fn inflated(run: &[u8], start: usize, end: usize) -> Option<View> {
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    // A length of 1 mod 4 is never valid base64: drop the stray character.
    let trimmed = &run[..run.len() - usize::from(run.len() % 4 == 1)];
    let engine = if trimmed.iter().any(|c| matches!(c, b'-' | b'_')) {
        URL_SAFE_NO_PAD
    } else {
        STANDARD_NO_PAD
    };
    let mut head = [0u8; 6];
    engine.decode_slice(&trimmed[..8], &mut head).ok()?;
    compression(&head)?;
    let data = engine.decode(trimmed).ok()?;
    inflate(&data, start, end)
}

/// Which compressed format bytes beginning with `head` are: gzip (0),
/// zlib (1) or zstd (2).
fn compression(head: &[u8]) -> Option<u8> {
    match head {
        [0x1f, 0x8b, 8, ..] => Some(0),
        [0x78, 0x01 | 0x5e | 0x9c | 0xda, ..] => Some(1),
        [0x28, 0xb5, 0x2f, 0xfd, ..] => Some(2),
        _ => None,
    }
}

/// `data` (decoded from `start..end` of the string) inflated, when it is
/// gzip, zlib or zstd data (see [`inflated`]).
fn inflate(data: &[u8], start: usize, end: usize) -> Option<View> {
    use std::io::Read;
    let reader: Box<dyn Read> = match compression(data)? {
        0 => Box::new(flate2::read::MultiGzDecoder::new(data)),
        1 => Box::new(flate2::read::ZlibDecoder::new(data)),
        _ => Box::new(zstd::stream::read::Decoder::new(data).ok()?),
    };
    let mut bytes = Vec::new();
    // A stream cut short or damaged still shows what it inflated so far.
    let _ = reader.take(MAX_INFLATED as u64 + 1).read_to_end(&mut bytes);
    if bytes.is_empty() {
        return None;
    }
    let overflow = bytes.len() > MAX_INFLATED;
    bytes.truncate(MAX_INFLATED);
    let mut v = View::whole(bytes, start, end);
    v.overflow = overflow;
    Some(v)
}

fn decode_text(run: &[u8]) -> Option<Vec<u8>> {
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    // A length of 1 mod 4 is never valid base64: drop the stray character.
    let trimmed = if run.len() % 4 == 1 {
        &run[..run.len() - 1]
    } else {
        run
    };
    let engine = if trimmed.iter().any(|c| matches!(c, b'-' | b'_')) {
        URL_SAFE_NO_PAD
    } else {
        STANDARD_NO_PAD
    };
    if head_is_not_text(&engine, trimmed) {
        return None;
    }
    text_of(&engine, trimmed)
}

/// Whether the first six bytes `run` decodes to hold an invalid UTF-8
/// sequence. Most runs are ids and hashes, whose bytes are not text, and
/// [`text_of`] refuses any such run (the sequence is before byte 64), so
/// this spares decoding them whole.
fn head_is_not_text(engine: &base64::engine::GeneralPurpose, run: &[u8]) -> bool {
    const _: () = assert!(MIN_BASE64_RUN > 8);
    let mut head = [0u8; 6];
    engine.decode_slice(&run[..8], &mut head).is_ok()
        && std::str::from_utf8(&head).is_err_and(|e| e.error_len().is_some())
}

/// The text a base64 run decodes to, if it is text.
fn text_of(engine: &base64::engine::GeneralPurpose, trimmed: &[u8]) -> Option<Vec<u8>> {
    // A run cut short (a log line truncated inside a blob) ends in bits
    // that do not complete a byte: decode the whole quads before them.
    let whole = &trimmed[..trimmed.len() - trimmed.len() % 4];
    let d = engine
        .decode(trimmed)
        .or_else(|_| engine.decode(whole))
        .ok()?;
    // A stray invalid byte (a PEM damaged in transit) does not hide the
    // text around it; it counts against the text like a control byte. Only
    // after 64 good bytes: random bytes fail within a few, and reading
    // every opaque blob through would cost the export 3% of its CPU.
    let text = match std::str::from_utf8(&d) {
        Ok(t) => std::borrow::Cow::Borrowed(t),
        Err(e) if e.valid_up_to() >= 64 => String::from_utf8_lossy(&d),
        Err(_) => return None,
    };
    let printable = text
        .chars()
        .filter(|c| (!c.is_control() || matches!(c, '\n' | '\r' | '\t')) && *c != '\u{FFFD}')
        .count();
    (printable * 10 >= text.chars().count() * 9).then(|| text.into_owned().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(s: &str, needle: &str) -> Vec<(usize, usize)> {
        decoded_views(s.as_bytes())
            .iter()
            .filter_map(|v| {
                let pos = v
                    .bytes
                    .windows(needle.len())
                    .position(|w| w == needle.as_bytes())?;
                Some(v.original_span(pos, pos + needle.len()))
            })
            .collect()
    }

    #[test]
    fn unicode_escapes_map_back_to_their_source() {
        let s = r"x \u0067hp_abc\n y";
        let sp = spans(s, "ghp_abc");
        assert!(sp.contains(&(2, 14)), "{sp:?}");
        assert_eq!(&s[2..14], r"\u0067hp_abc");
        let pair = r"a\ud83d\ude00b";
        assert!(!spans(pair, "\u{1F600}").is_empty());
    }

    #[test]
    fn octal_escapes_decode_and_a_path_stays_itself() {
        let s = r"b'\147\150\160_abc'";
        let sp = spans(s, "ghp_abc");
        assert_eq!(sp, vec![(2, 18)], "{sp:?}");
        // Four octal digits are three and a digit; `\4xx` is no byte.
        assert!(spans(r"\1477", "g7").contains(&(0, 5)));
        assert!(spans(r"C:\400\x", "\u{100}").is_empty());
    }

    /// `xxd -i`'s rows of a file holding `text`.
    fn xxd_i(text: &str) -> String {
        let rows: Vec<String> = text
            .as_bytes()
            .chunks(12)
            .map(|c| {
                let cells: Vec<String> = c.iter().map(|b| format!("0x{b:02x}")).collect();
                format!("  {}", cells.join(", "))
            })
            .collect();
        format!("unsigned char f[] = {{\n{}\n}};\n", rows.join(",\n"))
    }

    #[test]
    fn a_list_of_bytes_decodes_to_its_text_each_byte_mapped_to_its_line() {
        let secret = "token=R8xK2mQ7vL4nT9wB3cZ6";
        let dump = xxd_i(&format!("DEBUG=1\n{secret}\n"));
        let sp = spans(&dump, secret);
        assert_eq!(sp.len(), 1, "{sp:?}");
        let taken = &dump[sp[0].0..sp[0].1];
        assert!(taken.starts_with("  0x") && taken.ends_with(|c: char| c.is_ascii_hexdigit()));
        assert_eq!(taken.lines().count(), 3, "{taken}");
        // A list that ends the string on its comma (its last line is
        // taken with the comma).
        let open = format!("{},\n ", &dump[..sp[0].1]);
        assert_eq!(spans(&open, secret), vec![(sp[0].0, sp[0].1 + 1)]);
        // Decimal, as Python's and Java's arrays write them, on one line.
        let decimal: Vec<String> = secret.bytes().map(|b| b.to_string()).collect();
        let code = format!("key = bytes([{}])", decimal.join(", "));
        assert_eq!(spans(&code, secret), vec![(0, code.len())]);
    }

    #[test]
    fn lines_a_wrap_cut_are_joined_and_only_a_hit_across_the_cut_is_news() {
        let token = "R8xK2mQ7vL4nT9wB3cZ6pH1yF5jD0sA8gE2u";
        let line = format!("remote: using token ghp_{token} for https://github.com/o/r.git ok");
        let cut: Vec<&str> = line
            .as_bytes()
            .chunks(40)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        let text = cut.join("\r\n");
        let views = decoded_views(text.as_bytes());
        let v = views
            .iter()
            .find(|v| v.bytes == line.as_bytes())
            .expect("the wrapped lines joined");
        let at = text.find("ghp_").unwrap();
        let end = text.find(" for").unwrap();
        let (x, y) = v.original_span(at, end - 2);
        assert_eq!((x, y), (at, end));
        assert!(v.news(x, y));
        // A hit inside one line is the line's own.
        assert!(!v.news(0, 10));
        // A line shorter than the longest is not cut by a wrap, and a run
        // of a few characters across a break is words.
        let uneven = format!("{}\n{}", &line[..49], &line[49..]);
        let longer = format!("{uneven}\n{}", "x".repeat(60));
        assert!(!decoded_views(longer.as_bytes())
            .iter()
            .any(|v| v.bytes.len() > 60));
        let prose = "The export reads every string of the session and then it wr\nites the tree.";
        assert!(decoded_views(prose.as_bytes()).is_empty());
        // One longest line is only the longest: a key's line above the
        // next setting is not cut (two lines of the width, or 80, are).
        let env = format!("Address = 10.0.0.2/32\nPrivateKey = {token}QmVhcg\nDNS = 8.8.8.8\n");
        assert!(decoded_views(env.as_bytes()).is_empty());
        let eighty = format!("{:44}{token}\nDNS = 8.8.8.8\n", "PrivateKey =");
        assert_eq!(eighty.find('\n'), Some(80));
        assert!(decoded_views(eighty.as_bytes())
            .iter()
            .any(|v| v.news(0, 90)));
    }

    #[test]
    fn short_lists_numbers_and_binary_lists_are_no_view() {
        let decimal: Vec<String> = b"R8xK2mQ7vL4nT9w".iter().map(|b| b.to_string()).collect();
        assert_eq!(decimal.len(), MIN_BYTE_LIST - 1);
        let v = decoded_views(decimal.join(", ").as_bytes());
        assert!(
            v.is_empty(),
            "{:?}",
            v.iter()
                .map(|v| String::from_utf8_lossy(&v.bytes).into_owned())
                .collect::<Vec<_>>()
        );
        for not_bytes in [
            // Values over 255, fractions, names and a version are no bytes.
            (100..120)
                .map(|n| (n * 3).to_string())
                .collect::<Vec<_>>()
                .join(", "),
            (65..85)
                .map(|n| format!("{n}.5"))
                .collect::<Vec<_>>()
                .join(", "),
            (65..85)
                .map(|n| format!("x{n}"))
                .collect::<Vec<_>>()
                .join(", "),
            // Small numbers decode to control bytes, not text.
            (1..30).map(|n| n.to_string()).collect::<Vec<_>>().join(","),
        ] {
            assert!(
                decoded_views(not_bytes.as_bytes()).is_empty(),
                "{not_bytes}"
            );
        }
    }

    #[test]
    fn percent_and_partial_percent() {
        let s = "q=sk%2Dproj%2dAB&x";
        let sp = spans(s, "sk-proj-AB");
        assert!(sp.contains(&(2, 16)), "{sp:?}");
    }

    #[test]
    fn base64_maps_to_the_whole_run() {
        use base64::Engine;
        let blob = base64::engine::general_purpose::STANDARD.encode("token=supersecretvalue123");
        let s = format!("data {blob} end");
        let sp = spans(&s, "supersecretvalue123");
        assert_eq!(sp, vec![(5, 5 + blob.len())]);
        let url =
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("a?b>c~~~ secret-value-here!!");
        assert!(!spans(&url, "secret-value-here").is_empty());
    }

    #[test]
    fn a_blob_cut_short_is_decoded_up_to_its_last_whole_quad() {
        use base64::Engine;
        let blob = base64::engine::general_purpose::STANDARD
            .encode("-----BEGIN RSA PRIVATE KEY-----\nMIIEogIBAAKCAQEAoy1XXuVAQpqHbQ");
        // Cut where the last symbol's low bits are not zero.
        let cut = (blob.len() - 6..blob.len() - 1)
            .find(|n| n % 4 != 0 && decode_text_strict(&blob.as_bytes()[..*n]).is_none())
            .expect("some cut leaves stray bits");
        let s = format!("KEY_B64={}", &blob[..cut]);
        assert_eq!(spans(&s, "PRIVATE KEY"), vec![(8, 8 + cut)]);
        // One damaged byte inside does not hide the text around it; random
        // bytes stay opaque.
        let mut pem = b"-----BEGIN RSA PRIVATE KEY-----\nMIIEogIBAAKCAQEAoy1XXuVAQpqHbQE05mkhrNg/124F/2K9OanizZTZUUhK08U8".to_vec();
        pem[70] = 0xa1;
        let blob = base64::engine::general_purpose::STANDARD.encode(&pem);
        assert!(!spans(&format!("KEY_B64={blob}"), "PRIVATE KEY").is_empty());
        let noise: Vec<u8> = (0u32..96)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        let blob = base64::engine::general_purpose::STANDARD.encode(&noise);
        assert!(decoded_views(blob.as_bytes()).is_empty());
    }

    fn decode_text_strict(run: &[u8]) -> Option<Vec<u8>> {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD_NO_PAD
            .decode(run)
            .ok()
    }

    #[test]
    fn two_layers_percent_of_base64() {
        use base64::Engine;
        let blob = base64::engine::general_purpose::STANDARD.encode("password=abcdefghijkl");
        let enc = blob
            .replace('=', "%3D")
            .replace('+', "%2B")
            .replace('/', "%2F");
        let s = format!("v={enc}");
        assert!(!spans(&s, "abcdefghijkl").is_empty());
    }

    const TOKEN: &str = "ghp_R2d2C3poLukeLeia0123456789abcdefABCD";

    fn xxd(data: &[u8]) -> String {
        data.chunks(16)
            .enumerate()
            .map(|(i, row)| {
                let hex: Vec<String> = row
                    .chunks(2)
                    .map(|p| p.iter().map(|b| format!("{b:02x}")).collect())
                    .collect();
                let ascii: String = row
                    .iter()
                    .map(|&b| {
                        if (0x20..0x7f).contains(&b) {
                            b as char
                        } else {
                            '.'
                        }
                    })
                    .collect();
                format!("{:08x}: {:<40}  {ascii}\n", i * 16, hex.join(" "))
            })
            .collect()
    }

    fn hexdump_c(data: &[u8]) -> String {
        data.chunks(16)
            .enumerate()
            .map(|(i, row)| {
                let hex: Vec<String> = row.iter().map(|b| format!("{b:02x}")).collect();
                let (a, b) = hex.split_at(hex.len().min(8));
                let ascii: String = row
                    .iter()
                    .map(|&b| {
                        if (0x20..0x7f).contains(&b) {
                            b as char
                        } else {
                            '.'
                        }
                    })
                    .collect();
                format!(
                    "{:08x}  {:<23}  {:<23}  |{ascii}|\n",
                    i * 16,
                    a.join(" "),
                    b.join(" ")
                )
            })
            .collect()
    }

    fn od(data: &[u8]) -> String {
        data.chunks(16)
            .enumerate()
            .map(|(i, row)| {
                let hex: String = row.iter().map(|b| format!(" {b:02x}")).collect();
                let ascii: String = row
                    .iter()
                    .map(|&b| {
                        if (0x20..0x7f).contains(&b) {
                            b as char
                        } else {
                            '.'
                        }
                    })
                    .collect();
                format!("{:06x}{hex:<48}  >{ascii}<\n", i * 16)
            })
            .collect()
    }

    #[test]
    fn hexdumps_show_their_bytes_and_their_ascii_column_across_rows() {
        let data = format!("GITHUB_TOKEN={TOKEN}\nAWS=AKIAIOSFODNN7EXAMPLE\n");
        for dump in [
            xxd(data.as_bytes()),
            hexdump_c(data.as_bytes()),
            od(data.as_bytes()),
        ] {
            let sp = spans(&dump, TOKEN);
            assert_eq!(sp.len(), 2, "hex and ASCII columns: {dump}");
            // Each maps to whole rows, from the token's first to its last.
            let first_row_end = dump.find('\n').unwrap();
            assert_eq!(sp[0], sp[1]);
            assert_eq!(sp[0].0, 0, "{dump}");
            assert!(sp[0].1 > first_row_end, "{dump}");
        }
        // Lines that only look like rows are not read.
        assert!(spans("1234  abcd\nhello  there", "abcd").is_empty());
        assert!(
            spans("00000000: 4142  XYZ", "AB").is_empty(),
            "the ASCII column must fit"
        );
    }

    #[test]
    fn character_references_and_invisible_characters_are_seen_through() {
        let refs: String = TOKEN.chars().map(|c| format!("&#{};", c as u32)).collect();
        assert_eq!(spans(&refs, TOKEN), vec![(0, refs.len())]);
        let hex_refs: String = TOKEN
            .chars()
            .map(|c| format!("&#x{:x}", c as u32))
            .collect();
        assert_eq!(spans(&hex_refs, TOKEN), vec![(0, hex_refs.len())]);
        assert!(!spans("a &lt;b&gt; &amp; c", "<b> & c").is_empty());
        let split = format!("t={}\u{200b}{}", &TOKEN[..10], &TOKEN[10..]);
        assert_eq!(spans(&split, TOKEN), vec![(2, split.len())]);
        let soft = format!("{}\u{ad}{}", &TOKEN[..4], &TOKEN[4..]);
        assert!(!spans(&soft, TOKEN).is_empty());
    }

    #[test]
    fn text_is_read_as_a_terminal_shows_it() {
        // Colour around a match (`grep --color`), a cursor move and an OSC
        // hyperlink between two writes, a character-set choice.
        let coloured = format!(
            "GH=\u{1b}[01;31m\u{1b}[K{}\u{1b}[m\u{1b}[K{}",
            &TOKEN[..9],
            &TOKEN[9..]
        );
        assert_eq!(spans(&coloured, TOKEN), vec![(14, coloured.len())]);
        let moved = format!(
            "{}\u{1b}[2K\u{1b}]8;;http://x\u{7}{}\u{1b}(B",
            &TOKEN[..5],
            &TOKEN[5..]
        );
        assert_eq!(spans(&moved, TOKEN), vec![(0, moved.len() - 3)]);
        let osc_st = format!("{}\u{1b}]0;title\u{1b}\\{}", &TOKEN[..5], &TOKEN[5..]);
        assert!(!spans(&osc_st, TOKEN).is_empty());
        // Fullwidth forms read as ASCII, each mapped to its three bytes.
        let wide: String = TOKEN
            .chars()
            .map(|c| char::from_u32(c as u32 + 0xFEE0).unwrap())
            .collect();
        assert_eq!(
            spans(&format!("x\u{3000}{wide}"), TOKEN),
            vec![(4, 4 + wide.len())]
        );
        // An escape cut short, or one that runs past its limit, is text.
        assert!(shown(b"\x1b[").is_none());
        let unterminated = format!("\u{1b}]{}", "a".repeat(MAX_ESCAPE + 8));
        let v = shown(unterminated.as_bytes());
        assert!(v.is_none(), "nothing to take out");
        assert!(shown(b"plain text, no escapes").is_none());
    }

    #[test]
    fn quoted_printable_is_read_with_its_soft_breaks_taken_out() {
        // A mail body wrapped at 76 with `=` soft breaks, the token cut.
        let line = format!(
            "It will expire in 30 days, so keep it safe. Your new token is {}=",
            &TOKEN[..10]
        );
        let line = format!("{}{}", "-".repeat(76 - line.len()), line);
        assert_eq!(line.len(), 76);
        let body = format!("{line}\r\n{} =E2=80=94 the team\r\n", &TOKEN[10..]);
        let start = body.find(&TOKEN[..10]).unwrap();
        assert_eq!(
            spans(&body, TOKEN),
            vec![(start, start + 10 + 3 + TOKEN.len() - 10)]
        );
        // Every byte escaped.
        let all: String = TOKEN.bytes().map(|b| format!("={b:02X}")).collect();
        assert_eq!(spans(&all, TOKEN), vec![(0, all.len())]);
        // Code: a short line ending in `=`, a lower-case or single escape.
        assert!(quoted_printable(b"x =\n  y\na=1F b=ff").is_none());
        assert!(quoted_printable(b"color=FF0000 size=12").is_none());
    }

    #[test]
    fn byte_values_with_any_one_separator_and_a_big_number_spell_text() {
        let text = format!("token={TOKEN}");
        let chr: String = text
            .bytes()
            .map(|b| format!("chr({b})"))
            .collect::<Vec<_>>()
            .join("+");
        assert_eq!(spans(&chr, TOKEN).len(), 1, "{chr}");
        let ps: String = text
            .bytes()
            .map(|b| format!("[char]{b}"))
            .collect::<Vec<_>>()
            .join(" + ");
        assert_eq!(spans(&ps, TOKEN).len(), 1, "{ps}");
        // A separator that changes ends the list: no 16 values in a row.
        let mixed: String = text
            .bytes()
            .enumerate()
            .map(|(i, b)| format!("{b}{}", if i % 8 == 7 { "; " } else { ", " }))
            .collect();
        assert!(spans(&mixed, TOKEN).is_empty(), "{mixed}");
        // `int.from_bytes(token, "big")`.
        let mut n: Vec<u32> = vec![0];
        for b in text.bytes() {
            let mut carry = u32::from(b);
            for d in n.iter_mut() {
                let v = *d * 256 + carry;
                *d = v % 10;
                carry = v / 10;
            }
            while carry > 0 {
                n.push(carry % 10);
                carry /= 10;
            }
        }
        let big: String = n
            .iter()
            .rev()
            .map(|d| char::from(b'0' + *d as u8))
            .collect();
        let said = format!("n = {big}");
        assert_eq!(spans(&said, TOKEN), vec![(4, said.len())]);
        assert!(decoded_views("1234567890".repeat(5).as_bytes()).is_empty());
    }

    #[test]
    fn a_blob_cut_inside_a_quad_is_read_from_its_next_one() {
        use base64::Engine;
        let blob = base64::engine::general_purpose::STANDARD.encode(format!("export GH={TOKEN}\n"));
        for cut in 1..4 {
            let tail = &blob[cut..];
            assert_eq!(
                spans(tail, TOKEN),
                vec![(0, tail.len())],
                "cut {cut}: {tail}"
            );
        }
    }

    #[test]
    fn compressed_blobs_are_inflated_within_their_limit() {
        use base64::Engine;
        use std::io::Write;
        let secret = format!("GITHUB_TOKEN={TOKEN}");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(secret.as_bytes()).unwrap();
        let mut zl = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        zl.write_all(secret.as_bytes()).unwrap();
        let zs = zstd::encode_all(secret.as_bytes(), 3).unwrap();
        for (name, data) in [
            ("gzip", gz.finish().unwrap()),
            ("zlib", zl.finish().unwrap()),
            ("zstd", zs),
        ] {
            // Written as hex (`xxd -p`, a bytes literal printed) too.
            let hex: String = data.iter().map(|b| format!("{b:02x}")).collect();
            let s = format!("payload: {hex}");
            assert_eq!(spans(&s, TOKEN), vec![(9, s.len())], "{name} as hex");
            for engine in [
                base64::engine::general_purpose::STANDARD,
                base64::engine::general_purpose::URL_SAFE,
            ] {
                let blob = engine.encode(&data);
                let s = format!("payload: {blob}");
                assert_eq!(spans(&s, TOKEN), vec![(9, s.len())], "{name}");
            }
        }
        // A bomb stops at the limit and is marked, so the blob goes whole.
        let mut big = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        big.write_all(&vec![b'a'; MAX_INFLATED + 10]).unwrap();
        let blob = base64::engine::general_purpose::STANDARD.encode(big.finish().unwrap());
        let views = decoded_views(blob.as_bytes());
        assert!(views
            .iter()
            .any(|v| v.overflow && v.bytes.len() == MAX_INFLATED));
    }

    #[test]
    fn runs_of_hex_digits_that_spell_text_are_read() {
        let hex: String = TOKEN.bytes().map(|b| format!("{b:02x}")).collect();
        let s = format!("xxd -p: {hex}");
        assert_eq!(spans(&s, TOKEN), vec![(8, s.len())]);
        let digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
        assert!(decoded_views(digest.as_bytes()).is_empty());
    }

    #[test]
    fn a_character_dump_is_read_across_its_rows() {
        // `od -c` of "key: <token>\n": sixteen fields a row, four wide.
        let text = format!("key: {TOKEN}\n");
        let dump: String = text
            .as_bytes()
            .chunks(16)
            .enumerate()
            .map(|(i, row)| {
                let fields: String = row
                    .iter()
                    .map(|&b| match b {
                        b'\n' => "  \\n".to_string(),
                        b' ' => "    ".to_string(),
                        b => format!("{:>4}", b as char),
                    })
                    .collect();
                format!("{:07o}{fields}\n", i * 16)
            })
            .collect();
        let views = decoded_views(dump.as_bytes());
        let v = views
            .iter()
            .find(|v| v.bytes == text.as_bytes())
            .unwrap_or_else(|| panic!("{dump}"));
        // Each character maps to its whole row.
        let at = text.find("ghp_").unwrap();
        assert_eq!(v.original_span(at, at + TOKEN.len()), (0, dump.len() - 1));
        // Prose with a number in front is no dump.
        assert!(decoded_views(b"2026123 was a good year for the crops").is_empty());
    }

    #[test]
    fn base32_and_letter_spaced_text_are_read() {
        // RFC 4648 base32 of "key: <token>", padded.
        fn b32(data: &[u8]) -> String {
            const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
            let mut out = String::new();
            for chunk in data.chunks(5) {
                let mut buf = [0u8; 5];
                buf[..chunk.len()].copy_from_slice(chunk);
                let v = buf.iter().fold(0u64, |a, b| a << 8 | u64::from(*b));
                let chars = (chunk.len() * 8).div_ceil(5);
                for k in 0..8 {
                    out.push(if k < chars {
                        A[(v >> (35 - 5 * k) & 31) as usize] as char
                    } else {
                        '='
                    });
                }
            }
            out
        }
        let encoded = b32(format!("key: {TOKEN}").as_bytes());
        let s = format!("blob {encoded} end");
        assert_eq!(spans(&s, TOKEN), vec![(5, 5 + encoded.len())], "{s}");
        assert!(
            decoded_views(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567ABCD").is_empty(),
            "an alphabet is no text"
        );

        let spaced: String = format!("token: {TOKEN} ok")
            .chars()
            .flat_map(|c| [c, ' '])
            .collect();
        let s = format!("said {spaced}");
        let at = s.find("g h p").unwrap();
        assert_eq!(
            spans(&s, TOKEN),
            vec![(at, at + 2 * TOKEN.len() - 1)],
            "{s}"
        );
        // Prose, initials and short spaced words are not.
        for prose in [
            "a b c d e f g h i j",
            "the agent ran a b test",
            "U S A and E U agree on x y z",
        ] {
            assert!(decoded_views(prose.as_bytes()).is_empty(), "{prose}");
        }
    }

    #[test]
    fn hex_of_utf16_text_is_read_in_either_byte_order() {
        let le: String = TOKEN
            .encode_utf16()
            .map(|u| format!("{:02x}{:02x}", u & 0xff, u >> 8))
            .collect();
        let be: String = TOKEN.encode_utf16().map(|u| format!("{u:04x}")).collect();
        for hex in [le, be] {
            let s = format!("blob {hex}");
            assert_eq!(spans(&s, TOKEN), vec![(5, s.len())], "{s}");
        }
        // Units that are no text (an odd surrogate) spell nothing.
        assert!(decoded_views("6100620000d86300".repeat(3).as_bytes()).is_empty());
    }

    #[test]
    fn random_hex_is_not_text() {
        assert!(decoded_views(b"0123456789abcdef0123456789abcdef").is_empty());
    }

    /// Every maximal run, a byte at a time: what the probing walk must equal.
    fn runs_bytewise(s: &[u8]) -> Vec<(usize, usize, Vec<u8>)> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < s.len() {
            if !is_b64(s[i]) {
                i += 1;
                continue;
            }
            let start = i;
            while i < s.len() && is_b64(s[i]) {
                i += 1;
            }
            let mut end = i;
            while end < s.len() && s[end] == b'=' && end - i < 2 {
                end += 1;
            }
            if i - start >= MIN_BASE64_RUN {
                let text = decode_text(&s[start..i]).or_else(|| misaligned_text(&s[start..i]));
                if let Some(text) = text {
                    out.push((start, end, text));
                }
            }
            i = end;
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn probing_finds_the_runs_a_bytewise_walk_finds(
            parts in proptest::collection::vec(
                proptest::sample::select(vec![
                    "a", "Q", "0", "+", "/", "-", "_", "=", " ", ".", "\n",
                    "c2stcHJvai1hYmNkZWZnaGlqa2xtbm9w", "Z2hwX3Rva2VuX3ZhbHVlXzEyMzQ1Ng==",
                    "aGVsbG8gd29ybGQgaGVsbG8gd29ybGQ", "word ", "abcdefghijklmnopqrs",
                ]),
                0..24,
            ),
        ) {
            let s = parts.concat();
            let mut views = Vec::new();
            base64_runs(s.as_bytes(), &mut views);
            let got: Vec<(usize, usize, Vec<u8>)> = views
                .into_iter()
                .map(|v| match v.origin {
                    Origin::Whole(a, b) => (a, b, v.bytes),
                    Origin::Map(_) => unreachable!("base64 views are whole"),
                })
                .collect();
            proptest::prop_assert_eq!(got, runs_bytewise(s.as_bytes()));
        }
    }

    use proptest::strategy::Strategy;

    proptest::proptest! {
        /// Any text of a token's length written as a list of bytes, in any
        /// mix of decimal and hex and with any blanks and line breaks
        /// after its commas, decodes to itself, and each byte maps to the
        /// line its number stands on. Any text around it, cut anywhere,
        /// decodes without a panic.
        #[test]
        fn a_list_of_bytes_in_any_layout_decodes_to_its_text(
            text in "[ -~]{16,60}",
            hex in proptest::collection::vec(proptest::bool::ANY, 60),
            seps in proptest::collection::vec(
                proptest::sample::select(vec![",", ", ", ",\n  ", " ,\t", ",\r\n"]),
                60,
            ),
            around in "[ -~\n]{0,40}",
            cut in 0usize..400,
        ) {
            let mut list = String::from("data = [");
            let mut lines = Vec::new();
            for (i, b) in text.bytes().enumerate() {
                if i > 0 {
                    list.push_str(seps[i]);
                }
                let at = list.len();
                list.push_str(&if hex[i] { format!("0x{b:x}") } else { b.to_string() });
                let start = list[..at].rfind('\n').map_or(0, |n| n + 1);
                lines.push(start);
            }
            list.push(']');
            let mut out = Vec::new();
            byte_lists(list.as_bytes(), &mut out);
            let v = out.iter().find(|v| v.bytes == text.as_bytes());
            proptest::prop_assert!(v.is_some(), "{:?}", list);
            let v = v.unwrap();
            for (i, start) in lines.iter().enumerate() {
                proptest::prop_assert_eq!(v.original_span(i, i + 1).0, *start);
            }
            let mixed = format!("{around}{list}{around}");
            let cut = &mixed.as_bytes()[..cut.min(mixed.len())];
            byte_lists(cut, &mut Vec::new());
        }
    }

    proptest::proptest! {
        /// The head test refuses only runs that the whole decoding refuses:
        /// runs of encoded text (valid or damaged after some bytes) and of
        /// random bytes, in both alphabets, cut to any length.
        #[test]
        fn a_run_refused_by_its_head_is_refused_whole(
            bytes in proptest::prop_oneof![
                // Text, with characters of two and three bytes.
                "[a-z0-9 é€\n]{15,100}".prop_map(String::into_bytes),
                // Text whose bytes are damaged somewhere.
                ("[a-zé€ ]{15,100}", 0usize..200, proptest::num::u8::ANY).prop_map(
                    |(t, at, b)| {
                        let mut v = t.into_bytes();
                        let n = v.len();
                        v[at % n] = b;
                        v
                    }
                ),
                proptest::collection::vec(proptest::num::u8::ANY, 15..120),
            ],
            url in proptest::bool::ANY,
            cut in 0usize..3,
        ) {
            use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
            use base64::Engine;
            let engine = if url { URL_SAFE_NO_PAD } else { STANDARD_NO_PAD };
            let encoded = engine.encode(&bytes);
            let run = &encoded.as_bytes()[..encoded.len() - cut];
            let trimmed = if run.len() % 4 == 1 { &run[..run.len() - 1] } else { run };
            if head_is_not_text(&engine, trimmed) {
                proptest::prop_assert_eq!(text_of(&engine, trimmed), None);
            }
        }
    }
}
