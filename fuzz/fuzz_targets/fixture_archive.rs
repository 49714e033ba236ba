//! The bounded fixture reader never panics and never reads past its limits.
#![no_main]
use coffer_evidence::archive::{read_archive, ArchiveError, ArchiveLimits, Compression, ANY_NAME};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let limits = ArchiveLimits {
        max_compressed: 1 << 16,
        max_expanded: 1 << 20,
        max_members: 64,
    };
    let mut expanded = 0u64;
    let formats = [Compression::Gzip, Compression::Zstd];
    let _ = read_archive(&mut &data[..], limits, &formats, ANY_NAME, &mut |_, r| {
        let n = std::io::copy(r, &mut std::io::sink()).map_err(|e| ArchiveError {
            code: "io.archive_read",
            member: String::new(),
            message: e.to_string(),
        })?;
        expanded += n;
        Ok(())
    });
    assert!(expanded <= limits.max_expanded);
});
