//! Pools of keys: a provider configured with several keys (`<NAME>_API_KEY=k1,k2,…`: free tiers,
//! per-project keys) calls them in turn, and each key has a breaker of its own (namespace `key`),
//! its own quota windows and its own parking — a key answered 429 or with a spent quota is set
//! aside while the others carry on; the provider is skipped only when no key is usable (what
//! concerns the provider as a whole — it is down, slow, answers garbage — stays on the provider's
//! own breaker). The provider's breaker state, as its series and `/status` show it, is derived from
//! its own and its keys' (`gateway_core::breaker` `rollup`): open while no key is usable, so a one-key
//! provider reads as its key did before pools.
//!
//! A key is named, wherever it must be named (`/status`, metrics, logs, the Redis tier), by its
//! [`Fingerprint`]: the first 8 hex digits of its SHA-256 — enough to tell a team's keys apart,
//! nothing to learn the key from.

use std::fmt;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::{ApiKey, ProviderKind};

/// A short, non-secret name of a key: the first four bytes of its SHA-256, shown as 8 hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint([u8; 4]);

impl Fingerprint {
    /// `key`'s fingerprint.
    pub(crate) fn of(key: &ApiKey) -> Self {
        let digest = Sha256::digest(key.expose().as_bytes());
        Self([digest[0], digest[1], digest[2], digest[3]])
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({self})")
    }
}

/// One key of one provider, by fingerprint: `brave:1a2b3c4d`. Cheap to clone.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyId {
    provider: ProviderKind,
    fingerprint: Fingerprint,
    name: Arc<str>,
}

impl KeyId {
    /// The key of `provider` with `fingerprint`.
    pub(crate) fn new(provider: ProviderKind, fingerprint: Fingerprint) -> Self {
        Self {
            provider,
            fingerprint,
            name: Arc::from(format!("{}:{fingerprint}", provider.as_str())),
        }
    }

    /// Its fingerprint.
    pub fn fingerprint(&self) -> Fingerprint {
        self.fingerprint
    }

    /// `provider:fingerprint`, its breaker's name.
    pub fn as_str(&self) -> &str {
        &self.name
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_named_by_a_short_digest_that_shows_nothing_of_it() {
        let key = ApiKey::new("BSA-sekrit-0123456789");
        let id = KeyId::new(ProviderKind::Brave, Fingerprint::of(&key));
        let shown = id.as_str();
        assert!(
            shown.starts_with("brave:") && shown.len() == "brave:".len() + 8,
            "{shown}"
        );
        assert!(!shown.contains("sekrit"));
        assert_eq!(
            Fingerprint::of(&ApiKey::new("BSA-sekrit-0123456789")),
            id.fingerprint(),
            "the same key, the same name"
        );
        assert_ne!(Fingerprint::of(&ApiKey::new("another")), id.fingerprint());
        assert!(!format!("{id:?}").contains("sekrit"));
        assert_eq!(id.provider, ProviderKind::Brave);
    }
}
