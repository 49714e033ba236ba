//! Names of the temp entries coffer creates before it publishes them.

use std::sync::atomic::{AtomicU64, Ordering};

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh temp name: `<prefix>.<pid>.<n>.<16 hex>`. The random part is
/// drawn once per process (names must not be guessable by other local
/// users); the counter makes each name unique within the process, and
/// `O_EXCL` guarantees no name is ever reused.
pub fn temp_name(prefix: &str) -> String {
    static PROCESS_TAG: std::sync::OnceLock<(u32, String)> = std::sync::OnceLock::new();
    let (pid, tag) = PROCESS_TAG.get_or_init(|| {
        let mut r = [0u8; 8];
        getrandom::getrandom(&mut r).expect("OS random source unavailable");
        (std::process::id(), hex::encode(r))
    });
    format!(
        "{prefix}.{pid}.{}.{tag}",
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}
