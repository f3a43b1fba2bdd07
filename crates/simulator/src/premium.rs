//! A faithful fake of the four premium search APIs (Brave, Exa, Jina, Tavily), one provider per
//! [`SimulatedProvider`], serving real HTTP on a loopback port.
//!
//! It is strict like the real services: a wrong path is 404, a wrong method 405, a missing or wrong
//! auth header gets that provider's own auth error (Brave's 422 `SUBSCRIPTION_TOKEN_INVALID`, a 401
//! elsewhere), and out-of-range parameters get its validation error. Every scripted
//! [`ProviderBehaviour`] is served with the status code, body and headers the real provider uses
//! (shared/spec/PROVIDERS.md): Brave's 429 `RATE_LIMITED` vs `QUOTA_LIMITED` and its four
//! `X-RateLimit-*` headers, Exa's 402 `NO_MORE_CREDITS`, Jina's 422 "no results" and 402,
//! Tavily's 432, `Retry-After` on rate limits. Every request is recorded so tests can assert what
//! the fake saw.
//!
//! Behaviour over time — a latency distribution, an error rate, a quota that runs out after N calls,
//! a 429 burst or a slow spell that lifts by itself — is a [`Script`] of [`ProviderBehaviour`]s
//! ([`SimulatedProvider::set_script`]), served the same faithful way. Only requests that pass the
//! method, path and auth checks reach the script, as only those reach a real provider's limiter.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::header::{CONTENT_TYPE, RETRY_AFTER};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Map, Value};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::script::Script;
use crate::Provider;

/// How many requests [`SimulatedProvider::requests`] keeps; older ones are forgotten so a long
/// benchmark does not grow without bound. [`SimulatedProvider::calls`] still counts every request.
pub const RECORDED_REQUESTS_LIMIT: usize = 100_000;

/// The key every simulated provider expects unless told otherwise ([`SimulatedProvider::set_expected_key`]).
pub const SIM_KEY: &str = "sim-key";

/// One result the fake serves, rendered in each provider's own field names.
#[derive(Debug, Clone, PartialEq)]
pub struct SimHit {
    /// Title.
    pub title: String,
    /// URL.
    pub url: String,
    /// Snippet (Brave `description`, Exa `highlights[0]`/`text`, Jina `description`, Tavily `content`).
    pub content: String,
    /// Publication date, served as Brave `page_age`, Exa `publishedDate`, Jina `date`, Tavily `published_date`.
    pub published_date: Option<String>,
}

/// A failure the fake serves, each in the provider's own status code and body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimError {
    /// Bad key: Brave 422 `SUBSCRIPTION_TOKEN_INVALID`, Exa/Jina/Tavily 401.
    Auth,
    /// Credits or monthly quota gone: Brave 429 `QUOTA_LIMITED` (month window at 0), Exa 402
    /// `NO_MORE_CREDITS`, Jina 402 `InsufficientBalanceError`, Tavily 432.
    Quota,
    /// Too many requests: 429 everywhere. Brave reports the wait as its per-second window's
    /// `X-RateLimit-Reset`; the others send `Retry-After`.
    RateLimited {
        /// Seconds until the provider accepts calls again.
        retry_after_secs: u64,
    },
    /// Our request is wrong: Brave 422 `VALIDATION`, Exa/Jina/Tavily 400.
    BadRequest,
    /// A server failure: 500 (Exa: 503 `SERVICE_OVERLOADED`).
    Server,
}

/// What the fake does with the next requests that pass its method, path and auth checks.
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderBehaviour {
    /// Answer these results (at most as many as the request asked for).
    Results(Vec<SimHit>),
    /// A healthy answer with zero results, in the provider's own form (Brave: no `web`; Jina: 422
    /// `AssertionFailureError`; others: an empty list).
    Empty,
    /// Fail as the provider fails.
    Error(SimError),
    /// Wait `delay` (on the tokio clock), then behave as `then`.
    Slow {
        /// How long to wait before answering.
        delay: Duration,
        /// What to do after the wait.
        then: Box<ProviderBehaviour>,
    },
    /// A 200 whose body is not JSON (cut off mid-document).
    Garbled,
    /// A 200 with valid JSON of the wrong shape (schema drift).
    WrongShape,
    /// Never answer (until the fake is dropped).
    Hang,
}

impl ProviderBehaviour {
    /// `n` results whose URLs are `url_prefix` followed by 1…n.
    pub fn results(n: usize, url_prefix: &str) -> Self {
        Self::Results(
            (1..=n)
                .map(|i| SimHit {
                    title: format!("Simulated result {i}"),
                    url: format!("{url_prefix}{i}"),
                    content: format!("Snippet of simulated result {i}."),
                    published_date: Some("2026-11-27T10:00:00".to_owned()),
                })
                .collect(),
        )
    }

    /// Waits `delay`, then behaves as `then`.
    pub fn slow(delay: Duration, then: ProviderBehaviour) -> Self {
        Self::Slow {
            delay,
            then: Box::new(then),
        }
    }

    /// A 429 telling the caller to come back in `retry_after_secs` (`Retry-After`, or Brave's
    /// per-second window reset).
    pub fn rate_limited(retry_after_secs: u64) -> Self {
        Self::Error(SimError::RateLimited { retry_after_secs })
    }
}

/// Brave's two rate-limit windows as the fake reports them in `X-RateLimit-*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BraveWindows {
    /// Requests per second allowed.
    pub per_second_limit: u32,
    /// Requests left in the current second.
    pub per_second_remaining: u32,
    /// Requests per month allowed.
    pub month_limit: u32,
    /// Requests left this month.
    pub month_remaining: u32,
    /// Seconds until the monthly window resets.
    pub month_reset_secs: u64,
}

impl Default for BraveWindows {
    fn default() -> Self {
        Self {
            per_second_limit: 20,
            per_second_remaining: 19,
            month_limit: 15_000,
            month_remaining: 14_321,
            month_reset_secs: 1_419_704,
        }
    }
}

/// One request as the fake received it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// HTTP method (`GET`, `POST`).
    pub method: String,
    /// Path without the query.
    pub path: String,
    /// Decoded query parameters, in order.
    pub query: Vec<(String, String)>,
    /// Headers with lower-case names, in order.
    pub headers: Vec<(String, String)>,
    /// The raw body.
    pub body: Vec<u8>,
}

impl RecordedRequest {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The first value of query parameter `name`.
    pub fn query_param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON, if it is JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    fn capture(method: &Method, uri: &Uri, headers: &HeaderMap, body: &[u8]) -> Self {
        Self {
            method: method.as_str().to_owned(),
            path: uri.path().to_owned(),
            query: serde_urlencoded::from_str(uri.query().unwrap_or("")).unwrap_or_default(),
            headers: headers
                .iter()
                .map(|(n, v)| {
                    (
                        n.as_str().to_owned(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect(),
            body: body.to_vec(),
        }
    }
}

/// A running fake of one premium provider. Dropping it stops the server and releases any
/// request it is holding (`Slow`, `Hang`).
pub struct SimulatedProvider {
    kind: Provider,
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
    server: JoinHandle<()>,
}

impl SimulatedProvider {
    /// Starts a fake of `kind` on `127.0.0.1:0`, answering results until told otherwise.
    pub async fn start(kind: Provider) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        Self::serve(kind, listener)
    }

    /// Starts a fake of `kind` on a listener the caller bound (the demo mode picks its ports).
    pub fn serve(kind: Provider, listener: TcpListener) -> std::io::Result<Self> {
        let addr = listener.local_addr()?;
        let (shutdown, released) = watch::channel(false);
        let shared = Arc::new(Shared {
            kind,
            released,
            in_flight: AtomicUsize::new(0),
            state: Mutex::new(SimState {
                behaviour: ProviderBehaviour::results(10, "https://example.org/result/"),
                expected_key: SIM_KEY.to_owned(),
                brave: BraveWindows::default(),
                script: None,
                calls: 0,
                requests: VecDeque::new(),
            }),
        });
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&shared));
        let server = tokio::spawn(async move {
            if let Err(err) = axum::serve(listener, app).await {
                tracing::warn!(provider = kind.as_str(), %err, "simulated provider stopped");
            }
        });
        Ok(Self {
            kind,
            addr,
            shared,
            shutdown,
            server,
        })
    }

    /// Which provider this fakes.
    pub fn kind(&self) -> Provider {
        self.kind
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The origin to configure as `<NAME>_BASE_URL`, e.g. `http://127.0.0.1:41234`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// What to do with the next requests.
    pub fn set_behaviour(&self, behaviour: ProviderBehaviour) {
        self.shared.lock().behaviour = behaviour;
    }

    /// Scripts the next requests that pass the checks: latency, error rate, quota and spells, each
    /// failure served as the [`ProviderBehaviour`] it names. Requests the script does not fail get
    /// the behaviour [`SimulatedProvider::set_behaviour`] gave, after the scripted delay. The
    /// script's clock starts now.
    pub fn set_script(&self, mut script: Script<ProviderBehaviour>) {
        script.arm();
        self.shared.lock().script = Some(script);
    }

    /// Removes the script; the behaviour set directly stays.
    pub fn clear_script(&self) {
        self.shared.lock().script = None;
    }

    /// The key the auth header must carry (default [`SIM_KEY`]).
    pub fn set_expected_key(&self, key: &str) {
        key.clone_into(&mut self.shared.lock().expected_key);
    }

    /// The rate-limit windows a Brave fake reports (ignored by the others).
    pub fn set_brave_windows(&self, windows: BraveWindows) {
        self.shared.lock().brave = windows;
    }

    /// How many requests arrived, whatever became of them.
    pub fn calls(&self) -> usize {
        self.shared.lock().calls
    }

    /// How many requests are in flight now: arrived, and neither answered yet nor dropped because the
    /// client closed the connection — for a test that must know whether the gateway still waits on a call.
    pub fn in_flight(&self) -> usize {
        self.shared.in_flight.load(Ordering::SeqCst)
    }

    /// Every request received (the last [`RECORDED_REQUESTS_LIMIT`]), oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.iter().cloned().collect()
    }

    /// The most recent request, if any.
    pub fn last_request(&self) -> Option<RecordedRequest> {
        self.shared.lock().requests.back().cloned()
    }
}

impl Drop for SimulatedProvider {
    fn drop(&mut self) {
        // Release held requests first, then stop accepting; open connections close once idle.
        let _ = self.shutdown.send(true);
        self.server.abort();
    }
}

impl std::fmt::Debug for SimulatedProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimulatedProvider")
            .field("kind", &self.kind)
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

struct Shared {
    kind: Provider,
    /// Turns `true` when the fake is dropped: ends `Slow` and `Hang` waits.
    released: watch::Receiver<bool>,
    /// Requests whose handler has not ended yet (see [`SimulatedProvider::in_flight`]).
    in_flight: AtomicUsize,
    state: Mutex<SimState>,
}

struct SimState {
    behaviour: ProviderBehaviour,
    expected_key: String,
    brave: BraveWindows,
    /// Scripted behaviour over time, consulted before `behaviour`.
    script: Option<Script<ProviderBehaviour>>,
    /// Every request that arrived.
    calls: usize,
    requests: VecDeque<RecordedRequest>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, SimState> {
        // A panicking test thread must not take every later assertion down with it.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What the request asked for, once it passed the provider's checks.
struct Asked {
    query: String,
    /// The most results the provider would return.
    count: usize,
    /// Exa: `contents.highlights` / `contents.text` requested.
    highlights: bool,
    text: bool,
    /// Jina: `Accept: application/json` (else plain text) and `X-Respond-With: no-content`.
    accept_json: bool,
    no_content: bool,
}

async fn handle(
    State(sim): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let _in_flight = InFlight::enter(&sim.in_flight);
    let request = RecordedRequest::capture(&method, &uri, &headers, &body);
    let (behaviour, key, windows) = {
        let mut state = sim.lock();
        state.calls += 1;
        if state.requests.len() == RECORDED_REQUESTS_LIMIT {
            state.requests.pop_front();
        }
        state.requests.push_back(request.clone());
        (
            state.behaviour.clone(),
            state.expected_key.clone(),
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
    let asked = match check(kind, &request, &key) {
        Ok(asked) => asked,
        Err(why) => return rejection(kind, why, windows),
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
    let Some(answer) = settle(behaviour, sim.released.clone()).await else {
        return (StatusCode::SERVICE_UNAVAILABLE, "simulator shutting down").into_response();
    };
    match answer {
        Answer::Results(hits) => results(kind, &hits, &asked, windows),
        Answer::Empty => empty(kind, &asked, windows),
        Answer::Error(err) => error(kind, err, windows),
        Answer::Garbled => with_brave_headers(
            kind,
            windows,
            json_text(
                StatusCode::OK,
                r#"{"results":[{"title":"cut off"#.to_owned(),
            ),
        ),
        Answer::WrongShape => with_brave_headers(
            kind,
            windows,
            json_text(StatusCode::OK, r#"{"status":"ok","items":[]}"#.to_owned()),
        ),
    }
}

/// Counts one request as in flight until the handler ends: it answered, or hyper dropped it because the client
/// closed the connection.
struct InFlight<'a>(&'a AtomicUsize);

impl<'a> InFlight<'a> {
    fn enter(counter: &'a AtomicUsize) -> Self {
        counter.fetch_add(1, Ordering::SeqCst);
        Self(counter)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A behaviour with its waiting played out: what is actually sent.
enum Answer {
    Results(Vec<SimHit>),
    Empty,
    Error(SimError),
    Garbled,
    WrongShape,
}

/// Plays out `Slow` and `Hang`; `None` when the fake is dropped while waiting.
async fn settle(
    mut behaviour: ProviderBehaviour,
    mut released: watch::Receiver<bool>,
) -> Option<Answer> {
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
            ProviderBehaviour::Results(hits) => return Some(Answer::Results(hits)),
            ProviderBehaviour::Empty => return Some(Answer::Empty),
            ProviderBehaviour::Error(err) => return Some(Answer::Error(err)),
            ProviderBehaviour::Garbled => return Some(Answer::Garbled),
            ProviderBehaviour::WrongShape => return Some(Answer::WrongShape),
        }
    }
}

fn path(kind: Provider) -> &'static str {
    match kind {
        Provider::Brave => "/res/v1/web/search",
        Provider::Exa | Provider::Tavily => "/search",
        Provider::Jina => "/",
    }
}

fn methods(kind: Provider) -> &'static [Method] {
    match kind {
        Provider::Brave => &[Method::GET],
        Provider::Exa | Provider::Tavily => &[Method::POST],
        Provider::Jina => &[Method::GET, Method::POST],
    }
}

/// Why the fake refused a request before its behaviour was consulted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rejection {
    /// No auth header at all (Jina names this case differently).
    MissingKey,
    /// The auth header is absent under its real name, or carries another key.
    WrongKey,
    /// A parameter the real API would refuse.
    Invalid,
}

/// Auth and parameter checks.
fn check(kind: Provider, req: &RecordedRequest, key: &str) -> Result<Asked, Rejection> {
    let bearer = format!("Bearer {key}");
    let (auth_header, auth_value) = match kind {
        Provider::Brave => ("x-subscription-token", key),
        Provider::Exa => ("x-api-key", key),
        Provider::Jina | Provider::Tavily => ("authorization", bearer.as_str()),
    };
    match req.header(auth_header) {
        None => return Err(Rejection::MissingKey),
        Some(value) if value != auth_value => return Err(Rejection::WrongKey),
        Some(_) => {}
    }
    let asked = match kind {
        Provider::Brave => check_brave(req),
        Provider::Exa => check_exa(req),
        Provider::Jina => check_jina(req),
        Provider::Tavily => check_tavily(req),
    };
    asked.map_err(|()| Rejection::Invalid)
}

/// The provider's own answer to a refused request.
fn rejection(kind: Provider, why: Rejection, windows: BraveWindows) -> Response {
    match (kind, why) {
        (Provider::Jina, Rejection::MissingKey) => jina_error(
            StatusCode::UNAUTHORIZED,
            "AuthenticationRequiredError",
            40101,
            "Authentication is required to use this endpoint. Please provide a valid API key via Authorization header.",
        ),
        (_, Rejection::MissingKey | Rejection::WrongKey) => error(kind, SimError::Auth, windows),
        (_, Rejection::Invalid) => error(kind, SimError::BadRequest, windows),
    }
}

fn check_brave(req: &RecordedRequest) -> Result<Asked, ()> {
    let query = req.query_param("q").unwrap_or_default();
    if query.trim().is_empty() || query.chars().count() > 400 {
        return Err(());
    }
    let count = bounded(req.query_param("count"), 1, 20, 20)?;
    bounded(req.query_param("offset"), 0, 9, 0)?;
    one_of(
        req.query_param("safesearch"),
        &["off", "moderate", "strict"],
    )?;
    one_of(
        req.query_param("text_decorations"),
        &["true", "false", "1", "0"],
    )?;
    if let Some(freshness) = req.query_param("freshness") {
        let range = freshness.len() == 22 && freshness.get(10..12) == Some("to");
        if !(["pd", "pw", "pm", "py"].contains(&freshness) || range) {
            return Err(());
        }
    }
    if let Some(lang) = req.query_param("search_lang") {
        let valid = (2..=7).contains(&lang.len())
            && lang.chars().all(|c| c.is_ascii_lowercase() || c == '-');
        if !valid {
            return Err(());
        }
    }
    if let Some(market) = req.query_param("ui_lang") {
        let mut parts = market.split('-');
        let valid = matches!(
            (parts.next(), parts.next(), parts.next()),
            (Some(l), Some(r), None)
                if l.len() == 2 && l.chars().all(|c| c.is_ascii_lowercase())
                    && r.len() == 2 && r.chars().all(|c| c.is_ascii_uppercase())
        );
        if !valid {
            return Err(());
        }
    }
    Ok(Asked {
        query: query.to_owned(),
        count,
        highlights: false,
        text: false,
        accept_json: true,
        no_content: true,
    })
}

fn check_exa(req: &RecordedRequest) -> Result<Asked, ()> {
    let body = json_object(req)?;
    let query = non_empty_string(&body, "query")?;
    let count = json_bounded(&body, "numResults", 1, 100, 10)?;
    if let Some(start) = body.get("startPublishedDate") {
        let start = start.as_str().ok_or(())?;
        let date = start.get(..10).ok_or(())?;
        let shaped = date.len() == 10
            && date.char_indices().all(|(i, c)| {
                if i == 4 || i == 7 {
                    c == '-'
                } else {
                    c.is_ascii_digit()
                }
            });
        if !shaped {
            return Err(());
        }
    }
    let (mut highlights, mut text) = (false, false);
    if let Some(contents) = body.get("contents") {
        let contents = contents.as_object().ok_or(())?;
        highlights = contents
            .get("highlights")
            .is_some_and(|h| h.as_bool().unwrap_or(h.is_object()));
        text = contents
            .get("text")
            .is_some_and(|t| t.as_bool().unwrap_or(t.is_object()));
    }
    Ok(Asked {
        query,
        count,
        highlights,
        text,
        accept_json: true,
        no_content: true,
    })
}

fn check_jina(req: &RecordedRequest) -> Result<Asked, ()> {
    let (query, count) = if req.method == "GET" {
        let query = req.query_param("q").unwrap_or_default().to_owned();
        (query, bounded(req.query_param("num"), 1, 20, 10)?)
    } else {
        let body = json_object(req)?;
        json_bounded(&body, "page", 1, 1000, 1)?;
        (
            non_empty_string(&body, "q")?,
            json_bounded(&body, "num", 1, 20, 10)?,
        )
    };
    if query.trim().is_empty() {
        return Err(());
    }
    Ok(Asked {
        query,
        count,
        highlights: false,
        text: false,
        accept_json: req
            .header("accept")
            .is_some_and(|a| a.contains("application/json")),
        no_content: req.header("x-respond-with") == Some("no-content"),
    })
}

fn check_tavily(req: &RecordedRequest) -> Result<Asked, ()> {
    let body = json_object(req)?;
    let query = non_empty_string(&body, "query")?;
    let count = json_bounded(&body, "max_results", 0, 20, 5)?;
    json_one_of(&body, "search_depth", &["basic", "advanced"])?;
    json_one_of(
        &body,
        "time_range",
        &["day", "week", "month", "year", "d", "w", "m", "y"],
    )?;
    Ok(Asked {
        query,
        count,
        highlights: false,
        text: false,
        accept_json: true,
        no_content: true,
    })
}

/// A number parameter within `min..=max`, `default` when absent.
fn bounded(value: Option<&str>, min: usize, max: usize, default: usize) -> Result<usize, ()> {
    match value {
        None => Ok(default),
        Some(v) => v
            .parse::<usize>()
            .ok()
            .filter(|n| (min..=max).contains(n))
            .ok_or(()),
    }
}

fn one_of(value: Option<&str>, allowed: &[&str]) -> Result<(), ()> {
    match value {
        Some(v) if !allowed.contains(&v) => Err(()),
        _ => Ok(()),
    }
}

/// The JSON object body of a POST that declared `Content-Type: application/json`.
fn json_object(req: &RecordedRequest) -> Result<Map<String, Value>, ()> {
    let declared = req
        .header("content-type")
        .is_some_and(|c| c.starts_with("application/json"));
    if !declared {
        return Err(());
    }
    match req.json() {
        Some(Value::Object(map)) => Ok(map),
        _ => Err(()),
    }
}

fn non_empty_string(body: &Map<String, Value>, field: &str) -> Result<String, ()> {
    body.get(field)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .map(str::to_owned)
        .ok_or(())
}

fn json_bounded(
    body: &Map<String, Value>,
    field: &str,
    min: u64,
    max: u64,
    default: usize,
) -> Result<usize, ()> {
    match body.get(field) {
        None => Ok(default),
        Some(v) => v
            .as_u64()
            .filter(|n| (min..=max).contains(n))
            .and_then(|n| usize::try_from(n).ok())
            .ok_or(()),
    }
}

fn json_one_of(body: &Map<String, Value>, field: &str, allowed: &[&str]) -> Result<(), ()> {
    match body.get(field) {
        None => Ok(()),
        Some(v) => v
            .as_str()
            .filter(|s| allowed.contains(s))
            .map(|_| ())
            .ok_or(()),
    }
}

fn results(kind: Provider, hits: &[SimHit], asked: &Asked, windows: BraveWindows) -> Response {
    let hits = &hits[..hits.len().min(asked.count)];
    match kind {
        Provider::Brave => {
            let results: Vec<Value> = hits
                .iter()
                .map(|h| {
                    json!({
                        "type": "search_result",
                        "title": h.title,
                        "url": h.url,
                        "description": h.content,
                        "page_age": h.published_date,
                        "language": "en",
                        "family_friendly": true,
                    })
                })
                .collect();
            let body = json!({
                "type": "search",
                "query": { "original": asked.query },
                "web": { "type": "search", "results": results, "family_friendly": true },
            });
            with_brave_headers(kind, windows, json_value(StatusCode::OK, &body))
        }
        Provider::Exa => {
            let results: Vec<Value> = hits
                .iter()
                .enumerate()
                .map(|(i, h)| {
                    let mut result = json!({
                        "id": h.url,
                        "url": h.url,
                        "title": h.title,
                        "publishedDate": h.published_date,
                        "author": null,
                        "score": 0.5 - 0.01 * i as f64,
                    });
                    if asked.highlights {
                        result["highlights"] = json!([h.content]);
                        result["highlightScores"] = json!([0.5]);
                    }
                    if asked.text {
                        result["text"] = json!(h.content);
                    }
                    result
                })
                .collect();
            let body = json!({
                "requestId": "sim-request",
                "resolvedSearchType": "neural",
                "results": results,
                "costDollars": { "total": 0.007 },
            });
            json_value(StatusCode::OK, &body)
        }
        Provider::Jina => {
            if !asked.accept_json {
                let text: String = hits
                    .iter()
                    .enumerate()
                    .map(|(i, h)| {
                        let n = i + 1;
                        format!(
                            "[{n}] Title: {}\n[{n}] URL Source: {}\n[{n}] Description: {}\n\n",
                            h.title, h.url, h.content
                        )
                    })
                    .collect();
                return (
                    StatusCode::OK,
                    [(CONTENT_TYPE, "text/plain; charset=utf-8")],
                    text,
                )
                    .into_response();
            }
            let data: Vec<Value> = hits
                .iter()
                .map(|h| {
                    let mut item = json!({
                        "title": h.title,
                        "url": h.url,
                        "description": h.content,
                        "usage": { "tokens": 1000 },
                    });
                    if let Some(date) = &h.published_date {
                        item["date"] = json!(date);
                    }
                    if !asked.no_content {
                        item["content"] = json!(format!("{}\n\n{}", h.title, h.content));
                    }
                    item
                })
                .collect();
            let body = json!({
                "code": 200,
                "status": 20000,
                "data": data,
                "meta": { "usage": { "tokens": 10_000 } },
            });
            json_value(StatusCode::OK, &body)
        }
        Provider::Tavily => {
            let results: Vec<Value> = hits
                .iter()
                .enumerate()
                .map(|(i, h)| {
                    json!({
                        "title": h.title,
                        "url": h.url,
                        "content": h.content,
                        "score": 0.9 - 0.01 * i as f64,
                        "raw_content": null,
                        "published_date": h.published_date,
                    })
                })
                .collect();
            let body = json!({
                "query": asked.query,
                "answer": null,
                "images": [],
                "results": results,
                "response_time": 0.92,
                "request_id": "sim-request",
            });
            json_value(StatusCode::OK, &body)
        }
    }
}

fn empty(kind: Provider, asked: &Asked, windows: BraveWindows) -> Response {
    match kind {
        Provider::Brave => {
            let body = json!({ "type": "search", "query": { "original": asked.query } });
            with_brave_headers(kind, windows, json_value(StatusCode::OK, &body))
        }
        Provider::Exa => json_value(
            StatusCode::OK,
            &json!({ "requestId": "sim-request", "results": [], "costDollars": { "total": 0.005 } }),
        ),
        Provider::Jina => jina_error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "AssertionFailureError",
            42206,
            &format!("No search results available for query {}", asked.query),
        ),
        Provider::Tavily => json_value(
            StatusCode::OK,
            &json!({ "query": asked.query, "answer": null, "images": [], "results": [], "response_time": 0.41 }),
        ),
    }
}

fn error(kind: Provider, err: SimError, windows: BraveWindows) -> Response {
    let retry_after = match err {
        SimError::RateLimited { retry_after_secs } => Some(retry_after_secs),
        _ => None,
    };
    let mut response = match kind {
        Provider::Brave => return brave_error(err, windows),
        Provider::Exa => {
            let (status, message, tag) = match err {
                SimError::Auth => (
                    StatusCode::UNAUTHORIZED,
                    "Invalid API key",
                    "INVALID_API_KEY",
                ),
                SimError::Quota => (
                    StatusCode::PAYMENT_REQUIRED,
                    "You have run out of credits",
                    "NO_MORE_CREDITS",
                ),
                SimError::RateLimited { .. } => (
                    StatusCode::TOO_MANY_REQUESTS,
                    "Rate limit exceeded",
                    "RATE_LIMIT_EXCEEDED",
                ),
                SimError::BadRequest => (
                    StatusCode::BAD_REQUEST,
                    "Invalid request body",
                    "INVALID_REQUEST_BODY",
                ),
                SimError::Server => (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Service overloaded, please retry",
                    "SERVICE_OVERLOADED",
                ),
            };
            json_value(
                status,
                &json!({ "requestId": "sim-request", "error": message, "tag": tag }),
            )
        }
        Provider::Jina => {
            let (status, name, code, message) = match err {
                SimError::Auth => (
                    StatusCode::UNAUTHORIZED,
                    "AuthenticationFailedError",
                    40103,
                    "Invalid API key, please get a new one from https://jina.ai",
                ),
                SimError::Quota => (
                    StatusCode::PAYMENT_REQUIRED,
                    "InsufficientBalanceError",
                    40203,
                    "Account balance not enough to run this query, please recharge.",
                ),
                SimError::RateLimited { .. } => (
                    StatusCode::TOO_MANY_REQUESTS,
                    "RateLimitTriggeredError",
                    42903,
                    "Per API key rate limit exceeded.",
                ),
                SimError::BadRequest => (
                    StatusCode::BAD_REQUEST,
                    "ParamValidationError",
                    40001,
                    "Invalid parameters.",
                ),
                SimError::Server => (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "InternalServerError",
                    50000,
                    "Internal server error.",
                ),
            };
            jina_error(status, name, code, message)
        }
        Provider::Tavily => {
            let (status, message) = match err {
                SimError::Auth => (
                    StatusCode::UNAUTHORIZED,
                    "Unauthorized: missing or invalid API key.",
                ),
                SimError::Quota => (
                    StatusCode::from_u16(432).unwrap_or(StatusCode::PAYMENT_REQUIRED),
                    "This request exceeds your plan's set usage limit. Please upgrade your plan or contact support@tavily.com",
                ),
                SimError::RateLimited { .. } => (
                    StatusCode::TOO_MANY_REQUESTS,
                    "Your request has been blocked due to excessive requests.",
                ),
                SimError::BadRequest => (StatusCode::BAD_REQUEST, "Invalid request parameters."),
                SimError::Server => (StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error"),
            };
            json_value(status, &json!({ "detail": { "error": message } }))
        }
    };
    if let Some(secs) = retry_after {
        response
            .headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from(secs));
    }
    response
}

fn brave_error(err: SimError, mut windows: BraveWindows) -> Response {
    let mut per_second_reset = 1;
    let (status, code, detail) = match err {
        SimError::Auth => (
            StatusCode::UNPROCESSABLE_ENTITY,
            "SUBSCRIPTION_TOKEN_INVALID",
            "The provided subscription token is invalid.",
        ),
        SimError::Quota => {
            windows.month_remaining = 0;
            (
                StatusCode::TOO_MANY_REQUESTS,
                "QUOTA_LIMITED",
                "Request quota limit reached.",
            )
        }
        SimError::RateLimited { retry_after_secs } => {
            windows.per_second_remaining = 0;
            per_second_reset = retry_after_secs;
            (
                StatusCode::TOO_MANY_REQUESTS,
                "RATE_LIMITED",
                "Request rate limit exceeded for plan.",
            )
        }
        SimError::BadRequest => (
            StatusCode::UNPROCESSABLE_ENTITY,
            "VALIDATION",
            "Unable to validate request parameter(s).",
        ),
        SimError::Server => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL_ERROR",
            "An unexpected error occurred.",
        ),
    };
    let body = json!({
        "type": "ErrorResponse",
        "error": { "id": "sim-error", "status": status.as_u16(), "code": code, "detail": detail },
        "time": 1_700_000_000,
    });
    let mut response = json_value(status, &body);
    insert_brave_headers(response.headers_mut(), windows, per_second_reset);
    response
}

fn with_brave_headers(kind: Provider, windows: BraveWindows, mut response: Response) -> Response {
    if kind == Provider::Brave {
        insert_brave_headers(response.headers_mut(), windows, 1);
    }
    response
}

fn insert_brave_headers(headers: &mut HeaderMap, w: BraveWindows, per_second_reset: u64) {
    let values = [
        (
            "x-ratelimit-limit",
            format!("{}, {}", w.per_second_limit, w.month_limit),
        ),
        (
            "x-ratelimit-policy",
            format!("{};w=1, {};w=2592000", w.per_second_limit, w.month_limit),
        ),
        (
            "x-ratelimit-remaining",
            format!("{}, {}", w.per_second_remaining, w.month_remaining),
        ),
        (
            "x-ratelimit-reset",
            format!("{per_second_reset}, {}", w.month_reset_secs),
        ),
    ];
    for (name, value) in values {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(HeaderName::from_static(name), value);
        }
    }
}

fn jina_error(status: StatusCode, name: &str, code: u32, message: &str) -> Response {
    let body = json!({
        "data": null,
        "code": status.as_u16(),
        "name": name,
        "status": code,
        "message": message,
        "readableMessage": format!("{name}: {message}"),
    });
    json_value(status, &body)
}

fn json_value(status: StatusCode, body: &Value) -> Response {
    json_text(status, body.to_string())
}

fn json_text(status: StatusCode, body: String) -> Response {
    (status, [(CONTENT_TYPE, "application/json")], body).into_response()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::script::{Latency, Spell};

    async fn raw(
        sim: &SimulatedProvider,
        method: reqwest::Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<Value>,
    ) -> (u16, HeaderMap, String) {
        let mut req = reqwest::Client::new().request(method, format!("{}{path}", sim.base_url()));
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        (status, headers, resp.text().await.unwrap())
    }

    #[tokio::test]
    async fn a_wrong_path_is_404_and_a_wrong_method_is_405() {
        let sim = SimulatedProvider::start(Provider::Exa).await.unwrap();
        let auth = [("x-api-key", SIM_KEY)];
        let (status, ..) = raw(&sim, reqwest::Method::POST, "/v1/search", &auth, None).await;
        assert_eq!(status, 404);
        let (status, ..) = raw(&sim, reqwest::Method::GET, "/search", &auth, None).await;
        assert_eq!(status, 405);
        assert_eq!(sim.calls(), 2);
        assert_eq!(sim.requests()[0].path, "/v1/search");
    }

    #[tokio::test]
    async fn brave_without_its_token_answers_422_subscription_token_invalid_with_rate_headers() {
        let sim = SimulatedProvider::start(Provider::Brave).await.unwrap();
        let (status, headers, body) = raw(
            &sim,
            reqwest::Method::GET,
            "/res/v1/web/search?q=x",
            &[("authorization", &format!("Bearer {SIM_KEY}"))],
            None,
        )
        .await;
        assert_eq!(status, 422);
        assert!(body.contains("SUBSCRIPTION_TOKEN_INVALID"));
        for name in ["limit", "policy", "remaining", "reset"] {
            assert!(
                headers.contains_key(format!("x-ratelimit-{name}").as_str()),
                "{name}"
            );
        }
    }

    #[tokio::test]
    async fn each_provider_refuses_a_wrong_auth_header_name_its_own_way() {
        let cases = [
            (Provider::Exa, "/search", 401, "INVALID_API_KEY"),
            (Provider::Jina, "/", 401, "AuthenticationRequiredError"),
            (Provider::Tavily, "/search", 401, "Unauthorized"),
        ];
        for (kind, path, want_status, want_text) in cases {
            let sim = SimulatedProvider::start(kind).await.unwrap();
            let (status, _, body) = raw(
                &sim,
                reqwest::Method::POST,
                path,
                &[("x-subscription-token", SIM_KEY)],
                Some(json!({"query": "x", "q": "x"})),
            )
            .await;
            assert_eq!(status, want_status, "{kind:?}");
            assert!(body.contains(want_text), "{kind:?}: {body}");
        }
    }

    #[tokio::test]
    async fn out_of_range_parameters_get_the_providers_validation_error() {
        let sim = SimulatedProvider::start(Provider::Brave).await.unwrap();
        let (status, _, body) = raw(
            &sim,
            reqwest::Method::GET,
            "/res/v1/web/search?q=x&count=50",
            &[("x-subscription-token", SIM_KEY)],
            None,
        )
        .await;
        assert_eq!(status, 422);
        assert!(body.contains("VALIDATION"));

        let sim = SimulatedProvider::start(Provider::Tavily).await.unwrap();
        let auth = format!("Bearer {SIM_KEY}");
        let (status, ..) = raw(
            &sim,
            reqwest::Method::POST,
            "/search",
            &[("authorization", &auth)],
            Some(json!({"query": "x", "search_depth": "deep"})),
        )
        .await;
        assert_eq!(status, 400);
    }

    #[tokio::test]
    async fn jina_answers_plain_text_unless_asked_for_json() {
        let sim = SimulatedProvider::start(Provider::Jina).await.unwrap();
        let auth = format!("Bearer {SIM_KEY}");
        let (status, headers, body) = raw(
            &sim,
            reqwest::Method::POST,
            "/",
            &[("authorization", &auth)],
            Some(json!({"q": "x"})),
        )
        .await;
        assert_eq!(status, 200);
        assert!(headers[CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/plain"));
        assert!(body.starts_with("[1] Title:"));
    }

    #[tokio::test]
    async fn jina_accepts_the_get_form_too() {
        let sim = SimulatedProvider::start(Provider::Jina).await.unwrap();
        let auth = format!("Bearer {SIM_KEY}");
        let (status, _, body) = raw(
            &sim,
            reqwest::Method::GET,
            "/?q=rust",
            &[("authorization", &auth), ("accept", "application/json")],
            None,
        )
        .await;
        assert_eq!(status, 200);
        assert!(body.contains("\"data\""));
    }

    #[tokio::test]
    async fn results_are_capped_at_the_requested_count() {
        let sim = SimulatedProvider::start(Provider::Tavily).await.unwrap();
        sim.set_behaviour(ProviderBehaviour::results(30, "https://a.example/"));
        let auth = format!("Bearer {SIM_KEY}");
        let (_, _, body) = raw(
            &sim,
            reqwest::Method::POST,
            "/search",
            &[("authorization", &auth)],
            Some(json!({"query": "x", "max_results": 3})),
        )
        .await;
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["results"].as_array().unwrap().len(), 3);
    }

    #[tokio::test]
    async fn a_hanging_request_is_released_when_the_fake_is_dropped() {
        let sim = SimulatedProvider::start(Provider::Exa).await.unwrap();
        sim.set_behaviour(ProviderBehaviour::Hang);
        let url = format!("{}/search", sim.base_url());
        let call = tokio::spawn(async move {
            reqwest::Client::new()
                .post(url)
                .header("x-api-key", SIM_KEY)
                .json(&json!({"query": "x"}))
                .send()
                .await
                .map(|r| r.status().as_u16())
        });
        while sim.calls() == 0 {
            tokio::task::yield_now().await;
        }
        drop(sim);
        let outcome = tokio::time::timeout(Duration::from_secs(5), call)
            .await
            .expect("released promptly")
            .unwrap();
        assert!(matches!(outcome, Ok(503) | Err(_)), "{outcome:?}");
    }

    async fn tavily_search(sim: &SimulatedProvider, key: &str) -> (u16, HeaderMap, String) {
        raw(
            sim,
            reqwest::Method::POST,
            "/search",
            &[("authorization", &format!("Bearer {key}"))],
            Some(json!({"query": "rust"})),
        )
        .await
    }

    #[tokio::test]
    async fn a_rate_limit_burst_answers_429_with_retry_after_then_recovers() {
        let sim = SimulatedProvider::start(Provider::Tavily).await.unwrap();
        sim.set_script(
            Script::new().spell(Spell::failing(ProviderBehaviour::rate_limited(7)).for_requests(2)),
        );

        for _ in 0..2 {
            let (status, headers, body) = tavily_search(&sim, SIM_KEY).await;
            assert_eq!(status, 429);
            assert_eq!(headers[RETRY_AFTER], "7");
            assert!(body.contains("excessive requests"), "{body}");
        }
        let (status, _, body) = tavily_search(&sim, SIM_KEY).await;
        assert_eq!(status, 200);
        assert!(body.contains("\"results\""));
        assert_eq!(sim.calls(), 3);
    }

    #[tokio::test]
    async fn a_brave_burst_reports_the_wait_in_its_per_second_window() {
        let sim = SimulatedProvider::start(Provider::Brave).await.unwrap();
        sim.set_script(Script::new().spell(Spell::failing(ProviderBehaviour::rate_limited(4))));

        let (status, headers, body) = raw(
            &sim,
            reqwest::Method::GET,
            "/res/v1/web/search?q=rust",
            &[("x-subscription-token", SIM_KEY)],
            None,
        )
        .await;

        assert_eq!(status, 429);
        assert!(body.contains("RATE_LIMITED"));
        assert_eq!(headers["x-ratelimit-reset"], "4, 1419704");
        assert_eq!(headers["x-ratelimit-remaining"], "0, 14321");
    }

    #[tokio::test]
    async fn a_quota_runs_out_after_its_calls_and_auth_failures_do_not_use_it() {
        let sim = SimulatedProvider::start(Provider::Tavily).await.unwrap();
        sim.set_script(Script::new().quota(1, ProviderBehaviour::Error(SimError::Quota)));

        let (refused, ..) = tavily_search(&sim, "wrong-key").await;
        let (first, ..) = tavily_search(&sim, SIM_KEY).await;
        let (second, _, body) = tavily_search(&sim, SIM_KEY).await;

        assert_eq!((refused, first, second), (401, 200, 432));
        assert!(body.contains("usage limit"), "{body}");
        sim.clear_script();
        assert_eq!(tavily_search(&sim, SIM_KEY).await.0, 200);
    }

    #[tokio::test(start_paused = true)]
    async fn scripted_latency_delays_every_answer() {
        let sim = SimulatedProvider::start(Provider::Tavily).await.unwrap();
        sim.set_script(Script::new().latency(Latency::Fixed(Duration::from_millis(400))));
        let started = tokio::time::Instant::now();

        let (status, ..) = tavily_search(&sim, SIM_KEY).await;

        assert_eq!(status, 200);
        assert!(started.elapsed() >= Duration::from_millis(400));
    }

    #[tokio::test]
    async fn an_error_rate_fails_its_share_of_requests() {
        let sim = SimulatedProvider::start(Provider::Tavily).await.unwrap();
        sim.set_script(Script::new().errors(0.5, ProviderBehaviour::Error(SimError::Server)));

        let mut failed = 0;
        for _ in 0..40 {
            match tavily_search(&sim, SIM_KEY).await.0 {
                500 => failed += 1,
                200 => {}
                other => panic!("unexpected {other}"),
            }
        }

        assert!((10..=30).contains(&failed), "{failed} of 40");
    }

    #[test]
    fn recorded_requests_answer_header_query_and_json_lookups() {
        let req = RecordedRequest {
            method: "POST".into(),
            path: "/".into(),
            query: vec![("q".into(), "a b".into())],
            headers: vec![("x-api-key".into(), "k".into())],
            body: br#"{"q":"a"}"#.to_vec(),
        };
        assert_eq!(req.header("X-API-Key"), Some("k"));
        assert_eq!(req.query_param("q"), Some("a b"));
        assert_eq!(req.json().unwrap()["q"], "a");
    }
}
