//! `log_lines_dropped_total`: log lines the writer thread dropped because its queue was full
//! (`LOG_QUEUE_LINES`). The log writer is the process's, set up once by `telemetry` before any
//! registry exists, so its count is read at each scrape from the one place telemetry leaves it;
//! without a writer (the in-process tests, the demo's library use) the series reads 0.

use std::sync::OnceLock;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use tracing_appender::non_blocking::ErrorCounter;

static DROPPED: OnceLock<ErrorCounter> = OnceLock::new();

/// Makes `counter` (the log writer's) the source of `log_lines_dropped_total`. Only the first call
/// counts: the process has one log writer.
pub fn count_from(counter: ErrorCounter) {
    let _ = DROPPED.set(counter);
}

/// Lines dropped so far.
pub(crate) fn dropped() -> u64 {
    DROPPED
        .get()
        .map_or(0, |counter| counter.dropped_lines() as u64)
}

/// The collector registered on every [`super::Registry`].
#[derive(Debug)]
pub(crate) struct LogDrops;

impl Collector for LogDrops {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let counter = ConstCounter::new(dropped());
        let metric = encoder.encode_descriptor(
            "log_lines_dropped",
            "Log lines dropped because the log writer's queue (LOG_QUEUE_LINES) was full: stdout was not read fast enough",
            None,
            counter.metric_type(),
        )?;
        counter.encode(metric)
    }
}
