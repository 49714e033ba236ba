//! How many bytes the matchers visit: each rule's search, each decoded
//! view's pass, each literal sweep and multi-line reader adds the length
//! of what it reads. Export time follows it; a test doubles inputs built
//! to provoke repeated work (a label repeated thousands of times) and
//! checks that this count at most doubles, which a timing could not show
//! reliably. One relaxed add per matcher call.

use std::sync::atomic::{AtomicU64, Ordering};

static VISITED: AtomicU64 = AtomicU64::new(0);

/// Counts `n` bytes read by a matcher.
#[inline]
pub fn visit(n: usize) {
    VISITED.fetch_add(n as u64, Ordering::Relaxed);
}

/// Bytes visited by every thread of this process so far.
pub fn visited() -> u64 {
    VISITED.load(Ordering::Relaxed)
}
