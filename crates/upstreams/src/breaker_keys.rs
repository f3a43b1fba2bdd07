//! Which breaker each upstream's identity keys: a provider, one of its keys, a premium reader, a
//! SearXNG engine. The names are the ones `/status`, the metrics and the admin routes use; the
//! policy of what opens a breaker is the engine's.

use gateway_core::breaker::{BreakerKey, BreakerKind};

use crate::providers::keys::KeyId;
use crate::providers::readers::ReaderKind;
use crate::providers::ProviderKind;
use crate::searxng::EngineName;

impl BreakerKey for ProviderKind {
    const KIND: BreakerKind = BreakerKind::Provider;

    fn name(&self) -> &str {
        self.as_str()
    }
}

impl BreakerKey for KeyId {
    const KIND: BreakerKind = BreakerKind::Key;

    fn name(&self) -> &str {
        self.as_str()
    }
}

impl BreakerKey for ReaderKind {
    const KIND: BreakerKind = BreakerKind::Reader;

    fn name(&self) -> &str {
        self.as_str()
    }
}

impl BreakerKey for EngineName {
    const KIND: BreakerKind = BreakerKind::Engine;

    fn name(&self) -> &str {
        self.as_str()
    }
}
