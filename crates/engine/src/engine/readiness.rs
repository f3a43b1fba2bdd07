//! [`Engine::readiness`]: whether the gateway can answer (`/readyz`), and when not, why
//! ([`NotReady`]).

use std::time::Duration;

use super::Engine;
use crate::search::failing_engines::{self};
use gateway_core::breaker::BreakerState;

/// SearXNG counts as "answered recently" for `/readyz` within this window.
const READY_WINDOW: Duration = Duration::from_secs(120);

/// Why the gateway is not ready (`/readyz`'s 503 body): a fixed message, and SearXNG's failing
/// engines by reason with the hint they give, when that is why.
#[derive(Debug, serde::Serialize)]
pub struct NotReady {
    error: &'static str,
    message: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    hint: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    searxng: Vec<failing_engines::InstanceEngines>,
}

impl NotReady {
    fn new(message: &'static str, searxng: Vec<failing_engines::InstanceEngines>) -> Self {
        Self {
            error: "not_ready",
            message,
            hint: failing_engines::Hint::of_engines(&searxng).map(failing_engines::Hint::sentence),
            searxng,
        }
    }
}

impl Engine {
    /// Ready when a premium provider is usable, or when SearXNG answered recently and one of its
    /// instances has an engine a search can use (#45: an instance whose every engine is failing
    /// answers only failures, however fast its `/config` comes back). Not ready says why: the
    /// failing engines by SearXNG's reason, and the hint they give.
    pub fn readiness(&self) -> Result<(), NotReady> {
        let premium = &self.inner.fanout.premium;
        let premium_usable = premium.providers.iter().any(|p| {
            premium.breakers.get(&p.kind()).state() != BreakerState::Open
                && p.keys()
                    .any(|k| premium.key_breakers.get(k).state() != BreakerState::Open)
        });
        if premium_usable {
            return Ok(());
        }
        let searxng = &self.inner.fanout.searxng;
        if !searxng.answered_within(READY_WINDOW) {
            return Err(NotReady::new(
                "SearXNG has not answered recently and no premium provider is usable",
                Vec::new(),
            ));
        }
        if searxng
            .pool
            .instances()
            .iter()
            .any(|i| i.has_usable_engine())
        {
            return Ok(());
        }
        Err(NotReady::new(
            "no SearXNG instance has a usable engine (each is cooling down, or every engine it searches is failing) and no premium provider is usable",
            failing_engines::of_pool(&searxng.pool),
        ))
    }
}
