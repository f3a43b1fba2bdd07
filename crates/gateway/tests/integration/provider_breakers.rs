//! Premium-provider circuit breakers in the pipeline: a 429 with `Retry-After` parks the provider
//! for that long and then exactly one request probes it; an invalid token parks it as auth; five
//! 500s in a row trip it; an open provider does not use up a T1 slot; `/status` shows it all.

use std::time::Duration;

use simulator::premium::{ProviderBehaviour, SimError};
use simulator::searxng::SearxngMode;
use simulator::Provider::{Brave, Exa};

use crate::support::stack::SimStack;

fn brave_state(status: &serde_json::Value) -> (String, Option<String>) {
    let breaker = status["breakers"]
        .as_array()
        .expect("breakers")
        .iter()
        .find(|b| b["namespace"] == "provider" && b["name"] == "brave")
        .expect("brave's breaker is listed");
    (
        breaker["state"].as_str().unwrap_or("").to_owned(),
        breaker["reason"].as_str().map(str::to_owned),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn brave_429_with_retry_after_is_left_alone_that_long_then_probed_once() {
    let s = SimStack::start(
        &[Brave],
        &[
            ("T1_PREMIUM_COUNT", "1"),
            ("BREAKER_OPEN_SECONDS", "1"),
            ("CACHE_SIZE", "0"),
        ],
    )
    .await;
    let brave = s.provider(Brave);
    brave.set_behaviour(ProviderBehaviour::Error(SimError::RateLimited {
        retry_after_secs: 2,
    }));
    s.gateway.search(&[("q", "trip")]).await;
    assert_eq!(brave.calls(), 1);
    assert_eq!(
        brave_state(&s.gateway.get("/status").await.json)
            .1
            .as_deref(),
        Some("rate_limited")
    );

    // Still inside the 2 s the server asked for (BREAKER_OPEN_SECONDS is only 1).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    s.gateway.search(&[("q", "still parked")]).await;
    assert_eq!(brave.calls(), 1, "not called before Retry-After elapsed");

    tokio::time::sleep(Duration::from_millis(800)).await;
    // The probe takes a while, so all ten requests arrive while it is out.
    brave.set_behaviour(ProviderBehaviour::slow(
        Duration::from_millis(300),
        ProviderBehaviour::results(3, "https://b.example/"),
    ));
    let requests = (0..10).map(|i| {
        let g = &s.gateway;
        async move { g.search(&[("q", &format!("probe {i}"))]).await }
    });
    for reply in futures::future::join_all(requests).await {
        assert_eq!(reply.status, 200);
    }
    assert_eq!(
        brave.calls(),
        2,
        "exactly one of ten concurrent requests probed Brave"
    );
    assert_eq!(
        brave_state(&s.gateway.get("/status").await.json).0,
        "closed"
    );
    assert_eq!(
        s.gateway
            .metric(
                "searxng_gateway_circuit_breaker_recovery_total",
                &[("engine", "brave"), ("kind", "provider")]
            )
            .await,
        1.0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn brave_422_token_invalid_parks_it_as_auth() {
    let s = SimStack::start(&[Brave], &[("T1_PREMIUM_COUNT", "1"), ("CACHE_SIZE", "0")]).await;
    s.provider(Brave)
        .set_behaviour(ProviderBehaviour::Error(SimError::Auth));
    s.gateway.search(&[("q", "bad token")]).await;
    s.gateway.search(&[("q", "bad token again")]).await;

    assert_eq!(s.provider(Brave).calls(), 1);
    let (state, reason) = brave_state(&s.gateway.get("/status").await.json);
    assert_eq!((state.as_str(), reason.as_deref()), ("open", Some("auth")));
    assert_eq!(
        s.gateway
            .metric(
                "searxng_gateway_circuit_breaker_trips_total",
                &[
                    ("engine", "brave"),
                    ("kind", "provider"),
                    ("reason", "auth")
                ]
            )
            .await,
        1.0
    );
    assert_eq!(
        s.gateway
            .metric(
                "searxng_gateway_circuit_breaker_rejections_total",
                &[("engine", "brave"), ("kind", "provider")]
            )
            .await,
        1.0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn five_500s_in_a_row_trip_the_provider() {
    let s = SimStack::start(&[Brave], &[("T1_PREMIUM_COUNT", "1"), ("CACHE_SIZE", "0")]).await;
    s.provider(Brave)
        .set_behaviour(ProviderBehaviour::Error(SimError::Server));
    for i in 0..4 {
        s.gateway.search(&[("q", &format!("500 {i}"))]).await;
    }
    assert_eq!(
        brave_state(&s.gateway.get("/status").await.json).0,
        "closed",
        "four are not enough"
    );
    s.gateway.search(&[("q", "500 4")]).await;
    let (state, reason) = brave_state(&s.gateway.get("/status").await.json);
    assert_eq!(
        (state.as_str(), reason.as_deref()),
        ("open", Some("transient"))
    );
    s.gateway.search(&[("q", "500 5")]).await;
    assert_eq!(
        s.provider(Brave).calls(),
        5,
        "the sixth request did not call Brave"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_open_provider_does_not_use_up_a_t1_slot() {
    let s = SimStack::start(
        &[Brave, Exa],
        &[("T1_PREMIUM_COUNT", "1"), ("CACHE_SIZE", "0")],
    )
    .await;
    s.provider(Brave)
        .set_behaviour(ProviderBehaviour::Error(SimError::Auth));
    s.gateway.search(&[("q", "trip brave")]).await; // rotation starts at brave: it trips
    assert_eq!(s.provider_calls(), [1, 0]);

    for i in 0..4 {
        let reply = s.gateway.search(&[("q", &format!("slot {i}"))]).await;
        assert_eq!(
            reply.outcome, "searxng_plus_premium_ok",
            "every request still had a T1 provider"
        );
    }
    assert_eq!(
        s.provider_calls(),
        [1, 4],
        "Exa took the slot whenever the rotation pointed at Brave"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_spent_monthly_quota_parks_the_provider_until_its_reset() {
    let s = SimStack::start(
        &[Brave, Exa],
        &[("BREAKER_OPEN_SECONDS", "1"), ("CACHE_SIZE", "0")],
    )
    .await;
    s.searxng.set_mode(SearxngMode::Status(500));
    s.provider(Brave)
        .set_behaviour(ProviderBehaviour::Error(SimError::Quota));
    s.gateway.search(&[("q", "quota")]).await;
    tokio::time::sleep(Duration::from_millis(1300)).await;
    s.gateway.search(&[("q", "quota later")]).await;

    assert_eq!(
        s.provider(Brave).calls(),
        1,
        "parked until the monthly reset, not BREAKER_OPEN_SECONDS"
    );
    let status = s.gateway.get("/status").await.json;
    assert_eq!(
        brave_state(&status),
        ("open".to_owned(), Some("quota".to_owned()))
    );
    let open_for = status["breakers"][0]["open_for_seconds"]
        .as_f64()
        .unwrap_or(0.0);
    assert!(open_for > 86_400.0, "open for {open_for} s");
}

#[tokio::test(flavor = "multi_thread")]
async fn status_lists_breakers_quota_windows_cooldown_and_cache_without_secrets() {
    let s = SimStack::start(&[Brave, Exa], &[("T1_PREMIUM_COUNT", "2")]).await;
    s.gateway.search(&[("q", "status")]).await;
    let status = s.gateway.get("/status").await;

    assert_eq!(status.status, 200);
    let json = &status.json;
    assert!(json["breakers"].as_array().is_some_and(|b| b.len() >= 2));
    let brave = &json["providers"][0];
    assert_eq!(brave["name"], "brave");
    let windows = brave["quota_windows"].as_array().expect("windows");
    assert!(
        windows
            .iter()
            .any(|w| w["window"] == "month" && w["remaining"].as_f64().is_some()),
        "{windows:?}"
    );
    assert_eq!(json["searxng"]["cooldown"]["state"], "closed");
    assert_eq!(json["cache"]["size"], 1);
    assert!(!status.text.contains("sim-key"));
}
