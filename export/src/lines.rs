//! Bounded line reading and hashing writes: the streaming primitives of
//! export and readback.

use std::io::{self, BufRead, Write};

use coffer_store::digest::{Digest, Hasher};

/// Reads the next line (with its terminator) into `buf`; `Ok(false)` at
/// the end. A line longer than `max` bytes is an error, so memory stays
/// bounded whatever the input.
pub fn next_line(r: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> io::Result<bool> {
    buf.clear();
    loop {
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            return Ok(!buf.is_empty());
        }
        let (take, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        if buf.len() + take > max + 2 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a line is longer than {max} bytes"),
            ));
        }
        buf.extend_from_slice(&chunk[..take]);
        r.consume(take);
        if done {
            return Ok(true);
        }
    }
}

/// Splits a line into its content and terminator (`\n`, `\r\n` or none).
pub fn split_terminator(line: &[u8]) -> (&[u8], &[u8]) {
    if line.ends_with(b"\r\n") {
        line.split_at(line.len() - 2)
    } else if line.ends_with(b"\n") {
        line.split_at(line.len() - 1)
    } else {
        (line, b"")
    }
}

/// A writer that hashes and counts what it writes.
pub struct HashingWriter<W> {
    inner: W,
    hasher: Hasher,
}

impl<W: Write> HashingWriter<W> {
    /// Wraps `inner`.
    pub fn new(inner: W) -> Self {
        HashingWriter {
            inner,
            hasher: Hasher::new(),
        }
    }

    /// The inner writer, digest and size.
    pub fn finish(self) -> (W, Digest, u64) {
        let (d, n) = self.hasher.finish();
        (self.inner, d, n)
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_bounded_and_keep_terminators() {
        let mut r = io::BufReader::with_capacity(4, &b"ab\r\ncd\nef"[..]);
        let mut b = Vec::new();
        let mut got = Vec::new();
        while next_line(&mut r, &mut b, 10).unwrap() {
            got.push(b.clone());
        }
        assert_eq!(
            got,
            vec![b"ab\r\n".to_vec(), b"cd\n".to_vec(), b"ef".to_vec()]
        );
        assert_eq!(split_terminator(b"ab\r\n"), (&b"ab"[..], &b"\r\n"[..]));
        let mut r = io::BufReader::with_capacity(4, &b"0123456789abcdef\n"[..]);
        assert!(next_line(&mut r, &mut b, 8).is_err());
    }
}
