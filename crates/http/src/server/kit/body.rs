//! Request bodies: the one way every surface reads them — at most `MAX_BODY_BYTES` (a declared
//! length over it is refused unread) within `REQUEST_READ_TIMEOUT_SECONDS` — and the ways reading
//! one can fail. Each surface answers a [`BodyError`] in its own error shape; the server limits it
//! enforces are counted in `http_rejections_total` through [`BodyError::rejection`]. A door's
//! handler takes [`LimitedBody`], the extractor that reads it so.

use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Request};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::Response;

use crate::gateway::Gateway;
use crate::server::transport::metrics::Rejection;
use crate::settings::limits::ServerLimits;

/// Why a body could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BodyError {
    /// Larger than `MAX_BODY_BYTES` (the limit).
    #[error("the request body is larger than {0} bytes")]
    TooLarge(usize),
    /// Not all there within `REQUEST_READ_TIMEOUT_SECONDS` (the seconds).
    #[error("the request body did not arrive within {0} s")]
    Timeout(u64),
    /// The connection failed while the body was read.
    #[error("the request body could not be read")]
    Unreadable,
}

impl BodyError {
    /// The server limit this error enforces, if it is one.
    pub(crate) fn rejection(self) -> Option<Rejection> {
        match self {
            Self::TooLarge(_) => Some(Rejection::BodyTooLarge),
            Self::Timeout(_) => Some(Rejection::BodyTimeout),
            Self::Unreadable => None,
        }
    }

    /// Marks a surface's answer to this error: counted as its server limit, if it is one, and
    /// `Connection: close`, since the rest of what the client sent is not read (a client must not
    /// reuse the connection).
    pub(crate) fn mark(self, response: &mut Response) {
        if let Some(reason) = self.rejection() {
            response.extensions_mut().insert(reason);
        }
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
}

/// A request's whole body, read under the server limits (`MAX_BODY_BYTES`,
/// `REQUEST_READ_TIMEOUT_SECONDS`), or why it could not be: the handler answers the error in its
/// door's shape and logs it as its own.
#[derive(Debug)]
pub(crate) struct LimitedBody(pub(crate) Result<Bytes, BodyError>);

impl FromRequest<Gateway> for LimitedBody {
    type Rejection = std::convert::Infallible;

    async fn from_request(request: Request, gateway: &Gateway) -> Result<Self, Self::Rejection> {
        let (parts, body) = request.into_parts();
        Ok(Self(
            read(&gateway.server().server_limits, &parts.headers, body).await,
        ))
    }
}

/// The whole body under the server limits.
pub(crate) async fn read(
    limits: &ServerLimits,
    headers: &HeaderMap,
    body: Body,
) -> Result<Bytes, BodyError> {
    let max = limits.max_body_bytes;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > max as u64) {
        return Err(BodyError::TooLarge(max));
    }
    match tokio::time::timeout(limits.read_timeout, axum::body::to_bytes(body, max)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(err)) => {
            let over_limit = std::error::Error::source(&err)
                .is_some_and(|source| source.is::<http_body_util::LengthLimitError>());
            Err(if over_limit {
                BodyError::TooLarge(max)
            } else {
                BodyError::Unreadable
            })
        }
        Err(_) => Err(BodyError::Timeout(limits.read_timeout.as_secs())),
    }
}
