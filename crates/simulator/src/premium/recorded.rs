//! One request as a fake provider received it, kept so a test can assert what the adapter sent: method,
//! path, query, headers and body.

use axum::http::{HeaderMap, Method, Uri};
use serde_json::Value;

/// One request as the fake received it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// HTTP method (`GET`, `POST`).
    pub method: String,
    /// Path without the query.
    pub path: String,
    /// Decoded query parameters, in order.
    pub query: Vec<(String, String)>,
    /// Headers with lower-case names, in order.
    pub headers: Vec<(String, String)>,
    /// The raw body.
    pub body: Vec<u8>,
}

impl RecordedRequest {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The first value of query parameter `name`.
    pub fn query_param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON, if it is JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    pub(super) fn capture(method: &Method, uri: &Uri, headers: &HeaderMap, body: &[u8]) -> Self {
        Self {
            method: method.as_str().to_owned(),
            path: uri.path().to_owned(),
            query: serde_urlencoded::from_str(uri.query().unwrap_or("")).unwrap_or_default(),
            headers: headers
                .iter()
                .map(|(n, v)| {
                    (
                        n.as_str().to_owned(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect(),
            body: body.to_vec(),
        }
    }
}
