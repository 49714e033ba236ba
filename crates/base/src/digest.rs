//! Object identity: the SHA-256 of an object's raw bytes.
//!
//! There is exactly one textual form, `sha256:<64 lowercase hex>`. Parsing is
//! strict (no upper case, no whitespace, no other algorithm) so that a digest
//! that prints the same always names the same object.

use std::fmt;
use std::io::{self, Read, Write};
use std::str::FromStr;

use sha2::{Digest as _, Sha256};

/// The prefix every digest carries in its textual form.
pub const PREFIX: &str = "sha256:";

/// Shortest digest prefix taken, in hex digits (as git's abbreviations).
pub const MIN_PREFIX_HEX: usize = 8;

/// The lower-case hex of a digest prefix as typed (8 to 63 hex digits,
/// with or without `sha256:`, any case); `None` for anything else.
pub fn hex_prefix(arg: &str) -> Option<String> {
    let hex = arg
        .strip_prefix("sha256:")
        .unwrap_or(arg)
        .to_ascii_lowercase();
    (hex.len() >= MIN_PREFIX_HEX && hex.len() < 64 && hex.bytes().all(|c| c.is_ascii_hexdigit()))
        .then_some(hex)
}

/// A SHA-256 object key.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest([u8; 32]);

/// Why a string is not a digest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a digest (expected sha256:<64 lowercase hex>): {input:?}")]
pub struct ParseDigestError {
    /// The rejected input, cut to 100 characters.
    pub input: String,
}

impl Digest {
    /// Wraps 32 raw hash bytes.
    pub const fn from_bytes(bytes: [u8; 32]) -> Self {
        Digest(bytes)
    }

    /// The raw hash bytes.
    pub const fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Hashes a byte slice in memory. For streams use [`Hasher`].
    pub fn of(bytes: &[u8]) -> Self {
        Digest(Sha256::digest(bytes).into())
    }

    /// The 64 lowercase hex characters, without the prefix.
    pub fn hex(&self) -> String {
        let buf = self.hex_bytes();
        std::str::from_utf8(&buf).expect("hex is ASCII").to_string()
    }

    /// The hex digits in a stack buffer: a digest is printed once per
    /// catalog query and output line, so batch lookups run through here.
    fn hex_bytes(&self) -> [u8; 64] {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 64];
        for (i, b) in self.0.iter().enumerate() {
            out[2 * i] = DIGITS[usize::from(b >> 4)];
            out[2 * i + 1] = DIGITS[usize::from(b & 0xf)];
        }
        out
    }

    /// The shard directory name: the first two hex characters.
    pub fn shard(&self) -> String {
        hex::encode(&self.0[..1])
    }

    /// Parses a digest as a person types one: with `sha256:` or without
    /// it (as `sha256sum` prints one), its 64 hex digits in any case.
    /// Stored forms (object names, documents, the catalog) stay strict:
    /// use [`str::parse`] or [`Digest::from_hex`] for those.
    pub fn parse_typed(s: &str) -> Result<Self, ParseDigestError> {
        let bare = s.strip_prefix(PREFIX).unwrap_or(s);
        Digest::from_hex(&bare.to_ascii_lowercase()).map_err(|_| ParseDigestError {
            input: s.chars().take(100).collect(),
        })
    }

    /// Parses the bare 64-hex form used for object file names.
    pub fn from_hex(hex_str: &str) -> Result<Self, ParseDigestError> {
        let err = || ParseDigestError {
            input: hex_str.chars().take(100).collect(),
        };
        // Lowercase only: one digest has one spelling in stored forms.
        fn nibble(c: u8) -> Option<u8> {
            match c {
                b'0'..=b'9' => Some(c - b'0'),
                b'a'..=b'f' => Some(c - b'a' + 10),
                _ => None,
            }
        }
        let bytes = hex_str.as_bytes();
        if bytes.len() != 64 {
            return Err(err());
        }
        let mut out = [0u8; 32];
        for (o, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
            match (nibble(pair[0]), nibble(pair[1])) {
                (Some(hi), Some(lo)) => *o = hi << 4 | lo,
                _ => return Err(err()),
            }
        }
        Ok(Digest(out))
    }
}

impl FromStr for Digest {
    type Err = ParseDigestError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.strip_prefix(PREFIX) {
            Some(rest) => Digest::from_hex(rest).map_err(|_| ParseDigestError {
                input: s.chars().take(100).collect(),
            }),
            None => Err(ParseDigestError {
                input: s.chars().take(100).collect(),
            }),
        }
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let buf = self.hex_bytes();
        f.write_str(PREFIX)?;
        f.write_str(std::str::from_utf8(&buf).expect("hex is ASCII"))
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl serde::Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Documents are typed only after schema validation, which holds a digest
/// to `sha256:<64 hex>`; anything else still fails here rather than
/// becoming a default.
impl<'de> serde::Deserialize<'de> for Digest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// An incremental SHA-256 that also counts bytes, so size travels with the digest.
#[derive(Clone, Default)]
pub struct Hasher {
    inner: Sha256,
    len: u64,
}

impl Hasher {
    /// A fresh hasher.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        self.inner.update(bytes);
        self.len += bytes.len() as u64;
    }

    /// Bytes fed so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when nothing was fed.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The digest and the byte count.
    pub fn finish(self) -> (Digest, u64) {
        (Digest(self.inner.finalize().into()), self.len)
    }
}

/// Hashes exactly `size` bytes of `input` (reading past `size` by at most
/// one buffer): `Ok(None)` when it holds another count. For inputs that
/// are checked, not stored (`bundle validate`), or that name an object the
/// store already holds.
pub fn hash_exact(
    input: &mut dyn Read,
    size: u64,
    progress: &dyn Fn(u64),
) -> io::Result<Option<Digest>> {
    let mut h = Hasher::new();
    let mut buf = vec![0u8; 256 << 10];
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        h.update(&buf[..n]);
        progress(n as u64);
        if h.len() > size {
            return Ok(None);
        }
    }
    let (digest, len) = h.finish();
    Ok((len == size).then_some(digest))
}

/// A reader that hashes and counts every byte read through it.
pub struct HashingReader<R> {
    inner: R,
    hasher: Hasher,
}

impl<R: Read> HashingReader<R> {
    /// Wraps `inner`.
    pub fn new(inner: R) -> Self {
        HashingReader {
            inner,
            hasher: Hasher::new(),
        }
    }

    /// What was read so far.
    pub fn hasher(&self) -> &Hasher {
        &self.hasher
    }

    /// The digest and size of what was read.
    pub fn finish(self) -> (Digest, u64) {
        self.hasher.finish()
    }
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

/// A writer that hashes and counts every byte written through it.
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

    /// The inner writer, and the digest and size of what was written.
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
    fn hex_round_trips_and_only_lowercase_parses() {
        for seed in 0u8..=255 {
            let d = Digest::of(&[seed]);
            assert_eq!(d.hex(), hex::encode(d.as_bytes()));
            assert_eq!(
                d.to_string(),
                format!("sha256:{}", hex::encode(d.as_bytes()))
            );
            assert_eq!(Digest::from_hex(&d.hex()).unwrap(), d);
            assert!(
                Digest::from_hex(&d.hex().to_uppercase()).is_err()
                    || !d.hex().bytes().any(|b| b.is_ascii_alphabetic())
            );
        }
        let mut bad = Digest::of(b"x").hex();
        bad.replace_range(63..64, "g");
        assert!(Digest::from_hex(&bad).is_err());
        assert!(Digest::from_hex(&bad[..62]).is_err());
        assert!(Digest::from_hex(&format!("{}é", &bad[..62])).is_err());
    }

    #[test]
    fn hash_exact_takes_exactly_the_announced_count() {
        let data = vec![7u8; (256 << 10) + 3];
        let n = data.len() as u64;
        let got = hash_exact(&mut &data[..], n, &|_| {}).unwrap();
        assert_eq!(got, Some(Digest::of(&data)));
        assert_eq!(hash_exact(&mut &data[..], n + 1, &|_| {}).unwrap(), None);
        assert_eq!(hash_exact(&mut &data[..], n - 1, &|_| {}).unwrap(), None);
        assert_eq!(
            hash_exact(&mut &b""[..], 0, &|_| {}).unwrap(),
            Some(Digest::of(b""))
        );
    }

    const EMPTY: &str = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[test]
    fn digest_of_empty_input_matches_the_known_vector() {
        assert_eq!(Digest::of(b"").to_string(), EMPTY);
        let (d, n) = Hasher::new().finish();
        assert_eq!((d.to_string().as_str(), n), (EMPTY, 0));
    }

    #[test]
    fn the_adapters_hash_exactly_what_passes_through() {
        let mut r = HashingReader::new(&b"hello world"[..]);
        let mut first = [0u8; 5];
        r.read_exact(&mut first).unwrap();
        assert_eq!(r.hasher().len(), 5);
        io::copy(&mut r, &mut io::sink()).unwrap();
        assert_eq!(r.finish(), (Digest::of(b"hello world"), 11));
        let mut w = HashingWriter::new(Vec::new());
        w.write_all(b"hello ").unwrap();
        w.write_all(b"world").unwrap();
        let (out, d, n) = w.finish();
        assert_eq!(
            (out.as_slice(), d, n),
            (&b"hello world"[..], Digest::of(b"hello world"), 11)
        );
    }

    #[test]
    fn digest_round_trips_through_its_text_form() {
        let d: Digest = EMPTY.parse().unwrap();
        assert_eq!(d.to_string(), EMPTY);
        assert_eq!(d.shard(), "e3");
    }

    #[test]
    fn digest_parse_rejects_every_other_form() {
        for bad in [
            "",
            "sha256:",
            &EMPTY[7..],
            &EMPTY.to_uppercase(),
            &format!("SHA256:{}", &EMPTY[7..]),
            &format!("sha512:{}", &EMPTY[7..]),
            &format!("{EMPTY}0"),
            &EMPTY[..EMPTY.len() - 1],
            &format!(" {EMPTY}"),
            &format!("sha256:{}", "g".repeat(64)),
            &format!("sha256:{}", "é".repeat(32)),
        ] {
            assert!(bad.parse::<Digest>().is_err(), "accepted {bad:?}");
        }
    }

    #[test]
    fn hasher_counts_and_matches_one_shot_hash() {
        let mut h = Hasher::new();
        h.update(b"hello ");
        h.update(b"world");
        let (d, n) = h.finish();
        assert_eq!(n, 11);
        assert_eq!(d, Digest::of(b"hello world"));
    }
}
