//! SearchAPI.io (`GET /api/v1/search?engine=google`, `Authorization: Bearer`): `organic_results[]` beside
//! `search_metadata` and `search_parameters`; nothing found is a 200 whose `error` says Google returned
//! no results; errors as `{"error": "…"}` — a spent plan is a 429 that says so.

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};

use super::{json_value, Asked, SimError, SimHit};

fn metadata() -> Value {
    json!({ "id": "search_sim", "status": "Success", "total_time_taken": 1.2 })
}

pub(super) fn results(hits: &[SimHit], asked: &Asked) -> Response {
    let organic: Vec<Value> = hits
        .iter()
        .enumerate()
        .map(|(i, h)| {
            json!({
                "position": i + 1,
                "title": h.title,
                "link": h.url,
                "snippet": h.content,
                "date": h.published_date,
            })
        })
        .collect();
    json_value(
        StatusCode::OK,
        &json!({
            "search_metadata": metadata(),
            "search_parameters": { "engine": "google", "q": asked.query },
            "organic_results": organic,
        }),
    )
}

pub(super) fn empty(asked: &Asked) -> Response {
    json_value(
        StatusCode::OK,
        &json!({
            "search_metadata": metadata(),
            "search_parameters": { "engine": "google", "q": asked.query },
            "error": "Google hasn't returned any results for this query.",
        }),
    )
}

pub(super) fn error(err: SimError) -> Response {
    let (status, message) = match err {
        SimError::Auth => (StatusCode::UNAUTHORIZED, "Invalid API key."),
        SimError::Quota => (
            StatusCode::TOO_MANY_REQUESTS,
            "You have run out of searches for your plan. Please upgrade your plan.",
        ),
        SimError::RateLimited { .. } => (
            StatusCode::TOO_MANY_REQUESTS,
            "Too many requests. Please slow down.",
        ),
        SimError::BadRequest => (StatusCode::BAD_REQUEST, "Missing query `q` parameter."),
        SimError::Server => (StatusCode::INTERNAL_SERVER_ERROR, "Internal server error."),
    };
    json_value(status, &json!({ "error": message }))
}
