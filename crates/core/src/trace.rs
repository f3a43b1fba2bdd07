//! The request path's OpenTelemetry spans, as the modules along it create them: one `search` span
//! per request (server), with children `cache_lookup` (pipeline), `searxng` with one
//! `searxng_attempt` per attempt (SearXNG client), `provider_call` (pipeline), and one `redis` per
//! round trip to the shared tier (`shared`). Each span carries closed-set attributes only — outcome, error class, excluded engine names — never the
//! query, a URL, a key or a body.
//!
//! Every span has the target [`TARGET`], which only the OpenTelemetry layer (installed by the
//! `telemetry` module) is interested in, and only when an OTLP endpoint is configured. With
//! tracing off no subscriber wants them, so each `span!` is one disabled-callsite check and the
//! record calls on the disabled span do nothing (the cache-hit benchmark shows it).

use axum::http::HeaderMap;
use opentelemetry_http::HeaderExtractor;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::upstream::ErrorClass;

/// The target of each request's `request` span (its `request_id`), which the log lines carry at
/// every `LOG_LEVEL`; never exported.
pub const REQUEST_TARGET: &str = "searxng_gateway::request";

/// The target of every span the gateway exports.
pub const TARGET: &str = "gateway_span";

/// Continues the client's trace from its W3C `traceparent` (and `tracestate`), if it sent one.
pub fn continue_client_trace(span: &tracing::Span, headers: &HeaderMap) {
    if span.is_disabled() {
        return;
    }
    let parent = opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.extract(&HeaderExtractor(headers))
    });
    let _ = span.set_parent(parent);
}

/// Why a span failed: its `error_class` attribute, from a closed set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanError {
    /// An upstream call failed with this class.
    Upstream(ErrorClass),
    /// The request's budget ended before the call did.
    Deadline,
    /// Every upstream failed: the answer is the 502.
    AllUpstreamsFailed,
    /// The gateway shed the request (no fan-out slot in time).
    Overloaded,
    /// The shared computation was lost.
    Internal,
    /// A surface refused the request: its stable error code (the surface's error type says it).
    Refused(&'static str),
    /// A round trip to the shared tier did not complete: `error` or `timeout`.
    Redis(&'static str),
}

impl SpanError {
    /// The attribute's value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Upstream(class) => class.as_str(),
            Self::Deadline => "deadline",
            Self::AllUpstreamsFailed => "all_upstreams_failed",
            Self::Overloaded => "overloaded",
            Self::Internal => "internal_error",
            Self::Refused(code) | Self::Redis(code) => code,
        }
    }
}

/// Marks `span` as failed with `error` (`otel.status_code` ERROR).
pub fn record_error(span: &tracing::Span, error: SpanError) {
    span.record("error_class", error.as_str());
    span.record("otel.status_code", "ERROR");
}
