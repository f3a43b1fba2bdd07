//! The last 15 minutes of answered searches, second by second, for the operator's page (`/ui`):
//! how many ended with each outcome, how many were shed, and how long they took — so the page can
//! draw requests per second by outcome and p50/p95 latency with no Prometheus behind it.
//!
//! Fed where outcomes are counted (`Engine::served`, and the shed path of `Engine::search`).
//! A ring of one slot per second ([`WINDOW_SECONDS`] of them, each a fixed size), so its memory
//! does not grow with the request rate; a slot is reused when its second comes round again.
//! Latencies are counted in logarithmic buckets (each 25 % wider than the last, 0.1 ms to 2 min);
//! a quantile is read from the merged buckets, interpolated within its bucket, so it is exact to a
//! few per cent. Time is tokio's (paused in tests). Hand-written: a fixed ring of counters is
//! smaller than any time-series crate's API.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;

use crate::search::outcome::Outcome;

/// The seconds the ring holds.
pub(crate) const WINDOW_SECONDS: usize = 900;

/// Seconds per point of the latency series (p50/p95 over each step).
pub(crate) const LATENCY_STEP_SECONDS: usize = 15;

/// The upper bound of the first latency bucket, in seconds.
const FIRST_BOUND: f64 = 0.000_1;
/// Each bucket's upper bound over the previous one's.
const GROWTH: f64 = 1.25;
/// Latency buckets: enough for 0.1 ms × 1.25⁶⁴ ≈ 160 s; longer goes to the last.
const BUCKETS: usize = 64;

/// One second's counts.
#[derive(Debug, Clone, Copy)]
struct Slot {
    /// The second (since the ring's origin) these counts are of.
    second: u64,
    /// Answered searches per outcome, in [`Outcome::ALL`] order.
    outcomes: [u32; Outcome::ALL.len()],
    /// Searches shed (no fan-out slot in time).
    shed: u32,
    /// Latencies of the answered searches, by bucket.
    latency: [u32; BUCKETS],
}

impl Slot {
    const fn empty(second: u64) -> Self {
        Self {
            second,
            outcomes: [0; Outcome::ALL.len()],
            shed: 0,
            latency: [0; BUCKETS],
        }
    }
}

/// The ring. Cheap to share behind an `Arc`; every operation is one short lock.
#[derive(Debug)]
pub(crate) struct Traffic {
    origin: Instant,
    slots: Mutex<Vec<Slot>>,
}

impl Default for Traffic {
    fn default() -> Self {
        Self {
            origin: Instant::now(),
            // `u64::MAX`: a slot no second has written yet.
            slots: Mutex::new(vec![Slot::empty(u64::MAX); WINDOW_SECONDS]),
        }
    }
}

/// The latency bucket of `latency`.
fn bucket(latency: Duration) -> usize {
    let seconds = latency.as_secs_f64();
    if seconds <= FIRST_BOUND {
        return 0;
    }
    let index = (seconds / FIRST_BOUND).ln() / GROWTH.ln();
    (index.ceil() as usize).min(BUCKETS - 1)
}

/// The upper bound of bucket `index`, in seconds.
fn upper_bound(index: usize) -> f64 {
    FIRST_BOUND * GROWTH.powi(index as i32)
}

impl Traffic {
    fn now(&self) -> u64 {
        Instant::now().duration_since(self.origin).as_secs()
    }

    /// Runs `change` on the slot of the current second (emptied first if it held an older one).
    fn with_current(&self, change: impl FnOnce(&mut Slot)) {
        let second = self.now();
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        let slot = &mut slots[(second % WINDOW_SECONDS as u64) as usize];
        if slot.second != second {
            *slot = Slot::empty(second);
        }
        change(slot);
    }

    /// Counts one answered search with `outcome` that took `latency`.
    pub(crate) fn answered(&self, outcome: Outcome, latency: Duration) {
        let which = Outcome::ALL
            .iter()
            .position(|o| *o == outcome)
            .unwrap_or_default();
        let bucket = bucket(latency);
        self.with_current(|slot| {
            slot.outcomes[which] = slot.outcomes[which].saturating_add(1);
            slot.latency[bucket] = slot.latency[bucket].saturating_add(1);
        });
    }

    /// Counts one search shed for want of a fan-out slot.
    pub(crate) fn shed(&self) {
        self.with_current(|slot| slot.shed = slot.shed.saturating_add(1));
    }

    /// The window up to the current second, oldest second first.
    pub(crate) fn window(&self) -> TrafficWindow {
        let now = self.now();
        let slots: Vec<Slot> = {
            let ring = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
            (0..WINDOW_SECONDS as u64)
                .rev()
                .map(|ago| {
                    let second = now.checked_sub(ago);
                    match second {
                        Some(second) => {
                            let slot = ring[(second % WINDOW_SECONDS as u64) as usize];
                            if slot.second == second {
                                slot
                            } else {
                                Slot::empty(second)
                            }
                        }
                        None => Slot::empty(u64::MAX),
                    }
                })
                .collect()
        };
        TrafficWindow::of(&slots)
    }
}

/// Latency quantiles over some seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Quantiles {
    /// Answered searches they are of.
    pub(crate) count: u64,
    /// The median, in seconds (`null` without a search).
    pub(crate) p50_seconds: Option<f64>,
    /// The 95th percentile, in seconds (`null` without a search).
    pub(crate) p95_seconds: Option<f64>,
}

impl Quantiles {
    fn of(buckets: &[u64; BUCKETS]) -> Self {
        let count = buckets.iter().sum();
        Self {
            count,
            p50_seconds: quantile(buckets, count, 0.5),
            p95_seconds: quantile(buckets, count, 0.95),
        }
    }
}

/// The `q` quantile of `count` latencies counted in `buckets`, interpolated linearly within its
/// bucket (as Prometheus's `histogram_quantile` does), rounded to the microsecond.
fn quantile(buckets: &[u64; BUCKETS], count: u64, q: f64) -> Option<f64> {
    if count == 0 {
        return None;
    }
    let rank = q * count as f64;
    let mut below = 0u64;
    for (index, &n) in buckets.iter().enumerate() {
        if n > 0 && (below + n) as f64 >= rank {
            let lower = if index == 0 {
                0.0
            } else {
                upper_bound(index - 1)
            };
            let upper = upper_bound(index);
            let within = ((rank - below as f64) / n as f64).clamp(0.0, 1.0);
            let seconds = lower + (upper - lower) * within;
            return Some((seconds * 1e6).round() / 1e6);
        }
        below += n;
    }
    None
}

/// Per second, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct OutcomeSeries {
    pub(crate) outcome: Outcome,
    /// Searches answered with this outcome in each second of the window.
    pub(crate) per_second: Vec<u32>,
}

/// The window as the page (and anyone else) reads it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrafficWindow {
    /// Seconds in the window; every series has this many points, the last one the current
    /// (incomplete) second.
    pub(crate) window_seconds: usize,
    /// Each outcome's searches per second.
    pub(crate) outcomes: Vec<OutcomeSeries>,
    /// Searches shed per second (503: no fan-out slot in time).
    pub(crate) shed_per_second: Vec<u32>,
    /// Answered searches in the window.
    pub(crate) answered: u64,
    /// Searches shed in the window.
    pub(crate) shed: u64,
    /// The share of answered searches served from the cache (`null` without a search).
    pub(crate) cache_hit_ratio: Option<f64>,
    /// Latency over the whole window.
    pub(crate) latency: Quantiles,
    /// Seconds per point of `latency_series`.
    pub(crate) latency_step_seconds: usize,
    /// Latency over each step of the window, oldest first.
    pub(crate) latency_series: Vec<Quantiles>,
}

impl TrafficWindow {
    fn of(slots: &[Slot]) -> Self {
        let outcomes = Outcome::ALL
            .iter()
            .enumerate()
            .map(|(which, outcome)| OutcomeSeries {
                outcome: *outcome,
                per_second: slots.iter().map(|s| s.outcomes[which]).collect(),
            })
            .collect::<Vec<_>>();
        let shed_per_second: Vec<u32> = slots.iter().map(|s| s.shed).collect();
        let total = |series: &[u32]| series.iter().map(|&n| u64::from(n)).sum::<u64>();
        let answered: u64 = outcomes.iter().map(|s| total(&s.per_second)).sum();
        let hits = outcomes
            .iter()
            .find(|s| s.outcome == Outcome::CacheHit)
            .map_or(0, |s| total(&s.per_second));
        let merged = |slots: &[Slot]| {
            let mut buckets = [0u64; BUCKETS];
            for slot in slots {
                for (sum, &n) in buckets.iter_mut().zip(slot.latency.iter()) {
                    *sum += u64::from(n);
                }
            }
            Quantiles::of(&buckets)
        };
        Self {
            window_seconds: slots.len(),
            cache_hit_ratio: (answered > 0).then(|| {
                let ratio = hits as f64 / answered as f64;
                (ratio * 1e4).round() / 1e4
            }),
            answered,
            shed: total(&shed_per_second),
            latency: merged(slots),
            latency_step_seconds: LATENCY_STEP_SECONDS,
            latency_series: slots.chunks(LATENCY_STEP_SECONDS).map(merged).collect(),
            outcomes,
            shed_per_second,
        }
    }

    /// The per-second series of `outcome`.
    #[cfg(test)]
    fn series(&self, outcome: Outcome) -> &[u32] {
        self.outcomes
            .iter()
            .find(|s| s.outcome == outcome)
            .map_or(&[], |s| &s.per_second)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[tokio::test(start_paused = true)]
    async fn each_second_counts_its_outcomes_and_the_window_ends_now() {
        let traffic = Traffic::default();
        traffic.answered(Outcome::SearxngOk, 20 * MS);
        traffic.answered(Outcome::CacheHit, MS);
        tokio::time::advance(Duration::from_secs(2)).await;
        traffic.answered(Outcome::CacheHit, MS);
        traffic.shed();
        let window = traffic.window();
        assert_eq!(window.window_seconds, WINDOW_SECONDS);
        let hits = window.series(Outcome::CacheHit);
        assert_eq!(hits.len(), WINDOW_SECONDS);
        assert_eq!(&hits[WINDOW_SECONDS - 3..], &[1, 0, 1]);
        assert_eq!(
            &window.series(Outcome::SearxngOk)[WINDOW_SECONDS - 3..],
            &[1, 0, 0]
        );
        assert_eq!(window.shed_per_second[WINDOW_SECONDS - 1], 1);
        assert_eq!((window.answered, window.shed), (3, 1));
        assert_eq!(window.cache_hit_ratio, Some(0.6667));
        assert_eq!(
            window.latency_series.len(),
            WINDOW_SECONDS / LATENCY_STEP_SECONDS
        );
        assert_eq!(window.latency_series.last().unwrap().count, 3);
    }

    #[tokio::test(start_paused = true)]
    async fn a_second_leaves_the_window_after_15_minutes_and_its_slot_is_reused() {
        let traffic = Traffic::default();
        traffic.answered(Outcome::PremiumOk, MS);
        tokio::time::advance(Duration::from_secs(WINDOW_SECONDS as u64 - 1)).await;
        assert_eq!(traffic.window().series(Outcome::PremiumOk)[0], 1);
        assert_eq!(traffic.window().answered, 1);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(traffic.window().answered, 0, "900 s later it is gone");
        // The same slot now holds the new second alone.
        traffic.answered(Outcome::SearxngOk, MS);
        let window = traffic.window();
        assert_eq!(window.answered, 1);
        assert_eq!(window.series(Outcome::PremiumOk).iter().sum::<u32>(), 0);
        assert_eq!(window.cache_hit_ratio, Some(0.0));
    }

    #[tokio::test(start_paused = true)]
    async fn p50_and_p95_come_from_the_latencies_within_a_few_per_cent() {
        let traffic = Traffic::default();
        // 1 ms, 2 ms, …, 100 ms.
        for ms in 1..=100u64 {
            traffic.answered(Outcome::SearxngOk, Duration::from_millis(ms));
        }
        let latency = traffic.window().latency;
        assert_eq!(latency.count, 100);
        let p50 = latency.p50_seconds.unwrap();
        let p95 = latency.p95_seconds.unwrap();
        assert!((p50 - 0.050).abs() / 0.050 < 0.15, "p50 {p50}");
        assert!((p95 - 0.095).abs() / 0.095 < 0.15, "p95 {p95}");
        let empty = Traffic::default().window();
        assert_eq!(empty.latency.p50_seconds, None);
        assert_eq!(empty.cache_hit_ratio, None);
    }

    #[test]
    fn latencies_beyond_the_last_bucket_stay_in_it() {
        assert_eq!(bucket(Duration::ZERO), 0);
        assert_eq!(bucket(Duration::from_secs(3600)), BUCKETS - 1);
        assert!(upper_bound(BUCKETS - 1) > 120.0);
        for ms in [1u64, 7, 250, 4000] {
            let latency = Duration::from_millis(ms).as_secs_f64();
            let index = bucket(Duration::from_millis(ms));
            assert!(latency <= upper_bound(index) * 1.000_001, "{ms} ms");
            assert!(latency > upper_bound(index - 1), "{ms} ms");
        }
    }
}
