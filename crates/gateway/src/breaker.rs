//! Circuit breakers: one per premium provider and one per SearXNG engine, so an upstream that told
//! us to stop, or keeps failing, is left alone for a while instead of being hammered.
//!
//! Each [`Breaker`] is a small state machine ("Closed = calls flow"):
//!
//! - **Closed**: every call is admitted. A stop signal (auth, quota, rate limit, access denied,
//!   CAPTCHA) trips it at once; transient failures trip it after `failure_threshold` in a row.
//! - **Open**: every call is rejected until the open period ends. The period is the longer of the
//!   server's own hint and an exponential backoff (`open_base` doubled per consecutive trip, capped
//!   at `open_max`, plus jitter).
//! - **HalfOpen**: the open period has elapsed. Exactly one caller is admitted as the probe; its
//!   success closes the breaker, its failure reopens it for longer.
//!
//! Admission hands out a [`Permit`]. A probe whose caller is cancelled drops its permit, which
//! frees the probe slot instead of wedging the breaker half-open for good.
//!
//! The [`BreakerBoard`] owns every breaker, keyed by [`BreakerKind`] and name, so SearXNG's `brave`
//! engine and the Brave API never share a breaker or a metric series. Time comes from
//! `tokio::time`, so the tests drive it with a paused clock.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use prometheus::{IntCounter, IntCounterVec, IntGauge};
use serde::{Serialize, Serializer};
use tokio::time::Instant;

use crate::metrics::Metrics;
use crate::upstream::{ErrorClass, UpstreamError};

/// Where a breaker stands. The gauge values are part of the metrics contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakerState {
    /// Calls flow.
    Closed,
    /// The open period is over; one probe call decides whether to close again.
    HalfOpen,
    /// Calls are rejected until the open period ends.
    Open,
}

impl BreakerState {
    /// The `circuit_breaker_state` gauge value: 0 closed, 1 half-open, 2 open.
    pub fn as_gauge(self) -> i64 {
        match self {
            Self::Closed => 0,
            Self::HalfOpen => 1,
            Self::Open => 2,
        }
    }

    /// The name used in logs and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::HalfOpen => "half_open",
            Self::Open => "open",
        }
    }
}

/// Why a breaker tripped: the `reason` label of `circuit_breaker_trips_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TripReason {
    /// HTTP 429 or SearXNG's "too many requests".
    RateLimited,
    /// HTTP 403, a firewall, or SearXNG's "access denied" / "blocked".
    AccessDenied,
    /// SearXNG reported the engine hit a CAPTCHA.
    Captcha,
    /// Bad, missing or revoked API key.
    Auth,
    /// Credits or monthly quota exhausted.
    Quota,
    /// `failure_threshold` transient failures in a row, or a failed half-open probe.
    Transient,
}

impl TripReason {
    /// Every reason, for tests and exhaustive metric initialisation.
    pub const ALL: [TripReason; 6] = [
        Self::RateLimited,
        Self::AccessDenied,
        Self::Captcha,
        Self::Auth,
        Self::Quota,
        Self::Transient,
    ];

    /// The metric label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RateLimited => "rate_limited",
            Self::AccessDenied => "access_denied",
            Self::Captcha => "captcha",
            Self::Auth => "auth",
            Self::Quota => "quota",
            Self::Transient => "transient",
        }
    }
}

/// What one call tells the breaker about its upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// The upstream answered properly.
    Success,
    /// The upstream told us to stop: trip at once, for at least `retry_after` if it said so.
    Stop {
        /// The closed-set reason, used as the trip metric label.
        reason: TripReason,
        /// The server's hint on when to come back (`Retry-After`, a rate-limit window reset).
        retry_after: Option<Duration>,
    },
    /// A failure that may pass (5xx, timeout, connection error, schema drift): trips only when
    /// `failure_threshold` arrive in a row.
    Transient,
    /// Says nothing about the upstream's health (our own malformed request, a cancelled call).
    Neutral,
}

impl Signal {
    /// A stop signal without a server hint.
    pub fn stop(reason: TripReason) -> Self {
        Self::Stop {
            reason,
            retry_after: None,
        }
    }

    /// What a classified upstream failure means for the breaker.
    pub fn from_error(err: &UpstreamError) -> Self {
        let stop = |reason| Self::Stop {
            reason,
            retry_after: err.retry_after,
        };
        // Exhaustive on purpose: a new error class must decide how it affects breakers.
        match err.class {
            ErrorClass::Auth => stop(TripReason::Auth),
            ErrorClass::Quota => stop(TripReason::Quota),
            ErrorClass::RateLimited => stop(TripReason::RateLimited),
            ErrorClass::Blocked => stop(TripReason::AccessDenied),
            // A 2xx in an unexpected shape is schema drift on their side: an outage for us.
            ErrorClass::Server
            | ErrorClass::Timeout
            | ErrorClass::Connect
            | ErrorClass::Truncated
            | ErrorClass::Malformed => Self::Transient,
            ErrorClass::BadRequest
            | ErrorClass::TooLarge
            | ErrorClass::Redirect
            | ErrorClass::Degraded
            | ErrorClass::HttpStatus => Self::Neutral,
        }
    }
}

/// How breakers trip and how long they stay open. Shared by every breaker of a board.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BreakerConfig {
    /// Open period of the first trip (`BREAKER_OPEN_SECONDS`).
    pub open_base: Duration,
    /// Cap of the doubling open period (`BREAKER_MAX_OPEN_SECONDS`); a server hint may exceed it.
    pub open_max: Duration,
    /// Transient failures in a row that trip (`BREAKER_FAILURE_THRESHOLD`); 0 behaves as 1.
    pub failure_threshold: u32,
    /// Fraction (0..=1) of the backoff added at random, so breakers tripped together do not
    /// probe together. 0 disables jitter (tests).
    pub jitter: f64,
    /// After this long continuously closed, the next trip starts again from `open_base`.
    pub healthy_after: Duration,
}

impl Default for BreakerConfig {
    /// The defaults of GATEWAY.md §2, with 20 % jitter and growth forgotten after an hour healthy.
    fn default() -> Self {
        Self {
            open_base: Duration::from_secs(300),
            open_max: Duration::from_secs(3600),
            failure_threshold: 5,
            jitter: 0.2,
            healthy_after: Duration::from_secs(3600),
        }
    }
}

impl BreakerConfig {
    /// How long a breaker stays open after its `consecutive_trips`-th trip in a row.
    fn open_period(&self, consecutive_trips: u32, hint: Option<Duration>) -> Duration {
        let doublings = consecutive_trips.saturating_sub(1).min(31);
        let backoff = self
            .open_base
            .checked_mul(1 << doublings)
            .map_or(self.open_max, |d| d.min(self.open_max));
        let backoff = backoff.saturating_add(self.jitter_for(backoff));
        // The hint is not capped: a quota that resets in a month keeps the provider parked.
        hint.map_or(backoff, |hint| hint.max(backoff))
    }

    fn jitter_for(&self, backoff: Duration) -> Duration {
        if self.jitter.is_nan() || self.jitter <= 0.0 {
            return Duration::ZERO;
        }
        let fraction = self.jitter.min(1.0) * rand::random::<f64>();
        Duration::try_from_secs_f64(backoff.as_secs_f64() * fraction).unwrap_or(Duration::ZERO)
    }
}

/// Which namespace a breaker lives in: the `kind` metric label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakerKind {
    /// A premium search API (Brave, Exa, Jina, Tavily).
    Provider,
    /// A SearXNG engine, named as SearXNG's `/config` reports it.
    Engine,
    /// The SearXNG instance as a whole: its cooldown (`SEARXNG_FAIL_THRESHOLD`), kept off the board.
    Searxng,
}

impl BreakerKind {
    /// The kinds a [`BreakerBoard`] holds (the SearXNG cooldown lives outside it).
    pub const ALL: [BreakerKind; 2] = [Self::Provider, Self::Engine];

    /// The `kind` label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Provider => "provider",
            Self::Engine => "engine",
            Self::Searxng => "searxng",
        }
    }
}

/// A point-in-time view of one breaker, for logs and diagnostics.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BreakerSnapshot {
    /// The state now (an elapsed open period reads as half-open).
    pub state: BreakerState,
    /// Why it tripped, while it is not closed.
    pub reason: Option<TripReason>,
    /// Time left before the breaker turns half-open; only while open.
    #[serde(rename = "open_for_seconds", serialize_with = "seconds")]
    pub open_for: Option<Duration>,
    /// Trips since the process started.
    pub trips: u64,
    /// Transient failures since the last success.
    pub consecutive_failures: u32,
}

fn seconds<S: Serializer>(duration: &Option<Duration>, serializer: S) -> Result<S::Ok, S::Error> {
    duration.map(|d| d.as_secs_f64()).serialize(serializer)
}

/// One upstream's breaker. Shared as `Arc<Breaker>`; obtained from [`BreakerBoard::get`].
pub struct Breaker {
    kind: BreakerKind,
    name: String,
    config: BreakerConfig,
    inner: Mutex<Inner>,
    series: Series,
}

/// The breaker's metric handles, resolved once for its labels.
struct Series {
    state: IntGauge,
    rejections: IntCounter,
    recoveries: IntCounter,
    // Resolved per trip: trips are rare, and eager series would multiply by every engine.
    trips: IntCounterVec,
}

#[derive(Debug)]
struct Inner {
    phase: Phase,
    reason: Option<TripReason>,
    consecutive_failures: u32,
    /// Trips without a healthy spell in between: the exponent of the backoff.
    consecutive_trips: u32,
    trips: u64,
    /// Open because the upstream reported a spent window on a successful call, not because it
    /// failed: its end is not a recovery.
    paused: bool,
}

#[derive(Debug, Clone, Copy)]
enum Phase {
    Closed {
        since: Instant,
    },
    /// Half-open is not stored: it is `Open` once `until` has passed, so it needs no timer.
    Open {
        until: Instant,
        probe_in_flight: bool,
    },
}

/// What a recorded signal changed, for the metrics.
enum Transition {
    None,
    Tripped(TripReason),
    Recovered,
}

impl Inner {
    fn state_at(&self, now: Instant) -> BreakerState {
        match self.phase {
            Phase::Closed { .. } => BreakerState::Closed,
            Phase::Open { until, .. } if now < until => BreakerState::Open,
            Phase::Open { .. } => BreakerState::HalfOpen,
        }
    }

    fn trip(
        &mut self,
        now: Instant,
        reason: TripReason,
        hint: Option<Duration>,
        config: &BreakerConfig,
    ) -> Transition {
        if let Phase::Closed { since } = self.phase {
            if now.saturating_duration_since(since) >= config.healthy_after {
                self.consecutive_trips = 0;
            }
        }
        self.consecutive_trips = self.consecutive_trips.saturating_add(1);
        self.trips += 1;
        self.paused = false;
        self.reason = Some(reason);
        let period = config.open_period(self.consecutive_trips, hint);
        self.phase = Phase::Open {
            until: deadline(now, period),
            probe_in_flight: false,
        };
        Transition::Tripped(reason)
    }

    fn close(&mut self, now: Instant) -> Transition {
        self.phase = Phase::Closed { since: now };
        self.reason = None;
        self.consecutive_failures = 0;
        if std::mem::take(&mut self.paused) {
            Transition::None
        } else {
            Transition::Recovered
        }
    }

    /// The half-open probe reported.
    fn probe_result(&mut self, now: Instant, signal: Signal, config: &BreakerConfig) -> Transition {
        match signal {
            Signal::Success => self.close(now),
            Signal::Stop {
                reason,
                retry_after,
            } => self.trip(now, reason, retry_after, config),
            Signal::Transient => {
                self.consecutive_failures = self.consecutive_failures.saturating_add(1);
                self.trip(now, TripReason::Transient, None, config)
            }
            Signal::Neutral => {
                self.release_probe();
                Transition::None
            }
        }
    }

    /// Any other call reported: admitted while closed, or not tied to a permit.
    fn call_result(&mut self, now: Instant, signal: Signal, config: &BreakerConfig) -> Transition {
        match (self.phase, signal) {
            (_, Signal::Neutral) => Transition::None,
            (Phase::Closed { .. }, Signal::Success) => {
                self.consecutive_failures = 0;
                Transition::None
            }
            (
                Phase::Closed { .. },
                Signal::Stop {
                    reason,
                    retry_after,
                },
            ) => self.trip(now, reason, retry_after, config),
            (Phase::Closed { .. }, Signal::Transient) => {
                self.consecutive_failures = self.consecutive_failures.saturating_add(1);
                if self.consecutive_failures >= config.failure_threshold.max(1) {
                    self.trip(now, TripReason::Transient, None, config)
                } else {
                    Transition::None
                }
            }
            // A later server hint while open (a straggler's 429, a "park me" header) extends the
            // open period, without counting a trip: the upstream was already left alone.
            (
                Phase::Open {
                    until,
                    probe_in_flight,
                },
                Signal::Stop {
                    retry_after: Some(hint),
                    ..
                },
            ) => {
                self.phase = Phase::Open {
                    until: until.max(deadline(now, hint)),
                    probe_in_flight,
                };
                Transition::None
            }
            // Calls admitted before the trip prove nothing now; only the probe decides.
            (Phase::Open { .. }, _) => Transition::None,
        }
    }

    fn release_probe(&mut self) {
        if let Phase::Open {
            probe_in_flight, ..
        } = &mut self.phase
        {
            *probe_in_flight = false;
        }
    }
}

/// `now + period`, saturating instead of panicking on an absurd server hint.
fn deadline(now: Instant, period: Duration) -> Instant {
    const CENTURY: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
    now.checked_add(period)
        .or_else(|| now.checked_add(CENTURY))
        .unwrap_or(now)
}

impl Breaker {
    /// A breaker outside any board (the SearXNG cooldown, which has its own configuration).
    pub fn new(kind: BreakerKind, name: &str, config: BreakerConfig, metrics: &Metrics) -> Self {
        let labels = [name, kind.as_str()];
        let series = Series {
            state: metrics.breaker_state.with_label_values(&labels),
            rejections: metrics.breaker_rejections.with_label_values(&labels),
            recoveries: metrics.breaker_recoveries.with_label_values(&labels),
            trips: metrics.breaker_trips.clone(),
        };
        series.state.set(BreakerState::Closed.as_gauge());
        Self {
            kind,
            name: name.to_owned(),
            config,
            inner: Mutex::new(Inner {
                phase: Phase::Closed {
                    since: Instant::now(),
                },
                reason: None,
                consecutive_failures: 0,
                consecutive_trips: 0,
                trips: 0,
                paused: false,
            }),
            series,
        }
    }

    /// Which namespace this breaker belongs to.
    pub fn kind(&self) -> BreakerKind {
        self.kind
    }

    /// The provider or engine name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The state now, without admitting anything (for planning, e.g. which engines to exclude).
    pub fn state(&self) -> BreakerState {
        self.lock().state_at(Instant::now())
    }

    /// Asks to make one call. `None` means rejected (counted in `circuit_breaker_rejections_total`):
    /// the breaker is open, or half-open with its one probe already out. Call this only when the
    /// call would really be made, so the rejection count means what it says.
    #[must_use = "a permit admits a call; report its outcome with `Permit::record`"]
    pub fn admit(self: &Arc<Self>) -> Option<Permit> {
        let now = Instant::now();
        let mut inner = self.lock();
        let is_probe = match &mut inner.phase {
            Phase::Closed { .. } => false,
            Phase::Open {
                until,
                probe_in_flight,
            } if now >= *until && !*probe_in_flight => {
                *probe_in_flight = true;
                true
            }
            Phase::Open { .. } => {
                self.series.rejections.inc();
                return None;
            }
        };
        self.publish(&inner, now);
        Some(Permit {
            breaker: Arc::clone(self),
            is_probe,
        })
    }

    /// Records a signal not tied to a permit, e.g. a provider whose successful answer says its
    /// quota is spent. A success here never closes an open breaker: only the probe does.
    pub fn record(&self, signal: Signal) {
        self.apply(signal, false);
    }

    /// The state, reason and counters now.
    pub fn snapshot(&self) -> BreakerSnapshot {
        let now = Instant::now();
        let inner = self.lock();
        let open_for = match inner.phase {
            Phase::Open { until, .. } if now < until => Some(until - now),
            _ => None,
        };
        BreakerSnapshot {
            state: inner.state_at(now),
            reason: inner.reason,
            open_for,
            trips: inner.trips,
            consecutive_failures: inner.consecutive_failures,
        }
    }

    /// Parks the upstream for exactly `period` without counting a trip or growing the backoff: a
    /// rate-limit window the upstream reported spent on a *successful* call (Brave's per-second
    /// window at 0). When it ends, one caller goes first as usual; its success is not a recovery.
    pub fn pause(&self, reason: TripReason, period: Duration) {
        let now = Instant::now();
        let mut inner = self.lock();
        match inner.phase {
            Phase::Closed { .. } => {
                inner.phase = Phase::Open {
                    until: deadline(now, period),
                    probe_in_flight: false,
                };
                inner.reason = Some(reason);
                inner.paused = true;
            }
            Phase::Open {
                until,
                probe_in_flight,
            } => {
                inner.phase = Phase::Open {
                    until: until.max(deadline(now, period)),
                    probe_in_flight,
                };
            }
        }
        self.publish(&inner, now);
    }

    /// Sets the state gauge from the state now, so an elapsed open period shows as half-open.
    pub fn refresh_metrics(&self) {
        let now = Instant::now();
        let inner = self.lock();
        self.publish(&inner, now);
    }

    fn apply(&self, signal: Signal, from_probe: bool) {
        let now = Instant::now();
        let mut inner = self.lock();
        let probe_out = matches!(
            inner.phase,
            Phase::Open {
                probe_in_flight: true,
                ..
            }
        );
        let transition = if from_probe && probe_out {
            inner.probe_result(now, signal, &self.config)
        } else {
            inner.call_result(now, signal, &self.config)
        };
        match transition {
            Transition::None => {}
            Transition::Tripped(reason) => {
                self.series
                    .trips
                    .with_label_values(&[self.name.as_str(), self.kind.as_str(), reason.as_str()])
                    .inc();
                tracing::warn!(
                    kind = self.kind.as_str(),
                    name = %self.name,
                    reason = reason.as_str(),
                    trips = inner.trips,
                    "circuit breaker opened"
                );
            }
            Transition::Recovered => {
                self.series.recoveries.inc();
                tracing::info!(kind = self.kind.as_str(), name = %self.name, "circuit breaker closed");
            }
        }
        self.publish(&inner, now);
    }

    fn release_probe(&self) {
        let now = Instant::now();
        let mut inner = self.lock();
        inner.release_probe();
        self.publish(&inner, now);
    }

    /// Called with the lock held, so concurrent transitions reach the gauge in the same order.
    fn publish(&self, inner: &Inner, now: Instant) {
        self.series.state.set(inner.state_at(now).as_gauge());
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Every critical section leaves `Inner` consistent, so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for Breaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Breaker")
            .field("kind", &self.kind)
            .field("name", &self.name)
            .field("inner", &*self.lock())
            .finish()
    }
}

/// Leave to make one call through a breaker. Report the outcome with [`Permit::record`];
/// dropping it unrecorded (a cancelled call) records nothing and frees the probe slot.
#[derive(Debug)]
pub struct Permit {
    breaker: Arc<Breaker>,
    is_probe: bool,
}

impl Permit {
    /// This call is the half-open probe: its outcome decides whether the breaker closes.
    pub fn is_probe(&self) -> bool {
        self.is_probe
    }

    /// Reports the call's outcome. `Neutral` on a probe just frees the slot for the next caller.
    pub fn record(mut self, signal: Signal) {
        let from_probe = std::mem::take(&mut self.is_probe);
        self.breaker.apply(signal, from_probe);
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if self.is_probe {
            self.breaker.release_probe();
        }
    }
}

/// Every breaker of the gateway: one per premium provider and one per SearXNG engine, created on
/// first use. Cheap to clone.
#[derive(Debug, Clone)]
pub struct BreakerBoard {
    shared: Arc<BoardShared>,
}

#[derive(Debug)]
struct BoardShared {
    config: BreakerConfig,
    metrics: Metrics,
    breakers: Mutex<Namespaces>,
}

#[derive(Debug, Default)]
struct Namespaces {
    providers: BTreeMap<String, Arc<Breaker>>,
    engines: BTreeMap<String, Arc<Breaker>>,
}

impl Namespaces {
    fn of(&mut self, kind: BreakerKind) -> &mut BTreeMap<String, Arc<Breaker>> {
        match kind {
            BreakerKind::Provider => &mut self.providers,
            BreakerKind::Engine | BreakerKind::Searxng => &mut self.engines,
        }
    }
}

impl BreakerBoard {
    /// An empty board; breakers appear as [`BreakerBoard::get`] first names them.
    pub fn new(config: BreakerConfig, metrics: Metrics) -> Self {
        Self {
            shared: Arc::new(BoardShared {
                config,
                metrics,
                breakers: Mutex::new(Namespaces::default()),
            }),
        }
    }

    /// The breaker of `name` in the `kind` namespace, created closed on first use.
    pub fn get(&self, kind: BreakerKind, name: &str) -> Arc<Breaker> {
        let mut namespaces = self.lock();
        let breakers = namespaces.of(kind);
        if let Some(breaker) = breakers.get(name) {
            return Arc::clone(breaker);
        }
        let breaker = Arc::new(Breaker::new(
            kind,
            name,
            self.shared.config,
            &self.shared.metrics,
        ));
        breakers.insert(name.to_owned(), Arc::clone(&breaker));
        breaker
    }

    /// Every breaker with its snapshot, providers first, then engines, each sorted by name.
    pub fn list(&self) -> Vec<(BreakerKind, String, BreakerSnapshot)> {
        self.all()
            .into_iter()
            .map(|b| (b.kind, b.name.clone(), b.snapshot()))
            .collect()
    }

    /// Sets every `circuit_breaker_state` gauge from the state now; call before rendering metrics.
    pub fn refresh_metrics(&self) {
        for breaker in self.all() {
            breaker.refresh_metrics();
        }
    }

    /// The breakers in list order, collected so no breaker lock is taken under the board lock.
    fn all(&self) -> Vec<Arc<Breaker>> {
        let mut namespaces = self.lock();
        BreakerKind::ALL
            .into_iter()
            .flat_map(|kind| namespaces.of(kind).values().cloned().collect::<Vec<_>>())
            .collect()
    }

    fn lock(&self) -> MutexGuard<'_, Namespaces> {
        // Inserting into a map cannot leave it half-updated, so a poisoned lock is still usable.
        self.shared
            .breakers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use tokio::time::advance;

    const BASE: Duration = Duration::from_secs(10);
    const MAX: Duration = Duration::from_secs(80);
    const HEALTHY: Duration = Duration::from_secs(600);
    const THRESHOLD: u32 = 3;

    fn config() -> BreakerConfig {
        BreakerConfig {
            open_base: BASE,
            open_max: MAX,
            failure_threshold: THRESHOLD,
            jitter: 0.0,
            healthy_after: HEALTHY,
        }
    }

    fn board_with(config: BreakerConfig) -> (BreakerBoard, Metrics) {
        let metrics = Metrics::new();
        (BreakerBoard::new(config, metrics.clone()), metrics)
    }

    /// A fresh provider breaker named `test`, with the metrics it reports to.
    fn breaker() -> (Arc<Breaker>, Metrics) {
        let (board, metrics) = board_with(config());
        (board.get(BreakerKind::Provider, "test"), metrics)
    }

    /// Makes one admitted call that reports `signal`.
    fn call(breaker: &Arc<Breaker>, signal: Signal) {
        breaker.admit().unwrap().record(signal);
    }

    fn trips(metrics: &Metrics, kind: BreakerKind, name: &str, reason: TripReason) -> u64 {
        metrics
            .breaker_trips
            .with_label_values(&[name, kind.as_str(), reason.as_str()])
            .get()
    }

    fn gauge(metrics: &Metrics, kind: BreakerKind, name: &str) -> i64 {
        metrics
            .breaker_state
            .with_label_values(&[name, kind.as_str()])
            .get()
    }

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn every_error_class_maps_to_the_intended_signal() {
        let rate_limited = Signal::Stop {
            reason: TripReason::RateLimited,
            retry_after: Some(secs(7)),
        };
        let cases = [
            (ErrorClass::Auth, Signal::stop(TripReason::Auth)),
            (ErrorClass::Quota, Signal::stop(TripReason::Quota)),
            (ErrorClass::Blocked, Signal::stop(TripReason::AccessDenied)),
            (ErrorClass::Server, Signal::Transient),
            (ErrorClass::Timeout, Signal::Transient),
            (ErrorClass::Connect, Signal::Transient),
            (ErrorClass::Truncated, Signal::Transient),
            (ErrorClass::Malformed, Signal::Transient),
            (ErrorClass::BadRequest, Signal::Neutral),
            (ErrorClass::TooLarge, Signal::Neutral),
            (ErrorClass::Redirect, Signal::Neutral),
            (ErrorClass::Degraded, Signal::Neutral),
            (ErrorClass::HttpStatus, Signal::Neutral),
        ];
        for (class, expected) in cases {
            assert_eq!(
                Signal::from_error(&UpstreamError::new(class)),
                expected,
                "{class:?}"
            );
        }
        let hinted = UpstreamError::with_retry_after(ErrorClass::RateLimited, Some(secs(7)));
        assert_eq!(Signal::from_error(&hinted), rate_limited);
    }

    #[tokio::test(start_paused = true)]
    async fn stop_signals_trip_the_breaker_at_once() {
        let cases = [
            (ErrorClass::Blocked, TripReason::AccessDenied),
            (ErrorClass::Auth, TripReason::Auth),
            (ErrorClass::Quota, TripReason::Quota),
            (ErrorClass::RateLimited, TripReason::RateLimited),
        ];
        for (class, reason) in cases {
            let (breaker, metrics) = breaker();
            call(&breaker, Signal::from_error(&UpstreamError::new(class)));

            let snapshot = breaker.snapshot();
            assert_eq!(snapshot.state, BreakerState::Open, "{class:?}");
            assert_eq!(snapshot.reason, Some(reason), "{class:?}");
            assert_eq!(snapshot.open_for, Some(BASE), "{class:?}");
            assert_eq!(trips(&metrics, BreakerKind::Provider, "test", reason), 1);
            assert_eq!(gauge(&metrics, BreakerKind::Provider, "test"), 2);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_open_breaker_rejects_calls_and_counts_each_rejection() {
        let (breaker, metrics) = breaker();
        call(&breaker, Signal::stop(TripReason::Quota));

        for _ in 0..3 {
            assert!(breaker.admit().is_none());
        }
        let rejections = metrics
            .breaker_rejections
            .with_label_values(&["test", "provider"])
            .get();
        assert_eq!(rejections, 3);
    }

    #[tokio::test(start_paused = true)]
    async fn transient_failures_trip_only_at_the_threshold() {
        let (breaker, metrics) = breaker();
        for n in 1..THRESHOLD {
            call(&breaker, Signal::Transient);
            let snapshot = breaker.snapshot();
            assert_eq!(snapshot.state, BreakerState::Closed);
            assert_eq!(snapshot.consecutive_failures, n);
        }

        call(&breaker, Signal::Transient);

        let snapshot = breaker.snapshot();
        assert_eq!(snapshot.state, BreakerState::Open);
        assert_eq!(snapshot.reason, Some(TripReason::Transient));
        let transient = trips(
            &metrics,
            BreakerKind::Provider,
            "test",
            TripReason::Transient,
        );
        assert_eq!(transient, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_success_between_transient_failures_resets_the_run() {
        let (breaker, _) = breaker();
        for _ in 1..THRESHOLD {
            call(&breaker, Signal::Transient);
        }
        call(&breaker, Signal::Success);
        assert_eq!(breaker.snapshot().consecutive_failures, 0);

        for _ in 1..THRESHOLD {
            call(&breaker, Signal::Transient);
        }
        assert_eq!(breaker.state(), BreakerState::Closed);
        call(&breaker, Signal::Transient);
        assert_eq!(breaker.state(), BreakerState::Open);
    }

    #[tokio::test(start_paused = true)]
    async fn bad_requests_and_neutral_signals_neither_count_nor_reset_the_run() {
        let (breaker, _) = breaker();
        for _ in 1..THRESHOLD {
            call(&breaker, Signal::Transient);
        }
        let bad_request = Signal::from_error(&UpstreamError::new(ErrorClass::BadRequest));
        for _ in 0..100 {
            call(&breaker, bad_request);
            call(&breaker, Signal::Neutral);
        }

        let snapshot = breaker.snapshot();
        assert_eq!(snapshot.state, BreakerState::Closed);
        assert_eq!(snapshot.consecutive_failures, THRESHOLD - 1);

        call(&breaker, Signal::Transient);
        assert_eq!(breaker.state(), BreakerState::Open);
    }

    #[tokio::test(start_paused = true)]
    async fn the_open_period_doubles_per_consecutive_trip_and_caps_at_open_max() {
        let (breaker, _) = breaker();
        call(&breaker, Signal::stop(TripReason::RateLimited));

        for expected in [10, 20, 40, 80, 80, 80].map(secs) {
            assert_eq!(breaker.snapshot().open_for, Some(expected));

            advance(expected - Duration::from_millis(1)).await;
            assert!(
                breaker.admit().is_none(),
                "still open just before {expected:?}"
            );
            advance(Duration::from_millis(1)).await;
            let probe = breaker.admit().unwrap();
            assert!(probe.is_probe());
            probe.record(Signal::Transient);
        }
        assert_eq!(breaker.snapshot().trips, 7);
    }

    #[tokio::test(start_paused = true)]
    async fn the_server_hint_wins_when_longer_and_is_not_capped() {
        const MONTH: Duration = Duration::from_secs(30 * 24 * 3600);
        let cases = [
            (secs(5), BASE),
            (secs(45), secs(45)),
            (MONTH, MONTH),
            (Duration::MAX, Duration::MAX),
        ];
        for (hint, expected) in cases {
            let (breaker, _) = breaker();
            call(
                &breaker,
                Signal::Stop {
                    reason: TripReason::Quota,
                    retry_after: Some(hint),
                },
            );
            let open_for = breaker.snapshot().open_for.unwrap();
            if expected == Duration::MAX {
                // An absurd hint saturates instead of panicking, and still parks the breaker.
                assert!(open_for > MONTH, "{hint:?} gave {open_for:?}");
            } else {
                assert_eq!(open_for, expected, "{hint:?}");
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_later_hint_while_open_extends_the_open_period_without_a_new_trip() {
        let (breaker, metrics) = breaker();
        call(&breaker, Signal::stop(TripReason::RateLimited));

        let later = Signal::Stop {
            reason: TripReason::RateLimited,
            retry_after: Some(secs(60)),
        };
        breaker.record(later);
        breaker.record(Signal::stop(TripReason::RateLimited));
        breaker.record(Signal::Success);

        let snapshot = breaker.snapshot();
        assert_eq!(snapshot.state, BreakerState::Open);
        assert_eq!(snapshot.open_for, Some(secs(60)));
        assert_eq!(snapshot.trips, 1);
        let rate_limited = trips(
            &metrics,
            BreakerKind::Provider,
            "test",
            TripReason::RateLimited,
        );
        assert_eq!(rate_limited, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn jitter_adds_at_most_the_configured_fraction_of_the_backoff() {
        let (board, _) = board_with(BreakerConfig {
            jitter: 0.5,
            ..config()
        });
        for n in 0..20 {
            let breaker = board.get(BreakerKind::Engine, &format!("engine{n}"));
            breaker.record(Signal::stop(TripReason::Captcha));
            let open_for = breaker.snapshot().open_for.unwrap();
            assert!((BASE..=BASE + BASE / 2).contains(&open_for), "{open_for:?}");
        }
    }

    /// Real threads racing on one lock: the paused clock's single thread could not show a race.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn exactly_one_probe_is_admitted_among_many_concurrent_callers() {
        const CALLERS: usize = 50;
        // A zero open period makes the breaker half-open the moment it trips.
        let (board, _) = board_with(BreakerConfig {
            open_base: Duration::ZERO,
            ..config()
        });
        let breaker = board.get(BreakerKind::Provider, "test");
        breaker.record(Signal::stop(TripReason::RateLimited));
        assert_eq!(breaker.state(), BreakerState::HalfOpen);

        let start = Arc::new(tokio::sync::Barrier::new(CALLERS));
        let all_admitted = Arc::new(tokio::sync::Barrier::new(CALLERS));
        let tasks: Vec<_> = (0..CALLERS)
            .map(|_| {
                let (breaker, start, all_admitted) =
                    (Arc::clone(&breaker), start.clone(), all_admitted.clone());
                tokio::spawn(async move {
                    start.wait().await;
                    let permit = breaker.admit();
                    // Hold every permit until all have asked, so a probe cannot be freed early.
                    all_admitted.wait().await;
                    permit.map(|p| p.is_probe())
                })
            })
            .collect();
        let mut admitted = Vec::new();
        for task in tasks {
            admitted.extend(task.await.unwrap());
        }

        assert_eq!(admitted, vec![true]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_successful_probe_closes_the_breaker_and_counts_a_recovery() {
        let (breaker, metrics) = breaker();
        call(&breaker, Signal::stop(TripReason::Auth));
        advance(BASE).await;

        let probe = breaker.admit().unwrap();
        assert!(probe.is_probe());
        assert!(breaker.admit().is_none(), "only one probe at a time");
        probe.record(Signal::Success);

        let snapshot = breaker.snapshot();
        assert_eq!(snapshot.state, BreakerState::Closed);
        assert_eq!(snapshot.reason, None);
        let recoveries = metrics
            .breaker_recoveries
            .with_label_values(&["test", "provider"])
            .get();
        assert_eq!(recoveries, 1);
        assert_eq!(gauge(&metrics, BreakerKind::Provider, "test"), 0);
        let next = breaker.admit().unwrap();
        assert!(!next.is_probe());
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_probe_reopens_the_breaker_for_longer() {
        let failures = [
            (Signal::Transient, TripReason::Transient),
            (
                Signal::stop(TripReason::RateLimited),
                TripReason::RateLimited,
            ),
        ];
        for (failure, reason) in failures {
            let (breaker, metrics) = breaker();
            call(&breaker, Signal::stop(TripReason::AccessDenied));
            advance(BASE).await;

            breaker.admit().unwrap().record(failure);

            let snapshot = breaker.snapshot();
            assert_eq!(snapshot.state, BreakerState::Open, "{failure:?}");
            assert_eq!(snapshot.open_for, Some(2 * BASE), "{failure:?}");
            assert_eq!(snapshot.reason, Some(reason), "{failure:?}");
            assert_eq!(snapshot.trips, 2, "{failure:?}");
            assert_eq!(trips(&metrics, BreakerKind::Provider, "test", reason), 1);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_or_neutral_probe_frees_the_slot_and_records_nothing() {
        let (breaker, metrics) = breaker();
        call(&breaker, Signal::stop(TripReason::Quota));
        advance(BASE).await;

        let cancelled = breaker.admit().unwrap();
        assert!(breaker.admit().is_none());
        drop(cancelled);

        let neutral = breaker.admit().unwrap();
        assert!(neutral.is_probe(), "the dropped probe freed its slot");
        neutral.record(Signal::Neutral);

        let next = breaker.admit().unwrap();
        assert!(next.is_probe(), "a neutral probe freed its slot");
        let snapshot = breaker.snapshot();
        assert_eq!(snapshot.state, BreakerState::HalfOpen);
        assert_eq!(snapshot.trips, 1);
        let recoveries = metrics
            .breaker_recoveries
            .with_label_values(&["test", "provider"])
            .get();
        assert_eq!(recoveries, 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_admitted_before_the_trip_does_not_close_the_breaker() {
        let (breaker, _) = breaker();
        let straggler = breaker.admit().unwrap();
        call(&breaker, Signal::stop(TripReason::RateLimited));
        advance(BASE).await;
        let probe = breaker.admit().unwrap();

        straggler.record(Signal::Success);

        assert_eq!(breaker.state(), BreakerState::HalfOpen);
        assert!(breaker.admit().is_none(), "the probe is still out");
        probe.record(Signal::Success);
        assert_eq!(breaker.state(), BreakerState::Closed);
    }

    #[tokio::test(start_paused = true)]
    async fn growth_resets_after_a_healthy_spell() {
        let (breaker, _) = breaker();
        let trip = |breaker: &Arc<Breaker>| {
            call(breaker, Signal::stop(TripReason::RateLimited));
            breaker.snapshot().open_for.unwrap()
        };

        assert_eq!(trip(&breaker), secs(10));
        advance(secs(10)).await;
        call(&breaker, Signal::Success);

        // Tripping again soon after recovering: the breaker is flapping, so the period grows.
        advance(HEALTHY - secs(1)).await;
        assert_eq!(trip(&breaker), secs(20));
        advance(secs(20)).await;
        call(&breaker, Signal::Success);

        advance(HEALTHY).await;
        assert_eq!(trip(&breaker), secs(10));
    }

    #[tokio::test(start_paused = true)]
    async fn an_engine_and_a_provider_with_the_same_name_are_separate_breakers_and_series() {
        let (board, metrics) = board_with(config());
        let engine = board.get(BreakerKind::Engine, "brave");
        let provider = board.get(BreakerKind::Provider, "brave");
        assert!(!Arc::ptr_eq(&engine, &provider));
        assert!(Arc::ptr_eq(
            &engine,
            &board.get(BreakerKind::Engine, "brave")
        ));

        engine.record(Signal::stop(TripReason::Captcha));

        assert_eq!(engine.state(), BreakerState::Open);
        assert_eq!(provider.state(), BreakerState::Closed);
        assert_eq!(gauge(&metrics, BreakerKind::Engine, "brave"), 2);
        assert_eq!(gauge(&metrics, BreakerKind::Provider, "brave"), 0);
        let captcha = |kind| trips(&metrics, kind, "brave", TripReason::Captcha);
        assert_eq!(captcha(BreakerKind::Engine), 1);
        assert_eq!(captcha(BreakerKind::Provider), 0);
        let text = String::from_utf8(metrics.render()).unwrap();
        assert!(text.contains(r#"circuit_breaker_state{engine="brave",kind="engine"} 2"#));
        assert!(text.contains(r#"circuit_breaker_state{engine="brave",kind="provider"} 0"#));
    }

    #[tokio::test(start_paused = true)]
    async fn refresh_metrics_shows_half_open_once_the_open_period_elapses() {
        let (board, metrics) = board_with(config());
        board
            .get(BreakerKind::Engine, "google")
            .record(Signal::stop(TripReason::AccessDenied));
        advance(BASE).await;
        assert_eq!(gauge(&metrics, BreakerKind::Engine, "google"), 2);

        board.refresh_metrics();

        assert_eq!(gauge(&metrics, BreakerKind::Engine, "google"), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn list_puts_providers_before_engines_each_sorted_by_name() {
        let (board, _) = board_with(config());
        for (kind, name) in [
            (BreakerKind::Engine, "wikipedia"),
            (BreakerKind::Provider, "tavily"),
            (BreakerKind::Engine, "bing"),
            (BreakerKind::Provider, "brave"),
        ] {
            board.get(kind, name);
        }
        board
            .get(BreakerKind::Engine, "bing")
            .record(Signal::stop(TripReason::Captcha));

        let listed: Vec<_> = board
            .list()
            .into_iter()
            .map(|(kind, name, snapshot)| (kind, name, snapshot.state))
            .collect();

        let closed = BreakerState::Closed;
        assert_eq!(
            listed,
            [
                (BreakerKind::Provider, "brave".to_owned(), closed),
                (BreakerKind::Provider, "tavily".to_owned(), closed),
                (BreakerKind::Engine, "bing".to_owned(), BreakerState::Open),
                (BreakerKind::Engine, "wikipedia".to_owned(), closed),
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_snapshot_serializes_durations_as_seconds() {
        let (breaker, _) = breaker();
        breaker.record(Signal::stop(TripReason::RateLimited));
        advance(Duration::from_millis(2500)).await;

        let json = serde_json::to_value(breaker.snapshot()).unwrap();

        assert_eq!(
            json,
            serde_json::json!({
                "state": "open",
                "reason": "rate_limited",
                "open_for_seconds": 7.5,
                "trips": 1,
                "consecutive_failures": 0,
            })
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_pause_parks_for_exactly_its_period_without_a_trip_or_recovery() {
        let metrics = Metrics::new();
        let board = BreakerBoard::new(config(), metrics.clone());
        let b = board.get(BreakerKind::Provider, "brave");
        b.pause(TripReason::RateLimited, Duration::from_secs(1));
        assert!(b.admit().is_none());
        tokio::time::advance(Duration::from_millis(1001)).await;
        let probe = b.admit().expect("the pause is over");
        probe.record(Signal::Success);
        assert_eq!(b.state(), BreakerState::Closed);
        assert_eq!(b.snapshot().trips, 0);
        assert_eq!(
            metrics
                .breaker_recoveries
                .with_label_values(&["brave", "provider"])
                .get(),
            0
        );
    }
}
