//! A set of breakers of one namespace ([`BreakerKind`]), keyed by a type of its own
//! ([`BreakerKey`]: a provider, an engine), created closed on first use: the providers' on one
//! board, each SearXNG instance's engines on its own — so SearXNG's `brave` engine and the Brave
//! API never share a breaker or a series, and neither do two instances'.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::{Breaker, BreakerMetrics, BreakerPolicy, BreakerState};
use crate::metrics::InstanceLabel;

/// Which namespace a breaker lives in: the `kind` metric label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakerKind {
    /// A premium search API (Brave, Exa, Jina, Tavily): what concerns it as a whole (down,
    /// slow, answering garbage).
    Provider,
    /// One key of a premium search API (`brave:1a2b3c4d`): what concerns that key (a bad key,
    /// its rate or quota spent).
    Key,
    /// A SearXNG engine, named as SearXNG's `/config` reports it.
    Engine,
    /// The SearXNG instance as a whole: its cooldown (`SEARXNG_FAIL_THRESHOLD`), kept off the board.
    Searxng,
    /// A premium page reader (Jina Reader, Tavily extract, Exa contents, Firecrawl).
    Reader,
    /// The passage reranker (`RERANK_URL`): one breaker, named `reranker`.
    Reranker,
    /// A host pages are read from directly: no metric series of its own (hosts are unbounded).
    Host,
}

impl BreakerKind {
    /// The `kind` label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Provider => "provider",
            Self::Key => "key",
            Self::Engine => "engine",
            Self::Searxng => "searxng",
            Self::Reader => "reader",
            Self::Reranker => "reranker",
            Self::Host => "host",
        }
    }
}

/// What names a breaker on a board: a closed set (a provider) or a name checked before it gets
/// here (an engine the catalogue reported), so a board, and the label values its breakers carry,
/// stay bounded.
pub trait BreakerKey: Ord + Clone + Send + Sync + 'static {
    /// The namespace of every breaker keyed by this type.
    const KIND: BreakerKind;

    /// Its name, as `/status` and the `engine` label say it.
    fn name(&self) -> &str;
}

/// The breakers of one namespace, keyed by `K`, created closed on first use. Cheap to clone.
#[derive(Debug)]
pub struct BreakerBoard<K> {
    shared: Arc<Shared<K>>,
}

impl<K> Clone for BreakerBoard<K> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

#[derive(Debug)]
struct Shared<K> {
    policy: BreakerPolicy,
    /// The SearXNG instance whose engines this board holds (none: providers, or one instance).
    instance: InstanceLabel,
    /// `None`: breakers without series, the board bounded by [`BreakerBoard::unlabelled`].
    metrics: Option<BreakerMetrics>,
    /// Breakers kept at most (closed ones nobody holds go first when it is reached).
    capacity: usize,
    /// Sorted by key.
    breakers: Mutex<BTreeMap<K, Arc<Breaker>>>,
}

impl<K: BreakerKey> BreakerBoard<K> {
    /// An empty board; breakers appear as [`BreakerBoard::get`] first names them.
    pub fn new(policy: BreakerPolicy, metrics: BreakerMetrics) -> Self {
        Self::of_instance(policy, metrics, InstanceLabel::single())
    }

    /// An empty board for the engines of the SearXNG pool member `instance`.
    pub fn of_instance(
        policy: BreakerPolicy,
        metrics: BreakerMetrics,
        instance: InstanceLabel,
    ) -> Self {
        Self {
            shared: Arc::new(Shared {
                policy,
                instance,
                metrics: Some(metrics),
                capacity: usize::MAX,
                breakers: Mutex::new(BTreeMap::new()),
            }),
        }
    }

    /// A board whose breakers have no metric series (their names are no label values) and which
    /// keeps at most `capacity` of them: when it is full, closed breakers nobody holds are dropped
    /// (a closed breaker is only a name and a count of recent failures).
    pub fn unlabelled(policy: BreakerPolicy, capacity: usize) -> Self {
        Self {
            shared: Arc::new(Shared {
                policy,
                instance: InstanceLabel::single(),
                metrics: None,
                capacity: capacity.max(1),
                breakers: Mutex::new(BTreeMap::new()),
            }),
        }
    }

    /// The breaker of `key`, created closed on first use.
    pub fn get(&self, key: &K) -> Arc<Breaker> {
        let mut breakers = self.lock();
        if let Some(breaker) = breakers.get(key) {
            return Arc::clone(breaker);
        }
        let breaker = Arc::new(match &self.shared.metrics {
            Some(metrics) => Breaker::new(
                K::KIND,
                key.name(),
                self.shared.instance.clone(),
                self.shared.policy,
                metrics,
            ),
            None => Breaker::unlabelled(K::KIND, key.name(), self.shared.policy),
        });
        if breakers.len() >= self.shared.capacity {
            // Breaker locks never take the board's, so asking their state here cannot deadlock.
            breakers.retain(|_, b| Arc::strong_count(b) > 1 || b.state() != BreakerState::Closed);
        }
        if breakers.len() >= self.shared.capacity {
            // Every breaker is open or in use: this one serves its call but is not remembered.
            return breaker;
        }
        breakers.insert(key.clone(), Arc::clone(&breaker));
        breaker
    }

    /// The breaker of `key` if it exists (never creates one).
    pub fn existing(&self, key: &K) -> Option<Arc<Breaker>> {
        self.lock().get(key).cloned()
    }

    /// How many of its breakers are open now.
    pub fn open_count(&self) -> usize {
        self.all()
            .iter()
            .filter(|b| b.state() == BreakerState::Open)
            .count()
    }

    /// Every breaker, sorted by key. Collected so no breaker lock is ever taken under the board
    /// lock.
    pub fn all(&self) -> Vec<Arc<Breaker>> {
        self.lock().values().cloned().collect()
    }

    /// Sets every `circuit_breaker_state` gauge from the state now; call before rendering metrics.
    pub fn refresh_metrics(&self) {
        for breaker in self.all() {
            breaker.refresh_metrics();
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<K, Arc<Breaker>>> {
        // Inserting into a map cannot leave it half-updated, so a poisoned lock is still usable.
        self.shared
            .breakers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
