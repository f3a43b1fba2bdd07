//! The `/status` document as types, built from the engine's own state (breakers, the quota
//! windows providers reported, every SearXNG instance and its cooldown, the cache, the shared Redis tier) and serialized by the HTTP layer. Durations
//! are seconds rounded to the millisecond. Nothing secret: the SearXNG URL loses its credentials.

use std::time::Duration;

use serde::{Serialize, Serializer};

use crate::searxng_pool::SearxngPool;
use gateway_core::breaker::{Breaker, BreakerKind, BreakerState, Snapshot, TripReason};
use gateway_upstreams::providers::quota::RateWindow;
use gateway_upstreams::providers::readers::ReaderKind;
use gateway_upstreams::providers::ProviderKind;

/// The whole document.
#[derive(Debug, Serialize)]
pub struct Status {
    pub(crate) breakers: Vec<BreakerStatus>,
    pub(crate) providers: Vec<ProviderStatus>,
    /// What premium search calls cost the gateway in the last 24 h, and its cap.
    pub(crate) premium_spend: SpendStatus,
    /// `T1_PREMIUM_COUNT`: providers called alongside SearXNG on every miss.
    pub(crate) t1_premium_count: T1Status,
    pub(crate) searxng: SearxngStatus,
    pub(crate) cache: CacheStatus,
    /// Page reads: the premium readers in use and the hosts shut out.
    pub(crate) reads: ReadsStatus,
    /// The tier shared with other replicas: `null` when `REDIS_URL` is unset.
    pub(crate) redis: Option<RedisStatus>,
}

impl Status {
    /// The document as a client key reads it: the breakers of the hosts pages were read from are
    /// left out (which pages other clients read is theirs), their count stays in `reads`. The
    /// operator reads them through the admin token (`/admin/status`, `/ui`).
    pub fn without_hosts(mut self) -> Self {
        self.breakers
            .retain(|breaker| breaker.namespace != BreakerKind::Host);
        self
    }
}

/// The gateway's premium spend.
#[derive(Debug, Serialize)]
pub(crate) struct SpendStatus {
    /// US dollars spent in the last 24 h (every client, background refreshes included).
    pub(crate) usd_last_24h: f64,
    /// `PREMIUM_USD_PER_DAY` (`null`: no cap).
    pub(crate) usd_per_day_cap: Option<f64>,
    /// The cap is reached: SearXNG and the cache only, for everyone.
    pub(crate) capped: bool,
    /// When the default prices were read from the providers' price lists.
    pub(crate) prices_read_on: &'static str,
}

/// Page reads.
#[derive(Debug, Serialize)]
pub(crate) struct ReadsStatus {
    /// `READ_PROVIDERS` that have a key, in the order they are tried (empty: direct reads only).
    pub(crate) premium_readers: Vec<ReaderKind>,
    /// Hosts whose breaker is open now (each listed in `breakers`, namespace `host`).
    pub(crate) host_breakers_open: usize,
}

/// `T1_PREMIUM_COUNT` as set, and as it takes effect (at most the active providers: keyless, 0).
#[derive(Debug, Serialize)]
pub(crate) struct T1Status {
    pub(crate) effective: usize,
    pub(crate) configured: usize,
}

/// The shared Redis tier, as this replica sees it.
#[derive(Debug, Serialize)]
pub(crate) struct RedisStatus {
    /// `REDIS_URL`, password masked.
    pub(crate) url: String,
    /// Whether the last operation reached it (false: local tiers only until it returns).
    pub(crate) connected: bool,
    /// Replicas whose heartbeat it last showed, this one included: while Redis is away each
    /// takes `1/replicas` of every client limit.
    pub(crate) replicas: u64,
    /// This replica's id: what `explain` names as `computed_by` on another replica's hit.
    pub(crate) replica: String,
}

/// One breaker, as the operator's page shows it too. A provider's (namespace `provider`) is the
/// provider as a whole, derived from its own breaker and its keys' (`breaker::rollup`) — the
/// state its `circuit_breaker_state` series has.
#[derive(Debug, Serialize)]
pub(crate) struct BreakerStatus {
    pub(crate) namespace: BreakerKind,
    pub(crate) name: String,
    /// The SearXNG instance of a pool member's engine breaker.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) instance: Option<String>,
    /// A provider's: open while it is open itself or none of its keys is usable, with the reason
    /// and time left of whichever keeps it open.
    pub(crate) state: BreakerState,
    pub(crate) reason: Option<TripReason>,
    #[serde(serialize_with = "seconds")]
    pub(crate) open_for_seconds: Option<Duration>,
    pub(crate) trips: u64,
    pub(crate) consecutive_failures: u32,
}

impl BreakerStatus {
    pub(crate) fn of(breaker: &Breaker) -> Self {
        let snapshot = breaker.snapshot();
        Self {
            namespace: breaker.kind(),
            name: breaker.name().to_owned(),
            instance: breaker.instance().map(str::to_owned),
            state: snapshot.state,
            reason: snapshot.reason,
            open_for_seconds: snapshot.open_for,
            trips: snapshot.trips,
            consecutive_failures: snapshot.consecutive_failures,
        }
    }
}

/// One configured provider.
#[derive(Debug, Serialize)]
pub(crate) struct ProviderStatus {
    pub(crate) name: ProviderKind,
    /// It has a key.
    pub(crate) active: bool,
    /// Set while its quota is spent: parked until the provider's own reset (or, without one, for
    /// `QUOTA_PARK_SECONDS` between probes). Not called meanwhile.
    #[serde(serialize_with = "seconds")]
    pub(crate) quota_parked_for_seconds: Option<Duration>,
    /// The rate-limit windows its first key last reported (Brave), as reported (every key's are
    /// in `keys`).
    pub(crate) quota_windows: Vec<QuotaWindow>,
    /// Each of its keys, by fingerprint (the first 8 hex digits of the key's SHA-256).
    pub(crate) keys: Vec<KeyStatus>,
    /// What 1000 calls cost, in US dollars (`PREMIUM_PRICE_<NAME>`).
    pub(crate) usd_per_1000_calls: f64,
    /// Calls made to it in the last 24 h (every client, background refreshes included).
    pub(crate) calls_last_24h: u64,
    /// What they cost, in US dollars.
    pub(crate) usd_last_24h: f64,
}

/// One key of a provider's pool.
#[derive(Debug, Serialize)]
pub(crate) struct KeyStatus {
    /// The key's fingerprint.
    pub(crate) key: String,
    /// Its breaker's state (`open`: set aside).
    pub(crate) state: BreakerState,
    /// Set while its quota is spent.
    #[serde(serialize_with = "seconds")]
    pub(crate) quota_parked_for_seconds: Option<Duration>,
    /// The rate-limit windows it last reported.
    pub(crate) quota_windows: Vec<QuotaWindow>,
}

impl ProviderStatus {
    /// How long `breaker` stays parked for a spent quota, if that is why it is open.
    pub(crate) fn quota_parked_for(breaker: &Breaker) -> Option<Duration> {
        let snapshot = breaker.snapshot();
        match (snapshot.state, snapshot.reason) {
            (BreakerState::Open, Some(TripReason::Quota)) => snapshot.open_for,
            _ => None,
        }
    }
}

/// One rate-limit window.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct QuotaWindow {
    pub(crate) window: String,
    pub(crate) limit: Option<f64>,
    pub(crate) remaining: Option<f64>,
    pub(crate) reset_seconds: Option<f64>,
}

impl From<RateWindow> for QuotaWindow {
    fn from(w: RateWindow) -> Self {
        Self {
            window: w.label,
            limit: w.limit,
            remaining: w.remaining,
            reset_seconds: w.reset_seconds,
        }
    }
}

/// SearXNG: every instance, and the pool as a whole (with one instance, that instance).
#[derive(Debug, Serialize)]
pub(crate) struct SearxngStatus {
    /// Every configured URL, without credentials, comma-separated.
    pub(crate) url: String,
    /// The pool's cooldown: open only while every instance is cooling down (the shortest wait
    /// left), with the fewest consecutive failures and every instance's trips.
    pub(crate) cooldown: CooldownStatus,
    /// The fewest engines any instance's `/config` reported (0 until every one has answered).
    pub(crate) engines_known: usize,
    pub(crate) instances: Vec<InstanceStatus>,
}

/// One SearXNG instance.
#[derive(Debug, Serialize)]
pub(crate) struct InstanceStatus {
    /// Its name: the `searxng_instance` metric label of a pool member.
    pub(crate) name: String,
    pub(crate) url: String,
    /// Its cooldown's state: `open` while it is skipped.
    pub(crate) state: BreakerState,
    /// Attempts it is answering now.
    pub(crate) in_flight: usize,
    /// Its recent latency (an exponentially weighted mean of its attempts).
    #[serde(serialize_with = "seconds")]
    pub(crate) latency_seconds: Option<Duration>,
    pub(crate) cooldown: CooldownStatus,
    pub(crate) engines_known: usize,
    /// Engines whose breaker is open on this instance.
    pub(crate) excluded_engines: Vec<String>,
}

impl SearxngStatus {
    pub(crate) fn of(pool: &SearxngPool) -> Self {
        let instances: Vec<InstanceStatus> = pool
            .instances()
            .iter()
            .map(|instance| {
                let cooldown = CooldownStatus::of(&instance.cooldown.snapshot());
                InstanceStatus {
                    name: instance.name.clone(),
                    url: redact_url(&instance.url),
                    state: cooldown.state,
                    in_flight: instance.in_flight(),
                    latency_seconds: instance.latency(),
                    cooldown,
                    engines_known: instance.catalog.get().map_or(0, |c| c.len()),
                    excluded_engines: instance.excluded_engines(),
                }
            })
            .collect();
        let cooldowns: Vec<&CooldownStatus> = instances.iter().map(|i| &i.cooldown).collect();
        let state = cooldowns
            .iter()
            .map(|c| c.state)
            .min_by_key(|s| s.as_gauge())
            .unwrap_or(BreakerState::Closed);
        let cooldown = CooldownStatus {
            state,
            open_for_seconds: if state == BreakerState::Open {
                cooldowns.iter().filter_map(|c| c.open_for_seconds).min()
            } else {
                None
            },
            consecutive_failures: cooldowns
                .iter()
                .map(|c| c.consecutive_failures)
                .min()
                .unwrap_or(0),
            trips: cooldowns.iter().map(|c| c.trips).sum(),
        };
        Self {
            url: instances
                .iter()
                .map(|i| i.url.as_str())
                .collect::<Vec<_>>()
                .join(","),
            cooldown,
            engines_known: pool.engines_known(),
            instances,
        }
    }
}

/// A SearXNG cooldown.
#[derive(Debug, Serialize)]
pub(crate) struct CooldownStatus {
    pub(crate) state: BreakerState,
    #[serde(serialize_with = "seconds")]
    pub(crate) open_for_seconds: Option<Duration>,
    pub(crate) consecutive_failures: u32,
    pub(crate) trips: u64,
}

impl CooldownStatus {
    fn of(snapshot: &Snapshot) -> Self {
        Self {
            state: snapshot.state,
            open_for_seconds: snapshot.open_for,
            consecutive_failures: snapshot.consecutive_failures,
            trips: snapshot.trips,
        }
    }
}

/// The answer cache.
#[derive(Debug, Serialize)]
pub(crate) struct CacheStatus {
    pub(crate) size: usize,
    pub(crate) capacity: usize,
    /// The cached answers' JSON bytes.
    pub(crate) bytes: usize,
}

/// Seconds, rounded to the millisecond (no float noise in `/status`).
fn seconds<S: Serializer>(duration: &Option<Duration>, serializer: S) -> Result<S::Ok, S::Error> {
    duration
        .map(|d| (d.as_secs_f64() * 1000.0).round() / 1000.0)
        .serialize(serializer)
}

/// Every configured SearXNG URL without credentials, comma-separated, for the start-up log.
pub fn redact_urls(config: &crate::settings::EngineSettings) -> String {
    config
        .searxng
        .iter()
        .map(|backend| redact_url(&backend.url))
        .collect::<Vec<_>>()
        .join(",")
}

/// The URL without credentials, for `/status` and logs.
pub fn redact_url(url: &url::Url) -> String {
    let mut shown = url.clone();
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_seconds_rounded_to_the_millisecond() {
        let cooldown = CooldownStatus {
            state: BreakerState::Open,
            open_for_seconds: Some(Duration::from_nanos(12_898_372_952)),
            consecutive_failures: 0,
            trips: 1,
        };
        let json = serde_json::to_value(&cooldown).ok();
        assert_eq!(
            json.as_ref().and_then(|v| v.get("open_for_seconds")),
            Some(&serde_json::json!(12.898))
        );
        assert_eq!(
            json.and_then(|v| v.get("state").cloned()),
            Some(serde_json::json!("open"))
        );
    }

    #[test]
    fn credentials_never_leave_in_a_url() {
        let url = url::Url::parse("http://user:pw@searxng:8080/x").ok();
        assert_eq!(
            url.map(|u| redact_url(&u)).as_deref(),
            Some("http://searxng:8080/x")
        );
    }
}
