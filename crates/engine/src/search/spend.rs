//! The gateway's own premium spend: every premium search call's cost (background refreshes
//! included), summed over a rolling 24 h ([`gateway_core::rolling`]), against `PREMIUM_USD_PER_DAY`. Once
//! the cap is reached, every request is answered as a client whose budget is spent (SearXNG and
//! the cache only) until enough of the day's spend has aged out. Like a client's budget, a fan-out
//! that started under the cap may finish: the overshoot is at most the premium calls in flight.
//! Each provider's calls and spend are summed the same way, for `/status` and the operator's page.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use gateway_core::persist::SpendEntry;
use gateway_core::rolling::{self, Minutes, Window};
use gateway_upstreams::providers::ProviderKind;

/// One provider's calls and spend over the same rolling 24 h.
#[derive(Debug, Default)]
struct ProviderWindows {
    calls: Window,
    micro_usd: Window,
}

/// One provider's last 24 h.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ProviderSpend {
    /// Calls made (answered, failed or cut short).
    pub(crate) calls: u64,
    /// US dollars they cost.
    pub(crate) usd: f64,
}

/// The spend of the last 24 h and its cap.
#[derive(Debug, Default)]
pub(crate) struct GlobalSpend {
    /// `PREMIUM_USD_PER_DAY` in micro-dollars; 0: no cap.
    cap_micro: u64,
    minutes: Minutes,
    window: Mutex<Window>,
    providers: Mutex<BTreeMap<ProviderKind, ProviderWindows>>,
}

impl GlobalSpend {
    /// A spend capped at `usd_per_day` (0: no cap).
    pub(crate) fn new(usd_per_day: f64) -> Self {
        Self {
            cap_micro: rolling::micro_usd(usd_per_day),
            ..Self::default()
        }
    }

    /// Counts `usd` spent now on a call to `provider`.
    pub(crate) fn charge(&self, provider: ProviderKind, usd: f64) {
        let now = self.minutes.now();
        let micro = rolling::micro_usd(usd);
        self.window
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .add(now, micro);
        self.providers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(provider)
            .or_default()
            .micro_usd
            .add(now, micro);
    }

    /// Counts a call to `provider` started now.
    pub(crate) fn called(&self, provider: ProviderKind) {
        let now = self.minutes.now();
        self.providers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(provider)
            .or_default()
            .calls
            .add(now, 1);
    }

    /// `provider`'s calls and spend in the last 24 h.
    pub(crate) fn of_provider(&self, provider: ProviderKind) -> ProviderSpend {
        let now = self.minutes.now();
        let mut providers = self
            .providers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match providers.get_mut(&provider) {
            Some(windows) => ProviderSpend {
                calls: windows.calls.total(now),
                usd: rolling::usd(windows.micro_usd.total(now)),
            },
            None => ProviderSpend { calls: 0, usd: 0.0 },
        }
    }

    /// US dollars spent in the last 24 h.
    pub(crate) fn last_24h(&self) -> f64 {
        rolling::usd(self.micro_last_24h())
    }

    fn micro_last_24h(&self) -> u64 {
        let now = self.minutes.now();
        self.window
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .total(now)
    }

    /// The cap, in US dollars (`None`: no cap).
    pub(crate) fn cap(&self) -> Option<f64> {
        (self.cap_micro > 0).then(|| rolling::usd(self.cap_micro))
    }

    /// Whether the cap is reached.
    pub(crate) fn capped(&self) -> bool {
        self.cap_micro > 0 && self.micro_last_24h() >= self.cap_micro
    }

    /// The gateway's spend (owner [`GATEWAY`]) and each provider's, for `STATE_DIR`.
    pub(crate) fn export(&self) -> Vec<SpendEntry> {
        let now = self.minutes.now();
        let gateway = SpendEntry {
            owner: GATEWAY.to_owned(),
            calls: Vec::new(),
            micro_usd: self
                .window
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .export(now),
        };
        let mut providers = self
            .providers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        std::iter::once(gateway)
            .chain(providers.iter_mut().map(|(kind, windows)| SpendEntry {
                owner: kind.as_str().to_owned(),
                calls: windows.calls.export(now),
                micro_usd: windows.micro_usd.export(now),
            }))
            .collect()
    }

    /// Takes back what [`GlobalSpend::export`] gave, `elapsed` minutes later (at start).
    pub(crate) fn restore(&self, entries: &[SpendEntry], elapsed: u64) {
        let now = self.minutes.now();
        let mut providers = self
            .providers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for entry in entries {
            if entry.owner == GATEWAY {
                self.window
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .restore(now, elapsed, &entry.micro_usd);
            } else if let Some(kind) = ProviderKind::from_name(&entry.owner) {
                let windows = providers.entry(kind).or_default();
                windows.calls.restore(now, elapsed, &entry.calls);
                windows.micro_usd.restore(now, elapsed, &entry.micro_usd);
            }
        }
    }
}

/// The owner name of the gateway's own spend in `STATE_DIR`.
const GATEWAY: &str = "gateway";

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use gateway_core::rolling::{DAY, MINUTE};

    #[tokio::test(start_paused = true)]
    async fn the_cap_holds_until_the_spend_ages_out_and_zero_is_no_cap() {
        let spend = GlobalSpend::new(0.01);
        assert_eq!(spend.cap(), Some(0.01));
        spend.charge(ProviderKind::Brave, 0.005);
        assert!(!spend.capped());
        spend.charge(ProviderKind::Exa, 0.005);
        assert!(spend.capped());
        tokio::time::advance(Duration::from_secs(3600)).await;
        assert!(spend.capped());
        tokio::time::advance(DAY + MINUTE).await;
        assert!(!spend.capped());
        assert_eq!(spend.last_24h(), 0.0);
        let open = GlobalSpend::new(0.0);
        open.charge(ProviderKind::Brave, 1e6);
        assert!(!open.capped());
        assert_eq!(open.cap(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn each_provider_has_its_own_calls_and_spend_over_the_same_24_hours() {
        let spend = GlobalSpend::new(0.0);
        spend.called(ProviderKind::Brave);
        spend.called(ProviderKind::Brave);
        spend.charge(ProviderKind::Brave, 0.005);
        spend.called(ProviderKind::Exa);
        assert_eq!(
            spend.of_provider(ProviderKind::Brave),
            ProviderSpend {
                calls: 2,
                usd: 0.005
            }
        );
        assert_eq!(
            spend.of_provider(ProviderKind::Exa),
            ProviderSpend { calls: 1, usd: 0.0 }
        );
        assert_eq!(spend.of_provider(ProviderKind::Tavily).calls, 0);
        assert_eq!(spend.last_24h(), 0.005);
        tokio::time::advance(DAY + MINUTE).await;
        assert_eq!(
            spend.of_provider(ProviderKind::Brave),
            ProviderSpend { calls: 0, usd: 0.0 }
        );
    }
}
