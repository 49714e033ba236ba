//! Bounded line reading and hashing writes: the streaming primitives of
//! export and readback.

use std::io::{self, BufRead};

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

/// Consecutive lines read for one step of a two-core pass: about 1 MiB
/// or 4,096 lines (more only for one line longer than that).
pub struct Batch {
    /// The number of its first line in the file.
    pub first: u64,
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Batch {
    /// An empty batch starting at line `first`.
    pub fn new(first: u64) -> Batch {
        Batch {
            first,
            bytes: Vec::new(),
            ends: Vec::new(),
        }
    }

    /// Adds one line (without its terminator).
    pub fn push(&mut self, line: &[u8]) {
        self.bytes.extend_from_slice(line);
        self.ends.push(self.bytes.len());
    }

    /// Whether it is time to hand it over.
    pub fn full(&self) -> bool {
        self.bytes.len() >= 1 << 20 || self.ends.len() >= 4096
    }

    /// Whether it holds no line.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Its lines, in order.
    pub fn lines(&self) -> impl Iterator<Item = &[u8]> {
        let mut start = 0;
        self.ends.iter().map(move |&end| {
            let line = &self.bytes[start..end];
            start = end;
            line
        })
    }
}

/// Reads `r` in [`Batch`]es and runs `step` on each, alternately on this
/// thread (with `mine`) and on one worker (with `theirs`), at most two
/// batches waiting for the worker. Returns the results in batch order,
/// and how reading ended: a pass that joins the results in that order
/// reports what a single pass in line order would.
pub fn two_core<S: Send, T: Send>(
    r: &mut impl BufRead,
    max_line: usize,
    mine: &mut S,
    theirs: &mut S,
    step: impl Fn(&mut S, &Batch) -> T + Sync,
) -> (Vec<T>, io::Result<()>) {
    let mut done: Vec<(usize, T)> = Vec::new();
    let read = std::thread::scope(|sc| {
        let (to_worker, inbox) = std::sync::mpsc::sync_channel::<(usize, Batch)>(2);
        let step = &step;
        let worker = sc.spawn(move || {
            inbox
                .into_iter()
                .map(|(k, b)| (k, step(theirs, &b)))
                .collect::<Vec<_>>()
        });
        let (mut k, mut n) = (0, 0u64);
        let mut line = Vec::new();
        let mut batch = Batch::new(0);
        let read = loop {
            let more = match next_line(r, &mut line, max_line) {
                Ok(more) => more,
                Err(e) => break Err(e),
            };
            if more {
                batch.push(split_terminator(&line).0);
                n += 1;
            }
            if batch.full() || (!more && !batch.is_empty()) {
                let full = std::mem::replace(&mut batch, Batch::new(n));
                if k % 2 == 0 {
                    done.push((k, step(mine, &full)));
                } else if to_worker.send((k, full)).is_err() {
                    break Ok(());
                }
                k += 1;
            }
            if !more {
                break Ok(());
            }
        };
        drop(to_worker);
        done.extend(worker.join().expect("a pass worker does not panic"));
        read
    });
    done.sort_by_key(|(k, _)| *k);
    (done.into_iter().map(|(_, t)| t).collect(), read)
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
