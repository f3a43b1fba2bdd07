//! Out-of-band probes of blocked SearXNG engines (#29). When an engine breaker's open period ends,
//! the gateway itself sends that instance one small search with `engines=<that engine>` — the most
//! frequent recent client query ([`RecentQueries`]), or [`FALLBACK_QUERY`] before any — under its
//! own short timeout (`ENGINE_PROBE_TIMEOUT_MS`), and that answer alone decides the breaker. A
//! client's search never carries the probe: the engine plan takes an engine only while its breaker
//! is closed, so a still-blocked engine (a CAPTCHA wall that answers in 1.5 s) costs the gateway
//! one call, never a client's wait, and a recovered engine is back in the next search after the
//! probe.
//!
//! One [`Prober`] per instance, run by the background work: it sleeps until the earliest open
//! period of the instance's engines ends (woken when an answer reports engines failing, and looking
//! at least every [`LOOK_EVERY`] — or half the first open period, if shorter — for periods set from
//! elsewhere: another replica, an operator, `/stats/errors`), then probes every engine that is
//! half-open, at once.
//!
//! **When** to probe prices both mistakes ([`probe_delay`]). A probe into a still-blocked engine
//! costs one call, weighed as `w` searches' worth of results (`ENGINE_PROBE_WEIGHT`, 0.25 by
//! default, chosen on the scripted days: docs/src/benchmarks/decisions.md, #45); a recovered engine
//! left out costs `L` per second — the client searches per second reaching the instance × the
//! share of their results that engine usually brings ([`crate::searxng_pool::engine_value`]). Over
//! an open period `P` (the breaker's doubling backoff: the longer the block keeps repeating, the
//! longer it is expected to last), probing every `T` costs `w × P / T` and finds a recovery `T / 2`
//! late on average, `L × T / 2`: the sum is least at `T = √(2 P w / L)`. So the probe comes sooner
//! than `P` when traffic is heavy and the engine matters (`L × P > 2w`), later when it does not —
//! at most `BREAKER_MAX_OPEN_SECONDS` after the period began, at least a quarter of `BREAKER_OPEN_SECONDS` — and never before a server's own
//! reset hint. A deferred probe is weighed again as traffic changes; before any client search the
//! backoff alone decides.
//!
//! Exactly one probe per engine per open period: the breaker admits one probe,
//! its result closes the breaker or opens a longer period; an inconclusive probe (SearXNG itself
//! failed, not the engine) waits the first open period before the next. With the shared tier
//! (`REDIS_URL`), the replicas race for each ended period's probe first
//! ([`crate::fleet::breakers::adopt`]: one replica wins it, the others stay open meanwhile) and the
//! result is published for all.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::breaker_signals;
use crate::searxng_pool::recent_queries::RecentQueries;
use gateway_core::breaker::{Breaker, BreakerBoard, BreakerState, Signal, TransientCause};
use gateway_core::metrics::InstanceLabel;
use gateway_core::upstream::{ErrorClass, UpstreamError};
use gateway_upstreams::searxng::{EngineName, EngineReason, SearxngAnswer};

mod metrics;
mod timing;

pub(crate) use metrics::{ProbeMetrics, ProbeOutcome};
use timing::probe_delay;

/// What a probe asks before any client has searched: harmless, and every web engine answers it.
pub(crate) const FALLBACK_QUERY: &str = "weather";
/// The prober looks at its board at least this often, for open periods it was not woken for.
const LOOK_EVERY: Duration = Duration::from_secs(1);
/// ... but never more often than this (a zero first open period).
const LOOK_AT_MOST_EVERY: Duration = Duration::from_millis(10);

/// What a prober probes, and how it talks to the other replicas.
pub(crate) trait ProbeTarget: Sync {
    /// The engine breakers it probes.
    fn board(&self) -> &BreakerBoard<EngineName>;
    /// Whether the instance may be probed now (not cooling down).
    fn reachable(&self) -> bool;
    /// Before probing ended periods: take what the other replicas say (another may probe instead).
    fn coordinate(&self) -> impl Future<Output = ()> + Send;
    /// What leaving `engine` out costs per second now (`None`: nothing known yet).
    fn loss_per_second(&self, engine: &str) -> Option<f64>;
    /// Resolves when something may have tripped a breaker (the prober then looks again).
    fn woken(&self) -> impl Future<Output = ()> + Send;
    /// One probe search of `engine` for `query`.
    fn search(
        &self,
        engine: &EngineName,
        query: &str,
        deadline: Instant,
    ) -> impl Future<Output = Result<SearxngAnswer, UpstreamError>> + Send;
    /// After probing: tell the other replicas what the probes found.
    fn publish(&self) -> impl Future<Output = ()> + Send;
}

/// The probes of one instance's engines.
pub(crate) struct Prober<'a, T> {
    target: T,
    /// `ENGINE_PROBE_TIMEOUT_MS`.
    timeout: Duration,
    /// After an inconclusive probe, the engine waits this long (`BREAKER_OPEN_SECONDS`).
    retry: Duration,
    /// How often it looks at its board unwoken.
    look_every: Duration,
    /// The earliest probe after a period began (a quarter of `BREAKER_OPEN_SECONDS`).
    floor: Duration,
    /// The latest (`BREAKER_MAX_OPEN_SECONDS`).
    max: Duration,
    /// What a probe into a still-blocked engine weighs (`ENGINE_PROBE_WEIGHT`).
    weight: f64,
    /// The probe time chosen for each open period seen.
    plans: HashMap<String, Plan>,
    queries: &'a RecentQueries,
    metrics: ProbeMetrics,
    instance: InstanceLabel,
    /// Engines not to probe again before the instant (after an inconclusive probe).
    later: HashMap<String, Instant>,
}

/// How to probe, from the configuration.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ProbeSettings {
    /// `ENGINE_PROBE_TIMEOUT_MS`: one probe's bound.
    pub(crate) timeout: Duration,
    /// `BREAKER_OPEN_SECONDS`: the wait after an inconclusive probe.
    pub(crate) retry: Duration,
    /// `BREAKER_MAX_OPEN_SECONDS`: the latest probe after a period began.
    pub(crate) max: Duration,
    /// `ENGINE_PROBE_WEIGHT`: one probe into a still-blocked engine, in client searches' worth of
    /// its results.
    pub(crate) weight: f64,
}

/// One open period as the prober planned it.
#[derive(Debug, Clone, Copy)]
struct Plan {
    /// When the prober first saw it, and how long it was then (the backoff `P`).
    seen: Instant,
    period: Duration,
    /// Its end as the breaker has it (after shortening).
    until: Instant,
}

impl<'a, T: ProbeTarget> Prober<'a, T> {
    /// A prober of `target`, asking the most popular of `queries`, counting in `metrics` under
    /// `instance`.
    pub(crate) fn new(
        target: T,
        settings: ProbeSettings,
        queries: &'a RecentQueries,
        metrics: ProbeMetrics,
        instance: InstanceLabel,
    ) -> Self {
        Self {
            target,
            timeout: settings.timeout,
            retry: settings.retry,
            look_every: (settings.retry / 2).clamp(LOOK_AT_MOST_EVERY, LOOK_EVERY),
            floor: settings.retry / 4,
            max: settings.max,
            weight: settings.weight,
            plans: HashMap::new(),
            queries,
            metrics,
            instance,
            later: HashMap::new(),
        }
    }

    /// Probes for ever (the background work's owner stops it).
    pub(crate) async fn run(mut self) {
        loop {
            let now = Instant::now();
            let (due, next) = self.schedule(now);
            if due.is_empty() || !self.target.reachable() {
                let look = now + self.look_every;
                let wake = next.map_or(look, |at| at.min(look));
                tokio::select! {
                    () = tokio::time::sleep_until(wake.max(now + LOOK_AT_MOST_EVERY)) => {}
                    () = self.target.woken() => {}
                }
                continue;
            }
            self.probe_due(due).await;
        }
    }

    /// The half-open engines due for their probe now, and when the next one may be. A period seen
    /// for the first time gets its probe time, and is shortened to it when that comes sooner.
    fn schedule(&mut self, now: Instant) -> (Vec<Arc<Breaker>>, Option<Instant>) {
        let mut due = Vec::new();
        let mut next: Option<Instant> = None;
        let mut soonest = |at: Instant| next = Some(next.map_or(at, |n| n.min(at)));
        for breaker in self.target.board().all() {
            let name = breaker.name();
            let snapshot = breaker.snapshot();
            match snapshot.state {
                BreakerState::Closed => {
                    self.later.remove(name);
                    self.plans.remove(name);
                }
                BreakerState::Open => {
                    let until = now + snapshot.open_for.unwrap_or_default();
                    let until = match self.plans.get(name) {
                        Some(plan) if plan.until == until => until,
                        _ => self.plan(&breaker, now, until),
                    };
                    soonest(until);
                }
                BreakerState::HalfOpen => {
                    let probe_at = self.plans.get(name).map(|plan| {
                        let loss = self.loss_per_second(name);
                        plan.seen + probe_delay(plan.period, loss, self.floor, self.max)
                    });
                    match (self.later.get(name), probe_at) {
                        (Some(at), _) if *at > now => soonest(*at),
                        // Not worth a probe yet (little traffic): weighed again at each look.
                        (_, Some(at)) if at > now => soonest(at),
                        _ => due.push(breaker),
                    }
                }
            }
        }
        (due, next)
    }

    /// Plans the open period of `breaker` ending at `until`, seen now: shortened to its probe
    /// time when that comes sooner. Returns the period's end.
    fn plan(&mut self, breaker: &Breaker, now: Instant, until: Instant) -> Instant {
        let period = until.saturating_duration_since(now);
        let loss = self.loss_per_second(breaker.name());
        let probe_at = now + probe_delay(period, loss, self.floor, self.max);
        let until = if probe_at < until && breaker.shorten(probe_at) {
            now + breaker.snapshot().open_for.unwrap_or_default()
        } else {
            until
        };
        self.plans.insert(
            breaker.name().to_owned(),
            Plan {
                seen: now,
                period,
                until,
            },
        );
        until
    }

    /// What leaving `engine` out costs per second, in probes' worth: the target's loss over the
    /// weight of one probe (`None`: nothing known yet).
    fn loss_per_second(&self, engine: &str) -> Option<f64> {
        self.target
            .loss_per_second(engine)
            .map(|loss| loss / self.weight)
    }

    /// Probes every breaker of `due` still half-open once the replicas have coordinated, at once.
    async fn probe_due(&mut self, due: Vec<Arc<Breaker>>) {
        self.target.coordinate().await;
        let query = self
            .queries
            .popular()
            .unwrap_or_else(|| FALLBACK_QUERY.to_owned());
        let probes: Vec<_> = due
            .iter()
            .filter_map(|breaker| {
                let engine = EngineName::checked(breaker.name())?;
                // Another replica won this period's probe: it stays open here meanwhile.
                let permit = breaker.admit().filter(|p| p.is_probe())?;
                Some(self.probe(engine, permit, &query))
            })
            .collect();
        if probes.is_empty() {
            return;
        }
        let outcomes = futures::future::join_all(probes).await;
        let now = Instant::now();
        for (engine, outcome) in outcomes {
            self.metrics.count(engine.as_str(), outcome, &self.instance);
            self.plans.remove(engine.as_str());
            if outcome == ProbeOutcome::Inconclusive {
                self.later
                    .insert(engine.as_str().to_owned(), now + self.retry);
            } else {
                self.later.remove(engine.as_str());
            }
            tracing::info!(
                engine = engine.as_str(),
                instance = self.instance.name().unwrap_or(""),
                outcome = outcome.as_str(),
                "engine probed out of band"
            );
        }
        self.target.publish().await;
    }

    /// One probe of `engine`, bounded by the probe's timeout whatever the target does; the
    /// outcome is recorded on the breaker through `permit`.
    async fn probe(
        &self,
        engine: EngineName,
        permit: gateway_core::breaker::Permit,
        query: &str,
    ) -> (EngineName, ProbeOutcome) {
        let deadline = Instant::now() + self.timeout;
        let result =
            tokio::time::timeout_at(deadline, self.target.search(&engine, query, deadline))
                .await
                .unwrap_or_else(|_| Err(UpstreamError::new(ErrorClass::Timeout)));
        let (signal, outcome) = judge(engine.as_str(), &result);
        permit.record(signal);
        (engine, outcome)
    }
}

/// What a probe's result means for the probed engine's breaker.
fn judge(engine: &str, result: &Result<SearxngAnswer, UpstreamError>) -> (Signal, ProbeOutcome) {
    match result {
        Ok(answer) => match answer.unresponsive.iter().find(|u| u.engine == engine) {
            None => (Signal::Success, ProbeOutcome::Recovered),
            Some(failed) => {
                let outcome = if failed.reason == EngineReason::Timeout {
                    ProbeOutcome::Timeout
                } else {
                    ProbeOutcome::Blocked
                };
                (breaker_signals::for_engine(failed.reason), outcome)
            }
        },
        // Too slow for a probe is a failed probe: a slow-blocked engine stays out.
        Err(err) if err.class == ErrorClass::Timeout => (
            Signal::Transient(TransientCause::Timeout),
            ProbeOutcome::Timeout,
        ),
        // SearXNG's own trouble says nothing about the engine (its cooldown hears of it from
        // clients' searches).
        Err(_) => (Signal::Neutral, ProbeOutcome::Inconclusive),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
