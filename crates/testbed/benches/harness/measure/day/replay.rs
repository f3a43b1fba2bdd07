//! Replaying the day: four clients with a Zipf query mix, each searching at a steady pace, every
//! answer scored (status, results, latency) into the phase it started in; at each phase boundary
//! the simulators' counters (premium calls, engine observations) are read, so each phase also
//! knows what it cost upstream.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;
use simulator::premium::SimulatedProvider;
use simulator::searxng::{EngineObservations, SimulatedSearxng};
use tokio::time::Instant;

use super::schedule::{Day, TARGET};
use super::spells::{self, SpellTally};
use crate::histogram::Histogram;
use crate::loadgen;
use crate::search_path;

/// Concurrent clients.
pub(super) const CLIENTS: usize = 4;
/// Distinct queries in the mix.
const QUERIES: usize = 400;
/// The Zipf exponent of the mix: a few hot queries, a long tail.
const ZIPF_EXPONENT: f64 = 1.0;

/// What one phase (or the whole day) measured.
#[derive(Default)]
pub(super) struct Tally {
    /// Searches started in it.
    pub(super) searches: u64,
    /// Answered 200 with at least the target.
    pub(super) full: u64,
    /// Answered 200 with fewer.
    pub(super) partial: u64,
    /// Not answered 200 (or no answer at all).
    pub(super) failed: u64,
    /// Answers served stale (`X-Cache: stale`).
    pub(super) stale: u64,
    /// Results over every 200 answer.
    pub(super) results: u64,
    /// Latency of every answer.
    pub(super) latency: Histogram,
    /// Premium calls the providers received.
    pub(super) premium_calls: u64,
    /// Premium calls per provider, in `PROVIDERS` order.
    pub(super) calls_by_provider: Vec<u64>,
    /// What SearXNG's engine selection did against the engines' state.
    pub(super) engines: EngineObservations,
}

impl Tally {
    fn add(&mut self, other: &Tally) {
        self.searches += other.searches;
        self.full += other.full;
        self.partial += other.partial;
        self.failed += other.failed;
        self.stale += other.stale;
        self.results += other.results;
        self.latency.merge(&other.latency);
        self.premium_calls += other.premium_calls;
        if self.calls_by_provider.len() < other.calls_by_provider.len() {
            self.calls_by_provider
                .resize(other.calls_by_provider.len(), 0);
        }
        for (mine, theirs) in self
            .calls_by_provider
            .iter_mut()
            .zip(&other.calls_by_provider)
        {
            *mine += theirs;
        }
        self.engines.calls_into_blocked += other.engines.calls_into_blocked;
        self.engines.searches_excluding_healthy += other.engines.searches_excluding_healthy;
        self.engines.explicit_searches += other.engines.explicit_searches;
        self.engines.probes += other.engines.probes;
    }

    /// Share answered with at least the target, in percent.
    pub(super) fn full_percent(&self) -> f64 {
        100.0 * self.full as f64 / self.searches.max(1) as f64
    }

    /// Premium calls per 100 searches.
    pub(super) fn premium_per_100(&self) -> f64 {
        100.0 * self.premium_calls as f64 / self.searches.max(1) as f64
    }

    /// Mean distinct URLs per answered search.
    pub(super) fn urls_per_answer(&self) -> f64 {
        self.results as f64 / (self.full + self.partial).max(1) as f64
    }
}

/// Every phase's tally, the sum, and each engine spell's.
pub(super) struct DayResult {
    pub(super) phases: Vec<Tally>,
    pub(super) overall: Tally,
    pub(super) spells: Vec<SpellTally>,
    /// Quota refusals of the provider with a plan limit that the gateway heard (read from its
    /// metrics after the day).
    pub(super) refusals_heard: u64,
}

/// The simulators' counters at one moment.
struct Counters {
    calls: Vec<u64>,
    engines: EngineObservations,
}

impl Counters {
    fn read(searxng: &SimulatedSearxng, providers: &[SimulatedProvider]) -> Self {
        Self {
            calls: providers.iter().map(|p| p.calls() as u64).collect(),
            engines: searxng.engine_observations(),
        }
    }

    fn since(&self, earlier: &Counters, tally: &mut Tally) {
        tally.calls_by_provider = self
            .calls
            .iter()
            .zip(&earlier.calls)
            .map(|(now, then)| now - then)
            .collect();
        tally.premium_calls = tally.calls_by_provider.iter().sum();
        tally.engines = EngineObservations {
            calls_into_blocked: self.engines.calls_into_blocked
                - earlier.engines.calls_into_blocked,
            searches_excluding_healthy: self.engines.searches_excluding_healthy
                - earlier.engines.searches_excluding_healthy,
            explicit_searches: self.engines.explicit_searches - earlier.engines.explicit_searches,
            probes: self.engines.probes - earlier.engines.probes,
        };
    }
}

/// Query `n` of the mix: Zipf-distributed ranks, drawn from `rng`.
struct QueryMix {
    cumulative: Vec<f64>,
}

impl QueryMix {
    fn new() -> Self {
        let mut total = 0.0;
        let cumulative = (1..=QUERIES)
            .map(|rank| {
                total += 1.0 / (rank as f64).powf(ZIPF_EXPONENT);
                total
            })
            .collect::<Vec<_>>();
        let cumulative = cumulative.iter().map(|c| c / total).collect();
        Self { cumulative }
    }

    fn draw(&self, rng: &mut StdRng) -> usize {
        let u: f64 = rng.random();
        self.cumulative.partition_point(|c| *c < u)
    }
}

/// Replays `day` against the gateway at `addr`: `searches` in total, spread evenly, each client's
/// queries drawn from the day's seed.
pub(super) async fn replay(
    day: Day,
    addr: SocketAddr,
    searches: u64,
    searxng: &SimulatedSearxng,
    providers: &[SimulatedProvider],
) -> DayResult {
    let seed = day.schedule.seed;
    let phases: Arc<Mutex<Vec<Tally>>> = Arc::new(Mutex::new(
        day.schedule
            .phases
            .iter()
            .map(|_| Tally::default())
            .collect(),
    ));
    searxng.keep_engine_log();
    let start = Instant::now();
    let per_client = searches / CLIENTS as u64;
    let pace = day.length.div_f64(per_client.max(1) as f64);
    let mix = Arc::new(QueryMix::new());
    let mut clients = tokio::task::JoinSet::new();
    for client in 0..CLIENTS {
        let phases = Arc::clone(&phases);
        let mix = Arc::clone(&mix);
        clients.spawn(async move {
            let mut rng = StdRng::seed_from_u64(seed.wrapping_add(client as u64));
            // Clients start spread over one pace, as independent users would.
            let offset = pace.mul_f64(client as f64 / CLIENTS as f64);
            let mut sender = None;
            for n in 0..per_client {
                tokio::time::sleep_until(start + offset + pace.mul_f64(n as f64)).await;
                let query = mix.draw(&mut rng);
                let path = search_path(&format!("day query {query}"));
                let began = Instant::now();
                let phase = day.phase_of(began - start);
                let answer = match sender.as_mut() {
                    Some(open) => loadgen::send(open, addr, &path).await,
                    None => match loadgen::connect(addr).await {
                        Ok(mut open) => {
                            let answer = loadgen::send(&mut open, addr, &path).await;
                            sender = Some(open);
                            answer
                        }
                        Err(err) => Err(err),
                    },
                };
                let took = began.elapsed();
                if answer.is_err() {
                    sender = None;
                }
                let mut phases = phases.lock().unwrap_or_else(PoisonError::into_inner);
                score(&mut phases[phase], answer, took);
            }
        });
    }
    // The phase boundaries: read what the simulators counted.
    let mut previous = Counters::read(searxng, providers);
    let mut upstream: Vec<Tally> = Vec::new();
    for phase in day.schedule.phases {
        tokio::time::sleep_until(start + day.at(phase.until)).await;
        if phase.until >= 1.0 {
            while clients.join_next().await.is_some() {}
        }
        let now = Counters::read(searxng, providers);
        let mut tally = Tally::default();
        now.since(&previous, &mut tally);
        upstream.push(tally);
        previous = now;
    }
    let mut phases = std::mem::take(&mut *phases.lock().unwrap_or_else(PoisonError::into_inner));
    let mut overall = Tally::default();
    for (tally, counted) in phases.iter_mut().zip(upstream) {
        tally.premium_calls = counted.premium_calls;
        tally.calls_by_provider = counted.calls_by_provider;
        tally.engines = counted.engines;
        overall.add(tally);
    }
    let spells = spells::attribute(day, start, &searxng.engine_log());
    DayResult {
        phases,
        overall,
        spells,
        refusals_heard: 0,
    }
}

fn score(tally: &mut Tally, answer: Result<loadgen::Answer, loadgen::BoxError>, took: Duration) {
    tally.searches += 1;
    tally.latency.record(took);
    let Ok(answer) = answer else {
        tally.failed += 1;
        return;
    };
    if answer.status != 200 {
        tally.failed += 1;
        return;
    }
    if answer
        .headers
        .get("x-cache")
        .is_some_and(|v| v.as_bytes() == b"stale")
    {
        tally.stale += 1;
    }
    let results = serde_json::from_slice::<Value>(&answer.body)
        .ok()
        .and_then(|body| body["results"].as_array().map(Vec::len))
        .unwrap_or(0);
    tally.results += results as u64;
    if results >= TARGET {
        tally.full += 1;
    } else {
        tally.partial += 1;
    }
}
