//! Serper (`POST /search`, `X-API-KEY`): Google's organic results under `organic[]` (absent when there
//! are none), `searchParameters` echoed on every answer, `credits` per call; errors as
//! `{"message", "statusCode"}` — a bad key is 403, spent credits 400 "Not enough credits".

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};

use super::{json_value, Asked, SimError, SimHit};

fn parameters(asked: &Asked) -> Value {
    json!({ "q": asked.query, "type": "search", "engine": "google", "num": asked.count })
}

pub(super) fn results(hits: &[SimHit], asked: &Asked) -> Response {
    let organic: Vec<Value> = hits
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let mut entry = json!({
                "title": h.title,
                "link": h.url,
                "snippet": h.content,
                "position": i + 1,
            });
            if let Some(date) = &h.published_date {
                entry["date"] = json!(date);
            }
            entry
        })
        .collect();
    let body = json!({ "searchParameters": parameters(asked), "organic": organic, "credits": 1 });
    json_value(StatusCode::OK, &body)
}

pub(super) fn empty(asked: &Asked) -> Response {
    json_value(
        StatusCode::OK,
        &json!({ "searchParameters": parameters(asked), "credits": 1 }),
    )
}

pub(super) fn error(err: SimError) -> Response {
    let (status, message) = match err {
        SimError::Auth => (StatusCode::FORBIDDEN, "Unauthorized."),
        SimError::Quota => (StatusCode::BAD_REQUEST, "Not enough credits"),
        SimError::RateLimited { .. } => (StatusCode::TOO_MANY_REQUESTS, "Too many requests"),
        SimError::BadRequest => (StatusCode::BAD_REQUEST, "Query param 'q' is required"),
        SimError::Server => (StatusCode::INTERNAL_SERVER_ERROR, "Internal server error"),
    };
    json_value(
        status,
        &json!({ "message": message, "statusCode": status.as_u16() }),
    )
}
