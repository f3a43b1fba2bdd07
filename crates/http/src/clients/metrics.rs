//! The per-client families: `client_requests_total{client}`, `client_premium_calls_total{client}`,
//! `client_premium_spend_usd_total{client}` and `client_rejections_total{client,reason}`. The `client` label is a name from
//! `API_KEYS_FILE` or `anonymous` — a closed set, rebuilt on each reload; the reasons are a closed
//! enum.

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

use super::ClientName;
use gateway_core::metrics::{label_value_as_str, Registry};

/// Why a request was refused before any search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Refusal {
    /// No key, or a key no client has: 401.
    Unauthorized,
    /// The client's bucket is empty: 429.
    RateLimited,
}

impl Refusal {
    /// The label value, which is also the JSON `error` code.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Unauthorized => "unauthorized",
            Self::RateLimited => "rate_limited",
        }
    }
}

label_value_as_str!(Refusal, ClientName);

/// `{client}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ClientLabels {
    client: ClientName,
}

/// `{client, reason}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RefusalLabels {
    client: ClientName,
    reason: Refusal,
}

/// The families. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct ClientMetrics {
    requests: Family<ClientLabels, Counter>,
    premium_calls: Family<ClientLabels, Counter>,
    premium_spend: Family<ClientLabels, Counter<f64, AtomicU64>>,
    refusals: Family<RefusalLabels, Counter>,
}

impl ClientMetrics {
    /// Registers the families on `registry`.
    pub(crate) fn new(registry: &mut Registry) -> Self {
        Self {
            requests: registry.registered(
                "client_requests",
                "Requests admitted on the search surfaces, by client (a configured name or anonymous)",
                Family::default(),
            ),
            premium_calls: registry.registered(
                "client_premium_calls",
                "Premium API calls made for a client's requests (charged to its daily budget)",
                Family::default(),
            ),
            premium_spend: registry.registered(
                "client_premium_spend_usd",
                "US dollars of premium calls made for a client's requests (charged to its daily budget)",
                Family::default(),
            ),
            refusals: registry.registered(
                "client_rejections",
                "Requests refused before any search, by client and reason (unauthorized, rate_limited)",
                Family::default(),
            ),
        }
    }

    /// Makes every series of `clients` exist from the first scrape (called at start and on reload).
    pub(crate) fn show(&self, clients: impl IntoIterator<Item = ClientName>) {
        for client in clients {
            let _ = self.requests.get_or_create(&ClientLabels {
                client: client.clone(),
            });
            let _ = self.premium_calls.get_or_create(&ClientLabels {
                client: client.clone(),
            });
            let _ = self.premium_spend.get_or_create(&ClientLabels {
                client: client.clone(),
            });
            for reason in [Refusal::Unauthorized, Refusal::RateLimited] {
                let _ = self.refusals.get_or_create(&RefusalLabels {
                    client: client.clone(),
                    reason,
                });
            }
        }
    }

    pub(crate) fn request(&self, client: &ClientName) {
        self.requests
            .get_or_create(&ClientLabels {
                client: client.clone(),
            })
            .inc();
    }

    pub(crate) fn premium_calls(&self, client: &ClientName, calls: u32, usd: f64) {
        let labels = ClientLabels {
            client: client.clone(),
        };
        self.premium_calls
            .get_or_create(&labels)
            .inc_by(u64::from(calls));
        if usd > 0.0 && usd.is_finite() {
            self.premium_spend.get_or_create(&labels).inc_by(usd);
        }
    }

    pub(crate) fn refused(&self, client: &ClientName, reason: Refusal) {
        self.refusals
            .get_or_create(&RefusalLabels {
                client: client.clone(),
                reason,
            })
            .inc();
    }
}
