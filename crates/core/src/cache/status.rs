//! How a value was obtained ([`CacheStatus`]) and which tier a hit came from ([`CacheTier`]): the
//! words the `X-Cache` and `X-Cache-Tier` headers, `explain` and the search's log line show.

use std::time::Duration;

/// How a value was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheStatus {
    /// Served from this process's cache.
    Hit,
    /// Served from the shared tier (`REDIS_URL`): another replica computed it.
    SharedHit,
    /// Computed for this request (or shared with an identical request in flight).
    Miss,
    /// The computation failed outright; this is the last complete answer, expired this long ago.
    Stale {
        /// How long ago it stopped being fresh.
        expired_for: Duration,
    },
}

impl CacheStatus {
    /// The `X-Cache` header value and log field: `hit`, `miss` or `stale`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hit | Self::SharedHit => "hit",
            Self::Miss => "miss",
            Self::Stale { .. } => "stale",
        }
    }

    /// Which tier a hit came from: the `X-Cache-Tier` header, and `explain`'s `cache.tier`.
    pub fn tier(self) -> Option<CacheTier> {
        match self {
            Self::Hit => Some(CacheTier::Local),
            Self::SharedHit => Some(CacheTier::Redis),
            Self::Miss | Self::Stale { .. } => None,
        }
    }
}

/// Where a cached answer was found. One word for each wherever it is shown: the `X-Cache-Tier`
/// header, `explain`'s `cache.tier`, the search's log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheTier {
    /// This process's own cache (a stale answer too: only the local cache keeps them).
    Local,
    /// The shared tier (`REDIS_URL`): another replica computed it.
    Redis,
}

impl CacheTier {
    /// `local` or `redis`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::Redis => "redis",
        }
    }
}

impl serde::Serialize for CacheTier {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}
