//! `ApiError`: every error the SearXNG-style surface and the operator endpoints answer, as a JSON
//! body with a stable `error` code and a human message. Nothing from an upstream body or a key ever
//! reaches it. (The Tavily API and the MCP tool answer in their own protocols' shapes.)

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::body::BodyError;
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
    /// A body that is too large or could not be read.
    #[error(transparent)]
    Body(#[from] BodyError),
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
            Self::Body(BodyError::TooLarge) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Body(BodyError::Unreadable) => StatusCode::BAD_REQUEST,
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub(super) fn code(&self) -> &'static str {
        match self {
            Self::BadRequest(e) => e.code(),
            Self::Unreadable(_) | Self::Body(BodyError::Unreadable) => "bad_request",
            Self::Body(BodyError::TooLarge) => "body_too_large",
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
