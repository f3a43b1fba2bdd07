//! `explain` per job: what the gateway does with a crawl or batch scrape and why — where it runs
//! (this process, or the fleet on Redis; kept under `STATE_DIR`), what it was asked (start, scope,
//! patterns, depth, limit, formats), the gateway's caps it is held to (`CRAWL_*`), how its URLs
//! fared (taken on, read, failed, refused by `robots.txt`) and its rate. Built from the job's own
//! record: nothing from a page, a webhook's headers or a key.

use std::time::SystemTime;

use serde::Serialize;

use super::record::Spec;
use crate::settings::CrawlSettings;
use gateway_core::request::ReadFormat;

/// Where a job runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Runs {
    /// In the process that took it (no Redis, or Redis away at its start).
    Process,
    /// In Redis, every replica working on it.
    Fleet,
}

/// What the job's client asked.
#[derive(Debug, Clone, Serialize)]
pub struct Asked {
    /// `crawl` or `batch`.
    pub kind: &'static str,
    /// The start page (a crawl) or the first of the list (a batch).
    pub start: Option<String>,
    /// URLs in the request (1 for a crawl).
    pub urls: usize,
    /// The most pages, after `CRAWL_MAX_PAGES`.
    pub limit: usize,
    /// Links this many away from the start are the last followed.
    pub max_depth: usize,
    /// Links to other hosts followed.
    pub allow_external: bool,
    /// Links to the start's subdomains followed.
    pub allow_subdomains: bool,
    /// Path (or URL) patterns a followed link must match one of.
    pub include: Vec<String>,
    /// Patterns no followed link may match.
    pub exclude: Vec<String>,
    /// Whether the patterns see the whole URL rather than its path.
    pub patterns_on_full_url: bool,
    /// Query strings dropped from links.
    pub ignore_query: bool,
    /// The most links followed from one page.
    pub max_breadth: Option<usize>,
    /// The formats each page is read in.
    pub formats: Vec<ReadFormat>,
    /// The job's own delay between two reads on a host (ms), beside `robots.txt`'s.
    pub delay_ms: Option<u64>,
    /// Reads at once the job asked for (held to `CRAWL_CONCURRENCY`).
    pub concurrency: Option<usize>,
    /// Whether a webhook receives its events (where to is not shown).
    pub webhook: bool,
}

/// The gateway's caps on every job.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct HeldTo {
    /// `CRAWL_MAX_PAGES`.
    pub max_pages: usize,
    /// `CRAWL_MAX_SECONDS`.
    pub max_seconds: u64,
    /// `CRAWL_MAX_BYTES`.
    pub max_bytes: u64,
    /// `CRAWL_STALL_SECONDS`: no progress for this long ends the job.
    pub stall_seconds: u64,
    /// `CRAWL_CONCURRENCY`.
    pub concurrency: usize,
    /// `CRAWL_PER_HOST_CONCURRENCY`, fleet-wide for a shared job.
    pub per_host_concurrency: usize,
}

/// How the job's URLs fared so far.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct UrlCounts {
    /// Taken on (read, being read, or waiting).
    pub taken_on: u64,
    /// Read.
    pub read: u64,
    /// Could not be read (their errors at `…/errors`).
    pub failed: u64,
    /// Refused by their host's `robots.txt`.
    pub robots_blocked: u64,
    /// Text kept (bytes), against `CRAWL_MAX_BYTES`.
    pub bytes: u64,
}

/// The `gateway` object of a job's status with `explain=1`.
#[derive(Debug, Clone, Serialize)]
pub struct JobExplain {
    /// Where it runs.
    pub runs: Runs,
    /// Whether this process keeps it under `STATE_DIR` (a restart resumes it).
    pub kept_under_state_dir: bool,
    /// What was asked.
    pub asked: Asked,
    /// What holds it.
    pub held_to: HeldTo,
    /// How its URLs fared.
    pub urls: UrlCounts,
    /// Pages read per minute since it started.
    pub pages_per_minute: f64,
    /// How every page is read.
    pub reads: &'static str,
}

/// How a crawl reads, whatever it asked.
const READS: &str = "each page through the page cache and the address fence, direct first (the \
    local browser when a page needs it), a premium reader only for a page neither reads and only \
    while the client's premium budget allows, robots.txt honoured for FETCH_USER_AGENT, each page \
    one of the client's requests";

impl JobExplain {
    /// The explanation of a job of `spec`, started at `created`.
    pub(crate) fn new(
        spec: &Spec,
        settings: &CrawlSettings,
        where_: (Runs, bool),
        urls: UrlCounts,
        created: SystemTime,
    ) -> Self {
        let minutes = SystemTime::now()
            .duration_since(created)
            .map_or(0.0, |age| age.as_secs_f64() / 60.0);
        Self {
            runs: where_.0,
            kept_under_state_dir: where_.1,
            asked: Asked {
                kind: spec.kind().as_str(),
                start: spec.urls.first().cloned(),
                urls: spec.urls.len(),
                limit: spec.limit.min(settings.max_pages),
                max_depth: spec.max_depth,
                allow_external: spec.allow_external,
                allow_subdomains: spec.allow_subdomains,
                include: spec.include.clone(),
                exclude: spec.exclude.clone(),
                patterns_on_full_url: spec.on_full_url,
                ignore_query: spec.ignore_query,
                max_breadth: spec.max_breadth,
                formats: spec.formats.clone(),
                delay_ms: spec.delay_ms,
                concurrency: spec.concurrency,
                webhook: spec.webhook.is_some(),
            },
            held_to: HeldTo {
                max_pages: settings.max_pages,
                max_seconds: settings.max_time.as_secs(),
                max_bytes: settings.max_bytes,
                stall_seconds: settings.stall.as_secs(),
                concurrency: settings.concurrency,
                per_host_concurrency: settings.per_host,
            },
            urls,
            pages_per_minute: if minutes > 0.0 {
                (urls.read as f64 / minutes * 10.0).round() / 10.0
            } else {
                0.0
            },
            reads: READS,
        }
    }
}
