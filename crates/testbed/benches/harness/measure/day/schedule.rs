//! The scripted day: what goes wrong upstream and when, compressed into a few minutes, and the
//! gateway configuration scaled to the same clock. Every window is a fraction of the day, so the
//! smoke run replays the same day, shorter.
//!
//! Time scale: one real day (86 400 s) becomes [`Day::length`]; the gateway's own periods (breaker
//! open time and cap, SearXNG cooldown, cache TTL and stale window, quota parking) are scaled by
//! the same factor from their defaults, so "an hour of exclusion" means the same share of the day.
//! Latencies are not scaled: a search still takes what it takes.

use std::time::Duration;

use simulator::premium::{ProviderBehaviour, SimError, SimulatedProvider};
use simulator::script::{Latency, Script, Spell};
use simulator::searxng::{EngineBehaviour, EngineFailure, SearxngMode, SimulatedSearxng};
use simulator::Provider;

/// The simulated SearXNG's engines (each finds five results, some URLs shared).
pub(super) const ENGINES: [&str; 5] = ["bing", "brave", "duckduckgo", "google", "wikipedia"];
/// The providers, in `FALLBACK_PROVIDERS` order.
pub(super) const PROVIDERS: [Provider; 3] = [Provider::Brave, Provider::Exa, Provider::Tavily];
/// Results each engine finds: five engines find about twelve distinct URLs together, so every
/// engine left out (blocked, or healthy but excluded) brings an answer close to the target.
const RESULTS_PER_ENGINE: usize = 3;
/// Results a search should have: `SUFFICIENT_MIN_RESULTS`.
pub(super) const TARGET: usize = 8;
/// Tavily's plan allows this many calls before its plan limit (432) runs out.
pub(super) const TAVILY_PLAN_CALLS: u64 = 12;
/// Seconds in a real day.
const REAL_DAY: f64 = 86_400.0;

/// A part of the day, reported on its own.
#[derive(Debug, Clone, Copy)]
pub(super) struct Phase {
    /// What happens in it.
    pub(super) name: &'static str,
    /// Its end, as a fraction of the day.
    pub(super) until: f64,
}

/// The phases, in order.
pub(super) const PHASES: [Phase; 5] = [
    Phase {
        name: "night: healthy",
        until: 0.10,
    },
    Phase {
        name: "morning: engine CAPTCHA, 429 and slow spells",
        until: 0.40,
    },
    Phase {
        name: "midday: SearXNG slow, then 500s",
        until: 0.60,
    },
    Phase {
        name: "afternoon: Brave 429 burst, Exa behind a bot challenge, wikipedia and duckduckgo blocked",
        until: 0.80,
    },
    Phase {
        name: "evening: healthy again",
        until: 1.00,
    },
];

/// One day at a given length.
#[derive(Debug, Clone, Copy)]
pub(super) struct Day {
    /// How long the replay lasts.
    pub(super) length: Duration,
}

impl Day {
    /// `fraction` of the day as a duration from its start.
    pub(super) fn at(&self, fraction: f64) -> Duration {
        self.length.mul_f64(fraction)
    }

    /// A real-world period (seconds) on this day's clock, in seconds for a variable.
    fn scaled(&self, real_seconds: f64) -> String {
        let seconds = real_seconds * self.length.as_secs_f64() / REAL_DAY;
        format!("{:.3}", seconds.max(0.001))
    }

    /// The scaled periods, for the report.
    pub(super) fn scaled_periods(&self) -> String {
        [
            ("BREAKER_OPEN_SECONDS", 300.0),
            ("BREAKER_MAX_OPEN_SECONDS", 3_600.0),
            ("SEARXNG_FAIL_COOLDOWN_SECONDS", 180.0),
            ("CACHE_TTL_SECONDS", 3_600.0),
            ("CACHE_STALE_SECONDS", 86_400.0),
            ("QUOTA_PARK_SECONDS", 86_400.0),
        ]
        .iter()
        .map(|(name, real)| format!("{name}={}", self.scaled(*real)))
        .collect::<Vec<_>>()
        .join(", ")
    }

    /// The phase a moment `elapsed` into the day belongs to.
    pub(super) fn phase_of(&self, elapsed: Duration) -> usize {
        let fraction = elapsed.as_secs_f64() / self.length.as_secs_f64();
        PHASES
            .iter()
            .position(|phase| fraction < phase.until)
            .unwrap_or(PHASES.len() - 1)
    }

    /// The gateway's environment: defaults scaled to the day, the target, the providers.
    pub(super) fn gateway_env(
        &self,
        searxng: &SimulatedSearxng,
        providers: &[SimulatedProvider],
        t1: usize,
    ) -> Vec<(String, String)> {
        let mut env = vec![
            ("SEARXNG_BACKEND_URL".to_owned(), searxng.base_url()),
            ("SUFFICIENT_MIN_RESULTS".to_owned(), TARGET.to_string()),
            ("T1_PREMIUM_COUNT".to_owned(), t1.to_string()),
            (
                "FALLBACK_PROVIDERS".to_owned(),
                "brave,exa,tavily".to_owned(),
            ),
            ("BREAKER_OPEN_SECONDS".to_owned(), self.scaled(300.0)),
            ("BREAKER_MAX_OPEN_SECONDS".to_owned(), self.scaled(3_600.0)),
            (
                "SEARXNG_FAIL_COOLDOWN_SECONDS".to_owned(),
                self.scaled(180.0),
            ),
            ("CACHE_TTL_SECONDS".to_owned(), self.scaled(3_600.0)),
            ("CACHE_STALE_SECONDS".to_owned(), self.scaled(86_400.0)),
            ("QUOTA_PARK_SECONDS".to_owned(), self.scaled(86_400.0)),
        ];
        for provider in providers {
            let prefix = provider.kind().env_prefix();
            env.push((
                format!("{prefix}_API_KEY"),
                simulator::premium::SIM_KEY.to_owned(),
            ));
            env.push((format!("{prefix}_BASE_URL"), provider.base_url()));
        }
        env
    }

    /// A failing spell on the day's clock, from `from` to `until` (fractions of the day).
    fn spell<F>(&self, fault: F, from: f64, until: f64) -> Spell<F> {
        Spell::failing(fault).during(self.at(from), self.at(until))
    }

    /// Installs the day on the simulators; their clocks start now. `seed` varies the draws.
    pub(super) fn install(
        &self,
        searxng: &SimulatedSearxng,
        providers: &[SimulatedProvider],
        seed: u64,
    ) {
        let fails = |failure| EngineBehaviour::Fails(failure);
        let engine_latency = Latency::LogNormal {
            p50: Duration::from_millis(60),
            p99: Duration::from_millis(300),
        };
        for (i, engine) in ENGINES.iter().enumerate() {
            let mut script = Script::new()
                .latency(engine_latency)
                .seed(seed.wrapping_add(i as u64));
            script = match *engine {
                // A CAPTCHA wall, a short recovery, a second short wall that lifts while the
                // engine is still excluded from the first two trips: the breaker's growth decides
                // how long a recovered engine stays out.
                "google" => script
                    .spell(self.spell(fails(EngineFailure::Captcha), 0.10, 0.16))
                    .spell(self.spell(fails(EngineFailure::Captcha), 0.20, 0.22))
                    .spell(self.spell(fails(EngineFailure::Captcha), 0.27, 0.28)),
                "duckduckgo" => script
                    .spell(self.spell(fails(EngineFailure::TooManyRequests), 0.14, 0.22))
                    .spell(self.spell(fails(EngineFailure::TooManyRequests), 0.66, 0.70)),
                // Slow-blocked: it answers, after SearXNG's engine timeout.
                "bing" => script.spell(
                    Spell::slow(Latency::Fixed(Duration::from_millis(3_500)))
                        .during(self.at(0.30), self.at(0.36)),
                ),
                "wikipedia" => {
                    script.spell(self.spell(fails(EngineFailure::AccessDenied), 0.62, 0.74))
                }
                _ => script,
            };
            searxng.set_engine(
                engine,
                EngineBehaviour::Ok {
                    results: RESULTS_PER_ENGINE,
                },
            );
            searxng.set_engine_script(engine, script);
        }
        searxng.set_script(
            Script::new()
                .seed(seed)
                .spell(
                    Spell::slow(Latency::LogNormal {
                        p50: Duration::from_millis(900),
                        p99: Duration::from_millis(2_000),
                    })
                    .during(self.at(0.42), self.at(0.48)),
                )
                .spell(self.spell(SearxngMode::Status(500), 0.52, 0.56)),
        );
        for (i, provider) in providers.iter().enumerate() {
            let kind = provider.kind();
            provider.set_behaviour(ProviderBehaviour::results(
                10,
                &format!("https://{}.example.net/r/", kind.as_str()),
            ));
            let mut script = Script::new()
                .latency(Latency::LogNormal {
                    p50: Duration::from_millis(180),
                    p99: Duration::from_millis(600),
                })
                .seed(seed.wrapping_add(100 + i as u64));
            if kind == Provider::Brave {
                script = script.spell(self.spell(ProviderBehaviour::rate_limited(2), 0.60, 0.66));
            }
            if kind == Provider::Exa {
                // A CDN in front of the API takes the gateway for a bot: HTML, not JSON.
                script = script.spell(self.spell(ProviderBehaviour::Challenge, 0.70, 0.78));
            }
            if kind == Provider::Tavily {
                script = script.quota(TAVILY_PLAN_CALLS, ProviderBehaviour::Error(SimError::Quota));
            }
            provider.set_script(script);
        }
    }
}
