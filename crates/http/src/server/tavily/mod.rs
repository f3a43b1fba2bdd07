//! The Tavily-compatible surface: `POST /tavily/search` ([`search`]) and `POST /tavily/extract`
//! ([`extract`]) take Tavily's requests and answer Tavily's response shapes, so
//! `TavilyClient(api_base_url="http://gateway:8080/tavily")` and the tools built on it
//! (LangChain's, Open WebUI's) search and read through the gateway unmodified.
//!
//! This file holds what both share: the routes behind the gate with Tavily's refusals, the error
//! shape, and the key a request must carry.
//!
//! Errors are Tavily's `{"detail": {"error": "…"}}`, with the statuses tavily-python turns into its
//! own exceptions: 400 (`BadRequestError`) for a missing or blank query or URL list, a field of the
//! wrong type or value, or a body that is not a JSON object; 401 (`InvalidAPIKeyError`) for a
//! request that carries no key at all; 429 (`UsageLimitExceededError`) when every upstream failed
//! because it was rate-limited or out of quota; 502 when every upstream failed otherwise (naming
//! each upstream and its error class, never an upstream's body); 413 for a body over the size
//! limit, 408 for one that did not arrive in time; 503 with `Retry-After` when the gateway sheds
//! load.
//!
//! Keys: Tavily's API needs one, and so does this surface — `Authorization: Bearer <key>` or
//! `api_key` in the body. With `API_KEYS_FILE` the key is checked in front of every surface
//! ([`super::auth`]: 401 for a wrong one, 429 with `Retry-After` over the client's rate); on an
//! open gateway any non-blank key is accepted, and tavily-python without a key (its keyless mode)
//! gets 401.

mod extract;
mod search;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{Map, Value};

use super::auth::{Gate, Refusals, Refused};
use super::body::BodyError;
use super::document::FailedUpstream;
use super::error::RETRY_AFTER_SECONDS;
use super::json_fields::InvalidField;
use super::search_span;
use crate::gateway::Gateway;
use gateway_core::request::RequestError;

/// Where the Tavily search API is served; clients use its parent (`…/tavily`) as their base URL.
pub(super) const PATH: &str = "/tavily/search";
/// Where the Tavily extract API is served.
pub(super) const EXTRACT_PATH: &str = "/tavily/extract";

#[cfg(any(test, feature = "fuzzing"))]
pub(super) use search::exercise;

/// Tavily's limit of URLs per extract call.
const MAX_URLS: usize = 20;

/// `POST /tavily/search` (each search in its span) and `POST /tavily/extract`, behind the gate with
/// Tavily's refusals.
pub(super) fn routes(gate: &Gate) -> Router<Gateway> {
    Router::new()
        .route(PATH, post(search::search).fallback(wrong_method))
        .layer(search_span::TracedLayer)
        .route(EXTRACT_PATH, post(extract::extract).fallback(wrong_method))
        .layer(gate.layer(TavilyRefusals))
}

/// What a Tavily client gets instead of results.
#[derive(Debug, thiserror::Error)]
pub(super) enum TavilyError {
    /// Too large or unreadable.
    #[error(transparent)]
    Body(#[from] BodyError),
    /// Not a JSON object.
    #[error("Invalid request body: expected a JSON object")]
    NotJson,
    /// No key at all.
    #[error("Unauthorized: missing or invalid API key.")]
    MissingKey,
    /// A field of the wrong type or out of range.
    #[error(transparent)]
    InvalidField(#[from] InvalidField),
    /// `urls` is missing, empty or not strings.
    #[error("Invalid urls: give a URL or a list of 1 to {MAX_URLS} URLs")]
    NoUrls,
    /// More URLs than Tavily takes in one call.
    #[error("Too many urls: at most {MAX_URLS} per request")]
    TooManyUrls,
    /// The query or a mapped parameter failed the gateway's validation.
    #[error("{}", .0.message_naming_query("query"))]
    Request(#[from] RequestError),
    /// Every upstream failed.
    #[error("every upstream failed: {}", FailedUpstream::list(.0))]
    AllUpstreamsFailed(Vec<FailedUpstream>),
    /// Every fan-out slot stayed taken (load shedding): retry after `Retry-After`.
    #[error("the gateway is at capacity; retry after {RETRY_AFTER_SECONDS} s")]
    Overloaded,
    /// The shared computation was lost (a bug): never a hang.
    #[error("the gateway failed to compute an answer")]
    Internal,
    /// Anything but POST.
    #[error("Method Not Allowed: use POST")]
    WrongMethod,
    /// `?explain=` other than 0 or 1.
    #[error("Invalid explain: must be 0 or 1")]
    InvalidExplain,
    /// A key no client has (when the gateway requires keys).
    #[error("Unauthorized: {0}")]
    Unauthorized(&'static str),
    /// The client's request rate is spent.
    #[error("Too many requests: retry after {0} s")]
    RateLimited(u64),
}

/// The gate's refusals in Tavily's shape (`InvalidAPIKeyError`, `UsageLimitExceededError` in
/// tavily-python); a key may ride in the JSON body as `api_key`, as Tavily's API accepts.
#[derive(Debug, Clone, Copy)]
struct TavilyRefusals;

impl Refusals for TavilyRefusals {
    const KEY_IN_BODY: bool = true;

    fn refused(&self, refused: Refused) -> Response {
        match refused {
            Refused::Unauthorized(why) => TavilyError::Unauthorized(why.message()),
            Refused::RateLimited(limited) => {
                TavilyError::RateLimited(limited.retry_after_seconds())
            }
        }
        .into_response()
    }

    fn unreadable(&self, err: BodyError) -> Response {
        TavilyError::Body(err).into_response()
    }
}

impl TavilyError {
    /// A stable name for the log line.
    pub(super) fn code(&self) -> &'static str {
        match self {
            Self::Body(BodyError::TooLarge(_)) => "body_too_large",
            Self::Body(BodyError::Timeout(_)) => "request_timeout",
            Self::Body(BodyError::Unreadable) => "unreadable_body",
            Self::NotJson => "not_json",
            Self::NoUrls | Self::TooManyUrls => "invalid_urls",
            Self::InvalidExplain => "invalid_field",
            Self::MissingKey => "missing_key",
            Self::InvalidField(_) => "invalid_field",
            Self::Request(err) => err.code(),
            Self::AllUpstreamsFailed(_) => "all_upstreams_failed",
            Self::Overloaded => "overloaded",
            Self::Internal => "internal_error",
            Self::WrongMethod => "method_not_allowed",
            Self::Unauthorized(_) => "unauthorized",
            Self::RateLimited(_) => "rate_limited",
        }
    }

    fn status(&self) -> StatusCode {
        match self {
            Self::Body(BodyError::TooLarge(_)) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Body(BodyError::Timeout(_)) => StatusCode::REQUEST_TIMEOUT,
            Self::Body(BodyError::Unreadable)
            | Self::NotJson
            | Self::NoUrls
            | Self::TooManyUrls
            | Self::InvalidExplain
            | Self::InvalidField(_)
            | Self::Request(_) => StatusCode::BAD_REQUEST,
            Self::MissingKey | Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::RateLimited(_) => StatusCode::TOO_MANY_REQUESTS,
            Self::AllUpstreamsFailed(upstreams)
                if FailedUpstream::all_told_to_slow_down(upstreams) =>
            {
                StatusCode::TOO_MANY_REQUESTS
            }
            Self::AllUpstreamsFailed(_) => StatusCode::BAD_GATEWAY,
            Self::Overloaded => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            Self::WrongMethod => StatusCode::METHOD_NOT_ALLOWED,
        }
    }
}

impl IntoResponse for TavilyError {
    fn into_response(self) -> Response {
        let mut detail = Map::new();
        detail.insert("error".into(), Value::String(self.to_string()));
        if let Self::AllUpstreamsFailed(upstreams) = &self {
            let named = upstreams
                .iter()
                .map(|u| serde_json::json!({"name": u.name, "error_class": u.error_class}))
                .collect();
            detail.insert("upstreams".into(), Value::Array(named));
        }
        let body = serde_json::json!({ "detail": detail }).to_string();
        let mut response = json(self.status(), body);
        if let Self::Body(err) = &self {
            err.mark(&mut response);
        }
        let headers = response.headers_mut();
        match self {
            Self::Overloaded => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECONDS));
            }
            Self::RateLimited(seconds) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
            }
            Self::MissingKey | Self::Unauthorized(_) => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            _ => {}
        }
        response
    }
}

pub(super) fn json(status: StatusCode, body: impl Into<Body>) -> Response {
    let mut response = (status, body.into()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

async fn wrong_method() -> Response {
    TavilyError::WrongMethod.into_response()
}

/// A non-blank `Authorization: Bearer` key or `api_key` in the body: Tavily's API needs a key, so
/// an anonymous caller of an open gateway must still carry one (the gate checks keys when they
/// are required).
pub(super) fn carries_key(headers: &HeaderMap, fields: &Map<String, Value>) -> bool {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().strip_prefix("Bearer"))
        .is_some_and(|key| !key.trim().is_empty());
    let in_body = fields
        .get("api_key")
        .and_then(Value::as_str)
        .is_some_and(|key| !key.trim().is_empty());
    bearer || in_body
}
