//! The answer cache: an LRU of rendered answers with a TTL per entry, plus coalescing — identical
//! misses in flight at the same moment share one computation. The first request (the leader) runs
//! it in its own task; the others wait for its value. If the leader's client hangs up, the
//! computation is cancelled (a cancelled upstream call is not an upstream failure) and a waiting
//! follower starts it again.

use std::collections::HashMap;
use std::future::Future;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::FutureExt;
use lru::LruCache;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::watch;
use tokio::time::Instant;

/// How a value was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CacheStatus {
    /// Served from the cache.
    Hit,
    /// Computed for this request (or shared with an identical request in flight).
    Miss,
}

/// What a computation returns: the value and how long to keep it (`None`: do not cache).
pub(crate) type Computed<V> = (V, Option<Duration>);

struct Entry<V> {
    value: V,
    expires: Instant,
}

type Flight<V> = Arc<watch::Sender<Option<V>>>;

struct Inner<V> {
    entries: Option<LruCache<String, Entry<V>>>,
    in_flight: HashMap<String, Flight<V>>,
}

/// The cache. Cheap to clone.
pub(crate) struct AnswerCache<V> {
    inner: Arc<Mutex<Inner<V>>>,
    size_gauge: Gauge,
    coalesced: Counter,
}

impl<V> Clone for AnswerCache<V> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            size_gauge: self.size_gauge.clone(),
            coalesced: self.coalesced.clone(),
        }
    }
}

/// The computation's task ended without a value (it panicked): the caller reports an internal error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the shared computation ended without an answer")]
pub(crate) struct ComputationLost;

impl<V: Clone + Send + Sync + 'static> AnswerCache<V> {
    /// A cache of `capacity` entries (0 disables storage; coalescing still works). `size_gauge`
    /// always shows the current number of entries.
    pub(crate) fn new(capacity: usize, size_gauge: Gauge, coalesced: Counter) -> Self {
        size_gauge.set(0);
        Self {
            inner: Arc::new(Mutex::new(Inner {
                entries: NonZeroUsize::new(capacity).map(LruCache::new),
                in_flight: HashMap::new(),
            })),
            size_gauge,
            coalesced,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner<V>> {
        // A panic while holding this lock leaves plain data behind; keep serving.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn publish_size(&self, inner: &Inner<V>) {
        let len = inner.entries.as_ref().map_or(0, LruCache::len);
        self.size_gauge.set(i64::try_from(len).unwrap_or(i64::MAX));
    }

    /// The live value under `key`, if any (an expired entry is removed on the way).
    pub(crate) fn get(&self, key: &str) -> Option<V> {
        let mut inner = self.lock();
        let entries = inner.entries.as_mut()?;
        let entry = entries.get(key)?;
        if entry.expires > Instant::now() {
            return Some(entry.value.clone());
        }
        entries.pop(key);
        self.publish_size(&inner);
        None
    }

    /// Stores `value` under `key` for `ttl`.
    #[cfg(test)]
    pub(crate) fn insert(&self, key: String, value: V, ttl: Duration) {
        let mut inner = self.lock();
        if let Some(entries) = inner.entries.as_mut() {
            entries.put(
                key,
                Entry {
                    value,
                    expires: Instant::now() + ttl,
                },
            );
        }
        self.publish_size(&inner);
    }

    /// Number of entries now.
    pub(crate) fn len(&self) -> usize {
        self.lock().entries.as_ref().map_or(0, LruCache::len)
    }

    /// Drops every entry whose key `matches`; returns how many went.
    pub(crate) fn purge(&self, matches: impl Fn(&str) -> bool) -> usize {
        let mut inner = self.lock();
        let mut purged = 0;
        if let Some(entries) = inner.entries.as_mut() {
            let doomed: Vec<String> = entries
                .iter()
                .filter(|(k, _)| matches(k))
                .map(|(k, _)| k.clone())
                .collect();
            purged = doomed.len();
            for key in doomed {
                entries.pop(&key);
            }
        }
        self.publish_size(&inner);
        purged
    }

    /// Drops every expired entry (run periodically so `cache_size` does not count dead entries).
    pub(crate) fn purge_expired(&self) {
        let now = Instant::now();
        let mut inner = self.lock();
        if let Some(entries) = inner.entries.as_mut() {
            let dead: Vec<String> = entries
                .iter()
                .filter(|(_, e)| e.expires <= now)
                .map(|(k, _)| k.clone())
                .collect();
            for key in dead {
                entries.pop(&key);
            }
        }
        self.publish_size(&inner);
    }

    /// The cached value, or the result of `compute` — shared with every identical request that
    /// arrives while it runs. `compute` is called at most once per flight.
    pub(crate) async fn get_or_compute<F, Fut>(
        &self,
        key: &str,
        compute: F,
    ) -> Result<(V, CacheStatus), ComputationLost>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Computed<V>>,
    {
        if let Some(value) = self.get(key) {
            return Ok((value, CacheStatus::Hit));
        }
        let mut compute = Some(compute);
        // A follower whose leader went away (its client hung up) tries again and may lead itself.
        for _ in 0..3 {
            let step = {
                let mut inner = self.lock();
                if let Some(value) = inner
                    .entries
                    .as_mut()
                    .and_then(|e| e.get(key))
                    .filter(|e| e.expires > Instant::now())
                    .map(|e| e.value.clone())
                {
                    return Ok((value, CacheStatus::Hit));
                }
                if let Some(flight) = inner.in_flight.get(key) {
                    self.coalesced.inc();
                    Step::Follow(flight.subscribe())
                } else {
                    let Some(compute) = compute.take() else {
                        return Err(ComputationLost);
                    };
                    let sender = Arc::new(watch::channel(None).0);
                    inner.in_flight.insert(key.to_owned(), Arc::clone(&sender));
                    Step::Lead(sender, compute)
                }
            };
            match step {
                Step::Lead(sender, compute) => {
                    let value = self.lead(key, sender, compute()).await?;
                    return Ok((value, CacheStatus::Miss));
                }
                Step::Follow(mut receiver) => {
                    let shared = match receiver.wait_for(Option::is_some).await {
                        Ok(value) => value.clone(),
                        Err(_) => None,
                    };
                    if let Some(value) = shared {
                        return Ok((value, CacheStatus::Miss));
                    }
                }
            }
        }
        Err(ComputationLost)
    }

    /// Runs the computation in the leader's own task (no hand-off to another task: a miss is
    /// latency-bound) and shares its value with the followers.
    async fn lead<Fut>(&self, key: &str, sender: Flight<V>, work: Fut) -> Result<V, ComputationLost>
    where
        Fut: Future<Output = Computed<V>>,
    {
        // Whatever happens — an answer, the leader's client hanging up (this future dropped), a
        // panic — the flight leaves the map, so the key never points at a dead computation and
        // followers, seeing the sender gone, start again.
        let _leave = LeaveFlight {
            cache: self.clone(),
            key: key.to_owned(),
            sender: Arc::clone(&sender),
        };
        let (value, ttl) = std::panic::AssertUnwindSafe(work)
            .catch_unwind()
            .await
            .map_err(|_| ComputationLost)?;
        {
            let mut inner = self.lock();
            if let (Some(ttl), Some(entries)) = (ttl, inner.entries.as_mut()) {
                entries.put(
                    key.to_owned(),
                    Entry {
                        value: value.clone(),
                        expires: Instant::now() + ttl,
                    },
                );
            }
            leave_flight(&mut inner, key, &sender);
            self.publish_size(&inner);
        }
        sender.send_replace(Some(value.clone()));
        Ok(value)
    }
}

enum Step<V, F> {
    Lead(Flight<V>, F),
    Follow(watch::Receiver<Option<V>>),
}

/// Removes `key`'s flight from the map if it is still this one.
fn leave_flight<V>(inner: &mut Inner<V>, key: &str, sender: &Flight<V>) {
    if inner
        .in_flight
        .get(key)
        .is_some_and(|current| Arc::ptr_eq(current, sender))
    {
        inner.in_flight.remove(key);
    }
}

struct LeaveFlight<V: Clone + Send + Sync + 'static> {
    cache: AnswerCache<V>,
    key: String,
    sender: Flight<V>,
}

impl<V: Clone + Send + Sync + 'static> Drop for LeaveFlight<V> {
    fn drop(&mut self) {
        let mut inner = self.cache.lock();
        leave_flight(&mut inner, &self.key, &self.sender);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn cache(capacity: usize) -> AnswerCache<u32> {
        AnswerCache::new(capacity, Gauge::default(), Counter::default())
    }

    #[tokio::test(start_paused = true)]
    async fn entries_expire_after_their_ttl() {
        let c = cache(10);
        c.insert("k".into(), 1, Duration::from_secs(60));
        assert_eq!(c.get("k"), Some(1));
        tokio::time::advance(Duration::from_secs(61)).await;
        assert_eq!(c.get("k"), None);
        assert_eq!(c.size_gauge.get(), 0, "the gauge follows the expiry");
    }

    #[tokio::test(start_paused = true)]
    async fn capacity_evicts_the_least_recently_used() {
        let c = cache(2);
        c.insert("a".into(), 1, Duration::from_secs(60));
        c.insert("b".into(), 2, Duration::from_secs(60));
        c.get("a");
        c.insert("c".into(), 3, Duration::from_secs(60));
        assert_eq!(
            (c.get("a"), c.get("b"), c.get("c")),
            (Some(1), None, Some(3))
        );
        assert_eq!(c.size_gauge.get(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn purge_drops_expired_entries_and_updates_the_gauge() {
        let c = cache(10);
        c.insert("short".into(), 1, Duration::from_secs(5));
        c.insert("long".into(), 2, Duration::from_secs(500));
        tokio::time::advance(Duration::from_secs(6)).await;
        c.purge_expired();
        assert_eq!(c.len(), 1);
        assert_eq!(c.size_gauge.get(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn identical_misses_share_one_computation() {
        let c = cache(10);
        let calls = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..20 {
            let c = c.clone();
            let calls = Arc::clone(&calls);
            tasks.push(tokio::spawn(async move {
                c.get_or_compute("k", move || async move {
                    calls.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    (7, Some(Duration::from_secs(60)))
                })
                .await
                .unwrap()
            }));
        }
        for t in tasks {
            assert_eq!(t.await.unwrap().0, 7);
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(c.coalesced.get(), 19);
        assert_eq!(
            c.get_or_compute("k", || async { (0, None) }).await.unwrap(),
            (7, CacheStatus::Hit)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn uncacheable_results_are_shared_but_not_stored() {
        let c = cache(10);
        let (v, status) = c.get_or_compute("k", || async { (5, None) }).await.unwrap();
        assert_eq!((v, status), (5, CacheStatus::Miss));
        assert_eq!(c.get("k"), None);
        assert_eq!(c.size_gauge.get(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn computation_is_cancelled_when_every_waiter_leaves() {
        let c = cache(10);
        let finished = Arc::new(AtomicUsize::new(0));
        let f = Arc::clone(&finished);
        let waiter = tokio::spawn({
            let c = c.clone();
            async move {
                c.get_or_compute("k", move || async move {
                    tokio::time::sleep(Duration::from_secs(10)).await;
                    f.fetch_add(1, Ordering::SeqCst);
                    (1, Some(Duration::from_secs(60)))
                })
                .await
            }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        waiter.abort();
        tokio::time::sleep(Duration::from_secs(20)).await;
        assert_eq!(finished.load(Ordering::SeqCst), 0);
        assert!(c.lock().in_flight.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_follower_takes_over_when_the_leader_hangs_up() {
        let c = cache(10);
        let leader = tokio::spawn({
            let c = c.clone();
            async move {
                c.get_or_compute("k", || async {
                    tokio::time::sleep(Duration::from_secs(10)).await;
                    (1, Some(Duration::from_secs(60)))
                })
                .await
            }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        let follower = tokio::spawn({
            let c = c.clone();
            async move {
                c.get_or_compute("k", || async {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    (2, Some(Duration::from_secs(60)))
                })
                .await
            }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        leader.abort();
        let (value, status) = follower.await.unwrap().unwrap();
        assert_eq!((value, status), (2, CacheStatus::Miss));
    }

    #[tokio::test(start_paused = true)]
    async fn a_panicking_computation_does_not_wedge_its_key() {
        let c = cache(10);
        let lost = c
            .get_or_compute("k", || async { panic!("computation bug") })
            .await;
        assert_eq!(lost, Err(ComputationLost));
        let (v, status) = c
            .get_or_compute("k", || async { (3, Some(Duration::from_secs(60))) })
            .await
            .unwrap();
        assert_eq!(
            (v, status),
            (3, CacheStatus::Miss),
            "the next request computes afresh"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn zero_capacity_disables_storage() {
        let c = cache(0);
        c.insert("k".into(), 1, Duration::from_secs(60));
        assert_eq!(c.get("k"), None);
        assert_eq!(c.len(), 0);
    }
}
