//! The crawls' families: `crawl_jobs_total{kind, status}` (each job counted once, when it ends),
//! `crawl_pages_total{outcome}` (read, failed, robots_blocked), `crawl_jobs_running`,
//! `crawl_frontier_urls`, `crawl_claims_total`, `crawl_stalled_jobs_total` (ended by the reaper)
//! and `crawl_webhooks_total{event, outcome}`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

use super::{JobKind, JobStatus, WebhookEvent};
use gateway_core::metrics::{label_value_as_str, Registry};

/// How a delivery ended: the `outcome` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Delivery {
    /// The receiver answered 2xx.
    Delivered,
    /// The receiver answered 4xx (not tried again).
    Refused,
    /// The fence refused the address (it changed since the job started).
    Fenced,
    /// Every attempt failed (transport, timeout, 5xx).
    Failed,
}

impl Delivery {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Delivered => "delivered",
            Self::Refused => "refused",
            Self::Fenced => "fenced",
            Self::Failed => "failed",
        }
    }
}

/// What became of one URL of a crawl.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum PageOutcome {
    Read,
    Failed,
    RobotsBlocked,
}

impl PageOutcome {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Failed => "failed",
            Self::RobotsBlocked => "robots_blocked",
        }
    }
}

label_value_as_str!(PageOutcome, JobKind, JobStatus, WebhookEvent, Delivery);

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct WebhookLabels {
    event: WebhookEvent,
    outcome: Delivery,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct JobLabels {
    kind: JobKind,
    status: JobStatus,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct PageLabels {
    outcome: PageOutcome,
}

/// The families. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct CrawlMetrics {
    jobs: Family<JobLabels, Counter>,
    pages: Family<PageLabels, Counter>,
    pub(crate) running: Gauge,
    /// URLs taken on and not yet handed in, over the jobs this replica works on.
    pub(crate) frontier: Gauge,
    claims: Counter,
    stalled: Counter,
    webhooks: Family<WebhookLabels, Counter>,
}

impl CrawlMetrics {
    pub(crate) fn new(registry: &mut Registry) -> Self {
        Self {
            jobs: registry.registered(
                "crawl_jobs",
                "Crawls and batch scrapes ended, by kind and final status",
                Family::default(),
            ),
            pages: registry.registered(
                "crawl_pages",
                "URLs of crawls and batch scrapes, by outcome: read, failed, robots_blocked",
                Family::default(),
            ),
            running: registry.registered(
                "crawl_jobs_running",
                "Crawls and batch scrapes running now",
                Gauge::default(),
            ),
            frontier: registry.registered(
                "crawl_frontier_urls",
                "URLs of the running crawls this replica works on, taken on and not yet read or given up",
                Gauge::default(),
            ),
            webhooks: registry.registered(
                "crawl_webhooks",
                "Crawl webhook events sent, by event and outcome: delivered (2xx), refused (4xx), fenced (the address policy refused the URL), failed (every attempt failed)",
                Family::default(),
            ),
            claims: registry.registered(
                "crawl_claims",
                "URLs of shared crawls this replica took over after they went unacknowledged past the claim time (a replica that died or hung)",
                Counter::default(),
            ),
            stalled: registry.registered(
                "crawl_stalled_jobs",
                "Crawls and batch scrapes the reaper ended (failed) after CRAWL_STALL_SECONDS without a URL read or failed",
                Counter::default(),
            ),
        }
    }

    /// A job ended by the reaper.
    pub(crate) fn stalled(&self) {
        self.stalled.inc();
    }

    pub(crate) fn ended(&self, kind: JobKind, status: JobStatus) {
        self.jobs.get_or_create(&JobLabels { kind, status }).inc();
    }

    pub(crate) fn webhook(&self, event: WebhookEvent, outcome: Delivery) {
        self.webhooks
            .get_or_create(&WebhookLabels { event, outcome })
            .inc();
    }

    pub(crate) fn claimed(&self, count: usize) {
        self.claims.inc_by(count as u64);
    }

    pub(crate) fn page(&self, outcome: PageOutcome) {
        self.pages.get_or_create(&PageLabels { outcome }).inc();
    }
}

/// One job's part of `crawl_frontier_urls`: set as the job goes, taken back when it ends.
#[derive(Debug)]
pub(crate) struct FrontierShare {
    gauge: Gauge,
    now: i64,
}

impl FrontierShare {
    pub(crate) fn new(metrics: &CrawlMetrics) -> Self {
        Self {
            gauge: metrics.frontier.clone(),
            now: 0,
        }
    }

    /// The job now has `urls` waiting or in flight.
    pub(crate) fn set(&mut self, urls: u64) {
        let urls = i64::try_from(urls).unwrap_or(i64::MAX);
        self.gauge.inc_by(urls - self.now);
        self.now = urls;
    }
}

impl Drop for FrontierShare {
    fn drop(&mut self) {
        self.gauge.dec_by(self.now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jobs_share_of_the_frontier_goes_with_it() {
        let mut registry = Registry::default();
        let metrics = CrawlMetrics::new(&mut registry);
        let mut a = FrontierShare::new(&metrics);
        let mut b = FrontierShare::new(&metrics);
        a.set(10);
        b.set(3);
        a.set(4);
        assert_eq!(metrics.frontier.get(), 7);
        drop(a);
        assert_eq!(metrics.frontier.get(), 3);
        drop(b);
        assert_eq!(metrics.frontier.get(), 0);
    }
}
