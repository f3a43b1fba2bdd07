//! The pipeline's background work, owned by [`super::Gateway::run_background`]: each SearXNG
//! instance's engine catalog (read at start, every [`CATALOG_REFRESH`], and early when an answer
//! names an engine the catalog does not know) and the cache sweep that keeps `cache_size` counting
//! live answers only.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::pool::Instance;
use super::{Gateway, Inner};
use crate::searxng::EngineCatalog;

/// How often `/config` is read again.
const CATALOG_REFRESH: Duration = Duration::from_secs(300);
/// How often expired cache entries are dropped.
const CACHE_SWEEP: Duration = Duration::from_secs(10);

/// Runs until `shutdown` resolves.
pub(super) async fn run(inner: Arc<Inner>, shutdown: impl Future<Output = ()>) {
    let catalogs = futures::future::join_all(
        (0..inner.pool.instances().len()).map(|index| keep_catalog(&inner, index)),
    );
    let sweep = async {
        let mut sweep = tokio::time::interval(CACHE_SWEEP);
        loop {
            sweep.tick().await;
            inner.cache.purge_expired();
        }
    };
    tokio::select! {
        _ = catalogs => {}
        () = sweep => {}
        () = shutdown => {}
    }
}

/// Keeps instance `index`'s catalog fresh, forever.
async fn keep_catalog(inner: &Inner, index: usize) {
    let instance = inner.pool.get(index);
    refresh_catalog(inner, instance, true).await;
    let mut refresh = tokio::time::interval(CATALOG_REFRESH);
    refresh.reset();
    loop {
        tokio::select! {
            _ = refresh.tick() => refresh_catalog(inner, instance, false).await,
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
                Gateway::mark_searxng_ok(inner);
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
