//! The HTTP surface: `/search` (GET, and POST with a form body), `/healthz`, `/readyz`, `/status`
//! and `METRICS_PATH`. [`serve`] builds the pipeline, serves the routes on a listener the caller
//! supplies until the shutdown future resolves and lets in-flight requests finish — so port-0
//! tests, the demo and SIGTERM take the same path. Handlers parse at the edge and render; every
//! decision is the pipeline's.

mod error;
mod format;
mod search;

use std::future::Future;

use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use tokio::net::TcpListener;

use error::ApiError;

use crate::config::Config;
use crate::metrics::exposition;
use crate::pipeline::{Gateway, Metrics};

/// The routes over `gateway`.
fn router(gateway: Gateway) -> Router {
    let metrics_path = gateway.config().metrics_path.clone();
    Router::new()
        .route("/search", get(search::get).post(search::post))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/status", get(status))
        .route(&metrics_path, get(metrics))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(gateway)
}

/// Serves the gateway configured by `config` on `listener` until `shutdown` resolves: the routes
/// plus the background work (SearXNG's engine catalog, the cache sweep). In-flight requests finish
/// before it returns. The binary, the demo and the tests all start the gateway this way.
pub async fn serve(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let gateway = Gateway::new(config, Metrics::new());
    log_start(&listener, gateway.config());
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let background = {
        let gateway = gateway.clone();
        let mut stop = stop_rx;
        tokio::spawn(async move {
            gateway
                .run_background(async move {
                    let _ = stop.wait_for(|s| *s).await;
                })
                .await;
        })
    };
    let shutdown = async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    };
    let served = run(listener, gateway, shutdown).await;
    let _ = background.await;
    served
}

/// One line saying what is being served, with nothing secret in it.
fn log_start(listener: &TcpListener, config: &Config) {
    let listen = listener
        .local_addr()
        .map_or_else(|_| config.listen_addr().to_string(), |a| a.to_string());
    let providers: Vec<&str> = config
        .active_providers()
        .iter()
        .map(|k| k.as_str())
        .collect();
    tracing::info!(
        listen = %listen,
        searxng = %crate::pipeline::status::redact_urls(config),
        providers = %providers.join(","),
        t1 = config.t1_premium_count,
        budget_s = config.request_budget.as_secs_f64(),
        metrics = %config.metrics_path(),
        "searxng-gateway listening"
    );
}

/// Serves `router(gateway)` on `listener` until `shutdown` resolves, then waits for in-flight
/// requests to finish.
async fn run(
    listener: TcpListener,
    gateway: Gateway,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(gateway))
        .with_graceful_shutdown(shutdown)
        .await
}

fn json_response(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

async fn healthz() -> Response {
    json_response(StatusCode::OK, r#"{"status":"ok"}"#.to_owned())
}

async fn readyz(State(gateway): State<Gateway>) -> Response {
    if gateway.is_ready() {
        json_response(StatusCode::OK, r#"{"status":"ready"}"#.to_owned())
    } else {
        json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            r#"{"error":"not_ready","message":"SearXNG has not answered recently and no premium provider is usable"}"#.to_owned(),
        )
    }
}

async fn status(State(gateway): State<Gateway>) -> Response {
    match serde_json::to_string(&gateway.status()) {
        Ok(body) => json_response(StatusCode::OK, body),
        Err(_) => ApiError::Internal.into_response(),
    }
}

/// The exposition in the format the scraper asks for: OpenMetrics for Prometheus, the text
/// format 0.0.4 for everyone else.
async fn metrics(State(gateway): State<Gateway>, headers: axum::http::HeaderMap) -> Response {
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

async fn not_found() -> ApiError {
    ApiError::NotFound
}

async fn method_not_allowed() -> Response {
    json_response(
        StatusCode::METHOD_NOT_ALLOWED,
        r#"{"error":"method_not_allowed","message":"this endpoint does not take that method"}"#
            .to_owned(),
    )
}
