//! The circuit breaker as a pure state machine ("Closed = calls flow"). Every method takes `now`,
//! so the rules are tested by passing instants, with no clock, no lock and no metrics:
//!
//! - **Closed**: every call is admitted. A stop signal trips it at once; transient failures trip
//!   it after the policy's threshold in a row.
//! - **Open**: every call is rejected until the open period ends (see [`BreakerPolicy`]).
//! - **HalfOpen**: the open period has elapsed. Exactly one caller is admitted as the probe; its
//!   success closes the breaker (and halves the open-period multiplier), its failure reopens it for
//!   longer, a neutral or cancelled probe frees the slot for the next caller.
//! - Health shrinks the growth again: every healthy interval spent closed halves the multiplier
//!   once more, so an upstream that flapped in the morning is not kept out all afternoon.
//!
//! Half-open is not stored: it is `Open` once `until` has passed, so no timer is needed.

use std::time::Duration;

use tokio::time::Instant;

use super::policy::BreakerPolicy;
use super::signal::{Signal, TripReason};

/// Where a breaker stands. The gauge values are part of the metrics contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
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
}

/// What asking to make a call got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Make the call; `probe` when it is the half-open probe that decides the breaker.
    Admitted { probe: bool },
    /// Do not make the call.
    Rejected,
}

/// What a recorded signal changed: the caller turns it into metrics and logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transition {
    /// Nothing worth reporting.
    None,
    /// The breaker opened (or reopened after a failed probe).
    Tripped(TripReason),
    /// The probe succeeded and closed the breaker.
    Recovered,
}

/// A point-in-time view of one breaker.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Snapshot {
    /// The state now (an elapsed open period reads as half-open).
    pub state: BreakerState,
    /// Why it tripped, while it is not closed.
    pub reason: Option<TripReason>,
    /// Time left before the breaker turns half-open; only while open.
    pub open_for: Option<Duration>,
    /// Trips since the process started.
    pub trips: u64,
    /// Transient failures since the last success.
    pub consecutive_failures: u32,
}

#[derive(Debug, Clone, Copy)]
enum Phase {
    Closed {
        since: Instant,
    },
    Open {
        until: Instant,
        probe_in_flight: bool,
    },
}

/// One breaker's state.
#[derive(Debug, Clone)]
pub(crate) struct Machine {
    phase: Phase,
    reason: Option<TripReason>,
    consecutive_failures: u32,
    /// The exponent of the backoff: +1 per trip, −1 per successful probe and per healthy interval
    /// spent closed (Envoy's ejection multiplier), never below 0.
    consecutive_trips: u32,
    trips: u64,
    /// Open because the upstream reported a spent window on a successful call, not because it
    /// failed: its end is not a recovery.
    paused: bool,
    /// When a call last told this breaker something (a success or a failure).
    heard: Option<Instant>,
    /// Counts this process's own changes of the open period (trip, close, pause, a later hint),
    /// so the shared tier's mirror publishes each once; adopting another replica's period does
    /// not count.
    epoch: u64,
    /// The open period is known to the shared tier (adopted from it, or published and
    /// confirmed): when the tier no longer lists it, another replica closed it.
    shared: bool,
    /// While open: the earliest end [`Machine::shorten`] may give the period — the server's own
    /// reset hint, or the whole period when it is not ours to shorten (a pause, an operator's,
    /// another replica's).
    floor: Option<Instant>,
}

/// An open period as the shared tier carries it between replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharedOpen {
    /// When it turns half-open.
    pub until: Instant,
    /// Why it opened.
    pub reason: TripReason,
    /// A parked rate-limit window, not a failure: its end is not a recovery.
    pub paused: bool,
}

impl Machine {
    /// A closed breaker, healthy since `now`.
    pub(crate) fn new(now: Instant) -> Self {
        Self {
            phase: Phase::Closed { since: now },
            reason: None,
            consecutive_failures: 0,
            consecutive_trips: 0,
            trips: 0,
            paused: false,
            heard: None,
            epoch: 0,
            shared: false,
            floor: None,
        }
    }

    /// This process's changes so far, and the open period to share (`None`: closed).
    pub(crate) fn shared_view(&self) -> (u64, Option<SharedOpen>) {
        let open = match self.phase {
            Phase::Open { until, .. } => self.reason.map(|reason| SharedOpen {
                until,
                reason,
                paused: self.paused,
            }),
            Phase::Closed { .. } => None,
        };
        (self.epoch, open)
    }

    /// The shared tier took the view of `epoch`: if nothing changed since, the open period is now
    /// known there.
    pub(crate) fn mark_shared(&mut self, epoch: u64) {
        if self.epoch == epoch && matches!(self.phase, Phase::Open { .. }) {
            self.shared = true;
        }
    }

    /// Another replica's open period: taken when it ends later than ours (or we are closed). No
    /// trip is counted here — the replica that tripped counted it. Returns whether it changed.
    pub(crate) fn adopt_open(&mut self, open: SharedOpen) -> bool {
        let probe_in_flight = match self.phase {
            Phase::Closed { .. } => false,
            Phase::Open {
                until,
                probe_in_flight,
            } if open.until > until => probe_in_flight,
            Phase::Open { .. } => return false,
        };
        self.phase = Phase::Open {
            until: open.until,
            probe_in_flight,
        };
        self.reason = Some(open.reason);
        self.paused = open.paused;
        self.shared = true;
        self.floor = Some(open.until);
        true
    }

    /// The shared tier no longer lists the open period it knew: another replica's probe closed
    /// it. An open period the tier never knew (tripped here while Redis was away) stays. Not a
    /// recovery here: the replica whose probe succeeded counted it. Returns whether it closed.
    pub(crate) fn adopt_closed(&mut self, now: Instant) -> bool {
        if !self.shared || !matches!(self.phase, Phase::Open { .. }) {
            return false;
        }
        self.phase = Phase::Closed { since: now };
        self.reason = None;
        self.consecutive_failures = 0;
        self.paused = false;
        self.shared = false;
        true
    }

    /// Whether a call told this breaker anything after `since` (ever, when `None`).
    pub(crate) fn heard_since(&self, since: Option<Instant>) -> bool {
        match (self.heard, since) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(heard), Some(since)) => heard > since,
        }
    }

    /// The state at `now`.
    pub(crate) fn state_at(&self, now: Instant) -> BreakerState {
        match self.phase {
            Phase::Closed { .. } => BreakerState::Closed,
            Phase::Open { until, .. } if now < until => BreakerState::Open,
            Phase::Open { .. } => BreakerState::HalfOpen,
        }
    }

    /// Asks to make one call at `now`; a half-open breaker admits exactly one probe.
    pub(crate) fn admit(&mut self, now: Instant) -> Admission {
        match &mut self.phase {
            Phase::Closed { .. } => Admission::Admitted { probe: false },
            Phase::Open {
                until,
                probe_in_flight,
            } if now >= *until && !*probe_in_flight => {
                *probe_in_flight = true;
                Admission::Admitted { probe: true }
            }
            Phase::Open { .. } => Admission::Rejected,
        }
    }

    /// Asks to make one call at `now` that must not be the probe: admitted only while closed. A
    /// half-open breaker's one probe is left to whoever probes on purpose ([`Machine::admit`]).
    pub(crate) fn admit_closed(&self) -> Admission {
        match self.phase {
            Phase::Closed { .. } => Admission::Admitted { probe: false },
            Phase::Open { .. } => Admission::Rejected,
        }
    }

    /// Brings the end of the open period forward to `to` (the engine prober's choice of its probe
    /// time), never before `now`, never before a server's own reset hint, and never for a period
    /// that is not ours to shorten (a pause, an operator's, another replica's). Returns whether it
    /// moved.
    pub(crate) fn shorten(&mut self, now: Instant, to: Instant) -> bool {
        let Phase::Open {
            until,
            probe_in_flight,
        } = self.phase
        else {
            return false;
        };
        let to = to.max(now).max(self.floor.unwrap_or(now));
        if to >= until {
            return false;
        }
        self.phase = Phase::Open {
            until: to,
            probe_in_flight,
        };
        self.changed();
        true
    }

    /// Records what a call said. `from_probe`: the call was admitted as this breaker's probe.
    pub(crate) fn record(
        &mut self,
        now: Instant,
        signal: Signal,
        from_probe: bool,
        policy: &BreakerPolicy,
    ) -> Transition {
        if signal != Signal::Neutral {
            self.heard = Some(now);
        }
        let probe_out = matches!(
            self.phase,
            Phase::Open {
                probe_in_flight: true,
                ..
            }
        );
        if from_probe && probe_out {
            self.probe_result(now, signal, policy)
        } else {
            self.call_result(now, signal, policy)
        }
    }

    /// The probe's caller went away without an answer: the next caller may probe.
    pub(crate) fn release_probe(&mut self) {
        if let Phase::Open {
            probe_in_flight, ..
        } = &mut self.phase
        {
            *probe_in_flight = false;
        }
    }

    /// Parks the upstream for exactly `period` without counting a trip or growing the backoff: a
    /// rate-limit window the upstream reported spent on a *successful* call. When it ends, one
    /// caller goes first as usual; its success is not a recovery.
    pub(crate) fn pause(&mut self, now: Instant, reason: TripReason, period: Duration) {
        match self.phase {
            Phase::Closed { .. } => {
                self.phase = Phase::Open {
                    until: deadline(now, period),
                    probe_in_flight: false,
                };
                self.reason = Some(reason);
                self.paused = true;
                self.floor = Some(deadline(now, period));
                self.changed();
            }
            Phase::Open {
                until,
                probe_in_flight,
            } => {
                let until = until.max(deadline(now, period));
                self.phase = Phase::Open {
                    until,
                    probe_in_flight,
                };
                self.floor = Some(until);
                self.changed();
            }
        }
    }

    /// An operator opens the breaker for exactly `period` from `now` (replacing any open period).
    /// Not a trip: no trip is counted and the backoff does not grow; when it ends one caller
    /// probes as usual.
    pub(crate) fn force_open(&mut self, now: Instant, period: Duration) {
        self.phase = Phase::Open {
            until: deadline(now, period),
            probe_in_flight: false,
        };
        self.reason = Some(TripReason::Operator);
        self.paused = true;
        self.floor = Some(deadline(now, period));
        self.changed();
    }

    /// An operator closes the breaker at `now`: calls flow again and the backoff starts over.
    pub(crate) fn force_close(&mut self, now: Instant) {
        self.phase = Phase::Closed { since: now };
        self.reason = None;
        self.consecutive_failures = 0;
        self.consecutive_trips = 0;
        self.paused = false;
        self.changed();
    }

    /// A change of our own: the mirror publishes it; until it is confirmed, the shared tier's
    /// silence about it means nothing.
    fn changed(&mut self) {
        self.epoch += 1;
        self.shared = false;
    }

    /// The state, reason and counters at `now`.
    pub(crate) fn snapshot(&self, now: Instant) -> Snapshot {
        let open_for = match self.phase {
            Phase::Open { until, .. } if now < until => Some(until - now),
            _ => None,
        };
        Snapshot {
            state: self.state_at(now),
            reason: self.reason,
            open_for,
            trips: self.trips,
            consecutive_failures: self.consecutive_failures,
        }
    }

    fn trip(
        &mut self,
        now: Instant,
        reason: TripReason,
        hint: Option<Duration>,
        policy: &BreakerPolicy,
    ) -> Transition {
        if let Phase::Closed { since } = self.phase {
            let halvings = policy.healthy_halvings(now.saturating_duration_since(since));
            self.consecutive_trips = self.consecutive_trips.saturating_sub(halvings);
        }
        self.consecutive_trips = self.consecutive_trips.saturating_add(1);
        self.trips += 1;
        self.paused = false;
        self.reason = Some(reason);
        // A spent quota does not come back by itself within minutes: without the provider's own
        // reset it parks for `quota_park`, then one probe finds out whether it returned.
        let hint = match (reason, hint) {
            (TripReason::Quota, None) => Some(policy.quota_park),
            (_, hint) => hint,
        };
        let period = policy.open_period(self.consecutive_trips, hint);
        self.phase = Phase::Open {
            until: deadline(now, period),
            probe_in_flight: false,
        };
        self.floor = hint.map(|hint| deadline(now, hint));
        self.changed();
        Transition::Tripped(reason)
    }

    fn close(&mut self, now: Instant) -> Transition {
        self.phase = Phase::Closed { since: now };
        self.reason = None;
        self.consecutive_failures = 0;
        self.changed();
        if std::mem::take(&mut self.paused) {
            Transition::None
        } else {
            // Health counts: a successful probe halves the multiplier at once.
            self.consecutive_trips = self.consecutive_trips.saturating_sub(1);
            Transition::Recovered
        }
    }

    fn probe_result(&mut self, now: Instant, signal: Signal, policy: &BreakerPolicy) -> Transition {
        match signal {
            Signal::Success => self.close(now),
            Signal::Stop {
                reason,
                retry_after,
            } => self.trip(now, reason, retry_after, policy),
            Signal::Transient(cause) => {
                self.consecutive_failures = self.consecutive_failures.saturating_add(1);
                self.trip(now, cause.into(), None, policy)
            }
            Signal::Neutral => {
                self.release_probe();
                Transition::None
            }
        }
    }

    fn call_result(&mut self, now: Instant, signal: Signal, policy: &BreakerPolicy) -> Transition {
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
            ) => self.trip(now, reason, retry_after, policy),
            (Phase::Closed { .. }, Signal::Transient(cause)) => {
                self.consecutive_failures = self.consecutive_failures.saturating_add(1);
                if self.consecutive_failures >= policy.threshold() {
                    self.trip(now, cause.into(), None, policy)
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
                self.floor = Some(
                    self.floor
                        .map_or(deadline(now, hint), |floor| floor.max(deadline(now, hint))),
                );
                self.changed();
                Transition::None
            }
            // Calls admitted before the trip prove nothing now; only the probe decides.
            (Phase::Open { .. }, _) => Transition::None,
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

#[cfg(test)]
mod tests;
