//! Requests a fake is handling right now: arrived, and neither answered yet nor dropped because the
//! client closed the connection (hyper drops the handler then). A test reads it to know whether the
//! gateway still waits on a call, gave up on it, or had several calls out at once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A shared count of handlers running now.
#[derive(Debug, Clone, Default)]
pub(crate) struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    /// The count now.
    pub(crate) fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }

    /// Counts one handler until the returned guard drops.
    pub(crate) fn enter(&self) -> Guard {
        self.0.fetch_add(1, Ordering::SeqCst);
        Guard(Arc::clone(&self.0))
    }
}

/// One handler counted in flight.
pub(crate) struct Guard(Arc<AtomicUsize>);

impl Drop for Guard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}
