//! Provider choice: which premium providers a request calls, and in which order, as the stated
//! `PROVIDER_POLICY` (inactive providers are not in the list at all):
//!
//! - `rotate` (the default): an atomic round-robin over the `FALLBACK_PROVIDERS` order, so calls
//!   spread over every provider and several free tiers last together. A provider whose reported
//!   quota window is nearly spent ([`QuotaBoard::nearly_spent`]) goes to the end of the request's
//!   order: it is kept for when nobody else can answer.
//! - `ordered`: the `FALLBACK_PROVIDERS` order every time, so the first provider takes every call
//!   it can answer and the next one is touched only when it is parked or falls short.
//! - `cheapest`: by price (`PREMIUM_PRICE_<NAME>`), cheapest first, ties broken by each
//!   provider's recent success rate (an exponentially weighted mean of its calls' outcomes,
//!   starting at 1), then by the configured order; a provider whose quota is nearly spent goes last.
//!
//! Either way a provider whose breaker rejects it (open: down, slow, answering garbage) is skipped
//! without using up a slot, and no provider is offered twice to one request. Within a provider the
//! call goes to the first of its keys (each call starting at the next one) whose own breaker
//! admits it; a provider none of whose keys is usable (each rate-limited, parked for a spent quota
//! or refused) is skipped as `keys_unusable`.
//!
//! A provider's breaker stands for its keys' too ([`Breakers::of_provider`]): its state — its
//! `circuit_breaker_state{kind="provider"}`, its recoveries, its `/status` entry — is the
//! provider's as a whole, open while none of its keys is usable, as one breaker was before pools.
//!
//! A request whose client's premium budget is spent is offered none (each noted as skipped with
//! `budget_spent`), and does not advance the rotation.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::settings::ProviderPolicy;
use gateway_core::breaker::{Breaker, BreakerBoard, BreakerState, Permit};
use gateway_upstreams::providers::keys::KeyId;
use gateway_upstreams::providers::{ProviderClient, ProviderKind};

use super::failure::{Shortfall, Upstream, UpstreamFailure};

/// How much one call's outcome (1 answered, 0 failed) moves a provider's recent success rate: the
/// last few dozen calls decide it.
const SUCCESS_WEIGHT: f64 = 0.1;

/// What the policy weighs about one provider.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Candidate {
    /// Every key's quota window is nearly spent.
    pub(crate) nearly_spent: bool,
    /// What a call costs, in US dollars.
    pub(crate) usd_per_call: f64,
    /// Its recent success rate.
    pub(crate) success: f64,
}

/// The provider policy shared by every request, with the rotation's position and each
/// provider's recent success.
#[derive(Debug)]
pub(crate) struct Rotation {
    policy: ProviderPolicy,
    next: AtomicUsize,
    success: Mutex<HashMap<ProviderKind, f64>>,
}

impl Rotation {
    /// A rotation following `policy`.
    pub(crate) fn new(policy: ProviderPolicy) -> Self {
        Self {
            policy,
            next: AtomicUsize::new(0),
            success: Mutex::default(),
        }
    }

    /// A call to `kind` answered (`true`) or failed: its success rate moves (a provider not yet
    /// called has a rate of 1: no reason to distrust it).
    pub(crate) fn observe(&self, kind: ProviderKind, answered: bool) {
        let mut rates = self.success.lock().unwrap_or_else(PoisonError::into_inner);
        let rate = rates.entry(kind).or_insert(1.0);
        let outcome = if answered { 1.0 } else { 0.0 };
        *rate += SUCCESS_WEIGHT * (outcome - *rate);
    }

    /// `kind`'s recent success rate.
    pub(crate) fn success(&self, kind: ProviderKind) -> f64 {
        self.success
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&kind)
            .copied()
            .unwrap_or(1.0)
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

    /// The order in which one request offers the providers (indices into the list), given what
    /// the policy weighs about each.
    fn order(&self, candidates: &[Candidate]) -> Vec<usize> {
        let len = candidates.len();
        if len == 0 {
            return Vec::new();
        }
        let spent_last = |order: Vec<usize>| {
            let (mut order, spent): (Vec<usize>, Vec<usize>) = order
                .into_iter()
                .partition(|&i| !candidates[i].nearly_spent);
            order.extend(spent);
            order
        };
        match self.policy {
            ProviderPolicy::Ordered => (0..len).collect(),
            ProviderPolicy::Rotate => {
                let start = self.next.fetch_add(1, Ordering::Relaxed) % len;
                spent_last((0..len).map(|i| (start + i) % len).collect())
            }
            ProviderPolicy::Cheapest => {
                let mut order: Vec<usize> = (0..len).collect();
                // Stable: equal price and success keep the configured order.
                order.sort_by(|&a, &b| {
                    let (a, b) = (&candidates[a], &candidates[b]);
                    a.usd_per_call
                        .total_cmp(&b.usd_per_call)
                        .then(b.success.total_cmp(&a.success))
                });
                spent_last(order)
            }
        }
    }
}

/// Whether a request may call premium providers (the client's daily budget).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Premium {
    /// Within budget (or no budget).
    Allowed,
    /// `PREMIUM_CALLS_PER_DAY` is spent: SearXNG and the cache only.
    BudgetSpent,
}

/// A provider admitted for one call: the client, the key of its pool the call uses, both
/// breakers, and the permits that report back.
pub(crate) struct Admitted {
    /// The provider's client.
    pub(crate) client: Arc<ProviderClient>,
    /// Its breaker: what concerns the provider as a whole.
    pub(crate) permit: Permit,
    /// The key the call uses (an index into the client's pool).
    pub(crate) key: usize,
    /// The key's breaker (a successful call may still park the key).
    pub(crate) key_breaker: Arc<Breaker>,
    /// Leave to use the key.
    pub(crate) key_permit: Permit,
}

/// The breakers one walk asks.
pub(crate) struct Breakers<'a> {
    /// Each provider's.
    pub(crate) providers: &'a BreakerBoard<ProviderKind>,
    /// Each key's.
    pub(crate) keys: &'a BreakerBoard<KeyId>,
}

impl Breakers<'_> {
    /// `provider`'s breaker, standing for its keys' too ([`Breaker::derive_from`]): its state is
    /// the provider's as a whole — open while none of its keys is usable, half-open while one is
    /// due its probe, closed while one is usable (and its own breaker is closed) — and a recovery
    /// is the whole closing again.
    pub(crate) fn of_provider(&self, provider: &ProviderClient) -> Arc<Breaker> {
        let breaker = self.providers.get(&provider.kind());
        breaker.derive_from(|| provider.keys().map(|key| self.keys.get(key)).collect());
        breaker
    }
}

/// One request's walk over the providers, starting where the rotation says.
pub(crate) struct ProviderWalk<'a> {
    providers: &'a [Arc<ProviderClient>],
    breakers: Breakers<'a>,
    rotation: &'a Rotation,
    premium: Premium,
    order: Option<Vec<usize>>,
    offered: usize,
}

impl<'a> ProviderWalk<'a> {
    /// A walk over `providers` (active ones, in configured order). Each provider's breaker stands
    /// for its keys' from the first walk on ([`Breakers::of_provider`]).
    pub(crate) fn new(
        providers: &'a [Arc<ProviderClient>],
        breakers: Breakers<'a>,
        rotation: &'a Rotation,
        premium: Premium,
    ) -> Self {
        for provider in providers {
            breakers.of_provider(provider);
        }
        Self {
            providers,
            breakers,
            rotation,
            premium,
            order: None,
            offered: 0,
        }
    }

    /// A call to `kind` failed for its key (a bad key, a spent rate or quota): when another of
    /// its keys may still be usable, the provider is offered once more, right away — the request
    /// need not go without it because one key of a pool is spent.
    /// Whether it was.
    pub(crate) fn again_with_another_key(&mut self, kind: ProviderKind) -> bool {
        let Some(index) = self.providers.iter().position(|p| p.kind() == kind) else {
            return false;
        };
        let provider = &self.providers[index];
        let another = provider
            .keys()
            .any(|key| self.breakers.keys.get(key).state() != BreakerState::Open);
        match (another, self.order.as_mut()) {
            (true, Some(order)) => {
                order.insert(self.offered, index);
                true
            }
            _ => false,
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
        let (providers, rotation) = (self.providers, self.rotation);
        let order = self.order.get_or_insert_with(|| {
            let candidates: Vec<Candidate> = providers
                .iter()
                .map(|p| Candidate {
                    nearly_spent: p.nearly_spent(),
                    usd_per_call: p.usd_per_call(),
                    success: rotation.success(p.kind()),
                })
                .collect();
            rotation.order(&candidates)
        });
        while let Some(&index) = order.get(self.offered) {
            let provider = &self.providers[index];
            self.offered += 1;
            let skip = |why| UpstreamFailure {
                upstream: Upstream::Provider(provider.kind()),
                why,
            };
            let breaker = self.breakers.providers.get(&provider.kind());
            let Some(permit) = breaker.admit() else {
                skipped.push(skip(Shortfall::BreakerOpen));
                continue;
            };
            let key = provider.key_order().into_iter().find_map(|key| {
                let key_breaker = self.breakers.keys.get(provider.key(key));
                let key_permit = key_breaker.admit()?;
                Some((key, key_breaker, key_permit))
            });
            match key {
                Some((key, key_breaker, key_permit)) => {
                    return Some(Admitted {
                        client: Arc::clone(provider),
                        permit,
                        key,
                        key_breaker,
                        key_permit,
                    })
                }
                // The provider's permit goes unused (a probe it held is released); the provider
                // as a whole was open.
                None => {
                    breaker.reject_for_members();
                    skipped.push(skip(Shortfall::KeysUnusable));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidates(spent: [bool; 3]) -> Vec<Candidate> {
        spent
            .into_iter()
            .map(|nearly_spent| Candidate {
                nearly_spent,
                usd_per_call: 0.005,
                success: 1.0,
            })
            .collect()
    }

    const FRESH: [bool; 3] = [false, false, false];

    fn orders(rotation: &Rotation, spent: [bool; 3], requests: usize) -> Vec<Vec<usize>> {
        (0..requests)
            .map(|_| rotation.order(&candidates(spent)))
            .collect()
    }

    #[test]
    fn rotate_starts_each_request_at_the_next_provider() {
        let rotation = Rotation::new(ProviderPolicy::Rotate);
        assert_eq!(
            orders(&rotation, FRESH, 4),
            [vec![0, 1, 2], vec![1, 2, 0], vec![2, 0, 1], vec![0, 1, 2]]
        );
    }

    #[test]
    fn ordered_always_offers_the_configured_order() {
        let rotation = Rotation::new(ProviderPolicy::Ordered);
        assert_eq!(orders(&rotation, FRESH, 3), vec![vec![0, 1, 2]; 3]);
    }

    #[test]
    fn rotate_keeps_a_nearly_spent_quota_for_last() {
        let spent = [true, false, false];
        let rotation = Rotation::new(ProviderPolicy::Rotate);
        assert_eq!(
            orders(&rotation, spent, 3),
            [vec![1, 2, 0], vec![1, 2, 0], vec![2, 1, 0]]
        );
        let ordered = Rotation::new(ProviderPolicy::Ordered);
        assert_eq!(
            ordered.order(&candidates(spent)),
            [0, 1, 2],
            "ordered: the configured order"
        );
    }

    #[test]
    fn cheapest_offers_the_cheapest_first_and_breaks_ties_by_recent_success() {
        let rotation = Rotation::new(ProviderPolicy::Cheapest);
        let priced = |prices: [f64; 3]| -> Vec<Candidate> {
            prices
                .into_iter()
                .enumerate()
                .map(|(i, usd_per_call)| Candidate {
                    nearly_spent: false,
                    usd_per_call,
                    success: rotation.success(KINDS[i]),
                })
                .collect()
        };
        assert_eq!(rotation.order(&priced([0.008, 0.0, 0.005])), [1, 2, 0]);
        assert_eq!(
            rotation.order(&priced([0.005, 0.005, 0.007])),
            [0, 1, 2],
            "a tie keeps the order"
        );
        for _ in 0..5 {
            rotation.observe(KINDS[0], false);
        }
        assert!(rotation.success(KINDS[0]) < 0.6);
        assert_eq!(
            rotation.order(&priced([0.005, 0.005, 0.007])),
            [1, 0, 2],
            "the one that has been failing goes after its equal"
        );
        let mut spent = priced([0.0, 0.005, 0.007]);
        spent[0].nearly_spent = true;
        assert_eq!(
            rotation.order(&spent),
            [1, 2, 0],
            "a nearly spent quota last"
        );
    }

    const KINDS: [ProviderKind; 3] = [ProviderKind::Brave, ProviderKind::Exa, ProviderKind::Tavily];

    #[tokio::test(start_paused = true)]
    #[allow(clippy::unwrap_used)]
    async fn a_one_key_provider_whose_key_is_rate_limited_reads_open_as_a_whole_from_the_walk_on() {
        use gateway_core::breaker::{BreakerMetrics, BreakerPolicy, Signal, TripReason};
        use gateway_core::metrics::Registry;
        use gateway_core::upstream::UpstreamHttp;
        use gateway_upstreams::providers::quota::QuotaBoard;
        use gateway_upstreams::providers::{ApiKey, ProviderMetrics, ProviderSettings};
        use std::time::Duration;

        let open_base = Duration::from_secs(10);
        let policy = BreakerPolicy {
            open_base,
            open_max: Duration::from_secs(80),
            failure_threshold: 3,
            jitter: 0.0,
            healthy_interval: Duration::from_secs(600),
            quota_park: Duration::from_secs(86_400),
        };
        let mut registry = Registry::new();
        let families = BreakerMetrics::new(&mut registry);
        let (providers, keys) = (
            BreakerBoard::new(policy, families.clone()),
            BreakerBoard::new(policy, families),
        );
        let settings = ProviderSettings {
            kind: ProviderKind::Brave,
            keys: vec![ApiKey::new("only-key")],
            base_url: url::Url::parse("http://127.0.0.1:9/").unwrap(),
            timeout: Duration::from_secs(1),
            usd_per_call: 0.005,
        };
        let brave = ProviderClient::new(
            &settings,
            UpstreamHttp::new(1).unwrap(),
            ProviderMetrics::new(&mut Registry::new()),
            QuotaBoard::default(),
        )
        .unwrap();
        let clients = [Arc::new(brave)];
        let rotation = Rotation::new(ProviderPolicy::Ordered);
        let walk = |skipped: &mut Vec<UpstreamFailure>| {
            let breakers = Breakers {
                providers: &providers,
                keys: &keys,
            };
            ProviderWalk::new(&clients, breakers, &rotation, Premium::Allowed)
                .next_admitted(skipped)
        };
        let gauge = || {
            registry.sample(
                "circuit_breaker_state",
                &[("engine", "brave"), ("kind", "provider")],
            )
        };

        let admitted = walk(&mut Vec::new()).unwrap();
        admitted
            .key_permit
            .record(Signal::stop(TripReason::RateLimited));
        admitted.permit.record(Signal::Neutral);

        assert_eq!(gauge(), Some(2.0), "open: its only key is set aside");
        let whole = providers.get(&ProviderKind::Brave).snapshot();
        assert_eq!(
            (whole.state, whole.reason),
            (BreakerState::Open, Some(TripReason::RateLimited)),
            "/status reads the same"
        );
        let mut skipped = Vec::new();
        assert!(walk(&mut skipped).is_none());
        assert_eq!(skipped[0].why, Shortfall::KeysUnusable);
        assert_eq!(
            registry.sample(
                "circuit_breaker_rejections_total",
                &[("engine", "brave"), ("kind", "provider")],
            ),
            Some(1.0),
            "a call the provider as a whole did not make"
        );

        tokio::time::advance(open_base).await;
        let probe = walk(&mut Vec::new()).unwrap();
        assert!(probe.key_permit.is_probe());
        probe.key_permit.record(Signal::Success);
        probe.permit.record(Signal::Success);
        assert_eq!(gauge(), Some(0.0));
        assert_eq!(
            registry.sample(
                "circuit_breaker_recovery_total",
                &[("engine", "brave"), ("kind", "provider")],
            ),
            Some(1.0)
        );
    }
}
