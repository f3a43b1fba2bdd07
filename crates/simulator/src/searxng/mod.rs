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
//!
//! The module, one concern per file:
//!
//! - this file: the public handle [`SimulatedSearxng`] — start, script, inspect, stop;
//! - `behaviour.rs`: what tests script — [`EngineBehaviour`], [`EngineFailure`],
//!   [`SearxngMode`];
//! - `capacity.rs`: an optional [`Capacity`] limit (workers × service time), so one instance
//!   saturates like a real one;
//! - `server.rs`: the HTTP routes and how a planned answer is served (now, later, never);
//! - `params.rs`: a request's parameters as SearXNG merges them, and its UI language;
//! - `query.rs`: the `q` syntax (`!engine`, `:lang`, `!!bang`) and SearXNG's parameter checks;
//! - `instance.rs`: the scripted instance's state, engine selection and the plan for one search;
//! - `results.rs`: deterministic engine results, merging by URL, scoring, the JSON and HTML bodies;
//! - `reply.rs`: a planned answer rendered as the HTTP response SearXNG (or its proxy) would send.

mod behaviour;
mod capacity;
mod instance;
mod params;
mod query;
mod reply;
mod results;
mod server;
#[cfg(test)]
mod tests;

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::in_flight::InFlight;
use crate::script::Script;

pub use behaviour::{EngineBehaviour, EngineFailure, SearxngMode};
pub use capacity::Capacity;
use instance::{lock, Instance};
pub use instance::{EngineLogEntry, EngineObservations, EngineSeen};

/// The header a client sends on its own health probe of an engine (the gateway's out-of-band engine
/// probes do): scored apart from searches in [`EngineObservations`].
pub const PROBE_HEADER: &str = "x-searxng-gateway-probe";

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

/// A simulated SearXNG instance on a loopback port; it stops when dropped.
pub struct SimulatedSearxng {
    address: SocketAddr,
    state: Arc<Mutex<Instance>>,
    /// `/search` requests being handled now.
    in_flight: InFlight,
    /// How long clients kept connections open (see [`SimulatedSearxng::connection_lifetimes`]).
    lifetimes: crate::transport::Lifetimes,
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
        let in_flight = InFlight::default();
        let lifetimes = crate::transport::Lifetimes::default();
        let server = server::spawn(
            listener,
            Arc::clone(&state),
            in_flight.clone(),
            stopping_rx,
            lifetimes.clone(),
        );
        Ok(Self {
            address,
            state,
            in_flight,
            lifetimes,
            stopping,
            server,
        })
    }

    /// How many `/search` requests are in flight now: arrived, and neither answered yet nor dropped
    /// because the client closed the connection — for a test that must know when the gateway gave up
    /// on a call.
    pub fn in_flight(&self) -> usize {
        self.in_flight.get()
    }

    /// How long clients kept this instance's connections open before closing them, on the fake's own
    /// clock — when a gateway gave up on a hanging or trickling answer, without timing the gateway.
    pub fn connection_lifetimes(&self) -> crate::LifetimeStats {
        self.lifetimes.stats()
    }

    /// [`SimulatedSearxng::connection_lifetimes`] of the connections whose first request was for
    /// `path` (`/search`: a client's search, apart from the gateway's own `/config` reads).
    pub fn connection_lifetimes_of(&self, path: &str) -> crate::LifetimeStats {
        self.lifetimes.stats_of(path)
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

    /// Limits how many searches the instance serves at once and how long each takes (see
    /// [`Capacity`]); `None` removes the limit. Applies to searches arriving from now on.
    pub fn set_capacity(&self, capacity: Option<Capacity>) {
        self.lock().capacity = capacity.map(capacity::Limit::new);
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

    /// `Some(origin)` puts every result's URL on `origin` (`http://127.0.0.1:PORT`, a loopback site a
    /// test serves), keeping its path; `None` (the default) keeps the `*.example.org` URLs.
    pub fn set_result_origin(&self, origin: Option<&str>) {
        self.lock().result_origin = origin.map(str::to_owned);
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

    /// How many results (after merging) SearXNG's JSON answer to the most recent `/search` held: `Some(0)` when
    /// its engines found nothing; `None` before the first search and when the most recent one was not answered
    /// with results JSON (a whole-instance failure, a parameter error, an HTML page, a redirect).
    pub fn last_result_count(&self) -> Option<usize> {
        self.lock().last_result_count
    }

    /// How searches so far treated the engines, scored against each engine's scripted state at the
    /// time of the search (see [`EngineObservations`]).
    pub fn engine_observations(&self) -> EngineObservations {
        self.lock().observations
    }

    /// From now on, keeps every search's engine selection with its time ([`EngineLogEntry`]): a
    /// benchmark's per-spell attribution. Off by default: a long soak would grow it without bound.
    pub fn keep_engine_log(&self) {
        let mut state = self.lock();
        if state.engine_log.is_none() {
            state.engine_log = Some(Vec::new());
        }
    }

    /// The searches logged since [`Self::keep_engine_log`] (empty if it was never called).
    pub fn engine_log(&self) -> Vec<EngineLogEntry> {
        self.lock().engine_log.clone().unwrap_or_default()
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
