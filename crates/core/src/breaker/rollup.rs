//! A breaker that stands for others too: a premium provider as a whole, whose state is what the
//! dashboard, the "breaker stuck open" alert and `/status` read (`circuit_breaker_state` and
//! `circuit_breaker_recovery_total` of `kind="provider"`), derived from its own breaker (what
//! concerns the provider itself: down, slow, garbage) and its members' (the keys of its pool: a
//! bad key, a spent rate or quota). The derived state is no machine of its own, so it can never
//! disagree with the breakers that decide.
//!
//! The rule ([`derive`]): the members are as shut as the least shut of them — closed while one is
//! closed, half-open while one is due its probe, open only while every one is open or parked —
//! and the whole is as shut as the worse of that and its own breaker. With one member the whole
//! reads as that member does: open on its trip, half-open at its probe, closed again by the
//! probe's success, open again (for longer) after a failed one.
//!
//! A recovery of the whole is its derived state going back to closed on a successful probe (its
//! own or a member's): counted once, however many members recover, and not when an ended pause,
//! an operator's close or another replica's probe closes it — as for a single breaker. Every
//! change of the whole or of a member runs under the whole's derivation lock, so the change and
//! the derivation that follows it are one step for every other observer.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::machine::{BreakerState, Snapshot};
use super::Breaker;

/// What a breaker standing for members keeps: the members, and its derived state as last
/// published.
pub(super) struct Rollup {
    members: Vec<Arc<Breaker>>,
    /// Held while a change of the whole or of a member is made and derived again.
    last: Mutex<BreakerState>,
}

impl Rollup {
    /// The members it stands for.
    pub(super) fn members(&self) -> &[Arc<Breaker>] {
        &self.members
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, BreakerState> {
        // A state is a plain value: a poisoned lock still holds a consistent one.
        self.last.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl std::fmt::Debug for Rollup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.members.iter().map(|m| m.name()).collect();
        f.debug_struct("Rollup").field("members", &names).finish()
    }
}

/// The whole's snapshot from its own breaker's and its members', read at the same instant. Its
/// `trips` are its own and its members' (how often something shut it), its consecutive failures
/// its own (transient failures concern the whole).
pub(super) fn derive(own: Snapshot, members: &[Snapshot]) -> Snapshot {
    let trips = own.trips + members.iter().map(|m| m.trips).sum::<u64>();
    let shut = match members.iter().min_by_key(|m| shutness(m)) {
        // Ties go to its own breaker: its reason is the one that concerns the whole.
        Some(least) if shutness(least) > shutness(&own) => least,
        _ => &own,
    };
    Snapshot {
        state: shut.state,
        reason: shut.reason,
        open_for: shut.open_for,
        trips,
        consecutive_failures: own.consecutive_failures,
    }
}

/// How shut a breaker is: by state, then by how long it stays open.
fn shutness(snapshot: &Snapshot) -> (i64, Duration) {
    (
        snapshot.state.as_gauge(),
        snapshot.open_for.unwrap_or_default(),
    )
}

impl Breaker {
    /// Makes this breaker stand for `members` too (a provider for the keys of its pool): from now
    /// on its [`Breaker::state`], [`Breaker::snapshot`] and state gauge are derived ([`derive`]),
    /// and its recoveries counted as the whole recovers. Its own machine still decides its
    /// admissions and is what the shared tier and `STATE_DIR` keep. Done once: later calls do
    /// nothing (`members` is not called), a provider's keys being fixed for the process.
    pub fn derive_from(self: &Arc<Self>, members: impl FnOnce() -> Vec<Arc<Breaker>>) {
        if self.rollup.get().is_some() {
            return;
        }
        let mut linked = false;
        let rollup = self.rollup.get_or_init(|| {
            linked = true;
            Rollup {
                members: members(),
                last: Mutex::new(self.lock().state_at(Instant::now())),
            }
        });
        if !linked {
            return;
        }
        for member in rollup.members() {
            // A member stands in one whole; a second link would be a wiring mistake, ignored.
            let _ = member.parent.set(Arc::downgrade(self));
        }
        self.under_whole(|| ((), false));
    }

    /// Counts a call the whole did not make because none of its members admitted it (a provider
    /// none of whose keys is usable): a rejection of the whole, as one by its own breaker is.
    pub fn reject_for_members(&self) {
        if let Some(series) = &self.series {
            series.rejections.inc();
        }
    }

    /// The whole this breaker's changes are derived into: itself when it stands for members,
    /// else its parent when it has one.
    fn whole(&self) -> Option<Whole<'_>> {
        if let Some(rollup) = self.rollup.get() {
            return Some(Whole::Itself(rollup));
        }
        let parent = self.parent.get()?.upgrade()?;
        parent.rollup.get()?;
        Some(Whole::Parent(parent))
    }

    /// Makes a change to this breaker (`change` returns its result and whether it was a
    /// recovery) under the derivation lock of the whole it belongs to, then derives and publishes
    /// the whole's state again. Without a whole, just the change.
    pub(super) fn under_whole<T>(&self, change: impl FnOnce() -> (T, bool)) -> T {
        let Some(whole) = self.whole() else {
            return change().0;
        };
        let (breaker, rollup) = match &whole {
            Whole::Itself(rollup) => (self, *rollup),
            Whole::Parent(parent) => match parent.rollup.get() {
                Some(rollup) => (&**parent, rollup),
                None => return change().0,
            },
        };
        let mut last = rollup.lock();
        let (out, recovered) = change();
        breaker.publish_derived(rollup, &mut last, recovered);
        out
    }

    /// The whole's snapshot now.
    pub(super) fn derived_snapshot(&self, rollup: &Rollup, now: Instant) -> Snapshot {
        // One lock at a time: a member's lock is never taken under another breaker's.
        let own = self.lock().snapshot(now);
        let members: Vec<Snapshot> = rollup
            .members()
            .iter()
            .map(|m| m.lock().snapshot(now))
            .collect();
        derive(own, &members)
    }

    /// Sets the whole's gauge from its derived state; a change to closed that a probe's success
    /// (`recovered`) made is one recovery of the whole.
    fn publish_derived(&self, rollup: &Rollup, last: &mut BreakerState, recovered: bool) {
        let derived = self.derived_snapshot(rollup, Instant::now()).state;
        if derived != *last {
            let recovery = recovered && derived == BreakerState::Closed;
            if let Some(series) = &self.series {
                if recovery {
                    series.recoveries.inc();
                }
            }
            tracing::info!(
                kind = self.kind.as_str(),
                name = %self.name,
                from = ?*last,
                to = ?derived,
                recovery,
                "circuit breaker state of the whole (its own breaker and its members') changed"
            );
            *last = derived;
        }
        if let Some(series) = &self.series {
            series.state.set(derived.as_gauge());
        }
    }
}

/// The whole a breaker belongs to.
enum Whole<'a> {
    /// It stands for members itself.
    Itself(&'a Rollup),
    /// It is a member of this one.
    Parent(Arc<Breaker>),
}

#[cfg(test)]
mod tests;
