//! Recursive-descent parser behind [`super::parse`] and [`super::check`].

use crate::codes;
use std::borrow::Cow;
use std::collections::HashSet;

use std::marker::PhantomData;

use serde_json::{Map, Number, Value};

use super::node::Node;
use super::{escape_pointer_token, JsonError, Limits, MAX_SAFE_INTEGER};

/// How many leading bytes of `s` need no attention inside a JSON string:
/// neither `"`, `\\` nor a control character; and whether any of them is
/// outside ASCII. Eight bytes at a time (the classic has-zero-byte and
/// has-less-than tricks), byte by byte only for the input's last few:
/// string scanning is the largest part of checking JSONL.
fn plain_run(s: &[u8]) -> (usize, bool) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut i = 0;
    let mut seen = 0u64;
    while let Some(chunk) = s.get(i..i + 8) {
        let w = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        let quote = w ^ (ONES * u64::from(b'"'));
        let backslash = w ^ (ONES * u64::from(b'\\'));
        let special = (quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (w.wrapping_sub(ONES * 0x20) & !w);
        let special = special & HIGH;
        if special != 0 {
            // Borrows only run upwards from a true match, so the lowest
            // flagged byte is the first special one.
            let k = special.trailing_zeros() as usize / 8;
            seen |= w & ((1u64 << (8 * k)) - 1);
            return (i + k, seen & HIGH != 0);
        }
        seen |= w;
        i += 8;
    }
    let mut high = seen & HIGH != 0;
    while let Some(&b) = s.get(i) {
        if b == b'"' || b == b'\\' || b < 0x20 {
            break;
        }
        high |= b >= 0x80;
        i += 1;
    }
    (i, high)
}

/// Parses one strict JSON document into a value: the quick pass builds
/// it, and only a document that pass rejects is read again by the exact
/// one, which reports the error (see [`check`]).
pub fn parse(input: &[u8], limits: &Limits) -> Result<Value, JsonError> {
    build(input, limits, &mut Scratch::default())
}

/// [`parse`] into a [`Node`] that borrows the input's strings: for readers
/// that only look, with no map to hash and no string to copy.
pub fn parse_node<'a>(input: &'a [u8], limits: &Limits) -> Result<Node<'a>, JsonError> {
    build(input, limits, &mut Scratch::default())
}

/// The quick pass, with `scratch`'s buffers; the exact pass only if the
/// quick one rejects the document, for its error.
fn build<'a, T: Tree<'a>>(
    input: &'a [u8],
    limits: &Limits,
    scratch: &mut Scratch,
) -> Result<T, JsonError> {
    let mut quick = Parser::<T>::new(input, limits, Pass::Quick, std::mem::take(scratch));
    let verdict = quick.document();
    *scratch = quick.scratch;
    scratch.path.clear();
    match verdict {
        Ok(v) => Ok(v),
        Err(_) => Parser::<T>::new(input, limits, Pass::Exact, Scratch::default())
            .document()
            .map_err(|e| *e),
    }
}

/// What a parse builds: nothing (a check), a serde [`Value`], or a
/// borrowed [`Node`]. One grammar serves the three.
trait Tree<'a>: Sized {
    /// Whether anything is built (a check only needs where values end).
    const BUILDS: bool;
    type Members: Default;
    type Items: Default;
    fn null() -> Self;
    fn bool(b: bool) -> Self;
    fn number(n: Number) -> Self;
    fn string(s: Cow<'a, str>) -> Self;
    fn insert(o: &mut Self::Members, key: Cow<'a, str>, v: Self);
    fn object(o: Self::Members) -> Self;
    fn push(a: &mut Self::Items, v: Self);
    fn array(a: Self::Items) -> Self;
}

impl<'a> Tree<'a> for () {
    const BUILDS: bool = false;
    type Members = ();
    type Items = ();
    fn null() {}
    fn bool(_: bool) {}
    fn number(_: Number) {}
    fn string(_: Cow<'a, str>) {}
    fn insert(_: &mut (), _: Cow<'a, str>, _: ()) {}
    fn object(_: ()) {}
    fn push(_: &mut (), _: ()) {}
    fn array(_: ()) {}
}

impl<'a> Tree<'a> for Value {
    const BUILDS: bool = true;
    type Members = Map<String, Value>;
    type Items = Vec<Value>;
    fn null() -> Value {
        Value::Null
    }
    fn bool(b: bool) -> Value {
        Value::Bool(b)
    }
    fn number(n: Number) -> Value {
        Value::Number(n)
    }
    fn string(s: Cow<'a, str>) -> Value {
        Value::String(s.into_owned())
    }
    fn insert(o: &mut Self::Members, key: Cow<'a, str>, v: Value) {
        o.insert(key.into_owned(), v);
    }
    fn object(o: Self::Members) -> Value {
        Value::Object(o)
    }
    fn push(a: &mut Vec<Value>, v: Value) {
        a.push(v);
    }
    fn array(a: Vec<Value>) -> Value {
        Value::Array(a)
    }
}

impl<'a> Tree<'a> for Node<'a> {
    const BUILDS: bool = true;
    type Members = Vec<(Cow<'a, str>, Node<'a>)>;
    type Items = Vec<Node<'a>>;
    fn null() -> Node<'a> {
        Node::Null
    }
    fn bool(b: bool) -> Node<'a> {
        Node::Bool(b)
    }
    fn number(n: Number) -> Node<'a> {
        Node::Number(n)
    }
    fn string(s: Cow<'a, str>) -> Node<'a> {
        Node::String(s)
    }
    fn insert(o: &mut Self::Members, key: Cow<'a, str>, v: Node<'a>) {
        o.push((key, v));
    }
    fn object(o: Self::Members) -> Node<'a> {
        Node::Object(o)
    }
    fn push(a: &mut Vec<Node<'a>>, v: Node<'a>) {
        a.push(v);
    }
    fn array(a: Vec<Node<'a>>) -> Node<'a> {
        Node::Array(a)
    }
}

/// Checks one strict JSON document without building it.
///
/// Valid documents are the common case, so a quick pass decides first: it
/// tracks no location and checks UTF-8 only inside strings (outside them
/// the grammar admits ASCII alone). Anything it rejects is checked again
/// by the exact pass, which alone reports errors, so the verdict, code,
/// pointer and offset are the exact pass's in every case.
pub fn check(input: &[u8], limits: &Limits) -> Result<(), JsonError> {
    check_with(input, limits, &mut Scratch::default())
}

/// [`check`] reusing the buffers of earlier checks (one per JSONL line).
pub(super) fn check_with(
    input: &[u8],
    limits: &Limits,
    scratch: &mut Scratch,
) -> Result<(), JsonError> {
    build::<()>(input, limits, scratch)
}

/// Errors inside the parser: boxed, so results stay small on the hot path
/// where every value returns one.
type Fail = Box<JsonError>;

/// Buffers a parse needs, kept between parses so that checking many small
/// documents does not allocate for each.
#[derive(Default, Debug)]
pub(super) struct Scratch {
    path: Vec<Seg>,
    /// Key lists of the objects being read, one per open object.
    key_pool: Vec<Vec<RawKey>>,
}

/// The two passes over a document.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// Decides: no location tracked, UTF-8 checked inside strings only
    /// (or up front, when it builds a tree); its errors are not for
    /// reporting.
    Quick,
    /// Reports: UTF-8 checked up front, errors with their location.
    Exact,
}

/// One step of the location being parsed; keys stay where they lie in the
/// input until a pointer is written, so tracking costs no allocation.
#[derive(Debug)]
enum Seg {
    Key(RawKey),
    Index(usize),
}

/// An object key as it lies in the input: the bytes between its quotes.
#[derive(Debug, Clone, Copy)]
struct RawKey {
    start: usize,
    end: usize,
    escaped: bool,
    /// Up to its first eight bytes: most keys of an object differ there,
    /// so most duplicate checks end without a byte comparison.
    head: u64,
}

impl RawKey {
    fn new(s: &[u8], start: usize, end: usize, escaped: bool) -> RawKey {
        let len = end - start;
        // Eight bytes from the key's start, masked to the key: the bytes
        // after a key are its quote and colon, so eight are nearly always
        // there; byte by byte only at the very end of the input.
        let head = match s.get(start..start + 8) {
            Some(w) if len >= 8 => u64::from_le_bytes(w.try_into().expect("8 bytes")),
            Some(w) => u64::from_le_bytes(w.try_into().expect("8 bytes")) & ((1 << (8 * len)) - 1),
            None => s[start..end]
                .iter()
                .rev()
                .fold(0, |h, &b| (h << 8) | u64::from(b)),
        };
        RawKey {
            start,
            end,
            escaped,
            head,
        }
    }
}

/// Objects with more keys than this check duplicates with a hash set.
const LINEAR_KEYS: usize = 16;

struct Parser<'a, T> {
    s: &'a [u8],
    pos: usize,
    limits: Limits,
    /// Locations are tracked and UTF-8 was checked up front (not quick).
    exact: bool,
    /// The whole input as text, once it has been checked to be UTF-8 up
    /// front (the exact pass, and a quick pass that builds strings), so
    /// that strings are sliced from it instead of checked one by one.
    text: Option<&'a str>,
    depth: usize,
    nodes: usize,
    scratch: Scratch,
    tree: PhantomData<T>,
}

impl<'a, T: Tree<'a>> Parser<'a, T> {
    fn new(input: &'a [u8], limits: &Limits, pass: Pass, scratch: Scratch) -> Self {
        Parser {
            s: input,
            pos: 0,
            limits: *limits,
            exact: pass == Pass::Exact,
            text: None,
            depth: 0,
            nodes: 0,
            scratch,
            tree: PhantomData,
        }
    }

    /// Checks that come before the grammar: size, UTF-8 (exact passes, and
    /// quick passes that build a tree) and (exact passes) a byte order mark.
    fn precheck(&mut self) -> Result<(), Fail> {
        if self.s.len() > self.limits.max_bytes {
            return Err(self.err(
                codes::limit::JSON_BYTES,
                format!(
                    "document is {} bytes; the limit is {}",
                    self.s.len(),
                    self.limits.max_bytes
                ),
            ));
        }
        if !self.exact && !T::BUILDS {
            return Ok(());
        }
        // A valid document is UTF-8 throughout (outside strings the grammar
        // admits ASCII alone), so one check of the whole input, fast on
        // ASCII, replaces a check of every string a tree borrows.
        match std::str::from_utf8(self.s) {
            Ok(text) => self.text = Some(text),
            Err(e) => {
                self.pos = e.valid_up_to();
                return Err(self.err(
                    codes::validation::INVALID_UTF8,
                    "input is not valid UTF-8".into(),
                ));
            }
        }
        if !self.exact {
            return Ok(());
        }
        if self.s.starts_with("\u{feff}".as_bytes()) {
            return Err(self.err(
                codes::validation::INVALID_JSON,
                "byte order mark is not allowed".into(),
            ));
        }
        Ok(())
    }

    fn pointer(&self) -> String {
        self.scratch
            .path
            .iter()
            .map(|seg| match seg {
                Seg::Key(k) => format!("/{}", escape_pointer_token(&self.key_text(*k))),
                Seg::Index(i) => format!("/{i}"),
            })
            .collect()
    }

    /// A key's text: borrowed from the input unless it holds escapes.
    fn key_text(&self, k: RawKey) -> Cow<'a, str> {
        if !k.escaped {
            return Cow::Borrowed(self.text_at(k.start, k.end));
        }
        let mut p = Parser::<()>::new(self.s, &self.limits, Pass::Quick, Scratch::default());
        p.pos = k.start - 1;
        Cow::Owned(p.string_always().expect("a string already read"))
    }

    /// Whether two keys of one object are the same after unescaping.
    fn same_key(&self, a: RawKey, b: RawKey) -> bool {
        if !a.escaped && !b.escaped {
            return a.head == b.head
                && a.end - a.start == b.end - b.start
                && self.s[a.start..a.end] == self.s[b.start..b.end];
        }
        self.key_text(a) == self.key_text(b)
    }

    fn err(&self, code: &'static str, message: String) -> Fail {
        Box::new(JsonError {
            code,
            pointer: self.pointer(),
            offset: self.pos,
            message,
        })
    }

    fn syntax(&self, what: &str) -> Fail {
        let found = match self.s.get(self.pos) {
            None => "end of input".to_string(),
            Some(b) if b.is_ascii_graphic() => format!("'{}'", *b as char),
            Some(b) => format!("byte 0x{b:02x}"),
        };
        self.err(
            codes::validation::INVALID_JSON,
            format!("expected {what}, found {found}"),
        )
    }

    fn document(&mut self) -> Result<T, Fail> {
        self.precheck()?;
        self.ws();
        let v = self.value()?;
        self.ws();
        if self.pos != self.s.len() {
            self.scratch.path.clear();
            return Err(self.err(
                codes::validation::TRAILING_DATA,
                "data after the end of the JSON value".into(),
            ));
        }
        Ok(v)
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.pos) {
            self.pos += 1;
        }
    }

    fn count_node(&mut self) -> Result<(), Fail> {
        self.nodes += 1;
        if self.nodes > self.limits.max_nodes {
            return Err(self.err(
                codes::limit::JSON_NODES,
                format!("more than {} values", self.limits.max_nodes),
            ));
        }
        Ok(())
    }

    fn value(&mut self) -> Result<T, Fail> {
        self.count_node()?;
        match self.s.get(self.pos) {
            Some(b'{') => self.object(),
            Some(b'[') => self.array(),
            Some(b'"') => self.string(),
            Some(b't') => self.literal("true", T::bool(true)),
            Some(b'f') => self.literal("false", T::bool(false)),
            Some(b'n') => self.literal("null", T::null()),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.syntax("a JSON value")),
        }
    }

    fn literal(&mut self, word: &str, v: T) -> Result<T, Fail> {
        if self.s[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(v)
        } else {
            Err(self.syntax("a JSON value"))
        }
    }

    fn enter(&mut self) -> Result<(), Fail> {
        self.depth += 1;
        if self.depth > self.limits.max_depth {
            return Err(self.err(
                codes::limit::JSON_DEPTH,
                format!("nesting deeper than {}", self.limits.max_depth),
            ));
        }
        Ok(())
    }

    /// Reads an object key; its text is only decoded when needed.
    fn key(&mut self) -> Result<RawKey, Fail> {
        let start = self.pos + 1;
        let escaped = self.scan_string(None)?;
        Ok(RawKey::new(self.s, start, self.pos - 1, escaped))
    }

    fn object(&mut self) -> Result<T, Fail> {
        self.enter()?;
        self.pos += 1;
        let mut map = T::Members::default();
        let mut keys = self.scratch.key_pool.pop().unwrap_or_default();
        keys.clear();
        let mut many: Option<HashSet<Cow<'a, str>>> = None;
        self.ws();
        if self.s.get(self.pos) == Some(&b'}') {
            self.pos += 1;
            self.depth -= 1;
            self.scratch.key_pool.push(keys);
            return Ok(T::object(map));
        }
        loop {
            self.ws();
            if self.s.get(self.pos) != Some(&b'"') {
                return Err(self.syntax("a string key"));
            }
            let key_at = self.pos;
            let key = self.key()?;
            let duplicate = match &mut many {
                Some(set) => !set.insert(self.key_text(key)),
                None => {
                    let dup = keys.iter().any(|&k| self.same_key(k, key));
                    if !dup {
                        keys.push(key);
                        if keys.len() > LINEAR_KEYS {
                            many = Some(keys.drain(..).map(|k| self.key_text(k)).collect());
                        }
                    }
                    dup
                }
            };
            if duplicate {
                let message = format!("duplicate key {:?}", self.key_text(key).as_ref());
                self.scratch.path.push(Seg::Key(key));
                self.pos = key_at;
                return Err(self.err(codes::validation::DUPLICATE_KEY, message));
            }
            self.ws();
            if self.s.get(self.pos) != Some(&b':') {
                return Err(self.syntax("':'"));
            }
            self.pos += 1;
            self.ws();
            if self.exact {
                self.scratch.path.push(Seg::Key(key));
            }
            let v = self.value()?;
            if self.exact {
                self.scratch.path.pop();
            }
            if T::BUILDS {
                T::insert(&mut map, self.key_text(key), v);
            }
            self.ws();
            match self.s.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    break;
                }
                _ => return Err(self.syntax("',' or '}'")),
            }
        }
        self.depth -= 1;
        keys.clear();
        self.scratch.key_pool.push(keys);
        Ok(T::object(map))
    }

    fn array(&mut self) -> Result<T, Fail> {
        self.enter()?;
        self.pos += 1;
        let mut items = T::Items::default();
        self.ws();
        if self.s.get(self.pos) == Some(&b']') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(T::array(items));
        }
        let mut i = 0usize;
        loop {
            self.ws();
            if self.exact {
                self.scratch.path.push(Seg::Index(i));
            }
            let v = self.value()?;
            if self.exact {
                self.scratch.path.pop();
            }
            T::push(&mut items, v);
            i += 1;
            self.ws();
            match self.s.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    break;
                }
                _ => return Err(self.syntax("',' or ']'")),
            }
        }
        self.depth -= 1;
        Ok(T::array(items))
    }

    /// A string value: borrowed from the input unless it holds escapes.
    fn string(&mut self) -> Result<T, Fail> {
        let start = self.pos;
        let escaped = self.scan_string(None)?;
        if !T::BUILDS {
            return Ok(T::string(Cow::Borrowed("")));
        }
        if !escaped {
            return Ok(T::string(Cow::Borrowed(
                self.text_at(start + 1, self.pos - 1),
            )));
        }
        self.pos = start;
        Ok(T::string(Cow::Owned(self.string_always()?)))
    }

    /// The input from `start` to `end`, which a scan has checked to be
    /// UTF-8 and to start and end on character boundaries: sliced from the
    /// text checked up front when there is one, else checked again.
    fn text_at(&self, start: usize, end: usize) -> &'a str {
        match self.text {
            Some(text) => &text[start..end],
            None => std::str::from_utf8(&self.s[start..end]).expect("a string already read"),
        }
    }

    fn string_always(&mut self) -> Result<String, Fail> {
        let mut out = String::new();
        self.scan_string(Some(&mut out))?;
        Ok(out)
    }

    /// Reads a string literal starting at the opening quote; appends the
    /// decoded text to `out` when given. Returns whether it held escapes.
    fn scan_string(&mut self, mut out: Option<&mut String>) -> Result<bool, Fail> {
        self.pos += 1;
        let mut escaped = false;
        loop {
            let start = self.pos;
            let (len, high) = plain_run(&self.s[self.pos..]);
            self.pos += len;
            if high && self.text.is_none() && std::str::from_utf8(&self.s[start..self.pos]).is_err()
            {
                return Err(self.err(
                    codes::validation::INVALID_UTF8,
                    "string is not valid UTF-8".into(),
                ));
            }
            if let Some(o) = out.as_deref_mut() {
                // The run was checked to be UTF-8 and stopped on an ASCII byte.
                o.push_str(self.text_at(start, self.pos));
            }
            match self.s.get(self.pos) {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(escaped);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    escaped = true;
                    let c = self.escape()?;
                    if let Some(o) = out.as_deref_mut() {
                        o.push(c);
                    }
                }
                Some(_) => {
                    return Err(self.err(
                        codes::validation::INVALID_JSON,
                        "unescaped control character in string".into(),
                    ))
                }
                None => return Err(self.syntax("'\"' closing the string")),
            }
        }
    }

    fn escape(&mut self) -> Result<char, Fail> {
        let b = *self
            .s
            .get(self.pos)
            .ok_or_else(|| self.syntax("an escape"))?;
        self.pos += 1;
        Ok(match b {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let hi = self.hex4()?;
                if (0xD800..0xDC00).contains(&hi) {
                    if !self.s[self.pos..].starts_with(b"\\u") {
                        return Err(self.err(
                            codes::validation::INVALID_JSON,
                            "lone high surrogate in \\u escape".into(),
                        ));
                    }
                    self.pos += 2;
                    let lo = self.hex4()?;
                    if !(0xDC00..0xE000).contains(&lo) {
                        return Err(self.err(
                            codes::validation::INVALID_JSON,
                            "high surrogate not followed by a low one".into(),
                        ));
                    }
                    let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                    char::from_u32(c).expect("valid surrogate pair")
                } else if (0xDC00..0xE000).contains(&hi) {
                    return Err(self.err(
                        codes::validation::INVALID_JSON,
                        "lone low surrogate in \\u escape".into(),
                    ));
                } else {
                    char::from_u32(hi).expect("BMP scalar")
                }
            }
            _ => {
                self.pos -= 1;
                return Err(self.syntax("a valid escape character"));
            }
        })
    }

    fn hex4(&mut self) -> Result<u32, Fail> {
        let h = self
            .s
            .get(self.pos..self.pos + 4)
            .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
            .ok_or_else(|| self.syntax("four hex digits"))?;
        self.pos += 4;
        Ok(u32::from_str_radix(std::str::from_utf8(h).expect("ascii"), 16).expect("hex"))
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.s.get(self.pos) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<T, Fail> {
        let start = self.pos;
        if self.s.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        match self.s.get(self.pos) {
            Some(b'0') => {
                self.pos += 1;
                if let Some(b'0'..=b'9') = self.s.get(self.pos) {
                    return Err(self.err(
                        codes::validation::INVALID_JSON,
                        "number with a leading zero".into(),
                    ));
                }
            }
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.syntax("a digit")),
        }
        let mut integer = true;
        if self.s.get(self.pos) == Some(&b'.') {
            integer = false;
            self.pos += 1;
            if self.digits() == 0 {
                return Err(self.syntax("a digit after '.'"));
            }
        }
        if let Some(b'e' | b'E') = self.s.get(self.pos) {
            integer = false;
            self.pos += 1;
            if let Some(b'+' | b'-') = self.s.get(self.pos) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.syntax("a digit in the exponent"));
            }
        }
        let text = std::str::from_utf8(&self.s[start..self.pos]).expect("ascii");
        let out_of_range = |p: &Self| {
            let mut e = p.err(
                codes::validation::INTEGER_OUT_OF_RANGE,
                format!("{text} is outside ±(2^53−1)"),
            );
            e.offset = start;
            e
        };
        if integer {
            let mag = text.trim_start_matches('-');
            let n: u64 = match mag.parse() {
                Ok(n) if n <= MAX_SAFE_INTEGER => n,
                _ => return Err(out_of_range(self)),
            };
            if !T::BUILDS {
                return Ok(T::number(Number::from(0)));
            }
            return Ok(T::number(if text.starts_with('-') {
                Number::from(-(n as i64))
            } else {
                Number::from(n)
            }));
        }
        let f: f64 = text.parse().map_err(|_| self.syntax("a number"))?;
        if !f.is_finite() || (f.fract() == 0.0 && f.abs() > MAX_SAFE_INTEGER as f64) {
            return Err(out_of_range(self));
        }
        Ok(T::number(Number::from_f64(f).expect("finite")))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn plain_runs_stop_exactly_where_bytewise_scanning_would() {
        let naive = |s: &[u8]| {
            let len = s
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
                .unwrap_or(s.len());
            (len, s[..len].iter().any(|&b| b >= 0x80))
        };
        let fillers: [&[u8]; 3] = [b"a", "\u{e9}".as_bytes(), "\u{1F600}".as_bytes()];
        for filler in fillers {
            for len in 0..40 {
                let base: Vec<u8> = filler.iter().copied().cycle().take(len).collect();
                assert_eq!(plain_run(&base), naive(&base));
                for at in 0..len {
                    for special in [b'"', b'\\', 0x00, 0x1f, b'\n', 0x20, 0x21, 0x7f, 0x80, 0xff] {
                        let mut v = base.clone();
                        v[at] = special;
                        assert_eq!(plain_run(&v), naive(&v), "{v:?}");
                    }
                }
            }
        }
    }

    use super::*;

    fn err(input: &[u8]) -> JsonError {
        parse(input, &Limits::DOCUMENT).unwrap_err()
    }

    #[test]
    fn accepts_ordinary_documents_in_both_modes() {
        let doc = br#" {"a": [1, -2, 3.5, 1e3, true, false, null], "b": {"c": "d\u00e9\n\ud83d\ude00"}, "": {}} "#;
        let v = parse(doc, &Limits::DOCUMENT).unwrap();
        assert_eq!(v["b"]["c"], "dé\n😀");
        assert_eq!(v["a"][1], -2);
        check(doc, &Limits::DOCUMENT).unwrap();
    }

    #[test]
    fn duplicate_keys_are_rejected_at_any_depth_with_their_pointer() {
        let e = err(br#"{"a": {"b": [ {"x/y": 1, "x/y": 2} ]}}"#);
        assert_eq!(e.code, "validation.duplicate_key");
        assert_eq!(e.pointer, "/a/b/0/x~1y");
        assert_eq!(
            check(br#"{"k":1,"k":1}"#, &Limits::DOCUMENT)
                .unwrap_err()
                .code,
            "validation.duplicate_key"
        );
    }

    #[test]
    fn duplicates_are_found_in_objects_with_many_keys() {
        let mut doc = String::from("{");
        for i in 0..100 {
            doc.push_str(&format!("\"k{i}\": {i},"));
        }
        parse(
            format!("{}\"last\": 0}}", doc).as_bytes(),
            &Limits::DOCUMENT,
        )
        .unwrap();
        let e = err(format!("{}\"k\\u0037\": 0}}", doc).as_bytes());
        assert_eq!(
            (e.code, e.pointer.as_str()),
            ("validation.duplicate_key", "/k7")
        );
        let e = check(format!("{}\"k99\": 0}}", doc).as_bytes(), &Limits::DOCUMENT).unwrap_err();
        assert_eq!(e.code, "validation.duplicate_key");
    }

    #[test]
    fn keys_equal_only_after_unescaping_are_duplicates() {
        assert_eq!(
            err(br#"{"a": 1, "\u0061": 2}"#).code,
            "validation.duplicate_key"
        );
    }

    #[test]
    fn invalid_utf8_is_rejected_not_replaced() {
        let e = err(b"{\"a\": \"\xff\"}");
        assert_eq!((e.code, e.offset), ("validation.invalid_utf8", 7));
        assert_eq!(
            err(b"\"\xed\xa0\x80\"").code,
            "validation.invalid_utf8",
            "encoded surrogate"
        );
    }

    #[test]
    fn integers_outside_the_safe_range_are_rejected() {
        parse(b"[9007199254740991, -9007199254740991]", &Limits::DOCUMENT).unwrap();
        for bad in [
            "9007199254740992",
            "-9007199254740992",
            "1e300",
            "123456789012345678901234567890",
            "9.007199254740992e15",
            // Whole numbers once read as doubles, as RULES.md says.
            "1.5e300",
            "9007199254740993.5",
            "1e400",
        ] {
            let e = err(bad.as_bytes());
            assert_eq!(e.code, "validation.integer_out_of_range", "{bad}");
        }
        parse(b"[0.5, 1.5e10, 1.5e-300, 1.0e3, -2.25]", &Limits::DOCUMENT).unwrap();
        let e = err(br#"{"n": [0, 18446744073709551616]}"#);
        assert_eq!(e.pointer, "/n/1");
    }

    #[test]
    fn trailing_data_is_rejected() {
        for bad in [&b"{} {}"[..], b"[1] x", b"1 2", b"{}\0"] {
            assert_eq!(err(bad).code, "validation.trailing_data", "{bad:?}");
        }
    }

    #[test]
    fn grammar_violations_are_invalid_json() {
        for bad in [
            "",
            "{",
            "[1,]",
            "{\"a\":1,}",
            "01",
            "1.",
            ".5",
            "+1",
            "-",
            "1e",
            "NaN",
            "Infinity",
            "'a'",
            "\"\\x\"",
            "\"\t\"",
            "\"\\ud800\"",
            "\"\\udc00\"",
            "\"\\ud800\\u0041\"",
            "{a:1}",
            "[1 2]",
            "\u{feff}{}",
            "tru",
            "nul",
        ] {
            let e = err(bad.as_bytes());
            assert_eq!(e.code, "validation.invalid_json", "{bad:?}: {e}");
        }
    }

    #[test]
    fn depth_is_limited_before_recursing() {
        let limits = Limits {
            max_depth: 3,
            ..Limits::DOCUMENT
        };
        parse(b"[[[1]]]", &limits).unwrap();
        assert_eq!(
            parse(b"[[[[1]]]]", &limits).unwrap_err().code,
            "limit.json_depth"
        );
        let deep = "[".repeat(100_000);
        assert_eq!(err(deep.as_bytes()).code, "limit.json_depth");
        let deep_obj = "{\"a\":".repeat(100_000);
        assert_eq!(
            check(deep_obj.as_bytes(), &Limits::DOCUMENT)
                .unwrap_err()
                .code,
            "limit.json_depth"
        );
    }

    #[test]
    fn node_and_byte_budgets_are_enforced_at_the_boundary() {
        let limits = Limits {
            max_nodes: 4,
            max_bytes: 9,
            max_depth: 8,
        };
        parse(b"[1,2,3]", &limits).unwrap();
        assert_eq!(
            parse(b"[1,2,3,4]", &limits).unwrap_err().code,
            "limit.json_nodes"
        );
        assert_eq!(
            parse(b"[1, 2 ,3] ", &limits).unwrap_err().code,
            "limit.json_bytes"
        );
        parse(b"[1, 2 ,3]", &limits).unwrap();
    }

    #[test]
    fn nodes_borrow_plain_strings_and_match_the_value() {
        let doc =
            br#"{"a": [1, -2.5, true, null, "x\ny", "plain"], "b\u00e9": {"c": "d"}, "e": false}"#;
        let node = parse_node(doc, &Limits::DOCUMENT).unwrap();
        assert_eq!(node, Node::from(&parse(doc, &Limits::DOCUMENT).unwrap()));
        let Node::Object(members) = &node else {
            panic!("{node:?}")
        };
        let keys: Vec<&str> = members.iter().map(|(k, _)| k.as_ref()).collect();
        assert_eq!(keys, ["a", "b\u{e9}", "e"]);
        assert!(matches!(members[0].0, Cow::Borrowed(_)));
        assert!(matches!(members[1].0, Cow::Owned(_)));
        let Some(Node::Array(items)) = node.get("a") else {
            panic!("{node:?}")
        };
        assert!(matches!(&items[4], Node::String(Cow::Owned(s)) if s == "x\ny"));
        assert!(matches!(&items[5], Node::String(Cow::Borrowed("plain"))));
        assert_eq!(
            node.get("b\u{e9}")
                .and_then(|c| c.get("c"))
                .and_then(Node::as_str),
            Some("d")
        );
        let dup = parse_node(br#"{"a":{"b":1,"b":2}}"#, &Limits::DOCUMENT).unwrap_err();
        assert_eq!(
            (dup.code, dup.pointer.as_str()),
            ("validation.duplicate_key", "/a/b")
        );
    }

    /// The quick pass's verdict alone.
    fn quick_ok(input: &[u8], limits: &Limits) -> bool {
        Parser::<()>::new(input, limits, Pass::Quick, Scratch::default())
            .document()
            .is_ok()
    }

    /// The exact pass's verdict alone.
    fn exact(input: &[u8], limits: &Limits) -> Result<(), JsonError> {
        Parser::<()>::new(input, limits, Pass::Exact, Scratch::default())
            .document()
            .map_err(|e| *e)
    }

    #[test]
    fn the_quick_pass_rejects_what_only_the_exact_pass_can_name() {
        for bad in [
            &b"\xef\xbb\xbf{}"[..],
            b"\"caf\xc3\"",
            b"\"\xed\xa0\x80\"",
            b"{\"a\xff\":1}",
            b"[1, \xe9]",
            b"\"ab\xe2\x82",
            b"{\"abcdefgh\":1,\"abcdefgh\":2}",
            b"{\"ab\":1,\"ab\":2}",
            b"{\"a\":1,\"\\u0061\":2}",
        ] {
            assert!(!quick_ok(bad, &Limits::DOCUMENT), "{bad:?}");
            assert!(exact(bad, &Limits::DOCUMENT).is_err(), "{bad:?}");
            // A quick pass that builds checks UTF-8 up front, not per string.
            let built =
                Parser::<Node>::new(bad, &Limits::DOCUMENT, Pass::Quick, Scratch::default())
                    .document();
            assert!(built.is_err(), "{bad:?}");
        }
        for good in [
            &b"{\"abcdefgh\":1,\"abcdefgi\":2,\"ab\":3,\"ac\":4}"[..],
            "[\"caf\u{e9} \u{1F600}\", {\"\u{e9}\":1, \"e\":2}]".as_bytes(),
        ] {
            assert!(quick_ok(good, &Limits::DOCUMENT), "{good:?}");
        }
    }

    proptest::proptest! {
        /// The quick pass and the exact one agree on every verdict (and a
        /// parse on every value and error, a borrowed node on the same
        /// tree), and a scratch reused across documents changes nothing.
        #[test]
        fn quick_and_exact_passes_agree(
            docs in proptest::collection::vec(
                proptest::collection::vec(
                    proptest::sample::select(vec![
                        &b"{"[..], b"}", b"[", b"]", b",", b":", b" ", b"\n", b"1", b"-0",
                        b"9007199254740993", b"1e400", b"0.5", b"true", b"nul",
                        b"\"a\"", b"\"a\":", b"\"\\u0061\":", b"\"abcdefghij\":",
                        b"\"abcdefghik\":", b"\"x\\ny\"", b"\"\\ud83d\\ude00\"", b"\"\\ud83d\"",
                        b"\"", b"\\", b"\x01", b"\xc3\xa9", b"\xc3", b"\xff",
                        b"\xef\xbb\xbf", b"\xf0\x9f\x98\x80", b"\xed\xa0\x80",
                        b"\"\xc3\xa9\"", b"\"a\xc3\"", b"\"\xff\":", b"\"\xed\xa0\x80\"",
                    ]),
                    0..14,
                ),
                1..5,
            ),
        ) {
            let limits = Limits { max_bytes: 64, max_depth: 3, max_nodes: 12 };
            let mut scratch = Scratch::default();
            for parts in docs {
                let doc = parts.concat();
                let exact = exact(&doc, &limits);
                proptest::prop_assert_eq!(quick_ok(&doc, &limits), exact.is_ok(), "{:?}", doc);
                let built = Parser::<Value>::new(&doc, &limits, Pass::Exact, Scratch::default())
                    .document()
                    .map_err(|e| (e.code, e.pointer.clone(), e.offset));
                let parsed = parse(&doc, &limits).map_err(|e| (e.code, e.pointer, e.offset));
                proptest::prop_assert_eq!(&parsed, &built);
                let node = parse_node(&doc, &limits).map_err(|e| (e.code, e.pointer, e.offset));
                proptest::prop_assert_eq!(node, parsed.as_ref().map(Node::from).map_err(Clone::clone));
                let reused = check_with(&doc, &limits, &mut scratch).map_err(|e| (e.code, e.pointer, e.offset));
                proptest::prop_assert_eq!(reused, exact.map_err(|e| (e.code, e.pointer, e.offset)));
            }
        }
    }
}
