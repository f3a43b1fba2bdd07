//! Brave Search API (`GET /res/v1/web/search`, `X-Subscription-Token`): results under `web.results`, no
//! `web` at all for zero results, errors as `{"type":"ErrorResponse","error":{…,"code":…}}` — a bad token is
//! 422 `SUBSCRIPTION_TOKEN_INVALID`, a spent month 429 `QUOTA_LIMITED`, too fast 429 `RATE_LIMITED` — and on
//! every response the four `X-RateLimit-*` headers, one entry per window (per second, per month).

use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use serde_json::{json, Value};

use super::{json_value, Asked, BraveWindows, SimError, SimHit};

pub(super) fn results(hits: &[SimHit], asked: &Asked, windows: BraveWindows) -> Response {
    let results: Vec<Value> = hits
        .iter()
        .map(|h| {
            json!({
                "type": "search_result",
                "title": h.title,
                "url": h.url,
                "description": h.content,
                "page_age": h.published_date,
                "language": "en",
                "family_friendly": true,
            })
        })
        .collect();
    let body = json!({
        "type": "search",
        "query": { "original": asked.query },
        "web": { "type": "search", "results": results, "family_friendly": true },
    });
    with_headers(windows, json_value(StatusCode::OK, &body))
}

pub(super) fn empty(asked: &Asked, windows: BraveWindows) -> Response {
    let body = json!({ "type": "search", "query": { "original": asked.query } });
    with_headers(windows, json_value(StatusCode::OK, &body))
}

/// A quota error reports the month window at 0; a rate limit the per-second window at 0, resetting when
/// the caller may come back.
pub(super) fn error(err: SimError, mut windows: BraveWindows) -> Response {
    let mut per_second_reset = 1;
    let (status, code, detail) = match err {
        SimError::Auth => (
            StatusCode::UNPROCESSABLE_ENTITY,
            "SUBSCRIPTION_TOKEN_INVALID",
            "The provided subscription token is invalid.",
        ),
        SimError::Quota => {
            windows.month_remaining = 0;
            (
                StatusCode::TOO_MANY_REQUESTS,
                "QUOTA_LIMITED",
                "Request quota limit reached.",
            )
        }
        SimError::RateLimited { retry_after_secs } => {
            windows.per_second_remaining = 0;
            per_second_reset = retry_after_secs;
            (
                StatusCode::TOO_MANY_REQUESTS,
                "RATE_LIMITED",
                "Request rate limit exceeded for plan.",
            )
        }
        SimError::BadRequest => (
            StatusCode::UNPROCESSABLE_ENTITY,
            "VALIDATION",
            "Unable to validate request parameter(s).",
        ),
        SimError::Server => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL_ERROR",
            "An unexpected error occurred.",
        ),
    };
    let body = json!({
        "type": "ErrorResponse",
        "error": { "id": "sim-error", "status": status.as_u16(), "code": code, "detail": detail },
        "time": 1_700_000_000,
    });
    let mut response = json_value(status, &body);
    insert_rate_limit_headers(response.headers_mut(), windows, per_second_reset);
    response
}

fn with_headers(windows: BraveWindows, mut response: Response) -> Response {
    insert_rate_limit_headers(response.headers_mut(), windows, 1);
    response
}

/// `X-RateLimit-Limit`, `-Policy`, `-Remaining` and `-Reset`: per-second window first, then the month.
pub(super) fn insert_rate_limit_headers(
    headers: &mut HeaderMap,
    w: BraveWindows,
    per_second_reset: u64,
) {
    let values = [
        (
            "x-ratelimit-limit",
            format!("{}, {}", w.per_second_limit, w.month_limit),
        ),
        (
            "x-ratelimit-policy",
            format!("{};w=1, {};w=2592000", w.per_second_limit, w.month_limit),
        ),
        (
            "x-ratelimit-remaining",
            format!("{}, {}", w.per_second_remaining, w.month_remaining),
        ),
        (
            "x-ratelimit-reset",
            format!("{per_second_reset}, {}", w.month_reset_secs),
        ),
    ];
    for (name, value) in values {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(HeaderName::from_static(name), value);
        }
    }
}
