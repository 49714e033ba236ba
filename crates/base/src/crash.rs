//! Crash points for fault-injection tests.
//!
//! In debug builds (what `cargo test` runs), setting `COFFER_CRASH_AT=name`
//! or `name@N` aborts the process the first (or N-th) time execution passes
//! the named point, as a power cut or `kill -9` would stop it there. Release
//! builds compile every point to nothing. `tests/e2e/crash.rs` runs each
//! operation once per point and checks that the store recovers.
//!
//! `COFFER_PAUSE_AT=name:FILE` instead stops at the first pass of the
//! point: it creates FILE, then waits (at most a minute) until FILE is
//! removed. Tests of races between commands use it to run one command
//! exactly while another stands at a given step.

/// Marks a crash point.
#[inline]
pub fn point(name: &str) {
    #[cfg(debug_assertions)]
    {
        use std::sync::atomic::{AtomicU64, Ordering};
        use std::sync::OnceLock;
        static TARGET: OnceLock<Option<(String, u64)>> = OnceLock::new();
        static HITS: AtomicU64 = AtomicU64::new(0);
        let target = TARGET.get_or_init(|| {
            let v = std::env::var("COFFER_CRASH_AT").ok()?;
            Some(match v.split_once('@') {
                Some((n, k)) => (n.to_string(), k.parse().unwrap_or(1)),
                None => (v, 1),
            })
        });
        if let Some((want, nth)) = target {
            if want == name && HITS.fetch_add(1, Ordering::SeqCst) + 1 == *nth {
                std::process::abort();
            }
        }
        pause(name);
    }
    #[cfg(not(debug_assertions))]
    let _ = name;
}

/// Waits at the first pass of the point `COFFER_PAUSE_AT` names (see the
/// module documentation).
#[cfg(debug_assertions)]
fn pause(name: &str) {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::OnceLock;
    static TARGET: OnceLock<Option<(String, std::path::PathBuf)>> = OnceLock::new();
    static PASSED: AtomicBool = AtomicBool::new(false);
    let target = TARGET.get_or_init(|| {
        let v = std::env::var("COFFER_PAUSE_AT").ok()?;
        let (n, file) = v.split_once(':')?;
        Some((n.to_string(), file.into()))
    });
    let Some((want, file)) = target else { return };
    if want != name || PASSED.swap(true, Ordering::SeqCst) {
        return;
    }
    if std::fs::write(file, name).is_err() {
        return;
    }
    let start = std::time::Instant::now();
    while file.exists() && start.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
