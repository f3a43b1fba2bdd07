//! Who may search and who may administer, read with the rest of the configuration
//! (`API_KEYS_FILE`, `RATE_LIMIT_PER_MINUTE`, `PREMIUM_CALLS_PER_DAY`, `ADMIN_TOKEN`), and how log
//! lines are written (`LOG_FORMAT`). The keys file is parsed here, at start-up, so a malformed line
//! stops the process with its line number and exit 2 like any other configuration error.

use std::fmt;
use std::path::PathBuf;

use super::parse::Env;
use super::ConfigError;
use crate::clients::{ClientDefaults, KeysSource};

/// Shortest accepted `ADMIN_TOKEN`: a guessable token would open the breakers to anyone.
const MIN_ADMIN_TOKEN_LEN: usize = 16;

/// `ADMIN_TOKEN`: its value never appears in a log line or an error.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct AdminToken(String);

impl AdminToken {
    /// The token's bytes, for the constant-time comparison.
    pub(crate) fn expose(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl fmt::Debug for AdminToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AdminToken(<redacted>)")
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

/// The access settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Access {
    /// `API_KEYS_FILE`; `None`: the gateway is open.
    pub(crate) keys: Option<KeysSource>,
    pub(crate) defaults: ClientDefaults,
    pub(crate) admin_token: Option<AdminToken>,
}

impl Access {
    pub(super) fn read(env: &Env<'_>) -> Result<Self, ConfigError> {
        let keys = match env.value("API_KEYS_FILE") {
            Some(raw) => Some(
                KeysSource::read(PathBuf::from(&raw.text))
                    .map_err(|err| raw.error(err.to_string()))?,
            ),
            None => None,
        };
        let defaults = ClientDefaults {
            requests_per_minute: env.integer("RATE_LIMIT_PER_MINUTE", 0u32, 1_000_000)?,
            premium_calls_per_day: env.integer("PREMIUM_CALLS_PER_DAY", 0u32, 10_000_000)?,
        };
        // Checked for length only: the value never reaches an error message.
        let admin_token = match env.value("ADMIN_TOKEN") {
            Some(raw) if raw.text.len() < MIN_ADMIN_TOKEN_LEN => {
                return Err(ConfigError::new(
                    "ADMIN_TOKEN",
                    "<redacted>",
                    format!("must be at least {MIN_ADMIN_TOKEN_LEN} characters"),
                ))
            }
            Some(raw) => Some(AdminToken(raw.text)),
            None => None,
        };
        Ok(Self {
            keys,
            defaults,
            admin_token,
        })
    }
}

pub(super) fn log_format(env: &Env<'_>) -> Result<LogFormat, ConfigError> {
    match env.value("LOG_FORMAT") {
        Some(raw) => match raw.text.to_ascii_lowercase().as_str() {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            _ => Err(raw.error("must be text or json")),
        },
        None => Ok(LogFormat::Text),
    }
}
