//! What every surface shares: one pipeline and one cache (a query asked through one surface is a cache
//! hit through the others), and the metrics — each answered search counted once by outcome and once by
//! the surface it came through, refusals by neither.

use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::json;

use crate::support::gateway::{metric_value, TestGateway};
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
