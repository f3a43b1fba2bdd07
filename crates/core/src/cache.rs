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
//! - **Refresh-ahead.** A complete entry hit at least [`REFRESH_MIN_HITS`] times is recomputed in
//!   the background once less than [`refresh_window`] of its life is left; the hit that notices it
//!   is answered from the cache at once. Popular queries never fall off the cache under load.
//!
//! A cache is bounded by its number of entries ([`AnswerCache::new`], the answers) or by the bytes
//! its values weigh ([`AnswerCache::weighted`], the pages the reader keeps: one page may be a
//! hundred times another); either way the least recently used entries go first.

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
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
pub enum CacheStatus {
    /// Served from this process's cache.
    Hit,
    /// Served from the shared tier (`REDIS_URL`): another replica computed it.
    SharedHit,
    /// Computed for this request (or shared with an identical request in flight).
    Miss,
    /// The computation failed outright; this is the last complete answer, expired this long ago.
    Stale {
        /// How long ago it stopped being fresh.
        expired_for: Duration,
    },
}

impl CacheStatus {
    /// The `X-Cache` header value and log field: `hit`, `miss` or `stale`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hit | Self::SharedHit => "hit",
            Self::Miss => "miss",
            Self::Stale { .. } => "stale",
        }
    }

    /// Which tier a hit came from: the `X-Cache-Tier` header, and `explain`'s `cache.tier`.
    pub fn tier(self) -> Option<CacheTier> {
        match self {
            Self::Hit => Some(CacheTier::Local),
            Self::SharedHit => Some(CacheTier::Redis),
            Self::Miss | Self::Stale { .. } => None,
        }
    }
}

/// Where a cached answer was found. One word for each wherever it is shown: the `X-Cache-Tier`
/// header, `explain`'s `cache.tier`, the search's log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheTier {
    /// This process's own cache (a stale answer too: only the local cache keeps them).
    Local,
    /// The shared tier (`REDIS_URL`): another replica computed it.
    Redis,
}

impl CacheTier {
    /// `local` or `redis`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::Redis => "redis",
        }
    }
}

impl serde::Serialize for CacheTier {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// How long to keep a computed value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// A failure: never stored; the last complete answer is served stale instead, if there is one.
    Never,
    /// A partial answer: kept this long, never served stale, never replacing a live complete one.
    Partial(Duration),
    /// A complete answer: kept this long, then as the stale fallback for the stale window.
    Complete(Duration),
    /// Found in the shared tier: kept as `keep` says (what is left of its life there), and
    /// served as a [`CacheStatus::SharedHit`].
    Shared(Lifetime),
}

/// How long an answer found in the shared tier lives on, and as what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifetime {
    /// A partial answer with this much life left.
    Partial(Duration),
    /// A complete answer with this much life left.
    Complete(Duration),
}

/// What a computation returns: the value and how long to keep it.
pub type Computed<V> = (V, Keep);

/// Hits an entry needs before it is refreshed ahead of its expiry.
pub(crate) const REFRESH_MIN_HITS: u32 = 3;

/// How long before expiry a popular entry is refreshed: a tenth of its lifetime, at most a minute.
pub fn refresh_window(ttl: Duration) -> Duration {
    (ttl / 10).min(Duration::from_secs(60))
}

/// The last complete answer under a key, servable until `until`.
#[derive(Clone)]
struct Fallback<V> {
    value: V,
    expired_at: Instant,
    until: Instant,
}

struct Entry<V> {
    value: V,
    /// What it weighs (value and stale fallback), in a weighted cache; 0 otherwise.
    weight: usize,
    expires: Instant,
    /// From then on a hit starts a background refresh (popular complete entries only).
    refresh_at: Option<Instant>,
    complete: bool,
    fallback: Option<Fallback<V>>,
    hits: u32,
    refreshing: bool,
}

impl<V> Entry<V> {
    fn is_live(&self, now: Instant) -> bool {
        self.expires > now
    }

    fn is_dead(&self, now: Instant) -> bool {
        !self.is_live(now) && self.fallback.as_ref().is_none_or(|f| f.until <= now)
    }
}

type Shared<V> = Option<(V, CacheStatus)>;
type Flight<V> = Arc<watch::Sender<Shared<V>>>;

struct Inner<K, V> {
    entries: Option<LruCache<K, Entry<V>>>,
    in_flight: HashMap<K, Flight<V>>,
    /// The weight of every entry together (a weighted cache).
    weight: usize,
}

impl<K: Key, V> Inner<K, V> {
    /// Removes `key`'s entry, keeping the weight.
    fn take(&mut self, key: &K) -> Option<Entry<V>> {
        let entry = self.entries.as_mut()?.pop(key)?;
        self.weight = self.weight.saturating_sub(entry.weight);
        Some(entry)
    }

    /// Stores `entry` under `key` (an entry-counted cache may drop its least recently used).
    fn put(&mut self, key: K, entry: Entry<V>) {
        let Some(entries) = self.entries.as_mut() else {
            return;
        };
        self.weight += entry.weight;
        // `push` hands back what left: the entry replaced, or the least recently used one a
        // full entry-counted cache dropped.
        if let Some((_, old)) = entries.push(key, entry) {
            self.weight = self.weight.saturating_sub(old.weight);
        }
    }

    /// Drops the least recently used entries until the weight is at most `max`.
    fn shrink(&mut self, max: usize) {
        while self.weight > max {
            let Some((_, old)) = self.entries.as_mut().and_then(LruCache::pop_lru) else {
                break;
            };
            self.weight = self.weight.saturating_sub(old.weight);
        }
    }
}

/// A byte bound: at most `max` bytes of values, each weighed by `weigh`.
struct Weighing<V> {
    max: usize,
    weigh: fn(&V) -> usize,
}

impl<V> Clone for Weighing<V> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<V> Copy for Weighing<V> {}

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

/// What a lookup under the lock found.
enum Found<V> {
    /// A live value; `refresh` when this hit should start a background refresh.
    Live {
        value: V,
        refresh: bool,
    },
    Nothing,
}

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
            inner: Arc::new(Mutex::new(Inner {
                entries: NonZeroUsize::new(capacity).map(LruCache::new),
                in_flight: HashMap::new(),
                weight: 0,
            })),
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
            inner: Arc::new(Mutex::new(Inner {
                entries: (max_bytes > 0).then(LruCache::unbounded),
                in_flight: HashMap::new(),
                weight: 0,
            })),
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
        let len = inner.entries.as_ref().map_or(0, LruCache::len);
        self.counters
            .size
            .set(i64::try_from(len).unwrap_or(i64::MAX));
        if self.weighing.is_some() {
            self.counters
                .bytes
                .set(i64::try_from(inner.weight).unwrap_or(i64::MAX));
        }
    }

    /// What `value` (and a stale fallback beside it) weighs here.
    fn weigh(&self, value: &V, fallback: Option<&Fallback<V>>) -> usize {
        self.weighing.map_or(0, |w| {
            (w.weigh)(value) + fallback.map_or(0, |f| (w.weigh)(&f.value))
        })
    }

    /// Looks `key` up at `now`, counting the hit; a dead entry is removed on the way.
    fn find(&self, inner: &mut Inner<K, V>, key: &K, now: Instant) -> Found<V> {
        let refresh_possible = !inner.in_flight.contains_key(key);
        let Some(entries) = inner.entries.as_mut() else {
            return Found::Nothing;
        };
        let Some(entry) = entries.get_mut(key) else {
            return Found::Nothing;
        };
        if entry.is_live(now) {
            entry.hits = entry.hits.saturating_add(1);
            let refresh = refresh_possible
                && !entry.refreshing
                && entry.hits >= REFRESH_MIN_HITS
                && entry.refresh_at.is_some_and(|at| now >= at);
            if refresh {
                entry.refreshing = true;
            }
            return Found::Live {
                value: entry.value.clone(),
                refresh,
            };
        }
        if entry.is_dead(now) {
            inner.take(key);
            self.publish_size(inner);
        }
        Found::Nothing
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
        self.lock().entries.as_ref().map_or(0, LruCache::len)
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

    /// The last complete answer under `key` while its stale window lasts.
    fn stale_answer(
        &self,
        inner: &mut Inner<K, V>,
        key: &K,
        now: Instant,
    ) -> Option<(V, CacheStatus)> {
        let entry = inner.entries.as_mut()?.peek(key)?;
        let fallback = entry.fallback.as_ref().filter(|f| f.until > now)?;
        Some((
            fallback.value.clone(),
            CacheStatus::Stale {
                expired_for: now.saturating_duration_since(fallback.expired_at),
            },
        ))
    }

    fn store(&self, inner: &mut Inner<K, V>, key: &K, value: V, keep: Keep, now: Instant) {
        if inner.entries.is_none() {
            return;
        }
        let previous = inner.take(key);
        let entry = match keep {
            Keep::Never | Keep::Shared(_) => return,
            Keep::Complete(ttl) => {
                let expires = now + ttl;
                let fallback = (!self.stale.is_zero()).then(|| Fallback {
                    value: value.clone(),
                    expired_at: expires,
                    until: expires + self.stale,
                });
                Entry {
                    // The fallback is the value itself (shared), weighed once.
                    weight: self.weigh(&value, None),
                    value,
                    expires,
                    refresh_at: Some(expires - refresh_window(ttl)),
                    complete: true,
                    fallback,
                    hits: 0,
                    refreshing: false,
                }
            }
            Keep::Partial(ttl) => {
                if previous
                    .as_ref()
                    .is_some_and(|p| p.complete && p.is_live(now))
                {
                    let Some(live) = previous else { return };
                    // A refresh that came back partial: the complete answer stays while it lives
                    // (and is not refreshed again: one attempt per entry).
                    inner.put(key.clone(), live);
                    return;
                }
                let fallback = previous.and_then(|p| p.fallback).filter(|f| f.until > now);
                Entry {
                    weight: self.weigh(&value, fallback.as_ref()),
                    value,
                    expires: now + ttl,
                    refresh_at: None,
                    complete: false,
                    fallback,
                    hits: 0,
                    refreshing: false,
                }
            }
        };
        inner.put(key.clone(), entry);
        if let Some(weighing) = self.weighing {
            inner.shrink(weighing.max);
        }
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tracing::Span;

    const MINUTE: Duration = Duration::from_secs(60);
    const STALE: Duration = Duration::from_secs(600);

    fn cache(capacity: usize) -> AnswerCache<&'static str, u32> {
        AnswerCache::new(capacity, STALE, CacheCounters::default())
    }

    #[tokio::test(start_paused = true)]
    async fn entries_expire_after_their_ttl() {
        let c = cache(10);
        c.insert(&"k", 1, Keep::Complete(Duration::from_secs(60)));
        c.insert(&"p", 2, Keep::Partial(Duration::from_secs(60)));
        assert_eq!(c.get_live(&"k"), Some(1));
        tokio::time::advance(Duration::from_secs(61)).await;
        assert_eq!((c.get_live(&"k"), c.get_live(&"p")), (None, None));
        assert_eq!(c.counters.size.get(), 1, "the gauge follows the expiry");
        tokio::time::advance(STALE).await;
        assert_eq!(c.get_live(&"k"), None);
        assert_eq!(c.counters.size.get(), 0, "and the end of the stale window");
    }

    #[tokio::test(start_paused = true)]
    async fn a_weighted_cache_keeps_at_most_its_bytes_least_recently_used_first() {
        let counters = CacheCounters::default();
        let c: AnswerCache<&'static str, u32> =
            AnswerCache::weighted(100, |v| *v as usize, STALE, counters.clone());
        c.insert(&"a", 40, Keep::Complete(MINUTE));
        c.insert(&"b", 40, Keep::Complete(MINUTE));
        assert_eq!(counters.bytes.get(), 80);
        c.get_live(&"a");
        c.insert(&"c", 30, Keep::Complete(MINUTE));
        assert_eq!(
            (c.get_live(&"a"), c.get_live(&"b"), c.get_live(&"c")),
            (Some(40), None, Some(30))
        );
        assert_eq!((counters.bytes.get(), counters.size.get()), (70, 2));
        c.insert(&"a", 10, Keep::Complete(MINUTE));
        assert_eq!(
            counters.bytes.get(),
            40,
            "a replaced value gives its weight back"
        );
        c.insert(&"huge", 500, Keep::Complete(MINUTE));
        assert_eq!(
            c.get_live(&"huge"),
            None,
            "a value over the bound is not kept"
        );
        assert_eq!(counters.bytes.get(), 0);
        c.insert(&"d", 20, Keep::Complete(MINUTE));
        assert_eq!(c.purge(|_| true), 1);
        assert_eq!(counters.bytes.get(), 0);
        let off: AnswerCache<&'static str, u32> =
            AnswerCache::weighted(0, |v| *v as usize, STALE, CacheCounters::default());
        off.insert(&"a", 1, Keep::Complete(MINUTE));
        assert_eq!(off.get_live(&"a"), None);
    }

    #[tokio::test(start_paused = true)]
    async fn capacity_evicts_the_least_recently_used() {
        let c = cache(2);
        c.insert(&"a", 1, Keep::Complete(Duration::from_secs(60)));
        c.insert(&"b", 2, Keep::Complete(Duration::from_secs(60)));
        c.get_live(&"a");
        c.insert(&"c", 3, Keep::Complete(Duration::from_secs(60)));
        assert_eq!(
            (c.get_live(&"a"), c.get_live(&"b"), c.get_live(&"c")),
            (Some(1), None, Some(3))
        );
        assert_eq!(c.counters.size.get(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn an_entry_counted_cache_can_keep_its_weight_through_evictions() {
        let counters = CacheCounters::default();
        let c: AnswerCache<&'static str, u32> =
            AnswerCache::new_weighed(2, |v| *v as usize, STALE, counters.clone());
        c.insert(&"a", 10, Keep::Complete(MINUTE));
        c.insert(&"b", 20, Keep::Complete(MINUTE));
        c.insert(&"c", 300, Keep::Complete(MINUTE));
        assert_eq!(c.get_live(&"a"), None, "bounded by entries, not bytes");
        assert_eq!((c.weight(), counters.bytes.get()), (320, 320));
        c.insert(&"c", 5, Keep::Complete(MINUTE));
        assert_eq!(c.weight(), 25);
        c.purge(|_| true);
        assert_eq!((c.weight(), counters.bytes.get()), (0, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn purge_drops_expired_entries_and_updates_the_gauge() {
        let c = cache(10);
        c.insert(&"short", 1, Keep::Partial(Duration::from_secs(5)));
        c.insert(&"long", 2, Keep::Complete(Duration::from_secs(500)));
        c.insert(&"stale", 3, Keep::Complete(Duration::from_secs(1)));
        tokio::time::advance(Duration::from_secs(6)).await;
        c.purge_expired();
        assert_eq!(
            c.len(),
            2,
            "an expired complete answer stays as the stale fallback"
        );
        tokio::time::advance(STALE).await;
        c.purge_expired();
        assert_eq!(c.len(), 1);
        assert_eq!(c.counters.size.get(), 1);
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
                c.get_or_compute(&"k", &Span::none(), move || async move {
                    calls.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    (7, Keep::Complete(MINUTE))
                })
                .await
                .unwrap()
            }));
        }
        for t in tasks {
            assert_eq!(t.await.unwrap().0, 7);
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(c.counters.coalesced.get(), 19);
        assert_eq!(
            c.get_or_compute(&"k", &Span::none(), || async { (0, Keep::Never) })
                .await
                .unwrap(),
            (7, CacheStatus::Hit)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn uncacheable_results_are_shared_but_not_stored() {
        let c = cache(10);
        let (v, status) = c
            .get_or_compute(&"k", &Span::none(), || async { (5, Keep::Never) })
            .await
            .unwrap();
        assert_eq!((v, status), (5, CacheStatus::Miss));
        assert_eq!(c.get_live(&"k"), None);
        assert_eq!(c.counters.size.get(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn computation_is_cancelled_when_every_waiter_leaves() {
        let c = cache(10);
        let finished = Arc::new(AtomicUsize::new(0));
        let f = Arc::clone(&finished);
        let waiter = tokio::spawn({
            let c = c.clone();
            async move {
                c.get_or_compute(&"k", &Span::none(), move || async move {
                    tokio::time::sleep(Duration::from_secs(10)).await;
                    f.fetch_add(1, Ordering::SeqCst);
                    (1, Keep::Complete(MINUTE))
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
                c.get_or_compute(&"k", &Span::none(), || async {
                    tokio::time::sleep(Duration::from_secs(10)).await;
                    (1, Keep::Complete(MINUTE))
                })
                .await
            }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        let follower = tokio::spawn({
            let c = c.clone();
            async move {
                c.get_or_compute(&"k", &Span::none(), || async {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    (2, Keep::Complete(MINUTE))
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
            .get_or_compute(&"k", &Span::none(), || async { panic!("computation bug") })
            .await;
        assert_eq!(lost, Err(ComputationLost));
        let (v, status) = c
            .get_or_compute(&"k", &Span::none(), || async {
                (3, Keep::Complete(MINUTE))
            })
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
        c.insert(&"k", 1, Keep::Complete(Duration::from_secs(60)));
        assert_eq!(c.get_live(&"k"), None);
        assert_eq!(c.len(), 0);
    }

    async fn failing(c: &AnswerCache<&'static str, u32>) -> (u32, CacheStatus) {
        c.get_or_compute(&"k", &Span::none(), || async { (0, Keep::Never) })
            .await
            .unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn when_every_upstream_fails_the_last_complete_answer_is_served_stale() {
        let c = cache(10);
        c.insert(&"k", 1, Keep::Complete(MINUTE));
        tokio::time::advance(MINUTE + Duration::from_secs(5)).await;
        assert_eq!(
            failing(&c).await,
            (
                1,
                CacheStatus::Stale {
                    expired_for: Duration::from_secs(5)
                }
            )
        );
        tokio::time::advance(STALE).await;
        assert_eq!(
            failing(&c).await,
            (0, CacheStatus::Miss),
            "past the stale window the failure is what the client gets"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_zero_stale_window_never_serves_stale() {
        let c = AnswerCache::new(10, Duration::ZERO, CacheCounters::default());
        c.insert(&"k", 1, Keep::Complete(MINUTE));
        tokio::time::advance(MINUTE).await;
        assert_eq!(failing(&c).await, (0, CacheStatus::Miss));
    }

    #[tokio::test(start_paused = true)]
    async fn a_partial_answer_never_replaces_a_live_complete_one_and_keeps_it_as_fallback() {
        let c = cache(10);
        c.insert(&"k", 1, Keep::Complete(MINUTE));
        c.insert(&"k", 2, Keep::Partial(Duration::from_secs(30)));
        assert_eq!(
            c.get_live(&"k"),
            Some(1),
            "the complete answer stays while it lives"
        );
        tokio::time::advance(MINUTE).await;
        c.insert(&"k", 2, Keep::Partial(Duration::from_secs(30)));
        assert_eq!(c.get_live(&"k"), Some(2));
        tokio::time::advance(Duration::from_secs(30)).await;
        assert_eq!(
            failing(&c).await,
            (
                1,
                CacheStatus::Stale {
                    expired_for: Duration::from_secs(30)
                }
            ),
            "a partial answer is never served stale; the complete one is"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn followers_of_a_failed_computation_get_the_stale_answer_too() {
        let c = cache(10);
        c.insert(&"k", 1, Keep::Complete(MINUTE));
        tokio::time::advance(MINUTE).await;
        let mut tasks = Vec::new();
        for _ in 0..3 {
            let c = c.clone();
            tasks.push(tokio::spawn(async move {
                c.get_or_compute(&"k", &Span::none(), || async {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    (0, Keep::Never)
                })
                .await
                .unwrap()
            }));
        }
        for t in tasks {
            let (value, status) = t.await.unwrap();
            assert_eq!(value, 1);
            assert!(matches!(status, CacheStatus::Stale { .. }), "{status:?}");
        }
    }

    fn counting(calls: &Arc<AtomicUsize>, value: u32) -> impl Future<Output = Computed<u32>> {
        let calls = Arc::clone(calls);
        async move {
            calls.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_secs(2)).await;
            (value, Keep::Complete(Duration::from_secs(100)))
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_popular_entry_is_refreshed_in_the_background_shortly_before_it_expires() {
        let c = cache(10);
        let calls = Arc::new(AtomicUsize::new(0));
        c.insert(&"k", 1, Keep::Complete(Duration::from_secs(100)));
        for _ in 0..REFRESH_MIN_HITS {
            let hit = c
                .get_or_compute(&"k", &Span::none(), || counting(&calls, 2))
                .await
                .unwrap();
            assert_eq!(hit, (1, CacheStatus::Hit));
        }
        assert_eq!(calls.load(Ordering::SeqCst), 0, "not yet near its expiry");
        // The last tenth of its life: the next hits are answered at once, one refresh starts.
        tokio::time::advance(Duration::from_secs(91)).await;
        for _ in 0..5 {
            let hit = c
                .get_or_compute(&"k", &Span::none(), || counting(&calls, 2))
                .await
                .unwrap();
            assert_eq!(hit, (1, CacheStatus::Hit));
        }
        assert_eq!(c.counters.refreshes.get(), 1);
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        // Past the old expiry the refreshed answer is live: the query never fell off the cache.
        tokio::time::advance(Duration::from_secs(10)).await;
        assert_eq!(c.get_live(&"k"), Some(2));
    }

    #[tokio::test(start_paused = true)]
    async fn an_unpopular_entry_simply_expires() {
        let c = cache(10);
        let calls = Arc::new(AtomicUsize::new(0));
        c.insert(&"k", 1, Keep::Complete(Duration::from_secs(100)));
        tokio::time::advance(Duration::from_secs(95)).await;
        let hit = c
            .get_or_compute(&"k", &Span::none(), || counting(&calls, 2))
            .await
            .unwrap();
        assert_eq!(hit, (1, CacheStatus::Hit));
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert_eq!(calls.load(Ordering::SeqCst), 0);
        assert_eq!(c.counters.refreshes.get(), 0);
    }
}
