//! The simulated instance's HTTP surface: `/healthz`, `/config`, `/search` (GET, and POST with a form body)
//! and SearXNG's 404 page for everything else, served by axum on the caller's listener. A search first waits for
//! a worker when a capacity limit is set, then is planned
//! under the instance's lock ([`Instance::plan_search`]) and served after the lock is released: at once, after
//! the scripted delay, or never (until the simulator stops, when the connection is cut).

use std::io;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Json, Router};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::instance::{lock, Instance, Plan};
use super::params::{Params, UiLanguage};
use super::reply::{html, NOT_FOUND_PAGE};
use crate::fault;
use crate::in_flight::InFlight;
use crate::transport::{self, Connection};

/// Serves `state` on `listener` until `stopping` turns `true`; the task is the accept loop.
pub(super) fn spawn(
    listener: TcpListener,
    state: Arc<Mutex<Instance>>,
    in_flight: InFlight,
    stopping: watch::Receiver<bool>,
    lifetimes: transport::Lifetimes,
) -> JoinHandle<()> {
    let app = App {
        state,
        in_flight,
        stopping: stopping.clone(),
    };
    let on_accept = {
        let state = Arc::clone(&app.state);
        move || lock(&state).on_accept()
    };
    transport::spawn(listener, router(app), on_accept, stopping, lifetimes)
}

/// Resolves once the simulator is being dropped (or already has been).
async fn stopped(mut stopping: watch::Receiver<bool>) {
    let _ = stopping.wait_for(|stopping| *stopping).await;
}

/// What the handlers share: the scripted instance and the stop signal.
#[derive(Clone)]
struct App {
    state: Arc<Mutex<Instance>>,
    /// `/search` requests being handled now.
    in_flight: InFlight,
    stopping: watch::Receiver<bool>,
}

fn router(app: App) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/config", get(config))
        .route("/search", get(search).post(search))
        .fallback(not_found)
        .with_state(app)
}

async fn healthz() -> &'static str {
    "OK"
}

async fn config(State(app): State<App>) -> Json<Value> {
    let mut instance = lock(&app.state);
    instance.config_hits += 1;
    Json(instance.config())
}

async fn not_found() -> Response {
    html(StatusCode::NOT_FOUND, NOT_FOUND_PAGE.to_owned())
}

async fn search(
    State(app): State<App>,
    connection: Option<Extension<Connection>>,
    headers: HeaderMap,
    RawQuery(query_string): RawQuery,
    body: Bytes,
) -> Response {
    let _in_flight = app.in_flight.enter();
    let capacity = lock(&app.state).capacity.clone();
    if let Some(limit) = capacity {
        limit.serve().await;
    }
    let mut params = Params::from_request(query_string.as_deref(), &body);
    params.probe = headers.contains_key(super::PROBE_HEADER);
    let language = UiLanguage::of(&params, &headers);
    let plan = lock(&app.state).plan_search(params, language);
    match plan {
        Plan::Now(reply) => reply.into_response(),
        Plan::After(delay, reply) => tokio::select! {
            () = tokio::time::sleep(delay) => reply.into_response(),
            () = stopped(app.stopping.clone()) => aborted(),
        },
        Plan::Never => {
            stopped(app.stopping.clone()).await;
            aborted()
        }
        Plan::Fault(fault) => {
            fault::respond(fault, connection.as_deref(), app.stopping.clone()).await
        }
    }
}

/// A response whose body fails at once, so the connection closes like a process that died mid-request.
fn aborted() -> Response {
    let failure = futures::stream::once(async {
        Err::<Bytes, _>(io::Error::new(
            io::ErrorKind::ConnectionAborted,
            "simulator stopped",
        ))
    });
    Body::from_stream(failure).into_response()
}
