//! Batch lookups: what one line of `has --stdin` or `get --stdin` names,
//! resolved as `has` and `get` resolve a digest given on the command line
//! (a whole digest, with or without `sha256:`, or a unique prefix of at
//! least [`coffer_base::digest::MIN_PREFIX_HEX`] hex digits).

use coffer_base::digest::{hex_prefix, Digest};

use crate::error::Result;
use crate::store::Store;

/// Longest line a batch lookup reads as a name; a longer one is
/// [`Lookup::Invalid`] (a digest is 71 bytes).
pub const MAX_NAME_BYTES: usize = 256;

/// What a name resolves to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// The object is cataloged and its file is there.
    Present {
        /// The full digest.
        digest: Digest,
        /// Its size in bytes.
        size: u64,
    },
    /// No object has this digest or starts with this prefix (or its file
    /// is gone).
    Missing,
    /// The prefix starts more than one object's digest.
    Ambiguous,
    /// The name is neither a digest nor a prefix of one.
    Invalid,
}

impl Lookup {
    /// The word batch output prints for a name that is not present
    /// (`missing`, `ambiguous`, `invalid`), as `git cat-file --batch-check`
    /// prints `missing` and `ambiguous`; `None` when present.
    pub fn word(self) -> Option<&'static str> {
        match self {
            Lookup::Present { .. } => None,
            Lookup::Missing => Some("missing"),
            Lookup::Ambiguous => Some("ambiguous"),
            Lookup::Invalid => Some("invalid"),
        }
    }
}

impl Store {
    /// Resolves `name` (one line of a batch, trimmed) to an object, as
    /// [`Store::has`] judges presence: a catalog row and the object's file.
    pub fn lookup(&self, name: &str) -> Result<Lookup> {
        if name.len() > MAX_NAME_BYTES {
            return Ok(Lookup::Invalid);
        }
        let digest = match Digest::parse_typed(name) {
            Ok(d) => d,
            Err(_) => {
                let Some(hex) = hex_prefix(name) else {
                    return Ok(Lookup::Invalid);
                };
                match self.catalog().digests_with_prefix(&hex, 2)?.as_slice() {
                    [d] => *d,
                    [] => return Ok(Lookup::Missing),
                    _ => return Ok(Lookup::Ambiguous),
                }
            }
        };
        match self.catalog().object_size(&digest)? {
            Some(size) if self.file_exists(&digest)? => Ok(Lookup::Present { digest, size }),
            _ => Ok(Lookup::Missing),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Catalog, ObjectRow, Schema};
    use crate::store::PutOptions;
    use coffer_base::digest::MIN_PREFIX_HEX;

    fn store_with(contents: &[&[u8]]) -> (tempfile::TempDir, Store, Vec<Digest>) {
        let dir = tempfile::tempdir().unwrap();
        let (mut store, _) = Store::init(&dir.path().join("s"), &Schema::CAS).unwrap();
        let digests = contents
            .iter()
            .map(|c| {
                let mut r = *c;
                store
                    .put_reader(&mut r, PutOptions::default(), &|_| {})
                    .unwrap()
                    .digest
            })
            .collect();
        (dir, store, digests)
    }

    #[test]
    fn every_way_of_naming_an_object_resolves_and_the_rest_says_why_not() {
        let (_dir, store, ds) = store_with(&[b"one", b"two"]);
        let present = Lookup::Present {
            digest: ds[0],
            size: 3,
        };
        let hex = ds[0].hex();
        assert_eq!(store.lookup(&ds[0].to_string()).unwrap(), present);
        assert_eq!(store.lookup(&hex).unwrap(), present);
        assert_eq!(store.lookup(&hex.to_uppercase()).unwrap(), present);
        assert_eq!(store.lookup(&hex[..MIN_PREFIX_HEX]).unwrap(), present);
        let absent = Digest::of(b"three");
        assert_eq!(store.lookup(&absent.to_string()).unwrap(), Lookup::Missing);
        assert_eq!(store.lookup(&absent.hex()[..12]).unwrap(), Lookup::Missing);
        assert_eq!(store.lookup(&hex[..7]).unwrap(), Lookup::Invalid);
        assert_eq!(store.lookup("HEAD").unwrap(), Lookup::Invalid);
        assert_eq!(store.lookup(&"a".repeat(300)).unwrap(), Lookup::Invalid);
        assert_eq!(Lookup::Missing.word(), Some("missing"));
        assert_eq!(present.word(), None);
    }

    #[test]
    fn a_prefix_of_two_objects_is_ambiguous() {
        // Two digests sharing eight hex digits cannot be made by hashing;
        // their catalog rows are written directly.
        let (dir, store, _) = store_with(&[]);
        let mut catalog =
            Catalog::open(&dir.path().join("s/catalog.sqlite"), &Schema::CAS).unwrap();
        let row = |hex: String| ObjectRow {
            digest: Digest::from_hex(&hex).unwrap(),
            size: 1,
            stored_size: 10,
            first_seen_ms: 0,
        };
        let a = row(format!("00c0ffee{}", "a".repeat(56)));
        let b = row(format!("00c0ffee{}", "b".repeat(56)));
        catalog.record(&[(a, None), (b, None)]).unwrap();
        assert_eq!(store.lookup("00c0ffee").unwrap(), Lookup::Ambiguous);
        assert_eq!(
            store.lookup("sha256:00c0ffeea").unwrap(),
            Lookup::Missing,
            "cataloged, no file"
        );
    }

    #[test]
    fn an_object_whose_file_is_gone_is_missing() {
        let (dir, store, ds) = store_with(&[b"gone"]);
        let path = dir
            .path()
            .join("s/objects/sha256")
            .join(&ds[0].hex()[..2])
            .join(ds[0].hex());
        std::fs::remove_file(path).unwrap();
        assert_eq!(store.lookup(&ds[0].to_string()).unwrap(), Lookup::Missing);
    }
}
