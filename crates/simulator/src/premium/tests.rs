//! The fake providers through their HTTP surface on a loopback port (real sockets, real time), and the
//! scripted latency through the handler directly, on tokio's paused clock.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::header::{CONTENT_TYPE, RETRY_AFTER};
use axum::http::{HeaderMap, HeaderValue, Method, Uri};
use serde_json::{json, Value};
use tokio::sync::watch;

use super::server::{handle, Shared};
use super::*;
use crate::script::{Latency, Spell};

async fn raw(
    sim: &SimulatedProvider,
    method: reqwest::Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> (u16, HeaderMap, String) {
    let mut req = reqwest::Client::new().request(method, format!("{}{path}", sim.base_url()));
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    if let Some(body) = body {
        req = req.json(&body);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    (status, headers, resp.text().await.unwrap())
}

#[tokio::test]
async fn a_wrong_path_is_404_and_a_wrong_method_is_405() {
    let sim = SimulatedProvider::start(Provider::Exa).await.unwrap();
    let auth = [("x-api-key", SIM_KEY)];
    let (status, ..) = raw(&sim, reqwest::Method::POST, "/v1/search", &auth, None).await;
    assert_eq!(status, 404);
    let (status, ..) = raw(&sim, reqwest::Method::GET, "/search", &auth, None).await;
    assert_eq!(status, 405);
    assert_eq!(sim.calls(), 2);
    assert_eq!(sim.requests()[0].path, "/v1/search");
}

#[tokio::test]
async fn brave_without_its_token_answers_422_subscription_token_invalid_with_rate_headers() {
    let sim = SimulatedProvider::start(Provider::Brave).await.unwrap();
    let (status, headers, body) = raw(
        &sim,
        reqwest::Method::GET,
        "/res/v1/web/search?q=x",
        &[("authorization", &format!("Bearer {SIM_KEY}"))],
        None,
    )
    .await;
    assert_eq!(status, 422);
    assert!(body.contains("SUBSCRIPTION_TOKEN_INVALID"));
    for name in ["limit", "policy", "remaining", "reset"] {
        assert!(
            headers.contains_key(format!("x-ratelimit-{name}").as_str()),
            "{name}"
        );
    }
}

#[tokio::test]
async fn each_provider_refuses_a_wrong_auth_header_name_its_own_way() {
    let cases = [
        (Provider::Exa, "/search", 401, "INVALID_API_KEY"),
        (Provider::Jina, "/", 401, "AuthenticationRequiredError"),
        (Provider::Tavily, "/search", 401, "Unauthorized"),
    ];
    for (kind, path, want_status, want_text) in cases {
        let sim = SimulatedProvider::start(kind).await.unwrap();
        let (status, _, body) = raw(
            &sim,
            reqwest::Method::POST,
            path,
            &[("x-subscription-token", SIM_KEY)],
            Some(json!({"query": "x", "q": "x"})),
        )
        .await;
        assert_eq!(status, want_status, "{kind:?}");
        assert!(body.contains(want_text), "{kind:?}: {body}");
    }
}

#[tokio::test]
async fn out_of_range_parameters_get_the_providers_validation_error() {
    let sim = SimulatedProvider::start(Provider::Brave).await.unwrap();
    let (status, _, body) = raw(
        &sim,
        reqwest::Method::GET,
        "/res/v1/web/search?q=x&count=50",
        &[("x-subscription-token", SIM_KEY)],
        None,
    )
    .await;
    assert_eq!(status, 422);
    assert!(body.contains("VALIDATION"));

    let sim = SimulatedProvider::start(Provider::Tavily).await.unwrap();
    let auth = format!("Bearer {SIM_KEY}");
    let (status, ..) = raw(
        &sim,
        reqwest::Method::POST,
        "/search",
        &[("authorization", &auth)],
        Some(json!({"query": "x", "search_depth": "deep"})),
    )
    .await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn jina_answers_plain_text_unless_asked_for_json() {
    let sim = SimulatedProvider::start(Provider::Jina).await.unwrap();
    let auth = format!("Bearer {SIM_KEY}");
    let (status, headers, body) = raw(
        &sim,
        reqwest::Method::POST,
        "/",
        &[("authorization", &auth)],
        Some(json!({"q": "x"})),
    )
    .await;
    assert_eq!(status, 200);
    assert!(headers[CONTENT_TYPE]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    assert!(body.starts_with("[1] Title:"));
}

#[tokio::test]
async fn jina_accepts_the_get_form_too() {
    let sim = SimulatedProvider::start(Provider::Jina).await.unwrap();
    let auth = format!("Bearer {SIM_KEY}");
    let (status, _, body) = raw(
        &sim,
        reqwest::Method::GET,
        "/?q=rust",
        &[("authorization", &auth), ("accept", "application/json")],
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert!(body.contains("\"data\""));
}

#[tokio::test]
async fn results_are_capped_at_the_requested_count() {
    let sim = SimulatedProvider::start(Provider::Tavily).await.unwrap();
    sim.set_behaviour(ProviderBehaviour::results(30, "https://a.example/"));
    let auth = format!("Bearer {SIM_KEY}");
    let (_, _, body) = raw(
        &sim,
        reqwest::Method::POST,
        "/search",
        &[("authorization", &auth)],
        Some(json!({"query": "x", "max_results": 3})),
    )
    .await;
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["results"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn a_hanging_request_is_released_when_the_fake_is_dropped() {
    let sim = SimulatedProvider::start(Provider::Exa).await.unwrap();
    sim.set_behaviour(ProviderBehaviour::Hang);
    let url = format!("{}/search", sim.base_url());
    let call = tokio::spawn(async move {
        reqwest::Client::new()
            .post(url)
            .header("x-api-key", SIM_KEY)
            .json(&json!({"query": "x"}))
            .send()
            .await
            .map(|r| r.status().as_u16())
    });
    while sim.calls() == 0 {
        tokio::task::yield_now().await;
    }
    drop(sim);
    let outcome = tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("released promptly")
        .unwrap();
    assert!(matches!(outcome, Ok(503) | Err(_)), "{outcome:?}");
}

async fn tavily_search(sim: &SimulatedProvider, key: &str) -> (u16, HeaderMap, String) {
    raw(
        sim,
        reqwest::Method::POST,
        "/search",
        &[("authorization", &format!("Bearer {key}"))],
        Some(json!({"query": "rust"})),
    )
    .await
}

#[tokio::test]
async fn a_rate_limit_burst_answers_429_with_retry_after_then_recovers() {
    let sim = SimulatedProvider::start(Provider::Tavily).await.unwrap();
    sim.set_script(
        Script::new().spell(Spell::failing(ProviderBehaviour::rate_limited(7)).for_requests(2)),
    );

    for _ in 0..2 {
        let (status, headers, body) = tavily_search(&sim, SIM_KEY).await;
        assert_eq!(status, 429);
        assert_eq!(headers[RETRY_AFTER], "7");
        assert!(body.contains("excessive requests"), "{body}");
    }
    let (status, _, body) = tavily_search(&sim, SIM_KEY).await;
    assert_eq!(status, 200);
    assert!(body.contains("\"results\""));
    assert_eq!(sim.calls(), 3);
}

#[tokio::test]
async fn a_brave_burst_reports_the_wait_in_its_per_second_window() {
    let sim = SimulatedProvider::start(Provider::Brave).await.unwrap();
    sim.set_script(Script::new().spell(Spell::failing(ProviderBehaviour::rate_limited(4))));

    let (status, headers, body) = raw(
        &sim,
        reqwest::Method::GET,
        "/res/v1/web/search?q=rust",
        &[("x-subscription-token", SIM_KEY)],
        None,
    )
    .await;

    assert_eq!(status, 429);
    assert!(body.contains("RATE_LIMITED"));
    assert_eq!(headers["x-ratelimit-reset"], "4, 1419704");
    assert_eq!(headers["x-ratelimit-remaining"], "0, 14321");
}

#[tokio::test]
async fn a_quota_runs_out_after_its_calls_and_auth_failures_do_not_use_it() {
    let sim = SimulatedProvider::start(Provider::Tavily).await.unwrap();
    sim.set_script(Script::new().quota(1, ProviderBehaviour::Error(SimError::Quota)));

    let (refused, ..) = tavily_search(&sim, "wrong-key").await;
    let (first, ..) = tavily_search(&sim, SIM_KEY).await;
    let (second, _, body) = tavily_search(&sim, SIM_KEY).await;

    assert_eq!((refused, first, second), (401, 200, 432));
    assert!(body.contains("usage limit"), "{body}");
    sim.clear_script();
    assert_eq!(tavily_search(&sim, SIM_KEY).await.0, 200);
}

#[tokio::test(start_paused = true)]
async fn scripted_latency_delays_every_answer() {
    let (_stop, released) = watch::channel(false);
    let shared = Arc::new(Shared::new(Provider::Tavily, released));
    let mut script = Script::new().latency(Latency::Fixed(Duration::from_millis(400)));
    script.arm();
    shared.lock().script = Some(script);
    let mut headers = HeaderMap::new();
    let bearer = format!("Bearer {SIM_KEY}");
    headers.insert("authorization", HeaderValue::from_str(&bearer).unwrap());
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    let started = tokio::time::Instant::now();

    let response = handle(
        State(shared),
        None,
        Method::POST,
        Uri::from_static("/search"),
        headers,
        Bytes::from_static(br#"{"query":"rust"}"#),
    )
    .await;

    assert_eq!(response.status(), 200);
    assert_eq!(started.elapsed(), Duration::from_millis(400));
}

#[tokio::test]
async fn an_error_rate_fails_its_share_of_requests() {
    let sim = SimulatedProvider::start(Provider::Tavily).await.unwrap();
    sim.set_script(Script::new().errors(0.5, ProviderBehaviour::Error(SimError::Server)));

    let mut failed = 0;
    for _ in 0..40 {
        match tavily_search(&sim, SIM_KEY).await.0 {
            500 => failed += 1,
            200 => {}
            other => panic!("unexpected {other}"),
        }
    }

    assert!((10..=30).contains(&failed), "{failed} of 40");
}

#[test]
fn recorded_requests_answer_header_query_and_json_lookups() {
    let req = RecordedRequest {
        method: "POST".into(),
        path: "/".into(),
        query: vec![("q".into(), "a b".into())],
        headers: vec![("x-api-key".into(), "k".into())],
        body: br#"{"q":"a"}"#.to_vec(),
    };
    assert_eq!(req.header("X-API-Key"), Some("k"));
    assert_eq!(req.query_param("q"), Some("a b"));
    assert_eq!(req.json().unwrap()["q"], "a");
}

#[tokio::test]
async fn a_held_connection_is_timed_on_the_fakes_clock_until_the_client_closes_it() {
    use tokio::io::AsyncWriteExt as _;

    let sim = SimulatedProvider::start(Provider::Tavily).await.unwrap();
    sim.set_behaviour(ProviderBehaviour::Fault(
        crate::fault::Fault::AcceptThenHang,
    ));
    assert_eq!(sim.connection_lifetimes(), crate::LifetimeStats::default());

    let mut stream = tokio::net::TcpStream::connect(sim.base_url().trim_start_matches("http://"))
        .await
        .unwrap();
    stream
        .write_all(b"POST /search HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}")
        .await
        .unwrap();
    let held = Duration::from_millis(200);
    tokio::time::sleep(held).await;
    drop(stream);

    let mut seen = sim.connection_lifetimes();
    for _ in 0..3000 {
        if seen.closed > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        seen = sim.connection_lifetimes();
    }
    assert_eq!(seen.closed, 1, "the close was seen: {seen:?}");
    assert!(
        seen.longest >= held,
        "held at least as long as the client kept it: {seen:?}"
    );
    assert_eq!(sim.calls(), 0, "a held connection is never answered");
}
