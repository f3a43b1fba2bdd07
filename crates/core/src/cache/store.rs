//! The in-memory store under the cache's lock: the LRU of entries, the flights in progress, the
//! byte accounting of a weighted cache (what the entries weigh together, and the bound that drops
//! the least recently used until they fit), and the lookup and store that apply an entry's rules.

use std::collections::HashMap;
use std::sync::Arc;

use lru::LruCache;
use tokio::sync::watch;
use tokio::time::Instant;

use super::entry::{refresh_window, Entry, Fallback, Keep, REFRESH_MIN_HITS};
use super::status::CacheStatus;
use super::{AnswerCache, Key};

/// What a flight shares with its followers: the value served and how, once it is known.
pub(super) type Shared<V> = Option<(V, CacheStatus)>;
/// One computation in progress, as the in-flight map holds it.
pub(super) type Flight<V> = Arc<watch::Sender<Shared<V>>>;

/// What the lock guards.
pub(super) struct Inner<K, V> {
    /// `None` when storage is disabled (coalescing still works).
    pub(super) entries: Option<LruCache<K, Entry<V>>>,
    pub(super) in_flight: HashMap<K, Flight<V>>,
    /// The weight of every entry together (a weighted cache).
    pub(super) weight: usize,
}

impl<K: Key, V> Inner<K, V> {
    /// A store over `entries` (`None`: storage disabled), empty and weighing nothing.
    pub(super) fn new(entries: Option<LruCache<K, Entry<V>>>) -> Self {
        Self {
            entries,
            in_flight: HashMap::new(),
            weight: 0,
        }
    }

    /// How many entries it holds (stale fallbacks included).
    pub(super) fn len(&self) -> usize {
        self.entries.as_ref().map_or(0, LruCache::len)
    }

    /// Removes `key`'s entry, keeping the weight.
    pub(super) fn take(&mut self, key: &K) -> Option<Entry<V>> {
        let entry = self.entries.as_mut()?.pop(key)?;
        self.weight = self.weight.saturating_sub(entry.weight);
        Some(entry)
    }

    /// Stores `entry` under `key` (an entry-counted cache may drop its least recently used).
    pub(super) fn put(&mut self, key: K, entry: Entry<V>) {
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
    pub(super) fn shrink(&mut self, max: usize) {
        while self.weight > max {
            let Some((_, old)) = self.entries.as_mut().and_then(LruCache::pop_lru) else {
                break;
            };
            self.weight = self.weight.saturating_sub(old.weight);
        }
    }
}

/// A byte bound: at most `max` bytes of values, each weighed by `weigh`.
pub(super) struct Weighing<V> {
    pub(super) max: usize,
    pub(super) weigh: fn(&V) -> usize,
}

impl<V> Clone for Weighing<V> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<V> Copy for Weighing<V> {}

/// What a lookup under the lock found.
pub(super) enum Found<V> {
    /// A live value; `refresh` when this hit should start a background refresh.
    Live {
        value: V,
        refresh: bool,
    },
    Nothing,
}

impl<K: Key, V: Clone + Send + Sync + 'static> AnswerCache<K, V> {
    /// What `value` (and a stale fallback beside it) weighs here.
    fn weigh(&self, value: &V, fallback: Option<&Fallback<V>>) -> usize {
        self.weighing.map_or(0, |w| {
            (w.weigh)(value) + fallback.map_or(0, |f| (w.weigh)(&f.value))
        })
    }

    /// Looks `key` up at `now`, counting the hit; a dead entry is removed on the way.
    pub(super) fn find(&self, inner: &mut Inner<K, V>, key: &K, now: Instant) -> Found<V> {
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

    /// The last complete answer under `key` while its stale window lasts.
    pub(super) fn stale_answer(
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

    pub(super) fn store(
        &self,
        inner: &mut Inner<K, V>,
        key: &K,
        value: V,
        keep: Keep,
        now: Instant,
    ) {
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
