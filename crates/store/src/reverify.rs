//! Re-hashing many small objects in a row (`fsck --read-data`): one
//! decompression context and two reused buffers, where a read through
//! [`crate::Store::open_object`] pays a catalog query, a fresh streaming
//! decoder and a zeroed 1 MiB buffer per object.
//!
//! Only the good case is fast: anything else (a frame too large to hold, a
//! decode error, another digest or size) is left to the streaming path,
//! which says exactly what is wrong and quarantines the file.

use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::objects::ObjectDirs;
use coffer_base::digest::{Digest, Hasher};

/// Frames up to this size are read whole into memory.
pub const MAX_STORED: u64 = 1 << 20;
/// Objects up to this size are decoded whole into memory.
pub const MAX_RAW: u64 = 8 << 20;

/// Reused state for verifying one object after another.
pub struct Reverifier {
    dctx: zstd::bulk::Decompressor<'static>,
    frame: Vec<u8>,
    raw: Vec<u8>,
}

impl Reverifier {
    /// A verifier (`None` if zstd cannot make a context).
    pub fn new() -> Option<Reverifier> {
        Some(Reverifier {
            dctx: zstd::bulk::Decompressor::new().ok()?,
            frame: Vec::new(),
            raw: Vec::new(),
        })
    }

    /// Whether the frame of `d` (`stored` bytes on disk) decodes to exactly
    /// `size` bytes that hash to `d`. `false` means "not shown here", not
    /// "bad": the caller then takes the streaming path.
    pub fn verifies(&mut self, dirs: &ObjectDirs, d: &Digest, size: u64, stored: u64) -> bool {
        if stored > MAX_STORED || size > MAX_RAW {
            return false;
        }
        // A file whose size is not the listed one is not "good"; objects
        // are never written after publication, so the size the open saw
        // is the file's, and exactly that many bytes are read (no read
        // past the end to find it).
        let Ok((mut body, on_disk)) = dirs.open_frame(d) else {
            return false;
        };
        if on_disk != stored {
            return false;
        }
        self.frame.clear();
        self.frame.resize(stored as usize, 0);
        if body.read_exact(&mut self.frame).is_err() {
            return false;
        }
        self.raw.clear();
        self.raw.reserve(size as usize);
        match self.dctx.decompress_to_buffer(&self.frame, &mut self.raw) {
            Ok(n) if n as u64 == size => {}
            _ => return false,
        }
        let mut h = Hasher::new();
        h.update(&self.raw);
        h.finish() == (*d, size)
    }
}

/// Objects per chunk the two threads take turns on.
const CHUNK: usize = 64;

/// One object to re-hash: its digest, its frame's size on disk, and its
/// size if the catalog knows it (an orphan's is not known here).
pub type Listed = (Digest, u64, Option<u64>);

/// Re-hashes `objects` on two threads (this one and a helper, taking
/// chunks in turn); returns, in order, whether each verified on the fast
/// path. `progress` hears the raw bytes of those that did, from this
/// thread.
pub fn verify_all(dirs: &ObjectDirs, objects: &[Listed], progress: &dyn Fn(u64)) -> Vec<bool> {
    let helped = AtomicU64::new(0);
    let run = |v: &mut Option<Reverifier>, chunk: &[Listed]| -> Vec<bool> {
        chunk
            .iter()
            .map(|(d, stored, size)| match (v.as_mut(), size) {
                (Some(v), Some(size)) => v.verifies(dirs, d, *size, *stored),
                _ => false,
            })
            .collect()
    };
    let bytes = |chunk: &[Listed], ok: &[bool]| -> u64 {
        chunk
            .iter()
            .zip(ok)
            .filter(|(_, ok)| **ok)
            .map(|((_, _, size), _)| size.unwrap_or(0))
            .sum()
    };
    let chunks: Vec<&[Listed]> = objects.chunks(CHUNK).collect();
    let (mine, theirs) = std::thread::scope(|sc| {
        let helper = sc.spawn(|| {
            let mut v = Reverifier::new();
            chunks
                .iter()
                .skip(1)
                .step_by(2)
                .map(|c| {
                    let ok = run(&mut v, c);
                    helped.fetch_add(bytes(c, &ok), Ordering::Relaxed);
                    ok
                })
                .collect::<Vec<_>>()
        });
        let mut v = Reverifier::new();
        let mine: Vec<Vec<bool>> = chunks
            .iter()
            .step_by(2)
            .map(|c| {
                let ok = run(&mut v, c);
                progress(bytes(c, &ok) + helped.swap(0, Ordering::Relaxed));
                ok
            })
            .collect();
        let theirs = helper.join().expect("verify thread panicked");
        progress(helped.swap(0, Ordering::Relaxed));
        (mine, theirs)
    });
    let (mut mine, mut theirs) = (mine.into_iter(), theirs.into_iter());
    let mut out = Vec::with_capacity(objects.len());
    for i in 0..chunks.len() {
        let part = if i % 2 == 0 {
            mine.next()
        } else {
            theirs.next()
        };
        out.extend(part.expect("one result per chunk"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store;

    #[test]
    fn good_objects_verify_and_anything_else_is_left_to_the_streaming_path() {
        let t = tempfile::tempdir().unwrap();
        let (mut s, _) = Store::init(&t.path().join("s"), &crate::catalog::Schema::CAS).unwrap();
        let small = b"a small object".to_vec();
        let mut b = s.batch().unwrap();
        let (d, _) = b
            .add_stream(
                &mut &small[..],
                small.len() as u64,
                std::path::Path::new("x"),
                Default::default(),
            )
            .unwrap();
        b.commit().unwrap();
        let dirs = s.objects_dirs();
        let path = t.path().join("s").join(crate::backend::object_key(&d));
        let stored = std::fs::metadata(&path).unwrap().len();
        let mut v = Reverifier::new().unwrap();
        assert!(v.verifies(dirs, &d, small.len() as u64, stored));
        assert!(
            !v.verifies(dirs, &d, small.len() as u64 + 1, stored),
            "size"
        );
        assert!(
            !v.verifies(dirs, &d, small.len() as u64, stored - 1),
            "listed size"
        );
        let other = Digest::of(b"other");
        assert!(!v.verifies(dirs, &other, 5, stored), "absent");
        // A frame that decodes to other bytes of the same length.
        let forged = zstd::encode_all(&b"a smell object"[..], 3).unwrap();
        let mut perms = std::fs::metadata(&path).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        std::fs::set_permissions(&path, perms).unwrap();
        std::fs::write(&path, &forged).unwrap();
        assert!(!v.verifies(dirs, &d, small.len() as u64, forged.len() as u64));
    }

    #[test]
    fn two_threads_answer_in_order_and_report_every_good_byte() {
        let t = tempfile::tempdir().unwrap();
        let (mut s, _) = Store::init(&t.path().join("s"), &crate::catalog::Schema::CAS).unwrap();
        let mut b = s.batch().unwrap();
        let mut objects = Vec::new();
        for i in 0..200u64 {
            let data = format!("object number {i}").into_bytes();
            let (d, n) = b
                .add_stream(
                    &mut &data[..],
                    data.len() as u64,
                    std::path::Path::new("x"),
                    Default::default(),
                )
                .unwrap();
            objects.push((d, n));
        }
        b.commit().unwrap();
        let dirs = s.objects_dirs();
        let mut listed: Vec<Listed> = objects
            .iter()
            .map(|(d, n)| (*d, dirs.open_frame(d).unwrap().1, Some(*n)))
            .collect();
        // One unknown size (an orphan) in the helper's first chunk, one
        // wrong listed size in this thread's second.
        listed[70].2 = None;
        listed[130].1 += 1;
        let seen = std::cell::Cell::new(0u64);
        let ok = verify_all(s.objects_dirs(), &listed, &|n| seen.set(seen.get() + n));
        let bad: Vec<usize> = (0..ok.len()).filter(|i| !ok[*i]).collect();
        assert_eq!(bad, [70, 130]);
        let good: u64 = objects
            .iter()
            .enumerate()
            .filter(|(i, _)| ![70, 130].contains(i))
            .map(|(_, (_, n))| n)
            .sum();
        assert_eq!(seen.get(), good);
    }
}
