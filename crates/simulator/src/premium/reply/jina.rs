//! Jina Search (`GET /?q=` or `POST /`, `Authorization: Bearer`): plain text unless the request sends
//! `Accept: application/json`, then results under `data[]` (with page content unless
//! `X-Respond-With: no-content`); zero results are a 422 `AssertionFailureError`, not a failure; errors are
//! `{"data":null,"code","name","status","message"}` — 402 `InsufficientBalanceError` when the balance is gone.

use axum::http::header::CONTENT_TYPE;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use super::{json_value, Asked, SimError, SimHit};

pub(super) fn results(hits: &[SimHit], asked: &Asked) -> Response {
    if !asked.accept_json {
        let text: String = hits
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let n = i + 1;
                format!(
                    "[{n}] Title: {}\n[{n}] URL Source: {}\n[{n}] Description: {}\n\n",
                    h.title, h.url, h.content
                )
            })
            .collect();
        return (
            StatusCode::OK,
            [(CONTENT_TYPE, "text/plain; charset=utf-8")],
            text,
        )
            .into_response();
    }
    let data: Vec<Value> = hits
        .iter()
        .map(|h| {
            let mut item = json!({
                "title": h.title,
                "url": h.url,
                "description": h.content,
                "usage": { "tokens": 1000 },
            });
            if let Some(date) = &h.published_date {
                item["date"] = json!(date);
            }
            if !asked.no_content {
                item["content"] = json!(format!("{}\n\n{}", h.title, h.content));
            }
            item
        })
        .collect();
    let body = json!({
        "code": 200,
        "status": 20000,
        "data": data,
        "meta": { "usage": { "tokens": 10_000 } },
    });
    json_value(StatusCode::OK, &body)
}

pub(super) fn empty(asked: &Asked) -> Response {
    error_body(
        StatusCode::UNPROCESSABLE_ENTITY,
        "AssertionFailureError",
        42206,
        &format!("No search results available for query {}", asked.query),
    )
}

pub(super) fn error(err: SimError) -> Response {
    let (status, name, code, message) = match err {
        SimError::Auth => (
            StatusCode::UNAUTHORIZED,
            "AuthenticationFailedError",
            40103,
            "Invalid API key, please get a new one from https://jina.ai",
        ),
        SimError::Quota => (
            StatusCode::PAYMENT_REQUIRED,
            "InsufficientBalanceError",
            40203,
            "Account balance not enough to run this query, please recharge.",
        ),
        SimError::RateLimited { .. } => (
            StatusCode::TOO_MANY_REQUESTS,
            "RateLimitTriggeredError",
            42903,
            "Per API key rate limit exceeded.",
        ),
        SimError::BadRequest => (
            StatusCode::BAD_REQUEST,
            "ParamValidationError",
            40001,
            "Invalid parameters.",
        ),
        SimError::Server => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalServerError",
            50000,
            "Internal server error.",
        ),
    };
    error_body(status, name, code, message)
}

/// No `Authorization` header at all: Jina names this case apart from a wrong key.
pub(super) fn missing_key() -> Response {
    error_body(
        StatusCode::UNAUTHORIZED,
        "AuthenticationRequiredError",
        40101,
        "Authentication is required to use this endpoint. Please provide a valid API key via Authorization header.",
    )
}

fn error_body(status: StatusCode, name: &str, code: u32, message: &str) -> Response {
    let body = json!({
        "data": null,
        "code": status.as_u16(),
        "name": name,
        "status": code,
        "message": message,
        "readableMessage": format!("{name}: {message}"),
    });
    json_value(status, &body)
}
