//! JSON in text, read tolerantly: the tokens the readers of `across.rs`
//! need (strings, braces, brackets, `:` and `,`), whatever surrounds or
//! breaks the JSON (a shell prompt before it, output cut short), and the
//! objects they make, each with its string members. Shared by the
//! Kubernetes Secret reader ([`crate::detect::kube`]) and the JSON Web
//! Key reader ([`crate::detect::jwk`]).

use std::ops::Range;

/// One token of JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Token {
    /// A string's contents (between its quotes, escapes as written).
    String(Range<usize>),
    /// `{`
    OpenObject,
    /// `[`
    OpenArray,
    /// `}` or `]`
    Close,
    /// `:`
    Colon,
    /// `,`
    Comma,
}

/// Calls `f` with each token of `s`, in order, up to `max_depth`
/// containers open at once; what lies deeper is skipped whole (its
/// containers counted, so their closes are not reported). Linear in `s`.
pub(crate) fn tokens(s: &[u8], max_depth: usize, mut f: impl FnMut(Token)) {
    let (mut depth, mut deeper) = (0usize, 0usize);
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'"' => {
                let start = i + 1;
                let mut j = start;
                while j < s.len() && s[j] != b'"' {
                    j += if s[j] == b'\\' { 2 } else { 1 };
                }
                let end = j.min(s.len());
                if deeper == 0 {
                    f(Token::String(start..end));
                }
                i = end + 1;
                continue;
            }
            b'{' | b'[' if depth == max_depth => deeper += 1,
            b'}' | b']' if deeper > 0 => deeper -= 1,
            b'{' => {
                depth += 1;
                f(Token::OpenObject);
            }
            b'[' => {
                depth += 1;
                f(Token::OpenArray);
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                f(Token::Close);
            }
            b':' if deeper == 0 => f(Token::Colon),
            b',' if deeper == 0 => f(Token::Comma),
            _ => {}
        }
        i += 1;
    }
}

/// A reader of the objects in JSON text ([`objects`]).
pub(crate) trait Objects {
    /// What the reader keeps of an object while it is open.
    type Object;
    /// An object opens: the value of member `key` of the object around
    /// it, or (`None`) an array's element or a top-level object.
    fn open(&mut self, key: Option<&[u8]>) -> Self::Object;
    /// A string value in `object`, under `key` (`None` where the text gave
    /// none); `parent` is the object around `object`, when there is one
    /// (not an array).
    fn member(
        &mut self,
        object: &mut Self::Object,
        parent: Option<&mut Self::Object>,
        key: Option<&[u8]>,
        value: Range<usize>,
    );
    /// An object ends, or the text does first.
    fn close(&mut self, object: Self::Object);
}

/// An open object: the reader's, its key being read and whether a value
/// comes next.
struct Frame<O> {
    object: O,
    key: Option<Range<usize>>,
    in_value: bool,
}

/// Tells `reader` of every object of `s` and its string members, up to
/// `max_depth` containers open at once (see [`tokens`]). Memory: one frame
/// a container open.
pub(crate) fn objects<R: Objects>(s: &[u8], max_depth: usize, reader: &mut R) {
    // `None` is an array.
    let mut stack: Vec<Option<Frame<R::Object>>> = Vec::new();
    let done = |stack: &mut Vec<Option<Frame<R::Object>>>| {
        if let Some(Some(f)) = stack.last_mut() {
            f.in_value = false;
            f.key = None;
        }
    };
    tokens(s, max_depth, |t| match t {
        Token::String(span) => {
            let n = stack.len();
            let (below, top) = stack.split_at_mut(n.saturating_sub(1));
            let Some(Some(f)) = top.last_mut() else {
                return;
            };
            if !f.in_value {
                f.key = Some(span);
                return;
            }
            let parent = below
                .last_mut()
                .and_then(Option::as_mut)
                .map(|p| &mut p.object);
            let key = f.key.clone().map(|k| &s[k]);
            reader.member(&mut f.object, parent, key, span);
        }
        Token::OpenObject => {
            let key = match stack.last() {
                Some(Some(f)) if f.in_value => f.key.clone().map(|k| &s[k]),
                _ => None,
            };
            let object = reader.open(key);
            stack.push(Some(Frame {
                object,
                key: None,
                in_value: false,
            }));
        }
        Token::OpenArray => stack.push(None),
        Token::Close => {
            if let Some(Some(f)) = stack.pop() {
                reader.close(f.object);
            }
            done(&mut stack);
        }
        Token::Colon => {
            if let Some(Some(f)) = stack.last_mut() {
                f.in_value = true;
            }
        }
        Token::Comma => done(&mut stack),
    });
    // Output cut short: what is known of the unclosed objects counts.
    while let Some(top) = stack.pop() {
        if let Some(f) = top {
            reader.close(f.object);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(s: &str, max: usize) -> Vec<Token> {
        let mut out = Vec::new();
        tokens(s.as_bytes(), max, |t| out.push(t));
        out
    }

    #[test]
    fn strings_with_escapes_and_containers_are_tokens_and_the_rest_is_skipped() {
        use Token::*;
        assert_eq!(
            all(r#"$ x {"a\"{": [1, "b"]}"#, 8),
            [
                OpenObject,
                String(6..10),
                Colon,
                OpenArray,
                Comma,
                String(18..19),
                Close,
                Close
            ]
        );
        // Deeper than the bound: skipped whole, closes included.
        assert_eq!(
            all(r#"{"k": {"d": "v"}, "e": 1}"#, 1),
            [
                OpenObject,
                String(2..3),
                Colon,
                Comma,
                String(19..20),
                Colon,
                Close
            ]
        );
        // Cut short inside a string.
        assert_eq!(
            all(r#"{"k": "v"#, 8),
            [OpenObject, String(2..3), Colon, String(7..8)]
        );
    }
}
