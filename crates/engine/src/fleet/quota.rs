//! Provider quota windows across replicas (`REDIS_URL`): what a provider reported about a key's
//! limits (Brave's `X-RateLimit-*`: the per-second and the monthly window) on one replica is known
//! to every replica by its next miss — in `/status`, and where the rotation asks whether a key's
//! quota is nearly spent.
//!
//! One hash ([`Board::QuotaWindows`]): key name → the latest report (`{"v":1,"at_ms":…,"windows":
//! […]}`), written after a fan-out when this replica received a report since it last wrote — at
//! most once per [`PUBLISH_EVERY`], so a provider called on every miss costs one write a second,
//! not one per miss — and read with the miss's one round trip; the newer report of a key wins, and
//! each window's reset counts down from when it was reported.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, UNIX_EPOCH};

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::search::upstreams::PremiumSide;
use gateway_core::persist::unix_ms;
use gateway_core::shared::{Board, SharedTier};
use gateway_upstreams::providers::quota::{RateWindow, Report};

/// Record version written by this build; another version is ignored.
const RECORD_VERSION: u32 = 1;

/// The shortest time between two writes of this replica's reports.
const PUBLISH_EVERY: Duration = Duration::from_secs(1);

/// The quota board's version this replica last wrote to the shared tier, and when.
#[derive(Debug, Default)]
pub(crate) struct QuotaMirror {
    published: AtomicU64,
    last_write: Mutex<Option<Instant>>,
}

#[derive(Serialize, Deserialize)]
struct Record {
    v: u32,
    at_ms: u64,
    windows: Vec<RateWindow>,
}

/// Writes every key's latest report when this replica received one since it last wrote (one
/// round trip; none when nothing changed, the usual miss).
pub(crate) async fn publish(premium: &PremiumSide, mirror: &QuotaMirror, tier: &SharedTier) {
    let since = mirror.published.load(Ordering::Acquire);
    let (reports, version) = premium.quota.reports_since(since);
    if reports.is_empty() {
        return;
    }
    {
        let mut last = mirror
            .last_write
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if last.is_some_and(|at| at.elapsed() < PUBLISH_EVERY) {
            return;
        }
        *last = Some(Instant::now());
    }
    let changes: Vec<(String, Option<Bytes>)> = reports
        .into_iter()
        .filter_map(|(key, report)| {
            let record = Record {
                v: RECORD_VERSION,
                at_ms: unix_ms(report.at),
                windows: report.windows,
            };
            let bytes = serde_json::to_vec(&record).ok()?;
            Some((key.as_str().to_owned(), Some(Bytes::from(bytes))))
        })
        .collect();
    if tier.write_board(Board::QuotaWindows, &changes).await {
        mirror.published.fetch_max(version, Ordering::AcqRel);
    }
}

/// Takes the reports other replicas wrote, for keys this replica holds too (the same key, the same
/// fingerprint).
pub(crate) fn adopt(premium: &PremiumSide, records: &HashMap<String, Bytes>) {
    for key in premium.providers.iter().flat_map(|p| p.keys()) {
        let Some(record) = records
            .get(key.as_str())
            .and_then(|bytes| serde_json::from_slice::<Record>(bytes).ok())
            .filter(|r| r.v == RECORD_VERSION)
        else {
            continue;
        };
        premium.quota.adopt(
            key,
            Report {
                windows: record.windows,
                at: UNIX_EPOCH + Duration::from_millis(record.at_ms),
            },
        );
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    #[test]
    fn a_record_reads_back_and_another_version_is_ignored() {
        let record = Record {
            v: RECORD_VERSION,
            at_ms: unix_ms(SystemTime::now()),
            windows: vec![RateWindow {
                label: "month".into(),
                period_seconds: Some(2_592_000),
                limit: Some(15_000.0),
                remaining: Some(12.0),
                reset_seconds: Some(3600.0),
            }],
        };
        let bytes = serde_json::to_vec(&record).unwrap();
        let back: Record = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(back.windows, record.windows);
        let other = serde_json::to_vec(&Record { v: 2, ..back }).unwrap();
        let other: Record = serde_json::from_slice(&other).unwrap();
        assert_ne!(other.v, RECORD_VERSION);
    }
}
