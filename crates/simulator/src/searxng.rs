//! A scriptable, faithful stand-in for a SearXNG instance, served on loopback.
//!
//! The gateway's integration tests, benchmarks and demo mode talk to this instead of a real SearXNG. It serves
//! `/healthz`, `/config` and `/search` (GET, and POST with a form body) with SearXNG's status codes, JSON shapes and
//! traps as recorded in `shared/spec/SEARXNG.md`: a 403 HTML page when JSON is off, a 302 for `!!bang` even with
//! `format=json`, `engines=` with no known name falling back to the default engines, `engines=` united with
//! `categories=`, one URL found by two engines merged into one result, and failing engines reported in
//! `unresponsive_engines` while the answer stays 200.
//!
//! Tests script it while it runs — per engine with [`SimulatedSearxng::set_engine`], for the whole instance with
//! [`SimulatedSearxng::set_mode`] — and then check what it was asked: [`SimulatedSearxng::requests`],
//! [`SimulatedSearxng::engine_hits`]. Behaviour over time (latency distributions, error rates, quotas, CAPTCHA and
//! slow spells that lift by themselves) is a [`Script`] on top of that: [`SimulatedSearxng::set_script`] for the
//! instance, [`SimulatedSearxng::set_engine_script`] per engine. An engine scripted slower than [`ENGINE_TIMEOUT`] is
//! reported as `timeout` after that long, as SearXNG does; the search waits for its slowest engine.
//!
//! Answers are deterministic: the same query, page and engines always give the same URLs, so a test can predict
//! which URLs two engines share and a benchmark is repeatable. Whole-instance modes apply to `/search` only;
//! `/healthz` and `/config` keep answering so start-up discovery can be tested apart from search failures.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use bytes::Bytes;
use futures::StreamExt;
use serde_json::{json, Map, Value};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::script::Script;

/// How many results a healthy engine returns per page until a test says otherwise.
pub const DEFAULT_RESULTS_PER_ENGINE: usize = 5;

/// The `version` the simulated instance reports in `/config`.
pub const SIMULATED_VERSION: &str = "2026.8.1-sim";

/// Size of the body [`SearxngMode::Huge`] sends: over the 8 MiB a gateway should refuse to buffer.
pub const HUGE_BODY_BYTES: usize = 9 * 1024 * 1024;

/// How many search requests [`SimulatedSearxng::requests`] keeps; older ones are forgotten so a long benchmark
/// does not grow without bound. [`SimulatedSearxng::hits`] still counts every request.
pub const RECORDED_REQUESTS_LIMIT: usize = 100_000;

/// The per-engine timeout `/config` reports; a scripted engine slower than this is reported as `timeout` once it
/// has passed.
pub const ENGINE_TIMEOUT: Duration = Duration::from_secs(3);

/// Why an engine failed, as SearXNG reports it in `unresponsive_engines`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineFailure {
    /// The upstream answered 402 or 403, or a Cloudflare firewall page: `access denied`.
    AccessDenied,
    /// The upstream answered 429: `too many requests`.
    TooManyRequests,
    /// A reCAPTCHA page or a Cloudflare challenge: `CAPTCHA`.
    Captcha,
    /// The engine was slower than the request's timeout: `timeout`.
    Timeout,
    /// Any other upstream status of 400 or more: `HTTP error`.
    HttpError,
    /// Connection refused, DNS or TLS failure: `HTTP connection error`.
    ConnectionError,
    /// A garbled HTTP reply: `HTTP protocol error`.
    ProtocolError,
    /// A hang-up or read error: `network error`.
    NetworkError,
    /// The outgoing proxy failed: `proxy error`.
    ProxyError,
    /// The upstream changed its page or JSON: `parsing error`.
    ParsingError,
    /// The upstream API reported an error: `server API error`.
    ServerApiError,
    /// A bug in the engine: `unexpected crash`.
    UnexpectedCrash,
    /// SearXNG parked the engine after an earlier failure and did not even try it: `Suspended: <inner>`.
    /// SearXNG keeps a single flag, so nested suspensions render with one prefix.
    Suspended(Box<EngineFailure>),
}

impl EngineFailure {
    /// The text SearXNG puts in `unresponsive_engines` for this failure when the request says `locale=en`.
    pub fn message(&self) -> String {
        self.localized(UiLanguage::English)
    }

    fn localized(&self, language: UiLanguage) -> String {
        match self {
            EngineFailure::Suspended(inner) => {
                format!(
                    "{}: {}",
                    self.text(language),
                    inner.innermost().text(language)
                )
            }
            failure => failure.text(language).to_owned(),
        }
    }

    fn innermost(&self) -> &EngineFailure {
        match self {
            EngineFailure::Suspended(inner) => inner.innermost(),
            failure => failure,
        }
    }

    /// English text as in SearXNG's `exception_classname_to_text`; the German is an approximation of its
    /// translation, there only so a gateway that forgets `locale=en` sees text it cannot classify.
    fn text(&self, language: UiLanguage) -> &'static str {
        let (english, german) = match self {
            EngineFailure::AccessDenied => ("access denied", "Zugriff verweigert"),
            EngineFailure::TooManyRequests => ("too many requests", "Zu viele Anfragen"),
            EngineFailure::Captcha => ("CAPTCHA", "CAPTCHA"),
            EngineFailure::Timeout => ("timeout", "Zeitüberschreitung"),
            EngineFailure::HttpError => ("HTTP error", "HTTP-Fehler"),
            EngineFailure::ConnectionError => ("HTTP connection error", "HTTP-Verbindungsfehler"),
            EngineFailure::ProtocolError => ("HTTP protocol error", "HTTP-Protokollfehler"),
            EngineFailure::NetworkError => ("network error", "Netzwerkfehler"),
            EngineFailure::ProxyError => ("proxy error", "Proxy-Fehler"),
            EngineFailure::ParsingError => ("parsing error", "Fehler beim Parsen"),
            EngineFailure::ServerApiError => ("server API error", "Server-API-Fehler"),
            EngineFailure::UnexpectedCrash => ("unexpected crash", "Unerwarteter Absturz"),
            EngineFailure::Suspended(_) => ("Suspended", "Ausgesetzt"),
        };
        match language {
            UiLanguage::English => english,
            UiLanguage::German => german,
        }
    }
}

/// What one simulated engine does when a search selects it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineBehaviour {
    /// The engine finds results.
    Ok {
        /// Results per page.
        results: usize,
    },
    /// The engine answers but finds nothing: it is in neither `results` nor `unresponsive_engines`.
    Empty,
    /// The engine fails and is listed in `unresponsive_engines` with this failure's message.
    Fails(EngineFailure),
}

/// What the whole instance does with `/search` requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearxngMode {
    /// Behaves like SearXNG, engines as scripted.
    Normal,
    /// Every search answers this status: 500 `{"error":"search error"}`, 429 as SearXNG's limiter does
    /// (plain text), 502/503/504 as the reverse proxy in front does (HTML), others a JSON error.
    Status(u16),
    /// Accepts the request and never answers (until the simulator is dropped, which closes the connection).
    Hang,
    /// Answers normally after this delay.
    Delay(Duration),
    /// JSON is not in `search.formats`: `format=json` gets a 403 HTML page.
    JsonDisabled,
    /// Answers 200 with `Content-Type: application/json` and a body that is not JSON.
    Garbage,
    /// Answers 200 with valid JSON over [`HUGE_BODY_BYTES`], sent chunked (no `Content-Length`).
    Huge,
    /// Declares a `Content-Length` larger than what it sends, sends half the JSON, then closes the connection.
    Truncated,
    /// The next `count` searches answer `status` (as in [`SearxngMode::Status`]), then the mode becomes
    /// [`SearxngMode::Normal`].
    FailTimes {
        /// How many searches still fail.
        count: usize,
        /// The status they fail with.
        status: u16,
    },
}

/// A simulated SearXNG instance on a loopback port; it stops when dropped.
pub struct SimulatedSearxng {
    address: SocketAddr,
    state: Arc<Mutex<Instance>>,
    /// `/search` requests whose handling has not ended yet.
    in_flight: Arc<AtomicUsize>,
    /// Set to `true` on drop: closes idle keep-alive connections and releases hanging requests.
    stopping: watch::Sender<bool>,
    /// The accept loop; aborted on drop so the port stops accepting at once.
    server: JoinHandle<()>,
}

impl SimulatedSearxng {
    /// Starts an instance with these engines (all in category `general`, each answering
    /// [`DEFAULT_RESULTS_PER_ENGINE`] results) on `127.0.0.1` and a free port.
    pub async fn start(engines: &[&str]) -> io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        Self::start_on(listener, engines).await
    }

    /// Starts an instance on a listener the caller bound, for the demo's fixed address.
    pub async fn start_on(listener: TcpListener, engines: &[&str]) -> io::Result<Self> {
        let address = listener.local_addr()?;
        let state = Arc::new(Mutex::new(Instance::new(engines)));
        let (stopping, stopping_rx) = watch::channel(false);
        let in_flight = Arc::new(AtomicUsize::new(0));
        let app = App {
            state: Arc::clone(&state),
            in_flight: Arc::clone(&in_flight),
            stopping: stopping_rx.clone(),
        };
        let serve = axum::serve(listener, router(app)).with_graceful_shutdown(stopped(stopping_rx));
        let server = tokio::spawn(async move {
            // The error is an accept failure on a loopback listener; the simulator has nobody to report it to
            // and tests notice the refused connections.
            let _ = serve.await;
        });
        Ok(Self {
            address,
            state,
            in_flight,
            stopping,
            server,
        })
    }

    /// The address it listens on.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Switches what `engine` does from the next search on.
    ///
    /// # Panics
    /// If the instance has no such engine: a typo in a test should fail loudly, not script nothing.
    #[track_caller]
    pub fn set_engine(&self, engine: &str, behaviour: EngineBehaviour) {
        self.lock().engine_mut(engine).behaviour = behaviour;
    }

    /// Puts `engine` in these categories (the first is the one its results carry when selected by name).
    ///
    /// # Panics
    /// If the instance has no such engine.
    #[track_caller]
    pub fn set_engine_categories(&self, engine: &str, categories: &[&str]) {
        self.lock().engine_mut(engine).categories = categories
            .iter()
            .map(|category| (*category).to_owned())
            .collect();
    }

    /// Enables or disables `engine` as `disabled: true` in `settings.yml` would: a disabled engine is left out of
    /// category searches but still answers when named in `engines=`.
    ///
    /// # Panics
    /// If the instance has no such engine.
    #[track_caller]
    pub fn set_engine_enabled(&self, engine: &str, enabled: bool) {
        self.lock().engine_mut(engine).enabled = enabled;
    }

    /// Whether `engine` supports paging; without it SearXNG silently skips the engine for `pageno` > 1.
    ///
    /// # Panics
    /// If the instance has no such engine.
    #[track_caller]
    pub fn set_engine_paging(&self, engine: &str, paging: bool) {
        self.lock().engine_mut(engine).paging = paging;
    }

    /// Whether `engine` supports `time_range`; without it SearXNG silently skips the engine when one is given.
    ///
    /// # Panics
    /// If the instance has no such engine.
    #[track_caller]
    pub fn set_engine_time_range_support(&self, engine: &str, supported: bool) {
        self.lock().engine_mut(engine).time_range_support = supported;
    }

    /// Switches what the whole instance does with searches, from the next request on.
    pub fn set_mode(&self, mode: SearxngMode) {
        self.lock().mode = mode;
    }

    /// Scripts the whole instance's searches from the next request on: latency, error rate, quota and spells,
    /// each failure served as the [`SearxngMode`] it names (`Normal` in a script means "answer normally"). Requests
    /// the script does not fail follow [`SimulatedSearxng::set_mode`]. The script's clock starts now.
    pub fn set_script(&self, mut script: Script<SearxngMode>) {
        script.arm();
        self.lock().script = Some(script);
    }

    /// Scripts one engine from its next search on: its latency (the search waits for its slowest engine; beyond
    /// [`ENGINE_TIMEOUT`] the engine is reported as `timeout`), error rate, quota and spells — a CAPTCHA spell is
    /// `Spell::failing(EngineBehaviour::Fails(EngineFailure::Captcha))`. Searches the script does not fail get the
    /// behaviour [`SimulatedSearxng::set_engine`] gave. The script's clock starts now.
    ///
    /// # Panics
    /// If the instance has no such engine.
    #[track_caller]
    pub fn set_engine_script(&self, engine: &str, mut script: Script<EngineBehaviour>) {
        script.arm();
        self.lock().engine_mut(engine).script = Some(script);
    }

    /// Removes every script (the instance's and each engine's); modes and behaviours set directly stay.
    pub fn clear_scripts(&self) {
        let mut instance = self.lock();
        instance.script = None;
        for engine in &mut instance.engines {
            engine.script = None;
        }
    }

    /// `Some(n)` sends `"number_of_results": n` like SearXNG before May 2026 (the default, with 0); `None` leaves
    /// the key out like newer SearXNG.
    pub fn set_number_of_results(&self, number: Option<u64>) {
        self.lock().number_of_results = number;
    }

    /// How many `/search` requests arrived, whatever was answered.
    pub fn hits(&self) -> usize {
        self.lock().hits
    }

    /// Waits until at least `count` `/search` requests have arrived — for a test that must act while a request
    /// is in flight, e.g. with [`SearxngMode::Hang`].
    pub async fn wait_for_hits(&self, count: usize) {
        let mut hits = self.lock().hits_watch.subscribe();
        // The sender lives in `self`, so the wait ends only by reaching the count.
        let _ = hits.wait_for(|hits| *hits >= count).await;
    }

    /// How many `/search` requests are in flight now: arrived, and neither answered yet nor dropped because the
    /// client closed the connection — for a test that must know when the gateway gave up on a call.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// How many `/config` requests arrived.
    pub fn config_hits(&self) -> usize {
        self.lock().config_hits
    }

    /// Every `/search` request's parameters in arrival order (the last [`RECORDED_REQUESTS_LIMIT`]), as SearXNG
    /// sees them: the form body's pairs, then the query string's pairs for keys the body does not have.
    pub fn requests(&self) -> Vec<Vec<(String, String)>> {
        self.lock().requests.iter().cloned().collect()
    }

    /// The parameters of the most recent `/search` request.
    pub fn last_request(&self) -> Option<Vec<(String, String)>> {
        self.lock().requests.back().cloned()
    }

    /// How many searches queried `engine` (selected, and not skipped for paging or time range).
    pub fn engine_hits(&self, engine: &str) -> usize {
        self.lock()
            .engines
            .iter()
            .find(|candidate| candidate.name == engine)
            .map_or(0, |found| found.hits)
    }

    fn lock(&self) -> MutexGuard<'_, Instance> {
        lock(&self.state)
    }
}

impl Drop for SimulatedSearxng {
    fn drop(&mut self) {
        self.stopping.send_replace(true);
        self.server.abort();
    }
}

/// A poisoned lock only means a test panicked mid-update; the counters are still worth reading.
fn lock(state: &Mutex<Instance>) -> MutexGuard<'_, Instance> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Resolves once the simulator is being dropped (or already has been).
async fn stopped(mut stopping: watch::Receiver<bool>) {
    let _ = stopping.wait_for(|stopping| *stopping).await;
}

/// What the handlers share: the scripted instance and the stop signal.
#[derive(Clone)]
struct App {
    state: Arc<Mutex<Instance>>,
    in_flight: Arc<AtomicUsize>,
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
    headers: HeaderMap,
    RawQuery(query_string): RawQuery,
    body: Bytes,
) -> Response {
    let _in_flight = InFlight::enter(&app.in_flight);
    let params = Params::from_request(query_string.as_deref(), &body);
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

/// The UI language SearXNG translates `unresponsive_engines` messages into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UiLanguage {
    English,
    German,
}

impl UiLanguage {
    /// The `locale` preference wins; without it SearXNG follows the browser's `Accept-Language`.
    fn of(params: &Params, headers: &HeaderMap) -> Self {
        let locale = params.get("locale").map(str::to_owned).or_else(|| {
            headers
                .get(header::ACCEPT_LANGUAGE)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned)
        });
        match locale {
            Some(locale) if locale.trim_start().starts_with("de") => UiLanguage::German,
            _ => UiLanguage::English,
        }
    }
}

/// A search request's parameters as SearXNG sees them: it merges the query string into the form, keeping the
/// form's value where both have a key.
struct Params {
    pairs: Vec<(String, String)>,
}

impl Params {
    fn from_request(query_string: Option<&str>, body: &[u8]) -> Self {
        let mut pairs: Vec<(String, String)> =
            url::form_urlencoded::parse(body).into_owned().collect();
        let body_keys: Vec<String> = pairs.iter().map(|(key, _)| key.clone()).collect();
        if let Some(query_string) = query_string {
            pairs.extend(
                url::form_urlencoded::parse(query_string.as_bytes())
                    .into_owned()
                    .filter(|(key, _)| !body_keys.contains(key)),
            );
        }
        Self { pairs }
    }

    /// The first value, as Flask's `request.form.get` gives.
    fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(candidate, _)| candidate == key)
            .map(|(_, value)| value.as_str())
    }

    /// Each key once with its first value, in order: SearXNG iterates a dict.
    fn distinct(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pairs
            .iter()
            .enumerate()
            .filter_map(|(index, (key, value))| {
                let first = !self.pairs[..index]
                    .iter()
                    .any(|(earlier, _)| earlier == key);
                first.then_some((key.as_str(), value.as_str()))
            })
    }
}

/// One simulated engine and what tests scripted for it.
struct Engine {
    name: String,
    shortcut: String,
    categories: Vec<String>,
    enabled: bool,
    paging: bool,
    time_range_support: bool,
    behaviour: EngineBehaviour,
    /// Scripted behaviour over time, consulted before `behaviour`.
    script: Option<Script<EngineBehaviour>>,
    /// Searches that queried it.
    hits: usize,
}

/// The scripted instance; the handlers lock it briefly and never across an `.await`.
struct Instance {
    engines: Vec<Engine>,
    mode: SearxngMode,
    /// Scripted behaviour over time, consulted before `mode`.
    script: Option<Script<SearxngMode>>,
    number_of_results: Option<u64>,
    hits: usize,
    hits_watch: watch::Sender<usize>,
    config_hits: usize,
    requests: VecDeque<Vec<(String, String)>>,
}

/// How the handler answers once the lock is released.
enum Plan {
    Now(Reply),
    After(Duration, Reply),
    Never,
}

impl Plan {
    fn after(delay: Duration, reply: Reply) -> Self {
        if delay.is_zero() {
            Plan::Now(reply)
        } else {
            Plan::After(delay, reply)
        }
    }

    fn delayed_by(self, extra: Duration) -> Self {
        match self {
            Plan::Now(reply) => Plan::after(extra, reply),
            Plan::After(delay, reply) => Plan::After(delay + extra, reply),
            Plan::Never => Plan::Never,
        }
    }
}

impl Instance {
    fn new(names: &[&str]) -> Self {
        let mut engines: Vec<Engine> = Vec::new();
        for name in names {
            if engines.iter().any(|engine| engine.name == *name) {
                continue;
            }
            let shortcut = unique_shortcut(name, &engines);
            engines.push(Engine {
                name: (*name).to_owned(),
                shortcut,
                categories: vec![GENERAL.to_owned()],
                enabled: true,
                paging: true,
                time_range_support: true,
                behaviour: EngineBehaviour::Ok {
                    results: DEFAULT_RESULTS_PER_ENGINE,
                },
                script: None,
                hits: 0,
            });
        }
        Self {
            engines,
            mode: SearxngMode::Normal,
            script: None,
            number_of_results: Some(0),
            hits: 0,
            hits_watch: watch::channel(0).0,
            config_hits: 0,
            requests: VecDeque::new(),
        }
    }

    #[track_caller]
    fn engine_mut(&mut self, name: &str) -> &mut Engine {
        match self.engines.iter_mut().find(|engine| engine.name == name) {
            Some(engine) => engine,
            None => panic!("the simulated SearXNG has no engine named {name:?}"),
        }
    }

    fn engine_index(&self, name: &str) -> Option<usize> {
        self.engines.iter().position(|engine| engine.name == name)
    }

    /// Every category, `general` first as in SearXNG (which creates it before loading engines).
    fn categories(&self) -> Vec<String> {
        let mut categories = vec![GENERAL.to_owned()];
        for engine in &self.engines {
            for category in &engine.categories {
                if !categories.contains(category) {
                    categories.push(category.clone());
                }
            }
        }
        categories
    }

    fn config(&self) -> Value {
        let engines: Vec<Value> = self
            .engines
            .iter()
            .map(|engine| {
                json!({
                    "name": engine.name,
                    "categories": engine.categories,
                    "shortcut": engine.shortcut,
                    "enabled": engine.enabled,
                    "paging": engine.paging,
                    "language_support": true,
                    "safesearch": true,
                    "time_range_support": engine.time_range_support,
                    "timeout": ENGINE_TIMEOUT.as_secs_f64(),
                })
            })
            .collect();
        json!({
            "categories": self.categories(),
            "engines": engines,
            "plugins": [],
            "instance_name": "SearXNG",
            "locales": {"en": "English", "de": "Deutsch"},
            "default_locale": "",
            "autocomplete": "",
            "safe_search": 0,
            "default_theme": "simple",
            "version": SIMULATED_VERSION,
        })
    }

    fn plan_search(&mut self, params: Params, language: UiLanguage) -> Plan {
        self.hits += 1;
        self.hits_watch.send_replace(self.hits);
        if self.requests.len() == RECORDED_REQUESTS_LIMIT {
            self.requests.pop_front();
        }
        self.requests.push_back(params.pairs.clone());

        let scripted = self.script.as_mut().map(Script::decide).unwrap_or_default();
        let plan = match scripted.fault {
            Some(mode) => self.plan_mode(mode, &params, language),
            None => match self.mode.clone() {
                SearxngMode::FailTimes { count, status } => {
                    self.mode = match count {
                        0 | 1 => SearxngMode::Normal,
                        _ => SearxngMode::FailTimes {
                            count: count - 1,
                            status,
                        },
                    };
                    if count == 0 {
                        self.plan_mode(SearxngMode::Normal, &params, language)
                    } else {
                        Plan::Now(Reply::failure(status))
                    }
                }
                mode => self.plan_mode(mode, &params, language),
            },
        };
        plan.delayed_by(scripted.delay)
    }

    /// How one search is answered in `mode` (a `FailTimes` here is one failure with its status).
    fn plan_mode(&mut self, mode: SearxngMode, params: &Params, language: UiLanguage) -> Plan {
        match mode {
            SearxngMode::Normal => {
                let (reply, delay) = self.answer(params, language, true);
                Plan::after(delay, reply)
            }
            SearxngMode::Status(status) | SearxngMode::FailTimes { status, .. } => {
                Plan::Now(Reply::failure(status))
            }
            SearxngMode::Hang => Plan::Never,
            SearxngMode::Delay(extra) => {
                let (reply, delay) = self.answer(params, language, true);
                Plan::After(delay + extra, reply)
            }
            SearxngMode::JsonDisabled => {
                let (reply, delay) = self.answer(params, language, false);
                Plan::after(delay, reply)
            }
            SearxngMode::Garbage => Plan::Now(Reply::Garbage),
            SearxngMode::Huge => {
                let (reply, delay) = self.answer(params, language, true);
                Plan::after(delay, reply.into_huge())
            }
            SearxngMode::Truncated => {
                let (reply, delay) = self.answer(params, language, true);
                Plan::after(delay, reply.into_truncated())
            }
        }
    }

    /// SearXNG's `/search`: output format, query, parameter checks, external bang, then the search itself. The
    /// duration is how long its slowest scripted engine took.
    fn answer(
        &mut self,
        params: &Params,
        language: UiLanguage,
        json_enabled: bool,
    ) -> (Reply, Duration) {
        let mut slowest_engine = Duration::ZERO;
        let reply = self.reply(params, language, json_enabled, &mut slowest_engine);
        (reply, slowest_engine)
    }

    fn reply(
        &mut self,
        params: &Params,
        language: UiLanguage,
        json_enabled: bool,
        slowest_engine: &mut Duration,
    ) -> Reply {
        // SearXNG turns an unknown format into html rather than refusing it.
        let requested = params.get("format").unwrap_or("html");
        let format = if ["html", "csv", "json", "rss"].contains(&requested) {
            requested
        } else {
            "html"
        };
        let enabled = format == "html" || (format == "json" && json_enabled);
        if !enabled {
            return Reply::Html {
                status: StatusCode::FORBIDDEN,
                body: FORBIDDEN_PAGE.to_owned(),
            };
        }
        let as_json = format == "json";

        let raw_query = params.get("q").unwrap_or_default();
        if raw_query.is_empty() {
            return if as_json {
                Reply::error(StatusCode::BAD_REQUEST, "No query")
            } else {
                Reply::Html {
                    status: StatusCode::OK,
                    body: html_page("SearXNG", ""),
                }
            };
        }

        let query = QueryText::parse(raw_query, self);
        let request = match SearchRequest::validate(params, &query) {
            Ok(request) => request,
            Err(message) if as_json => return Reply::error(StatusCode::BAD_REQUEST, &message),
            Err(message) => {
                return Reply::Html {
                    status: StatusCode::BAD_REQUEST,
                    body: html_page("SearXNG", &escape_html(&message)),
                }
            }
        };
        if let Some(bang) = &query.external_bang {
            return Reply::Redirect {
                location: external_bang_url(bang, &query.text),
            };
        }

        let selected = self.select_engines(params, &query);
        let outcome = self.run(&selected, &request, language);
        *slowest_engine = outcome.slowest_engine;
        if as_json {
            let server_timing = Some(server_timing(&outcome.queried));
            Reply::Json {
                status: StatusCode::OK,
                body: outcome.into_json(&query.text, self.number_of_results),
                server_timing,
            }
        } else {
            Reply::Html {
                status: StatusCode::OK,
                body: outcome.into_html(&query.text),
            }
        }
    }

    /// SearXNG's engine selection: `!name` in the query wins; otherwise `engines=` (known names only) united
    /// with `categories=`/`category_*=`; with no known engine and no category, the default category.
    fn select_engines(&self, params: &Params, query: &QueryText) -> Vec<(usize, String)> {
        let mut selected: Vec<(usize, String)> = Vec::new();
        if !query.engine_refs.is_empty() {
            selected.extend(query.engine_refs.iter().cloned());
        } else {
            let known_categories = self.categories();
            let mut categories: Vec<String> = Vec::new();
            let mut named = false;
            for (key, value) in params.distinct() {
                if key == "engines" {
                    for name in value.split(',').map(str::trim) {
                        if let Some(index) = self.engine_index(name) {
                            selected.push((index, self.engines[index].main_category()));
                            named = true;
                        }
                    }
                } else if key == "categories" {
                    categories.extend(
                        value
                            .split(',')
                            .map(str::trim)
                            .filter(|category| {
                                known_categories.iter().any(|known| known == category)
                            })
                            .map(str::to_owned),
                    );
                } else if let Some(category) = key.strip_prefix("category_") {
                    if !known_categories.iter().any(|known| known == category) {
                        continue;
                    }
                    if value != "off" {
                        categories.push(category.to_owned());
                    } else {
                        categories.retain(|chosen| chosen != category);
                    }
                }
            }
            if !named && categories.is_empty() {
                categories.push(GENERAL.to_owned());
            }
            let disabled: Vec<&str> = params
                .get("disabled_engines")
                .map(|list| list.split(',').map(str::trim).collect())
                .unwrap_or_default();
            for category in &categories {
                for (index, engine) in self.engines.iter().enumerate() {
                    let switched_off =
                        disabled.contains(&format!("{}__{category}", engine.name).as_str());
                    if engine.categories.contains(category) && engine.enabled && !switched_off {
                        selected.push((index, category.clone()));
                    }
                }
            }
        }
        let mut seen = Vec::new();
        selected.retain(|(index, _)| {
            let first = !seen.contains(index);
            seen.push(*index);
            first
        });
        selected
    }

    /// Queries the selected engines and merges their answers as SearXNG's result container does.
    fn run(
        &mut self,
        selected: &[(usize, String)],
        request: &SearchRequest,
        language: UiLanguage,
    ) -> SearchOutcome {
        let mut outcome = SearchOutcome::default();
        for (index, category) in selected {
            let engine = &mut self.engines[*index];
            let skipped = (request.pageno > 1 && !engine.paging)
                || (request.time_range.is_some() && !engine.time_range_support);
            if skipped {
                continue;
            }
            engine.hits += 1;
            outcome.queried.push(engine.name.clone());
            let scripted = engine
                .script
                .as_mut()
                .map(Script::decide)
                .unwrap_or_default();
            let (behaviour, took) = if scripted.delay >= ENGINE_TIMEOUT {
                (
                    EngineBehaviour::Fails(EngineFailure::Timeout),
                    ENGINE_TIMEOUT,
                )
            } else {
                let behaviour = scripted.fault.unwrap_or_else(|| engine.behaviour.clone());
                (behaviour, scripted.delay)
            };
            outcome.slowest_engine = outcome.slowest_engine.max(took);
            match &behaviour {
                EngineBehaviour::Ok { results } => {
                    let found = engine_results(*index, engine, category, *results, request);
                    if request.pageno == 1 && !found.is_empty() && outcome.infoboxes.is_empty() {
                        outcome
                            .infoboxes
                            .push(infobox(&request.query, &engine.name));
                    }
                    if !found.is_empty() {
                        for suggestion in [
                            format!("{} tutorial", request.query),
                            format!("{} examples", request.query),
                        ] {
                            if !outcome.suggestions.contains(&suggestion) {
                                outcome.suggestions.push(suggestion);
                            }
                        }
                    }
                    for result in found {
                        outcome.merge(result);
                    }
                }
                EngineBehaviour::Empty => {}
                EngineBehaviour::Fails(failure) => outcome
                    .unresponsive
                    .push((engine.name.clone(), failure.localized(language))),
            }
        }
        outcome.unresponsive.sort_by(|a, b| a.0.cmp(&b.0));
        outcome.unresponsive.dedup_by(|a, b| a.0 == b.0);
        for result in &mut outcome.results {
            result.score = score(&result.positions);
        }
        // A stable sort keeps arrival order among equal scores, as SearXNG's sorted() does.
        outcome.results.sort_by(|a, b| b.score.total_cmp(&a.score));
        outcome
    }
}

impl Engine {
    fn main_category(&self) -> String {
        self.categories
            .first()
            .cloned()
            .unwrap_or_else(|| GENERAL.to_owned())
    }
}

const GENERAL: &str = "general";

/// The first letters of the name that no earlier engine uses as its shortcut (SearXNG requires them unique).
fn unique_shortcut(name: &str, engines: &[Engine]) -> String {
    let taken = |candidate: &str| engines.iter().any(|engine| engine.shortcut == candidate);
    let chars: Vec<char> = name.chars().collect();
    for length in 2..=chars.len() {
        let candidate: String = chars[..length].iter().collect();
        if !taken(&candidate) {
            return candidate;
        }
    }
    (1..)
        .map(|suffix| format!("{name}{suffix}"))
        .find(|candidate| !taken(candidate))
        .unwrap_or_else(|| name.to_owned())
}

/// The query text after SearXNG's prefix syntax (`!!bang`, `!engine`, `:lang`, `<timeout`) is taken off.
struct QueryText {
    text: String,
    external_bang: Option<String>,
    engine_refs: Vec<(usize, String)>,
    languages: Vec<String>,
}

impl QueryText {
    /// Like SearXNG's `RawTextQuery`: only leading tokens are syntax; the first plain word starts the query.
    fn parse(raw: &str, instance: &Instance) -> Self {
        let mut parsed = QueryText {
            text: String::new(),
            external_bang: None,
            engine_refs: Vec::new(),
            languages: Vec::new(),
        };
        let tokens: Vec<&str> = raw.split_whitespace().collect();
        let mut first_plain = tokens.len();
        for (position, token) in tokens.iter().enumerate() {
            if !parsed.take_special(token, instance) {
                first_plain = position;
                break;
            }
        }
        parsed.text = tokens[first_plain..].join(" ");
        parsed
    }

    fn take_special(&mut self, token: &str, instance: &Instance) -> bool {
        if let Some(bang) = token.strip_prefix("!!").filter(|bang| !bang.is_empty()) {
            self.external_bang = Some(bang.to_owned());
            return true;
        }
        if let Some(name) = token.strip_prefix('!').filter(|name| !name.is_empty()) {
            let name = name.replace(['-', '_'], " ");
            let by_name = instance
                .engines
                .iter()
                .position(|engine| engine.shortcut == name || engine.name == name);
            if let Some(index) = by_name {
                self.engine_refs
                    .push((index, instance.engines[index].main_category()));
                return true;
            }
            let in_category: Vec<(usize, String)> = instance
                .engines
                .iter()
                .enumerate()
                .filter(|(_, engine)| engine.categories.contains(&name))
                .map(|(index, _)| (index, name.clone()))
                .collect();
            let found = !in_category.is_empty();
            self.engine_refs.extend(in_category);
            return found;
        }
        if let Some(code) = token.strip_prefix(':') {
            if is_language_code(code) {
                self.languages.push(code.to_owned());
                return true;
            }
            return false;
        }
        if let Some(timeout) = token.strip_prefix('<') {
            return !timeout.is_empty() && timeout.bytes().all(|byte| byte.is_ascii_digit());
        }
        false
    }
}

/// SearXNG's `VALID_LANGUAGE_CODE` (`^[a-z]{2,3}(-[a-zA-Z]{2})?$`), which also admits `all`.
fn is_language_code(code: &str) -> bool {
    let (language, region) = match code.split_once('-') {
        Some((language, region)) => (language, Some(region)),
        None => (code, None),
    };
    let language_ok =
        (2..=3).contains(&language.len()) && language.bytes().all(|byte| byte.is_ascii_lowercase());
    let region_ok = region
        .is_none_or(|region| region.len() == 2 && region.bytes().all(|b| b.is_ascii_alphabetic()));
    language_ok && region_ok
}

/// The validated parameters the search itself uses.
struct SearchRequest {
    query: String,
    pageno: u64,
    time_range: Option<String>,
}

impl SearchRequest {
    /// SearXNG's checks, in its order; the error is its `SearxParameterException` message.
    fn validate(params: &Params, query: &QueryText) -> Result<Self, String> {
        let pageno_text = params.get("pageno").unwrap_or("1");
        let all_digits =
            !pageno_text.is_empty() && pageno_text.bytes().all(|byte| byte.is_ascii_digit());
        let pageno = if all_digits {
            // Python parses any length; a number beyond u64 is simply a very late page.
            pageno_text.parse::<u64>().unwrap_or(u64::MAX)
        } else {
            0
        };
        if pageno < 1 {
            return Err(parameter_error("pageno", pageno_text));
        }

        let language = match query.languages.last() {
            Some(language) => Some(language.as_str()),
            None => params.get("language"),
        };
        if let Some(language) = language {
            if language != "auto" && !is_language_code(language) {
                return Err(parameter_error("language", language));
            }
        }

        if let Some(safesearch) = params.get("safesearch") {
            if !matches!(safesearch, "0" | "1" | "2") {
                return Err(parameter_error("safesearch", safesearch));
            }
        }

        let time_range = match params.get("time_range") {
            None | Some("" | "None") => None,
            Some(range @ ("day" | "week" | "month" | "year")) => Some(range.to_owned()),
            Some(other) => return Err(parameter_error("time_range", other)),
        };

        if let Some(timeout) = params.get("timeout_limit") {
            if !matches!(timeout, "" | "None") && timeout.trim().parse::<f64>().is_err() {
                return Err(parameter_error("timeout_limit", timeout));
            }
        }

        Ok(Self {
            query: query.text.clone(),
            pageno,
            time_range,
        })
    }
}

fn parameter_error(name: &str, value: &str) -> String {
    if value.is_empty() {
        format!("Empty {name} parameter")
    } else {
        format!("Invalid value \"{value}\" for parameter {name}")
    }
}

/// Where SearXNG's bang database would send the user; any name redirects so tests need not know the database.
fn external_bang_url(bang: &str, query: &str) -> String {
    let encoded: String = url::form_urlencoded::byte_serialize(query.as_bytes()).collect();
    match bang {
        "g" => format!("https://www.google.com/search?q={encoded}"),
        "ddg" => format!("https://duckduckgo.com/?q={encoded}"),
        "w" | "wen" => format!("https://en.wikipedia.org/wiki/Special:Search?search={encoded}"),
        "gh" => format!("https://github.com/search?q={encoded}"),
        other => {
            let bang: String =
                url::form_urlencoded::byte_serialize(format!("!{other} {query}").as_bytes())
                    .collect();
            format!("https://duckduckgo.com/?q={bang}")
        }
    }
}

/// One engine's result before merging.
struct EngineResult {
    url: String,
    host: String,
    path: String,
    title: String,
    content: String,
    published_date: Option<String>,
    thumbnail: String,
    engine: String,
    category: String,
    position: usize,
    extra: (&'static str, Value),
}

/// A result after merging: one URL, every engine that found it.
struct MergedResult {
    first: EngineResult,
    content: String,
    engines: Vec<String>,
    positions: Vec<usize>,
    extras: Vec<(&'static str, Value)>,
    score: f64,
}

/// Deterministic results of one engine for one page.
///
/// The result at overall rank `r` (counting from page 1) is shared between engines when `r + index % 3` is a
/// multiple of 3: any two engines with three or more results share at least one URL (at different positions when
/// their indexes differ by other than a multiple of 3), and every other URL belongs to one engine.
fn engine_results(
    index: usize,
    engine: &Engine,
    category: &str,
    count: usize,
    request: &SearchRequest,
) -> Vec<EngineResult> {
    let query_slug = slug(&request.query);
    let engine_slug = slug(&engine.name);
    let offset = (index % 3) as u64;
    (1..=count)
        .map(|position| {
            let rank = request
                .pageno
                .saturating_sub(1)
                .saturating_mul(count as u64)
                .saturating_add(position as u64);
            let shifted = rank.saturating_add(offset);
            let (host, path, title) = match shifted % 3 {
                0 => {
                    let key = shifted / 3;
                    (
                        "www.shared.example.com".to_owned(),
                        format!("/{query_slug}/{key}"),
                        format!("{} — shared result {key}", request.query),
                    )
                }
                _ => (
                    format!("{engine_slug}.example.org"),
                    format!("/{query_slug}/{rank}"),
                    format!("{} — {} result {rank}", request.query, engine.name),
                ),
            };
            // Each engine words its snippet differently, so merging has a longer content to prefer.
            let content = format!(
                "{} describes {}{}",
                engine.name,
                request.query,
                " in detail".repeat(index % 4 + 1)
            );
            let extra = match index % 3 {
                0 => ("author", json!(format!("{} author {rank}", engine.name))),
                1 => (
                    "length",
                    json!(format!("{}:{:02}", rank % 60, rank.wrapping_mul(7) % 60)),
                ),
                _ => (
                    "metadata",
                    json!(format!("{} metadata {rank}", engine.name)),
                ),
            };
            EngineResult {
                url: format!("https://{host}{path}"),
                host,
                path,
                title,
                content,
                published_date: match rank % 2 {
                    0 => Some(format!("2026-07-{:02}T00:00:00", rank % 28 + 1)),
                    _ => None,
                },
                thumbnail: match rank % 4 {
                    0 => format!("https://img.example.net/{engine_slug}/{rank}.jpg"),
                    _ => String::new(),
                },
                engine: engine.name.clone(),
                category: category.to_owned(),
                position,
                extra,
            }
        })
        .collect()
}

/// Lower-case letters and digits, other runs turned into one `-`: a URL path segment or host label.
fn slug(text: &str) -> String {
    let mut slug = String::new();
    for character in text.chars().flat_map(char::to_lowercase) {
        if character.is_ascii_alphanumeric() {
            slug.push(character);
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-');
    if slug.is_empty() {
        "empty".to_owned()
    } else {
        slug.chars().take(60).collect()
    }
}

/// SearXNG's score for an engine weight of 1: every position counts `1/position`, times how many engines found it.
fn score(positions: &[usize]) -> f64 {
    let weight = positions.len() as f64;
    positions
        .iter()
        .map(|position| weight / *position as f64)
        .sum()
}

fn infobox(query: &str, engine: &str) -> Value {
    let slug = slug(query);
    json!({
        "infobox": query,
        "id": format!("https://en.wikipedia.org/wiki/{slug}"),
        "content": format!("{query} is the subject of this simulated infobox."),
        "img_src": null,
        "urls": [{"title": "Official site", "url": format!("https://www.shared.example.com/{slug}")}],
        "attributes": [],
        "engine": engine,
        "engines": [engine],
    })
}

/// What one search produced, before it is rendered.
#[derive(Default)]
struct SearchOutcome {
    results: Vec<MergedResult>,
    suggestions: Vec<String>,
    infoboxes: Vec<Value>,
    unresponsive: Vec<(String, String)>,
    queried: Vec<String>,
    /// How long the slowest queried engine took (scripted latency): the search takes that long.
    slowest_engine: Duration,
}

impl SearchOutcome {
    /// SearXNG keys results by URL: a second engine adds itself and its position, and its longer content wins.
    fn merge(&mut self, result: EngineResult) {
        if let Some(existing) = self
            .results
            .iter_mut()
            .find(|merged| merged.first.url == result.url)
        {
            if !existing.engines.contains(&result.engine) {
                existing.engines.push(result.engine.clone());
            }
            existing.positions.push(result.position);
            if result.content.len() > existing.content.len() {
                existing.content = result.content.clone();
            }
            if !existing
                .extras
                .iter()
                .any(|(key, _)| *key == result.extra.0)
            {
                existing.extras.push(result.extra);
            }
            return;
        }
        self.results.push(MergedResult {
            content: result.content.clone(),
            engines: vec![result.engine.clone()],
            positions: vec![result.position],
            extras: vec![result.extra.clone()],
            score: 0.0,
            first: result,
        });
    }

    fn into_json(self, query: &str, number_of_results: Option<u64>) -> Value {
        let results: Vec<Value> = self.results.iter().map(MergedResult::to_json).collect();
        let mut body = Map::new();
        body.insert("query".into(), json!(query));
        if let Some(number) = number_of_results {
            body.insert("number_of_results".into(), json!(number));
        }
        body.insert("results".into(), Value::Array(results));
        body.insert("answers".into(), json!([]));
        body.insert("corrections".into(), json!([]));
        body.insert("infoboxes".into(), Value::Array(self.infoboxes));
        body.insert("suggestions".into(), json!(self.suggestions));
        let unresponsive: Vec<Value> = self
            .unresponsive
            .iter()
            .map(|(engine, message)| json!([engine, message]))
            .collect();
        body.insert("unresponsive_engines".into(), Value::Array(unresponsive));
        // Not a SearXNG key: it lets tests prove the gateway keeps keys it does not know.
        body.insert(
            "sim_extra".into(),
            json!({"simulator": "searxng", "engines_queried": self.queried}),
        );
        Value::Object(body)
    }

    fn into_html(self, query: &str) -> String {
        let items: String = self
            .results
            .iter()
            .map(|result| {
                format!(
                    "<article class=\"result\"><a href=\"{}\">{}</a><p>{}</p></article>\n",
                    escape_html(&result.first.url),
                    escape_html(&result.first.title),
                    escape_html(&result.content)
                )
            })
            .collect();
        html_page(&format!("{} - SearXNG", escape_html(query)), &items)
    }
}

impl MergedResult {
    fn to_json(&self) -> Value {
        let first = &self.first;
        let mut result = Map::new();
        result.insert("url".into(), json!(first.url));
        result.insert("title".into(), json!(first.title));
        result.insert("content".into(), json!(self.content));
        result.insert("publishedDate".into(), json!(first.published_date));
        result.insert("thumbnail".into(), json!(first.thumbnail));
        result.insert("engine".into(), json!(first.engine));
        result.insert("template".into(), json!("default.html"));
        // Python's urlparse tuple: scheme, netloc, path, params, query, fragment.
        result.insert(
            "parsed_url".into(),
            json!(["https", first.host, first.path, "", "", ""]),
        );
        result.insert("img_src".into(), json!(""));
        result.insert("priority".into(), json!(""));
        result.insert("engines".into(), json!(self.engines));
        result.insert("positions".into(), json!(self.positions));
        result.insert("score".into(), json!(self.score));
        result.insert("category".into(), json!(first.category));
        for (key, value) in &self.extras {
            result.insert((*key).to_owned(), value.clone());
        }
        Value::Object(result)
    }
}

/// `Server-Timing` as SearXNG sends it: total time, then per engine (deterministic, made-up milliseconds).
fn server_timing(queried: &[String]) -> String {
    let mut parts = Vec::with_capacity(queried.len() * 2 + 1);
    let mut total: f64 = 1.0;
    for (index, engine) in queried.iter().enumerate() {
        let duration = 1.5 + index as f64 * 0.5;
        total = total.max(duration + 1.0);
        parts.push(format!("total_0_{engine};dur={duration:.3}"));
        parts.push(format!("load_0_{engine};dur={:.3}", duration - 0.5));
    }
    parts.insert(0, format!("total;dur={total:.3}"));
    parts.join(", ")
}

/// A rendered `/search` answer.
enum Reply {
    Json {
        status: StatusCode,
        body: Value,
        server_timing: Option<String>,
    },
    Html {
        status: StatusCode,
        body: String,
    },
    PlainText {
        status: StatusCode,
        body: &'static str,
    },
    Redirect {
        location: String,
    },
    Garbage,
    Huge(Value),
    Truncated(Value),
}

impl Reply {
    fn error(status: StatusCode, message: &str) -> Self {
        Reply::Json {
            status,
            body: json!({"error": message}),
            server_timing: None,
        }
    }

    /// What answers a whole-instance failure with this status, dressed as whoever would send it.
    fn failure(status: u16) -> Self {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        match status.as_u16() {
            500 => Reply::error(status, "search error"),
            429 => Reply::PlainText {
                status,
                body: "Too Many Requests",
            },
            502..=504 => {
                let reason = status.canonical_reason().unwrap_or("Error");
                Reply::Html {
                    status,
                    body: format!(
                        "<html>\r\n<head><title>{code} {reason}</title></head>\r\n<body>\r\n<center><h1>{code} \
                         {reason}</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n",
                        code = status.as_u16()
                    ),
                }
            }
            _ => Reply::error(
                status,
                &status.canonical_reason().unwrap_or("error").to_lowercase(),
            ),
        }
    }

    fn into_huge(self) -> Self {
        match self {
            Reply::Json {
                status: StatusCode::OK,
                body,
                ..
            } => Reply::Huge(body),
            other => other,
        }
    }

    fn into_truncated(self) -> Self {
        match self {
            Reply::Json {
                status: StatusCode::OK,
                body,
                ..
            } => Reply::Truncated(body),
            other => other,
        }
    }
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        match self {
            Reply::Json {
                status,
                body,
                server_timing,
            } => {
                let mut response = (status, json_headers(), body.to_string()).into_response();
                if let Some(timing) =
                    server_timing.and_then(|timing| HeaderValue::from_str(&timing).ok())
                {
                    response.headers_mut().insert("server-timing", timing);
                }
                response
            }
            Reply::Html { status, body } => html(status, body),
            Reply::PlainText { status, body } => (status, body).into_response(),
            Reply::Redirect { location } => {
                let escaped = escape_html(&location);
                let body = format!(
                    "<!doctype html>\n<html lang=en>\n<title>Redirecting...</title>\n<h1>Redirecting...</h1>\n<p>You \
                     should be redirected automatically to the target URL: <a href=\"{escaped}\">{escaped}</a>. If \
                     not, click the link.\n"
                );
                let mut response = html(StatusCode::FOUND, body);
                if let Ok(location) = HeaderValue::from_str(&location) {
                    response.headers_mut().insert(header::LOCATION, location);
                }
                response
            }
            Reply::Garbage => (
                StatusCode::OK,
                json_headers(),
                "<html><body>upstream sent something that is not JSON\u{0}\u{1}{{{",
            )
                .into_response(),
            Reply::Huge(mut body) => {
                if let Value::Object(object) = &mut body {
                    object.insert("sim_padding".into(), json!("x".repeat(HUGE_BODY_BYTES)));
                }
                let bytes = Bytes::from(body.to_string());
                let chunk = 64 * 1024;
                let chunks: Vec<Result<Bytes, io::Error>> = (0..bytes.len())
                    .step_by(chunk)
                    .map(|start| Ok(bytes.slice(start..(start + chunk).min(bytes.len()))))
                    .collect();
                (
                    StatusCode::OK,
                    json_headers(),
                    Body::from_stream(futures::stream::iter(chunks)),
                )
                    .into_response()
            }
            Reply::Truncated(body) => {
                let full = Bytes::from(body.to_string());
                let declared = full.len();
                let sent = full.slice(..declared / 2);
                let body = futures::stream::iter([Ok(sent)]).chain(futures::stream::once(async {
                    // Let the connection flush what was sent before the failure closes it.
                    tokio::task::yield_now().await;
                    Err(io::Error::new(
                        io::ErrorKind::ConnectionAborted,
                        "simulated truncation",
                    ))
                }));
                let mut headers = json_headers();
                headers.insert(header::CONTENT_LENGTH, HeaderValue::from(declared));
                (StatusCode::OK, headers, Body::from_stream(body)).into_response()
            }
        }
    }
}

fn json_headers() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers
}

fn html(status: StatusCode, body: String) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        )],
        body,
    )
        .into_response()
}

fn html_page(title: &str, body: &str) -> String {
    format!("<!DOCTYPE html>\n<html lang=\"en\">\n<head><title>{title}</title></head>\n<body>\n{body}</body>\n</html>\n")
}

fn escape_html(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&#34;"),
            '\'' => escaped.push_str("&#39;"),
            other => escaped.push(other),
        }
    }
    escaped
}

/// Werkzeug's page for `abort(403)`, which SearXNG sends when the format is not in `search.formats`.
const FORBIDDEN_PAGE: &str = "<!doctype html>\n<html lang=en>\n<title>403 Forbidden</title>\n<h1>Forbidden</h1>\n<p>You \
                              don&#39;t have the permission to access the requested resource. It is either \
                              read-protected or not readable by the server.</p>\n";

/// Werkzeug's 404 page.
const NOT_FOUND_PAGE: &str = "<!doctype html>\n<html lang=en>\n<title>404 Not Found</title>\n<h1>Not Found</h1>\n<p>The \
                              requested URL was not found on the server. If you entered the URL manually please \
                              check your spelling and try again.</p>\n";

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::script::{Latency, Spell};
    use reqwest::redirect::Policy;
    use std::time::Instant;

    fn client() -> reqwest::Client {
        reqwest::Client::builder()
            .redirect(Policy::none())
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap()
    }

    async fn get(searxng: &SimulatedSearxng, params: &[(&str, &str)]) -> reqwest::Response {
        client()
            .get(format!("{}/search", searxng.base_url()))
            .query(params)
            .send()
            .await
            .unwrap()
    }

    async fn search_json(searxng: &SimulatedSearxng, params: &[(&str, &str)]) -> Value {
        let response = get(searxng, params).await;
        assert_eq!(response.status(), 200);
        response.json().await.unwrap()
    }

    fn engines_of(result: &Value) -> Vec<String> {
        result["engines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|engine| engine.as_str().unwrap().to_owned())
            .collect()
    }

    fn engines_in_results(body: &Value) -> Vec<String> {
        let mut engines: Vec<String> = body["results"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(engines_of)
            .collect();
        engines.sort();
        engines.dedup();
        engines
    }

    #[tokio::test]
    async fn answers_a_search_with_every_searxng_key_and_one_unknown_key() {
        let searxng = SimulatedSearxng::start(&["alpha", "beta"]).await.unwrap();

        let response = get(&searxng, &[("q", "Rust async"), ("format", "json")]).await;

        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
        let timing = response.headers()["server-timing"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(timing.contains("total_0_alpha;dur=") && timing.contains("total_0_beta;dur="));
        let body: Value = response.json().await.unwrap();
        let keys: Vec<&str> = body
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "query",
                "number_of_results",
                "results",
                "answers",
                "corrections",
                "infoboxes",
                "suggestions",
                "unresponsive_engines",
                "sim_extra"
            ]
        );
        assert_eq!(body["query"], "Rust async");
        let results = body["results"].as_array().unwrap();
        assert!(!results.is_empty());
        for result in results {
            for field in [
                "url",
                "title",
                "content",
                "engine",
                "engines",
                "positions",
                "score",
                "category",
                "template",
                "parsed_url",
                "publishedDate",
                "thumbnail",
            ] {
                assert!(result.get(field).is_some(), "{field} missing in {result}");
            }
            assert!(["author", "length", "metadata"]
                .iter()
                .any(|extra| result.get(extra).is_some()));
        }
        assert_eq!(body["unresponsive_engines"], json!([]));
    }

    #[tokio::test]
    async fn leaves_number_of_results_out_like_newer_searxng() {
        let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();
        searxng.set_number_of_results(None);

        let body = search_json(&searxng, &[("q", "rust"), ("format", "json")]).await;

        assert!(body.get("number_of_results").is_none());
        assert!(body.get("results").is_some());
    }

    #[tokio::test]
    async fn serves_healthz_and_a_config_describing_every_engine() {
        let searxng = SimulatedSearxng::start(&["alpha", "alphabet", "beta"])
            .await
            .unwrap();
        searxng.set_engine_categories("beta", &["news", "general"]);

        let health = client()
            .get(format!("{}/healthz", searxng.base_url()))
            .send()
            .await
            .unwrap();
        assert_eq!(health.status(), 200);
        assert_eq!(health.text().await.unwrap(), "OK");

        let config: Value = client()
            .get(format!("{}/config", searxng.base_url()))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(config["version"], SIMULATED_VERSION);
        assert_eq!(config["categories"], json!(["general", "news"]));
        let engines = config["engines"].as_array().unwrap();
        let names: Vec<&str> = engines
            .iter()
            .map(|engine| engine["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["alpha", "alphabet", "beta"]);
        let shortcuts: Vec<&str> = engines
            .iter()
            .map(|engine| engine["shortcut"].as_str().unwrap())
            .collect();
        assert_eq!(shortcuts, ["al", "alp", "be"]);
        assert_eq!(engines[2]["categories"], json!(["news", "general"]));
        assert_eq!(engines[0]["enabled"], true);
        assert_eq!(engines[0]["paging"], true);
        assert_eq!(engines[0]["timeout"], 3.0);
        assert_eq!(searxng.config_hits(), 1);
        assert_eq!(searxng.hits(), 0);
    }

    #[tokio::test]
    async fn queries_only_the_known_engines_named_in_engines() {
        let searxng = SimulatedSearxng::start(&["alpha", "beta", "gamma"])
            .await
            .unwrap();

        let body = search_json(
            &searxng,
            &[
                ("q", "rust"),
                ("format", "json"),
                ("engines", "alpha, nope"),
            ],
        )
        .await;

        assert_eq!(engines_in_results(&body), ["alpha"]);
        assert_eq!(searxng.engine_hits("alpha"), 1);
        assert_eq!(searxng.engine_hits("beta"), 0);
        assert_eq!(searxng.engine_hits("gamma"), 0);
    }

    #[tokio::test]
    async fn queries_every_default_engine_when_no_named_engine_is_known() {
        let searxng = SimulatedSearxng::start(&["alpha", "beta", "gamma"])
            .await
            .unwrap();

        let body = search_json(
            &searxng,
            &[
                ("q", "rust"),
                ("format", "json"),
                ("engines", "nope,missing"),
            ],
        )
        .await;

        assert_eq!(engines_in_results(&body), ["alpha", "beta", "gamma"]);
    }

    #[tokio::test]
    async fn unites_categories_with_named_engines_and_defaults_to_general() {
        let searxng = SimulatedSearxng::start(&["alpha", "beta", "gamma"])
            .await
            .unwrap();
        searxng.set_engine_categories("gamma", &["news"]);

        let united = search_json(
            &searxng,
            &[
                ("q", "rust"),
                ("format", "json"),
                ("engines", "alpha"),
                ("categories", "news"),
            ],
        )
        .await;
        let by_default = search_json(&searxng, &[("q", "rust"), ("format", "json")]).await;

        assert_eq!(engines_in_results(&united), ["alpha", "gamma"]);
        assert_eq!(engines_in_results(&by_default), ["alpha", "beta"]);
        assert_eq!(searxng.engine_hits("gamma"), 1);
    }

    #[tokio::test]
    async fn leaves_a_disabled_engine_out_unless_it_is_named() {
        let searxng = SimulatedSearxng::start(&["alpha", "beta"]).await.unwrap();
        searxng.set_engine_enabled("beta", false);

        let by_category = search_json(&searxng, &[("q", "rust"), ("format", "json")]).await;
        let by_name = search_json(
            &searxng,
            &[("q", "rust"), ("format", "json"), ("engines", "beta")],
        )
        .await;

        assert_eq!(engines_in_results(&by_category), ["alpha"]);
        assert_eq!(engines_in_results(&by_name), ["beta"]);
    }

    #[tokio::test]
    async fn selects_the_engine_named_by_a_bang_in_the_query() {
        let searxng = SimulatedSearxng::start(&["alpha", "beta"]).await.unwrap();

        let body = search_json(
            &searxng,
            &[("q", "!be rust"), ("format", "json"), ("engines", "alpha")],
        )
        .await;

        assert_eq!(body["query"], "rust");
        assert_eq!(engines_in_results(&body), ["beta"]);
    }

    #[tokio::test]
    async fn merges_a_url_found_by_two_engines_into_one_higher_scored_result() {
        let searxng = SimulatedSearxng::start(&["alpha", "beta"]).await.unwrap();

        let body = search_json(&searxng, &[("q", "rust"), ("format", "json")]).await;

        let results = body["results"].as_array().unwrap();
        let mut urls: Vec<&str> = results
            .iter()
            .map(|result| result["url"].as_str().unwrap())
            .collect();
        let total = urls.len();
        urls.sort_unstable();
        urls.dedup();
        assert_eq!(urls.len(), total, "every URL appears once");
        assert_eq!(total, 2 * DEFAULT_RESULTS_PER_ENGINE - 1);
        let shared = &results[0];
        assert_eq!(engines_of(shared), ["alpha", "beta"]);
        assert_eq!(shared["positions"], json!([3, 2]));
        let top_single_score = results[1..]
            .iter()
            .map(|result| result["score"].as_f64().unwrap())
            .fold(0.0, f64::max);
        assert!(shared["score"].as_f64().unwrap() > top_single_score);
    }

    #[tokio::test]
    async fn gives_the_same_urls_for_the_same_query_and_new_ones_on_the_next_page() {
        let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();
        let urls = |body: &Value| -> Vec<String> {
            body["results"]
                .as_array()
                .unwrap()
                .iter()
                .map(|result| result["url"].as_str().unwrap().to_owned())
                .collect()
        };

        let first = search_json(&searxng, &[("q", "rust"), ("format", "json")]).await;
        let again = search_json(&searxng, &[("q", "rust"), ("format", "json")]).await;
        let page_two = search_json(
            &searxng,
            &[("q", "rust"), ("format", "json"), ("pageno", "2")],
        )
        .await;

        assert_eq!(urls(&first), urls(&again));
        assert!(urls(&page_two)
            .iter()
            .all(|url| !urls(&first).contains(url)));
    }

    #[tokio::test]
    async fn reports_failing_engines_in_unresponsive_engines_sorted_by_name() {
        let searxng = SimulatedSearxng::start(&["gamma", "alpha", "beta"])
            .await
            .unwrap();
        searxng.set_engine(
            "gamma",
            EngineBehaviour::Fails(EngineFailure::TooManyRequests),
        );
        searxng.set_engine(
            "beta",
            EngineBehaviour::Fails(EngineFailure::Suspended(Box::new(EngineFailure::Captcha))),
        );

        let body = search_json(
            &searxng,
            &[("q", "rust"), ("format", "json"), ("locale", "en")],
        )
        .await;

        assert_eq!(
            body["unresponsive_engines"],
            json!([
                ["beta", "Suspended: CAPTCHA"],
                ["gamma", "too many requests"]
            ])
        );
        assert_eq!(engines_in_results(&body), ["alpha"]);
    }

    #[tokio::test]
    async fn translates_failure_messages_into_the_requested_locale() {
        let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();
        searxng.set_engine("alpha", EngineBehaviour::Fails(EngineFailure::Timeout));

        let german = search_json(
            &searxng,
            &[("q", "rust"), ("format", "json"), ("locale", "de")],
        )
        .await;

        assert_eq!(
            german["unresponsive_engines"],
            json!([["alpha", "Zeitüberschreitung"]])
        );
        assert_eq!(EngineFailure::Timeout.message(), "timeout");
    }

    #[tokio::test]
    async fn answers_200_without_results_when_every_engine_fails() {
        let searxng = SimulatedSearxng::start(&["alpha", "beta"]).await.unwrap();
        searxng.set_engine("alpha", EngineBehaviour::Fails(EngineFailure::AccessDenied));
        searxng.set_engine("beta", EngineBehaviour::Fails(EngineFailure::HttpError));

        let body = search_json(&searxng, &[("q", "rust"), ("format", "json")]).await;

        assert_eq!(body["results"], json!([]));
        assert_eq!(
            body["unresponsive_engines"],
            json!([["alpha", "access denied"], ["beta", "HTTP error"]])
        );
    }

    #[tokio::test]
    async fn leaves_an_empty_or_skipped_engine_out_of_both_results_and_failures() {
        let searxng = SimulatedSearxng::start(&["alpha", "beta", "gamma"])
            .await
            .unwrap();
        searxng.set_engine("alpha", EngineBehaviour::Empty);
        searxng.set_engine_paging("beta", false);

        let body = search_json(
            &searxng,
            &[("q", "rust"), ("format", "json"), ("pageno", "2")],
        )
        .await;

        assert_eq!(engines_in_results(&body), ["gamma"]);
        assert_eq!(body["unresponsive_engines"], json!([]));
        assert_eq!(searxng.engine_hits("alpha"), 1);
        assert_eq!(searxng.engine_hits("beta"), 0);
    }

    #[tokio::test]
    async fn redirects_an_external_bang_with_302_even_when_json_is_asked() {
        let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();

        let response = get(&searxng, &[("q", "!!g rust lang"), ("format", "json")]).await;

        assert_eq!(response.status(), 302);
        assert_eq!(
            response.headers()[header::LOCATION],
            "https://www.google.com/search?q=rust+lang"
        );
        assert!(response.text().await.unwrap().contains("Redirecting"));
        assert_eq!(searxng.engine_hits("alpha"), 0);
    }

    #[tokio::test]
    async fn answers_403_html_when_json_is_disabled() {
        let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();
        searxng.set_mode(SearxngMode::JsonDisabled);

        let response = get(&searxng, &[("q", "rust"), ("format", "json")]).await;

        assert_eq!(response.status(), 403);
        assert!(response.headers()[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/html"));
        assert!(response
            .text()
            .await
            .unwrap()
            .contains("<title>403 Forbidden</title>"));
        assert_eq!(get(&searxng, &[("q", "rust")]).await.status(), 200);
    }

    #[tokio::test]
    async fn rejects_a_missing_query_and_invalid_parameters_with_400() {
        let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();
        let cases: [(&[(&str, &str)], &str); 6] = [
            (&[("format", "json")], "No query"),
            (&[("q", ""), ("format", "json")], "No query"),
            (
                &[("q", "rust"), ("format", "json"), ("pageno", "0")],
                "Invalid value \"0\" for parameter pageno",
            ),
            (
                &[("q", "rust"), ("format", "json"), ("safesearch", "3")],
                "Invalid value \"3\" for parameter safesearch",
            ),
            (
                &[("q", "rust"), ("format", "json"), ("time_range", "decade")],
                "Invalid value \"decade\" for parameter time_range",
            ),
            (
                &[("q", "rust"), ("format", "json"), ("language", "English")],
                "Invalid value \"English\" for parameter language",
            ),
        ];

        for (params, message) in cases {
            let response = get(&searxng, params).await;
            assert_eq!(response.status(), 400, "{params:?}");
            let body: Value = response.json().await.unwrap();
            assert_eq!(body, json!({ "error": message }));
        }
        assert_eq!(searxng.engine_hits("alpha"), 0);
    }

    #[tokio::test]
    async fn records_the_parameters_of_get_and_post_searches_in_order() {
        let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();

        get(
            &searxng,
            &[("q", "Rust"), ("format", "json"), ("locale", "en")],
        )
        .await;
        client()
            .post(format!(
                "{}/search?format=json&q=ignored",
                searxng.base_url()
            ))
            .form(&[("q", "posted query"), ("pageno", "2")])
            .send()
            .await
            .unwrap();

        let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
            list.iter()
                .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
                .collect()
        };
        assert_eq!(
            searxng.requests(),
            [
                pairs(&[("q", "Rust"), ("format", "json"), ("locale", "en")]),
                pairs(&[("q", "posted query"), ("pageno", "2"), ("format", "json")]),
            ]
        );
        assert_eq!(
            searxng.last_request(),
            Some(pairs(&[
                ("q", "posted query"),
                ("pageno", "2"),
                ("format", "json")
            ]))
        );
        assert_eq!(searxng.hits(), 2);
    }

    #[tokio::test]
    async fn fails_the_next_searches_then_answers_normally() {
        let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();
        searxng.set_mode(SearxngMode::FailTimes {
            count: 2,
            status: 500,
        });
        let params = [("q", "rust"), ("format", "json")];

        let first = get(&searxng, &params).await;
        assert_eq!(first.status(), 500);
        assert_eq!(
            first.json::<Value>().await.unwrap(),
            json!({"error": "search error"})
        );
        assert_eq!(get(&searxng, &params).await.status(), 500);
        assert_eq!(get(&searxng, &params).await.status(), 200);
        assert_eq!(searxng.hits(), 3);
    }

    #[tokio::test]
    async fn answers_each_status_as_the_part_of_the_stack_that_would_send_it() {
        let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();
        let params = [("q", "rust"), ("format", "json")];

        searxng.set_mode(SearxngMode::Status(429));
        let limited = get(&searxng, &params).await;
        assert_eq!(limited.status(), 429);
        assert_eq!(limited.text().await.unwrap(), "Too Many Requests");

        searxng.set_mode(SearxngMode::Status(502));
        let bad_gateway = get(&searxng, &params).await;
        assert_eq!(bad_gateway.status(), 502);
        assert!(bad_gateway
            .text()
            .await
            .unwrap()
            .contains("502 Bad Gateway"));
    }

    #[tokio::test]
    async fn answers_garbage_with_status_200() {
        let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();
        searxng.set_mode(SearxngMode::Garbage);

        let response = get(&searxng, &[("q", "rust"), ("format", "json")]).await;

        assert_eq!(response.status(), 200);
        let body = response.bytes().await.unwrap();
        assert!(serde_json::from_slice::<Value>(&body).is_err());
    }

    #[tokio::test]
    async fn streams_valid_json_over_eight_mib_without_a_length_when_huge() {
        let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();
        searxng.set_mode(SearxngMode::Huge);

        let response = get(&searxng, &[("q", "rust"), ("format", "json")]).await;

        assert_eq!(response.status(), 200);
        assert_eq!(response.content_length(), None);
        let body = response.bytes().await.unwrap();
        assert!(body.len() > 8 * 1024 * 1024);
        let parsed: Value = serde_json::from_slice(&body).unwrap();
        assert!(!parsed["results"].as_array().unwrap().is_empty());
    }

    #[tokio::test]
    async fn sends_less_than_the_declared_length_when_truncated() {
        let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();
        searxng.set_mode(SearxngMode::Truncated);

        let response = get(&searxng, &[("q", "rust"), ("format", "json")]).await;

        assert_eq!(response.status(), 200);
        let declared = usize::try_from(response.content_length().unwrap()).unwrap();
        let mut response = response;
        let mut received = 0;
        let error = loop {
            match response.chunk().await {
                Ok(Some(chunk)) => received += chunk.len(),
                Ok(None) => panic!("the body ended cleanly after {received} bytes"),
                Err(error) => break error,
            }
        };
        assert!(error.is_body() || error.is_decode(), "{error:?}");
        assert!(
            received > 0 && received < declared,
            "{received} of {declared}"
        );
    }

    #[tokio::test]
    async fn answers_normally_after_the_delay() {
        let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();
        let delay = Duration::from_millis(150);
        searxng.set_mode(SearxngMode::Delay(delay));
        let started = Instant::now();

        let body = search_json(&searxng, &[("q", "rust"), ("format", "json")]).await;

        assert!(started.elapsed() >= delay);
        assert_eq!(engines_in_results(&body), ["alpha"]);
    }

    #[tokio::test]
    async fn closes_a_hanging_request_when_dropped() {
        let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();
        searxng.set_mode(SearxngMode::Hang);
        let url = format!("{}/search?q=rust&format=json", searxng.base_url());
        let pending = tokio::spawn(async move { client().get(url).send().await?.bytes().await });

        searxng.wait_for_hits(1).await;
        drop(searxng);

        let error = pending.await.unwrap().unwrap_err();
        assert!(!error.is_timeout(), "{error:?}");
    }

    fn unresponsive(body: &Value) -> Value {
        body["unresponsive_engines"].clone()
    }

    #[tokio::test]
    async fn a_captcha_spell_blocks_one_engine_for_its_searches_then_lifts() {
        let searxng = SimulatedSearxng::start(&["alpha", "beta"]).await.unwrap();
        searxng.set_engine_script(
            "beta",
            Script::new().spell(
                Spell::failing(EngineBehaviour::Fails(EngineFailure::Captcha)).for_requests(2),
            ),
        );
        let params = [("q", "rust"), ("format", "json"), ("locale", "en")];

        for _ in 0..2 {
            let body = search_json(&searxng, &params).await;
            assert_eq!(unresponsive(&body), json!([["beta", "CAPTCHA"]]));
            assert_eq!(engines_in_results(&body), ["alpha"]);
        }
        let recovered = search_json(&searxng, &params).await;

        assert_eq!(unresponsive(&recovered), json!([]));
        assert_eq!(engines_in_results(&recovered), ["alpha", "beta"]);
        assert_eq!(searxng.engine_hits("beta"), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn an_engine_scripted_slower_than_its_timeout_is_reported_as_timeout_after_it() {
        let searxng = SimulatedSearxng::start(&["alpha", "beta"]).await.unwrap();
        searxng.set_engine_script(
            "alpha",
            Script::new().latency(Latency::Fixed(Duration::from_secs(60))),
        );
        searxng.set_engine_script(
            "beta",
            Script::new().latency(Latency::Fixed(Duration::from_millis(800))),
        );
        let started = tokio::time::Instant::now();

        let body = search_json(&searxng, &[("q", "rust"), ("format", "json")]).await;

        let waited = started.elapsed();
        assert!(
            (ENGINE_TIMEOUT..ENGINE_TIMEOUT + Duration::from_secs(1)).contains(&waited),
            "{waited:?}"
        );
        assert_eq!(unresponsive(&body), json!([["alpha", "timeout"]]));
        assert_eq!(engines_in_results(&body), ["beta"]);
    }

    #[tokio::test(start_paused = true)]
    async fn an_instance_spell_fails_searches_for_its_window_then_answers() {
        let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();
        searxng.set_script(
            Script::new()
                .spell(Spell::failing(SearxngMode::Status(503)).for_time(Duration::from_secs(30))),
        );
        let params = [("q", "rust"), ("format", "json")];

        assert_eq!(get(&searxng, &params).await.status(), 503);
        tokio::time::advance(Duration::from_secs(29)).await;
        assert_eq!(get(&searxng, &params).await.status(), 503);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(get(&searxng, &params).await.status(), 200);
        assert_eq!(searxng.hits(), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn instance_latency_delays_answers_and_failures_alike() {
        let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();
        searxng.set_script(
            Script::new()
                .latency(Latency::Fixed(Duration::from_millis(250)))
                .quota(1, SearxngMode::Status(429)),
        );
        let params = [("q", "rust"), ("format", "json")];
        let started = tokio::time::Instant::now();

        assert_eq!(get(&searxng, &params).await.status(), 200);
        let limited = get(&searxng, &params).await;

        assert_eq!(limited.status(), 429);
        assert_eq!(limited.text().await.unwrap(), "Too Many Requests");
        assert!(started.elapsed() >= Duration::from_millis(500));
    }

    #[tokio::test]
    async fn clearing_scripts_restores_the_scripted_behaviour_set_directly() {
        let searxng = SimulatedSearxng::start(&["alpha"]).await.unwrap();
        searxng.set_engine("alpha", EngineBehaviour::Empty);
        searxng.set_engine_script(
            "alpha",
            Script::new().spell(Spell::failing(EngineBehaviour::Ok { results: 2 })),
        );
        let params = [("q", "rust"), ("format", "json")];

        let scripted = search_json(&searxng, &params).await;
        searxng.clear_scripts();
        let plain = search_json(&searxng, &params).await;

        assert_eq!(scripted["results"].as_array().unwrap().len(), 2);
        assert_eq!(plain["results"], json!([]));
    }

    #[test]
    #[should_panic(expected = "no engine named \"nope\"")]
    fn refuses_to_script_an_engine_it_does_not_have() {
        let instance = Mutex::new(Instance::new(&["alpha"]));
        lock(&instance).engine_mut("nope");
    }
}
