//! A located, coded problem with an input document or file.

/// One problem found while validating input. Validation reports every issue
/// it finds, not just the first.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Issue {
    /// Stable `class.name` code.
    pub code: &'static str,
    /// Human explanation.
    pub message: String,
    /// The file the issue is about (bundle-relative), when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// JSON pointer inside that file (or the manifest), when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
    /// Where in the file's bytes, when the reader knows (`coffer scan`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<Position>,
}

/// A 1-based line and column in a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Position {
    /// Line, from 1.
    pub line: u64,
    /// Byte column in that line, from 1 (what `scan` prints, as rg does).
    pub column: u64,
    /// The same column in Unicode code points, from 1 (what SARIF's
    /// `unicodeCodePoints` column kind counts).
    pub char_column: u64,
}

impl Issue {
    /// An issue about a JSON document location.
    pub fn at(
        code: &'static str,
        file: &str,
        pointer: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Issue {
            code,
            message: message.into(),
            file: Some(file.to_string()),
            pointer: Some(pointer.into()),
            position: None,
        }
    }

    /// An issue about a whole file.
    pub fn file(code: &'static str, file: &str, message: impl Into<String>) -> Self {
        Issue {
            code,
            message: message.into(),
            file: Some(file.to_string()),
            pointer: None,
            position: None,
        }
    }

    /// An issue about a subject named by a path, key or digest (or about
    /// nothing in particular).
    pub fn about(code: &'static str, subject: Option<String>, message: impl Into<String>) -> Self {
        Issue {
            code,
            message: message.into(),
            file: subject,
            pointer: None,
            position: None,
        }
    }

    /// The `path` shown in the CLI envelope: `file#pointer`, `file`, or the pointer.
    pub fn location(&self) -> Option<String> {
        match (&self.file, &self.pointer) {
            (Some(f), Some(p)) => Some(format!("{f}#{p}")),
            (Some(f), None) => Some(f.clone()),
            (None, Some(p)) => Some(p.clone()),
            (None, None) => None,
        }
    }
}
