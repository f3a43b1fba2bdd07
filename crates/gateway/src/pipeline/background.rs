//! The pipeline's background work, owned by [`super::Gateway::run_background`]: SearXNG's engine
//! catalog (read at start, every [`CATALOG_REFRESH`], and early when an answer names an engine the
//! catalog does not know) and the cache sweep that keeps `cache_size` counting live answers only.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::{Gateway, Inner};
use crate::searxng::EngineCatalog;

/// How often `/config` is read again.
const CATALOG_REFRESH: Duration = Duration::from_secs(300);
/// How often expired cache entries are dropped.
const CACHE_SWEEP: Duration = Duration::from_secs(10);

/// Runs until `shutdown` resolves.
pub(super) async fn run(inner: Arc<Inner>, shutdown: impl Future<Output = ()>) {
    let work = async move {
        refresh_catalog(&inner, true).await;
        let mut refresh = tokio::time::interval(CATALOG_REFRESH);
        refresh.reset();
        let mut sweep = tokio::time::interval(CACHE_SWEEP);
        loop {
            tokio::select! {
                _ = refresh.tick() => refresh_catalog(&inner, false).await,
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
