//! The passage reranker (`RERANK_URL`, #41): a server speaking Jina's and Cohere's rerank shape —
//! a local Infinity, vLLM or OpenVINO model server, Jina's or Cohere's API — asked to order the
//! candidate passages the lexical ranking picked.
//!
//! Endpoint: `POST RERANK_URL` as configured (servers differ in their path: Jina's and Cohere's
//! `/v1/rerank`, Infinity's `/rerank`), JSON `{"model"?, "query", "documents": [string], "top_n",
//! "return_documents": false}` → `{"results": [{"index", "relevance_score"}]}` (other fields —
//! `id`, `usage`, a `document` — are ignored). Auth: `Authorization: Bearer RERANK_API_KEY` when
//! set, marked sensitive; the key is never in a log line, a metric or a reply (`Debug` redacts it).
//!
//! Strict on the answer: results that name an index out of range, an index twice, a score that is
//! not a finite number, or no result at all are garbage, [`ErrorClass::Malformed`], like a body of
//! the wrong shape — the caller falls back to the lexical order rather than trust half an answer.
//! A server may return fewer results than documents (its own `top_n`): those left out come after.
//! Statuses: 401/403 `auth`, 429 `rate_limited` (with `Retry-After`), 400/413/422 `bad_request`,
//! 5xx `server_error`, an HTML page `blocked`, anything else `http_status`. One timeout
//! (`RERANK_TIMEOUT_SECONDS`, or the caller's shorter limit) bounds the whole exchange, and the body
//! is read under [`ANSWER_CAP`].

use std::fmt;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use serde_json::{json, Value};
use url::Url;

use gateway_core::env::{ConfigError, Env};
use gateway_core::upstream::{
    classify_transport, read_body_capped, retry_after, ErrorClass, UpstreamError, UpstreamHttp,
};

/// The largest answer read: indices and scores of a few dozen passages are a few kilobytes, and a
/// server that sends the documents back anyway stays well under this.
pub const ANSWER_CAP: usize = 1 << 20;

/// `RERANK_API_KEY`: shown nowhere.
#[derive(Clone, PartialEq, Eq)]
struct RerankKey(String);

impl fmt::Debug for RerankKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RerankKey(<redacted>)")
    }
}

/// What the reranker is configured with.
#[derive(Debug, Clone, PartialEq)]
pub struct RerankerSettings {
    /// `RERANK_URL`: where the `POST` goes, as is.
    url: Url,
    /// `RERANK_MODEL`: sent as `model` when set.
    model: Option<String>,
    /// `RERANK_API_KEY`: sent as a Bearer token when set.
    key: Option<RerankKey>,
    /// `RERANK_TIMEOUT_SECONDS`.
    pub timeout: Duration,
}

impl RerankerSettings {
    /// Reads `RERANK_*`: `None` when `RERANK_URL` is unset; a URL that is not http(s) with a host,
    /// or has a query, and a timeout that is not a positive number of seconds, are errors naming
    /// their variable.
    pub fn read(env: &Env<'_>) -> Result<Option<Self>, ConfigError> {
        let timeout = env.seconds("RERANK_TIMEOUT_SECONDS")?;
        let model = env.value("RERANK_MODEL").map(|raw| raw.text);
        let key = env.value("RERANK_API_KEY").map(|raw| RerankKey(raw.text));
        Ok(env.optional_url("RERANK_URL")?.map(|url| Self {
            url,
            model,
            key,
            timeout,
        }))
    }
}

/// One passage as the reranker scored it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored {
    /// Its index among the documents sent.
    pub index: usize,
    /// The reranker's relevance score (higher is better; comparable within one answer only).
    pub relevance: f32,
}

/// A reranker ready to be called. Cheap to share behind an `Arc`.
pub struct Reranker {
    http: UpstreamHttp,
    settings: RerankerSettings,
}

impl fmt::Debug for Reranker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reranker")
            .field("url", &self.settings.url.as_str())
            .field("timeout", &self.settings.timeout)
            .finish_non_exhaustive()
    }
}

impl Reranker {
    /// The reranker `settings` describe, called through `http`.
    pub fn new(settings: &RerankerSettings, http: UpstreamHttp) -> Self {
        Self {
            http,
            settings: settings.clone(),
        }
    }

    /// Its own call timeout (`RERANK_TIMEOUT_SECONDS`).
    pub fn timeout(&self) -> Duration {
        self.settings.timeout
    }

    /// The scores of `documents` for `query`, the best first as the server ordered them, within
    /// the timeout (and `limit`, when shorter). Dropping the future cancels the call.
    pub async fn rerank(
        &self,
        query: &str,
        documents: &[&str],
        limit: Duration,
    ) -> Result<Vec<Scored>, UpstreamError> {
        tokio::time::timeout(
            self.settings.timeout.min(limit),
            self.exchange(query, documents),
        )
        .await
        .unwrap_or_else(|_| Err(UpstreamError::new(ErrorClass::Timeout)))
    }

    async fn exchange(
        &self,
        query: &str,
        documents: &[&str],
    ) -> Result<Vec<Scored>, UpstreamError> {
        let body = request_body(self.settings.model.as_deref(), query, documents);
        let mut builder = self
            .http
            .get()
            .post(self.settings.url.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(body.to_string());
        if let Some(key) = &self.settings.key {
            let mut value = HeaderValue::from_str(&format!("Bearer {}", key.0))
                .map_err(|_| UpstreamError::new(ErrorClass::Auth))?;
            value.set_sensitive(true);
            builder = builder.header(AUTHORIZATION, value);
        }
        let response = builder
            .send()
            .await
            .map_err(|e| UpstreamError::new(classify_transport(&e)))?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = read_body_capped(response, ANSWER_CAP)
            .await
            .map_err(UpstreamError::new)?;
        interpret(status, &headers, &body, documents.len())
    }
}

/// The request's JSON: every document asked for back, scores only.
pub(crate) fn request_body(model: Option<&str>, query: &str, documents: &[&str]) -> Value {
    let mut body = json!({
        "query": query,
        "documents": documents,
        "top_n": documents.len(),
        "return_documents": false,
    });
    if let Some(model) = model {
        body["model"] = Value::from(model);
    }
    body
}

/// Reads one complete answer to a call that sent `documents` documents: the scores as the server
/// ordered them, or a classified failure.
pub fn interpret(
    status: u16,
    headers: &HeaderMap,
    body: &[u8],
    documents: usize,
) -> Result<Vec<Scored>, UpstreamError> {
    let failed = |class| {
        let err = UpstreamError::with_retry_after(class, retry_after(headers));
        match hyper::StatusCode::from_u16(status) {
            Ok(code) if !code.is_success() => err.at_status(code),
            _ => err,
        }
    };
    match status {
        200..=299 => {}
        401 | 403 => return Err(failed(ErrorClass::Auth)),
        429 => return Err(failed(ErrorClass::RateLimited)),
        400 | 413 | 422 => return Err(failed(ErrorClass::BadRequest)),
        500..=599 => return Err(failed(ErrorClass::Server)),
        _ => return Err(failed(ErrorClass::HttpStatus)),
    }
    if is_html(headers, body) {
        return Err(failed(ErrorClass::Blocked));
    }
    let answer: wire::Answer =
        serde_json::from_slice(body).map_err(|_| UpstreamError::new(ErrorClass::Malformed))?;
    checked(answer, documents).ok_or_else(|| UpstreamError::new(ErrorClass::Malformed))
}

/// The answer's results when they are sound: at least one, each index in range and named once,
/// each score a finite number.
fn checked(answer: wire::Answer, documents: usize) -> Option<Vec<Scored>> {
    if answer.results.is_empty() && documents > 0 {
        return None;
    }
    let mut seen = vec![false; documents];
    let mut scored = Vec::with_capacity(answer.results.len());
    for result in answer.results {
        let index = usize::try_from(result.index).ok()?;
        let relevance = result.relevance_score as f32;
        if index >= documents || seen[index] || !result.relevance_score.is_finite() {
            return None;
        }
        if !relevance.is_finite() {
            return None;
        }
        seen[index] = true;
        scored.push(Scored { index, relevance });
    }
    Some(scored)
}

/// An HTML page where JSON should be (a login wall, a proxy's error page).
fn is_html(headers: &HeaderMap, body: &[u8]) -> bool {
    let declared = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("text/html"));
    let opens = body
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .is_some_and(|at| body[at] == b'<');
    declared || opens
}

/// The answer as the server writes it, only the parts read.
mod wire {
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    pub(super) struct Answer {
        pub(super) results: Vec<Result_>,
    }

    #[derive(Debug, Deserialize)]
    pub(super) struct Result_ {
        /// Signed, so a negative index is garbage rather than a shape error.
        pub(super) index: i64,
        pub(super) relevance_score: f64,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn json_headers() -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers
    }

    fn read(body: &str, documents: usize) -> Result<Vec<Scored>, ErrorClass> {
        interpret(200, &json_headers(), body.as_bytes(), documents).map_err(|e| e.class)
    }

    #[test]
    fn a_jina_answer_is_read_in_the_servers_order() {
        // Jina's answer, as recorded from its documentation (a `document` and `usage` besides).
        let body = r#"{"model":"jina-reranker-v2-base-multilingual","usage":{"total_tokens":38},
            "results":[{"index":2,"document":{"text":"c"},"relevance_score":0.91},
                       {"index":0,"relevance_score":0.12}]}"#;
        let scored = read(body, 3).unwrap();
        assert_eq!(
            scored,
            [
                Scored {
                    index: 2,
                    relevance: 0.91
                },
                Scored {
                    index: 0,
                    relevance: 0.12
                }
            ]
        );
        // Cohere's shape: an `id` and `meta`, negative logits are fine.
        let cohere = r#"{"id":"x","results":[{"index":1,"relevance_score":-3.5},
            {"index":0,"relevance_score":-7.25}],"meta":{"api_version":{"version":"1"}}}"#;
        assert_eq!(read(cohere, 2).unwrap()[0].index, 1);
    }

    #[test]
    fn garbage_is_malformed() {
        for body in [
            r#"{"results":[{"index":3,"relevance_score":0.5}]}"#,
            r#"{"results":[{"index":-1,"relevance_score":0.5}]}"#,
            r#"{"results":[{"index":0,"relevance_score":0.5},{"index":0,"relevance_score":0.4}]}"#,
            r#"{"results":[{"index":0,"relevance_score":1e999}]}"#,
            r#"{"results":[{"index":0,"relevance_score":"high"}]}"#,
            r#"{"results":[{"index":0}]}"#,
            r#"{"results":[]}"#,
            r#"{"data":[{"index":0,"relevance_score":0.5}]}"#,
            r#"[{"index":0,"score":0.5}]"#,
            "not json",
        ] {
            assert_eq!(read(body, 3), Err(ErrorClass::Malformed), "{body}");
        }
    }

    #[test]
    fn statuses_are_classified() {
        let class = |status, body: &str| {
            interpret(status, &json_headers(), body.as_bytes(), 1)
                .unwrap_err()
                .class
        };
        assert_eq!(class(500, "{}"), ErrorClass::Server);
        assert_eq!(class(503, "overloaded"), ErrorClass::Server);
        assert_eq!(class(401, r#"{"detail":"bad key"}"#), ErrorClass::Auth);
        assert_eq!(class(429, "{}"), ErrorClass::RateLimited);
        assert_eq!(class(422, "{}"), ErrorClass::BadRequest);
        assert_eq!(class(404, "{}"), ErrorClass::HttpStatus);
        let mut html = HeaderMap::new();
        html.insert(CONTENT_TYPE, HeaderValue::from_static("text/html"));
        assert_eq!(
            interpret(200, &html, b"<html>sign in</html>", 1)
                .unwrap_err()
                .class,
            ErrorClass::Blocked
        );
        let mut limited = json_headers();
        limited.insert("retry-after", HeaderValue::from_static("30"));
        let err = interpret(429, &limited, b"{}", 1).unwrap_err();
        assert_eq!(err.retry_after, Some(Duration::from_secs(30)));
    }

    #[test]
    fn the_request_asks_for_every_document_by_score_alone() {
        let body = request_body(Some("bge-reranker-v2-m3"), "q", &["a", "b"]);
        assert_eq!(
            body,
            json!({"model": "bge-reranker-v2-m3", "query": "q", "documents": ["a", "b"],
                   "top_n": 2, "return_documents": false})
        );
        assert!(request_body(None, "q", &["a"]).get("model").is_none());
    }

    fn env(
        vars: &'static [(&'static str, &'static str)],
    ) -> Result<Option<RerankerSettings>, ConfigError> {
        let lookup = |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        };
        RerankerSettings::read(&Env::new(&lookup))
    }

    #[test]
    fn settings_are_read_and_a_bad_value_names_its_variable() {
        assert_eq!(env(&[]).unwrap(), None);
        let settings = env(&[
            ("RERANK_URL", "http://127.0.0.1:7997/rerank"),
            ("RERANK_MODEL", "bge-reranker-v2-m3"),
            ("RERANK_API_KEY", "secret-key"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(settings.url.as_str(), "http://127.0.0.1:7997/rerank");
        assert_eq!(settings.model.as_deref(), Some("bge-reranker-v2-m3"));
        assert_eq!(settings.timeout, Duration::from_secs(2));
        assert!(!format!("{settings:?}").contains("secret-key"));
        for (vars, variable) in [
            (
                &[("RERANK_URL", "ftp://reranker/")] as &'static [_],
                "RERANK_URL",
            ),
            (&[("RERANK_URL", "http://r/rerank?x=1")], "RERANK_URL"),
            (&[("RERANK_URL", "not a url")], "RERANK_URL"),
            (
                &[("RERANK_URL", "http://r/"), ("RERANK_TIMEOUT_SECONDS", "0")],
                "RERANK_TIMEOUT_SECONDS",
            ),
            (
                &[
                    ("RERANK_URL", "http://r/"),
                    ("RERANK_TIMEOUT_SECONDS", "soon"),
                ],
                "RERANK_TIMEOUT_SECONDS",
            ),
        ] {
            assert_eq!(env(vars).unwrap_err().variable, variable, "{vars:?}");
        }
    }
}
