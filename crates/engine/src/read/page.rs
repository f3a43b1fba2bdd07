//! What a door asks of the read pipeline ([`ReadRequest`], its [`Depth`]) and what it gets back
//! ([`PageRead`]: the page read and by whom, or why not, and what it cost), and the reading
//! decisions' numbers ([`ReadSettings`]).

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use url::Url;

use super::record::ReadRecord;
use gateway_core::cache::CacheStatus;
use gateway_core::request::ReadFormat;
use gateway_upstreams::providers::readers::ReaderKind;
use gateway_upstreams::reader::{Document, ReadFailure};

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
    /// Whether a cached page may answer.
    pub freshness: Freshness,
    /// Whether the local browser may render it (MCP's `render`).
    pub render: Render,
    /// Firecrawl's `waitFor`: how long a rendered page is given after its load.
    pub wait_for: Option<Duration>,
}

/// Whether a page may be rendered in the local browser.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Render {
    /// When the direct read is a script shell or has too little text, or as `BROWSER` and
    /// `BROWSER_HOSTS` say.
    #[default]
    Auto,
    /// Rendered without a direct read first (the door checks that there is a browser).
    Always,
    /// Never: the direct read and the premium readers only.
    Never,
}

/// Whether a read may be answered from the page cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Freshness {
    /// A page read within `FETCH_CACHE_TTL_SECONDS`, here or in the shared tier, answers.
    #[default]
    Cached,
    /// Read afresh (Jina's `X-No-Cache`): no cached page answers, here or in the shared tier,
    /// and the page read replaces the cached one in both.
    Fresh,
}

/// Who read a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReadSource {
    /// The gateway itself.
    Direct,
    /// The gateway's local browser.
    Browser,
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
    /// The name (`direct`, `browser`, or the reader's).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Direct => "direct",
            Self::Browser => "browser",
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
    pub(super) premium_calls: u32,
}

/// A page not read.
#[derive(Debug, Clone)]
pub struct ReadFailed {
    /// Why it was not read.
    pub failure: ReadFailure,
    /// What the read did (`explain`).
    pub record: Arc<ReadRecord>,
    pub(super) premium_calls: u32,
}

/// One read's result, as the cache keeps it.
pub(crate) type Computed = Result<ReadDone, ReadFailed>;

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
