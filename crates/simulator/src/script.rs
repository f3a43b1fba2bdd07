//! Scripted misbehaviour shared by the simulators: how long an upstream takes, how often it fails,
//! when its quota runs out, and temporary *spells* (a CAPTCHA wall, a 429 burst, a slow patch) that
//! last a time window or a number of requests and then lift by themselves.
//!
//! A [`Script`] is generic over the *fault* a simulator can serve — [`super::searxng::SearxngMode`]
//! for a whole SearXNG instance, [`super::searxng::EngineBehaviour`] for one of its engines,
//! [`super::premium::ProviderBehaviour`] for a premium API — so the simulator keeps rendering every
//! fault with the upstream's own status, headers and body; the script only decides *which* fault,
//! and how late. Each request asks [`Script::decide`] once; the answer is a [`Decision`]. Requests
//! the script does not fail get the simulator's ordinary behaviour.
//!
//! Precedence, first match wins: an active failing [`Spell`] (in the order added), an exhausted
//! quota, then the error rate. The delay is the active slow spell's latency if any, else the base
//! [`Latency`]; it applies to failures too, as a real server takes time to refuse.
//!
//! Time is `tokio::time`, so tests drive windows with a paused clock. Randomness (error rate,
//! latency spread) comes from a seeded generator: the same script and requests give the same
//! decisions, which keeps benchmarks repeatable ([`Script::seed`] changes the sequence).

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::time::Instant;

/// The seed of a script that was not given one.
pub const DEFAULT_SEED: u64 = 0x5eed_5eed;

/// The standard normal quantile of 0.99: a log-normal latency's p99 is `p50 · e^(σ · Z99)`.
const Z99: f64 = 2.326_347_874_040_841;

/// Log-normal samples are capped at this multiple of the p99, so one unlucky draw cannot park a
/// request for hours.
const LOG_NORMAL_CAP: f64 = 10.0;

/// How long an upstream takes to answer one request.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Latency {
    /// Answers at once.
    #[default]
    Immediate,
    /// Always this long.
    Fixed(Duration),
    /// Evenly spread between `min` and `max` (inclusive).
    Uniform {
        /// The shortest wait.
        min: Duration,
        /// The longest wait.
        max: Duration,
    },
    /// Log-normal, the usual shape of real service latency: half the requests take at most `p50`,
    /// 99 % at most `p99`, with a long tail (capped at ten times `p99`).
    LogNormal {
        /// The median.
        p50: Duration,
        /// The 99th percentile (a value below `p50` is treated as `p50`: no spread).
        p99: Duration,
    },
}

impl Latency {
    /// Draws one delay.
    pub fn sample(&self, rng: &mut impl Rng) -> Duration {
        match *self {
            Latency::Immediate => Duration::ZERO,
            Latency::Fixed(delay) => delay,
            Latency::Uniform { min, max } => {
                let (low, high) = if min <= max { (min, max) } else { (max, min) };
                let low_ns = duration_nanos(low);
                let high_ns = duration_nanos(high);
                Duration::from_nanos(rng.random_range(low_ns..=high_ns))
            }
            Latency::LogNormal { p50, p99 } => {
                let median = p50.as_secs_f64();
                if median <= 0.0 {
                    return Duration::ZERO;
                }
                let spread = (p99.as_secs_f64() / median).max(1.0).ln() / Z99;
                if spread == 0.0 {
                    return p50;
                }
                let seconds = median * (spread * standard_normal(rng)).exp();
                let cap = p99.max(p50).as_secs_f64() * LOG_NORMAL_CAP;
                Duration::from_secs_f64(seconds.clamp(0.0, cap))
            }
        }
    }
}

fn duration_nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// One draw from N(0, 1) by the Box–Muller transform.
fn standard_normal(rng: &mut impl Rng) -> f64 {
    // `1 - u` is in (0, 1]: the logarithm stays finite.
    let radius = (-2.0 * (1.0 - rng.random::<f64>()).ln()).sqrt();
    let angle = std::f64::consts::TAU * rng.random::<f64>();
    radius * angle.cos()
}

/// What a spell does while it is active.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect<F> {
    /// Every request fails with this fault.
    Fail(F),
    /// Every request takes this long (instead of the script's base latency), then answers as usual.
    Slow(Latency),
}

/// When a spell becomes active, counted from when the script was installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Start {
    /// From the first request on.
    #[default]
    Immediately,
    /// From the first request at least this long after installation.
    After(Duration),
    /// After this many requests have been served normally or otherwise.
    AfterRequests(u64),
}

/// How long a spell lasts once active.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Span {
    /// Until the script is replaced.
    #[default]
    Forever,
    /// This many requests.
    Requests(u64),
    /// This long after it became active, however many requests arrive.
    Time(Duration),
    /// Until this long after the script was installed: a fixed window on the clock, whoever calls
    /// (an upstream that recovers while nobody asks it has still recovered).
    Until(Duration),
}

/// A temporary behaviour: an engine gets CAPTCHA'd for a minute, a provider answers 429 to the
/// next ten calls, SearXNG crawls for thirty seconds — then recovers by itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Spell<F> {
    effect: Effect<F>,
    start: Start,
    span: Span,
    /// When it became active (set by the first request it applied to).
    began: Option<Instant>,
    /// Requests it applied to.
    served: u64,
}

impl<F> Spell<F> {
    /// A spell that fails every request with `fault` (active at once, forever until bounded).
    pub fn failing(fault: F) -> Self {
        Self::new(Effect::Fail(fault))
    }

    /// A spell that makes every request take `latency` (active at once, forever until bounded).
    pub fn slow(latency: Latency) -> Self {
        Self::new(Effect::Slow(latency))
    }

    fn new(effect: Effect<F>) -> Self {
        Self {
            effect,
            start: Start::Immediately,
            span: Span::Forever,
            began: None,
            served: 0,
        }
    }

    /// Lasts `count` requests, then lifts.
    pub fn for_requests(mut self, count: u64) -> Self {
        self.span = Span::Requests(count);
        self
    }

    /// Lasts `window` from its first request, then lifts.
    pub fn for_time(mut self, window: Duration) -> Self {
        self.span = Span::Time(window);
        self
    }

    /// Active exactly from `from` to `until` after the script was installed, on the clock: it
    /// starts and lifts whether or not requests arrive (a CAPTCHA wall from 10:00 to 10:40).
    pub fn during(mut self, from: Duration, until: Duration) -> Self {
        self.start = Start::After(from);
        self.span = Span::Until(until);
        self
    }

    /// Starts with the first request at least `delay` after the script was installed.
    pub fn starting_after(mut self, delay: Duration) -> Self {
        self.start = Start::After(delay);
        self
    }

    /// Starts once `count` requests have gone by.
    pub fn starting_after_requests(mut self, count: u64) -> Self {
        self.start = Start::AfterRequests(count);
        self
    }

    /// What it does.
    pub fn effect(&self) -> &Effect<F> {
        &self.effect
    }

    /// Whether it applies to the request numbered `call` (1-based) arriving at `now`; counts it.
    fn applies(&mut self, call: u64, now: Instant, installed: Instant) -> bool {
        if !self.is_active(call, now, installed) {
            return false;
        }
        self.began.get_or_insert(now);
        self.served += 1;
        true
    }

    /// Whether it would apply to the request numbered `call` arriving at `now`, without counting.
    fn is_active(&self, call: u64, now: Instant, installed: Instant) -> bool {
        if self.is_over(now, installed) {
            return false;
        }
        let started = match self.start {
            Start::Immediately => true,
            Start::After(delay) => now >= installed + delay,
            Start::AfterRequests(count) => call > count,
        };
        if !started {
            return false;
        }
        let began = self.began.unwrap_or(now);
        if let Span::Time(window) = self.span {
            if now >= began + window {
                return false;
            }
        }
        true
    }

    /// Whether it has lifted for good.
    fn is_over(&self, now: Instant, installed: Instant) -> bool {
        match (self.span, self.began) {
            (Span::Forever, _) => false,
            (Span::Requests(count), _) => self.served >= count,
            (Span::Time(window), Some(began)) => now >= began + window,
            (Span::Time(_), None) => false,
            (Span::Until(end), _) => now >= installed + end,
        }
    }
}

/// What one request gets.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision<F> {
    /// How long to wait before answering.
    pub delay: Duration,
    /// The fault to serve; `None` means the simulator's ordinary behaviour.
    pub fault: Option<F>,
}

impl<F> Default for Decision<F> {
    fn default() -> Self {
        Self {
            delay: Duration::ZERO,
            fault: None,
        }
    }
}

/// The scripted behaviour of one simulated upstream. Build it, then hand it to the simulator
/// (`set_script`, `set_engine_script`); the simulator asks it once per request.
///
/// ```
/// use std::time::Duration;
/// use simulator::premium::{ProviderBehaviour, SimError};
/// use simulator::script::{Latency, Script, Spell};
///
/// let script: Script<ProviderBehaviour> = Script::new()
///     .latency(Latency::LogNormal { p50: Duration::from_millis(80), p99: Duration::from_millis(400) })
///     .errors(0.01, ProviderBehaviour::Error(SimError::Server))
///     .quota(1_000, ProviderBehaviour::Error(SimError::Quota))
///     .spell(Spell::failing(ProviderBehaviour::rate_limited(5)).for_time(Duration::from_secs(5)));
/// ```
#[derive(Debug, Clone)]
pub struct Script<F> {
    latency: Latency,
    /// Independent slices of the unit interval: a draw below the running sum picks that fault.
    errors: Vec<(f64, F)>,
    /// After this many requests, every further one fails with the fault.
    quota: Option<(u64, F)>,
    spells: Vec<Spell<F>>,
    rng: StdRng,
    installed: Instant,
    calls: u64,
}

impl<F> Default for Script<F> {
    fn default() -> Self {
        Self {
            latency: Latency::Immediate,
            errors: Vec::new(),
            quota: None,
            spells: Vec::new(),
            rng: StdRng::seed_from_u64(DEFAULT_SEED),
            installed: Instant::now(),
            calls: 0,
        }
    }
}

impl<F: Clone> Script<F> {
    /// A script that changes nothing: no delay, no failures.
    pub fn new() -> Self {
        Self::default()
    }

    /// The base latency of every request.
    pub fn latency(mut self, latency: Latency) -> Self {
        self.latency = latency;
        self
    }

    /// A `fraction` (0–1) of requests fail with `fault`, chosen at random. Several calls add
    /// independent slices (their fractions add up; beyond 1 everything fails).
    pub fn errors(mut self, fraction: f64, fault: F) -> Self {
        self.errors.push((fraction.clamp(0.0, 1.0), fault));
        self
    }

    /// The first `allowed` requests are served; every later one fails with `fault` (a monthly quota
    /// or prepaid credits running out). Install a new script to refill it.
    pub fn quota(mut self, allowed: u64, fault: F) -> Self {
        self.quota = Some((allowed, fault));
        self
    }

    /// Adds a spell. Spells are checked in the order added.
    pub fn spell(mut self, spell: Spell<F>) -> Self {
        self.spells.push(spell);
        self
    }

    /// Seeds the random choices (error draws, latency spread).
    pub fn seed(mut self, seed: u64) -> Self {
        self.rng = StdRng::seed_from_u64(seed);
        self
    }

    /// Restarts the clock and the counters: spells and the quota count from now. Simulators call
    /// this when the script is installed.
    pub fn arm(&mut self) {
        self.installed = Instant::now();
        self.calls = 0;
        for spell in &mut self.spells {
            spell.began = None;
            spell.served = 0;
        }
    }

    /// Requests decided so far.
    pub fn calls(&self) -> u64 {
        self.calls
    }

    /// Whether a spell is still pending or active at `now` (false once every spell has lifted).
    pub fn has_live_spells(&self) -> bool {
        let now = Instant::now();
        self.spells
            .iter()
            .any(|spell| !spell.is_over(now, self.installed))
    }

    /// The effect the next request would get from a spell now (the first failing one, else the
    /// first slow one), without deciding it: an observation, for benchmarks that score what a
    /// client did against what the upstream was doing at the time. Error rates and quotas are
    /// left out (they are chance and budget, not a state).
    pub fn active_effect(&self) -> Option<&Effect<F>> {
        let now = Instant::now();
        let call = self.calls + 1;
        let mut active = self
            .spells
            .iter()
            .filter(|spell| spell.is_active(call, now, self.installed))
            .map(Spell::effect);
        let first = active.clone().find(|e| matches!(e, Effect::Fail(_)));
        first.or_else(|| active.next())
    }

    /// Decides the next request.
    pub fn decide(&mut self) -> Decision<F> {
        self.calls += 1;
        let call = self.calls;
        let now = Instant::now();
        let installed = self.installed;
        // Draw both random numbers every time, so one spell does not shift the sequence of the rest.
        let base_delay = self.latency.sample(&mut self.rng);
        let draw: f64 = self.rng.random();

        let mut fault = None;
        let mut slow = None;
        for spell in &mut self.spells {
            if !spell.applies(call, now, installed) {
                continue;
            }
            match &spell.effect {
                Effect::Fail(failure) if fault.is_none() => fault = Some(failure.clone()),
                Effect::Slow(latency) if slow.is_none() => slow = Some(*latency),
                Effect::Fail(_) | Effect::Slow(_) => {}
            }
        }
        if fault.is_none() {
            if let Some((allowed, failure)) = &self.quota {
                if call > *allowed {
                    fault = Some(failure.clone());
                }
            }
        }
        if fault.is_none() {
            let mut threshold = 0.0;
            for (fraction, failure) in &self.errors {
                threshold += fraction;
                if draw < threshold {
                    fault = Some(failure.clone());
                    break;
                }
            }
        }
        let delay = match slow {
            Some(latency) => latency.sample(&mut self.rng),
            None => base_delay,
        };
        Decision { delay, fault }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn faults(script: &mut Script<&'static str>, count: usize) -> Vec<Option<&'static str>> {
        (0..count).map(|_| script.decide().fault).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn a_clock_window_starts_and_lifts_on_time_whoever_calls() {
        let mut script = Script::new().spell(
            Spell::failing("captcha").during(Duration::from_secs(10), Duration::from_secs(20)),
        );
        script.arm();
        assert_eq!(script.active_effect(), None);
        tokio::time::advance(Duration::from_secs(10)).await;
        assert_eq!(script.active_effect(), Some(&Effect::Fail("captcha")));
        assert_eq!(script.calls(), 0, "observing decides nothing");
        // Nobody called during the window: it lifted anyway.
        tokio::time::advance(Duration::from_secs(10)).await;
        assert_eq!(script.active_effect(), None);
        assert_eq!(faults(&mut script, 1), [None]);
        assert!(!script.has_live_spells());
    }

    #[tokio::test(start_paused = true)]
    async fn an_empty_script_neither_delays_nor_fails() {
        let mut script: Script<&str> = Script::new();

        assert_eq!(faults(&mut script, 100), vec![None; 100]);
        assert_eq!(script.decide().delay, Duration::ZERO);
        assert_eq!(script.calls(), 101);
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_spell_fails_that_many_requests_then_recovers() {
        let mut script = Script::new().spell(Spell::failing("captcha").for_requests(3));

        assert_eq!(
            faults(&mut script, 5),
            [
                Some("captcha"),
                Some("captcha"),
                Some("captcha"),
                None,
                None
            ]
        );
        assert!(!script.has_live_spells());
    }

    #[tokio::test(start_paused = true)]
    async fn a_timed_spell_lasts_its_window_from_its_first_request() {
        let mut script =
            Script::new().spell(Spell::failing("429").for_time(Duration::from_secs(1)));
        tokio::time::advance(Duration::from_secs(5)).await;

        assert_eq!(
            script.decide().fault,
            Some("429"),
            "starts at first request"
        );
        tokio::time::advance(Duration::from_millis(999)).await;
        assert_eq!(script.decide().fault, Some("429"));
        tokio::time::advance(MS).await;
        assert_eq!(script.decide().fault, None, "lifted after one second");
        assert!(!script.has_live_spells());
    }

    #[tokio::test(start_paused = true)]
    async fn a_delayed_spell_waits_for_its_start_time() {
        let mut script = Script::new().spell(
            Spell::failing("slow down")
                .starting_after(Duration::from_secs(2))
                .for_requests(1),
        );

        assert_eq!(script.decide().fault, None);
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(faults(&mut script, 2), [Some("slow down"), None]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_spell_can_start_after_a_number_of_requests() {
        let mut script = Script::new().spell(
            Spell::failing("x")
                .starting_after_requests(2)
                .for_requests(2),
        );

        assert_eq!(
            faults(&mut script, 5),
            [None, None, Some("x"), Some("x"), None]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_first_active_failing_spell_wins_and_every_active_spell_counts_the_request() {
        let mut script = Script::new()
            .spell(Spell::failing("first").for_requests(1))
            .spell(Spell::failing("second").for_requests(2));

        assert_eq!(
            faults(&mut script, 3),
            [Some("first"), Some("second"), None]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_quota_serves_that_many_requests_then_fails_every_later_one() {
        let mut script = Script::new().quota(2, "quota");

        assert_eq!(
            faults(&mut script, 4),
            [None, None, Some("quota"), Some("quota")]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn arming_refills_the_quota_and_restarts_spells() {
        let mut script = Script::new()
            .quota(1, "quota")
            .spell(Spell::failing("spell").for_requests(1));
        assert_eq!(faults(&mut script, 2), [Some("spell"), Some("quota")]);

        script.arm();

        assert_eq!(faults(&mut script, 2), [Some("spell"), Some("quota")]);
    }

    #[tokio::test(start_paused = true)]
    async fn an_error_rate_fails_about_that_fraction_and_repeats_with_the_same_seed() {
        let run = |seed| {
            let mut script = Script::new().errors(0.2, "500").seed(seed);
            faults(&mut script, 10_000)
        };

        let first = run(7);
        let failed = first.iter().filter(|fault| fault.is_some()).count();

        assert!((1_800..=2_200).contains(&failed), "{failed} of 10000");
        assert_eq!(first, run(7));
        assert_ne!(first, run(8));
    }

    #[tokio::test(start_paused = true)]
    async fn error_slices_add_up_and_pick_their_own_faults() {
        let mut script = Script::new().errors(0.5, "a").errors(0.5, "b");

        let decided = faults(&mut script, 1_000);

        assert!(decided.iter().all(Option::is_some));
        let a = decided.iter().filter(|f| **f == Some("a")).count();
        assert!((400..=600).contains(&a), "{a}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_spell_replaces_the_base_latency_while_it_lasts() {
        let mut script: Script<&str> = Script::new()
            .latency(Latency::Fixed(10 * MS))
            .spell(Spell::slow(Latency::Fixed(Duration::from_secs(2))).for_requests(1));

        assert_eq!(script.decide().delay, Duration::from_secs(2));
        assert_eq!(script.decide().delay, 10 * MS);
    }

    #[tokio::test(start_paused = true)]
    async fn failures_take_the_scripted_latency_too() {
        let mut script = Script::new()
            .latency(Latency::Fixed(30 * MS))
            .spell(Spell::failing("down"));

        let decision = script.decide();

        assert_eq!(decision.delay, 30 * MS);
        assert_eq!(decision.fault, Some("down"));
    }

    #[test]
    fn a_uniform_latency_stays_within_its_bounds() {
        let mut rng = StdRng::seed_from_u64(1);
        let latency = Latency::Uniform {
            min: 5 * MS,
            max: 9 * MS,
        };

        for _ in 0..1_000 {
            let delay = latency.sample(&mut rng);
            assert!((5 * MS..=9 * MS).contains(&delay), "{delay:?}");
        }
    }

    #[test]
    fn a_log_normal_latency_has_the_asked_median_and_p99() {
        let mut rng = StdRng::seed_from_u64(3);
        let latency = Latency::LogNormal {
            p50: 20 * MS,
            p99: 200 * MS,
        };

        let mut samples: Vec<Duration> = (0..20_000).map(|_| latency.sample(&mut rng)).collect();
        samples.sort();

        let p50 = samples[samples.len() / 2].as_secs_f64() * 1e3;
        let p99 = samples[samples.len() * 99 / 100].as_secs_f64() * 1e3;
        assert!((18.0..=22.0).contains(&p50), "p50 {p50} ms");
        assert!((170.0..=235.0).contains(&p99), "p99 {p99} ms");
        assert!(samples.last().unwrap() <= &(2_000 * MS), "capped");
    }

    #[test]
    fn a_log_normal_latency_without_spread_is_its_median() {
        let mut rng = StdRng::seed_from_u64(3);
        let latency = Latency::LogNormal {
            p50: 20 * MS,
            p99: 10 * MS,
        };

        assert_eq!(latency.sample(&mut rng), 20 * MS);
    }
}
