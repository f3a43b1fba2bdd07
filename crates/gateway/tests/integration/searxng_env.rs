//! The test environment itself, end to end: a real SearXNG whose engines call the fake engine upstream.
//!
//! These tests pin down the SearXNG behaviour that the gateway's tests build on (the messages in
//! `unresponsive_engines`, which parameters reach an engine, suspension), so that a SearXNG upgrade that changes
//! any of it fails here first, with a clear name, instead of somewhere inside a gateway test.

use crate::support::external::needs;
use std::time::Duration;

use serde_json::Value;

use crate::support::engine_upstream::{EngineBehaviour, EngineUpstream, DEFAULT_RESULTS};
use crate::support::searxng::{
    SearxngInstance, SearxngOptions, ENGINE_TIMEOUT, GENERAL_ENGINES, NEWS_ENGINES,
};

#[tokio::test(flavor = "multi_thread")]
async fn an_upstream_answering_429_is_reported_as_too_many_requests_after_one_hit() {
    needs!(Searxng);
    let upstream = EngineUpstream::start().await;
    let searxng = SearxngInstance::start(SearxngOptions::new(upstream.port())).await;
    upstream.set("beta", EngineBehaviour::Status(429));

    let body = search(&searxng, &[("q", "rust")]).await;

    assert_eq!(
        unresponsive(&body),
        [("beta".to_owned(), "too many requests".to_owned())]
    );
    assert_eq!(urls_from(&body, "alpha").len(), DEFAULT_RESULTS);
    assert!(urls_from(&body, "beta").is_empty());
    assert_eq!(upstream.hits("beta"), 1);
    assert_eq!(upstream.hits("alpha"), 1);
    assert_eq!(
        upstream.hits("gamma"),
        0,
        "gamma is not in category general"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn page_time_range_language_and_safesearch_reach_the_engine_upstream() {
    needs!(Searxng);
    let upstream = EngineUpstream::start().await;
    let searxng = SearxngInstance::start(SearxngOptions::new(upstream.port())).await;

    search(
        &searxng,
        &[
            ("q", "rust async"),
            ("engines", "alpha"),
            ("pageno", "2"),
            ("time_range", "week"),
            ("language", "de-DE"),
            ("safesearch", "2"),
        ],
    )
    .await;

    let requests = upstream.requests("alpha");
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request["q"], "rust async");
    assert_eq!(request["pageno"], "2");
    assert_eq!(request["time_range"], "week");
    assert_eq!(
        request["lang"], "de",
        "json_engine keeps the language's first two letters"
    );
    assert_eq!(request["safesearch"], "2");
    assert_eq!(
        upstream.hits("beta"),
        0,
        "engines=alpha selects alpha alone"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plain_search_sends_page_one_and_language_all_and_no_time_range_or_safesearch() {
    needs!(Searxng);
    let upstream = EngineUpstream::start().await;
    let searxng = SearxngInstance::start(SearxngOptions::new(upstream.port())).await;

    search(&searxng, &[("q", "rust"), ("engines", "alpha")]).await;

    let requests = upstream.requests("alpha");
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request["pageno"], "1");
    assert_eq!(request["lang"], "all");
    assert!(!request.contains_key("time_range"), "{request:?}");
    assert!(!request.contains_key("safesearch"), "{request:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_upstream_failure_is_reported_with_its_documented_message() {
    needs!(Searxng);
    let upstream = EngineUpstream::start().await;
    let searxng = SearxngInstance::start(SearxngOptions::new(upstream.port())).await;
    // Hits per search: SearXNG retries once, on a new connection, when the upstream breaks the connection.
    let cases = [
        (EngineBehaviour::Status(403), "access denied", 1),
        (EngineBehaviour::Status(429), "too many requests", 1),
        (EngineBehaviour::Status(500), "HTTP error", 1),
        (EngineBehaviour::Captcha, "CAPTCHA", 1),
        (EngineBehaviour::BadJson, "parsing error", 1),
        (EngineBehaviour::Garbage, "HTTP protocol error", 2),
        (EngineBehaviour::HangUp, "HTTP protocol error", 2),
        (
            EngineBehaviour::Slow(ENGINE_TIMEOUT + Duration::from_secs(1)),
            "timeout",
            1,
        ),
    ];

    for (behaviour, message, hits) in cases {
        let hits_before = upstream.hits("beta");
        upstream.set("beta", behaviour.clone());

        let body = search(&searxng, &[("q", "rust"), ("engines", "alpha,beta")]).await;

        assert_eq!(
            unresponsive(&body),
            [("beta".to_owned(), message.to_owned())],
            "{behaviour:?}"
        );
        assert_eq!(upstream.hits("beta") - hits_before, hits, "{behaviour:?}");
        assert_eq!(
            urls_from(&body, "alpha").len(),
            DEFAULT_RESULTS,
            "{behaviour:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_empty_answer_is_neither_a_result_nor_a_failure() {
    needs!(Searxng);
    let upstream = EngineUpstream::start().await;
    let searxng = SearxngInstance::start(SearxngOptions::new(upstream.port())).await;
    upstream.set("beta", EngineBehaviour::Empty);

    let body = search(&searxng, &[("q", "rust")]).await;

    assert!(unresponsive(&body).is_empty(), "{body}");
    assert!(urls_from(&body, "beta").is_empty());
    assert_eq!(upstream.hits("beta"), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn with_stock_suspension_a_429_parks_the_engine_without_calling_it_again() {
    needs!(Searxng);
    let upstream = EngineUpstream::start().await;
    let options = SearxngOptions {
        stock_suspension: true,
        ..SearxngOptions::new(upstream.port())
    };
    let searxng = SearxngInstance::start(options).await;
    upstream.set("beta", EngineBehaviour::Status(429));

    let first = search(&searxng, &[("q", "rust")]).await;
    upstream.set("beta", EngineBehaviour::default());
    let second = search(&searxng, &[("q", "rust")]).await;

    assert_eq!(
        unresponsive(&first),
        [("beta".to_owned(), "too many requests".to_owned())]
    );
    assert_eq!(
        unresponsive(&second),
        [("beta".to_owned(), "Suspended: too many requests".to_owned())]
    );
    assert_eq!(upstream.hits("beta"), 1);
    assert_eq!(upstream.hits("alpha"), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn engines_without_paging_are_left_out_of_page_two_silently() {
    needs!(Searxng);
    let upstream = EngineUpstream::start().await;
    let options = SearxngOptions {
        engines_without_paging_or_time_range: vec!["beta"],
        ..SearxngOptions::new(upstream.port())
    };
    let searxng = SearxngInstance::start(options).await;

    let page_two = search(&searxng, &[("q", "rust"), ("pageno", "2")]).await;
    let this_week = search(&searxng, &[("q", "rust"), ("time_range", "week")]).await;

    for body in [&page_two, &this_week] {
        assert!(unresponsive(body).is_empty(), "{body}");
        assert_eq!(urls_from(body, "alpha").len(), DEFAULT_RESULTS);
    }
    assert_eq!(upstream.hits("beta"), 0);
    assert_eq!(upstream.hits("alpha"), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn shared_urls_from_two_engines_become_one_result_listing_both() {
    needs!(Searxng);
    let upstream = EngineUpstream::start().await;
    let searxng = SearxngInstance::start(SearxngOptions::new(upstream.port())).await;
    upstream.set("alpha", EngineBehaviour::Shared { results: 2 });
    upstream.set("beta", EngineBehaviour::Shared { results: 2 });

    let body = search(&searxng, &[("q", "rust")]).await;

    let results = body["results"].as_array().expect("results is a list");
    assert_eq!(results.len(), 2, "{body}");
    for result in results {
        let mut engines: Vec<&str> = result["engines"]
            .as_array()
            .expect("engines is a list")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        // SearXNG lists engines in the order their answers arrived.
        engines.sort_unstable();
        assert_eq!(engines, GENERAL_ENGINES, "{result}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn config_lists_each_engine_in_its_category() {
    needs!(Searxng);
    let upstream = EngineUpstream::start().await;
    let searxng = SearxngInstance::start(SearxngOptions::new(upstream.port())).await;

    let config: Value = reqwest::get(format!("{}/config", searxng.base_url()))
        .await
        .expect("SearXNG answers /config")
        .json()
        .await
        .expect("/config is JSON");

    let engines = config["engines"].as_array().expect("engines is a list");
    let in_category = |category: &str| -> Vec<&str> {
        engines
            .iter()
            .filter(|engine| engine["categories"] == serde_json::json!([category]))
            .filter(|engine| engine["paging"] == true && engine["time_range_support"] == true)
            .filter_map(|engine| engine["name"].as_str())
            .collect()
    };
    assert_eq!(engines.len(), 3, "{config}");
    assert_eq!(in_category("general"), GENERAL_ENGINES);
    assert_eq!(in_category("news"), NEWS_ENGINES);
}

/// `GET /search` with JSON output and English messages.
async fn search(searxng: &SearxngInstance, params: &[(&str, &str)]) -> Value {
    let response = reqwest::Client::new()
        .get(format!("{}/search", searxng.base_url()))
        .query(&[("format", "json"), ("locale", "en")])
        .query(params)
        .send()
        .await
        .expect("SearXNG answers");
    assert!(
        response.status().is_success(),
        "SearXNG answered {}; its log:\n{}",
        response.status(),
        searxng.log()
    );
    response.json().await.expect("SearXNG answers JSON")
}

/// `unresponsive_engines` as (engine, message) pairs.
fn unresponsive(body: &Value) -> Vec<(String, String)> {
    body["unresponsive_engines"]
        .as_array()
        .expect("unresponsive_engines is a list")
        .iter()
        .map(|pair| {
            (
                pair[0].as_str().unwrap_or_default().to_owned(),
                pair[1].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// URLs of the results that `engine` contributed to.
fn urls_from(body: &Value, engine: &str) -> Vec<String> {
    body["results"]
        .as_array()
        .expect("results is a list")
        .iter()
        .filter(|result| {
            result["engines"]
                .as_array()
                .is_some_and(|engines| engines.iter().any(|name| name == engine))
        })
        .filter_map(|result| result["url"].as_str().map(str::to_owned))
        .collect()
}
