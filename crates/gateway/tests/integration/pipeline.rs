//! The decision pipeline against the simulators: the T1 pass, round-robin order, the bounded
//! fallback, the hard budget, keyless mode, degraded answers and every outcome label. What the
//! simulators saw (how often, in which order, what was still in flight) is the proof; no test
//! measures how fast the gateway was.
//!
//! Concurrency and "did not wait" are proven with upstreams scripted to hang and per-call timeouts
//! set beyond the hang guard ([`UNREACHED_TIMEOUT_SECONDS`]): a gateway that called them one after
//! another, or waited for a hanging one, could not get past the first of them in time.

use std::time::{Duration, Instant};

use serde_json::Value;
use simulator::premium::{ProviderBehaviour, SimError, SimHit};
use simulator::script::{Latency, Script};
use simulator::searxng::{EngineBehaviour, EngineFailure, SearxngMode};
use simulator::Provider::{Brave, Exa, Jina, Tavily};

use crate::support::stack::{SimStack, ENGINES};
use crate::support::wait::{self, UNREACHED_TIMEOUT_SECONDS};

fn urls(reply: &Value) -> Vec<String> {
    reply["results"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(|x| x["url"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// `(name, error_class)` of every upstream in a 502 body, sorted.
fn failed_upstreams(reply: &Value) -> Vec<(String, String)> {
    let mut upstreams: Vec<(String, String)> = reply["upstreams"]
        .as_array()
        .expect("upstreams")
        .iter()
        .map(|u| {
            (
                u["name"].as_str().unwrap_or("").to_owned(),
                u["error_class"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    upstreams.sort();
    upstreams
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(name, class)| ((*name).to_owned(), (*class).to_owned()))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_t1_pass_has_searxng_and_every_t1_provider_in_flight_at_once() {
    let s = SimStack::start(
        &[Brave, Exa],
        &[
            ("T1_PREMIUM_COUNT", "2"),
            ("FALLBACK_TIMEOUT_SECONDS", UNREACHED_TIMEOUT_SECONDS),
            ("SEARXNG_TIMEOUT_SECONDS", UNREACHED_TIMEOUT_SECONDS),
            ("BRAVE_TIMEOUT_SECONDS", UNREACHED_TIMEOUT_SECONDS),
            ("EXA_TIMEOUT_SECONDS", UNREACHED_TIMEOUT_SECONDS),
            // The fallback never starts: every provider seen was called by the T1 pass.
            ("SEARXNG_SLOW_SECONDS", UNREACHED_TIMEOUT_SECONDS),
        ],
    )
    .await;
    s.searxng.set_mode(SearxngMode::Hang);
    s.provider(Brave).set_behaviour(ProviderBehaviour::Hang);
    s.provider(Exa).set_behaviour(ProviderBehaviour::Hang);

    let search = s.gateway.spawn_search(&[("q", "parallel")]);
    let s_ref = &s;
    wait::until(
        "SearXNG, Brave and Exa to hold the request at the same time",
        || async move {
            s_ref.searxng.in_flight() == 1
                && s_ref.provider(Brave).in_flight() == 1
                && s_ref.provider(Exa).in_flight() == 1
        },
    )
    .await;

    assert_eq!(s.searxng_hits(), 1);
    assert_eq!(s.provider_calls(), [1, 1]);
    assert!(
        !search.is_finished(),
        "nothing answered, so nothing is merged yet"
    );
    search.abort();
}

#[tokio::test(flavor = "multi_thread")]
async fn round_robin_follows_the_configured_provider_order() {
    let s = SimStack::start(
        &[Tavily, Brave, Exa],
        &[("T1_PREMIUM_COUNT", "1"), ("CACHE_SIZE", "0")],
    )
    .await;
    let mut order = Vec::new();
    for i in 0..4 {
        let before = s.provider_calls();
        s.gateway.search(&[("q", &format!("rr {i}"))]).await;
        let after = s.provider_calls();
        let called: Vec<usize> = (0..3).filter(|&p| after[p] > before[p]).collect();
        assert_eq!(called.len(), 1, "exactly one T1 provider per request");
        order.push(s.providers[called[0]].kind());
    }
    assert_eq!(order, [Tavily, Brave, Exa, Tavily]);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_fallback_stops_as_soon_as_the_target_is_met() {
    let s = SimStack::start(
        &[Brave, Exa, Tavily],
        &[
            ("SUFFICIENT_MIN_RESULTS", "15"),
            ("SEARXNG_FAIL_THRESHOLD", "100"),
            ("CACHE_SIZE", "0"),
        ],
    )
    .await;
    s.searxng.set_mode(SearxngMode::Status(500));
    s.provider(Brave)
        .set_behaviour(ProviderBehaviour::results(10, "https://b.example/"));
    s.provider(Exa)
        .set_behaviour(ProviderBehaviour::results(10, "https://e.example/"));
    s.provider(Tavily)
        .set_behaviour(ProviderBehaviour::results(10, "https://t.example/"));

    let reply = s.gateway.search(&[("q", "target")]).await;

    assert_eq!(reply.status, 200);
    assert_eq!(reply.outcome, "premium_ok");
    assert_eq!(urls(&reply.json).len(), 20);
    assert_eq!(
        s.provider_calls().iter().sum::<usize>(),
        2,
        "two providers met 15, the third was not called"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn no_provider_is_called_twice_for_one_request() {
    let s = SimStack::start(
        &[Brave, Exa, Jina],
        &[("T1_PREMIUM_COUNT", "2"), ("SUFFICIENT_MIN_RESULTS", "500")],
    )
    .await;
    let reply = s.gateway.search(&[("q", "everyone once")]).await;
    assert_eq!(reply.status, 200);
    assert_eq!(s.provider_calls(), [1, 1, 1]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hanging_searxng_does_not_starve_the_fallback() {
    let s = SimStack::start(
        &[Brave],
        &[
            ("FALLBACK_TIMEOUT_SECONDS", UNREACHED_TIMEOUT_SECONDS),
            ("SEARXNG_TIMEOUT_SECONDS", UNREACHED_TIMEOUT_SECONDS),
        ],
    )
    .await;
    s.searxng.set_mode(SearxngMode::Hang);

    let reply = s.gateway.search(&[("q", "searxng hangs")]).await;

    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.outcome, "premium_ok");
    assert!(!urls(&reply.json).is_empty());
    assert_eq!(
        s.provider(Brave).calls(),
        1,
        "Brave was called while SearXNG still had not answered"
    );
    assert_eq!(s.searxng_hits(), 1, "the hanging call was not retried");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_budget_is_hard_even_when_everything_hangs() {
    let s = SimStack::start(
        &[Brave, Exa],
        &[
            ("FALLBACK_TIMEOUT_SECONDS", "1.5"),
            ("T1_PREMIUM_COUNT", "1"),
            ("SEARXNG_TIMEOUT_SECONDS", UNREACHED_TIMEOUT_SECONDS),
            ("BRAVE_TIMEOUT_SECONDS", UNREACHED_TIMEOUT_SECONDS),
            ("EXA_TIMEOUT_SECONDS", UNREACHED_TIMEOUT_SECONDS),
        ],
    )
    .await;
    s.searxng.set_mode(SearxngMode::Hang);
    s.provider(Brave).set_behaviour(ProviderBehaviour::Hang);
    s.provider(Exa).set_behaviour(ProviderBehaviour::Hang);

    let started = Instant::now();
    let reply = s.gateway.search(&[("q", "all hang")]).await;

    assert_eq!(reply.status, 502);
    // Every per-call timeout is out of reach: whatever timed out was cut by the budget.
    let upstreams = failed_upstreams(&reply.json);
    let names: Vec<&str> = upstreams.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        ["brave", "exa", "searxng"],
        "Brave (T1) and Exa (fallback, once SearXNG was slow) were called: {upstreams:?}"
    );
    for (name, class) in &upstreams {
        assert!(
            class == "timeout" || class == "deadline",
            "{name} was cut by the budget, not failed otherwise: {upstreams:?}"
        );
    }
    // A lower bound cannot flake on a slow machine. The calls end a few ms before the deadline.
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(1400),
        "nothing answered, so the gateway spent its budget waiting, not {took:?}"
    );
    assert_eq!((s.searxng_hits(), s.provider_calls()), (1, vec![1, 1]));
    let s_ref = &s;
    wait::until(
        "every call still in flight to be cancelled",
        || async move {
            s_ref.searxng.in_flight()
                + s_ref.provider(Brave).in_flight()
                + s_ref.provider(Exa).in_flight()
                == 0
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn keyless_mode_never_calls_a_provider() {
    let s = SimStack::start_with_keys(&[Brave, Exa], false, &[]).await;
    let ok = s.gateway.search(&[("q", "keyless")]).await;
    assert_eq!(ok.outcome, "searxng_ok");
    s.searxng.set_mode(SearxngMode::Status(500));
    let failed = s.gateway.search(&[("q", "keyless down")]).await;
    assert_eq!(failed.status, 502);
    assert_eq!(s.provider_calls(), [0, 0]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_degraded_searxng_answer_sends_the_request_to_the_fallback() {
    let s = SimStack::start(&[Brave], &[]).await;
    s.fail_every_engine();

    let reply = s.gateway.search(&[("q", "degraded")]).await;

    assert_eq!(reply.status, 200);
    assert_eq!(reply.outcome, "premium_ok");
    assert_eq!(s.provider(Brave).calls(), 1);
    assert_eq!(
        reply.json["unresponsive_engines"].as_array().map(Vec::len),
        Some(ENGINES.len()),
        "SearXNG's own keys are kept"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_outcome_label_is_counted_exactly_once_per_request() {
    let s = SimStack::start(&[Brave], &[("SEARXNG_FAIL_THRESHOLD", "100")]).await;
    let g = &s.gateway;

    assert_eq!(
        g.search(&[("q", "only searxng")]).await.outcome,
        "searxng_ok"
    );
    assert_eq!(
        g.search(&[("q", "only searxng")]).await.outcome,
        "cache_hit"
    );

    s.fail_every_engine();
    assert_eq!(
        g.search(&[("q", "only premium")]).await.outcome,
        "premium_ok"
    );

    s.provider(Brave)
        .set_behaviour(ProviderBehaviour::Error(SimError::Server));
    let failed = g.search(&[("q", "nobody")]).await;
    assert_eq!(
        (failed.status, failed.outcome.as_str()),
        (502, "fallback_fail")
    );

    let t1 = SimStack::start(&[Brave], &[("T1_PREMIUM_COUNT", "1")]).await;
    t1.provider(Brave)
        .set_behaviour(ProviderBehaviour::results(2, "https://b.example/"));
    let mixed = t1.gateway.search(&[("q", "both")]).await;
    assert_eq!(mixed.outcome, "searxng_plus_premium_ok");

    for (outcome, want) in [
        ("searxng_ok", 1.0),
        ("cache_hit", 1.0),
        ("premium_ok", 1.0),
        ("fallback_fail", 1.0),
        ("searxng_plus_premium_ok", 0.0),
    ] {
        assert_eq!(
            g.metric("searxng_gateway_requests_total", &[("outcome", outcome)])
                .await,
            want,
            "{outcome}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_502_body_names_each_upstream_and_its_class_and_nothing_else() {
    let s = SimStack::start(&[Brave, Exa], &[("T1_PREMIUM_COUNT", "1")]).await;
    s.searxng.set_mode(SearxngMode::Status(500));
    s.provider(Brave)
        .set_behaviour(ProviderBehaviour::Error(SimError::RateLimited {
            retry_after_secs: 30,
        }));
    s.provider(Exa)
        .set_behaviour(ProviderBehaviour::Error(SimError::Quota));

    let reply = s.gateway.search(&[("q", "everything fails")]).await;

    assert_eq!(reply.status, 502);
    assert_eq!(reply.json["error"], "all_upstreams_failed");
    assert_eq!(
        failed_upstreams(&reply.json),
        pairs(&[
            ("brave", "rate_limited"),
            ("exa", "quota"),
            ("searxng", "server_error"),
        ])
    );
    for leaked in ["sim-key", "search error", "RATE_LIMITED", "NO_MORE_CREDITS"] {
        assert!(
            !reply.text.contains(leaked),
            "{leaked} leaked into {}",
            reply.text
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_url_from_searxng_and_a_provider_lists_both_and_both_contribute() {
    let s = SimStack::start(&[Brave], &[("T1_PREMIUM_COUNT", "1"), ("CACHE_SIZE", "0")]).await;
    let direct: Value = reqwest::Client::new()
        .get(format!("{}/search", s.searxng.base_url()))
        .query(&[
            ("q", "shared url"),
            ("engines", "alpha"),
            ("format", "json"),
        ])
        .send()
        .await
        .expect("simulator answers")
        .json()
        .await
        .expect("JSON");
    let searxng_urls = urls(&direct);
    assert!(!searxng_urls.is_empty());
    let hits: Vec<SimHit> = searxng_urls
        .iter()
        .map(|u| SimHit {
            title: "same".into(),
            url: u.clone(),
            content: "same".into(),
            published_date: None,
        })
        .collect();
    s.provider(Brave)
        .set_behaviour(ProviderBehaviour::Results(hits));

    let reply = s
        .gateway
        .search(&[("q", "shared url"), ("engines", "alpha")])
        .await;

    assert_eq!(
        reply.outcome, "searxng_plus_premium_ok",
        "identical URL sets: both contributed"
    );
    assert_eq!(urls(&reply.json).len(), searxng_urls.len());
    for result in reply.json["results"].as_array().expect("results") {
        let engines: Vec<&str> = result["engines"]
            .as_array()
            .expect("engines")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            engines.contains(&"alpha") && engines.contains(&"brave_api"),
            "{engines:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn providers_receive_the_mapped_searxng_parameters() {
    let s = SimStack::start(&[Brave], &[("T1_PREMIUM_COUNT", "1")]).await;
    s.gateway
        .search(&[
            ("q", "Mapped Query"),
            ("pageno", "2"),
            ("time_range", "week"),
            ("safesearch", "2"),
            ("language", "de-DE"),
        ])
        .await;
    let seen = s.provider(Brave).last_request().expect("brave was called");
    assert_eq!(seen.query_param("q"), Some("Mapped Query"));
    assert_eq!(seen.query_param("offset"), Some("1"));
    assert_eq!(seen.query_param("freshness"), Some("pw"));
    assert_eq!(seen.query_param("safesearch"), Some("strict"));
    assert_eq!(seen.query_param("search_lang"), Some("de"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hanging_t1_provider_does_not_hold_back_a_complete_searxng_answer() {
    let s = SimStack::start(
        &[Brave],
        &[
            ("T1_PREMIUM_COUNT", "1"),
            ("SEARXNG_SLOW_SECONDS", "0.3"),
            ("FALLBACK_TIMEOUT_SECONDS", UNREACHED_TIMEOUT_SECONDS),
            ("BRAVE_TIMEOUT_SECONDS", UNREACHED_TIMEOUT_SECONDS),
        ],
    )
    .await;
    s.provider(Brave).set_behaviour(ProviderBehaviour::Hang);

    let reply = s.gateway.search(&[("q", "t1 hangs")]).await;

    assert_eq!(reply.status, 200);
    assert_eq!(reply.outcome, "searxng_ok");
    assert!(!urls(&reply.json).is_empty(), "SearXNG's results");
    assert_eq!(
        s.provider(Brave).calls(),
        1,
        "Brave was called and never answered"
    );
    let brave = s.provider(Brave);
    wait::until("the hanging T1 call to be cancelled", || async move {
        brave.in_flight() == 0
    })
    .await;
}

/// A SearXNG whose answer comes after the fallback met the target: the search answers without it,
/// the call runs on to its end.
async fn searxng_answering_after_the_fallback() -> SimStack {
    SimStack::start(
        &[Brave],
        &[
            ("SEARXNG_SLOW_SECONDS", "0.2"),
            ("SEARXNG_HEDGE_SECONDS", "off"),
            ("FALLBACK_TIMEOUT_SECONDS", UNREACHED_TIMEOUT_SECONDS),
            ("BREAKER_JITTER", "0"),
            ("CACHE_SIZE", "0"),
        ],
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_searxng_answer_that_comes_after_the_fallback_still_teaches_the_engine_breakers() {
    let s = searxng_answering_after_the_fallback().await;
    s.gateway.wait_for_catalog().await;
    s.searxng
        .set_engine("gamma", EngineBehaviour::Fails(EngineFailure::Captcha));
    s.searxng
        .set_mode(SearxngMode::Delay(Duration::from_millis(1500)));

    let reply = s.gateway.search(&[("q", "answered by the fallback")]).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(s.provider(Brave).calls(), 1, "the fallback answered");
    let searxng = &s.searxng;
    wait::until("SearXNG's slow answer to arrive", || async move {
        searxng.in_flight() == 0
    })
    .await;
    let gateway = &s.gateway;
    wait::until("the CAPTCHA in it to open gamma's breaker", || async move {
        gateway.breaker("engine", "gamma").await["state"] == "open"
    })
    .await;
    assert_eq!(s.searxng_hits(), 1, "one call, heard to its end");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_searxng_call_the_answer_did_not_wait_for_is_not_retried() {
    let s = searxng_answering_after_the_fallback().await;
    s.searxng.set_mode(SearxngMode::Status(500));
    s.searxng
        .set_script(Script::new().latency(Latency::Fixed(Duration::from_millis(1500))));

    let reply = s.gateway.search(&[("q", "nobody waits")]).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let gateway = &s.gateway;
    wait::until("the SearXNG call to end", || async move {
        gateway
            .metric(
                "searxng_gateway_searxng_requests_total",
                &[("result", "server_error")],
            )
            .await
            == 1.0
    })
    .await;
    assert_eq!(
        s.searxng_hits(),
        1,
        "its 500 is heard, but no retry follows an answer already sent"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_searxng_is_hedged_from_the_next_search_and_not_once_it_is_fast_again() {
    let s = SimStack::start(
        &[Brave],
        &[
            // A bar far from both speeds (slow 2 s, fast a few ms), so that a fast answer slowed down
            // by a loaded machine still reads as fast.
            ("SEARXNG_HEDGE_SECONDS", "1"),
            ("SEARXNG_SLOW_SECONDS", UNREACHED_TIMEOUT_SECONDS),
            ("FALLBACK_TIMEOUT_SECONDS", UNREACHED_TIMEOUT_SECONDS),
            ("CACHE_SIZE", "0"),
        ],
    )
    .await;
    s.searxng
        .set_script(Script::new().latency(Latency::Fixed(Duration::from_secs(2))));
    let brave = s.provider(Brave);

    let first = s.gateway.search(&[("q", "hedge 0")]).await;
    assert_eq!((first.status, first.outcome.as_str()), (200, "searxng_ok"));
    assert_eq!(brave.calls(), 0, "nothing said SearXNG would be slow");
    let second = s.gateway.search(&[("q", "hedge 1")]).await;
    assert_eq!(second.status, 200);
    assert_eq!(
        brave.calls(),
        1,
        "the fallback started alongside the slow SearXNG"
    );

    s.searxng.clear_scripts();
    // The hedged call still answers (its 2 s are heard): wait until the gateway has counted it —
    // its latency is recorded just before the attempt is counted — so that its slow answer cannot
    // land after the fast ones below have brought the mean down. (The simulator's own count of
    // calls in flight drops before the gateway has read the answer: under a loaded machine a
    // fast search could slip in between.)
    let gateway = &s.gateway;
    wait::until(
        "the gateway to have heard the hedged SearXNG call",
        || async move { successful_searxng_attempts(&gateway.metrics_text().await) >= 2.0 },
    )
    .await;
    // Fast answers bring the gateway's estimate of SearXNG's answer time down; searched until it
    // reads well under the 1 s bar. (Brave's call count cannot tell: a hedged search whose fast
    // SearXNG answer went out first drops the fallback call before the fake provider has heard it.)
    let mut searches = 0;
    loop {
        let reply = s
            .gateway
            .search(&[("q", &format!("fast {searches}"))])
            .await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        searches += 1;
        let status = s.gateway.status().await;
        let latency = status["searxng"]["instances"][0]["latency_seconds"]
            .as_f64()
            .unwrap_or_else(|| panic!("the instance's latency in /status: {status}"));
        if latency < 0.5 {
            break;
        }
        assert!(
            searches < 20,
            "SearXNG's answer time still {latency} s after {searches} fast answers"
        );
    }
    let calls = brave.calls();
    for n in 0..5 {
        let reply = s.gateway.search(&[("q", &format!("healthy {n}"))]).await;
        assert_eq!(reply.outcome, "searxng_ok");
    }
    assert_eq!(
        brave.calls(),
        calls,
        "no premium call while SearXNG is fast"
    );
}

/// SearXNG attempts that answered, over every series of `searxng_gateway_retry_attempts_total`.
fn successful_searxng_attempts(metrics: &str) -> f64 {
    metrics
        .lines()
        .filter(|line| {
            line.starts_with("searxng_gateway_retry_attempts_total{")
                && line.contains("outcome=\"success\"")
        })
        .filter_map(|line| line.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread")]
async fn ordered_policy_always_offers_the_first_provider_first() {
    let s = SimStack::start(
        &[Brave, Exa, Tavily],
        &[("PROVIDER_POLICY", "ordered"), ("CACHE_SIZE", "0")],
    )
    .await;
    s.searxng.set_mode(SearxngMode::Status(500));
    for n in 0..4 {
        let reply = s.gateway.search(&[("q", &format!("ordered {n}"))]).await;
        assert_eq!(reply.status, 200, "{}", reply.text);
    }
    assert_eq!(s.provider_calls(), [4, 0, 0], "Brave, every time");
}

#[tokio::test(flavor = "multi_thread")]
async fn when_every_upstream_fails_the_last_complete_answer_is_served_stale() {
    // Keyless: SearXNG is the only upstream. A short TTL so the answer expires during the test.
    let s = SimStack::start(
        &[],
        &[
            ("CACHE_TTL_SECONDS", "0.3"),
            ("CACHE_STALE_SECONDS", "600"),
            ("SEARXNG_FAIL_THRESHOLD", "100"),
        ],
    )
    .await;
    let fresh = s.gateway.search(&[("q", "stale if error")]).await;
    assert_eq!((fresh.status, fresh.cache.as_str()), (200, "miss"));
    s.searxng.set_mode(SearxngMode::Status(500));

    let stale = std::cell::RefCell::new(None);
    wait::until("the expired answer to be served stale", || async {
        let reply = s.gateway.search(&[("q", "stale if error")]).await;
        assert_eq!(reply.status, 200, "never a 502 while a stale answer exists");
        let served_stale = reply.cache == "stale";
        stale.replace(Some(reply));
        served_stale
    })
    .await;
    let stale = stale.into_inner().expect("a reply");
    assert_eq!(stale.outcome, "cache_hit");
    assert_eq!(urls(&stale.json), urls(&fresh.json), "the same answer");
    assert_eq!(
        s.gateway
            .metric("searxng_gateway_cache_stale_served_total", &[])
            .await,
        1.0
    );
    // Another key has nothing to fall back on: every upstream failed, 502.
    let other = s.gateway.search(&[("q", "never answered")]).await;
    assert_eq!(other.status, 502, "{}", other.text);
}

/// #45, on the simulator: every engine that answers fails with `HTTP connection error` and the one
/// left closed never runs for these searches (no paging: SearXNG skips it on page 2, silently).
/// Once the failing engines' breakers open, an `engines=` list of what is left made SearXNG search
/// nothing and answer an empty 200 — `searxng_ok`, cached. Now the search goes unrestricted and
/// every one, the first and the twentieth, is a 502 naming the engines and `connection_error`,
/// with the hint; nothing is cached; the breakers name the class; `/readyz` says not ready, and why.
#[tokio::test(flavor = "multi_thread")]
async fn when_every_engine_that_answers_fails_every_search_is_a_failure_naming_why_never_a_cached_empty_success(
) {
    let s = SimStack::start_with_keys(&[], false, &[("BREAKER_FAILURE_THRESHOLD", "2")]).await;
    for engine in ["alpha", "gamma"] {
        s.searxng.set_engine(
            engine,
            EngineBehaviour::Fails(EngineFailure::ConnectionError),
        );
    }
    s.searxng.set_engine_paging("beta", false);

    for i in 1..=20 {
        let reply = s
            .gateway
            .search(&[("q", "nowhere to be found"), ("pageno", "2")])
            .await;
        assert_eq!(reply.status, 502, "search {i}: {}", reply.text);
        assert_eq!(reply.outcome, "fallback_fail", "search {i}");
        assert_eq!(reply.cache, "miss", "search {i}: a failure is never cached");
        let engines = &reply.json["searxng"][0]["engines"];
        assert_eq!(
            engines["connection_error"],
            serde_json::json!(["alpha", "gamma"]),
            "search {i}: {}",
            reply.text
        );
        assert!(
            reply.json["hint"]
                .as_str()
                .is_some_and(|h| h.contains("SearXNG cannot reach the web from this host")),
            "search {i}: {}",
            reply.text
        );
    }
    let alpha = s.gateway.breaker("engine", "alpha").await;
    assert_eq!(
        (alpha["state"].as_str(), alpha["reason"].as_str()),
        (Some("open"), Some("connection_error")),
        "the breaker names the class, not `transient`: {alpha}"
    );
    let ready = s.gateway.get("/readyz").await;
    assert_eq!(ready.status, 503, "{}", ready.text);
    assert_eq!(ready.json["error"], "not_ready");
    assert_eq!(
        ready.json["searxng"][0]["engines"]["connection_error"],
        serde_json::json!(["alpha", "gamma"]),
        "{}",
        ready.text
    );
    assert!(ready.json["hint"]
        .as_str()
        .is_some_and(|h| h.contains("egress/DNS")));
}
