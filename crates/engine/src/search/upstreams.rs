//! The two sides a fan-out calls, each with the handles it owns, so a step receives what it uses
//! and nothing else: [`SearxngSide`] (the pool of instances, how fast they have been, when one last
//! answered) and [`PremiumSide`] (the active providers, the rotation over them, their breakers and
//! the quota windows they reported). [`FanOutContext`] is what one fan-out gets: both sides and
//! its own numbers ([`FanOutSettings`]).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use tokio::time::Instant;

use super::admission::LoadAdmission;
use super::provider_rotation::Rotation;
use super::slow_threshold::LatencyWindow;
use super::spend::GlobalSpend;
use crate::searxng_pool::recent_queries::RecentQueries;
use crate::searxng_pool::SearxngPool;
use crate::settings::{Hedge, SlowThreshold};
use gateway_core::breaker::BreakerBoard;
use gateway_upstreams::providers::keys::KeyId;
use gateway_upstreams::providers::quota::QuotaBoard;
use gateway_upstreams::providers::{ProviderClient, ProviderKind};

/// The SearXNG side of a fan-out.
pub(crate) struct SearxngSide {
    /// The SearXNG instances, each with its catalog, cooldown and engine breakers.
    pub(crate) pool: SearxngPool,
    /// Recent SearXNG latency: how long the fallback waits (`SEARXNG_SLOW_SECONDS=auto`).
    pub(crate) latency: LatencyWindow,
    /// When SearXNG last answered (`/readyz`).
    last_ok: Mutex<Option<Instant>>,
    /// `engine_exclusion_overridden_total`: plans that sent a whole open group as asked.
    pub(crate) exclusion_overridden: Counter,
    /// What clients searched lately: the engine probes ask the most popular of it.
    pub(crate) recent: RecentQueries,
}

impl SearxngSide {
    /// The side over `pool`.
    pub(crate) fn new(pool: SearxngPool, exclusion_overridden: Counter) -> Self {
        Self {
            pool,
            latency: LatencyWindow::default(),
            last_ok: Mutex::new(None),
            exclusion_overridden,
            recent: RecentQueries::default(),
        }
    }

    /// An instance answered now.
    pub(crate) fn mark_ok(&self) {
        *self.last_ok.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
    }

    /// Whether an instance answered within `window`.
    pub(crate) fn answered_within(&self, window: Duration) -> bool {
        self.last_ok
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some_and(|at| at.elapsed() < window)
    }
}

/// The premium side of a fan-out.
pub(crate) struct PremiumSide {
    /// Active providers in `FALLBACK_PROVIDERS` order.
    pub(crate) providers: Vec<Arc<ProviderClient>>,
    /// Which provider a request offers first (`PROVIDER_POLICY`).
    pub(crate) rotation: Rotation,
    /// The providers' breakers (each instance's engine breakers are its own).
    pub(crate) breakers: BreakerBoard<ProviderKind>,
    /// The breakers of each provider's keys (a pool's keys are set aside one by one).
    pub(crate) key_breakers: BreakerBoard<KeyId>,
    /// The rate-limit windows providers reported.
    pub(crate) quota: QuotaBoard,
    /// What premium calls cost in the last 24 h, against `PREMIUM_USD_PER_DAY`.
    pub(crate) spend: GlobalSpend,
}

/// One fan-out's numbers, from the configuration.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FanOutSettings {
    /// `T1_PREMIUM_COUNT` in effect.
    pub(crate) t1_premium_count: usize,
    /// `SUFFICIENT_MIN_RESULTS`.
    pub(crate) sufficient_min_results: usize,
    /// `SEARXNG_SLOW_SECONDS`.
    pub(crate) searxng_slow: SlowThreshold,
    /// `SEARXNG_HEDGE_SECONDS`.
    pub(crate) searxng_hedge: Hedge,
    /// `CACHE_TTL_SECONDS`: a complete answer's lifetime.
    pub(crate) cache_ttl: Duration,
    /// `FALLBACK_TIMEOUT_SECONDS`: a search's whole budget, coordination with other replicas included.
    pub(crate) request_budget: Duration,
}

/// What one fan-out works with. Cheap to clone (the calls it spawns take their own).
#[derive(Clone)]
pub(crate) struct FanOutContext {
    pub(crate) searxng: Arc<SearxngSide>,
    pub(crate) premium: Arc<PremiumSide>,
    pub(crate) settings: FanOutSettings,
    /// The fan-out slots (load shedding): a fan-out runs once it has one.
    pub(crate) admission: LoadAdmission,
    /// `searxng_skipped_total`: fan-outs that found every instance cooling down.
    pub(crate) searxng_skipped: Counter,
}
