//! A parsed JSON document that borrows its strings from the input.

use std::borrow::Cow;

use serde_json::Value;

/// One JSON value, for readers that only look at it: strings borrow the
/// input unless they held escapes, objects keep their members in order
/// (keys are unique: the parser rejects duplicates), and numbers their
/// value (a policy's sensitive value or an identity can be a number).
#[derive(Debug, Clone, PartialEq)]
pub enum Node<'a> {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number.
    Number(serde_json::Number),
    /// A string.
    String(Cow<'a, str>),
    /// An array.
    Array(Vec<Node<'a>>),
    /// An object's members in document order.
    Object(Vec<(Cow<'a, str>, Node<'a>)>),
}

impl<'a> Node<'a> {
    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Node<'a>> {
        match self {
            Node::Object(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The text of a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Node::String(s) => Some(s),
            _ => None,
        }
    }
}

impl<'a> From<&'a Value> for Node<'a> {
    fn from(v: &'a Value) -> Node<'a> {
        match v {
            Value::Null => Node::Null,
            Value::Bool(b) => Node::Bool(*b),
            Value::Number(n) => Node::Number(n.clone()),
            Value::String(s) => Node::String(Cow::Borrowed(s)),
            Value::Array(a) => Node::Array(a.iter().map(Node::from).collect()),
            Value::Object(m) => Node::Object(
                m.iter()
                    .map(|(k, v)| (Cow::Borrowed(k.as_str()), Node::from(v)))
                    .collect(),
            ),
        }
    }
}
