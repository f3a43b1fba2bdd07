//! The index the root path answers without a query: what is serving, which version, and where each
//! surface and operator endpoint is. The paths come from the modules that route them.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::{mcp, operations, searxng_api, tavily};
use crate::config::Config;

/// The index document.
#[derive(Debug, Serialize)]
struct Index<'a> {
    name: &'static str,
    version: &'static str,
    description: &'static str,
    links: Links<'a>,
}

/// Where things are.
#[derive(Debug, Serialize)]
struct Links<'a> {
    /// SearXNG's search API.
    search: &'static str,
    /// The MCP server (Streamable HTTP).
    mcp: &'static str,
    /// The Tavily-compatible search API.
    tavily: &'static str,
    /// Breakers, quotas, cooldown, cache.
    status: &'static str,
    /// The Prometheus exposition (`METRICS_PATH`).
    metrics: &'a str,
    /// Liveness.
    healthz: &'static str,
    /// Readiness.
    readyz: &'static str,
}

fn index(config: &Config) -> Index<'_> {
    Index {
        name: "searxng-gateway",
        version: env!("CARGO_PKG_VERSION"),
        description: "A decision proxy in front of SearXNG: cache, retries, premium fallback, circuit breakers, Prometheus metrics",
        links: Links {
            search: searxng_api::SEARCH_PATH,
            mcp: mcp::PATH,
            tavily: tavily::PATH,
            status: operations::STATUS_PATH,
            metrics: config.metrics_path(),
            healthz: operations::HEALTHZ_PATH,
            readyz: operations::READYZ_PATH,
        },
    }
}

/// The index as a JSON response.
pub(super) fn response(config: &Config) -> Response {
    let body = serde_json::to_string(&index(config)).unwrap_or_default();
    let mut response = (StatusCode::OK, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
