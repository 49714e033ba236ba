//! The on-disk encoding of one object: a single zstd frame with the content
//! checksum flag on and the content size in the header, written while the raw
//! bytes are hashed.
//!
//! Large inputs are read in 256 KiB chunks; each chunk goes to a hashing thread
//! and to the compressor at the same time, so SHA-256 runs beside zstd instead
//! of after it. Memory is bounded by the chunk queue and zstd's job buffers,
//! whatever the input size. A 64 KiB probe of the first chunk decides the
//! level: data that zstd cannot shrink is written at the fastest level, where
//! zstd emits raw blocks almost at copy speed.

use std::io::{self, BufWriter, Read, Write};
use std::sync::mpsc::{channel, sync_channel};

use zstd::zstd_safe::CParameter;

use coffer_base::digest::{Digest, Hasher};

/// Inputs up to this size are read whole into memory and compressed in one call.
pub const SMALL_OBJECT_MAX: usize = 1 << 20;
/// Chunk size of the streaming path. A chunk is read, copied into zstd's
/// job buffer and hashed on another core: at 256 KiB it is more likely
/// still in cache for the second and third touch (five interleaved 256 MiB
/// puts were 1-2% faster than with 1 MiB chunks, and no run slower).
const CHUNK: usize = 256 << 10;
/// Chunks queued for the hashing thread (bounds memory).
const HASH_QUEUE: usize = 8;
/// The buffer bytes are written to files through (and, for copies out of
/// an object, decoded and hashed in): on this project's machine, 1 MiB
/// writes into the page cache took three times as long per byte as 64 KiB
/// writes, whose source is still in cache (see bench/HISTORY.md,
/// twenty-fifth session).
pub const WRITE_BUF: usize = 64 << 10;
/// Level for data that compresses.
pub const LEVEL: i32 = 3;
/// Level for data the probe found incompressible.
pub const FAST_LEVEL: i32 = 1;
/// Bytes of the first chunk used to judge compressibility.
const PROBE: usize = 64 << 10;
/// Inputs from this size on use zstd's worker threads (unless the probe
/// finds them incompressible).
pub const MULTITHREAD_MIN: u64 = 8 << 20;
/// zstd job size with workers: small jobs keep peak memory low.
const JOB_SIZE: u32 = 2 << 20;

/// What was written for one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Encoded {
    /// SHA-256 of the raw bytes.
    pub digest: Digest,
    /// Raw byte count.
    pub size: u64,
    /// Bytes of the zstd frame.
    pub stored_size: u64,
}

/// Why encoding stopped.
#[derive(Debug)]
pub enum EncodeError {
    /// Reading the input failed.
    Read(io::Error),
    /// Writing the frame failed.
    Write(io::Error),
    /// The input produced another byte count than announced (the caller
    /// knows the path and reports the file as changed).
    SizeChanged,
}

/// A reusable compressor for small objects (keeps its zstd context between
/// calls, which matters for trees of many small files).
pub struct SmallEncoder {
    cctx: zstd::bulk::Compressor<'static>,
    out: Vec<u8>,
    level: i32,
}

impl SmallEncoder {
    /// A compressor at [`LEVEL`] with checksum and content size on.
    pub fn new() -> io::Result<Self> {
        let mut cctx = zstd::bulk::Compressor::new(LEVEL)?;
        cctx.set_parameter(CParameter::ChecksumFlag(true))?;
        cctx.set_parameter(CParameter::ContentSizeFlag(true))?;
        Ok(SmallEncoder {
            cctx,
            out: Vec::new(),
            level: LEVEL,
        })
    }

    /// Compresses `data` into one frame; the result borrows an internal
    /// buffer. Data of two probes and more is probed first, as a stream's
    /// first chunk is: [`LEVEL`]'s search costs much and finds nothing in
    /// incompressible bytes. The sample is at most an eighth of the data,
    /// so compressible data pays little for the question.
    pub fn encode(&mut self, data: &[u8]) -> io::Result<&[u8]> {
        let level = if data.len() >= 2 * PROBE {
            level_for(&data[..(data.len() / 8).min(PROBE)])
        } else {
            LEVEL
        };
        if level != self.level {
            self.cctx.set_compression_level(level)?;
            self.level = level;
        }
        self.out.clear();
        self.out
            .reserve(zstd::zstd_safe::compress_bound(data.len()));
        self.cctx.compress_to_buffer(data, &mut self.out)?;
        Ok(&self.out)
    }
}

/// The level for data whose first bytes are `sample`: [`FAST_LEVEL`] when
/// they look incompressible, else [`LEVEL`].
fn level_for(sample: &[u8]) -> i32 {
    if looks_incompressible(sample) {
        FAST_LEVEL
    } else {
        LEVEL
    }
}

/// True when a level-1 pass over `sample` saves less than 5%.
pub fn looks_incompressible(sample: &[u8]) -> bool {
    if sample.len() < 4096 {
        return false;
    }
    match zstd::bulk::compress(sample, FAST_LEVEL) {
        Ok(c) => c.len() * 100 >= sample.len() * 95,
        Err(_) => false,
    }
}

/// Reads until `buf` is full or EOF; returns the bytes read.
pub fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Streams exactly `size` bytes from `input` into one zstd frame on `out`,
/// hashing on a second thread. `size` must be the true length: it goes into
/// the frame header, and any other count is [`EncodeError::SizeChanged`].
pub fn encode_stream<W: Write>(
    input: &mut dyn Read,
    size: u64,
    out: W,
    progress: &dyn Fn(u64),
) -> Result<Encoded, EncodeError> {
    let mut first = vec![0u8; CHUNK];
    let n = read_full(input, &mut first).map_err(EncodeError::Read)?;
    first.truncate(n);
    let level = level_for(&first[..n.min(PROBE)]);
    let incompressible = level == FAST_LEVEL;

    let mut enc = frame_encoder(out, level, size, incompressible).map_err(EncodeError::Write)?;

    // Chunks travel to the hashing thread and come back to be refilled: a
    // fresh zeroed buffer per chunk cost 5% of a large put's CPU in memset
    // and page clearing. At most HASH_QUEUE + 2 buffers ever exist.
    let (tx, rx) = sync_channel::<Vec<u8>>(HASH_QUEUE);
    let (back_tx, back_rx) = channel::<Vec<u8>>();
    let result = std::thread::scope(|s| {
        let hashing = s.spawn(move || {
            let mut h = Hasher::new();
            for chunk in rx {
                h.update(&chunk);
                // The feeder may be gone already (the last chunk).
                let _ = back_tx.send(chunk);
            }
            h
        });
        let fed = (|| {
            let mut total = 0u64;
            let mut chunk = first;
            loop {
                if chunk.is_empty() {
                    break;
                }
                total += chunk.len() as u64;
                if total > size {
                    return Err(EncodeError::SizeChanged);
                }
                enc.write_all(&chunk).map_err(EncodeError::Write)?;
                progress(chunk.len() as u64);
                // The hashing thread only stops early if it panicked; join reports that.
                let _ = tx.send(chunk);
                let mut next = back_rx.try_recv().unwrap_or_default();
                next.resize(CHUNK, 0);
                let k = read_full(input, &mut next).map_err(EncodeError::Read)?;
                next.truncate(k);
                chunk = next;
            }
            if total != size {
                return Err(EncodeError::SizeChanged);
            }
            Ok(())
        })();
        drop(tx);
        let hasher = hashing.join().expect("hashing thread panicked");
        fed.map(|()| hasher)
    });
    let hasher = result?;
    let mut counting = enc.finish().map_err(EncodeError::Write)?;
    counting.inner.flush().map_err(EncodeError::Write)?;
    let (digest, len) = hasher.finish();
    Ok(Encoded {
        digest,
        size: len,
        stored_size: counting.count,
    })
}

/// A zstd encoder writing one frame of `size` bytes, with its checksum
/// and content size, to `out` (counted); two workers for a large input
/// worth compressing.
fn frame_encoder<W: Write>(
    out: W,
    level: i32,
    size: u64,
    incompressible: bool,
) -> std::io::Result<zstd::stream::write::Encoder<'static, CountingWriter<W>>> {
    let counting = CountingWriter {
        inner: BufWriter::with_capacity(WRITE_BUF, out),
        count: 0,
    };
    let mut enc = zstd::stream::write::Encoder::new(counting, level)?;
    enc.include_checksum(true)?;
    enc.include_contentsize(true)?;
    enc.set_pledged_src_size(Some(size))?;
    if !incompressible && size >= MULTITHREAD_MIN {
        enc.multithread(2)?;
        enc.set_parameter(CParameter::JobSize(JOB_SIZE))?;
    }
    Ok(enc)
}

struct CountingWriter<W: Write> {
    inner: BufWriter<W>,
    count: u64,
}

impl<W: Write> Write for CountingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.count += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Decodes one stored frame while hashing; checks digest and size at EOF.
///
/// Bytes are handed out as they decode; the mismatch (if any) surfaces as an
/// error from the final `read`. Callers that must not expose unverified bytes
/// write to a private temp and publish only after EOF.
pub struct VerifyingDecoder<R: Read> {
    decoder: zstd::stream::read::Decoder<'static, io::BufReader<R>>,
    hasher: Hasher,
    expected: Digest,
    expected_size: Option<u64>,
    verdict: Option<Verdict>,
}

/// The outcome of a finished verification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Digest and size matched.
    Good,
    /// The frame failed to decode (truncated, bad checksum, garbage).
    Corrupt(String),
    /// The frame decoded to other bytes.
    WrongDigest(Digest),
    /// The frame decoded to another length than the catalog says.
    WrongSize(u64),
}

impl<R: Read> VerifyingDecoder<R> {
    /// Wraps a stored frame expected to decode to `expected` (and, if known,
    /// `expected_size` bytes).
    pub fn new(stored: R, expected: Digest, expected_size: Option<u64>) -> io::Result<Self> {
        Ok(VerifyingDecoder {
            decoder: zstd::stream::read::Decoder::new(stored)?,
            hasher: Hasher::new(),
            expected,
            expected_size,
            verdict: None,
        })
    }

    /// The verdict once EOF (or a decode error) was reached.
    pub fn verdict(&self) -> Option<&Verdict> {
        self.verdict.as_ref()
    }

    /// Raw bytes decoded so far.
    pub fn decoded(&self) -> u64 {
        self.hasher.len()
    }

    fn conclude(&mut self) -> Verdict {
        let (digest, len) = std::mem::take(&mut self.hasher).finish();
        self.hasher = Hasher::new();
        if digest != self.expected {
            Verdict::WrongDigest(digest)
        } else if self.expected_size.is_some_and(|s| s != len) {
            Verdict::WrongSize(len)
        } else {
            Verdict::Good
        }
    }
}

/// Marker inside the `io::Error` a [`VerifyingDecoder`] returns on mismatch.
#[derive(Debug, thiserror::Error)]
#[error("stored object does not verify: {0:?}")]
pub struct VerifyFailed(pub Verdict);

impl<R: Read> Read for VerifyingDecoder<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &self.verdict {
            Some(Verdict::Good) => return Ok(0),
            Some(v) => return Err(io::Error::other(VerifyFailed(v.clone()))),
            None => {}
        }
        if buf.is_empty() {
            return Ok(0);
        }
        match self.decoder.read(buf) {
            Ok(0) => {
                let v = self.conclude();
                self.verdict = Some(v.clone());
                match v {
                    Verdict::Good => Ok(0),
                    v => Err(io::Error::other(VerifyFailed(v))),
                }
            }
            Ok(n) => {
                self.hasher.update(&buf[..n]);
                if self.expected_size.is_some_and(|s| self.hasher.len() > s) {
                    let v = Verdict::WrongSize(self.hasher.len());
                    self.verdict = Some(v.clone());
                    return Err(io::Error::other(VerifyFailed(v)));
                }
                Ok(n)
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Err(e),
            Err(e) => {
                // Decoder errors mean the stored bytes are damaged, not that the
                // disk failed; an OS error from the file keeps its own kind.
                if e.raw_os_error().is_some() {
                    return Err(e);
                }
                let v = Verdict::Corrupt(e.to_string());
                self.verdict = Some(v.clone());
                Err(io::Error::other(VerifyFailed(v)))
            }
        }
    }
}

/// Whether `frame` decodes to `size` bytes hashing to `d`.
pub fn frame_verifies(
    dctx: &mut zstd::bulk::Decompressor<'static>,
    raw: &mut Vec<u8>,
    frame: &[u8],
    d: &Digest,
    size: u64,
) -> bool {
    raw.clear();
    raw.reserve(size as usize);
    if dctx.decompress_to_buffer(frame, raw).is_err() {
        return false;
    }
    let mut h = Hasher::new();
    h.update(raw);
    h.finish() == (*d, size)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pseudo_random(n: usize) -> Vec<u8> {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    fn decode_all(frame: &[u8], d: Digest, size: Option<u64>) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        VerifyingDecoder::new(frame, d, size)?.read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn stream_encoding_round_trips_and_sets_content_size_and_checksum() {
        let data: Vec<u8> = (0..3_000_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let mut frame = Vec::new();
        let e = encode_stream(&mut &data[..], data.len() as u64, &mut frame, &|_| {}).unwrap();
        assert_eq!(e.digest, Digest::of(&data));
        assert_eq!(e.size, data.len() as u64);
        assert_eq!(e.stored_size, frame.len() as u64);
        assert!(frame.len() < data.len() / 4);
        assert_eq!(
            zstd::zstd_safe::get_frame_content_size(&frame).unwrap(),
            Some(data.len() as u64)
        );
        // Frame header descriptor bit 2 is the content checksum flag.
        assert_eq!(frame[4] & 0b100, 0b100);
        assert_eq!(decode_all(&frame, e.digest, Some(e.size)).unwrap(), data);
    }

    #[test]
    fn small_encoding_sets_content_size_and_checksum() {
        let mut enc = SmallEncoder::new().unwrap();
        let frame = enc.encode(b"hello hello hello").unwrap().to_vec();
        assert_eq!(
            zstd::zstd_safe::get_frame_content_size(&frame).unwrap(),
            Some(17)
        );
        assert_eq!(frame[4] & 0b100, 0b100);
        let empty = enc.encode(b"").unwrap().to_vec();
        assert_eq!(
            zstd::zstd_safe::get_frame_content_size(&empty).unwrap(),
            Some(0)
        );
        assert_eq!(decode_all(&empty, Digest::of(b""), Some(0)).unwrap(), b"");
    }

    #[test]
    fn small_encoding_of_random_bytes_takes_the_fast_level_and_comes_back() {
        let text = b"{\"k\":\"value\", \"n\": 12}\n".repeat(9000);
        let fresh = SmallEncoder::new().unwrap().encode(&text).unwrap().to_vec();
        let mut enc = SmallEncoder::new().unwrap();
        let random = pseudo_random(SMALL_OBJECT_MAX);
        let frame = enc.encode(&random).unwrap().to_vec();
        assert_eq!(enc.level, FAST_LEVEL);
        assert!(frame.len() < random.len() + 1024);
        assert_eq!(
            decode_all(&frame, Digest::of(&random), Some(random.len() as u64)).unwrap(),
            random
        );
        // Compressible bytes after it get the usual level again.
        assert_eq!(enc.encode(&text).unwrap(), &fresh[..]);
        assert_eq!(enc.level, LEVEL);
    }

    #[test]
    fn incompressible_probe_tells_random_from_text() {
        assert!(looks_incompressible(&pseudo_random(PROBE)));
        assert!(!looks_incompressible(
            &b"{\"k\":\"value\"}\n".repeat(5000)[..PROBE]
        ));
    }

    #[test]
    fn incompressible_input_is_stored_in_about_its_own_size() {
        let data = pseudo_random(3 * CHUNK + 17);
        let mut frame = Vec::new();
        let e = encode_stream(&mut &data[..], data.len() as u64, &mut frame, &|_| {}).unwrap();
        assert!(e.stored_size < data.len() as u64 + 1024);
        assert_eq!(decode_all(&frame, e.digest, None).unwrap(), data);
    }

    #[test]
    fn input_longer_or_shorter_than_announced_is_refused() {
        let data = vec![7u8; 5000];
        for announced in [4999u64, 5001] {
            let r = encode_stream(&mut &data[..], announced, Vec::new(), &|_| {});
            assert!(matches!(r, Err(EncodeError::SizeChanged)), "{announced}");
        }
    }

    #[test]
    fn decoder_reports_wrong_digest_at_eof() {
        let mut enc = SmallEncoder::new().unwrap();
        let frame = enc.encode(b"abc").unwrap().to_vec();
        let err = decode_all(&frame, Digest::of(b"abd"), None).unwrap_err();
        let inner = err
            .get_ref()
            .unwrap()
            .downcast_ref::<VerifyFailed>()
            .unwrap();
        assert_eq!(inner.0, Verdict::WrongDigest(Digest::of(b"abc")));
    }

    #[test]
    fn decoder_never_returns_other_bytes_after_a_bit_flip() {
        let data = b"some evidence bytes ".repeat(100);
        let mut enc = SmallEncoder::new().unwrap();
        let frame = enc.encode(&data).unwrap().to_vec();
        let mut accepted = 0;
        for i in 0..frame.len() {
            let mut bad = frame.clone();
            bad[i] ^= 0x10;
            // A flip of an unused header bit still decodes to the same bytes;
            // every other flip must be reported.
            if let Ok(out) = decode_all(&bad, Digest::of(&data), Some(data.len() as u64)) {
                assert_eq!(out, data, "flip at {i} returned other bytes");
                accepted += 1;
            }
        }
        assert!(accepted <= 1, "{accepted} flips went unnoticed");
        let truncated = &frame[..frame.len() - 1];
        assert!(decode_all(truncated, Digest::of(&data), None).is_err());
    }
}
