//! Request IDs: a sane `X-Request-Id` from the client (1 to 64 characters of `A-Z a-z 0-9 . _ -
//! :`) is kept, anything else is replaced by a fresh UUID v4. The ID is returned on every response
//! and carried by the `request` span every log line of the request is written in (text lines show
//! it as `request{request_id=…}`, JSON lines in their `span` object).
//!
//! The ID is made and kept as a `HeaderValue` (cheap to clone, written to the response as is), and
//! a fresh one comes from a thread-local generator (uuid's `fast-rng`), not a `getrandom` system
//! call per request: it labels a request, it guards nothing.
//!
//! The layer is [`TAGGED`], a [`SpanLayer`] (hand-made `tower` types, for the reason given there).

use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue};
use axum::response::Response;
use tracing::Span;

use crate::server::transport::span_layer::{InSpan, SpanHook, SpanLayer};

/// The header that carries the ID both ways.
pub(crate) const HEADER: HeaderName = HeaderName::from_static("x-request-id");

const MAX_LEN: usize = 64;

/// The request's ID, as handlers read it (for `explain`). Always visible ASCII.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RequestId(HeaderValue);

impl RequestId {
    /// No ID (a local transport: MCP on stdio).
    pub(crate) fn none() -> Self {
        Self(HeaderValue::from_static(""))
    }

    pub(crate) fn as_str(&self) -> &str {
        // Only sane client IDs and hyphenated UUIDs get here: both visible ASCII.
        self.0.to_str().unwrap_or_default()
    }

    fn fresh() -> Self {
        let mut buf = uuid::Uuid::encode_buffer();
        let text = uuid::Uuid::new_v4().hyphenated().encode_lower(&mut buf);
        Self(HeaderValue::from_str(text).unwrap_or_else(|_| HeaderValue::from_static("-")))
    }
}

/// The layer: adopt or make the ID, run the request in its span, return the ID.
pub(crate) const TAGGED: SpanLayer<Tagging> = SpanLayer(Tagging);

/// A service behind [`TAGGED`].
pub(crate) type Tag<S> = InSpan<S, Tagging>;

/// The request ID's [`SpanHook`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tagging;

impl SpanHook for Tagging {
    type Carry = HeaderValue;

    fn open(&self, request: &mut Request) -> (Span, HeaderValue) {
        let id = request
            .headers()
            .get(&HEADER)
            .filter(|v| v.to_str().is_ok_and(sane))
            .map_or_else(RequestId::fresh, |v| RequestId(v.clone()));
        let span = tracing::info_span!(
            target: gateway_core::trace::REQUEST_TARGET,
            "request",
            request_id = %id.as_str()
        );
        request.extensions_mut().insert(id.clone());
        (span, id.0)
    }

    fn close(id: HeaderValue, _span: &Span, response: &mut Response) {
        response.headers_mut().insert(HEADER, id);
    }
}

fn sane(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_LEN
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':'))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn only_short_plain_ids_are_adopted() {
        assert!(sane("abc-123_x.y:z"));
        assert!(!sane(""));
        assert!(!sane(&"a".repeat(65)));
        assert!(!sane("a b"));
        assert!(!sane("a\"b"));
        assert!(!sane("é"));
    }

    #[test]
    fn a_fresh_id_is_a_hyphenated_uuid() {
        let id = RequestId::fresh();
        let parsed = uuid::Uuid::parse_str(id.as_str()).unwrap();
        assert_eq!(parsed.get_version_num(), 4);
        assert_eq!(id.as_str(), parsed.hyphenated().to_string());
        assert_ne!(RequestId::fresh(), id);
    }
}
