//! The Tavily-compatible surface over HTTP, as Tavily's clients call it: the response shape, what reaches
//! SearXNG, the domain filters, and every error in Tavily's `{"detail": {"error": …}}` shape with the
//! status tavily-python maps to its own exception.

use serde_json::{json, Value};
use simulator::searxng::SearxngMode;

use crate::support::gateway::{Reply, TestGateway};
use crate::support::stack::SimStack;

/// `POST /tavily/search` with this JSON body, as tavily-python sends it (with a key).
async fn tavily(s: &SimStack, body: Value) -> Reply {
    post(
        &s.gateway,
        Some("tvly-test-key"),
        body.to_string().into_bytes(),
    )
    .await
}

async fn post(gateway: &TestGateway, key: Option<&str>, body: Vec<u8>) -> Reply {
    let mut request = gateway
        .http
        .post(format!("{}/tavily/search", gateway.url))
        .header("content-type", "application/json")
        .body(body);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    TestGateway::reply(request.send().await.expect("the gateway answers")).await
}

fn urls(results: &Value) -> Vec<String> {
    results
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["url"].as_str().map(str::to_owned))
        .collect()
}

fn sent(s: &SimStack, name: &str) -> Option<String> {
    s.searxng
        .last_request()
        .expect("SearXNG was asked")
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tavily_search_answers_tavilys_shape_from_the_pipeline() {
    let s = SimStack::start(&[], &[]).await;
    let direct = s
        .gateway
        .search(&[("q", "tavily shape"), ("format", "json")])
        .await;
    let reply = tavily(
        &s,
        json!({"query": "tavily shape", "search_depth": "advanced", "include_raw_content": true,
               "include_images": false, "auto_parameters": false}),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.cache, "hit", "the same cache as /search");
    let body = &reply.json;
    assert_eq!(body["query"], "tavily shape");
    assert_eq!(body["answer"], Value::Null);
    assert_eq!(body["images"], json!([]));
    assert!(body["response_time"].as_f64().is_some_and(|t| t >= 0.0));
    let results = body["results"].as_array().expect("results");
    assert_eq!(results.len(), 5, "Tavily's default max_results");
    assert_eq!(urls(&body["results"]), urls(&direct.json["results"])[..5]);
    let scores: Vec<f64> = results.iter().filter_map(|r| r["score"].as_f64()).collect();
    assert_eq!(scores, [1.0, 0.5, 1.0 / 3.0, 0.25, 0.2]);
    for result in results {
        for field in ["title", "url", "content", "score", "raw_content"] {
            assert!(result.get(field).is_some(), "{field}: {result}");
        }
    }
    let dated = results
        .iter()
        .filter(|r| r.get("published_date").is_some())
        .count();
    assert!(
        dated > 0,
        "published_date when the source gave one: {results:?}"
    );
    assert_eq!(s.searxng_hits(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn topic_time_range_and_days_reach_searxng_as_categories_and_time_range() {
    let s = SimStack::start(&[], &[]).await;
    let cases = [
        (
            json!({"query": "q1", "topic": "news", "time_range": "w"}),
            Some("news"),
            Some("week"),
        ),
        (
            json!({"query": "q2", "topic": "general", "days": 3}),
            Some("general"),
            Some("week"),
        ),
        (
            json!({"query": "q3", "days": 40, "time_range": "day"}),
            None,
            Some("day"),
        ),
        (
            json!({"query": "q4", "topic": "finance"}),
            Some("general"),
            None,
        ),
        (json!({"query": "q5"}), None, None),
    ];
    for (body, categories, time_range) in cases {
        let reply = tavily(&s, body.clone()).await;
        assert_eq!(reply.status, 200, "{body}: {}", reply.text);
        assert_eq!(sent(&s, "categories").as_deref(), categories, "{body}");
        assert_eq!(sent(&s, "time_range").as_deref(), time_range, "{body}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn domain_filters_and_max_results_apply_to_the_merged_results() {
    let s = SimStack::start(&[], &[]).await;
    let reply = tavily(
        &s,
        json!({"query": "domains", "max_results": 20, "include_domains": ["example.org"],
               "exclude_domains": ["alpha.example.org"]}),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let kept = urls(&reply.json["results"]);
    assert!(!kept.is_empty());
    for url in &kept {
        assert!(url.contains(".example.org/"), "{url}");
        assert!(!url.contains("alpha.example.org"), "{url}");
    }
    let one = tavily(&s, json!({"query": "domains", "max_results": 1})).await;
    assert_eq!(one.json["results"].as_array().map(Vec::len), Some(1));
    let none = tavily(&s, json!({"query": "domains", "max_results": 0})).await;
    assert_eq!(none.json["results"], json!([]));
    assert_eq!(
        s.searxng_hits(),
        2,
        "the filtered search is its own (its filter is part of it); limits do not search again"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_without_any_key_gets_tavilys_401() {
    let s = SimStack::start(&[], &[]).await;
    for (key, body) in [
        (None, json!({"query": "q"})),
        (Some(""), json!({"query": "q"})),
        (None, json!({"query": "q", "api_key": "  "})),
    ] {
        let reply = post(&s.gateway, key, body.to_string().into_bytes()).await;
        assert_eq!(reply.status, 401, "{body}");
        assert_eq!(
            reply.json,
            json!({"detail": {"error": "Unauthorized: missing or invalid API key."}})
        );
    }
    let in_body = post(
        &s.gateway,
        None,
        json!({"query": "q", "api_key": "tvly-in-body"})
            .to_string()
            .into_bytes(),
    )
    .await;
    assert_eq!(
        in_body.status, 200,
        "a key in the body, as older clients send it"
    );
    assert_eq!(s.searxng_hits(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_gets_tavilys_error_shape_and_never_reaches_searxng() {
    let s = SimStack::start(&[], &[("MAX_QUERY_BYTES", "32")]).await;
    let cases: Vec<(Vec<u8>, u16, &str)> = vec![
        (br#"{"max_results": 3}"#.to_vec(), 400, "query is required"),
        (br#"{"query": ""}"#.to_vec(), 400, "query is required"),
        (br#"{"query": "  "}"#.to_vec(), 400, "query is required"),
        (
            json!({"query": "x".repeat(33)}).to_string().into_bytes(),
            400,
            "longer than 32 bytes",
        ),
        (br#"{"query": ["a"]}"#.to_vec(), 400, "query"),
        (
            br#"{"query": "q", "max_results": "five"}"#.to_vec(),
            400,
            "max_results",
        ),
        (
            br#"{"query": "q", "max_results": 99}"#.to_vec(),
            400,
            "max_results",
        ),
        (
            br#"{"query": "q", "topic": "sports"}"#.to_vec(),
            400,
            "topic",
        ),
        (br#"{"query": "q", "days": -2}"#.to_vec(), 400, "days"),
        (
            br#"{"query": "q", "include_images": true}"#.to_vec(),
            400,
            "include_images: true is not supported",
        ),
        (
            br#"{"query": "q", "a_field_from_the_future": 1}"#.to_vec(),
            400,
            "a_field_from_the_future",
        ),
        (
            br#"{"query": "q", "exclude_domains": {"a": 1}}"#.to_vec(),
            400,
            "exclude_domains",
        ),
        (br#"{"query": "q""#.to_vec(), 400, "JSON object"),
        (br#"["query"]"#.to_vec(), 400, "JSON object"),
        (b"query=q".to_vec(), 400, "JSON object"),
        (Vec::new(), 400, "JSON object"),
        (
            json!({"query": "q", "pad": "x".repeat(100 * 1024)})
                .to_string()
                .into_bytes(),
            413,
            "larger than",
        ),
    ];
    for (body, status, mentions) in cases {
        let shown = String::from_utf8_lossy(&body[..body.len().min(60)]).into_owned();
        let reply = post(&s.gateway, Some("tvly-test-key"), body).await;
        assert_eq!(reply.status, status, "{shown}: {}", reply.text);
        let message = reply.json["detail"]["error"]
            .as_str()
            .unwrap_or_else(|| panic!("{shown}: not Tavily's error shape: {}", reply.text));
        assert!(message.contains(mentions), "{shown}: {message}");
    }
    let get = s.gateway.get("/tavily/search").await;
    assert_eq!(get.status, 405);
    assert!(get.json["detail"]["error"].is_string(), "{}", get.text);
    assert_eq!(s.searxng_hits(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn every_upstream_rate_limited_is_tavilys_429_and_any_other_failure_a_502() {
    let s = SimStack::start(&[], &[("SEARXNG_FAIL_THRESHOLD", "100")]).await;
    s.searxng.set_mode(SearxngMode::Status(429));
    let limited = tavily(&s, json!({"query": "slow down"})).await;
    assert_eq!(limited.status, 429, "{}", limited.text);
    assert_eq!(
        limited.json["detail"]["upstreams"],
        json!([{"name": "searxng", "error_class": "rate_limited"}])
    );
    s.searxng.set_mode(SearxngMode::Status(500));
    let failed = tavily(&s, json!({"query": "outage"})).await;
    assert_eq!(failed.status, 502, "{}", failed.text);
    let message = failed.json["detail"]["error"].as_str().unwrap_or("");
    assert_eq!(message, "every upstream failed: searxng: server_error");
    assert!(!failed.text.contains("search error"), "no upstream body");
}
