//! OpenTelemetry traces end to end: the gateway binary exports to an OTLP/HTTP receiver on loopback
//! (this test's, decoding `ExportTraceServiceRequest` with the OTLP protocol types), and the span
//! tree of one request that hit SearXNG and two providers is checked: the `search` span continues
//! the client's W3C trace, its children are the cache lookup, the SearXNG call (with the excluded
//! engine) and its attempt, and both provider calls; the request's log line carries the trace id
//! (as text, and as a key of a JSON line).
//! An MCP `tools/call` of `web_search` over HTTP gets its own `search` span in the client's trace.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use axum::Router;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use simulator::premium::{SimulatedProvider, SIM_KEY};
use simulator::searxng::{EngineBehaviour, EngineFailure, SimulatedSearxng};
use simulator::Provider;

use crate::support::process::GatewayProcess;
use crate::support::wait;

/// What the receiver got: every span, with the `service.name` of its resource.
#[derive(Default)]
struct Received {
    spans: Vec<(String, Span)>,
    content_types: Vec<String>,
}

/// An OTLP/HTTP traces receiver on a kernel-chosen loopback port.
async fn receiver() -> (SocketAddr, Arc<Mutex<Received>>) {
    let received = Arc::new(Mutex::new(Received::default()));
    let app = Router::new()
        .route("/v1/traces", post(export))
        .with_state(Arc::clone(&received));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the receiver");
    let addr = listener.local_addr().expect("receiver address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, received)
}

async fn export(
    State(received): State<Arc<Mutex<Received>>>,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> (axum::http::StatusCode, Vec<u8>) {
    let request = ExportTraceServiceRequest::decode(body).expect("an OTLP protobuf body");
    let mut received = received.lock().expect("lock");
    received.content_types.push(
        headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned(),
    );
    for resource_spans in request.resource_spans {
        let service = resource_spans
            .resource
            .as_ref()
            .and_then(|r| string_attribute(&r.attributes, "service.name"))
            .unwrap_or_default();
        for scope in resource_spans.scope_spans {
            for span in scope.spans {
                received.spans.push((service.clone(), span));
            }
        }
    }
    let response = ExportTraceServiceResponse::default().encode_to_vec();
    (axum::http::StatusCode::OK, response)
}

fn attribute<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a Any> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

fn string_attribute(attributes: &[KeyValue], key: &str) -> Option<String> {
    match attribute(attributes, key) {
        Some(Any::StringValue(s)) => Some(s.clone()),
        _ => None,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_search_exports_one_span_tree_continuing_the_clients_trace() {
    let (collector, received) = receiver().await;
    let searxng = SimulatedSearxng::start(&["alpha", "beta"])
        .await
        .expect("simulated SearXNG");
    let brave = SimulatedProvider::start(Provider::Brave)
        .await
        .expect("brave");
    let exa = SimulatedProvider::start(Provider::Exa).await.expect("exa");
    let endpoint = format!("http://{collector}");
    let (searxng_url, brave_url, exa_url) = (searxng.base_url(), brave.base_url(), exa.base_url());
    let mut gateway = GatewayProcess::start(&[
        ("LISTEN_ADDR", "127.0.0.1:0"),
        ("SEARXNG_BACKEND_URL", &searxng_url),
        ("FALLBACK_PROVIDERS", "brave,exa"),
        ("BRAVE_API_KEY", SIM_KEY),
        ("BRAVE_BASE_URL", &brave_url),
        ("EXA_API_KEY", SIM_KEY),
        ("EXA_BASE_URL", &exa_url),
        ("T1_PREMIUM_COUNT", "2"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
        ("OTEL_SERVICE_NAME", "gateway-under-test"),
    ]);
    let url = gateway.url().await;
    let client = reqwest::Client::builder()
        .timeout(wait::HANG_GUARD)
        .build()
        .expect("client");
    wait::until("the gateway to read SearXNG's /config", || async {
        let status: serde_json::Value = client
            .get(format!("{url}/status"))
            .send()
            .await
            .expect("status")
            .json()
            .await
            .expect("status JSON");
        status["searxng"]["engines_known"].as_u64().unwrap_or(0) > 0
    })
    .await;

    // beta answers "too many requests": its breaker trips, and the next search excludes it.
    searxng.set_engine(
        "beta",
        EngineBehaviour::Fails(EngineFailure::TooManyRequests),
    );
    let first = client
        .get(format!("{url}/search"))
        .query(&[("q", "trip beta")])
        .send()
        .await
        .expect("first search");
    assert_eq!(first.status().as_u16(), 200);

    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let client_span = "00f067aa0ba902b7";
    let traced = client
        .get(format!("{url}/search"))
        .query(&[("q", "traced search")])
        .header("traceparent", format!("00-{trace_id}-{client_span}-01"))
        .send()
        .await
        .expect("traced search");
    assert_eq!(traced.status().as_u16(), 200);
    assert_eq!(
        traced.headers()["x-gateway-outcome"],
        "searxng_plus_premium_ok"
    );
    let searched = searxng.last_request().expect("SearXNG was asked");
    assert!(
        searched.contains(&("engines".to_owned(), "alpha".to_owned())),
        "{searched:?}"
    );

    // Shutting down exports what is still buffered.
    assert_eq!(gateway.terminate().await.code(), Some(0));
    let output = gateway.output().await;

    let received = received.lock().expect("lock");
    assert!(received
        .content_types
        .iter()
        .all(|c| c == "application/x-protobuf"));
    let spans: Vec<&(String, Span)> = received
        .spans
        .iter()
        .filter(|(_, s)| hex(&s.trace_id) == trace_id)
        .collect();
    let named = |name: &str| -> Vec<&Span> {
        spans
            .iter()
            .filter(|(_, s)| s.name == name)
            .map(|(_, s)| s)
            .collect()
    };
    let search = named("search");
    assert_eq!(search.len(), 1, "one search span in the client's trace");
    let search = search[0];
    assert_eq!(
        hex(&search.parent_span_id),
        client_span,
        "continues the client's span"
    );
    assert_eq!(search.kind, SpanKind::Server as i32);
    assert_eq!(
        string_attribute(&search.attributes, "outcome").as_deref(),
        Some("searxng_plus_premium_ok")
    );
    assert_eq!(
        string_attribute(&search.attributes, "cache").as_deref(),
        Some("miss")
    );
    assert!(spans
        .iter()
        .all(|(service, _)| service == "gateway-under-test"));

    let children_of = |parent: &Span| -> Vec<&Span> {
        spans
            .iter()
            .filter(|(_, s)| s.parent_span_id == parent.span_id)
            .map(|(_, s)| s)
            .collect()
    };
    let mut children: Vec<&str> = children_of(search)
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    children.sort_unstable();
    assert_eq!(
        children,
        ["cache_lookup", "provider_call", "provider_call", "searxng"],
        "the search span's children"
    );
    let lookup = named("cache_lookup")[0];
    assert!(matches!(
        attribute(&lookup.attributes, "hit"),
        Some(Any::BoolValue(false))
    ));
    let searxng_span = named("searxng")[0];
    assert_eq!(
        string_attribute(&searxng_span.attributes, "excluded_engines").as_deref(),
        Some("beta")
    );
    assert_eq!(
        string_attribute(&searxng_span.attributes, "result").as_deref(),
        Some("ok")
    );
    let attempts = children_of(searxng_span);
    assert_eq!(attempts.len(), 1, "one attempt under the SearXNG call");
    assert_eq!(attempts[0].name, "searxng_attempt");
    assert_eq!(attempts[0].kind, SpanKind::Client as i32);
    let mut providers: Vec<(String, String)> = named("provider_call")
        .iter()
        .map(|s| {
            (
                string_attribute(&s.attributes, "provider").unwrap_or_default(),
                string_attribute(&s.attributes, "outcome").unwrap_or_default(),
            )
        })
        .collect();
    providers.sort();
    assert_eq!(
        providers,
        [
            ("brave".to_owned(), "ok".to_owned()),
            ("exa".to_owned(), "ok".to_owned())
        ]
    );

    // The request's log line leads to its trace.
    let traced_line = output
        .lines()
        .rev()
        .find(|l| l.contains(" search ") && l.contains("searxng_plus_premium_ok"))
        .unwrap_or_else(|| panic!("no search line in:\n{output}"));
    assert!(
        traced_line.ends_with(&format!("trace_id={trace_id}")),
        "{traced_line}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_web_search_tool_call_over_http_gets_its_search_span_in_the_clients_trace() {
    let (collector, received) = receiver().await;
    let searxng = SimulatedSearxng::start(&["alpha"])
        .await
        .expect("simulated SearXNG");
    let endpoint = format!("http://{collector}");
    let searxng_url = searxng.base_url();
    let mut gateway = GatewayProcess::start(&[
        ("LISTEN_ADDR", "127.0.0.1:0"),
        ("SEARXNG_BACKEND_URL", &searxng_url),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
    ]);
    let url = gateway.url().await;
    let client = reqwest::Client::builder()
        .timeout(wait::HANG_GUARD)
        .build()
        .expect("client");
    let trace_id = "0af7651916cd43dd8448eb211c80319c";
    let client_span = "b7ad6b7169203331";
    let mcp = |body: serde_json::Value, traceparent: Option<String>| {
        let mut request = client
            .post(format!("{url}/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(traceparent) = traceparent {
            request = request.header("traceparent", traceparent);
        }
        request.send()
    };
    // tools/list is not a search: no span.
    let listed = mcp(
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}),
        Some(format!("00-{trace_id}-{client_span}-01")),
    )
    .await
    .expect("tools/list");
    assert_eq!(listed.status().as_u16(), 200);
    let called = mcp(
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "web_search", "arguments": {"query": "traced tool call"}}}),
        Some(format!("00-{trace_id}-{client_span}-01")),
    )
    .await
    .expect("tools/call");
    assert_eq!(called.status().as_u16(), 200);
    let answer: serde_json::Value = called.json().await.expect("a JSON-RPC answer");
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    // A refused call is a search span too, marked with the refusal's error class.
    let refused = mcp(
        serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "web_search", "arguments": {"query": "  "}}}),
        None,
    )
    .await
    .expect("refused tools/call");
    assert_eq!(refused.status().as_u16(), 200);

    assert_eq!(gateway.terminate().await.code(), Some(0));
    let received = received.lock().expect("lock");
    let searches: Vec<&Span> = received
        .spans
        .iter()
        .map(|(_, s)| s)
        .filter(|s| s.name == "search")
        .collect();
    assert_eq!(searches.len(), 2, "one search span per tools/call");
    let traced: Vec<&&Span> = searches
        .iter()
        .filter(|s| hex(&s.trace_id) == trace_id)
        .collect();
    assert_eq!(
        traced.len(),
        1,
        "the tool call continues the client's trace"
    );
    let search = traced[0];
    assert_eq!(hex(&search.parent_span_id), client_span);
    assert_eq!(search.kind, SpanKind::Server as i32);
    assert_eq!(
        string_attribute(&search.attributes, "outcome").as_deref(),
        Some("searxng_ok")
    );
    assert_eq!(
        string_attribute(&search.attributes, "http.request.method").as_deref(),
        Some("POST")
    );
    let mut children: Vec<&str> = received
        .spans
        .iter()
        .map(|(_, s)| s)
        .filter(|s| s.parent_span_id == search.span_id)
        .map(|s| s.name.as_str())
        .collect();
    children.sort_unstable();
    assert_eq!(children, ["cache_lookup", "searxng"]);
    let refusal = searches
        .iter()
        .find(|s| hex(&s.trace_id) != trace_id)
        .expect("the refused call's span");
    assert_eq!(
        string_attribute(&refusal.attributes, "error_class").as_deref(),
        Some("missing_query")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_json_log_line_of_a_traced_request_carries_its_trace_id() {
    let (collector, _received) = receiver().await;
    let searxng = SimulatedSearxng::start(&["alpha"])
        .await
        .expect("simulated SearXNG");
    let endpoint = format!("http://{collector}");
    let searxng_url = searxng.base_url();
    let mut gateway = GatewayProcess::start(&[
        ("LISTEN_ADDR", "127.0.0.1:0"),
        ("SEARXNG_BACKEND_URL", &searxng_url),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
        ("LOG_FORMAT", "json"),
    ]);
    let url = gateway.url().await;
    let client = reqwest::Client::builder()
        .timeout(wait::HANG_GUARD)
        .build()
        .expect("client");
    let trace_id = "5c1a0e3f9d2b4a6c8e0f1a2b3c4d5e6f";
    let traced = client
        .get(format!("{url}/search"))
        .query(&[("q", "json traced search")])
        .header("traceparent", format!("00-{trace_id}-1a2b3c4d5e6f7a8b-01"))
        .send()
        .await
        .expect("traced search");
    assert_eq!(traced.status().as_u16(), 200);
    let untraced = client
        .get(format!("{url}/status"))
        .send()
        .await
        .expect("status");
    assert_eq!(untraced.status().as_u16(), 200);
    assert_eq!(gateway.terminate().await.code(), Some(0));
    let output = gateway.output().await;

    let lines: Vec<serde_json::Value> = output
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let search = lines
        .iter()
        .find(|l| l["fields"]["message"] == "search")
        .unwrap_or_else(|| panic!("no search line in:\n{output}"));
    assert_eq!(search["trace_id"], trace_id, "{search}");
    assert!(
        search["span"]["request_id"].is_string(),
        "the request ID stays: {search}"
    );
    let start = lines
        .iter()
        .find(|l| l["fields"]["message"] == "exporting traces over OTLP/HTTP")
        .unwrap_or_else(|| panic!("no start line in:\n{output}"));
    assert!(
        start.get("trace_id").is_none(),
        "outside a request: {start}"
    );
}
