//! Whole sites (issue #43): crawls — a start page and the links it leads to, within a scope —
//! and batch scrapes — a list of pages —, run as jobs in the background, their status and pages
//! kept for `CRAWL_RESULT_TTL_SECONDS`, cancelled within a read's time.
//!
//! Owns: the jobs ([`Crawls`]: start, status with its pages from an offset, cancel, errors; each
//! job its client's alone — another client asking for it is told there is none), the scope
//! ([`scope`]: hosts, patterns, depth, trap guards), the run ([`run`]: the frontier, `robots.txt`
//! per host, per-host concurrency and crawl delay, the caps) and the metrics; the limits are
//! `crate::settings::CrawlSettings`.
//!
//! Every page is read through [`crate::read`] as any page is — the page cache, the address fence
//! for every URL, the host's breaker — at the basic depth, each counted against its client's rate
//! first, with the premium readers only while the client's premium budget allows them and the
//! calls charged to it after ([`admission`]).
//!
//! Doors: Firecrawl's `/crawl` and `/batch/scrape` (polled), Tavily's `/crawl` and `/map`
//! (waited for, [`Crawls::wait`]).
//!
//! With `REDIS_URL` set, a job lives in Redis and the whole fleet works on it ([`shared`]: the
//! frontier a Redis Stream every replica's consumer reads, a replica killed mid-job loses
//! nothing); without it, or when Redis does not answer at the start, the job runs in the process
//! that took it ([`run`]).
//!
//! Webhooks ([`webhook`]): each event a job asked for, signed with its client's secret, through the
//! fence.
//!
//! Without Redis, with `STATE_DIR`, this process's jobs are kept there ([`kept`]) and a restart
//! resumes them ([`Crawls::keep_under`]).

pub mod admission;
pub mod explain;
mod kept;
mod metrics;
mod record;
pub(crate) mod run;
pub mod scope;
mod shared;
pub mod webhook;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use tokio_util::sync::CancellationToken;
use url::Url;

use crate::read::Reading;
pub use crate::settings::CrawlSettings;
use crate::settings::WebhookSecret;
use gateway_core::metrics::Registry;
use gateway_core::request::ReadFormat;
use gateway_core::shared::SharedTier;
use gateway_upstreams::reader::Document;
pub(crate) use metrics::CrawlMetrics;
pub use scope::CrawlScope;
use webhook::Deliveries;
pub use webhook::{Webhook, WebhookRefusal};

/// A crawl or a batch scrape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobKind {
    /// A start page and its links.
    Crawl,
    /// A list of pages.
    Batch,
}

impl JobKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Crawl => "crawl",
            Self::Batch => "batch",
        }
    }
}

/// Where a job is, as Firecrawl says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobStatus {
    /// Reading.
    Scraping,
    /// Done (also when a cap ended it: what it read is there).
    Completed,
    /// Nothing could be read.
    Failed,
    /// Cancelled by its client.
    Cancelled,
}

impl JobStatus {
    /// Firecrawl's word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Scraping => "scraping",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }
}

/// An event a webhook may ask for.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum WebhookEvent {
    /// The job started.
    Started,
    /// A page was read.
    Page,
    /// The job ended with what it read.
    Completed,
    /// The job ended with nothing read.
    Failed,
}

impl WebhookEvent {
    /// Every event (what a webhook gets when it names none).
    pub const ALL: [WebhookEvent; 4] = [Self::Started, Self::Page, Self::Completed, Self::Failed];

    /// Firecrawl's word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Started => "started",
            Self::Page => "page",
            Self::Completed => "completed",
            Self::Failed => "failed",
        }
    }

    /// The event named `word`.
    pub fn parse(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == word)
    }
}

/// What a door asks to run.
#[derive(Debug, Clone)]
pub struct CrawlRequest {
    /// The client it belongs to: only it sees the job.
    pub owner: String,
    /// Crawl or batch.
    pub kind: JobKind,
    /// The start page (a crawl), or the pages (a batch).
    pub urls: Vec<Url>,
    /// What a crawl follows (a batch reads its pages only).
    pub scope: CrawlScope,
    /// Each page read in these formats (Markdown first when links are to be followed).
    pub formats: Vec<ReadFormat>,
    /// The most pages read (held to `CRAWL_MAX_PAGES`).
    pub limit: usize,
    /// At least this long between two reads on one host (Firecrawl's `delay`), beside
    /// `robots.txt`'s crawl delay.
    pub delay: Option<Duration>,
    /// Reads in flight at most (Firecrawl's `maxConcurrency`), within `CRAWL_CONCURRENCY`.
    pub concurrency: Option<usize>,
    /// A crawl starts from the site's sitemaps too (the URLs in scope, one link away).
    pub sitemap: bool,
    /// Only URLs are wanted (a map): the pages at the last depth are found, not read.
    pub discover_only: bool,
    /// The client asked for each page's links (carried to its view).
    pub links: bool,
    /// The client asked for Markdown (a links-only crawl reads it for the links, and does not
    /// give it; carried to its view).
    pub markdown: bool,
    /// Where the job's events are sent (Firecrawl's `webhook`).
    pub webhook: Option<Webhook>,
}

/// One page of a job.
#[derive(Debug, Clone)]
pub struct CrawledPage {
    /// The URL read.
    pub url: String,
    /// Its reads, one per format asked.
    pub reads: Vec<(ReadFormat, Arc<Document>)>,
}

/// One URL a job could not read.
#[derive(Debug, Clone)]
pub struct CrawlFailure {
    /// The URL.
    pub url: String,
    /// Why, as a sentence ending with its code.
    pub error: String,
    /// When.
    pub at: SystemTime,
}

/// A job as its client sees it.
#[derive(Debug, Clone)]
pub struct JobView {
    /// Its ID.
    pub id: String,
    /// Crawl or batch.
    pub kind: JobKind,
    /// Where it is.
    pub status: JobStatus,
    /// URLs it has taken on (read, being read, or waiting).
    pub total: usize,
    /// Pages read.
    pub completed: usize,
    /// When it started.
    pub created_at: SystemTime,
    /// When it and its pages are forgotten.
    pub expires_at: SystemTime,
    /// Pages from the offset asked, at most the page size asked.
    pub pages: Vec<CrawledPage>,
    /// Whether more pages follow these.
    pub more: bool,
    /// Whether the client asked for each page's links.
    pub links: bool,
    /// Whether the client asked for Markdown.
    pub markdown: bool,
    /// What the gateway does with it and why (`explain=1`).
    pub explain: explain::JobExplain,
}

/// A job as the operator sees it (`GET /admin/crawls`): whose, where it is, how far.
#[derive(Debug, Clone, serde::Serialize)]
pub struct JobSummary {
    /// Its ID.
    pub id: String,
    /// Its client.
    pub owner: String,
    /// `crawl` or `batch`.
    pub kind: &'static str,
    /// Firecrawl's word for where it is.
    pub status: &'static str,
    /// Pages read.
    pub completed: usize,
    /// URLs it could not read.
    pub failed: usize,
    /// URLs taken on.
    pub total: usize,
    /// When it started (unix seconds).
    pub created_at: u64,
    /// Pages read per minute since it started.
    pub pages_per_minute: f64,
    /// Whether the fleet shares it (Redis) or this process runs it.
    pub shared: bool,
}

impl JobSummary {
    fn new(
        id: &str,
        owner: &str,
        kind: JobKind,
        status: JobStatus,
        (completed, failed, total): (usize, usize, usize),
        created: SystemTime,
        shared: bool,
    ) -> Self {
        let minutes = SystemTime::now()
            .duration_since(created)
            .map_or(0.0, |d| d.as_secs_f64() / 60.0)
            .max(1.0 / 60.0);
        Self {
            id: id.to_owned(),
            owner: owner.to_owned(),
            kind: kind.as_str(),
            status: status.as_str(),
            completed,
            failed,
            total,
            created_at: created
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            pages_per_minute: (completed as f64 / minutes * 10.0).round() / 10.0,
            shared,
        }
    }
}

/// Why a job was not started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StartRefusal {
    /// Its webhook cannot be honoured.
    #[error("{0}")]
    Webhook(WebhookRefusal),
    /// The client has `CRAWL_MAX_JOBS_PER_CLIENT` running.
    #[error("this client already has {0} crawls running (CRAWL_MAX_JOBS_PER_CLIENT); wait for one to end or cancel one")]
    TooManyJobs(usize),
    /// No URL to start from.
    #[error("no URL to read")]
    NoUrl,
}

/// A job's state, shared by its run and its readers.
#[derive(Debug)]
pub(crate) struct Job {
    pub(crate) id: String,
    pub(crate) owner: String,
    pub(crate) kind: JobKind,
    /// Its request as kept (what `explain` shows).
    pub(crate) spec: record::Spec,
    pub(crate) webhook: Option<Webhook>,
    pub(crate) links: bool,
    pub(crate) markdown: bool,
    pub(crate) created_at: SystemTime,
    pub(crate) expires_at: SystemTime,
    pub(crate) cancel: CancellationToken,
    pub(crate) state: Mutex<JobState>,
    /// True once the run has ended.
    pub(crate) ended: tokio::sync::watch::Sender<bool>,
}

#[derive(Debug)]
pub(crate) struct JobState {
    pub(crate) status: JobStatus,
    pub(crate) total: usize,
    pub(crate) pages: Vec<CrawledPage>,
    pub(crate) failures: Vec<CrawlFailure>,
    pub(crate) robots_blocked: Vec<String>,
    /// Every URL taken on, in the order found (a map's answer).
    pub(crate) discovered: Vec<String>,
}

impl Job {
    pub(crate) fn state(&self) -> std::sync::MutexGuard<'_, JobState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The webhook event of a job that ended `status` (none for a cancel: its client did it).
pub(crate) fn ended_event(status: JobStatus) -> Option<WebhookEvent> {
    match status {
        JobStatus::Completed => Some(WebhookEvent::Completed),
        JobStatus::Failed => Some(WebhookEvent::Failed),
        JobStatus::Scraping | JobStatus::Cancelled => None,
    }
}

/// Ended jobs a client keeps, per job it may run at once: with `CRAWL_MAX_BYTES` each, what a
/// client can hold in memory is bounded (3 running × 4 kept × 64 MiB by default), not only by
/// `CRAWL_RESULT_TTL_SECONDS`.
const KEPT_PER_RUNNING: usize = 4;

/// Forgets `owner`'s oldest ended jobs until it has fewer than `keep` (so a new one fits).
fn forget_oldest_ended(jobs: &mut HashMap<String, Arc<Job>>, owner: &str, keep: usize) {
    let mut ended: Vec<(SystemTime, String)> = jobs
        .values()
        .filter(|job| job.owner == owner && job.state().status != JobStatus::Scraping)
        .map(|job| (job.created_at, job.id.clone()))
        .collect();
    let held = jobs.values().filter(|job| job.owner == owner).count();
    if held < keep {
        return;
    }
    ended.sort();
    for (_, id) in ended.into_iter().take(held + 1 - keep) {
        jobs.remove(&id);
    }
}

/// The jobs of this process. Cheap to clone.
#[derive(Clone)]
pub struct Crawls {
    inner: Arc<Inner>,
}

struct Inner {
    jobs: Mutex<HashMap<String, Arc<Job>>>,
    reading: Reading,
    settings: CrawlSettings,
    metrics: CrawlMetrics,
    deliveries: Deliveries,
    /// Where this process keeps its jobs (`STATE_DIR`), once [`Crawls::keep_under`] said.
    kept: std::sync::OnceLock<kept::KeptJobs>,
    /// The jobs the fleet shares, when `REDIS_URL` is set.
    fleet: Option<shared::FleetJobs>,
    /// How a page is counted against its client's rate ([`admission`]).
    pages: admission::PageGate,
}

impl std::fmt::Debug for Crawls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Crawls").finish_non_exhaustive()
    }
}

impl Crawls {
    pub(crate) fn new(
        reading: Reading,
        settings: CrawlSettings,
        webhook_secret: Option<WebhookSecret>,
        tier: Option<SharedTier>,
        registry: &mut Registry,
    ) -> Self {
        let metrics = CrawlMetrics::new(registry);
        let deliveries = Deliveries::new(reading.clone(), webhook_secret, metrics.clone());
        let pages = admission::PageGate::default();
        let fleet = tier.map(|tier| {
            shared::FleetJobs::new(
                tier,
                reading.clone(),
                settings,
                metrics.clone(),
                deliveries.clone(),
                pages.clone(),
            )
        });
        Self {
            inner: Arc::new(Inner {
                jobs: Mutex::new(HashMap::new()),
                reading,
                settings,
                metrics,
                deliveries,
                kept: std::sync::OnceLock::new(),
                fleet,
                pages,
            }),
        }
    }

    /// Counts every page a job reads against its client's rate through `admit` (the door
    /// layer's clients), here and in the fleet's jobs this replica works on. Called once, before
    /// any job runs.
    pub fn count_pages_with(&self, admit: Arc<dyn admission::AdmitPages>) {
        self.inner.pages.set(admit);
    }

    /// Works, forever, on the jobs the fleet shares (nothing without `REDIS_URL`).
    pub(crate) async fn join_fleet_jobs(&self) {
        match &self.inner.fleet {
            Some(fleet) => fleet.join_jobs().await,
            None => std::future::pending().await,
        }
    }

    fn jobs(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Job>>> {
        self.inner
            .jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The limits in force.
    pub fn settings(&self) -> &CrawlSettings {
        &self.inner.settings
    }

    /// Whether jobs' webhooks are signed and sent here (`CRAWL_WEBHOOK_SECRET` is set).
    pub fn webhooks(&self) -> bool {
        self.inner.deliveries.enabled()
    }

    /// Client `owner`'s webhook secret (what its webhooks are signed with), when webhooks are
    /// sent here.
    pub fn webhook_secret(&self, owner: &str) -> Option<String> {
        self.inner.deliveries.client_secret(owner)
    }

    /// Starts `request` in the background — in Redis for the whole fleet when `REDIS_URL` is
    /// set and answers, else in this process; its ID.
    pub async fn start(&self, mut request: CrawlRequest) -> Result<String, StartRefusal> {
        if request.urls.is_empty() {
            return Err(StartRefusal::NoUrl);
        }
        let settings = self.inner.settings;
        request.limit = request.limit.clamp(1, settings.max_pages);
        if !request.formats.contains(&ReadFormat::Markdown) {
            request.formats.insert(0, ReadFormat::Markdown);
        }
        if let Some(webhook) = &request.webhook {
            self.inner
                .deliveries
                .admit(webhook)
                .await
                .map_err(StartRefusal::Webhook)?;
        }
        if let Some(fleet) = &self.inner.fleet {
            match fleet.start(&request).await {
                Some(started) => return started,
                None => tracing::warn!(
                    client = %request.owner,
                    "redis unavailable: this crawl runs in this replica only"
                ),
            }
        }
        let now = SystemTime::now();
        let job = {
            let mut jobs = self.jobs();
            jobs.retain(|_, job| job.expires_at > now);
            forget_oldest_ended(
                &mut jobs,
                &request.owner,
                settings.jobs_per_client * KEPT_PER_RUNNING,
            );
            let running = jobs
                .values()
                .filter(|job| {
                    job.owner == request.owner && job.state().status == JobStatus::Scraping
                })
                .count();
            if running >= settings.jobs_per_client {
                return Err(StartRefusal::TooManyJobs(running));
            }
            let job = Arc::new(Job {
                id: uuid::Uuid::new_v4().to_string(),
                owner: request.owner.clone(),
                kind: request.kind,
                spec: record::Spec::of(&request),
                webhook: request.webhook.clone(),
                links: request.links,
                markdown: request.markdown,
                created_at: now,
                expires_at: now + settings.result_ttl,
                cancel: CancellationToken::new(),
                state: Mutex::new(JobState {
                    status: JobStatus::Scraping,
                    total: 0,
                    pages: Vec::new(),
                    failures: Vec::new(),
                    robots_blocked: Vec::new(),
                    discovered: Vec::new(),
                }),
                ended: tokio::sync::watch::Sender::new(false),
            });
            jobs.insert(job.id.clone(), Arc::clone(&job));
            job
        };
        let id = job.id.clone();
        tracing::info!(job = %id, client = %request.owner, kind = request.kind.as_str(), "crawl started");
        if let Some(webhook) = &job.webhook {
            self.inner.deliveries.send(
                webhook,
                &job.owner,
                job.kind,
                &id,
                WebhookEvent::Started,
                None,
            );
        }
        if let Some(kept) = self.inner.kept.get() {
            // Kept from the start: a restart before the first snapshot still knows the job.
            let (kept, snapshot) = (kept.clone(), run::first_snapshot(&job, &request));
            let _ = tokio::task::spawn_blocking(move || kept.write(&snapshot)).await;
        }
        self.spawn_run(job, request, None);
        Ok(id)
    }

    /// Runs `job` in the background (from `resume` after a restart).
    fn spawn_run(&self, job: Arc<Job>, request: CrawlRequest, resume: Option<run::Resume>) {
        let inner = Arc::clone(&self.inner);
        inner.metrics.running.inc();
        tokio::spawn(async move {
            let kind = job.kind;
            let with = run::RunWith {
                reading: inner.reading.clone(),
                settings: inner.settings,
                metrics: &inner.metrics,
                deliveries: &inner.deliveries,
                kept: inner.kept.get().cloned(),
                pages: inner.pages.clone(),
            };
            let status = run::run(&job, request, with, resume).await;
            inner.metrics.running.dec();
            inner.metrics.ended(kind, status);
            if let (Some(webhook), Some(event)) = (&job.webhook, ended_event(status)) {
                inner
                    .deliveries
                    .send(webhook, &job.owner, kind, &job.id, event, None);
            }
            job.ended.send_replace(true);
            let state = job.state();
            tracing::info!(job = %job.id, status = status.as_str(), pages = state.pages.len(), failed = state.failures.len(), "crawl ended");
        });
    }

    /// Keeps this process's jobs under `state_dir` from now on, and takes back those an earlier
    /// process kept there: ended ones served as they were, running ones run on from their
    /// frontier. Nothing with `REDIS_URL` (a job is then the fleet's, in Redis).
    pub async fn keep_under(&self, state_dir: &std::path::Path) {
        if self.inner.fleet.is_some() {
            return;
        }
        let kept = match kept::KeptJobs::new(state_dir) {
            Ok(kept) => kept,
            Err(error) => {
                tracing::warn!(error = %error.kind(), "STATE_DIR: crawl jobs not kept (the directory is not usable)");
                return;
            }
        };
        if self.inner.kept.set(kept.clone()).is_err() {
            return;
        }
        let max_bytes = self.inner.settings.max_bytes;
        let loaded = tokio::task::spawn_blocking(move || kept.load(max_bytes))
            .await
            .unwrap_or_default();
        let (mut ended, mut resumed) = (0usize, 0usize);
        for (snapshot, pages) in loaded {
            let status = snapshot.status();
            let request = snapshot.spec.request(&snapshot.owner);
            let job = Arc::new(Job {
                id: snapshot.id.clone(),
                owner: snapshot.owner.clone(),
                kind: snapshot.spec.kind(),
                spec: snapshot.spec.clone(),
                webhook: request.as_ref().and_then(|r| r.webhook.clone()),
                links: request.as_ref().is_some_and(|r| r.links),
                markdown: request.as_ref().is_none_or(|r| r.markdown),
                created_at: record::from_unix_ms(snapshot.created_ms),
                expires_at: record::from_unix_ms(snapshot.expires_ms),
                cancel: CancellationToken::new(),
                state: Mutex::new(JobState {
                    status,
                    total: snapshot.total.max(pages.len()),
                    pages,
                    failures: snapshot.failures(),
                    robots_blocked: snapshot.robots_blocked.clone(),
                    discovered: snapshot.discovered.clone(),
                }),
                ended: tokio::sync::watch::Sender::new(status != JobStatus::Scraping),
            });
            self.jobs().insert(job.id.clone(), Arc::clone(&job));
            match (status, request) {
                (JobStatus::Scraping, Some(request)) => {
                    resumed += 1;
                    // A page read after the last snapshot is kept, not read again.
                    let done: std::collections::HashSet<String> = {
                        let state = job.state();
                        state
                            .pages
                            .iter()
                            .map(|p| p.url.clone())
                            .chain(state.failures.iter().map(|f| f.url.clone()))
                            .collect()
                    };
                    let frontier = snapshot
                        .frontier
                        .into_iter()
                        .filter(|(url, _)| !done.contains(url))
                        .collect();
                    let resume = run::Resume {
                        frontier,
                        launched: snapshot.launched,
                        bytes: snapshot.bytes,
                        created: job.created_at,
                    };
                    self.spawn_run(job, request, Some(resume));
                }
                (JobStatus::Scraping, None) => {
                    // A request this build cannot run: ended with what it read.
                    job.state().status = JobStatus::Completed;
                    job.ended.send_replace(true);
                    ended += 1;
                }
                _ => ended += 1,
            }
        }
        if resumed + ended > 0 {
            tracing::info!(resumed, ended, "STATE_DIR: crawl jobs taken back");
        }
    }

    /// The job `id` of `owner`, if it has one by that ID.
    fn job(&self, id: &str, owner: &str) -> Option<Arc<Job>> {
        let now = SystemTime::now();
        self.jobs()
            .get(id)
            .filter(|job| job.owner == owner && job.expires_at > now)
            .cloned()
    }

    /// The job's status and its pages from `skip`, at most `take` of them.
    pub async fn status(&self, id: &str, owner: &str, skip: usize, take: usize) -> Option<JobView> {
        match self.local_status(id, owner, skip, take) {
            Some(view) => Some(view),
            None => {
                self.inner
                    .fleet
                    .as_ref()?
                    .status(id, owner, skip, take)
                    .await
            }
        }
    }

    fn local_status(&self, id: &str, owner: &str, skip: usize, take: usize) -> Option<JobView> {
        let job = self.job(id, owner)?;
        let state = job.state();
        let pages: Vec<CrawledPage> = state.pages.iter().skip(skip).take(take).cloned().collect();
        let urls = explain::UrlCounts {
            taken_on: state.total as u64,
            read: state.pages.len() as u64,
            failed: state.failures.len() as u64,
            robots_blocked: state.robots_blocked.len() as u64,
            bytes: state
                .pages
                .iter()
                .flat_map(|page| page.reads.iter())
                .map(|(_, doc)| doc.content.len() as u64)
                .sum(),
        };
        let kept = self.inner.kept.get().is_some();
        Some(JobView {
            explain: explain::JobExplain::new(
                &job.spec,
                &self.inner.settings,
                (explain::Runs::Process, kept),
                urls,
                job.created_at,
            ),
            id: job.id.clone(),
            kind: job.kind,
            status: state.status,
            total: state.total,
            completed: state.pages.len(),
            created_at: job.created_at,
            expires_at: job.expires_at,
            more: skip + pages.len() < state.pages.len(),
            links: job.links,
            markdown: job.markdown,
            pages,
        })
    }

    /// Cancels the job; its status after (a job that had ended keeps its own).
    pub async fn cancel(&self, id: &str, owner: &str) -> Option<JobStatus> {
        let Some(job) = self.job(id, owner) else {
            return self.inner.fleet.as_ref()?.cancel(id, owner).await;
        };
        job.cancel.cancel();
        let mut state = job.state();
        if state.status == JobStatus::Scraping {
            state.status = JobStatus::Cancelled;
        }
        Some(state.status)
    }

    /// Waits until the job ends, at most `limit`; then cancels it if it runs still (what it
    /// read is kept). Its status with every page, and every URL it took on.
    pub async fn wait(
        &self,
        id: &str,
        owner: &str,
        limit: Duration,
    ) -> Option<(JobView, Vec<String>)> {
        let Some(job) = self.job(id, owner) else {
            return self.wait_shared(id, owner, limit).await;
        };
        let mut ended = job.ended.subscribe();
        let finished = tokio::time::timeout(limit, ended.wait_for(|done| *done))
            .await
            .is_ok();
        if !finished {
            job.cancel.cancel();
            let _ =
                tokio::time::timeout(Duration::from_secs(5), ended.wait_for(|done| *done)).await;
        }
        let view = self.local_status(id, owner, 0, usize::MAX)?;
        let discovered = job.state().discovered.clone();
        Some((view, discovered))
    }

    /// [`Crawls::wait`] for a job the fleet shares: its status looked at every quarter second.
    async fn wait_shared(
        &self,
        id: &str,
        owner: &str,
        limit: Duration,
    ) -> Option<(JobView, Vec<String>)> {
        let fleet = self.inner.fleet.as_ref()?;
        let until = tokio::time::Instant::now() + limit;
        loop {
            let view = fleet.status(id, owner, 0, 0).await?;
            if view.status != JobStatus::Scraping {
                break;
            }
            if tokio::time::Instant::now() >= until {
                fleet.cancel(id, owner).await;
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        let view = fleet.status(id, owner, 0, usize::MAX).await?;
        let (_, _, discovered) = fleet.lists(id, owner).await?;
        Some((view, discovered))
    }

    /// Every job, for the operator: this process's (running and kept), then the running jobs
    /// the fleet shares; newest first.
    pub async fn overview(&self) -> Vec<JobSummary> {
        let now = SystemTime::now();
        let mut all: Vec<JobSummary> = self
            .jobs()
            .values()
            .filter(|job| job.expires_at > now)
            .map(|job| {
                let state = job.state();
                JobSummary::new(
                    &job.id,
                    &job.owner,
                    job.kind,
                    state.status,
                    (state.pages.len(), state.failures.len(), state.total),
                    job.created_at,
                    false,
                )
            })
            .collect();
        if let Some(fleet) = &self.inner.fleet {
            all.extend(fleet.overview().await);
        }
        all.sort_by_key(|job| std::cmp::Reverse(job.created_at));
        all
    }

    /// Cancels job `id` whoever's it is (the operator's action); its status after.
    pub async fn cancel_any(&self, id: &str) -> Option<JobStatus> {
        let local = self.jobs().get(id).map(|job| job.owner.clone());
        let owner = match local {
            Some(owner) => owner,
            None => self.inner.fleet.as_ref()?.owner_of(id).await?,
        };
        self.cancel(id, &owner).await
    }

    /// The URLs the job could not read, and those `robots.txt` kept it from.
    pub async fn errors(&self, id: &str, owner: &str) -> Option<(Vec<CrawlFailure>, Vec<String>)> {
        let Some(job) = self.job(id, owner) else {
            let (failures, robots, _) = self.inner.fleet.as_ref()?.lists(id, owner).await?;
            return Some((failures, robots));
        };
        let state = job.state();
        Some((state.failures.clone(), state.robots_blocked.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(owner: &str, at: u64, status: JobStatus) -> Arc<Job> {
        Arc::new(Job {
            id: format!("{owner}-{at}"),
            owner: owner.to_owned(),
            kind: JobKind::Crawl,
            spec: record::Spec::of(&CrawlRequest {
                owner: owner.to_owned(),
                kind: JobKind::Crawl,
                urls: vec![url::Url::parse("http://example.test/").expect("a URL")],
                scope: scope::CrawlScope {
                    allow_external: false,
                    allow_subdomains: false,
                    include: Vec::new(),
                    exclude: Vec::new(),
                    on_full_url: false,
                    max_depth: 1,
                    ignore_query: false,
                    max_breadth: None,
                    include_hosts: Vec::new(),
                    exclude_hosts: Vec::new(),
                },
                formats: Vec::new(),
                limit: 1,
                delay: None,
                concurrency: None,
                sitemap: false,
                discover_only: false,
                links: false,
                markdown: true,
                webhook: None,
            }),
            webhook: None,
            links: false,
            markdown: true,
            created_at: SystemTime::UNIX_EPOCH + Duration::from_secs(at),
            expires_at: SystemTime::UNIX_EPOCH + Duration::from_secs(at + 1000),
            cancel: CancellationToken::new(),
            state: Mutex::new(JobState {
                status,
                total: 0,
                pages: Vec::new(),
                failures: Vec::new(),
                robots_blocked: Vec::new(),
                discovered: Vec::new(),
            }),
            ended: tokio::sync::watch::Sender::new(false),
        })
    }

    #[test]
    fn a_client_keeps_a_bounded_number_of_jobs_the_oldest_ended_go_first() {
        let mut jobs = HashMap::new();
        for (owner, at, status) in [
            ("a", 1, JobStatus::Completed),
            ("a", 2, JobStatus::Scraping),
            ("a", 3, JobStatus::Cancelled),
            ("a", 4, JobStatus::Completed),
            ("b", 0, JobStatus::Completed),
        ] {
            let job = job(owner, at, status);
            jobs.insert(job.id.clone(), job);
        }
        forget_oldest_ended(&mut jobs, "a", 3);
        let mut left: Vec<&str> = jobs.keys().map(String::as_str).collect();
        left.sort_unstable();
        // Room for one more of a's: its two oldest ended jobs go; the running one and b's stay.
        assert_eq!(left, ["a-2", "a-4", "b-0"]);
        forget_oldest_ended(&mut jobs, "b", 3);
        assert_eq!(jobs.len(), 3);
    }
}
