//! A latency histogram with bounded relative error: 64 linear sub-buckets per power of two of
//! nanoseconds, so any recorded value is reported within 1/64 (1.6 %) of itself, in a fixed
//! 30 KiB table whatever the range. Histograms of several connections merge by addition.

use std::time::Duration;

/// Sub-buckets per power of two.
const SUB_BUCKETS: u64 = 64;
/// `log2(SUB_BUCKETS)`.
const SUB_BITS: u32 = 6;
/// Values below `SUB_BUCKETS` ns get one bucket each; each power of two above gets 64.
const BUCKETS: usize = (SUB_BUCKETS as usize) * (64 - SUB_BITS as usize + 1);

/// Counts of latencies.
#[derive(Clone)]
pub(crate) struct Histogram {
    counts: Vec<u64>,
    total: u64,
    max_ns: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self {
            counts: vec![0; BUCKETS],
            total: 0,
            max_ns: 0,
        }
    }
}

fn index_of(ns: u64) -> usize {
    if ns < SUB_BUCKETS {
        return ns as usize;
    }
    let exponent = 63 - ns.leading_zeros();
    let shift = exponent - SUB_BITS;
    let sub = (ns >> shift) - SUB_BUCKETS;
    (SUB_BUCKETS * (u64::from(shift) + 1) + sub) as usize
}

/// The middle of bucket `index`, in nanoseconds.
fn value_of(index: usize) -> u64 {
    let index = index as u64;
    if index < SUB_BUCKETS {
        return index;
    }
    let shift = index / SUB_BUCKETS - 1;
    let sub = index % SUB_BUCKETS;
    let low = (SUB_BUCKETS + sub) << shift;
    low + (1u64 << shift) / 2
}

impl Histogram {
    /// Records one latency.
    pub(crate) fn record(&mut self, latency: Duration) {
        let ns = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX);
        self.counts[index_of(ns)] += 1;
        self.total += 1;
        self.max_ns = self.max_ns.max(ns);
    }

    /// Adds another histogram's counts.
    pub(crate) fn merge(&mut self, other: &Histogram) {
        for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine += theirs;
        }
        self.total += other.total;
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    /// Recorded values.
    pub(crate) fn count(&self) -> u64 {
        self.total
    }

    /// The latency below which `quantile` (0–1) of the recorded values fall.
    pub(crate) fn quantile(&self, quantile: f64) -> Duration {
        if self.total == 0 {
            return Duration::ZERO;
        }
        let rank = ((quantile.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (index, count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return Duration::from_nanos(value_of(index).min(self.max_ns));
            }
        }
        Duration::from_nanos(self.max_ns)
    }

    /// The largest value recorded.
    pub(crate) fn max(&self) -> Duration {
        Duration::from_nanos(self.max_ns)
    }
}
