//! `ApiError`: every error the SearXNG-style surface, the operator endpoints and the connection
//! layer (server limits) answer, as a JSON body with a stable `error` code and a human message.
//! Nothing from an upstream body or a key ever reaches it. (The Tavily API and the MCP tool answer
//! in their own protocols' shapes.) [`ApiPath`] reads a route's path parameters with this shape
//! for its refusal, where axum's own `Path` answers plain text.

use axum::extract::path::ErrorKind;
use axum::extract::rejection::PathRejection;
use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use super::auth::{Refusals, Refused};
use super::body::BodyError;
use super::metrics::Rejection;
use gateway_core::request::RequestError;

/// An error response.
#[derive(Debug, thiserror::Error)]
pub(super) enum ApiError {
    /// The request failed validation.
    #[error(transparent)]
    BadRequest(#[from] RequestError),
    /// A body that is not a form, or a method the route does not take.
    #[error("{0}")]
    Unreadable(&'static str),
    /// A body that is too large, too slow or could not be read.
    #[error(transparent)]
    Body(#[from] BodyError),
    /// A path parameter that cannot be read (not UTF-8 once percent-decoded, or not of its type).
    #[error("{0}")]
    InvalidPath(String),
    /// No such route.
    #[error("no such endpoint")]
    NotFound,
    /// A route that exists, naming something that does not (or no longer does).
    #[error("{0}")]
    NoSuchItem(&'static str),
    /// Every upstream fan-out slot is taken (load shedding) or every connection slot is: come back
    /// after `Retry-After`.
    #[error("the gateway is at capacity; retry after {RETRY_AFTER_SECONDS} s")]
    Overloaded,
    /// The request head was not sent within `REQUEST_READ_TIMEOUT_SECONDS` of its first byte.
    #[error("the request head did not arrive within {0} s of its first byte")]
    HeadTimeout(u64),
    /// The request target is longer than `MAX_URL_BYTES`.
    #[error("the URL is longer than {0} bytes")]
    UrlTooLong(usize),
    /// The headers are larger than `MAX_HEADER_BYTES`.
    #[error("the request headers are larger than {0} bytes")]
    HeadersTooLarge(usize),
    /// The shared computation was lost (a bug): never a hang.
    #[error("the gateway failed to compute an answer")]
    Internal,
    /// No key, or a key no client has (`WWW-Authenticate: Bearer`).
    #[error("{0}")]
    Unauthorized(&'static str),
    /// The client's request rate is spent: retry after this many seconds.
    #[error("too many requests for this client; retry after {0} s")]
    RateLimited(u64),
}

impl From<Refused> for ApiError {
    fn from(refused: Refused) -> Self {
        match refused {
            Refused::Unauthorized(why) => Self::Unauthorized(why.message()),
            Refused::RateLimited(limited) => Self::RateLimited(limited.retry_after_seconds()),
        }
    }
}

impl From<PathRejection> for ApiError {
    fn from(rejection: PathRejection) -> Self {
        let PathRejection::FailedToDeserializePathParams(failed) = rejection else {
            // A route whose handler asks for parameters it does not have: a bug.
            return Self::Internal;
        };
        // The client's bytes are not echoed: the key is the route's own name for the parameter.
        match failed.kind() {
            ErrorKind::InvalidUtf8InPathParam { key } => Self::InvalidPath(format!(
                "the path's {key} is not valid UTF-8 once percent-decoded"
            )),
            ErrorKind::UnsupportedType { .. } => Self::Internal,
            _ => Self::InvalidPath("the path's parameters cannot be read".to_owned()),
        }
    }
}

/// A route's path parameters, like axum's `Path`, refused as an [`ApiError`] (JSON, naming the
/// problem) instead of axum's plain-text rejection.
#[derive(Debug)]
pub(super) struct ApiPath<T>(pub(super) T);

impl<S, T> FromRequestParts<S> for ApiPath<T>
where
    S: Send + Sync,
    T: DeserializeOwned + Send,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(Self(value)),
            Err(rejection) => Err(rejection.into()),
        }
    }
}

/// The gate's refusals in this shape, for the SearXNG API and `/status`; a POST to `/search` may
/// carry `api_key` in its form body.
#[derive(Debug, Clone, Copy)]
pub(super) struct ApiRefusals;

impl Refusals for ApiRefusals {
    const KEY_IN_BODY: bool = true;

    fn refused(&self, refused: Refused) -> Response {
        ApiError::from(refused).into_response()
    }

    fn unreadable(&self, err: BodyError) -> Response {
        ApiError::Body(err).into_response()
    }
}

impl ApiError {
    /// The HTTP status.
    pub(super) fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) | Self::Unreadable(_) | Self::InvalidPath(_) => {
                StatusCode::BAD_REQUEST
            }
            Self::Body(BodyError::TooLarge(_)) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Body(BodyError::Timeout(_)) => StatusCode::REQUEST_TIMEOUT,
            Self::Body(BodyError::Unreadable) => StatusCode::BAD_REQUEST,
            Self::NotFound | Self::NoSuchItem(_) => StatusCode::NOT_FOUND,
            Self::Overloaded => StatusCode::SERVICE_UNAVAILABLE,
            Self::HeadTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            Self::UrlTooLong(_) => StatusCode::URI_TOO_LONG,
            Self::HeadersTooLarge(_) => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::RateLimited(_) => StatusCode::TOO_MANY_REQUESTS,
        }
    }

    /// The JSON body: `{"error": code, "message": …}`.
    pub(super) fn body(&self) -> String {
        serde_json::json!({"error": self.code(), "message": self.to_string()}).to_string()
    }

    /// The server limit this error enforces, if it is one (counted in `http_rejections_total`).
    pub(super) fn rejection(&self) -> Option<Rejection> {
        match self {
            Self::HeadTimeout(_) => Some(Rejection::HeadTimeout),
            Self::Body(err) => err.rejection(),
            Self::UrlTooLong(_) => Some(Rejection::UrlTooLong),
            Self::HeadersTooLarge(_) => Some(Rejection::HeadersTooLarge),
            _ => None,
        }
    }

    pub(super) fn code(&self) -> &'static str {
        match self {
            Self::BadRequest(e) => e.code(),
            Self::Unreadable(_) | Self::Body(BodyError::Unreadable) => "bad_request",
            Self::InvalidPath(_) => "invalid_path",
            Self::Body(BodyError::TooLarge(_)) => "body_too_large",
            Self::Body(BodyError::Timeout(_)) => "request_timeout",
            Self::NotFound | Self::NoSuchItem(_) => "not_found",
            Self::Overloaded => "overloaded",
            Self::HeadTimeout(_) => "request_timeout",
            Self::UrlTooLong(_) => "url_too_long",
            Self::HeadersTooLarge(_) => "headers_too_large",
            Self::Internal => "internal_error",
            Self::Unauthorized(_) => "unauthorized",
            Self::RateLimited(_) => "rate_limited",
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status(), self.body()).into_response();
        if let Some(reason) = self.rejection() {
            response.extensions_mut().insert(reason);
        }
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        match self {
            Self::Overloaded => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECONDS));
            }
            Self::RateLimited(seconds) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
            }
            Self::Unauthorized(_) => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            _ => {}
        }
        if !matches!(
            self,
            Self::BadRequest(_)
                | Self::InvalidPath(_)
                | Self::NotFound
                | Self::Overloaded
                | Self::Unauthorized(_)
                | Self::RateLimited(_)
        ) {
            // The rest of what the client sent cannot be trusted to be read.
            headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        response
    }
}

/// `Retry-After` of an overloaded answer: a shed request's slot is usually free again within a
/// second, and a client that waits longer than that only loses time.
pub(super) const RETRY_AFTER_SECONDS: u64 = 1;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_limit_has_its_status_and_a_json_body_naming_it() {
        let cases = [
            (ApiError::Overloaded, 503, "overloaded", "capacity"),
            (ApiError::HeadTimeout(10), 408, "request_timeout", "10 s"),
            (
                ApiError::Body(BodyError::Timeout(10)),
                408,
                "request_timeout",
                "10 s",
            ),
            (
                ApiError::Body(BodyError::TooLarge(65536)),
                413,
                "body_too_large",
                "65536",
            ),
            (ApiError::UrlTooLong(8192), 414, "url_too_long", "8192"),
            (
                ApiError::HeadersTooLarge(16384),
                431,
                "headers_too_large",
                "16384",
            ),
        ];
        for (error, status, code, named) in cases {
            let response = error.into_response();
            assert_eq!(response.status().as_u16(), status, "{code}");
            assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
            let body = axum::body::to_bytes(response.into_body(), 4096)
                .await
                .unwrap();
            let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(json["error"], code);
            assert!(json["message"].as_str().unwrap().contains(named), "{json}");
        }
        let shed = ApiError::Overloaded.into_response();
        assert_eq!(shed.headers()[header::RETRY_AFTER], "1");
    }
}
