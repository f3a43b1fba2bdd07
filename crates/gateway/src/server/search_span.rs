//! The `search` span ([`crate::trace`]) of a request to a search surface: opened before the
//! request is read, continuing the client's W3C `traceparent`, closed with the response's status.
//! The shared search step (`server::search`) records the outcome and cache on it, refusals their
//! error code. With tracing off the span is disabled and this is one callsite check.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use tracing::field::Empty;
use tracing::Instrument;

use crate::trace::{self, TARGET};

/// Runs the request inside its `search` span.
pub(super) async fn traced(request: Request, next: Next) -> Response {
    let span = tracing::info_span!(
        target: TARGET,
        "search",
        otel.kind = "server",
        http.request.method = %request.method(),
        http.response.status_code = Empty,
        outcome = Empty,
        cache = Empty,
        error_class = Empty,
        otel.status_code = Empty,
    );
    trace::continue_client_trace(&span, request.headers());
    let response = next.run(request).instrument(span.clone()).await;
    span.record("http.response.status_code", response.status().as_u16());
    response
}
