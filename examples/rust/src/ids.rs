//! Invocation identities.
//!
//! There is exactly one counter in the whole process. It starts at 1, only ever grows,
//! and is never reset: not per runner, not per scenario. A number is taken only when an
//! observer is attached to an invocation, so unobserved and refused commands leave no
//! gap. The numbers carry no authority; they only let an observer keep the state of
//! concurrent invocations apart.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// The process-local number of one observed invocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InvocationId(u64);

impl InvocationId {
    /// The plain number.
    #[must_use]
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for InvocationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

static COUNTER: AtomicU64 = AtomicU64::new(1);

/// Take the next number. Only the session module calls this, when it opens a session
/// for an observer, so "an ID was taken" and "an observer is attached" are one event.
pub(crate) fn take() -> InvocationId {
    InvocationId(COUNTER.fetch_add(1, Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_strictly_increase() {
        let a = take();
        let b = take();
        assert!(b > a);
        assert!(a.get() >= 1);
    }
}
