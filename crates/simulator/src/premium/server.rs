//! The HTTP side of a fake provider: one axum fallback handler for every path, the state it shares with
//! the [`SimulatedProvider`](super::SimulatedProvider) handle, and the order a real provider checks a request
//! in — record it, then path, method, auth and parameters ([`validate`](super::validate)), then the script and
//! the behaviour, whose waiting (`Slow`, `Hang`) is played out here before [`reply`] renders it.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Router};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::reply::{self, Answer};
use super::validate::{check, methods, path};
use super::{BraveWindows, ProviderBehaviour, RecordedRequest, RECORDED_REQUESTS_LIMIT, SIM_KEY};
use crate::fault::{self, Fault};
use crate::in_flight::InFlight;
use crate::script::Script;
use crate::transport::{self, Connection};
use crate::Provider;

/// Serves `shared` on `listener`; the task is the accept loop.
pub(super) fn spawn(listener: TcpListener, shared: Arc<Shared>) -> JoinHandle<()> {
    let stopping = shared.released.clone();
    let on_accept = {
        let shared = Arc::clone(&shared);
        move || match &shared.lock().behaviour {
            ProviderBehaviour::Fault(fault) => fault.on_accept(),
            _ => None,
        }
    };
    let lifetimes = shared.lifetimes.clone();
    let app = Router::new().fallback(handle).with_state(shared);
    transport::spawn(listener, app, on_accept, stopping, lifetimes)
}

/// What the handler and the handle share.
pub(super) struct Shared {
    /// Which provider this fakes.
    pub(super) kind: Provider,
    /// Turns `true` when the fake is dropped: ends `Slow` and `Hang` waits, stops the accept loop.
    pub(super) released: watch::Receiver<bool>,
    /// Requests being handled now (see [`super::SimulatedProvider::in_flight`]).
    pub(super) in_flight: InFlight,
    /// How long clients kept connections open (see [`super::SimulatedProvider::connection_lifetimes`]).
    pub(super) lifetimes: transport::Lifetimes,
    state: Mutex<SimState>,
}

/// What tests scripted, and what arrived.
pub(super) struct SimState {
    /// What to do with requests the script does not decide.
    pub(super) behaviour: ProviderBehaviour,
    /// The key the auth header must carry.
    pub(super) expected_key: String,
    /// More keys it takes (a pool), each answered as its own behaviour says.
    pub(super) pool: Vec<(String, ProviderBehaviour)>,
    /// The rate-limit windows a Brave fake reports.
    pub(super) brave: BraveWindows,
    /// Scripted behaviour over time, consulted before `behaviour`.
    pub(super) script: Option<Script<ProviderBehaviour>>,
    /// Every request that arrived.
    pub(super) calls: usize,
    /// The last [`RECORDED_REQUESTS_LIMIT`] requests.
    pub(super) requests: VecDeque<RecordedRequest>,
}

impl Shared {
    /// A fake of `kind` answering ten results with [`SIM_KEY`]; `released` ends held requests.
    pub(super) fn new(kind: Provider, released: watch::Receiver<bool>) -> Self {
        Self {
            kind,
            released,
            in_flight: InFlight::default(),
            lifetimes: transport::Lifetimes::default(),
            state: Mutex::new(SimState {
                behaviour: ProviderBehaviour::results(10, "https://example.org/result/"),
                expected_key: SIM_KEY.to_owned(),
                pool: Vec::new(),
                brave: BraveWindows::default(),
                script: None,
                calls: 0,
                requests: VecDeque::new(),
            }),
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, SimState> {
        // A panicking test thread must not take every later assertion down with it.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Every request, whatever its path: checked, scripted, answered.
pub(super) async fn handle(
    State(sim): State<Arc<Shared>>,
    connection: Option<Extension<Connection>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let _in_flight = sim.in_flight.enter();
    let request = RecordedRequest::capture(&method, &uri, &headers, &body);
    let (behaviour, key, pool, windows) = {
        let mut state = sim.lock();
        state.calls += 1;
        if state.requests.len() == RECORDED_REQUESTS_LIMIT {
            state.requests.pop_front();
        }
        state.requests.push_back(request.clone());
        (
            state.behaviour.clone(),
            state.expected_key.clone(),
            state.pool.clone(),
            state.brave,
        )
    };
    let kind = sim.kind;
    if request.path != path(kind) {
        return (StatusCode::NOT_FOUND, "Not Found").into_response();
    }
    if !methods(kind).contains(&method) {
        return (StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed").into_response();
    }
    // A key of the pool is answered as its own behaviour says.
    let pooled = pool
        .into_iter()
        .find_map(|(key, behaviour)| Some((check(kind, &request, &key).ok()?, behaviour)));
    let (asked, behaviour) = match pooled {
        Some(found) => found,
        None => match check(kind, &request, &key) {
            Ok(asked) => (asked, behaviour),
            Err(why) => return reply::rejection(kind, why, windows),
        },
    };
    let decided = sim.lock().script.as_mut().map(Script::decide);
    let behaviour = match decided {
        None => behaviour,
        Some(decided) => {
            let behaviour = decided.fault.unwrap_or(behaviour);
            if decided.delay.is_zero() {
                behaviour
            } else {
                ProviderBehaviour::slow(decided.delay, behaviour)
            }
        }
    };
    match settle(behaviour, sim.released.clone()).await {
        None => (StatusCode::SERVICE_UNAVAILABLE, "simulator shutting down").into_response(),
        Some(Ok(answer)) => reply::answer(kind, answer, &asked, windows),
        Some(Err(fault)) => {
            fault::respond(fault, connection.as_deref(), sim.released.clone()).await
        }
    }
}

/// Plays out `Slow` and `Hang`; `None` when the fake is dropped while waiting, `Err` for a fault below
/// the API.
async fn settle(
    mut behaviour: ProviderBehaviour,
    mut released: watch::Receiver<bool>,
) -> Option<Result<Answer, Fault>> {
    loop {
        match behaviour {
            ProviderBehaviour::Slow { delay, then } => {
                tokio::select! {
                    () = tokio::time::sleep(delay) => behaviour = *then,
                    _ = released.wait_for(|done| *done) => return None,
                }
            }
            ProviderBehaviour::Hang => {
                let _ = released.wait_for(|done| *done).await;
                return None;
            }
            ProviderBehaviour::Results(hits) => return Some(Ok(Answer::Results(hits))),
            ProviderBehaviour::Empty => return Some(Ok(Answer::Empty)),
            ProviderBehaviour::Error(err) => return Some(Ok(Answer::Error(err))),
            ProviderBehaviour::Garbled => return Some(Ok(Answer::Garbled)),
            ProviderBehaviour::WrongShape => return Some(Ok(Answer::WrongShape)),
            ProviderBehaviour::Fault(fault) => return Some(Err(fault)),
            ProviderBehaviour::Challenge => return Some(Ok(Answer::Challenge)),
        }
    }
}
