//! What one premium provider is configured with: its key, origin and call timeout. The
//! configuration module builds these from `<NAME>_API_KEY`, `<NAME>_BASE_URL` and
//! `<NAME>_TIMEOUT_SECONDS`; the provider client consumes them.

use std::fmt;
use std::time::Duration;

use url::Url;

use super::ProviderKind;

/// An API key. Its `Debug` and `Display` never show the key; only the HTTP client reads it, to put
/// it where the provider's declared [`super::api::Auth`] says.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub(crate) fn new(key: impl Into<String>) -> Self {
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

/// Settings of one premium provider.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProviderSettings {
    /// Which provider.
    pub(crate) kind: ProviderKind,
    /// Its key; `None` makes the provider inactive.
    pub(crate) key: Option<ApiKey>,
    /// Origin (scheme, host, port) replacing the real one.
    pub(crate) base_url: Url,
    /// Call timeout.
    pub(crate) timeout: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_never_shows_in_debug_or_display() {
        let key = ApiKey::new("sekrit-123");
        assert!(!format!("{key:?}").contains("sekrit"));
        assert!(!key.to_string().contains("sekrit"));
    }
}
