//! The index the root path answers without a query: what is serving, which version, and where each
//! surface and operator endpoint is. The router builds it from the paths the surfaces route, so a
//! new surface adds its link where it is merged.

use axum::body::Bytes;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};

/// The index document, rendered once.
#[derive(Debug, Clone)]
pub(crate) struct Index {
    body: Bytes,
}

impl Index {
    /// The index listing `links` (name, path), in that order.
    pub(crate) fn new(links: &[(&str, &str)]) -> Self {
        let links: Map<String, Value> = links
            .iter()
            .map(|(name, path)| ((*name).to_owned(), Value::from(*path)))
            .collect();
        let document = json!({
            "name": "searxng-gateway",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "A decision proxy in front of SearXNG: cache, retries, premium fallback, circuit breakers, Prometheus metrics",
            "links": links,
        });
        Self {
            body: Bytes::from(document.to_string()),
        }
    }

    /// The index as a JSON response.
    pub(crate) fn response(&self) -> Response {
        let mut response = (StatusCode::OK, self.body.clone()).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        response
    }
}
