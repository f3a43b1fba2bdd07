//! `explain=1`: the answer's JSON with a top-level `gateway` object saying how it was produced —
//! the request ID and client, the outcome label, the cache (status, tier, and age on a hit),
//! whether the request was coalesced into another's fan-out, the premium budget, and the fan-out's
//! record ([`gateway_engine::search::record`]: every upstream call with its start offset, duration,
//! outcome and results; the engines excluded and why; the upstreams skipped and why; why the
//! fallback started; the budget used). Nothing in it comes from an upstream's body or a key.
//!
//! Only a request that asks pays for it: without `explain` the cached bytes go out untouched.

use std::sync::Arc;
use std::time::SystemTime;

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::server::kit::gate::{Admitted, PremiumRefusal};
use gateway_core::cache::{CacheStatus, CacheTier};
use gateway_core::persist::unix_ms;
use gateway_engine::read::passages::RankedBy;
use gateway_engine::read::PageRead;
use gateway_engine::search::record::RemoteFanOut;
use gateway_engine::search::{Answer, Outcome, Premium};
use gateway_engine::Served;

/// The query or form parameter.
pub(crate) const PARAMETER: &str = "explain";

/// Whether a query string asks for `explain`.
pub(crate) fn wanted_in_query(query: Option<&str>) -> Result<bool, &'static str> {
    let value = query.and_then(|q| {
        url::form_urlencoded::parse(q.as_bytes())
            .find(|(name, _)| name == PARAMETER)
            .map(|(_, value)| value.into_owned())
    });
    wanted(value.as_deref())
}

/// Reads the parameter's value: `1`/`true` asks, `0`/`false`/absent does not.
pub(crate) fn wanted(raw: Option<&str>) -> Result<bool, &'static str> {
    match raw.map(str::trim) {
        None | Some("" | "0" | "false") => Ok(false),
        Some("1" | "true") => Ok(true),
        Some(_) => Err("parameter explain must be 0 or 1"),
    }
}

/// The `gateway` object of one search, owned: what `explain=1` adds to its answer, and what the
/// operator's page keeps with each recent search ([`crate::server::operator::ui`]) to show when asked. Cheap to make
/// (a few small copies and the answer's `Arc`): every search makes one for the page, and only the
/// page's request for it pays for the JSON. The page's list keeps the last 50 answers alive that
/// way, cached or not (the bytes of 50 answers at most).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Explanation {
    request_id: String,
    client: String,
    #[serde(serialize_with = "label")]
    outcome: Outcome,
    cache: CacheShown,
    coalesced: bool,
    premium: PremiumExplained,
    fanout: FanOutShown,
}

/// The cache's part of an [`Explanation`]: its status, the tier it came from and how old it was
/// then; a stale answer's expiry; a shared hit's replica and time.
#[derive(Debug, Clone, Serialize)]
struct CacheShown {
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tier: Option<CacheTier>,
    #[serde(skip_serializing_if = "Option::is_none")]
    computed_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    computed_at_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    age_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expired_for_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    why: Option<&'static str>,
}

impl CacheShown {
    fn status(status: &'static str) -> Self {
        Self {
            status,
            tier: None,
            computed_by: None,
            computed_at_ms: None,
            age_ms: None,
            expired_for_ms: None,
            why: None,
        }
    }
}

/// The fan-out's record: this replica's (in the answer, shared), or the one another replica stored
/// with its answer.
#[derive(Debug, Clone)]
enum FanOutShown {
    Here(Arc<Answer>),
    Elsewhere(Arc<RemoteFanOut>),
}

impl Serialize for FanOutShown {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Here(answer) => answer.record.serialize(serializer),
            Self::Elsewhere(remote) => remote.serialize(serializer),
        }
    }
}

/// The premium budget's part of an [`Explanation`].
#[derive(Debug, Clone, Serialize)]
struct PremiumExplained {
    allowed: bool,
    reason: Option<&'static str>,
    calls_per_day: u32,
    charged: u32,
    charged_usd: f64,
}

/// An outcome as its label (`searxng_ok`).
fn label<S: serde::Serializer>(outcome: &Outcome, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(outcome.as_str())
}

fn millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl Explanation {
    /// How `served` was produced for `admitted`.
    pub(crate) fn of(served: &Served, admitted: &Admitted) -> Self {
        let answer = &served.answer;
        let cache = match served.cache {
            CacheStatus::Hit => CacheShown {
                tier: served.cache.tier(),
                age_ms: Some(millis(answer.computed_at.elapsed())),
                ..CacheShown::status("hit")
            },
            CacheStatus::Stale { expired_for } => CacheShown {
                tier: Some(CacheTier::Local),
                age_ms: Some(millis(answer.computed_at.elapsed())),
                expired_for_ms: Some(millis(expired_for)),
                why: Some("every upstream failed: the last complete answer"),
                ..CacheShown::status("stale")
            },
            // Another replica's answer, through the shared Redis tier: who computed it and when
            // (its record is the fan-out below).
            CacheStatus::SharedHit => match &answer.remote {
                Some(remote) => CacheShown {
                    tier: served.cache.tier(),
                    computed_by: Some(remote.replica.clone()),
                    computed_at_ms: Some(remote.computed_at_ms),
                    age_ms: Some(unix_ms(SystemTime::now()).saturating_sub(remote.computed_at_ms)),
                    ..CacheShown::status("hit")
                },
                None => CacheShown {
                    tier: served.cache.tier(),
                    ..CacheShown::status("hit")
                },
            },
            CacheStatus::Miss => CacheShown::status("miss"),
        };
        Self {
            request_id: admitted.request_id.as_str().to_owned(),
            client: admitted.caller.name.as_str().to_owned(),
            outcome: served.outcome,
            cache,
            coalesced: served.coalesced,
            premium: PremiumExplained {
                allowed: admitted.premium == Premium::Allowed,
                reason: admitted.refusal.map(PremiumRefusal::reason),
                calls_per_day: admitted.caller.premium_calls_per_day,
                charged: served.premium_calls,
                charged_usd: served.premium_spend_usd,
            },
            fanout: match &answer.remote {
                Some(remote) => FanOutShown::Elsewhere(Arc::clone(remote)),
                None => FanOutShown::Here(Arc::clone(answer)),
            },
        }
    }

    /// As the JSON object `explain=1` adds.
    pub(crate) fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// The `gateway` object for this request.
pub(crate) fn object(served: &Served, admitted: &Admitted) -> Value {
    Explanation::of(served, admitted).to_value()
}

/// The `gateway` object of one page read: how it was answered (the cache, who read it, the direct
/// read and the premium readers tried, with their outcomes and times), and the premium budget.
pub(crate) fn read_object(read: &PageRead, admitted: &Admitted) -> Value {
    let (outcome, source, record) = match &read.result {
        Ok(done) => ("ok", Value::from(done.source.as_str()), &done.record),
        Err(failed) => (failed.failure.code(), Value::Null, &failed.record),
    };
    let cache = match read.cache {
        CacheStatus::Hit | CacheStatus::SharedHit => {
            json!({"status": "hit", "tier": read.cache.tier()})
        }
        CacheStatus::Stale { expired_for } => json!({
            "status": "stale",
            "expired_for_ms": u64::try_from(expired_for.as_millis()).unwrap_or(u64::MAX),
            "why": "every read failed: the last page read",
        }),
        CacheStatus::Miss => json!({"status": "miss"}),
    };
    json!({
        "request_id": admitted.request_id.as_str(),
        "client": admitted.caller.name.as_str(),
        "outcome": outcome,
        "source": source,
        "cache": cache,
        "premium": {
            "allowed": admitted.premium == Premium::Allowed,
            "reason": admitted.refusal.map(PremiumRefusal::reason),
            "charged": read.premium_calls,
        },
        "read": &**record,
    })
}

/// Which ranking chose a page's passages, for the `passages` of a read's `gateway` object:
/// `{"ranked_by": "lexical" | "reranker" | "lexical_fallback", "fallback": why | null}` (why: the
/// reranker's breaker open, or the class of its failure: `timeout`, `malformed`, ...).
pub(crate) fn passages_object(by: RankedBy) -> Value {
    json!({
        "ranked_by": by.as_str(),
        "fallback": by.fallback().map(|why| why.as_str()),
    })
}

/// `document` (a JSON object's bytes) with `gateway` added at the top level; the bytes unchanged
/// when they are not an object.
pub(crate) fn add_to(document: &[u8], gateway: Value) -> Vec<u8> {
    match serde_json::from_slice::<Map<String, Value>>(document) {
        Ok(mut map) => {
            map.insert("gateway".to_owned(), gateway);
            serde_json::to_vec(&map).unwrap_or_else(|_| document.to_vec())
        }
        Err(_) => document.to_vec(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn explain_is_asked_by_1_or_true_and_junk_is_refused() {
        assert_eq!(wanted(None), Ok(false));
        assert_eq!(wanted(Some("0")), Ok(false));
        assert_eq!(wanted(Some("1")), Ok(true));
        assert_eq!(wanted(Some("true")), Ok(true));
        assert!(wanted(Some("yes please")).is_err());
    }

    #[test]
    fn the_object_is_added_at_the_top_level_keeping_the_rest() {
        let out = add_to(
            br#"{"query":"q","results":[]}"#,
            json!({"outcome": "searxng_ok"}),
        );
        let doc: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(doc["query"], "q");
        assert_eq!(doc["gateway"]["outcome"], "searxng_ok");
        assert_eq!(add_to(b"[1]", json!({})), b"[1]");
    }
}
