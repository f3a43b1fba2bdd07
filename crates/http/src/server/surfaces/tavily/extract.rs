//! `POST /tavily/extract`: Tavily's extract request and response shape, each page read with the
//! gateway's decisions (the cache, the host's breaker, the premium readers of `READ_PROVIDERS`).
//!
//! Request: `urls` (one URL, or a list of 1–20); `format` (`markdown`, the default, or `text`);
//! `extract_depth` (`basic`; `advanced` may ask a premium reader when the direct read's text is
//! thin); `include_images`; `timeout` (1–60 s; default `FALLBACK_TIMEOUT_SECONDS`), the budget of
//! every read; `query` and `chunks_per_source` (1–5, default 3, only with a query, as Tavily
//! validates them). `include_usage` is harmless and taken, `include_favicon: false` too; refused by
//! name: `include_favicon: true` and any field Tavily's API does not have.
//!
//! Response: `{"results": [{"url", "raw_content", "images"}], "failed_results": [{"url",
//! "error"}], "response_time"}`, each `url` exactly as the client sent it, in the order sent. With
//! a `query`, each `raw_content` is the page's `chunks_per_source` passages that best answer it
//! (each at most 500 characters, chosen by [`gateway_engine::read::passages`] from the page as read
//! or cached — never a second read), in page order, joined by ` [...] ` as Tavily joins its chunks;
//! chosen passages that follow each other on the page come as one piece (nothing between them was
//! left out). The
//! URLs are read at once, and one that fails never fails the others: its error is a sentence
//! naming what went wrong, ending with its stable code (`the site blocked the read (blocked:
//! cloudflare)`, [`read_call::unread_reason`]), never an upstream's body.
//! With a reranker configured (`RERANK_URL`), the lexical ranking's best candidates are ordered
//! by it (the lexical order when it fails, times out, answers garbage or its breaker is open).
//! `?explain=1` adds a `gateway` object per URL; with a `query`, its `passages` says which ranking
//! chose the chunks (`ranked_by`: `lexical`, `reranker`, or `lexical_fallback` with the reason in
//! `fallback`).

use std::sync::Arc;

use axum::extract::{Extension, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::time::Instant;

use super::chunks::{Chunks, DEFAULT_CHUNKS};
use super::{carries_key, TavilyError, TavilyOwn, MAX_URLS};
use crate::gateway::Gateway;
use crate::server::kit::body::LimitedBody;
use crate::server::kit::explain;
use crate::server::kit::gate::Admitted;
use crate::server::kit::json_fields::{self, field, InvalidField};
use crate::server::kit::read_call::{self, Asked};
use crate::server::kit::refusal::json_response;
use gateway_core::request::ReadFormat;
use gateway_engine::read::Depth;
use gateway_upstreams::reader::ReadFailure;

/// `urls`: one or several.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
enum Urls {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum WireFormat {
    Markdown,
    Text,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum WireDepth {
    Basic,
    Advanced,
}

/// An extract request, read and checked.
#[derive(Debug, Clone, PartialEq)]
struct ExtractRequest {
    urls: Vec<String>,
    format: ReadFormat,
    depth: Depth,
    include_images: bool,
    timeout: Option<f64>,
    /// `query` and `chunks_per_source`: the passages each page is cut to, when asked.
    chunks: Option<Chunks>,
}

/// What Tavily takes for `chunks_per_source` in an extract.
const CHUNKS_EXPECTED: &str = "an integer from 1 to 5";

/// `query` (blank counts as absent) and `chunks_per_source`, checked as Tavily's extract checks
/// them.
fn read_chunks(fields: &Map<String, Value>) -> Result<Option<Chunks>, TavilyError> {
    let query = field::<String>(fields, "query", "a string")?
        .map(|q| q.trim().to_owned())
        .filter(|q| !q.is_empty());
    let per_source = json_fields::number_in(fields, "chunks_per_source", 1..=5, CHUNKS_EXPECTED)?;
    match (query, per_source) {
        (None, None) => Ok(None),
        (None, Some(_)) => Err(TavilyError::Own(TavilyOwn::ChunksWithoutQuery)),
        (Some(query), per_source) => Ok(Some(Chunks {
            query,
            per_source: per_source.map_or(DEFAULT_CHUNKS, |n| n as usize),
        })),
    }
}

impl ExtractRequest {
    fn read(fields: &Map<String, Value>) -> Result<Self, TavilyError> {
        const READS: [&str; 8] = [
            "urls",
            "format",
            "extract_depth",
            "include_images",
            "timeout",
            "api_key",
            "query",
            "chunks_per_source",
        ];
        let harmless_at =
            |name: &str, value: &Value| name == "include_favicon" && value == &Value::Bool(false);
        if let Some(named) =
            json_fields::unhonoured(fields, &READS, &["include_usage"], harmless_at)
        {
            return Err(TavilyError::Own(TavilyOwn::Unsupported(named)));
        }
        let urls = match field::<Urls>(fields, "urls", "a URL or a list of URLs")? {
            None => return Err(TavilyError::Own(TavilyOwn::NoUrls)),
            Some(Urls::One(url)) => vec![url],
            Some(Urls::Many(urls)) => urls,
        };
        if urls.is_empty() || urls.iter().all(|u| u.trim().is_empty()) {
            return Err(TavilyError::Own(TavilyOwn::NoUrls));
        }
        if urls.len() > MAX_URLS {
            return Err(TavilyError::Own(TavilyOwn::TooManyUrls));
        }
        let format = match field::<WireFormat>(fields, "format", "markdown or text")? {
            None | Some(WireFormat::Markdown) => ReadFormat::Markdown,
            Some(WireFormat::Text) => ReadFormat::Text,
        };
        let depth = match field::<WireDepth>(fields, "extract_depth", "basic or advanced")? {
            None | Some(WireDepth::Basic) => Depth::Basic,
            Some(WireDepth::Advanced) => Depth::Advanced,
        };
        let timeout = field::<f64>(fields, "timeout", "a number of seconds from 1 to 60")?;
        if timeout.is_some_and(|t| !(1.0..=60.0).contains(&t)) {
            return Err(InvalidField {
                name: "timeout",
                expected: "a number of seconds from 1 to 60",
            }
            .into());
        }
        Ok(Self {
            urls,
            format,
            depth,
            include_images: field(fields, "include_images", "a boolean")?.unwrap_or(false),
            timeout,
            chunks: read_chunks(fields)?,
        })
    }
}

/// Tavily's extract response.
#[derive(Debug, Serialize)]
struct Reply {
    results: Vec<Extracted>,
    failed_results: Vec<Failed>,
    response_time: f64,
}

#[derive(Debug, Serialize)]
struct Extracted {
    url: String,
    raw_content: String,
    images: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gateway: Option<Value>,
}

#[derive(Debug, Serialize)]
struct Failed {
    url: String,
    error: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    gateway: Option<Value>,
}

/// `POST /tavily/extract`.
pub(crate) async fn extract(
    State(gateway): State<Gateway>,
    Extension(admitted): Extension<Admitted>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    LimitedBody(body): LimitedBody,
) -> Response {
    let started = Instant::now();
    let Ok(explain) = explain::wanted_in_query(query.as_deref()) else {
        return refused(TavilyError::Own(TavilyOwn::InvalidExplain));
    };
    let keyed = admitted.clients.requires_keys();
    let decoded = body
        .map_err(TavilyError::from)
        .and_then(|body| decode(keyed, &headers, &body));
    let request = match decoded {
        Ok(request) => request,
        Err(err) => return refused(err),
    };
    let budget = request.timeout.map_or(
        gateway.settings().request_budget,
        std::time::Duration::from_secs_f64,
    );
    let asked: Vec<Asked> = request.urls.iter().map(|u| Asked::new(u)).collect();
    let reads = read_call::many(
        &gateway,
        &admitted,
        &asked,
        request.format,
        request.depth,
        budget,
    )
    .await;
    let mut reply = Reply {
        results: Vec::new(),
        failed_results: Vec::new(),
        response_time: 0.0,
    };
    // Each page's chunks at once (a reranker's call per page, not one after another), within
    // what is left of the budget.
    let left = budget.saturating_sub(started.elapsed());
    let chunked = futures::future::join_all(reads.iter().map(|read| async {
        let done = read.as_ref()?.result.as_ref().ok()?;
        let chunks = request.chunks.as_ref()?;
        Some(chunks.of(&gateway, Arc::clone(&done.document), left).await)
    }))
    .await;
    for ((asked, read), chunked) in asked.into_iter().zip(reads).zip(chunked) {
        let ranked_by = chunked.as_ref().map(|(_, by)| *by);
        let gateway_object = |read: &gateway_engine::read::PageRead| {
            explain.then(|| {
                let mut object = explain::read_object(read, &admitted);
                if let Some(by) = ranked_by {
                    object["passages"] = explain::passages_object(by);
                }
                object
            })
        };
        match read {
            None => reply.failed_results.push(Failed {
                url: asked.as_sent,
                error: read_call::unread_reason(ReadFailure::InvalidUrl),
                gateway: None,
            }),
            Some(read) => {
                let object = gateway_object(&read);
                match &read.result {
                    Ok(done) => reply.results.push(Extracted {
                        url: asked.as_sent,
                        raw_content: match chunked {
                            Some((chunks, _)) => chunks,
                            None => done.document.content.clone(),
                        },
                        images: if request.include_images {
                            done.document.images.clone()
                        } else {
                            Vec::new()
                        },
                        gateway: object,
                    }),
                    Err(failed) => reply.failed_results.push(Failed {
                        url: asked.as_sent,
                        error: read_call::unread_reason(failed.failure),
                        gateway: object,
                    }),
                }
            }
        }
    }
    reply.response_time = (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
    json_response(
        StatusCode::OK,
        serde_json::to_vec(&reply).unwrap_or_default(),
    )
}

fn refused(err: TavilyError) -> Response {
    tracing::info!(error = err.code(), "extract refused");
    err.into_response()
}

/// The body as a JSON object, checked for a key (unless the gate named the caller), read.
fn decode(keyed: bool, headers: &HeaderMap, body: &[u8]) -> Result<ExtractRequest, TavilyError> {
    let Ok(Value::Object(fields)) = serde_json::from_slice::<Value>(body) else {
        return Err(TavilyError::NotJson);
    };
    if !keyed && !carries_key(headers, &fields) {
        return Err(TavilyError::MissingKey);
    }
    ExtractRequest::read(&fields)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(body: Value) -> Result<ExtractRequest, TavilyError> {
        ExtractRequest::read(body.as_object().unwrap())
    }

    #[test]
    fn reads_what_tavily_python_sends() {
        let one = read(json!({"urls": "https://a.example/", "timeout": 30})).unwrap();
        assert_eq!(one.urls, ["https://a.example/"]);
        assert_eq!(
            (one.format, one.depth),
            (ReadFormat::Markdown, Depth::Basic)
        );
        assert_eq!(one.timeout, Some(30.0));
        let many = read(json!({
            "urls": ["https://a.example/", "https://b.example/"], "format": "text",
            "extract_depth": "advanced", "include_images": true, "include_favicon": false,
            "include_usage": true,
        }))
        .unwrap();
        assert_eq!(many.urls.len(), 2);
        assert_eq!(
            (many.format, many.depth),
            (ReadFormat::Text, Depth::Advanced)
        );
        assert!(many.include_images);
        let err = read(json!({"urls": "https://a.example/", "include_favicon": true})).unwrap_err();
        assert_eq!(err.code(), "unsupported_option");
        assert!(
            err.message().contains("include_favicon"),
            "{}",
            err.message()
        );
        let err = read(json!({"urls": "https://a.example/", "chunks": 2})).unwrap_err();
        assert_eq!(
            err.code(),
            "unsupported_option",
            "a field Tavily does not have"
        );
    }

    #[test]
    fn a_query_asks_for_chunks_three_by_default_as_tavily_does() {
        let url = "https://a.example/";
        assert_eq!(read(json!({ "urls": url })).unwrap().chunks, None);
        let chunks = |body| read(body).unwrap().chunks.unwrap();
        assert_eq!(
            chunks(json!({"urls": url, "query": " museum tickets "})),
            Chunks {
                query: "museum tickets".to_owned(),
                per_source: 3
            }
        );
        assert_eq!(
            chunks(json!({"urls": url, "query": "q", "chunks_per_source": 5})).per_source,
            5
        );
        assert_eq!(
            read(json!({"urls": url, "query": "  "})).unwrap().chunks,
            None,
            "a blank query asks for nothing"
        );
    }

    #[test]
    fn chunks_per_source_out_of_range_or_without_a_query_is_refused_naming_it() {
        let url = "https://a.example/";
        for body in [
            json!({"urls": url, "query": "q", "chunks_per_source": 0}),
            json!({"urls": url, "query": "q", "chunks_per_source": 6}),
            json!({"urls": url, "query": "q", "chunks_per_source": 2.5}),
            json!({"urls": url, "query": "q", "chunks_per_source": "3"}),
            json!({"urls": url, "chunks_per_source": 2}),
            json!({"urls": url, "query": "", "chunks_per_source": 2}),
        ] {
            let err = read(body.clone()).unwrap_err();
            assert_eq!(err.code(), "invalid_field", "{body}");
            assert_eq!(err.status(), StatusCode::BAD_REQUEST, "{body}");
            assert!(
                err.message().contains("chunks_per_source"),
                "{body}: {}",
                err.message()
            );
        }
        let err = read(json!({"urls": url, "query": 7})).unwrap_err();
        assert!(err.message().contains("query"), "{}", err.message());
    }

    #[test]
    fn bad_requests_are_named() {
        let code = |body| read(body).unwrap_err().code();
        assert_eq!(code(json!({})), "invalid_urls");
        assert_eq!(code(json!({"urls": []})), "invalid_urls");
        assert_eq!(code(json!({"urls": [" "]})), "invalid_urls");
        let many: Vec<String> = (0..=MAX_URLS)
            .map(|i| format!("https://{i}.example/"))
            .collect();
        assert_eq!(code(json!({ "urls": many })), "invalid_urls");
        assert_eq!(code(json!({"urls": 7})), "invalid_field");
        assert_eq!(
            code(json!({"urls": "u", "format": "html"})),
            "invalid_field"
        );
        assert_eq!(
            code(json!({"urls": "u", "extract_depth": "deep"})),
            "invalid_field"
        );
        assert_eq!(code(json!({"urls": "u", "timeout": 0.5})), "invalid_field");
        assert_eq!(code(json!({"urls": "u", "timeout": 61})), "invalid_field");
        assert!(read(json!({"urls": "u", "timeout": 60})).is_ok());
    }

    #[test]
    fn a_body_without_a_key_is_refused_on_an_open_gateway() {
        let body = br#"{"urls": "https://a.example/"}"#;
        assert_eq!(
            decode(false, &HeaderMap::new(), body).unwrap_err().code(),
            "missing_key"
        );
        assert!(decode(true, &HeaderMap::new(), body).is_ok());
        assert_eq!(
            decode(true, &HeaderMap::new(), b"[]").unwrap_err().code(),
            "not_json"
        );
    }
}
