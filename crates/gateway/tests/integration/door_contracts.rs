//! The doors that imitate a provider, checked against the gateway's own adapter for that provider:
//! a second gateway whose SearXNG is down falls back to "Serper", "Jina" or "Exa" — which is the first
//! gateway's door, behind a loopback proxy that puts the door's path in front (the adapters take an
//! origin). The adapters were written from the providers' documentation and are tested against
//! their recorded answers (`provider_contract.rs`), so a door whose answer they read as results
//! speaks the provider's shape — and one they cannot read fails here. Exa's adapter asks for
//! `highlights`, which the Exa door answers with the passage ranker's passages (#41).
//!
//! And checked against the services' recorded answers directly: every field of a recorded Serper
//! (search and news) and Jina (reader and search) answer is in the door's answer, with the same
//! JSON type — what a client written against the real service reads is there.

use std::net::SocketAddr;

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};
use simulator::site::Page;

use crate::support::gateway::TestGateway;
use crate::support::reading::{corpus, ReadStack};

/// A loopback server that sends every request on to `target` with `prefix` before its path.
async fn prefixing_proxy(target: String, prefix: &'static str) -> SocketAddr {
    #[derive(Clone)]
    struct To {
        target: String,
        prefix: &'static str,
        http: reqwest::Client,
    }
    async fn forward(State(to): State<To>, request: Request) -> Response {
        let (parts, body) = request.into_parts();
        let Ok(body) = axum::body::to_bytes(body, 1 << 20).await else {
            return StatusCode::BAD_REQUEST.into_response();
        };
        let path = parts
            .uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_owned();
        let mut sent = to
            .http
            .request(parts.method, format!("{}{}{path}", to.target, to.prefix))
            .body(body);
        for (name, value) in &parts.headers {
            if name != "host" && name != "content-length" {
                sent = sent.header(name, value);
            }
        }
        let Ok(answer) = sent.send().await else {
            return StatusCode::BAD_GATEWAY.into_response();
        };
        let status = answer.status();
        let mut headers = HeaderMap::new();
        if let Some(kind) = answer.headers().get("content-type") {
            headers.insert("content-type", kind.clone());
        }
        let body: Bytes = answer.bytes().await.unwrap_or_default();
        (status, headers, body).into_response()
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("the proxy binds");
    let addr = listener.local_addr().expect("an address");
    let app = Router::new().fallback(forward).with_state(To {
        target,
        prefix,
        http: reqwest::Client::new(),
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

/// A gateway whose SearXNG is down and whose one provider is `provider` at `proxy`.
async fn falling_back_to(provider: &str, proxy: SocketAddr) -> TestGateway {
    let key = format!("{}_API_KEY", provider.to_ascii_uppercase());
    let base = format!("{}_BASE_URL", provider.to_ascii_uppercase());
    let origin = format!("http://{proxy}");
    TestGateway::start(&[
        ("SEARXNG_BACKEND_URL", "http://127.0.0.1:9"),
        ("FALLBACK_PROVIDERS", provider),
        (key.as_str(), "any-key-0123456789"),
        (base.as_str(), origin.as_str()),
    ])
    .await
}

async fn calls(g: &TestGateway, provider: &str, outcome: &str) -> f64 {
    g.metric(
        "searxng_gateway_provider_calls_total",
        &[("provider", provider), ("outcome", outcome)],
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn the_serper_jina_and_exa_doors_answer_what_the_gateways_own_adapters_read() {
    let first = ReadStack::start(&[], &[]).await;
    first.site.set_default(Page::html(corpus("ars-1").0));
    let site = first.site.origin();
    for (provider, prefix) in [("serper", "/serper"), ("jina", "/s"), ("exa", "/exa")] {
        let proxy = prefixing_proxy(first.gateway.url.clone(), prefix).await;
        let second = falling_back_to(provider, proxy).await;
        let reply = second
            .search(&[("q", "door contract"), ("format", "json")])
            .await;
        assert_eq!(reply.status, 200, "{provider}: {}", reply.text);
        let results = reply.json["results"].as_array().expect("results");
        assert!(!results.is_empty(), "{provider}: {}", reply.text);
        for result in results {
            let url = result["url"].as_str().expect("a url");
            assert!(url.starts_with(&site), "{provider}: {url}");
            assert!(
                result["title"].as_str().is_some_and(|t| !t.is_empty()),
                "{provider}: {result}"
            );
        }
        assert_eq!(calls(&second, provider, "ok").await, 1.0, "{provider}");
    }
}

/// Recorded answers of the real services (docs/providers.md, ../shared/spec/PROVIDERS.md and the
/// services' documentation), values shortened: the fields a client of each reads.
mod recorded {
    /// `POST google.serper.dev/search`.
    pub(super) const SERPER_SEARCH: &str = r#"{"searchParameters":{"q":"rust async","gl":"us","hl":"en","type":"search","num":10,"page":1},"organic":[{"title":"Async Rust primer","link":"https://example.org/async","snippet":"A short primer.","position":1}],"credits":1}"#;
    /// `POST google.serper.dev/news` (`date` and `source` are the publisher's; `imageUrl`, when
    /// Google has a thumbnail, is not in every item and never in the gateway's).
    pub(super) const SERPER_NEWS: &str = r#"{"searchParameters":{"q":"rust async","type":"news","num":10,"page":1},"news":[{"title":"Rust 2026 ships","link":"https://news.example/rust","snippet":"The release...","source":"News Example","position":1}],"credits":1}"#;
    /// `GET r.jina.ai/<url>` with `Accept: application/json`.
    pub(super) const JINA_READ: &str = r##"{"code":200,"status":20000,"data":{"title":"Async Rust primer","description":"A short primer.","url":"https://example.org/async","content":"# Async Rust\n\nFutures are lazy.","usage":{"tokens":812}}}"##;
    /// `GET s.jina.ai/<query>` with `Accept: application/json`.
    pub(super) const JINA_SEARCH: &str = r#"{"code":200,"status":20000,"data":[{"title":"Async Rust primer","url":"https://example.org/async","description":"A short primer.","content":"Futures are lazy.","usage":{"tokens":1000}}],"meta":{"usage":{"tokens":10000}}}"#;
}

/// Every field of `recorded` is in `ours` with the same JSON type (a list's first item stands for
/// its items; a recorded null takes anything); the first difference, by its path.
fn uncovered(recorded: &Value, ours: &Value, path: &str) -> Option<String> {
    match (recorded, ours) {
        (Value::Null, _) => None,
        (Value::Object(fields), Value::Object(our_fields)) => {
            fields.iter().find_map(|(name, value)| {
                let at = format!("{path}.{name}");
                match our_fields.get(name) {
                    Some(our) => uncovered(value, our, &at),
                    None => Some(format!("{at} is missing")),
                }
            })
        }
        (Value::Array(items), Value::Array(our_items)) => {
            match (items.first(), our_items.first()) {
                (Some(item), Some(our)) => uncovered(item, our, &format!("{path}[0]")),
                (Some(_), None) => Some(format!("{path} is empty")),
                (None, _) => None,
            }
        }
        (Value::String(_), Value::String(_))
        | (Value::Number(_), Value::Number(_))
        | (Value::Bool(_), Value::Bool(_)) => None,
        _ => Some(format!(
            "{path} is {ours}, where the service answers {recorded}"
        )),
    }
}

fn assert_covers(recorded: &str, ours: &Value, door: &str) {
    let recorded: Value = serde_json::from_str(recorded).expect("a recorded answer is JSON");
    if let Some(difference) = uncovered(&recorded, ours, "") {
        panic!("{door}: {difference}\nthe door answered: {ours}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_serper_and_jina_doors_answer_every_field_of_the_services_recorded_answers() {
    let s = ReadStack::start(&[], &[]).await;
    s.site.set_default(Page::html(corpus("ars-1").0));
    let g = &s.gateway;
    let post = |path: &'static str, body: Value| async move {
        let answer = g
            .http
            .post(format!("{}{path}", g.url))
            .header("x-api-key", "any")
            .json(&body)
            .send()
            .await
            .expect("the gateway answers");
        TestGateway::reply(answer).await
    };
    let get_json = |path: String| async move {
        let answer = g
            .http
            .get(format!("{}{path}", g.url))
            .header("accept", "application/json")
            .send()
            .await
            .expect("the gateway answers");
        TestGateway::reply(answer).await
    };
    let search = post(
        "/serper/search",
        json!({"q": "rust async", "gl": "us", "hl": "en"}),
    )
    .await;
    assert_eq!(search.status, 200, "{}", search.text);
    assert_covers(recorded::SERPER_SEARCH, &search.json, "serper search");
    let news = post("/serper/news", json!({"q": "rust async"})).await;
    assert_eq!(news.status, 200, "{}", news.text);
    assert_covers(recorded::SERPER_NEWS, &news.json, "serper news");
    // Among SearXNG's requests (the gateway's own probes may come after it), the news query's.
    let asked_news = s.searxng.requests().into_iter().any(|sent| {
        let has = |name: &str, value: &str| sent.iter().any(|(n, v)| n == name && v == value);
        has("q", "rust async") && has("categories", "news")
    });
    assert!(asked_news, "news is SearXNG's news category");
    let read = get_json(format!("/r/{}", s.site.url("/article"))).await;
    assert_eq!(read.status, 200, "{}", read.text);
    assert_covers(recorded::JINA_READ, &read.json, "jina reader");
    assert!(
        read.json["data"]["usage"]["tokens"]
            .as_u64()
            .is_some_and(|t| t > 100),
        "{}",
        read.json["data"]["usage"]
    );
    let found = get_json("/s/rust%20async?num=2".to_owned()).await;
    assert_eq!(found.status, 200, "{}", found.text);
    assert_covers(recorded::JINA_SEARCH, &found.json, "jina search");
    let per_hit: u64 = found.json["data"]
        .as_array()
        .expect("data")
        .iter()
        .filter_map(|hit| hit["usage"]["tokens"].as_u64())
        .sum();
    assert_eq!(
        found.json["meta"]["usage"]["tokens"], per_hit,
        "the search's tokens are its hits'"
    );
}
