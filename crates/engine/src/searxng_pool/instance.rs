//! One SearXNG instance of the pool and everything the gateway knows about it alone: its client,
//! its engine catalog (`/config`), its cooldown, its engine breakers, its recent latency and the
//! calls it is answering now — so one instance's blocked engine or outage never touches another —
//! and what SearXNG last said of each engine that failed (its reason, from the closed set of
//! `unresponsive_engines` messages), for the failure body and `/readyz` (#45).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;
use url::Url;

use super::choice::Candidate;
use super::engine_plan::CatalogHandle;
use super::engine_value::EngineValue;
use gateway_core::breaker::{Breaker, BreakerBoard, BreakerState};
use gateway_core::request::SearchRequest;
use gateway_upstreams::searxng::SearxngClient;
use gateway_upstreams::searxng::{EngineName, EngineReason, SearxngAnswer};

/// Whether the call choosing an instance has already tried this one (a retry goes elsewhere
/// while there is another).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attempted {
    /// Not by this call.
    Not,
    /// By this call, before.
    Already,
}

/// Whether the call choosing an instance holds this one's cooldown permit already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CooldownPermit {
    /// It would need one (the cooldown must admit it).
    Needed,
    /// It holds it (a retry on the same instance needs no new one).
    Held,
}

/// Weight of the newest sample in the latency estimate (an exponentially weighted mean).
const LATENCY_WEIGHT: f64 = 0.25;
/// Without new samples the estimate decays towards zero with this time constant, so an instance
/// that had one slow spell (a cold start, a slow engine) competes again after a few seconds instead
/// of waiting for the trickle to bring its mean down sample by sample.
const LATENCY_DECAY: Duration = Duration::from_secs(5);
/// A failed attempt counts as at least this slow: an instance refusing connections answers fast,
/// and must not look like the best choice until its cooldown starts.
const FAILURE_LATENCY: Duration = Duration::from_secs(1);
/// At most this many engines' last failures are kept (an instance has a few dozen engines; a
/// garbled answer cannot grow the map past it).
const MAX_FAILING_ENGINES: usize = 256;

/// One instance.
pub(crate) struct Instance {
    /// Its name in `/status` and the `searxng_instance` label (see `config::backends`).
    pub(crate) name: String,
    /// Its base URL.
    pub(crate) url: Url,
    pub(crate) client: SearxngClient,
    /// What its `/config` reported.
    pub(crate) catalog: CatalogHandle,
    /// Skips it after repeated failures, then lets one request probe it.
    pub(crate) cooldown: Arc<Breaker>,
    /// Its engines' breakers.
    pub(crate) engines: BreakerBoard<EngineName>,
    /// Wakes its engine prober early: an answer reported engines failing (one may have tripped).
    pub(crate) probe_wake: tokio::sync::Notify,
    /// What its engines are worth to clients now (the probes' timing).
    pub(crate) value: EngineValue,
    /// Engine → SearXNG's reason, for each engine whose last word (in a client's search or a
    /// probe) was a failure; an engine leaves when it answers again.
    failing: Mutex<BTreeMap<EngineName, EngineReason>>,
    /// It answered a client's search (its engines' part in searches is known).
    answered: AtomicBool,
    load: Mutex<Load>,
    in_flight: Arc<AtomicUsize>,
}

/// The recent latency and when the last attempt went out.
#[derive(Debug, Default)]
struct Load {
    /// Every attempt's duration, a failure's at least [`FAILURE_LATENCY`]: how the pool balances.
    latency: LatencyEstimate,
    /// Answers' durations only: whether a search hedges (`slow_threshold::hedges`). A failing
    /// instance is the cooldown's business, and a failure's made-up duration would start hedging.
    answers: LatencyEstimate,
    last_sent: Option<Instant>,
}

/// An exponentially weighted mean of attempt durations that decays towards zero while no sample
/// arrives (as a peak-EWMA balancer's does).
#[derive(Debug, Default, Clone, Copy)]
struct LatencyEstimate {
    /// The mean when the last sample arrived, and when.
    mean: Option<(Duration, Instant)>,
}

impl LatencyEstimate {
    fn record(&mut self, sample: Duration, now: Instant) {
        let mean = match self.at(now) {
            None => sample,
            Some(mean) => mean.mul_f64(1.0 - LATENCY_WEIGHT) + sample.mul_f64(LATENCY_WEIGHT),
        };
        self.mean = Some((mean, now));
    }

    fn at(&self, now: Instant) -> Option<Duration> {
        let (mean, since) = self.mean?;
        let idle = now.saturating_duration_since(since).as_secs_f64();
        Some(mean.mul_f64((-idle / LATENCY_DECAY.as_secs_f64()).exp()))
    }
}

/// An attempt in flight on an instance; dropping it (answered, or cancelled) ends it.
pub(crate) struct Busy(Arc<AtomicUsize>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Instance {
    pub(crate) fn new(
        name: String,
        url: Url,
        client: SearxngClient,
        cooldown: Breaker,
        engines: BreakerBoard<EngineName>,
    ) -> Self {
        Self {
            name,
            url,
            client,
            catalog: CatalogHandle::default(),
            cooldown: Arc::new(cooldown),
            engines,
            probe_wake: tokio::sync::Notify::new(),
            value: EngineValue::default(),
            failing: Mutex::default(),
            answered: AtomicBool::new(false),
            load: Mutex::new(Load::default()),
            in_flight: Arc::default(),
        }
    }

    /// An attempt starts now: counted in flight until the returned guard drops.
    pub(crate) fn begin(&self) -> Busy {
        self.lock().last_sent = Some(Instant::now());
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        Busy(Arc::clone(&self.in_flight))
    }

    /// An attempt took `took`; a failed one counts as at least [`FAILURE_LATENCY`].
    pub(crate) fn record_latency(&self, took: Duration, succeeded: bool) {
        let sample = if succeeded {
            took
        } else {
            took.max(FAILURE_LATENCY)
        };
        let now = Instant::now();
        let mut load = self.lock();
        load.latency.record(sample, now);
        if succeeded {
            load.answers.record(took, now);
        }
    }

    /// How long its answers took of late (failures left out), once it has answered.
    pub(crate) fn answer_time(&self) -> Option<Duration> {
        self.lock().answers.at(Instant::now())
    }

    /// Its recent latency, once it has answered or failed.
    pub(crate) fn latency(&self) -> Option<Duration> {
        self.lock().latency.at(Instant::now())
    }

    /// Attempts it is answering now.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// What a client's search learnt of the engines: each one SearXNG reported unresponsive is
    /// failing for its reason, each one with results is failing no more.
    pub(crate) fn note_engines(&self, answer: &SearxngAnswer) {
        self.answered.store(true, Ordering::Relaxed);
        let mut failing = self.failing.lock().unwrap_or_else(PoisonError::into_inner);
        for name in answer.engines_with_results() {
            if let Some(engine) = EngineName::checked(name) {
                failing.remove(&engine);
            }
        }
        for u in &answer.unresponsive {
            let Some(engine) = EngineName::checked(&u.engine) else {
                continue;
            };
            if failing.len() < MAX_FAILING_ENGINES || failing.contains_key(&engine) {
                failing.insert(engine, u.reason);
            }
        }
    }

    /// Whether it answered a client's search since the gateway started: from then on, an engine
    /// never heard from is one that takes no part in searches (see `engine_plan`).
    pub(crate) fn has_answered(&self) -> bool {
        self.answered.load(Ordering::Relaxed)
    }

    /// What the gateway's own probe of `engine` found: failing for SearXNG's reason, or not.
    pub(crate) fn note_probe(&self, engine: &EngineName, answer: &SearxngAnswer) {
        let mut failing = self.failing.lock().unwrap_or_else(PoisonError::into_inner);
        match answer
            .unresponsive
            .iter()
            .find(|u| u.engine == engine.as_str())
        {
            Some(u) if failing.len() < MAX_FAILING_ENGINES || failing.contains_key(engine) => {
                failing.insert(engine.clone(), u.reason);
            }
            Some(_) => {}
            None => {
                failing.remove(engine);
            }
        }
    }

    /// The engines whose last word was a failure, with SearXNG's reason, by name.
    pub(crate) fn failing_engines(&self) -> Vec<(EngineName, EngineReason)> {
        let failing = self.failing.lock().unwrap_or_else(PoisonError::into_inner);
        failing.iter().map(|(e, r)| (e.clone(), *r)).collect()
    }

    /// Whether a client's search here has an engine to use now: the instance is not cooling down,
    /// and either nothing the default search targets is left out, or one engine it targets is
    /// closed and has taken part in searches before (the engine plan's "usable", see
    /// `engine_plan`; before its first answered search, any closed one). Before `/config`
    /// answered: yes (nothing is known against it).
    pub(crate) fn has_usable_engine(&self) -> bool {
        if self.cooldown.state() == BreakerState::Open {
            return false;
        }
        let Some(catalog) = self.catalog.get() else {
            return true;
        };
        let req = SearchRequest::simple("readiness");
        let targets = catalog.targets(&req);
        let breakers: Vec<_> = targets
            .iter()
            .filter_map(|name| EngineName::checked(name))
            .map(|engine| self.engines.existing(&engine))
            .collect();
        let nothing_out = breakers
            .iter()
            .flatten()
            .all(|b| b.state() == BreakerState::Closed);
        nothing_out
            || breakers.iter().any(|b| match b {
                Some(b) => b.state() == BreakerState::Closed && (b.heard() || !self.has_answered()),
                // No breaker yet: closed, never heard from.
                None => !self.has_answered(),
            })
    }

    /// Engines client searches leave out on this instance now (open, or half-open until a probe
    /// succeeded), sorted.
    pub(crate) fn excluded_engines(&self) -> Vec<String> {
        self.engines
            .all()
            .iter()
            .filter(|b| b.state() != BreakerState::Closed)
            .map(|b| b.name().to_owned())
            .collect()
    }

    /// How many engines `req` would search here are left out (0 before `/config` answered).
    fn excluded_for(&self, req: &SearchRequest) -> usize {
        let Some(catalog) = self.catalog.get() else {
            return 0;
        };
        catalog
            .targets(req)
            .iter()
            .filter(|name| {
                EngineName::checked(name)
                    .and_then(|engine| self.engines.existing(&engine))
                    .is_some_and(|breaker| breaker.state() != BreakerState::Closed)
            })
            .count()
    }

    /// What the choice rule sees of this instance for `req`, given what the choosing call already
    /// had of it.
    pub(crate) fn candidate(
        &self,
        req: &SearchRequest,
        tried: Attempted,
        permit: CooldownPermit,
    ) -> Candidate {
        let (latency, last_sent) = {
            let load = self.lock();
            (load.latency.at(Instant::now()), load.last_sent)
        };
        Candidate {
            available: permit == CooldownPermit::Held
                || self.cooldown.state() != BreakerState::Open,
            tried: tried == Attempted::Already,
            excluded: self.excluded_for(req),
            in_flight: self.in_flight(),
            latency,
            last_sent,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Load> {
        // Two plain values: a poisoned lock still holds consistent ones.
        self.load.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    #[tokio::test(start_paused = true)]
    async fn the_latency_estimate_is_a_weighted_mean_that_decays_while_idle() {
        let mut estimate = LatencyEstimate::default();
        assert_eq!(estimate.at(Instant::now()), None);
        estimate.record(ms(100), Instant::now());
        assert_eq!(estimate.at(Instant::now()), Some(ms(100)));
        estimate.record(ms(20), Instant::now());
        assert_eq!(
            estimate.at(Instant::now()),
            Some(ms(80)),
            "0.75 × 100 + 0.25 × 20"
        );
        tokio::time::advance(LATENCY_DECAY).await;
        let decayed = estimate.at(Instant::now()).unwrap_or_default();
        assert!(
            decayed > ms(29) && decayed < ms(30),
            "one time constant: 80 ms / e, {decayed:?}"
        );
        estimate.record(ms(20), Instant::now());
        let mixed = estimate.at(Instant::now()).unwrap_or_default();
        assert!(mixed > ms(26) && mixed < ms(28), "{mixed:?}");
    }
}
