//! [`Engine::status`]: the `/status` document assembled from the engine's parts, and
//! [`Engine::force_breaker`], the admin's switch over any breaker `/status` names.

use std::sync::Arc;
use std::time::Duration;

use super::Engine;
use crate::operator::capabilities::Capabilities;
use crate::operator::status::{self, BreakerStatus, KeyStatus, ProviderStatus, Status};
use gateway_core::breaker::{BreakerKind, BreakerState};
use gateway_core::request::ReadFormat;

impl Engine {
    /// Opens (`Some(period)`) or closes (`None`) every breaker `kind`/`name`, as `/status` names
    /// it — in a pool, an engine's or the cooldown's breaker on every instance that has one.
    /// `false` when no such breaker exists (a provider not configured, an engine never seen).
    pub fn force_breaker(&self, kind: BreakerKind, name: &str, open_for: Option<Duration>) -> bool {
        let mut breakers = self.inner.fanout.premium.breakers.all();
        breakers.extend(self.inner.fanout.premium.key_breakers.all());
        breakers.extend(self.inner.reading.reader_breakers().all());
        breakers.extend(self.inner.reading.host_breakers().all());
        breakers.extend(
            self.inner
                .reranking
                .as_ref()
                .map(|r| Arc::clone(r.breaker())),
        );
        for instance in self.inner.fanout.searxng.pool.instances() {
            breakers.push(Arc::clone(&instance.cooldown));
            breakers.extend(instance.engines.all());
        }
        let mut found = false;
        for breaker in breakers
            .iter()
            .filter(|b| b.kind() == kind && b.name() == name)
        {
            found = true;
            match open_for {
                Some(period) => breaker.force_open(period),
                None => breaker.force_close(),
            }
        }
        found
    }

    /// What this engine can do, as configured (`GET /v1/capabilities`).
    pub fn capabilities(&self) -> Capabilities {
        let inner = &self.inner;
        let instances = inner.fanout.searxng.pool.instances();
        let mut engines: Vec<String> = instances
            .iter()
            .flat_map(|instance| {
                instance
                    .engines
                    .all()
                    .iter()
                    .map(|b| b.name().to_owned())
                    .collect::<Vec<_>>()
            })
            .collect();
        engines.sort();
        engines.dedup();
        let settings = self.settings();
        Capabilities {
            searxng_instances: instances.len(),
            engines,
            premium_providers: settings
                .active_providers()
                .into_iter()
                .map(|kind| kind.as_str())
                .collect(),
            premium_readers: inner
                .reading
                .premium_readers()
                .into_iter()
                .map(|kind| kind.as_str())
                .collect(),
            read_formats: ReadFormat::ALL.map(ReadFormat::as_str),
            pdf: true,
            browser: inner.reading.renders(),
            reranker: inner.reranking.is_some(),
            passages: true,
            shared_tier: inner.fleet.tier().is_some(),
        }
    }

    /// The `/status` document.
    pub fn status(&self) -> Status {
        let inner = &self.inner;
        let premium = &inner.fanout.premium;
        let mut breakers: Vec<BreakerStatus> = premium
            .breakers
            .all()
            .iter()
            .chain(premium.key_breakers.all().iter())
            .map(|b| BreakerStatus::of(b))
            .collect();
        for instance in inner.fanout.searxng.pool.instances() {
            breakers.extend(instance.engines.all().iter().map(|b| BreakerStatus::of(b)));
        }
        breakers.extend(
            inner
                .reading
                .reader_breakers()
                .all()
                .iter()
                .map(|b| BreakerStatus::of(b)),
        );
        breakers.extend(
            inner
                .reranking
                .as_ref()
                .map(|r| BreakerStatus::of(r.breaker())),
        );
        // Hosts are many: only those not closed (open or probing) are listed.
        breakers.extend(
            inner
                .reading
                .host_breakers()
                .all()
                .iter()
                .filter(|b| b.state() != BreakerState::Closed)
                .map(|b| BreakerStatus::of(b)),
        );
        Status {
            breakers,
            providers: inner
                .settings
                .fallback_providers
                .iter()
                .map(|kind| {
                    // Inactive providers have no breakers: asking the boards would create some.
                    let client = premium.providers.iter().find(|p| p.kind() == *kind);
                    let keys: Vec<KeyStatus> = client
                        .into_iter()
                        .flat_map(|c| c.keys())
                        .map(|key| {
                            let breaker = premium.key_breakers.get(key);
                            KeyStatus {
                                key: key.fingerprint().to_string(),
                                state: breaker.state(),
                                quota_parked_for_seconds: ProviderStatus::quota_parked_for(
                                    &breaker,
                                ),
                                quota_windows: premium
                                    .quota
                                    .windows(key)
                                    .into_iter()
                                    .map(Into::into)
                                    .collect(),
                            }
                        })
                        .collect();
                    // Parked as a whole when every key is: until the first comes back.
                    let parked = keys
                        .iter()
                        .map(|k| k.quota_parked_for_seconds)
                        .collect::<Option<Vec<_>>>()
                        .and_then(|all| all.into_iter().min());
                    let spent = premium.spend.of_provider(*kind);
                    ProviderStatus {
                        name: *kind,
                        active: client.is_some(),
                        calls_last_24h: spent.calls,
                        usd_last_24h: spent.usd,
                        usd_per_1000_calls: inner
                            .settings
                            .provider(*kind)
                            .map_or(0.0, |p| p.usd_per_call * 1000.0),
                        quota_parked_for_seconds: parked,
                        quota_windows: keys
                            .first()
                            .map(|k| k.quota_windows.clone())
                            .unwrap_or_default(),
                        keys,
                    }
                })
                .collect(),
            premium_spend: status::SpendStatus {
                usd_last_24h: premium.spend.last_24h(),
                usd_per_day_cap: premium.spend.cap(),
                capped: premium.spend.capped(),
                prices_read_on: gateway_upstreams::providers::price::PRICES_READ_ON,
            },
            t1_premium_count: status::T1Status {
                effective: inner.settings.t1_premium_count,
                configured: inner.settings.t1_requested,
            },
            searxng: status::SearxngStatus::of(&inner.fanout.searxng.pool),
            cache: status::CacheStatus {
                size: inner.cache.len(),
                capacity: inner.settings.cache_size,
                bytes: inner.cache.weight(),
            },
            reads: status::ReadsStatus {
                premium_readers: inner.reading.premium_readers(),
                host_breakers_open: inner.reading.host_breakers().open_count(),
            },
            redis: inner.fleet.tier().map(|tier| status::RedisStatus {
                url: tier.url().to_owned(),
                connected: tier.is_connected(),
                replicas: tier.replicas(),
                replica: tier.replica().to_owned(),
            }),
        }
    }
}
