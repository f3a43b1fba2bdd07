//! Coalescing: identical misses in flight at the same moment share one computation. The first
//! request (the leader) runs it; the others follow its [`Flight`] and get its value. A leader
//! whose client hung up cancels the computation and leaves the flight, so a follower starts it
//! again; a panicking computation leaves it too. A popular entry's refresh ahead of expiry is a
//! flight in a task of its own.

use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use tokio::sync::watch;
use tokio::time::Instant;

use super::entry::{Computed, Keep, Lifetime};
use super::status::CacheStatus;
use super::store::{Flight, Found, Inner, Shared};
use super::{AnswerCache, ComputationLost, Key};

impl<K: Key, V: Clone + Send + Sync + 'static> AnswerCache<K, V> {
    /// The cached value, or the result of `compute` — shared with every identical request that
    /// arrives while it runs. `compute` is called at most once per flight: for this request's
    /// miss, or in the background for a refresh ahead of expiry (the hit is answered at once).
    /// The first lookup runs inside `lookup` (the request's `cache_lookup` span), which records
    /// whether it hit.
    pub async fn get_or_compute<F, Fut>(
        &self,
        key: &K,
        lookup: &tracing::Span,
        compute: F,
    ) -> Result<(V, CacheStatus), ComputationLost>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Computed<V>> + Send + 'static,
    {
        let mut compute = Some(compute);
        // A follower whose leader went away (its client hung up) tries again and may lead itself.
        for round in 0..3 {
            let step = {
                let _lookup = (round == 0).then(|| lookup.enter());
                let mut inner = self.lock();
                let found = self.find(&mut inner, key, Instant::now());
                if round == 0 {
                    lookup.record("hit", matches!(found, Found::Live { .. }));
                }
                if let Found::Live { value, refresh } = found {
                    if refresh {
                        if let Some(compute) = compute.take() {
                            self.refresh_in_background(&mut inner, key, compute());
                        }
                    }
                    return Ok((value, CacheStatus::Hit));
                }
                if let Some(flight) = inner.in_flight.get(key) {
                    self.counters.coalesced.inc();
                    Step::Follow(flight.subscribe())
                } else {
                    let Some(compute) = compute.take() else {
                        return Err(ComputationLost);
                    };
                    let sender = Arc::new(watch::channel(None).0);
                    inner.in_flight.insert(key.clone(), Arc::clone(&sender));
                    Step::Lead(sender, compute)
                }
            };
            match step {
                Step::Lead(sender, compute) => return self.lead(key, sender, compute()).await,
                Step::Follow(mut receiver) => {
                    let shared = match receiver.wait_for(Option::is_some).await {
                        Ok(value) => value.clone(),
                        Err(_) => None,
                    };
                    if let Some(served) = shared {
                        return Ok(served);
                    }
                }
            }
        }
        Err(ComputationLost)
    }

    /// Starts `work` as the key's flight in a task of its own (nobody waits for it; identical
    /// misses arriving meanwhile follow it as usual).
    fn refresh_in_background<Fut>(&self, inner: &mut Inner<K, V>, key: &K, work: Fut)
    where
        Fut: Future<Output = Computed<V>> + Send + 'static,
    {
        let sender = Arc::new(watch::channel(None).0);
        inner.in_flight.insert(key.clone(), Arc::clone(&sender));
        self.counters.refreshes.inc();
        let cache = self.clone();
        let key = key.clone();
        tokio::spawn(async move {
            let _ = cache.lead(&key, sender, work).await;
        });
    }

    /// Runs the computation (in the caller's own task: a miss is latency-bound), stores it as its
    /// [`Keep`] says, and shares what is served with the followers — the computed value, or the
    /// last complete answer when the computation failed outright.
    async fn lead<Fut>(
        &self,
        key: &K,
        sender: Flight<V>,
        work: Fut,
    ) -> Result<(V, CacheStatus), ComputationLost>
    where
        Fut: Future<Output = Computed<V>>,
    {
        // Whatever happens — an answer, the leader's client hanging up (this future dropped), a
        // panic — the flight leaves the map, so the key never points at a dead computation and
        // followers, seeing the sender gone, start again.
        let _leave = LeaveFlight {
            cache: self.clone(),
            key: key.clone(),
            sender: Arc::clone(&sender),
        };
        let (value, keep) = std::panic::AssertUnwindSafe(work)
            .catch_unwind()
            .await
            .map_err(|_| ComputationLost)?;
        let served = {
            let mut inner = self.lock();
            let now = Instant::now();
            let served = match keep {
                Keep::Never => self
                    .stale_answer(&mut inner, key, now)
                    .unwrap_or((value, CacheStatus::Miss)),
                Keep::Partial(_) | Keep::Complete(_) => {
                    self.store(&mut inner, key, value.clone(), keep, now);
                    (value, CacheStatus::Miss)
                }
                Keep::Shared(lifetime) => {
                    let keep = match lifetime {
                        Lifetime::Partial(ttl) => Keep::Partial(ttl),
                        Lifetime::Complete(ttl) => Keep::Complete(ttl),
                    };
                    self.store(&mut inner, key, value.clone(), keep, now);
                    (value, CacheStatus::SharedHit)
                }
            };
            leave_flight(&mut inner, key, &sender);
            self.publish_size(&inner);
            served
        };
        sender.send_replace(Some(served.clone()));
        Ok(served)
    }
}

enum Step<V, F> {
    Lead(Flight<V>, F),
    Follow(watch::Receiver<Shared<V>>),
}

/// Removes `key`'s flight from the map if it is still this one.
fn leave_flight<K: Key, V>(inner: &mut Inner<K, V>, key: &K, sender: &Flight<V>) {
    if inner
        .in_flight
        .get(key)
        .is_some_and(|current| Arc::ptr_eq(current, sender))
    {
        inner.in_flight.remove(key);
    }
}

struct LeaveFlight<K: Key, V: Clone + Send + Sync + 'static> {
    cache: AnswerCache<K, V>,
    key: K,
    sender: Flight<V>,
}

impl<K: Key, V: Clone + Send + Sync + 'static> Drop for LeaveFlight<K, V> {
    fn drop(&mut self) {
        let mut inner = self.cache.lock();
        leave_flight(&mut inner, &self.key, &self.sender);
    }
}
