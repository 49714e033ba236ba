//! Bounded line reading and hashing writes: the streaming primitives of
//! export and readback.

use std::io::{self, BufRead};

/// Reads the next line (with its terminator) into `buf`; `Ok(false)` at
/// the end. A line longer than `max` bytes is an error, so memory stays
/// bounded whatever the input.
pub fn next_line(r: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> io::Result<bool> {
    buf.clear();
    append_line(r, buf, max)
}

/// Like [`next_line`], appending the line to what `buf` holds.
fn append_line(r: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> io::Result<bool> {
    let start = buf.len();
    loop {
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            return Ok(buf.len() > start);
        }
        let (take, done) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        if buf.len() - start + take > max + 2 {
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

    /// The bytes of its lines, terminators left out.
    pub fn byte_len(&self) -> usize {
        self.bytes.len()
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
/// thread (with `mine`) and on one worker (with `theirs`). Returns the
/// results in batch order, and how reading ended: a pass that joins the
/// results in that order reports what a single pass in line order would.
pub fn two_core<S: Send, T: Send>(
    r: &mut impl BufRead,
    max_line: usize,
    mine: &mut S,
    theirs: &mut S,
    step: impl Fn(&mut S, &Batch) -> T + Sync,
) -> (Vec<T>, io::Result<()>) {
    let mut done = Vec::new();
    let read = two_core_ordered(r, max_line, mine, theirs, step, |t| {
        done.push(t);
        Ok::<_, std::convert::Infallible>(())
    });
    let read = match read {
        Ok(read) => read,
        Err(never) => match never {},
    };
    (done, read)
}

/// Reads the next [`Batch`] (starting at line `first`); `None` at the end.
/// Lines are read straight into the batch's buffer, not copied there.
fn next_batch(r: &mut impl BufRead, max_line: usize, first: u64) -> io::Result<Option<Batch>> {
    let mut batch = Batch::new(first);
    while !batch.full() {
        let start = batch.bytes.len();
        if !append_line(r, &mut batch.bytes, max_line)? {
            break;
        }
        let end = start + split_terminator(&batch.bytes[start..]).0.len();
        batch.bytes.truncate(end);
        batch.ends.push(end);
    }
    Ok((!batch.is_empty()).then_some(batch))
}

/// Like [`two_core`], but each result goes to `sink` in batch order as
/// soon as it is ready, so a pass that writes its output holds at most
/// two batches and their results: this thread reads two batches, hands
/// the second to the worker, runs the first, then sinks both. Returns
/// `Err` with the first error `sink` gave (nothing after it is sunk), or
/// how reading ended.
pub fn two_core_ordered<S: Send, T: Send, E>(
    r: &mut impl BufRead,
    max_line: usize,
    mine: &mut S,
    theirs: &mut S,
    step: impl Fn(&mut S, &Batch) -> T + Sync,
    mut sink: impl FnMut(T) -> Result<(), E>,
) -> Result<io::Result<()>, E> {
    std::thread::scope(|sc| {
        let (to_worker, inbox) = std::sync::mpsc::sync_channel::<Batch>(1);
        let (to_main, results) = std::sync::mpsc::sync_channel::<T>(1);
        let step = &step;
        sc.spawn(move || {
            for b in inbox {
                if to_main.send(step(theirs, &b)).is_err() {
                    break;
                }
            }
        });
        let mut n = 0u64;
        let mut next = |n: &mut u64| {
            let b = next_batch(r, max_line, *n)?;
            *n += b.as_ref().map_or(0, |b| b.ends.len() as u64);
            Ok::<_, io::Error>(b)
        };
        loop {
            let a = match next(&mut n) {
                Ok(Some(a)) => a,
                Ok(None) => return Ok(Ok(())),
                Err(e) => return Ok(Err(e)),
            };
            let (sent, end) = match next(&mut n) {
                Ok(Some(b)) => (to_worker.send(b).is_ok(), None),
                Ok(None) => (false, Some(Ok(()))),
                Err(e) => (false, Some(Err(e))),
            };
            sink(step(mine, &a))?;
            if sent {
                sink(results.recv().expect("a pass worker does not panic"))?;
            }
            if let Some(end) = end {
                return Ok(end);
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` numbered lines, so batches of 4,096 lines split them.
    fn numbered(n: usize) -> Vec<u8> {
        (0..n)
            .map(|i| format!("{i}\n"))
            .collect::<String>()
            .into_bytes()
    }

    #[test]
    fn ordered_results_reach_the_sink_in_line_order_from_both_threads() {
        let input = numbered(4096 * 7 + 5);
        let mut sunk = Vec::new();
        let (mut a, mut b) = (0usize, 0usize);
        let read = two_core_ordered(
            &mut io::BufReader::new(&input[..]),
            64,
            &mut a,
            &mut b,
            |count, batch| {
                *count += 1;
                (
                    batch.first,
                    batch.lines().map(<[u8]>::to_vec).collect::<Vec<_>>(),
                )
            },
            |t| {
                sunk.push(t);
                Ok::<_, ()>(())
            },
        );
        assert!(matches!(read, Ok(Ok(()))));
        assert_eq!((a, b), (4, 4), "eight batches, alternating");
        let firsts: Vec<u64> = sunk.iter().map(|(f, _)| *f).collect();
        assert_eq!(firsts, (0..8).map(|k| k * 4096).collect::<Vec<u64>>());
        let lines: Vec<Vec<u8>> = sunk.into_iter().flat_map(|(_, l)| l).collect();
        let want: Vec<Vec<u8>> = (0..4096 * 7 + 5)
            .map(|i| i.to_string().into_bytes())
            .collect();
        assert_eq!(lines, want);
    }

    #[test]
    fn the_first_sink_error_stops_the_pass_and_a_read_error_is_returned() {
        let input = numbered(4096 * 6);
        let mut sunk = 0;
        let stopped = two_core_ordered(
            &mut io::BufReader::new(&input[..]),
            64,
            &mut (),
            &mut (),
            |_, batch| batch.first,
            |first| {
                if first == 4096 * 3 {
                    return Err(first);
                }
                sunk += 1;
                Ok(())
            },
        );
        assert_eq!(stopped.unwrap_err(), 4096 * 3);
        assert_eq!(sunk, 3, "nothing after the failing batch is sunk");

        let mut long = numbered(5000);
        long.extend_from_slice(&[b'x'; 100]);
        let read = two_core_ordered(
            &mut io::BufReader::new(&long[..]),
            64,
            &mut (),
            &mut (),
            |_, batch| batch.first,
            |_| Ok::<_, ()>(()),
        );
        assert!(matches!(read, Ok(Err(_))), "the over-long line is reported");
    }

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

    #[test]
    fn batches_hold_the_lines_next_line_reads_and_bound_each_line_alone() {
        let mut input = b"12345678\r\nab\n\n12345678\nxyz\n".repeat(3000);
        input.extend_from_slice(b"no end");
        let mut want = Vec::new();
        let (mut r, mut b) = (io::BufReader::with_capacity(5, &input[..]), Vec::new());
        while next_line(&mut r, &mut b, 8).unwrap() {
            want.push(split_terminator(&b).0.to_vec());
        }
        let mut r = io::BufReader::with_capacity(5, &input[..]);
        let (mut got, mut first) = (Vec::new(), 0);
        // Every line is within 8 bytes, however full the batch is.
        while let Some(batch) = next_batch(&mut r, 8, first).unwrap() {
            assert_eq!(batch.first, first);
            assert!(batch.ends.len() <= 4096);
            first += batch.ends.len() as u64;
            got.extend(batch.lines().map(<[u8]>::to_vec));
        }
        assert_eq!(got, want);
        let mut r = io::BufReader::new(&b"ok\n1234567890\n"[..]);
        assert!(next_batch(&mut r, 8, 0).is_err(), "a line of 10 bytes");
    }
}
