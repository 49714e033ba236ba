//! Checks of evidence content made while the bytes stream by, so validation
//! and ingest read each file exactly once.

use std::io::{self, Read};

use crate::json::{self, JsonError, JsonlChecker, JsonlLimits, Limits};

/// What a file's media type promises about its content.
pub enum ContentCheck {
    /// `application/x-ndjson`: every line one strict JSON value, not empty.
    Jsonl(JsonlChecker),
    /// `application/json`: one strict JSON document (buffered up to its byte budget).
    Json(Vec<u8>),
    /// Anything else: bytes are evidence as they are.
    Opaque,
}

impl ContentCheck {
    /// The check for a media type.
    pub fn for_media_type(media_type: &str) -> ContentCheck {
        match media_type {
            "application/x-ndjson" => ContentCheck::Jsonl(JsonlChecker::new(JsonlLimits::EVIDENCE)),
            "application/json" => ContentCheck::Json(Vec::new()),
            _ => ContentCheck::Opaque,
        }
    }

    fn feed(&mut self, bytes: &[u8]) -> Result<(), JsonError> {
        match self {
            ContentCheck::Jsonl(c) => c.feed(bytes),
            ContentCheck::Json(buf) => {
                if buf.len() + bytes.len() > Limits::EVIDENCE.max_bytes {
                    return Err(JsonError {
                        code: "limit.json_bytes",
                        pointer: String::new(),
                        offset: buf.len(),
                        message: format!(
                            "JSON evidence larger than {} bytes",
                            Limits::EVIDENCE.max_bytes
                        ),
                    });
                }
                buf.extend_from_slice(bytes);
                Ok(())
            }
            ContentCheck::Opaque => Ok(()),
        }
    }

    fn finish(&mut self) -> Result<(), JsonError> {
        match self {
            ContentCheck::Jsonl(c) => c.finish().map(|_| ()),
            ContentCheck::Json(buf) => {
                let r = json::check(buf, &Limits::EVIDENCE);
                *buf = Vec::new();
                r
            }
            ContentCheck::Opaque => Ok(()),
        }
    }
}

/// A reader that runs a [`ContentCheck`] over everything read through it.
/// A failed check surfaces as a read error; [`CheckingReader::failure`]
/// then holds the coded reason.
pub struct CheckingReader<R> {
    inner: R,
    check: ContentCheck,
    failure: Option<JsonError>,
    done: bool,
}

impl<R: Read> CheckingReader<R> {
    /// Wraps `inner`.
    pub fn new(inner: R, check: ContentCheck) -> Self {
        CheckingReader {
            inner,
            check,
            failure: None,
            done: false,
        }
    }

    /// Why the content was rejected, if it was.
    pub fn failure(&self) -> Option<&JsonError> {
        self.failure.as_ref()
    }

    fn fail(&mut self, e: JsonError) -> io::Error {
        let msg = e.message.clone();
        self.failure = Some(e);
        io::Error::new(io::ErrorKind::InvalidData, msg)
    }
}

impl<R: Read> Read for CheckingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.failure.is_some() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "content check failed",
            ));
        }
        let n = self.inner.read(buf)?;
        if n == 0 && !buf.is_empty() && !self.done {
            self.done = true;
            if let Err(e) = self.check.finish() {
                return Err(self.fail(e));
            }
        } else if let Err(e) = self.check.feed(&buf[..n]) {
            return Err(self.fail(e));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(media: &str, bytes: &[u8]) -> Option<&'static str> {
        let mut r = CheckingReader::new(bytes, ContentCheck::for_media_type(media));
        let mut sink = Vec::new();
        match r.read_to_end(&mut sink) {
            Ok(_) => None,
            Err(_) => Some(r.failure().expect("failure recorded").code),
        }
    }

    #[test]
    fn media_types_decide_the_check() {
        assert_eq!(run("application/x-ndjson", b"{}\n{}\n"), None);
        assert_eq!(
            run("application/x-ndjson", b""),
            Some("validation.empty_jsonl")
        );
        assert_eq!(
            run("application/json", b"{\"a\":1,\"a\":2}"),
            Some("validation.duplicate_key")
        );
        assert_eq!(run("application/json", b"{\"a\":1}"), None);
        assert_eq!(run("text/x-diff", b"\xff\xfe anything"), None);
    }
}
