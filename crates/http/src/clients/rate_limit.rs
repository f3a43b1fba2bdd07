//! The per-client request rate: one token bucket per client (GCRA, from the `governor` crate),
//! `REQUESTS_PER_MINUTE` from its line or `RATE_LIMIT_PER_MINUTE` (0: unlimited), bursting up to
//! one minute's worth. Every admitted request takes a token, cache hits included: the limit is
//! about the caller, not the upstreams. All anonymous callers (an open gateway) share one bucket.
//!
//! The buckets read time through [`TokioClock`], so tests drive them with tokio's paused clock. A
//! reload keeps a client's bucket when its rate did not change. With the Redis tier the fleet's
//! rate is taken there (`shared::limits`, the same GCRA rule); these buckets then serve only while
//! Redis is away, each at this replica's share ([`share`]).

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use governor::clock::Clock;
use governor::middleware::NoOpMiddleware;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};

use super::ClientName;

/// governor's clock over tokio's (paused in tests).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TokioClock;

impl Clock for TokioClock {
    type Instant = std::time::Instant;

    fn now(&self) -> Self::Instant {
        tokio::time::Instant::now().into_std()
    }
}

type Limiter = RateLimiter<NotKeyed, InMemoryState, TokioClock, NoOpMiddleware<std::time::Instant>>;

struct Bucket {
    per_minute: u32,
    limiter: Limiter,
}

/// Over the limit: come back after this long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RateLimited {
    pub(crate) retry_after: Duration,
}

impl RateLimited {
    /// `Retry-After` in whole seconds, rounded up (at least 1).
    pub(crate) fn retry_after_seconds(self) -> u64 {
        let whole = self.retry_after.as_secs();
        let rounded = if self.retry_after.subsec_nanos() > 0 {
            whole + 1
        } else {
            whole
        };
        rounded.max(1)
    }
}

/// This replica's share of `per_minute` while the fleet cannot count together: `1/replicas` of
/// it, rounded up (a limited rate never becomes unlimited).
pub(crate) fn share(per_minute: u32, replicas: u64) -> u32 {
    let share = u64::from(per_minute).div_ceil(replicas.max(1));
    u32::try_from(share).unwrap_or(u32::MAX)
}

/// Every client's bucket.
#[derive(Default)]
pub(crate) struct Buckets {
    buckets: Mutex<HashMap<ClientName, Arc<Bucket>>>,
}

impl std::fmt::Debug for Buckets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buckets").finish_non_exhaustive()
    }
}

impl Buckets {
    /// Takes a token from `client`'s bucket of `per_minute` (0: always admitted).
    pub(crate) fn admit(&self, client: &ClientName, per_minute: u32) -> Result<(), RateLimited> {
        let Some(rate) = NonZeroU32::new(per_minute) else {
            return Ok(());
        };
        let bucket = {
            let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
            let bucket = buckets
                .entry(client.clone())
                .and_modify(|b| {
                    if b.per_minute != per_minute {
                        *b = Arc::new(Bucket::new(rate));
                    }
                })
                .or_insert_with(|| Arc::new(Bucket::new(rate)));
            Arc::clone(bucket)
        };
        bucket.limiter.check().map_err(|not_until| RateLimited {
            retry_after: not_until.wait_time_from(TokioClock.now()),
        })
    }

    /// Forgets the buckets of clients no longer configured (after a reload).
    pub(crate) fn retain(&self, keep: impl Fn(&ClientName) -> bool) {
        self.buckets
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|name, _| keep(name));
    }
}

impl Bucket {
    fn new(per_minute: NonZeroU32) -> Self {
        Self {
            per_minute: per_minute.get(),
            limiter: RateLimiter::direct_with_clock(Quota::per_minute(per_minute), TokioClock),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn name(n: &str) -> ClientName {
        ClientName::new(n)
    }

    #[test]
    fn a_replicas_share_of_a_rate_is_rounded_up() {
        assert_eq!(share(60, 3), 20);
        assert_eq!(share(10, 3), 4);
        assert_eq!(share(1, 5), 1);
        assert_eq!(share(0, 3), 0, "unlimited stays unlimited");
        assert_eq!(share(7, 0), 7);
    }

    #[tokio::test(start_paused = true)]
    async fn a_bucket_admits_a_minute_of_requests_then_refuses_until_a_token_is_back() {
        let buckets = Buckets::default();
        let alice = name("alice");
        for _ in 0..3 {
            assert!(buckets.admit(&alice, 3).is_ok());
        }
        let refused = buckets.admit(&alice, 3).unwrap_err();
        // One token comes back every 20 s at 3 per minute.
        assert_eq!(refused.retry_after, Duration::from_secs(20));
        assert_eq!(refused.retry_after_seconds(), 20);
        tokio::time::advance(Duration::from_secs(19)).await;
        let refused = buckets.admit(&alice, 3).unwrap_err();
        assert_eq!(refused.retry_after_seconds(), 1);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(buckets.admit(&alice, 3).is_ok());
        assert!(buckets.admit(&alice, 3).is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn clients_have_buckets_of_their_own_and_zero_is_unlimited() {
        let buckets = Buckets::default();
        assert!(buckets.admit(&name("alice"), 1).is_ok());
        assert!(buckets.admit(&name("alice"), 1).is_err());
        assert!(buckets.admit(&name("bob"), 1).is_ok());
        for _ in 0..1000 {
            assert!(buckets.admit(&name("carol"), 0).is_ok());
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_changed_rate_gets_a_fresh_bucket() {
        let buckets = Buckets::default();
        assert!(buckets.admit(&name("alice"), 1).is_ok());
        assert!(buckets.admit(&name("alice"), 1).is_err());
        assert!(buckets.admit(&name("alice"), 2).is_ok());
    }

    #[test]
    fn retry_after_rounds_up_to_whole_seconds() {
        let at = |ms| RateLimited {
            retry_after: Duration::from_millis(ms),
        };
        assert_eq!(at(1).retry_after_seconds(), 1);
        assert_eq!(at(1000).retry_after_seconds(), 1);
        assert_eq!(at(1001).retry_after_seconds(), 2);
        assert_eq!(at(0).retry_after_seconds(), 1);
    }
}
