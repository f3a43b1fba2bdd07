//! The decision pipeline: cache → plan → fan out → fallback → merge → outcome. [`Gateway`] owns
//! every upstream client, breaker and the cache; the HTTP layer hands it one validated
//! [`SearchRequest`] and gets a [`Served`] answer back.
//!
//! - [`fanout`]: one request's fan-out, its rules as methods of a state type.
//! - [`calls`]: one SearXNG call and one provider call, each reporting to its breakers.
//! - [`engine_plan`]: which SearXNG engines a request may use, given the engine breakers.
//! - [`provider_rotation`]: which providers a request calls, in which order.
//! - [`slow_threshold`]: how long the fallback waits for a silent SearXNG.
//! - [`cooldown`]: when SearXNG itself is skipped.
//! - [`breaker_signals`]: what upstream facts mean for breakers.
//! - [`answer`], [`outcome`], [`failure`]: what a fan-out produces and how it is labelled.
//! - [`status`]: the `/status` document; [`background`]: the catalog refresh and cache sweep.

mod answer;
mod background;
mod breaker_signals;
mod calls;
mod cooldown;
mod engine_plan;
pub(crate) mod failure;
mod fanout;
mod metrics;
mod outcome;
mod provider_rotation;
mod slow_threshold;
pub(crate) mod status;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

pub(crate) use answer::Answer;
pub(crate) use metrics::Metrics;
pub(crate) use outcome::Outcome;

use crate::breaker::{Breaker, BreakerBoard, BreakerKind, BreakerPolicy, BreakerState};
use crate::cache::{AnswerCache, CacheCounters, CacheStatus, ComputationLost};
use crate::config::Config;
use crate::providers::quota::QuotaBoard;
use crate::providers::ProviderClient;
use crate::request::SearchRequest;
use crate::searxng::SearxngClient;
use crate::upstream::http_client;
use engine_plan::CatalogHandle;
use metrics::OutcomeLabels;
use provider_rotation::Rotation;
use slow_threshold::LatencyWindow;
use status::{BreakerStatus, CooldownStatus, ProviderStatus, SearxngStatus, Status};

/// Degraded or below-target answers are kept at most this long.
const SHORT_TTL: Duration = Duration::from_secs(60);
/// SearXNG counts as "answered recently" for `/readyz` within this window.
const READY_WINDOW: Duration = Duration::from_secs(120);

/// What a search produced for one client.
#[derive(Debug, Clone)]
pub(crate) struct Served {
    /// The answer (possibly shared with other requests, possibly from the cache).
    pub(crate) answer: Arc<Answer>,
    /// Hit, miss, or stale (every upstream failed; the last complete answer, and how long ago it
    /// expired — what `explain` will show).
    pub(crate) cache: CacheStatus,
    /// This request's outcome label (`cache_hit` on a hit).
    pub(crate) outcome: Outcome,
}

/// The gateway's decision engine. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Gateway {
    inner: Arc<Inner>,
}

/// Everything the pipeline owns, shared by every request.
struct Inner {
    config: Config,
    searxng: SearxngClient,
    /// The SearXNG cooldown: a breaker with its own threshold and fixed open period.
    cooldown: Arc<Breaker>,
    /// Active providers in `FALLBACK_PROVIDERS` order.
    providers: Vec<Arc<ProviderClient>>,
    rotation: Rotation,
    breakers: BreakerBoard,
    catalog: CatalogHandle,
    cache: AnswerCache<Arc<Answer>>,
    quota: QuotaBoard,
    metrics: Arc<Metrics>,
    latency: LatencyWindow,
    last_searxng_ok: Mutex<Option<Instant>>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("providers", &self.inner.providers.len())
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// Builds the pipeline from a validated configuration. Providers without a key are inactive
    /// (logged once here) and never called.
    pub(crate) fn new(config: Config, metrics: Metrics) -> Self {
        let http = http_client();
        let searxng = SearxngClient::new(
            http.clone(),
            config.searxng_url.clone(),
            config.searxng_timeout,
            metrics.searxng.clone(),
        );
        let quota = QuotaBoard::default();
        let mut providers = Vec::new();
        for kind in &config.fallback_providers {
            let client = config.provider(*kind).and_then(|settings| {
                ProviderClient::new(
                    settings,
                    http.clone(),
                    metrics.providers.clone(),
                    quota.clone(),
                )
            });
            match client {
                Some(client) => providers.push(Arc::new(client)),
                None => tracing::info!(
                    provider = kind.as_str(),
                    "provider inactive: {}_API_KEY is not set",
                    kind.env_prefix()
                ),
            }
        }
        let policy = BreakerPolicy {
            open_base: config.breaker_open,
            open_max: config.breaker_max_open,
            failure_threshold: config.breaker_failure_threshold,
            jitter: 0.1,
            // Envoy-style decay: each open_base spent healthy halves the multiplier again.
            healthy_interval: config.breaker_open,
            quota_park: config.quota_park,
        };
        let rotation = Rotation::new(config.provider_policy);
        let cooldown = Arc::new(cooldown::searxng_cooldown(&config, &metrics.breakers));
        let breakers = BreakerBoard::new(policy, metrics.breakers.clone());
        for provider in &providers {
            // Provider breakers exist up front so their series are there from the first scrape.
            breakers.get(BreakerKind::Provider, provider.kind().as_str());
        }
        let cache = AnswerCache::new(
            config.cache_size,
            config.cache_stale,
            CacheCounters {
                size: metrics.requests.cache_size.clone(),
                coalesced: metrics.requests.cache_coalesced.clone(),
                refreshes: metrics.requests.cache_refreshes.clone(),
            },
        );
        Self {
            inner: Arc::new(Inner {
                config,
                searxng,
                cooldown,
                providers,
                rotation,
                breakers,
                catalog: CatalogHandle::default(),
                cache,
                quota,
                metrics: Arc::new(metrics),
                latency: LatencyWindow::default(),
                last_searxng_ok: Mutex::new(None),
            }),
        }
    }

    /// The configuration in force.
    pub(crate) fn config(&self) -> &Config {
        &self.inner.config
    }

    /// Answers one search: from the cache, or by one fan-out shared by identical requests.
    pub(crate) async fn search(&self, req: SearchRequest) -> Result<Served, ComputationLost> {
        let started = Instant::now();
        let key = req.cache_key();
        let inner = Arc::clone(&self.inner);
        let (answer, cache) = self
            .inner
            .cache
            .get_or_compute(&key, move || fanout::run(inner, req))
            .await?;
        let m = &self.inner.metrics.requests;
        let outcome = match cache {
            // A stale answer comes from the cache too: one outcome per request, `cache_hit`, and
            // its own counter says why.
            CacheStatus::Hit => Outcome::CacheHit,
            CacheStatus::Stale { expired_for } => {
                m.cache_stale_served.inc();
                tracing::warn!(
                    expired_for_s = expired_for.as_secs(),
                    "every upstream failed: serving the last complete answer, stale"
                );
                Outcome::CacheHit
            }
            CacheStatus::Miss => answer.outcome,
        };
        let labels = OutcomeLabels { outcome };
        m.requests.get_or_create(&labels).inc();
        m.duration
            .get_or_create(&labels)
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
    pub(crate) fn is_ready(&self) -> bool {
        let searxng_recent = self
            .inner
            .last_searxng_ok
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
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

    fn mark_searxng_ok(inner: &Inner) {
        *inner
            .last_searxng_ok
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
    }

    /// Refreshes the gauges computed from time (breaker states, the cooldown) and renders the
    /// exposition, as OpenMetrics or Prometheus text.
    pub(crate) fn render_metrics(&self, openmetrics: bool) -> String {
        let inner = &self.inner;
        inner.breakers.refresh_metrics();
        inner.cooldown.refresh_metrics();
        let cooling = inner.cooldown.state() == BreakerState::Open;
        inner
            .metrics
            .requests
            .searxng_cooldown_active
            .set(i64::from(cooling));
        inner.metrics.render(openmetrics)
    }

    /// The `/status` document.
    pub(crate) fn status(&self) -> Status {
        let inner = &self.inner;
        let cooldown = inner.cooldown.snapshot();
        Status {
            breakers: inner
                .breakers
                .all()
                .iter()
                .map(|b| BreakerStatus::of(b))
                .collect(),
            providers: inner
                .config
                .fallback_providers
                .iter()
                .map(|kind| {
                    let active = inner.providers.iter().any(|p| p.kind() == *kind);
                    // Inactive providers have no breaker: asking the board would create one.
                    let parked = active
                        .then(|| inner.breakers.get(BreakerKind::Provider, kind.as_str()))
                        .and_then(|breaker| ProviderStatus::quota_parked_for(&breaker));
                    (kind, active, parked)
                })
                .map(|(kind, active, quota_parked_for_seconds)| ProviderStatus {
                    name: *kind,
                    active,
                    quota_parked_for_seconds,
                    quota_windows: inner
                        .quota
                        .windows(*kind)
                        .into_iter()
                        .map(Into::into)
                        .collect(),
                })
                .collect(),
            searxng: SearxngStatus {
                url: status::redact_url(&inner.config.searxng_url),
                cooldown: CooldownStatus {
                    state: cooldown.state,
                    open_for_seconds: cooldown.open_for,
                    consecutive_failures: cooldown.consecutive_failures,
                    trips: cooldown.trips,
                },
                engines_known: inner.catalog.get().map_or(0, |c| c.len()),
            },
            cache: status::CacheStatus {
                size: inner.cache.len(),
                capacity: inner.config.cache_size,
            },
        }
    }

    /// Runs the background work (see [`background`]) until `shutdown` resolves.
    pub(crate) async fn run_background(&self, shutdown: impl std::future::Future<Output = ()>) {
        background::run(Arc::clone(&self.inner), shutdown).await;
    }
}
