//! What providers say about their own limits, as facts: the rate-limit windows read from response
//! headers (Brave's `X-RateLimit-*`), kept per key (each key of a pool has its own windows) for
//! `/status` and mirrored into the `brave_rate_limit_*` gauges, and whether a key's long (quota)
//! window is nearly spent — what the rotation asks before spending a request on it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use super::keys::KeyId;

/// One rate-limit window as the provider last reported it. A value is `None` when its header entry
/// was missing or unreadable: unknown, never zero. Serialized for the shared tier.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RateWindow {
    /// `1s`, `month`, `w<secs>` from the policy, or the window's index when there is no policy.
    pub label: String,
    /// The window's length when the provider states it (Brave's `X-RateLimit-Policy` `w=`).
    pub period_seconds: Option<u64>,
    /// Requests allowed per window.
    pub limit: Option<f64>,
    /// Requests left in the window.
    pub remaining: Option<f64>,
    /// Seconds until the window resets.
    pub reset_seconds: Option<f64>,
}

/// A window at least this long is a quota (a day, a month), not a per-second throttle.
const QUOTA_WINDOW_SECONDS: u64 = 86_400;
/// A quota window with at most this fraction of its limit left (and at least one call) is nearly
/// spent: the rotation keeps it for when nobody else can answer.
const NEARLY_SPENT_FRACTION: f64 = 0.02;

impl RateWindow {
    /// A quota window whose remaining calls are at most [`NEARLY_SPENT_FRACTION`] of its limit
    /// (at least 1). Unknown values never count as spent.
    pub(crate) fn is_nearly_spent_quota(&self) -> bool {
        let (Some(period), Some(limit), Some(remaining)) =
            (self.period_seconds, self.limit, self.remaining)
        else {
            return false;
        };
        period >= QUOTA_WINDOW_SECONDS && remaining <= (limit * NEARLY_SPENT_FRACTION).max(1.0)
    }
}

/// The latest windows of every key that reported them. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct QuotaBoard {
    inner: Arc<Mutex<Reports>>,
}

#[derive(Debug, Default)]
struct Reports {
    by_key: BTreeMap<KeyId, Report>,
    /// Bumped by each report this process received itself (not by adopted ones).
    version: u64,
}

/// A key's windows and when they were reported.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The windows the response reported.
    pub windows: Vec<RateWindow>,
    /// When the provider reported them (wall clock): the newer report wins across replicas.
    pub at: SystemTime,
}

impl QuotaBoard {
    fn lock(&self) -> std::sync::MutexGuard<'_, Reports> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Replaces `key`'s windows with the ones its latest response reported (no report keeps the
    /// previous ones: an error page without headers says nothing about the quota).
    pub(crate) fn update(&self, key: &KeyId, windows: Vec<RateWindow>) {
        if windows.is_empty() {
            return;
        }
        let mut reports = self.lock();
        reports.by_key.insert(
            key.clone(),
            Report {
                windows,
                at: SystemTime::now(),
            },
        );
        reports.version += 1;
    }

    /// Takes a report another replica received for `key`, if it is newer than ours.
    pub fn adopt(&self, key: &KeyId, report: Report) {
        let mut reports = self.lock();
        if reports
            .by_key
            .get(key)
            .is_none_or(|ours| ours.at < report.at)
        {
            reports.by_key.insert(key.clone(), report);
        }
    }

    /// Whether `key` last reported a quota window that is nearly spent.
    pub(crate) fn nearly_spent(&self, key: &KeyId) -> bool {
        self.lock()
            .by_key
            .get(key)
            .is_some_and(|report| report.windows.iter().any(RateWindow::is_nearly_spent_quota))
    }

    /// `key`'s latest windows (empty when it never reported any), each reset counted down to now.
    pub fn windows(&self, key: &KeyId) -> Vec<RateWindow> {
        let Some(report) = self.lock().by_key.get(key).cloned() else {
            return Vec::new();
        };
        let age = report.at.elapsed().map_or(0.0, |d| d.as_secs_f64());
        report
            .windows
            .into_iter()
            .map(|w| RateWindow {
                reset_seconds: w.reset_seconds.map(|r| (r - age).max(0.0)),
                ..w
            })
            .collect()
    }

    /// The reports this process received itself since `version` (all of them for 0), and the
    /// version now: what the shared tier has not been told yet.
    pub fn reports_since(&self, version: u64) -> (Vec<(KeyId, Report)>, u64) {
        let reports = self.lock();
        if reports.version == version {
            return (Vec::new(), version);
        }
        let all = reports
            .by_key
            .iter()
            .map(|(k, r)| (k.clone(), r.clone()))
            .collect();
        (all, reports.version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(period: u64, limit: f64, remaining: f64) -> RateWindow {
        RateWindow {
            label: "w".into(),
            period_seconds: Some(period),
            limit: Some(limit),
            remaining: Some(remaining),
            reset_seconds: None,
        }
    }

    #[test]
    fn only_a_long_window_with_little_left_is_a_nearly_spent_quota() {
        assert!(window(2_592_000, 15_000.0, 300.0).is_nearly_spent_quota());
        assert!(!window(2_592_000, 15_000.0, 301.0).is_nearly_spent_quota());
        assert!(
            window(86_400, 10.0, 1.0).is_nearly_spent_quota(),
            "at least one call"
        );
        assert!(
            !window(1, 1.0, 0.0).is_nearly_spent_quota(),
            "a per-second throttle"
        );
        let unknown = RateWindow {
            remaining: None,
            ..window(2_592_000, 15_000.0, 0.0)
        };
        assert!(!unknown.is_nearly_spent_quota());
    }

    #[test]
    fn the_board_answers_from_the_latest_report_of_each_key() {
        use crate::providers::keys::Fingerprint;
        use crate::providers::{ApiKey, ProviderKind};
        let key = |k: &str| KeyId::new(ProviderKind::Brave, Fingerprint::of(&ApiKey::new(k)));
        let board = QuotaBoard::default();
        assert!(!board.nearly_spent(&key("a")));
        board.update(&key("a"), vec![window(2_592_000, 100.0, 1.0)]);
        assert!(board.nearly_spent(&key("a")));
        assert!(!board.nearly_spent(&key("b")));
    }
}
