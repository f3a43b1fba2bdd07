//! The gateway's own log lines in demo mode: `LOG_LEVEL` read and checked exactly as the gateway's
//! serve mode reads it ([`searxng_gateway::LogLevel::parse`]), but defaulting to `error` since the
//! narration on stdout is the demo's output; the lines go to stderr, coloured only when stderr is a
//! terminal.

use std::io::IsTerminal;

use searxng_gateway::LogLevel;
use tracing_subscriber::EnvFilter;

/// `LOG_LEVEL` holds something else.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid LOG_LEVEL={0:?}: must be one of error, warn, info, debug, trace")]
pub(crate) struct InvalidLogLevel(String);

/// The level `LOG_LEVEL` names (`None` or blank: errors only).
pub(crate) fn level_from_env_value(value: Option<&str>) -> Result<LogLevel, InvalidLogLevel> {
    match value.filter(|raw| !raw.trim().is_empty()) {
        None => Ok(LogLevel::Error),
        Some(raw) => LogLevel::parse(raw).ok_or_else(|| InvalidLogLevel(raw.to_owned())),
    }
}

/// Installs the subscriber: the gateway's lines at `level`, everything else at `error`, on stderr.
pub(crate) fn init(level: LogLevel) {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::new(format!(
            "searxng_gateway={0},gateway_core={0},gateway_upstreams={0},gateway_engine={0},gateway_http={0},error",
            level.as_str()
        )))
        .with_target(false)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_level_is_read_as_the_gateway_reads_it_with_errors_by_default() {
        assert_eq!(level_from_env_value(None), Ok(LogLevel::Error));
        assert_eq!(level_from_env_value(Some("  ")), Ok(LogLevel::Error));
        assert_eq!(level_from_env_value(Some("WARNING")), Ok(LogLevel::Warn));
        assert_eq!(level_from_env_value(Some("debug")), Ok(LogLevel::Debug));
        assert!(level_from_env_value(Some("verbose")).is_err());
    }
}
