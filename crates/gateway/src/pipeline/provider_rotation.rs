//! Provider choice: which premium providers a request calls, and in which order, as the stated
//! `PROVIDER_POLICY` (inactive providers are not in the list at all):
//!
//! - `rotate` (the default): an atomic round-robin over the `FALLBACK_PROVIDERS` order, so calls
//!   spread over every provider and several free tiers last together. A provider whose reported
//!   quota window is nearly spent ([`QuotaBoard::nearly_spent`]) goes to the end of the request's
//!   order: it is kept for when nobody else can answer.
//! - `ordered`: the `FALLBACK_PROVIDERS` order every time, so the first (cheapest) provider takes
//!   every call it can answer and the next one is touched only when it is parked or falls short.
//!
//! Either way a provider whose breaker rejects it (open, or parked for a spent quota) is skipped
//! without using up a slot, and no provider is offered twice to one request.
//!
//! A request whose client's premium budget is spent is offered none (each noted as skipped with
//! `budget_spent`), and does not advance the rotation.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::breaker::{Breaker, BreakerBoard, Permit};
use crate::config::ProviderPolicy;
use crate::providers::quota::QuotaBoard;
use crate::providers::{ProviderClient, ProviderKind};

use super::failure::{Shortfall, Upstream, UpstreamFailure};

/// The provider policy shared by every request, with the rotation's position.
#[derive(Debug)]
pub(crate) struct Rotation {
    policy: ProviderPolicy,
    next: AtomicUsize,
}

impl Rotation {
    /// A rotation following `policy`.
    pub(crate) fn new(policy: ProviderPolicy) -> Self {
        Self {
            policy,
            next: AtomicUsize::new(0),
        }
    }

    /// Whether the rotation's position is worth sharing with other replicas: it rotates, over
    /// `providers` of them.
    pub(crate) fn shares_counter(&self, providers: usize) -> bool {
        self.policy == ProviderPolicy::Rotate && providers > 1
    }

    /// Moves the position to the replicas' shared counter, so the rotation stays fair across
    /// replicas (the next request here starts where the shared count says).
    pub(crate) fn follow(&self, shared: u64) {
        self.next
            .store(usize::try_from(shared).unwrap_or(0), Ordering::Relaxed);
    }

    /// The order in which one request offers the providers (indices into the list).
    fn order(&self, providers: &[ProviderKind], quota: &QuotaBoard) -> Vec<usize> {
        let len = providers.len();
        if len == 0 {
            return Vec::new();
        }
        match self.policy {
            ProviderPolicy::Ordered => (0..len).collect(),
            ProviderPolicy::Rotate => {
                let start = self.next.fetch_add(1, Ordering::Relaxed) % len;
                let (mut order, spent): (Vec<usize>, Vec<usize>) = (0..len)
                    .map(|i| (start + i) % len)
                    .partition(|&i| !quota.nearly_spent(providers[i]));
                order.extend(spent);
                order
            }
        }
    }
}

/// Whether a request may call premium providers (the client's daily budget).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Premium {
    /// Within budget (or no budget).
    Allowed,
    /// `PREMIUM_CALLS_PER_DAY` is spent: SearXNG and the cache only.
    BudgetSpent,
}

/// A provider admitted for one call: the client, its breaker, and the permit that reports back.
pub(crate) struct Admitted {
    /// The provider's client.
    pub(crate) client: Arc<ProviderClient>,
    /// Its breaker (a successful call may still park it).
    pub(crate) breaker: Arc<Breaker>,
    /// Leave to make the call.
    pub(crate) permit: Permit,
}

/// One request's walk over the providers, starting where the rotation says.
pub(crate) struct ProviderWalk<'a> {
    providers: &'a [Arc<ProviderClient>],
    breakers: &'a BreakerBoard<ProviderKind>,
    rotation: &'a Rotation,
    quota: &'a QuotaBoard,
    premium: Premium,
    order: Option<Vec<usize>>,
    offered: usize,
}

impl<'a> ProviderWalk<'a> {
    /// A walk over `providers` (active ones, in configured order).
    pub(crate) fn new(
        providers: &'a [Arc<ProviderClient>],
        breakers: &'a BreakerBoard<ProviderKind>,
        rotation: &'a Rotation,
        quota: &'a QuotaBoard,
        premium: Premium,
    ) -> Self {
        Self {
            providers,
            breakers,
            rotation,
            quota,
            premium,
            order: None,
            offered: 0,
        }
    }

    /// The next provider whose breaker admits a call, with its permit. Providers rejected on the
    /// way are noted in `skipped`. `None` when the list is exhausted.
    pub(crate) fn next_admitted(&mut self, skipped: &mut Vec<UpstreamFailure>) -> Option<Admitted> {
        let len = self.providers.len();
        if self.premium == Premium::BudgetSpent {
            if self.offered < len {
                self.offered = len;
                skipped.extend(self.providers.iter().map(|p| UpstreamFailure {
                    upstream: Upstream::Provider(p.kind()),
                    why: Shortfall::BudgetSpent,
                }));
            }
            return None;
        }
        // The rotation advances once per request that uses providers at all.
        let (providers, rotation, quota) = (self.providers, self.rotation, self.quota);
        let order = self.order.get_or_insert_with(|| {
            let kinds: Vec<ProviderKind> = providers.iter().map(|p| p.kind()).collect();
            rotation.order(&kinds, quota)
        });
        while let Some(&index) = order.get(self.offered) {
            let provider = &self.providers[index];
            self.offered += 1;
            let breaker = self.breakers.get(&provider.kind());
            match breaker.admit() {
                Some(permit) => {
                    return Some(Admitted {
                        client: Arc::clone(provider),
                        breaker,
                        permit,
                    })
                }
                None => skipped.push(UpstreamFailure {
                    upstream: Upstream::Provider(provider.kind()),
                    why: Shortfall::BreakerOpen,
                }),
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::quota::RateWindow;

    const KINDS: [ProviderKind; 3] = [ProviderKind::Brave, ProviderKind::Exa, ProviderKind::Tavily];

    fn orders(rotation: &Rotation, quota: &QuotaBoard, requests: usize) -> Vec<Vec<usize>> {
        (0..requests)
            .map(|_| rotation.order(&KINDS, quota))
            .collect()
    }

    #[test]
    fn rotate_starts_each_request_at_the_next_provider() {
        let rotation = Rotation::new(ProviderPolicy::Rotate);
        assert_eq!(
            orders(&rotation, &QuotaBoard::default(), 4),
            [vec![0, 1, 2], vec![1, 2, 0], vec![2, 0, 1], vec![0, 1, 2]]
        );
    }

    #[test]
    fn ordered_always_offers_the_configured_order() {
        let rotation = Rotation::new(ProviderPolicy::Ordered);
        let quota = QuotaBoard::default();
        assert_eq!(orders(&rotation, &quota, 3), vec![vec![0, 1, 2]; 3]);
    }

    #[test]
    fn rotate_keeps_a_nearly_spent_quota_for_last() {
        let quota = QuotaBoard::default();
        quota.update(
            ProviderKind::Brave,
            vec![RateWindow {
                label: "month".into(),
                period_seconds: Some(2_592_000),
                limit: Some(2_000.0),
                remaining: Some(12.0),
                reset_seconds: Some(86_400.0),
            }],
        );
        let rotation = Rotation::new(ProviderPolicy::Rotate);
        assert_eq!(
            orders(&rotation, &quota, 3),
            [vec![1, 2, 0], vec![1, 2, 0], vec![2, 1, 0]]
        );
        let ordered = Rotation::new(ProviderPolicy::Ordered);
        assert_eq!(
            ordered.order(&KINDS, &quota),
            [0, 1, 2],
            "ordered: cheapest first"
        );
    }
}
