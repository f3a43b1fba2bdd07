//! The error core of the JSON doors (Tavily, Firecrawl, Perplexity, Open WebUI): what can go wrong
//! whatever the door ([`Refusal`]: a body that cannot be read, a field of the wrong type, a query
//! the gateway refuses, every upstream failed, load shedding, the gate's refusals), with one
//! status, one stable code and one set of headers each — and the door's own shape around it
//! ([`Door`]: the JSON body its clients parse, its words where they differ, the refusals only it
//! has). A door is a type implementing [`Door`]; its error type is `Refusal<ThatDoor>`, its gate
//! refusals and its wrong-method answer come with it.
//!
//! Headers every door sends: `Retry-After` when the gateway sheds load or the client's rate is
//! spent, `WWW-Authenticate: Bearer` with a 401, and `Connection: close` (and the server-limit
//! count) after a body that was not read whole ([`BodyError::mark`]).

use std::fmt;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::body::BodyError;
use super::document::FailedUpstream;
use super::json_fields::InvalidField;
use super::search_call::Unanswered;
use crate::clients::end_users::EndUser;
use crate::server::kit::gate::{Refusals, Refused};
use crate::server::transport::metrics::Rejection;
use gateway_core::request::RequestError;

/// `Retry-After` of an overloaded answer: a shed request's slot is usually free again within a
/// second, and a client that waits longer than that only loses time.
pub(crate) const RETRY_AFTER_SECONDS: u64 = 1;

/// A JSON door's error shape. Implemented by a small value type per door (Open WebUI's carries
/// whether it trusts its user headers); the gate's refusals in front of the door are rendered
/// through it too.
pub(crate) trait Door: fmt::Debug + Clone + Send + Sync + 'static {
    /// The refusals only this door has, beside the common ones.
    type Own: OwnRefusal;

    /// Whether a key may ride in the JSON body as `api_key` (the gate reads it there when the
    /// head has none).
    const KEY_IN_BODY: bool;

    /// The JSON body of an error answer, around `message`.
    fn body(refusal: &Refusal<Self>, status: StatusCode, message: String) -> Value;

    /// The message in this door's own words, where they differ from the kit's.
    fn words(_refusal: &Refusal<Self>) -> Option<String> {
        None
    }

    /// The status of a common refusal, where this door answers it otherwise.
    fn status(_refusal: &Refusal<Self>) -> Option<StatusCode> {
        None
    }

    /// The stable code of a common refusal, where this door names it otherwise.
    fn code(_refusal: &Refusal<Self>) -> Option<&'static str> {
        None
    }

    /// Headers this door adds to an error answer.
    fn decorate(_refusal: &Refusal<Self>, _headers: &mut HeaderMap) {}

    /// The server limit a refusal of this door enforces beside a body's (counted in
    /// `http_rejections_total`).
    fn rejection(_refusal: &Refusal<Self>) -> Option<Rejection> {
        None
    }

    /// The end user a request names, when this door trusts it to (see [`Refusals::end_user`]).
    fn end_user(&self, _headers: &HeaderMap) -> Option<EndUser> {
        None
    }
}

/// A refusal only one door has.
pub(crate) trait OwnRefusal: std::error::Error + Send + Sync + 'static {
    /// The stable code logs and traces name.
    fn code(&self) -> &'static str;
    /// The HTTP status.
    fn status(&self) -> StatusCode;
}

/// The refusals of a door that has none of its own (every door has some today: the kit's tests
/// use it).
#[cfg(test)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NoOwn {}

#[cfg(test)]
impl fmt::Display for NoOwn {
    fn fmt(&self, _f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {}
    }
}

#[cfg(test)]
impl std::error::Error for NoOwn {}

#[cfg(test)]
impl OwnRefusal for NoOwn {
    fn code(&self) -> &'static str {
        match *self {}
    }
    fn status(&self) -> StatusCode {
        match *self {}
    }
}

/// What a JSON door's client gets instead of an answer.
#[derive(Debug)]
pub(crate) enum Refusal<D: Door> {
    /// The body is too large, too slow or could not be read.
    Body(BodyError),
    /// The body is not a JSON object.
    NotJson,
    /// The door's API needs a key and the request carries none.
    MissingKey,
    /// A field of the wrong type or out of range.
    InvalidField(InvalidField),
    /// The query or a mapped parameter failed the gateway's validation.
    Request(RequestError),
    /// Every upstream failed.
    AllUpstreamsFailed(Vec<FailedUpstream>),
    /// Every fan-out slot stayed taken (load shedding): retry after `Retry-After`.
    Overloaded,
    /// The shared computation was lost (a bug): never a hang.
    Internal,
    /// Anything but POST.
    WrongMethod,
    /// A key no client has (when the gateway requires keys).
    Unauthorized(&'static str),
    /// The client's request rate is spent: retry after this many seconds.
    RateLimited(u64),
    /// A refusal only this door has.
    Own(D::Own),
}

impl<D: Door> Refusal<D> {
    /// The stable code logs and traces name: the door's where it says otherwise, else the kit's.
    pub(crate) fn code(&self) -> &'static str {
        D::code(self).unwrap_or_else(|| self.common_code())
    }

    fn common_code(&self) -> &'static str {
        match self {
            Self::Body(BodyError::TooLarge(_)) => "body_too_large",
            Self::Body(BodyError::Timeout(_)) => "request_timeout",
            Self::Body(BodyError::Unreadable) => "unreadable_body",
            Self::NotJson => "not_json",
            Self::MissingKey => "missing_key",
            Self::InvalidField(_) => "invalid_field",
            Self::Request(err) => err.code(),
            Self::AllUpstreamsFailed(_) => "all_upstreams_failed",
            Self::Overloaded => "overloaded",
            Self::Internal => "internal_error",
            Self::WrongMethod => "method_not_allowed",
            Self::Unauthorized(_) => "unauthorized",
            Self::RateLimited(_) => "rate_limited",
            Self::Own(own) => own.code(),
        }
    }

    /// The HTTP status: the door's where it says otherwise, else the kit's.
    pub(crate) fn status(&self) -> StatusCode {
        D::status(self).unwrap_or_else(|| self.common_status())
    }

    fn common_status(&self) -> StatusCode {
        match self {
            Self::Body(BodyError::TooLarge(_)) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Body(BodyError::Timeout(_)) => StatusCode::REQUEST_TIMEOUT,
            Self::Body(BodyError::Unreadable)
            | Self::NotJson
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
            Self::Own(own) => own.status(),
        }
    }

    /// The message: the door's words where it has its own, else the kit's.
    pub(crate) fn message(&self) -> String {
        D::words(self).unwrap_or_else(|| self.to_string())
    }

    /// The upstreams that failed, as the doors list them (`[{"name", "error_class"}]`), when every
    /// upstream failed.
    pub(crate) fn failed_upstreams(&self) -> Option<Value> {
        let Self::AllUpstreamsFailed(upstreams) = self else {
            return None;
        };
        let listed = upstreams
            .iter()
            .map(|u| serde_json::json!({"name": u.name, "error_class": u.error_class.as_str()}))
            .collect();
        Some(Value::Array(listed))
    }

    /// The JSON body, in the door's shape.
    pub(crate) fn body_json(&self) -> String {
        D::body(self, self.status(), self.message()).to_string()
    }

    /// The server limit this refusal enforces, if it is one (counted in `http_rejections_total`).
    pub(crate) fn rejection(&self) -> Option<Rejection> {
        match self {
            Self::Body(err) => err.rejection(),
            other => D::rejection(other),
        }
    }
}

impl<D: Door> fmt::Display for Refusal<D> {
    /// The kit's words.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Body(err) => write!(f, "{err}"),
            Self::NotJson => f.write_str("the body must be a JSON object"),
            Self::MissingKey => f.write_str("an API key is required (Authorization: Bearer KEY)"),
            Self::InvalidField(field) => write!(f, "{field}"),
            Self::Request(err) => f.write_str(&err.message_naming_query("query")),
            Self::AllUpstreamsFailed(upstreams) => write!(
                f,
                "every upstream failed: {}",
                FailedUpstream::list(upstreams)
            ),
            Self::Overloaded => write!(
                f,
                "the gateway is at capacity; retry after {RETRY_AFTER_SECONDS} s"
            ),
            Self::Internal => f.write_str("the gateway failed to compute an answer"),
            Self::WrongMethod => f.write_str("Method Not Allowed: use POST"),
            Self::Unauthorized(why) => f.write_str(why),
            Self::RateLimited(seconds) => {
                write!(f, "too many requests; retry after {seconds} s")
            }
            Self::Own(own) => write!(f, "{own}"),
        }
    }
}

impl<D: Door> std::error::Error for Refusal<D> {}

impl<D: Door> From<BodyError> for Refusal<D> {
    fn from(err: BodyError) -> Self {
        Self::Body(err)
    }
}

impl<D: Door> From<InvalidField> for Refusal<D> {
    fn from(field: InvalidField) -> Self {
        Self::InvalidField(field)
    }
}

impl<D: Door> From<RequestError> for Refusal<D> {
    fn from(err: RequestError) -> Self {
        Self::Request(err)
    }
}

impl<D: Door> From<Unanswered> for Refusal<D> {
    fn from(unanswered: Unanswered) -> Self {
        match unanswered {
            Unanswered::Overloaded => Self::Overloaded,
            Unanswered::Lost => Self::Internal,
            Unanswered::AllFailed(upstreams) => Self::AllUpstreamsFailed(upstreams),
        }
    }
}

impl<D: Door> From<Refused> for Refusal<D> {
    fn from(refused: Refused) -> Self {
        match refused {
            Refused::Unauthorized(why) => Self::Unauthorized(why.message()),
            Refused::RateLimited(limited) => Self::RateLimited(limited.retry_after_seconds()),
        }
    }
}

impl<D: Door> IntoResponse for Refusal<D> {
    fn into_response(self) -> Response {
        let mut response = json_response(self.status(), self.body_json());
        if let Self::Body(err) = &self {
            err.mark(&mut response);
        } else if let Some(reason) = D::rejection(&self) {
            response.extensions_mut().insert(reason);
        }
        let headers = response.headers_mut();
        match &self {
            Self::Overloaded => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECONDS));
            }
            Self::RateLimited(seconds) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(*seconds));
            }
            Self::MissingKey | Self::Unauthorized(_) => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            _ => {}
        }
        D::decorate(&self, headers);
        response
    }
}

/// Every door's refusals at the gate are its own error shape.
impl<D: Door> Refusals for D {
    const KEY_IN_BODY: bool = <D as Door>::KEY_IN_BODY;

    fn refused(&self, refused: Refused) -> Response {
        Refusal::<D>::from(refused).into_response()
    }

    fn unreadable(&self, err: BodyError) -> Response {
        Refusal::<D>::Body(err).into_response()
    }

    fn end_user(&self, headers: &HeaderMap) -> Option<EndUser> {
        Door::end_user(self, headers)
    }
}

/// A JSON answer.
pub(crate) fn json_response(status: StatusCode, body: impl Into<Body>) -> Response {
    let mut response = (status, body.into()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// A door's answer to any method but POST (its routes' fallback).
pub(crate) async fn wrong_method<D: Door>() -> Response {
    Refusal::<D>::WrongMethod.into_response()
}

/// A non-blank `Authorization: Bearer` key in the head.
pub(crate) fn bearer_key(headers: &HeaderMap) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().strip_prefix("Bearer"))
        .is_some_and(|key| !key.trim().is_empty())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use gateway_core::upstream::ErrorClass;

    /// A door with the kit's words and a plain `{"message"}` body.
    #[derive(Debug, Clone, Copy)]
    struct Plain;

    impl Door for Plain {
        type Own = NoOwn;
        const KEY_IN_BODY: bool = false;

        fn body(refusal: &Refusal<Self>, status: StatusCode, message: String) -> Value {
            serde_json::json!({"message": message, "code": refusal.code(), "status": status.as_u16()})
        }
    }

    fn failed(class: ErrorClass) -> FailedUpstream {
        FailedUpstream {
            name: "searxng".into(),
            error_class: class.into(),
        }
    }

    #[tokio::test]
    async fn every_common_refusal_has_its_status_code_and_headers() {
        let cases: [(Refusal<Plain>, u16, &str); 9] = [
            (
                Refusal::Body(BodyError::TooLarge(10)),
                413,
                "body_too_large",
            ),
            (Refusal::Body(BodyError::Timeout(5)), 408, "request_timeout"),
            (Refusal::NotJson, 400, "not_json"),
            (Refusal::MissingKey, 401, "missing_key"),
            (Refusal::RateLimited(7), 429, "rate_limited"),
            (
                Refusal::AllUpstreamsFailed(vec![failed(ErrorClass::Quota)]),
                429,
                "all_upstreams_failed",
            ),
            (
                Refusal::AllUpstreamsFailed(vec![failed(ErrorClass::Timeout)]),
                502,
                "all_upstreams_failed",
            ),
            (Refusal::Overloaded, 503, "overloaded"),
            (Refusal::WrongMethod, 405, "method_not_allowed"),
        ];
        for (refusal, status, code) in cases {
            let response = refusal.into_response();
            assert_eq!(response.status().as_u16(), status, "{code}");
            let headers = response.headers().clone();
            assert_eq!(headers[header::CONTENT_TYPE], "application/json");
            match status {
                401 => assert_eq!(headers[header::WWW_AUTHENTICATE], "Bearer"),
                503 => assert_eq!(headers[header::RETRY_AFTER], "1"),
                429 if code == "rate_limited" => assert_eq!(headers[header::RETRY_AFTER], "7"),
                413 | 408 => assert_eq!(headers[header::CONNECTION], "close"),
                _ => assert!(!headers.contains_key(header::RETRY_AFTER), "{code}"),
            }
            let body = axum::body::to_bytes(response.into_body(), 4096)
                .await
                .unwrap();
            let json: Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(json["code"], code);
            assert_eq!(json["status"], status);
        }
    }

    #[test]
    fn the_message_names_the_failed_upstreams_and_never_more() {
        let refusal: Refusal<Plain> = Refusal::AllUpstreamsFailed(vec![
            failed(ErrorClass::Timeout),
            FailedUpstream {
                name: "brave".into(),
                error_class: gateway_engine::search::Shortfall::BreakerOpen,
            },
        ]);
        assert_eq!(
            refusal.message(),
            "every upstream failed: searxng: timeout, brave: breaker_open"
        );
    }
}
