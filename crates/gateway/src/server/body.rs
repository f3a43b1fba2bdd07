//! Request bodies: the one size limit every surface reads them under, and the two ways reading one
//! can fail. Each surface answers a [`BodyError`] in its own error shape.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;

/// The largest request body any surface reads (a search, a Tavily request, an MCP message).
pub(super) const MAX_BODY_BYTES: usize = 64 * 1024;

/// Why a body could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(super) enum BodyError {
    /// Larger than [`MAX_BODY_BYTES`].
    #[error("the request body is larger than {MAX_BODY_BYTES} bytes")]
    TooLarge,
    /// The connection failed while the body was read.
    #[error("the request body could not be read")]
    Unreadable,
}

/// The body, or why it could not be read (axum's `Bytes` extractor under the router's limit).
pub(super) fn read(body: Result<Bytes, BytesRejection>) -> Result<Bytes, BodyError> {
    body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            BodyError::TooLarge
        } else {
            BodyError::Unreadable
        }
    })
}
