//! Per host: its breaker's key ([`HostName`]: a page's host and port, lower-case, never a metric
//! label — two services on one address are two hosts)
//! and how many direct reads may be in flight to it at once ([`HostSlots`],
//! `FETCH_PER_HOST_CONCURRENCY`) — one more waits for a slot, within its budget. Slots of hosts
//! nobody reads are dropped, so the map holds only hosts in use.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use gateway_core::breaker::{BreakerKey, BreakerKind};

/// A page's host (with its port when it is not the scheme's), as its breaker's key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct HostName(Arc<str>);

impl HostName {
    /// The host of `url`, lower-case, with a port that is not its scheme's default.
    pub(crate) fn of(url: &url::Url) -> Self {
        let host = url.host_str().unwrap_or("").to_ascii_lowercase();
        Self(Arc::from(match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host,
        }))
    }

    /// A host name as it is.
    #[cfg(test)]
    pub(crate) fn new(host: &str) -> Self {
        Self(Arc::from(host.to_ascii_lowercase()))
    }
}

impl BreakerKey for HostName {
    const KIND: BreakerKind = BreakerKind::Host;

    fn name(&self) -> &str {
        &self.0
    }
}

/// Hosts tracked before idle ones are swept.
const SWEEP_AT: usize = 1024;

/// The slots of every host being read.
#[derive(Debug)]
pub(crate) struct HostSlots {
    per_host: usize,
    hosts: Mutex<HashMap<HostName, Arc<Semaphore>>>,
}

impl HostSlots {
    /// `per_host` reads at once per host.
    pub(crate) fn new(per_host: usize) -> Self {
        Self {
            per_host: per_host.max(1),
            hosts: Mutex::new(HashMap::new()),
        }
    }

    /// A slot for `host`, waiting at most until `deadline`; `None` when none freed in time.
    pub(crate) async fn acquire(
        &self,
        host: &HostName,
        deadline: Instant,
    ) -> Option<OwnedSemaphorePermit> {
        let semaphore = {
            let mut hosts = self.hosts.lock().unwrap_or_else(PoisonError::into_inner);
            if hosts.len() >= SWEEP_AT {
                let full = self.per_host;
                hosts.retain(|_, s| Arc::strong_count(s) > 1 || s.available_permits() < full);
            }
            Arc::clone(
                hosts
                    .entry(host.clone())
                    .or_insert_with(|| Arc::new(Semaphore::new(self.per_host))),
            )
        };
        tokio::time::timeout_at(deadline, semaphore.acquire_owned())
            .await
            .ok()
            .and_then(Result::ok)
    }

    /// Hosts tracked now (tests).
    #[cfg(test)]
    fn tracked(&self) -> usize {
        self.hosts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_host_takes_at_most_its_reads_and_the_next_waits_for_one() {
        let slots = HostSlots::new(2);
        let host = HostName::new("Example.org");
        let later = Instant::now() + Duration::from_secs(5);
        let first = slots.acquire(&host, later).await.unwrap();
        let _second = slots.acquire(&host, later).await.unwrap();
        let other = slots.acquire(&HostName::new("other.org"), later).await;
        assert!(other.is_some(), "another host has slots of its own");
        let soon = Instant::now() + Duration::from_millis(100);
        assert!(
            slots.acquire(&host, soon).await.is_none(),
            "the third waits, then gives up"
        );
        let waiting = tokio::spawn({
            let slots = Arc::new(slots);
            let host = host.clone();
            async move { (slots.acquire(&host, later).await.is_some(), slots) }
        });
        tokio::time::advance(Duration::from_millis(10)).await;
        drop(first);
        let (got, slots) = waiting.await.unwrap();
        assert!(got, "a freed slot goes to the one waiting");
        assert_eq!(slots.tracked(), 2);
    }

    #[tokio::test]
    async fn idle_hosts_are_swept() {
        let slots = HostSlots::new(1);
        let later = Instant::now() + Duration::from_secs(1);
        for i in 0..SWEEP_AT + 10 {
            drop(
                slots
                    .acquire(&HostName::new(&format!("h{i}.example")), later)
                    .await,
            );
        }
        assert!(slots.tracked() <= 11, "{}", slots.tracked());
    }
}
