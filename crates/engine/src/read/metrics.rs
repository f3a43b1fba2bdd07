//! The read families: reads by outcome (exactly one per page a client asked for), their latency,
//! the page cache, and how many host breakers are open — no host label anywhere, so the series
//! stay a fixed set whatever URLs clients name.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

use gateway_core::cache::CacheCounters;
use gateway_core::metrics::{label_value_as_str, latency_family, HistogramFamily, Registry};

label_value_as_str!(ReadOutcome);

/// How one read ended: the `outcome` label of `reads_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ReadOutcome {
    /// From the page cache (this replica's or the shared tier's).
    CacheHit,
    /// Read directly.
    DirectOk,
    /// Rendered by the local browser.
    BrowserOk,
    /// Read by a premium reader.
    PremiumOk,
    /// Blocked, and no premium reader read it.
    Blocked,
    /// Failed otherwise.
    Failed,
    /// Refused before anything was sent: an address or host reads may not reach.
    Forbidden,
}

impl ReadOutcome {
    /// Every outcome, for the series to exist from the first scrape.
    pub(crate) const ALL: [ReadOutcome; 7] = [
        Self::CacheHit,
        Self::DirectOk,
        Self::BrowserOk,
        Self::PremiumOk,
        Self::Blocked,
        Self::Failed,
        Self::Forbidden,
    ];

    /// The label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::CacheHit => "cache_hit",
            Self::DirectOk => "direct_ok",
            Self::BrowserOk => "browser_ok",
            Self::PremiumOk => "premium_ok",
            Self::Blocked => "blocked",
            Self::Failed => "failed",
            Self::Forbidden => "forbidden",
        }
    }
}

/// `{outcome}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct ReadLabels {
    pub(crate) outcome: ReadOutcome,
}

/// Every read family. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct ReadMetrics {
    /// `reads_total{outcome}`.
    pub(crate) reads: Family<ReadLabels, Counter>,
    /// `read_duration_seconds{outcome}`.
    pub(crate) duration: HistogramFamily<ReadLabels>,
    /// `read_host_breakers_open`: hosts whose breaker is open now.
    pub(crate) host_breakers_open: Gauge,
    /// The page cache's entries, bytes, coalesced reads and refreshes.
    pub(crate) cache: CacheCounters,
}

impl ReadMetrics {
    /// The families, registered on `r`.
    pub(crate) fn new(r: &mut Registry) -> Self {
        let m = Self {
            reads: Family::default(),
            duration: latency_family(),
            host_breakers_open: Gauge::default(),
            cache: CacheCounters::default(),
        };
        // Every series from the first scrape: a rate needs the zero before the first read.
        for outcome in ReadOutcome::ALL {
            let _ = m.reads.get_or_create(&ReadLabels { outcome });
            let _ = m.duration.get_or_create(&ReadLabels { outcome });
        }
        register_families!(r;
            "reads", "Pages read for clients, by outcome: cache_hit, direct_ok, browser_ok, premium_ok, blocked, failed, forbidden" => m.reads;
            "read_duration_seconds", "Time to answer one page read, by outcome" => m.duration;
            "read_host_breakers_open", "Hosts whose read breaker is open now (blocked or failing)" => m.host_breakers_open;
            "read_cache_entries", "Pages in the local page cache" => m.cache.size;
            "read_cache_bytes", "Bytes the local page cache holds" => m.cache.bytes;
            "read_cache_coalesced", "Page reads that waited on an identical read in flight" => m.cache.coalesced;
            "read_cache_refreshes", "Popular pages read again in the background before they expired" => m.cache.refreshes;
        );
        m
    }
}
