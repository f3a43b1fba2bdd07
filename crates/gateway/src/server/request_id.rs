//! Request IDs: a sane `X-Request-Id` from the client (1 to 64 characters of `A-Z a-z 0-9 . _ -
//! :`) is kept, anything else is replaced by a fresh UUID v4. The ID is returned on every response
//! and carried by the `request` span every log line of the request is written in (text lines show
//! it as `request{request_id=…}`, JSON lines in their `span` object).

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;

/// The header that carries the ID both ways.
pub(super) const HEADER: &str = "x-request-id";

const MAX_LEN: usize = 64;

/// The request's ID, as handlers read it (for `explain`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RequestId(pub(super) String);

/// The middleware: adopt or make the ID, run the request in its span, return the ID.
pub(super) async fn tag(mut request: Request, next: Next) -> Response {
    let id = request
        .headers()
        .get(HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| sane(v))
        .map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned);
    request.extensions_mut().insert(RequestId(id.clone()));
    let span =
        tracing::info_span!(target: crate::trace::REQUEST_TARGET, "request", request_id = %id);
    let mut response = next.run(request).instrument(span).await;
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(HEADER, value);
    }
    response
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
}
