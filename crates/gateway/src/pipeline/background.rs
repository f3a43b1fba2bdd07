//! The pipeline's background work, owned by [`super::Gateway::run_background`]: SearXNG's engine
//! catalog (read at start, every [`CATALOG_REFRESH`], and early when an answer names an engine the
//! catalog does not know), the engine health SearXNG already knows (its `/stats/errors`, read
//! after each catalog read: an engine SearXNG saw blocked on at least [`SEED_MIN_PERCENT`] of its
//! requests starts with its breaker open, unless our own calls said something about it since the
//! last read), and the cache sweep that keeps `cache_size` counting live answers only.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::{breaker_signals, Gateway, Inner};
use crate::breaker::BreakerKind;
use crate::searxng::engine_errors::blocked_engines;
use crate::searxng::EngineCatalog;

/// How often `/config` is read again.
const CATALOG_REFRESH: Duration = Duration::from_secs(300);
/// An engine SearXNG reports blocked on at least this share of its requests is seeded open.
const SEED_MIN_PERCENT: f64 = 50.0;
/// How often expired cache entries are dropped.
const CACHE_SWEEP: Duration = Duration::from_secs(10);

/// Runs until `shutdown` resolves.
pub(super) async fn run(inner: Arc<Inner>, shutdown: impl Future<Output = ()>) {
    let work = async move {
        let mut health_read: Option<Instant> = None;
        refresh_catalog(&inner, true).await;
        seed_engine_health(&inner, &mut health_read).await;
        let mut refresh = tokio::time::interval(CATALOG_REFRESH);
        refresh.reset();
        let mut sweep = tokio::time::interval(CACHE_SWEEP);
        loop {
            tokio::select! {
                _ = refresh.tick() => {
                    refresh_catalog(&inner, false).await;
                    seed_engine_health(&inner, &mut health_read).await;
                }
                () = inner.catalog.refresh.notified() => {
                    // Several unknown names in a burst: one refresh.
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    refresh_catalog(&inner, false).await;
                }
                _ = sweep.tick() => inner.cache.purge_expired(),
            }
        }
    };
    tokio::select! {
        () = work => {}
        () = shutdown => {}
    }
}

async fn refresh_catalog(inner: &Inner, first: bool) {
    let timeout = Duration::from_secs(10);
    if first {
        match inner.searxng.json_enabled(timeout).await {
            Ok(false) => tracing::error!(
                "SearXNG answers 403 to format=json: enable JSON in its settings.yml (search.formats: [html, json])"
            ),
            Ok(true) => {}
            Err(err) => tracing::warn!(
                error_class = err.class.as_str(),
                "SearXNG is not reachable yet; premium providers (if any) will answer meanwhile"
            ),
        }
    }
    match inner.searxng.fetch_config(timeout).await {
        Ok(config) => match EngineCatalog::from_config(&config) {
            Some(catalog) => {
                tracing::debug!(engines = catalog.len(), "SearXNG engine catalog refreshed");
                inner.catalog.set(catalog);
                Gateway::mark_searxng_ok(inner);
            }
            None => tracing::warn!(
                "SearXNG /config has no engines list; engine breakers cannot exclude engines"
            ),
        },
        Err(err) => tracing::debug!(
            error_class = err.class.as_str(),
            "SearXNG /config unavailable"
        ),
    }
}

/// Opens the breakers of engines SearXNG's `/stats/errors` reports blocked, so no user request has
/// to discover the block. Only names the catalog knows; nothing when SearXNG does not expose it.
async fn seed_engine_health(inner: &Inner, last_read: &mut Option<Instant>) {
    let Some(catalog) = inner.catalog.get() else {
        return;
    };
    let read_at = Instant::now();
    let stats = match inner
        .searxng
        .fetch_engine_errors(Duration::from_secs(10))
        .await
    {
        Ok(stats) => stats,
        Err(err) => {
            tracing::debug!(
                error_class = err.class.as_str(),
                "SearXNG /stats/errors unavailable: engine health is learned from searches alone"
            );
            return;
        }
    };
    for blocked in blocked_engines(&stats) {
        if blocked.percentage < SEED_MIN_PERCENT || !catalog.knows(&blocked.engine) {
            continue;
        }
        let breaker = inner.breakers.get(BreakerKind::Engine, &blocked.engine);
        if breaker.seed(breaker_signals::for_engine(blocked.reason), *last_read) {
            tracing::info!(
                engine = %blocked.engine,
                reason = blocked.reason.as_str(),
                percentage = blocked.percentage,
                "engine breaker opened from SearXNG's own error record (/stats/errors)"
            );
        }
    }
    *last_read = Some(read_at);
}
