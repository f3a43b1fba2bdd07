//! The simulated instance's state — its engines and what tests scripted for them, the whole-instance mode and
//! script, the counters and recorded requests — and the plan for one search: which engines SearXNG would query,
//! what each of them does this time, how long the slowest takes, and the reply it all adds up to. Everything here
//! runs under the instance's lock; nothing awaits.

use crate::fault::{Fault, OnAccept};
use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::http::StatusCode;
use serde_json::{json, Value};
use tokio::sync::watch;
use tokio::time::Instant;

use super::behaviour::{EngineBehaviour, EngineFailure, SearxngMode};
use super::capacity::Limit;
use super::params::{Params, UiLanguage};
use super::query::{external_bang_url, QueryText, SearchRequest};
use super::reply::{escape_html, html_page, Reply, FORBIDDEN_PAGE};
use super::results::{engine_results, server_timing, SearchOutcome};
use super::{
    DEFAULT_RESULTS_PER_ENGINE, ENGINE_TIMEOUT, RECORDED_REQUESTS_LIMIT, SIMULATED_VERSION,
};
use crate::script::{Effect, Latency, Script};

/// A poisoned lock only means a test panicked mid-update; the counters are still worth reading.
pub(super) fn lock(state: &Mutex<Instance>) -> MutexGuard<'_, Instance> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One simulated engine and what tests scripted for it.
pub(super) struct Engine {
    /// Its name in `/config` and `engines=`.
    pub(super) name: String,
    /// Its `!shortcut`, unique in the instance.
    pub(super) shortcut: String,
    /// Its categories; the first is the one its results carry when it is selected by name.
    pub(super) categories: Vec<String>,
    /// `false` as `disabled: true` in `settings.yml`: left out of category searches.
    pub(super) enabled: bool,
    /// Whether it takes part in `pageno` > 1.
    pub(super) paging: bool,
    /// Whether it takes part when a `time_range` is given.
    pub(super) time_range_support: bool,
    /// What it does when queried and no script says otherwise.
    pub(super) behaviour: EngineBehaviour,
    /// Scripted behaviour over time, consulted before `behaviour`.
    pub(super) script: Option<Script<EngineBehaviour>>,
    /// Searches that queried it.
    pub(super) hits: usize,
}

/// The scripted instance; the handlers lock it briefly and never across an `.await`.
pub(super) struct Instance {
    /// Its engines, in the order they were given.
    pub(super) engines: Vec<Engine>,
    /// What `/search` does when no script says otherwise.
    pub(super) mode: SearxngMode,
    /// Scripted behaviour over time, consulted before `mode`.
    pub(super) script: Option<Script<SearxngMode>>,
    /// `Some(n)` sends `"number_of_results": n`; `None` leaves the key out.
    pub(super) number_of_results: Option<u64>,
    /// `Some(origin)`: every result's URL is on this origin (a loopback site the test serves).
    pub(super) result_origin: Option<String>,
    /// `/search` requests that arrived.
    pub(super) hits: usize,
    /// `hits`, for waiting on it.
    pub(super) hits_watch: watch::Sender<usize>,
    /// `/config` requests that arrived.
    pub(super) config_hits: usize,
    /// The parameters of the last [`RECORDED_REQUESTS_LIMIT`] searches.
    pub(super) requests: VecDeque<Vec<(String, String)>>,
    /// Results in the JSON answer to the most recent search; `None` when it got no results JSON.
    pub(super) last_result_count: Option<usize>,
    /// The capacity limit, if one was set.
    pub(super) capacity: Option<Limit>,
    /// What searches did against the engines' scripted state at the time.
    pub(super) observations: EngineObservations,
    /// Every search's engine selection with the time, once asked for
    /// ([`super::SimulatedSearxng::keep_engine_log`]).
    pub(super) engine_log: Option<Vec<EngineLogEntry>>,
}

/// One search's engine selection against the engines' scripted state, with its time: what a
/// benchmark reads to attribute calls into blocked engines and exclusions to each spell.
#[derive(Debug, Clone)]
pub struct EngineLogEntry {
    /// When the search arrived.
    pub at: Instant,
    /// Marked as a client's probe of an engine ([`super::PROBE_HEADER`]).
    pub probe: bool,
    /// It named its engines (`engines=`).
    pub explicit: bool,
    /// Every enabled engine of the general category, in the instance's order.
    pub engines: Vec<EngineSeen>,
}

/// One engine in an [`EngineLogEntry`].
#[derive(Debug, Clone)]
pub struct EngineSeen {
    /// Its name.
    pub name: String,
    /// The search queried it.
    pub queried: bool,
    /// It was blocked at the time (as [`EngineObservations::calls_into_blocked`] judges).
    pub blocked: bool,
}

/// How searches treated engines, scored against what each engine was scripted to do at that
/// moment: a benchmark's measure of a client's engine decisions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineObservations {
    /// Engines queried while blocked: a failing spell or behaviour, or a slow spell at or past
    /// [`ENGINE_TIMEOUT`] (one per engine per search).
    pub calls_into_blocked: u64,
    /// Searches with an explicit `engines=` list that left out an enabled engine of the searched
    /// categories that was healthy at the time.
    pub searches_excluding_healthy: u64,
    /// Searches with an explicit `engines=` list.
    pub explicit_searches: u64,
    /// Requests marked as a client's probe of an engine ([`super::PROBE_HEADER`]): their calls
    /// into blocked engines count in `calls_into_blocked`; they are no searches, so they count in
    /// neither of the other two.
    pub probes: u64,
}

/// How the handler answers once the lock is released.
pub(super) enum Plan {
    /// Answer at once.
    Now(Reply),
    /// Answer after this long (the slowest engine, the scripted latency).
    After(Duration, Reply),
    /// Never answer; the connection is cut when the simulator stops.
    Never,
    /// Serve this fault.
    Fault(Fault),
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
            Plan::Fault(fault) => Plan::Fault(fault),
        }
    }
}

impl Instance {
    pub(super) fn new(names: &[&str]) -> Self {
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
            result_origin: None,
            hits: 0,
            hits_watch: watch::channel(0).0,
            config_hits: 0,
            requests: VecDeque::new(),
            last_result_count: None,
            capacity: None,
            observations: EngineObservations::default(),
            engine_log: None,
        }
    }

    #[track_caller]
    pub(super) fn engine_mut(&mut self, name: &str) -> &mut Engine {
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

    pub(super) fn config(&self) -> Value {
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

    /// What the accept loop does with a new connection in the current mode.
    pub(super) fn on_accept(&self) -> Option<OnAccept> {
        match &self.mode {
            SearxngMode::Fault(fault) => fault.on_accept(),
            _ => None,
        }
    }

    pub(super) fn plan_search(&mut self, params: Params, language: UiLanguage) -> Plan {
        self.hits += 1;
        self.hits_watch.send_replace(self.hits);
        if self.requests.len() == RECORDED_REQUESTS_LIMIT {
            self.requests.pop_front();
        }
        self.requests.push_back(params.pairs.clone());
        self.last_result_count = None;

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
            SearxngMode::Fault(fault) => Plan::Fault(fault),
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
        self.observe(params, &selected);
        let outcome = self.run(&selected, &request, language);
        *slowest_engine = outcome.slowest_engine;
        if as_json {
            self.last_result_count = Some(outcome.result_count());
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

    /// Scores one search's engine selection against the engines' scripted state now.
    fn observe(&mut self, params: &Params, selected: &[(usize, String)]) {
        let explicit = params.get("engines").is_some();
        let mut excluded_healthy = false;
        let mut seen = Vec::new();
        for (index, engine) in self.engines.iter().enumerate() {
            let blocked = engine.is_blocked_now();
            let queried = selected.iter().any(|(chosen, _)| *chosen == index);
            if queried && blocked {
                self.observations.calls_into_blocked += 1;
            }
            let eligible = engine.enabled && engine.categories.iter().any(|c| c == GENERAL);
            if explicit && !queried && eligible && !blocked {
                excluded_healthy = true;
            }
            if eligible && self.engine_log.is_some() {
                seen.push(EngineSeen {
                    name: engine.name.clone(),
                    queried,
                    blocked,
                });
            }
        }
        if let Some(log) = self.engine_log.as_mut() {
            log.push(EngineLogEntry {
                at: Instant::now(),
                probe: params.probe,
                explicit,
                engines: seen,
            });
        }
        if params.probe {
            self.observations.probes += 1;
            return;
        }
        if explicit {
            self.observations.explicit_searches += 1;
        }
        if excluded_healthy {
            self.observations.searches_excluding_healthy += 1;
        }
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
                    let mut found = engine_results(*index, engine, category, *results, request);
                    if let Some(origin) = &self.result_origin {
                        for result in &mut found {
                            result.move_to(origin);
                        }
                    }
                    outcome.add_found(&engine.name, found, request);
                }
                EngineBehaviour::Empty => {}
                EngineBehaviour::Fails(failure) => outcome
                    .unresponsive
                    .push((engine.name.clone(), failure.localized(language))),
            }
        }
        outcome.finish();
        outcome
    }
}

impl Engine {
    /// Whether a search now would find it blocked: a failing behaviour or spell, or a slow spell
    /// that typically reaches [`ENGINE_TIMEOUT`].
    fn is_blocked_now(&self) -> bool {
        if matches!(self.behaviour, EngineBehaviour::Fails(_)) {
            return true;
        }
        match self.script.as_ref().and_then(Script::active_effect) {
            Some(Effect::Fail(EngineBehaviour::Fails(_))) => true,
            Some(Effect::Slow(latency)) => typical(latency) >= ENGINE_TIMEOUT,
            _ => false,
        }
    }

    pub(super) fn main_category(&self) -> String {
        self.categories
            .first()
            .cloned()
            .unwrap_or_else(|| GENERAL.to_owned())
    }
}

const GENERAL: &str = "general";

/// A latency's usual value: what a "slow-blocked" engine is judged by.
fn typical(latency: &Latency) -> Duration {
    match *latency {
        Latency::Immediate => Duration::ZERO,
        Latency::Fixed(delay) => delay,
        Latency::Uniform { min, .. } => min,
        Latency::LogNormal { p50, .. } => p50,
    }
}

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
