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
//! half-open, at once. Exactly one probe per engine per open period: the breaker admits one probe,
//! its result closes the breaker or opens a longer period; an inconclusive probe (SearXNG itself
//! failed, not the engine) waits the first open period before the next. With the shared tier
//! (`REDIS_URL`), the replicas race for each ended period's probe first
//! ([`super::shared_breakers::adopt`]: one replica wins it, the others stay open meanwhile) and the
//! result is published for all.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use tokio::time::Instant;

use super::breaker_signals;
use super::pool::Instance;
use super::recent_queries::RecentQueries;
use super::{shared_breakers, Inner};
use crate::breaker::{Breaker, BreakerBoard, BreakerState, Signal};
use crate::metrics::{label_value_as_str, InstanceLabel, Registry};
use crate::searxng::{EngineName, EngineReason, SearxngAnswer};
use crate::upstream::{ErrorClass, UpstreamError};

/// What a probe asks before any client has searched: harmless, and every web engine answers it.
pub(crate) const FALLBACK_QUERY: &str = "weather";
/// The prober looks at its board at least this often, for open periods it was not woken for.
const LOOK_EVERY: Duration = Duration::from_secs(1);
/// ... but never more often than this (a zero first open period).
const LOOK_AT_MOST_EVERY: Duration = Duration::from_millis(10);
/// The shared tier's miss read brings the breaker boards; a probe reads them with this key, whose
/// answer nobody stores (one `GET` of nothing beside the boards).
const BOARDS_ONLY: &str = "engine-probe";

/// What one probe found: the `outcome` label of `engine_probes_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ProbeOutcome {
    /// The engine answered without failing: its breaker closed.
    Recovered,
    /// SearXNG reported the engine failing again: its breaker opened for longer.
    Blocked,
    /// The engine (or the probe as a whole) took longer than the probe's timeout: a failed probe.
    Timeout,
    /// SearXNG itself failed (5xx, refused, garbled): nothing learned about the engine; probed
    /// again after the first open period.
    Inconclusive,
}

impl ProbeOutcome {
    /// The label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Recovered => "recovered",
            Self::Blocked => "blocked",
            Self::Timeout => "timeout",
            Self::Inconclusive => "inconclusive",
        }
    }
}

label_value_as_str!(ProbeOutcome);

/// `{engine, outcome[, searxng_instance]}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct ProbeLabels {
    engine: String,
    outcome: ProbeOutcome,
    #[prometheus(flatten)]
    instance: InstanceLabel,
}

/// `engine_probes_total`. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub(crate) struct ProbeMetrics {
    probes: Family<ProbeLabels, Counter>,
}

impl ProbeMetrics {
    /// The family, registered on `r`.
    pub(crate) fn new(r: &mut Registry) -> Self {
        let m = Self::default();
        r.register(
            "engine_probes",
            "Out-of-band probes of blocked SearXNG engines, by engine and outcome",
            m.probes.clone(),
        );
        m
    }

    fn count(&self, engine: &str, outcome: ProbeOutcome, instance: &InstanceLabel) {
        self.probes
            .get_or_create(&ProbeLabels {
                engine: engine.to_owned(),
                outcome,
                instance: instance.clone(),
            })
            .inc();
    }
}

/// What a prober probes, and how it talks to the other replicas.
pub(crate) trait ProbeTarget: Sync {
    /// The engine breakers it probes.
    fn board(&self) -> &BreakerBoard<EngineName>;
    /// Whether the instance may be probed now (not cooling down).
    fn reachable(&self) -> bool;
    /// Before probing ended periods: take what the other replicas say (another may probe instead).
    fn coordinate(&self) -> impl Future<Output = ()> + Send;
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

    /// The half-open engines due for their probe now, and when the next open period ends.
    fn schedule(&mut self, now: Instant) -> (Vec<Arc<Breaker>>, Option<Instant>) {
        let mut due = Vec::new();
        let mut next: Option<Instant> = None;
        let mut soonest = |at: Instant| next = Some(next.map_or(at, |n| n.min(at)));
        for breaker in self.target.board().all() {
            let snapshot = breaker.snapshot();
            match snapshot.state {
                BreakerState::Closed => {
                    self.later.remove(breaker.name());
                }
                BreakerState::Open => soonest(now + snapshot.open_for.unwrap_or_default()),
                BreakerState::HalfOpen => match self.later.get(breaker.name()) {
                    Some(at) if *at > now => soonest(*at),
                    _ => due.push(breaker),
                },
            }
        }
        (due, next)
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
        permit: crate::breaker::Permit,
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
        Err(err) if err.class == ErrorClass::Timeout => (Signal::Transient, ProbeOutcome::Timeout),
        // SearXNG's own trouble says nothing about the engine (its cooldown hears of it from
        // clients' searches).
        Err(_) => (Signal::Neutral, ProbeOutcome::Inconclusive),
    }
}

/// A pipeline instance as a probe target.
pub(super) struct InstanceTarget<'a> {
    pub(super) inner: &'a Inner,
    pub(super) instance: &'a Instance,
}

impl ProbeTarget for InstanceTarget<'_> {
    fn board(&self) -> &BreakerBoard<EngineName> {
        &self.instance.engines
    }

    fn reachable(&self) -> bool {
        self.instance.cooldown.state() == BreakerState::Closed
    }

    async fn woken(&self) {
        self.instance.probe_wake.notified().await;
    }

    async fn coordinate(&self) {
        let Some(tier) = self.inner.shared.as_ref() else {
            return;
        };
        let boards = shared_breakers::board_ids(self.inner);
        if let Some(read) = tier.read_miss(BOARDS_ONLY, &boards, false).await {
            shared_breakers::adopt(self.inner, tier, &read.boards).await;
        }
    }

    async fn search(
        &self,
        engine: &EngineName,
        query: &str,
        deadline: Instant,
    ) -> Result<SearxngAnswer, UpstreamError> {
        let _busy = self.instance.begin();
        self.instance
            .client
            .probe(engine.as_str(), query, deadline)
            .await
    }

    async fn publish(&self) {
        if let Some(tier) = self.inner.shared.as_ref() {
            shared_breakers::publish(self.inner, tier).await;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
