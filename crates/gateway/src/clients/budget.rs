//! Per-client premium budgets: `PREMIUM_CALLS_PER_DAY` premium API calls in any **rolling 24 h**
//! (not a calendar day: no midnight rush, and the same rule whatever the time zone). Each premium
//! call made for a client's request is counted in the minute it was made; a client whose last 24 h
//! hold its allowance is *spent* and gets answers from SearXNG and the cache only until its oldest
//! minute of calls is 24 h old.
//!
//! Calls are counted per minute, not logged one by one: a client's log holds at most one count
//! per minute of the window (1 441 entries, ≈ 23 kB) however many calls it makes — every client
//! is counted, budget or not, for `/admin/status`, and a log of every call would grow with the
//! call rate (16 bytes a call, a day long: gigabytes at saturation). The price is a minute's
//! resolution, on the safe side: a minute's calls leave the window when the last of them would
//! (at most a minute later than the first).
//!
//! A request is checked when it starts and charged when it ends, so one request that started
//! within the budget may finish its fan-out: the overshoot is at most one request's premium calls
//! (the number of active providers). Budgets are per client, so one client's spending never takes
//! from another's. Time is tokio's (paused in tests). A shared store (the Redis tier) replaces
//! [`Budgets`] behind the same calls.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::ClientName;

/// The budget window.
pub(crate) const WINDOW: Duration = Duration::from_secs(24 * 60 * 60);

/// The resolution calls are counted at.
const MINUTE: Duration = Duration::from_secs(60);

/// Minutes a count stays in the window: the window's, plus the minute it was counted in (its
/// last call leaves the window at the end of that minute plus 24 h).
const MINUTES_KEPT: u64 = WINDOW.as_secs() / MINUTE.as_secs() + 1;

/// Every client's premium calls within the window.
#[derive(Debug)]
pub(crate) struct Budgets {
    /// Minute 0 starts here.
    origin: Instant,
    spent: Mutex<HashMap<ClientName, Log>>,
}

impl Default for Budgets {
    fn default() -> Self {
        Self {
            origin: Instant::now(),
            spent: Mutex::default(),
        }
    }
}

/// One client's calls: a count per minute that had calls, oldest first, and their sum.
#[derive(Debug, Default)]
struct Log {
    minutes: VecDeque<(u64, u32)>,
    total: u32,
}

impl Log {
    /// Drops the minutes that have left the window by minute `now`.
    fn prune(&mut self, now: u64) {
        while let Some(&(minute, calls)) = self.minutes.front() {
            if minute + MINUTES_KEPT > now {
                break;
            }
            self.minutes.pop_front();
            self.total = self.total.saturating_sub(calls);
        }
    }

    fn add(&mut self, now: u64, calls: u32) {
        match self.minutes.back_mut() {
            Some((minute, count)) if *minute == now => *count = count.saturating_add(calls),
            _ => self.minutes.push_back((now, calls)),
        }
        self.total = self.total.saturating_add(calls);
    }
}

impl Budgets {
    /// The minute `Instant::now()` falls in.
    fn minute(&self) -> u64 {
        Instant::now().duration_since(self.origin).as_secs() / MINUTE.as_secs()
    }

    /// Premium calls `client` made in the last 24 h.
    pub(crate) fn used(&self, client: &ClientName) -> u32 {
        let now = self.minute();
        let mut spent = self.spent.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(log) = spent.get_mut(client) else {
            return 0;
        };
        log.prune(now);
        log.total
    }

    /// Whether `client` may still call premium APIs under a budget of `per_day` (0: unlimited).
    pub(crate) fn allows(&self, client: &ClientName, per_day: u32) -> bool {
        per_day == 0 || self.used(client) < per_day
    }

    /// Counts `calls` premium calls made now for `client`.
    pub(crate) fn charge(&self, client: &ClientName, calls: u32) {
        if calls == 0 {
            return;
        }
        let now = self.minute();
        let mut spent = self.spent.lock().unwrap_or_else(PoisonError::into_inner);
        let log = spent.entry(client.clone()).or_default();
        log.prune(now);
        log.add(now, calls);
    }

    /// Forgets clients no longer configured (after a reload).
    pub(crate) fn retain(&self, keep: impl Fn(&ClientName) -> bool) {
        self.spent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|name, _| keep(name));
    }

    /// Entries `client`'s log holds (what its memory grows with).
    #[cfg(test)]
    fn entries(&self, client: &ClientName) -> usize {
        self.spent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(client)
            .map_or(0, |log| log.minutes.len())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_budget_is_spent_for_24_hours_after_the_calls_that_spent_it() {
        let budgets = Budgets::default();
        let alice = ClientName::new("alice");
        assert!(budgets.allows(&alice, 3));
        budgets.charge(&alice, 2);
        tokio::time::advance(Duration::from_secs(3600)).await;
        assert!(budgets.allows(&alice, 3));
        budgets.charge(&alice, 1);
        assert!(!budgets.allows(&alice, 3));
        assert_eq!(budgets.used(&alice), 3);
        // The first two calls' minute ends 24 h after it began: until then they count.
        tokio::time::advance(WINDOW - Duration::from_secs(3600)).await;
        assert_eq!(budgets.used(&alice), 3);
        tokio::time::advance(MINUTE).await;
        assert_eq!(budgets.used(&alice), 1, "the third is still in the window");
        assert!(budgets.allows(&alice, 3));
        tokio::time::advance(Duration::from_secs(3600)).await;
        assert_eq!(budgets.used(&alice), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_log_holds_one_count_per_minute_however_many_calls_it_counts() {
        let budgets = Budgets::default();
        let alice = ClientName::new("alice");
        // Two days of 100 calls a second, 6 000 a minute.
        for _ in 0..2 * 24 * 60 {
            for _ in 0..60 {
                budgets.charge(&alice, 100);
                tokio::time::advance(Duration::from_secs(1)).await;
            }
        }
        assert_eq!(budgets.used(&alice), 6_000 * 24 * 60);
        assert!(
            budgets.entries(&alice) <= MINUTES_KEPT as usize,
            "{} entries",
            budgets.entries(&alice)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn one_clients_spending_never_takes_from_another_and_zero_is_unlimited() {
        let budgets = Budgets::default();
        let (alice, bob) = (ClientName::new("alice"), ClientName::new("bob"));
        budgets.charge(&alice, 5);
        assert!(!budgets.allows(&alice, 5));
        assert!(budgets.allows(&bob, 5));
        assert!(budgets.allows(&alice, 0));
    }
}
