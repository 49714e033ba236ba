//! Property tests for the path and archive validators, which face
//! untrusted input. Case counts are small so CI stays fast; raise
//! PROPTEST_CASES to soak.

use coffer_evidence::bundle::safe_path::check_relative_path;
use coffer_evidence::packet::archive::{
    check_member_name, read_archive, ArchiveError, ArchiveLimits,
};
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
        let r = read_archive(&mut &bytes[..], limits, &mut |_, r| {
            std::io::copy(r, &mut std::io::sink()).map(|_| ()).map_err(|e| ArchiveError { code: "io.archive_read", member: String::new(), message: e.to_string() })
        });
        if bytes.len() > 256 {
            prop_assert!(r.is_err());
        }
    }
}
