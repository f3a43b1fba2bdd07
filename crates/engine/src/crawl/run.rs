//! One job's run: the frontier (breadth first, each URL once by its normalised form), reads of
//! at most `CRAWL_CONCURRENCY` pages at once and `CRAWL_PER_HOST_CONCURRENCY` per host, the
//! crawl delay a host's `robots.txt` asks (or the job's own `delay`) between two reads on it,
//! `robots.txt` honoured for every URL, each read page's links followed in scope; until the
//! frontier is empty, the limit reached, the job cancelled, or `CRAWL_MAX_SECONDS` /
//! `CRAWL_MAX_BYTES` spent (then it ends `completed` with what it read), or no URL read or
//! failed for `CRAWL_STALL_SECONDS` (the reaper: it ends `failed`, `no_progress` among its errors).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::task::JoinSet;
use tokio::time::Instant;
use url::Url;

use super::admission::PageGate;
use super::kept::{failure_blob, KeptJobs, Snapshot, SNAPSHOT_EVERY};
use super::metrics::{CrawlMetrics, FrontierShare, PageOutcome};
use super::record::{unix_ms, Spec};
use super::scope::Shapes;
use super::webhook::Deliveries;
use super::WebhookEvent;
use super::{CrawlFailure, CrawlRequest, CrawlSettings, CrawledPage, Job, JobKind, JobStatus};
use crate::read::site_map::{MapRequest, SitemapMode, MAX_LINKS};
use crate::read::{Depth, Freshness, ReadRequest, Reading, Render};
use crate::search::Premium;
use gateway_core::request::ReadFormat;
use gateway_upstreams::reader::site::Robots;
use gateway_upstreams::reader::{Document, ReadFailure};

/// The longest crawl delay honoured (a `robots.txt` asking for more gets this).
const MAX_DELAY: Duration = Duration::from_secs(30);

pub(super) type Reads = Result<Vec<(ReadFormat, Arc<Document>)>, ReadFailure>;

/// Where a job resumed after a restart starts from (`STATE_DIR`).
#[derive(Debug)]
pub(crate) struct Resume {
    /// URLs still to read, with their depth.
    pub(crate) frontier: Vec<(String, usize)>,
    /// Reads started before the restart.
    pub(crate) launched: usize,
    /// Text bytes kept before it.
    pub(crate) bytes: u64,
    /// When the job started (its time is counted from then).
    pub(crate) created: SystemTime,
}

/// What a run needs beside its job: the reader, the limits, the metrics, the webhook's sender,
/// and where the job is kept (`STATE_DIR`), if it is.
pub(crate) struct RunWith<'a> {
    pub(crate) reading: Reading,
    pub(crate) settings: CrawlSettings,
    pub(crate) metrics: &'a CrawlMetrics,
    pub(crate) deliveries: &'a Deliveries,
    pub(crate) kept: Option<KeptJobs>,
    /// Each page counted against the job's client's rate first.
    pub(crate) pages: PageGate,
}

/// Runs `request` as `job` (from `resume` after a restart); its final status, kept under
/// `STATE_DIR` when the job is.
pub(crate) async fn run(
    job: &Job,
    request: CrawlRequest,
    with: RunWith<'_>,
    resume: Option<Resume>,
) -> JobStatus {
    let kept = with.kept.clone();
    let spec = Spec::of(&request);
    let status = run_job(job, request, with, resume).await;
    if let Some(kept) = kept {
        let snapshot = snapshot(job, spec, Vec::new(), 0, 0);
        let _ = tokio::task::spawn_blocking(move || kept.write(&snapshot)).await;
    }
    status
}

/// A new job's snapshot: its own URLs to read.
pub(crate) fn first_snapshot(job: &Job, request: &CrawlRequest) -> Snapshot {
    let frontier = request
        .urls
        .iter()
        .map(|url| {
            let url = if request.kind == JobKind::Crawl {
                request.scope.normalise(url)
            } else {
                url.clone()
            };
            (url.to_string(), 0)
        })
        .collect();
    snapshot(job, Spec::of(request), frontier, 0, 0)
}

/// A snapshot of `job` as it is now, with what is left to read.
fn snapshot(
    job: &Job,
    spec: Spec,
    frontier: Vec<(String, usize)>,
    launched: usize,
    bytes: u64,
) -> Snapshot {
    let state = job.state();
    Snapshot {
        version: 1,
        id: job.id.clone(),
        owner: job.owner.clone(),
        spec,
        created_ms: unix_ms(job.created_at),
        expires_ms: unix_ms(job.expires_at),
        status: state.status.as_str().to_owned(),
        total: state.total,
        failures: state.failures.iter().map(failure_blob).collect(),
        robots_blocked: state.robots_blocked.clone(),
        discovered: state.discovered.clone(),
        frontier,
        launched,
        bytes,
    }
}

async fn run_job(
    job: &Job,
    request: CrawlRequest,
    with: RunWith<'_>,
    resume: Option<Resume>,
) -> JobStatus {
    let RunWith {
        reading,
        settings,
        metrics,
        deliveries,
        kept,
        pages: with_pages,
    } = with;
    let ran_for = resume
        .as_ref()
        .and_then(|r| SystemTime::now().duration_since(r.created).ok())
        .unwrap_or_default();
    let deadline = Instant::now() + settings.max_time.saturating_sub(ran_for);
    let start = request.urls[0].clone();
    let crawling = request.kind == JobKind::Crawl;
    let mut frontier: VecDeque<(Url, usize)> = VecDeque::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut shapes = Shapes::default();
    let mut launched = 0usize;
    let mut bytes = 0u64;
    if let Some(resume) = resume {
        seen.extend(job.state().discovered.iter().cloned());
        for (url, depth) in resume.frontier {
            if let Ok(url) = Url::parse(&url) {
                frontier.push_back((url, depth));
            }
        }
        launched = resume.launched;
        bytes = resume.bytes;
    } else {
        seed(
            job,
            &request,
            &reading,
            &mut frontier,
            &mut seen,
            &mut shapes,
            deadline,
        )
        .await;
    }
    job.state().total = seen.len();
    let mut robots: HashMap<String, Arc<Robots>> = HashMap::new();
    let mut busy: HashMap<String, usize> = HashMap::new();
    let mut next_at: HashMap<String, Instant> = HashMap::new();
    let mut in_flight: JoinSet<(Url, usize, Reads)> = JoinSet::new();
    // What is in flight, kept with the frontier in a snapshot (read again after a restart).
    let mut reading_now: Vec<(Url, usize)> = Vec::new();
    let mut snapshot_at = Instant::now();
    let read_timeout = reading.read_timeout();
    let concurrency = request.concurrency.map_or(settings.concurrency, |asked| {
        asked.clamp(1, settings.concurrency)
    });
    let mut share = FrontierShare::new(metrics);
    // The reaper: a job that hands in no URL for `CRAWL_STALL_SECONDS` ends, failed.
    let mut progressed = Instant::now();
    loop {
        share.set((frontier.len() + in_flight.len()) as u64);
        if let Some(kept) = &kept {
            if snapshot_at.elapsed() >= SNAPSHOT_EVERY {
                snapshot_at = Instant::now();
                let left: Vec<(String, usize)> = reading_now
                    .iter()
                    .chain(frontier.iter())
                    .map(|(url, depth)| (url.to_string(), *depth))
                    .collect();
                // Reads in flight are read again after a restart: not counted as launched.
                let taken = launched.saturating_sub(reading_now.len());
                let snapshot = snapshot(job, Spec::of(&request), left, taken, bytes);
                let kept = kept.clone();
                let _ = tokio::task::spawn_blocking(move || kept.write(&snapshot)).await;
            }
        }
        if job.cancel.is_cancelled() {
            in_flight.abort_all();
            return finish(job, JobStatus::Cancelled);
        }
        if Instant::now() >= deadline || bytes >= settings.max_bytes {
            in_flight.abort_all();
            break;
        }
        if progressed.elapsed() >= settings.stall {
            in_flight.abort_all();
            metrics.stalled();
            job.state()
                .failures
                .push(no_progress(&start, settings.stall));
            tracing::warn!(job = %job.id, stall_seconds = settings.stall.as_secs(), "crawl ended by the reaper: no progress");
            return finish(job, JobStatus::Failed);
        }
        // Launch what may go now.
        let mut waited_for: Option<Instant> = None;
        while in_flight.len() < concurrency && launched < request.limit {
            let now = Instant::now();
            let position = frontier.iter().position(|(url, _)| {
                let host = host_of(url);
                busy.get(&host).copied().unwrap_or(0) < settings.per_host
                    && next_at.get(&host).is_none_or(|at| *at <= now)
            });
            let Some(position) = position else {
                waited_for = frontier
                    .iter()
                    .filter_map(|(url, _)| next_at.get(&host_of(url)).copied())
                    .filter(|at| *at > now)
                    .min();
                break;
            };
            let Some((url, depth)) = frontier.remove(position) else {
                break;
            };
            if request.discover_only && depth >= request.scope.max_depth {
                // A map's last ring: found, and that is all that is wanted of it.
                continue;
            }
            let host = host_of(&url);
            let origin = url.origin().ascii_serialization();
            let rules = match robots.get(&origin) {
                Some(rules) => Arc::clone(rules),
                None => {
                    let (rules, _) = reading.robots(&url, read_timeout.min(left(deadline))).await;
                    let rules = Arc::new(rules);
                    robots.insert(origin, Arc::clone(&rules));
                    rules
                }
            };
            if !rules.allows(url.as_str()) {
                metrics.page(PageOutcome::RobotsBlocked);
                job.state().robots_blocked.push(url.to_string());
                continue;
            }
            let delay = rules
                .crawl_delay()
                .filter(|d| d.is_finite() && *d > 0.0)
                .map(|d| Duration::from_secs_f32(d).min(MAX_DELAY))
                .into_iter()
                .chain(request.delay)
                .max();
            if let Some(delay) = delay {
                next_at.insert(host.clone(), Instant::now() + delay);
            }
            *busy.entry(host).or_insert(0) += 1;
            launched += 1;
            let reading = reading.clone();
            let formats = request.formats.clone();
            let timeout = read_timeout.min(left(deadline));
            let (pages, owner) = (with_pages.clone(), job.owner.clone());
            reading_now.push((url.clone(), depth));
            in_flight.spawn(async move {
                let premium = pages.turn(&owner).await;
                let (reads, premium_calls) =
                    read_all(&reading, &url, &formats, premium, timeout).await;
                pages.charge(&owner, premium_calls).await;
                (url, depth, reads)
            });
        }
        if in_flight.is_empty() {
            if frontier.is_empty() || launched >= request.limit {
                break;
            }
            // Every waiting URL's host is in its crawl delay.
            let until = waited_for.unwrap_or_else(|| Instant::now() + Duration::from_millis(50));
            tokio::select! {
                () = job.cancel.cancelled() => continue,
                () = tokio::time::sleep_until(until.min(deadline)) => continue,
            }
        }
        let joined = tokio::select! {
            () = job.cancel.cancelled() => continue,
            () = tokio::time::sleep_until(deadline.min(progressed + settings.stall)) => continue,
            joined = in_flight.join_next() => joined,
        };
        let Some(Ok((url, depth, reads))) = joined else {
            continue;
        };
        progressed = Instant::now();
        if let Some(at) = reading_now
            .iter()
            .position(|(u, d)| *u == url && *d == depth)
        {
            reading_now.swap_remove(at);
        }
        if let Some(count) = busy.get_mut(&host_of(&url)) {
            *count = count.saturating_sub(1);
        }
        match reads {
            Ok(reads) => {
                metrics.page(PageOutcome::Read);
                bytes += reads
                    .iter()
                    .map(|(_, doc)| doc.content.len() as u64)
                    .sum::<u64>();
                if crawling && depth < request.scope.max_depth {
                    let mut taken = 0usize;
                    let breadth = request.scope.max_breadth.unwrap_or(usize::MAX);
                    let links = reads
                        .iter()
                        .find(|(format, _)| *format == ReadFormat::Markdown)
                        .map(|(_, doc)| doc.links.clone())
                        .unwrap_or_default();
                    for link in links {
                        let Ok(link) = Url::parse(&link) else {
                            continue;
                        };
                        if taken >= breadth {
                            break;
                        }
                        let link = request.scope.normalise(&link);
                        if request.scope.follows(&start, &link, depth + 1)
                            && seen.insert(link.to_string())
                            && shapes.admit(&link)
                        {
                            taken += 1;
                            job.state().discovered.push(link.to_string());
                            frontier.push_back((link, depth + 1));
                        }
                    }
                }
                let page = CrawledPage {
                    url: url.to_string(),
                    reads,
                };
                if let Some(webhook) = &job.webhook {
                    deliveries.send(
                        webhook,
                        &job.owner,
                        job.kind,
                        &job.id,
                        WebhookEvent::Page,
                        Some(&page),
                    );
                }
                if let Some(kept) = &kept {
                    let (kept, id, copy) = (kept.clone(), job.id.clone(), page.clone());
                    let _ = tokio::task::spawn_blocking(move || kept.append(&id, &copy)).await;
                }
                let mut state = job.state();
                state.total = seen.len().min(request.limit.max(state.pages.len() + 1));
                state.pages.push(page);
            }
            Err(failure) => {
                metrics.page(PageOutcome::Failed);
                job.state().failures.push(CrawlFailure {
                    url: url.to_string(),
                    error: failure.to_string(),
                    at: SystemTime::now(),
                });
            }
        }
    }
    let status = {
        let state = job.state();
        if state.pages.is_empty() && !state.failures.is_empty() {
            JobStatus::Failed
        } else {
            JobStatus::Completed
        }
    };
    finish(job, status)
}

/// The error a job ended by the reaper lists, at its start URL.
pub(super) fn no_progress(start: &Url, stall: Duration) -> CrawlFailure {
    CrawlFailure {
        url: start.to_string(),
        error: format!(
            "no page read or failed for {} s (CRAWL_STALL_SECONDS): the job was ended (no_progress)",
            stall.as_secs()
        ),
        at: SystemTime::now(),
    }
}

/// The first URLs of a job: its own (normalised for a crawl) and, for a crawl that asks, its
/// site's sitemap URLs in scope, one link away.
async fn seed(
    job: &Job,
    request: &CrawlRequest,
    reading: &Reading,
    frontier: &mut VecDeque<(Url, usize)>,
    seen: &mut HashSet<String>,
    shapes: &mut Shapes,
    deadline: Instant,
) {
    let start = &request.urls[0];
    let crawling = request.kind == JobKind::Crawl;
    for url in &request.urls {
        let url = if crawling {
            request.scope.normalise(url)
        } else {
            url.clone()
        };
        if seen.insert(url.to_string()) {
            job.state().discovered.push(url.to_string());
            frontier.push_back((url, 0));
        }
    }
    if crawling && request.sitemap {
        let mapped = reading
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
                (reading.read_timeout() * 3).min(left(deadline)),
            )
            .await;
        for link in mapped.map(|m| m.links).unwrap_or_default() {
            let Ok(url) = Url::parse(&link.url) else {
                continue;
            };
            let url = request.scope.normalise(&url);
            if request.scope.follows(start, &url, 1)
                && seen.insert(url.to_string())
                && shapes.admit(&url)
            {
                job.state().discovered.push(url.to_string());
                frontier.push_back((url, 1));
            }
        }
    }
}

/// Sets the job's final status (a cancel that came first wins).
fn finish(job: &Job, status: JobStatus) -> JobStatus {
    let mut state = job.state();
    if state.status == JobStatus::Scraping {
        state.status = status;
    }
    state.status
}

/// Reads `url` in each of `formats`, one after the other (the first, Markdown, gives the links),
/// with the premium readers when `premium` allows them (the client's budget: [`PageGate::turn`]);
/// the reads, and the premium calls they made (to charge the client).
pub(super) async fn read_all(
    reading: &Reading,
    url: &Url,
    formats: &[ReadFormat],
    premium: Premium,
    timeout: Duration,
) -> (Reads, u32) {
    let mut reads = Vec::with_capacity(formats.len());
    let mut premium_calls = 0u32;
    for format in formats {
        let read = reading
            .read(
                ReadRequest {
                    url: url.clone(),
                    format: *format,
                    depth: Depth::Basic,
                    freshness: Freshness::Cached,
                    render: Render::Auto,
                    wait_for: None,
                },
                premium,
                timeout,
            )
            .await;
        premium_calls = premium_calls.saturating_add(read.premium_calls);
        match read.result {
            Ok(done) => reads.push((*format, done.document)),
            Err(failed) => return (Err(failed.failure), premium_calls),
        }
    }
    (Ok(reads), premium_calls)
}

pub(super) fn host_of(url: &Url) -> String {
    url.host_str().unwrap_or_default().to_ascii_lowercase()
}

fn left(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}
