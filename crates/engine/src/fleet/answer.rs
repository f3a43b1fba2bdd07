//! A miss across replicas (`REDIS_URL`): the shared answer tier below the local cache, and
//! coalescing of identical misses arriving at different replicas.
//!
//! A local miss first reads the shared tier (one round trip, which also brings the breaker boards
//! and the rotation counter): an answer another replica stored is served as a hit from the `redis`
//! tier and kept locally for what is left of its life. Otherwise the replica claims the query's
//! lease (`SET NX PX`): the winner fans out, renewing the lease while it works, stores the answer
//! with its TTL (complete answers `CACHE_TTL_SECONDS`, degraded ones at most 60 s, failures never;
//! Redis expires them) and releases the lease; the others poll for its answer. A follower whose
//! leader gives up or dies (no answer, no lease) claims the lease itself; one that has waited half
//! of its budget fans out on its own with what is left — never past its budget, never a deadlock.
//! Whenever Redis is unavailable, the miss is simply computed here.
//!
//! Values are versioned: a blob this build cannot read (another version's, damaged) is a miss,
//! counted as `unreadable`.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::{BufMut, Bytes, BytesMut};
use hyper::StatusCode;
use serde_json::value::RawValue;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::{breakers, quota, Fleet};
use crate::search::answer::FanOutResult;
use crate::search::fanout::run_admitted;
use crate::search::outcome::Outcome;
use crate::search::provider_rotation::Premium;
use crate::search::record::{FanOutRecord, RemoteFanOut};
use crate::search::upstreams::FanOutContext;
use crate::search::Answer;
use gateway_core::cache::{refresh_window, Computed, Keep, Lifetime};
use gateway_core::persist::unix_ms;
use gateway_core::request::{AnswerScope, CacheKey, SearchRequest};
use gateway_core::shared::{
    Board, Claim, FlightState, Lease, SharedLookup, SharedTier, StoredAnswer, LEASE_TTL,
    POLL_INTERVAL,
};

/// The first bytes of every answer blob, then its version.
const MAGIC: &[u8; 4] = b"sxgw";
/// The blob layout this build writes and reads (2: with the computing replica, when, and its
/// fan-out's record).
const VERSION: u8 = 2;
/// A follower fans out itself after waiting this share of its budget.
const FOLLOW_SHARE: u32 = 2;
/// Leases claimed in a row before a miss stops coordinating and fans out itself.
const MAX_CLAIMS: usize = 3;

/// Computes a miss: through the shared tier when there is one, else by a local fan-out. The key's
/// scope says whether the fan-out may call premium providers, so an answer is never stored under a
/// key whose scope it does not fit.
pub(crate) async fn compute(
    fleet: Arc<Fleet>,
    fanout: FanOutContext,
    req: SearchRequest,
    key: CacheKey,
) -> Computed<FanOutResult> {
    let premium = match key.scope() {
        AnswerScope::WithPremium => Premium::Allowed,
        AnswerScope::SearxngOnly => Premium::BudgetSpent,
    };
    let key = key.as_str();
    let started = Instant::now();
    let budget = fanout.settings.request_budget;
    let Some(tier) = fleet.tier() else {
        return run_admitted(fanout, req, budget, premium).await;
    };
    let mut boards = breakers::board_ids(&fanout);
    // Read with the breakers, taken apart from them.
    boards.push(Board::QuotaWindows);
    let rotate = fanout
        .premium
        .rotation
        .shares_counter(fanout.premium.providers.len());
    if let Some(mut read) = tier.read_miss(key, &boards, rotate).await {
        if let Some(windows) = read.boards.pop() {
            quota::adopt(&fanout.premium, &windows);
        }
        breakers::adopt(&fanout, tier, &read.boards).await;
        if let Some(counter) = read.rotation {
            fanout.premium.rotation.follow(counter);
        }
        // A complete answer about to expire is left to this miss to refresh (and share again), so
        // refresh-ahead of popular entries keeps working across replicas.
        let fresh = |stored: &StoredAnswer| stored.ttl > refresh_window(fanout.settings.cache_ttl);
        match read.answer {
            None => tier.count_lookup(SharedLookup::Miss),
            Some(stored) => match decode(&stored) {
                None => tier.count_lookup(SharedLookup::Unreadable),
                Some(hit) if fresh(&stored) || !is_complete(&hit) => {
                    tier.count_lookup(SharedLookup::Hit);
                    return hit;
                }
                Some(_) => tier.count_lookup(SharedLookup::Miss),
            },
        }
    }
    let give_up_at = started + budget / FOLLOW_SHARE;
    for _ in 0..MAX_CLAIMS {
        match tier.claim_lease(key).await {
            None => break,
            Some(Claim::Won(lease)) => {
                let left = budget.saturating_sub(started.elapsed());
                return lead(&fleet, fanout, req, key, lease, left, premium).await;
            }
            Some(Claim::Held) => match follow(tier, key, give_up_at).await {
                Followed::Answered(stored) => {
                    if let Some(answer) = decode(&stored) {
                        tier.count_coalesced();
                        return answer;
                    }
                    tier.count_lookup(SharedLookup::Unreadable);
                    break;
                }
                Followed::Abandoned => {}
                Followed::GaveUp => break,
            },
        }
    }
    let left = budget.saturating_sub(started.elapsed());
    let computed = run_admitted(fanout.clone(), req, left, premium).await;
    fleet.publish_breakers(&fanout).await;
    computed
}

/// Fans out holding `lease`, then shares the answer (or gives the lease up).
async fn lead(
    fleet: &Fleet,
    fanout: FanOutContext,
    req: SearchRequest,
    key: &str,
    lease: Lease,
    budget: Duration,
    premium: Premium,
) -> Computed<FanOutResult> {
    let Some(tier) = fleet.tier() else {
        return run_admitted(fanout, req, budget, premium).await;
    };
    let mut held = Held::new(tier, lease);
    let (result, keep) = run_admitted(fanout.clone(), req, budget, premium).await;
    fleet.publish_breakers(&fanout).await;
    fleet.publish_quota(&fanout).await;
    let lease = held.lease.take();
    let stored = match (&result, keep) {
        (Ok(answer), Keep::Complete(ttl)) => Some((encode(answer, true, tier.replica()), ttl)),
        (Ok(answer), Keep::Partial(ttl)) => Some((encode(answer, false, tier.replica()), ttl)),
        _ => None,
    };
    match (stored, lease) {
        (Some((blob, ttl)), lease) => tier.store_answer(key, blob, ttl, lease.as_ref()).await,
        (None, Some(lease)) => tier.release_lease(&lease).await,
        (None, None) => {}
    }
    (result, keep)
}

/// A lease held while fanning out: renewed in the background, released if the leader goes away
/// (its client hung up) before storing an answer.
struct Held {
    lease: Option<Lease>,
    tier: SharedTier,
    renewing: JoinHandle<()>,
}

impl Held {
    fn new(tier: &SharedTier, lease: Lease) -> Self {
        let renewing = {
            let (tier, lease) = (tier.clone(), lease.clone());
            tokio::spawn(async move {
                let mut every =
                    tokio::time::interval_at(Instant::now() + LEASE_TTL / 3, LEASE_TTL / 3);
                loop {
                    every.tick().await;
                    tier.renew_lease(&lease).await;
                }
            })
        };
        Self {
            lease: Some(lease),
            tier: tier.clone(),
            renewing,
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.renewing.abort();
        if let Some(lease) = self.lease.take() {
            let tier = self.tier.clone();
            tokio::spawn(async move { tier.release_lease(&lease).await });
        }
    }
}

enum Followed {
    Answered(StoredAnswer),
    Abandoned,
    GaveUp,
}

/// Waits for another replica's answer to `key` until `give_up_at`.
async fn follow(tier: &SharedTier, key: &str, give_up_at: Instant) -> Followed {
    loop {
        let now = Instant::now();
        if now >= give_up_at {
            return Followed::GaveUp;
        }
        tokio::time::sleep(POLL_INTERVAL.min(give_up_at - now)).await;
        match tier.poll_flight(key).await {
            None => return Followed::GaveUp,
            Some(FlightState::Answered(stored)) => return Followed::Answered(stored),
            Some(FlightState::Running) => {}
            Some(FlightState::Abandoned) => return Followed::Abandoned,
        }
    }
}

fn is_complete(computed: &Computed<FanOutResult>) -> bool {
    matches!(computed.1, Keep::Shared(Lifetime::Complete(_)))
}

/// The blob: magic, version, flags (bit 0: complete), status, outcome label, counts, who computed
/// it and when, its fan-out's record (JSON), the answer's JSON body.
fn encode(answer: &Answer, complete: bool, replica: &str) -> Bytes {
    let outcome = answer.outcome.as_str().as_bytes();
    let record = serde_json::to_vec(&answer.record).unwrap_or_else(|_| b"{}".to_vec());
    let replica = &replica.as_bytes()[..replica.len().min(usize::from(u8::MAX))];
    let computed_at_ms = unix_ms(SystemTime::now())
        .saturating_sub(u64::try_from(answer.computed_at.elapsed().as_millis()).unwrap_or(0));
    let mut blob = BytesMut::with_capacity(
        40 + outcome.len() + replica.len() + record.len() + answer.json.len(),
    );
    blob.put_slice(MAGIC);
    blob.put_u8(VERSION);
    blob.put_u8(u8::from(complete));
    blob.put_u16(answer.status.as_u16());
    blob.put_u8(u8::try_from(outcome.len()).unwrap_or(0));
    blob.put_slice(outcome);
    blob.put_u32(u32::try_from(answer.result_count).unwrap_or(u32::MAX));
    blob.put_u32(u32::try_from(answer.engine_count).unwrap_or(u32::MAX));
    blob.put_u8(u8::try_from(replica.len()).unwrap_or(0));
    blob.put_slice(replica);
    blob.put_u64(computed_at_ms);
    blob.put_u32(u32::try_from(record.len()).unwrap_or(0));
    blob.put_slice(&record);
    blob.put_slice(&answer.json);
    blob.freeze()
}

/// A stored answer as a shared hit, or `None` when this build cannot read it.
fn decode(stored: &StoredAnswer) -> Option<Computed<FanOutResult>> {
    let (answer, complete) = read_blob(&stored.blob)?;
    let lifetime = if complete {
        Lifetime::Complete(stored.ttl)
    } else {
        Lifetime::Partial(stored.ttl)
    };
    Some((Ok(Arc::new(answer)), Keep::Shared(lifetime)))
}

fn read_blob(blob: &Bytes) -> Option<(Answer, bool)> {
    let mut at = 0usize;
    let mut take = |n: usize| -> Option<Bytes> {
        let part = blob.get(at..at.checked_add(n)?)?;
        at += n;
        Some(blob.slice_ref(part))
    };
    if take(4)?.as_ref() != MAGIC || take(1)?[0] != VERSION {
        return None;
    }
    let complete = match take(1)?[0] {
        0 => false,
        1 => true,
        _ => return None,
    };
    let status = u16::from_be_bytes(take(2)?.as_ref().try_into().ok()?);
    let outcome_len = usize::from(take(1)?[0]);
    let outcome = std::str::from_utf8(&take(outcome_len)?)
        .ok()
        .and_then(Outcome::parse)?;
    let result_count = u32::from_be_bytes(take(4)?.as_ref().try_into().ok()?);
    let engine_count = u32::from_be_bytes(take(4)?.as_ref().try_into().ok()?);
    let replica_len = usize::from(take(1)?[0]);
    let replica = String::from_utf8(take(replica_len)?.to_vec()).ok()?;
    let computed_at_ms = u64::from_be_bytes(take(8)?.as_ref().try_into().ok()?);
    let record_len = u32::from_be_bytes(take(4)?.as_ref().try_into().ok()?) as usize;
    let record = serde_json::from_slice::<Box<RawValue>>(&take(record_len)?).ok()?;
    let json = blob.slice(at..);
    let status = match status {
        200 => StatusCode::OK,
        502 => StatusCode::BAD_GATEWAY,
        _ => return None,
    };
    if serde_json::from_slice::<serde::de::IgnoredAny>(&json).is_err() {
        return None;
    }
    Some((
        Answer {
            outcome,
            status,
            json,
            result_count: result_count as usize,
            engine_count: engine_count as usize,
            record: FanOutRecord::default(),
            computed_at: Instant::now(),
            remote: Some(Arc::new(RemoteFanOut {
                replica,
                computed_at_ms,
                record,
            })),
        },
        complete,
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn answer() -> Answer {
        Answer {
            outcome: Outcome::SearxngOk,
            status: StatusCode::OK,
            json: Bytes::from_static(br#"{"query":"q","results":[]}"#),
            result_count: 3,
            engine_count: 2,
            record: FanOutRecord::default(),
            computed_at: Instant::now(),
            remote: None,
        }
    }

    #[test]
    fn an_answer_reads_back_with_its_completeness() {
        for complete in [true, false] {
            let (back, was_complete) =
                read_blob(&encode(&answer(), complete, "replica-a")).unwrap();
            assert_eq!(was_complete, complete);
            assert_eq!(
                (
                    back.outcome,
                    back.status,
                    back.result_count,
                    back.engine_count
                ),
                (Outcome::SearxngOk, StatusCode::OK, 3, 2)
            );
            assert_eq!(back.json, answer().json);
            let remote = back.remote.expect("who computed it");
            assert_eq!(remote.replica, "replica-a");
            assert!(remote.computed_at_ms > 1_700_000_000_000);
            assert!(
                remote.record.get().starts_with("{\"calls\":[]"),
                "{}",
                remote.record
            );
        }
    }

    #[test]
    fn another_version_or_a_damaged_blob_is_unreadable() {
        let blob = encode(&answer(), true, "replica-a");
        let mut other = blob.to_vec();
        other[4] = VERSION + 1;
        assert!(read_blob(&Bytes::from(other)).is_none(), "another version");
        for cut in [0, 3, 5, 9, 20, blob.len() - 1] {
            assert!(read_blob(&blob.slice(..cut)).is_none(), "cut at {cut}");
        }
        assert!(read_blob(&Bytes::from_static(b"{\"results\":[]}")).is_none());
        let stored = StoredAnswer {
            blob: Bytes::from_static(b"garbage"),
            ttl: Duration::from_secs(1),
        };
        assert!(decode(&stored).is_none());
    }
}
