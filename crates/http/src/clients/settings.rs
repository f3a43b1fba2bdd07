//! Who may search and how much, read from the environment here (their owner): `API_KEYS_FILE`
//! (parsed at start-up, so a malformed line stops the process with its line number and exit 2,
//! like any other configuration error), `RATE_LIMIT_PER_MINUTE` and `PREMIUM_CALLS_PER_DAY`, and
//! the end users of a trusted Open WebUI (`OPENWEBUI_USER_*`).

use std::path::PathBuf;

use super::end_users::EndUserHeaders;
use super::{ClientDefaults, KeysSource};
use gateway_core::env::{ConfigError, Env, Problem};

/// The clients' settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientSettings {
    /// `API_KEYS_FILE`; `None`: the gateway is open.
    pub(crate) keys: Option<KeysSource>,
    /// The limits of a client whose line sets none.
    pub(crate) defaults: ClientDefaults,
    /// `OPENWEBUI_USER_HEADER_TRUST`: whether Open WebUI's user headers name end users.
    pub(crate) end_user_headers: EndUserHeaders,
}

impl ClientSettings {
    /// Reads the keys file and the default limits.
    pub(crate) fn read(env: &Env<'_>) -> Result<Self, ConfigError> {
        let keys = match env.value("API_KEYS_FILE") {
            Some(raw) => Some(
                KeysSource::read(PathBuf::from(&raw.text))
                    .map_err(|err| raw.error(Problem::UnusableFile(err.to_string())))?,
            ),
            None => None,
        };
        let defaults = ClientDefaults {
            requests_per_minute: env.integer("RATE_LIMIT_PER_MINUTE", 0u32, 1_000_000)?,
            premium_calls_per_day: env.integer("PREMIUM_CALLS_PER_DAY", 0u32, 10_000_000)?,
            user_requests_per_minute: env.optional_integer(
                "OPENWEBUI_USER_RATE_LIMIT_PER_MINUTE",
                0u32,
                1_000_000,
            )?,
            user_premium_calls_per_day: env.optional_integer(
                "OPENWEBUI_USER_PREMIUM_CALLS_PER_DAY",
                0u32,
                10_000_000,
            )?,
        };
        Ok(Self {
            keys,
            defaults,
            end_user_headers: if env.flag("OPENWEBUI_USER_HEADER_TRUST")? {
                EndUserHeaders::Trusted
            } else {
                EndUserHeaders::Ignored
            },
        })
    }
}
