//! The narrated scenario: rounds of the same eight [`Step`]s, each scripting the simulators, searching
//! through the gateway like any client and printing what it announced — the client's answer and the
//! gateway's decisions. README.md's "Demo" section lists the same steps (a test keeps them in step).

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Duration;

use tokio::time::Instant;

use simulator::premium::SIM_KEY;
use simulator::Provider;

use crate::decisions::{self, SearxngSeen};
use crate::gateway_client::GatewayClient;
use crate::narrator::Narrator;
use crate::scrape::label;
use crate::upstreams::{whole_seconds, Upstreams, ENGINES, SHOWN_SETTINGS};

/// The engine the scenario gets CAPTCHA'd (the step titles name it).
const BLOCKED_ENGINE: &str = "google";

/// How often a wait for a breaker asks `/status`.
const POLL: Duration = Duration::from_millis(100);

/// The steps of every round, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// A search on a calm day.
    NormalSearch,
    /// The same search, answered from the cache.
    SameSearchAgain,
    /// google's CAPTCHA trips its engine breaker at once.
    Captcha,
    /// SearXNG is asked without google while its breaker is open.
    WhileOpen,
    /// After the open period one search probes google; its success closes the breaker.
    Probe,
    /// Every engine times out: the fallback answers.
    Degraded,
    /// SearXNG finds nothing, the fallback walks every provider, Brave answers 429 and its breaker opens.
    BraveRateLimited,
    /// The counters so far.
    Metrics,
}

impl Step {
    /// Every step, in the order a round runs them.
    pub(crate) const ALL: [Step; 8] = [
        Step::NormalSearch,
        Step::SameSearchAgain,
        Step::Captcha,
        Step::WhileOpen,
        Step::Probe,
        Step::Degraded,
        Step::BraveRateLimited,
        Step::Metrics,
    ];

    /// The heading it prints (and README.md lists).
    pub(crate) fn title(self) -> &'static str {
        match self {
            Step::NormalSearch => "A normal search",
            Step::SameSearchAgain => "The same search again",
            Step::Captcha => "google answers with a CAPTCHA: its breaker trips",
            Step::WhileOpen => "Another search while google's breaker is open",
            Step::Probe => "google's open period ends: the gateway probes it itself",
            Step::Degraded => "SearXNG is degraded: every engine times out",
            Step::BraveRateLimited => "SearXNG finds nothing and Brave answers 429",
            Step::Metrics => "The metrics",
        }
    }

    /// Its number in the round, from 1.
    fn number(self) -> usize {
        Step::ALL.iter().position(|step| *step == self).unwrap_or(0) + 1
    }
}

/// Drives the rounds and narrates them.
pub(crate) struct Scenario<W> {
    narrator: Narrator<W>,
    gateway: GatewayClient,
    upstreams: Upstreams,
    /// The gateway's `BREAKER_OPEN_SECONDS`; the scripted spells are timed from it.
    breaker_open: Duration,
}

impl<W: Write> Scenario<W> {
    /// A scenario against `gateway`, whose upstreams are `upstreams`.
    pub(crate) fn new(
        narrator: Narrator<W>,
        gateway: GatewayClient,
        upstreams: Upstreams,
        breaker_open: Duration,
    ) -> Self {
        Self {
            narrator,
            gateway,
            upstreams,
            breaker_open,
        }
    }

    /// For the lines around the scenario (start, stop).
    pub(crate) fn narrator(&mut self) -> &mut Narrator<W> {
        &mut self.narrator
    }

    /// What runs where, the settings that matter, and what to try meanwhile.
    pub(crate) fn banner(&mut self, env: &BTreeMap<String, String>) {
        let base = self.gateway.base().to_owned();
        let providers: Vec<String> = self
            .upstreams
            .providers()
            .iter()
            .map(|p| format!("{} {}", p.kind().as_str(), p.base_url()))
            .collect();
        let settings: Vec<String> = SHOWN_SETTINGS
            .iter()
            .filter_map(|name| env.get(*name).map(|value| format!("{name}={value}")))
            .collect();
        let searxng = self.upstreams.searxng.base_url();
        let open = self.breaker_open.as_secs_f64();
        self.narrator.say(&format!(
            "searxng-gateway demo: the real gateway against simulated upstreams, all on loopback.\n\
             \n  gateway   {base}\n  SearXNG   {searxng} (simulated; engines {engines})\n  \
             premium   {providers} (simulated; key \"{SIM_KEY}\")\n  settings  {settings}\n\
             \nEvery round runs the same {steps} steps and takes about as long: a tripped breaker stays open \
             BREAKER_OPEN_SECONDS={open}\nseconds (plus a little jitter), and BREAKER_MAX_OPEN_SECONDS={open} caps the \
             doubling the gateway applies when a breaker\ntrips again, as google's and brave's do every round.\n\
             \nWatch it in a browser: {base}/ui (live traffic, breakers, spend, the last searches)\n\
             \nTry it while the scenario runs:\n  \
             curl -s '{base}/search?q=hello+world&format=json'\n  \
             curl -s {base}/status\n  \
             curl -s {base}/metrics | grep -E 'requests_total|circuit_breaker'\n\
             \nCtrl-C stops the demo.",
            engines = ENGINES.join(", "),
            providers = providers.join(", "),
            settings = settings.join(" "),
            steps = Step::ALL.len(),
        ));
    }

    /// Runs `rounds` rounds (forever if `None`) with `pause` between them.
    pub(crate) async fn run(&mut self, rounds: Option<u32>, pause: Duration) {
        self.wait_for_catalog().await;
        let mut round = 1;
        loop {
            self.round(round).await;
            if rounds.is_some_and(|rounds| round >= rounds) {
                self.narrator.say("\nAll rounds done.");
                return;
            }
            self.narrator.say(&format!(
                "\nNext round in {} s (Ctrl-C to stop).",
                pause.as_secs()
            ));
            tokio::time::sleep(pause).await;
            round += 1;
        }
    }

    /// Engine breakers can exclude engines once the gateway has read SearXNG's `/config`.
    async fn wait_for_catalog(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.gateway.engines_known().await > 0 {
                return;
            }
            tokio::time::sleep(POLL).await;
        }
        self.narrator.say(
            "(the gateway has not read SearXNG's /config yet; engine exclusion starts once it has)",
        );
    }

    async fn round(&mut self, round: u32) {
        self.upstreams.calm();
        self.narrator.round(round);
        let query = |topic: &str| {
            if round == 1 {
                topic.to_owned()
            } else {
                format!("{topic} {round}")
            }
        };
        for step in Step::ALL {
            self.narrator.step(step.number(), step.title());
            match step {
                Step::NormalSearch | Step::SameSearchAgain => {
                    self.search(&query("rust async")).await;
                }
                Step::Captcha => {
                    let window = self.breaker_open.mul_f64(0.6);
                    self.upstreams.captcha(BLOCKED_ENGINE, window);
                    self.narrator.scripted(&format!(
                        "{BLOCKED_ENGINE} answers SearXNG with a CAPTCHA page for {:.1} s, less than its \
                         breaker's open period",
                        window.as_secs_f64()
                    ));
                    self.search(&query("circuit breakers")).await;
                }
                Step::WhileOpen => self.search(&query("tokio runtime")).await,
                Step::Probe => {
                    self.probed_out_of_band(BLOCKED_ENGINE).await;
                    self.search(&query("prometheus metrics")).await;
                }
                Step::Degraded => {
                    self.upstreams.every_engine_times_out_once();
                    self.narrator.scripted("every engine times out once");
                    self.search(&query("self-hosted search")).await;
                }
                Step::BraveRateLimited => {
                    // Brave must be callable, or the step would not show what it announces.
                    self.wait_until_closed("provider", Provider::Brave.as_str())
                        .await;
                    self.upstreams.every_engine_finds_nothing_once();
                    self.upstreams.brave_rate_limited(self.breaker_open);
                    self.upstreams.others_find_one_result_once();
                    self.narrator.scripted(&format!(
                        "every engine finds nothing once; brave answers 429 (Retry-After {}) for {:.0} s; \
                         exa and tavily have one result each: too few, so the fallback asks all three",
                        whole_seconds(self.breaker_open),
                        self.breaker_open.as_secs_f64()
                    ));
                    let brave_before = self.upstreams.provider_calls(Provider::Brave);
                    self.search(&query("obscure zine archive")).await;
                    if self.upstreams.provider_calls(Provider::Brave) == brave_before {
                        self.narrator
                            .detail("(brave was not called this time: see the lines above)");
                    }
                }
                Step::Metrics => self.metrics().await,
            }
        }
        self.upstreams.calm();
    }

    /// Waits, bounded, for the gateway's own probe of the open engine `name` to close its breaker,
    /// and says what the gateway did meanwhile (no client search carries that probe).
    async fn probed_out_of_band(&mut self, name: &str) {
        let before = self.gateway.scrape().await;
        self.wait_until_closed("engine", name).await;
        let deadline = Instant::now() + self.breaker_open * 2;
        while Instant::now() < deadline
            && self
                .gateway
                .breaker("engine", name)
                .await
                .is_some_and(|breaker| breaker.state != "closed")
        {
            tokio::time::sleep(POLL).await;
        }
        let after = self.gateway.scrape().await;
        let seen = SearxngSeen {
            asked: false,
            engines: None,
            results: None,
        };
        for line in decisions::describe(&before, &after, &seen, &|_: &str, _: &str| None) {
            self.narrator.decided(&line);
        }
    }

    /// Waits, bounded, while the breaker is open, saying how long.
    async fn wait_until_closed(&mut self, namespace: &str, name: &str) {
        let Some(breaker) = self.gateway.breaker(namespace, name).await else {
            return;
        };
        if !breaker.is_open() {
            return;
        }
        let open_for = breaker.open_for.unwrap_or_default();
        self.narrator
            .waiting(open_for, &format!("{name}'s open period to end"));
        let deadline = Instant::now() + open_for + self.breaker_open * 2;
        while Instant::now() < deadline {
            tokio::time::sleep(POLL).await;
            if !self
                .gateway
                .breaker(namespace, name)
                .await
                .is_some_and(|breaker| breaker.is_open())
            {
                return;
            }
        }
    }

    /// One search through the gateway: the request, what the client got, what the gateway decided.
    async fn search(&mut self, query: &str) {
        self.narrator.request(query);
        let before = self.gateway.scrape().await;
        let searxng_before = self.upstreams.searxng.hits();
        let observed = match self.gateway.search(query).await {
            Ok(observed) => observed,
            Err(err) => {
                self.narrator.no_answer(&err.to_string());
                return;
            }
        };
        let after = self.gateway.scrape().await;
        self.narrator.observed(&observed);
        let searxng = &self.upstreams.searxng;
        let asked = searxng.hits() > searxng_before;
        let seen = SearxngSeen {
            asked,
            engines: asked
                .then(|| searxng.last_request())
                .flatten()
                .and_then(|params| params.into_iter().find(|(key, _)| key == "engines"))
                .map(|(_, engines)| engines),
            results: asked.then(|| searxng.last_result_count()).flatten(),
        };
        let breakers = self.gateway.breakers().await;
        let open_for = |kind: &str, name: &str| {
            breakers
                .get(&(kind.to_owned(), name.to_owned()))
                .and_then(|breaker| breaker.open_for)
        };
        for line in decisions::describe(&before, &after, &seen, &open_for) {
            self.narrator.decided(&line);
        }
    }

    /// The counters the rounds so far added up to.
    async fn metrics(&mut self) {
        let scrape = self.gateway.scrape().await;
        let outcomes: Vec<String> = scrape
            .series("requests_total")
            .iter()
            .map(|(labels, value)| format!("{}={value}", label(labels, "outcome")))
            .collect();
        let trips: Vec<String> = scrape
            .series("circuit_breaker_trips_total")
            .iter()
            .map(|(labels, value)| {
                format!(
                    "{} {} ({})={value}",
                    label(labels, "kind"),
                    label(labels, "engine"),
                    label(labels, "reason")
                )
            })
            .collect();
        let base = self.gateway.base().to_owned();
        self.narrator.detail(&format!("{base}/metrics"));
        self.narrator.detail(&format!(
            "searxng_gateway_requests_total: {}",
            outcomes.join(" ")
        ));
        self.narrator.detail(&format!(
            "searxng_gateway_circuit_breaker_trips_total: {}",
            if trips.is_empty() {
                "none".to_owned()
            } else {
                trips.join(" ")
            }
        ));
        self.narrator
            .detail(&format!("breakers and quota windows: {base}/status"));
    }
}
