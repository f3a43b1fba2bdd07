//! The decision pipeline: cache → plan → fan out → fallback → merge → outcome. [`Engine`] owns
//! every upstream client, breaker and the cache; the HTTP layer hands it one validated
//! [`SearchRequest`] and gets a [`Served`] answer back.
//!
//! - [`admission`]: load shedding — how many fan-outs may run at once.
//! - [`fanout`]: one request's fan-out, its rules as methods of a state type.
//! - [`calls`]: one provider call, and what a call reports to the fan-out.
//! - [`searxng_call`]: one SearXNG call, its attempts across the pool, reporting to the breakers.
//! - [`pool`]: the SearXNG instances, each with its catalog, cooldown and engine breakers, and the
//!   rule that picks one per attempt.
//! - [`engine_plan`]: which SearXNG engines a request may use, given the engine breakers.
//! - [`engine_probes`]: the gateway's own probe of each blocked engine whose open period ended
//!   (never inside a client's search), asking a recent popular query ([`recent_queries`]), timed
//!   by what the engine is worth to clients ([`engine_value`]).
//! - [`provider_rotation`]: which providers a request calls, in which order.
//! - [`slow_threshold`]: how long the fallback waits for a silent SearXNG, and when it does not
//!   wait at all (the hedge).
//! - [`cooldown`]: when a SearXNG instance itself is skipped.
//! - [`breaker_signals`]: what upstream facts mean for breakers.
//! - [`shared_answer`], [`shared_breakers`], [`shared_quota`]: a miss, the breakers and the
//!   providers' quota windows across replicas, through the shared Redis tier (`REDIS_URL`).
//! - [`persisted`]: the open breakers and the spend, out to `STATE_DIR` and back at start.
//! - [`answer`], [`outcome`], [`failure`]: what a fan-out produces and how it is labelled;
//!   [`explain`]: the record of what the fan-out did, kept with its answer.
//! - [`status`]: the `/status` document; [`background`]: the catalog refresh and cache sweep;
//!   [`traffic`]: the last 15 minutes of outcomes and latencies, per second, for the operator's
//!   page.

pub(crate) mod admission;
mod answer;
mod background;
mod breaker_signals;
mod calls;
mod cooldown;
mod engine_plan;
mod engine_probes;
mod engine_value;
pub mod explain;
mod failing_engines;
pub(crate) mod failure;
mod fanout;
mod metrics;
mod outcome;
mod persisted;
mod pool;
mod provider_rotation;
pub mod read;
mod recent_queries;
mod searxng_call;
mod shared_answer;
mod shared_breakers;
mod shared_quota;
mod slow_threshold;
mod spend;
pub mod status;
pub mod traffic;
mod upstreams;

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tracing::field::Empty;

use admission::{Admission, Overloaded};
pub use answer::Answer;
#[cfg(feature = "bench")]
pub use fanout::finish_answered;
pub use metrics::Metrics;
pub use outcome::Outcome;
pub(crate) use persisted::Restored;

use crate::settings::{EngineSettings, TrafficRing};
use cooldown::CooldownSettings;
use gateway_core::breaker::{BreakerBoard, BreakerKind, BreakerPolicy, BreakerState};
use gateway_core::cache::CacheStatus;
use gateway_core::cache::{AnswerCache, CacheCounters, ComputationLost};
use gateway_core::persist::{OpenBreaker, Snapshot, SpendEntry};
use gateway_core::request::{AnswerScope, CacheKey, SearchRequest, Surface};
use gateway_core::shared::SharedTier;
use gateway_core::trace::TARGET;
use gateway_core::upstream::{SetupError, UpstreamHttp};
use gateway_upstreams::providers::quota::QuotaBoard;
use gateway_upstreams::providers::readers::PremiumReader;
use gateway_upstreams::providers::ProviderClient;
use gateway_upstreams::reader::{Reader, SystemLookup};
use metrics::{OutcomeLabels, SurfaceLabels};
use pool::{PoolSettings, SearxngPool};
pub use provider_rotation::Premium;
use provider_rotation::{Breakers, Rotation};
use read::{PageRead, ReadRequest, ReadSettings, Reading};
use status::{BreakerStatus, KeyStatus, ProviderStatus, Status};
use upstreams::{FanOutContext, FanOutSettings, PremiumSide, SearxngSide};

/// Degraded or below-target answers are kept at most this long.
const SHORT_TTL: Duration = Duration::from_secs(60);
/// SearXNG counts as "answered recently" for `/readyz` within this window.
const READY_WINDOW: Duration = Duration::from_secs(120);

/// What one fan-out produced for every request sharing it: the answer, or the shed verdict of a
/// fan-out that never got a slot (never cached).
type FanOutResult = Result<Arc<Answer>, Overloaded>;

/// Why a search has no answer to render.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    /// Every fan-out slot stayed taken for the whole wait: a 503 with `Retry-After`.
    #[error(transparent)]
    Overloaded(#[from] Overloaded),
    /// The shared computation was lost (a bug): a 500, never a hang.
    #[error(transparent)]
    Lost(#[from] ComputationLost),
}

/// Why the gateway is not ready (`/readyz`'s 503 body): a fixed message, and SearXNG's failing
/// engines by reason with the hint they give, when that is why.
#[derive(Debug, serde::Serialize)]
pub struct NotReady {
    error: &'static str,
    message: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    hint: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    searxng: Vec<failing_engines::InstanceEngines>,
}

impl NotReady {
    fn new(message: &'static str, searxng: Vec<failing_engines::InstanceEngines>) -> Self {
        Self {
            error: "not_ready",
            message,
            hint: failing_engines::Hint::of_engines(&searxng).map(failing_engines::Hint::sentence),
            searxng,
        }
    }
}

/// What a search produced for one client.
#[derive(Debug, Clone)]
pub struct Served {
    /// The answer (possibly shared with other requests, possibly from the cache).
    pub answer: Arc<Answer>,
    /// Hit, miss, or stale (every upstream failed; the last complete answer, and how long ago it
    /// expired — what `explain` will show).
    pub cache: CacheStatus,
    /// This request's outcome label (`cache_hit` on a hit).
    pub outcome: Outcome,
    /// A miss answered by another request's fan-out in flight (coalesced).
    pub coalesced: bool,
    /// Premium calls to charge to this request's client: those of the fan-out it led (a
    /// coalesced request or a hit made none).
    pub premium_calls: u32,
    /// What those calls cost, in US dollars.
    pub premium_spend_usd: f64,
}

/// The gateway's decision engine. Cheap to clone.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

/// Everything the pipeline owns, shared by every request.
struct Inner {
    settings: EngineSettings,
    /// What a fan-out calls and how: the SearXNG side, the premium side, its numbers.
    fanout: FanOutContext,
    cache: AnswerCache<CacheKey, FanOutResult>,
    /// Fan-out slots (load shedding).
    admission: Admission,
    /// The tier shared with other replicas (`REDIS_URL`); `None`: this process alone.
    shared: Option<SharedTier>,
    /// What this process last published of its breakers to the shared tier.
    mirror: shared_breakers::Mirror,
    /// What the shared tier was last told about the providers' quota windows.
    quota_mirror: shared_quota::QuotaMirror,
    metrics: Arc<Metrics>,
    /// Reading pages: the direct reader, the premium readers, their breakers and cache.
    reading: Reading,
    /// The last 15 minutes per second, for the operator's page; `None` without the page.
    traffic: Option<traffic::Traffic>,
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
    /// Builds the pipeline from a validated configuration. Providers without a key are inactive
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
            &metrics,
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
        let admission = Admission::new(
            config.shedding.max_concurrent_misses,
            config.shedding.max_wait,
        );
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
                spend: spend::GlobalSpend::new(config.premium_usd_per_day),
            }),
            settings: FanOutSettings {
                t1_premium_count: config.t1_premium_count,
                sufficient_min_results: config.sufficient_min_results,
                searxng_slow: config.searxng_slow,
                searxng_hedge: config.searxng_hedge,
                cache_ttl: config.cache_ttl,
            },
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
        // Kept only while the page that reads it is served.
        let ring = (config.traffic == TrafficRing::Kept).then(traffic::Traffic::default);
        Ok(Self {
            inner: Arc::new(Inner {
                settings: config,
                fanout,
                cache,
                admission,
                shared,
                mirror: shared_breakers::Mirror::default(),
                quota_mirror: shared_quota::QuotaMirror::default(),
                metrics: Arc::new(metrics),
                reading,
                traffic: ring,
            }),
        })
    }

    /// The settings in force.
    pub fn settings(&self) -> &EngineSettings {
        &self.inner.settings
    }

    /// Answers one search that came through `surface`: from the cache, or by one fan-out shared
    /// by identical requests — if the fan-out gets a slot in time ([`admission`]). Every surface
    /// asks here, so each answered search counts exactly one outcome and one surface.
    pub async fn search(
        &self,
        req: SearchRequest,
        surface: Surface,
        premium: Premium,
    ) -> Result<Served, SearchError> {
        let started = Instant::now();
        let lookup = tracing::info_span!(target: TARGET, "cache_lookup", hit = Empty);
        // A client whose premium budget is spent gets a SearXNG-only fan-out of its own, cached
        // under its own key: it never shares (and so never worsens) a fan-out or a cached answer
        // other clients get with premium results, and never spends premium calls it has no
        // budget for by joining one.
        let key = req.cache_key(match premium {
            Premium::Allowed => AnswerScope::WithPremium,
            Premium::BudgetSpent => AnswerScope::SearxngOnly,
        });
        let led = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let leader = Arc::clone(&led);
        let inner = Arc::clone(&self.inner);
        let shared_key = key.clone();
        let (shared, cache) = self
            .inner
            .cache
            .get_or_compute(&key, &lookup, move || {
                leader.store(true, std::sync::atomic::Ordering::Relaxed);
                shared_answer::compute(inner, req, shared_key)
            })
            .await?;
        let led = led.load(std::sync::atomic::Ordering::Relaxed);
        let answer = match shared {
            Ok(answer) => answer,
            Err(overloaded) => {
                self.inner.metrics.requests.shed.inc();
                if let Some(traffic) = &self.inner.traffic {
                    traffic.shed();
                }
                return Err(overloaded.into());
            }
        };
        Ok(self.served(started, answer, cache, surface, led))
    }

    /// Counts an answered search and hands it out.
    fn served(
        &self,
        started: Instant,
        answer: Arc<Answer>,
        cache: CacheStatus,
        surface: Surface,
        led: bool,
    ) -> Served {
        let m = &self.inner.metrics.requests;
        let outcome = match cache {
            // A stale answer comes from the cache too: one outcome per request, `cache_hit`, and
            // its own counter says why.
            CacheStatus::Hit | CacheStatus::SharedHit => Outcome::CacheHit,
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
        m.surface_requests
            .get_or_create(&SurfaceLabels { surface })
            .inc();
        let elapsed = started.elapsed();
        m.duration
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
        if let Some(traffic) = &self.inner.traffic {
            traffic.answered(outcome, elapsed);
        }
        m.results_count.observe(answer.result_count as f64);
        m.engines_count.observe(answer.engine_count as f64);
        // Only a request that ran the fan-out for its own answer pays for it (a hit that started a
        // refresh ahead of expiry ran one too, but in the background, for everyone).
        let (premium_calls, premium_spend_usd) = if led && cache == CacheStatus::Miss {
            (answer.record.premium_calls, answer.record.premium_spend_usd)
        } else {
            (0, 0.0)
        };
        Served {
            answer,
            cache,
            outcome,
            coalesced: cache == CacheStatus::Miss && !led,
            premium_calls,
            premium_spend_usd,
        }
    }

    /// Reads one page for a client whose premium budget says `premium`, within `budget`
    /// ([`read`]).
    pub async fn read(&self, req: ReadRequest, premium: Premium, budget: Duration) -> PageRead {
        self.inner.reading.read(req, premium, budget).await
    }

    /// Opens (`Some(period)`) or closes (`None`) every breaker `kind`/`name`, as `/status` names
    /// it — in a pool, an engine's or the cooldown's breaker on every instance that has one.
    /// `false` when no such breaker exists (a provider not configured, an engine never seen).
    pub fn force_breaker(&self, kind: BreakerKind, name: &str, open_for: Option<Duration>) -> bool {
        let mut breakers = self.inner.fanout.premium.breakers.all();
        breakers.extend(self.inner.fanout.premium.key_breakers.all());
        breakers.extend(self.inner.reading.reader_breakers().all());
        breakers.extend(self.inner.reading.host_breakers().all());
        for instance in self.inner.fanout.searxng.pool.instances() {
            breakers.push(Arc::clone(&instance.cooldown));
            breakers.extend(instance.engines.all());
        }
        let mut found = false;
        for breaker in breakers
            .iter()
            .filter(|b| b.kind() == kind && b.name() == name)
        {
            found = true;
            match open_for {
                Some(period) => breaker.force_open(period),
                None => breaker.force_close(),
            }
        }
        found
    }

    /// Drops every cached answer and page (`None`), or the answers of one query whatever their
    /// other parameters; returns how many went.
    pub fn purge_cache(&self, query: Option<&str>) -> usize {
        match query {
            None => self.inner.cache.purge(|_| true) + self.inner.reading.purge(),
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
        self.inner.shared.clone()
    }

    /// Whether `PREMIUM_USD_PER_DAY` is spent: every request is answered from SearXNG and the
    /// cache only.
    pub fn premium_capped(&self) -> bool {
        self.inner.fanout.premium.spend.capped()
    }

    /// Ready when a premium provider is usable, or when SearXNG answered recently and one of its
    /// instances has an engine a search can use (#45: an instance whose every engine is failing
    /// answers only failures, however fast its `/config` comes back). Not ready says why: the
    /// failing engines by SearXNG's reason, and the hint they give.
    pub fn readiness(&self) -> Result<(), NotReady> {
        let premium = &self.inner.fanout.premium;
        let premium_usable = premium.providers.iter().any(|p| {
            premium.breakers.get(&p.kind()).state() != BreakerState::Open
                && p.keys()
                    .any(|k| premium.key_breakers.get(k).state() != BreakerState::Open)
        });
        if premium_usable {
            return Ok(());
        }
        let searxng = &self.inner.fanout.searxng;
        if !searxng.answered_within(READY_WINDOW) {
            return Err(NotReady::new(
                "SearXNG has not answered recently and no premium provider is usable",
                Vec::new(),
            ));
        }
        if searxng
            .pool
            .instances()
            .iter()
            .any(|i| i.has_usable_engine())
        {
            return Ok(());
        }
        Err(NotReady::new(
            "no SearXNG instance has a usable engine (each is cooling down, or every engine it searches is failing) and no premium provider is usable",
            failing_engines::of_pool(&searxng.pool),
        ))
    }

    /// Refreshes the gauges computed from time (breaker states, the cooldown) and renders the
    /// exposition, as OpenMetrics or Prometheus text.
    pub fn render_metrics(&self, openmetrics: bool) -> String {
        let inner = &self.inner;
        inner.fanout.premium.breakers.refresh_metrics();
        inner.fanout.premium.key_breakers.refresh_metrics();
        inner.reading.refresh_metrics();
        inner
            .fanout
            .searxng
            .pool
            .refresh_metrics(&inner.metrics.requests.searxng_cooldown_active);
        inner.metrics.render(openmetrics)
    }

    /// The `/status` document.
    pub fn status(&self) -> Status {
        let inner = &self.inner;
        let premium = &inner.fanout.premium;
        let mut breakers: Vec<BreakerStatus> = premium
            .breakers
            .all()
            .iter()
            .chain(premium.key_breakers.all().iter())
            .map(|b| BreakerStatus::of(b))
            .collect();
        for instance in inner.fanout.searxng.pool.instances() {
            breakers.extend(instance.engines.all().iter().map(|b| BreakerStatus::of(b)));
        }
        breakers.extend(
            inner
                .reading
                .reader_breakers()
                .all()
                .iter()
                .map(|b| BreakerStatus::of(b)),
        );
        // Hosts are many: only those not closed (open or probing) are listed.
        breakers.extend(
            inner
                .reading
                .host_breakers()
                .all()
                .iter()
                .filter(|b| b.state() != BreakerState::Closed)
                .map(|b| BreakerStatus::of(b)),
        );
        Status {
            breakers,
            providers: inner
                .settings
                .fallback_providers
                .iter()
                .map(|kind| {
                    // Inactive providers have no breakers: asking the boards would create some.
                    let client = premium.providers.iter().find(|p| p.kind() == *kind);
                    let keys: Vec<KeyStatus> = client
                        .into_iter()
                        .flat_map(|c| c.keys())
                        .map(|key| {
                            let breaker = premium.key_breakers.get(key);
                            KeyStatus {
                                key: key.fingerprint().to_string(),
                                state: breaker.state(),
                                quota_parked_for_seconds: ProviderStatus::quota_parked_for(
                                    &breaker,
                                ),
                                quota_windows: premium
                                    .quota
                                    .windows(key)
                                    .into_iter()
                                    .map(Into::into)
                                    .collect(),
                            }
                        })
                        .collect();
                    // Parked as a whole when every key is: until the first comes back.
                    let parked = keys
                        .iter()
                        .map(|k| k.quota_parked_for_seconds)
                        .collect::<Option<Vec<_>>>()
                        .and_then(|all| all.into_iter().min());
                    let spent = premium.spend.of_provider(*kind);
                    ProviderStatus {
                        name: *kind,
                        active: client.is_some(),
                        calls_last_24h: spent.calls,
                        usd_last_24h: spent.usd,
                        usd_per_1000_calls: inner
                            .settings
                            .provider(*kind)
                            .map_or(0.0, |p| p.usd_per_call * 1000.0),
                        quota_parked_for_seconds: parked,
                        quota_windows: keys
                            .first()
                            .map(|k| k.quota_windows.clone())
                            .unwrap_or_default(),
                        keys,
                    }
                })
                .collect(),
            premium_spend: status::SpendStatus {
                usd_last_24h: premium.spend.last_24h(),
                usd_per_day_cap: premium.spend.cap(),
                capped: premium.spend.capped(),
                prices_read_on: gateway_upstreams::providers::price::PRICES_READ_ON,
            },
            t1_premium_count: status::T1Status {
                effective: inner.settings.t1_premium_count,
                configured: inner.settings.t1_requested,
            },
            searxng: status::SearxngStatus::of(&inner.fanout.searxng.pool),
            cache: status::CacheStatus {
                size: inner.cache.len(),
                capacity: inner.settings.cache_size,
                bytes: inner.cache.weight(),
            },
            reads: status::ReadsStatus {
                premium_readers: inner.reading.premium_readers(),
                host_breakers_open: inner.reading.host_breakers().open_count(),
            },
            redis: inner.shared.as_ref().map(|tier| status::RedisStatus {
                url: tier.url().to_owned(),
                connected: tier.is_connected(),
                replicas: tier.replicas(),
                replica: tier.replica().to_owned(),
            }),
        }
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use gateway_core::breaker::{Signal, TripReason};
    use gateway_upstreams::providers::ProviderKind;

    fn gateway(vars: &[(&str, &str)]) -> Engine {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect();
        let config = EngineSettings::from_lookup(&move |name| {
            vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
        .unwrap();
        Engine::new(config, Metrics::new()).unwrap()
    }

    /// The hedge with the gateway's own instance and settings: slow answers make the next search
    /// start the fallback at once; fast answers end it; failures do not count either way.
    #[tokio::test(start_paused = true)]
    async fn a_slow_searxng_is_hedged_from_the_next_search_until_it_answers_fast_again() {
        // A fixed threshold of 1 s: `auto` (the default) hedges at the threshold in effect.
        let gw = gateway(&[("BRAVE_API_KEY", "k"), ("SEARXNG_SLOW_SECONDS", "1")]);
        let fanout = &gw.inner.fanout;
        let instance = fanout.searxng.pool.get(0);
        let wait = Duration::from_secs(1);
        let hedges =
            || slow_threshold::hedges(fanout.settings.searxng_hedge, instance.answer_time(), wait);
        assert!(!hedges(), "no answer yet");
        instance.record_latency(Duration::from_millis(200), true);
        instance.record_latency(Duration::from_secs(1), false);
        instance.record_latency(Duration::from_secs(1), false);
        assert!(!hedges(), "a healthy SearXNG, whatever its failures");
        for _ in 0..4 {
            instance.record_latency(Duration::from_secs(2), true);
        }
        assert!(hedges(), "slow answers: the next search hedges");
        tokio::time::advance(Duration::from_millis(500)).await;
        assert!(hedges(), "still slow half a second later");
        let mut fast_answers = 0;
        while hedges() {
            instance.record_latency(Duration::from_millis(100), true);
            fast_answers += 1;
        }
        assert!(
            (1..=6).contains(&fast_answers),
            "a few fast answers end it: {fast_answers}"
        );
        let off = gateway(&[("BRAVE_API_KEY", "k"), ("SEARXNG_HEDGE_SECONDS", "off")]);
        let instance = off.inner.fanout.searxng.pool.get(0);
        instance.record_latency(Duration::from_secs(5), true);
        assert!(!slow_threshold::hedges(
            off.inner.fanout.settings.searxng_hedge,
            instance.answer_time(),
            wait
        ));
    }

    /// `BREAKER_JITTER=0` makes a tripped breaker's period exact, so a test on a paused clock can
    /// name the instant it ends; the default spreads it by up to a tenth.
    #[tokio::test(start_paused = true)]
    async fn breaker_jitter_comes_from_the_configuration() {
        let exact = gateway(&[
            ("BRAVE_API_KEY", "k"),
            ("BREAKER_OPEN_SECONDS", "30"),
            ("BREAKER_JITTER", "0"),
        ]);
        let brave = exact
            .inner
            .fanout
            .premium
            .breakers
            .get(&ProviderKind::Brave);
        brave.record(Signal::stop(TripReason::RateLimited));
        assert_eq!(brave.snapshot().open_for, Some(Duration::from_secs(30)));
        tokio::time::advance(Duration::from_secs(30)).await;
        assert_eq!(brave.state(), BreakerState::HalfOpen, "open exactly 30 s");

        let spread = gateway(&[("BRAVE_API_KEY", "k"), ("BREAKER_OPEN_SECONDS", "30")]);
        let periods: Vec<Duration> = (0..20)
            .filter_map(|_| {
                let brave = spread
                    .inner
                    .fanout
                    .premium
                    .breakers
                    .get(&ProviderKind::Brave);
                brave.force_close();
                brave.record(Signal::stop(TripReason::RateLimited));
                brave.snapshot().open_for
            })
            .collect();
        assert!(periods
            .iter()
            .all(|p| *p >= Duration::from_secs(30) && *p <= Duration::from_secs(33)));
        assert!(
            periods.iter().any(|p| *p > Duration::from_secs(30)),
            "{periods:?}"
        );
    }
}
