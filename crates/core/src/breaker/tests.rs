//! The shared handle: permits, metrics and the board. The rules themselves are tested in
//! `machine/tests.rs`.

#![allow(clippy::unwrap_used)]

use super::*;

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

use crate::metrics::Registry;

/// A provider's name, as a test key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct P(&'static str);

impl BreakerKey for P {
    const KIND: BreakerKind = BreakerKind::Provider;
    fn name(&self) -> &str {
        self.0
    }
}

/// An engine's name, as a test key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct E(&'static str);

impl BreakerKey for E {
    const KIND: BreakerKind = BreakerKind::Engine;
    fn name(&self) -> &str {
        self.0
    }
}

fn board() -> (BreakerBoard<P>, Registry) {
    let mut registry = Registry::new();
    let metrics = BreakerMetrics::new(&mut registry);
    (BreakerBoard::new(policy(), metrics), registry)
}

fn gauge(metrics: &Registry, kind: &str, name: &str) -> Option<f64> {
    metrics.sample("circuit_breaker_state", &[("engine", name), ("kind", kind)])
}

fn trips(metrics: &Registry, kind: &str, name: &str, reason: &str) -> Option<f64> {
    metrics.sample(
        "circuit_breaker_trips_total",
        &[("engine", name), ("kind", kind), ("reason", reason)],
    )
}

#[tokio::test(start_paused = true)]
async fn transitions_reach_the_state_gauge_trips_and_recoveries() {
    let (board, metrics) = board();
    let breaker = board.get(&P("brave"));
    assert_eq!(gauge(&metrics, "provider", "brave"), Some(0.0));

    breaker
        .admit()
        .unwrap()
        .record(Signal::stop(TripReason::RateLimited));
    assert_eq!(gauge(&metrics, "provider", "brave"), Some(2.0));
    assert_eq!(
        trips(&metrics, "provider", "brave", "rate_limited"),
        Some(1.0)
    );
    assert!(breaker.admit().is_none());
    assert_eq!(
        metrics.sample(
            "circuit_breaker_rejections_total",
            &[("engine", "brave"), ("kind", "provider")]
        ),
        Some(1.0)
    );

    tokio::time::advance(BASE).await;
    board.refresh_metrics();
    assert_eq!(
        gauge(&metrics, "provider", "brave"),
        Some(1.0),
        "half-open once the period elapsed"
    );

    let probe = breaker.admit().unwrap();
    assert!(probe.is_probe());
    probe.record(Signal::Success);
    assert_eq!(gauge(&metrics, "provider", "brave"), Some(0.0));
    assert_eq!(
        metrics.sample(
            "circuit_breaker_recovery_total",
            &[("engine", "brave"), ("kind", "provider")]
        ),
        Some(1.0)
    );
}

#[tokio::test(start_paused = true)]
async fn a_dropped_probe_permit_frees_the_slot() {
    let (board, _) = board();
    let breaker = board.get(&P("google"));
    breaker.record(Signal::stop(TripReason::Captcha));
    tokio::time::advance(BASE).await;
    let cancelled = breaker.admit().unwrap();
    assert!(breaker.admit().is_none());
    drop(cancelled);
    assert!(
        breaker.admit().unwrap().is_probe(),
        "the next caller probes"
    );
}

#[tokio::test(start_paused = true)]
async fn a_call_that_must_not_probe_is_admitted_only_while_closed_and_leaves_the_probe() {
    let (board, metrics) = board();
    let google = board.get(&P("google"));
    assert!(!google.admit_closed().unwrap().is_probe());
    google.record(Signal::stop(TripReason::Captcha));
    assert!(google.admit_closed().is_none(), "open");
    tokio::time::advance(BASE).await;
    assert_eq!(google.state(), BreakerState::HalfOpen);
    assert!(
        google.admit_closed().is_none(),
        "half-open: not for a client"
    );
    assert_eq!(
        metrics.sample(
            "circuit_breaker_rejections_total",
            &[("engine", "google"), ("kind", "provider")]
        ),
        Some(2.0)
    );
    let probe = google.admit().unwrap();
    assert!(probe.is_probe(), "the probe is still there for the prober");
    probe.record(Signal::Success);
    assert!(google.admit_closed().is_some(), "closed again");
}

#[tokio::test(start_paused = true)]
async fn a_pause_is_neither_a_trip_nor_a_recovery() {
    let (board, metrics) = board();
    let brave = board.get(&P("brave"));
    brave.pause(TripReason::RateLimited, Duration::from_secs(1));
    assert!(brave.admit().is_none());
    tokio::time::advance(Duration::from_millis(1001)).await;
    brave.admit().unwrap().record(Signal::Success);
    assert_eq!(brave.state(), BreakerState::Closed);
    assert_eq!(trips(&metrics, "provider", "brave", "rate_limited"), None);
    assert_eq!(
        metrics.sample(
            "circuit_breaker_recovery_total",
            &[("engine", "brave"), ("kind", "provider")]
        ),
        Some(0.0)
    );
}

/// Real threads racing on one lock: a paused clock's single thread could not show a race.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_one_probe_is_admitted_among_many_concurrent_callers() {
    const CALLERS: usize = 50;
    // A zero open period makes the breaker half-open the moment it trips.
    let board: BreakerBoard<P> = BreakerBoard::new(
        BreakerPolicy {
            open_base: Duration::ZERO,
            ..policy()
        },
        BreakerMetrics::new(&mut Registry::new()),
    );
    let breaker = board.get(&P("test"));
    breaker.record(Signal::stop(TripReason::RateLimited));
    assert_eq!(breaker.state(), BreakerState::HalfOpen);

    let start = Arc::new(tokio::sync::Barrier::new(CALLERS));
    let all_admitted = Arc::new(tokio::sync::Barrier::new(CALLERS));
    let tasks: Vec<_> = (0..CALLERS)
        .map(|_| {
            let (breaker, start, all_admitted) =
                (Arc::clone(&breaker), start.clone(), all_admitted.clone());
            tokio::spawn(async move {
                start.wait().await;
                let permit = breaker.admit();
                // Hold every permit until all have asked, so a probe cannot be freed early.
                all_admitted.wait().await;
                permit.map(|p| p.is_probe())
            })
        })
        .collect();
    let mut admitted = Vec::new();
    for task in tasks {
        admitted.extend(task.await.unwrap());
    }
    assert_eq!(admitted, vec![true]);
}

#[tokio::test(start_paused = true)]
async fn an_engine_and_a_provider_with_the_same_name_are_separate_breakers_and_series() {
    let mut metrics = Registry::new();
    let families = BreakerMetrics::new(&mut metrics);
    let providers: BreakerBoard<P> = BreakerBoard::new(policy(), families.clone());
    let engines: BreakerBoard<E> = BreakerBoard::new(policy(), families);
    let engine = engines.get(&E("brave"));
    let provider = providers.get(&P("brave"));
    assert!(!Arc::ptr_eq(&engine, &provider));
    assert!(Arc::ptr_eq(&engine, &engines.get(&E("brave"))));
    assert_eq!(
        (engine.kind(), provider.kind()),
        (BreakerKind::Engine, BreakerKind::Provider)
    );

    engine.record(Signal::stop(TripReason::Captcha));

    assert_eq!(engine.state(), BreakerState::Open);
    assert_eq!(provider.state(), BreakerState::Closed);
    assert_eq!(gauge(&metrics, "engine", "brave"), Some(2.0));
    assert_eq!(gauge(&metrics, "provider", "brave"), Some(0.0));
    assert_eq!(trips(&metrics, "engine", "brave", "captcha"), Some(1.0));
    assert_eq!(trips(&metrics, "provider", "brave", "captcha"), None);
}

#[tokio::test(start_paused = true)]
async fn a_board_lists_its_breakers_sorted_by_key_and_creates_none_when_asked_if_one_exists() {
    let (board, _) = board();
    assert!(board.existing(&P("tavily")).is_none());
    for name in ["tavily", "brave", "exa"] {
        board.get(&P(name));
    }
    let listed: Vec<String> = board.all().iter().map(|b| b.name().to_owned()).collect();
    assert_eq!(listed, ["brave", "exa", "tavily"]);
    assert!(board.existing(&P("tavily")).is_some());
    assert!(board.existing(&P("jina")).is_none());
    assert_eq!(board.all().len(), 3);
}
