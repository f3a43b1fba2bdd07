//! Jobs the whole fleet works on, when `REDIS_URL` is set: the job's request, status, counters,
//! frontier (a Redis Stream read by a consumer group every replica joins), seen-set and pages live
//! in Redis ([`gateway_core::shared`]'s job operations), so any replica answers a job's status,
//! every replica reads its pages, and a replica killed mid-job loses nothing — the URLs it held
//! are claimed by the others once silent for [`claim_idle`], and each page is kept and counted
//! once.
//!
//! Owns: the job as bytes ([`Spec`]: the request; a page and a failure as versioned JSON), the
//! start (seeds, then the sitemap's URLs added in the background while the job is marked
//! `seeding`), each replica's worker per job ([`work`]: take URLs, honour `robots.txt`, take the
//! host's turn — at most `CRAWL_PER_HOST_CONCURRENCY` reads per host fleet-wide, its crawl delay
//! —, read, add the links in scope, hand the URL in) and the views a door asks for.
//!
//! A job ends when every URL taken on was handed in, when `CRAWL_MAX_SECONDS` or
//! `CRAWL_MAX_BYTES` is spent (then `completed` with what it read), or when cancelled. Whoever
//! sees the end first writes it — a worker, or the reaper: every replica looks at every running
//! job each second (and a status read looks at its job), ending one whose time is spent, or —
//! `failed` — one that handed no URL in for `CRAWL_STALL_SECONDS` (its replicas all died, its
//! reads all hang, its client's rate is spent).
//!
//! The trap guard per path shape counts in Redis, beside the seen-set: a URL is taken on only
//! while its shape has room fleet-wide, as in the local run.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use tokio::sync::Notify;
use tokio::task::JoinSet;
use url::Url;

use super::admission::PageGate;
use super::explain::{JobExplain, Runs, UrlCounts};
use super::metrics::{CrawlMetrics, FrontierShare, PageOutcome};
use super::record::{
    decode, encode, from_unix_ms, status_of, unix_ms, FailureBlob, PageBlob, PageBlobOf, Spec,
};
use super::run::{host_of, read_all, Reads};
use super::scope::{shape, MAX_PER_PATTERN};
use super::webhook::Deliveries;
use super::WebhookEvent;
use super::{
    CrawlFailure, CrawlRequest, CrawlScope, CrawlSettings, CrawledPage, JobKind, JobStatus,
    JobView, StartRefusal,
};
use crate::read::site_map::{MapRequest, SitemapMode, MAX_LINKS};
use crate::read::Reading;
use crate::search::Premium;
use gateway_core::request::ReadFormat;
use gateway_core::shared::{
    counter, FrontierEntry, FrontierTake, HandIn, HostLimits, HostTurn, JobCreate, JobEnd, NewUrl,
    ReadDone, SharedTier,
};
use gateway_upstreams::reader::site::Robots;
use gateway_upstreams::reader::Document;

/// How often a worker looks for new URLs when it has none, and a waiting read for its host's turn.
const POLL: Duration = Duration::from_millis(50);
/// The longest crawl delay honoured (as in the local run).
const MAX_DELAY: Duration = Duration::from_secs(30);
/// How often a replica looks for jobs it does not work on yet: a job started on another replica
/// is joined within this (a crawl of a thousand pages takes about two seconds).
const JOIN_EVERY: Duration = Duration::from_millis(50);
/// The reaper looks at every running job every this many looks for jobs (each second).
const REAP_EVERY: u32 = 20;
/// How often a worker takes over the URLs other replicas left silent past the claim time (a scan
/// of the frontier's pending entries): not at each take, the claim time is seconds.
const CLAIM_EVERY: Duration = Duration::from_secs(1);
/// What a worker looks at in its job's record between takes (not the request it carries).
const LOOKED_AT: &[&str] = &["status", "bytes", "seeding", "queued", "handled"];

/// The most URLs a job takes on: four times its page limit (links found beyond what is read are
/// still reported by a map), at most [`MAX_LINKS`] more than the limit.
pub(crate) fn max_urls(limit: usize) -> u64 {
    let limit = limit as u64;
    limit
        .saturating_mul(4)
        .min(limit.saturating_add(MAX_LINKS as u64))
}

/// How long a URL given to a replica may go unacknowledged before another replica takes it: a
/// read's time and its host's wait, with room.
pub(crate) fn claim_idle(read_timeout: Duration) -> Duration {
    read_timeout * 2 + Duration::from_secs(5)
}

fn field<'a>(record: &'a HashMap<String, Vec<u8>>, name: &str) -> &'a str {
    record
        .get(name)
        .and_then(|v| std::str::from_utf8(v).ok())
        .unwrap_or_default()
}

/// What every replica's jobs share: the tier, the reader, the limits, the metrics, the jobs this
/// replica works on now.
#[derive(Clone)]
pub(crate) struct FleetJobs {
    pub(crate) tier: SharedTier,
    pub(crate) reading: Reading,
    pub(crate) settings: CrawlSettings,
    pub(crate) metrics: CrawlMetrics,
    deliveries: Deliveries,
    working: Arc<Mutex<HashSet<String>>>,
    /// Each page counted against the job's client's rate first.
    pages: PageGate,
}

impl FleetJobs {
    pub(crate) fn new(
        tier: SharedTier,
        reading: Reading,
        settings: CrawlSettings,
        metrics: CrawlMetrics,
        deliveries: Deliveries,
        pages: PageGate,
    ) -> Self {
        Self {
            tier,
            reading,
            settings,
            metrics,
            deliveries,
            working: Arc::new(Mutex::new(HashSet::new())),
            pages,
        }
    }

    /// Starts `request` in Redis. `None`: Redis is away (the caller runs it here).
    pub(crate) async fn start(
        &self,
        request: &CrawlRequest,
    ) -> Option<Result<String, StartRefusal>> {
        let running = self.tier.running_jobs().await?;
        let mine = running.values().filter(|o| **o == request.owner).count();
        if mine >= self.settings.jobs_per_client {
            return Some(Err(StartRefusal::TooManyJobs(mine)));
        }
        let id = uuid::Uuid::new_v4().to_string();
        let now = SystemTime::now();
        let expires = unix_ms(now + self.settings.result_ttl);
        let crawling = request.kind == JobKind::Crawl;
        let seeds: Vec<NewUrl> = request
            .urls
            .iter()
            .map(|url| {
                let url = if crawling {
                    request.scope.normalise(url)
                } else {
                    url.clone()
                };
                NewUrl {
                    url: url.to_string(),
                    depth: 0,
                    shape: None,
                }
            })
            .collect();
        let seeding = crawling && request.sitemap;
        let spec = serde_json::to_vec(&Spec::of(request)).ok()?;
        let created = self
            .tier
            .create_job(&JobCreate {
                id: &id,
                owner: &request.owner,
                fields: vec![
                    ("spec", spec),
                    ("created_ms", unix_ms(now).to_string().into_bytes()),
                    ("expires_ms", expires.to_string().into_bytes()),
                    ("seeding", u8::from(seeding).to_string().into_bytes()),
                ],
                expires_at_ms: expires,
                seeds,
                max_urls: max_urls(request.limit),
                per_shape: MAX_PER_PATTERN as u64,
            })
            .await;
        if !created {
            return None;
        }
        if seeding {
            let fleet = self.clone();
            let request = request.clone();
            let id = id.clone();
            tokio::spawn(async move { fleet.seed_from_sitemaps(&id, &request, expires).await });
        }
        tracing::info!(job = %id, client = %request.owner, kind = request.kind.as_str(), "crawl started (shared by the fleet)");
        if let Some(webhook) = &request.webhook {
            self.deliveries.send(
                webhook,
                &request.owner,
                request.kind,
                &id,
                WebhookEvent::Started,
                None,
            );
        }
        Some(Ok(id))
    }

    /// Adds the site's sitemap URLs in scope to job `id`, then lets it end.
    async fn seed_from_sitemaps(&self, id: &str, request: &CrawlRequest, expires: u64) {
        let start = &request.urls[0];
        let mapped = self
            .reading
            .map(
                MapRequest {
                    url: start.clone(),
                    sitemap: SitemapMode::Only,
                    include_subdomains: request.scope.allow_subdomains,
                    ignore_query: request.scope.ignore_query,
                    search: None,
                    limit: request.limit.saturating_mul(4).min(MAX_LINKS),
                },
                Premium::BudgetSpent,
                (self.reading.read_timeout() * 3).min(self.settings.max_time),
            )
            .await;
        let links: Vec<NewUrl> = mapped
            .map(|m| m.links)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|link| Url::parse(&link.url).ok())
            .map(|url| request.scope.normalise(&url))
            .filter(|url| request.scope.follows(start, url, 1))
            .map(|url| new_url(&url, 1))
            .collect();
        self.tier
            .push_frontier(id, &links, expires, caps(request.limit))
            .await;
        self.tier.set_job_field(id, "seeding", b"0").await;
    }

    /// Joins, forever, every running job this replica does not work on yet.
    pub(crate) async fn join_jobs(&self) {
        let mut every = tokio::time::interval(JOIN_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut ticks = 0u32;
        loop {
            every.tick().await;
            ticks = ticks.wrapping_add(1);
            let reaping = ticks.is_multiple_of(REAP_EVERY);
            let Some(running) = self.tier.running_jobs().await else {
                continue;
            };
            for id in running.into_keys() {
                // The reaper, each second, on every replica: a job whose replicas all died or
                // whose reads all hang is ended here.
                if reaping {
                    if let Some(record) = self.tier.job_record(&id).await.filter(|r| !r.is_empty())
                    {
                        if self.reap(&id, &record).await != JobStatus::Scraping {
                            continue;
                        }
                    }
                }
                let fresh = self
                    .working
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(id.clone());
                if fresh {
                    let fleet = self.clone();
                    tokio::spawn(async move {
                        fleet.metrics.running.inc();
                        work(&fleet, &id).await;
                        fleet.metrics.running.dec();
                        fleet
                            .working
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .remove(&id);
                    });
                }
            }
        }
    }

    /// The running jobs the fleet shares, for the operator.
    pub(crate) async fn overview(&self) -> Vec<super::JobSummary> {
        let Some(running) = self.tier.running_jobs().await else {
            return Vec::new();
        };
        let mut all = Vec::new();
        for id in running.into_keys() {
            let Some(record) = self.tier.job_record(&id).await.filter(|r| !r.is_empty()) else {
                continue;
            };
            let kind = record
                .get("spec")
                .and_then(|s| serde_json::from_slice::<Spec>(s).ok())
                .map_or(JobKind::Crawl, |spec| spec.kind());
            let count = |name| usize::try_from(counter(&record, name)).unwrap_or(usize::MAX);
            all.push(super::JobSummary::new(
                &id,
                field(&record, "owner"),
                kind,
                status_of(field(&record, "status")),
                (count("completed"), count("failed"), count("queued")),
                from_unix_ms(counter(&record, "created_ms")),
                true,
            ));
        }
        all
    }

    /// The client job `id` belongs to, if the fleet has it.
    pub(crate) async fn owner_of(&self, id: &str) -> Option<String> {
        let record = self.tier.job_record(id).await?;
        Some(field(&record, "owner").to_owned()).filter(|o| !o.is_empty())
    }

    /// Job `id` of `owner`: its record (`None`: none of `owner`'s, or Redis is away).
    async fn record(&self, id: &str, owner: &str) -> Option<HashMap<String, Vec<u8>>> {
        let record = self.tier.job_record(id).await?;
        (field(&record, "owner") == owner && !record.is_empty()).then_some(record)
    }

    /// The reaper, for jobs no replica finishes: ends the job if its time is spent, or — failed —
    /// if no URL of it was handed in for `CRAWL_STALL_SECONDS` (at least the claim time, after
    /// which a dead replica's URLs are taken over); its status.
    async fn reap(&self, id: &str, record: &HashMap<String, Vec<u8>>) -> JobStatus {
        let status = status_of(field(record, "status"));
        if status != JobStatus::Scraping || !record.contains_key("created_ms") {
            // Ended, or a record still being written (its index entry comes first): nothing to reap.
            return status;
        }
        let now = SystemTime::now();
        let claim = claim_idle(self.reading.read_timeout());
        let created = from_unix_ms(counter(record, "created_ms"));
        let spent = now
            .duration_since(created)
            .is_ok_and(|age| age > self.settings.max_time + claim);
        if spent {
            return self.end(id, record, Ending::Done).await;
        }
        let progressed =
            from_unix_ms(counter(record, "progress_ms").max(counter(record, "created_ms")));
        let stalled = now
            .duration_since(progressed)
            .is_ok_and(|quiet| quiet > self.settings.stall.max(claim));
        if stalled {
            return self.end(id, record, Ending::Stalled).await;
        }
        status
    }

    /// Writes the job's final status from its counters, or failed when the reaper ends it (a
    /// cancel written first wins).
    async fn end(&self, id: &str, record: &HashMap<String, Vec<u8>>, ending: Ending) -> JobStatus {
        let final_status = if ending == Ending::Stalled
            || (counter(record, "completed") == 0 && counter(record, "failed") > 0)
        {
            JobStatus::Failed
        } else {
            JobStatus::Completed
        };
        match self.tier.end_job(id, final_status.as_str()).await {
            // Another replica (or this one's reaper) wrote the end first: it sent the webhook's
            // event and counted it.
            Some(JobEnd::Was(now)) => status_of(&now),
            Some(JobEnd::Wrote(now)) => {
                let now = status_of(&now);
                if now == final_status {
                    let spec =
                        serde_json::from_slice::<Spec>(record.get("spec").map_or(&[], |v| v)).ok();
                    let kind = spec.as_ref().map_or(JobKind::Crawl, Spec::kind);
                    self.metrics.ended(kind, now);
                    let webhook = spec.as_ref().and_then(|spec| spec.webhook.as_ref());
                    if let (Some(webhook), Some(event)) = (webhook, super::ended_event(now)) {
                        self.deliveries.send(
                            webhook,
                            field(record, "owner"),
                            kind,
                            id,
                            event,
                            None,
                        );
                    }
                    tracing::info!(job = %id, status = now.as_str(), pages = counter(record, "completed"), failed = counter(record, "failed"), "crawl ended");
                    if ending == Ending::Stalled {
                        self.metrics.stalled();
                        let start =
                            serde_json::from_slice::<Spec>(record.get("spec").map_or(&[], |v| v))
                                .ok()
                                .and_then(|spec| {
                                    spec.urls.first().and_then(|u| Url::parse(u).ok())
                                });
                        let failure =
                            start.map(|start| super::run::no_progress(&start, self.settings.stall));
                        if let Some(failure) = failure {
                            let blob = encode(&FailureBlob {
                                url: failure.url,
                                error: failure.error,
                                at_ms: unix_ms(failure.at),
                            });
                            self.tier
                                .add_job_error(id, &blob, counter(record, "expires_ms"))
                                .await;
                        }
                        tracing::warn!(job = %id, "shared crawl ended by the reaper: no progress");
                    }
                }
                now
            }
            None => status_of(field(record, "status")),
        }
    }

    /// The job's status and its pages from `skip`, at most `take`.
    pub(crate) async fn status(
        &self,
        id: &str,
        owner: &str,
        skip: usize,
        take: usize,
    ) -> Option<JobView> {
        let record = self.record(id, owner).await?;
        let status = self.reap(id, &record).await;
        let spec: Spec = serde_json::from_slice(record.get("spec")?).ok()?;
        let (blobs, count) = self.tier.job_pages(id, skip, take).await?;
        let pages: Vec<CrawledPage> = blobs
            .iter()
            .filter_map(|blob| decode::<PageBlob>(blob))
            .map(|page| CrawledPage {
                url: page.url,
                reads: page
                    .reads
                    .into_iter()
                    .map(|(format, doc)| (format, Arc::new(doc)))
                    .collect(),
            })
            .collect();
        let completed = usize::try_from(counter(&record, "completed")).unwrap_or(usize::MAX);
        let queued = usize::try_from(counter(&record, "queued")).unwrap_or(usize::MAX);
        let urls = UrlCounts {
            taken_on: counter(&record, "queued"),
            read: counter(&record, "completed"),
            failed: counter(&record, "failed"),
            robots_blocked: counter(&record, "robots_blocked"),
            bytes: counter(&record, "bytes"),
        };
        let created = from_unix_ms(counter(&record, "created_ms"));
        Some(JobView {
            explain: JobExplain::new(&spec, &self.settings, (Runs::Fleet, false), urls, created),
            id: id.to_owned(),
            kind: spec.kind(),
            status,
            total: queued.min(spec.limit.max(completed)),
            completed,
            created_at: from_unix_ms(counter(&record, "created_ms")),
            expires_at: from_unix_ms(counter(&record, "expires_ms")),
            more: skip + blobs.len() < count,
            links: spec.links,
            markdown: spec.markdown,
            pages,
        })
    }

    /// Cancels the job; its status after.
    pub(crate) async fn cancel(&self, id: &str, owner: &str) -> Option<JobStatus> {
        self.record(id, owner).await?;
        let ended = self.tier.end_job(id, JobStatus::Cancelled.as_str()).await?;
        if matches!(ended, JobEnd::Wrote(_)) {
            tracing::info!(job = %id, "crawl cancelled");
        }
        Some(status_of(ended.status()))
    }

    /// The URLs the job could not read, those `robots.txt` kept it from, and every URL it took on.
    pub(crate) async fn lists(
        &self,
        id: &str,
        owner: &str,
    ) -> Option<(Vec<CrawlFailure>, Vec<String>, Vec<String>)> {
        self.record(id, owner).await?;
        let (errors, robots, found) = self.tier.job_lists(id).await?;
        let failures = errors
            .iter()
            .filter_map(|blob| decode::<FailureBlob>(blob))
            .map(|f| CrawlFailure {
                url: f.url,
                error: f.error,
                at: from_unix_ms(f.at_ms),
            })
            .collect();
        Some((failures, robots, found))
    }
}

/// What one worker of one job needs besides the fleet.
struct Worker {
    id: String,
    owner: String,
    spec: Spec,
    scope: CrawlScope,
    start: Url,
    expires: u64,
    robots: Mutex<HashMap<String, Arc<Robots>>>,
    /// Told when this replica gives a host's turn back, so its own reads waiting for that host
    /// take the turn at once rather than at their next look ([`POLL`]).
    turns: Notify,
}

/// Why a job is ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// Every URL handed in, or its time or bytes spent: its status from its counters.
    Done,
    /// The reaper: no URL handed in for `CRAWL_STALL_SECONDS` — failed.
    Stalled,
}

/// This replica's part of job `id`, until it ends.
async fn work(fleet: &FleetJobs, id: &str) {
    let Some(record) = fleet.tier.job_record(id).await else {
        return;
    };
    if record.is_empty() {
        // Its keys expired: it is no longer running.
        fleet.tier.forget_job(id).await;
        return;
    }
    let Some(spec) = record
        .get("spec")
        .and_then(|s| serde_json::from_slice::<Spec>(s).ok())
    else {
        fleet.end(id, &record, Ending::Done).await;
        return;
    };
    let (Some(scope), Some(start)) = (
        spec.scope(),
        spec.urls.first().and_then(|u| Url::parse(u).ok()),
    ) else {
        fleet.end(id, &record, Ending::Done).await;
        return;
    };
    let worker = Arc::new(Worker {
        id: id.to_owned(),
        owner: field(&record, "owner").to_owned(),
        scope,
        start,
        expires: counter(&record, "expires_ms"),
        robots: Mutex::new(HashMap::new()),
        turns: Notify::new(),
        spec,
    });
    let settings = fleet.settings;
    let concurrency = worker
        .spec
        .concurrency
        .map_or(settings.concurrency, |asked| {
            asked.clamp(1, settings.concurrency)
        });
    let created = from_unix_ms(counter(&record, "created_ms"));
    let claim = claim_idle(fleet.reading.read_timeout());
    let mut in_flight: JoinSet<()> = JoinSet::new();
    let mut share = FrontierShare::new(&fleet.metrics);
    let mut last_claim = Instant::now();
    loop {
        // The job's counters, and URLs when there is room, in one round trip.
        let room = concurrency.saturating_sub(in_flight.len());
        let looked = if room > 0 {
            let claiming = last_claim.elapsed() >= CLAIM_EVERY;
            if claiming {
                last_claim = Instant::now();
            }
            fleet
                .tier
                .take_frontier(
                    id,
                    LOOKED_AT,
                    fleet.tier.replica(),
                    room,
                    claiming.then_some(claim),
                )
                .await
        } else {
            fleet
                .tier
                .job_fields(id, LOOKED_AT)
                .await
                .map(|counters| (counters, FrontierTake::default()))
        };
        let Some((counters, taken)) = looked else {
            // Redis is away: wait for it, reads in flight go on.
            tokio::time::sleep(POLL * 5).await;
            continue;
        };
        if counters.is_empty() || field(&counters, "status") != "scraping" {
            in_flight.abort_all();
            return;
        }
        let out_of_time = SystemTime::now()
            .duration_since(created)
            .is_ok_and(|age| age >= settings.max_time);
        let spent = out_of_time || counter(&counters, "bytes") >= settings.max_bytes;
        // Nothing read anywhere: every URL taken on was handed in (a URL's links are added before
        // it is handed in, so `queued` counts them by then).
        let finished = in_flight.is_empty()
            && taken.entries.is_empty()
            && counter(&counters, "seeding") == 0
            && counter(&counters, "queued") == counter(&counters, "handled");
        if spent || finished {
            in_flight.abort_all();
            if let Some(record) = fleet.tier.job_record(id).await.filter(|r| !r.is_empty()) {
                fleet.end(id, &record, Ending::Done).await;
            }
            return;
        }
        share.set(counter(&counters, "queued").saturating_sub(counter(&counters, "handled")));
        if taken.claimed > 0 {
            fleet.metrics.claimed(taken.claimed);
            tracing::info!(job = %id, urls = taken.claimed, "crawl URLs claimed after going silent elsewhere");
        }
        for entry in taken.entries {
            let fleet = fleet.clone();
            let worker = Arc::clone(&worker);
            in_flight.spawn(async move { take_on(&fleet, &worker, entry).await });
        }
        tokio::select! {
            _ = in_flight.join_next(), if !in_flight.is_empty() => {}
            () = tokio::time::sleep(POLL) => {}
        }
    }
}

/// Reads one URL of the frontier and hands it in.
async fn take_on(fleet: &FleetJobs, worker: &Worker, entry: FrontierEntry) {
    let id = worker.id.as_str();
    let depth = entry.depth as usize;
    let Ok(url) = Url::parse(&entry.url) else {
        hand_in(fleet, worker, &entry.entry, HandIn::Skipped).await;
        return;
    };
    if worker.spec.discover_only && depth >= worker.scope.max_depth {
        // A map's last ring: found, and that is all that is wanted of it.
        hand_in(fleet, worker, &entry.entry, HandIn::Skipped).await;
        return;
    }
    let read_timeout = fleet.reading.read_timeout();
    let rules = robots_for(fleet, worker, &url, read_timeout).await;
    if !rules.allows(url.as_str()) {
        fleet.metrics.page(PageOutcome::RobotsBlocked);
        hand_in(
            fleet,
            worker,
            &entry.entry,
            HandIn::Robots { url: url.as_str() },
        )
        .await;
        return;
    }
    let delay = rules
        .crawl_delay()
        .filter(|d| d.is_finite() && *d > 0.0)
        .map(|d| Duration::from_secs_f32(d).min(MAX_DELAY))
        .into_iter()
        .chain(worker.spec.delay_ms.map(Duration::from_millis))
        .max();
    let premium = fleet.pages.turn(&worker.owner).await;
    let host = host_of(&url);
    let limits = HostLimits {
        host: &host,
        per_host: fleet.settings.per_host,
        hold: read_timeout * 2,
        delay,
    };
    // The read is counted against the job's page limit with its first ask for the host's turn.
    let Some((launched, mut turn)) = fleet.tier.launch_page_on(id, &limits).await else {
        // Redis is away: the entry stays given to this replica and is claimed again later.
        return;
    };
    if launched > worker.spec.limit as u64 {
        if turn == HostTurn::Go {
            fleet.tier.host_done(id, &host).await;
            worker.turns.notify_one();
        }
        hand_in(fleet, worker, &entry.entry, HandIn::Skipped).await;
        return;
    }
    while turn != HostTurn::Go {
        if turn == HostTurn::Busy {
            // Until this replica gives a turn back, or a moment (another's may be free).
            tokio::select! {
                () = worker.turns.notified() => {}
                () = tokio::time::sleep(POLL) => {}
            }
        } else {
            // In its delay: a moment.
            tokio::time::sleep(POLL).await;
        }
        // Redis away: as busy.
        turn = fleet
            .tier
            .host_turn(id, &limits)
            .await
            .unwrap_or(HostTurn::Busy);
    }
    let (reads, premium_calls): (Reads, u32) = read_all(
        &fleet.reading,
        &url,
        &worker.spec.formats,
        premium,
        read_timeout,
    )
    .await;
    fleet.pages.charge(&worker.owner, premium_calls).await;
    match reads {
        Ok(reads) => {
            fleet.metrics.page(PageOutcome::Read);
            let found = if worker.spec.kind() == JobKind::Crawl && depth < worker.scope.max_depth {
                follow(worker, &reads, depth)
            } else {
                Vec::new()
            };
            let bytes = reads
                .iter()
                .map(|(_, doc)| doc.content.len() as u64)
                .sum::<u64>();
            let blob = encode(&PageBlobOf {
                url: url.as_str(),
                reads: reads
                    .iter()
                    .map(|(format, doc)| (*format, &**doc))
                    .collect(),
            });
            let handed = read_done(
                fleet,
                worker,
                &host,
                &entry.entry,
                HandIn::Page {
                    url: url.as_str(),
                    blob: &blob,
                    bytes,
                },
                &found,
            )
            .await;
            if let (Some(true), Some(webhook)) = (handed, &worker.spec.webhook) {
                // This replica kept the page: its event is this replica's to send.
                let page = CrawledPage {
                    url: url.to_string(),
                    reads,
                };
                fleet.deliveries.send(
                    webhook,
                    &worker.owner,
                    worker.spec.kind(),
                    &worker.id,
                    WebhookEvent::Page,
                    Some(&page),
                );
            }
        }
        Err(failure) => {
            fleet.metrics.page(PageOutcome::Failed);
            let blob = encode(&FailureBlob {
                url: url.to_string(),
                error: failure.to_string(),
                at_ms: unix_ms(SystemTime::now()),
            });
            read_done(
                fleet,
                worker,
                &host,
                &entry.entry,
                HandIn::Failure { blob: &blob },
                &[],
            )
            .await;
        }
    }
}

/// A read is over: its host's turn given back, what it found and what became of it handed in, in
/// one round trip (see [`SharedTier::read_done`]); this replica's reads waiting for the host are
/// told.
async fn read_done(
    fleet: &FleetJobs,
    worker: &Worker,
    host: &str,
    entry: &str,
    what: HandIn<'_>,
    found: &[NewUrl],
) -> Option<bool> {
    let handed = fleet
        .tier
        .read_done(
            &worker.id,
            host,
            ReadDone {
                entry,
                what,
                found,
                caps: caps(worker.spec.limit),
                expires_at_ms: worker.expires,
            },
        )
        .await;
    worker.turns.notify_one();
    handed
}

/// Hands frontier entry `entry` in (see [`SharedTier::hand_in`]).
async fn hand_in(
    fleet: &FleetJobs,
    worker: &Worker,
    entry: &str,
    what: HandIn<'_>,
) -> Option<bool> {
    fleet
        .tier
        .hand_in(&worker.id, entry, what, worker.expires)
        .await
}

/// The links of a read page the job follows, at the next depth (the trap guard per path shape is
/// Redis's, fleet-wide: [`caps`]).
fn follow(worker: &Worker, reads: &[(ReadFormat, Arc<Document>)], depth: usize) -> Vec<NewUrl> {
    let breadth = worker.scope.max_breadth.unwrap_or(usize::MAX);
    let Some((_, doc)) = reads.iter().find(|(f, _)| *f == ReadFormat::Markdown) else {
        return Vec::new();
    };
    let next = u32::try_from(depth + 1).unwrap_or(u32::MAX);
    doc.links
        .iter()
        .filter_map(|link| Url::parse(link).ok())
        .map(|link| worker.scope.normalise(&link))
        .filter(|link| worker.scope.follows(&worker.start, link, depth + 1))
        .take(breadth)
        .map(|link| new_url(&link, next))
        .collect()
}

/// A URL found at `depth`, its path shape counted.
fn new_url(url: &Url, depth: u32) -> NewUrl {
    NewUrl {
        url: url.to_string(),
        depth,
        shape: Some(shape(url)),
    }
}

/// A job's caps on the URLs it takes on: in all (for its page `limit`), and per path shape.
fn caps(limit: usize) -> (u64, u64) {
    (max_urls(limit), MAX_PER_PATTERN as u64)
}

/// The `robots.txt` of `url`'s origin, read once per worker.
async fn robots_for(
    fleet: &FleetJobs,
    worker: &Worker,
    url: &Url,
    timeout: Duration,
) -> Arc<Robots> {
    let origin = url.origin().ascii_serialization();
    if let Some(rules) = worker
        .robots
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&origin)
    {
        return Arc::clone(rules);
    }
    let (rules, _) = fleet.reading.robots(url, timeout).await;
    let rules = Arc::new(rules);
    worker
        .robots
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(origin, Arc::clone(&rules));
    rules
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_job_takes_on_a_bounded_number_of_urls() {
        assert_eq!(max_urls(10), 40);
        assert_eq!(max_urls(100_000), 100_000 + MAX_LINKS as u64);
    }
}
