//! The whole validated configuration: [`Config`], put together from the sections each owner reads
//! through [`crate::env`] (the providers' keys and origins, the clients' keys file, the shared
//! tier's URL) and the sections nobody else owns, read here: the listen address, the SearXNG
//! backends, the fan-out's numbers, the cache, breakers, limits, logs and traces. A value that does
//! not parse, is out of range, or names an unknown provider is a [`ConfigError`] naming the
//! variable — nothing falls back to a default silently.

pub(crate) mod access;
mod backends;
pub(crate) mod limits;
pub(crate) mod otlp;
pub(crate) mod ui;

use std::net::SocketAddr;
use std::time::Duration;

use crate::clients::settings::ClientSettings;
pub use crate::env::variables;
use crate::env::Env;
pub use crate::env::{ConfigError, Problem};
use crate::persist::StateDir;
use crate::providers::readers::{self, PremiumReaderSettings, ReaderKind};
use crate::providers::settings as provider_settings;
use crate::providers::{ProviderKind, ProviderSettings};
use crate::reader::ReaderSettings;
use crate::runtime::Runtime;
use crate::shared::RedisSettings;
use access::AdminToken;
pub(crate) use backends::SearxngBackend;
use limits::{ServerLimits, Shedding};
use otlp::OtlpExport;

/// `LOG_LEVEL`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    /// Errors only.
    Error,
    /// Warnings and errors.
    Warn,
    /// The default: one line per request plus lifecycle events.
    Info,
    /// Upstream decisions in detail.
    Debug,
    /// Everything.
    Trace,
}

impl LogLevel {
    const NAMES: &'static [&'static str] = &["error", "warn", "info", "debug", "trace"];

    /// The `tracing` filter directive.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warn => "warn",
            Self::Info => "info",
            Self::Debug => "debug",
            Self::Trace => "trace",
        }
    }

    /// Reads `LOG_LEVEL` (case-insensitive; `warning` is `warn`).
    pub fn parse(raw: &str) -> Option<Self> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "error" => Some(Self::Error),
            "warn" | "warning" => Some(Self::Warn),
            "info" => Some(Self::Info),
            "debug" => Some(Self::Debug),
            "trace" => Some(Self::Trace),
            _ => None,
        }
    }
}

/// `LOG_FORMAT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// One human-readable line per event (the default).
    Text,
    /// One JSON object per line.
    Json,
}

/// `SEARXNG_SLOW_SECONDS`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum SlowThreshold {
    /// Twice SearXNG's recent p95, at least 1 s, at most half the budget.
    Auto,
    /// A fixed wait.
    Fixed(Duration),
}

/// `SEARXNG_HEDGE_SECONDS`: when a search starts the fallback alongside SearXNG at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Hedge {
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
pub(crate) enum ProviderPolicy {
    /// Round-robin: each request starts at the next provider; nearly spent quotas go last.
    Rotate,
    /// The configured order, every time: the first usable provider is always tried first.
    Ordered,
    /// The cheapest usable provider first (`PREMIUM_PRICE_<NAME>`), ties broken by recent
    /// success: a free tier is spent before a paid one.
    Cheapest,
}

impl ProviderPolicy {
    const NAMES: &'static [&'static str] = &["rotate", "ordered", "cheapest"];

    fn parse(raw: &str) -> Option<Self> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "rotate" => Some(Self::Rotate),
            "ordered" => Some(Self::Ordered),
            "cheapest" => Some(Self::Cheapest),
            _ => None,
        }
    }
}

/// Routes the gateway serves itself; `METRICS_PATH` must not be one of them (the server's router
/// test builds the router with each surface's path to keep this list whole).
pub(crate) const RESERVED_PATHS: &[&str] = &[
    "/search",
    "/healthz",
    "/readyz",
    "/status",
    "/",
    "/mcp",
    "/tavily/search",
    "/tavily/extract",
    "/firecrawl/v1/search",
    "/firecrawl/v2/search",
    "/firecrawl/v1/scrape",
    "/firecrawl/v2/scrape",
    "/v2/search",
    "/v2/scrape",
    "/perplexity/search",
    "/openwebui/search",
    "/openwebui/loader",
];
/// Every path under each is one surface's: the admin routes', the operator's page's.
const RESERVED_PREFIXES: &[&str] = &["/admin", "/ui"];

/// The whole validated configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub(crate) listen_addr: SocketAddr,
    /// `SEARXNG_BACKEND_URL`: one instance, or several (a pool), each URL without a trailing
    /// slash in its path.
    pub(crate) searxng: Vec<SearxngBackend>,
    /// `FALLBACK_PROVIDERS`, in preference order.
    pub(crate) fallback_providers: Vec<ProviderKind>,
    pub(crate) provider_policy: ProviderPolicy,
    /// `PREMIUM_USD_PER_DAY`: the gateway's premium spend per rolling 24 h (0: no cap).
    pub(crate) premium_usd_per_day: f64,
    /// `T1_PREMIUM_COUNT` as it takes effect: at most the active providers (see
    /// [`Config::t1_requested`]).
    pub(crate) t1_premium_count: usize,
    /// `T1_PREMIUM_COUNT` as set; more than the active providers is cut to them, with a warning at
    /// start (a compose file whose keys come later still starts, keyless).
    pub(crate) t1_requested: usize,
    pub(crate) sufficient_min_results: usize,
    /// `FALLBACK_TIMEOUT_SECONDS`: the hard request budget.
    pub(crate) request_budget: Duration,
    pub(crate) searxng_timeout: Duration,
    pub(crate) searxng_fail_threshold: u32,
    pub(crate) searxng_fail_cooldown: Duration,
    /// `SEARXNG_MAX_COOLDOWN_SECONDS`, never below `searxng_fail_cooldown`.
    pub(crate) searxng_max_cooldown: Duration,
    pub(crate) searxng_slow: SlowThreshold,
    /// `SEARXNG_HEDGE_SECONDS`.
    pub(crate) searxng_hedge: Hedge,
    pub(crate) cache_size: usize,
    pub(crate) cache_ttl: Duration,
    /// `CACHE_STALE_SECONDS`: how long past expiry a complete answer may still be served when
    /// every upstream fails (zero: never).
    pub(crate) cache_stale: Duration,
    pub(crate) log_level: LogLevel,
    pub(crate) metrics_path: String,
    pub(crate) max_query_bytes: usize,
    /// Every provider (active or not), in `ProviderKind::ALL` order.
    pub(crate) providers: Vec<ProviderSettings>,
    pub(crate) breaker_open: Duration,
    pub(crate) breaker_max_open: Duration,
    pub(crate) breaker_failure_threshold: u32,
    /// `BREAKER_JITTER`: the random share of an open period.
    pub(crate) breaker_jitter: f64,
    /// `ENGINE_PROBE_TIMEOUT_MS`: the bound of one out-of-band probe of a blocked engine.
    pub(crate) engine_probe_timeout: Duration,
    /// `MAX_CONCURRENT_MISSES`, `MAX_MISS_WAIT_MS`.
    pub(crate) shedding: Shedding,
    /// What the HTTP server accepts from a client.
    pub(crate) server_limits: ServerLimits,
    /// OpenTelemetry export; `None`: tracing is off.
    pub(crate) otlp: Option<OtlpExport>,
    /// `QUOTA_PARK_SECONDS`: how long a spent quota without a reset hint parks its provider.
    pub(crate) quota_park: Duration,
    /// Inbound keys and per-client limits.
    pub(crate) clients: ClientSettings,
    /// `ADMIN_TOKEN`; `None`: no admin routes.
    pub(crate) admin_token: Option<AdminToken>,
    /// The operator's page (`UI_*`); `None`: no `/ui` routes.
    pub(crate) ui: Option<ui::UiSettings>,
    /// `LOG_FORMAT`.
    pub(crate) log_format: LogFormat,
    /// `LOG_QUEUE_LINES`: log lines waiting for the writer thread before new ones are dropped.
    pub(crate) log_queue_lines: usize,
    /// `RUNTIME` and `WORKER_THREADS`: the scheduler.
    pub(crate) runtime: Runtime,
    /// The direct page reader (`FETCH_*`).
    pub(crate) reader: ReaderSettings,
    /// `READ_PROVIDERS`, in order.
    pub(crate) read_providers: Vec<ReaderKind>,
    /// Every premium reader (active or not), in `ReaderKind::ALL` order.
    pub(crate) premium_readers: Vec<PremiumReaderSettings>,
    /// `FETCH_PER_HOST_CONCURRENCY`.
    pub(crate) fetch_per_host: usize,
    /// `FETCH_CACHE_TTL_SECONDS`.
    pub(crate) fetch_cache_ttl: Duration,
    /// `FETCH_CACHE_BYTES`.
    pub(crate) fetch_cache_bytes: usize,
    /// `REDIS_URL` and friends; `None`: nothing is shared with other replicas.
    pub(crate) redis: Option<RedisSettings>,
    /// `STATE_DIR`; `None`: nothing survives a restart (but what Redis keeps).
    pub(crate) state_dir: Option<StateDir>,
}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(&|name| std::env::var(name).ok())
    }

    /// Reads configuration through `lookup` (tests pass a map; nothing touches the process
    /// environment).
    pub fn from_lookup(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        Self::read(&Env::new(lookup))
    }

    fn read(env: &Env<'_>) -> Result<Self, ConfigError> {
        let listen_addr = env.listen_addr("LISTEN_ADDR")?;

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
            Some(raw) => SlowThreshold::Fixed(crate::env::seconds(&raw)?),
            None => SlowThreshold::Auto,
        };
        let searxng_hedge = match env.value("SEARXNG_HEDGE_SECONDS") {
            Some(raw) if raw.text.eq_ignore_ascii_case("off") => Hedge::Off,
            Some(raw) if raw.text.eq_ignore_ascii_case("auto") => Hedge::AtSlowThreshold,
            Some(raw) => Hedge::Above(crate::env::seconds(&raw)?),
            None => Hedge::AtSlowThreshold,
        };
        let cache_size = env.integer("CACHE_SIZE", 0usize, 10_000_000)?;
        let cache_ttl = env.seconds("CACHE_TTL_SECONDS")?;
        let cache_stale = match env.value("CACHE_STALE_SECONDS") {
            Some(raw) if raw.text.parse::<f64>() == Ok(0.0) => Duration::ZERO,
            Some(raw) => crate::env::seconds(&raw)?,
            None => Duration::ZERO,
        };
        let log_level = match env.value("LOG_LEVEL") {
            Some(raw) => LogLevel::parse(&raw.text)
                .ok_or_else(|| raw.error(Problem::NotOneOf(LogLevel::NAMES)))?,
            None => LogLevel::Info,
        };
        let metrics_path = metrics_path(env)?;
        let max_query_bytes = env.integer("MAX_QUERY_BYTES", 1usize, 65_536)?;
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
        let shedding = Shedding::read(env)?;
        let server_limits = ServerLimits::read(env)?;
        let otlp = OtlpExport::read(env)?;
        let quota_park = env.seconds("QUOTA_PARK_SECONDS")?;
        let clients = ClientSettings::read(env)?;
        let admin_token = AdminToken::read(env)?;
        let ui = ui::UiSettings::read(env)?;
        let log_format = log_format(env)?;
        let log_queue_lines = env.integer("LOG_QUEUE_LINES", 1, 10_000_000)?;
        let workers = crate::runtime::workers_or_cores(env.integer("WORKER_THREADS", 0, 1024)?);
        let runtime = match env.value("RUNTIME") {
            Some(raw) => Runtime::parse(&raw.text, workers)
                .ok_or_else(|| raw.error(Problem::NotOneOf(Runtime::NAMES)))?,
            None => Runtime::WorkStealing { workers },
        };
        let redis = RedisSettings::read(env)?;
        let state_dir = StateDir::read(env)?;
        let reader = ReaderSettings::read(env)?;
        let read_providers = readers::read_list(env)?;
        let premium_readers = readers::read_settings(env)?;
        let fetch_per_host = env.integer("FETCH_PER_HOST_CONCURRENCY", 1usize, 1000)?;
        let fetch_cache_ttl = env.seconds("FETCH_CACHE_TTL_SECONDS")?;
        let fetch_cache_bytes = env.integer("FETCH_CACHE_BYTES", 0usize, 1 << 40)?;
        let t1_requested = env.integer("T1_PREMIUM_COUNT", 0usize, 16)?;

        let config = Self {
            listen_addr,
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
            log_level,
            metrics_path,
            max_query_bytes,
            providers,
            breaker_open,
            breaker_max_open,
            breaker_failure_threshold,
            breaker_jitter,
            engine_probe_timeout,
            shedding,
            server_limits,
            otlp,
            quota_park,
            clients,
            admin_token,
            ui,
            log_format,
            log_queue_lines,
            runtime,
            redis,
            state_dir,
            reader,
            read_providers,
            premium_readers,
            fetch_per_host,
            fetch_cache_ttl,
            fetch_cache_bytes,
        };
        let t1_premium_count = t1_requested.min(config.active_providers().len());
        Ok(Self {
            t1_premium_count,
            ..config
        })
    }

    /// `LISTEN_ADDR`.
    pub fn listen_addr(&self) -> SocketAddr {
        self.listen_addr
    }

    /// `METRICS_PATH`.
    pub fn metrics_path(&self) -> &str {
        &self.metrics_path
    }

    /// `LOG_LEVEL`.
    pub fn log_level(&self) -> LogLevel {
        self.log_level
    }

    /// `LOG_FORMAT`.
    pub fn log_format(&self) -> LogFormat {
        self.log_format
    }

    /// `LOG_QUEUE_LINES`.
    pub fn log_queue_lines(&self) -> usize {
        self.log_queue_lines
    }

    /// `RUNTIME` and `WORKER_THREADS`.
    pub fn runtime(&self) -> Runtime {
        self.runtime
    }

    /// Pages are parsed by `program` (run as `program parse-worker`) unless `PARSE_WORKER_PROGRAM`
    /// names another: the binary passes itself.
    #[must_use]
    pub fn with_parse_worker(mut self, program: std::path::PathBuf) -> Self {
        self.reader.sandbox.program.get_or_insert(program);
        self
    }

    /// The provider settings for `kind`.
    pub(crate) fn provider(&self, kind: ProviderKind) -> Option<&ProviderSettings> {
        self.providers.iter().find(|p| p.kind == kind)
    }

    /// `T1_PREMIUM_COUNT` was set above the active providers and cut to them: the start-up line
    /// warns about it.
    pub(crate) fn t1_cut(&self) -> bool {
        self.t1_requested > self.t1_premium_count
    }

    /// Providers in `FALLBACK_PROVIDERS` order that have a key.
    pub(crate) fn active_providers(&self) -> Vec<ProviderKind> {
        self.fallback_providers
            .iter()
            .copied()
            .filter(|k| self.provider(*k).is_some_and(|p| !p.keys.is_empty()))
            .collect()
    }
}

fn metrics_path(env: &Env<'_>) -> Result<String, ConfigError> {
    let Some(raw) = env.value("METRICS_PATH") else {
        return Ok("/metrics".to_owned());
    };
    let path = &raw.text;
    let well_formed = path.starts_with('/')
        && path.len() > 1
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '-' | '_' | '.'));
    if !well_formed {
        return Err(raw.error(Problem::NotAnAbsolutePath));
    }
    let bare = path.trim_end_matches('/');
    let under_prefix = RESERVED_PREFIXES.iter().any(|prefix| {
        bare.strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    });
    if bare.is_empty() || RESERVED_PATHS.contains(&bare) || under_prefix {
        return Err(raw.error(Problem::CollidesWithRoute));
    }
    Ok(path.clone())
}

fn log_format(env: &Env<'_>) -> Result<LogFormat, ConfigError> {
    match env.value("LOG_FORMAT") {
        Some(raw) => match raw.text.to_ascii_lowercase().as_str() {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            _ => Err(raw.error(Problem::NotOneOf(&["text", "json"]))),
        },
        None => Ok(LogFormat::Text),
    }
}

#[cfg(test)]
mod tests;
