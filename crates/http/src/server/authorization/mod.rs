//! MCP's authorization over HTTP: the protected resource's metadata (RFC 9728) and — when the
//! gateway is its own authorization server — its metadata (RFC 8414), client registration (RFC
//! 7591), the authorization endpoint with its consent page ([`consent`]), the token endpoint and
//! revocation (RFC 7009). What is issued and checked is `crate::oauth`'s; this module reads forms
//! and JSON within the server limits, and answers in OAuth's shapes (`{error,
//! error_description}`, redirects carrying `error`, `state` and `iss`).
//!
//! These routes are outside the key check (they are how a person signs in); the consent form's
//! key is checked like any key, and a wrong one is counted as unauthorized. Registration, open to
//! anyone by design, is limited to [`REGISTRATIONS_PER_MINUTE`] per replica.

mod consent;

use std::num::NonZeroU32;
use std::sync::Arc;

use axum::extract::RawQuery;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use serde_json::json;

use crate::gateway::Gateway;
use crate::oauth::settings::RESOURCE_PATH;
use crate::oauth::{
    Authorization, AuthorizeRefusal, AuthorizeRequest, OAuthError, RegistrationRequest,
    TokenRequest,
};
use crate::server::kit::body::LimitedBody;

/// The protected resource's metadata, at the root and for the `/mcp` resource (RFC 9728 §3.1).
pub(crate) const RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource";
/// The authorization server's metadata (RFC 8414 §3).
pub(crate) const SERVER_METADATA_PATH: &str = "/.well-known/oauth-authorization-server";
/// Client registration.
pub(crate) const REGISTER_PATH: &str = "/oauth/register";
/// The authorization endpoint: the consent page and its form.
pub(crate) const AUTHORIZE_PATH: &str = "/oauth/authorize";
/// The token endpoint.
pub(crate) const TOKEN_PATH: &str = "/oauth/token";
/// Revocation.
pub(crate) const REVOKE_PATH: &str = "/oauth/revoke";

/// Registrations one replica takes per minute.
pub(crate) const REGISTRATIONS_PER_MINUTE: u32 = 30;

/// What the handlers hold: the authorization and the registration limiter.
#[derive(Clone)]
struct Endpoints {
    oauth: Authorization,
    registrations: Arc<DefaultDirectRateLimiter>,
}

/// The routes of MCP's authorization, as `oauth` is configured.
pub(crate) fn routes(oauth: &Authorization) -> Router<Gateway> {
    let per_minute = NonZeroU32::new(REGISTRATIONS_PER_MINUTE).unwrap_or(NonZeroU32::MIN);
    let endpoints = Endpoints {
        oauth: oauth.clone(),
        registrations: Arc::new(RateLimiter::direct(Quota::per_minute(per_minute))),
    };
    let mut router = Router::new()
        .route(RESOURCE_METADATA_PATH, get(resource_metadata))
        .route(
            &format!("{RESOURCE_METADATA_PATH}{RESOURCE_PATH}"),
            get(resource_metadata),
        );
    if oauth.is_built_in() {
        router = router
            .route(SERVER_METADATA_PATH, get(server_metadata))
            .route(REGISTER_PATH, post(register))
            .route(AUTHORIZE_PATH, get(authorize_page).post(authorize_form))
            .route(TOKEN_PATH, post(token))
            .route(REVOKE_PATH, post(revoke));
    }
    router.layer(Extension(endpoints))
}

/// RFC 9728's document: the resource, its issuer, how a token is sent.
async fn resource_metadata(Extension(endpoints): Extension<Endpoints>) -> Response {
    let oauth = &endpoints.oauth;
    no_store(Json(json!({
        "resource": oauth.settings().resource(),
        "authorization_servers": [oauth.issuer()],
        "bearer_methods_supported": ["header"],
        "scopes_supported": [crate::oauth::grants::SCOPE],
        "resource_name": "searxng-gateway MCP",
        "resource_documentation": "https://github.com/searxng-gateway/searxng-gateway",
    })))
}

/// RFC 8414's document for the gateway's own server.
async fn server_metadata(Extension(endpoints): Extension<Endpoints>) -> Response {
    let oauth = &endpoints.oauth;
    let public = &oauth.settings().public;
    no_store(Json(json!({
        "issuer": oauth.issuer(),
        "authorization_endpoint": public.join(AUTHORIZE_PATH),
        "token_endpoint": public.join(TOKEN_PATH),
        "registration_endpoint": public.join(REGISTER_PATH),
        "revocation_endpoint": public.join(REVOKE_PATH),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_methods_supported": ["none", "client_secret_post", "client_secret_basic"],
        "revocation_endpoint_auth_methods_supported": ["none", "client_secret_post", "client_secret_basic"],
        "code_challenge_methods_supported": ["S256"],
        "scopes_supported": [crate::oauth::grants::SCOPE],
        "authorization_response_iss_parameter_supported": true,
    })))
}

/// `POST /oauth/register`: a JSON registration.
async fn register(
    Extension(endpoints): Extension<Endpoints>,
    LimitedBody(body): LimitedBody,
) -> Response {
    let Ok(body) = body else {
        return error(&OAuthError::new(
            "invalid_request",
            "the request body could not be read",
        ));
    };
    let request: RegistrationRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(err) => {
            return error(&OAuthError::new(
                "invalid_client_metadata",
                format!("the body is not a registration: {err}"),
            ))
        }
    };
    if endpoints.registrations.check().is_err() {
        return error(&OAuthError::new(
            "temporarily_unavailable",
            "too many registrations; try again in a minute",
        ));
    }
    match endpoints.oauth.register(request).await {
        Ok(registered) => (StatusCode::CREATED, no_store(Json(registered))).into_response(),
        Err(err) => error(&err),
    }
}

/// `GET /oauth/authorize`: the consent page, or the client sent back with an error.
async fn authorize_page(
    Extension(endpoints): Extension<Endpoints>,
    RawQuery(query): RawQuery,
) -> Response {
    let request = match parse_authorize(query.as_deref().unwrap_or("").as_bytes()) {
        Ok(request) => request,
        Err(why) => return consent::problem(&why),
    };
    match endpoints.oauth.check(request).await {
        Ok(consent) => consent::page(&consent, None, StatusCode::OK),
        Err(refusal) => refused(&endpoints.oauth, refusal),
    }
}

/// The consent form's fields: the request, the key, the person's decision.
#[derive(Debug, serde::Deserialize)]
struct ConsentForm {
    #[serde(flatten)]
    request: AuthorizeRequest,
    #[serde(default)]
    api_key: String,
    #[serde(default)]
    decision: String,
}

/// `POST /oauth/authorize`: the person allowed (with their key) or declined.
async fn authorize_form(
    Extension(endpoints): Extension<Endpoints>,
    LimitedBody(body): LimitedBody,
) -> Response {
    let Ok(body) = body else {
        return consent::problem("The form could not be read.");
    };
    let form: ConsentForm = match serde_urlencoded::from_bytes(&body) {
        Ok(form) => form,
        Err(_) => return consent::problem("The form could not be read."),
    };
    let oauth = &endpoints.oauth;
    let consent = match oauth.check(form.request).await {
        Ok(consent) => consent,
        Err(refusal) => return refused(oauth, refusal),
    };
    if form.decision != "allow" {
        oauth.declined();
        return refused(
            oauth,
            AuthorizeRefusal::Redirect {
                redirect_uri: consent.redirect_uri.clone(),
                error: OAuthError::new("access_denied", "the person declined"),
                state: consent.request.state.clone(),
            },
        );
    }
    match oauth.allow(&consent, &form.api_key).await {
        Ok(code) => {
            let mut params = vec![("code", code.as_str())];
            if let Some(state) = consent.request.state.as_deref() {
                params.push(("state", state));
            }
            let issuer = oauth.issuer();
            params.push(("iss", issuer.as_str()));
            redirect(&consent.redirect_uri, &params)
        }
        Err(_) => consent::page(
            &consent,
            Some("That key is not one of this gateway's. Check it and try again."),
            StatusCode::UNAUTHORIZED,
        ),
    }
}

/// The authorization request in a query string: each parameter at most once (RFC 6749 §3.1).
fn parse_authorize(query: &[u8]) -> Result<AuthorizeRequest, String> {
    let mut seen = std::collections::HashSet::new();
    for (name, _) in url::form_urlencoded::parse(query) {
        if !seen.insert(name.clone()) {
            return Err(format!("The parameter {name} is given twice."));
        }
    }
    serde_urlencoded::from_bytes(query)
        .map_err(|_| "The authorization request could not be read.".to_owned())
}

/// A refusal: on the page, or back to the client.
fn refused(oauth: &Authorization, refusal: AuthorizeRefusal) -> Response {
    match refusal {
        AuthorizeRefusal::Page(why) => consent::problem(&why),
        AuthorizeRefusal::Redirect {
            redirect_uri,
            error,
            state,
        } => {
            let issuer = oauth.issuer();
            let mut params = vec![
                ("error", error.code),
                ("error_description", error.description.as_str()),
            ];
            if let Some(state) = state.as_deref() {
                params.push(("state", state));
            }
            params.push(("iss", issuer.as_str()));
            redirect(&redirect_uri, &params)
        }
    }
}

/// A 303 to `uri` with `params` added to its query.
fn redirect(uri: &str, params: &[(&str, &str)]) -> Response {
    let Ok(mut url) = url::Url::parse(uri) else {
        return consent::problem("The redirect URI is not a URL.");
    };
    {
        let mut query = url.query_pairs_mut();
        for (name, value) in params {
            query.append_pair(name, value);
        }
    }
    let mut response = Redirect::to(url.as_str()).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// `POST /oauth/token`.
async fn token(
    Extension(endpoints): Extension<Endpoints>,
    headers: HeaderMap,
    LimitedBody(body): LimitedBody,
) -> Response {
    let Ok(body) = body else {
        return error(&OAuthError::new(
            "invalid_request",
            "the request body could not be read",
        ));
    };
    let request: TokenRequest = match serde_urlencoded::from_bytes(&body) {
        Ok(request) => request,
        Err(_) => {
            return error(&OAuthError::new(
                "invalid_request",
                "the body must be a form (application/x-www-form-urlencoded)",
            ))
        }
    };
    match endpoints.oauth.token(request, basic(&headers)).await {
        Ok(tokens) => no_store(Json(tokens)),
        Err(err) => error(&err),
    }
}

/// `POST /oauth/revoke` (RFC 7009): 200 whether the token existed or not.
#[derive(Debug, serde::Deserialize)]
struct RevokeForm {
    #[serde(default)]
    token: String,
}

async fn revoke(
    Extension(endpoints): Extension<Endpoints>,
    LimitedBody(body): LimitedBody,
) -> Response {
    let form = body
        .ok()
        .and_then(|body| serde_urlencoded::from_bytes::<RevokeForm>(&body).ok());
    let Some(form) = form.filter(|f| !f.token.is_empty()) else {
        return error(&OAuthError::new("invalid_request", "token is required"));
    };
    endpoints.oauth.revoke(&form.token).await;
    no_store(StatusCode::OK)
}

/// HTTP Basic client credentials (RFC 6749 §2.3.1: each part form-url-encoded).
fn basic(headers: &HeaderMap) -> Option<(String, String)> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, encoded) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = String::from_utf8(STANDARD.decode(encoded.trim()).ok()?).ok()?;
    let (id, secret) = decoded.split_once(':')?;
    let unescape = |s: &str| {
        percent_encoding::percent_decode_str(&s.replace('+', " "))
            .decode_utf8()
            .ok()
            .map(|s| s.into_owned())
    };
    Some((unescape(id)?, unescape(secret)?))
}

/// An OAuth error answer.
fn error(err: &OAuthError) -> Response {
    let status = StatusCode::from_u16(err.status()).unwrap_or(StatusCode::BAD_REQUEST);
    let mut response = (
        status,
        no_store(Json(
            json!({"error": err.code, "error_description": err.description}),
        )),
    )
        .into_response();
    if status == StatusCode::UNAUTHORIZED {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Basic"));
    }
    response
}

/// A request body through the authorization endpoints' decoders, for the fuzz target: the first
/// byte picks one (a registration and its checks, an authorization query, the consent form, a
/// token form, HTTP Basic credentials, a JWT's header). What was read, or 400.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn exercise(input: &[u8]) -> Result<usize, StatusCode> {
    fn bad<E>(_: E) -> StatusCode {
        StatusCode::BAD_REQUEST
    }
    let Some((&which, body)) = input.split_first() else {
        return Err(StatusCode::BAD_REQUEST);
    };
    match which % 6 {
        0 => {
            let request: RegistrationRequest = serde_json::from_slice(body).map_err(bad)?;
            let (name, _) = crate::oauth::checked(&request).map_err(|_| StatusCode::BAD_REQUEST)?;
            Ok(request.redirect_uris.len() + name.map_or(0, |n| n.len()))
        }
        1 => parse_authorize(body)
            .map(|r| r.client_id.len())
            .map_err(|_| StatusCode::BAD_REQUEST),
        2 => serde_urlencoded::from_bytes::<ConsentForm>(body)
            .map(|f| f.api_key.len() + f.request.client_id.len())
            .map_err(bad),
        3 => serde_urlencoded::from_bytes::<TokenRequest>(body)
            .map(|t| t.grant_type.len())
            .map_err(bad),
        4 => {
            let value = HeaderValue::from_bytes(body).map_err(bad)?;
            let mut headers = HeaderMap::new();
            headers.insert(header::AUTHORIZATION, value);
            basic(&headers)
                .map(|(id, secret)| id.len() + secret.len())
                .ok_or(StatusCode::BAD_REQUEST)
        }
        _ => {
            let token = std::str::from_utf8(body).map_err(bad)?;
            jsonwebtoken::decode_header(token)
                .map(|h| h.kid.map_or(0, |k| k.len()))
                .map_err(bad)
        }
    }
}

/// `Cache-Control: no-store` on an answer that carries credentials or metadata.
fn no_store(answer: impl IntoResponse) -> Response {
    let mut response = answer.into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
        .headers_mut()
        .insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    response
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn basic_credentials_are_decoded_and_unescaped() {
        let mut headers = HeaderMap::new();
        let value = format!("Basic {}", STANDARD.encode("my%20client:s%3Acret"));
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(&value).unwrap(),
        );
        assert_eq!(
            basic(&headers),
            Some(("my client".to_owned(), "s:cret".to_owned()))
        );
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer x"));
        assert_eq!(basic(&headers), None);
    }

    #[test]
    fn an_authorization_request_names_each_parameter_once() {
        assert!(parse_authorize(b"client_id=a&client_id=b").is_err());
        let request = parse_authorize(b"response_type=code&client_id=a&state=s").unwrap();
        assert_eq!(request.client_id, "a");
        assert_eq!(request.state.as_deref(), Some("s"));
    }

    #[test]
    fn a_redirect_keeps_the_uris_own_query() {
        let response = redirect(
            "https://app.example/cb?x=1",
            &[("code", "c d"), ("state", "s")],
        );
        assert_eq!(response.status(), StatusCode::SEE_OTHER);
        assert_eq!(
            response.headers()[header::LOCATION],
            "https://app.example/cb?x=1&code=c+d&state=s"
        );
    }
}
