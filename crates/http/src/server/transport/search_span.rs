//! The `search` span ([`gateway_core::trace`]) of one search through a surface: opened before the request
//! is read, continuing the client's W3C `traceparent`. The SearXNG API and the Tavily API get it
//! around the whole request ([`TRACED`], closed with the response's status); the MCP surface around
//! each `tools/call` of `web_search` ([`tool_call`]), since one `/mcp` message is not always a
//! search. The shared search step (`server::search`) records the outcome and cache on it, refusals
//! their error code. With tracing off the span is disabled and this is one callsite check.

use axum::extract::Request;
use axum::http::HeaderMap;
use axum::response::Response;
use tracing::field::Empty;
use tracing::Span;

use crate::server::transport::span_layer::{InSpan, SpanHook, SpanLayer};

use gateway_core::trace::{self, TARGET};

/// A `search` span continuing the trace in `headers`, if any.
fn open(method: Option<&str>, headers: Option<&HeaderMap>) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        "search",
        otel.kind = "server",
        http.request.method = Empty,
        http.response.status_code = Empty,
        outcome = Empty,
        cache = Empty,
        error_class = Empty,
        otel.status_code = Empty,
    );
    if let Some(method) = method {
        span.record("http.request.method", method);
    }
    if let Some(headers) = headers {
        trace::continue_client_trace(&span, headers);
    }
    span
}

/// The layer that runs each request inside its `search` span, closed with the response's status.
pub(crate) const TRACED: SpanLayer<Tracing> = SpanLayer(Tracing);

/// A service behind [`TRACED`].
pub(crate) type Traced<S> = InSpan<S, Tracing>;

/// The `search` span's [`SpanHook`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tracing;

impl SpanHook for Tracing {
    type Carry = ();

    fn open(&self, request: &mut Request) -> (Span, ()) {
        (
            open(Some(request.method().as_str()), Some(request.headers())),
            (),
        )
    }

    fn close((): (), span: &Span, response: &mut Response) {
        span.record("http.response.status_code", response.status().as_u16());
    }
}

/// The `search` span of a `tools/call` of `web_search`: over Streamable HTTP, `http` is the
/// request that carried the call (the MCP SDK hands it to the tool), whose `traceparent` the span
/// continues; over stdio there is none and the span starts a trace.
pub(crate) fn tool_call(http: Option<&axum::http::request::Parts>) -> Span {
    open(
        http.map(|parts| parts.method.as_str()),
        http.map(|parts| &parts.headers),
    )
}
