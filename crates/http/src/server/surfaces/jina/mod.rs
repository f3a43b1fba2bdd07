//! Jina Reader's two APIs, so the tools built on `r.jina.ai` and `s.jina.ai` (Jina's
//! node-DeepResearch, Tongyi DeepResearch's read tool, agents' fetch tools) read and search through
//! the gateway with their base URL changed:
//!
//! - [`read`]: `GET /r/<url>` (the page's URL appended to the path, its query string with it) and
//!   `POST /r/` with `{"url"}`: one page read with the gateway's decisions (the page cache, the
//!   host's breaker, the address fence, the premium readers of `READ_PROVIDERS`);
//! - [`search`]: `GET /s/<query>` (or `/s/?q=`) and `POST /s/` with `{"q"}`: a search whose hits
//!   are read, each within the request's budget, or only listed with `X-Respond-With: no-content`.
//!
//! The answer is text (`text/plain`) unless the request's `Accept` names `application/json`: then
//! Jina's envelope `{"code": 200, "status": 20000, "data": …}`. The headers that change the answer
//! ([`options`]) are honoured or refused by name; a refusal, like every error, is Jina's shape
//! `{"data": null, "code", "name", "status", "message", "readableMessage"}` ([`Jina`]), where
//! `name` is Jina's error class (`ParamValidationError`, `AuthenticationFailedError`,
//! `AssertionFailureError`, …) and `status` the HTTP status × 100 + 1. The key rides as
//! `Authorization: Bearer`, as Jina's does. `X-Gateway-Explain: 1` with a JSON answer adds the
//! `gateway` object `explain=1` adds elsewhere (the query string belongs to the page here).

mod options;
mod read;
mod search;

use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};

use crate::gateway::Gateway;
use crate::server::kit::gate::Gate;
use crate::server::kit::read_call;
use crate::server::kit::refusal::{self, Door, OwnRefusal, Refusal};
use gateway_upstreams::reader::ReadFailure;

/// Every path under it is the reader's: `/r/<url>`.
pub(crate) const READ_PREFIX: &str = "/r";
/// Every path under it is the search's: `/s/<query>`.
pub(crate) const SEARCH_PREFIX: &str = "/s";

/// The routes, behind the gate.
pub(crate) fn routes(gate: &Gate) -> Router<Gateway> {
    let wrong_method = refusal::wrong_method::<Jina>;
    let (r, s) = (READ_PREFIX, SEARCH_PREFIX);
    Router::new()
        .route(r, post(read::posted).fallback(wrong_method))
        .route(
            &format!("{r}/"),
            post(read::posted).get(read::in_path).fallback(wrong_method),
        )
        .route(
            &format!("{r}/{{*url}}"),
            get(read::in_path).fallback(wrong_method),
        )
        .route(
            s,
            get(search::in_path)
                .post(search::posted)
                .fallback(wrong_method),
        )
        .route(
            &format!("{s}/"),
            get(search::in_path)
                .post(search::posted)
                .fallback(wrong_method),
        )
        .route(
            &format!("{s}/{{*query}}"),
            get(search::in_path).fallback(wrong_method),
        )
        .layer(crate::server::transport::search_span::TRACED)
        .layer(gate.layer(Jina))
}

/// Jina's error shape.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Jina;

/// What a Jina client gets instead of a page or results.
pub(crate) type JinaError = Refusal<Jina>;

/// What only this door refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum JinaOwn {
    /// A Jina option (a header, a body field, a query parameter) this gateway does not honour.
    #[error("{0} is not honoured by this gateway")]
    Unsupported(String),
    /// An option with a value it cannot take.
    #[error("{name} must be {expected}")]
    Invalid {
        /// The header or field.
        name: &'static str,
        /// What it takes.
        expected: &'static str,
    },
    /// No URL, or not an http or https one.
    #[error("no URL to read: give an http or https URL after /r/ or as \"url\"")]
    NoUrl,
    /// The page could not be read (the sentence says why, with its code).
    #[error("the page could not be read: {reason}")]
    Unread {
        /// Why, as every surface tells it.
        reason: String,
        /// The read's failure.
        failure: ReadFailure,
    },
    /// The search found nothing (Jina answers that with an error too).
    #[error("No search results available")]
    NoResults,
}

impl JinaOwn {
    /// The refusal of a page that was not read.
    pub(crate) fn unread(failure: ReadFailure) -> Self {
        Self::Unread {
            reason: read_call::unread_reason(failure),
            failure,
        }
    }
}

impl OwnRefusal for JinaOwn {
    fn code(&self) -> &'static str {
        match self {
            Self::Unsupported(_) => "unsupported_option",
            Self::Invalid { .. } => "invalid_option",
            Self::NoUrl => "invalid_url",
            Self::Unread { failure, .. } => failure.code(),
            Self::NoResults => "no_results",
        }
    }

    fn status(&self) -> StatusCode {
        match self {
            Self::Unsupported(_) | Self::Invalid { .. } | Self::NoUrl => StatusCode::BAD_REQUEST,
            Self::Unread { failure, .. } => match failure {
                ReadFailure::InvalidUrl => StatusCode::BAD_REQUEST,
                ReadFailure::ForbiddenAddress => StatusCode::UNAVAILABLE_FOR_LEGAL_REASONS,
                ReadFailure::RateLimitedFor(_) => StatusCode::TOO_MANY_REQUESTS,
                ReadFailure::Internal => StatusCode::INTERNAL_SERVER_ERROR,
                _ => StatusCode::UNPROCESSABLE_ENTITY,
            },
            Self::NoResults => StatusCode::UNPROCESSABLE_ENTITY,
        }
    }
}

impl Door for Jina {
    type Own = JinaOwn;
    const KEY_IN_BODY: bool = false;

    fn body(refusal: &JinaError, status: StatusCode, message: String) -> Value {
        let name = error_name(refusal, status);
        let mut body = json!({
            "data": null,
            "code": status.as_u16(),
            "name": name,
            "status": u32::from(status.as_u16()) * 100 + 1,
            "message": message,
            "readableMessage": format!("{name}: {message}"),
        });
        if let Some(listed) = refusal.failed_upstreams() {
            body["upstreams"] = listed;
        }
        body
    }

    fn words(refusal: &JinaError) -> Option<String> {
        match refusal {
            Refusal::WrongMethod => Some("Method Not Allowed: use GET or POST".to_owned()),
            Refusal::MissingKey => {
                Some("an API key is required (Authorization: Bearer KEY)".to_owned())
            }
            _ => None,
        }
    }
}

/// Jina's error class for a refusal: the name its clients match on.
fn error_name(refusal: &JinaError, status: StatusCode) -> &'static str {
    match refusal {
        Refusal::MissingKey => return "AuthenticationRequiredError",
        Refusal::Unauthorized(_) => return "AuthenticationFailedError",
        Refusal::Own(JinaOwn::Unread {
            failure: ReadFailure::ForbiddenAddress,
            ..
        }) => return "SecurityCompromiseError",
        _ => {}
    }
    match status.as_u16() {
        400 => "ParamValidationError",
        405 => "MethodNotAllowedError",
        408 | 504 => "TimeoutError",
        413 => "PayloadTooLargeError",
        422 => "AssertionFailureError",
        429 => "RateLimitTriggeredError",
        503 => "ServiceUnavailableError",
        502 => "UpstreamServerError",
        _ => "InternalServerError",
    }
}

/// A body or query through the reader's and the search's decoders, for the fuzz target: the
/// pages or searches it asks for, or the refusal's status.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn exercise(input: &[u8]) -> Result<usize, StatusCode> {
    use axum::response::IntoResponse;
    let refused = |err: JinaError| err.into_response().status();
    let (which, rest) = input.split_first().ok_or(StatusCode::BAD_REQUEST)?;
    match which % 3 {
        0 => read::decode_posted(rest).map(|_| 1).map_err(refused),
        1 => {
            let text = std::str::from_utf8(rest).map_err(|_| StatusCode::BAD_REQUEST)?;
            let (path, query) = text.split_once('?').unwrap_or((text, ""));
            read::target(path, Some(query)).map(|_| 1).map_err(refused)
        }
        _ => search::decode_posted(rest)
            .map(|ask| ask.num)
            .map_err(refused),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use axum::response::IntoResponse;

    async fn body_of(refusal: JinaError) -> (u16, Value) {
        let response = refusal.into_response();
        let status = response.status().as_u16();
        let bytes = axum::body::to_bytes(response.into_body(), 4096)
            .await
            .unwrap();
        (status, serde_json::from_slice(&bytes).unwrap())
    }

    #[tokio::test]
    async fn errors_are_jinas_envelope_with_its_class_names() {
        for (refusal, status, name) in [
            (
                Refusal::Own(JinaOwn::Unsupported("X-Target-Selector".into())),
                400,
                "ParamValidationError",
            ),
            (Refusal::MissingKey, 401, "AuthenticationRequiredError"),
            (
                Refusal::Unauthorized("no such key"),
                401,
                "AuthenticationFailedError",
            ),
            (
                Refusal::Own(JinaOwn::unread(ReadFailure::HttpStatus(404))),
                422,
                "AssertionFailureError",
            ),
            (
                Refusal::Own(JinaOwn::unread(ReadFailure::ForbiddenAddress)),
                451,
                "SecurityCompromiseError",
            ),
            (Refusal::RateLimited(3), 429, "RateLimitTriggeredError"),
            (Refusal::Overloaded, 503, "ServiceUnavailableError"),
        ] {
            let (got, body) = body_of(refusal).await;
            assert_eq!(got, status, "{body}");
            assert_eq!(body["code"], status, "{body}");
            assert_eq!(body["status"], u32::from(status) * 100 + 1, "{body}");
            assert_eq!(body["name"], name, "{body}");
            assert!(body["data"].is_null());
            let message = body["message"].as_str().unwrap();
            assert_eq!(body["readableMessage"], format!("{name}: {message}"));
        }
    }

    #[test]
    fn an_unsupported_option_is_named_in_the_message() {
        let refusal: JinaError = Refusal::Own(JinaOwn::Unsupported("X-Remove-Selector".into()));
        assert!(refusal.message().contains("X-Remove-Selector"));
        assert_eq!(refusal.code(), "unsupported_option");
    }
}
