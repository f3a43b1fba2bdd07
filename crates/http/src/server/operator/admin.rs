//! The operator's actions, routed only when `ADMIN_TOKEN` is set (otherwise these paths are 404
//! like any unknown one), each authenticated by `Authorization: Bearer ADMIN_TOKEN` — compared in
//! constant time on SHA-256 digests, so neither the content nor the length of the token shows in
//! the timing — and each logged with what it changed:
//!
//! - `POST /admin/breakers/{namespace}/{name}/open?seconds=N` — open a breaker for N seconds
//!   (1–86400), by the `namespace` and `name` `/status` shows (`provider`, `key`, `engine`,
//!   `searxng`, `reader`, `host`);
//!   not a trip: it does not grow the backoff, and when it ends one request probes as usual;
//! - `POST /admin/breakers/{namespace}/{name}/close` — close it now;
//! - `POST /admin/cache/purge` — drop every cached answer and page, or with `?q=QUERY` the answers of one query
//!   (every page, category and language of it);
//! - `GET /admin/status` — `/status` plus each client's limits and premium usage;
//! - `GET /admin/crawls` — every crawl and batch scrape: whose, where it is, pages read and
//!   failed, pages per minute, shared by the fleet or not (newest first);
//! - `POST /admin/crawls/{id}/cancel` — cancel one, whoever's it is.
//!
//! Answers are JSON; refusals `{"error":…,"message":…}` (401 with `WWW-Authenticate: Bearer`),
//! a path or query string that cannot be read included (400, `invalid_path` or `bad_request`).

use std::time::Duration;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::clients::Clients;
use crate::gateway::Gateway;
use crate::server::error::{ApiError, ApiPath};
use crate::settings::access::AdminToken;
use gateway_core::breaker::BreakerKind;

/// The longest breaker open period an operator may set (a day).
const MAX_OPEN_SECONDS: u64 = 86_400;

/// What the admin handlers need.
#[derive(Debug, Clone)]
struct Admin {
    gateway: Gateway,
    clients: Clients,
}

/// The routes, behind the token check; `None` when `ADMIN_TOKEN` is not set.
pub(crate) fn routes<S>(gateway: &Gateway, clients: &Clients) -> Option<Router<S>>
where
    S: Clone + Send + Sync + 'static,
{
    let token = gateway.server().admin_token.clone()?;
    let admin = Admin {
        gateway: gateway.clone(),
        clients: clients.clone(),
    };
    Some(
        Router::new()
            .route(
                "/admin/breakers/{namespace}/{name}/open",
                post(open_breaker),
            )
            .route(
                "/admin/breakers/{namespace}/{name}/close",
                post(close_breaker),
            )
            .route("/admin/cache/purge", post(purge_cache))
            .route("/admin/status", get(status))
            .route("/admin/crawls", get(crawls))
            .route("/admin/crawls/{id}/cancel", post(cancel_crawl))
            .layer(axum::middleware::from_fn_with_state(token, authorize))
            .with_state(admin),
    )
}

/// Lets a request through when it carries the admin token.
async fn authorize(State(token): State<AdminToken>, request: Request, next: Next) -> Response {
    if !presents_token(request.headers(), &token) {
        tracing::warn!(
            path = request.uri().path(),
            "admin request refused: wrong or missing token"
        );
        return ApiError::Unauthorized("the admin token is missing or wrong").into_response();
    }
    next.run(request).await
}

/// Whether `headers` carry `Authorization: Bearer <token>`, compared in constant time on SHA-256
/// digests (neither the token's content nor its length shows in the timing). The operator's page
/// asks it too: its read views show every client's data to the admin token.
pub(crate) fn presents_token(headers: &HeaderMap, token: &AdminToken) -> bool {
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, value) = v.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| value.trim())
        })
        .unwrap_or("");
    Sha256::digest(presented.as_bytes())
        .ct_eq(&Sha256::digest(token.expose()))
        .into()
}

fn json_ok(body: serde_json::Value) -> Response {
    let mut response = (StatusCode::OK, body.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// A query string axum could not read (a parameter given twice): JSON like every other refusal
/// here, not axum's plain text.
fn unreadable_query() -> Response {
    ApiError::unreadable("the query string cannot be read (is a parameter given twice?)")
        .into_response()
}

fn namespace(name: &str) -> Result<BreakerKind, ApiError> {
    match name {
        "provider" => Ok(BreakerKind::Provider),
        "key" => Ok(BreakerKind::Key),
        "engine" => Ok(BreakerKind::Engine),
        "searxng" => Ok(BreakerKind::Searxng),
        "reader" => Ok(BreakerKind::Reader),
        "reranker" => Ok(BreakerKind::Reranker),
        "host" => Ok(BreakerKind::Host),
        _ => Err(ApiError::unreadable(
            "the namespace must be provider, key, engine, searxng, reader, reranker or host",
        )),
    }
}

#[derive(Debug, Deserialize)]
struct OpenFor {
    seconds: Option<String>,
}

async fn open_breaker(
    State(admin): State<Admin>,
    ApiPath((ns, name)): ApiPath<(String, String)>,
    open: Result<Query<OpenFor>, QueryRejection>,
) -> Response {
    let Ok(Query(open)) = open else {
        return unreadable_query();
    };
    let kind = match namespace(&ns) {
        Ok(kind) => kind,
        Err(err) => return err.into_response(),
    };
    let seconds = open
        .seconds
        .as_deref()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .filter(|s| (1..=MAX_OPEN_SECONDS).contains(s));
    let Some(seconds) = seconds else {
        return ApiError::unreadable("seconds must be a whole number from 1 to 86400")
            .into_response();
    };
    if !admin
        .gateway
        .force_breaker(kind, &name, Some(Duration::from_secs(seconds)))
    {
        return ApiError::not_found().into_response();
    }
    tracing::info!(
        action = "breaker_open",
        namespace = kind.as_str(),
        name = %name,
        seconds,
        "admin: breaker opened"
    );
    json_ok(json!({"namespace": kind.as_str(), "name": name, "state": "open", "seconds": seconds}))
}

async fn close_breaker(
    State(admin): State<Admin>,
    ApiPath((ns, name)): ApiPath<(String, String)>,
) -> Response {
    let kind = match namespace(&ns) {
        Ok(kind) => kind,
        Err(err) => return err.into_response(),
    };
    if !admin.gateway.force_breaker(kind, &name, None) {
        return ApiError::not_found().into_response();
    }
    tracing::info!(
        action = "breaker_close",
        namespace = kind.as_str(),
        name = %name,
        "admin: breaker closed"
    );
    json_ok(json!({"namespace": kind.as_str(), "name": name, "state": "closed"}))
}

#[derive(Debug, Deserialize)]
struct PurgeOf {
    q: Option<String>,
}

async fn purge_cache(
    State(admin): State<Admin>,
    of: Result<Query<PurgeOf>, QueryRejection>,
) -> Response {
    let Ok(Query(of)) = of else {
        return unreadable_query();
    };
    let query = of.q.as_deref().map(str::trim).filter(|q| !q.is_empty());
    let purged = admin.gateway.purge_cache(query);
    match query {
        Some(_) => tracing::info!(
            action = "cache_purge",
            scope = "query",
            purged,
            "admin: cached answers of one query purged"
        ),
        None => tracing::info!(
            action = "cache_purge",
            scope = "all",
            purged,
            "admin: cache purged"
        ),
    }
    json_ok(json!({"purged": purged}))
}

async fn status(State(admin): State<Admin>) -> Response {
    let status = match serde_json::to_value(admin.gateway.status()) {
        Ok(status) => status,
        Err(_) => return ApiError::Internal.into_response(),
    };
    json_ok(json!({"status": status, "clients": admin.clients.usage().await}))
}

async fn crawls(State(admin): State<Admin>) -> Response {
    json_ok(json!({"jobs": admin.gateway.crawls().overview().await}))
}

async fn cancel_crawl(State(admin): State<Admin>, ApiPath(id): ApiPath<String>) -> Response {
    match admin.gateway.crawls().cancel_any(&id).await {
        Some(status) => {
            tracing::info!(job = %id, status = status.as_str(), "admin: crawl cancelled");
            json_ok(json!({"id": id, "status": status.as_str()}))
        }
        None => {
            let mut response = json_ok(json!({"error": "not_found", "message": "no such crawl"}));
            *response.status_mut() = StatusCode::NOT_FOUND;
            response
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every namespace `/status` lists a breaker under can be named here (the page offers an
    /// action on each row).
    #[test]
    fn every_breaker_namespace_can_be_named() {
        for kind in [
            BreakerKind::Provider,
            BreakerKind::Key,
            BreakerKind::Engine,
            BreakerKind::Searxng,
            BreakerKind::Reader,
            BreakerKind::Reranker,
            BreakerKind::Host,
        ] {
            assert_eq!(namespace(kind.as_str()).ok(), Some(kind));
        }
        assert!(namespace("breaker").is_err());
    }
}
