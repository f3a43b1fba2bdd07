//! The JSON the operator's page reads, documented in README.md for scripts too:
//!
//! - `GET /ui/api/overview` — everything the page shows at once (one request per refresh, so the
//!   page costs a client's rate limit little): the `/status` document, the last 15 minutes per
//!   second ([`crate::pipeline::traffic`]: searches by outcome, shed, p50/p95 latency, the cache
//!   hit ratio), each client's premium usage (as `/admin/status` has it), the last 50 searches
//!   ([`RecentSearches`]), whether queries are shown and whether the admin routes exist;
//! - `GET /ui/api/searches/{request_id}` — one of those searches and its `explain` record (the
//!   `gateway` object `explain=1` would have added), or 404 once it has left the list.
//!
//! Both are behind the gate (the caller's key, its rate limit); nothing in them is secret (no key,
//! no upstream body; URLs without credentials).

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde::Serialize;
use serde_json::value::RawValue;

use crate::clients::{Clients, Usage};
use crate::pipeline::status::Status;
use crate::pipeline::traffic::TrafficWindow;
use crate::pipeline::Gateway;
use crate::server::error::ApiError;
use crate::server::recent_searches::{RecentSearches, Row};

/// The overview.
pub(super) const OVERVIEW_PATH: &str = "/ui/api/overview";

/// What the handlers read.
#[derive(Debug, Clone)]
struct Sources {
    clients: Clients,
    recent: RecentSearches,
}

/// The routes (the caller layers them with the gate).
pub(super) fn routes(clients: Clients, recent: RecentSearches) -> Router<Gateway> {
    let sources = Sources { clients, recent };
    Router::new()
        .route(
            OVERVIEW_PATH,
            get({
                let sources = sources.clone();
                move |State(gateway): State<Gateway>| overview(gateway, sources)
            }),
        )
        .route(
            "/ui/api/searches/{request_id}",
            get(move |Path(request_id): Path<String>| search(sources, request_id)),
        )
}

/// `/ui/api/overview`.
#[derive(Serialize)]
struct Overview<'a> {
    /// The `/status` document.
    status: Status,
    /// `null` only if the page is off (then this route does not exist either).
    traffic: Option<TrafficWindow>,
    clients: Vec<Usage>,
    searches: Vec<Row<'a>>,
    /// `UI_SHOW_QUERIES`.
    queries_shown: bool,
    /// `ADMIN_TOKEN` is set: the admin routes (the page's actions) exist.
    admin: bool,
}

async fn overview(gateway: Gateway, sources: Sources) -> Response {
    let status = gateway.status();
    let traffic = gateway.traffic();
    let clients = sources.clients.usage().await;
    let body = sources.recent.rows(|rows| {
        serde_json::to_vec(&Overview {
            status,
            traffic,
            clients,
            searches: rows.collect(),
            queries_shown: sources.recent.keeps_queries(),
            admin: gateway.config().admin_token.is_some(),
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

async fn search(sources: Sources, request_id: String) -> Response {
    let found = sources.recent.explanation(&request_id, |search, gateway| {
        serde_json::to_vec(&Explained { search, gateway })
    });
    match found {
        Some(Ok(body)) => json(body),
        Some(Err(_)) => ApiError::Internal.into_response(),
        None => {
            ApiError::NoSuchItem("no search with this request ID among the last 50").into_response()
        }
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
