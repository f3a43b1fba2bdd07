//! The operator's endpoints beside the search surfaces: `/healthz`, `/readyz`, `/status` and
//! `METRICS_PATH`, plus the JSON answers for an unknown path or a method a route does not take.

use axum::extract::{Extension, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use axum::routing::get;
use axum::Router;

use crate::gateway::Gateway;
use crate::server::error::{ApiError, API_REFUSALS};
use crate::server::kit::gate::{Admitted, Gate};
use crate::server::kit::refusal::json_response;
use gateway_core::metrics::exposition;

/// Liveness.
pub(crate) const HEALTHZ_PATH: &str = "/healthz";
/// Readiness.
pub(crate) const READYZ_PATH: &str = "/readyz";
/// Breakers, quotas, cooldown, cache.
pub(crate) const STATUS_PATH: &str = "/status";

/// Liveness: 200 while the process serves.
pub(crate) async fn healthz() -> Response {
    json_response(StatusCode::OK, r#"{"status":"ok"}"#.to_owned())
}

/// Readiness: a premium provider is usable, or SearXNG answered recently and has an engine to
/// search with; otherwise a 503 saying why (`Gateway::readiness`).
pub(crate) async fn readyz(State(gateway): State<Gateway>) -> Response {
    match gateway.readiness() {
        Ok(()) => json_response(StatusCode::OK, r#"{"status":"ready"}"#.to_owned()),
        Err(not_ready) => match serde_json::to_string(&not_ready) {
            Ok(body) => json_response(StatusCode::SERVICE_UNAVAILABLE, body),
            Err(_) => ApiError::Internal.into_response(),
        },
    }
}

/// `/status`, behind the gate like the search surfaces (it names clients and their usage).
pub(crate) fn status_routes(gate: &Gate) -> Router<Gateway> {
    Router::new()
        .route(STATUS_PATH, get(status))
        .layer(gate.layer(API_REFUSALS))
}

/// The `/status` document. With `API_KEYS_FILE`, a client key does not see the hosts other
/// clients' page reads tripped (the operator reads them with the admin token at `/admin/status`).
pub(crate) async fn status(
    State(gateway): State<Gateway>,
    Extension(admitted): Extension<Admitted>,
) -> Response {
    let status = gateway.status();
    let status = if admitted.clients.requires_keys() {
        status.without_hosts()
    } else {
        status
    };
    match serde_json::to_string(&status) {
        Ok(body) => json_response(StatusCode::OK, body),
        Err(_) => ApiError::Internal.into_response(),
    }
}

/// The exposition in the format the scraper asks for: OpenMetrics for Prometheus, the text
/// format 0.0.4 for everyone else.
pub(crate) async fn metrics(State(gateway): State<Gateway>, headers: HeaderMap) -> Response {
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
pub(crate) async fn not_found() -> ApiError {
    ApiError::not_found()
}

/// A route asked with a method it does not take.
pub(crate) async fn method_not_allowed() -> Response {
    json_response(
        StatusCode::METHOD_NOT_ALLOWED,
        r#"{"error":"method_not_allowed","message":"this endpoint does not take that method"}"#
            .to_owned(),
    )
}
