//! A capacity limit for the simulated instance, so that one instance saturates the way a real
//! SearXNG does (one process answers 50–90 searches per second on two cores, shared/spec/SEARXNG.md):
//! at most `workers` searches are served at once, each occupying its worker for `service_time`
//! before it is planned and answered; the others queue. The instance then answers at most
//! `workers / service_time` searches per second, whatever the caller's concurrency — a pool of
//! such instances is what the benchmark harness loads to show the gateway's throughput growing with
//! the pool. Off unless a caller sets it ([`super::SimulatedSearxng::set_capacity`]).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

/// How much one simulated instance can serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capacity {
    /// Searches served at the same time; the rest wait their turn.
    pub workers: usize,
    /// How long each search occupies its worker before it is answered.
    pub service_time: Duration,
}

impl Capacity {
    /// The most searches per second the instance answers.
    pub fn searches_per_second(&self) -> f64 {
        self.workers as f64 / self.service_time.as_secs_f64().max(1e-9)
    }
}

/// The limit in force: its workers as semaphore permits.
#[derive(Debug, Clone)]
pub(super) struct Limit {
    workers: Arc<Semaphore>,
    service_time: Duration,
}

impl Limit {
    pub(super) fn new(capacity: Capacity) -> Self {
        Self {
            workers: Arc::new(Semaphore::new(capacity.workers.max(1))),
            service_time: capacity.service_time,
        }
    }

    /// Waits for a free worker, then holds it for the service time.
    pub(super) async fn serve(&self) {
        // The semaphore is never closed, so acquiring only fails if it were: then serve at once.
        let _worker = self.workers.acquire().await;
        tokio::time::sleep(self.service_time).await;
    }
}
