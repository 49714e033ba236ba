//! A request to stop (SIGINT, SIGTERM), honoured by long work at safe
//! points.
//!
//! The binary registers the signals to raise [`flag`]; the libraries only
//! read it, with [`check`], at points where stopping leaves nothing
//! half-done: before a batch's next input, before a batch commits, before
//! a new tree's next file and before a new file or tree is renamed into
//! place. Work that stops there returns [`Interrupted`] through its usual
//! error path, so the guards that remove temp files on any error remove
//! them here too, and nothing becomes visible.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// Work stopped at a safe point because a stop was requested.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("interrupted")]
pub struct Interrupted;

fn shared() -> &'static Arc<AtomicBool> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    FLAG.get_or_init(|| Arc::new(AtomicBool::new(false)))
}

/// The flag a signal handler sets to request a stop.
pub fn flag() -> Arc<AtomicBool> {
    shared().clone()
}

/// Whether a stop was requested.
pub fn requested() -> bool {
    shared().load(Ordering::Relaxed)
}

/// `Err(Interrupted)` once a stop was requested: call it only where
/// stopping leaves nothing half-done.
pub fn check() -> Result<(), Interrupted> {
    if requested() {
        Err(Interrupted)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_fails_once_the_flag_is_raised() {
        // One process-wide flag: this test is the only one that raises it.
        assert_eq!(check(), Ok(()));
        flag().store(true, Ordering::Relaxed);
        assert_eq!(check(), Err(Interrupted));
        assert!(requested());
        flag().store(false, Ordering::Relaxed);
    }
}
