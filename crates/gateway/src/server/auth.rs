//! The inbound-key check, in front of every search surface and `/status`: one axum middleware,
//! so a new surface merged into the `surfaces` router is covered without a line of its own.
//! `/healthz`, `/readyz` and the metrics path stay outside it.
//!
//! A key is taken from `Authorization: Bearer KEY`, then `X-API-Key: KEY`, then an `api_key`
//! query parameter, then (a POST only, when keys are required) `api_key` in a form body (SearXNG
//! API) or a JSON body (Tavily API). The key is checked by [`Clients::authenticate`] (SHA-256,
//! constant-time comparison) and never logged; the surfaces' parsers ignore `api_key`, so it never
//! reaches SearXNG or a cache key. Then the caller's token bucket is asked ([`Clients::admit`]).
//!
//! A refusal is answered in the surface's own error shape: SearXNG API, MCP and `/status`
//! `{"error":"unauthorized"|"rate_limited","message":…}`; Tavily API `{"detail":{"error":…}}` (so
//! tavily-python raises `InvalidAPIKeyError` / `UsageLimitExceededError`). 401 carries
//! `WWW-Authenticate: Bearer`, 429 `Retry-After` in whole seconds. The admitted caller goes to the
//! handlers as an [`Admitted`] request extension, with whether its premium budget allows premium
//! calls; a spent budget is said on the response as `X-Gateway-Premium: budget_spent`.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::body;
use super::error::ApiError;
use super::request_id::RequestId;
use super::{mcp, tavily};
use crate::clients::rate_limit::RateLimited;
use crate::clients::{Caller, Clients, Unauthorized};
use crate::config::limits::ServerLimits;
use crate::pipeline::Premium;

/// The query and form parameter that may carry a key.
pub(crate) const KEY_PARAMETER: &str = "api_key";

/// The caller a request was admitted as, and the clients it is accounted to.
#[derive(Debug, Clone)]
pub(super) struct Admitted {
    pub(super) caller: Caller,
    pub(super) clients: Clients,
    /// Whether the caller's premium budget allows premium calls, decided at admission.
    pub(super) premium: Premium,
    /// The request's ID ([`super::request_id`]).
    pub(super) request_id: RequestId,
}

impl Admitted {
    /// A caller on a local transport (MCP on stdio), with no request ID.
    pub(super) fn local(clients: &Clients) -> Self {
        let caller = clients.local();
        Self {
            premium: premium_for(clients, &caller),
            caller,
            clients: clients.clone(),
            request_id: RequestId::none(),
        }
    }
}

fn premium_for(clients: &Clients, caller: &Caller) -> Premium {
    if clients.premium_allowed(caller) {
        Premium::Allowed
    } else {
        Premium::BudgetSpent
    }
}

/// The response header that tells a client its premium budget is spent.
pub(super) const PREMIUM_HEADER: &str = "x-gateway-premium";

/// What the middleware needs.
#[derive(Debug, Clone)]
pub(super) struct Gate {
    pub(super) clients: Clients,
    pub(super) limits: ServerLimits,
}

/// Which error shape a refusal takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// `{"error":…,"message":…}` (SearXNG API, MCP, `/status`).
    Api,
    /// `{"detail":{"error":…}}`.
    Tavily,
}

impl Shape {
    fn of(path: &str) -> Self {
        if path == tavily::PATH {
            Self::Tavily
        } else {
            Self::Api
        }
    }
}

/// Why a request is turned away before any search.
#[derive(Debug, Clone, Copy)]
pub(super) enum Refused {
    Unauthorized(Unauthorized),
    RateLimited(RateLimited),
}

impl Refused {
    fn code(self) -> &'static str {
        match self {
            Self::Unauthorized(_) => "unauthorized",
            Self::RateLimited(_) => "rate_limited",
        }
    }
}

/// The middleware.
pub(super) async fn admit(State(gate): State<Gate>, request: Request, next: Next) -> Response {
    let shape = Shape::of(request.uri().path());
    let (request, key) = match key_of(&gate, request).await {
        Ok(found) => found,
        Err(err) => {
            return match shape {
                Shape::Api => ApiError::Body(err).into_response(),
                Shape::Tavily => tavily::body_error(err),
            }
        }
    };
    let caller = match gate.clients.authenticate(key.as_deref()) {
        Ok(caller) => caller,
        Err(why) => {
            gate.clients.count_unauthorized();
            return refuse(shape, Refused::Unauthorized(why), None);
        }
    };
    if let Err(limited) = gate.clients.admit(&caller) {
        return refuse(shape, Refused::RateLimited(limited), Some(&caller));
    }
    let premium = premium_for(&gate.clients, &caller);
    let request_id = request
        .extensions()
        .get::<RequestId>()
        .cloned()
        .unwrap_or_else(RequestId::none);
    let mut request = request;
    request.extensions_mut().insert(Admitted {
        caller,
        clients: gate.clients.clone(),
        premium,
        request_id,
    });
    let mut response = next.run(request).await;
    if premium == Premium::BudgetSpent {
        response
            .headers_mut()
            .insert(PREMIUM_HEADER, HeaderValue::from_static("budget_spent"));
    }
    response
}

fn refuse(shape: Shape, refused: Refused, caller: Option<&Caller>) -> Response {
    let client = caller.map_or("-", |c| c.name.as_str());
    tracing::info!(client, error = refused.code(), "request refused");
    match shape {
        Shape::Api => ApiError::from(refused).into_response(),
        Shape::Tavily => tavily::refusal(refused),
    }
}

/// The key the request carries, if any; a POST's body is read (and put back) only when keys are
/// required and none came in the head.
async fn key_of(
    gate: &Gate,
    request: Request,
) -> Result<(Request, Option<String>), body::BodyError> {
    let in_head = from_headers(request.headers()).or_else(|| from_query(request.uri().query()));
    let surface_with_body = request.method() == Method::POST && request.uri().path() != mcp::PATH;
    if in_head.is_some() || !surface_with_body || !gate.clients.requires_keys() {
        return Ok((request, in_head));
    }
    let (parts, body) = request.into_parts();
    let bytes = body::read(&gate.limits, &parts.headers, body).await?;
    let key = from_body(&parts.headers, &bytes);
    Ok((Request::from_parts(parts, Body::from(bytes)), key))
}

fn from_headers(headers: &HeaderMap) -> Option<String> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, key) = v.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| key.trim())
        })
        .filter(|k| !k.is_empty());
    let header_key = || {
        headers
            .get("x-api-key")
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|k| !k.is_empty())
    };
    bearer.or_else(header_key).map(str::to_owned)
}

fn from_query(query: Option<&str>) -> Option<String> {
    from_form(query?.as_bytes())
}

fn from_form(encoded: &[u8]) -> Option<String> {
    url::form_urlencoded::parse(encoded)
        .find(|(name, _)| name == KEY_PARAMETER)
        .map(|(_, value)| value.trim().to_owned())
        .filter(|k| !k.is_empty())
}

fn from_body(headers: &HeaderMap, bytes: &[u8]) -> Option<String> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if content_type.starts_with("application/x-www-form-urlencoded") {
        return from_form(bytes);
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(fields)) => fields
            .get(KEY_PARAMETER)
            .and_then(Value::as_str)
            .map(|k| k.trim().to_owned())
            .filter(|k| !k.is_empty()),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_key_comes_from_bearer_then_x_api_key_then_the_query() {
        let mut headers = HeaderMap::new();
        assert_eq!(from_headers(&headers), None);
        headers.insert("x-api-key", HeaderValue::from_static(" k2 "));
        assert_eq!(from_headers(&headers).as_deref(), Some("k2"));
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("bearer k1"));
        assert_eq!(from_headers(&headers).as_deref(), Some("k1"));
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic abc"));
        assert_eq!(from_headers(&headers).as_deref(), Some("k2"));
        assert_eq!(
            from_query(Some("q=x&api_key=k%203")).as_deref(),
            Some("k 3")
        );
        assert_eq!(from_query(Some("q=x&api_key=")), None);
    }

    #[test]
    fn a_body_key_is_read_from_a_form_or_a_json_object() {
        let mut form = HeaderMap::new();
        form.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        assert_eq!(from_body(&form, b"q=a&api_key=kf").as_deref(), Some("kf"));
        let json = HeaderMap::new();
        assert_eq!(
            from_body(&json, br#"{"query":"a","api_key":"kj"}"#).as_deref(),
            Some("kj")
        );
        assert_eq!(from_body(&json, br#"{"api_key":7}"#), None);
        assert_eq!(from_body(&json, b"not json"), None);
    }
}
