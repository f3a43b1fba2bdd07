//! Each provider's own answers, one file per provider with the same anatomy — `results`, `empty` (a healthy
//! "nothing found" in the provider's own form) and `error` (its status codes and error bodies) — plus what
//! every provider shares here: the dispatch, `Retry-After` on rate limits, the two malformed 200s
//! (a body cut off mid-document, JSON of the wrong shape) and a CDN's HTML bot challenge.

mod brave;
mod exa;
mod jina;
mod kagi;
mod linkup;
mod perplexity;
mod searchapi;
mod serper;
mod tavily;

use axum::http::header::{CONTENT_TYPE, RETRY_AFTER};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::validate::{Asked, Rejection};
use super::{BraveWindows, SimError, SimHit};
use crate::Provider;

/// A behaviour with its waiting played out: what is actually sent.
pub(super) enum Answer {
    /// These results, capped at what the request asked for.
    Results(Vec<SimHit>),
    /// Zero results, in the provider's own form.
    Empty,
    /// This failure, in the provider's own form.
    Error(SimError),
    /// A 200 whose body is cut off mid-document.
    Garbled,
    /// A 200 with valid JSON of the wrong shape.
    WrongShape,
    /// A 200 with a CDN's HTML bot challenge.
    Challenge,
}

/// The HTML a CDN answers instead of the API when it challenges the caller.
const CHALLENGE_PAGE: &str =
    "<!DOCTYPE html><html lang=\"en-US\"><head><title>Just a moment...</title></head>\
<body><noscript>Enable JavaScript and cookies to continue</noscript>\
<div id=\"challenge-form\">Verify you are human</div></body></html>";

/// The response `kind` sends for `answer` to a request that asked for `asked`.
pub(super) fn answer(
    kind: Provider,
    answer: Answer,
    asked: &Asked,
    windows: BraveWindows,
) -> Response {
    match answer {
        Answer::Results(hits) => {
            let hits = &hits[..hits.len().min(asked.count)];
            match kind {
                Provider::Brave => brave::results(hits, asked, windows),
                Provider::Exa => exa::results(hits, asked),
                Provider::Jina => jina::results(hits, asked),
                Provider::Kagi => kagi::results(hits, asked),
                Provider::Linkup => linkup::results(hits),
                Provider::Perplexity => perplexity::results(hits),
                Provider::SearchApi => searchapi::results(hits, asked),
                Provider::Serper => serper::results(hits, asked),
                Provider::Tavily => tavily::results(hits, asked),
            }
        }
        Answer::Empty => match kind {
            Provider::Brave => brave::empty(asked, windows),
            Provider::Exa => exa::empty(),
            Provider::Jina => jina::empty(asked),
            Provider::Kagi => kagi::empty(),
            Provider::Linkup => linkup::empty(),
            Provider::Perplexity => perplexity::empty(asked),
            Provider::SearchApi => searchapi::empty(asked),
            Provider::Serper => serper::empty(asked),
            Provider::Tavily => tavily::empty(asked),
        },
        Answer::Error(err) => error(kind, err, windows),
        Answer::Garbled => with_brave_headers(
            kind,
            windows,
            json_text(
                StatusCode::OK,
                r#"{"results":[{"title":"cut off"#.to_owned(),
            ),
        ),
        Answer::WrongShape => with_brave_headers(
            kind,
            windows,
            json_text(StatusCode::OK, r#"{"status":"ok","items":[]}"#.to_owned()),
        ),
        Answer::Challenge => (
            StatusCode::OK,
            [(
                CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=UTF-8"),
            )],
            CHALLENGE_PAGE,
        )
            .into_response(),
    }
}

/// The provider's own answer to a refused request.
pub(super) fn rejection(kind: Provider, why: Rejection, windows: BraveWindows) -> Response {
    match (kind, why) {
        (Provider::Jina, Rejection::MissingKey) => jina::missing_key(),
        (_, Rejection::MissingKey | Rejection::WrongKey) => error(kind, SimError::Auth, windows),
        (_, Rejection::Invalid) => error(kind, SimError::BadRequest, windows),
    }
}

/// `err` as `kind` sends it; a rate limit carries `Retry-After` (Brave reports it in its own headers).
fn error(kind: Provider, err: SimError, windows: BraveWindows) -> Response {
    let mut response = match kind {
        Provider::Brave => return brave::error(err, windows),
        Provider::Exa => exa::error(err),
        Provider::Jina => jina::error(err),
        Provider::Kagi => kagi::error(err),
        Provider::Linkup => linkup::error(err),
        Provider::Perplexity => perplexity::error(err),
        Provider::SearchApi => searchapi::error(err),
        Provider::Serper => serper::error(err),
        Provider::Tavily => tavily::error(err),
    };
    if let SimError::RateLimited { retry_after_secs } = err {
        response
            .headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from(retry_after_secs));
    }
    response
}

/// Brave sends its rate-limit headers on every response, malformed ones included.
fn with_brave_headers(kind: Provider, windows: BraveWindows, mut response: Response) -> Response {
    if kind == Provider::Brave {
        brave::insert_rate_limit_headers(response.headers_mut(), windows, 1);
    }
    response
}

fn json_value(status: StatusCode, body: &Value) -> Response {
    json_text(status, body.to_string())
}

fn json_text(status: StatusCode, body: String) -> Response {
    (status, [(CONTENT_TYPE, "application/json")], body).into_response()
}
