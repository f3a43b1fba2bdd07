//! Exa (`POST /search`, `x-api-key`): results under `results[]` with snippets only when `contents` asked
//! for highlights or text, `costDollars` on every answer, errors as `{"requestId","error","tag"}` — 402
//! `NO_MORE_CREDITS` when the credits are gone, 503 `SERVICE_OVERLOADED` for a server failure.

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};

use super::{json_value, Asked, SimError, SimHit};

pub(super) fn results(hits: &[SimHit], asked: &Asked) -> Response {
    let results: Vec<Value> = hits
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let mut result = json!({
                "id": h.url,
                "url": h.url,
                "title": h.title,
                "publishedDate": h.published_date,
                "author": null,
                "score": 0.5 - 0.01 * i as f64,
            });
            if asked.highlights {
                result["highlights"] = json!([h.content]);
                result["highlightScores"] = json!([0.5]);
            }
            if asked.text {
                result["text"] = json!(h.content);
            }
            result
        })
        .collect();
    let body = json!({
        "requestId": "sim-request",
        "resolvedSearchType": "neural",
        "results": results,
        "costDollars": { "total": 0.007 },
    });
    json_value(StatusCode::OK, &body)
}

pub(super) fn empty() -> Response {
    json_value(
        StatusCode::OK,
        &json!({ "requestId": "sim-request", "results": [], "costDollars": { "total": 0.005 } }),
    )
}

pub(super) fn error(err: SimError) -> Response {
    let (status, message, tag) = match err {
        SimError::Auth => (
            StatusCode::UNAUTHORIZED,
            "Invalid API key",
            "INVALID_API_KEY",
        ),
        SimError::Quota => (
            StatusCode::PAYMENT_REQUIRED,
            "You have run out of credits",
            "NO_MORE_CREDITS",
        ),
        SimError::RateLimited { .. } => (
            StatusCode::TOO_MANY_REQUESTS,
            "Rate limit exceeded",
            "RATE_LIMIT_EXCEEDED",
        ),
        SimError::BadRequest => (
            StatusCode::BAD_REQUEST,
            "Invalid request body",
            "INVALID_REQUEST_BODY",
        ),
        SimError::Server => (
            StatusCode::SERVICE_UNAVAILABLE,
            "Service overloaded, please retry",
            "SERVICE_OVERLOADED",
        ),
    };
    json_value(
        status,
        &json!({ "requestId": "sim-request", "error": message, "tag": tag }),
    )
}
