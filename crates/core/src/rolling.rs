//! Sums over a **rolling 24 h** (not a calendar day: no midnight rush, the same rule whatever the
//! time zone), counted per minute: what a client's premium budget (calls and US dollars) and the
//! gateway's daily premium spend cap are measured with.
//!
//! Amounts are kept per minute, not one by one: a [`Window`] holds at most one entry per minute of
//! the day (1 441 entries) however much it counts, where a log of every call would grow with the
//! call rate. The price is a minute's resolution, on the safe side: a minute's amounts leave the
//! window when the last of them would (at most a minute later than the first). Time is tokio's
//! (paused in tests). Hand-written: a deque of per-minute sums is smaller than any crate's API.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

/// The window.
pub const DAY: Duration = Duration::from_secs(24 * 60 * 60);

/// The resolution amounts are counted at.
pub const MINUTE: Duration = Duration::from_secs(60);

/// Minutes an amount stays in the window: the window's, plus the minute it was counted in (its
/// last part leaves the window at the end of that minute plus 24 h).
pub const MINUTES_KEPT: u64 = DAY.as_secs() / MINUTE.as_secs() + 1;

/// Numbers minutes from a start (minute 0 begins there).
#[derive(Debug, Clone, Copy)]
pub struct Minutes {
    origin: Instant,
}

impl Default for Minutes {
    fn default() -> Self {
        Self {
            origin: Instant::now(),
        }
    }
}

impl Minutes {
    /// The minute `Instant::now()` falls in. Numbered from [`MINUTES_KEPT`], so that a day of
    /// amounts from before the start (restored from `STATE_DIR`) still has minute numbers.
    pub fn now(&self) -> u64 {
        Instant::now().duration_since(self.origin).as_secs() / MINUTE.as_secs() + MINUTES_KEPT
    }
}

/// One sum over the last 24 h: an amount per minute that had one, oldest first, and their total.
#[derive(Debug, Default, Clone)]
pub struct Window {
    minutes: VecDeque<(u64, u64)>,
    total: u64,
}

impl Window {
    /// Drops the minutes that have left the window by minute `now`.
    fn prune(&mut self, now: u64) {
        while let Some(&(minute, amount)) = self.minutes.front() {
            if minute + MINUTES_KEPT > now {
                break;
            }
            self.minutes.pop_front();
            self.total = self.total.saturating_sub(amount);
        }
    }

    /// Counts `amount` in minute `now`.
    pub fn add(&mut self, now: u64, amount: u64) {
        if amount == 0 {
            return;
        }
        self.prune(now);
        match self.minutes.back_mut() {
            Some((minute, sum)) if *minute == now => *sum = sum.saturating_add(amount),
            _ => self.minutes.push_back((now, amount)),
        }
        self.total = self.total.saturating_add(amount);
    }

    /// What was counted in the 24 h up to minute `now`.
    pub fn total(&mut self, now: u64) -> u64 {
        self.prune(now);
        self.total
    }

    /// Each minute's amount still in the window at minute `now`, as `[minutes ago, amount]`,
    /// oldest first: what `STATE_DIR` keeps.
    pub fn export(&mut self, now: u64) -> Vec<[u64; 2]> {
        self.prune(now);
        self.minutes
            .iter()
            .map(|&(minute, amount)| [now.saturating_sub(minute), amount])
            .collect()
    }

    /// Takes back what [`Window::export`] gave, `elapsed` minutes later, at minute `now`: the
    /// amounts that have left the window meanwhile are dropped. For an empty window (at start);
    /// entries must come oldest first.
    pub fn restore(&mut self, now: u64, elapsed: u64, entries: &[[u64; 2]]) {
        for &[ago, amount] in entries {
            let ago = ago.saturating_add(elapsed);
            if ago < MINUTES_KEPT && ago <= now {
                self.add(now - ago, amount);
            }
        }
        self.prune(now);
    }

    /// Entries held (what its memory grows with).
    #[cfg(test)]
    pub(crate) fn entries(&self) -> usize {
        self.minutes.len()
    }
}

/// US dollars as whole micro-dollars, the unit windows count money in.
pub fn micro_usd(usd: f64) -> u64 {
    if usd.is_finite() && usd > 0.0 {
        (usd * 1e6).round() as u64
    } else {
        0
    }
}

/// Micro-dollars as US dollars.
pub fn usd(micro: u64) -> f64 {
    micro as f64 / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn an_amount_counts_for_24_hours_after_its_minute() {
        let clock = Minutes::default();
        let mut window = Window::default();
        window.add(clock.now(), 2);
        tokio::time::advance(Duration::from_secs(3600)).await;
        window.add(clock.now(), 1);
        assert_eq!(window.total(clock.now()), 3);
        tokio::time::advance(DAY - Duration::from_secs(3600)).await;
        assert_eq!(
            window.total(clock.now()),
            3,
            "the first minute ends 24 h after it began"
        );
        tokio::time::advance(MINUTE).await;
        assert_eq!(window.total(clock.now()), 1);
        tokio::time::advance(Duration::from_secs(3600)).await;
        assert_eq!(window.total(clock.now()), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_window_holds_one_entry_per_minute_however_much_it_counts() {
        let clock = Minutes::default();
        let mut window = Window::default();
        for _ in 0..2 * 24 * 60 * 6 {
            window.add(clock.now(), 1000);
            tokio::time::advance(Duration::from_secs(10)).await;
        }
        assert_eq!(window.total(clock.now()), 6_000 * 24 * 60);
        assert!(
            window.entries() <= MINUTES_KEPT as usize,
            "{}",
            window.entries()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_exported_window_restored_later_keeps_what_is_still_in_the_day() {
        let clock = Minutes::default();
        let mut window = Window::default();
        window.add(clock.now(), 5);
        tokio::time::advance(Duration::from_secs(20 * 3600)).await;
        window.add(clock.now(), 2);
        let exported = window.export(clock.now());
        assert_eq!(exported, [[20 * 60, 5], [0, 2]]);

        // A new process (its own clock), 5 h later: the first minute has left the day.
        let fresh = Minutes::default();
        let mut restored = Window::default();
        restored.restore(fresh.now(), 5 * 60, &exported);
        assert_eq!(restored.total(fresh.now()), 2);
        // 1 h later: both were still in.
        let mut restored = Window::default();
        restored.restore(fresh.now(), 60, &exported);
        assert_eq!(restored.total(fresh.now()), 7);
        tokio::time::advance(Duration::from_secs(3 * 3600 + 60)).await;
        assert_eq!(restored.total(fresh.now()), 2, "and it keeps ageing");
    }

    #[test]
    fn money_is_counted_in_micro_dollars() {
        assert_eq!(micro_usd(0.005), 5_000);
        assert_eq!(micro_usd(-1.0), 0);
        assert_eq!(micro_usd(f64::NAN), 0);
        assert!((usd(micro_usd(12.345678)) - 12.345678).abs() < 1e-9);
    }
}
