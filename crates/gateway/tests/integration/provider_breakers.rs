//! Premium-provider circuit breakers in the pipeline: a 429 with `Retry-After` parks the key for
//! that long and then exactly one request probes it; an invalid token parks the key as auth; five
//! 500s in a row trip the provider; an open provider does not use up a T1 slot; a pool of keys
//! sets a spent key aside while the next one serves, and skips the provider only when every key
//! is spent; the provider's own series read as the provider as a whole (a one-key provider as its
//! key: open, half-open, closed and one recovery), as the dashboard and its alert expect; `/status`
//! shows it all.

use std::time::{Duration, Instant};

use simulator::premium::{BraveWindows, ProviderBehaviour, SimError};
use simulator::searxng::SearxngMode;
use simulator::Provider::{Brave, Exa};

use crate::support::gateway::TestGateway;
use crate::support::stack::SimStack;
use crate::support::wait;

/// Brave's breaker state and trip reason, as `/status` shows them.
async fn brave_state(g: &TestGateway) -> (String, Option<String>) {
    state_of(g.breaker("provider", "brave").await)
}

/// The state and trip reason of Brave's (only) key, as `/status` shows them.
async fn brave_key_state(g: &TestGateway) -> (String, Option<String>) {
    let name = g.key_name("brave").await;
    state_of(g.breaker("key", &name).await)
}

fn state_of(breaker: serde_json::Value) -> (String, Option<String>) {
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
            // A T1 probe is waited for (not cut at the slow threshold) while the others are decided.
            ("SEARXNG_SLOW_SECONDS", "10"),
        ],
    )
    .await;
    let g = &s.gateway;
    let brave = s.provider(Brave);
    let retry_after = Duration::from_secs(3);
    brave.set_behaviour(ProviderBehaviour::Error(SimError::RateLimited {
        retry_after_secs: retry_after.as_secs(),
    }));
    let tripped = Instant::now();
    g.search(&[("q", "trip")]).await;
    assert_eq!(brave.calls(), 1);
    let key = g.key_name("brave").await;
    assert_eq!(
        brave_state(g).await,
        ("open".to_owned(), Some("rate_limited".to_owned())),
        "a rate limit is the key's, and Brave has no other"
    );
    let breaker = g.breaker("key", &key).await;
    assert_eq!(breaker["reason"], "rate_limited");
    let open_for = breaker["open_for_seconds"].as_f64().unwrap_or(0.0);
    assert!(
        open_for > 1.1 && open_for <= 3.0,
        "open for the server's 3 s, not BREAKER_OPEN_SECONDS (1 s + 10 % jitter): {breaker}"
    );

    g.search(&[("q", "still parked")]).await;
    assert_eq!(brave.calls(), 1, "not called before Retry-After elapsed");
    assert_eq!(
        g.breaker("key", &key).await["state"],
        "open",
        "the second search came while the breaker was open"
    );
    assert_eq!(
        g.metric(
            "searxng_gateway_circuit_breaker_rejections_total",
            &[("engine", &key), ("kind", "key")]
        )
        .await,
        1.0
    );

    g.wait_until_half_open("key", &key).await;
    assert!(
        tripped.elapsed() >= retry_after,
        "half-open only once Retry-After elapsed"
    );
    // The probe stays out long enough for nine more searches to be decided meanwhile.
    brave.set_behaviour(ProviderBehaviour::slow(
        Duration::from_secs(2),
        ProviderBehaviour::results(3, "https://b.example/"),
    ));
    let probe = g.spawn_search(&[("q", "probe")]);
    wait::until(
        "the probe to reach Brave",
        || async move { brave.calls() == 2 },
    )
    .await;
    let others =
        (0..9).map(|i| async move { g.search(&[("q", &format!("while probing {i}"))]).await });
    for reply in futures::future::join_all(others).await {
        assert_eq!((reply.status, reply.outcome.as_str()), (200, "searxng_ok"));
    }
    assert_eq!(
        brave.in_flight(),
        1,
        "the nine were decided while the probe was out"
    );
    let probed = probe.await.expect("probe");
    assert_eq!(probed.outcome, "searxng_plus_premium_ok");
    assert_eq!(
        brave.calls(),
        2,
        "exactly one of ten concurrent requests probed Brave"
    );
    assert_eq!(g.breaker("key", &key).await["state"], "closed");
    assert_eq!(
        g.metric(
            "searxng_gateway_circuit_breaker_recovery_total",
            &[("engine", &key), ("kind", "key")]
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
    let (state, reason) = brave_key_state(&s.gateway).await;
    assert_eq!((state.as_str(), reason.as_deref()), ("open", Some("auth")));
    let key = s.gateway.key_name("brave").await;
    assert_eq!(
        s.gateway
            .metric(
                "searxng_gateway_circuit_breaker_trips_total",
                &[("engine", &key), ("kind", "key"), ("reason", "auth")]
            )
            .await,
        1.0
    );
    assert_eq!(
        s.gateway
            .metric(
                "searxng_gateway_circuit_breaker_rejections_total",
                &[("engine", &key), ("kind", "key")]
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
        brave_state(&s.gateway).await.0,
        "closed",
        "four are not enough"
    );
    s.gateway.search(&[("q", "500 4")]).await;
    let (state, reason) = brave_state(&s.gateway).await;
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
    // Exa trips too, for BREAKER_OPEN_SECONDS only: its turning half-open shows that period is over.
    s.provider(Exa)
        .set_behaviour(ProviderBehaviour::Error(SimError::Auth));
    let failed = s.gateway.search(&[("q", "quota")]).await;
    assert_eq!(failed.status, 502);
    assert_eq!(s.provider_calls(), [1, 1]);

    let exa_key = s.gateway.key_name("exa").await;
    s.gateway.wait_until_half_open("key", &exa_key).await;
    // Exa probes and finds nothing, so the fallback goes on to Brave — which is still parked.
    s.provider(Exa).set_behaviour(ProviderBehaviour::Empty);
    s.gateway.search(&[("q", "quota later")]).await;

    assert_eq!(s.provider(Exa).calls(), 2, "Exa's open period was over");
    assert_eq!(
        s.provider(Brave).calls(),
        1,
        "parked until the monthly reset, not BREAKER_OPEN_SECONDS"
    );
    let brave_key = s.gateway.key_name("brave").await;
    let brave = s.gateway.breaker("key", &brave_key).await;
    assert_eq!(
        (&brave["state"], &brave["reason"]),
        (&"open".into(), &"quota".into())
    );
    let open_for = brave["open_for_seconds"].as_f64().unwrap_or(0.0);
    let month_reset = BraveWindows::default().month_reset_secs as f64;
    assert!(
        open_for > month_reset - 60.0 && open_for <= month_reset,
        "open until the monthly window resets in {month_reset} s: {brave}"
    );
    assert_eq!(
        s.gateway
            .metric(
                "searxng_gateway_circuit_breaker_rejections_total",
                &[("engine", &brave_key), ("kind", "key")]
            )
            .await,
        1.0,
        "the second search offered Brave and its key's breaker refused"
    );
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

#[tokio::test(flavor = "multi_thread")]
async fn a_pool_sets_a_rate_limited_key_aside_while_the_next_serves_and_skips_the_provider_when_all_are_spent(
) {
    let keys = format!("{},second-key", simulator::premium::SIM_KEY);
    let s = SimStack::start(
        &[Brave],
        &[
            ("BRAVE_API_KEY", &keys),
            ("CACHE_SIZE", "0"),
            ("SEARXNG_FAIL_THRESHOLD", "1000"),
        ],
    )
    .await;
    s.searxng.set_mode(SearxngMode::Status(500));
    let brave = s.provider(Brave);
    brave.set_behaviour(ProviderBehaviour::rate_limited(600));
    brave.set_key_behaviour(
        "second-key",
        ProviderBehaviour::results(3, "https://second.example/"),
    );
    let g = &s.gateway;

    let first = g.search(&[("q", "pool 1")]).await;
    assert_eq!(
        (first.status, first.outcome.as_str()),
        (200, "premium_ok"),
        "the first key's 429 did not cost the request Brave: {}",
        first.text
    );
    assert_eq!(brave.calls(), 2, "the first key, then the second");
    for i in 2..=3 {
        let reply = g.search(&[("q", &format!("pool {i}"))]).await;
        assert_eq!(reply.status, 200, "{}", reply.text);
    }
    assert_eq!(brave.calls(), 4, "the set-aside key is not called again");
    let status = g.status().await;
    let pool = status["providers"][0]["keys"].as_array().expect("keys");
    assert_eq!(pool.len(), 2);
    assert_eq!(pool[0]["state"], "open", "{status}");
    assert_eq!(pool[1]["state"], "closed", "{status}");
    assert_eq!(
        brave_state(g).await.0,
        "closed",
        "the provider itself is fine"
    );
    let second = pool[1]["key"].as_str().expect("a fingerprint");
    assert_eq!(second.len(), 8);
    assert!(!status.to_string().contains("second-key"), "never a key");
    let metrics = g.metrics_text().await;
    assert!(!metrics.contains("second-key"));
    assert_eq!(
        crate::support::gateway::metric_value(
            &metrics,
            "searxng_gateway_provider_key_calls_total",
            &[("provider", "brave"), ("key", second), ("outcome", "ok")]
        ),
        3.0
    );

    // The second key's quota is spent too: the provider is skipped, without a call.
    brave.set_key_behaviour("second-key", ProviderBehaviour::Error(SimError::Quota));
    let spent = g.search(&[("q", "pool spent")]).await;
    assert_eq!(spent.status, 502);
    assert_eq!(brave.calls(), 5);
    let skipped = g.search(&[("q", "pool skipped")]).await;
    assert_eq!(skipped.status, 502);
    assert_eq!(brave.calls(), 5, "no key left: Brave is skipped");
    assert!(
        skipped.text.contains("keys_unusable"),
        "the 502 says why: {}",
        skipped.text
    );
    assert_eq!(
        brave_state(g).await,
        ("open".to_owned(), Some("rate_limited".to_owned())),
        "no key usable: the provider as a whole is open, until the rate-limited key comes back"
    );
    assert_eq!(brave_gauge(g).await, 2.0);
}

/// `circuit_breaker_state{engine="brave",kind="provider"}` (0 closed, 1 half-open, 2 open).
async fn brave_gauge(g: &TestGateway) -> f64 {
    g.metric(
        "searxng_gateway_circuit_breaker_state",
        &[("engine", "brave"), ("kind", "provider")],
    )
    .await
}

/// `circuit_breaker_recovery_total{engine="brave",kind="provider"}`.
async fn brave_recoveries(g: &TestGateway) -> f64 {
    g.metric(
        "searxng_gateway_circuit_breaker_recovery_total",
        &[("engine", "brave"), ("kind", "provider")],
    )
    .await
}

/// Brave's provider breaker as the operator's page shows it.
async fn brave_on_the_page(g: &TestGateway) -> String {
    let overview = g.get("/ui/api/overview").await;
    assert_eq!(overview.status, 200, "{}", overview.text);
    overview.json["status"]["breakers"]
        .as_array()
        .and_then(|all| {
            all.iter()
                .find(|b| b["namespace"] == "provider" && b["name"] == "brave")
        })
        .and_then(|b| b["state"].as_str())
        .unwrap_or_else(|| panic!("no brave provider breaker on the page: {}", overview.text))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_one_key_brave_answering_429_shows_its_provider_series_open_then_one_recovery_after_its_probe(
) {
    let s = SimStack::start(
        &[Brave],
        &[
            ("T1_PREMIUM_COUNT", "1"),
            ("BREAKER_OPEN_SECONDS", "1"),
            ("CACHE_SIZE", "0"),
            // A T1 probe is waited for (not cut at the slow threshold).
            ("SEARXNG_SLOW_SECONDS", "10"),
        ],
    )
    .await;
    let g = &s.gateway;
    let brave = s.provider(Brave);
    assert_eq!(brave_gauge(g).await, 0.0, "closed from the first scrape");

    brave.set_behaviour(ProviderBehaviour::rate_limited(1));
    g.search(&[("q", "trip")]).await;
    assert_eq!(brave.calls(), 1);
    assert_eq!(brave_gauge(g).await, 2.0, "open: its only key is set aside");
    assert_eq!(brave_state(g).await.0, "open", "/status says the same");
    assert_eq!(brave_on_the_page(g).await, "open", "and so does the page");
    g.search(&[("q", "skipped")]).await;
    assert_eq!(brave.calls(), 1, "not called while open");
    assert_eq!(
        g.metric(
            "searxng_gateway_circuit_breaker_rejections_total",
            &[("engine", "brave"), ("kind", "provider")],
        )
        .await,
        1.0
    );

    // The probe fails: open again, for longer, and no recovery.
    g.wait_until_half_open("provider", "brave").await;
    assert_eq!(
        brave_gauge(g).await,
        1.0,
        "half-open: its key is due its probe"
    );
    g.search(&[("q", "failed probe")]).await;
    assert_eq!(brave.calls(), 2);
    assert_eq!(brave_gauge(g).await, 2.0, "reopened by the failed probe");
    assert_eq!(brave_recoveries(g).await, 0.0);
    let reopened = g.breaker("provider", "brave").await;
    assert!(
        reopened["open_for_seconds"].as_f64().unwrap_or(0.0) > 1.1,
        "the backoff doubled past BREAKER_OPEN_SECONDS (1 s + 10 % jitter): {reopened}"
    );

    // The fake recovers; the next probe succeeds.
    g.wait_until_half_open("provider", "brave").await;
    brave.set_behaviour(ProviderBehaviour::results(3, "https://b.example/"));
    let probed = g.search(&[("q", "probe")]).await;
    assert_eq!(probed.outcome, "searxng_plus_premium_ok", "{}", probed.text);
    assert_eq!(brave.calls(), 3);
    assert_eq!(brave_gauge(g).await, 0.0, "closed again");
    assert_eq!(
        brave_recoveries(g).await,
        1.0,
        "one recovery of the provider"
    );
    assert_eq!(brave_state(g).await.0, "closed");
    assert_eq!(brave_on_the_page(g).await, "closed");
}
