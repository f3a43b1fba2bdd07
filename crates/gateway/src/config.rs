//! Environment → typed, validated [`Config`]. Every variable of the contract is listed once in
//! [`VARIABLES`] (which also feeds `--help` and the README table); a value that does not parse or is
//! out of range is a [`ConfigError`] naming the variable — nothing falls back to a default silently.

use std::collections::HashSet;
use std::fmt;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use url::Url;

use crate::providers::ProviderKind;

/// One environment variable: name, default (as shown to humans) and meaning.
#[derive(Debug, Clone, Copy)]
pub struct Variable {
    /// The environment variable's name.
    pub name: &'static str,
    /// Its default, as text (`—` when there is none).
    pub default: &'static str,
    /// What it means.
    pub meaning: &'static str,
}

/// Every variable the gateway reads, in the order `--help` and the README show them.
pub const VARIABLES: &[Variable] = &[
    Variable { name: "LISTEN_ADDR", default: ":8080", meaning: "Bind address; `:PORT` means all interfaces." },
    Variable { name: "SEARXNG_BACKEND_URL", default: "http://127.0.0.1:8888", meaning: "SearXNG base URL (a trailing `/` is tolerated)." },
    Variable { name: "FALLBACK_PROVIDERS", default: "brave", meaning: "Comma list of premium providers (brave, exa, jina, tavily) in preference order." },
    Variable { name: "T1_PREMIUM_COUNT", default: "0", meaning: "Providers called concurrently with SearXNG on every cache miss." },
    Variable { name: "SUFFICIENT_MIN_RESULTS", default: "1", meaning: "Merged-result target that stops the fallback loop." },
    Variable { name: "FALLBACK_TIMEOUT_SECONDS", default: "30", meaning: "Hard budget of one request: calls still in flight at the end are cancelled." },
    Variable { name: "SEARXNG_TIMEOUT_SECONDS", default: "25", meaning: "Timeout of one SearXNG attempt, never beyond what is left of the budget." },
    Variable { name: "SEARXNG_FAIL_THRESHOLD", default: "6", meaning: "Consecutive failed SearXNG calls that start the cooldown." },
    Variable { name: "SEARXNG_FAIL_COOLDOWN_SECONDS", default: "180", meaning: "How long SearXNG is skipped after the threshold; then exactly one request probes it." },
    Variable { name: "SEARXNG_SLOW_SECONDS", default: "auto", meaning: "How long the fallback waits for SearXNG before starting alongside it; `auto` = 2 × SearXNG's recent p95, at least 1 s, at most half the budget." },
    Variable { name: "CACHE_SIZE", default: "1000", meaning: "Answer cache capacity in entries (0 disables the cache)." },
    Variable { name: "CACHE_TTL_SECONDS", default: "3600", meaning: "Lifetime of a complete cached answer (degraded answers live at most 60 s)." },
    Variable { name: "LOG_LEVEL", default: "info", meaning: "error, warn, info, debug or trace." },
    Variable { name: "METRICS_PATH", default: "/metrics", meaning: "Path of the Prometheus exposition; must not collide with another route." },
    Variable { name: "MAX_QUERY_BYTES", default: "2048", meaning: "Longest accepted `q`, in bytes." },
    Variable { name: "PROVIDER_TIMEOUT_SECONDS", default: "15", meaning: "Call timeout of every provider without its own `<NAME>_TIMEOUT_SECONDS`." },
    Variable { name: "BRAVE_API_KEY", default: "—", meaning: "Brave Search API key; without it Brave is inactive." },
    Variable { name: "BRAVE_TIMEOUT_SECONDS", default: "15", meaning: "Brave's call timeout." },
    Variable { name: "BRAVE_BASE_URL", default: "https://api.search.brave.com", meaning: "Origin replacing Brave's (egress proxy, tests)." },
    Variable { name: "EXA_API_KEY", default: "—", meaning: "Exa API key; without it Exa is inactive." },
    Variable { name: "EXA_TIMEOUT_SECONDS", default: "PROVIDER_TIMEOUT_SECONDS", meaning: "Exa's call timeout." },
    Variable { name: "EXA_BASE_URL", default: "https://api.exa.ai", meaning: "Origin replacing Exa's." },
    Variable { name: "JINA_API_KEY", default: "—", meaning: "Jina API key; without it Jina is inactive." },
    Variable { name: "JINA_TIMEOUT_SECONDS", default: "PROVIDER_TIMEOUT_SECONDS", meaning: "Jina's call timeout." },
    Variable { name: "JINA_BASE_URL", default: "https://s.jina.ai", meaning: "Origin replacing Jina's." },
    Variable { name: "TAVILY_API_KEY", default: "—", meaning: "Tavily API key; without it Tavily is inactive." },
    Variable { name: "TAVILY_TIMEOUT_SECONDS", default: "PROVIDER_TIMEOUT_SECONDS", meaning: "Tavily's call timeout." },
    Variable { name: "TAVILY_BASE_URL", default: "https://api.tavily.com", meaning: "Origin replacing Tavily's." },
    Variable { name: "BREAKER_OPEN_SECONDS", default: "300", meaning: "First open period of a tripped circuit breaker." },
    Variable { name: "BREAKER_MAX_OPEN_SECONDS", default: "3600", meaning: "Cap of the doubling open period (a server's own reset hint may exceed it)." },
    Variable { name: "BREAKER_FAILURE_THRESHOLD", default: "5", meaning: "Consecutive transient failures (5xx, timeout, connect) that trip a breaker." },
];

/// A configuration problem: which variable, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {variable}={value:?}: {problem}")]
pub struct ConfigError {
    /// The variable at fault.
    pub variable: String,
    /// The value found (never shown for API keys).
    pub value: String,
    /// What is wrong.
    pub problem: String,
}

impl ConfigError {
    fn new(variable: &str, value: &str, problem: impl Into<String>) -> Self {
        Self {
            variable: variable.to_owned(),
            value: value.to_owned(),
            problem: problem.into(),
        }
    }
}

/// An API key. Its `Debug` and `Display` never show the key.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key itself, for the one place that puts it in a request header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

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
}

/// `SEARXNG_SLOW_SECONDS`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SlowThreshold {
    /// Twice SearXNG's recent p95, at least 1 s, at most half the budget.
    Auto,
    /// A fixed wait.
    Fixed(Duration),
}

/// Settings of one premium provider.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderConfig {
    /// Which provider.
    pub kind: ProviderKind,
    /// Its key; `None` makes the provider inactive.
    pub key: Option<ApiKey>,
    /// Origin (scheme, host, port) replacing the real one.
    pub base_url: Url,
    /// Call timeout.
    pub timeout: Duration,
}

/// The whole validated configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `LISTEN_ADDR`.
    pub listen_addr: SocketAddr,
    /// `SEARXNG_BACKEND_URL`, without a trailing slash in its path.
    pub searxng_url: Url,
    /// `FALLBACK_PROVIDERS`, in preference order.
    pub fallback_providers: Vec<ProviderKind>,
    /// `T1_PREMIUM_COUNT`.
    pub t1_premium_count: usize,
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
    /// `SEARXNG_SLOW_SECONDS`.
    pub searxng_slow: SlowThreshold,
    /// `CACHE_SIZE`.
    pub cache_size: usize,
    /// `CACHE_TTL_SECONDS`.
    pub cache_ttl: Duration,
    /// `LOG_LEVEL`.
    pub log_level: LogLevel,
    /// `METRICS_PATH`.
    pub metrics_path: String,
    /// `MAX_QUERY_BYTES`.
    pub max_query_bytes: usize,
    /// Every provider (active or not), in `ProviderKind::ALL` order.
    pub providers: Vec<ProviderConfig>,
    /// `BREAKER_OPEN_SECONDS`.
    pub breaker_open: Duration,
    /// `BREAKER_MAX_OPEN_SECONDS`.
    pub breaker_max_open: Duration,
    /// `BREAKER_FAILURE_THRESHOLD`.
    pub breaker_failure_threshold: u32,
}

/// Routes the gateway serves itself; `METRICS_PATH` must not be one of them.
pub const RESERVED_PATHS: &[&str] = &["/search", "/healthz", "/readyz", "/status", "/"];

struct Env<'a> {
    lookup: &'a dyn Fn(&str) -> Option<String>,
}

impl Env<'_> {
    /// The raw value, trimmed; an empty value counts as unset.
    fn raw(&self, name: &str) -> Option<String> {
        (self.lookup)(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    fn integer<T: std::str::FromStr + PartialOrd + fmt::Display + Copy>(
        &self,
        name: &str,
        default: T,
        min: T,
        max: T,
    ) -> Result<T, ConfigError> {
        let Some(raw) = self.raw(name) else {
            return Ok(default);
        };
        let value: T = raw
            .parse()
            .map_err(|_| ConfigError::new(name, &raw, "not a whole number"))?;
        if value < min || value > max {
            return Err(ConfigError::new(
                name,
                &raw,
                format!("must be between {min} and {max}"),
            ));
        }
        Ok(value)
    }

    fn seconds(&self, name: &str, default: Option<f64>) -> Result<Option<Duration>, ConfigError> {
        let Some(raw) = self.raw(name) else {
            return Ok(default.map(Duration::from_secs_f64));
        };
        parse_seconds(name, &raw).map(Some)
    }

    fn url(&self, name: &str, default: &str) -> Result<Url, ConfigError> {
        let raw = self.raw(name).unwrap_or_else(|| default.to_owned());
        let url = Url::parse(&raw)
            .map_err(|e| ConfigError::new(name, &raw, format!("not a URL ({e})")))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(ConfigError::new(
                name,
                &raw,
                "must be an http:// or https:// URL with a host",
            ));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(ConfigError::new(
                name,
                &raw,
                "must not carry a query or fragment",
            ));
        }
        Ok(url)
    }
}

fn parse_seconds(name: &str, raw: &str) -> Result<Duration, ConfigError> {
    let secs: f64 = raw
        .parse()
        .map_err(|_| ConfigError::new(name, raw, "not a number of seconds"))?;
    if !secs.is_finite() || secs <= 0.0 || secs > 31_536_000.0 {
        return Err(ConfigError::new(
            name,
            raw,
            "must be a number of seconds greater than 0 and at most one year",
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn parse_listen_addr(raw: &str) -> Result<SocketAddr, ConfigError> {
    let bad = || {
        ConfigError::new(
            "LISTEN_ADDR",
            raw,
            "expected :PORT, HOST:PORT or [IPv6]:PORT",
        )
    };
    if let Some(port) = raw.strip_prefix(':') {
        let port: u16 = port.parse().map_err(|_| bad())?;
        return Ok(SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), port).to_ipv4_if_any());
    }
    if let Some((host, port)) = raw.rsplit_once(':') {
        if host == "localhost" {
            let port: u16 = port.parse().map_err(|_| bad())?;
            return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
        }
    }
    raw.parse().map_err(|_| bad())
}

trait AnyInterface {
    fn to_ipv4_if_any(self) -> SocketAddr;
}

impl AnyInterface for SocketAddr {
    /// `:PORT` binds 0.0.0.0, which works on hosts without IPv6.
    fn to_ipv4_if_any(self) -> SocketAddr {
        SocketAddr::from(([0, 0, 0, 0], self.port()))
    }
}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(&|name| std::env::var(name).ok())
    }

    /// Reads configuration through `lookup` (tests pass a map).
    pub fn from_lookup(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let env = Env { lookup };

        let listen_raw = env.raw("LISTEN_ADDR").unwrap_or_else(|| ":8080".to_owned());
        let listen_addr = parse_listen_addr(&listen_raw)?;

        let mut searxng_url = env.url("SEARXNG_BACKEND_URL", "http://127.0.0.1:8888")?;
        let trimmed = searxng_url.path().trim_end_matches('/').to_owned();
        searxng_url.set_path(&trimmed);

        let providers_raw = env
            .raw("FALLBACK_PROVIDERS")
            .unwrap_or_else(|| "brave".to_owned());
        let mut fallback_providers = Vec::new();
        for name in providers_raw
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            let kind = ProviderKind::from_name(name).ok_or_else(|| {
                ConfigError::new(
                    "FALLBACK_PROVIDERS",
                    &providers_raw,
                    format!("unknown provider {name:?} (known: brave, exa, jina, tavily)"),
                )
            })?;
            if fallback_providers.contains(&kind) {
                return Err(ConfigError::new(
                    "FALLBACK_PROVIDERS",
                    &providers_raw,
                    format!("provider {name:?} is listed twice"),
                ));
            }
            fallback_providers.push(kind);
        }

        let t1_premium_count = env.integer("T1_PREMIUM_COUNT", 0usize, 0, 16)?;
        let sufficient_min_results = env.integer("SUFFICIENT_MIN_RESULTS", 1usize, 0, 1000)?;
        let request_budget = env
            .seconds("FALLBACK_TIMEOUT_SECONDS", Some(30.0))?
            .unwrap_or(Duration::from_secs(30));
        let searxng_timeout = env
            .seconds("SEARXNG_TIMEOUT_SECONDS", Some(25.0))?
            .unwrap_or(Duration::from_secs(25));
        let searxng_fail_threshold = env.integer("SEARXNG_FAIL_THRESHOLD", 6u32, 1, 10_000)?;
        let searxng_fail_cooldown = env
            .seconds("SEARXNG_FAIL_COOLDOWN_SECONDS", Some(180.0))?
            .unwrap_or(Duration::from_secs(180));
        let searxng_slow = match env.raw("SEARXNG_SLOW_SECONDS") {
            None => SlowThreshold::Auto,
            Some(raw) if raw.eq_ignore_ascii_case("auto") => SlowThreshold::Auto,
            Some(raw) => SlowThreshold::Fixed(parse_seconds("SEARXNG_SLOW_SECONDS", &raw)?),
        };
        let cache_size = env.integer("CACHE_SIZE", 1000usize, 0, 10_000_000)?;
        let cache_ttl = env
            .seconds("CACHE_TTL_SECONDS", Some(3600.0))?
            .unwrap_or(Duration::from_secs(3600));
        let log_level = match env
            .raw("LOG_LEVEL")
            .map(|v| v.to_ascii_lowercase())
            .as_deref()
        {
            None | Some("info") => LogLevel::Info,
            Some("error") => LogLevel::Error,
            Some("warn") | Some("warning") => LogLevel::Warn,
            Some("debug") => LogLevel::Debug,
            Some("trace") => LogLevel::Trace,
            Some(other) => {
                return Err(ConfigError::new(
                    "LOG_LEVEL",
                    other,
                    "must be one of error, warn, info, debug, trace",
                ))
            }
        };
        let metrics_path = env
            .raw("METRICS_PATH")
            .unwrap_or_else(|| "/metrics".to_owned());
        let path_ok = metrics_path.starts_with('/')
            && metrics_path.len() > 1
            && metrics_path
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '-' | '_' | '.'));
        if !path_ok {
            return Err(ConfigError::new(
                "METRICS_PATH",
                &metrics_path,
                "must be an absolute path such as /metrics",
            ));
        }
        if RESERVED_PATHS.contains(&metrics_path.trim_end_matches('/'))
            || metrics_path.trim_end_matches('/').is_empty()
        {
            return Err(ConfigError::new(
                "METRICS_PATH",
                &metrics_path,
                "collides with a route the gateway already serves",
            ));
        }
        let max_query_bytes = env.integer("MAX_QUERY_BYTES", 2048usize, 1, 65_536)?;
        let provider_timeout = env
            .seconds("PROVIDER_TIMEOUT_SECONDS", Some(15.0))?
            .unwrap_or(Duration::from_secs(15));

        let mut providers = Vec::new();
        for kind in ProviderKind::ALL {
            let prefix = kind.env_prefix();
            let key = env.raw(&format!("{prefix}_API_KEY")).map(ApiKey::new);
            let own_default = (kind == ProviderKind::Brave).then_some(15.0);
            let timeout = env
                .seconds(&format!("{prefix}_TIMEOUT_SECONDS"), own_default)?
                .unwrap_or(provider_timeout);
            let base_name = format!("{prefix}_BASE_URL");
            let mut base_url = env.url(&base_name, kind.default_base_url())?;
            if !matches!(base_url.path(), "" | "/") {
                return Err(ConfigError::new(
                    &base_name,
                    base_url.as_str(),
                    "must be an origin (scheme://host[:port]) without a path: the provider's path is added",
                ));
            }
            base_url.set_path("");
            providers.push(ProviderConfig {
                kind,
                key,
                base_url,
                timeout,
            });
        }

        let breaker_open = env
            .seconds("BREAKER_OPEN_SECONDS", Some(300.0))?
            .unwrap_or(Duration::from_secs(300));
        let breaker_max_open = env
            .seconds("BREAKER_MAX_OPEN_SECONDS", Some(3600.0))?
            .unwrap_or(Duration::from_secs(3600));
        if breaker_max_open < breaker_open {
            return Err(ConfigError::new(
                "BREAKER_MAX_OPEN_SECONDS",
                &format!("{}", breaker_max_open.as_secs_f64()),
                "must not be smaller than BREAKER_OPEN_SECONDS",
            ));
        }
        let breaker_failure_threshold =
            env.integer("BREAKER_FAILURE_THRESHOLD", 5u32, 1, 10_000)?;

        // Every variable read above must be in VARIABLES, so --help and the README stay complete.
        debug_assert!(
            VARIABLES
                .iter()
                .map(|v| v.name)
                .collect::<HashSet<_>>()
                .len()
                == VARIABLES.len()
        );

        Ok(Self {
            listen_addr,
            searxng_url,
            fallback_providers,
            t1_premium_count,
            sufficient_min_results,
            request_budget,
            searxng_timeout,
            searxng_fail_threshold,
            searxng_fail_cooldown,
            searxng_slow,
            cache_size,
            cache_ttl,
            log_level,
            metrics_path,
            max_query_bytes,
            providers,
            breaker_open,
            breaker_max_open,
            breaker_failure_threshold,
        })
    }

    /// The provider settings for `kind`.
    pub fn provider(&self, kind: ProviderKind) -> &ProviderConfig {
        // `providers` holds every kind by construction.
        &self.providers[ProviderKind::ALL
            .iter()
            .position(|k| *k == kind)
            .unwrap_or_default()]
    }

    /// Providers in `FALLBACK_PROVIDERS` order that have a key.
    pub fn active_providers(&self) -> Vec<ProviderKind> {
        self.fallback_providers
            .iter()
            .copied()
            .filter(|k| self.provider(*k).key.is_some())
            .collect()
    }

    /// The README's configuration table (a test keeps README.md equal to it).
    pub fn markdown_table() -> String {
        let mut out = String::from("| variable | default | meaning |\n|---|---|---|\n");
        for v in VARIABLES {
            out.push_str(&format!(
                "| `{}` | `{}` | {} |\n",
                v.name, v.default, v.meaning
            ));
        }
        out
    }

    /// The `--help` text: usage plus every variable with its default and meaning.
    pub fn help_text() -> String {
        let mut out = String::from(
            "searxng-gateway — a decision proxy in front of SearXNG\n\n\
             USAGE:\n    searxng-gateway              serve (configured by environment variables)\n    \
             searxng-gateway healthcheck  exit 0 when the local /healthz answers 200\n    \
             searxng-gateway demo         the gateway against simulated SearXNG and premium APIs on\n    \
             \x20                            loopback, narrating its decisions (--listen ADDR, default\n    \
             \x20                            127.0.0.1:8080 or LISTEN_ADDR; --rounds N; --pause SECONDS)\n    \
             searxng-gateway --config-table  the variables below as a Markdown table\n    \
             searxng-gateway --help       this text\n\nENVIRONMENT:\n",
        );
        let width = VARIABLES.iter().map(|v| v.name.len()).max().unwrap_or(0);
        for v in VARIABLES {
            out.push_str(&format!(
                "    {:width$}  {} (default: {})\n",
                v.name, v.meaning, v.default
            ));
        }
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Config::from_lookup(&move |name| map.get(name).cloned())
    }

    #[test]
    fn defaults_match_the_contract() {
        let c = config(&[]).unwrap();
        assert_eq!(c.listen_addr, "0.0.0.0:8080".parse().unwrap());
        assert_eq!(c.searxng_url.as_str(), "http://127.0.0.1:8888/");
        assert_eq!(c.fallback_providers, [ProviderKind::Brave]);
        assert_eq!(c.t1_premium_count, 0);
        assert_eq!(c.sufficient_min_results, 1);
        assert_eq!(c.request_budget, Duration::from_secs(30));
        assert_eq!(c.searxng_timeout, Duration::from_secs(25));
        assert_eq!(c.searxng_fail_threshold, 6);
        assert_eq!(c.searxng_fail_cooldown, Duration::from_secs(180));
        assert_eq!(c.searxng_slow, SlowThreshold::Auto);
        assert_eq!(
            (c.cache_size, c.cache_ttl),
            (1000, Duration::from_secs(3600))
        );
        assert_eq!(c.log_level, LogLevel::Info);
        assert_eq!(c.metrics_path, "/metrics");
        assert_eq!(c.max_query_bytes, 2048);
        assert_eq!(
            c.provider(ProviderKind::Brave).timeout,
            Duration::from_secs(15)
        );
        assert_eq!(
            c.provider(ProviderKind::Exa).timeout,
            Duration::from_secs(15)
        );
        assert_eq!(c.breaker_open, Duration::from_secs(300));
        assert_eq!(c.breaker_max_open, Duration::from_secs(3600));
        assert_eq!(c.breaker_failure_threshold, 5);
        assert!(
            c.active_providers().is_empty(),
            "no key, no active provider"
        );
    }

    #[test]
    fn each_bad_value_names_its_variable() {
        let cases = [
            ("LISTEN_ADDR", "8080"),
            ("SEARXNG_BACKEND_URL", "ftp://x"),
            ("FALLBACK_PROVIDERS", "brave,google"),
            ("FALLBACK_PROVIDERS", "brave,brave"),
            ("T1_PREMIUM_COUNT", "two"),
            ("T1_PREMIUM_COUNT", "-1"),
            ("SUFFICIENT_MIN_RESULTS", "1.5"),
            ("FALLBACK_TIMEOUT_SECONDS", "0"),
            ("SEARXNG_TIMEOUT_SECONDS", "abc"),
            ("SEARXNG_FAIL_THRESHOLD", "0"),
            ("SEARXNG_FAIL_COOLDOWN_SECONDS", "-5"),
            ("SEARXNG_SLOW_SECONDS", "fast"),
            ("CACHE_SIZE", "1e3"),
            ("CACHE_TTL_SECONDS", "NaN"),
            ("LOG_LEVEL", "verbose"),
            ("METRICS_PATH", "/search"),
            ("METRICS_PATH", "metrics"),
            ("MAX_QUERY_BYTES", "0"),
            ("PROVIDER_TIMEOUT_SECONDS", "inf"),
            ("BRAVE_TIMEOUT_SECONDS", "x"),
            ("EXA_BASE_URL", "https://proxy.local/path"),
            ("BREAKER_OPEN_SECONDS", "0"),
            ("BREAKER_FAILURE_THRESHOLD", "many"),
        ];
        for (name, value) in cases {
            let err = config(&[(name, value)]).unwrap_err();
            assert_eq!(err.variable, name, "{name}={value}");
            assert!(err.to_string().contains(name));
        }
        let err = config(&[
            ("BREAKER_OPEN_SECONDS", "600"),
            ("BREAKER_MAX_OPEN_SECONDS", "60"),
        ])
        .unwrap_err();
        assert_eq!(err.variable, "BREAKER_MAX_OPEN_SECONDS");
    }

    #[test]
    fn provider_order_and_keys_decide_the_active_list() {
        let c = config(&[
            ("FALLBACK_PROVIDERS", " tavily, Exa ,brave"),
            ("EXA_API_KEY", "e"),
            ("TAVILY_API_KEY", "t"),
        ])
        .unwrap();
        assert_eq!(
            c.fallback_providers,
            [ProviderKind::Tavily, ProviderKind::Exa, ProviderKind::Brave]
        );
        assert_eq!(
            c.active_providers(),
            [ProviderKind::Tavily, ProviderKind::Exa]
        );
    }

    #[test]
    fn provider_timeouts_and_origins_are_per_provider() {
        let c = config(&[
            ("PROVIDER_TIMEOUT_SECONDS", "4"),
            ("JINA_TIMEOUT_SECONDS", "2.5"),
            ("TAVILY_BASE_URL", "http://127.0.0.1:9000/"),
        ])
        .unwrap();
        assert_eq!(
            c.provider(ProviderKind::Brave).timeout,
            Duration::from_secs(15)
        );
        assert_eq!(
            c.provider(ProviderKind::Exa).timeout,
            Duration::from_secs(4)
        );
        assert_eq!(
            c.provider(ProviderKind::Jina).timeout,
            Duration::from_millis(2500)
        );
        assert_eq!(
            c.provider(ProviderKind::Tavily).base_url.as_str(),
            "http://127.0.0.1:9000/"
        );
    }

    #[test]
    fn listen_addr_forms() {
        assert_eq!(
            config(&[("LISTEN_ADDR", ":9090")])
                .unwrap()
                .listen_addr
                .port(),
            9090
        );
        assert_eq!(
            config(&[("LISTEN_ADDR", "127.0.0.1:0")])
                .unwrap()
                .listen_addr,
            "127.0.0.1:0".parse().unwrap()
        );
        assert_eq!(
            config(&[("LISTEN_ADDR", "[::1]:80")]).unwrap().listen_addr,
            "[::1]:80".parse().unwrap()
        );
    }

    #[test]
    fn searxng_url_tolerates_a_trailing_slash() {
        let c = config(&[("SEARXNG_BACKEND_URL", "http://h:1/searx/")]).unwrap();
        assert_eq!(c.searxng_url.as_str(), "http://h:1/searx");
    }

    #[test]
    fn keys_never_show_in_debug_or_errors() {
        let c = config(&[("BRAVE_API_KEY", "sekrit-123")]).unwrap();
        assert!(!format!("{c:?}").contains("sekrit-123"));
        let err = config(&[("BRAVE_API_KEY", "sekrit-123"), ("CACHE_SIZE", "x")]).unwrap_err();
        assert!(!err.to_string().contains("sekrit-123"));
    }

    #[test]
    fn readme_configuration_table_matches_the_code() {
        let readme = include_str!("../../../README.md");
        let start = readme
            .find("<!-- config-table:start -->")
            .expect("README has the config-table start marker");
        let end = readme
            .find("<!-- config-table:end -->")
            .expect("README has the config-table end marker");
        let table = readme[start..end]
            .trim_start_matches("<!-- config-table:start -->")
            .trim();
        assert_eq!(
            table,
            Config::markdown_table().trim(),
            "README.md's configuration table is out of date: paste Config::markdown_table()"
        );
    }

    #[test]
    fn help_lists_every_variable_with_its_default() {
        let help = Config::help_text();
        for v in VARIABLES {
            assert!(help.contains(v.name), "{}", v.name);
            assert!(help.contains(v.default), "{}", v.default);
        }
    }
}
