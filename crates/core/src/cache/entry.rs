//! One cached entry and the rules of its life: how long a computed value is kept ([`Keep`]), when
//! it expires, how long a complete answer stays as the stale fallback, and when a popular entry is
//! refreshed ahead of its expiry. The lookup and the store under the cache's lock (`store.rs`)
//! apply them.

use std::time::Duration;

use tokio::time::Instant;

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
pub(super) struct Fallback<V> {
    pub(super) value: V,
    pub(super) expired_at: Instant,
    pub(super) until: Instant,
}

/// One key's cached value and its life.
pub(super) struct Entry<V> {
    pub(super) value: V,
    /// What it weighs (value and stale fallback), in a weighted cache; 0 otherwise.
    pub(super) weight: usize,
    pub(super) expires: Instant,
    /// From then on a hit starts a background refresh (popular complete entries only).
    pub(super) refresh_at: Option<Instant>,
    pub(super) complete: bool,
    pub(super) fallback: Option<Fallback<V>>,
    pub(super) hits: u32,
    pub(super) refreshing: bool,
}

impl<V> Entry<V> {
    pub(super) fn is_live(&self, now: Instant) -> bool {
        self.expires > now
    }

    pub(super) fn is_dead(&self, now: Instant) -> bool {
        !self.is_live(now) && self.fallback.as_ref().is_none_or(|f| f.until <= now)
    }
}
