//! The gateway in front of a REAL SearXNG whose engines (`alpha`, `beta` in general, `gamma` in
//! news) call the scriptable loopback upstream. What the upstream received proves what the gateway
//! sent; the metrics prove what it understood.

use crate::support::external::needs;
use std::time::Duration;

use serde_json::Value;

use crate::support::engine_upstream::{EngineBehaviour, EngineUpstream, DEFAULT_RESULTS};
use crate::support::gateway::TestGateway;
use crate::support::searxng::{SearxngInstance, SearxngOptions};
use crate::support::wait;

struct Stack {
    upstream: EngineUpstream,
    searxng: SearxngInstance,
    gateway: TestGateway,
}

async fn stack(stock_suspension: bool, vars: &[(&str, &str)]) -> Stack {
    let upstream = EngineUpstream::start().await;
    let mut opts = SearxngOptions::new(upstream.port());
    opts.stock_suspension = stock_suspension;
    // Room for a deliberately slow engine (a probe held out on purpose) on a loaded machine.
    opts.engine_timeout = Duration::from_secs(5);
    let searxng = SearxngInstance::start(opts).await;
    let base = searxng.base_url();
    let mut env: Vec<(&str, &str)> = vec![
        ("SEARXNG_BACKEND_URL", base.as_str()),
        ("FALLBACK_TIMEOUT_SECONDS", "10"),
        ("SEARXNG_TIMEOUT_SECONDS", "8"),
    ];
    env.extend_from_slice(vars);
    let gateway = TestGateway::start(&env).await;
    Stack {
        upstream,
        searxng,
        gateway,
    }
}

fn keys(value: &Value) -> Vec<String> {
    let mut keys: Vec<String> = value
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    keys.sort();
    keys
}

async fn direct(searxng: &SearxngInstance, params: &[(&str, &str)]) -> Value {
    reqwest::Client::new()
        .get(format!("{}/search", searxng.base_url()))
        .query(params)
        .query(&[("format", "json"), ("locale", "en")])
        .send()
        .await
        .expect("SearXNG answers")
        .json()
        .await
        .expect("SearXNG JSON")
}

#[tokio::test(flavor = "multi_thread")]
async fn answer_keeps_searxngs_full_shape() {
    needs!(Searxng);
    let s = stack(false, &[]).await;
    let reply = s
        .gateway
        .search(&[("q", "shape check"), ("format", "json")])
        .await;
    let reference = direct(&s.searxng, &[("q", "shape check again")]).await;

    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.outcome, "searxng_ok");
    assert_eq!(
        keys(&reply.json),
        keys(&reference),
        "every top-level key SearXNG sends is kept"
    );
    let results = reply.json["results"].as_array().expect("results");
    assert_eq!(results.len(), 2 * DEFAULT_RESULTS);
    let reference_result = &reference["results"][0];
    for result in results {
        for key in keys(reference_result) {
            assert!(
                result.get(&key).is_some(),
                "result field {key} kept: {result}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn forwarded_parameters_and_the_original_case_reach_the_engines() {
    needs!(Searxng);
    let s = stack(false, &[]).await;
    let reply = s
        .gateway
        .search(&[
            ("q", "Rust Async"),
            ("pageno", "2"),
            ("time_range", "week"),
            ("language", "de-DE"),
            ("safesearch", "2"),
            ("categories", "general"),
        ])
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);

    let seen = s.upstream.requests("alpha");
    let last = seen.last().expect("alpha was called");
    assert_eq!(
        last.get("q").map(String::as_str),
        Some("Rust Async"),
        "case kept"
    );
    assert_eq!(last.get("pageno").map(String::as_str), Some("2"));
    assert_eq!(last.get("time_range").map(String::as_str), Some("week"));
    assert_eq!(last.get("lang").map(String::as_str), Some("de"));
    assert_eq!(last.get("safesearch").map(String::as_str), Some("2"));
    assert_eq!(
        s.upstream.hits("gamma"),
        0,
        "categories=general does not reach the news engine"
    );

    s.gateway
        .search(&[("q", "Rust Async"), ("categories", "news")])
        .await;
    assert_eq!(s.upstream.hits("gamma"), 1, "categories=news reaches it");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_engine_is_counted_with_its_reason_class() {
    needs!(Searxng);
    let s = stack(false, &[]).await;
    s.upstream.set("beta", EngineBehaviour::Status(429));
    s.upstream.set("alpha", EngineBehaviour::Ok { results: 3 });

    let reply = s.gateway.search(&[("q", "reason check")]).await;

    assert_eq!(reply.status, 200);
    assert_eq!(reply.json["unresponsive_engines"][0][0], "beta");
    let g = &s.gateway;
    assert_eq!(
        g.metric(
            "searxng_gateway_engine_unresponsive_total",
            &[("engine", "beta"), ("reason", "too_many_requests")]
        )
        .await,
        1.0
    );
    assert_eq!(
        g.metric(
            "searxng_gateway_engine_results_total",
            &[("engine", "alpha")]
        )
        .await,
        3.0
    );
    assert_eq!(
        g.metric("searxng_gateway_engine_status", &[("engine", "beta")])
            .await,
        0.0
    );
    assert_eq!(
        g.metric("searxng_gateway_engine_status", &[("engine", "alpha")])
            .await,
        1.0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_engine_failing_is_degraded_not_nothing_found() {
    needs!(Searxng);
    let s = stack(false, &[("BREAKER_FAILURE_THRESHOLD", "100")]).await;
    s.upstream.set("alpha", EngineBehaviour::Status(500));
    s.upstream.set("beta", EngineBehaviour::Status(500));

    let degraded = s.gateway.search(&[("q", "all down")]).await;
    assert_eq!(degraded.status, 502, "{}", degraded.text);
    assert_eq!(degraded.outcome, "fallback_fail");
    assert_eq!(degraded.json["upstreams"][0]["name"], "searxng");
    assert_eq!(degraded.json["upstreams"][0]["error_class"], "degraded");
    let again = s.gateway.search(&[("q", "all down")]).await;
    assert_eq!(again.cache, "miss", "a failure is never cached");

    s.upstream.set("alpha", EngineBehaviour::Empty);
    s.upstream.set("beta", EngineBehaviour::Empty);
    let empty = s.gateway.search(&[("q", "nothing here")]).await;
    assert_eq!(empty.status, 200, "a healthy nothing-found is a 200");
    assert_eq!(empty.json["results"], Value::Array(vec![]));
    assert_eq!(empty.outcome, "searxng_ok");
}

/// #45 on a real SearXNG that cannot reach the web: its engines point at a loopback port nothing
/// listens on, so SearXNG reports each one `HTTP connection error`. `beta` has no paging, so on
/// page 2 SearXNG skips it silently: once `alpha`'s breaker opened, an `engines=beta` list made
/// SearXNG search nothing and answer an empty 200 — cached as `searxng_ok`. Now the first and the
/// twentieth search are both a 502 naming the engines and `connection_error`, with the hint;
/// nothing is cached; `/readyz` says not ready, and why (SearXNG's `/config` still answers).
#[tokio::test(flavor = "multi_thread")]
async fn a_searxng_that_cannot_reach_the_web_gets_failures_naming_connection_error_and_not_ready() {
    needs!(Searxng);
    let mut opts = SearxngOptions::new(crate::support::ports::unused_loopback_port());
    opts.engines_without_paging_or_time_range = vec!["beta"];
    let searxng = SearxngInstance::start(opts).await;
    let base = searxng.base_url();
    let gateway = TestGateway::start(&[
        ("SEARXNG_BACKEND_URL", base.as_str()),
        ("BREAKER_FAILURE_THRESHOLD", "2"),
        ("FALLBACK_TIMEOUT_SECONDS", "10"),
        ("SEARXNG_TIMEOUT_SECONDS", "8"),
    ])
    .await;
    gateway.wait_for_catalog().await;

    for i in 1..=20 {
        let mut params = vec![("q", "is anything out there")];
        if i > 1 {
            params.push(("pageno", "2"));
        }
        let reply = gateway.search(&params).await;
        assert_eq!(reply.status, 502, "search {i}: {}", reply.text);
        assert_eq!(reply.outcome, "fallback_fail", "search {i}");
        assert_eq!(reply.cache, "miss", "search {i}: a failure is never cached");
        let failing = &reply.json["searxng"][0]["engines"]["connection_error"];
        assert!(
            failing
                .as_array()
                .is_some_and(|engines| engines.iter().any(|e| e == "alpha")),
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
    let alpha = gateway.breaker("engine", "alpha").await;
    assert_eq!(alpha["reason"], "connection_error", "{alpha}");
    let ready = gateway.get("/readyz").await;
    assert_eq!(ready.status, 503, "{}", ready.text);
    assert_eq!(ready.json["error"], "not_ready");
    assert!(
        ready.json["searxng"][0]["engines"]["connection_error"]
            .as_array()
            .is_some_and(|engines| !engines.is_empty()),
        "{}",
        ready.text
    );
    assert!(
        ready.json["hint"]
            .as_str()
            .is_some_and(|h| h.contains("egress/DNS")),
        "{}",
        ready.text
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_open_engine_is_excluded_until_the_gateways_own_probe_closes_it() {
    needs!(Searxng);
    // Open long enough for three searches through the real SearXNG on a loaded machine.
    let s = stack(false, &[("BREAKER_OPEN_SECONDS", "3"), ("CACHE_SIZE", "0")]).await;
    s.gateway.wait_for_catalog().await;
    s.upstream.set("beta", EngineBehaviour::Status(429));

    s.gateway.search(&[("q", "trip beta")]).await;
    assert_eq!(s.upstream.hits("beta"), 1);
    let alpha_before = s.upstream.hits("alpha");
    for i in 0..3 {
        let reply = s
            .gateway
            .search(&[("q", &format!("beta is open {i}"))])
            .await;
        assert_eq!(reply.status, 200);
    }
    assert_eq!(
        s.upstream.hits("beta"),
        1,
        "no request reached beta while open"
    );
    assert_eq!(
        s.gateway.breaker("engine", "beta").await["state"],
        "open",
        "the three searches came while beta's breaker was open"
    );
    assert_eq!(
        s.upstream.hits("alpha"),
        alpha_before + 3,
        "alpha still searched"
    );
    assert_eq!(
        s.gateway
            .metric(
                "searxng_gateway_circuit_breaker_rejections_total",
                &[("engine", "beta"), ("kind", "engine")]
            )
            .await,
        3.0,
        "each of the three searches left beta out"
    );

    // Healthy again before the open period (3 s + at most 10 % jitter) ends: the gateway's own
    // probe (engines=beta, through SearXNG) closes it without any client search.
    s.upstream.set("beta", EngineBehaviour::Ok { results: 2 });
    let g = &s.gateway;
    wait::until("the gateway's probe to close beta", || async {
        g.breaker("engine", "beta").await["state"] == "closed"
    })
    .await;
    assert_eq!(s.upstream.hits("beta"), 2, "exactly one probe reached beta");
    assert_eq!(
        g.metric(
            "searxng_gateway_engine_probes_total",
            &[("engine", "beta"), ("outcome", "recovered")]
        )
        .await,
        1.0
    );
    assert_eq!(
        g.metric(
            "searxng_gateway_circuit_breaker_recovery_total",
            &[("engine", "beta"), ("kind", "engine")]
        )
        .await,
        1.0
    );
    s.gateway.search(&[("q", "after recovery")]).await;
    assert_eq!(
        s.upstream.hits("beta"),
        3,
        "a closed beta is searched again"
    );
    assert_eq!(
        g.metric(
            "searxng_gateway_circuit_breaker_trips_total",
            &[
                ("engine", "beta"),
                ("kind", "engine"),
                ("reason", "rate_limited")
            ]
        )
        .await,
        1.0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn suspended_entries_under_stock_windows_count_as_failures_never_success() {
    needs!(Searxng);
    let s = stack(true, &[("BREAKER_OPEN_SECONDS", "1"), ("CACHE_SIZE", "0")]).await;
    s.gateway.wait_for_catalog().await;
    s.upstream.set("beta", EngineBehaviour::Status(429));
    s.gateway.search(&[("q", "suspend beta")]).await;
    assert_eq!(s.upstream.hits("beta"), 1);

    // Our breaker's open period ends long before SearXNG's 180 s suspension: the gateway's probe
    // comes back as "Suspended: too many requests" without SearXNG calling beta.
    s.upstream.set("beta", EngineBehaviour::Ok { results: 2 });
    let g = &s.gateway;
    wait::until("the gateway to probe the suspended beta", || async {
        g.metric(
            "searxng_gateway_engine_probes_total",
            &[("engine", "beta"), ("outcome", "blocked")],
        )
        .await
            >= 1.0
    })
    .await;
    assert_eq!(
        s.upstream.hits("beta"),
        1,
        "SearXNG did not call the suspended engine"
    );
    assert_eq!(
        g.metric(
            "searxng_gateway_circuit_breaker_recovery_total",
            &[("engine", "beta"), ("kind", "engine")]
        )
        .await,
        0.0,
        "a suspended engine never counts as a recovery"
    );
    assert_eq!(
        g.metric(
            "searxng_gateway_circuit_breaker_trips_total",
            &[
                ("engine", "beta"),
                ("kind", "engine"),
                ("reason", "rate_limited")
            ]
        )
        .await,
        2.0,
        "the suspended probe reopened the breaker"
    );
    assert_eq!(g.breaker("engine", "beta").await["state"], "open");
}

fn engine_breaker(status: &Value, name: &str) -> Option<Value> {
    status["breakers"].as_array().and_then(|breakers| {
        breakers
            .iter()
            .find(|b| b["namespace"] == "engine" && b["name"] == name)
            .cloned()
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn an_engine_searxng_already_saw_blocked_starts_with_its_breaker_open() {
    needs!(Searxng);
    let upstream = EngineUpstream::start().await;
    let searxng = SearxngInstance::start(SearxngOptions::new(upstream.port())).await;
    upstream.set("beta", EngineBehaviour::Status(429));
    // Someone else's search, before the gateway starts: SearXNG records beta's 429.
    let before = direct(&searxng, &[("q", "before the gateway")]).await;
    assert_eq!(
        before["unresponsive_engines"],
        serde_json::json!([["beta", "too many requests"]]),
        "{before}"
    );
    let beta_hits = upstream.hits("beta");
    let base = searxng.base_url();
    let gateway = TestGateway::start(&[("SEARXNG_BACKEND_URL", base.as_str())]).await;

    wait::until(
        "beta's breaker to open from SearXNG's /stats/errors",
        || {
            let gateway = &gateway;
            async move {
                engine_breaker(&gateway.status().await, "beta")
                    .is_some_and(|b| b["state"] == "open" && b["reason"] == "rate_limited")
            }
        },
    )
    .await;
    let status = gateway.status().await;
    assert_eq!(
        engine_breaker(&status, "alpha"),
        None,
        "a healthy engine is left alone: {status}"
    );
    let mut searches = 0.0;
    for outcome in ["cache_hit", "searxng_ok", "premium_ok", "fallback_fail"] {
        searches += gateway
            .metric("searxng_gateway_requests_total", &[("outcome", outcome)])
            .await;
    }
    assert_eq!(searches, 0.0, "before any user request");

    // The first user request already leaves beta out.
    let reply = gateway.search(&[("q", "first user search")]).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(upstream.hits("beta"), beta_hits, "beta was not called");
}
