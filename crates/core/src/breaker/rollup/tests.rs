//! A whole derived from its own breaker and its members': the rule on snapshots, then a provider
//! standing for its keys on a paused clock, read through its series as a scrape reads them.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use super::super::*;
use super::derive;
use crate::metrics::Registry;

const BASE: Duration = Duration::from_secs(10);

fn policy() -> BreakerPolicy {
    BreakerPolicy {
        open_base: BASE,
        open_max: Duration::from_secs(80),
        failure_threshold: 3,
        jitter: 0.0,
        healthy_interval: Duration::from_secs(600),
        quota_park: Duration::from_secs(86_400),
    }
}

/// A provider's name, as a test key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct P(&'static str);

impl BreakerKey for P {
    const KIND: BreakerKind = BreakerKind::Provider;
    fn name(&self) -> &str {
        self.0
    }
}

/// A key's name, as a test key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct K(&'static str);

impl BreakerKey for K {
    const KIND: BreakerKind = BreakerKind::Key;
    fn name(&self) -> &str {
        self.0
    }
}

/// A provider `brave` standing for the keys `keys`, and the registry its series are on.
struct Pool {
    provider: Arc<Breaker>,
    keys: Vec<Arc<Breaker>>,
    metrics: Registry,
}

impl Pool {
    fn new(keys: &[&'static str]) -> Self {
        let mut metrics = Registry::new();
        let families = BreakerMetrics::new(&mut metrics);
        let providers = BreakerBoard::new(policy(), families.clone());
        let key_board = BreakerBoard::new(policy(), families);
        let provider = providers.get(&P("brave"));
        let keys: Vec<Arc<Breaker>> = keys.iter().map(|k| key_board.get(&K(k))).collect();
        let members = keys.clone();
        provider.derive_from(|| members);
        Self {
            provider,
            keys,
            metrics,
        }
    }

    /// `circuit_breaker_state{engine="brave",kind="provider"}` as a scrape reads it (the
    /// gauges computed from time refreshed first, as `/metrics` does).
    fn gauge(&self) -> f64 {
        self.provider.refresh_metrics();
        self.metrics
            .sample(
                "circuit_breaker_state",
                &[("engine", "brave"), ("kind", "provider")],
            )
            .unwrap()
    }

    /// `circuit_breaker_recovery_total{engine="brave",kind="provider"}`.
    fn recoveries(&self) -> f64 {
        self.metrics
            .sample(
                "circuit_breaker_recovery_total",
                &[("engine", "brave"), ("kind", "provider")],
            )
            .unwrap()
    }

    /// The key `i` answers 429: its breaker trips.
    fn rate_limit(&self, i: usize) {
        self.keys[i]
            .admit()
            .unwrap()
            .record(Signal::stop(TripReason::RateLimited));
    }

    /// The key `i`'s probe, admitted.
    fn probe(&self, i: usize) -> Permit {
        let permit = self.keys[i].admit().unwrap();
        assert!(permit.is_probe());
        permit
    }
}

const CLOSED: f64 = 0.0;
const HALF_OPEN: f64 = 1.0;
const OPEN: f64 = 2.0;

fn snapshot(state: BreakerState, reason: Option<TripReason>, open_for: u64) -> Snapshot {
    Snapshot {
        state,
        reason,
        open_for: (open_for > 0).then(|| Duration::from_secs(open_for)),
        trips: u64::from(state != BreakerState::Closed),
        consecutive_failures: 0,
    }
}

#[test]
fn the_whole_is_as_shut_as_the_worse_of_its_own_breaker_and_its_least_shut_member() {
    let closed = snapshot(BreakerState::Closed, None, 0);
    let limited = |s| snapshot(BreakerState::Open, Some(TripReason::RateLimited), s);
    let quota = snapshot(BreakerState::Open, Some(TripReason::Quota), 3_600);
    let half_open = snapshot(BreakerState::HalfOpen, Some(TripReason::Auth), 0);

    let one_usable = derive(closed, &[limited(30), closed]);
    assert_eq!(
        (one_usable.state, one_usable.reason),
        (BreakerState::Closed, None)
    );
    assert_eq!(one_usable.trips, 1, "its keys' trips count as its own");

    let none_usable = derive(closed, &[quota, limited(30)]);
    assert_eq!(
        (none_usable.state, none_usable.reason, none_usable.open_for),
        (
            BreakerState::Open,
            Some(TripReason::RateLimited),
            Some(Duration::from_secs(30))
        ),
        "open until the first key comes back, for that key's reason"
    );

    let probing = derive(closed, &[quota, half_open]);
    assert_eq!(
        (probing.state, probing.reason),
        (BreakerState::HalfOpen, Some(TripReason::Auth))
    );

    let own_open = snapshot(BreakerState::Open, Some(TripReason::Transient), 60);
    let down = derive(own_open, &[closed, closed]);
    assert_eq!(
        (down.state, down.reason),
        (BreakerState::Open, Some(TripReason::Transient)),
        "a provider down is down whatever its keys"
    );
    let longest = derive(own_open, &[limited(90)]);
    assert_eq!(
        longest.open_for,
        Some(Duration::from_secs(90)),
        "open until both its own breaker and a key let a call through"
    );
    assert_eq!(derive(own_open, &[]), own_open, "no member: its own");
}

#[tokio::test(start_paused = true)]
async fn a_one_key_provider_reads_as_its_key_open_half_open_closed_and_one_recovery() {
    let pool = Pool::new(&["brave:1"]);
    assert_eq!(pool.gauge(), CLOSED);

    pool.rate_limit(0);
    assert_eq!(pool.gauge(), OPEN, "the key's trip opens the provider");
    let status = pool.provider.snapshot();
    assert_eq!(
        (status.state, status.reason, status.open_for),
        (
            BreakerState::Open,
            Some(TripReason::RateLimited),
            Some(BASE)
        )
    );
    assert!(
        pool.provider.admit().is_some(),
        "its own breaker still admits: the walk then finds no key"
    );

    tokio::time::advance(BASE).await;
    assert_eq!(pool.gauge(), HALF_OPEN, "the key is due its probe");
    pool.probe(0).record(Signal::Success);
    assert_eq!(pool.gauge(), CLOSED);
    assert_eq!(pool.recoveries(), 1.0);
    assert_eq!(pool.provider.state(), BreakerState::Closed);
}

#[tokio::test(start_paused = true)]
async fn a_failed_probe_of_the_only_key_opens_the_provider_again_for_longer() {
    let pool = Pool::new(&["brave:1"]);
    pool.rate_limit(0);
    tokio::time::advance(BASE).await;
    assert_eq!(pool.gauge(), HALF_OPEN);

    pool.probe(0).record(Signal::stop(TripReason::RateLimited));

    assert_eq!(pool.gauge(), OPEN);
    assert_eq!(pool.recoveries(), 0.0);
    assert_eq!(
        pool.provider.snapshot().open_for,
        Some(BASE * 2),
        "the backoff doubled"
    );
    tokio::time::advance(BASE).await;
    assert_eq!(pool.gauge(), OPEN, "still open after the first period");
}

#[tokio::test(start_paused = true)]
async fn two_keys_keep_the_provider_closed_until_both_trip_and_the_first_probe_recovers_it_once() {
    let pool = Pool::new(&["brave:1", "brave:2"]);
    pool.rate_limit(0);
    assert_eq!(pool.gauge(), CLOSED, "the other key still serves");

    tokio::time::advance(Duration::from_secs(5)).await;
    pool.rate_limit(1);
    assert_eq!(pool.gauge(), OPEN, "no key left");
    assert_eq!(
        pool.provider.snapshot().open_for,
        Some(Duration::from_secs(5)),
        "until the first key is due its probe"
    );

    tokio::time::advance(Duration::from_secs(5)).await;
    assert_eq!(pool.gauge(), HALF_OPEN, "the first key is due its probe");
    let probe = pool.probe(0);
    assert_eq!(pool.gauge(), HALF_OPEN, "while it is out");
    probe.record(Signal::Success);
    assert_eq!(pool.gauge(), CLOSED);
    assert_eq!(pool.recoveries(), 1.0);

    tokio::time::advance(Duration::from_secs(5)).await;
    pool.probe(1).record(Signal::Success);
    assert_eq!(pool.gauge(), CLOSED);
    assert_eq!(
        pool.recoveries(),
        1.0,
        "the second key's recovery is the key's, not the provider's"
    );
}

#[tokio::test(start_paused = true)]
async fn keys_recovering_together_are_one_recovery_of_the_provider() {
    let pool = Arc::new(Pool::new(&["brave:1", "brave:2", "brave:3"]));
    for i in 0..3 {
        pool.rate_limit(i);
    }
    tokio::time::advance(BASE).await;
    let probes: Vec<Permit> = (0..3).map(|i| pool.probe(i)).collect();
    let recorded = probes
        .into_iter()
        .map(|probe| tokio::task::spawn_blocking(move || probe.record(Signal::Success)));
    for done in futures::future::join_all(recorded).await {
        done.unwrap();
    }
    assert_eq!(pool.gauge(), CLOSED);
    assert_eq!(pool.recoveries(), 1.0);
}

#[tokio::test(start_paused = true)]
async fn the_providers_own_trip_opens_it_whatever_its_keys_and_its_probe_recovers_it() {
    let pool = Pool::new(&["brave:1", "brave:2"]);
    for _ in 0..3 {
        pool.provider.admit().unwrap().record(Signal::TRANSIENT);
    }
    assert_eq!(pool.gauge(), OPEN);
    assert_eq!(pool.provider.snapshot().reason, Some(TripReason::Transient));
    tokio::time::advance(BASE).await;
    assert_eq!(pool.gauge(), HALF_OPEN);
    let probe = pool.provider.admit().unwrap();
    assert!(probe.is_probe());
    probe.record(Signal::Success);
    assert_eq!(pool.gauge(), CLOSED);
    assert_eq!(pool.recoveries(), 1.0);
}

#[tokio::test(start_paused = true)]
async fn the_providers_own_recovery_while_no_key_is_usable_is_no_recovery_yet() {
    let pool = Pool::new(&["brave:1"]);
    for _ in 0..3 {
        pool.provider.admit().unwrap().record(Signal::TRANSIENT);
    }
    tokio::time::advance(BASE).await;
    let probe = pool.provider.admit().unwrap();
    // Its key is refused meanwhile (a quota, parked for a day).
    pool.keys[0].record(Signal::stop(TripReason::Quota));
    probe.record(Signal::Success);
    assert_eq!(pool.gauge(), OPEN, "its key is still parked");
    assert_eq!(pool.recoveries(), 0.0);

    tokio::time::advance(Duration::from_secs(86_400)).await;
    pool.probe(0).record(Signal::Success);
    assert_eq!(pool.gauge(), CLOSED);
    assert_eq!(pool.recoveries(), 1.0, "the whole closed once");
}

#[tokio::test(start_paused = true)]
async fn a_paused_key_that_resumes_closes_the_provider_without_a_recovery() {
    let pool = Pool::new(&["brave:1"]);
    pool.keys[0].pause(TripReason::RateLimited, Duration::from_secs(1));
    assert_eq!(pool.gauge(), OPEN);
    tokio::time::advance(Duration::from_secs(1)).await;
    let first = pool.keys[0].admit().unwrap();
    first.record(Signal::Success);
    assert_eq!(pool.gauge(), CLOSED);
    assert_eq!(pool.recoveries(), 0.0, "a pause is not a failure");
}

#[tokio::test(start_paused = true)]
async fn an_operator_closing_the_provider_closes_its_keys_and_counts_no_recovery() {
    let pool = Pool::new(&["brave:1", "brave:2"]);
    pool.rate_limit(0);
    pool.rate_limit(1);
    assert_eq!(pool.gauge(), OPEN);

    pool.provider.force_close();

    assert_eq!(pool.gauge(), CLOSED);
    assert!(pool.keys.iter().all(|k| k.state() == BreakerState::Closed));
    assert_eq!(pool.recoveries(), 0.0);
    pool.provider.force_open(Duration::from_secs(60));
    assert_eq!(pool.gauge(), OPEN, "opening the provider opens the whole");
    assert!(pool.keys.iter().all(|k| k.state() == BreakerState::Closed));
}

#[tokio::test(start_paused = true)]
async fn a_key_open_before_the_link_shows_on_the_provider_from_the_link_on() {
    let mut metrics = Registry::new();
    let families = BreakerMetrics::new(&mut metrics);
    let provider = BreakerBoard::new(policy(), families.clone()).get(&P("brave"));
    let key = BreakerBoard::new(policy(), families).get(&K("brave:1"));
    key.force_open(Duration::from_secs(60));
    let gauge = || {
        metrics.sample(
            "circuit_breaker_state",
            &[("engine", "brave"), ("kind", "provider")],
        )
    };
    assert_eq!(gauge(), Some(CLOSED));

    let member = Arc::clone(&key);
    provider.derive_from(|| vec![member]);
    assert_eq!(gauge(), Some(OPEN));
    provider.derive_from(|| unreachable!("linked once"));
}
