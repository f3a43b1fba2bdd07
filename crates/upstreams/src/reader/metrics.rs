//! What the direct reader counts: bytes read (`read_bytes_total`), the time spent turning a page
//! into text (`read_extraction_seconds`), and its parse workers: how many were started
//! (`parse_workers_started_total`: the first ones and every one replacing a worker a page killed)
//! and the pages that ran into a parse limit (`parse_limits_total{limit}`). No host label: the
//! series stay a fixed set whatever URLs clients name.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;

use super::ParseLimit;
use gateway_core::metrics::{label_value_as_str, Registry};

label_value_as_str!(ParseLimit);

/// `{limit}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct LimitLabels {
    pub(crate) limit: ParseLimit,
}

/// The reader's families. Cheap to clone.
#[derive(Debug, Clone)]
pub struct ReaderMetrics {
    /// `read_bytes_total`: bytes of pages read directly (after decompression).
    pub(crate) bytes: Counter,
    /// `read_extraction_seconds`: decoding and extraction, per page.
    pub(crate) extraction: Histogram,
    /// `parse_workers_started_total`.
    pub(crate) workers_started: Counter,
    /// `parse_limits_total{limit}`.
    pub(crate) limits: Family<LimitLabels, Counter>,
    /// The local browser's families (`browser_*`).
    pub(crate) browser: super::browser::BrowserMetrics,
}

impl ReaderMetrics {
    /// The families, registered on `r`.
    pub fn new(r: &mut Registry) -> Self {
        let m = Self {
            browser: super::browser::BrowserMetrics::new(r),
            bytes: r.registered(
                "read_bytes",
                "Bytes of pages read directly by the reader (after decompression)",
                Counter::default(),
            ),
            extraction: r.registered(
                "read_extraction_seconds",
                "Time to decode a page and extract its readable text",
                Histogram::new([
                    0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0,
                ]),
            ),
            workers_started: r.registered(
                "parse_workers_started",
                "Parse worker processes started (the first ones, and each replacing one a page ended)",
                Counter::default(),
            ),
            limits: r.registered(
                "parse_limits",
                "Pages whose parse ran into a limit: nesting, time, resources (memory or stack), busy",
                Family::default(),
            ),
        };
        // Every limit is shown from the start, at zero.
        for limit in ParseLimit::ALL {
            let _ = m.limits.get_or_create(&LimitLabels { limit });
        }
        m
    }
}
