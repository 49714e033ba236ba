//! The export key and everything keyed by it.
//!
//! One 32-byte secret per store (`keys/export.key`, made by `coffer init`)
//! or given with `--key-file`. Subkeys come from `blake3::derive_key` with
//! fixed context strings and the policy digest as part of the key material,
//! so pseudonyms differ between policies and nobody without the key can test
//! a guessed identity or secret against a pseudonym or fingerprint.

use coffer_base::codes;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use coffer_base::digest::Digest;

use crate::error::{ExportError, Result};

const IDENTITY_CONTEXT: &str = "coffer 2026-12 export identity pseudonym v1";
const FINGERPRINT_CONTEXT: &str = "coffer 2026-12 export secret fingerprint v1";
const USER_CONTEXT: &str = "coffer 2026-12 export local user order v1";

/// The secret export key.
#[derive(Clone)]
pub struct ExportKey([u8; 32]);

impl std::fmt::Debug for ExportKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ExportKey(..)")
    }
}

impl ExportKey {
    /// A key from raw bytes (tests).
    pub fn from_bytes(b: [u8; 32]) -> ExportKey {
        ExportKey(b)
    }

    /// Reads a key file the user named: 32 raw bytes, or 64 hex digits (and
    /// an optional newline). It must be a regular file that group and
    /// others cannot read.
    pub fn load(path: &Path) -> Result<ExportKey> {
        ExportKey::read(coffer_base::input::open(path)?, path)
    }

    /// Reads the store's own key, `keys/export.key`, without following a
    /// symlink at `keys/` or at the file.
    pub fn of_store(store: &coffer_store::Store) -> Result<ExportKey> {
        let (f, path) = store.open_export_key()?;
        ExportKey::read(f, &path)
    }

    /// Checks an open key file's mode and reads the key from it.
    fn read(f: std::fs::File, path: &Path) -> Result<ExportKey> {
        let meta = f.metadata().map_err(|e| ExportError::io(path, "stat", e))?;
        let shown = coffer_base::input::escaped(path);
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(ExportError::usage(
                codes::usage::KEY_FILE_MODE,
                &shown,
                "the key file is readable by group or others (chmod 600)",
            ));
        }
        let mut buf = Vec::new();
        f.take(130)
            .read_to_end(&mut buf)
            .map_err(|e| ExportError::io(path, "read", e))?;
        if buf.len() == 32 {
            let mut k = [0u8; 32];
            k.copy_from_slice(&buf);
            return Ok(ExportKey(k));
        }
        let text = std::str::from_utf8(&buf).unwrap_or("").trim_end();
        let mut k = [0u8; 32];
        if text.len() == 64 && hex::decode_to_slice(text, &mut k).is_ok() {
            return Ok(ExportKey(k));
        }
        Err(ExportError::usage(
            codes::usage::KEY_FILE,
            &shown,
            "a key file holds 32 raw bytes or 64 hex digits",
        ))
    }

    fn derive(&self, context: &str, policy_digest: &str) -> [u8; 32] {
        let mut material = self.0.to_vec();
        material.extend_from_slice(policy_digest.as_bytes());
        blake3::derive_key(context, &material)
    }

    /// The keys an export uses, bound to its policy.
    pub fn for_policy(&self, policy_digest: &Digest) -> Keys {
        // Keys are derived from the digest's text form, as they always were.
        let policy_digest = &policy_digest.to_string();
        Keys {
            identity: self.derive(IDENTITY_CONTEXT, policy_digest),
            fingerprint: self.derive(FINGERPRINT_CONTEXT, policy_digest),
            user: self.derive(USER_CONTEXT, policy_digest),
        }
    }
}

/// Subkeys of one export.
#[derive(Clone)]
pub struct Keys {
    identity: [u8; 32],
    fingerprint: [u8; 32],
    user: [u8; 32],
}

fn keyed(key: &[u8; 32], parts: &[&[u8]]) -> blake3::Hash {
    let mut h = blake3::Hasher::new_keyed(key);
    for p in parts {
        // Length-prefixed so ("ab","c") and ("a","bc") differ.
        h.update(&(p.len() as u64).to_le_bytes());
        h.update(p);
    }
    h.finalize()
}

impl Keys {
    /// 32 pseudonym bytes for `(namespace, id)`.
    pub fn pseudonym(&self, namespace: &str, id: &str) -> [u8; 32] {
        *keyed(&self.identity, &[namespace.as_bytes(), id.as_bytes()]).as_bytes()
    }

    /// The 8-hex keyed fingerprint placed in a secret's placeholder.
    pub fn fingerprint(&self, secret: &[u8]) -> String {
        hex::encode(&keyed(&self.fingerprint, &[secret]).as_bytes()[..4])
    }

    /// The order key of a local user name (users are numbered by it).
    pub fn user_order(&self, name: &str) -> [u8; 32] {
        *keyed(&self.user, &[name.as_bytes()]).as_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_outputs_depend_on_key_and_policy() {
        let a = ExportKey::from_bytes([1; 32]).for_policy(&Digest::of(b"aa"));
        let b = ExportKey::from_bytes([2; 32]).for_policy(&Digest::of(b"aa"));
        let c = ExportKey::from_bytes([1; 32]).for_policy(&Digest::of(b"bb"));
        assert_ne!(a.pseudonym("session", "x"), b.pseudonym("session", "x"));
        assert_ne!(a.pseudonym("session", "x"), c.pseudonym("session", "x"));
        assert_ne!(a.pseudonym("session", "x"), a.pseudonym("trace", "x"));
        assert_eq!(a.fingerprint(b"s"), a.fingerprint(b"s"));
        assert_eq!(a.fingerprint(b"s").len(), 8);
        assert_ne!(a.fingerprint(b"s"), b.fingerprint(b"s"));
    }

    #[test]
    fn key_file_forms_and_mode() {
        let dir = tempfile::tempdir().unwrap();
        let raw = dir.path().join("raw");
        std::fs::write(&raw, [7u8; 32]).unwrap();
        std::fs::set_permissions(&raw, std::fs::Permissions::from_mode(0o600)).unwrap();
        let hexf = dir.path().join("hex");
        std::fs::write(&hexf, format!("{}\n", hex::encode([7u8; 32]))).unwrap();
        std::fs::set_permissions(&hexf, std::fs::Permissions::from_mode(0o600)).unwrap();
        let k1 = ExportKey::load(&raw).unwrap().for_policy(&Digest::of(b"p"));
        let k2 = ExportKey::load(&hexf)
            .unwrap()
            .for_policy(&Digest::of(b"p"));
        assert_eq!(k1.fingerprint(b"x"), k2.fingerprint(b"x"));
        std::fs::set_permissions(&raw, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = ExportKey::load(&raw).unwrap_err();
        assert!(matches!(e, ExportError::Usage(ref i) if i[0].code == "usage.key_file_mode"));
        let short = dir.path().join("short");
        std::fs::write(&short, b"abc").unwrap();
        std::fs::set_permissions(&short, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(ExportKey::load(&short).is_err());
    }
}
