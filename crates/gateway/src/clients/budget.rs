//! Per-client premium budgets: `PREMIUM_CALLS_PER_DAY` premium API calls in any **rolling 24 h**
//! (not a calendar day: no midnight rush, and the same rule whatever the time zone). Each premium
//! call made for a client's request is logged with its time; a client whose log holds its
//! allowance is *spent* and gets answers from SearXNG and the cache only until its oldest call is
//! 24 h old.
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

/// Every client's premium calls within the window.
#[derive(Debug, Default)]
pub(crate) struct Budgets {
    spent: Mutex<HashMap<ClientName, VecDeque<Instant>>>,
}

impl Budgets {
    /// Premium calls `client` made in the last 24 h.
    pub(crate) fn used(&self, client: &ClientName) -> u32 {
        let mut spent = self.spent.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(log) = spent.get_mut(client) else {
            return 0;
        };
        prune(log, Instant::now());
        u32::try_from(log.len()).unwrap_or(u32::MAX)
    }

    /// Whether `client` may still call premium APIs under a budget of `per_day` (0: unlimited).
    pub(crate) fn allows(&self, client: &ClientName, per_day: u32) -> bool {
        per_day == 0 || self.used(client) < per_day
    }

    /// Logs `calls` premium calls made now for `client`.
    pub(crate) fn charge(&self, client: &ClientName, calls: u32) {
        if calls == 0 {
            return;
        }
        let now = Instant::now();
        let mut spent = self.spent.lock().unwrap_or_else(PoisonError::into_inner);
        let log = spent.entry(client.clone()).or_default();
        prune(log, now);
        log.extend(std::iter::repeat_n(now, calls as usize));
    }

    /// Forgets clients no longer configured (after a reload).
    pub(crate) fn retain(&self, keep: impl Fn(&ClientName) -> bool) {
        self.spent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|name, _| keep(name));
    }
}

fn prune(log: &mut VecDeque<Instant>, now: Instant) {
    while log
        .front()
        .is_some_and(|at| now.duration_since(*at) >= WINDOW)
    {
        log.pop_front();
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
        // 24 h after the first two calls they leave the window; the third is still in it.
        tokio::time::advance(WINDOW - Duration::from_secs(3600)).await;
        assert_eq!(budgets.used(&alice), 1);
        assert!(budgets.allows(&alice, 3));
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
