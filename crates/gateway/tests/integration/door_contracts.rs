//! The doors that imitate a provider, checked against the gateway's own adapter for that provider:
//! a second gateway whose SearXNG is down falls back to "Serper", "Jina" or "Exa" — which is the first
//! gateway's door, behind a loopback proxy that puts the door's path in front (the adapters take an
//! origin). The adapters were written from the providers' documentation and are tested against
//! their recorded answers (`provider_contract.rs`), so a door whose answer they read as results
//! speaks the provider's shape — and one they cannot read fails here. Exa's adapter asks for
//! `highlights`, which the Exa door answers with the passage ranker's passages (#41).

use std::net::SocketAddr;

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
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
