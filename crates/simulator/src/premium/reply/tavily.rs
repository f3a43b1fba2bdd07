//! Tavily (`POST /search`, `Authorization: Bearer`): results under `results[]`, `answer` null unless asked,
//! errors as `{"detail":{"error":…}}` — 432 when the plan's usage limit is reached.

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};

use super::{json_value, Asked, SimError, SimHit};

pub(super) fn results(hits: &[SimHit], asked: &Asked) -> Response {
    let results: Vec<Value> = hits
        .iter()
        .enumerate()
        .map(|(i, h)| {
            json!({
                "title": h.title,
                "url": h.url,
                "content": h.content,
                "score": 0.9 - 0.01 * i as f64,
                "raw_content": null,
                "published_date": h.published_date,
            })
        })
        .collect();
    let body = json!({
        "query": asked.query,
        "answer": null,
        "images": [],
        "results": results,
        "response_time": 0.92,
        "request_id": "sim-request",
    });
    json_value(StatusCode::OK, &body)
}

pub(super) fn empty(asked: &Asked) -> Response {
    json_value(
        StatusCode::OK,
        &json!({ "query": asked.query, "answer": null, "images": [], "results": [], "response_time": 0.41 }),
    )
}

pub(super) fn error(err: SimError) -> Response {
    let (status, message) = match err {
        SimError::Auth => (
            StatusCode::UNAUTHORIZED,
            "Unauthorized: missing or invalid API key.",
        ),
        SimError::Quota => (
            StatusCode::from_u16(432).unwrap_or(StatusCode::PAYMENT_REQUIRED),
            "This request exceeds your plan's set usage limit. Please upgrade your plan or contact support@tavily.com",
        ),
        SimError::RateLimited { .. } => (
            StatusCode::TOO_MANY_REQUESTS,
            "Your request has been blocked due to excessive requests.",
        ),
        SimError::BadRequest => (StatusCode::BAD_REQUEST, "Invalid request parameters."),
        SimError::Server => (StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error"),
    };
    json_value(status, &json!({ "detail": { "error": message } }))
}
