//! `/search`: parse the parameters into one [`SearchRequest`], ask the engine, render the answer in
//! the requested format with `X-Cache` and `X-Gateway-Outcome`, and log one line.

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use tokio::time::Instant;

use super::error::ApiError;
use super::format;
use crate::cache::CacheStatus;
use crate::pipeline::Gateway;
use crate::request::{Format, RawParams, SearchRequest};

fn parse(raw: &str) -> Result<RawParams, ApiError> {
    serde_urlencoded::from_str(raw)
        .map_err(|_| ApiError::Unreadable("parameters must be URL-encoded and must not repeat"))
}

/// `GET /search?q=…`
pub(super) async fn get(State(gateway): State<Gateway>, RawQuery(query): RawQuery) -> Response {
    match parse(query.as_deref().unwrap_or("")) {
        Ok(raw) => answer(gateway, raw).await,
        Err(err) => err.into_response(),
    }
}

/// `POST /search` with `application/x-www-form-urlencoded` (as SearXNG accepts); parameters in the
/// query string are used when the body is empty.
pub(super) async fn post(
    State(gateway): State<Gateway>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
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
        Ok(raw) => answer(gateway, raw).await,
        Err(err) => err.into_response(),
    }
}

async fn answer(gateway: Gateway, raw: RawParams) -> Response {
    let started = Instant::now();
    let req = match SearchRequest::parse(raw, gateway.config().max_query_bytes) {
        Ok(req) => req,
        Err(err) => {
            tracing::info!(status = 400, error = err.code(), "search refused");
            return ApiError::from(err).into_response();
        }
    };
    let format = req.format;
    let query = req.query.clone();
    let served = match gateway.search(req).await {
        Ok(served) => served,
        Err(_) => return ApiError::Internal.into_response(),
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
        CacheStatus::Stale { .. } => "stale",
    };
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
