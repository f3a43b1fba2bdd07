//! What the premium providers are configured with, read from the environment here (their owner):
//! `FALLBACK_PROVIDERS` (which ones, in which order), and per provider its key, origin and call
//! timeout (`<NAME>_API_KEY`, `<NAME>_BASE_URL`, `<NAME>_TIMEOUT_SECONDS`). The provider client
//! consumes them.

use std::fmt;
use std::time::Duration;

use url::Url;

use super::ProviderKind;
use gateway_core::env::{ConfigError, Env, Problem};

/// An API key. Its `Debug` and `Display` never show the key; only the HTTP client reads it, to put
/// it where the provider's declared [`super::api::Auth`] says.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key itself, for the one place that puts it in a request header.
    pub(super) fn expose(&self) -> &str {
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

/// Keys one provider takes at most.
pub(crate) const MAX_KEYS: usize = 32;

/// Settings of one premium provider.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderSettings {
    /// Which provider.
    pub kind: ProviderKind,
    /// Its keys, in the order given (a pool when several: [`super::keys`]); none makes the
    /// provider inactive.
    pub keys: Vec<ApiKey>,
    /// Origin (scheme, host, port) replacing the real one.
    pub base_url: Url,
    /// Call timeout.
    pub timeout: Duration,
    /// What one call costs, in US dollars (`PREMIUM_PRICE_<NAME>`).
    pub usd_per_call: f64,
}

/// Reads `FALLBACK_PROVIDERS`: the providers to call, in preference order (unset: none).
pub fn read_fallback_list(env: &Env<'_>) -> Result<Vec<ProviderKind>, ConfigError> {
    env.name_list(
        "FALLBACK_PROVIDERS",
        "provider",
        &ProviderKind::ALL.map(ProviderKind::as_str),
        ProviderKind::from_name,
    )
}

/// Reads every provider's settings (active or not), in [`ProviderKind::ALL`] order.
pub fn read(env: &Env<'_>) -> Result<Vec<ProviderSettings>, ConfigError> {
    let mut providers = Vec::new();
    for kind in ProviderKind::ALL {
        let prefix = kind.env_prefix();
        let keys = read_keys(env, &format!("{prefix}_API_KEY"))?;
        let timeout = env.seconds(&format!("{prefix}_TIMEOUT_SECONDS"))?;
        let base_url = env.origin(&format!("{prefix}_BASE_URL"))?;
        providers.push(ProviderSettings {
            kind,
            keys,
            base_url,
            timeout,
            usd_per_call: super::price::read(env, kind)?,
        });
    }
    Ok(providers)
}

/// `variable` as a comma list of keys (one key is a list of one). A key's value never reaches an
/// error message: a repeated key is named by its fingerprint.
pub(crate) fn read_keys(env: &Env<'_>, variable: &str) -> Result<Vec<ApiKey>, ConfigError> {
    let Some(raw) = env.value(variable) else {
        return Ok(Vec::new());
    };
    let hidden = |problem| ConfigError::new(variable, "<redacted>", problem);
    let mut keys: Vec<ApiKey> = Vec::new();
    for key in raw.text.split(',').map(str::trim) {
        if key.is_empty() {
            return Err(hidden(Problem::EmptyEntry));
        }
        let key = ApiKey::new(key);
        if keys.contains(&key) {
            let fingerprint = super::keys::Fingerprint::of(&key);
            return Err(hidden(Problem::ListedTwice(format!(
                "the key with fingerprint {fingerprint}"
            ))));
        }
        keys.push(key);
    }
    if keys.len() > MAX_KEYS {
        return Err(hidden(Problem::TooMany {
            count: keys.len(),
            max: MAX_KEYS,
        }));
    }
    Ok(keys)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn keys(value: &str) -> Result<Vec<ApiKey>, ConfigError> {
        let lookup = move |name: &str| (name == "BRAVE_API_KEY").then(|| value.to_owned());
        read_keys(&Env::new(&lookup), "BRAVE_API_KEY")
    }

    #[test]
    fn a_key_variable_holds_one_key_or_a_comma_list_and_errors_never_show_one() {
        assert_eq!(keys("k1").unwrap(), [ApiKey::new("k1")]);
        assert_eq!(
            keys(" k1 , k2,k3").unwrap(),
            [ApiKey::new("k1"), ApiKey::new("k2"), ApiKey::new("k3")]
        );
        for bad in ["sekrit-1,,sekrit-2", "sekrit-1,sekrit-1"] {
            let err = keys(bad).unwrap_err().to_string();
            assert!(err.contains("BRAVE_API_KEY"), "{err}");
            assert!(!err.contains("sekrit"), "{err}");
        }
        let many: Vec<String> = (0..=MAX_KEYS).map(|i| format!("k{i}")).collect();
        assert!(keys(&many.join(",")).is_err());
    }

    #[test]
    fn a_key_never_shows_in_debug_or_display() {
        let key = ApiKey::new("sekrit-123");
        assert!(!format!("{key:?}").contains("sekrit"));
        assert!(!key.to_string().contains("sekrit"));
    }
}
