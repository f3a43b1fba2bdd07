//! [`Fleet`]: this replica's link to the tier replicas share — the tier itself, when `REDIS_URL`
//! set one up, and what this replica last told it of its breakers and quota windows.

use gateway_core::shared::{Board, SharedTier};

use super::breakers::{self, Mirror};
use super::quota::{self, QuotaMirror};
use crate::search::upstreams::FanOutContext;

/// This replica's link to the fleet; without a tier, every publish and adopt does nothing.
#[derive(Debug, Default)]
pub(crate) struct Fleet {
    /// The tier shared with other replicas (`REDIS_URL`); `None`: this process alone.
    tier: Option<SharedTier>,
    /// What this process last published of its breakers to the tier.
    mirror: Mirror,
    /// What the tier was last told about the providers' quota windows.
    quota_mirror: QuotaMirror,
}

impl Fleet {
    /// The link through `tier` (`None`: a fleet of one).
    pub(crate) fn new(tier: Option<SharedTier>) -> Self {
        Self {
            tier,
            ..Self::default()
        }
    }

    /// The tier, if any.
    pub(crate) fn tier(&self) -> Option<&SharedTier> {
        self.tier.as_ref()
    }

    /// Writes the breakers whose state changed since they were last published
    /// ([`breakers::publish`]).
    pub(crate) async fn publish_breakers(&self, fanout: &FanOutContext) {
        if let Some(tier) = &self.tier {
            breakers::publish(fanout, &self.mirror, tier).await;
        }
    }

    /// Writes the quota windows reported since they were last published ([`quota::publish`]).
    pub(crate) async fn publish_quota(&self, fanout: &FanOutContext) {
        if let Some(tier) = &self.tier {
            quota::publish(&fanout.premium, &self.quota_mirror, tier).await;
        }
    }

    /// Reads the breaker boards alone (no answer, under `reader`'s name) and adopts what other
    /// replicas say ([`breakers::adopt`]).
    pub(crate) async fn adopt_breakers(&self, fanout: &FanOutContext, reader: &str) {
        let Some(tier) = &self.tier else {
            return;
        };
        let boards: Vec<Board<'_>> = breakers::board_ids(fanout);
        if let Some(read) = tier.read_miss(reader, &boards, false).await {
            breakers::adopt(fanout, tier, &read.boards).await;
        }
    }
}
