//! Load shedding in front of the upstreams: at most `MAX_CONCURRENT_MISSES` fan-outs run at once, so
//! a burst of distinct cache misses cannot pile more concurrent searches onto SearXNG than it can
//! answer (one instance does 50–90 searches a second on two cores). A fan-out waits at most
//! `MAX_MISS_WAIT_MS` for a slot; then the request is shed with a fast 503 instead of queueing
//! behind work that will outlive the client's patience.
//!
//! Only the coalescing leader of a miss asks for a slot: a cache hit never reaches this module, and a
//! request that joins an identical fan-out already running shares it without a slot of its own. The
//! requests that joined a leader still waiting for its slot share that leader's admission too: one
//! wait and one decision for one piece of upstream work.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The fan-out slots. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct LoadAdmission {
    slots: Arc<Semaphore>,
    max_wait: Duration,
}

/// Every fan-out slot stayed taken for the whole wait: the request is shed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("every upstream fan-out slot is taken")]
pub struct Overloaded;

/// A fan-out slot, given back when dropped.
#[derive(Debug)]
pub(crate) struct Slot {
    _permit: OwnedSemaphorePermit,
}

impl LoadAdmission {
    /// `max` fan-outs at once; a further one waits at most `max_wait`.
    pub(crate) fn new(max: usize, max_wait: Duration) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(max)),
            max_wait,
        }
    }

    /// A slot now, or within the wait; [`Overloaded`] when none freed up in time.
    pub(crate) async fn admit(&self) -> Result<Slot, Overloaded> {
        if let Ok(permit) = Arc::clone(&self.slots).try_acquire_owned() {
            return Ok(Slot { _permit: permit });
        }
        if self.max_wait.is_zero() {
            return Err(Overloaded);
        }
        match tokio::time::timeout(self.max_wait, Arc::clone(&self.slots).acquire_owned()).await {
            Ok(Ok(permit)) => Ok(Slot { _permit: permit }),
            // The semaphore is never closed; a timeout is the wait running out.
            Ok(Err(_)) | Err(_) => Err(Overloaded),
        }
    }

    /// Slots free now.
    #[cfg(test)]
    fn free(&self) -> usize {
        self.slots.available_permits()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn slots_are_granted_up_to_the_cap_and_given_back_on_drop() {
        let admission = LoadAdmission::new(2, Duration::from_millis(100));
        let a = admission.admit().await.unwrap();
        let _b = admission.admit().await.unwrap();
        assert_eq!(admission.free(), 0);
        drop(a);
        assert_eq!(admission.free(), 1);
        assert!(admission.admit().await.is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn a_miss_that_finds_every_slot_taken_is_shed_when_its_wait_runs_out() {
        let admission = LoadAdmission::new(1, Duration::from_millis(250));
        let _held = admission.admit().await.unwrap();
        let started = tokio::time::Instant::now();
        assert_eq!(admission.admit().await.unwrap_err(), Overloaded);
        assert_eq!(started.elapsed(), Duration::from_millis(250));
    }

    #[tokio::test(start_paused = true)]
    async fn a_slot_freed_during_the_wait_goes_to_the_waiting_miss() {
        let admission = LoadAdmission::new(1, Duration::from_millis(250));
        let held = admission.admit().await.unwrap();
        let waiter = tokio::spawn({
            let admission = admission.clone();
            async move { admission.admit().await.map(drop) }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        drop(held);
        assert_eq!(waiter.await.unwrap(), Ok(()));
    }

    #[tokio::test(start_paused = true)]
    async fn with_no_wait_a_full_house_sheds_at_once() {
        let admission = LoadAdmission::new(1, Duration::ZERO);
        let _held = admission.admit().await.unwrap();
        let started = tokio::time::Instant::now();
        assert!(admission.admit().await.is_err());
        assert_eq!(started.elapsed(), Duration::ZERO);
    }
}
