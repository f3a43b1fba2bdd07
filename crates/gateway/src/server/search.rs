//! `/search`: parse the parameters into one [`SearchRequest`], ask the engine, render the answer in
//! the requested format with `X-Cache` and `X-Gateway-Outcome`, and log one line.

use axum::body::{Body, Bytes};
use axum::extract::{RawQuery, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use tokio::time::Instant;
use tracing::field::Empty;
use tracing::{Instrument, Span};

use super::error::ApiError;
use super::format;
use crate::cache::CacheStatus;
use crate::pipeline::{Gateway, SearchError};
use crate::request::{Format, RawParams, SearchRequest};
use crate::trace::{self, TARGET};

/// A query string or form body as `/search` parameters (each at most once).
pub(super) fn parse(raw: &str) -> Result<RawParams, ApiError> {
    serde_urlencoded::from_str(raw)
        .map_err(|_| ApiError::Unreadable("parameters must be URL-encoded and must not repeat"))
}

/// The request's `search` span ([`crate::trace`]), continuing the client's trace.
fn search_span(method: &'static str, headers: &HeaderMap) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        "search",
        otel.kind = "server",
        http.request.method = method,
        http.response.status_code = Empty,
        outcome = Empty,
        cache = Empty,
        error_class = Empty,
        otel.status_code = Empty,
    );
    trace::continue_client_trace(&span, headers);
    span
}

/// `GET /search?q=…`
pub(super) async fn get(State(gateway): State<Gateway>, request: Request) -> Response {
    let span = search_span("GET", request.headers());
    let parsed = parse(request.uri().query().unwrap_or(""));
    drop(request);
    match parsed {
        Ok(raw) => {
            let answering = answer(gateway, raw, span.clone());
            answering.instrument(span).await
        }
        Err(err) => err.into_response(),
    }
}

/// `POST /search` with `application/x-www-form-urlencoded` (as SearXNG accepts); parameters in the
/// query string are used when the body is empty. The body is read within `MAX_BODY_BYTES` (413) and
/// `REQUEST_READ_TIMEOUT_SECONDS` (408).
pub(super) async fn post(
    State(gateway): State<Gateway>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let span = search_span("POST", &headers);
    let answering = post_answer(gateway, query, headers, body, span.clone());
    answering.instrument(span).await
}

async fn post_answer(
    gateway: Gateway,
    query: Option<String>,
    headers: HeaderMap,
    body: Body,
    span: Span,
) -> Response {
    let body = match read_body(&gateway, &headers, body).await {
        Ok(body) => body,
        Err(err) => return err.into_response(),
    };
    let form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    let raw = if body.is_empty() {
        parse(query.as_deref().unwrap_or(""))
    } else if !form {
        Err(ApiError::Unreadable(
            "POST /search takes an application/x-www-form-urlencoded body",
        ))
    } else {
        std::str::from_utf8(&body)
            .map_err(|_| ApiError::Unreadable("the form body is not UTF-8"))
            .and_then(parse)
    };
    match raw {
        Ok(raw) => answer(gateway, raw, span).await,
        Err(err) => err.into_response(),
    }
}

/// The whole body, at most `MAX_BODY_BYTES` (a declared length over it is refused unread), within
/// `REQUEST_READ_TIMEOUT_SECONDS`.
async fn read_body(gateway: &Gateway, headers: &HeaderMap, body: Body) -> Result<Bytes, ApiError> {
    let limits = gateway.config().server_limits;
    let max = limits.max_body_bytes;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > max as u64) {
        return Err(ApiError::BodyTooLarge(max));
    }
    let read = tokio::time::timeout(limits.read_timeout, axum::body::to_bytes(body, max));
    match read.await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(err)) => {
            let over_limit = std::error::Error::source(&err)
                .is_some_and(|source| source.is::<http_body_util::LengthLimitError>());
            if over_limit {
                Err(ApiError::BodyTooLarge(max))
            } else {
                Err(ApiError::Unreadable("the request body could not be read"))
            }
        }
        Err(_) => Err(ApiError::BodyTimeout(limits.read_timeout.as_secs())),
    }
}

async fn answer(gateway: Gateway, raw: RawParams, span: Span) -> Response {
    let started = Instant::now();
    let req = match SearchRequest::parse(raw, gateway.config().max_query_bytes) {
        Ok(req) => req,
        Err(err) => {
            tracing::info!(status = 400, error = err.code(), "search refused");
            span.record("http.response.status_code", 400);
            span.record("error_class", err.code());
            return ApiError::from(err).into_response();
        }
    };
    let format = req.format;
    let query = req.query.clone();
    let served = match gateway.search(req).await {
        Ok(served) => served,
        Err(SearchError::Overloaded(_)) => {
            tracing::info!(status = 503, error = "overloaded", "search shed");
            span.record("http.response.status_code", 503);
            trace::record_error(&span, "overloaded");
            return ApiError::Overloaded.into_response();
        }
        Err(SearchError::Lost(_)) => return ApiError::Internal.into_response(),
    };
    let answer = &served.answer;
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::BAD_GATEWAY);
    let (body, content_type): (Bytes, &'static str) = match (format, status.is_success()) {
        (Format::Csv | Format::Rss, true) => {
            let document: serde_json::Map<String, serde_json::Value> =
                serde_json::from_slice(&answer.json).unwrap_or_default();
            if format == Format::Csv {
                (format::csv(&document).into(), "text/csv; charset=utf-8")
            } else {
                (
                    format::rss(&document, &query).into(),
                    "application/rss+xml; charset=utf-8",
                )
            }
        }
        _ => (answer.json.clone(), "application/json"),
    };
    let cache = match served.cache {
        CacheStatus::Hit => "hit",
        CacheStatus::Miss => "miss",
    };
    span.record("http.response.status_code", status.as_u16());
    span.record("outcome", served.outcome.as_str());
    span.record("cache", cache);
    if !status.is_success() {
        trace::record_error(&span, "all_upstreams_failed");
    }
    tracing::info!(
        status = status.as_u16(),
        outcome = served.outcome.as_str(),
        cache,
        results = answer.result_count,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "search"
    );
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert("x-cache", HeaderValue::from_static(cache));
    headers.insert(
        "x-gateway-outcome",
        HeaderValue::from_static(served.outcome.as_str()),
    );
    response
}
