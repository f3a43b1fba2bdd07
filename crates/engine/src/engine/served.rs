//! [`Engine::search`]: a search answered from the cache or by one fan-out shared by identical
//! requests (across replicas too, [`crate::fleet::answer`]), counted exactly once, and what the
//! client is handed ([`Served`]) or told ([`SearchError`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::time::Instant;
use tracing::field::Empty;

use super::metrics::{OutcomeLabels, SurfaceLabels};
use super::Engine;
use crate::fleet;
use crate::search::{Answer, Outcome, Overloaded, Premium};
use gateway_core::cache::{CacheStatus, ComputationLost};
use gateway_core::request::{AnswerScope, SearchRequest, Surface};
use gateway_core::trace::TARGET;

/// Why a search has no answer to render.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    /// Every fan-out slot stayed taken for the whole wait: a 503 with `Retry-After`.
    #[error(transparent)]
    Overloaded(#[from] Overloaded),
    /// The shared computation was lost (a bug): a 500, never a hang.
    #[error(transparent)]
    Lost(#[from] ComputationLost),
}

/// What a search produced for one client.
#[derive(Debug, Clone)]
pub struct Served {
    /// The answer (possibly shared with other requests, possibly from the cache).
    pub answer: Arc<Answer>,
    /// Hit, miss, or stale (every upstream failed; the last complete answer, and how long ago it
    /// expired — what `explain` will show).
    pub cache: CacheStatus,
    /// This request's outcome label (`cache_hit` on a hit).
    pub outcome: Outcome,
    /// A miss answered by another request's fan-out in flight (coalesced).
    pub coalesced: bool,
    /// Premium calls to charge to this request's client: those of the fan-out it led (a
    /// coalesced request or a hit made none).
    pub premium_calls: u32,
    /// What those calls cost, in US dollars.
    pub premium_spend_usd: f64,
}

impl Engine {
    /// Answers one search that came through `surface`: from the cache, or by one fan-out shared
    /// by identical requests — if the fan-out gets a slot in time ([`admission`]). Every surface
    /// asks here, so each answered search counts exactly one outcome and one surface.
    pub async fn search(
        &self,
        req: SearchRequest,
        surface: Surface,
        premium: Premium,
    ) -> Result<Served, SearchError> {
        let started = Instant::now();
        let lookup = tracing::info_span!(target: TARGET, "cache_lookup", hit = Empty);
        // A client whose premium budget is spent gets a SearXNG-only fan-out of its own, cached
        // under its own key: it never shares (and so never worsens) a fan-out or a cached answer
        // other clients get with premium results, and never spends premium calls it has no
        // budget for by joining one.
        let key = req.cache_key(match premium {
            Premium::Allowed => AnswerScope::WithPremium,
            Premium::BudgetSpent => AnswerScope::SearxngOnly,
        });
        let led = Arc::new(AtomicBool::new(false));
        let leader = Arc::clone(&led);
        let fleet = Arc::clone(&self.inner.fleet);
        let fanout = self.inner.fanout.clone();
        let shared_key = key.clone();
        let (shared, cache) = self
            .inner
            .cache
            .get_or_compute(&key, &lookup, move || {
                leader.store(true, Ordering::Relaxed);
                fleet::answer::compute(fleet, fanout, req, shared_key)
            })
            .await?;
        let led = led.load(Ordering::Relaxed);
        let answer = match shared {
            Ok(answer) => answer,
            Err(overloaded) => {
                self.inner.metrics.requests.shed.inc();
                if let Some(traffic) = &self.inner.traffic {
                    traffic.shed();
                }
                return Err(overloaded.into());
            }
        };
        Ok(self.served(started, answer, cache, surface, led))
    }

    /// Counts an answered search and hands it out.
    fn served(
        &self,
        started: Instant,
        answer: Arc<Answer>,
        cache: CacheStatus,
        surface: Surface,
        led: bool,
    ) -> Served {
        let m = &self.inner.metrics.requests;
        let outcome = match cache {
            // A stale answer comes from the cache too: one outcome per request, `cache_hit`, and
            // its own counter says why.
            CacheStatus::Hit | CacheStatus::SharedHit => Outcome::CacheHit,
            CacheStatus::Stale { expired_for } => {
                m.cache_stale_served.inc();
                tracing::warn!(
                    expired_for_s = expired_for.as_secs(),
                    "every upstream failed: serving the last complete answer, stale"
                );
                Outcome::CacheHit
            }
            CacheStatus::Miss => answer.outcome,
        };
        let labels = OutcomeLabels { outcome };
        m.requests.get_or_create(&labels).inc();
        m.surface_requests
            .get_or_create(&SurfaceLabels { surface })
            .inc();
        let elapsed = started.elapsed();
        m.duration
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
        if let Some(traffic) = &self.inner.traffic {
            traffic.answered(outcome, elapsed);
        }
        m.results_count.observe(answer.result_count as f64);
        m.engines_count.observe(answer.engine_count as f64);
        // Only a request that ran the fan-out for its own answer pays for it (a hit that started a
        // refresh ahead of expiry ran one too, but in the background, for everyone).
        let (premium_calls, premium_spend_usd) = if led && cache == CacheStatus::Miss {
            (answer.record.premium_calls, answer.record.premium_spend_usd)
        } else {
            (0, 0.0)
        };
        Served {
            answer,
            cache,
            outcome,
            coalesced: cache == CacheStatus::Miss && !led,
            premium_calls,
            premium_spend_usd,
        }
    }
}
