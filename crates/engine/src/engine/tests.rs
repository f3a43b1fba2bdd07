//! The engine built from its settings: the hedge and the breakers' jitter as configured.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use super::*;
use crate::search::slow_threshold;
use gateway_core::breaker::BreakerState;
use gateway_core::breaker::{Signal, TripReason};
use gateway_upstreams::providers::ProviderKind;

fn gateway(vars: &[(&str, &str)]) -> Engine {
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| ((*k).into(), (*v).into()))
        .collect();
    let config = EngineSettings::from_lookup(&move |name| {
        vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    })
    .unwrap();
    Engine::new(config, Metrics::new()).unwrap()
}

/// The hedge with the gateway's own instance and settings: slow answers make the next search
/// start the fallback at once; fast answers end it; failures do not count either way.
#[tokio::test(start_paused = true)]
async fn a_slow_searxng_is_hedged_from_the_next_search_until_it_answers_fast_again() {
    // A fixed threshold of 1 s: `auto` (the default) hedges at the threshold in effect.
    let gw = gateway(&[("BRAVE_API_KEY", "k"), ("SEARXNG_SLOW_SECONDS", "1")]);
    let fanout = &gw.inner.fanout;
    let instance = fanout.searxng.pool.get(0);
    let wait = Duration::from_secs(1);
    let hedges =
        || slow_threshold::hedges(fanout.settings.searxng_hedge, instance.answer_time(), wait);
    assert!(!hedges(), "no answer yet");
    instance.record_latency(Duration::from_millis(200), true);
    instance.record_latency(Duration::from_secs(1), false);
    instance.record_latency(Duration::from_secs(1), false);
    assert!(!hedges(), "a healthy SearXNG, whatever its failures");
    for _ in 0..4 {
        instance.record_latency(Duration::from_secs(2), true);
    }
    assert!(hedges(), "slow answers: the next search hedges");
    tokio::time::advance(Duration::from_millis(500)).await;
    assert!(hedges(), "still slow half a second later");
    let mut fast_answers = 0;
    while hedges() {
        instance.record_latency(Duration::from_millis(100), true);
        fast_answers += 1;
    }
    assert!(
        (1..=6).contains(&fast_answers),
        "a few fast answers end it: {fast_answers}"
    );
    let off = gateway(&[("BRAVE_API_KEY", "k"), ("SEARXNG_HEDGE_SECONDS", "off")]);
    let instance = off.inner.fanout.searxng.pool.get(0);
    instance.record_latency(Duration::from_secs(5), true);
    assert!(!slow_threshold::hedges(
        off.inner.fanout.settings.searxng_hedge,
        instance.answer_time(),
        wait
    ));
}

/// `BREAKER_JITTER=0` makes a tripped breaker's period exact, so a test on a paused clock can
/// name the instant it ends; the default spreads it by up to a tenth.
#[tokio::test(start_paused = true)]
async fn breaker_jitter_comes_from_the_configuration() {
    let exact = gateway(&[
        ("BRAVE_API_KEY", "k"),
        ("BREAKER_OPEN_SECONDS", "30"),
        ("BREAKER_JITTER", "0"),
    ]);
    let brave = exact
        .inner
        .fanout
        .premium
        .breakers
        .get(&ProviderKind::Brave);
    brave.record(Signal::stop(TripReason::RateLimited));
    assert_eq!(brave.snapshot().open_for, Some(Duration::from_secs(30)));
    tokio::time::advance(Duration::from_secs(30)).await;
    assert_eq!(brave.state(), BreakerState::HalfOpen, "open exactly 30 s");

    let spread = gateway(&[("BRAVE_API_KEY", "k"), ("BREAKER_OPEN_SECONDS", "30")]);
    let periods: Vec<Duration> = (0..20)
        .filter_map(|_| {
            let brave = spread
                .inner
                .fanout
                .premium
                .breakers
                .get(&ProviderKind::Brave);
            brave.force_close();
            brave.record(Signal::stop(TripReason::RateLimited));
            brave.snapshot().open_for
        })
        .collect();
    assert!(periods
        .iter()
        .all(|p| *p >= Duration::from_secs(30) && *p <= Duration::from_secs(33)));
    assert!(
        periods.iter().any(|p| *p > Duration::from_secs(30)),
        "{periods:?}"
    );
}

/// The reranker's breaker (`RERANK_URL`) is listed in `/status`, switched by the admin, and an
/// open period goes out to `STATE_DIR` and comes back at start; without a reranker, none.
#[tokio::test]
async fn the_rerankers_breaker_is_on_status_the_admin_switch_and_the_state_file() {
    use gateway_core::breaker::BreakerKind;

    let vars = [
        ("RERANK_URL", "http://127.0.0.1:9/rerank"),
        ("BREAKER_JITTER", "0"),
    ];
    let gw = gateway(&vars);
    assert!(gw.reranks() && gw.capabilities().reranker);
    let listed = |gw: &Engine| {
        gw.status()
            .breakers
            .iter()
            .find(|b| b.namespace == BreakerKind::Reranker)
            .map(|b| (b.name.clone(), b.state))
    };
    assert_eq!(
        listed(&gw),
        Some(("reranker".to_owned(), BreakerState::Closed))
    );
    assert!(gw.force_breaker(
        BreakerKind::Reranker,
        "reranker",
        Some(Duration::from_secs(600))
    ));
    assert_eq!(
        listed(&gw),
        Some(("reranker".to_owned(), BreakerState::Open))
    );
    assert!(gw.force_breaker(BreakerKind::Reranker, "reranker", None));
    assert_eq!(
        listed(&gw),
        Some(("reranker".to_owned(), BreakerState::Closed))
    );
    // Tripped by failures (an operator's open period is not kept across a restart).
    let breaker = gw.inner.reranking.as_ref().unwrap().breaker();
    for _ in 0..5 {
        breaker.record(Signal::TRANSIENT);
    }
    assert_eq!(breaker.state(), BreakerState::Open);
    let (open, spend) = gw.export_state();
    let entry = open
        .iter()
        .find(|b| b.board == "reranker")
        .expect("the reranker's open period is written");
    assert_eq!(entry.name, "reranker");

    let again = gateway(&vars);
    let restored = again.restore_state(&gateway_core::persist::Snapshot::new(
        open.clone(),
        spend,
        Vec::new(),
    ));
    assert_eq!(restored.breakers, 1);
    assert_eq!(
        listed(&again),
        Some(("reranker".to_owned(), BreakerState::Open))
    );

    let without = gateway(&[]);
    assert!(!without.reranks() && !without.capabilities().reranker);
    assert_eq!(listed(&without), None);
    assert!(!without.force_breaker(BreakerKind::Reranker, "reranker", None));
    let skipped = without.restore_state(&gateway_core::persist::Snapshot::new(
        open,
        Vec::new(),
        Vec::new(),
    ));
    assert_eq!((skipped.breakers, skipped.skipped), (0, 1));
}

/// A read page is split once (#41 point 4): a second query on the same document — the page cache
/// hands out the same one — is ranked from the kept split, and gives what a fresh split gives.
#[tokio::test]
async fn a_pages_split_is_kept_with_it_for_the_next_query() {
    let gw = gateway(&[]);
    let mut content = String::from("# Guide\n\n");
    for topic in ["harbours", "beaches", "lighthouses", "ferries"] {
        content.push_str(&format!("## {topic}\n\nA paragraph about the {topic}.\n\n"));
    }
    let document = crate::read::passages::memo::tests::document(&content);
    let selection = passages::Selection {
        max_chars: 500,
        max_passages: Some(1),
        budget: None,
        order: passages::PassageOrder::Page,
        relevant_only: true,
        merge: passages::Merge::Adjacent,
    };
    let limit = Duration::from_secs(5);
    let mut answers = Vec::new();
    for query in ["lighthouses", "ferries", "lighthouses"] {
        let ranked = gw
            .rank_passages(vec![Arc::clone(&document)], query.into(), 500, limit)
            .await;
        answers.push(ranked.choose(&selection));
    }
    assert_eq!(gw.inner.splits.made(), 1, "one split for three queries");
    assert!(answers[0][0].text.contains("lighthouses"));
    assert!(answers[1][0].text.contains("ferries"));
    assert_eq!(answers[0], answers[2]);
    assert_eq!(
        answers[0],
        gw.passages().select(&document, "lighthouses", &selection),
        "the kept split ranks as a fresh one"
    );
    // Another length is another split.
    let _ = gw
        .rank_passages(vec![Arc::clone(&document)], "ferries".into(), 100, limit)
        .await;
    assert_eq!(gw.inner.splits.made(), 2);
}
