//! How long a tripped breaker stays open: the first open period, its doubling per consecutive
//! trip up to a cap, random jitter so breakers tripped together do not probe together, and how fast
//! health shrinks the doubling again (as Envoy's outlier detection does: a successful probe and
//! every healthy interval each halve the multiplier). Pure arithmetic, tested without a clock.

use std::time::Duration;

/// How breakers trip and how long they stay open. Shared by every breaker of a board.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BreakerPolicy {
    /// Open period of the first trip (`BREAKER_OPEN_SECONDS`).
    pub open_base: Duration,
    /// Cap of the doubling open period (`BREAKER_MAX_OPEN_SECONDS`); a server hint may exceed it.
    pub open_max: Duration,
    /// Transient failures in a row that trip (`BREAKER_FAILURE_THRESHOLD`); 0 behaves as 1.
    pub failure_threshold: u32,
    /// Fraction (0..=1) of the backoff added at random. 0 disables jitter (tests).
    pub jitter: f64,
    /// Each full interval a breaker stays closed halves its open-period multiplier once more (a
    /// successful probe already halved it once), so an upstream that recovered is not kept out for
    /// long after its next short trip.
    pub healthy_interval: Duration,
    /// How long a spent quota parks the upstream when it gave no reset time of its own
    /// (`QUOTA_PARK_SECONDS`): a quota does not come back within minutes.
    pub quota_park: Duration,
}

impl BreakerPolicy {
    /// How long a breaker stays open after its `consecutive_trips`-th trip in a row, given the
    /// server's own hint. The hint is not capped: a quota that resets in a month keeps the provider
    /// parked for a month.
    pub(crate) fn open_period(&self, consecutive_trips: u32, hint: Option<Duration>) -> Duration {
        let doublings = consecutive_trips.saturating_sub(1).min(31);
        let backoff = self
            .open_base
            .checked_mul(1 << doublings)
            .map_or(self.open_max, |d| d.min(self.open_max));
        let backoff = backoff.saturating_add(self.jitter_for(backoff));
        hint.map_or(backoff, |hint| hint.max(backoff))
    }

    /// How many halvings of the multiplier `closed_for` of continuous health earns.
    pub(crate) fn healthy_halvings(&self, closed_for: Duration) -> u32 {
        if self.healthy_interval.is_zero() {
            return u32::MAX;
        }
        u32::try_from(closed_for.as_nanos() / self.healthy_interval.as_nanos()).unwrap_or(u32::MAX)
    }

    /// The transient failures in a row that trip.
    pub(crate) fn threshold(&self) -> u32 {
        self.failure_threshold.max(1)
    }

    fn jitter_for(&self, backoff: Duration) -> Duration {
        if self.jitter.is_nan() || self.jitter <= 0.0 {
            return Duration::ZERO;
        }
        let fraction = self.jitter.min(1.0) * rand::random::<f64>();
        Duration::try_from_secs_f64(backoff.as_secs_f64() * fraction).unwrap_or(Duration::ZERO)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(jitter: f64) -> BreakerPolicy {
        BreakerPolicy {
            open_base: Duration::from_secs(10),
            open_max: Duration::from_secs(80),
            failure_threshold: 3,
            jitter,
            healthy_interval: Duration::from_secs(600),
            quota_park: Duration::from_secs(86_400),
        }
    }

    #[test]
    fn the_period_doubles_per_consecutive_trip_up_to_the_cap() {
        let periods: Vec<u64> = (1..=6)
            .map(|n| policy(0.0).open_period(n, None).as_secs())
            .collect();
        assert_eq!(periods, [10, 20, 40, 80, 80, 80]);
        assert_eq!(
            policy(0.0).open_period(u32::MAX, None),
            Duration::from_secs(80)
        );
    }

    #[test]
    fn a_longer_server_hint_wins_and_is_not_capped() {
        let p = policy(0.0);
        assert_eq!(
            p.open_period(1, Some(Duration::from_secs(5))),
            Duration::from_secs(10)
        );
        let month = Duration::from_secs(30 * 86_400);
        assert_eq!(p.open_period(1, Some(month)), month);
        assert_eq!(p.open_period(1, Some(Duration::MAX)), Duration::MAX);
    }

    #[test]
    fn jitter_adds_at_most_its_fraction() {
        for _ in 0..50 {
            let period = policy(0.5).open_period(1, None);
            assert!(
                (Duration::from_secs(10)..=Duration::from_secs(15)).contains(&period),
                "{period:?}"
            );
        }
    }

    #[test]
    fn every_full_healthy_interval_earns_one_halving() {
        let p = policy(0.0);
        assert_eq!(p.healthy_halvings(Duration::from_secs(599)), 0);
        assert_eq!(p.healthy_halvings(Duration::from_secs(600)), 1);
        assert_eq!(p.healthy_halvings(Duration::from_secs(1800)), 3);
        let no_interval = BreakerPolicy {
            healthy_interval: Duration::ZERO,
            ..p
        };
        assert_eq!(no_interval.healthy_halvings(Duration::ZERO), u32::MAX);
    }

    #[test]
    fn a_zero_threshold_behaves_as_one() {
        let p = BreakerPolicy {
            failure_threshold: 0,
            ..policy(0.0)
        };
        assert_eq!(p.threshold(), 1);
    }
}
