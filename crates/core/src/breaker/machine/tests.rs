//! The state machine's rules, driven by instants: no clock, no lock, no metrics.

use super::*;

const BASE: Duration = Duration::from_secs(10);
const MAX: Duration = Duration::from_secs(80);
const HEALTHY: Duration = Duration::from_secs(600);
const THRESHOLD: u32 = 3;
const QUOTA_PARK: Duration = Duration::from_secs(86_400);

fn policy() -> BreakerPolicy {
    BreakerPolicy {
        open_base: BASE,
        open_max: MAX,
        failure_threshold: THRESHOLD,
        jitter: 0.0,
        healthy_interval: HEALTHY,
        quota_park: QUOTA_PARK,
    }
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// A machine plus a clock the test moves by hand.
struct Rig {
    machine: Machine,
    now: Instant,
    policy: BreakerPolicy,
}

impl Rig {
    fn new() -> Self {
        let now = Instant::now();
        Self {
            machine: Machine::new(now),
            now,
            policy: policy(),
        }
    }

    fn advance(&mut self, by: Duration) {
        self.now += by;
    }

    fn admit(&mut self) -> Admission {
        self.machine.admit(self.now)
    }

    /// One admitted call that reports `signal`.
    fn call(&mut self, signal: Signal) -> Transition {
        let Admission::Admitted { probe } = self.admit() else {
            panic!("the call was rejected");
        };
        self.machine.record(self.now, signal, probe, &self.policy)
    }

    fn state(&self) -> BreakerState {
        self.machine.state_at(self.now)
    }

    fn snapshot(&self) -> Snapshot {
        self.machine.snapshot(self.now)
    }
}

#[test]
fn transient_failures_trip_only_at_the_threshold() {
    let mut rig = Rig::new();
    for _ in 1..THRESHOLD {
        assert_eq!(rig.call(Signal::TRANSIENT), Transition::None);
    }
    assert_eq!(rig.state(), BreakerState::Closed);
    assert_eq!(
        rig.call(Signal::TRANSIENT),
        Transition::Tripped(TripReason::Transient)
    );
    assert_eq!(rig.state(), BreakerState::Open);
    assert_eq!(rig.admit(), Admission::Rejected);
}

#[test]
fn a_stop_signal_trips_at_once() {
    let mut rig = Rig::new();
    assert_eq!(
        rig.call(Signal::stop(TripReason::Captcha)),
        Transition::Tripped(TripReason::Captcha)
    );
    assert_eq!(rig.snapshot().reason, Some(TripReason::Captcha));
    assert_eq!(rig.snapshot().open_for, Some(BASE));
}

#[test]
fn a_success_between_transient_failures_resets_the_run() {
    let mut rig = Rig::new();
    for _ in 1..THRESHOLD {
        rig.call(Signal::TRANSIENT);
    }
    rig.call(Signal::Success);
    assert_eq!(rig.snapshot().consecutive_failures, 0);
    for _ in 1..THRESHOLD {
        rig.call(Signal::TRANSIENT);
    }
    assert_eq!(rig.state(), BreakerState::Closed);
    rig.call(Signal::TRANSIENT);
    assert_eq!(rig.state(), BreakerState::Open);
}

#[test]
fn neutral_signals_neither_count_nor_reset_the_run() {
    let mut rig = Rig::new();
    for _ in 1..THRESHOLD {
        rig.call(Signal::TRANSIENT);
    }
    for _ in 0..100 {
        rig.call(Signal::Neutral);
    }
    assert_eq!(rig.snapshot().consecutive_failures, THRESHOLD - 1);
    rig.call(Signal::TRANSIENT);
    assert_eq!(rig.state(), BreakerState::Open);
}

#[test]
fn the_open_period_doubles_per_failed_probe_up_to_the_cap() {
    let mut rig = Rig::new();
    rig.call(Signal::stop(TripReason::RateLimited));
    for expected in [10, 20, 40, 80, 80, 80].map(secs) {
        assert_eq!(rig.snapshot().open_for, Some(expected));
        rig.advance(expected - Duration::from_millis(1));
        assert_eq!(
            rig.admit(),
            Admission::Rejected,
            "still open before {expected:?}"
        );
        rig.advance(Duration::from_millis(1));
        assert_eq!(rig.state(), BreakerState::HalfOpen);
        rig.call(Signal::TRANSIENT);
    }
    assert_eq!(rig.snapshot().trips, 7);
}

#[test]
fn the_server_hint_wins_when_longer() {
    let mut rig = Rig::new();
    rig.call(Signal::Stop {
        reason: TripReason::Quota,
        retry_after: Some(secs(45)),
    });
    assert_eq!(rig.snapshot().open_for, Some(secs(45)));
}

#[test]
fn an_absurd_hint_saturates_and_still_parks() {
    let mut rig = Rig::new();
    rig.call(Signal::Stop {
        reason: TripReason::Quota,
        retry_after: Some(Duration::MAX),
    });
    assert!(rig
        .snapshot()
        .open_for
        .is_some_and(|d| d > secs(30 * 86_400)));
}

#[test]
fn a_later_hint_while_open_extends_the_period_without_a_new_trip() {
    let mut rig = Rig::new();
    rig.call(Signal::stop(TripReason::RateLimited));
    let hint = Signal::Stop {
        reason: TripReason::RateLimited,
        retry_after: Some(secs(60)),
    };
    assert_eq!(
        rig.machine.record(rig.now, hint, false, &rig.policy),
        Transition::None
    );
    rig.machine.record(
        rig.now,
        Signal::stop(TripReason::RateLimited),
        false,
        &rig.policy,
    );
    rig.machine
        .record(rig.now, Signal::Success, false, &rig.policy);
    let snapshot = rig.snapshot();
    assert_eq!(snapshot.state, BreakerState::Open);
    assert_eq!(snapshot.open_for, Some(secs(60)));
    assert_eq!(snapshot.trips, 1);
}

#[test]
fn exactly_one_probe_is_admitted_and_its_success_is_a_recovery() {
    let mut rig = Rig::new();
    rig.call(Signal::stop(TripReason::Auth));
    rig.advance(BASE);
    assert_eq!(rig.admit(), Admission::Admitted { probe: true });
    assert_eq!(rig.admit(), Admission::Rejected, "one probe at a time");
    assert_eq!(
        rig.machine
            .record(rig.now, Signal::Success, true, &rig.policy),
        Transition::Recovered
    );
    assert_eq!(rig.state(), BreakerState::Closed);
    assert_eq!(rig.snapshot().reason, None);
    assert_eq!(rig.admit(), Admission::Admitted { probe: false });
}

#[test]
fn a_failed_probe_reopens_for_longer_with_its_own_reason() {
    for (failure, reason) in [
        (Signal::TRANSIENT, TripReason::Transient),
        (
            Signal::stop(TripReason::RateLimited),
            TripReason::RateLimited,
        ),
    ] {
        let mut rig = Rig::new();
        rig.call(Signal::stop(TripReason::AccessDenied));
        rig.advance(BASE);
        assert_eq!(rig.call(failure), Transition::Tripped(reason));
        let snapshot = rig.snapshot();
        assert_eq!(snapshot.open_for, Some(2 * BASE), "{failure:?}");
        assert_eq!(snapshot.reason, Some(reason));
        assert_eq!(snapshot.trips, 2);
    }
}

#[test]
fn a_released_or_neutral_probe_frees_the_slot_and_records_nothing() {
    let mut rig = Rig::new();
    rig.call(Signal::stop(TripReason::RateLimited));
    rig.advance(BASE);
    assert_eq!(rig.admit(), Admission::Admitted { probe: true });
    rig.machine.release_probe();
    assert_eq!(
        rig.admit(),
        Admission::Admitted { probe: true },
        "the slot was freed"
    );
    assert_eq!(
        rig.machine
            .record(rig.now, Signal::Neutral, true, &rig.policy),
        Transition::None
    );
    assert_eq!(
        rig.admit(),
        Admission::Admitted { probe: true },
        "a neutral probe frees it too"
    );
    assert_eq!(rig.state(), BreakerState::HalfOpen);
    assert_eq!(rig.snapshot().trips, 1);
}

#[test]
fn a_call_admitted_before_the_trip_does_not_close_the_breaker() {
    let mut rig = Rig::new();
    let Admission::Admitted { probe: straggler } = rig.admit() else {
        panic!("closed admits");
    };
    rig.call(Signal::stop(TripReason::RateLimited));
    rig.advance(BASE);
    assert_eq!(rig.admit(), Admission::Admitted { probe: true });
    rig.machine
        .record(rig.now, Signal::Success, straggler, &rig.policy);
    assert_eq!(rig.state(), BreakerState::HalfOpen);
    assert_eq!(rig.admit(), Admission::Rejected, "the probe is still out");
    rig.machine
        .record(rig.now, Signal::Success, true, &rig.policy);
    assert_eq!(rig.state(), BreakerState::Closed);
}

#[test]
fn a_successful_probe_halves_the_multiplier() {
    let mut rig = Rig::new();
    rig.call(Signal::stop(TripReason::RateLimited));
    for period in [10, 20, 40].map(secs) {
        assert_eq!(rig.snapshot().open_for, Some(period));
        rig.advance(period);
        if period < secs(40) {
            rig.call(Signal::TRANSIENT);
        }
    }
    assert_eq!(rig.call(Signal::Success), Transition::Recovered);
    // Without decay the multiplier would still be 8 (80 s): health counted once already.
    rig.call(Signal::stop(TripReason::Captcha));
    assert_eq!(rig.snapshot().open_for, Some(secs(40)));
    rig.advance(secs(40));
    rig.call(Signal::Success);
    rig.call(Signal::stop(TripReason::Captcha));
    assert_eq!(rig.snapshot().open_for, Some(secs(40)), "flapping keeps it");
}

#[test]
fn every_healthy_interval_spent_closed_halves_the_multiplier_again() {
    let mut rig = Rig::new();
    rig.call(Signal::stop(TripReason::RateLimited));
    for period in [10, 20, 40, 80].map(secs) {
        rig.advance(period);
        rig.call(Signal::TRANSIENT);
    }
    rig.advance(secs(80));
    rig.call(Signal::Success);
    // Five trips and one recovery leave the multiplier at 2^4 (still capped at 80 s); two healthy
    // intervals later it is 2^2.
    rig.advance(HEALTHY * 2);
    rig.call(Signal::stop(TripReason::RateLimited));
    assert_eq!(rig.snapshot().open_for, Some(secs(40)));
    rig.advance(secs(40));
    rig.call(Signal::Success);
    rig.advance(HEALTHY - secs(1));
    rig.call(Signal::stop(TripReason::RateLimited));
    assert_eq!(
        rig.snapshot().open_for,
        Some(secs(40)),
        "the probe's halving alone, not yet an interval"
    );
    rig.advance(secs(40));
    rig.call(Signal::Success);
    rig.advance(HEALTHY * 2);
    rig.call(Signal::stop(TripReason::RateLimited));
    assert_eq!(rig.snapshot().open_for, Some(secs(10)), "back to the base");
}

#[test]
fn a_spent_quota_without_a_reset_parks_for_the_quota_park_period() {
    let mut rig = Rig::new();
    rig.call(Signal::stop(TripReason::Quota));
    assert_eq!(rig.snapshot().open_for, Some(QUOTA_PARK));
    let mut rig = Rig::new();
    rig.call(Signal::Stop {
        reason: TripReason::Quota,
        retry_after: Some(secs(200_000)),
    });
    assert_eq!(
        rig.snapshot().open_for,
        Some(secs(200_000)),
        "the reset wins"
    );
}

#[test]
fn a_pause_parks_for_exactly_its_period_without_a_trip_or_recovery() {
    let mut rig = Rig::new();
    rig.machine.pause(rig.now, TripReason::RateLimited, secs(1));
    assert_eq!(rig.admit(), Admission::Rejected);
    rig.advance(Duration::from_millis(1001));
    assert_eq!(
        rig.call(Signal::Success),
        Transition::None,
        "not a recovery"
    );
    assert_eq!(rig.state(), BreakerState::Closed);
    assert_eq!(rig.snapshot().trips, 0);
}

#[test]
fn the_machine_remembers_when_a_call_last_told_it_something() {
    let mut rig = Rig::new();
    let start = rig.now;
    assert!(!rig.machine.heard_since(None));
    rig.advance(secs(1));
    rig.call(Signal::Neutral);
    assert!(!rig.machine.heard_since(None), "neutral says nothing");
    rig.call(Signal::Success);
    assert!(rig.machine.heard_since(None));
    assert!(rig.machine.heard_since(Some(start)));
    assert!(!rig.machine.heard_since(Some(rig.now)));
}

#[test]
fn an_operator_opens_for_exactly_the_period_asked_without_a_trip_then_one_probe() {
    let mut rig = Rig::new();
    rig.machine.force_open(rig.now, secs(30));
    assert_eq!(rig.state(), BreakerState::Open);
    let snapshot = rig.snapshot();
    assert_eq!(snapshot.reason, Some(TripReason::Operator));
    assert_eq!(snapshot.open_for, Some(secs(30)));
    assert_eq!(snapshot.trips, 0, "not a trip");
    assert_eq!(rig.admit(), Admission::Rejected);
    rig.advance(secs(30));
    assert_eq!(rig.state(), BreakerState::HalfOpen);
    assert_eq!(
        rig.call(Signal::Success),
        Transition::None,
        "its end is not a recovery"
    );
    assert_eq!(rig.state(), BreakerState::Closed);
}

#[test]
fn an_operator_closes_a_tripped_breaker_and_the_backoff_starts_over() {
    let mut rig = Rig::new();
    rig.call(Signal::stop(TripReason::RateLimited));
    rig.advance(BASE);
    rig.call(Signal::stop(TripReason::RateLimited));
    assert_eq!(rig.snapshot().open_for, Some(BASE * 2));
    rig.machine.force_close(rig.now);
    assert_eq!(rig.state(), BreakerState::Closed);
    assert_eq!(rig.snapshot().reason, None);
    rig.call(Signal::stop(TripReason::RateLimited));
    assert_eq!(
        rig.snapshot().open_for,
        Some(BASE),
        "the backoff starts over"
    );
}

fn shared_open(until: Instant, reason: TripReason) -> SharedOpen {
    SharedOpen {
        until,
        reason,
        paused: false,
    }
}

#[test]
fn another_replicas_open_period_is_taken_without_counting_a_trip() {
    let mut rig = Rig::new();
    let until = rig.now + secs(30);
    assert!(rig
        .machine
        .adopt_open(shared_open(until, TripReason::RateLimited)));
    assert_eq!(rig.state(), BreakerState::Open);
    assert_eq!(rig.admit(), Admission::Rejected);
    let snapshot = rig.snapshot();
    assert_eq!(snapshot.reason, Some(TripReason::RateLimited));
    assert_eq!(snapshot.open_for, Some(secs(30)));
    assert_eq!(snapshot.trips, 0, "the replica that tripped counted it");
    assert_eq!(rig.machine.shared_view().0, 0, "nothing of ours to publish");
    assert!(
        !rig.machine
            .adopt_open(shared_open(rig.now + secs(10), TripReason::Captcha)),
        "an earlier end never shortens the period"
    );
    rig.advance(secs(30));
    assert_eq!(rig.admit(), Admission::Admitted { probe: true });
}

#[test]
fn a_shared_period_closes_when_the_tier_forgets_it_but_an_unshared_one_stays() {
    let mut rig = Rig::new();
    rig.call(Signal::stop(TripReason::Captcha));
    let (epoch, open) = rig.machine.shared_view();
    assert_eq!(open.map(|o| o.reason), Some(TripReason::Captcha));
    assert!(
        !rig.machine.adopt_closed(rig.now),
        "not yet in the shared tier: its silence means nothing"
    );
    assert_eq!(rig.state(), BreakerState::Open);
    rig.machine.mark_shared(epoch);
    assert!(
        rig.machine.adopt_closed(rig.now),
        "another replica's probe closed it"
    );
    assert_eq!(rig.state(), BreakerState::Closed);
    assert_eq!(rig.admit(), Admission::Admitted { probe: false });
}

#[test]
fn every_change_of_our_own_moves_the_epoch_and_unshares_it() {
    let mut rig = Rig::new();
    rig.call(Signal::stop(TripReason::RateLimited));
    let (first, _) = rig.machine.shared_view();
    rig.machine.mark_shared(first);
    rig.advance(BASE);
    rig.call(Signal::Success);
    let (second, open) = rig.machine.shared_view();
    assert!(
        second > first && open.is_none(),
        "the probe's close is published"
    );
    rig.machine.mark_shared(first);
    assert!(
        !rig.machine.adopt_closed(rig.now),
        "a stale confirmation does not mark the new state shared"
    );
}

#[test]
fn a_period_is_shortened_only_down_to_the_servers_hint_and_never_when_not_ours() {
    let mut rig = Rig::new();
    rig.call(Signal::stop(TripReason::Captcha));
    let start = rig.now;
    assert!(rig.machine.shorten(rig.now, start + secs(4)));
    assert_eq!(rig.machine.snapshot(rig.now).open_for, Some(secs(4)));
    assert!(
        !rig.machine.shorten(rig.now, start + secs(6)),
        "never longer"
    );
    rig.advance(secs(4));
    assert_eq!(rig.state(), BreakerState::HalfOpen);
    let Admission::Admitted { probe: true } = rig.admit() else {
        panic!("the probe");
    };
    // A failed probe with a server hint of 30 s: the period (20 s doubled, hint 30 s) can come
    // forward to the hint, not before.
    rig.machine.record(
        rig.now,
        Signal::Stop {
            reason: TripReason::RateLimited,
            retry_after: Some(secs(30)),
        },
        true,
        &rig.policy,
    );
    assert!(
        !rig.machine.shorten(rig.now, rig.now + secs(5)),
        "30 s is the hint itself"
    );
    let mut paused = Rig::new();
    paused
        .machine
        .pause(paused.now, TripReason::RateLimited, secs(60));
    assert!(!paused.machine.shorten(paused.now, paused.now + secs(1)));
    let mut adopted = Rig::new();
    adopted.machine.adopt_open(SharedOpen {
        until: adopted.now + secs(60),
        reason: TripReason::Captcha,
        paused: false,
    });
    assert!(!adopted.machine.shorten(adopted.now, adopted.now + secs(1)));
}
