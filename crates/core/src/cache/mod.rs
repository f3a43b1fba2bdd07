//! The answer cache: an LRU of rendered answers with a TTL per entry, plus coalescing — identical
//! misses in flight at the same moment share one computation. The first request (the leader) runs
//! it in its own task; the others wait for its value. If the leader's client hangs up, the
//! computation is cancelled (a cancelled upstream call is not an upstream failure) and a waiting
//! follower starts it again.
//!
//! Two rules keep answers flowing when upstreams do not:
//! - **Stale-if-error.** A complete answer is kept for `stale` past its expiry. When a computation
//!   for its key fails outright ([`Keep::Never`]: every upstream failed), the last complete answer is
//!   served instead, marked [`CacheStatus::Stale`] with how long ago it expired. A partial answer
//!   never replaces a live complete one, and keeps the previous complete answer as its fallback.
//! - **Refresh-ahead.** A complete entry hit at least
//!   [`REFRESH_MIN_HITS`](entry::REFRESH_MIN_HITS) times is recomputed in the background once
//!   less than [`refresh_window`] of its life is left; the hit that notices it is answered from
//!   the cache at once. Popular queries never fall off the cache under load.
//!
//! A cache is bounded by its number of entries ([`AnswerCache::new`], the answers) or by the bytes
//! its values weigh ([`AnswerCache::weighted`], the pages the reader keeps: one page may be a
//! hundred times another); either way the least recently used entries go first.
//!
//! The parts: [`status`] (how a value was obtained), [`entry`] (an entry's life: keep, expiry,
//! stale fallback, refresh-ahead), [`store`] (the LRU under the lock and its byte accounting),
//! [`flight`] (coalescing identical misses).

mod entry;
mod flight;
mod status;
mod store;
#[cfg(test)]
mod tests;

use std::hash::Hash;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use lru::LruCache;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use tokio::time::Instant;

pub use entry::{refresh_window, Computed, Keep, Lifetime};
pub use status::{CacheStatus, CacheTier};

use store::{Found, Inner, Weighing};

/// The counters the cache keeps up to date.
#[derive(Debug, Clone, Default)]
pub struct CacheCounters {
    /// `cache_size`: entries now (stale fallbacks included).
    pub size: Gauge,
    /// `cache_coalesced_total`: requests that waited on an identical computation.
    pub coalesced: Counter,
    /// `cache_refreshes_total`: background refreshes started ahead of expiry.
    pub refreshes: Counter,
    /// The bytes the entries weigh (a weighted cache).
    pub bytes: Gauge,
}

/// The cache of values `V` under keys `K`. Cheap to clone.
pub struct AnswerCache<K, V> {
    inner: Arc<Mutex<Inner<K, V>>>,
    stale: Duration,
    counters: CacheCounters,
    weighing: Option<Weighing<V>>,
}

impl<K, V> Clone for AnswerCache<K, V> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            stale: self.stale,
            counters: self.counters.clone(),
            weighing: self.weighing,
        }
    }
}

/// The computation's task ended without a value (it panicked): the caller reports an internal error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the shared computation ended without an answer")]
pub struct ComputationLost;

/// What a cache key must be.
pub trait Key: Hash + Eq + Clone + Send + Sync + 'static {}
impl<K: Hash + Eq + Clone + Send + Sync + 'static> Key for K {}

impl<K: Key, V: Clone + Send + Sync + 'static> AnswerCache<K, V> {
    /// A cache of `capacity` entries (0 disables storage; coalescing still works) that keeps
    /// complete answers `stale` past their expiry. `counters.size` always shows the current number
    /// of entries.
    pub(crate) fn new(capacity: usize, stale: Duration, counters: CacheCounters) -> Self {
        counters.size.set(0);
        Self {
            inner: Arc::new(Mutex::new(Inner::new(
                NonZeroUsize::new(capacity).map(LruCache::new),
            ))),
            stale,
            counters,
            weighing: None,
        }
    }

    /// [`AnswerCache::new`], also keeping the weight of its entries, each weighed by `weigh`
    /// (bounded by entries still): `counters.bytes` and [`AnswerCache::weight`] show it.
    pub fn new_weighed(
        capacity: usize,
        weigh: fn(&V) -> usize,
        stale: Duration,
        counters: CacheCounters,
    ) -> Self {
        counters.bytes.set(0);
        Self {
            weighing: Some(Weighing {
                max: usize::MAX,
                weigh,
            }),
            ..Self::new(capacity, stale, counters)
        }
    }

    /// A cache of values weighing at most `max_bytes` together (0 disables storage), each value
    /// weighed by `weigh`; otherwise as [`AnswerCache::new`]. `counters.bytes` shows the weight.
    pub fn weighted(
        max_bytes: usize,
        weigh: fn(&V) -> usize,
        stale: Duration,
        counters: CacheCounters,
    ) -> Self {
        counters.size.set(0);
        counters.bytes.set(0);
        Self {
            inner: Arc::new(Mutex::new(Inner::new(
                (max_bytes > 0).then(LruCache::unbounded),
            ))),
            stale,
            counters,
            weighing: Some(Weighing {
                max: max_bytes,
                weigh,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner<K, V>> {
        // A panic while holding this lock leaves plain data behind; keep serving.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn publish_size(&self, inner: &Inner<K, V>) {
        self.counters
            .size
            .set(i64::try_from(inner.len()).unwrap_or(i64::MAX));
        if self.weighing.is_some() {
            self.counters
                .bytes
                .set(i64::try_from(inner.weight).unwrap_or(i64::MAX));
        }
    }

    /// The live value under `key`, if any (a dead entry is removed on the way).
    pub fn get_live(&self, key: &K) -> Option<V> {
        let mut inner = self.lock();
        match self.find(&mut inner, key, Instant::now()) {
            Found::Live { value, .. } => Some(value),
            Found::Nothing => None,
        }
    }

    /// Stores `value` under `key` as `keep` says.
    #[cfg(test)]
    pub(crate) fn insert(&self, key: &K, value: V, keep: Keep) {
        let mut inner = self.lock();
        self.store(&mut inner, key, value, keep, Instant::now());
        self.publish_size(&inner);
    }

    /// Number of entries now (stale fallbacks included).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What the entries weigh together (0 unless the cache weighs its values).
    pub fn weight(&self) -> usize {
        self.lock().weight
    }

    /// Drops every entry whose key `matches`; returns how many went.
    pub fn purge(&self, matches: impl Fn(&K) -> bool) -> usize {
        let mut inner = self.lock();
        let doomed: Vec<K> = inner.entries.as_ref().map_or_else(Vec::new, |entries| {
            entries
                .iter()
                .filter(|(k, _)| matches(k))
                .map(|(k, _)| k.clone())
                .collect()
        });
        let purged = doomed.len();
        for key in doomed {
            inner.take(&key);
        }
        self.publish_size(&inner);
        purged
    }

    /// Drops every dead entry — expired, and past its stale window — (run periodically so
    /// `cache_size` does not count them).
    pub fn purge_expired(&self) {
        let now = Instant::now();
        let mut inner = self.lock();
        let dead: Vec<K> = inner.entries.as_ref().map_or_else(Vec::new, |entries| {
            entries
                .iter()
                .filter(|(_, e)| e.is_dead(now))
                .map(|(k, _)| k.clone())
                .collect()
        });
        for key in dead {
            inner.take(&key);
        }
        self.publish_size(&inner);
    }
}
