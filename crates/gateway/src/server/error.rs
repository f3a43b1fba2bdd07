//! `ApiError`: every error the HTTP layer answers, as a JSON body with a stable `error` code and a
//! human message. Nothing from an upstream body or a key ever reaches it.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::request::RequestError;

/// An error response.
#[derive(Debug, thiserror::Error)]
pub(super) enum ApiError {
    /// The request failed validation.
    #[error(transparent)]
    BadRequest(#[from] RequestError),
    /// A body that is not a form, or a method the route does not take.
    #[error("{0}")]
    Unreadable(&'static str),
    /// No such route.
    #[error("no such endpoint")]
    NotFound,
    /// The shared computation was lost (a bug): never a hang.
    #[error("the gateway failed to compute an answer")]
    Internal,
}

impl ApiError {
    fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) | Self::Unreadable(_) => StatusCode::BAD_REQUEST,
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::BadRequest(e) => e.code(),
            Self::Unreadable(_) => "bad_request",
            Self::NotFound => "not_found",
            Self::Internal => "internal_error",
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({"error": self.code(), "message": self.to_string()});
        let mut response = (self.status(), body.to_string()).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        response
    }
}
