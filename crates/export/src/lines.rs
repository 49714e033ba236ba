//! Bounded line reading and hashing writes: the streaming primitives of
//! export and readback.

use std::io::{self, BufRead};

use crate::detect::continued::next_previous;

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
    /// The line before its first, when there is one of at most
    /// [`MAX_OPENING_LINE`](crate::detect::continued::MAX_OPENING_LINE) bytes (all a line is read with; see
    /// [`crate::detect::continued`]).
    before: Option<Vec<u8>>,
}

impl Batch {
    /// An empty batch starting at line `first`.
    pub fn new(first: u64) -> Batch {
        Batch {
            first,
            bytes: Vec::new(),
            ends: Vec::new(),
            before: None,
        }
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
    pub fn lines(&self) -> impl Iterator<Item = &[u8]> + Clone {
        let mut start = 0;
        self.ends.iter().map(move |&end| {
            let line = &self.bytes[start..end];
            start = end;
            line
        })
    }

    /// Its lines, each with the last line before it that is not blank,
    /// when that one is at most [`MAX_OPENING_LINE`](crate::detect::continued::MAX_OPENING_LINE) bytes, across the
    /// batch's start too.
    pub fn lines_with_previous(&self) -> impl Iterator<Item = (Option<&[u8]>, &[u8])> {
        let mut prev = self.before.as_deref();
        self.lines().map(move |line| {
            let p = prev;
            prev = next_previous(prev, line);
            (p, line)
        })
    }

    /// The line the line after this batch's last would be read with.
    fn last_short_line(&self) -> Option<Vec<u8>> {
        self.lines()
            .fold(self.before.as_deref(), next_previous)
            .map(<[u8]>::to_vec)
    }
}

/// Reads `r` in [`Batch`]es and runs `step` on each, on this thread (with
/// `mine`) or on one worker (with `theirs`), whichever has time (see
/// [`two_core_ordered`]). Returns the
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
fn next_batch(
    r: &mut impl BufRead,
    max_line: usize,
    first: u64,
    before: Option<Vec<u8>>,
) -> io::Result<Option<Batch>> {
    let mut batch = Batch::new(first);
    batch.before = before;
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

/// Most results [`two_core_ordered`] holds back while an earlier batch is
/// still being stepped on the worker. With the batch being read, the one
/// in the worker, the one queued for it and the result in the channel, at
/// most three batches and four results are in memory at once.
const MAX_WAITING: usize = 2;

/// Like [`two_core`], but each result goes to `sink` in batch order as
/// soon as every earlier one has, so a pass that writes its output holds a
/// few batches and their results, never the file. This thread reads every
/// batch (and sinks every result); it hands a batch to the worker whenever
/// the worker's queue has room and steps it itself otherwise, so the work
/// splits by what each thread has time for: when reading and sinking are
/// costly (decompressing, hashing, writing), the worker steps more
/// batches. Which thread steps a batch must not change its result.
/// Returns `Err` with the first error `sink` gave (nothing after it is
/// sunk), or how reading ended (every batch read before an error is sunk).
pub fn two_core_ordered<S: Send, T: Send, E>(
    r: &mut impl BufRead,
    max_line: usize,
    mine: &mut S,
    theirs: &mut S,
    step: impl Fn(&mut S, &Batch) -> T + Sync,
    mut sink: impl FnMut(T) -> Result<(), E>,
) -> Result<io::Result<()>, E> {
    use std::sync::mpsc::{sync_channel, TrySendError};
    const WORKER_GONE: &str = "a pass worker does not panic";
    std::thread::scope(|sc| {
        let (to_worker, inbox) = sync_channel::<(u64, Batch)>(1);
        let (to_main, results) = sync_channel::<(u64, T)>(1);
        let step = &step;
        sc.spawn(move || {
            for (seq, b) in inbox {
                if to_main.send((seq, step(theirs, &b))).is_err() {
                    break;
                }
            }
        });
        let mut order = Reorder::default();
        let (mut lines, mut before) = (0u64, None);
        let ended = loop {
            // Everything waiting is behind a batch the worker holds.
            while order.waiting.len() >= MAX_WAITING {
                let (seq, t) = results.recv().expect(WORKER_GONE);
                order.sink_from(seq, t, &mut sink)?;
            }
            let b = match next_batch(r, max_line, lines, before.take()) {
                Ok(Some(b)) => b,
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            };
            lines += b.ends.len() as u64;
            before = b.last_short_line();
            let seq = order.read;
            order.read += 1;
            match to_worker.try_send((seq, b)) {
                Ok(()) => {}
                Err(TrySendError::Full((seq, b))) => {
                    let t = step(mine, &b);
                    order.sink_from(seq, t, &mut sink)?;
                }
                Err(TrySendError::Disconnected(_)) => panic!("{WORKER_GONE}"),
            }
            while let Ok((seq, t)) = results.try_recv() {
                order.sink_from(seq, t, &mut sink)?;
            }
        };
        drop(to_worker);
        while order.sunk < order.read {
            let (seq, t) = results.recv().expect(WORKER_GONE);
            order.sink_from(seq, t, &mut sink)?;
        }
        Ok(ended)
    })
}

/// Results of a two-core pass put back in batch order.
struct Reorder<T> {
    /// Batches read so far (the next batch's number).
    read: u64,
    /// Batches sunk so far (the number of the next one to sink).
    sunk: u64,
    /// Results that arrived before an earlier batch's.
    waiting: std::collections::BTreeMap<u64, T>,
}

impl<T> Default for Reorder<T> {
    fn default() -> Self {
        Reorder {
            read: 0,
            sunk: 0,
            waiting: std::collections::BTreeMap::new(),
        }
    }
}

impl<T> Reorder<T> {
    /// Takes batch `seq`'s result and sinks every result now in order.
    fn sink_from<E>(
        &mut self,
        seq: u64,
        t: T,
        sink: &mut impl FnMut(T) -> Result<(), E>,
    ) -> Result<(), E> {
        self.waiting.insert(seq, t);
        while let Some(t) = self.waiting.remove(&self.sunk) {
            sink(t)?;
            self.sunk += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::continued::MAX_OPENING_LINE;

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
        assert_eq!(a + b, 8, "eight batches, each stepped once");
        assert!(b >= 1, "the first batch always goes to the idle worker");
        let firsts: Vec<u64> = sunk.iter().map(|(f, _)| *f).collect();
        assert_eq!(firsts, (0..8).map(|k| k * 4096).collect::<Vec<u64>>());
        let lines: Vec<Vec<u8>> = sunk.into_iter().flat_map(|(_, l)| l).collect();
        let want: Vec<Vec<u8>> = (0..4096 * 7 + 5)
            .map(|i| i.to_string().into_bytes())
            .collect();
        assert_eq!(lines, want);
    }

    /// Each line of `input` with the line it is read with, read in
    /// batches by a two-core pass.
    fn paired(input: &[u8]) -> Vec<(Option<Vec<u8>>, Vec<u8>)> {
        let (mut a, mut b) = (0, 0);
        let (done, read) = two_core(
            &mut io::BufReader::new(input),
            1024,
            &mut a,
            &mut b,
            |_, batch| {
                batch
                    .lines_with_previous()
                    .map(|(p, l)| (p.map(<[u8]>::to_vec), l.to_vec()))
                    .collect::<Vec<_>>()
            },
        );
        read.unwrap();
        done.into_iter().flatten().collect()
    }

    #[test]
    fn blank_lines_stand_between_a_line_and_the_one_it_is_read_with() {
        // Blank lines fill the rest of the first batch and all of the
        // second; a long line's blanks lead back to nothing.
        let mut input = b"Your password is:\n".to_vec();
        input.extend(b" \n".repeat(4096 * 2));
        input.extend(b"Q7xk29fLq83ZmP0aRtY4\n");
        input.extend(vec![b'x'; MAX_OPENING_LINE + 1]);
        input.extend(b"\n\t\n\r\nlast\n");
        let got = paired(&input);
        assert_eq!(got.len(), 4096 * 2 + 6);
        let prev_of = |line: &[u8]| got.iter().find(|(_, l)| l == line).unwrap().0.clone();
        assert_eq!(
            prev_of(b"Q7xk29fLq83ZmP0aRtY4"),
            Some(b"Your password is:".to_vec())
        );
        assert_eq!(got[4096 * 2].0, Some(b"Your password is:".to_vec()));
        assert_eq!(prev_of(b"last"), None);
    }

    #[test]
    fn each_line_comes_with_the_short_line_before_it_across_batch_ends() {
        // Line 4095 ends the first batch and 8191 the second: one short,
        // one longer than an opening tag can be.
        let mut input = Vec::new();
        for i in 0..4096 * 2 + 3 {
            match i {
                8191 => input.extend_from_slice(&[b'x'; MAX_OPENING_LINE + 1]),
                _ => input.extend_from_slice(i.to_string().as_bytes()),
            }
            input.push(b'\n');
        }
        let got = paired(&input);
        let lines: Vec<&[u8]> = input.split(|b| *b == b'\n').collect();
        assert_eq!(got.len(), lines.len() - 1);
        for (n, (prev, line)) in got.iter().enumerate() {
            assert_eq!(line.as_slice(), lines[n]);
            let want = (n > 0 && lines[n - 1].len() <= MAX_OPENING_LINE).then(|| lines[n - 1]);
            assert_eq!(prev.as_deref(), want, "line {n}");
        }
        assert_eq!(got[4096].0.as_deref(), Some(&b"4095"[..]));
        assert_eq!(got[8192].0, None);
    }

    /// The worker's first step waits until this thread has stepped two
    /// batches itself: a pass that alternated strictly (or waited for the
    /// worker before stepping again) would never get there.
    #[test]
    fn this_thread_steps_batches_itself_while_the_worker_is_busy() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let input = numbered(4096 * 9);
        let stepped_here = AtomicUsize::new(0);
        let mut sunk = Vec::new();
        let read = two_core_ordered(
            &mut io::BufReader::new(&input[..]),
            64,
            &mut (false, false),
            &mut (true, false),
            |(worker, started), batch| {
                if !*worker {
                    stepped_here.fetch_add(1, Ordering::SeqCst);
                } else if !std::mem::replace(started, true) {
                    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
                    while stepped_here.load(Ordering::SeqCst) < 2 {
                        assert!(
                            std::time::Instant::now() < deadline,
                            "this thread stepped nothing while the worker was busy"
                        );
                        std::thread::yield_now();
                    }
                }
                batch.first
            },
            |first| {
                sunk.push(first);
                Ok::<_, ()>(())
            },
        );
        assert!(matches!(read, Ok(Ok(()))));
        assert_eq!(sunk, (0..9).map(|k| k * 4096).collect::<Vec<u64>>());
        assert!(stepped_here.load(Ordering::SeqCst) >= 2);
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
        while let Some(batch) = next_batch(&mut r, 8, first, None).unwrap() {
            assert_eq!(batch.first, first);
            assert!(batch.ends.len() <= 4096);
            first += batch.ends.len() as u64;
            got.extend(batch.lines().map(<[u8]>::to_vec));
        }
        assert_eq!(got, want);
        let mut r = io::BufReader::new(&b"ok\n1234567890\n"[..]);
        assert!(
            next_batch(&mut r, 8, 0, None).is_err(),
            "a line of 10 bytes"
        );
    }
}
