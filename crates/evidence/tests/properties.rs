//! Property tests for the path and archive validators, which face
//! untrusted input. Case counts are small so CI stays fast; raise
//! PROPTEST_CASES to soak.

use coffer_evidence::archive::{
    check_member_name, read_archive, ArchiveError, ArchiveLimits, Compression, ANY_NAME,
};
use coffer_evidence::bundle::safe_path::check_relative_path;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Every path the validator accepts is relative, has no empty, `.` or
    /// `..` segment, and stays within the limits.
    #[test]
    fn accepted_paths_are_safe(p in "[a-zA-Z0-9./_\\-]{0,40}") {
        if check_relative_path(&p).is_ok() {
            prop_assert!(!p.starts_with('/'));
            prop_assert!(p.split('/').all(|s| !s.is_empty() && s != "." && s != ".."));
            prop_assert!(p.len() <= 960);
        }
        if check_member_name(p.as_bytes(), false).is_ok() {
            prop_assert!(!p.starts_with('/'));
            prop_assert!(p.split('/').all(|s| !s.is_empty() && s != "." && s != ".."));
        }
    }

    /// Arbitrary bytes as a fixture archive never panic and never read past
    /// the compressed limit.
    #[test]
    fn archive_reader_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let limits = ArchiveLimits { max_compressed: 256, max_expanded: 4096, max_members: 8 };
        let r = read_archive(&mut &bytes[..], limits, BOTH, ANY_NAME, &mut drain);
        if bytes.len() > 256 {
            prop_assert!(r.is_err());
        }
    }

    /// A real archive, gzip or zstd, with bytes flipped, cut or appended:
    /// never a panic, never more than the limits, and every refusal has a
    /// documented archive code.
    #[test]
    fn damaged_archives_are_refused_with_an_archive_code(
        zstd in any::<bool>(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 0..4),
        cut in prop::option::of(any::<prop::sample::Index>()),
        tail in prop::collection::vec(any::<u8>(), 0..4),
    ) {
        let mut bytes = sample_archive(zstd);
        for (at, x) in &flips {
            let i = at.index(bytes.len());
            bytes[i] ^= x;
        }
        if let Some(at) = cut {
            bytes.truncate(at.index(bytes.len()));
        }
        bytes.extend(&tail);
        let limits = ArchiveLimits { max_compressed: 1 << 20, max_expanded: 1 << 20, max_members: 8 };
        let mut seen = 0u64;
        let r = read_archive(&mut &bytes[..], limits, BOTH, ANY_NAME, &mut |_, r| {
            seen += std::io::copy(r, &mut std::io::sink()).map_err(|e| ArchiveError { code: "io.archive_read", member: String::new(), message: e.to_string() })?;
            Ok(())
        });
        prop_assert!(seen <= limits.max_expanded);
        if flips.is_empty() && cut.is_none() && tail.is_empty() {
            prop_assert!(r.is_ok());
        }
        if let Err(e) = r {
            prop_assert!(
                e.code.starts_with("validation.archive_")
                    || e.code.starts_with("limit.archive_")
                    || e.code == "validation.device_name"
                    || e.code == "io.archive_read",
                "{e:?}"
            );
        }
    }
}

const BOTH: &[Compression] = &[Compression::Gzip, Compression::Zstd];

fn drain(
    _: &coffer_evidence::archive::Member,
    r: &mut dyn std::io::Read,
) -> Result<(), ArchiveError> {
    std::io::copy(r, &mut std::io::sink())
        .map(|_| ())
        .map_err(|e| ArchiveError {
            code: "io.archive_read",
            member: String::new(),
            message: e.to_string(),
        })
}

/// A small archive of two files and a directory, gzip or zstd.
fn sample_archive(zstd: bool) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (name, data) in [
        ("README.md", &b"hello\n"[..]),
        ("src/lib.rs", b"pub fn f() {}\n"),
    ] {
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o644);
        h.set_size(data.len() as u64);
        b.append_data(&mut h, name, data).unwrap();
    }
    let tar_bytes = b.into_inner().unwrap();
    if zstd {
        zstd::encode_all(&tar_bytes[..], 3).unwrap()
    } else {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, &tar_bytes).unwrap();
        gz.finish().unwrap()
    }
}
