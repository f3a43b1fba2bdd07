//! The slow threshold: how long the fallback waits for a SearXNG answer before it starts alongside
//! the still-running call — fixed (`SEARXNG_SLOW_SECONDS`), or `auto` from SearXNG's recent latency
//! — and the hedge, which does not wait at all when the instance has lately been slow to answer
//! (`SEARXNG_HEDGE_SECONDS`).

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use crate::settings::{Hedge, SlowThreshold};

const WINDOW: usize = 128;
const FLOOR: Duration = Duration::from_secs(1);

/// A ring of recent SearXNG call durations.
#[derive(Debug, Default)]
pub(crate) struct LatencyWindow {
    samples: Mutex<VecDeque<Duration>>,
}

impl LatencyWindow {
    /// Records one SearXNG call.
    pub(crate) fn record(&self, took: Duration) {
        let mut samples = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        if samples.len() == WINDOW {
            samples.pop_front();
        }
        samples.push_back(took);
    }

    /// The 95th percentile of the window, if there are samples.
    pub(crate) fn p95(&self) -> Option<Duration> {
        // Asked on every miss: the rank is selected (linear), not found by sorting the window.
        let mut samples: Vec<Duration> = {
            let samples = self.samples.lock().unwrap_or_else(|p| p.into_inner());
            samples.iter().copied().collect()
        };
        if samples.is_empty() {
            return None;
        }
        let index = ((samples.len() as f64) * 0.95).ceil() as usize;
        let (_, p95, _) = samples.select_nth_unstable(index.saturating_sub(1));
        Some(*p95)
    }

    /// The wait before the fallback starts alongside SearXNG, for a request with `budget`.
    pub(crate) fn slow_threshold(&self, setting: SlowThreshold, budget: Duration) -> Duration {
        match setting {
            SlowThreshold::Fixed(wait) => wait.min(budget),
            SlowThreshold::Auto => {
                let ceiling = (budget / 2).max(Duration::from_millis(1));
                // Without history, wait twice the floor: a cold start should not spend on premium
                // calls a normal SearXNG would have made unnecessary.
                let guess = self.p95().map_or(FLOOR * 2, |p95| p95 * 2);
                guess.max(FLOOR).min(ceiling)
            }
        }
    }
}

/// Whether a search hedges — starts the fallback alongside SearXNG at once — given how long the
/// instance it goes to has lately taken to answer (`pool::Instance::answer_time`, `None` before
/// its first answer) and the slow threshold the search would otherwise wait (`slow_wait`).
/// Waiting for the threshold would only add to the client's wait when the answer is expected late
/// anyway; the estimate falls with every fast answer, so hedging stops as soon as SearXNG is fast
/// again. By default (`auto`) the bar is that threshold: the recent answer time (a mean that
/// follows a slowdown within a few answers) against 2 × the p95 of the last 128 calls, so an
/// instance that is always slow is not hedged — its threshold grew with it — and a sudden
/// slowdown is.
pub(crate) fn hedges(setting: Hedge, answer_time: Option<Duration>, slow_wait: Duration) -> bool {
    match (setting, answer_time) {
        (Hedge::AtSlowThreshold, Some(answer_time)) => answer_time >= slow_wait,
        (Hedge::Above(bar), Some(answer_time)) => answer_time >= bar,
        (Hedge::Off, _) | (_, None) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_threshold_is_twice_p95_within_bounds() {
        let w = LatencyWindow::default();
        let budget = Duration::from_secs(30);
        assert_eq!(
            w.slow_threshold(SlowThreshold::Auto, budget),
            Duration::from_secs(2)
        );
        for ms in 1..=100 {
            w.record(Duration::from_millis(ms * 10));
        }
        assert_eq!(w.p95(), Some(Duration::from_millis(950)));
        assert_eq!(
            w.slow_threshold(SlowThreshold::Auto, budget),
            Duration::from_millis(1900)
        );
        assert_eq!(
            w.slow_threshold(SlowThreshold::Auto, Duration::from_secs(2)),
            Duration::from_secs(1)
        );
        let fast = LatencyWindow::default();
        fast.record(Duration::from_millis(5));
        assert_eq!(fast.slow_threshold(SlowThreshold::Auto, budget), FLOOR);
        assert_eq!(
            w.slow_threshold(SlowThreshold::Fixed(Duration::from_millis(300)), budget),
            Duration::from_millis(300)
        );
    }

    #[test]
    fn a_search_hedges_only_when_the_instance_has_lately_answered_at_or_past_the_bar() {
        let wait = Duration::from_secs(2);
        let bar = Hedge::Above(Duration::from_millis(800));
        assert!(hedges(bar, Some(Duration::from_millis(800)), wait));
        assert!(hedges(bar, Some(Duration::from_secs(2)), wait));
        assert!(!hedges(bar, Some(Duration::from_millis(799)), wait));
        assert!(
            !hedges(bar, None, wait),
            "no answer yet: nothing says it is slow"
        );
        assert!(!hedges(Hedge::Off, Some(Duration::from_secs(20)), wait));
        let auto = Hedge::AtSlowThreshold;
        assert!(hedges(auto, Some(Duration::from_secs(2)), wait));
        assert!(
            !hedges(auto, Some(Duration::from_millis(1999)), wait),
            "expected before the threshold: the fallback waits for it"
        );
        assert!(!hedges(auto, None, wait));
    }

    /// `auto` follows the threshold: an instance that has always answered in 1.5 s has a threshold
    /// of 3 s and is not hedged; the same instance after a sudden slowdown to 4 s is.
    #[test]
    fn auto_hedges_a_sudden_slowdown_but_not_an_instance_that_is_always_slow() {
        let w = LatencyWindow::default();
        for _ in 0..WINDOW {
            w.record(Duration::from_millis(1500));
        }
        let wait = w.slow_threshold(SlowThreshold::Auto, Duration::from_secs(30));
        assert_eq!(wait, Duration::from_secs(3));
        let auto = Hedge::AtSlowThreshold;
        assert!(!hedges(auto, Some(Duration::from_millis(1500)), wait));
        assert!(hedges(auto, Some(Duration::from_secs(4)), wait));
    }

    #[test]
    fn window_keeps_only_recent_samples() {
        let w = LatencyWindow::default();
        for _ in 0..WINDOW {
            w.record(Duration::from_secs(10));
        }
        for _ in 0..WINDOW {
            w.record(Duration::from_millis(10));
        }
        assert_eq!(w.p95(), Some(Duration::from_millis(10)));
    }
}
