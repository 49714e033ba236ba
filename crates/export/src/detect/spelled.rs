//! JSON arrays that spell text: a list of byte values (`[103, 104, 112,
//! …]`, a `Uint8Array` or `bytes` serialized) or a list of one-character
//! strings (`["g", "h", "p", …]`). A secret in such an array is in no
//! string, so the export reads the text the array spells as it reads a
//! string, and writes the rewritten text back in the array's own form:
//! the array stays an array, its elements spell the placeholder.

use coffer_base::json::Node;
use serde_json::Value;

/// The fewest elements an array needs to be read as text: as many as the
/// shortest byte list a string view reads (`views::MIN_BYTE_LIST`).
pub const MIN_SPELLED: usize = crate::detect::views::MIN_BYTE_LIST;

/// How an array spells its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spelling {
    /// Each element a byte value, 0 to 255; the bytes are UTF-8 text.
    Bytes,
    /// Each element a string of one character.
    Chars,
}

/// One element as the spelling sees it.
enum Element<'a> {
    Byte(u8),
    Char(&'a str),
    Other,
}

fn spell<'a>(elements: impl ExactSizeIterator<Item = Element<'a>>) -> Option<(Spelling, String)> {
    if elements.len() < MIN_SPELLED {
        return None;
    }
    let (mut bytes, mut text, mut how) = (Vec::new(), String::new(), None);
    for e in elements {
        match (e, how) {
            (Element::Byte(b), None | Some(Spelling::Bytes)) => {
                how = Some(Spelling::Bytes);
                bytes.push(b);
            }
            (Element::Char(c), None | Some(Spelling::Chars)) => {
                how = Some(Spelling::Chars);
                text.push_str(c);
            }
            _ => return None,
        }
    }
    match how? {
        Spelling::Bytes => {
            let bytes = crate::detect::views::printable(bytes)?;
            Some((Spelling::Bytes, String::from_utf8(bytes).ok()?))
        }
        Spelling::Chars => Some((Spelling::Chars, text)),
    }
}

fn one_char(s: &str) -> bool {
    let mut c = s.chars();
    c.next().is_some() && c.next().is_none()
}

fn byte_of(n: &serde_json::Number) -> Option<u8> {
    n.as_u64().and_then(|v| u8::try_from(v).ok())
}

/// The text a parsed array spells, and how, if it spells one.
pub fn of_nodes(a: &[Node<'_>]) -> Option<(Spelling, String)> {
    // Most arrays are short or hold objects: one look at the first
    // element decides before anything is gathered.
    match a.first() {
        Some(Node::Number(_) | Node::String(_)) if a.len() >= MIN_SPELLED => {}
        _ => return None,
    }
    spell(a.iter().map(|x| match x {
        Node::Number(n) => byte_of(n).map_or(Element::Other, Element::Byte),
        Node::String(s) if one_char(s) => Element::Char(s),
        _ => Element::Other,
    }))
}

/// The text an array value spells, and how, if it spells one.
pub fn of_values(a: &[Value]) -> Option<(Spelling, String)> {
    match a.first() {
        Some(Value::Number(_) | Value::String(_)) if a.len() >= MIN_SPELLED => {}
        _ => return None,
    }
    spell(a.iter().map(|x| match x {
        Value::Number(n) => byte_of(n).map_or(Element::Other, Element::Byte),
        Value::String(s) if one_char(s) => Element::Char(s),
        _ => Element::Other,
    }))
}

/// `text` spelled as an array the way `how` spells.
pub fn respell(how: Spelling, text: &str) -> Vec<Value> {
    match how {
        Spelling::Bytes => text.bytes().map(Value::from).collect(),
        Spelling::Chars => text.chars().map(|c| Value::from(c.to_string())).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn byte_values_and_single_characters_spell_text_and_are_spelled_back() {
        let text = "token: ghp_R2d2C3poLukeLeia0123456789abcdefABCD";
        let bytes: Vec<Value> = text.bytes().map(Value::from).collect();
        let chars: Vec<Value> = text.chars().map(|c| json!(c.to_string())).collect();
        for (a, how) in [(bytes, Spelling::Bytes), (chars, Spelling::Chars)] {
            assert_eq!(of_values(&a), Some((how, text.to_string())));
            let value = Value::Array(a.clone());
            let node = Node::from(&value);
            let Node::Array(n) = &node else { panic!() };
            assert_eq!(of_nodes(n), Some((how, text.to_string())));
            assert_eq!(respell(how, text), a);
        }
    }

    #[test]
    fn arrays_that_spell_nothing_are_left_alone() {
        let short: Vec<Value> = (65..65 + MIN_SPELLED as u8 - 1).map(Value::from).collect();
        assert_eq!(of_values(&short), None, "fewer than the minimum");
        let mut mixed: Vec<Value> = (65..90).map(Value::from).collect();
        mixed.push(json!("x"));
        assert_eq!(of_values(&mixed), None, "numbers and strings");
        let big: Vec<Value> = (0..40).map(|i| Value::from(200 + i)).collect();
        assert_eq!(of_values(&big), None, "values past a byte");
        let binary: Vec<Value> = (0..40).map(|i| Value::from(i % 8)).collect();
        assert_eq!(of_values(&binary), None, "control bytes are no text");
        let words: Vec<Value> = ["alpha"; 20].iter().map(|w| json!(w)).collect();
        assert_eq!(of_values(&words), None, "words are not characters");
        let floats: Vec<Value> = (0..20).map(|i| json!(f64::from(i) + 65.5)).collect();
        assert_eq!(of_values(&floats), None, "fractions are not bytes");
    }
}
