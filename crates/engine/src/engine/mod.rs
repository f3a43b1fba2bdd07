//! The engine: [`Engine`] owns every upstream client, breaker and cache, and is what the doors
//! hold. A door hands it one validated [`SearchRequest`](gateway_core::request::SearchRequest) and
//! gets a [`Served`] answer back, or a [`ReadRequest`] and a [`PageRead`]; the decisions are made
//! by the modules below it (`search`, `searxng_pool`, `read`, `fleet`, `operator`).
//!
//! - this file: the engine's parts and how they are built from [`EngineSettings`];
//! - [`served`]: a search from the cache or one shared fan-out, counted once;
//! - [`readiness`]: `/readyz`; [`status`]: the `/status` document and the admin's breaker switch;
//! - [`metrics`]: every family on one registry;
//! - [`background`]: the catalog refresh, the engine probes, the cache sweep, the fleet's ping;
//! - [`persisted`]: the open breakers and the spend, out to `STATE_DIR` and back at start.

mod background;
mod metrics;
mod persisted;
mod readiness;
mod served;
mod status;

#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

pub use metrics::Metrics;
pub use persisted::Restored;
pub use readiness::NotReady;
pub use served::{SearchError, Served};

use crate::fleet::Fleet;
use crate::operator::traffic;
use crate::read::passages::rerank::Reranking;
use crate::read::passages::{self, Fallback, PageText, Passage, PassageSelector, Ranked, Splits};
use crate::read::{PageRead, ReadRequest, ReadSettings, Reading};
use crate::search::admission::LoadAdmission;
use crate::search::answer::FanOutResult;
use crate::search::provider_rotation::{Breakers, Rotation};
use crate::search::spend::GlobalSpend;
use crate::search::upstreams::{FanOutContext, FanOutSettings, PremiumSide, SearxngSide};
use crate::search::Premium;
use crate::searxng_pool::cooldown::CooldownSettings;
use crate::searxng_pool::{PoolSettings, SearxngPool};
use crate::settings::{EngineSettings, TrafficRing};
use gateway_core::breaker::{BreakerBoard, BreakerPolicy};
use gateway_core::cache::{AnswerCache, CacheCounters};
use gateway_core::persist::{OpenBreaker, Snapshot, SpendEntry};
use gateway_core::request::CacheKey;
use gateway_core::shared::SharedTier;
use gateway_core::upstream::{SetupError, UpstreamHttp};
use gateway_upstreams::providers::quota::QuotaBoard;
use gateway_upstreams::providers::readers::PremiumReader;
use gateway_upstreams::providers::ProviderClient;
use gateway_upstreams::reader::{Reader, SystemLookup};
use gateway_upstreams::reranker::{Reranker, Scored};

/// The gateway's decision engine. Cheap to clone.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

/// Everything the engine owns, shared by every request.
struct Inner {
    settings: EngineSettings,
    /// What a fan-out calls and how: the SearXNG side, the premium side, its numbers, its slots.
    fanout: FanOutContext,
    cache: AnswerCache<CacheKey, FanOutResult>,
    /// The link to the other replicas (`REDIS_URL`); a fleet of one without it.
    fleet: Arc<Fleet>,
    metrics: Arc<Metrics>,
    /// Reading pages: the direct reader, the premium readers, their breakers and cache.
    reading: Reading,
    /// The last 15 minutes per second, for the operator's page; `None` without the page.
    traffic: Option<traffic::Traffic>,
    /// Crawls and batch scrapes running in this process.
    crawls: crate::crawl::Crawls,
    /// The passage reranker (`RERANK_URL`); `None`: passages are ranked lexically only.
    reranking: Option<Reranking>,
    /// Read pages' splits into passages, kept while the pages are (within `FETCH_CACHE_BYTES`).
    splits: Splits,
}

/// What a cached answer weighs: its JSON's bytes (a shed verdict is never cached).
fn answer_bytes(result: &FanOutResult) -> usize {
    result.as_ref().map_or(0, |answer| answer.json.len())
}

/// The premium readers of `READ_PROVIDERS` that have a key, in order (the others are logged once,
/// inactive: keyless reads are direct only).
fn premium_readers(
    config: &EngineSettings,
    http: &UpstreamHttp,
    metrics: &Metrics,
) -> Vec<Arc<PremiumReader>> {
    let mut readers = Vec::new();
    for kind in &config.read_providers {
        let reader = config
            .premium_readers
            .iter()
            .find(|s| s.kind == *kind)
            .and_then(|settings| {
                PremiumReader::new(settings, http.clone(), metrics.reader_calls.clone())
            });
        match reader {
            Some(reader) => readers.push(Arc::new(reader)),
            None => tracing::info!(
                reader = kind.as_str(),
                "premium reader inactive: {}_API_KEY is not set",
                kind.env_prefix()
            ),
        }
    }
    readers
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("providers", &self.inner.fanout.premium.providers.len())
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// Builds the engine from a validated configuration. Providers without a key are inactive
    /// (logged once here) and never called. An error when the upstream HTTP clients cannot be
    /// built (their TLS set-up).
    pub fn new(config: EngineSettings, metrics: Metrics) -> Result<Self, SetupError> {
        let http = UpstreamHttp::new(config.runtime.pools())?;
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
            jitter: config.breaker_jitter,
            // Envoy-style decay: each open_base spent healthy halves the multiplier again.
            healthy_interval: config.breaker_open,
            quota_park: config.quota_park,
        };
        let pool = SearxngPool::new(
            &PoolSettings {
                backends: config.searxng.clone(),
                attempt_timeout: config.searxng_timeout,
                cooldown: CooldownSettings {
                    threshold: config.searxng_fail_threshold,
                    period: config.searxng_fail_cooldown,
                    max_period: config.searxng_max_cooldown,
                    jitter: config.breaker_jitter,
                },
            },
            &http,
            &metrics.searxng,
            &metrics.breakers,
            &metrics.requests.searxng_cooldown_active,
            policy,
        );
        let rotation = Rotation::new(config.provider_policy);
        let breakers = BreakerBoard::new(policy, metrics.breakers.clone());
        let key_breakers = BreakerBoard::new(policy, metrics.breakers.clone());
        let linked = Breakers {
            providers: &breakers,
            keys: &key_breakers,
        };
        for provider in &providers {
            // Provider and key breakers exist up front so their series are there from the first
            // scrape, and each provider stands for its keys from the start: a key left open by
            // STATE_DIR, an operator or another replica shows on the provider before any miss.
            linked.of_provider(provider);
        }
        let cache = AnswerCache::new_weighed(
            config.cache_size,
            answer_bytes,
            config.cache_stale,
            CacheCounters {
                size: metrics.requests.cache_size.clone(),
                coalesced: metrics.requests.cache_coalesced.clone(),
                refreshes: metrics.requests.cache_refreshes.clone(),
                bytes: Default::default(),
            },
        );
        let shared = config.redis.as_ref().and_then(|settings| {
            SharedTier::new(settings, metrics.shared.clone())
                .inspect_err(|e| tracing::error!("{e}: running without the shared tier"))
                .ok()
        });
        let fanout = FanOutContext {
            searxng: Arc::new(SearxngSide::new(
                pool,
                metrics.requests.engine_exclusion_overridden.clone(),
            )),
            premium: Arc::new(PremiumSide {
                providers,
                rotation,
                breakers,
                key_breakers,
                quota,
                spend: GlobalSpend::new(config.premium_usd_per_day),
            }),
            settings: FanOutSettings {
                t1_premium_count: config.t1_premium_count,
                sufficient_min_results: config.sufficient_min_results,
                searxng_slow: config.searxng_slow,
                searxng_hedge: config.searxng_hedge,
                cache_ttl: config.cache_ttl,
                request_budget: config.request_budget,
            },
            admission: LoadAdmission::new(
                config.shedding.max_concurrent_misses,
                config.shedding.max_wait,
            ),
            searxng_skipped: metrics.requests.searxng_skipped.clone(),
        };
        let reading = Reading::new(
            Reader::new(
                &config.reader,
                Arc::new(SystemLookup),
                metrics.reader.clone(),
            ),
            premium_readers(&config, &http, &metrics),
            policy,
            BreakerBoard::new(policy, metrics.breakers.clone()),
            shared.clone(),
            metrics.reads.clone(),
            ReadSettings {
                per_host: config.fetch_per_host,
                cache_ttl: config.fetch_cache_ttl,
                cache_bytes: config.fetch_cache_bytes,
                timeout: config.reader.timeout,
                stale: config.cache_stale,
            },
        );
        let reranking = config.reranker.as_ref().map(|settings| {
            Reranking::new(
                Reranker::new(settings, http.clone()),
                policy,
                &metrics.breakers,
                metrics.reranks.clone(),
            )
        });
        // Kept only while the page that reads it is served.
        let ring = (config.traffic == TrafficRing::Kept).then(traffic::Traffic::default);
        let mut metrics = metrics;
        let crawls = crate::crawl::Crawls::new(
            reading.clone(),
            config.crawl,
            config.webhook_secret.clone(),
            shared.clone(),
            metrics.registry_mut(),
        );
        let fetch_cache_bytes = config.fetch_cache_bytes;
        Ok(Self {
            inner: Arc::new(Inner {
                settings: config,
                fanout,
                cache,
                fleet: Arc::new(Fleet::new(shared)),
                metrics: Arc::new(metrics),
                reading,
                traffic: ring,
                crawls,
                reranking,
                splits: Splits::new(fetch_cache_bytes),
            }),
        })
    }

    /// The settings in force.
    pub fn settings(&self) -> &EngineSettings {
        &self.inner.settings
    }

    /// Reads one page for a client whose premium budget says `premium`, within `budget`
    /// ([`read`]).
    pub async fn read(&self, req: ReadRequest, premium: Premium, budget: Duration) -> PageRead {
        self.inner.reading.read(req, premium, budget).await
    }

    /// Whether pages may be rendered in the local browser (`BROWSER` on and a Chromium found).
    pub fn renders(&self) -> bool {
        self.inner.reading.renders()
    }

    /// The screenshot of `url` in the local browser, given `wait_for` after its load, within
    /// `budget` ([`crate::read`]'s screenshot: never cached).
    pub async fn screenshot(
        &self,
        url: &url::Url,
        shot: gateway_upstreams::reader::Shot,
        wait_for: Option<Duration>,
        budget: Duration,
    ) -> Result<gateway_upstreams::reader::Screenshot, gateway_upstreams::reader::ReadFailure> {
        self.inner
            .reading
            .screenshot(url, shot, wait_for, budget)
            .await
    }

    /// The crawls and batch scrapes of this process ([`crate::crawl`]).
    pub fn crawls(&self) -> &crate::crawl::Crawls {
        &self.inner.crawls
    }

    /// Maps a site: its URLs from its sitemaps and its start page's links, within `budget`
    /// ([`crate::read::site_map`]).
    pub async fn map(
        &self,
        request: crate::read::site_map::MapRequest,
        premium: Premium,
        budget: Duration,
    ) -> Result<crate::read::site_map::SiteMap, gateway_upstreams::reader::ReadFailure> {
        self.inner.reading.map(request, premium, budget).await
    }

    /// Chooses the passages of read pages that answer a query, budgets counted with
    /// `TOKENIZER_ENCODING`, ranked lexically ([`crate::read::passages`]);
    /// [`Engine::rank_passages`] reranks too.
    pub fn passages(&self) -> PassageSelector {
        PassageSelector::new(self.inner.settings.tokenizer)
    }

    /// Whether a reranker (`RERANK_URL`) re-scores passages.
    pub fn reranks(&self) -> bool {
        self.inner.reranking.is_some()
    }

    /// A client's `texts` ordered for `query` by the reranker (`RERANK_URL`), the best first
    /// with its scores, every text sent (the `/v1/rerank` door), within `limit`: `None` without
    /// a reranker, `Some(Err(why))` when it could not be used (counted as a passage ranking's
    /// fallback is).
    pub async fn rerank_texts(
        &self,
        query: &str,
        texts: &[&str],
        limit: Duration,
    ) -> Option<Result<Vec<Scored>, Fallback>> {
        let reranking = self.inner.reranking.as_ref()?;
        Some(reranking.score(query, texts, limit).await)
    }

    /// The passages of `pages` split to at most `max_chars` each and ranked for `query` as
    /// one corpus: lexically on the blocking pool, then, when a reranker is configured, its best
    /// candidates reordered by it within `RERANK_TIMEOUT_SECONDS` and `limit` (what is left of
    /// the request's budget; the lexical order when it cannot be used: [`Ranked::ranked_by`]
    /// says which). A door chooses from the result.
    pub async fn rank_passages<P: PageText>(
        &self,
        pages: Vec<P>,
        query: String,
        max_chars: usize,
        limit: Duration,
    ) -> Ranked {
        let selector = self.passages();
        let asked = query.clone();
        let splits = self.inner.splits.clone();
        let ranked = tokio::task::spawn_blocking(move || {
            let split: Vec<Arc<[Passage]>> = pages
                .iter()
                .map(|page| match page.document() {
                    Some(document) => splits.of(document, max_chars),
                    None => passages::split(page.text(), max_chars).into(),
                })
                .collect();
            let pages: Vec<(&[Passage], Option<&str>)> = split
                .iter()
                .zip(&pages)
                .map(|(split, page)| (&split[..], page.title()))
                .collect();
            selector.rank_split(&pages, &asked)
        })
        .await;
        let Ok(mut ranked) = ranked else {
            return Ranked::empty(selector.counter());
        };
        if let Some(reranking) = &self.inner.reranking {
            reranking.rerank(&mut ranked, &query, limit).await;
        }
        ranked
    }

    /// Drops every cached answer and page (`None`), or the answers of one query whatever their
    /// other parameters; returns how many went.
    pub fn purge_cache(&self, query: Option<&str>) -> usize {
        match query {
            None => {
                self.inner.splits.clear();
                self.inner.cache.purge(|_| true) + self.inner.reading.purge()
            }
            Some(query) => self.inner.cache.purge(|key| key.is_of_query(query)),
        }
    }

    /// The open breakers and the premium spend, for `STATE_DIR` ([`persisted`]).
    pub fn export_state(&self) -> (Vec<OpenBreaker>, Vec<SpendEntry>) {
        persisted::export(&self.inner)
    }

    /// Takes back what an earlier process wrote to `STATE_DIR` (at start, before serving).
    pub fn restore_state(&self, snapshot: &Snapshot) -> Restored {
        persisted::restore(&self.inner, snapshot)
    }

    /// The Redis tier this gateway shares with its replicas, if any: the clients' limits are
    /// counted there too.
    pub fn shared_tier(&self) -> Option<SharedTier> {
        self.inner.fleet.tier().cloned()
    }

    /// Whether `PREMIUM_USD_PER_DAY` is spent: every request is answered from SearXNG and the
    /// cache only.
    pub fn premium_capped(&self) -> bool {
        self.inner.fanout.premium.spend.capped()
    }

    /// Refreshes the gauges computed from time (breaker states, the cooldown) and renders the
    /// exposition, as OpenMetrics or Prometheus text.
    pub fn render_metrics(&self, openmetrics: bool) -> String {
        let inner = &self.inner;
        inner.fanout.premium.breakers.refresh_metrics();
        inner.fanout.premium.key_breakers.refresh_metrics();
        inner.reading.refresh_metrics();
        if let Some(reranking) = &inner.reranking {
            reranking.breaker().refresh_metrics();
        }
        inner
            .fanout
            .searxng
            .pool
            .refresh_metrics(&inner.metrics.requests.searxng_cooldown_active);
        inner.metrics.render(openmetrics)
    }

    /// The last 15 minutes of answered and shed searches ([`traffic`]); `None` when the
    /// operator's page is off (`UI_ENABLED=false`: nothing is recorded).
    pub fn traffic(&self) -> Option<traffic::TrafficWindow> {
        self.inner.traffic.as_ref().map(traffic::Traffic::window)
    }

    /// Runs the background work (see [`background`]) until `shutdown` resolves.
    pub async fn run_background(&self, shutdown: impl std::future::Future<Output = ()>) {
        background::run(Arc::clone(&self.inner), shutdown).await;
    }
}
