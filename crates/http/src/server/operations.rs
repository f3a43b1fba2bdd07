//! The operator's endpoints beside the search surfaces: `/healthz`, `/readyz`, `/status` and
//! `METRICS_PATH`, plus the JSON answers for an unknown path or a method a route does not take.

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use axum::routing::get;
use axum::Router;

use super::auth::Gate;
use super::error::{ApiError, ApiRefusals};
use crate::gateway::Gateway;
use gateway_core::metrics::exposition;

/// Liveness.
pub(super) const HEALTHZ_PATH: &str = "/healthz";
/// Readiness.
pub(super) const READYZ_PATH: &str = "/readyz";
/// Breakers, quotas, cooldown, cache.
pub(super) const STATUS_PATH: &str = "/status";

fn json_response(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// Liveness: 200 while the process serves.
pub(super) async fn healthz() -> Response {
    json_response(StatusCode::OK, r#"{"status":"ok"}"#.to_owned())
}

/// Readiness: a premium provider is usable, or SearXNG answered recently and has an engine to
/// search with; otherwise a 503 saying why (`Gateway::readiness`).
pub(super) async fn readyz(State(gateway): State<Gateway>) -> Response {
    match gateway.readiness() {
        Ok(()) => json_response(StatusCode::OK, r#"{"status":"ready"}"#.to_owned()),
        Err(not_ready) => match serde_json::to_string(&not_ready) {
            Ok(body) => json_response(StatusCode::SERVICE_UNAVAILABLE, body),
            Err(_) => ApiError::Internal.into_response(),
        },
    }
}

/// `/status`, behind the gate like the search surfaces (it names clients and their usage).
pub(super) fn status_routes(gate: &Gate) -> Router<Gateway> {
    Router::new()
        .route(STATUS_PATH, get(status))
        .layer(gate.layer(ApiRefusals))
}

/// The `/status` document.
pub(super) async fn status(State(gateway): State<Gateway>) -> Response {
    match serde_json::to_string(&gateway.status()) {
        Ok(body) => json_response(StatusCode::OK, body),
        Err(_) => ApiError::Internal.into_response(),
    }
}

/// The exposition in the format the scraper asks for: OpenMetrics for Prometheus, the text
/// format 0.0.4 for everyone else.
pub(super) async fn metrics(State(gateway): State<Gateway>, headers: HeaderMap) -> Response {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let openmetrics = exposition::wants_openmetrics(accept);
    let content_type = if openmetrics {
        exposition::OPENMETRICS
    } else {
        exposition::PROMETHEUS_TEXT
    };
    let mut response = gateway.render_metrics(openmetrics).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// Any path no route serves.
pub(super) async fn not_found() -> ApiError {
    ApiError::NotFound
}

/// A route asked with a method it does not take.
pub(super) async fn method_not_allowed() -> Response {
    json_response(
        StatusCode::METHOD_NOT_ALLOWED,
        r#"{"error":"method_not_allowed","message":"this endpoint does not take that method"}"#
            .to_owned(),
    )
}
