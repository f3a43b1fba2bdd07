//! What every surface shares: one pipeline and one cache (a query asked through one surface is a cache
//! hit through the others), the metrics — each answered search counted once by outcome and once by
//! the surface it came through, refusals by neither — and SearXNG's direct answers, which a real SearXNG
//! gives and every JSON surface passes on.

use crate::support::external::needs;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::json;

use crate::support::engine_upstream::EngineUpstream;
use crate::support::gateway::{metric_value, TestGateway};
use crate::support::searxng::{SearxngInstance, SearxngOptions};
use crate::support::stack::SimStack;
use crate::support::wait;

const OUTCOMES: [&str; 5] = [
    "cache_hit",
    "searxng_ok",
    "premium_ok",
    "searxng_plus_premium_ok",
    "fallback_fail",
];

#[tokio::test(flavor = "multi_thread")]
async fn each_search_counts_one_outcome_and_one_surface_through_one_shared_cache() {
    let s = SimStack::start(&[], &[]).await;
    let gateway = &s.gateway;
    // SearXNG's API: one search, the same again through the root path's redirect, one refusal.
    assert_eq!(gateway.search(&[("q", "shared")]).await.status, 200);
    let followed = reqwest::get(format!("{}/?q=shared", gateway.url))
        .await
        .expect("answer");
    assert_eq!(followed.status(), 200);
    assert_eq!(gateway.search(&[("q", " ")]).await.status, 400);
    // Tavily: the same query (a hit), and a refusal.
    let tavily = |body: serde_json::Value| {
        gateway
            .http
            .post(format!("{}/tavily/search", gateway.url))
            .bearer_auth("tvly-key")
            .json(&body)
            .send()
    };
    let hit = TestGateway::reply(tavily(json!({"query": "shared"})).await.expect("answer")).await;
    assert_eq!((hit.status, hit.cache.as_str()), (200, "hit"));
    assert_eq!(
        tavily(json!({"query": ""})).await.expect("answer").status(),
        400
    );
    // MCP: the same query (a hit), a new one, and a refusal.
    let client = wait::guarded(
        "the MCP client to connect",
        ().serve(StreamableHttpClientTransport::from_uri(format!(
            "{}/mcp",
            gateway.url
        ))),
    )
    .await
    .expect("connect");
    for (query, is_error) in [("shared", false), ("only over mcp", false), ("", true)] {
        let args = json!({"query": query})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let result = client
            .call_tool(CallToolRequestParams::new("web_search").with_arguments(args))
            .await
            .expect("tools/call");
        assert_eq!(result.is_error, Some(is_error), "{query:?}");
    }
    client.cancel().await.expect("disconnect");

    assert_eq!(s.searxng_hits(), 2, "two distinct queries, two fan-outs");
    let metrics = gateway.metrics_text().await;
    let surface = |name: &str| {
        metric_value(
            &metrics,
            "searxng_gateway_surface_requests_total",
            &[("surface", name)],
        )
    };
    assert_eq!(
        [surface("searxng"), surface("tavily"), surface("mcp")],
        [2.0, 1.0, 2.0]
    );
    let outcomes: f64 = OUTCOMES
        .iter()
        .map(|o| {
            metric_value(
                &metrics,
                "searxng_gateway_requests_total",
                &[("outcome", o)],
            )
        })
        .sum();
    assert_eq!(outcomes, 5.0, "one outcome per answered search");
    assert_eq!(
        metric_value(
            &metrics,
            "searxng_gateway_requests_total",
            &[("outcome", "cache_hit")]
        ),
        3.0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_real_searxngs_direct_answer_reaches_tavily_and_mcp_clients() {
    needs!(Searxng);
    let upstream = EngineUpstream::start().await;
    let searxng = SearxngInstance::start(SearxngOptions::new(upstream.port())).await;
    let base = searxng.base_url();
    let gateway = TestGateway::start(&[("SEARXNG_BACKEND_URL", base.as_str())]).await;
    // SearXNG's hash plugin answers "sha256 <text>" with the digest, in `answers`.
    let digest = "4ea5ee68fea05586106890ded5733820bb77d919cda27bc4b8139b7cd33b8889";
    let tavily = |body: serde_json::Value| {
        gateway
            .http
            .post(format!("{}/tavily/search", gateway.url))
            .bearer_auth("tvly-key")
            .json(&body)
            .send()
    };
    let asked = TestGateway::reply(
        tavily(json!({"query": "sha256 gateway", "include_answer": "basic"}))
            .await
            .expect("answer"),
    )
    .await;
    assert_eq!(asked.status, 200, "{}", asked.text);
    let answer = asked.json["answer"].as_str().unwrap_or("");
    assert!(answer.contains(digest), "{}", asked.text);
    let not_asked = TestGateway::reply(
        tavily(json!({"query": "sha256 gateway"}))
            .await
            .expect("answer"),
    )
    .await;
    assert_eq!(not_asked.cache, "hit");
    assert_eq!(
        not_asked.json["answer"],
        serde_json::Value::Null,
        "only when asked"
    );

    let client = wait::guarded(
        "the MCP client to connect",
        ().serve(StreamableHttpClientTransport::from_uri(format!(
            "{}/mcp",
            gateway.url
        ))),
    )
    .await
    .expect("connect");
    let args = json!({"query": "sha256 gateway"})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let result = client
        .call_tool(CallToolRequestParams::new("web_search").with_arguments(args))
        .await
        .expect("tools/call");
    let structured = result.structured_content.clone().unwrap_or_default();
    let answers = structured["answers"].to_string();
    assert!(answers.contains(digest), "{structured}");
    let text = result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_default();
    assert!(text.starts_with("Answer: sha256"), "{text}");
    client.cancel().await.expect("disconnect");
}
