//! The simulated upstreams the demo's gateway talks to — a SearXNG with four engines, and Brave, Exa and
//! Tavily with the key [`SIM_KEY`] — each on its own loopback port; the scripts each step puts on them; and
//! the gateway's environment pointing at them.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use simulator::premium::{ProviderBehaviour, SimulatedProvider, SIM_KEY};
use simulator::script::{Latency, Script, Spell};
use simulator::searxng::{EngineBehaviour, EngineFailure, SimulatedSearxng};
use simulator::Provider;

/// The simulated SearXNG's engines.
pub(crate) const ENGINES: [&str; 4] = ["bing", "duckduckgo", "google", "wikipedia"];

/// The simulated premium providers, in `FALLBACK_PROVIDERS` order.
pub(crate) const PROVIDERS: [Provider; 3] = [Provider::Brave, Provider::Exa, Provider::Tavily];

/// `SUFFICIENT_MIN_RESULTS` of the demo's gateway: an answer with fewer results sends the fallback to the
/// next provider, so the step where the providers have one result each walks all three.
pub(crate) const SUFFICIENT_MIN_RESULTS: usize = 3;

/// How many results a calm provider answers.
const PROVIDER_RESULTS: usize = 8;

/// The gateway's settings the banner shows, in this order.
pub(crate) const SHOWN_SETTINGS: [&str; 6] = [
    "FALLBACK_PROVIDERS",
    "T1_PREMIUM_COUNT",
    "SUFFICIENT_MIN_RESULTS",
    "BREAKER_OPEN_SECONDS",
    "BREAKER_MAX_OPEN_SECONDS",
    "CACHE_TTL_SECONDS",
];

/// The running simulators; they stop when this is dropped.
pub(crate) struct Upstreams {
    /// The simulated SearXNG.
    pub(crate) searxng: SimulatedSearxng,
    providers: Vec<SimulatedProvider>,
}

impl Upstreams {
    /// Starts every simulator on a free loopback port, calm.
    pub(crate) async fn start() -> io::Result<Self> {
        let searxng = SimulatedSearxng::start(&ENGINES).await?;
        let mut providers = Vec::new();
        for kind in PROVIDERS {
            let provider = SimulatedProvider::start(kind).await?;
            provider.set_behaviour(ProviderBehaviour::results(
                PROVIDER_RESULTS,
                &format!("https://{}.example.com/result/", kind.as_str()),
            ));
            providers.push(provider);
        }
        let upstreams = Self { searxng, providers };
        upstreams.calm();
        Ok(upstreams)
    }

    /// Realistic latencies, nothing failing: replaces every script.
    pub(crate) fn calm(&self) {
        for engine in ENGINES {
            self.searxng.set_engine_script(engine, engine_script());
        }
        for provider in &self.providers {
            provider.set_script(provider_script());
        }
    }

    /// The providers, in `FALLBACK_PROVIDERS` order.
    pub(crate) fn providers(&self) -> &[SimulatedProvider] {
        &self.providers
    }

    /// How many requests `kind` has received.
    pub(crate) fn provider_calls(&self, kind: Provider) -> usize {
        self.provider(kind).map_or(0, SimulatedProvider::calls)
    }

    /// `engine` answers with a CAPTCHA page for `window` from its next search on.
    pub(crate) fn captcha(&self, engine: &str, window: Duration) {
        self.searxng.set_engine_script(
            engine,
            engine_script().spell(
                Spell::failing(EngineBehaviour::Fails(EngineFailure::Captcha)).for_time(window),
            ),
        );
    }

    /// Every engine times out on its next search.
    pub(crate) fn every_engine_times_out_once(&self) {
        self.every_engine_once(EngineBehaviour::Fails(EngineFailure::Timeout));
    }

    /// Every engine finds nothing on its next search.
    pub(crate) fn every_engine_finds_nothing_once(&self) {
        self.every_engine_once(EngineBehaviour::Empty);
    }

    fn every_engine_once(&self, behaviour: EngineBehaviour) {
        for engine in ENGINES {
            self.searxng.set_engine_script(
                engine,
                engine_script().spell(Spell::failing(behaviour.clone()).for_requests(1)),
            );
        }
    }

    /// Brave answers 429 `RATE_LIMITED` with `Retry-After` (its per-second window's reset) for `window`.
    pub(crate) fn brave_rate_limited(&self, window: Duration) {
        if let Some(brave) = self.provider(Provider::Brave) {
            brave.set_script(
                provider_script().spell(
                    Spell::failing(ProviderBehaviour::rate_limited(whole_seconds(window)))
                        .for_time(window),
                ),
            );
        }
    }

    /// Every provider but Brave finds a single result on its next call.
    pub(crate) fn others_find_one_result_once(&self) {
        for provider in self
            .providers
            .iter()
            .filter(|p| p.kind() != Provider::Brave)
        {
            let only = ProviderBehaviour::results(
                1,
                &format!("https://{}.example.com/rare/", provider.kind().as_str()),
            );
            provider.set_script(provider_script().spell(Spell::failing(only).for_requests(1)));
        }
    }

    /// The gateway's environment: these upstreams, the demo's short breaker periods (the cap equal to the
    /// first period, so a breaker that trips again next round stays open just as long), loopback only.
    pub(crate) fn gateway_env(
        &self,
        listen: SocketAddr,
        breaker_open: Duration,
    ) -> BTreeMap<String, String> {
        let open = breaker_open.as_secs_f64().to_string();
        let fallback: Vec<&str> = PROVIDERS.iter().map(|kind| kind.as_str()).collect();
        let mut env: BTreeMap<String, String> = [
            ("LISTEN_ADDR", listen.to_string()),
            ("SEARXNG_BACKEND_URL", self.searxng.base_url()),
            ("FALLBACK_PROVIDERS", fallback.join(",")),
            ("T1_PREMIUM_COUNT", "0".to_owned()),
            ("SUFFICIENT_MIN_RESULTS", SUFFICIENT_MIN_RESULTS.to_string()),
            ("FALLBACK_TIMEOUT_SECONDS", "5".to_owned()),
            ("SEARXNG_TIMEOUT_SECONDS", "4".to_owned()),
            ("BREAKER_OPEN_SECONDS", open.clone()),
            ("BREAKER_MAX_OPEN_SECONDS", open),
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

    fn provider(&self, kind: Provider) -> Option<&SimulatedProvider> {
        self.providers.iter().find(|p| p.kind() == kind)
    }
}

/// Whole seconds, at least one: what `Retry-After` can say.
pub(crate) fn whole_seconds(window: Duration) -> u64 {
    window.as_secs().max(1)
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
