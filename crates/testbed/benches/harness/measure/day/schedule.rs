//! The scripted days: what goes wrong upstream and when, compressed into a few minutes, and the
//! gateway configuration scaled to the same clock. Each day is a [`Schedule`] (a name, a seed,
//! phases and spells), [`FIRST_DAY`] and [`SECOND_DAY`], turned into the simulators' scripts by one
//! builder ([`Day::install`]). Every window is a fraction of the day, so the smoke run replays the
//! same days, shorter.
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

/// A stretch of the day: from and until, as fractions of it.
#[derive(Debug, Clone, Copy)]
struct Window {
    from: f64,
    until: f64,
}

/// What an engine does during a spell.
#[derive(Debug, Clone)]
enum EngineTrouble {
    /// It fails, and SearXNG reports this reason.
    Fails(EngineFailure),
    /// Slow-blocked: it answers after 3.5 s, past SearXNG's engine timeout (reported as `timeout`).
    SlowBlocked,
}

impl EngineTrouble {
    /// A few words for the report.
    fn label(&self) -> &'static str {
        match self {
            EngineTrouble::Fails(EngineFailure::Captcha) => "CAPTCHA",
            EngineTrouble::Fails(EngineFailure::TooManyRequests) => "429",
            EngineTrouble::Fails(EngineFailure::AccessDenied) => "access denied",
            EngineTrouble::Fails(_) => "failing",
            EngineTrouble::SlowBlocked => "slow-blocked",
        }
    }
}

/// One engine's spell of trouble, as the per-spell attribution reads it: the engine, a few words,
/// and its window as fractions of the day.
#[derive(Debug, Clone, Copy)]
pub(super) struct SpellWindow {
    pub(super) engine: &'static str,
    pub(super) trouble: &'static str,
    pub(super) from: f64,
    pub(super) until: f64,
}

impl Schedule {
    /// Every engine spell, in the schedule's order.
    pub(super) fn engine_spells(&self) -> impl Iterator<Item = SpellWindow> + '_ {
        self.engines.iter().map(|spell| SpellWindow {
            engine: spell.engine,
            trouble: spell.trouble.label(),
            from: spell.window.from,
            until: spell.window.until,
        })
    }
}

/// One engine's spell of trouble.
#[derive(Debug, Clone)]
struct EngineSpell {
    engine: &'static str,
    trouble: EngineTrouble,
    window: Window,
}

/// What SearXNG itself does during a spell.
#[derive(Debug, Clone, Copy)]
enum SearxngTrouble {
    /// Every search is slow (log-normal p50 0.9 s / p99 2 s).
    Slow,
    /// Every search answers 500.
    Status500,
}

/// What a premium API does during a spell.
#[derive(Debug, Clone, Copy)]
enum ProviderTrouble {
    /// 429 with `Retry-After` in seconds.
    RateLimited { retry_after_secs: u64 },
    /// A CDN in front of the API takes the gateway for a bot: HTTP 200 with an HTML page.
    Challenge,
}

/// A named, seeded day of upstream trouble: its phases and every spell, as fractions of the day.
/// One builder ([`Day::install`]) turns any schedule into the simulators' scripts.
#[derive(Debug)]
pub(super) struct Schedule {
    /// The name its rows and lines carry.
    pub(super) name: &'static str,
    /// What sets it apart, for the report.
    pub(super) about: &'static str,
    /// The seed of its draws (latencies, the clients' query mix): the same day every run.
    pub(super) seed: u64,
    /// Its phases, in order; the last ends at 1.
    pub(super) phases: &'static [Phase],
    engines: &'static [EngineSpell],
    searxng: &'static [(SearxngTrouble, Window)],
    providers: &'static [(Provider, ProviderTrouble, Window)],
}

const fn window(from: f64, until: f64) -> Window {
    Window { from, until }
}

const fn engine(
    engine: &'static str,
    trouble: EngineTrouble,
    from: f64,
    until: f64,
) -> EngineSpell {
    EngineSpell {
        engine,
        trouble,
        window: window(from, until),
    }
}

const CAPTCHA: EngineTrouble = EngineTrouble::Fails(EngineFailure::Captcha);
const TOO_MANY_REQUESTS: EngineTrouble = EngineTrouble::Fails(EngineFailure::TooManyRequests);
const ACCESS_DENIED: EngineTrouble = EngineTrouble::Fails(EngineFailure::AccessDenied);
const SLOW_BLOCKED: EngineTrouble = EngineTrouble::SlowBlocked;

/// The first day (#15), the benchmark since: long spells with long gaps between them.
pub(super) const FIRST_DAY: Schedule = Schedule {
    name: "day 1",
    about: "long spells far apart",
    seed: 15,
    phases: &[
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
    ],
    engines: &[
        // A CAPTCHA wall, a short recovery, a second short wall that lifts while the engine is
        // still excluded from the first two trips: the breaker's growth decides how long a
        // recovered engine stays out.
        engine("google", CAPTCHA, 0.10, 0.16),
        engine("google", CAPTCHA, 0.20, 0.22),
        engine("google", CAPTCHA, 0.27, 0.28),
        engine("duckduckgo", TOO_MANY_REQUESTS, 0.14, 0.22),
        engine("duckduckgo", TOO_MANY_REQUESTS, 0.66, 0.70),
        engine("bing", SLOW_BLOCKED, 0.30, 0.36),
        engine("wikipedia", ACCESS_DENIED, 0.62, 0.74),
    ],
    searxng: &[
        (SearxngTrouble::Slow, window(0.42, 0.48)),
        (SearxngTrouble::Status500, window(0.52, 0.56)),
    ],
    providers: &[
        (
            Provider::Brave,
            ProviderTrouble::RateLimited {
                retry_after_secs: 2,
            },
            window(0.60, 0.66),
        ),
        (Provider::Exa, ProviderTrouble::Challenge, window(0.70, 0.78)),
    ],
};

/// The second day (#29): blocks that come back 0.5–1 % of the day (7–14 minutes) after the
/// engine recovered — about when a probe has just let it back in — in every kind of trouble the
/// first day has, SearXNG's 500s before its slow spell, the providers' outages the other way
/// round, and a healthy evening of 35 % of the day (the first day's: 20 %).
pub(super) const SECOND_DAY: Schedule = Schedule {
    name: "day 2",
    about: "blocks that come back soon after a recovery, a longer healthy evening",
    seed: 29,
    phases: &[
        Phase {
            name: "night: healthy",
            until: 0.06,
        },
        Phase {
            name: "morning: CAPTCHA, 429, access-denied and slow-blocked spells that come back soon after recovering",
            until: 0.38,
        },
        Phase {
            name: "midday: SearXNG 500s, then slow",
            until: 0.52,
        },
        Phase {
            name: "afternoon: Exa behind a bot challenge, then a Brave 429 burst; wikipedia and duckduckgo blocks that come back",
            until: 0.65,
        },
        Phase {
            name: "evening: healthy again, a long one",
            until: 1.00,
        },
    ],
    engines: &[
        engine("google", CAPTCHA, 0.08, 0.12),
        engine("google", CAPTCHA, 0.125, 0.14),
        engine("google", CAPTCHA, 0.15, 0.16),
        engine("duckduckgo", TOO_MANY_REQUESTS, 0.15, 0.19),
        engine("duckduckgo", TOO_MANY_REQUESTS, 0.195, 0.22),
        engine("duckduckgo", TOO_MANY_REQUESTS, 0.60, 0.62),
        engine("duckduckgo", TOO_MANY_REQUESTS, 0.625, 0.64),
        engine("bing", SLOW_BLOCKED, 0.26, 0.30),
        engine("bing", SLOW_BLOCKED, 0.31, 0.32),
        engine("wikipedia", ACCESS_DENIED, 0.33, 0.36),
        engine("wikipedia", ACCESS_DENIED, 0.53, 0.56),
        engine("wikipedia", ACCESS_DENIED, 0.565, 0.59),
    ],
    searxng: &[
        (SearxngTrouble::Status500, window(0.40, 0.43)),
        (SearxngTrouble::Slow, window(0.46, 0.50)),
    ],
    providers: &[
        (Provider::Exa, ProviderTrouble::Challenge, window(0.52, 0.57)),
        (
            Provider::Brave,
            ProviderTrouble::RateLimited {
                retry_after_secs: 2,
            },
            window(0.58, 0.63),
        ),
    ],
};

/// Every day the harness replays, in order.
pub(super) const DAYS: [&Schedule; 2] = [&FIRST_DAY, &SECOND_DAY];

/// A schedule replayed at a given length.
#[derive(Debug, Clone, Copy)]
pub(super) struct Day {
    /// What happens, and when.
    pub(super) schedule: &'static Schedule,
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
        let phases = self.schedule.phases;
        phases
            .iter()
            .position(|phase| fraction < phase.until)
            .unwrap_or(phases.len() - 1)
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

    /// A spell of `effect` during `window`, on the day's clock.
    fn during<F>(&self, spell: Spell<F>, window: Window) -> Spell<F> {
        spell.during(self.at(window.from), self.at(window.until))
    }

    /// Installs the schedule on the simulators; their clocks start now. The schedule's seed varies
    /// the draws.
    pub(super) fn install(&self, searxng: &SimulatedSearxng, providers: &[SimulatedProvider]) {
        let seed = self.schedule.seed;
        let engine_latency = Latency::LogNormal {
            p50: Duration::from_millis(60),
            p99: Duration::from_millis(300),
        };
        for (i, engine) in ENGINES.iter().enumerate() {
            let mut script = Script::new()
                .latency(engine_latency)
                .seed(seed.wrapping_add(i as u64));
            for spell in self.schedule.engines.iter().filter(|s| s.engine == *engine) {
                let effect = match &spell.trouble {
                    EngineTrouble::Fails(failure) => {
                        Spell::failing(EngineBehaviour::Fails(failure.clone()))
                    }
                    EngineTrouble::SlowBlocked => {
                        Spell::slow(Latency::Fixed(Duration::from_millis(3_500)))
                    }
                };
                script = script.spell(self.during(effect, spell.window));
            }
            searxng.set_engine(
                engine,
                EngineBehaviour::Ok {
                    results: RESULTS_PER_ENGINE,
                },
            );
            searxng.set_engine_script(engine, script);
        }
        let mut script = Script::new().seed(seed);
        for (trouble, window) in self.schedule.searxng {
            let effect = match trouble {
                SearxngTrouble::Slow => Spell::slow(Latency::LogNormal {
                    p50: Duration::from_millis(900),
                    p99: Duration::from_millis(2_000),
                }),
                SearxngTrouble::Status500 => Spell::failing(SearxngMode::Status(500)),
            };
            script = script.spell(self.during(effect, *window));
        }
        searxng.set_script(script);
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
            for (_, trouble, window) in self
                .schedule
                .providers
                .iter()
                .filter(|(whose, _, _)| *whose == kind)
            {
                let behaviour = match trouble {
                    ProviderTrouble::RateLimited { retry_after_secs } => {
                        ProviderBehaviour::rate_limited(*retry_after_secs)
                    }
                    ProviderTrouble::Challenge => ProviderBehaviour::Challenge,
                };
                script = script.spell(self.during(Spell::failing(behaviour), *window));
            }
            if kind == Provider::Tavily {
                script = script.quota(TAVILY_PLAN_CALLS, ProviderBehaviour::Error(SimError::Quota));
            }
            provider.set_script(script);
        }
    }
}

/// How soon after a recovery a block counts as coming back soon: 1 % of the day (about 14 minutes).
const SOON_AFTER_RECOVERY: f64 = 0.01;
/// Slack for comparing fractions written as decimals.
const EPSILON: f64 = 1e-9;

/// A check of the schedules: its name, a sentence, and the check, which says what is wrong.
pub(super) type Check = (&'static str, fn() -> Result<(), String>);

/// The schedules' own checks: pure, no socket, no clock. This bench has its own `main`, where
/// `#[test]` functions would never run; `cargo test` starts it without `--bench`, and it runs these.
pub(super) const CHECKS: [Check; 7] = [
    (
        "every_day_has_ordered_phases_that_end_with_the_day",
        every_day_has_ordered_phases_that_end_with_the_day,
    ),
    (
        "every_spell_lies_inside_the_day_and_names_a_simulated_engine",
        every_spell_lies_inside_the_day_and_names_a_simulated_engine,
    ),
    (
        "no_upstream_has_two_spells_at_once_nor_two_providers_an_outage_at_once",
        no_upstream_has_two_spells_at_once_nor_two_providers_an_outage_at_once,
    ),
    (
        "every_day_keeps_its_night_and_evening_healthy",
        every_day_keeps_its_night_and_evening_healthy,
    ),
    (
        "the_second_day_blocks_engines_again_soon_after_they_recover_and_the_first_does_not",
        the_second_day_blocks_engines_again_soon_after_they_recover_and_the_first_does_not,
    ),
    (
        "the_second_day_has_a_longer_healthy_evening_than_the_first",
        the_second_day_has_a_longer_healthy_evening_than_the_first,
    ),
    (
        "the_first_day_keeps_the_seed_and_phases_of_its_recorded_runs",
        the_first_day_keeps_the_seed_and_phases_of_its_recorded_runs,
    ),
];

/// Every window of a schedule with the upstream it concerns.
fn windows(schedule: &Schedule) -> Vec<(String, Window)> {
    let engines = schedule
        .engines
        .iter()
        .map(|spell| (format!("engine {}", spell.engine), spell.window));
    let searxng = schedule
        .searxng
        .iter()
        .map(|(_, window)| ("SearXNG".to_owned(), *window));
    let providers = schedule
        .providers
        .iter()
        .map(|(provider, _, window)| (format!("provider {}", provider.as_str()), *window));
    engines.chain(searxng).chain(providers).collect()
}

/// Blocks of an engine that start at most [`SOON_AFTER_RECOVERY`] after its previous one ended.
fn blocks_soon_after_recovery(schedule: &Schedule) -> usize {
    ENGINES
        .iter()
        .map(|engine| {
            let mut spells: Vec<Window> = schedule
                .engines
                .iter()
                .filter(|spell| spell.engine == *engine)
                .map(|spell| spell.window)
                .collect();
            spells.sort_by(|a, b| a.from.total_cmp(&b.from));
            spells
                .windows(2)
                .filter(|pair| pair[1].from - pair[0].until <= SOON_AFTER_RECOVERY + EPSILON)
                .count()
        })
        .sum()
}

/// The last phase's share of the day (checked healthy by
/// [`every_day_keeps_its_night_and_evening_healthy`]).
fn evening(schedule: &Schedule) -> f64 {
    let phases = schedule.phases;
    1.0 - phases
        .len()
        .checked_sub(2)
        .map_or(0.0, |before| phases[before].until)
}

fn every_day_has_ordered_phases_that_end_with_the_day() -> Result<(), String> {
    for schedule in DAYS {
        let ends: Vec<f64> = schedule.phases.iter().map(|p| p.until).collect();
        if ends.windows(2).any(|pair| pair[0] >= pair[1]) || ends.first().is_none_or(|e| *e <= 0.0)
        {
            return Err(format!("{}: phases end at {ends:?}", schedule.name));
        }
        if ends.last().is_none_or(|e| (e - 1.0).abs() > EPSILON) {
            return Err(format!(
                "{}: the last phase ends at {ends:?}",
                schedule.name
            ));
        }
    }
    Ok(())
}

fn every_spell_lies_inside_the_day_and_names_a_simulated_engine() -> Result<(), String> {
    for schedule in DAYS {
        for (upstream, window) in windows(schedule) {
            if !(0.0..=1.0).contains(&window.from)
                || window.until > 1.0
                || window.from >= window.until
            {
                return Err(format!("{}: {upstream} during {window:?}", schedule.name));
            }
        }
        if let Some(spell) = schedule
            .engines
            .iter()
            .find(|s| !ENGINES.contains(&s.engine))
        {
            return Err(format!("{}: no engine {}", schedule.name, spell.engine));
        }
        if let Some((provider, _, _)) = schedule
            .providers
            .iter()
            .find(|(p, ..)| !PROVIDERS.contains(p))
        {
            return Err(format!(
                "{}: no provider {}",
                schedule.name,
                provider.as_str()
            ));
        }
    }
    Ok(())
}

fn no_upstream_has_two_spells_at_once_nor_two_providers_an_outage_at_once() -> Result<(), String> {
    let overlap = |a: &Window, b: &Window| a.from < b.until && b.from < a.until;
    for schedule in DAYS {
        let all = windows(schedule);
        for (i, (upstream, window)) in all.iter().enumerate() {
            for (other, later) in &all[i + 1..] {
                let same = upstream == other;
                // With one fallback provider out, the other still answers a short SearXNG answer.
                let both_providers =
                    upstream.starts_with("provider") && other.starts_with("provider");
                if (same || both_providers) && overlap(window, later) {
                    return Err(format!(
                        "{}: {upstream} during {window:?} and {other} during {later:?}",
                        schedule.name
                    ));
                }
            }
        }
    }
    Ok(())
}

fn every_day_keeps_its_night_and_evening_healthy() -> Result<(), String> {
    for schedule in DAYS {
        let night_ends = schedule.phases.first().map_or(0.0, |p| p.until);
        let evening_starts = 1.0 - evening(schedule);
        for (upstream, window) in windows(schedule) {
            if window.from < night_ends - EPSILON || window.until > evening_starts + EPSILON {
                return Err(format!(
                    "{}: {upstream} during {window:?}, outside {night_ends}–{evening_starts}",
                    schedule.name
                ));
            }
        }
    }
    Ok(())
}

fn the_second_day_blocks_engines_again_soon_after_they_recover_and_the_first_does_not(
) -> Result<(), String> {
    let first = blocks_soon_after_recovery(&FIRST_DAY);
    let second = blocks_soon_after_recovery(&SECOND_DAY);
    if first == 0 && second >= 5 {
        Ok(())
    } else {
        Err(format!(
            "blocks within {SOON_AFTER_RECOVERY} of the day after a recovery: first day {first}, second day {second}"
        ))
    }
}

fn the_second_day_has_a_longer_healthy_evening_than_the_first() -> Result<(), String> {
    let (first, second) = (evening(&FIRST_DAY), evening(&SECOND_DAY));
    if second >= first + 0.10 {
        Ok(())
    } else {
        Err(format!("evenings: first day {first}, second day {second}"))
    }
}

fn the_first_day_keeps_the_seed_and_phases_of_its_recorded_runs() -> Result<(), String> {
    let ends: Vec<f64> = FIRST_DAY.phases.iter().map(|p| p.until).collect();
    if FIRST_DAY.seed == 15
        && ends == [0.10, 0.40, 0.60, 0.80, 1.00]
        && FIRST_DAY.engines.len() == 7
    {
        Ok(())
    } else {
        Err(format!(
            "first day: seed {}, phases ending {ends:?}, {} engine spells",
            FIRST_DAY.seed,
            FIRST_DAY.engines.len()
        ))
    }
}
