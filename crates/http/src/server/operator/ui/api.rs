//! The JSON the operator's page reads, documented in the book (`docs/src/operations.md`) for scripts too:
//!
//! - `GET /ui/api/overview` — everything the page shows at once (one request per refresh, so the
//!   page costs a client's rate limit little): the `/status` document, the last 15 minutes per
//!   second ([`gateway_engine::operator::traffic`]: searches by outcome, shed, p50/p95 latency, the cache
//!   hit ratio), each client's premium usage (as `/admin/status` has it), the last 50 searches
//!   ([`RecentSearches`]), the crawls and batch scrapes with their progress, whether queries are
//!   shown and whether the admin routes exist;
//! - `GET /ui/api/searches/{request_id}` — one of those searches and its `explain` record (the
//!   `gateway` object `explain=1` would have added), or 404 once it has left the list.
//!
//! Both are behind the gate (the caller's key, its rate limit), or read with the admin token
//! ([`super::operator`]); nothing in them is secret (no key, no upstream body; URLs without
//! credentials).
//!
//! Whose data shows ([`Viewer`]): with `API_KEYS_FILE`, a client key reads its own searches (its
//! end users' too) and its own usage, limits and spend, and a search of another client's is 404
//! as if it had left the list; the admin token reads every client's (`scope` says which). An open
//! gateway has no clients to keep apart: everyone reads everything, as before. What stays the same
//! for a client key is the fleet's: the `/status` document (breakers, instances, the cache,
//! providers, the gateway's total spend) and the traffic window (counts and latencies per second,
//! no query, no client) — the key reads the same at `/status` already, and the page's charts and
//! breaker table are what the operator shares with every client.

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde::Serialize;
use serde_json::value::RawValue;

use super::operator::AsOperator;
use crate::clients::{Clients, Usage};
use crate::gateway::Gateway;
use crate::server::error::{ApiError, ApiPath};
use crate::server::kit::gate::Admitted;
use crate::server::kit::recent_searches::{RecentSearches, Row, Viewer};
use gateway_engine::crawl::JobSummary;
use gateway_engine::operator::status::Status;
use gateway_engine::operator::traffic::TrafficWindow;

/// The overview.
pub(crate) const OVERVIEW_PATH: &str = "/ui/api/overview";

/// What the handlers read.
#[derive(Debug, Clone)]
struct Sources {
    clients: Clients,
    recent: RecentSearches,
}

/// The routes (the caller layers them with the gate, or the gate and the admin token).
pub(crate) fn routes(clients: Clients, recent: RecentSearches) -> Router<Gateway> {
    let sources = Sources { clients, recent };
    Router::new()
        .route(
            OVERVIEW_PATH,
            get({
                let sources = sources.clone();
                move |State(gateway): State<Gateway>, Reader(viewer): Reader| {
                    overview(gateway, sources, viewer)
                }
            }),
        )
        .route(
            "/ui/api/searches/{request_id}",
            get(
                move |Reader(viewer): Reader, ApiPath(request_id): ApiPath<String>| {
                    search(sources, viewer, request_id)
                },
            ),
        )
}

/// Who reads: the operator (the admin token, or anyone on an open gateway) or one client.
struct Reader(Viewer);

impl<S: Send + Sync> FromRequestParts<S> for Reader {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        if parts.extensions.get::<AsOperator>().is_some() {
            return Ok(Self(Viewer::Operator));
        }
        match parts.extensions.get::<Admitted>() {
            // The gate admits everyone as `anonymous` when no key is required.
            Some(admitted) if !admitted.clients.requires_keys() => Ok(Self(Viewer::Operator)),
            Some(admitted) => {
                // The page's JSON names no end user, but the key's client is the owner anyway.
                let key_holder = admitted
                    .caller
                    .parent
                    .as_deref()
                    .unwrap_or(&admitted.caller);
                Ok(Self(Viewer::Client(key_holder.name.clone())))
            }
            // Neither the token nor the gate let it in (a routing bug): nothing to show.
            None => Err(ApiError::Unauthorized(
                "an API key or the admin token is required",
            )),
        }
    }
}

/// `/ui/api/overview`.
#[derive(Serialize)]
struct Overview<'a> {
    /// The `/status` document.
    status: Status,
    /// `null` only if the page is off (then this route does not exist either).
    traffic: Option<TrafficWindow>,
    /// `all` (the admin token, or an open gateway) or `client` (a client key: its own searches
    /// and usage only).
    scope: &'static str,
    /// The client whose data this is, when `scope` is `client`.
    #[serde(skip_serializing_if = "Option::is_none")]
    client: Option<&'a str>,
    clients: Vec<Usage>,
    searches: Vec<Row<'a>>,
    /// The crawls and batch scrapes (a client key: its own), newest first.
    crawls: Vec<JobSummary>,
    /// `UI_SHOW_QUERIES`.
    queries_shown: bool,
    /// `ADMIN_TOKEN` is set: the admin routes (the page's actions) exist.
    admin: bool,
}

async fn overview(gateway: Gateway, sources: Sources, viewer: Viewer) -> Response {
    let status = match viewer {
        Viewer::Operator => gateway.status(),
        // Which hosts other clients' page reads tripped is theirs.
        Viewer::Client(_) => gateway.status().without_hosts(),
    };
    let traffic = gateway.traffic();
    let mut clients = sources.clients.usage().await;
    clients.retain(|usage| viewer.sees(&usage.client));
    let mut crawls = gateway.crawls().overview().await;
    crawls.retain(|job| viewer.sees(&job.owner));
    let (scope, client) = match &viewer {
        Viewer::Operator => ("all", None),
        Viewer::Client(name) => ("client", Some(name.as_str())),
    };
    let body = sources.recent.rows(&viewer, |rows| {
        serde_json::to_vec(&Overview {
            status,
            traffic,
            scope,
            client,
            clients,
            searches: rows.collect(),
            crawls,
            queries_shown: sources.recent.keeps_queries(),
            admin: gateway.server().admin_token.is_some(),
        })
    });
    match body {
        Ok(body) => json(body),
        Err(_) => ApiError::Internal.into_response(),
    }
}

/// `/ui/api/searches/{request_id}`.
#[derive(Serialize)]
struct Explained<'a> {
    search: Row<'a>,
    /// The `explain` record; `null` for a search that got no answer (shed).
    gateway: Option<&'a RawValue>,
}

async fn search(sources: Sources, viewer: Viewer, request_id: String) -> Response {
    let found = sources
        .recent
        .explanation(&viewer, &request_id, |search, gateway| {
            serde_json::to_vec(&Explained { search, gateway })
        });
    match found {
        Some(Ok(body)) => json(body),
        Some(Err(_)) => ApiError::Internal.into_response(),
        None => ApiError::no_such_item("no search with this request ID among the last 50")
            .into_response(),
    }
}

fn json(body: Vec<u8>) -> Response {
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}
