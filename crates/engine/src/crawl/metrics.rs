//! The crawls' families: `crawl_jobs_total{kind, status}` (each job counted once, when it ends),
//! `crawl_pages_total{outcome}` (read, failed, robots_blocked) and `crawl_jobs_running`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

use super::{JobKind, JobStatus};
use gateway_core::metrics::{label_value_as_str, Registry};

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

label_value_as_str!(PageOutcome, JobKind, JobStatus);

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
        }
    }

    pub(crate) fn ended(&self, kind: JobKind, status: JobStatus) {
        self.jobs.get_or_create(&JobLabels { kind, status }).inc();
    }

    pub(crate) fn page(&self, outcome: PageOutcome) {
        self.pages.get_or_create(&PageLabels { outcome }).inc();
    }
}
