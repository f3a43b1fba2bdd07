//! `ApiError`: every error the SearXNG-style surface, the operator endpoints and the connection
//! layer (server limits) answer, as a JSON body with a stable `error` code and a human message —
//! the kit's refusal core ([`super::kit::refusal`]) in this shape, with the refusals only these
//! routes have ([`ApiOwn`]: paths, missing items, the head's limits). Nothing from an upstream
//! body or a key ever reaches it. [`ApiPath`] reads a route's path parameters with this shape for
//! its refusal, where axum's own `Path` answers plain text.

use axum::extract::path::ErrorKind;
use axum::extract::rejection::PathRejection;
use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::kit::body::BodyError;
use super::kit::refusal::{Door, OwnRefusal, Refusal};
use super::transport::metrics::Rejection;

/// The SearXNG API's and the operator routes' error shape: `{"error": code, "message": …}`; a
/// POST to `/search` may carry `api_key` in its form body.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Api;

/// An error response of the SearXNG API, the operator routes and the connection layer.
pub(crate) type ApiError = Refusal<Api>;

/// The gate's refusals in this shape, for the SearXNG API and `/status`.
pub(crate) const API_REFUSALS: Api = Api;

/// The refusals only these routes have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ApiOwn {
    /// A body that is not a form, a query string that cannot be read, a value out of range.
    #[error("{0}")]
    Unreadable(&'static str),
    /// A path parameter that cannot be read (not UTF-8 once percent-decoded, or not of its type).
    #[error("{0}")]
    InvalidPath(String),
    /// No such route.
    #[error("no such endpoint")]
    NotFound,
    /// A route that exists, naming something that does not (or no longer does).
    #[error("{0}")]
    NoSuchItem(&'static str),
    /// The request head was not sent within `REQUEST_READ_TIMEOUT_SECONDS` of its first byte.
    #[error("the request head did not arrive within {0} s of its first byte")]
    HeadTimeout(u64),
    /// The request target is longer than `MAX_URL_BYTES`.
    #[error("the URL is longer than {0} bytes")]
    UrlTooLong(usize),
    /// The headers are larger than `MAX_HEADER_BYTES`.
    #[error("the request headers are larger than {0} bytes")]
    HeadersTooLarge(usize),
}

impl OwnRefusal for ApiOwn {
    fn code(&self) -> &'static str {
        match self {
            Self::Unreadable(_) => "bad_request",
            Self::InvalidPath(_) => "invalid_path",
            Self::NotFound | Self::NoSuchItem(_) => "not_found",
            Self::HeadTimeout(_) => "request_timeout",
            Self::UrlTooLong(_) => "url_too_long",
            Self::HeadersTooLarge(_) => "headers_too_large",
        }
    }

    fn status(&self) -> StatusCode {
        match self {
            Self::Unreadable(_) | Self::InvalidPath(_) => StatusCode::BAD_REQUEST,
            Self::NotFound | Self::NoSuchItem(_) => StatusCode::NOT_FOUND,
            Self::HeadTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            Self::UrlTooLong(_) => StatusCode::URI_TOO_LONG,
            Self::HeadersTooLarge(_) => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        }
    }
}

impl Door for Api {
    type Own = ApiOwn;
    const KEY_IN_BODY: bool = true;

    fn body(refusal: &ApiError, _status: StatusCode, message: String) -> Value {
        json!({"error": refusal.code(), "message": message})
    }

    /// A body that could not be read is a bad request here (the code SearXNG clients know).
    fn code(refusal: &ApiError) -> Option<&'static str> {
        matches!(refusal, Refusal::Body(BodyError::Unreadable)).then_some("bad_request")
    }

    fn words(refusal: &ApiError) -> Option<String> {
        match refusal {
            Refusal::Request(err) => Some(err.to_string()),
            Refusal::RateLimited(seconds) => Some(format!(
                "too many requests for this client; retry after {seconds} s"
            )),
            _ => None,
        }
    }

    /// A server limit is counted (`http_rejections_total`), and after any error but a plain
    /// refusal the rest of what the client sent cannot be trusted to be read: `Connection: close`.
    fn decorate(refusal: &ApiError, headers: &mut HeaderMap) {
        let refused_cleanly = matches!(
            refusal,
            Refusal::Request(_)
                | Refusal::Own(ApiOwn::InvalidPath(_) | ApiOwn::NotFound)
                | Refusal::Overloaded
                | Refusal::Unauthorized(_)
                | Refusal::RateLimited(_)
        );
        if !refused_cleanly {
            headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
    }

    fn rejection(refusal: &ApiError) -> Option<Rejection> {
        match refusal {
            Refusal::Own(ApiOwn::HeadTimeout(_)) => Some(Rejection::HeadTimeout),
            Refusal::Own(ApiOwn::UrlTooLong(_)) => Some(Rejection::UrlTooLong),
            Refusal::Own(ApiOwn::HeadersTooLarge(_)) => Some(Rejection::HeadersTooLarge),
            _ => None,
        }
    }
}

impl ApiError {
    /// A request these routes cannot read, saying why.
    pub(crate) fn unreadable(why: &'static str) -> Self {
        Self::Own(ApiOwn::Unreadable(why))
    }

    /// No such route.
    pub(crate) fn not_found() -> Self {
        Self::Own(ApiOwn::NotFound)
    }

    /// A route that exists, naming something that does not.
    pub(crate) fn no_such_item(what: &'static str) -> Self {
        Self::Own(ApiOwn::NoSuchItem(what))
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
            ErrorKind::InvalidUtf8InPathParam { key } => Self::Own(ApiOwn::InvalidPath(format!(
                "the path's {key} is not valid UTF-8 once percent-decoded"
            ))),
            ErrorKind::UnsupportedType { .. } => Self::Internal,
            _ => Self::Own(ApiOwn::InvalidPath(
                "the path's parameters cannot be read".to_owned(),
            )),
        }
    }
}

/// A route's path parameters, like axum's `Path`, refused as an [`ApiError`] (JSON, naming the
/// problem) instead of axum's plain-text rejection.
#[derive(Debug)]
pub(crate) struct ApiPath<T>(pub(crate) T);

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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use axum::response::IntoResponse;

    use super::*;

    #[tokio::test]
    async fn every_limit_has_its_status_and_a_json_body_naming_it() {
        let cases = [
            (ApiError::Overloaded, 503, "overloaded", "capacity"),
            (
                ApiError::Own(ApiOwn::HeadTimeout(10)),
                408,
                "request_timeout",
                "10 s",
            ),
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
            (
                ApiError::Own(ApiOwn::UrlTooLong(8192)),
                414,
                "url_too_long",
                "8192",
            ),
            (
                ApiError::Own(ApiOwn::HeadersTooLarge(16384)),
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
