//! [`Reading`]: the read pipeline's state (the readers, their breakers, the hosts' slots and
//! breakers, the page cache) and a read through it — the cache first, identical reads in flight
//! sharing one ([`super::compute`]), one outcome counted per read.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::compute::compute;
use super::hosts::{HostName, HostSlots};
use super::metrics::{ReadLabels, ReadMetrics, ReadOutcome};
use super::page::{
    Computed, Freshness, PageRead, ReadFailed, ReadRequest, ReadSettings, ReadSource,
};
use super::page_key::PageKey;
use super::record::ReadRecord;
use super::state::ReadState;
use super::walls::HostBreakers;
use crate::search::Premium;
use gateway_core::breaker::{BreakerBoard, BreakerPolicy};
use gateway_core::cache::{AnswerCache, CacheStatus};
use gateway_core::shared::SharedTier;
use gateway_upstreams::providers::readers::{PremiumReader, ReaderKind};
use gateway_upstreams::reader::{ReadFailure, Reader};

/// Host breakers remembered at most (closed ones nobody holds are dropped first), and hosts whose
/// walls are remembered.
const MAX_HOSTS: usize = 4096;

/// Reading pages. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Reading {
    pub(super) inner: Arc<ReadState>,
}

impl Reading {
    /// Reading with `reader` directly and `premium` as the fallback.
    pub(crate) fn new(
        reader: Reader,
        premium: Vec<Arc<PremiumReader>>,
        policy: BreakerPolicy,
        readers: BreakerBoard<ReaderKind>,
        fleet: Option<SharedTier>,
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
            inner: Arc::new(ReadState {
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
                fleet,
                metrics,
                settings,
            }),
        }
    }

    /// Whether pages may be rendered in the local browser (`/v1/capabilities`).
    pub(crate) fn renders(&self) -> bool {
        self.inner.reader.renders()
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
        if req.freshness == Freshness::Fresh {
            // The page read now replaces the cached one; a read in flight is fresh enough.
            self.inner.cache.purge(|cached| cached == &key);
        } else if premium == Premium::BudgetSpent {
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
            (Ok(done), CacheStatus::Miss) if done.source == ReadSource::Browser => {
                ReadOutcome::BrowserOk
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
