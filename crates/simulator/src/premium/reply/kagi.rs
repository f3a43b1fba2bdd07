//! Kagi (`GET /api/v0/search`, `Authorization: Bot`): `data[]` mixing search results (`t` = 0) and
//! related searches (`t` = 1), `meta` with the account's `api_balance`; errors as `data: null` with
//! `error[]` codes — 101 insufficient credit, 2 a bad token.

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};

use super::{json_value, Asked, SimError, SimHit};

fn meta() -> Value {
    json!({ "id": "sim-kagi", "node": "sim", "ms": 12, "api_balance": 10.0 })
}

pub(super) fn results(hits: &[SimHit], asked: &Asked) -> Response {
    let mut data: Vec<Value> = hits
        .iter()
        .enumerate()
        .map(|(i, h)| {
            json!({
                "t": 0,
                "rank": i + 1,
                "url": h.url,
                "title": h.title,
                "snippet": h.content,
                "published": h.published_date,
            })
        })
        .collect();
    data.push(json!({ "t": 1, "list": [format!("{} tutorial", asked.query)] }));
    json_value(StatusCode::OK, &json!({ "meta": meta(), "data": data }))
}

pub(super) fn empty() -> Response {
    json_value(StatusCode::OK, &json!({ "meta": meta(), "data": [] }))
}

pub(super) fn error(err: SimError) -> Response {
    let (status, code, message) = match err {
        SimError::Auth => (StatusCode::UNAUTHORIZED, 2, "Unauthorized: invalid token"),
        SimError::Quota => (
            StatusCode::PAYMENT_REQUIRED,
            101,
            "Insufficient credit to perform this request.",
        ),
        SimError::RateLimited { .. } => (StatusCode::TOO_MANY_REQUESTS, 429, "Too many requests"),
        SimError::BadRequest => (StatusCode::BAD_REQUEST, 1, "Invalid request: q is required"),
        SimError::Server => (StatusCode::INTERNAL_SERVER_ERROR, 0, "Internal error"),
    };
    json_value(
        status,
        &json!({ "meta": meta(), "data": null, "error": [{ "code": code, "msg": message, "ref": null }] }),
    )
}
