//! What providers say about their own limits, as facts: the rate-limit windows read from response
//! headers (Brave's `X-RateLimit-*`), kept per provider for `/status` and mirrored into the
//! `brave_rate_limit_*` gauges.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use super::ProviderKind;

/// One rate-limit window as the provider last reported it. A value is `None` when its header entry
/// was missing or unreadable: unknown, never zero.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RateWindow {
    /// `1s`, `month`, `w<secs>` from the policy, or the window's index when there is no policy.
    pub(crate) label: String,
    /// Requests allowed per window.
    pub(crate) limit: Option<f64>,
    /// Requests left in the window.
    pub(crate) remaining: Option<f64>,
    /// Seconds until the window resets.
    pub(crate) reset_seconds: Option<f64>,
}

/// The latest windows of every provider that reports them. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub(crate) struct QuotaBoard {
    windows: Arc<Mutex<BTreeMap<ProviderKind, Vec<RateWindow>>>>,
}

impl QuotaBoard {
    /// Replaces `provider`'s windows with the ones its latest response reported (no report keeps
    /// the previous ones: an error page without headers says nothing about the quota).
    pub(crate) fn update(&self, provider: ProviderKind, windows: Vec<RateWindow>) {
        if windows.is_empty() {
            return;
        }
        self.windows
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(provider, windows);
    }

    /// `provider`'s latest windows (empty when it never reported any).
    pub(crate) fn windows(&self, provider: ProviderKind) -> Vec<RateWindow> {
        self.windows
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&provider)
            .cloned()
            .unwrap_or_default()
    }
}
