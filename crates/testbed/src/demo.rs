//! `searxng-gateway demo`: the real gateway against simulated upstreams, on a machine with no
//! SearXNG, no keys and no internet — and a narrated scenario so a newcomer *sees* the decisions.
//!
//! [`run`] starts a [simulated SearXNG](simulator::searxng) with four engines and simulated
//! Brave, Exa and Tavily APIs (key [`SIM_KEY`]) on loopback ports, then the gateway itself — the same
//! [`searxng_gateway::serve`] the binary uses — on the listener the caller
//! bound. In a loop until the shutdown future resolves, it scripts the simulators
//! ([`simulator::script`]) and searches through the gateway like any client would: a normal
//! answer, a cache hit, an engine CAPTCHA'd (its breaker trips and SearXNG stops being asked for it,
//! then one probe closes it after `BREAKER_OPEN_SECONDS`), SearXNG degraded (fallback to a premium
//! provider), a 429 burst on Brave, and the metrics. Each step prints one line with what the client
//! got and one with what the gateway decided, read from the gateway's own `/metrics` and `/status`
//! and from what the simulators saw.

use std::collections::BTreeMap;
use std::future::Future;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::time::Instant;

use searxng_gateway::{Config, ConfigError};
use simulator::premium::{ProviderBehaviour, SimulatedProvider, SIM_KEY};
use simulator::script::{Latency, Script, Spell};
use simulator::searxng::{EngineBehaviour, EngineFailure, SimulatedSearxng};
use simulator::Provider as ProviderKind;

/// Where the demo gateway listens unless `--listen` or `LISTEN_ADDR` says otherwise: loopback
/// only, unlike the server's `:8080`, since the demo is for the person at this machine.
pub(crate) const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

/// The simulated SearXNG's engines.
pub(crate) const ENGINES: [&str; 4] = ["bing", "duckduckgo", "google", "wikipedia"];

/// The simulated premium providers, in `FALLBACK_PROVIDERS` order.
pub(crate) const PROVIDERS: [ProviderKind; 3] =
    [ProviderKind::Brave, ProviderKind::Exa, ProviderKind::Tavily];

/// `BREAKER_OPEN_SECONDS` in the demo: short, so a recovery happens while you watch.
pub(crate) const BREAKER_OPEN_SECONDS: u64 = 5;

/// The engine the scenario gets CAPTCHA'd.
const BLOCKED_ENGINE: &str = "google";

/// How long the CAPTCHA wall lasts: shorter than the open period, so the probe finds it lifted.
const CAPTCHA_SPELL: Duration = Duration::from_secs(3);

/// How long Brave's 429 burst lasts, and the `Retry-After` it sends.
const RATE_LIMIT_BURST_SECS: u64 = 5;

/// The longest the scenario waits for a breaker's open period to end.
const BREAKER_WAIT_LIMIT: Duration = Duration::from_secs(30);

/// What the demo does besides serving.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DemoOptions {
    /// Where the gateway listens.
    pub listen: SocketAddr,
    /// Stop after this many rounds of the scenario; `None` loops until shut down.
    pub rounds: Option<u32>,
    /// The pause between rounds.
    pub pause: Duration,
}

impl DemoOptions {
    /// Reads `demo`'s arguments (`--listen HOST:PORT`, `--rounds N`, `--pause SECONDS`); the
    /// address defaults to `listen_env` (the `LISTEN_ADDR` variable), then [`DEFAULT_LISTEN`].
    pub(crate) fn from_args(
        args: &[String],
        listen_env: Option<String>,
    ) -> Result<Self, DemoError> {
        let mut listen = listen_env
            .filter(|value| !value.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_LISTEN.to_owned());
        let mut rounds = None;
        let mut pause = Duration::from_secs(10);
        let mut args = args.iter();
        while let Some(flag) = args.next() {
            let mut value = |what: &str| {
                args.next()
                    .cloned()
                    .ok_or_else(|| DemoError::Usage(format!("{flag} needs {what}")))
            };
            match flag.as_str() {
                "--listen" => listen = value("an address such as 127.0.0.1:8080")?,
                "--rounds" => {
                    let raw = value("a number of rounds")?;
                    rounds = Some(raw.parse().map_err(|_| {
                        DemoError::Usage(format!("--rounds {raw:?} is not a whole number"))
                    })?);
                }
                "--pause" => {
                    let raw = value("a number of seconds")?;
                    let secs: u64 = raw.parse().map_err(|_| {
                        DemoError::Usage(format!("--pause {raw:?} is not a whole number"))
                    })?;
                    pause = Duration::from_secs(secs);
                }
                other => {
                    return Err(DemoError::Usage(format!(
                        "unknown option {other:?} (demo takes --listen, --rounds, --pause)"
                    )))
                }
            }
        }
        let listen = Config::from_lookup(&|name| (name == "LISTEN_ADDR").then(|| listen.clone()))?
            .listen_addr();
        Ok(Self {
            listen,
            rounds,
            pause,
        })
    }
}

/// Why the demo could not run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DemoError {
    /// Something else listens on the address.
    #[error(
        "{0} is already in use: stop whatever listens there, or pick another address with \
         `searxng-gateway demo --listen 127.0.0.1:8090` (or LISTEN_ADDR=127.0.0.1:8090)"
    )]
    AddressInUse(SocketAddr),
    /// Binding failed for another reason.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The operating system's reason.
        source: io::Error,
    },
    /// A command-line argument is wrong.
    #[error("{0}")]
    Usage(String),
    /// A simulator could not bind a loopback port.
    #[error("cannot start the simulated upstreams: {0}")]
    Simulator(io::Error),
    /// The demo's own gateway configuration was refused (a bad `LISTEN_ADDR`).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The gateway's server failed.
    #[error("the gateway stopped serving: {0}")]
    Serve(io::Error),
}

/// Binds the demo's address, saying clearly when the port is taken.
pub(crate) async fn bind(addr: SocketAddr) -> Result<TcpListener, DemoError> {
    TcpListener::bind(addr).await.map_err(|source| {
        if source.kind() == io::ErrorKind::AddrInUse {
            DemoError::AddressInUse(addr)
        } else {
            DemoError::Bind { addr, source }
        }
    })
}

/// The simulated upstreams the demo gateway talks to.
struct Upstreams {
    searxng: SimulatedSearxng,
    providers: Vec<SimulatedProvider>,
}

impl Upstreams {
    async fn start() -> io::Result<Self> {
        let searxng = SimulatedSearxng::start(&ENGINES).await?;
        let mut providers = Vec::new();
        for kind in PROVIDERS {
            let provider = SimulatedProvider::start(kind).await?;
            provider.set_behaviour(ProviderBehaviour::results(
                8,
                &format!("https://{}.example.com/result/", kind.as_str()),
            ));
            providers.push(provider);
        }
        let upstreams = Self { searxng, providers };
        upstreams.calm();
        Ok(upstreams)
    }

    /// Realistic latencies, nothing failing.
    fn calm(&self) {
        for engine in ENGINES {
            self.searxng.set_engine_script(engine, engine_script());
        }
        for provider in &self.providers {
            provider.set_script(provider_script());
        }
    }

    fn provider(&self, kind: ProviderKind) -> Option<&SimulatedProvider> {
        self.providers.iter().find(|p| p.kind() == kind)
    }

    /// The gateway's environment: these upstreams, short breaker periods, loopback only.
    fn gateway_env(&self, listen: SocketAddr) -> BTreeMap<String, String> {
        let mut env: BTreeMap<String, String> = [
            ("LISTEN_ADDR", listen.to_string()),
            ("SEARXNG_BACKEND_URL", self.searxng.base_url()),
            ("FALLBACK_PROVIDERS", "brave,exa,tavily".to_owned()),
            ("T1_PREMIUM_COUNT", "0".to_owned()),
            ("FALLBACK_TIMEOUT_SECONDS", "5".to_owned()),
            ("SEARXNG_TIMEOUT_SECONDS", "4".to_owned()),
            ("BREAKER_OPEN_SECONDS", BREAKER_OPEN_SECONDS.to_string()),
            ("BREAKER_MAX_OPEN_SECONDS", "20".to_owned()),
            ("BREAKER_FAILURE_THRESHOLD", "5".to_owned()),
            ("CACHE_TTL_SECONDS", "300".to_owned()),
        ]
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect();
        for provider in &self.providers {
            let prefix = provider.kind().env_prefix();
            env.insert(format!("{prefix}_API_KEY"), SIM_KEY.to_owned());
            env.insert(format!("{prefix}_BASE_URL"), provider.base_url());
        }
        env
    }
}

fn engine_script() -> Script<EngineBehaviour> {
    Script::new().latency(Latency::LogNormal {
        p50: Duration::from_millis(30),
        p99: Duration::from_millis(120),
    })
}

fn provider_script() -> Script<ProviderBehaviour> {
    Script::new().latency(Latency::LogNormal {
        p50: Duration::from_millis(120),
        p99: Duration::from_millis(400),
    })
}

/// Runs the demo on `listener` until `shutdown` resolves (or the rounds are done), narrating to
/// `out`. The gateway finishes in-flight requests before this returns.
pub(crate) async fn run(
    listener: TcpListener,
    options: DemoOptions,
    out: impl Write + Send + 'static,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), DemoError> {
    let listen = listener.local_addr().map_err(DemoError::Serve)?;
    let upstreams = Upstreams::start().await.map_err(DemoError::Simulator)?;
    let env = upstreams.gateway_env(listen);
    let config = Config::from_lookup(&|name| env.get(name).cloned())?;
    let (stop_tx, mut stop_rx) = watch::channel(false);
    let stopped = async move {
        let _ = stop_rx.wait_for(|stop| *stop).await;
    };
    let serving = tokio::spawn(searxng_gateway::serve(listener, config, stopped));

    let mut narrator = Narrator::new(out, listen, upstreams);
    narrator.banner(&env);
    let interrupted = tokio::select! {
        () = narrator.scenario(&options) => false,
        () = shutdown => true,
    };
    if interrupted {
        narrator
            .say("\nStopping: the gateway finishes what is in flight, then the simulators stop.");
    }
    let _ = stop_tx.send(true);
    let served = serving.await;
    narrator.say("Demo stopped.");
    match served {
        Ok(result) => result.map_err(DemoError::Serve),
        Err(join) => Err(DemoError::Serve(io::Error::other(join))),
    }
}

/// What one search through the gateway returned.
struct Observed {
    status: u16,
    outcome: String,
    cache: String,
    results: usize,
    sources: Vec<String>,
    elapsed: Duration,
}

/// One `/metrics` scrape: series (name with labels) → value.
#[derive(Default)]
struct Scrape(BTreeMap<String, f64>);

impl Scrape {
    fn parse(text: &str) -> Self {
        let series = text
            .lines()
            .filter(|line| !line.starts_with('#'))
            .filter_map(|line| {
                let (series, value) = line.rsplit_once(' ')?;
                Some((series.to_owned(), value.parse().ok()?))
            })
            .collect();
        Self(series)
    }

    /// Series of `family` that grew since `before`, with their labels and the increase.
    fn grown(&self, before: &Scrape, family: &str) -> Vec<(BTreeMap<String, String>, f64)> {
        let name = format!("searxng_gateway_{family}");
        self.0
            .iter()
            .filter(|(series, _)| {
                series
                    .strip_prefix(&name)
                    .is_some_and(|rest| rest.starts_with('{'))
            })
            .filter_map(|(series, value)| {
                let increase = value - before.0.get(series).copied().unwrap_or(0.0);
                (increase > 0.0).then(|| (labels(series), increase))
            })
            .collect()
    }

    /// The sum of `family` over series whose labels include `label=value`.
    fn total(&self, family: &str, label: &str, value: &str) -> f64 {
        let name = format!("searxng_gateway_{family}{{");
        self.0
            .iter()
            .filter(|(series, _)| series.starts_with(&name))
            .filter(|(series, _)| labels(series).get(label).is_some_and(|v| v == value))
            .map(|(_, v)| v)
            .sum()
    }
}

/// `name{a="x",b="y"}` → {a: x, b: y}. Label values come from closed sets: no quotes or commas.
fn labels(series: &str) -> BTreeMap<String, String> {
    let inner = series
        .split_once('{')
        .and_then(|(_, rest)| rest.strip_suffix('}'))
        .unwrap_or("");
    inner
        .split(',')
        .filter_map(|pair| {
            let (key, value) = pair.split_once('=')?;
            Some((key.to_owned(), value.trim_matches('"').to_owned()))
        })
        .collect()
}

/// Drives the scenario and prints what happens.
struct Narrator<W> {
    out: W,
    base: String,
    http: reqwest::Client,
    upstreams: Upstreams,
    step: u32,
}

impl<W: Write> Narrator<W> {
    fn new(out: W, listen: SocketAddr, upstreams: Upstreams) -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap_or_default();
        Self {
            out,
            base: format!("http://{listen}"),
            http,
            upstreams,
            step: 0,
        }
    }

    fn say(&mut self, line: &str) {
        // The narration is best effort: a closed stdout must not stop the gateway.
        let _ = writeln!(self.out, "{line}");
        let _ = self.out.flush();
    }

    fn banner(&mut self, env: &BTreeMap<String, String>) {
        let base = self.base.clone();
        let providers: Vec<String> = self
            .upstreams
            .providers
            .iter()
            .map(|p| format!("{} {}", p.kind().as_str(), p.base_url()))
            .collect();
        let settings: Vec<String> = [
            "FALLBACK_PROVIDERS",
            "T1_PREMIUM_COUNT",
            "BREAKER_OPEN_SECONDS",
            "CACHE_TTL_SECONDS",
        ]
        .iter()
        .filter_map(|name| env.get(*name).map(|value| format!("{name}={value}")))
        .collect();
        let searxng = self.upstreams.searxng.base_url();
        self.say(&format!(
            "searxng-gateway demo: the real gateway against simulated upstreams, all on loopback.\n\
             \n  gateway   {base}\n  SearXNG   {searxng} (simulated; engines {engines})\n  \
             premium   {providers} (simulated; key \"{SIM_KEY}\")\n  settings  {settings}\n\
             \nTry it while the scenario runs:\n  \
             curl -s '{base}/search?q=hello+world&format=json'\n  \
             curl -s {base}/status\n  \
             curl -s {base}/metrics | grep -E 'requests_total|circuit_breaker'\n\
             \nCtrl-C stops the demo.\n",
            engines = ENGINES.join(", "),
            providers = providers.join(", "),
            settings = settings.join(" "),
        ));
    }

    async fn scenario(&mut self, options: &DemoOptions) {
        self.wait_for_catalog().await;
        let mut round = 1;
        loop {
            self.round(round).await;
            if options.rounds.is_some_and(|rounds| round >= rounds) {
                self.say("All rounds done.");
                return;
            }
            self.say(&format!(
                "\nNext round in {} s (Ctrl-C to stop).",
                options.pause.as_secs()
            ));
            tokio::time::sleep(options.pause).await;
            round += 1;
        }
    }

    /// Engine breakers can exclude engines once the gateway has read SearXNG's `/config`.
    async fn wait_for_catalog(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            let known = self
                .status()
                .await
                .and_then(|status| status["searxng"]["engines_known"].as_u64())
                .unwrap_or(0);
            if known > 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.say(
            "(the gateway has not read SearXNG's /config yet; engine exclusion starts once it has)",
        );
    }

    async fn round(&mut self, round: u32) {
        let query = |topic: &str| {
            if round == 1 {
                topic.to_owned()
            } else {
                format!("{topic} {round}")
            }
        };
        self.step = 0;
        self.upstreams.calm();
        self.say(&format!("\n=== Round {round} ==="));

        self.search("A normal search", &query("rust async"), "")
            .await;
        self.search("The same search again", &query("rust async"), "")
            .await;

        self.upstreams.searxng.set_engine_script(
            BLOCKED_ENGINE,
            engine_script().spell(
                Spell::failing(EngineBehaviour::Fails(EngineFailure::Captcha))
                    .for_time(CAPTCHA_SPELL),
            ),
        );
        self.search(
            "google starts answering with a CAPTCHA",
            &query("circuit breakers"),
            &format!(
                "scripted: google CAPTCHA'd for {} s",
                CAPTCHA_SPELL.as_secs()
            ),
        )
        .await;
        self.search(
            "Another search while google's breaker is open",
            &query("tokio runtime"),
            "",
        )
        .await;
        self.wait_for_breaker("engine", BLOCKED_ENGINE).await;
        self.search(
            "google's open period is over",
            &query("prometheus metrics"),
            "",
        )
        .await;

        for engine in ENGINES {
            self.upstreams.searxng.set_engine_script(
                engine,
                engine_script().spell(
                    Spell::failing(EngineBehaviour::Fails(EngineFailure::Timeout)).for_requests(1),
                ),
            );
        }
        self.search(
            "SearXNG is degraded: every engine times out",
            &query("self-hosted search"),
            "scripted: every engine times out once",
        )
        .await;

        if let Some(brave) = self.upstreams.provider(ProviderKind::Brave) {
            brave.set_script(
                provider_script().spell(
                    Spell::failing(ProviderBehaviour::rate_limited(RATE_LIMIT_BURST_SECS))
                        .for_time(Duration::from_secs(RATE_LIMIT_BURST_SECS)),
                ),
            );
        }
        // The fallback takes providers in round-robin order: a few searches until Brave's turn.
        let topics = [
            "obscure zine archive",
            "forgotten mailing list",
            "rare field recording",
            "lost demo scene tune",
        ];
        for (attempt, topic) in topics.iter().enumerate() {
            let brave_before = self.provider_calls(ProviderKind::Brave);
            for engine in ENGINES {
                self.upstreams.searxng.set_engine_script(
                    engine,
                    engine_script().spell(Spell::failing(EngineBehaviour::Empty).for_requests(1)),
                );
            }
            let note = if attempt == 0 {
                format!(
                    "scripted: brave answers 429 (Retry-After {RATE_LIMIT_BURST_SECS}) for {RATE_LIMIT_BURST_SECS} s; SearXNG finds nothing"
                )
            } else {
                String::new()
            };
            self.search(
                "SearXNG finds nothing, so the fallback asks a premium API",
                &query(topic),
                &note,
            )
            .await;
            if self.provider_calls(ProviderKind::Brave) > brave_before {
                break;
            }
        }
        self.upstreams.calm();
        self.metrics_summary().await;
    }

    fn provider_calls(&self, kind: ProviderKind) -> usize {
        self.upstreams.provider(kind).map_or(0, |p| p.calls())
    }

    async fn scrape(&self) -> Scrape {
        let url = format!("{}/metrics", self.base);
        match self.http.get(url).send().await {
            Ok(response) => Scrape::parse(&response.text().await.unwrap_or_default()),
            Err(_) => Scrape::default(),
        }
    }

    async fn status(&self) -> Option<Value> {
        let response = self
            .http
            .get(format!("{}/status", self.base))
            .send()
            .await
            .ok()?;
        response.json().await.ok()
    }

    /// `(state, open_for_seconds)` of one breaker from `/status`.
    async fn breaker(&self, namespace: &str, name: &str) -> Option<(String, Option<f64>)> {
        let status = self.status().await?;
        status["breakers"].as_array()?.iter().find_map(|breaker| {
            let matches = breaker["namespace"] == namespace && breaker["name"] == name;
            matches.then(|| {
                (
                    breaker["state"].as_str().unwrap_or("unknown").to_owned(),
                    breaker["open_for_seconds"].as_f64(),
                )
            })
        })
    }

    async fn wait_for_breaker(&mut self, namespace: &str, name: &str) {
        let Some((state, open_for)) = self.breaker(namespace, name).await else {
            return;
        };
        if state != "open" {
            return;
        }
        self.say(&format!(
            "    … waiting {:.1} s for {name}'s open period to end",
            open_for.unwrap_or(0.0)
        ));
        let deadline = Instant::now() + BREAKER_WAIT_LIMIT;
        while Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(200)).await;
            match self.breaker(namespace, name).await {
                Some((state, _)) if state == "open" => {}
                _ => return,
            }
        }
    }

    async fn search(&mut self, title: &str, query: &str, note: &str) {
        self.step += 1;
        self.say(&format!("\n[{}] {title}", self.step));
        if !note.is_empty() {
            self.say(&format!("    ({note})"));
        }
        self.say(&format!(
            "    GET /search?q={}",
            url::form_urlencoded::byte_serialize(query.as_bytes()).collect::<String>()
        ));
        let before = self.scrape().await;
        let searxng_before = self.upstreams.searxng.hits();
        let observed = match self.get_search(query).await {
            Ok(observed) => observed,
            Err(err) => {
                self.say(&format!("    → the gateway did not answer: {err}"));
                return;
            }
        };
        let after = self.scrape().await;
        let sources = if observed.sources.is_empty() {
            String::new()
        } else {
            format!(" from {}", observed.sources.join(", "))
        };
        self.say(&format!(
            "    → {} {} · cache {} · {} results{sources} · {:.1} ms",
            observed.status,
            observed.outcome,
            observed.cache,
            observed.results,
            observed.elapsed.as_secs_f64() * 1e3,
        ));
        let asked_searxng = self.upstreams.searxng.hits() > searxng_before;
        for line in self.decisions(&before, &after, asked_searxng).await {
            self.say(&format!("    gateway: {line}"));
        }
    }

    async fn get_search(&self, query: &str) -> Result<Observed, reqwest::Error> {
        let started = Instant::now();
        let response = self
            .http
            .get(format!("{}/search", self.base))
            .query(&[("q", query), ("format", "json")])
            .send()
            .await?;
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("-")
                .to_owned()
        };
        let (status, outcome, cache) = (
            response.status().as_u16(),
            header("x-gateway-outcome"),
            header("x-cache"),
        );
        let body: Value = response.json().await?;
        let elapsed = started.elapsed();
        let results = body["results"].as_array().map_or(&[][..], Vec::as_slice);
        let mut sources: Vec<String> = results
            .iter()
            .filter_map(|result| result["engines"].as_array())
            .flatten()
            .filter_map(|engine| engine.as_str().map(str::to_owned))
            .collect();
        sources.sort();
        sources.dedup();
        Ok(Observed {
            status,
            outcome,
            cache,
            results: results.len(),
            sources,
            elapsed,
        })
    }

    /// What the gateway decided for one search, from the growth of its own metrics.
    async fn decisions(&self, before: &Scrape, after: &Scrape, asked_searxng: bool) -> Vec<String> {
        let mut lines = Vec::new();
        let outcome_grew = |outcome: &str| {
            after.total("requests_total", "outcome", outcome)
                > before.total("requests_total", "outcome", outcome)
        };
        if outcome_grew("cache_hit") {
            lines.push("answered from the cache; no upstream was called".to_owned());
            return lines;
        }
        for (labels, _) in after.grown(before, "searxng_requests_total") {
            let result = labels.get("result").map_or("?", String::as_str);
            let meaning = match result {
                "ok" => "SearXNG answered",
                "degraded" => {
                    "SearXNG answered 200 with no results while its engines failed: degraded, so the fallback runs"
                }
                _ => "SearXNG failed",
            };
            lines.push(format!(
                "{meaning} (searxng_requests_total{{result=\"{result}\"}})"
            ));
        }
        if asked_searxng {
            let sent = self
                .upstreams
                .searxng
                .last_request()
                .and_then(|params| params.into_iter().find(|(key, _)| key == "engines"));
            match sent {
                Some((_, engines)) => {
                    let left_out: Vec<&str> = ENGINES
                        .iter()
                        .copied()
                        .filter(|engine| !engines.split(',').any(|sent| sent == *engine))
                        .collect();
                    let excluded = if left_out.is_empty() {
                        String::new()
                    } else {
                        format!(" ({} left out: breaker open)", left_out.join(", "))
                    };
                    lines.push(format!("asked SearXNG for engines={engines}{excluded}"));
                }
                None => lines.push("asked SearXNG for every engine".to_owned()),
            }
        }
        let unresponsive: Vec<String> = after
            .grown(before, "engine_unresponsive_total")
            .into_iter()
            .map(|(labels, _)| {
                format!(
                    "{} ({})",
                    label(&labels, "engine"),
                    label(&labels, "reason")
                )
            })
            .collect();
        if !unresponsive.is_empty() {
            lines.push(format!(
                "SearXNG reported unresponsive: {}",
                unresponsive.join(", ")
            ));
        }
        let calls: Vec<String> = after
            .grown(before, "provider_calls_total")
            .into_iter()
            .map(|(labels, _)| {
                format!(
                    "{} → {}",
                    label(&labels, "provider"),
                    label(&labels, "outcome")
                )
            })
            .collect();
        if !calls.is_empty() {
            lines.push(format!("fallback called {}", calls.join(", ")));
        }
        for (labels, _) in after.grown(before, "circuit_breaker_rejections_total") {
            if label(&labels, "kind") == "provider" {
                lines.push(format!(
                    "skipped {} without calling it: its breaker is open",
                    label(&labels, "engine")
                ));
            }
        }
        for (labels, _) in after.grown(before, "circuit_breaker_trips_total") {
            let (kind, name) = (label(&labels, "kind"), label(&labels, "engine"));
            let open_for = match self.breaker(&kind, &name).await {
                Some((_, Some(seconds))) => format!(", open for {seconds:.1} s"),
                _ => String::new(),
            };
            lines.push(format!(
                "tripped the {kind} breaker of {name} (reason {}){open_for}",
                label(&labels, "reason")
            ));
        }
        for (labels, _) in after.grown(before, "circuit_breaker_recovery_total") {
            lines.push(format!(
                "the half-open probe of {} {} succeeded: breaker closed (recovery)",
                label(&labels, "kind"),
                label(&labels, "engine")
            ));
        }
        if lines.is_empty() {
            lines.push("nothing notable".to_owned());
        }
        lines
    }

    async fn metrics_summary(&mut self) {
        let scrape = self.scrape().await;
        let mut outcomes: Vec<String> = scrape
            .0
            .iter()
            .filter(|(series, _)| series.starts_with("searxng_gateway_requests_total{"))
            .map(|(series, value)| format!("{}={value}", label(&labels(series), "outcome")))
            .collect();
        outcomes.sort();
        let trips: Vec<String> = scrape
            .0
            .iter()
            .filter(|(series, _)| {
                series.starts_with("searxng_gateway_circuit_breaker_trips_total{")
            })
            .map(|(series, value)| {
                let labels = labels(series);
                format!(
                    "{} {} ({})={value}",
                    label(&labels, "kind"),
                    label(&labels, "engine"),
                    label(&labels, "reason")
                )
            })
            .collect();
        let base = self.base.clone();
        self.say(&format!(
            "\n[metrics] {base}/metrics\n    searxng_gateway_requests_total: {}\n    \
             searxng_gateway_circuit_breaker_trips_total: {}\n    breakers and quota windows: {base}/status",
            outcomes.join(" "),
            if trips.is_empty() {
                "none".to_owned()
            } else {
                trips.join(" ")
            }
        ));
    }
}

fn label(labels: &BTreeMap<String, String>, name: &str) -> String {
    labels.get(name).cloned().unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// Narration captured for assertions.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Captured {
        fn text(&self) -> String {
            String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
        }
    }

    #[tokio::test]
    async fn the_demo_serves_a_search_from_its_simulators_and_stops_when_told() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let options = DemoOptions {
            listen: addr,
            rounds: None,
            pause: Duration::from_secs(1),
        };
        let narration = Captured::default();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let demo = tokio::spawn(run(listener, options, narration.clone(), async {
            let _ = stopped.await;
        }));

        let response = reqwest::Client::new()
            .get(format!("http://{addr}/search?q=hello+world&format=json"))
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let body: Value = response.json().await.unwrap();
        assert!(!body["results"].as_array().unwrap().is_empty(), "{body}");

        stop.send(()).unwrap();
        let finished = tokio::time::timeout(Duration::from_secs(10), demo)
            .await
            .expect("the demo stops promptly");
        finished.unwrap().unwrap();
        let text = narration.text();
        assert!(text.contains(&format!("http://{addr}/status")), "{text}");
        assert!(text.contains("Demo stopped."), "{text}");
    }

    #[tokio::test]
    async fn a_taken_port_is_reported_as_such() {
        let taken = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = taken.local_addr().unwrap();

        let err = bind(addr).await.unwrap_err();

        assert!(matches!(err, DemoError::AddressInUse(a) if a == addr));
        assert!(err.to_string().contains("already in use"), "{err}");
    }

    #[test]
    fn options_come_from_flags_then_listen_addr_then_the_default() {
        let args = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();

        let default = DemoOptions::from_args(&[], None).unwrap();
        let from_env = DemoOptions::from_args(&[], Some("127.0.0.1:9000".into())).unwrap();
        let from_flag = DemoOptions::from_args(
            &args(&["--listen", "127.0.0.1:9100", "--rounds", "2"]),
            Some("127.0.0.1:9000".into()),
        )
        .unwrap();

        assert_eq!(default.listen, DEFAULT_LISTEN.parse().unwrap());
        assert_eq!(from_env.listen.port(), 9000);
        assert_eq!((from_flag.listen.port(), from_flag.rounds), (9100, Some(2)));
        assert!(DemoOptions::from_args(&args(&["--bogus"]), None).is_err());
        assert!(DemoOptions::from_args(&args(&["--listen", "nowhere"]), None).is_err());
    }

    #[test]
    fn a_scrape_reports_which_series_grew() {
        let before = Scrape::parse(
            "# HELP x\nsearxng_gateway_provider_calls_total{outcome=\"ok\",provider=\"exa\"} 1\n",
        );
        let after = Scrape::parse(
            "searxng_gateway_provider_calls_total{outcome=\"ok\",provider=\"exa\"} 2\n\
             searxng_gateway_provider_calls_total{outcome=\"rate_limited\",provider=\"brave\"} 1\n",
        );

        let grown = after.grown(&before, "provider_calls_total");

        assert_eq!(grown.len(), 2);
        assert_eq!(after.total("provider_calls_total", "provider", "exa"), 2.0);
        assert_eq!(label(&grown[0].0, "provider"), "exa");
    }
}
