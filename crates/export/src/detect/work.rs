//! How many bytes the matchers visit: each rule's search, each decoded
//! view's pass, each literal sweep and multi-line reader adds the length
//! of what it reads. Export time follows it; a test doubles inputs built
//! to provoke repeated work (a label repeated thousands of times) and
//! checks that this count at most doubles, which a timing could not show
//! reliably. Counting is off until [`count`] turns it on: a shared counter
//! bumped by every thread on every string costs an export a few percent.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static COUNTING: AtomicBool = AtomicBool::new(false);
static VISITED: AtomicU64 = AtomicU64::new(0);

/// Turns counting on, for this process from now on.
pub fn count() {
    COUNTING.store(true, Ordering::Relaxed);
}

/// Counts `n` bytes read by a matcher, when counting is on.
#[inline]
pub fn visit(n: usize) {
    if COUNTING.load(Ordering::Relaxed) {
        VISITED.fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// Bytes visited by every thread of this process since counting began.
pub fn visited() -> u64 {
    VISITED.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_only_once_turned_on() {
        // Other tests of this binary may count too: only growth is checked.
        super::count();
        let before = super::visited();
        super::visit(10);
        assert!(super::visited() >= before + 10);
    }
}
