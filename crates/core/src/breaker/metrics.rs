//! The breaker families: `circuit_breaker_state`, `_trips_total`, `_rejections_total` and
//! `_recovery_total`, labelled by the breaker's name (the `engine` label, a name kept from the Go
//! original) and its [`BreakerKind`], so SearXNG's `brave` engine and the Brave API never share a
//! series; a pool member's engine breakers and cooldown also carry its `searxng_instance` label.
//! A provider's state, rejections and recoveries are the provider's as a whole, derived from its
//! own breaker and its keys' ([`super::rollup`]); trips stay with the breaker that tripped, so
//! trips summed by reason count each once.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

use super::{BreakerKind, TripReason};
use crate::metrics::{label_value_as_str, InstanceLabel, Registry};

label_value_as_str!(BreakerKind, TripReason);

/// `{engine, kind[, searxng_instance]}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct BreakerLabels {
    pub(crate) engine: String,
    pub(crate) kind: BreakerKind,
    #[prometheus(flatten)]
    pub(crate) instance: InstanceLabel,
}

/// `{engine, kind, reason[, searxng_instance]}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct TripLabels {
    pub(crate) engine: String,
    pub(crate) kind: BreakerKind,
    pub(crate) reason: TripReason,
    #[prometheus(flatten)]
    pub(crate) instance: InstanceLabel,
}

/// Every breaker family. Cheap to clone.
#[derive(Debug, Clone)]
pub struct BreakerMetrics {
    /// `circuit_breaker_state{engine,kind}`: 0 closed, 1 half-open, 2 open.
    pub(crate) state: Family<BreakerLabels, Gauge>,
    /// `circuit_breaker_trips_total{engine,kind,reason}`.
    pub(crate) trips: Family<TripLabels, Counter>,
    /// `circuit_breaker_rejections_total{engine,kind}`: calls not made because it was open (a
    /// provider: or none of its keys was usable).
    pub(crate) rejections: Family<BreakerLabels, Counter>,
    /// `circuit_breaker_recovery_total{engine,kind}`: half-open probes that closed it (a
    /// provider: that closed the whole again).
    pub(crate) recoveries: Family<BreakerLabels, Counter>,
}

impl BreakerMetrics {
    /// The families, registered on `r`.
    pub fn new(r: &mut Registry) -> Self {
        Self {
            state: r.registered(
                "circuit_breaker_state",
                "Circuit breaker state: 0 closed, 1 half-open, 2 open",
                Family::default(),
            ),
            trips: r.registered(
                "circuit_breaker_trips",
                "Circuit breaker trips by reason",
                Family::default(),
            ),
            rejections: r.registered(
                "circuit_breaker_rejections",
                "Calls not made because the breaker was open",
                Family::default(),
            ),
            recoveries: r.registered(
                "circuit_breaker_recovery",
                "Half-open probes that succeeded and closed the breaker",
                Family::default(),
            ),
        }
    }
}
