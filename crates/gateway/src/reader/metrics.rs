//! What the direct reader counts: bytes read (`read_bytes_total`) and the time spent turning a page
//! into text (`read_extraction_seconds`). No host label: the series stay a fixed set whatever URLs
//! clients name.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::histogram::Histogram;

use crate::metrics::Registry;

/// The reader's families. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct ReaderMetrics {
    /// `read_bytes_total`: bytes of pages read directly (after decompression).
    pub(crate) bytes: Counter,
    /// `read_extraction_seconds`: decoding and extraction, per page.
    pub(crate) extraction: Histogram,
}

impl ReaderMetrics {
    /// The families, registered on `r`.
    pub(crate) fn new(r: &mut Registry) -> Self {
        let m = Self {
            bytes: Counter::default(),
            extraction: Histogram::new([
                0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0,
            ]),
        };
        r.register(
            "read_bytes",
            "Bytes of pages read directly by the reader (after decompression)",
            m.bytes.clone(),
        );
        r.register(
            "read_extraction_seconds",
            "Time to decode a page and extract its readable text",
            m.extraction.clone(),
        );
        m
    }
}
