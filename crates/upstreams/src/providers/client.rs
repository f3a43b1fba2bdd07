//! A premium provider ready to be called for a search: its adapter plus everything needed to reach
//! it — the HTTP mechanics of each of its keys ([`KeyedHttp`]: origin + path + query, the key
//! where the adapter's `Auth` says, one timeout, the body cap; several keys are a pool, called in
//! turn: [`super::keys`]), metrics and logging.
//!
//! Secrets stay out of logs: no line here carries the key, a URL (a query string may hold the
//! user's search) or an upstream body; only the provider, status, class and timings.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::api::Adapter;
use super::http::KeyedHttp;
use super::keys::{Fingerprint, KeyId};
use super::metrics::{
    CallLabels, CallResult, KeyCallLabels, ProviderLabels, ProviderMetrics, WindowLabels,
};
use super::quota::{QuotaBoard, RateWindow};
use super::{ProviderAnswer, ProviderKind, ProviderSettings};
use gateway_core::request::SearchRequest;
use gateway_core::upstream::{ErrorClass, UpstreamError, UpstreamHttp};

/// One key of the provider's pool, with the HTTP mechanics that carry it.
struct PoolKey {
    id: KeyId,
    http: KeyedHttp,
}

/// A premium provider ready to be called.
pub struct ProviderClient {
    adapter: Box<dyn Adapter>,
    /// One key, or a pool; never empty.
    keys: Vec<PoolKey>,
    /// Where the next call starts in the pool.
    next_key: AtomicUsize,
    /// What a call costs when the provider does not say (`PREMIUM_PRICE_<NAME>`), in US dollars.
    usd_per_call: f64,
    metrics: ProviderMetrics,
    quota: QuotaBoard,
}

impl ProviderClient {
    /// A client for the provider `settings` describe, or `None` when it has no key (inactive).
    /// `http` is the upstream HTTP client.
    pub fn new(
        settings: &ProviderSettings,
        http: UpstreamHttp,
        metrics: ProviderMetrics,
        quota: QuotaBoard,
    ) -> Option<Self> {
        if settings.keys.is_empty() {
            return None;
        }
        let keys = settings
            .keys
            .iter()
            .map(|key| PoolKey {
                id: KeyId::new(settings.kind, Fingerprint::of(key)),
                http: KeyedHttp::new(
                    http.clone(),
                    settings.base_url.clone(),
                    settings.timeout,
                    key.clone(),
                ),
            })
            .collect();
        Some(Self {
            adapter: settings.kind.adapter(),
            keys,
            next_key: AtomicUsize::new(0),
            usd_per_call: settings.usd_per_call,
            metrics,
            quota,
        })
    }

    /// Which provider this client calls.
    pub fn kind(&self) -> ProviderKind {
        self.adapter.kind()
    }

    /// Its keys, by name, in the order configured.
    pub fn keys(&self) -> impl Iterator<Item = &KeyId> {
        self.keys.iter().map(|k| &k.id)
    }

    /// The key at `index` of the pool.
    pub fn key(&self, index: usize) -> &KeyId {
        &self.keys[index % self.keys.len()].id
    }

    /// The order in which one call tries the pool's keys: each call starts at the next key, so
    /// calls spread over every key (a key whose quota window is nearly spent goes last).
    pub fn key_order(&self) -> Vec<usize> {
        let len = self.keys.len();
        let start = self.next_key.fetch_add(1, Ordering::Relaxed) % len;
        let (mut order, spent): (Vec<usize>, Vec<usize>) = (0..len)
            .map(|i| (start + i) % len)
            .partition(|&i| !self.quota.nearly_spent(&self.keys[i].id));
        order.extend(spent);
        order
    }

    /// What a call costs when the provider does not say, in US dollars.
    pub fn usd_per_call(&self) -> f64 {
        self.usd_per_call
    }

    /// Whether every key's quota window is nearly spent (the rotation keeps such a provider for
    /// last).
    pub fn nearly_spent(&self) -> bool {
        self.keys.iter().all(|k| self.quota.nearly_spent(&k.id))
    }

    /// Calls the provider once for `req` with the key at `key` of the pool: results, empty, or a
    /// classified failure. Records `provider_calls_total`, `provider_key_calls_total`,
    /// `provider_duration_seconds`, `provider_results_total` and `provider_cost_dollars_total`.
    /// Dropping the future cancels the call.
    pub async fn search(
        &self,
        req: &SearchRequest,
        key: usize,
    ) -> Result<ProviderAnswer, UpstreamError> {
        let started = Instant::now();
        let mut status = None;
        let api_req = self.adapter.request(req);
        let pool_key = &self.keys[key % self.keys.len()];
        let mut result = match pool_key
            .http
            .call(self.adapter.auth(), &api_req, &mut status)
            .await
        {
            Ok(exchanged) => {
                self.observe_windows(&pool_key.id, self.adapter.rate_windows(&exchanged.headers));
                self.adapter
                    .interpret(exchanged.status, &exchanged.headers, &exchanged.body)
            }
            Err(err) => Err(err),
        };
        if let Ok(answer) = &mut result {
            answer.spend_usd = answer
                .cost_dollars
                .filter(|c| c.is_finite() && *c >= 0.0)
                .unwrap_or(self.usd_per_call);
        }
        self.record(&pool_key.id, &result, started.elapsed(), status);
        result
    }

    /// Keeps a key's windows for `/status`; Brave's also become the `brave_rate_limit_*` gauges.
    fn observe_windows(&self, key: &KeyId, windows: Vec<RateWindow>) {
        if self.kind() == ProviderKind::Brave {
            for window in &windows {
                let labels = WindowLabels {
                    window: window.label.clone(),
                    key: key.fingerprint().to_string(),
                };
                let gauges = [
                    (&self.metrics.brave_limit, window.limit),
                    (&self.metrics.brave_remaining, window.remaining),
                    (&self.metrics.brave_reset, window.reset_seconds),
                ];
                for (family, value) in gauges {
                    if let Some(value) = value {
                        family.get_or_create(&labels).set(value);
                    }
                }
            }
        }
        self.quota.update(key, windows);
    }

    fn record(
        &self,
        key: &KeyId,
        result: &Result<ProviderAnswer, UpstreamError>,
        elapsed: Duration,
        status: Option<u16>,
    ) {
        let provider = self.kind();
        let outcome = match result {
            Ok(answer) if answer.hits.is_empty() => CallResult::Empty,
            Ok(_) => CallResult::Ok,
            Err(err) => CallResult::Failed(err.class),
        };
        self.metrics
            .calls
            .get_or_create(&CallLabels { provider, outcome })
            .inc();
        self.metrics
            .key_calls
            .get_or_create(&KeyCallLabels {
                provider,
                key: key.fingerprint().to_string(),
                outcome,
            })
            .inc();
        let key = key.as_str();
        let labels = ProviderLabels { provider };
        self.metrics
            .duration
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
        let provider = provider.as_str();
        let elapsed_ms = elapsed.as_millis() as u64;
        match result {
            Ok(answer) => {
                self.metrics
                    .results
                    .get_or_create(&labels)
                    .inc_by(answer.hits.len() as u64);
                if let Some(cost) = answer.cost_dollars.filter(|c| c.is_finite() && *c >= 0.0) {
                    self.metrics.cost.get_or_create(&labels).inc_by(cost);
                }
                self.metrics
                    .spend
                    .get_or_create(&labels)
                    .inc_by(answer.spend_usd);
                tracing::debug!(
                    provider,
                    key,
                    status,
                    hits = answer.hits.len(),
                    elapsed_ms,
                    "provider answered"
                );
                if let Some(park) = &answer.park {
                    tracing::info!(provider, park = ?park, "provider answered but says its window or quota is spent");
                }
            }
            Err(err) if err.class == ErrorClass::BadRequest => {
                tracing::warn!(
                    provider,
                    status,
                    class = err.class.as_str(),
                    elapsed_ms,
                    "provider rejected the request as malformed: our request is wrong (a gateway bug, not an outage)"
                );
            }
            Err(err) => {
                tracing::warn!(
                    provider,
                    key,
                    status,
                    class = err.class.as_str(),
                    retry_after_secs = err.retry_after.map(|d| d.as_secs()),
                    elapsed_ms,
                    "provider call failed"
                );
            }
        }
    }
}

impl fmt::Debug for ProviderClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys: Vec<&str> = self.keys().map(KeyId::as_str).collect();
        f.debug_struct("ProviderClient")
            .field("kind", &self.kind())
            .field("keys", &keys)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::providers::ApiKey;
    use gateway_core::metrics::Registry;
    use std::time::Duration;
    use url::Url;

    fn client(kind: ProviderKind, key: Option<&str>) -> Option<ProviderClient> {
        let settings = ProviderSettings {
            kind,
            keys: key.map(ApiKey::new).into_iter().collect(),
            base_url: Url::parse("http://127.0.0.1:9/").unwrap(),
            timeout: Duration::from_secs(1),
            usd_per_call: 0.005,
        };
        ProviderClient::new(
            &settings,
            UpstreamHttp::new(1).unwrap(),
            ProviderMetrics::new(&mut Registry::new()),
            QuotaBoard::default(),
        )
    }

    #[test]
    fn a_pool_starts_each_call_at_the_next_key_and_keeps_a_nearly_spent_one_for_last() {
        let settings = ProviderSettings {
            kind: ProviderKind::Brave,
            keys: vec![ApiKey::new("k1"), ApiKey::new("k2"), ApiKey::new("k3")],
            base_url: Url::parse("http://127.0.0.1:9/").unwrap(),
            timeout: Duration::from_secs(1),
            usd_per_call: 0.005,
        };
        let quota = QuotaBoard::default();
        let c = ProviderClient::new(
            &settings,
            UpstreamHttp::new(1).unwrap(),
            ProviderMetrics::new(&mut Registry::new()),
            quota.clone(),
        )
        .unwrap();
        assert_eq!(c.keys().count(), 3);
        let orders: Vec<Vec<usize>> = (0..4).map(|_| c.key_order()).collect();
        assert_eq!(
            orders,
            [vec![0, 1, 2], vec![1, 2, 0], vec![2, 0, 1], vec![0, 1, 2]]
        );
        quota.update(
            c.key(1),
            vec![RateWindow {
                label: "month".into(),
                period_seconds: Some(2_592_000),
                limit: Some(2_000.0),
                remaining: Some(3.0),
                reset_seconds: None,
            }],
        );
        assert_eq!(c.key_order(), [2, 0, 1], "the nearly spent key last");
        assert!(!c.nearly_spent());
    }

    #[test]
    fn a_provider_without_a_key_has_no_client() {
        assert!(client(ProviderKind::Exa, None).is_none());
    }

    #[test]
    fn debug_output_never_shows_the_key() {
        let shown = format!(
            "{:?}",
            client(ProviderKind::Brave, Some("sekrit-123")).unwrap()
        );
        assert!(shown.contains("Brave"));
        assert!(!shown.contains("sekrit-123"));
    }

    #[test]
    fn the_url_is_the_configured_origin_plus_the_providers_path_and_query() {
        let brave = client(ProviderKind::Brave, Some("k")).unwrap();
        let url = brave.keys[0]
            .http
            .url(&brave.adapter.request(&SearchRequest::simple("rust async")));
        assert_eq!(
            url.origin(),
            Url::parse("http://127.0.0.1:9/").unwrap().origin()
        );
        assert_eq!(url.path(), "/res/v1/web/search");
        assert!(url.query().unwrap().contains("q=rust+async"));
        let jina = client(ProviderKind::Jina, Some("k")).unwrap();
        let url = jina.keys[0]
            .http
            .url(&jina.adapter.request(&SearchRequest::simple("x")));
        assert_eq!(url.as_str(), "http://127.0.0.1:9/");
    }

    #[test]
    fn the_key_goes_where_each_provider_declares_and_is_marked_sensitive() {
        let cases = [
            (ProviderKind::Brave, "x-subscription-token", "k-1"),
            (ProviderKind::Exa, "x-api-key", "k-1"),
            (ProviderKind::Jina, "authorization", "Bearer k-1"),
            (ProviderKind::Tavily, "authorization", "Bearer k-1"),
        ];
        for (kind, header, value) in cases {
            let c = client(kind, Some("k-1")).unwrap();
            let headers = c.keys[0]
                .http
                .headers(
                    c.adapter.auth(),
                    &c.adapter.request(&SearchRequest::simple("x")),
                )
                .unwrap();
            assert_eq!(headers[header], value, "{kind:?}");
            assert!(headers[header].is_sensitive(), "{kind:?}");
            let carrying_key = headers
                .values()
                .filter(|v| v.as_bytes().ends_with(b"k-1"))
                .count();
            assert_eq!(carrying_key, 1, "{kind:?}: the key travels once");
        }
    }

    #[test]
    fn a_key_that_cannot_be_a_header_is_an_auth_failure() {
        let c = client(ProviderKind::Exa, Some("bad\nkey")).unwrap();
        let err = c.keys[0]
            .http
            .headers(
                c.adapter.auth(),
                &c.adapter.request(&SearchRequest::simple("x")),
            )
            .unwrap_err();
        assert_eq!(err.class, ErrorClass::Auth);
    }

    #[test]
    fn brave_windows_become_gauges_and_status_facts() {
        let mut registry = Registry::new();
        let settings = ProviderSettings {
            kind: ProviderKind::Brave,
            keys: vec![ApiKey::new("k")],
            base_url: Url::parse("http://127.0.0.1:9/").unwrap(),
            timeout: Duration::from_secs(1),
            usd_per_call: 0.005,
        };
        let c = ProviderClient::new(
            &settings,
            UpstreamHttp::new(1).unwrap(),
            ProviderMetrics::new(&mut registry),
            QuotaBoard::default(),
        )
        .unwrap();
        let key = c.key(0).clone();
        c.observe_windows(
            &key,
            vec![RateWindow {
                label: "month".into(),
                period_seconds: Some(2_592_000),
                limit: Some(15000.0),
                remaining: Some(14321.0),
                reset_seconds: None,
            }],
        );
        assert_eq!(
            registry.sample(
                "brave_rate_limit_remaining",
                &[("window", "month"), ("key", &key.fingerprint().to_string())]
            ),
            Some(14321.0)
        );
        assert_eq!(
            registry.sample(
                "brave_rate_limit_reset_seconds",
                &[("window", "month"), ("key", &key.fingerprint().to_string())]
            ),
            None,
            "an unknown value creates no series"
        );
        assert_eq!(c.quota.windows(&key).len(), 1);
    }
}
