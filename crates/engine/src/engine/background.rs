//! The pipeline's background work, owned by [`crate::Engine::run_background`]: each SearXNG
//! instance's engine catalog (read at start, every [`CATALOG_REFRESH`], and early when an answer
//! names an engine the catalog does not know), the engine health the instance already knows (its
//! `/stats/errors`, read after each catalog read: an engine it saw blocked on at least
//! [`SEED_MIN_PERCENT`] of its requests starts with its breaker open, unless our own calls said
//! something about it since the last read), each instance's engine prober ([`crate::searxng_pool::engine_probes`]), and
//! the cache sweep that keeps `cache_size` counting live answers only, and this replica's part in
//! the crawl jobs the fleet shares ([`crate::crawl`]).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::Inner;
use crate::breaker_signals;
use crate::searxng_pool::engine_probes::{ProbeSettings, ProbeTarget, Prober};
use crate::searxng_pool::Instance;
use gateway_core::breaker::{BreakerBoard, BreakerState};
use gateway_core::upstream::UpstreamError;
use gateway_upstreams::searxng::engine_errors::blocked_engines;
use gateway_upstreams::searxng::EngineCatalog;
use gateway_upstreams::searxng::{EngineName, SearxngAnswer};

/// The shared tier's miss read brings the breaker boards; a probe reads them with this key, whose
/// answer nobody stores (one `GET` of nothing beside the boards).
const BOARDS_ONLY: &str = "engine-probe";

/// How often `/config` is read again.
const CATALOG_REFRESH: Duration = Duration::from_secs(300);
/// An engine SearXNG reports blocked on at least this share of its requests is seeded open.
const SEED_MIN_PERCENT: f64 = 50.0;
/// How often expired cache entries are dropped.
const CACHE_SWEEP: Duration = Duration::from_secs(10);

/// Runs until `shutdown` resolves.
pub(crate) async fn run(inner: Arc<Inner>, shutdown: impl Future<Output = ()>) {
    let catalogs = futures::future::join_all(
        (0..inner.fanout.searxng.pool.instances().len()).map(|index| keep_catalog(&inner, index)),
    );
    let probers = futures::future::join_all(
        inner
            .fanout
            .searxng
            .pool
            .instances()
            .iter()
            .map(|instance| probe_engines(&inner, instance)),
    );
    let sweep = async {
        let mut sweep = tokio::time::interval(CACHE_SWEEP);
        loop {
            sweep.tick().await;
            inner.cache.purge_expired();
            inner.reading.purge_expired();
        }
    };
    let shared = keep_shared(&inner);
    let crawls = inner.crawls.join_fleet_jobs();
    tokio::select! {
        () = crawls => {}
        _ = catalogs => {}
        _ = probers => {}
        () = sweep => {}
        () = shared => {}
        () = shutdown => {}
    }
}

/// Pings the shared tier (if any) so its state follows Redis, and republishes the open breakers
/// once it is back, forever.
async fn keep_shared(inner: &Arc<Inner>) {
    let Some(tier) = inner.fleet.tier() else {
        return std::future::pending().await;
    };
    let mut every = tokio::time::interval(gateway_core::shared::PING_INTERVAL);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        tier.ping().await;
        if tier.is_connected() {
            inner.fleet.publish_breakers(&inner.fanout).await;
        }
    }
}

/// Probes `instance`'s blocked engines out of band, forever.
async fn probe_engines(inner: &Inner, instance: &Instance) {
    let settings = ProbeSettings {
        timeout: inner.settings.engine_probe_timeout,
        retry: inner.settings.breaker_open,
        max: inner.settings.breaker_max_open,
        weight: inner.settings.engine_probe_weight,
    };
    Prober::new(
        InstanceTarget { inner, instance },
        settings,
        &inner.fanout.searxng.recent,
        inner.metrics.probes.clone(),
        instance.client.instance().clone(),
    )
    .run()
    .await;
}

/// Keeps instance `index`'s catalog and seeded engine health fresh, forever.
async fn keep_catalog(inner: &Inner, index: usize) {
    let instance = inner.fanout.searxng.pool.get(index);
    let mut health_read: Option<Instant> = None;
    refresh_catalog(inner, instance, true).await;
    seed_engine_health(instance, &mut health_read).await;
    let mut refresh = tokio::time::interval(CATALOG_REFRESH);
    refresh.reset();
    loop {
        tokio::select! {
            _ = refresh.tick() => {
                refresh_catalog(inner, instance, false).await;
                seed_engine_health(instance, &mut health_read).await;
            }
            () = instance.catalog.refresh.notified() => {
                // Several unknown names in a burst: one refresh.
                tokio::time::sleep(Duration::from_secs(1)).await;
                refresh_catalog(inner, instance, false).await;
            }
        }
    }
}

async fn refresh_catalog(inner: &Inner, instance: &Instance, first: bool) {
    let timeout = Duration::from_secs(10);
    let name = instance.name.as_str();
    if first {
        match instance.client.json_enabled(timeout).await {
            Ok(false) => tracing::error!(
                instance = name,
                "SearXNG answers 403 to format=json: enable JSON in its settings.yml (search.formats: [html, json])"
            ),
            Ok(true) => {}
            Err(err) => tracing::warn!(
                instance = name,
                error_class = err.class.as_str(),
                "SearXNG is not reachable yet; premium providers (if any) will answer meanwhile"
            ),
        }
    }
    match instance.client.fetch_config(timeout).await {
        Ok(config) => match EngineCatalog::from_config(&config) {
            Some(catalog) => {
                tracing::debug!(
                    instance = name,
                    engines = catalog.len(),
                    "SearXNG engine catalog refreshed"
                );
                instance.catalog.set(catalog);
                inner.fanout.searxng.mark_ok();
            }
            None => tracing::warn!(
                instance = name,
                "SearXNG /config has no engines list; engine breakers cannot exclude engines"
            ),
        },
        Err(err) => tracing::debug!(
            instance = name,
            error_class = err.class.as_str(),
            "SearXNG /config unavailable"
        ),
    }
}

/// Opens the breakers of engines SearXNG's `/stats/errors` reports blocked, so no user request has
/// to discover the block. Only names the catalog knows; nothing when SearXNG does not expose it.
async fn seed_engine_health(instance: &Instance, last_read: &mut Option<Instant>) {
    let Some(catalog) = instance.catalog.get() else {
        return;
    };
    let read_at = Instant::now();
    let stats = match instance
        .client
        .fetch_engine_errors(Duration::from_secs(10))
        .await
    {
        Ok(stats) => stats,
        Err(err) => {
            tracing::debug!(
                instance = %instance.name,
                error_class = err.class.as_str(),
                "SearXNG /stats/errors unavailable: engine health is learned from searches alone"
            );
            return;
        }
    };
    for blocked in blocked_engines(&stats) {
        if blocked.percentage < SEED_MIN_PERCENT {
            continue;
        }
        let Some(engine) = catalog.engine(&blocked.engine) else {
            continue;
        };
        let breaker = instance.engines.get(&engine);
        if breaker.seed(breaker_signals::for_engine(blocked.reason), *last_read) {
            tracing::info!(
                instance = %instance.name,
                engine = %blocked.engine,
                reason = blocked.reason.as_str(),
                percentage = blocked.percentage,
                "engine breaker opened from SearXNG's own error record (/stats/errors)"
            );
        }
    }
    *last_read = Some(read_at);
}

/// A pool's instance as a probe target, coordinated with the other replicas through the fleet.
struct InstanceTarget<'a> {
    inner: &'a Inner,
    instance: &'a Instance,
}

impl ProbeTarget for InstanceTarget<'_> {
    fn board(&self) -> &BreakerBoard<EngineName> {
        &self.instance.engines
    }

    fn reachable(&self) -> bool {
        self.instance.cooldown.state() == BreakerState::Closed
    }

    async fn woken(&self) {
        self.instance.probe_wake.notified().await;
    }

    fn loss_per_second(&self, engine: &str) -> Option<f64> {
        self.instance.value.loss_per_second(engine)
    }

    async fn coordinate(&self) {
        self.inner
            .fleet
            .adopt_breakers(&self.inner.fanout, BOARDS_ONLY)
            .await;
    }

    async fn search(
        &self,
        engine: &EngineName,
        query: &str,
        deadline: Instant,
    ) -> Result<SearxngAnswer, UpstreamError> {
        let _busy = self.instance.begin();
        let result = self
            .instance
            .client
            .probe(engine.as_str(), query, deadline)
            .await;
        if let Ok(answer) = &result {
            self.instance.note_probe(engine, answer);
        }
        result
    }

    async fn publish(&self) {
        self.inner.fleet.publish_breakers(&self.inner.fanout).await;
    }
}
