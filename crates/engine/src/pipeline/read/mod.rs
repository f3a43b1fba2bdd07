//! Reading pages with the gateway's decisions, as for searches: one URL in, a document out.
//!
//! 1. The page cache, keyed by the scheme, the canonical URL, the format and the depth (a client
//!    whose premium budget is spent has reads of its own, as for searches, but is served a page
//!    another client's read already paid for): identical reads in flight share one read; a page
//!    is kept `FETCH_CACHE_TTL_SECONDS`, the local cache bounded by bytes (`FETCH_CACHE_BYTES`),
//!    the Redis tier below it when `REDIS_URL` is set; when a read fails outright, the last page
//!    read is served stale. Not the canonical URL alone: it is the merge's deduplication key, made
//!    to fold two results that name one page, and it also drops two things that tell pages apart.
//!    The scheme (`http` and `https` may serve different pages) is kept in the key. Credentials
//!    (`user:password@`) name a page only they may read, so a read whose URL carries them has no
//!    key ([`PageKey::new`]): it is read afresh every time, never served from either tier nor
//!    stored in them, never joined to a read in flight — otherwise a client without them would be
//!    handed the private page, through Redis on every replica too.
//! 2. The direct read ([`gateway_upstreams::reader`]), unless the host's breaker is open: at most
//!    `FETCH_PER_HOST_CONCURRENCY` reads per host at once, `FETCH_TIMEOUT_SECONDS` each, never past
//!    the request's budget. A wall (403, 429, a bot challenge, a script shell) on one page does
//!    not shut its host out: the host's breaker opens on walls over `walls::WALL_PATHS` distinct
//!    paths within `walls::WALL_WINDOW`, or at once for as long as a 429's `Retry-After` says
//!    ([`walls`]); transient failures open it after `BREAKER_FAILURE_THRESHOLD` in a row; then the
//!    backoff and the one probe of every breaker.
//! 3. The premium fallback, when the direct read was blocked, failed, or found no readable text or
//!    too little of it (an HTML page of fewer than twenty words — a page that draws its text with
//!    scripts —, an advanced read of fewer than 150; when no reader does better, the little there
//!    is is the answer): `READ_PROVIDERS` in order, each with its
//!    own breaker and quota parking, each call charged to the client's premium budget; none when
//!    the budget is spent. A URL the address policy refuses is never sent to a premium reader.
//! 4. One outcome per read in `reads_total`, the record for `explain`.

mod hosts;
mod metrics;
mod record;
mod walls;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use url::Url;

use super::breaker_signals;
use super::provider_rotation::Premium;
use gateway_core::breaker::{BreakerBoard, BreakerPolicy};
use gateway_core::cache::{AnswerCache, CacheStatus, Keep, Lifetime};
use gateway_core::canonical_url::canonical_url;
use gateway_core::request::ReadFormat;
use gateway_core::shared::SharedTier;
use gateway_upstreams::providers::readers::{
    PageResult, PremiumPage, PremiumReader, ReadCallResult, ReaderKind,
};
use gateway_upstreams::reader::Reader;
use gateway_upstreams::reader::{Document, ReadFailure};
use hosts::{HostName, HostSlots};
pub(crate) use metrics::ReadMetrics;
use metrics::{ReadLabels, ReadOutcome};
pub(crate) use record::ReadRecord;
use record::{DirectOutcome, FallbackReason, PremiumSkip};
use walls::HostBreakers;

/// Words an HTML page should have; fewer is thin (a premium reader may find more — a page that
/// draws its text with scripts).
const MIN_WORDS: usize = 20;
/// Words an advanced read wants; fewer is thin.
const THIN_WORDS: usize = 150;
/// Host breakers remembered at most (closed ones nobody holds are dropped first), and hosts whose
/// walls are remembered.
const MAX_HOSTS: usize = 4096;
/// A premium call is not started with less of the budget left than this.
const MIN_CALL: Duration = Duration::from_millis(50);
/// The first bytes of a page stored in the shared tier, then its version.
const MAGIC: &[u8; 4] = b"sxgp";
const VERSION: u8 = 1;

/// How hard a read tries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Depth {
    /// The direct read; a premium reader when it is blocked, fails or finds no text.
    #[default]
    Basic,
    /// Also a premium reader when the direct read's text is thin.
    Advanced,
}

/// One page to read, validated by the surface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRequest {
    /// The page's address, checked by the surface.
    pub url: Url,
    /// Text, markdown or HTML.
    pub format: ReadFormat,
    /// How hard to try (basic: direct only; advanced: premium readers too).
    pub depth: Depth,
}

/// Who read a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReadSource {
    /// The gateway itself.
    Direct,
    /// A premium reader.
    Jina,
    /// A premium reader.
    Tavily,
    /// A premium reader.
    Exa,
    /// A premium reader.
    Firecrawl,
}

impl ReadSource {
    /// The name (`direct`, or the reader's).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Direct => "direct",
            Self::Jina => "jina",
            Self::Tavily => "tavily",
            Self::Exa => "exa",
            Self::Firecrawl => "firecrawl",
        }
    }
}

impl From<ReaderKind> for ReadSource {
    fn from(kind: ReaderKind) -> Self {
        match kind {
            ReaderKind::Jina => Self::Jina,
            ReaderKind::Tavily => Self::Tavily,
            ReaderKind::Exa => Self::Exa,
            ReaderKind::Firecrawl => Self::Firecrawl,
        }
    }
}

/// A page read.
#[derive(Debug, Clone)]
pub struct ReadDone {
    /// The page as read.
    pub document: Arc<Document>,
    /// Who read it: the direct reader or a premium reader.
    pub source: ReadSource,
    /// What the read did (`explain`).
    pub record: Arc<ReadRecord>,
    premium_calls: u32,
}

/// A page not read.
#[derive(Debug, Clone)]
pub struct ReadFailed {
    /// Why it was not read.
    pub failure: ReadFailure,
    /// What the read did (`explain`).
    pub record: Arc<ReadRecord>,
    premium_calls: u32,
}

type Computed = Result<ReadDone, ReadFailed>;

/// What one read gave a client.
#[derive(Debug, Clone)]
pub struct PageRead {
    /// The page, or why there is none.
    pub result: Computed,
    /// Hit, miss or stale.
    pub cache: CacheStatus,
    /// Premium calls to charge to this client: those of the read it led (a hit or a read that
    /// followed another made none).
    pub premium_calls: u32,
}

/// The reading decisions' numbers, from the configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ReadSettings {
    /// `FETCH_PER_HOST_CONCURRENCY`.
    pub(crate) per_host: usize,
    /// `FETCH_CACHE_TTL_SECONDS`.
    pub(crate) cache_ttl: Duration,
    /// `FETCH_CACHE_BYTES`.
    pub(crate) cache_bytes: usize,
    /// `FETCH_TIMEOUT_SECONDS`.
    pub(crate) timeout: Duration,
    /// `CACHE_STALE_SECONDS`: how long past its lifetime a page is kept for when reads fail.
    pub(crate) stale: Duration,
}

/// The key a page is cached under.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct PageKey {
    /// Scheme, canonical URL, format, depth, scope — as text (what the shared tier hashes).
    text: String,
}

impl PageKey {
    /// The key of `req`'s page; `None` when its URL carries credentials: that page is the
    /// credentials' alone, never cached.
    fn new(req: &ReadRequest, premium: Premium) -> Option<Self> {
        if carries_credentials(&req.url) {
            return None;
        }
        let mut text = req.url.scheme().to_owned();
        text.push(':');
        text.push_str(&canonical_url(req.url.as_str()));
        text.push('\u{1f}');
        text.push_str(req.format.as_str());
        text.push_str(match req.depth {
            Depth::Basic => "\u{1f}basic",
            Depth::Advanced => "\u{1f}advanced",
        });
        if premium == Premium::BudgetSpent {
            text.push_str("\u{1f}direct-only");
        }
        Some(Self { text })
    }
}

/// Whether `url` names a user or a password (`user:password@host`).
fn carries_credentials(url: &Url) -> bool {
    !url.username().is_empty() || url.password().is_some()
}

/// Reading pages. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Reading {
    inner: Arc<Inner>,
}

struct Inner {
    reader: Reader,
    /// `READ_PROVIDERS` with keys, in order.
    premium: Vec<Arc<PremiumReader>>,
    readers: BreakerBoard<ReaderKind>,
    hosts: HostBreakers,
    slots: HostSlots,
    cache: AnswerCache<PageKey, Computed>,
    shared: Option<SharedTier>,
    metrics: ReadMetrics,
    settings: ReadSettings,
}

/// What the direct read came to.
enum Direct {
    Read(Document),
    Thin(Document),
    Failed(ReadFailure),
}

impl Reading {
    /// Reading with `reader` directly and `premium` as the fallback.
    pub(crate) fn new(
        reader: Reader,
        premium: Vec<Arc<PremiumReader>>,
        policy: BreakerPolicy,
        readers: BreakerBoard<ReaderKind>,
        shared: Option<SharedTier>,
        metrics: ReadMetrics,
        settings: ReadSettings,
    ) -> Self {
        for reader in &premium {
            // Their breakers exist up front so their series are there from the first scrape.
            readers.get(&reader.kind());
        }
        let weigh: fn(&Computed) -> usize = |computed| match computed {
            Ok(done) => done.document.content.len() + 512,
            Err(_) => 256,
        };
        Self {
            inner: Arc::new(Inner {
                reader,
                premium,
                readers,
                hosts: HostBreakers::new(policy, MAX_HOSTS),
                slots: HostSlots::new(settings.per_host),
                cache: AnswerCache::weighted(
                    settings.cache_bytes,
                    weigh,
                    settings.stale,
                    metrics.cache.clone(),
                ),
                shared,
                metrics,
                settings,
            }),
        }
    }

    /// The premium readers' breakers (`/status`, the admin routes).
    pub(crate) fn reader_breakers(&self) -> &BreakerBoard<ReaderKind> {
        &self.inner.readers
    }

    /// The hosts' breakers (`/status`, the admin routes).
    pub(crate) fn host_breakers(&self) -> &BreakerBoard<HostName> {
        self.inner.hosts.board()
    }

    /// The active premium readers, in order.
    pub(crate) fn premium_readers(&self) -> Vec<ReaderKind> {
        self.inner.premium.iter().map(|r| r.kind()).collect()
    }

    /// Sets the gauges computed from time (open host breakers).
    pub(crate) fn refresh_metrics(&self) {
        self.inner.readers.refresh_metrics();
        let open = self.inner.hosts.board().open_count();
        self.inner
            .metrics
            .host_breakers_open
            .set(i64::try_from(open).unwrap_or(i64::MAX));
    }

    /// Drops every cached page; returns how many went.
    pub(crate) fn purge(&self) -> usize {
        self.inner.cache.purge(|_| true)
    }

    /// Drops expired pages (the background sweep).
    pub(crate) fn purge_expired(&self) {
        self.inner.cache.purge_expired();
    }

    /// Reads `req` for a client whose premium budget says `premium`, within `budget`.
    pub(crate) async fn read(
        &self,
        req: ReadRequest,
        premium: Premium,
        budget: Duration,
    ) -> PageRead {
        let started = Instant::now();
        let Some(key) = PageKey::new(&req, premium) else {
            // The credentials' own page: read afresh, alone, and kept nowhere.
            let inner = Arc::clone(&self.inner);
            let (result, _) = compute(inner, None, req, premium, budget).await;
            let charged = match &result {
                Ok(done) => done.premium_calls,
                Err(failed) => failed.premium_calls,
            };
            return self.count(started, result, CacheStatus::Miss, charged);
        };
        if premium == Premium::BudgetSpent {
            // A page another client's read already paid for costs this one nothing.
            let paid = PageKey::new(&req, Premium::Allowed);
            if let Some(Ok(done)) = paid.and_then(|paid| self.inner.cache.get_live(&paid)) {
                return self.count(started, Ok(done), CacheStatus::Hit, 0);
            }
        }
        let led = Arc::new(AtomicBool::new(false));
        let leader = Arc::clone(&led);
        let inner = Arc::clone(&self.inner);
        let computed_key = key.clone();
        let span = tracing::Span::none();
        let found = self
            .inner
            .cache
            .get_or_compute(&key, &span, move || {
                leader.store(true, Ordering::Relaxed);
                compute(inner, Some(computed_key), req, premium, budget)
            })
            .await;
        let (result, cache) = match found {
            Ok(found) => found,
            Err(_) => (
                Err(ReadFailed {
                    failure: ReadFailure::Internal,
                    record: Arc::new(ReadRecord::default()),
                    premium_calls: 0,
                }),
                CacheStatus::Miss,
            ),
        };
        let charged = match (&result, cache, led.load(Ordering::Relaxed)) {
            (Ok(done), CacheStatus::Miss, true) => done.premium_calls,
            (Err(failed), CacheStatus::Miss, true) => failed.premium_calls,
            _ => 0,
        };
        self.count(started, result, cache, charged)
    }

    /// Counts one read's outcome and hands it out.
    fn count(
        &self,
        started: Instant,
        result: Computed,
        cache: CacheStatus,
        charged: u32,
    ) -> PageRead {
        let outcome = match (&result, cache) {
            (Ok(_), CacheStatus::Hit | CacheStatus::SharedHit | CacheStatus::Stale { .. }) => {
                ReadOutcome::CacheHit
            }
            (Ok(done), CacheStatus::Miss) if done.source == ReadSource::Direct => {
                ReadOutcome::DirectOk
            }
            (Ok(_), CacheStatus::Miss) => ReadOutcome::PremiumOk,
            (Err(failed), _) => match failed.failure {
                ReadFailure::ForbiddenAddress | ReadFailure::InvalidUrl => ReadOutcome::Forbidden,
                ReadFailure::Blocked(_) | ReadFailure::RateLimitedFor(_) => ReadOutcome::Blocked,
                _ => ReadOutcome::Failed,
            },
        };
        let labels = ReadLabels { outcome };
        let m = &self.inner.metrics;
        m.reads.get_or_create(&labels).inc();
        m.duration
            .get_or_create(&labels)
            .observe(started.elapsed().as_secs_f64());
        PageRead {
            result,
            cache,
            premium_calls: charged,
        }
    }
}

/// One read: the shared tier, the direct read, the premium fallback. Without a `key` (a page
/// of the URL's credentials), the shared tier is neither asked nor told.
async fn compute(
    inner: Arc<Inner>,
    key: Option<PageKey>,
    req: ReadRequest,
    premium: Premium,
    budget: Duration,
) -> (Computed, Keep) {
    let deadline = Instant::now() + budget;
    if let (Some(tier), Some(key)) = (&inner.shared, &key) {
        if let Some(stored) = tier.read_page(&key.text).await {
            if let Some(done) = decode(&stored.blob) {
                return (Ok(done), Keep::Shared(Lifetime::Complete(stored.ttl)));
            }
        }
    }
    let mut record = ReadRecord::starting_now(budget);
    let direct = direct(&inner, &req, deadline, &mut record).await;
    let (thin, reason, failure) = match direct {
        Direct::Read(document) => {
            return done(
                &inner,
                key.as_ref(),
                document,
                ReadSource::Direct,
                record,
                0,
            )
            .await
        }
        // Never to a premium reader: a URL the policy refuses must not leave the gateway either.
        Direct::Failed(
            failure @ (ReadFailure::ForbiddenAddress
            | ReadFailure::InvalidUrl
            | ReadFailure::UnsupportedContentType),
        ) => return failed(failure, record, 0),
        Direct::Thin(document) => (
            Some(document),
            FallbackReason::Thin,
            ReadFailure::NoReadableText,
        ),
        Direct::Failed(failure @ (ReadFailure::Blocked(_) | ReadFailure::RateLimitedFor(_))) => {
            (None, FallbackReason::Blocked, failure)
        }
        Direct::Failed(ReadFailure::NoReadableText) => (
            None,
            FallbackReason::NoReadableText,
            ReadFailure::NoReadableText,
        ),
        Direct::Failed(failure) => (None, FallbackReason::Failed, failure),
    };
    if !inner.premium.is_empty() {
        record.fallback_reason = Some(reason);
    }
    let mut calls = 0;
    for reader in &inner.premium {
        let kind = reader.kind();
        if !reader.serves(req.format) {
            record.skipped(kind, PremiumSkip::Format);
            continue;
        }
        if premium == Premium::BudgetSpent {
            record.skipped(kind, PremiumSkip::BudgetSpent);
            continue;
        }
        if carries_credentials(&req.url) {
            // A password in the URL is for that site, never for a third party.
            record.skipped(kind, PremiumSkip::Credentials);
            continue;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left < MIN_CALL {
            record.skipped(kind, PremiumSkip::Deadline);
            continue;
        }
        let Some(permit) = inner.readers.get(&kind).admit() else {
            record.skipped(kind, PremiumSkip::BreakerOpen);
            continue;
        };
        calls += 1;
        let started_ms = record.offset();
        let result = reader.read(req.url.as_str(), req.format, left).await;
        let outcome = match &result {
            Ok(PageResult::Page(_)) => ReadCallResult::Ok,
            Ok(PageResult::Unreadable) => ReadCallResult::Unreadable,
            Err(err) => ReadCallResult::Failed(err.class),
        };
        record.premium(kind, outcome.as_str(), started_ms);
        match result {
            Ok(PageResult::Page(page)) => {
                permit.record(gateway_core::breaker::Signal::Success);
                let document = premium_document(&req, page);
                return done(&inner, key.as_ref(), document, kind.into(), record, calls).await;
            }
            Ok(PageResult::Unreadable) => permit.record(gateway_core::breaker::Signal::Success),
            Err(err) => permit.record(breaker_signals::for_error(&err)),
        }
    }
    match thin {
        Some(document) => {
            done(
                &inner,
                key.as_ref(),
                document,
                ReadSource::Direct,
                record,
                calls,
            )
            .await
        }
        None => failed(failure, record, calls),
    }
}

/// The direct read, unless the host's breaker is open or its slots stay taken.
async fn direct(
    inner: &Inner,
    req: &ReadRequest,
    deadline: Instant,
    record: &mut ReadRecord,
) -> Direct {
    let started_ms = record.offset();
    let host = HostName::of(&req.url);
    if Reader::admits(&req.url).is_err() {
        record.direct(DirectOutcome::Failed(ReadFailure::InvalidUrl), started_ms);
        return Direct::Failed(ReadFailure::InvalidUrl);
    }
    let Some(permit) = inner.hosts.admit(&host) else {
        record.direct(DirectOutcome::HostBreakerOpen, started_ms);
        return Direct::Failed(ReadFailure::Blocked(
            gateway_upstreams::reader::Wall::Forbidden,
        ));
    };
    let Some(_slot) = inner.slots.acquire(&host, deadline).await else {
        record.direct(DirectOutcome::HostBusy, started_ms);
        return Direct::Failed(ReadFailure::Upstream(
            gateway_core::upstream::ErrorClass::Timeout,
        ));
    };
    let left = deadline.saturating_duration_since(Instant::now());
    let result = inner
        .reader
        .read(&req.url, req.format, inner.settings.timeout.min(left))
        .await;
    inner.hosts.record(
        permit,
        &host,
        req.url.path(),
        breaker_signals::for_read(&result),
    );
    let (outcome, direct) = match result {
        // Too little text for an HTML page (or for an advanced read) is a reason to ask a premium
        // reader; when none reads it, the little there is is the answer.
        Ok(document)
            if (document.words() < MIN_WORDS && document.content_type == "text/html")
                || (req.depth == Depth::Advanced && document.words() < THIN_WORDS) =>
        {
            (DirectOutcome::Thin, Direct::Thin(document))
        }
        Ok(document) => (DirectOutcome::Ok, Direct::Read(document)),
        Err(failure) => (DirectOutcome::Failed(failure), Direct::Failed(failure)),
    };
    record.direct(outcome, started_ms);
    direct
}

/// A premium reader's page as the gateway's document.
fn premium_document(req: &ReadRequest, page: PremiumPage) -> Document {
    let content_type = match req.format {
        ReadFormat::Markdown => "text/markdown",
        ReadFormat::Text => "text/plain",
        ReadFormat::Html | ReadFormat::RawHtml => "text/html",
    };
    Document {
        url: req.url.to_string(),
        final_url: page.final_url.unwrap_or_else(|| req.url.to_string()),
        title: page.title,
        bytes_read: page.content.len() as u64,
        content: page.content,
        format: req.format,
        published: page.published,
        language: page.language,
        images: page.images,
        links: Vec::new(),
        content_type: content_type.to_owned(),
    }
}

/// A read that succeeded: kept for `FETCH_CACHE_TTL_SECONDS` here and in the shared tier (when
/// it has a key).
async fn done(
    inner: &Inner,
    key: Option<&PageKey>,
    document: Document,
    source: ReadSource,
    mut record: ReadRecord,
    premium_calls: u32,
) -> (Computed, Keep) {
    record.close();
    let done = ReadDone {
        document: Arc::new(document),
        source,
        record: Arc::new(record),
        premium_calls,
    };
    let ttl = inner.settings.cache_ttl;
    if let (Some(tier), Some(key)) = (&inner.shared, key) {
        if let Some(blob) = encode(&done) {
            tier.store_page(&key.text, blob, ttl).await;
        }
    }
    (Ok(done), Keep::Complete(ttl))
}

/// A read that failed: never cached (the last page read is served stale instead, if any).
fn failed(failure: ReadFailure, mut record: ReadRecord, premium_calls: u32) -> (Computed, Keep) {
    record.close();
    (
        Err(ReadFailed {
            failure,
            record: Arc::new(record),
            premium_calls,
        }),
        Keep::Never,
    )
}

/// A page as the shared tier keeps it.
#[derive(Serialize, Deserialize)]
struct StoredPage {
    document: Document,
    source: ReadSource,
}

fn encode(done: &ReadDone) -> Option<Bytes> {
    let mut blob = MAGIC.to_vec();
    blob.push(VERSION);
    serde_json::to_writer(
        &mut blob,
        &StoredPage {
            document: (*done.document).clone(),
            source: done.source,
        },
    )
    .ok()?;
    Some(Bytes::from(blob))
}

/// A page another replica read (its record stayed there); `None` for another version's blob.
fn decode(blob: &[u8]) -> Option<ReadDone> {
    let rest = blob.strip_prefix(MAGIC.as_slice())?;
    let (&version, json) = rest.split_first()?;
    if version != VERSION {
        return None;
    }
    let stored: StoredPage = serde_json::from_slice(json).ok()?;
    Some(ReadDone {
        document: Arc::new(stored.document),
        source: stored.source,
        record: Arc::new(ReadRecord::default()),
        premium_calls: 0,
    })
}

#[cfg(test)]
mod tests;
