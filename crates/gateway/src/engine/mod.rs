//! The decision pipeline: cache → plan → fan out → fallback → merge → outcome. [`Gateway`] owns
//! every upstream client, breaker and the cache; the HTTP layer hands it one validated
//! [`SearchRequest`] and gets an [`Answer`] back.

pub mod answer;
pub mod engines;
mod fanout;
pub mod latency;
pub mod outcome;
pub mod roster;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::Instant;

pub use answer::{Answer, UpstreamFailure};
pub use outcome::Outcome;

use crate::breaker::{Breaker, BreakerBoard, BreakerConfig, BreakerKind, BreakerState};
use crate::cache::{AnswerCache, CacheStatus, ComputationLost};
use crate::config::Config;
use crate::metrics::Metrics;
use crate::providers::{ProviderClient, ProviderKind};
use crate::request::SearchRequest;
use crate::searxng::{EngineCatalog, SearxngClient};
use engines::CatalogHandle;
use latency::LatencyWindow;
use roster::Rotation;

/// Degraded or below-target answers are kept at most this long.
pub const SHORT_TTL: Duration = Duration::from_secs(60);
/// How often `/config` is read again.
pub const CATALOG_REFRESH: Duration = Duration::from_secs(300);
/// How often expired cache entries are dropped.
pub const CACHE_SWEEP: Duration = Duration::from_secs(10);
/// SearXNG counts as "answered recently" for `/readyz` within this window.
pub const READY_WINDOW: Duration = Duration::from_secs(120);

/// What a search produced for one client.
#[derive(Debug, Clone)]
pub struct Served {
    /// The answer (possibly shared with other requests, possibly from the cache).
    pub answer: Arc<Answer>,
    /// Hit or miss.
    pub cache: CacheStatus,
    /// This request's outcome label (`cache_hit` on a hit).
    pub outcome: Outcome,
}

/// The gateway's decision engine. Cheap to clone.
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) config: Config,
    pub(crate) searxng: SearxngClient,
    /// The SearXNG cooldown: a breaker with its own threshold and fixed open period.
    pub(crate) cooldown: Arc<Breaker>,
    /// Active providers in `FALLBACK_PROVIDERS` order.
    pub(crate) providers: Vec<Arc<ProviderClient>>,
    pub(crate) rotation: Rotation,
    pub(crate) breakers: BreakerBoard,
    pub(crate) catalog: CatalogHandle,
    pub(crate) cache: AnswerCache<Arc<Answer>>,
    pub(crate) metrics: Metrics,
    pub(crate) latency: LatencyWindow,
    pub(crate) last_searxng_ok: Mutex<Option<Instant>>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("providers", &self.inner.providers.len())
            .finish_non_exhaustive()
    }
}

/// Builds the HTTP client shared by every upstream: pooled keep-alive connections, no redirects.
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .pool_idle_timeout(Duration::from_secs(90))
        .pool_max_idle_per_host(64)
        .tcp_nodelay(true)
        .user_agent(concat!("searxng-gateway/", env!("CARGO_PKG_VERSION")))
        .build()
        .unwrap_or_else(|_| reqwest::Client::new())
}

impl Gateway {
    /// Builds the engine from a validated configuration. Providers without a key are inactive
    /// (logged once here) and never called.
    pub fn new(config: Config, metrics: Metrics) -> Self {
        let http = http_client();
        let searxng = SearxngClient::new(
            http.clone(),
            config.searxng_url.clone(),
            config.searxng_timeout,
            metrics.clone(),
        );
        let mut providers = Vec::new();
        for kind in &config.fallback_providers {
            match ProviderClient::new(config.provider(*kind), http.clone(), metrics.clone()) {
                Some(client) => providers.push(Arc::new(client)),
                None => tracing::info!(
                    provider = kind.as_str(),
                    "provider inactive: {}_API_KEY is not set",
                    kind.env_prefix()
                ),
            }
        }
        let breaker_config = BreakerConfig {
            open_base: config.breaker_open,
            open_max: config.breaker_max_open,
            failure_threshold: config.breaker_failure_threshold,
            jitter: 0.1,
            healthy_after: config.breaker_max_open,
        };
        let cooldown = Arc::new(searxng_cooldown(&config, &metrics));
        let breakers = BreakerBoard::new(breaker_config, metrics.clone());
        for provider in &providers {
            // Create provider breakers up front so their series exist from the first scrape.
            breakers.get(BreakerKind::Provider, provider.kind().as_str());
        }
        let names: Vec<&str> = Outcome::ALL.iter().map(|o| o.as_str()).collect();
        metrics.init_outcomes(&names);
        let cache = AnswerCache::new(
            config.cache_size,
            metrics.cache_size.clone(),
            metrics.cache_coalesced.clone(),
        );
        Self {
            inner: Arc::new(Inner {
                config,
                searxng,
                cooldown,
                providers,
                rotation: Rotation::default(),
                breakers,
                catalog: CatalogHandle::default(),
                cache,
                metrics,
                latency: LatencyWindow::default(),
                last_searxng_ok: Mutex::new(None),
            }),
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// Active providers, in configured order.
    pub fn active_providers(&self) -> Vec<ProviderKind> {
        self.inner.providers.iter().map(|p| p.kind()).collect()
    }

    /// Answers one search: from the cache, or by one fan-out shared by identical requests.
    pub async fn search(&self, req: SearchRequest) -> Result<Served, ComputationLost> {
        let started = Instant::now();
        let key = req.cache_key();
        let inner = Arc::clone(&self.inner);
        let (answer, cache) = self
            .inner
            .cache
            .get_or_compute(&key, move || fanout::run(inner, req))
            .await?;
        let outcome = match cache {
            CacheStatus::Hit => Outcome::CacheHit,
            CacheStatus::Miss => answer.outcome,
        };
        let m = &self.inner.metrics;
        m.requests.with_label_values(&[outcome.as_str()]).inc();
        m.request_duration
            .with_label_values(&[outcome.as_str()])
            .observe(started.elapsed().as_secs_f64());
        m.results_count.observe(answer.result_count as f64);
        m.engines_count.observe(answer.engine_count as f64);
        Ok(Served {
            answer,
            cache,
            outcome,
        })
    }

    /// Ready when SearXNG answered recently or at least one provider is usable.
    pub fn is_ready(&self) -> bool {
        let searxng_recent = self
            .inner
            .last_searxng_ok
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some_and(|at| at.elapsed() < READY_WINDOW);
        searxng_recent
            || self.inner.providers.iter().any(|p| {
                self.inner
                    .breakers
                    .get(BreakerKind::Provider, p.kind().as_str())
                    .state()
                    != BreakerState::Open
            })
    }

    pub(crate) fn mark_searxng_ok(inner: &Inner) {
        *inner
            .last_searxng_ok
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
    }

    /// Refreshes gauges computed from time (breaker states, cooldown) and renders the exposition.
    pub fn render_metrics(&self) -> Vec<u8> {
        let inner = &self.inner;
        inner.breakers.refresh_metrics();
        inner.cooldown.refresh_metrics();
        let cooling = inner.cooldown.state() == BreakerState::Open;
        inner
            .metrics
            .searxng_cooldown_active
            .set(i64::from(cooling));
        inner.metrics.render()
    }

    /// The `/status` document: every breaker, provider quota windows, the cooldown, the cache.
    pub fn status(&self) -> Value {
        let inner = &self.inner;
        let breakers: Vec<Value> = inner
            .breakers
            .list()
            .into_iter()
            .map(|(kind, name, snap)| {
                json!({
                    "namespace": kind.as_str(),
                    "name": name,
                    "state": snap.state.as_str(),
                    "reason": snap.reason.map(|r| r.as_str()),
                    "open_for_seconds": snap.open_for.map(|d| d.as_secs_f64()),
                    "trips": snap.trips,
                    "consecutive_failures": snap.consecutive_failures,
                })
            })
            .collect();
        let cooldown = inner.cooldown.snapshot();
        let providers: Vec<Value> = inner
            .config
            .fallback_providers
            .iter()
            .map(|kind| {
                let active = inner.providers.iter().any(|p| p.kind() == *kind);
                let quota = if *kind == ProviderKind::Brave {
                    brave_windows(&inner.metrics)
                } else {
                    Value::Array(Vec::new())
                };
                json!({"name": kind.as_str(), "active": active, "quota_windows": quota})
            })
            .collect();
        json!({
            "breakers": breakers,
            "providers": providers,
            "searxng": {
                "url": redact_url(&inner.config.searxng_url),
                "cooldown": {
                    "state": cooldown.state.as_str(),
                    "open_for_seconds": cooldown.open_for.map(|d| d.as_secs_f64()),
                    "consecutive_failures": cooldown.consecutive_failures,
                    "trips": cooldown.trips,
                },
                "engines_known": inner.catalog.get().map_or(0, |c| c.len()),
            },
            "cache": {"size": inner.cache.len(), "capacity": inner.config.cache_size},
        })
    }

    /// Runs the background work until `shutdown` resolves: the `/config` refresher (at start,
    /// every [`CATALOG_REFRESH`], and early when an unknown engine is seen) and the cache sweep.
    pub async fn run_background(&self, shutdown: impl std::future::Future<Output = ()>) {
        let inner = Arc::clone(&self.inner);
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
                    // Expired entries leave, so `cache_size` counts only live answers.
                    _ = sweep.tick() => inner.cache.purge_expired(),
                }
            }
        };
        tokio::select! {
            () = work => {}
            () = shutdown => {}
        }
    }
}

/// The SearXNG cooldown: after `SEARXNG_FAIL_THRESHOLD` consecutive failed calls SearXNG is skipped
/// for `SEARXNG_FAIL_COOLDOWN_SECONDS` (no growth, no jitter), then exactly one request probes it.
/// It is a breaker of its own kind, so it shares the state machine and its tests.
pub fn searxng_cooldown(config: &Config, metrics: &Metrics) -> Breaker {
    Breaker::new(
        BreakerKind::Searxng,
        "searxng",
        BreakerConfig {
            open_base: config.searxng_fail_cooldown,
            open_max: config.searxng_fail_cooldown,
            failure_threshold: config.searxng_fail_threshold,
            jitter: 0.0,
            healthy_after: config.searxng_fail_cooldown,
        },
        metrics,
    )
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

fn brave_windows(metrics: &Metrics) -> Value {
    use prometheus::core::Collector;
    let mut windows = serde_json::Map::new();
    let families = [
        ("remaining", metrics.brave_rate_limit_remaining.collect()),
        ("limit", metrics.brave_rate_limit_limit.collect()),
        ("reset_seconds", metrics.brave_rate_limit_reset.collect()),
    ];
    for (field, mfs) in families {
        for mf in mfs {
            for m in mf.get_metric() {
                let window = m
                    .get_label()
                    .iter()
                    .find(|l| l.name() == "window")
                    .map(|l| l.value().to_owned())
                    .unwrap_or_default();
                let entry = windows
                    .entry(window.clone())
                    .or_insert_with(|| json!({"window": window}));
                entry[field] = json!(m.get_gauge().get_value());
            }
        }
    }
    Value::Array(windows.into_iter().map(|(_, v)| v).collect())
}

/// The URL without credentials, for `/status` and logs.
pub fn redact_url(url: &url::Url) -> String {
    let mut shown = url.clone();
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::breaker::Signal;

    fn config(vars: &[(&str, &str)]) -> Config {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect();
        Config::from_lookup(&move |name| {
            vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
        .unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn the_cooldown_starts_at_the_threshold_and_ends_with_one_probe() {
        let c = config(&[
            ("SEARXNG_FAIL_THRESHOLD", "3"),
            ("SEARXNG_FAIL_COOLDOWN_SECONDS", "180"),
        ]);
        let cooldown = Arc::new(searxng_cooldown(&c, &Metrics::new()));
        for _ in 0..2 {
            cooldown.admit().unwrap().record(Signal::Transient);
        }
        assert_eq!(
            cooldown.state(),
            BreakerState::Closed,
            "below the threshold"
        );
        cooldown.admit().unwrap().record(Signal::Transient);
        assert!(cooldown.admit().is_none(), "skipped during the cooldown");

        tokio::time::advance(Duration::from_secs(179)).await;
        assert!(cooldown.admit().is_none());
        tokio::time::advance(Duration::from_secs(2)).await;
        let probe = cooldown.admit().expect("the cooldown is over");
        assert!(probe.is_probe());
        assert!(cooldown.admit().is_none(), "only one probe");
        probe.record(Signal::Transient);
        tokio::time::advance(Duration::from_secs(179)).await;
        assert!(
            cooldown.admit().is_none(),
            "a failed probe starts another cooldown of the same length"
        );
        tokio::time::advance(Duration::from_secs(2)).await;
        cooldown.admit().unwrap().record(Signal::Success);
        assert_eq!(cooldown.state(), BreakerState::Closed);
    }

    #[tokio::test(start_paused = true)]
    async fn a_success_resets_the_failure_run_and_a_dropped_probe_is_no_failure() {
        let c = config(&[
            ("SEARXNG_FAIL_THRESHOLD", "2"),
            ("SEARXNG_FAIL_COOLDOWN_SECONDS", "10"),
        ]);
        let cooldown = Arc::new(searxng_cooldown(&c, &Metrics::new()));
        cooldown.admit().unwrap().record(Signal::Transient);
        cooldown.admit().unwrap().record(Signal::Success);
        cooldown.admit().unwrap().record(Signal::Transient);
        assert_eq!(cooldown.state(), BreakerState::Closed);
        cooldown.admit().unwrap().record(Signal::Transient);
        tokio::time::advance(Duration::from_secs(11)).await;
        drop(cooldown.admit().unwrap()); // the client hung up during the probe
        assert!(cooldown.admit().is_some(), "the next request may probe");
    }
}
