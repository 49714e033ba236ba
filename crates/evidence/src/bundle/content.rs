//! Checks of evidence content made while the bytes stream by, so validation
//! and ingest read each file exactly once.

use coffer_base::codes;
use std::io::{self, Read};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::thread::JoinHandle;

use coffer_base::json::{self, JsonError, JsonlChecker, JsonlLimits, Limits};

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
                        code: codes::limit::JSON_BYTES,
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

/// Inputs from this size on (up to [`THREADED_CHECK_END`]) are checked on
/// a thread of their own, beside hashing and compression, instead of inline.
pub const THREADED_CHECK_MIN: u64 = 4 << 20;
/// From this size on zstd compresses on worker threads and the reading
/// thread mostly waits for them, so the check runs inline there: a third
/// busy thread on two cores cost more CPU than it saved (1 GiB session:
/// ingest 1.15-1.23x `put` inline against 1.15-1.47x threaded).
pub const THREADED_CHECK_END: u64 = coffer_store::MULTITHREAD_MIN;
/// Chunks queued for the checking thread (bounds memory).
const CHECK_QUEUE: usize = 4;

enum Runner {
    Inline(ContentCheck),
    Thread {
        tx: Option<SyncSender<Vec<u8>>>,
        handle: Option<JoinHandle<Result<(), JsonError>>>,
    },
}

/// A reader that runs a [`ContentCheck`] over everything read through it.
/// A failed check surfaces as a read error; [`CheckingReader::failure`]
/// then holds the coded reason.
pub struct CheckingReader<R> {
    inner: R,
    runner: Runner,
    failure: Option<JsonError>,
    done: bool,
}

impl<R: Read> CheckingReader<R> {
    /// Wraps `inner`; the check runs inline.
    pub fn new(inner: R, check: ContentCheck) -> Self {
        CheckingReader {
            inner,
            runner: Runner::Inline(check),
            failure: None,
            done: false,
        }
    }

    /// Wraps `inner` whose length is `size`: mid-sized inputs with a real
    /// check are checked on a separate thread (chunks are copied to it
    /// through a bounded queue), so checking overlaps hashing and a
    /// compression that runs on the reading thread.
    pub fn for_size(inner: R, mut check: ContentCheck, size: u64) -> Self {
        let threaded = (THREADED_CHECK_MIN..THREADED_CHECK_END).contains(&size);
        if !threaded || matches!(check, ContentCheck::Opaque) {
            return Self::new(inner, check);
        }
        let (tx, rx) = sync_channel::<Vec<u8>>(CHECK_QUEUE);
        let handle = std::thread::spawn(move || {
            for chunk in rx {
                check.feed(&chunk)?;
            }
            check.finish()
        });
        CheckingReader {
            inner,
            runner: Runner::Thread {
                tx: Some(tx),
                handle: Some(handle),
            },
            failure: None,
            done: false,
        }
    }

    fn feed(&mut self, bytes: &[u8]) -> Result<(), JsonError> {
        match &mut self.runner {
            Runner::Inline(c) => c.feed(bytes),
            Runner::Thread { tx, .. } => {
                let sent = tx.as_ref().map(|t| t.send(bytes.to_vec()));
                match sent {
                    Some(Ok(())) => Ok(()),
                    // The thread stopped early: it found a problem.
                    _ => self.join(),
                }
            }
        }
    }

    fn finish(&mut self) -> Result<(), JsonError> {
        match &mut self.runner {
            Runner::Inline(c) => c.finish(),
            Runner::Thread { .. } => self.join(),
        }
    }

    fn join(&mut self) -> Result<(), JsonError> {
        let Runner::Thread { tx, handle } = &mut self.runner else {
            return Ok(());
        };
        drop(tx.take());
        match handle.take() {
            Some(h) => h.join().expect("content check thread panicked"),
            None => Ok(()),
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
            if let Err(e) = self.finish() {
                return Err(self.fail(e));
            }
        } else if n > 0 {
            if let Err(e) = self.feed(&buf[..n]) {
                return Err(self.fail(e));
            }
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
    fn threaded_check_reports_like_the_inline_one() {
        let half: Vec<u8> = b"{\"a\":1}\n".repeat(300_000);
        let good = half.repeat(2);
        let mut bad = half.clone();
        bad.extend_from_slice(b"{\"a\":1,\"a\":2}\n");
        bad.extend_from_slice(&half);
        for (bytes, want) in [(&good, None), (&bad, Some("validation.duplicate_key"))] {
            let check_of = || ContentCheck::for_media_type("application/x-ndjson");
            let check = check_of();
            let mut r = CheckingReader::for_size(&bytes[..], check, bytes.len() as u64);
            assert!(matches!(r.runner, Runner::Thread { .. }));
            let large = CheckingReader::for_size(&bytes[..], check_of(), THREADED_CHECK_END);
            assert!(matches!(large.runner, Runner::Inline(_)));
            let got = match std::io::copy(&mut r, &mut std::io::sink()) {
                Ok(_) => None,
                Err(_) => Some(r.failure().unwrap().code),
            };
            assert_eq!(got, want);
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
