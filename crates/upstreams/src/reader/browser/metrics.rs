//! What the local browser counts: rendered reads by outcome (`browser_reads_total{outcome}`), their
//! time (`browser_read_seconds`), the tabs leased now (`browser_tabs_in_use`), and the browser's
//! restarts by reason (`browser_restarts_total{reason}`). No host label: the series stay a fixed
//! set whatever URLs clients name.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;

use super::{RenderOutcome, RestartReason};
use gateway_core::metrics::{label_value_as_str, Registry};

label_value_as_str!(RenderOutcome, RestartReason);

/// `{outcome}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct OutcomeLabels {
    pub(crate) outcome: RenderOutcome,
}

/// `{reason}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct RestartLabels {
    pub(crate) reason: RestartReason,
}

/// The browser's families. Cheap to clone.
#[derive(Debug, Clone)]
pub struct BrowserMetrics {
    /// `browser_reads_total{outcome}`.
    pub(crate) reads: Family<OutcomeLabels, Counter>,
    /// `browser_read_seconds`.
    pub(crate) seconds: Histogram,
    /// `browser_tabs_in_use`.
    pub(crate) tabs_in_use: Gauge,
    /// `browser_restarts_total{reason}`.
    pub(crate) restarts: Family<RestartLabels, Counter>,
}

impl BrowserMetrics {
    /// The families, registered on `r`.
    pub fn new(r: &mut Registry) -> Self {
        let m = Self {
            reads: r.registered(
                "browser_reads",
                "Pages rendered by the local browser, by outcome",
                Family::default(),
            ),
            seconds: r.registered(
                "browser_read_seconds",
                "Time to render one page in the local browser (the tab's wait included)",
                Histogram::new([0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0]),
            ),
            tabs_in_use: r.registered(
                "browser_tabs_in_use",
                "Tabs of the local browser rendering a page now",
                Gauge::default(),
            ),
            restarts: r.registered(
                "browser_restarts",
                "Times the local browser was started again: it crashed, hung, or outgrew BROWSER_MEMORY_MB",
                Family::default(),
            ),
        };
        // Every series from the first scrape: a rate needs the zero before the first event.
        for outcome in RenderOutcome::ALL {
            let _ = m.reads.get_or_create(&OutcomeLabels { outcome });
        }
        for reason in RestartReason::ALL {
            let _ = m.restarts.get_or_create(&RestartLabels { reason });
        }
        m
    }
}
