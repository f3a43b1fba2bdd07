//! The SearXNG instances of `SEARXNG_BACKEND_URL`, as a pool: each [`Instance`] has its own client,
//! catalog, cooldown, engine breakers, latency and in-flight count, and [`SearxngPool::choose`]
//! picks the instance for each attempt by the rule in [`choice`]. One configured URL is a pool of
//! one, with no `searxng_instance` label anywhere, behaving as the gateway always has.
//!
//! Hand-written rather than a tower balancer: the choice depends on this request's engines and on
//! breaker permits that must be held across a call's attempts, which tower's `p2c` (load only,
//! per service) does not model, and the rule itself is a few lines.

use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

use std::time::Duration;

use super::choice;
use super::cooldown::{searxng_cooldown, CooldownSettings};
use super::instance::{Attempted, CooldownPermit, Instance};
use crate::settings::SearxngBackend;
use gateway_core::breaker::{BreakerBoard, BreakerMetrics, BreakerPolicy, BreakerState, Permit};
use gateway_core::metrics::InstanceLabel;
use gateway_core::request::SearchRequest;
use gateway_core::upstream::UpstreamHttp;
use gateway_upstreams::searxng::{SearxngClient, SearxngMetrics};

/// Where an attempt goes.
#[derive(Debug)]
pub(crate) struct Chosen {
    /// The instance's index in the pool.
    pub(crate) index: usize,
    /// Its cooldown permit; `None` when the call already holds it (a retry on the same instance).
    pub(crate) permit: Option<Permit>,
}

/// What the pool is built from.
#[derive(Debug, Clone)]
pub(crate) struct PoolSettings {
    /// `SEARXNG_BACKEND_URL`, in order.
    pub(crate) backends: Vec<SearxngBackend>,
    /// `SEARXNG_TIMEOUT_SECONDS`: one attempt's timeout.
    pub(crate) attempt_timeout: Duration,
    /// Each instance's cooldown.
    pub(crate) cooldown: CooldownSettings,
}

/// Every configured instance, in the configured order.
pub(crate) struct SearxngPool {
    instances: Vec<Instance>,
}

impl SearxngPool {
    /// The instances of `settings`, each with its own cooldown and engine board (`engine_policy`).
    pub(crate) fn new(
        settings: &PoolSettings,
        http: &UpstreamHttp,
        searxng_metrics: &SearxngMetrics,
        breaker_metrics: &BreakerMetrics,
        cooldown_active: &Family<InstanceLabel, Gauge>,
        engine_policy: BreakerPolicy,
    ) -> Self {
        let pooled = settings.backends.len() > 1;
        let instances = settings
            .backends
            .iter()
            .map(|backend| {
                let label = if pooled {
                    InstanceLabel::pooled(&backend.name)
                } else {
                    InstanceLabel::single()
                };
                let client = SearxngClient::new(
                    http.clone(),
                    backend.url.clone(),
                    settings.attempt_timeout,
                    searxng_metrics.clone(),
                    label.clone(),
                );
                let _ = cooldown_active.get_or_create(&label);
                Instance::new(
                    backend.name.clone(),
                    backend.url.clone(),
                    client,
                    searxng_cooldown(&settings.cooldown, breaker_metrics, label.clone()),
                    BreakerBoard::of_instance(engine_policy, breaker_metrics.clone(), label),
                )
            })
            .collect();
        Self { instances }
    }

    /// Every instance, in the configured order.
    pub(crate) fn instances(&self) -> &[Instance] {
        &self.instances
    }

    /// The instance at `index` (from [`Chosen::index`]).
    pub(crate) fn get(&self, index: usize) -> &Instance {
        &self.instances[index]
    }

    /// The instance for the next attempt of a call for `req`, with its cooldown permit. `tried`:
    /// instances this call already sent an attempt; `holding`: the instance whose permit the call
    /// holds. `None` when every instance is cooling down (or its one probe is out): the request
    /// skips SearXNG.
    pub(crate) fn choose(
        &self,
        req: &SearchRequest,
        tried: &[usize],
        holding: Option<usize>,
    ) -> Option<Chosen> {
        if let [only] = self.instances.as_slice() {
            // One instance: nothing to choose, exactly the cooldown check the gateway always made.
            return match holding {
                Some(index) => Some(Chosen {
                    index,
                    permit: None,
                }),
                None => only.cooldown.admit().map(|permit| Chosen {
                    index: 0,
                    permit: Some(permit),
                }),
            };
        }
        let now = tokio::time::Instant::now();
        let mut candidates: Vec<choice::Candidate> = self
            .instances
            .iter()
            .enumerate()
            .map(|(i, instance)| {
                let attempted = if tried.contains(&i) {
                    Attempted::Already
                } else {
                    Attempted::Not
                };
                let permit = if holding == Some(i) {
                    CooldownPermit::Held
                } else {
                    CooldownPermit::Needed
                };
                instance.candidate(req, attempted, permit)
            })
            .collect();
        let mut refused = vec![false; self.instances.len()];
        let mut random = |n: usize| rand::random_range(0..n.max(1));
        while let Some(index) = choice::choose(&candidates, now, &mut random) {
            if holding == Some(index) {
                return Some(Chosen {
                    index,
                    permit: None,
                });
            }
            match self.instances[index].cooldown.admit() {
                Some(permit) => {
                    return Some(Chosen {
                        index,
                        permit: Some(permit),
                    })
                }
                // Half-open with its probe already out: not available after all.
                None => {
                    refused[index] = true;
                    candidates[index].available = false;
                }
            }
        }
        // Every instance looked open: ask each once more (an open period may end right now), so a
        // request that skips SearXNG is counted as a rejection, as with one instance.
        self.instances
            .iter()
            .enumerate()
            .filter(|(i, _)| !refused[*i] && holding != Some(*i))
            .find_map(|(index, instance)| {
                instance.cooldown.admit().map(|permit| Chosen {
                    index,
                    permit: Some(permit),
                })
            })
    }

    /// Sets every time-derived gauge: cooldown and engine breaker states, `searxng_cooldown_active`.
    pub(crate) fn refresh_metrics(&self, cooldown_active: &Family<InstanceLabel, Gauge>) {
        for instance in &self.instances {
            instance.engines.refresh_metrics();
            instance.cooldown.refresh_metrics();
            let cooling = instance.cooldown.state() == BreakerState::Open;
            cooldown_active
                .get_or_create(&instance.client.instance().clone())
                .set(i64::from(cooling));
        }
    }

    /// The fewest engines any instance's catalog holds: 0 until every instance's `/config` has
    /// answered.
    pub(crate) fn engines_known(&self) -> usize {
        self.instances
            .iter()
            .map(|i| i.catalog.get().map_or(0, |c| c.len()))
            .min()
            .unwrap_or(0)
    }
}

/// The pool is owned by the fan-out's `SearxngSide`, shared as `Arc<SearxngSide>`.
impl std::fmt::Debug for SearxngPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.instances.iter().map(|i| i.name.as_str()).collect();
        f.debug_struct("SearxngPool")
            .field("instances", &names)
            .finish()
    }
}
