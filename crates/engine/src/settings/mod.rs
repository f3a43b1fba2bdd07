//! The engine's settings: [`EngineSettings`], every number and choice the decisions are made
//! with, read from the environment through `gateway_core::env` (the sections the upstreams own —
//! providers, readers, the page reader, Redis — are read by their owners and kept here). The
//! binary's configuration holds one of these beside the HTTP server's settings; nothing in the
//! engine sees the rest.

mod backends;
mod crawl;
mod shedding;

use std::time::Duration;

pub use crawl::{CrawlSettings, WebhookSecret};
use gateway_core::env::{self, ConfigError, Env, Problem};
use gateway_core::runtime::{self, Runtime};
use gateway_core::shared::RedisSettings;
use gateway_upstreams::providers::readers::{self, PremiumReaderSettings, ReaderKind};
use gateway_upstreams::providers::settings as provider_settings;
use gateway_upstreams::providers::{ProviderKind, ProviderSettings};
use gateway_upstreams::reader::ReaderSettings;
use gateway_upstreams::reranker::RerankerSettings;

pub use backends::SearxngBackend;
pub use shedding::Shedding;

/// `SEARXNG_SLOW_SECONDS`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SlowThreshold {
    /// Twice SearXNG's recent p95, at least 1 s, at most half the budget.
    Auto,
    /// A fixed wait.
    Fixed(Duration),
}

/// `SEARXNG_HEDGE_SECONDS`: when a search starts the fallback alongside SearXNG at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Hedge {
    /// Never: the slow threshold alone decides when the fallback joins a silent SearXNG.
    Off,
    /// `auto`: when the instance a search goes to has recently taken at least as long to answer as
    /// the slow threshold this search would wait — the fallback would join at the threshold anyway.
    AtSlowThreshold,
    /// When the instance a search goes to has recently taken at least this long to answer.
    Above(Duration),
}

/// `PROVIDER_POLICY`: in which order one request offers the providers of `FALLBACK_PROVIDERS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderPolicy {
    /// Round-robin: each request starts at the next provider; nearly spent quotas go last.
    Rotate,
    /// The configured order, every time: the first usable provider is always tried first.
    Ordered,
    /// The cheapest usable provider first (`PREMIUM_PRICE_<NAME>`), ties broken by recent
    /// success: a free tier is spent before a paid one.
    Cheapest,
}

impl ProviderPolicy {
    /// The accepted values, for the error message.
    pub const NAMES: &'static [&'static str] = &["rotate", "ordered", "cheapest"];

    /// Reads a `PROVIDER_POLICY` value (case-insensitive).
    pub fn parse(raw: &str) -> Option<Self> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "rotate" => Some(Self::Rotate),
            "ordered" => Some(Self::Ordered),
            "cheapest" => Some(Self::Cheapest),
            _ => None,
        }
    }
}

/// `TOKENIZER_ENCODING`: the tokenizer a token budget is counted with (tiktoken's encodings, their
/// vocabularies built into the binary).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TokenizerEncoding {
    /// `o200k_base`: GPT-4o's, GPT-4.1's, GPT-5's and the `o` models'.
    #[default]
    O200kBase,
    /// `cl100k_base`: GPT-4's, GPT-3.5's and the `text-embedding-3` models'.
    Cl100kBase,
}

impl TokenizerEncoding {
    /// The accepted values, for the error message.
    pub const NAMES: &'static [&'static str] = &["o200k_base", "cl100k_base"];

    /// Reads a `TOKENIZER_ENCODING` value (case-insensitive).
    pub fn parse(raw: &str) -> Option<Self> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "o200k_base" => Some(Self::O200kBase),
            "cl100k_base" => Some(Self::Cl100kBase),
            _ => None,
        }
    }

    /// Its name, as tiktoken spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::O200kBase => "o200k_base",
            Self::Cl100kBase => "cl100k_base",
        }
    }
}

/// Whether the engine keeps the last 15 minutes per second for the operator's page
/// (`UI_ENABLED`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrafficRing {
    /// Kept: the page exists.
    Kept,
    /// Not kept: `UI_ENABLED=false`.
    Off,
}

/// Everything the engine decides with.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineSettings {
    /// `SEARXNG_BACKEND_URL`: one instance, or several (a pool), each URL without a trailing
    /// slash in its path.
    pub searxng: Vec<SearxngBackend>,
    /// `FALLBACK_PROVIDERS`, in preference order.
    pub fallback_providers: Vec<ProviderKind>,
    /// `PROVIDER_POLICY`.
    pub provider_policy: ProviderPolicy,
    /// `PREMIUM_USD_PER_DAY`: the gateway's premium spend per rolling 24 h (0: no cap).
    pub premium_usd_per_day: f64,
    /// `T1_PREMIUM_COUNT` as it takes effect: at most the active providers (see
    /// [`EngineSettings::t1_requested`]).
    pub t1_premium_count: usize,
    /// `T1_PREMIUM_COUNT` as set; more than the active providers is cut to them, with a warning at
    /// start (a compose file whose keys come later still starts, keyless).
    pub t1_requested: usize,
    /// `SUFFICIENT_MIN_RESULTS`.
    pub sufficient_min_results: usize,
    /// `FALLBACK_TIMEOUT_SECONDS`: the hard request budget.
    pub request_budget: Duration,
    /// `SEARXNG_TIMEOUT_SECONDS`.
    pub searxng_timeout: Duration,
    /// `SEARXNG_FAIL_THRESHOLD`.
    pub searxng_fail_threshold: u32,
    /// `SEARXNG_FAIL_COOLDOWN_SECONDS`.
    pub searxng_fail_cooldown: Duration,
    /// `SEARXNG_MAX_COOLDOWN_SECONDS`, never below `searxng_fail_cooldown`.
    pub searxng_max_cooldown: Duration,
    /// `SEARXNG_SLOW_SECONDS`.
    pub searxng_slow: SlowThreshold,
    /// `SEARXNG_HEDGE_SECONDS`.
    pub searxng_hedge: Hedge,
    /// `CACHE_SIZE`.
    pub cache_size: usize,
    /// `CACHE_TTL_SECONDS`.
    pub cache_ttl: Duration,
    /// `CACHE_STALE_SECONDS`: how long past expiry a complete answer may still be served when
    /// every upstream fails (zero: never).
    pub cache_stale: Duration,
    /// Every provider (active or not), in `ProviderKind::ALL` order.
    pub providers: Vec<ProviderSettings>,
    /// `BREAKER_OPEN_SECONDS`.
    pub breaker_open: Duration,
    /// `BREAKER_MAX_OPEN_SECONDS`.
    pub breaker_max_open: Duration,
    /// `BREAKER_FAILURE_THRESHOLD`.
    pub breaker_failure_threshold: u32,
    /// `BREAKER_JITTER`: the random share of an open period.
    pub breaker_jitter: f64,
    /// `ENGINE_PROBE_TIMEOUT_MS`: the bound of one out-of-band probe of a blocked engine.
    pub engine_probe_timeout: Duration,
    /// `ENGINE_PROBE_WEIGHT`: a probe into a still-blocked engine, in client searches' worth of
    /// results lost.
    pub engine_probe_weight: f64,
    /// `MAX_CONCURRENT_MISSES`, `MAX_MISS_WAIT_MS`.
    pub shedding: Shedding,
    /// `QUOTA_PARK_SECONDS`: how long a spent quota without a reset hint parks its provider.
    pub quota_park: Duration,
    /// `RUNTIME` and `WORKER_THREADS`: the scheduler (the upstream clients keep a pool per
    /// worker).
    pub runtime: Runtime,
    /// The direct page reader (`FETCH_*`).
    pub reader: ReaderSettings,
    /// `READ_PROVIDERS`, in order.
    pub read_providers: Vec<ReaderKind>,
    /// Every premium reader (active or not), in `ReaderKind::ALL` order.
    pub premium_readers: Vec<PremiumReaderSettings>,
    /// `FETCH_PER_HOST_CONCURRENCY`.
    pub fetch_per_host: usize,
    /// `FETCH_CACHE_TTL_SECONDS`.
    pub fetch_cache_ttl: Duration,
    /// `FETCH_CACHE_BYTES`.
    pub fetch_cache_bytes: usize,
    /// `REDIS_URL` and friends; `None`: nothing is shared with other replicas.
    pub redis: Option<RedisSettings>,
    /// `UI_ENABLED`: whether the traffic ring is kept.
    pub traffic: TrafficRing,
    /// `TOKENIZER_ENCODING`: what a passage budget's tokens are counted with.
    pub tokenizer: TokenizerEncoding,
    /// `CRAWL_*`: what every crawl is held to.
    pub crawl: CrawlSettings,
    /// `CRAWL_WEBHOOK_SECRET`: crawls' webhooks are signed with keys derived from it.
    pub webhook_secret: Option<WebhookSecret>,
    /// `RERANK_URL` and friends; `None`: passages are ranked lexically only.
    pub reranker: Option<RerankerSettings>,
}

impl EngineSettings {
    /// Reads the engine's settings through `lookup` (tests pass a map).
    pub fn from_lookup(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        Self::read(&Env::new(lookup))
    }

    /// Reads the engine's variables from `env`: the first that does not parse, is out of range or
    /// names an unknown provider is the error, naming it.
    pub fn read(env: &Env<'_>) -> Result<Self, ConfigError> {
        let searxng = backends::read(env, "SEARXNG_BACKEND_URL")?;
        let fallback_providers = provider_settings::read_fallback_list(env)?;
        let provider_policy = match env.value("PROVIDER_POLICY") {
            Some(raw) => ProviderPolicy::parse(&raw.text)
                .ok_or_else(|| raw.error(Problem::NotOneOf(ProviderPolicy::NAMES)))?,
            None => ProviderPolicy::Rotate,
        };
        let sufficient_min_results = env.integer("SUFFICIENT_MIN_RESULTS", 0usize, 1000)?;
        let request_budget = env.seconds("FALLBACK_TIMEOUT_SECONDS")?;
        let searxng_timeout = env.seconds("SEARXNG_TIMEOUT_SECONDS")?;
        let searxng_fail_threshold = env.integer("SEARXNG_FAIL_THRESHOLD", 1u32, 10_000)?;
        let searxng_fail_cooldown = env.seconds("SEARXNG_FAIL_COOLDOWN_SECONDS")?;
        let searxng_max_cooldown = env
            .seconds("SEARXNG_MAX_COOLDOWN_SECONDS")?
            .max(searxng_fail_cooldown);
        let searxng_slow = match env.value("SEARXNG_SLOW_SECONDS") {
            Some(raw) if raw.text.eq_ignore_ascii_case("auto") => SlowThreshold::Auto,
            Some(raw) => SlowThreshold::Fixed(env::seconds(&raw)?),
            None => SlowThreshold::Auto,
        };
        let searxng_hedge = match env.value("SEARXNG_HEDGE_SECONDS") {
            Some(raw) if raw.text.eq_ignore_ascii_case("off") => Hedge::Off,
            Some(raw) if raw.text.eq_ignore_ascii_case("auto") => Hedge::AtSlowThreshold,
            Some(raw) => Hedge::Above(env::seconds(&raw)?),
            None => Hedge::AtSlowThreshold,
        };
        let cache_size = env.integer("CACHE_SIZE", 0usize, 10_000_000)?;
        let cache_ttl = env.seconds("CACHE_TTL_SECONDS")?;
        let cache_stale = match env.value("CACHE_STALE_SECONDS") {
            Some(raw) if raw.text.parse::<f64>() == Ok(0.0) => Duration::ZERO,
            Some(raw) => env::seconds(&raw)?,
            None => Duration::ZERO,
        };
        let providers = provider_settings::read(env)?;
        let breaker_open = env.seconds("BREAKER_OPEN_SECONDS")?;
        let breaker_max_open = env.seconds("BREAKER_MAX_OPEN_SECONDS")?;
        if breaker_max_open < breaker_open {
            return Err(ConfigError::new(
                "BREAKER_MAX_OPEN_SECONDS",
                &format!("{}", breaker_max_open.as_secs_f64()),
                Problem::SmallerThan("BREAKER_OPEN_SECONDS"),
            ));
        }
        let breaker_failure_threshold = env.integer("BREAKER_FAILURE_THRESHOLD", 1u32, 10_000)?;
        let breaker_jitter = env.number("BREAKER_JITTER", 0.0, 1.0)?;
        let engine_probe_timeout =
            Duration::from_millis(env.integer("ENGINE_PROBE_TIMEOUT_MS", 1u64, 600_000)?);
        let engine_probe_weight = env.number("ENGINE_PROBE_WEIGHT", 0.01, 100.0)?;
        let shedding = Shedding::read(env)?;
        let quota_park = env.seconds("QUOTA_PARK_SECONDS")?;
        let workers = runtime::workers_or_cores(env.integer("WORKER_THREADS", 0, 1024)?);
        let runtime = match env.value("RUNTIME") {
            Some(raw) => Runtime::parse(&raw.text, workers)
                .ok_or_else(|| raw.error(Problem::NotOneOf(Runtime::NAMES)))?,
            None => Runtime::WorkStealing { workers },
        };
        let redis = RedisSettings::read(env)?;
        let reader = ReaderSettings::read(env)?;
        let read_providers = readers::read_list(env)?;
        let premium_readers = readers::read_settings(env)?;
        let fetch_per_host = env.integer("FETCH_PER_HOST_CONCURRENCY", 1usize, 1000)?;
        let fetch_cache_ttl = env.seconds("FETCH_CACHE_TTL_SECONDS")?;
        let fetch_cache_bytes = env.integer("FETCH_CACHE_BYTES", 0usize, 1 << 40)?;
        let t1_requested = env.integer("T1_PREMIUM_COUNT", 0usize, 16)?;
        let tokenizer = match env.value("TOKENIZER_ENCODING") {
            Some(raw) => TokenizerEncoding::parse(&raw.text)
                .ok_or_else(|| raw.error(Problem::NotOneOf(TokenizerEncoding::NAMES)))?,
            None => TokenizerEncoding::default(),
        };
        let reranker = RerankerSettings::read(env)?;
        let traffic = if env.flag("UI_ENABLED")? {
            TrafficRing::Kept
        } else {
            TrafficRing::Off
        };
        let settings = Self {
            searxng,
            fallback_providers,
            provider_policy,
            premium_usd_per_day: env.number("PREMIUM_USD_PER_DAY", 0.0, 1_000_000_000.0)?,
            t1_premium_count: 0,
            t1_requested,
            sufficient_min_results,
            request_budget,
            searxng_timeout,
            searxng_fail_threshold,
            searxng_fail_cooldown,
            searxng_max_cooldown,
            searxng_slow,
            searxng_hedge,
            cache_size,
            cache_ttl,
            cache_stale,
            providers,
            breaker_open,
            breaker_max_open,
            breaker_failure_threshold,
            breaker_jitter,
            engine_probe_timeout,
            engine_probe_weight,
            shedding,
            quota_park,
            runtime,
            reader,
            read_providers,
            premium_readers,
            fetch_per_host,
            fetch_cache_ttl,
            fetch_cache_bytes,
            redis,
            traffic,
            tokenizer,
            crawl: CrawlSettings::read(env)?,
            webhook_secret: WebhookSecret::read(env)?,
            reranker,
        };
        let t1_premium_count = t1_requested.min(settings.active_providers().len());
        Ok(Self {
            t1_premium_count,
            ..settings
        })
    }

    /// The provider settings for `kind`.
    pub fn provider(&self, kind: ProviderKind) -> Option<&ProviderSettings> {
        self.providers.iter().find(|p| p.kind == kind)
    }

    /// `T1_PREMIUM_COUNT` was set above the active providers and cut to them: the start-up line
    /// warns about it.
    pub fn t1_cut(&self) -> bool {
        self.t1_requested > self.t1_premium_count
    }

    /// Providers in `FALLBACK_PROVIDERS` order that have a key.
    pub fn active_providers(&self) -> Vec<ProviderKind> {
        self.fallback_providers
            .iter()
            .copied()
            .filter(|k| self.provider(*k).is_some_and(|p| !p.keys.is_empty()))
            .collect()
    }
}
