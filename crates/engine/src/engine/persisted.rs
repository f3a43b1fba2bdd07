//! The pipeline's part of `STATE_DIR` ([`gateway_core::persist`]): its open breakers — every board the
//! shared tier mirrors (providers, provider keys, so a parked quota too, each instance's engines,
//! the instances' cooldowns), and the reranker's (board `reranker`, this replica's own: not
//! shared) — and its premium spend of the last 24 h, out to plain entries and back at start.
//!
//! An open period is kept as its end in wall-clock time: restored, it ends when it would have
//! (a period that ended while the gateway was down is not restored: its breaker starts closed,
//! and the next call tells). A breaker the configuration no longer has (a key removed, an
//! instance renamed) is skipped.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use super::Inner;
use crate::fleet::breakers::boards;
use gateway_core::breaker::{Breaker, BreakerKind, Origin, SharedOpen, TripReason};
use gateway_core::persist::{unix_ms, OpenBreaker, Snapshot, SpendEntry};

/// Every open breaker, and the spend.
pub(super) fn export(inner: &Inner) -> (Vec<OpenBreaker>, Vec<SpendEntry>) {
    let (now, wall) = (Instant::now(), SystemTime::now());
    let mut open = Vec::new();
    for mirrored in boards(&inner.fanout) {
        let board = mirrored.board.id();
        for (name, breaker) in mirrored.breakers(&inner.fanout) {
            let (_, Some(period)) = breaker.shared_view() else {
                continue;
            };
            open.push(OpenBreaker {
                board: board.clone(),
                name,
                until_ms: unix_ms(wall + period.until.saturating_duration_since(now)),
                reason: period.reason.as_str().to_owned(),
                paused: period.paused,
            });
        }
    }
    if let Some(reranking) = &inner.reranking {
        let breaker = reranking.breaker();
        if let (_, Some(period)) = breaker.shared_view() {
            open.push(OpenBreaker {
                board: BreakerKind::Reranker.as_str().to_owned(),
                name: breaker.name().to_owned(),
                until_ms: unix_ms(wall + period.until.saturating_duration_since(now)),
                reason: period.reason.as_str().to_owned(),
                paused: period.paused,
            });
        }
    }
    (open, inner.fanout.premium.spend.export())
}

/// The breaker `entry` names: one of a mirrored board's, or the reranker's.
fn breaker_of(
    inner: &Inner,
    boards: &[crate::fleet::breakers::Mirrored<'_>],
    entry: &OpenBreaker,
) -> Option<Arc<Breaker>> {
    if entry.board == BreakerKind::Reranker.as_str() {
        return inner
            .reranking
            .as_ref()
            .map(|r| Arc::clone(r.breaker()))
            .filter(|b| b.name() == entry.name);
    }
    boards
        .iter()
        .find(|m| m.board.id() == entry.board)
        .and_then(|m| m.get_own(&inner.fanout, &entry.name))
}

/// What a restore took back.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Restored {
    /// Breakers open again.
    pub breakers: usize,
    /// Entries skipped: their period had ended, or their breaker is no longer configured.
    pub skipped: usize,
}

/// Opens again every breaker of `snapshot` whose period has not ended, and takes the spend back.
pub(super) fn restore(inner: &Inner, snapshot: &Snapshot) -> Restored {
    let (now, wall) = (Instant::now(), unix_ms(SystemTime::now()));
    let boards = boards(&inner.fanout);
    let mut restored = Restored::default();
    for entry in &snapshot.breakers {
        let breaker = breaker_of(inner, &boards, entry);
        let reason = TripReason::parse(&entry.reason);
        match (breaker, reason) {
            (Some(breaker), Some(reason)) if entry.until_ms > wall => {
                breaker.adopt_open(
                    SharedOpen {
                        until: now + Duration::from_millis(entry.until_ms - wall),
                        reason,
                        paused: entry.paused,
                    },
                    Origin::StateFile,
                );
                restored.breakers += 1;
            }
            _ => restored.skipped += 1,
        }
    }
    inner
        .fanout
        .premium
        .spend
        .restore(&snapshot.spend, snapshot.minutes_since_written());
    restored
}
