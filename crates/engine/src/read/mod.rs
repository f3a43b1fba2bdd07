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
//! 3. The local browser ([`rendered`]), when `BROWSER` is on: before the direct read for every
//!    page (`BROWSER=always`), a host of `BROWSER_HOSTS` or a client's `render=always`; after
//!    it when the direct read was a script shell, found no readable text, or too little of it
//!    (an HTML page). The rendered page goes through the same parse, host slots and breaker,
//!    timeout (`BROWSER_TIMEOUT_SECONDS`, never past the budget) and cache; a render that does
//!    no better leaves the direct read's result standing. A client's `render=never` skips it.
//! 4. The premium fallback, when the direct read was blocked, failed, or found no readable text or
//!    too little of it (an HTML page of fewer than twenty words — a page that draws its text with
//!    scripts —, an advanced read of fewer than 150; when no reader does better, the little there
//!    is is the answer): `READ_PROVIDERS` in order, each with its
//!    own breaker and quota parking, each call charged to the client's premium budget; none when
//!    the budget is spent. A URL the address policy refuses is never sent to a premium reader.
//! 5. One outcome per read in `reads_total`, the record for `explain`.
//!
//! The files: [`page`] (what a door asks and gets), [`page_key`] (the cache key), [`reading`]
//! (the cache in front of a read, the outcome counted), [`compute`] (one read: the shared tier,
//! the direct read ([`direct`]), the local browser ([`rendered`]), the premium fallback), [`stored`] (a page in the shared tier),
//! [`hosts`] and [`walls`] (per-host slots and breakers), [`record`] (what `explain` shows), [`state`] (what every read shares),
//! [`metrics`]; [`screenshot`], a page's screenshot (never cached); [`passages`], the passages of a read page that answer a query (#41); and
//! [`site_map`], a site's URLs from its sitemaps and start page (#43's map).

mod compute;
mod direct;
mod hosts;
mod metrics;
mod page;
mod page_key;
pub mod passages;
mod reading;
mod record;
mod rendered;
mod screenshot;
pub mod site_map;
mod state;
mod stored;
mod walls;

pub(crate) use metrics::ReadMetrics;
pub(crate) use page::ReadSettings;
pub use page::{Depth, Freshness, PageRead, ReadDone, ReadFailed, ReadRequest, ReadSource, Render};
pub(crate) use reading::Reading;
pub use record::ReadRecord;

#[cfg(test)]
mod tests;
