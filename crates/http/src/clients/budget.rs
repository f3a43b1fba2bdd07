//! Per-client premium budgets: `PREMIUM_CALLS_PER_DAY` premium API calls, and `USD_PER_DAY` US
//! dollars of them, in any **rolling 24 h** ([`gateway_core::rolling`]). Each premium call made for a
//! client's request is counted, with what it cost, in the minute it was made; a client whose last
//! 24 h hold either allowance is *spent* and gets answers from SearXNG and the cache only until
//! enough of its oldest minutes are 24 h old.
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
//! from another's. Time is tokio's (paused in tests). With the Redis tier the fleet's spend is
//! judged instead ([`Allowance::judge`], on what `shared::limits` sums), and these local logs still
//! count this replica's calls (for `/admin/status` and for a Redis outage).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use super::ClientName;
use gateway_core::persist::SpendEntry;
use gateway_core::rolling::{self, Minutes, Window};

/// What a client spent in the last 24 h.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Spent {
    /// Premium calls.
    pub(crate) calls: u64,
    /// US dollars.
    pub(crate) usd: f64,
}

/// A client's allowances (0: unlimited).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Allowance {
    /// Premium calls per rolling 24 h.
    pub(crate) calls: u32,
    /// US dollars per rolling 24 h.
    pub(crate) usd: f64,
}

impl Allowance {
    /// Whether `spent` leaves anything of this allowance, or which part is used up.
    pub(crate) fn judge(self, spent: Spent) -> Result<(), Exhausted> {
        if self.calls > 0 && spent.calls >= u64::from(self.calls) {
            return Err(Exhausted::Calls);
        }
        if self.usd > 0.0 && spent.usd >= self.usd {
            return Err(Exhausted::Usd);
        }
        Ok(())
    }

    /// Whether any part of it is limited.
    pub(crate) fn is_limited(self) -> bool {
        self.calls > 0 || self.usd > 0.0
    }

    /// This replica's share while the fleet cannot count together: `1/replicas` of each part
    /// (at least one call of a limited call budget).
    pub(crate) fn share(self, replicas: u64) -> Self {
        let replicas = replicas.max(1);
        Self {
            calls: if self.calls == 0 {
                0
            } else {
                u32::try_from(u64::from(self.calls).div_ceil(replicas)).unwrap_or(u32::MAX)
            },
            usd: self.usd / replicas as f64,
        }
    }
}

/// Which allowance a spent client has used up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exhausted {
    /// Its premium calls (`PREMIUM_CALLS_PER_DAY`).
    Calls,
    /// Its US dollars (`USD_PER_DAY`).
    Usd,
}

/// Every client's premium calls and spend within the window.
#[derive(Debug, Default)]
pub(crate) struct Budgets {
    minutes: Minutes,
    spent: Mutex<HashMap<ClientName, Log>>,
}

/// One client's calls and micro-dollars.
#[derive(Debug, Default)]
struct Log {
    calls: Window,
    micro_usd: Window,
}

impl Budgets {
    /// What `client` spent in the last 24 h.
    pub(crate) fn used(&self, client: &ClientName) -> Spent {
        let now = self.minutes.now();
        let mut spent = self.spent.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(log) = spent.get_mut(client) else {
            return Spent::default();
        };
        Spent {
            calls: log.calls.total(now),
            usd: rolling::usd(log.micro_usd.total(now)),
        }
    }

    /// Whether `client` may still call premium APIs under `allowance`, or which part of it is
    /// used up.
    pub(crate) fn check(&self, client: &ClientName, allowance: Allowance) -> Result<(), Exhausted> {
        if !allowance.is_limited() {
            return Ok(());
        }
        allowance.judge(self.used(client))
    }

    /// Counts `calls` premium calls costing `usd` made now for `client`.
    pub(crate) fn charge(&self, client: &ClientName, calls: u32, usd: f64) {
        if calls == 0 && usd <= 0.0 {
            return;
        }
        let now = self.minutes.now();
        let mut spent = self.spent.lock().unwrap_or_else(PoisonError::into_inner);
        let log = spent.entry(client.clone()).or_default();
        log.calls.add(now, u64::from(calls));
        log.micro_usd.add(now, rolling::micro_usd(usd));
    }

    /// Every client's calls and spend still in the window, for `STATE_DIR`.
    pub(crate) fn export(&self) -> Vec<SpendEntry> {
        let now = self.minutes.now();
        let mut spent = self.spent.lock().unwrap_or_else(PoisonError::into_inner);
        spent
            .iter_mut()
            .map(|(name, log)| SpendEntry {
                owner: name.as_str().to_owned(),
                calls: log.calls.export(now),
                micro_usd: log.micro_usd.export(now),
            })
            .filter(|entry| !entry.calls.is_empty() || !entry.micro_usd.is_empty())
            .collect()
    }

    /// Takes back what [`Budgets::export`] gave, `elapsed` minutes later (at start).
    pub(crate) fn restore(&self, entries: &[SpendEntry], elapsed: u64) {
        let now = self.minutes.now();
        let mut spent = self.spent.lock().unwrap_or_else(PoisonError::into_inner);
        for entry in entries {
            let log = spent.entry(ClientName::new(&entry.owner)).or_default();
            log.calls.restore(now, elapsed, &entry.calls);
            log.micro_usd.restore(now, elapsed, &entry.micro_usd);
        }
    }

    /// Forgets clients no longer configured (after a reload).
    pub(crate) fn retain(&self, keep: impl Fn(&ClientName) -> bool) {
        self.spent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|name, _| keep(name));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use super::*;
    use gateway_core::rolling::{DAY, MINUTE};

    const THREE_CALLS: Allowance = Allowance { calls: 3, usd: 0.0 };

    #[tokio::test(start_paused = true)]
    async fn a_budget_is_spent_for_24_hours_after_the_calls_that_spent_it() {
        let budgets = Budgets::default();
        let alice = ClientName::new("alice");
        assert_eq!(budgets.check(&alice, THREE_CALLS), Ok(()));
        budgets.charge(&alice, 2, 0.0);
        tokio::time::advance(Duration::from_secs(3600)).await;
        assert_eq!(budgets.check(&alice, THREE_CALLS), Ok(()));
        budgets.charge(&alice, 1, 0.0);
        assert_eq!(budgets.check(&alice, THREE_CALLS), Err(Exhausted::Calls));
        assert_eq!(budgets.used(&alice).calls, 3);
        // The first two calls' minute ends 24 h after it began: until then they count.
        tokio::time::advance(DAY - Duration::from_secs(3600)).await;
        assert_eq!(budgets.used(&alice).calls, 3);
        tokio::time::advance(MINUTE).await;
        assert_eq!(
            budgets.used(&alice).calls,
            1,
            "the third is still in the window"
        );
        assert_eq!(budgets.check(&alice, THREE_CALLS), Ok(()));
    }

    #[tokio::test(start_paused = true)]
    async fn money_is_a_budget_of_its_own() {
        let budgets = Budgets::default();
        let alice = ClientName::new("alice");
        let allowance = Allowance {
            calls: 100,
            usd: 0.02,
        };
        budgets.charge(&alice, 2, 0.01);
        assert_eq!(budgets.check(&alice, allowance), Ok(()));
        budgets.charge(&alice, 2, 0.01);
        assert_eq!(budgets.check(&alice, allowance), Err(Exhausted::Usd));
        let used = budgets.used(&alice);
        assert_eq!(used.calls, 4);
        assert!((used.usd - 0.02).abs() < 1e-9);
        tokio::time::advance(DAY + MINUTE).await;
        assert_eq!(budgets.used(&alice), Spent::default());
    }

    #[test]
    fn a_replicas_share_is_a_fraction_of_each_part_and_never_zero_calls() {
        let budget = Allowance { calls: 5, usd: 0.3 };
        assert_eq!(budget.share(1), budget);
        let third = budget.share(3);
        assert_eq!(third.calls, 2);
        assert!((third.usd - 0.1).abs() < 1e-12);
        assert_eq!(Allowance { calls: 1, usd: 0.0 }.share(4).calls, 1);
        assert_eq!(Allowance::default().share(3), Allowance::default());
        assert_eq!(budget.share(0), budget, "no count yet: the whole");
    }

    #[tokio::test(start_paused = true)]
    async fn one_clients_spending_never_takes_from_another_and_zero_is_unlimited() {
        let budgets = Budgets::default();
        let (alice, bob) = (ClientName::new("alice"), ClientName::new("bob"));
        let five = Allowance { calls: 5, usd: 0.0 };
        budgets.charge(&alice, 5, 1.0);
        assert!(budgets.check(&alice, five).is_err());
        assert!(budgets.check(&bob, five).is_ok());
        assert!(budgets.check(&alice, Allowance::default()).is_ok());
    }
}
