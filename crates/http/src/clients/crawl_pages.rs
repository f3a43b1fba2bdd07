//! A crawl's pages as its client's requests: the engine asks, before each page of a job, whether
//! the job's client may make one more request ([`gateway_engine::crawl::admission`]); the answer is
//! the client's rate, taken as one of its own calls (fleet-wide with Redis) — over it, the page
//! waits what the limiter names — and whether its premium budget allows a premium reader for the
//! page; the premium calls a page's read made are charged to the client as a read's are. A client
//! no longer in `API_KEYS_FILE` reads no more pages (its jobs wait, and the reaper ends them).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use gateway_engine::crawl::admission::{AdmitPages, PageAdmission};

use super::{Clients, ANONYMOUS};

/// How long a removed client's page waits before it is asked about again.
const REMOVED_WAIT: Duration = Duration::from_secs(5);

/// [`AdmitPages`] over the gateway's clients.
pub(crate) struct CrawlPages(pub(crate) Clients);

impl CrawlPages {
    /// The job's client, as the keys file has it now (`None`: removed).
    fn caller(&self, owner: &str) -> Option<super::Caller> {
        match self.0.named(owner) {
            Some(caller) => Some(caller),
            None if owner == ANONYMOUS && !self.0.requires_keys() => Some(self.0.local()),
            None => None,
        }
    }
}

impl AdmitPages for CrawlPages {
    fn admit<'a>(
        &'a self,
        owner: &'a str,
    ) -> Pin<Box<dyn Future<Output = PageAdmission> + Send + 'a>> {
        Box::pin(async move {
            let Some(caller) = self.caller(owner) else {
                return PageAdmission::WaitFor(REMOVED_WAIT);
            };
            match self.0.admit(&caller).await {
                Ok(budget) => PageAdmission::Go {
                    premium: budget.is_ok(),
                },
                Err(limited) => PageAdmission::WaitFor(limited.retry_after),
            }
        })
    }

    fn charge<'a>(
        &'a self,
        owner: &'a str,
        premium_calls: u32,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        Box::pin(async move {
            if let Some(caller) = self.caller(owner) {
                self.0.charge(&caller, premium_calls, 0.0).await;
            }
        })
    }
}
