//! A crawl's pages as its client's requests: the engine asks, before each page of a job, whether
//! the job's client may make one more request ([`gateway_engine::crawl::admission`]); the answer is
//! the client's rate, taken as one of its own calls (fleet-wide with Redis) — over it, the page
//! waits what the limiter names. A client no longer in `API_KEYS_FILE` reads no more pages (its
//! jobs wait until cancelled or out of time).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use gateway_engine::crawl::admission::{AdmitPages, PageAdmission};

use super::{Clients, ANONYMOUS};

/// How long a removed client's page waits before it is asked about again.
const REMOVED_WAIT: Duration = Duration::from_secs(5);

/// [`AdmitPages`] over the gateway's clients.
pub(crate) struct CrawlPages(pub(crate) Clients);

impl AdmitPages for CrawlPages {
    fn admit<'a>(
        &'a self,
        owner: &'a str,
    ) -> Pin<Box<dyn Future<Output = PageAdmission> + Send + 'a>> {
        Box::pin(async move {
            let caller = match self.0.named(owner) {
                Some(caller) => caller,
                None if owner == ANONYMOUS && !self.0.requires_keys() => self.0.local(),
                None => return PageAdmission::WaitFor(REMOVED_WAIT),
            };
            match self.0.admit(&caller).await {
                Ok(_) => PageAdmission::Go,
                Err(limited) => PageAdmission::WaitFor(limited.retry_after),
            }
        })
    }
}
