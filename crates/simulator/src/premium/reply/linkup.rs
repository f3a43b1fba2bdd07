//! Linkup (`POST /v1/search`, `Authorization: Bearer`): with `outputType: "searchResults"`, `results[]`
//! of `type` `text` (`name`, `url`, `content`); nothing found is 400 `SEARCH_QUERY_NO_RESULT`; errors as
//! `{"statusCode", "error": {"code", "message", "details"}}` — spent credits 429
//! `INSUFFICIENT_FUNDS_CREDITS`.

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};

use super::{json_value, SimError, SimHit};

pub(super) fn results(hits: &[SimHit]) -> Response {
    let results: Vec<Value> = hits
        .iter()
        .map(|h| json!({ "type": "text", "name": h.title, "url": h.url, "content": h.content }))
        .collect();
    json_value(StatusCode::OK, &json!({ "results": results }))
}

pub(super) fn empty() -> Response {
    failure(
        StatusCode::BAD_REQUEST,
        "SEARCH_QUERY_NO_RESULT",
        "The query did not yield any result",
    )
}

pub(super) fn error(err: SimError) -> Response {
    let (status, code, message) = match err {
        SimError::Auth => (
            StatusCode::UNAUTHORIZED,
            "UNAUTHORIZED",
            "Unauthorized action",
        ),
        SimError::Quota => (
            StatusCode::TOO_MANY_REQUESTS,
            "INSUFFICIENT_FUNDS_CREDITS",
            "You do not have enough credits to perform this request.",
        ),
        SimError::RateLimited { .. } => (
            StatusCode::TOO_MANY_REQUESTS,
            "TOO_MANY_REQUESTS",
            "Too many requests",
        ),
        SimError::BadRequest => (
            StatusCode::BAD_REQUEST,
            "VALIDATION_ERROR",
            "Validation failed",
        ),
        SimError::Server => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL_SERVER_ERROR",
            "Internal server error",
        ),
    };
    failure(status, code, message)
}

fn failure(status: StatusCode, code: &str, message: &str) -> Response {
    json_value(
        status,
        &json!({ "statusCode": status.as_u16(), "error": { "code": code, "message": message, "details": [] } }),
    )
}
