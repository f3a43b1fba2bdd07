//! Perplexity Search (`POST /search`, `Authorization: Bearer`): `results[]` with `title`, `url`,
//! `snippet`, `date`, `last_updated`; errors as `{"error": {"message", "type", "code"}}` — spent credits
//! are 429 `insufficient_quota`, a body it cannot validate 422 with FastAPI's `detail` list.

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};

use super::{json_value, Asked, SimError, SimHit};

pub(super) fn results(hits: &[SimHit]) -> Response {
    let results: Vec<Value> = hits
        .iter()
        .map(|h| {
            json!({
                "title": h.title,
                "url": h.url,
                "snippet": h.content,
                "date": h.published_date,
                "last_updated": h.published_date,
            })
        })
        .collect();
    json_value(
        StatusCode::OK,
        &json!({ "results": results, "id": "sim-search" }),
    )
}

pub(super) fn empty(_: &Asked) -> Response {
    json_value(
        StatusCode::OK,
        &json!({ "results": [], "id": "sim-search" }),
    )
}

pub(super) fn error(err: SimError) -> Response {
    let (status, kind, message) = match err {
        SimError::Auth => (
            StatusCode::UNAUTHORIZED,
            "invalid_api_key",
            "Invalid API key provided.",
        ),
        SimError::Quota => (
            StatusCode::TOO_MANY_REQUESTS,
            "insufficient_quota",
            "You exceeded your current quota, please check your plan and billing details.",
        ),
        SimError::RateLimited { .. } => (
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_exceeded",
            "Rate limit exceeded.",
        ),
        SimError::BadRequest => {
            return json_value(
                StatusCode::UNPROCESSABLE_ENTITY,
                &json!({ "detail": [{ "loc": ["body", "query"], "msg": "Field required", "type": "missing" }] }),
            )
        }
        SimError::Server => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            "Internal server error",
        ),
    };
    json_value(
        status,
        &json!({ "error": { "message": message, "type": kind, "code": status.as_u16() } }),
    )
}
