//! Circuit breakers: one per premium provider and one per SearXNG engine (plus the SearXNG
//! cooldown, a breaker of its own kind), so an upstream that told us to stop, or keeps failing, is
//! left alone for a while instead of being hammered.
//!
//! - [`signal`]: the vocabulary — what a call tells a breaker, why a breaker trips.
//! - [`policy`]: how long a tripped breaker stays open.
//! - [`machine`]: the state machine itself, pure (every method takes `now`).
//! - this file: [`Breaker`], the shared handle that locks the machine, hands out [`Permit`]s and
//!   publishes each transition to the metrics and the log.
//! - [`board`]: every breaker of the process, keyed by [`BreakerKind`] and name.
//! - [`rollup`]: a breaker that stands for others too (a provider for its keys): its state derived
//!   from its own and theirs.
//!
//! Time comes from `tokio::time`, so the pipeline's tests drive it with a paused clock.

mod board;
mod machine;
mod metrics;
mod policy;
mod rollup;
mod signal;

use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use tokio::time::Instant;

pub use board::{BreakerBoard, BreakerKey, BreakerKind};
pub use machine::{BreakerState, SharedOpen, Snapshot};
pub use metrics::BreakerMetrics;
pub use policy::BreakerPolicy;
pub use signal::{Signal, TransientCause, TripReason};

use crate::metrics::InstanceLabel;
use machine::{Admission, Machine, Transition};
use metrics::{BreakerLabels, TripLabels};
use rollup::Rollup;

/// Where an open period taken by [`Breaker::adopt_open`] comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Another replica, through the shared tier.
    OtherReplica,
    /// This gateway before its restart (`STATE_DIR`).
    StateFile,
}

impl Origin {
    fn as_str(self) -> &'static str {
        match self {
            Origin::OtherReplica => "another replica's period",
            Origin::StateFile => "restored from STATE_DIR",
        }
    }
}

/// One upstream's breaker. Shared as `Arc<Breaker>`; obtained from [`BreakerBoard::get`] (or
/// built alone for the SearXNG cooldown).
pub struct Breaker {
    kind: BreakerKind,
    name: String,
    /// The SearXNG instance it belongs to (engine breakers and cooldowns of a pool member).
    instance: InstanceLabel,
    policy: BreakerPolicy,
    machine: Mutex<Machine>,
    /// `None` for a breaker whose name is no label value (a page host: unbounded).
    series: Option<Series>,
    /// Set when it stands for members too (a provider for its keys, [`Breaker::derive_from`]):
    /// its state and series are then the whole's.
    rollup: OnceLock<Rollup>,
    /// The whole it is a member of (a key's provider), whose state its changes move.
    parent: OnceLock<Weak<Breaker>>,
}

/// The breaker's metric handles, resolved once for its labels.
struct Series {
    state: Gauge,
    rejections: Counter,
    recoveries: Counter,
    // Resolved per trip: trips are rare, and eager series would multiply by every engine.
    trips: Family<TripLabels, Counter>,
}

impl Breaker {
    /// A closed breaker named `name` in the `kind` namespace, of the SearXNG instance `instance`
    /// (none for providers and for a single instance).
    pub fn new(
        kind: BreakerKind,
        name: &str,
        instance: InstanceLabel,
        policy: BreakerPolicy,
        metrics: &BreakerMetrics,
    ) -> Self {
        let labels = BreakerLabels {
            engine: name.to_owned(),
            kind,
            instance: instance.clone(),
        };
        let series = Series {
            state: metrics.state.get_or_create(&labels).clone(),
            rejections: metrics.rejections.get_or_create(&labels).clone(),
            recoveries: metrics.recoveries.get_or_create(&labels).clone(),
            trips: metrics.trips.clone(),
        };
        series.state.set(BreakerState::Closed.as_gauge());
        Self {
            kind,
            name: name.to_owned(),
            instance,
            policy,
            machine: Mutex::new(Machine::new(Instant::now())),
            series: Some(series),
            rollup: OnceLock::new(),
            parent: OnceLock::new(),
        }
    }

    /// A breaker with no metric series of its own: its name (a page's host) is no label value.
    /// Its transitions are logged like any other's; boards of them are counted as a whole.
    pub(crate) fn unlabelled(kind: BreakerKind, name: &str, policy: BreakerPolicy) -> Self {
        Self {
            kind,
            name: name.to_owned(),
            instance: InstanceLabel::single(),
            policy,
            machine: Mutex::new(Machine::new(Instant::now())),
            series: None,
            rollup: OnceLock::new(),
            parent: OnceLock::new(),
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

    /// The SearXNG instance it belongs to, if it is a pool member's.
    pub fn instance(&self) -> Option<&str> {
        self.instance.name()
    }

    /// The state now, without admitting anything (of the whole, when it stands for members).
    pub fn state(&self) -> BreakerState {
        match self.rollup.get() {
            Some(rollup) => self.derived_snapshot(rollup, Instant::now()).state,
            None => self.lock().state_at(Instant::now()),
        }
    }

    /// The state, reason and counters now (of the whole, when it stands for members).
    pub fn snapshot(&self) -> Snapshot {
        match self.rollup.get() {
            Some(rollup) => self.derived_snapshot(rollup, Instant::now()),
            None => self.lock().snapshot(Instant::now()),
        }
    }

    /// Whether a call ever told this breaker anything (a success or a failure): its upstream takes
    /// part in calls, so what becomes of the next one will be reported too.
    pub fn heard(&self) -> bool {
        self.lock().heard_since(None)
    }

    /// Asks to make one call. `None` means rejected (counted in `circuit_breaker_rejections_total`):
    /// the breaker is open, or half-open with its one probe already out. Call this only when the
    /// call would really be made, so the rejection count means what it says.
    #[must_use = "a permit admits a call; report its outcome with `Permit::record`"]
    pub fn admit(self: &Arc<Self>) -> Option<Permit> {
        let now = Instant::now();
        let mut machine = self.lock();
        match machine.admit(now) {
            Admission::Rejected => {
                if let Some(series) = &self.series {
                    series.rejections.inc();
                }
                None
            }
            Admission::Admitted { probe } => {
                self.publish(&machine, now);
                Some(Permit {
                    breaker: Arc::clone(self),
                    is_probe: probe,
                })
            }
        }
    }

    /// Asks to make one call that must not carry the probe (a client's search including an
    /// engine): admitted only while the breaker is closed, so a half-open breaker's probe stays
    /// with its out-of-band prober. `None` means rejected, counted as [`Breaker::admit`] counts it.
    #[must_use = "a permit admits a call; report its outcome with `Permit::record`"]
    pub fn admit_closed(self: &Arc<Self>) -> Option<Permit> {
        let admitted = self.lock().admit_closed() != Admission::Rejected;
        if !admitted {
            if let Some(series) = &self.series {
                series.rejections.inc();
            }
            return None;
        }
        Some(Permit {
            breaker: Arc::clone(self),
            is_probe: false,
        })
    }

    /// Records a signal not tied to a permit, e.g. a provider whose successful answer says its
    /// quota is spent. A success here never closes an open breaker: only the probe does.
    pub fn record(&self, signal: Signal) {
        self.apply(signal, false);
    }

    /// Records `signal` from another source of truth than our own calls (SearXNG's record of its
    /// engines), only while the breaker is closed and no call of ours told it anything after
    /// `quiet_since` (ever, when `None`): our own evidence wins. Returns whether it was recorded.
    pub fn seed(&self, signal: Signal, quiet_since: Option<Instant>) -> bool {
        {
            let machine = self.lock();
            if machine.state_at(Instant::now()) != BreakerState::Closed
                || machine.heard_since(quiet_since)
            {
                return false;
            }
        }
        self.apply(signal, false);
        true
    }

    /// Parks the upstream for exactly `period` without a trip (see [`Machine::pause`]).
    pub fn pause(&self, reason: TripReason, period: Duration) {
        self.under_whole(|| {
            let now = Instant::now();
            let mut machine = self.lock();
            machine.pause(now, reason, period);
            self.publish(&machine, now);
            ((), false)
        });
    }

    /// Ends the open period at `to` instead, if it is ours to shorten (see [`Machine::shorten`]).
    /// Returns whether it moved.
    pub fn shorten(&self, to: Instant) -> bool {
        self.under_whole(|| {
            let now = Instant::now();
            let mut machine = self.lock();
            let moved = machine.shorten(now, to);
            if moved {
                self.publish(&machine, now);
            }
            (moved, false)
        })
    }

    /// An operator opens the breaker for exactly `period` (see [`Machine::force_open`]).
    pub fn force_open(&self, period: Duration) {
        self.under_whole(|| {
            let now = Instant::now();
            let mut machine = self.lock();
            machine.force_open(now, period);
            self.publish(&machine, now);
            ((), false)
        });
    }

    /// An operator closes the breaker (see [`Machine::force_close`]); one that stands for members
    /// closes them too, so what the operator saw open (a provider none of whose keys was usable)
    /// is called again.
    pub fn force_close(&self) {
        if let Some(rollup) = self.rollup.get() {
            for member in rollup.members() {
                member.force_close();
            }
        }
        self.under_whole(|| {
            let now = Instant::now();
            let mut machine = self.lock();
            machine.force_close(now);
            self.publish(&machine, now);
            ((), false)
        });
    }

    /// This process's changes so far and the open period to share (see [`Machine::shared_view`]).
    pub fn shared_view(&self) -> (u64, Option<SharedOpen>) {
        self.lock().shared_view()
    }

    /// The shared tier took the view of `epoch`.
    pub fn mark_shared(&self, epoch: u64) {
        self.lock().mark_shared(epoch);
    }

    /// Takes an open period learnt from `origin` (see [`Machine::adopt_open`]).
    pub fn adopt_open(&self, open: SharedOpen, origin: Origin) {
        self.under_whole(|| {
            let now = Instant::now();
            let mut machine = self.lock();
            if machine.adopt_open(open) {
                self.publish(&machine, now);
                tracing::info!(
                    kind = self.kind.as_str(),
                    name = %self.name,
                    instance = self.instance.name().unwrap_or(""),
                    reason = open.reason.as_str(),
                    open_for_s = open.until.saturating_duration_since(now).as_secs(),
                    "circuit breaker open: {}",
                    origin.as_str()
                );
            }
            ((), false)
        });
    }

    /// Closes an open period another replica's probe ended (see [`Machine::adopt_closed`]).
    pub fn adopt_closed(&self) {
        self.under_whole(|| {
            let now = Instant::now();
            let mut machine = self.lock();
            if machine.adopt_closed(now) {
                self.publish(&machine, now);
                tracing::info!(kind = self.kind.as_str(), name = %self.name, instance = self.instance.name().unwrap_or(""), "circuit breaker closed by another replica's probe");
            }
            ((), false)
        });
    }

    /// Sets the state gauge from the state now, so an elapsed open period shows as half-open (a
    /// whole's from its own state and its members').
    pub fn refresh_metrics(&self) {
        if self.rollup.get().is_some() {
            self.under_whole(|| ((), false));
            return;
        }
        let now = Instant::now();
        let machine = self.lock();
        self.publish(&machine, now);
    }

    fn apply(&self, signal: Signal, from_probe: bool) {
        self.under_whole(|| ((), self.apply_here(signal, from_probe)));
    }

    /// Records `signal` on this breaker's own machine; returns whether it was a recovery.
    fn apply_here(&self, signal: Signal, from_probe: bool) -> bool {
        let now = Instant::now();
        let mut machine = self.lock();
        let transition = machine.record(now, signal, from_probe, &self.policy);
        match transition {
            Transition::None => {}
            Transition::Tripped(reason) => {
                if let Some(series) = &self.series {
                    series
                        .trips
                        .get_or_create(&TripLabels {
                            engine: self.name.clone(),
                            kind: self.kind,
                            reason,
                            instance: self.instance.clone(),
                        })
                        .inc();
                }
                let snapshot = machine.snapshot(now);
                tracing::warn!(
                    kind = self.kind.as_str(),
                    name = %self.name,
                    instance = self.instance.name().unwrap_or(""),
                    reason = reason.as_str(),
                    open_for_s = snapshot.open_for.map_or(0, |d| d.as_secs()),
                    trips = snapshot.trips,
                    "circuit breaker opened"
                );
            }
            Transition::Recovered => {
                // A whole's recovery is counted as the whole closes ([`rollup`]).
                if let (Some(series), None) = (&self.series, self.rollup.get()) {
                    series.recoveries.inc();
                }
                tracing::info!(kind = self.kind.as_str(), name = %self.name, instance = self.instance.name().unwrap_or(""), "circuit breaker closed");
            }
        }
        self.publish(&machine, now);
        transition == Transition::Recovered
    }

    fn release_probe(&self) {
        let now = Instant::now();
        let mut machine = self.lock();
        machine.release_probe();
        self.publish(&machine, now);
    }

    /// Called with the lock held, so concurrent transitions reach the gauge in the same order. A
    /// whole's gauge is its derived state's, published under its derivation lock instead.
    fn publish(&self, machine: &Machine, now: Instant) {
        if self.rollup.get().is_some() {
            return;
        }
        if let Some(series) = &self.series {
            series.state.set(machine.state_at(now).as_gauge());
        }
    }

    fn lock(&self) -> MutexGuard<'_, Machine> {
        // Every critical section leaves the machine consistent, so a poisoned lock is still usable.
        self.machine.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl std::fmt::Debug for Breaker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Breaker")
            .field("kind", &self.kind)
            .field("name", &self.name)
            .field("machine", &*self.lock())
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

#[cfg(test)]
mod tests;
