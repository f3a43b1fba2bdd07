//! [`ReadState`]: what every read shares — the direct reader, the premium readers and their
//! breakers, the hosts' breakers and slots, the page cache, the Redis tier, the counters.

use std::sync::Arc;

use super::hosts::HostSlots;
use super::metrics::ReadMetrics;
use super::page::{Computed, ReadSettings};
use super::page_key::PageKey;
use super::walls::HostBreakers;
use gateway_core::breaker::BreakerBoard;
use gateway_core::cache::AnswerCache;
use gateway_core::shared::SharedTier;
use gateway_upstreams::providers::readers::{PremiumReader, ReaderKind};
use gateway_upstreams::reader::Reader;

/// The read pipeline's state, shared by every read.
pub(super) struct ReadState {
    pub(super) reader: Reader,
    /// `READ_PROVIDERS` with keys, in order.
    pub(super) premium: Vec<Arc<PremiumReader>>,
    pub(super) readers: BreakerBoard<ReaderKind>,
    pub(super) hosts: HostBreakers,
    pub(super) slots: HostSlots,
    pub(super) cache: AnswerCache<PageKey, Computed>,
    /// The tier replicas share (`REDIS_URL`): pages read by any of them.
    pub(super) fleet: Option<SharedTier>,
    pub(super) metrics: ReadMetrics,
    pub(super) settings: ReadSettings,
}
