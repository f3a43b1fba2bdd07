//! A set of breakers, keyed by namespace ([`BreakerKind`]) and name, created closed on first use:
//! the providers' on one board, each SearXNG instance's engines on its own — so SearXNG's `brave`
//! engine and the Brave API never share a breaker or a series, and neither do two instances'.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::{Breaker, BreakerMetrics, BreakerPolicy};
use crate::metrics::InstanceLabel;

/// Which namespace a breaker lives in: the `kind` metric label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum BreakerKind {
    /// A premium search API (Brave, Exa, Jina, Tavily).
    Provider,
    /// A SearXNG engine, named as SearXNG's `/config` reports it.
    Engine,
    /// The SearXNG instance as a whole: its cooldown (`SEARXNG_FAIL_THRESHOLD`), kept off the board.
    Searxng,
}

impl BreakerKind {
    /// The `kind` label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Provider => "provider",
            Self::Engine => "engine",
            Self::Searxng => "searxng",
        }
    }
}

/// Every provider and engine breaker. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct BreakerBoard {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    policy: BreakerPolicy,
    /// The SearXNG instance whose engines this board holds (none: providers, or one instance).
    instance: InstanceLabel,
    metrics: BreakerMetrics,
    /// Providers, then engines; each map sorted by name.
    breakers: Mutex<[BTreeMap<String, Arc<Breaker>>; 2]>,
}

fn slot(kind: BreakerKind) -> usize {
    match kind {
        BreakerKind::Provider => 0,
        BreakerKind::Engine | BreakerKind::Searxng => 1,
    }
}

impl BreakerBoard {
    /// An empty board; breakers appear as [`BreakerBoard::get`] first names them.
    pub(crate) fn new(policy: BreakerPolicy, metrics: BreakerMetrics) -> Self {
        Self::of_instance(policy, metrics, InstanceLabel::single())
    }

    /// An empty board for the engines of the SearXNG pool member `instance`.
    pub(crate) fn of_instance(
        policy: BreakerPolicy,
        metrics: BreakerMetrics,
        instance: InstanceLabel,
    ) -> Self {
        Self {
            shared: Arc::new(Shared {
                policy,
                instance,
                metrics,
                breakers: Mutex::new([BTreeMap::new(), BTreeMap::new()]),
            }),
        }
    }

    /// The breaker of `name` in the `kind` namespace, created closed on first use.
    pub(crate) fn get(&self, kind: BreakerKind, name: &str) -> Arc<Breaker> {
        let mut breakers = self.lock();
        let map = &mut breakers[slot(kind)];
        if let Some(breaker) = map.get(name) {
            return Arc::clone(breaker);
        }
        let breaker = Arc::new(Breaker::new(
            kind,
            name,
            self.shared.instance.clone(),
            self.shared.policy,
            &self.shared.metrics,
        ));
        map.insert(name.to_owned(), Arc::clone(&breaker));
        breaker
    }

    /// Every breaker, providers first, then engines, each sorted by name. Collected so no breaker
    /// lock is ever taken under the board lock.
    pub(crate) fn all(&self) -> Vec<Arc<Breaker>> {
        self.lock()
            .iter()
            .flat_map(|map| map.values().cloned())
            .collect()
    }

    /// Sets every `circuit_breaker_state` gauge from the state now; call before rendering metrics.
    pub(crate) fn refresh_metrics(&self) {
        for breaker in self.all() {
            breaker.refresh_metrics();
        }
    }

    fn lock(&self) -> MutexGuard<'_, [BTreeMap<String, Arc<Breaker>>; 2]> {
        // Inserting into a map cannot leave it half-updated, so a poisoned lock is still usable.
        self.shared
            .breakers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
