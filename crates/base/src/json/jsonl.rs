//! Streaming check of JSON Lines: every line one strict JSON value.
//!
//! Locations use the JSON pointer of the file read as an array of lines:
//! `/41/args/0` is inside the value on line 42. Memory is bounded by the
//! longest line allowed, whatever the file size.

use super::{parser, JsonError, Limits};
use crate::codes;

/// Budgets for a JSONL stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsonlLimits {
    /// Budgets for each line's value (`max_bytes` is the line length limit).
    pub line: Limits,
}

impl JsonlLimits {
    /// Evidence streams (session, hooks): lines up to 32 MiB, depth 128,
    /// 4,000,000 values a line.
    pub const EVIDENCE: JsonlLimits = JsonlLimits {
        line: Limits {
            max_bytes: 32 << 20,
            max_depth: 128,
            max_nodes: 4_000_000,
        },
    };
}

/// Incremental JSONL checker: `feed` bytes as they stream by, then `finish`.
#[derive(Debug)]
pub struct JsonlChecker {
    limits: JsonlLimits,
    line: Vec<u8>,
    lines: u64,
    offset: u64,
    failed: Option<JsonError>,
    scratch: parser::Scratch,
}

impl JsonlChecker {
    /// A checker with the given budgets.
    pub fn new(limits: JsonlLimits) -> Self {
        JsonlChecker {
            limits,
            line: Vec::new(),
            lines: 0,
            offset: 0,
            failed: None,
            scratch: parser::Scratch::default(),
        }
    }

    /// Consumes the next bytes of the stream. A line that lies whole in
    /// `bytes` is checked where it lies; only a line split across calls is
    /// gathered first.
    pub fn feed(&mut self, mut bytes: &[u8]) -> Result<(), JsonError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        while !bytes.is_empty() {
            let (part, rest, complete) = match memchr::memchr(b'\n', bytes) {
                Some(i) => (&bytes[..i], &bytes[i + 1..], true),
                None => (bytes, &[][..], false),
            };
            if self.line.len() + part.len() > self.limits.line.max_bytes {
                return Err(self.fail(JsonError {
                    code: codes::limit::JSONL_LINE_BYTES,
                    pointer: format!("/{}", self.lines),
                    offset: self.offset as usize,
                    message: format!(
                        "line {} is longer than {} bytes",
                        self.lines + 1,
                        self.limits.line.max_bytes
                    ),
                }));
            }
            match (complete, self.line.is_empty()) {
                (true, true) => self.check_line(part)?,
                (true, false) => {
                    let mut line = std::mem::take(&mut self.line);
                    line.extend_from_slice(part);
                    let checked = self.check_line(&line);
                    line.clear();
                    self.line = line;
                    checked?
                }
                (false, _) => self.line.extend_from_slice(part),
            }
            bytes = rest;
        }
        Ok(())
    }

    fn fail(&mut self, e: JsonError) -> JsonError {
        self.failed = Some(e.clone());
        e
    }

    fn check_line(&mut self, line: &[u8]) -> Result<(), JsonError> {
        let index = self.lines;
        if line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
            return Err(self.fail(JsonError {
                code: codes::validation::JSONL_BLANK_LINE,
                pointer: format!("/{index}"),
                offset: self.offset as usize,
                message: format!(
                    "line {} is empty; every line must hold one JSON value",
                    index + 1
                ),
            }));
        }
        if let Err(mut e) = parser::check_with(line, &self.limits.line, &mut self.scratch) {
            e.pointer = format!("/{index}{}", e.pointer);
            e.offset += self.offset as usize;
            e.message = format!("line {}: {}", index + 1, e.message);
            return Err(self.fail(e));
        }
        self.offset += line.len() as u64 + 1;
        self.lines += 1;
        Ok(())
    }

    /// Ends the stream (a last line without a newline counts); returns the
    /// number of lines. An empty stream is `validation.empty_jsonl`.
    pub fn finish(&mut self) -> Result<u64, JsonError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.check_line(&line)?;
        }
        if self.lines == 0 {
            return Err(self.fail(JsonError {
                code: codes::validation::EMPTY_JSONL,
                pointer: String::new(),
                offset: 0,
                message: "JSONL evidence holds no records".into(),
            }));
        }
        Ok(self.lines)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(chunks: &[&[u8]]) -> Result<u64, JsonError> {
        let mut c = JsonlChecker::new(JsonlLimits::EVIDENCE);
        for ch in chunks {
            c.feed(ch)?;
        }
        c.finish()
    }

    #[test]
    fn lines_split_across_chunks_are_reassembled() {
        assert_eq!(run(&[b"{\"a\":", b"1}\n[", b"2]\n", b"3"]).unwrap(), 3);
        assert_eq!(run(&[b"{}\r\n{}\r\n"]).unwrap(), 2);
    }

    #[test]
    fn empty_stream_and_blank_lines_are_rejected() {
        assert_eq!(run(&[]).unwrap_err().code, "validation.empty_jsonl");
        assert_eq!(run(&[b""]).unwrap_err().code, "validation.empty_jsonl");
        let e = run(&[b"{}\n\n{}\n"]).unwrap_err();
        assert_eq!(
            (e.code, e.pointer.as_str()),
            ("validation.jsonl_blank_line", "/1")
        );
    }

    #[test]
    fn errors_point_into_the_failing_line() {
        let e = run(&[b"{}\n{}\n{\"a\":{\"b\":1,\"b\":2}}\n"]).unwrap_err();
        assert_eq!(
            (e.code, e.pointer.as_str()),
            ("validation.duplicate_key", "/2/a/b")
        );
        assert_eq!(
            run(&[b"{} {}\n"]).unwrap_err().code,
            "validation.trailing_data"
        );
    }

    #[test]
    fn line_length_is_bounded_while_streaming() {
        let limits = JsonlLimits {
            line: Limits {
                max_bytes: 8,
                ..JsonlLimits::EVIDENCE.line
            },
        };
        let mut c = JsonlChecker::new(limits);
        c.feed(b"[1,2,3]\n").unwrap();
        c.feed(b"\"12345").unwrap();
        let e = c.feed(b"678\"\n").unwrap_err();
        assert_eq!(
            (e.code, e.pointer.as_str()),
            ("limit.jsonl_line_bytes", "/1")
        );
        assert!(c.finish().is_err(), "a failed checker stays failed");
    }

    /// The verdict, with its pointer and offset, for `data` fed in the
    /// pieces `cuts` makes.
    fn verdict(data: &[u8], cuts: &[usize]) -> Result<u64, (String, String, usize)> {
        let mut c = JsonlChecker::new(JsonlLimits::EVIDENCE);
        let mut at = 0;
        let mut pieces: Vec<usize> = cuts.iter().map(|&k| k % (data.len() + 1)).collect();
        pieces.sort_unstable();
        pieces.push(data.len());
        let fed = pieces.into_iter().try_for_each(|k| {
            let r = c.feed(&data[at..k]);
            at = k;
            r
        });
        fed.and_then(|()| c.finish())
            .map_err(|e| (e.code.to_string(), e.pointer, e.offset))
    }

    proptest::proptest! {
        #[test]
        fn however_the_stream_is_cut_the_verdict_is_the_same(
            lines in proptest::collection::vec(
                proptest::sample::select(vec![
                    "{\"a\":1}", "[1,2,{\"b\":\"x\\ny\"}]", "\"caf\u{e9}\"", "  {}\r",
                    "", " ", "{\"a\":1,\"a\":2}", "[1,]", "{} {}", "\"\u{1}\"", "nul",
                ]),
                0..12,
            ),
            last_newline in proptest::bool::ANY,
            cuts in proptest::collection::vec(0usize..400, 0..6),
        ) {
            let mut data = lines.join("\n").into_bytes();
            if last_newline {
                data.push(b'\n');
            }
            proptest::prop_assert_eq!(verdict(&data, &cuts), verdict(&data, &[]));
        }
    }
}
