//! A crawl's pages count against its client's limits: before each page of a job is read, the
//! job's owner is admitted as one request by the door layer's rate limits (the same buckets as the
//! client's own calls, fleet-wide with Redis) through the [`AdmitPages`] it registered; over its
//! rate, the read waits the time the limiter names. A client that crawls spends its rate on the
//! crawl, as it would reading those pages one call at a time, and cannot read faster by crawling.
//! The admission also says whether the client's premium budget allows a premium reader for the
//! page (a page the direct reader cannot read); the premium calls a read made are charged to the
//! client after it ([`AdmitPages::charge`]). Nothing registered: direct reads only.
//!
//! The engine knows no clients (they are the door layer's, `API_KEYS_FILE`): the door layer says
//! how to admit one, once, at start-up ([`crate::crawl::Crawls::count_pages_with`]). Until then —
//! and in a build without doors, such as the benchmark's — every page goes at once.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::search::Premium;

/// What the door layer says of one more page for a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageAdmission {
    /// Read it; with the premium readers when the client's budget allows them.
    Go {
        /// The client's premium budget allows a premium reader for this page.
        premium: bool,
    },
    /// Over the client's rate: ask again after this long.
    WaitFor(Duration),
}

/// Admits a crawl's pages as its client's requests.
pub trait AdmitPages: Send + Sync + 'static {
    /// One more page read for `owner` (the job's client, as the doors name it).
    fn admit<'a>(
        &'a self,
        owner: &'a str,
    ) -> Pin<Box<dyn Future<Output = PageAdmission> + Send + 'a>>;

    /// Charges `owner` for the premium calls a page's read made.
    fn charge<'a>(
        &'a self,
        owner: &'a str,
        premium_calls: u32,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>;
}

/// The shortest and longest waits between two asks: a limiter naming a nanosecond is not asked
/// again at once, one naming an hour is asked again within seconds (a reload may raise the rate).
const MIN_WAIT: Duration = Duration::from_millis(10);
const MAX_WAIT: Duration = Duration::from_secs(5);

/// Where the door layer's [`AdmitPages`] is, once registered. Cheap to clone.
#[derive(Clone, Default)]
pub(crate) struct PageGate(Arc<OnceLock<Arc<dyn AdmitPages>>>);

impl PageGate {
    /// Registers `admit`; a second registration is ignored.
    pub(crate) fn set(&self, admit: Arc<dyn AdmitPages>) {
        let _ = self.0.set(admit);
    }

    /// Waits until `owner` may read one more page (at once when nothing is registered); whether
    /// its budget allows the premium readers for it. The caller's own deadline or cancel ends the
    /// wait by dropping it.
    pub(crate) async fn turn(&self, owner: &str) -> Premium {
        let Some(admit) = self.0.get() else {
            return Premium::BudgetSpent;
        };
        loop {
            match admit.admit(owner).await {
                PageAdmission::Go { premium: true } => return Premium::Allowed,
                PageAdmission::Go { premium: false } => return Premium::BudgetSpent,
                PageAdmission::WaitFor(wait) => {
                    tokio::time::sleep(wait.clamp(MIN_WAIT, MAX_WAIT)).await;
                }
            }
        }
    }

    /// Charges `owner` for a read's premium calls (nothing for none).
    pub(crate) async fn charge(&self, owner: &str, premium_calls: u32) {
        if let (Some(admit), true) = (self.0.get(), premium_calls > 0) {
            admit.charge(owner, premium_calls).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Admits `free` pages, then asks for a wait of a minute each time.
    struct Allowance {
        free: usize,
        asked: AtomicUsize,
    }

    impl AdmitPages for Allowance {
        fn admit<'a>(
            &'a self,
            _owner: &'a str,
        ) -> Pin<Box<dyn Future<Output = PageAdmission> + Send + 'a>> {
            let asked = self.asked.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move {
                if asked < self.free {
                    PageAdmission::Go {
                        premium: asked == 0,
                    }
                } else {
                    PageAdmission::WaitFor(Duration::from_secs(60))
                }
            })
        }

        fn charge<'a>(
            &'a self,
            _owner: &'a str,
            _premium_calls: u32,
        ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
            Box::pin(async {})
        }
    }

    #[tokio::test(start_paused = true)]
    async fn pages_wait_for_the_clients_rate_and_nothing_registered_waits_for_nothing() {
        let gate = PageGate::default();
        assert_eq!(
            gate.turn("alice").await,
            Premium::BudgetSpent,
            "direct only"
        );
        let allowance = Arc::new(Allowance {
            free: 2,
            asked: AtomicUsize::new(0),
        });
        gate.set(allowance.clone());
        assert_eq!(gate.turn("alice").await, Premium::Allowed);
        assert_eq!(gate.turn("alice").await, Premium::BudgetSpent);
        // The third waits: asked again every MAX_WAIT, never let through.
        let third = tokio::time::timeout(Duration::from_secs(60), gate.turn("alice")).await;
        assert!(third.is_err(), "over the rate, the page waits");
        let again = allowance.asked.load(Ordering::SeqCst) - 2;
        assert!((12..=13).contains(&again), "asked again every 5 s: {again}");
    }
}
