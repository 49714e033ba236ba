//! `export create --compat ebo`: exports the peer system's readback
//! accepts (docs/EXPORT.md, "The peer system").
//!
//! The peer's final scan refuses any buffer in which a `/`-path follows
//! whitespace, so in this mode every such path left in an exported file
//! (`--- /dev/null` in a patch, `/usr/bin/python` in a message) becomes
//! `[LOCAL_PATH]`, as the peer writes it; and the verifier result keeps
//! naming the source's workspace digest (the workspace's `sourceDigest`),
//! as the peer's does. Our own verify accepts both.

use std::io::Write;

/// Which system's readback an export is made for.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Compat {
    /// coffer's own form: a patch that still applies, a verifier bound to
    /// the exported workspace.
    #[default]
    Coffer,
    /// The peer system's form.
    Ebo,
}

/// What a rewritten path becomes.
pub const PLACEHOLDER: &[u8] = b"[LOCAL_PATH]";

/// Whether `b` is whitespace as the peer's scan reads it (ASCII).
fn blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c')
}

/// Whether `b` ends a path: whitespace, or what would end a JSON string
/// or start an escape in it (so the file stays valid JSON).
fn ends_path(b: u8) -> bool {
    blank(b) || b == b'"' || b == b'\\'
}

/// Appends `line` to `out` with every `/`-path that follows whitespace (or
/// starts the line) replaced; returns how many were.
pub fn rewrite_line(line: &[u8], out: &mut Vec<u8>) -> u64 {
    let mut n = 0;
    let mut i = 0;
    while i < line.len() {
        let after_blank = i == 0 || blank(line[i - 1]);
        if after_blank && line[i] == b'/' && line.get(i + 1).is_some_and(|b| !ends_path(*b)) {
            let end = line[i..]
                .iter()
                .position(|b| ends_path(*b))
                .map_or(line.len(), |p| i + p);
            out.extend_from_slice(PLACEHOLDER);
            n += 1;
            i = end;
        } else {
            out.push(line[i]);
            i += 1;
        }
    }
    n
}

/// Whether `buf` holds a `/`-path after whitespace: the peer's final-scan
/// rule as docs/EXPORT.md states it (a `/` right after whitespace, or at
/// the start, followed by a character that is not whitespace).
pub fn peer_would_refuse(buf: &[u8]) -> bool {
    let mut out = Vec::with_capacity(buf.len());
    rewrite_line(buf, &mut out) > 0
}

/// A writer that passes its bytes on line by line, rewritten as
/// [`rewrite_line`] says; counts the paths replaced.
pub struct PathWriter<'w, W: Write> {
    inner: &'w mut W,
    line: Vec<u8>,
    out: Vec<u8>,
    /// Paths replaced so far.
    pub replaced: u64,
}

impl<'w, W: Write> PathWriter<'w, W> {
    /// Wraps `inner`.
    pub fn new(inner: &'w mut W) -> Self {
        PathWriter {
            inner,
            line: Vec::new(),
            out: Vec::new(),
            replaced: 0,
        }
    }

    fn emit(&mut self) -> std::io::Result<()> {
        self.out.clear();
        self.replaced += rewrite_line(&self.line, &mut self.out);
        self.line.clear();
        self.inner.write_all(&self.out)
    }

    /// Writes what is left (a last line without its line end).
    pub fn finish(mut self) -> std::io::Result<u64> {
        self.emit()?;
        Ok(self.replaced)
    }
}

impl<W: Write> Write for PathWriter<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut rest = buf;
        while let Some(i) = memchr::memchr(b'\n', rest) {
            self.line.extend_from_slice(&rest[..=i]);
            self.emit()?;
            rest = &rest[i + 1..];
        }
        self.line.extend_from_slice(rest);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(s: &str) -> (String, u64) {
        let mut out = Vec::new();
        let n = rewrite_line(s.as_bytes(), &mut out);
        (String::from_utf8(out).unwrap(), n)
    }

    #[test]
    fn paths_after_whitespace_become_the_placeholder() {
        assert_eq!(
            rewritten("--- /dev/null\n"),
            ("--- [LOCAL_PATH]\n".into(), 1)
        );
        assert_eq!(
            rewritten("{\"text\":\"ran /usr/bin/python -m x\"}"),
            ("{\"text\":\"ran [LOCAL_PATH] -m x\"}".into(), 1),
            "a JSON string ends the path, so the file stays JSON"
        );
        assert_eq!(
            rewritten("/etc/hosts at the start"),
            ("[LOCAL_PATH] at the start".into(), 1)
        );
        // Not after whitespace, or not a path: kept.
        for kept in [
            "https://example.com/a",
            "\"cwd\":\"/home/x\"",
            "a / b",
            "x\\n/y",
            "[WORKSPACE]/src",
        ] {
            assert_eq!(rewritten(kept), (kept.to_string(), 0), "{kept}");
        }
    }

    #[test]
    fn the_writer_rewrites_across_writes_and_the_rule_holds_after() {
        let text = "diff --git a/x b/x\n--- /dev/null\n+++ b/x\n+cd /tmp && ls\nend /no/newline";
        let mut sink = Vec::new();
        let mut w = PathWriter::new(&mut sink);
        for chunk in text.as_bytes().chunks(3) {
            w.write_all(chunk).unwrap();
        }
        assert_eq!(w.finish().unwrap(), 3);
        assert_eq!(
            String::from_utf8(sink.clone()).unwrap(),
            "diff --git a/x b/x\n--- [LOCAL_PATH]\n+++ b/x\n+cd [LOCAL_PATH] && ls\nend [LOCAL_PATH]"
        );
        assert!(peer_would_refuse(text.as_bytes()) && !peer_would_refuse(&sink));
    }
}
