//! Provider rotation: which premium providers a request calls, and in which order — an atomic
//! round-robin over the `FALLBACK_PROVIDERS` order (inactive providers are not in the list at all).
//! A provider whose breaker rejects it is skipped without using up a slot, and no provider is
//! offered twice to one request. A request whose client's premium budget is spent is offered none
//! (each noted as skipped with `budget_spent`), and does not advance the rotation.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::breaker::{Breaker, BreakerBoard, BreakerKind, Permit};
use crate::providers::ProviderClient;

use super::failure::{Shortfall, Upstream, UpstreamFailure};

/// The rotation shared by every request.
#[derive(Debug, Default)]
pub(crate) struct Rotation {
    next: AtomicUsize,
}

impl Rotation {
    /// Where this request starts in the provider list.
    fn start(&self, len: usize) -> usize {
        if len == 0 {
            return 0;
        }
        self.next.fetch_add(1, Ordering::Relaxed) % len
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
    breakers: &'a BreakerBoard,
    rotation: &'a Rotation,
    premium: Premium,
    start: Option<usize>,
    offered: usize,
}

impl<'a> ProviderWalk<'a> {
    /// A walk over `providers` (active ones, in configured order).
    pub(crate) fn new(
        providers: &'a [Arc<ProviderClient>],
        breakers: &'a BreakerBoard,
        rotation: &'a Rotation,
        premium: Premium,
    ) -> Self {
        Self {
            providers,
            breakers,
            rotation,
            premium,
            start: None,
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
        let start = *self.start.get_or_insert_with(|| self.rotation.start(len));
        while self.offered < len {
            let provider = &self.providers[(start + self.offered) % len];
            self.offered += 1;
            let breaker = self
                .breakers
                .get(BreakerKind::Provider, provider.kind().as_str());
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
