//! The gateway core against the simulated SearXNG: validation and error bodies, formats, the
//! cache and coalescing, retries, the body cap, redirects, the cooldown, readiness and shutdown.

use std::time::Duration;

use simulator::searxng::SearxngMode;

use crate::support::gateway::TestGateway;
use crate::support::ports::refusing_port;
use crate::support::stack::SimStack;
use crate::support::wait;

async fn stack(vars: &[(&str, &str)]) -> SimStack {
    SimStack::start(&[], vars).await
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_parameters_get_a_400_naming_the_problem() {
    let s = stack(&[("MAX_QUERY_BYTES", "16")]).await;
    let long = "x".repeat(17);
    type Case<'a> = (Vec<(&'a str, &'a str)>, &'a str, &'a str);
    let cases: Vec<Case> = vec![
        (vec![], "missing_query", "q"),
        (vec![("q", "   ")], "missing_query", "q"),
        (vec![("q", long.as_str())], "query_too_long", "16 bytes"),
        (
            vec![("q", "a"), ("format", "html")],
            "unsupported_format",
            "json, csv, rss",
        ),
        (
            vec![("q", "a"), ("pageno", "0")],
            "invalid_parameter",
            "pageno",
        ),
        (
            vec![("q", "a"), ("pageno", "two")],
            "invalid_parameter",
            "pageno",
        ),
        (
            vec![("q", "a"), ("safesearch", "3")],
            "invalid_parameter",
            "safesearch",
        ),
        (
            vec![("q", "a"), ("time_range", "decade")],
            "invalid_parameter",
            "time_range",
        ),
        (
            vec![("q", "a"), ("language", "en;rm -rf")],
            "invalid_parameter",
            "language",
        ),
        (vec![("q", "a"), ("q", "b")], "bad_request", "repeat"),
    ];
    for (params, code, mentions) in cases {
        let reply = s.gateway.search(&params).await;
        assert_eq!(reply.status, 400, "{params:?}");
        assert_eq!(reply.json["error"], code, "{params:?}");
        let message = reply.json["message"].as_str().unwrap_or("");
        assert!(message.contains(mentions), "{params:?}: {message}");
    }
    assert_eq!(s.searxng_hits(), 0, "nothing invalid reached SearXNG");
}

#[tokio::test(flavor = "multi_thread")]
async fn post_with_a_form_body_is_a_search_too() {
    let s = stack(&[]).await;
    let response = s
        .gateway
        .http
        .post(format!("{}/search", s.gateway.url))
        .form(&[("q", "Posted Query"), ("pageno", "2")])
        .send()
        .await
        .expect("answer");
    let reply = TestGateway::reply(response).await;
    assert_eq!(reply.status, 200);
    let sent = s.searxng.last_request().expect("SearXNG called");
    assert!(sent.contains(&("q".into(), "Posted Query".into())));
    assert!(sent.contains(&("pageno".into(), "2".into())));

    let json_body = s
        .gateway
        .http
        .post(format!("{}/search", s.gateway.url))
        .header("content-type", "application/json")
        .body(r#"{"q":"x"}"#)
        .send()
        .await
        .expect("answer");
    assert_eq!(json_body.status(), 400);
}

#[tokio::test(flavor = "multi_thread")]
async fn searxng_receives_locale_en_and_every_forwarded_parameter() {
    let s = stack(&[]).await;
    s.gateway
        .search(&[
            ("q", "Case Kept"),
            ("pageno", "3"),
            ("categories", "general"),
            ("engines", "alpha,beta"),
            ("language", "fr"),
            ("time_range", "month"),
            ("safesearch", "0"),
        ])
        .await;
    let sent = s.searxng.last_request().expect("SearXNG called");
    for pair in [
        ("q", "Case Kept"),
        ("format", "json"),
        ("locale", "en"),
        ("pageno", "3"),
        ("categories", "general"),
        ("engines", "alpha,beta"),
        ("language", "fr"),
        ("time_range", "month"),
        ("safesearch", "0"),
    ] {
        assert!(
            sent.contains(&(pair.0.into(), pair.1.into())),
            "{pair:?} in {sent:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn csv_and_rss_are_rendered_from_the_merged_answer() {
    let s = stack(&[]).await;
    let csv = s
        .gateway
        .search(&[("q", "formats"), ("format", "csv")])
        .await;
    assert_eq!(csv.status, 200);
    assert!(csv.content_type.starts_with("text/csv"));
    assert!(csv
        .text
        .starts_with("title,url,content,host,engine,score,type"));
    assert!(csv.text.lines().count() > 1);

    let rss = s
        .gateway
        .search(&[("q", "formats"), ("format", "rss")])
        .await;
    assert!(rss.content_type.starts_with("application/rss+xml"));
    assert!(rss.text.contains("<rss version=\"2.0\">") && rss.text.contains("<item>"));
    assert_eq!(rss.cache, "hit", "csv and rss share the cached answer");
    assert_eq!(s.searxng_hits(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_cache_answers_repeats_and_keys_on_every_parameter() {
    let s = stack(&[]).await;
    let first = s.gateway.search(&[("q", "Rust  Async")]).await;
    let again = s.gateway.search(&[("q", "rust async")]).await;
    let page2 = s
        .gateway
        .search(&[("q", "rust async"), ("pageno", "2")])
        .await;

    assert_eq!(
        (first.cache.as_str(), first.outcome.as_str()),
        ("miss", "searxng_ok")
    );
    assert_eq!(
        (again.cache.as_str(), again.outcome.as_str()),
        ("hit", "cache_hit")
    );
    assert_eq!(page2.cache, "miss", "page 2 is not page 1");
    assert_eq!(s.searxng_hits(), 2);
    assert_eq!(first.json, again.json);
    assert_eq!(
        s.gateway.metric("searxng_gateway_cache_size", &[]).await,
        2.0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn identical_misses_in_flight_share_one_upstream_request() {
    let s = stack(&[]).await;
    // Long enough that every follower joins while the leader's SearXNG call is out.
    s.searxng
        .set_mode(SearxngMode::Delay(Duration::from_secs(2)));
    let reached = s.searxng.hits() + 1;
    let leader = s.gateway.spawn_search(&[("q", "thundering herd")]);
    wait::guarded(
        "the leader's SearXNG call",
        s.searxng.wait_for_hits(reached),
    )
    .await;

    let followers = (0..19).map(|_| s.gateway.spawn_search(&[("q", "thundering herd")]));
    let followers: Vec<_> = followers.collect();
    let g = &s.gateway;
    wait::until("19 followers to join the leader's fan-out", || async move {
        g.metric("searxng_gateway_cache_coalesced_total", &[]).await >= 19.0
    })
    .await;
    assert_eq!(
        s.searxng.in_flight(),
        1,
        "every follower joined while the one SearXNG call was in flight"
    );

    let mut replies = vec![leader.await.expect("leader")];
    for follower in followers {
        replies.push(follower.await.expect("follower"));
    }
    for reply in &replies {
        assert_eq!((reply.status, reply.cache.as_str()), (200, "miss"));
        assert_eq!(reply.json, replies[0].json, "one shared answer");
    }
    assert_eq!(s.searxng_hits(), 1);
    assert_eq!(
        g.metric("searxng_gateway_cache_coalesced_total", &[]).await,
        19.0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn transient_failures_are_retried_and_4xx_are_not() {
    let s = stack(&[("CACHE_SIZE", "0")]).await;
    s.searxng.set_mode(SearxngMode::FailTimes {
        count: 2,
        status: 502,
    });
    let reply = s.gateway.search(&[("q", "flaky")]).await;
    assert_eq!(reply.status, 200);
    assert_eq!(s.searxng_hits(), 3);
    let g = &s.gateway;
    let attempts = |attempt, outcome, class| async move {
        g.metric(
            "searxng_gateway_retry_attempts_total",
            &[
                ("attempt", attempt),
                ("outcome", outcome),
                ("error_class", class),
            ],
        )
        .await
    };
    assert_eq!(attempts("1", "failure", "server_error").await, 1.0);
    assert_eq!(attempts("2", "failure", "server_error").await, 1.0);
    assert_eq!(attempts("3", "success", "none").await, 1.0);

    s.searxng.set_mode(SearxngMode::Status(429));
    let limited = s.gateway.search(&[("q", "limited")]).await;
    assert_eq!(limited.status, 502);
    assert_eq!(limited.json["upstreams"][0]["error_class"], "rate_limited");
    assert_eq!(s.searxng_hits(), 4, "a 4xx is not retried");

    s.searxng.set_mode(SearxngMode::Status(500));
    s.gateway.search(&[("q", "down")]).await;
    assert_eq!(s.searxng_hits(), 7, "three attempts at most");
    assert_eq!(
        g.metric(
            "searxng_gateway_retry_exhausted_total",
            &[("error_class", "server_error")]
        )
        .await,
        1.0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn upstream_failures_are_classified_never_echoed() {
    let s = stack(&[("CACHE_SIZE", "0"), ("SEARXNG_FAIL_THRESHOLD", "100")]).await;
    for (mode, class, attempts) in [
        (SearxngMode::Huge, "too_large", 1),
        (SearxngMode::Garbage, "malformed", 1),
        (SearxngMode::JsonDisabled, "blocked", 1),
        (SearxngMode::Truncated, "truncated", 3),
    ] {
        let before = s.searxng_hits();
        s.searxng.set_mode(mode);
        let reply = s.gateway.search(&[("q", class)]).await;
        assert_eq!(reply.status, 502, "{class}");
        assert_eq!(reply.json["upstreams"][0]["error_class"], class);
        assert_eq!(s.searxng_hits() - before, attempts, "{class}");
        assert!(!reply.text.contains("<html") && !reply.text.contains("<!DOCTYPE"));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_external_bang_redirect_is_reported_not_followed() {
    let s = stack(&[]).await;
    let reply = s.gateway.search(&[("q", "!!g rust")]).await;
    assert_eq!(reply.status, 502);
    assert_eq!(reply.json["upstreams"][0]["error_class"], "redirect");
    assert_eq!(
        s.searxng_hits(),
        1,
        "one request, not retried, not followed"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn searxng_timeouts_are_counted_in_their_own_counter() {
    let s = stack(&[
        ("SEARXNG_TIMEOUT_SECONDS", "0.2"),
        ("FALLBACK_TIMEOUT_SECONDS", wait::UNREACHED_TIMEOUT_SECONDS),
    ])
    .await;
    s.searxng.set_mode(SearxngMode::Hang);
    let reply = s.gateway.search(&[("q", "slow")]).await;
    assert_eq!(reply.status, 502);
    assert_eq!(reply.json["upstreams"][0]["error_class"], "timeout");
    assert_eq!(s.searxng_hits(), 3, "each timed-out attempt is retried");
    assert_eq!(
        s.gateway
            .metric("searxng_gateway_searxng_timeouts_total", &[])
            .await,
        3.0
    );
    assert_eq!(
        s.gateway
            .metric(
                "searxng_gateway_requests_total",
                &[("outcome", "fallback_fail")]
            )
            .await,
        1.0,
        "a timeout is not an extra outcome"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_cooldown_skips_searxng_then_lets_exactly_one_probe_through() {
    let s = stack(&[
        ("SEARXNG_FAIL_THRESHOLD", "2"),
        ("SEARXNG_FAIL_COOLDOWN_SECONDS", "1"),
        ("CACHE_SIZE", "0"),
    ])
    .await;
    s.searxng.set_mode(SearxngMode::Status(400));
    s.gateway.search(&[("q", "our fault")]).await;
    s.searxng.set_mode(SearxngMode::Status(503));
    s.gateway.search(&[("q", "down 1")]).await;
    s.gateway.search(&[("q", "down 2")]).await;
    let hits = s.searxng_hits();

    let skipped = s.gateway.search(&[("q", "cooling")]).await;
    assert_eq!(skipped.json["upstreams"][0]["error_class"], "cooldown");
    assert_eq!(s.searxng_hits(), hits, "SearXNG skipped while cooling down");
    assert_eq!(
        s.gateway
            .metric("searxng_gateway_searxng_cooldown_active", &[])
            .await,
        1.0
    );

    let g = &s.gateway;
    wait::until("the cooldown to end", || async move {
        g.status().await["searxng"]["cooldown"]["state"] == "half_open"
    })
    .await;
    // The probe stays out long enough for the other requests to be decided meanwhile.
    s.searxng
        .set_mode(SearxngMode::Delay(Duration::from_secs(2)));
    let reached = s.searxng.hits() + 1;
    let probe = g.spawn_search(&[("q", "probe")]);
    wait::guarded(
        "the probe to reach SearXNG",
        s.searxng.wait_for_hits(reached),
    )
    .await;
    let others =
        (0..4).map(|i| async move { g.search(&[("q", &format!("while probing {i}"))]).await });
    let others = futures::future::join_all(others).await;
    assert_eq!(
        s.searxng.in_flight(),
        1,
        "the others were decided while the probe was out"
    );
    for reply in &others {
        assert_eq!(reply.status, 502);
        assert_eq!(reply.json["upstreams"][0]["error_class"], "cooldown");
    }
    assert_eq!(probe.await.expect("probe").status, 200);
    assert_eq!(s.searxng_hits(), hits + 1, "exactly one probe");

    let after = s.gateway.search(&[("q", "recovered")]).await;
    assert_eq!(after.status, 200);
    assert_eq!(
        s.gateway
            .metric("searxng_gateway_searxng_cooldown_active", &[])
            .await,
        0.0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_hanging_up_is_not_a_searxng_failure() {
    let s = stack(&[("SEARXNG_FAIL_THRESHOLD", "1"), ("CACHE_SIZE", "0")]).await;
    s.searxng.set_mode(SearxngMode::Hang);
    let reached = s.searxng.hits() + 1;
    let impatient = s.gateway.spawn_search(&[("q", "bye")]);
    wait::guarded(
        "the search to reach SearXNG",
        s.searxng.wait_for_hits(reached),
    )
    .await;
    impatient.abort();
    let searxng = &s.searxng;
    wait::until("the gateway to cancel its SearXNG call", || async move {
        searxng.in_flight() == 0
    })
    .await;

    s.searxng.set_mode(SearxngMode::Normal);
    let next = s.gateway.search(&[("q", "still trusted")]).await;
    assert_eq!(next.status, 200, "SearXNG was not put in cooldown");
    let cooldown = &s.gateway.status().await["searxng"]["cooldown"];
    assert_eq!(cooldown["consecutive_failures"], 0);
    assert_eq!(cooldown["trips"], 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn healthz_readyz_and_the_metrics_path_answer_and_other_paths_are_json_404s() {
    let s = stack(&[("METRICS_PATH", "/prom")]).await;
    assert_eq!(s.gateway.get("/healthz").await.status, 200);
    s.gateway.wait_for_catalog().await;
    assert_eq!(s.gateway.get("/readyz").await.status, 200);
    assert!(s
        .gateway
        .get("/prom")
        .await
        .text
        .contains("searxng_gateway_requests_total"));
    let missing = s.gateway.get("/metrics").await;
    assert_eq!(
        (missing.status, missing.json["error"].as_str()),
        (404, Some("not_found"))
    );

    let (_held, port) = refusing_port();
    let closed = format!("http://127.0.0.1:{port}");
    let nowhere = TestGateway::start(&[("SEARXNG_BACKEND_URL", &closed)]).await;
    let not_ready = nowhere.get("/readyz").await;
    assert_eq!(
        (not_ready.status, not_ready.json["error"].as_str()),
        (503, Some("not_ready"))
    );
    assert_eq!(nowhere.get("/healthz").await.status, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn shutdown_lets_in_flight_requests_finish() {
    let s = stack(&[]).await;
    s.searxng
        .set_mode(SearxngMode::Delay(Duration::from_secs(2)));
    let reached = s.searxng.hits() + 1;
    let in_flight = s.gateway.spawn_search(&[("q", "in flight")]);
    wait::guarded(
        "the search to reach SearXNG",
        s.searxng.wait_for_hits(reached),
    )
    .await;
    let SimStack {
        mut gateway,
        searxng,
        ..
    } = s;

    gateway.signal_stop();
    assert_eq!(
        searxng.in_flight(),
        1,
        "the search was still in flight when the shutdown began"
    );
    gateway.stop().await;

    let reply = in_flight.await.expect("the search task");
    assert_eq!(reply.status, 200, "answered before the shutdown completed");
}
