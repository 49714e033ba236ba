//! Writing a pack: frames appended to one temp in `tmp/`, hashed as they
//! go, then an index written beside it. Nothing here is published; the
//! batch that owns the temps publishes or removes them.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};

use super::index::{self, Entry, MAX_ENTRIES};
use crate::error::{Result, StoreError};
use coffer_base::digest::{Digest, Hasher};
use coffer_base::dir::Dir;
use coffer_base::temp::temp_name;

/// A pack closes before a frame would take it past this many bytes: small
/// enough that gc rewrites one in a moment and a bucket stores it in one
/// PUT, large enough that a million small objects make a few dozen packs.
pub const PACK_MAX_BYTES: u64 = 64 << 20;

/// A pack being written in `tmp/`.
pub struct PackWriter {
    /// The temp's name in `tmp/`.
    pub tmp_name: String,
    out: BufWriter<File>,
    hasher: Hasher,
    entries: Vec<Entry>,
}

/// A pack temp that is complete: its frames, its digest and its entries
/// (in the order they were written).
#[derive(Debug)]
pub struct PackTemp {
    /// The pack's name in `tmp/`.
    pub tmp_name: String,
    /// SHA-256 of its bytes.
    pub digest: Digest,
    /// Its length.
    pub size: u64,
    /// What it holds, in write order.
    pub entries: Vec<Entry>,
}

/// A sealed pack: the pack temp and its index temp.
#[derive(Debug)]
pub struct Sealed {
    /// The pack.
    pub pack: PackTemp,
    /// The index's name in `tmp/`.
    pub idx_tmp: String,
}

impl PackWriter {
    /// Starts a pack temp in `tmp`.
    pub fn create(tmp: &Dir) -> Result<PackWriter> {
        let tmp_name = temp_name("pack");
        let f = tmp
            .create_new(&tmp_name, 0o444)
            .map_err(|e| StoreError::io(tmp.join(&tmp_name), "create temp", e))?;
        Ok(PackWriter {
            tmp_name,
            out: BufWriter::with_capacity(256 << 10, f),
            hasher: Hasher::new(),
            entries: Vec::new(),
        })
    }

    /// Bytes written so far.
    pub fn len(&self) -> u64 {
        self.hasher.len()
    }

    /// True before the first frame.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether `stored` more bytes (one more frame) still fit.
    pub fn fits(&self, stored: u64) -> bool {
        self.is_empty()
            || (self.len() + stored <= PACK_MAX_BYTES && (self.entries.len() as u64) < MAX_ENTRIES)
    }

    /// Appends the frame of `digest` (`size` raw bytes); returns its entry.
    pub fn append(&mut self, tmp: &Dir, digest: Digest, size: u64, frame: &[u8]) -> Result<Entry> {
        let entry = Entry {
            digest,
            offset: self.len(),
            stored: frame.len() as u64,
            size,
        };
        self.out
            .write_all(frame)
            .map_err(|e| StoreError::io(tmp.join(&self.tmp_name), "write temp", e))?;
        self.hasher.update(frame);
        self.entries.push(entry);
        Ok(entry)
    }

    /// Closes the temp (flushed, not synced).
    pub fn finish(self, tmp: &Dir) -> Result<PackTemp> {
        let PackWriter {
            tmp_name,
            out,
            hasher,
            entries,
        } = self;
        if let Err(e) = out.into_inner() {
            let _ = tmp.remove_file(&tmp_name);
            return Err(StoreError::io(
                tmp.join(&tmp_name),
                "write temp",
                e.into_error(),
            ));
        }
        let (digest, size) = hasher.finish();
        Ok(PackTemp {
            tmp_name,
            digest,
            size,
            entries,
        })
    }
}

impl PackTemp {
    /// Writes the index temp beside the pack temp.
    pub fn seal(self, tmp: &Dir) -> Result<Sealed> {
        let mut entries = self.entries.clone();
        let bytes = index::encode(self.digest, self.size, &mut entries);
        let idx_tmp = temp_name("idx");
        let mut f = tmp
            .create_new(&idx_tmp, 0o444)
            .map_err(|e| StoreError::io(tmp.join(&idx_tmp), "create temp", e))?;
        if let Err(e) = f.write_all(&bytes) {
            let _ = tmp.remove_file(&idx_tmp);
            return Err(StoreError::io(tmp.join(&idx_tmp), "write temp", e));
        }
        Ok(Sealed {
            pack: self,
            idx_tmp,
        })
    }

    /// Reads the frame of `entry` back from the temp.
    pub fn read_frame(&self, tmp: &Dir, entry: &Entry) -> Result<Vec<u8>> {
        let path = || tmp.join(&self.tmp_name);
        let mut f = tmp
            .open_file(&self.tmp_name)
            .map_err(|e| StoreError::io(path(), "open temp", e))?;
        f.seek(SeekFrom::Start(entry.offset))
            .map_err(|e| StoreError::io(path(), "seek", e))?;
        let mut frame = vec![0u8; entry.stored as usize];
        f.read_exact(&mut frame)
            .map_err(|e| StoreError::io(path(), "read temp", e))?;
        Ok(frame)
    }

    /// Removes the temp.
    pub fn discard(&self, tmp: &Dir) {
        let _ = tmp.remove_file(&self.tmp_name);
    }
}

impl Sealed {
    /// Removes both temps.
    pub fn discard(&self, tmp: &Dir) {
        self.pack.discard(tmp);
        let _ = tmp.remove_file(&self.idx_tmp);
    }
}

/// Packs filled one after another: a frame that would not fit the open
/// pack closes it and starts the next.
#[derive(Default)]
pub struct PackSeq {
    open: Option<PackWriter>,
    full: Vec<PackTemp>,
}

impl PackSeq {
    /// Appends a frame; returns the number of the pack it went into (in
    /// the order [`PackSeq::finish`] returns them) and its entry.
    pub fn append(
        &mut self,
        tmp: &Dir,
        digest: Digest,
        size: u64,
        frame: &[u8],
    ) -> Result<(usize, Entry)> {
        if self
            .open
            .as_ref()
            .is_some_and(|w| !w.fits(frame.len() as u64))
        {
            let full = self.open.take().expect("checked").finish(tmp)?;
            self.full.push(full);
        }
        let w = match &mut self.open {
            Some(w) => w,
            None => self.open.insert(PackWriter::create(tmp)?),
        };
        Ok((self.full.len(), w.append(tmp, digest, size, frame)?))
    }

    /// Closes the open pack; returns every pack temp, in order. On error
    /// no temp is left.
    pub fn finish(mut self, tmp: &Dir) -> Result<Vec<PackTemp>> {
        if let Some(w) = self.open.take() {
            match w.finish(tmp) {
                Ok(p) => self.full.push(p),
                Err(e) => {
                    self.discard(tmp);
                    return Err(e);
                }
            }
        }
        Ok(std::mem::take(&mut self.full))
    }

    /// Removes every temp.
    pub fn discard(&mut self, tmp: &Dir) {
        if let Some(w) = self.open.take() {
            let _ = tmp.remove_file(&w.tmp_name);
        }
        self.full.drain(..).for_each(|p| p.discard(tmp));
    }
}
