//! The gateway's own log lines in demo mode: `LOG_LEVEL` read and checked as the gateway's serve mode checks
//! it (error, warn, info, debug, trace, any case), but defaulting to `error` since the narration on stdout is
//! the demo's output; the lines go to stderr, coloured only when stderr is a terminal.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// How much of the gateway's own logging the demo shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LogLevel {
    /// Errors only (the demo's default).
    Error,
    /// Warnings and errors.
    Warn,
    /// One line per request plus lifecycle events.
    Info,
    /// Upstream decisions in detail.
    Debug,
    /// Everything.
    Trace,
}

/// `LOG_LEVEL` holds something else.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid LOG_LEVEL={0:?}: must be one of error, warn, info, debug, trace")]
pub(crate) struct InvalidLogLevel(String);

impl LogLevel {
    /// The level `LOG_LEVEL` names (`None` or blank: [`LogLevel::Error`]). `warning` is accepted as the
    /// gateway accepts it.
    pub(crate) fn from_env_value(value: Option<&str>) -> Result<Self, InvalidLogLevel> {
        let Some(raw) = value.filter(|raw| !raw.trim().is_empty()) else {
            return Ok(Self::Error);
        };
        match raw.trim().to_ascii_lowercase().as_str() {
            "error" => Ok(Self::Error),
            "warn" | "warning" => Ok(Self::Warn),
            "info" => Ok(Self::Info),
            "debug" => Ok(Self::Debug),
            "trace" => Ok(Self::Trace),
            _ => Err(InvalidLogLevel(raw.to_owned())),
        }
    }

    /// The `tracing` directive.
    fn as_str(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warn => "warn",
            Self::Info => "info",
            Self::Debug => "debug",
            Self::Trace => "trace",
        }
    }
}

/// Installs the subscriber: the gateway's lines at `level`, everything else at `error`, on stderr.
pub(crate) fn init(level: LogLevel) {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::new(format!(
            "searxng_gateway={},error",
            level.as_str()
        )))
        .with_target(false)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_gateways_levels_in_any_case_and_defaults_to_error() {
        let cases = [
            (None, LogLevel::Error),
            (Some(""), LogLevel::Error),
            (Some("error"), LogLevel::Error),
            (Some("WARN"), LogLevel::Warn),
            (Some("warning"), LogLevel::Warn),
            (Some("Info"), LogLevel::Info),
            (Some("debug"), LogLevel::Debug),
            (Some(" trace "), LogLevel::Trace),
        ];
        for (value, level) in cases {
            assert_eq!(LogLevel::from_env_value(value), Ok(level), "{value:?}");
        }
    }

    #[test]
    fn refuses_anything_else_in_one_line_naming_the_variable() {
        let err = LogLevel::from_env_value(Some("verbose")).unwrap_err();

        let message = err.to_string();
        assert_eq!(
            message,
            "invalid LOG_LEVEL=\"verbose\": must be one of error, warn, info, debug, trace"
        );
        assert!(!message.contains('\n'));
    }
}
