//! Export unpack never panics, never publishes a tree that fails
//! verification, and leaves nothing behind when it refuses.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("in.tar.zst");
    std::fs::write(&archive, data).unwrap();
    let dest = dir.path().join("out");
    match coffer_export::pack::unpack(&archive, &dest) {
        Ok(_) => {
            let exp = coffer_export::readback::Expectations::default();
            assert!(coffer_export::readback::verify(&dest, &exp).is_ok());
        }
        Err(_) => {
            assert!(!dest.exists());
            let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
            assert_eq!(left.len(), 1, "only the input remains");
        }
    }
});
