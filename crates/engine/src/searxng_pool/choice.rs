//! The rule that picks the SearXNG instance for the next attempt, pure: it sees one [`Candidate`]
//! per instance (a snapshot taken by the pool) and the time, and draws random numbers only through
//! the `pick` function it is given, so its tests decide the draws and run on a paused clock.
//!
//! In order:
//! 1. Only instances that may take a call now (not cooling down, or holding this call's permit).
//! 2. Not one this call already tried, while there is another (a retry goes elsewhere).
//! 3. A trickle: an instance sent nothing for [`TRICKLE_AFTER`] gets the call (the one idle
//!    longest), so every instance's health and latency stay known however the others compare.
//! 4. Fewest excluded engines: an instance where the engines the request needs are not open is
//!    preferred over one where some are.
//! 5. Power of two choices: two of the remaining instances drawn at random, the one with the lower
//!    cost (in-flight calls + 1) × recent latency wins. Drawing two instead of taking the global
//!    best keeps concurrent requests, which all see the same snapshot, from stampeding one instance.

use std::time::Duration;

use tokio::time::Instant;

/// An instance that has been sent nothing for this long gets the next call.
pub(crate) const TRICKLE_AFTER: Duration = Duration::from_secs(1);

/// What the rule knows of one instance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Candidate {
    /// It may take a call now: its cooldown is not open (or this call holds its permit).
    pub(crate) available: bool,
    /// This call already sent it an attempt.
    pub(crate) tried: bool,
    /// How many of the engines the request needs have an open breaker there.
    pub(crate) excluded: usize,
    /// Calls it is answering now.
    pub(crate) in_flight: usize,
    /// Its recent latency; `None` before its first answer.
    pub(crate) latency: Option<Duration>,
    /// When it was last sent an attempt; `None` if never.
    pub(crate) last_sent: Option<Instant>,
}

impl Candidate {
    /// The power-of-two-choices cost: in-flight calls (this one included) × recent latency. An
    /// instance without a latency yet costs nothing, so it is tried early.
    fn cost(&self) -> f64 {
        (self.in_flight as f64 + 1.0) * self.latency.map_or(0.0, |l| l.as_secs_f64())
    }

    fn idle_since(&self, now: Instant) -> bool {
        self.last_sent
            .is_none_or(|at| now.saturating_duration_since(at) >= TRICKLE_AFTER)
    }
}

/// The index of the instance for the next attempt, or `None` when none may take it. `pick(n)`
/// returns a number in `0..n` (random in production).
pub(crate) fn choose(
    candidates: &[Candidate],
    now: Instant,
    pick: &mut dyn FnMut(usize) -> usize,
) -> Option<usize> {
    let available: Vec<usize> = (0..candidates.len())
        .filter(|&i| candidates[i].available)
        .collect();
    let untried: Vec<usize> = available
        .iter()
        .copied()
        .filter(|&i| !candidates[i].tried)
        .collect();
    let open = if untried.is_empty() {
        available
    } else {
        untried
    };
    match open.as_slice() {
        [] => return None,
        [only] => return Some(*only),
        _ => {}
    }
    let idle = open
        .iter()
        .copied()
        .filter(|&i| candidates[i].idle_since(now))
        .min_by_key(|&i| candidates[i].last_sent);
    if idle.is_some() {
        return idle;
    }
    let fewest = open.iter().map(|&i| candidates[i].excluded).min()?;
    let best: Vec<usize> = open
        .into_iter()
        .filter(|&i| candidates[i].excluded == fewest)
        .collect();
    if best.len() == 1 {
        return best.first().copied();
    }
    let first = pick(best.len()).min(best.len() - 1);
    let mut second = pick(best.len() - 1).min(best.len() - 2);
    if second >= first {
        second += 1;
    }
    let (a, b) = (best[first], best[second]);
    Some(if candidates[b].cost() < candidates[a].cost() {
        b
    } else {
        a
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ms(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    /// An available, untried instance with every engine, idle, answering in `latency_ms`, sent a
    /// call just now.
    fn healthy(latency_ms: u64) -> Candidate {
        Candidate {
            available: true,
            tried: false,
            excluded: 0,
            in_flight: 0,
            latency: Some(ms(latency_ms)),
            last_sent: Some(Instant::now()),
        }
    }

    /// Draws that always take the first and second of the list.
    fn in_order() -> impl FnMut(usize) -> usize {
        |_| 0
    }

    #[tokio::test(start_paused = true)]
    async fn an_instance_cooling_down_is_never_chosen_and_none_left_is_none() {
        let mut cooling = healthy(1);
        cooling.available = false;
        let others = [cooling, healthy(50)];
        assert_eq!(choose(&others, Instant::now(), &mut in_order()), Some(1));
        assert_eq!(
            choose(&[cooling, cooling], Instant::now(), &mut in_order()),
            None
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_retry_goes_to_another_instance_when_there_is_one() {
        let mut tried = healthy(1);
        tried.tried = true;
        assert_eq!(
            choose(&[tried, healthy(90)], Instant::now(), &mut in_order()),
            Some(1),
            "the faster instance already failed this call"
        );
        assert_eq!(
            choose(&[tried], Instant::now(), &mut in_order()),
            Some(0),
            "the only instance gets the retry"
        );
        let mut cooling = healthy(1);
        cooling.available = false;
        assert_eq!(
            choose(&[tried, cooling], Instant::now(), &mut in_order()),
            Some(0),
            "the other one is cooling down"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn two_choices_prefer_fewer_calls_in_flight_times_latency() {
        let mut busy = healthy(10);
        busy.in_flight = 5;
        let calm = healthy(20);
        // Whichever order the two are drawn in, (5 + 1) × 10 ms loses to (0 + 1) × 20 ms.
        assert_eq!(choose(&[busy, calm], Instant::now(), &mut |_| 0), Some(1));
        assert_eq!(
            choose(&[busy, calm], Instant::now(), &mut |n| n - 1),
            Some(1)
        );
        let slow = healthy(200);
        assert_eq!(choose(&[slow, busy], Instant::now(), &mut |_| 0), Some(1));
    }

    #[tokio::test(start_paused = true)]
    async fn only_the_two_drawn_instances_are_compared() {
        let fastest = healthy(1);
        let (a, b) = (healthy(30), healthy(20));
        // Draws 1 then 1 (of the two left after 1): instances 1 and 2; the fastest was not drawn.
        assert_eq!(
            choose(&[fastest, a, b], Instant::now(), &mut |_| 1),
            Some(2)
        );
        assert_eq!(
            choose(&[fastest, a, b], Instant::now(), &mut |_| 0),
            Some(0)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_instance_with_the_needed_engines_open_is_preferred_over_one_without() {
        let mut blocked = healthy(1);
        blocked.excluded = 1;
        let whole = healthy(100);
        assert_eq!(
            choose(&[blocked, whole], Instant::now(), &mut |_| 0),
            Some(1)
        );
        let mut also_blocked = healthy(100);
        also_blocked.excluded = 2;
        assert_eq!(
            choose(&[also_blocked, blocked], Instant::now(), &mut |_| 0),
            Some(1),
            "fewest excluded when none has them all"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_instance_idle_for_the_trickle_period_gets_the_next_call() {
        let started = Instant::now();
        let mut slow = healthy(500);
        slow.excluded = 1;
        let fast = healthy(1);
        let candidates = [slow, fast];
        assert_eq!(choose(&candidates, started, &mut |_| 0), Some(1));
        tokio::time::advance(TRICKLE_AFTER - ms(1)).await;
        assert_eq!(choose(&candidates, Instant::now(), &mut |_| 0), Some(1));
        tokio::time::advance(ms(1)).await;
        let mut fast_now = fast;
        fast_now.last_sent = Some(Instant::now());
        assert_eq!(
            choose(&[slow, fast_now], Instant::now(), &mut |_| 0),
            Some(0),
            "the slow, partly blocked instance is sent a call after a second without one"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn instances_never_sent_a_call_go_first_the_longest_idle_before_the_others() {
        let mut fresh = healthy(0);
        fresh.last_sent = None;
        fresh.latency = None;
        tokio::time::advance(TRICKLE_AFTER * 3).await;
        let mut old = healthy(1);
        old.last_sent = Some(Instant::now() - TRICKLE_AFTER * 2);
        let recent = healthy(1);
        assert_eq!(
            choose(&[recent, old, fresh], Instant::now(), &mut |_| 0),
            Some(2)
        );
        assert_eq!(choose(&[recent, old], Instant::now(), &mut |_| 0), Some(1));
    }

    #[test]
    fn draws_out_of_range_are_clamped() {
        let now = Instant::now();
        let candidates = [healthy(10), healthy(10), healthy(10)];
        let chosen = choose(&candidates, now, &mut |n| n + 7);
        assert!(chosen.is_some_and(|i| i < 3));
    }
}
