//! The whole validated configuration: [`Config`], put together from the sections each crate reads
//! through `gateway_core::env` — the engine's ([`EngineSettings`]: SearXNG, the providers and
//! readers, the fan-out's numbers, the cache, breakers, Redis), the doors' ([`ServerSettings`]:
//! limits, clients, the admin token, the operator's page, the state file) — and the sections only
//! the binary uses, read here: the listen address, logs and traces. A value that does not parse,
//! is out of range, or names an unknown provider is a [`ConfigError`] naming the variable —
//! nothing falls back to a default silently.

pub(crate) mod otlp;

use std::net::SocketAddr;

pub use gateway_core::env::variables;
use gateway_core::env::Env;
pub use gateway_core::env::{ConfigError, Problem};
use gateway_core::runtime::Runtime;
use gateway_engine::settings::EngineSettings;
use gateway_http::settings::{GatewaySettings, ServerSettings};
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

/// The whole validated configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub(crate) listen_addr: SocketAddr,
    /// The engine's settings and the doors'.
    pub(crate) gateway: GatewaySettings,
    pub(crate) log_level: LogLevel,
    /// OpenTelemetry export; `None`: tracing is off.
    pub(crate) otlp: Option<OtlpExport>,
    /// `LOG_FORMAT`.
    pub(crate) log_format: LogFormat,
    /// `LOG_QUEUE_LINES`: log lines waiting for the writer thread before new ones are dropped.
    pub(crate) log_queue_lines: usize,
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
        let engine = EngineSettings::read(env)?;
        let server = ServerSettings::read(env)?;
        let log_level = match env.value("LOG_LEVEL") {
            Some(raw) => LogLevel::parse(&raw.text)
                .ok_or_else(|| raw.error(Problem::NotOneOf(LogLevel::NAMES)))?,
            None => LogLevel::Info,
        };
        let otlp = OtlpExport::read(env)?;
        let log_format = log_format(env)?;
        let log_queue_lines = env.integer("LOG_QUEUE_LINES", 1, 10_000_000)?;
        Ok(Self {
            listen_addr,
            gateway: GatewaySettings { engine, server },
            log_level,
            otlp,
            log_format,
            log_queue_lines,
        })
    }

    /// `LISTEN_ADDR`.
    pub fn listen_addr(&self) -> SocketAddr {
        self.listen_addr
    }

    /// `METRICS_PATH`.
    pub fn metrics_path(&self) -> &str {
        &self.gateway.server.metrics_path
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
        self.gateway.engine.runtime
    }

    /// Pages are parsed by `program` (run as `program parse-worker`) unless `PARSE_WORKER_PROGRAM`
    /// names another: the binary passes itself.
    #[must_use]
    pub fn with_parse_worker(mut self, program: std::path::PathBuf) -> Self {
        self.gateway
            .engine
            .reader
            .sandbox
            .program
            .get_or_insert(program);
        self
    }
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
