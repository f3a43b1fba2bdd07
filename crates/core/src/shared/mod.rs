//! The shared tier: what several gateway replicas learn together through one Redis or Valkey
//! (`REDIS_URL`). This module owns the connection, the key layout ([`keys`]), the health of the
//! link and the typed operations the pipeline uses — read a miss's answer and the breaker boards,
//! claim / renew / release a computation's lease, poll a flight, store an answer, publish breaker
//! transitions, claim a shared probe, advance the rotation counter — and the clients' fleet-wide
//! limits ([`limits`]: a rate, a premium spend, the replicas' heartbeats). Values are bytes here: what
//! they mean (the versioned answer blob, a breaker record) belongs to the pipeline.
//!
//! Redis is never on the critical path of an answer:
//! - every round trip is bounded by `REDIS_TIMEOUT_MS` (a `tokio` timeout around the client);
//! - a timeout or an error marks Redis unavailable: every operation is then skipped at once (the
//!   pipeline uses its local tiers) until a background ping, once a second, reaches it again;
//! - each change of state is logged once (`redis unavailable` / `redis reachable`), and a
//!   reconnection bumps [`SharedTier::epoch`] so the pipeline republishes what it knows.
//!
//! How the servers are reached — one server, a Cluster, a master found through Sentinel — is
//! [`link`]'s business; nothing here speaks the protocol by hand.

mod jobs;
mod keys;
mod limits;
mod link;
mod metrics;
pub(crate) mod settings;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use redis::{FromRedisValue, Pipeline};
use tracing::field::Empty;
use tracing::Instrument;

pub use jobs::{
    counter, FrontierEntry, FrontierTake, HandIn, HostLimits, HostTurn, JobCreate, JobEnd, NewUrl,
    ReadDone,
};
pub use keys::Board;
pub use metrics::{SharedLookup, SharedMetrics};

use crate::trace::{SpanError, TARGET};
use keys::Keys;
use link::Link;
use metrics::{LookupLabels, OpResult, Operation, OperationLabels};
pub use settings::RedisSettings;

/// How long a computation's lease lives without renewal: a leader that dies is replaced this
/// soon. The leader renews it every third of it.
pub const LEASE_TTL: Duration = Duration::from_millis(1500);
/// How often a follower looks for the leader's answer.
pub const POLL_INTERVAL: Duration = Duration::from_millis(15);
/// How often the background ping runs (and so how soon a returning Redis is used again).
pub const PING_INTERVAL: Duration = Duration::from_secs(1);
/// The background ping's own bound: off the request path, so it may wait for a (TLS) connect.
const PING_TIMEOUT: Duration = Duration::from_secs(1);

/// Releases a lease only if this replica still holds it (the token matches).
const RELEASE_IF_OWNER: &str =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";
/// Extends a lease only if this replica still holds it.
const RENEW_IF_OWNER: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0";

/// Whether Redis answered lately.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Health {
    /// Not asked yet.
    Unknown,
    /// The last operation reached it.
    Up,
    /// The last operation failed; operations are skipped until the background ping succeeds.
    Down,
}

/// A stored answer as read back: the blob and what is left of its life.
#[derive(Debug, Clone)]
pub struct StoredAnswer {
    /// The versioned blob, as the pipeline wrote it.
    pub blob: Bytes,
    /// Its remaining time to live in Redis.
    pub ttl: Duration,
}

/// What the first read of a miss found.
#[derive(Debug, Default)]
pub struct MissRead {
    /// The answer another replica stored, if any.
    pub answer: Option<StoredAnswer>,
    /// Each board asked for, in order: name → record.
    pub boards: Vec<HashMap<String, Bytes>>,
    /// The rotation counter after this request's increment, when asked for.
    pub rotation: Option<u64>,
}

/// A held lease: this replica computes the answer; followers elsewhere wait for it.
#[derive(Debug, Clone)]
pub struct Lease {
    key: String,
    token: String,
}

/// What claiming a lease found.
#[derive(Debug)]
pub enum Claim {
    /// This replica leads.
    Won(Lease),
    /// Another replica computes it now.
    Held,
}

/// What a follower's poll found.
#[derive(Debug)]
pub enum FlightState {
    /// The leader's answer.
    Answered(StoredAnswer),
    /// Still computing.
    Running,
    /// No answer and no lease: the leader gave up (a failure is never stored) or died.
    Abandoned,
}

/// The handle to the shared tier. Cheap to clone.
#[derive(Clone)]
pub struct SharedTier {
    inner: Arc<Inner>,
}

struct Inner {
    link: Link,
    keys: Keys,
    timeout: Duration,
    /// Shown in `/status` (password masked).
    url: String,
    /// This process's lease tokens start with it.
    replica: String,
    next_token: AtomicU64,
    health: Mutex<Health>,
    /// Bumped each time Redis becomes reachable (again).
    epoch: AtomicU64,
    /// Replicas that sent a heartbeat lately, this one included (0: not known yet).
    replicas: AtomicU64,
    metrics: SharedMetrics,
}

impl std::fmt::Debug for SharedTier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedTier")
            .field("url", &self.inner.url)
            .finish_non_exhaustive()
    }
}

/// Why the shared tier could not be set up (a URL the client library refuses).
#[derive(Debug, thiserror::Error)]
#[error("REDIS_URL is not usable by the Redis client: {0}")]
pub struct SetupError(String);

impl SharedTier {
    /// The tier for `settings`. Connects lazily: nothing is awaited here, and a Redis that is
    /// down at start-up is simply unavailable until it answers a ping.
    pub fn new(settings: &RedisSettings, metrics: SharedMetrics) -> Result<Self, SetupError> {
        let link = Link::new(&settings.topology, PING_TIMEOUT)
            .map_err(|e| SetupError(format!("{:?}", e.kind())))?;
        metrics.connected.set(0);
        Ok(Self {
            inner: Arc::new(Inner {
                link,
                keys: Keys::new(&settings.key_prefix),
                timeout: settings.timeout,
                url: settings.shown.clone(),
                replica: format!("{:016x}", rand::random::<u64>()),
                next_token: AtomicU64::new(0),
                health: Mutex::new(Health::Unknown),
                epoch: AtomicU64::new(0),
                replicas: AtomicU64::new(0),
                metrics,
            }),
        })
    }

    /// `REDIS_URL` with its password masked.
    pub fn url(&self) -> &str {
        &self.inner.url
    }

    /// This process's id among the replicas (lease tokens and probe claims carry it; stored
    /// answers name it as the replica that computed them).
    pub fn replica(&self) -> &str {
        &self.inner.replica
    }

    /// Whether the last operation reached Redis.
    pub fn is_connected(&self) -> bool {
        *self.health() == Health::Up
    }

    /// Bumped each time Redis becomes reachable: what was published before may be gone.
    pub fn epoch(&self) -> u64 {
        self.inner.epoch.load(Ordering::Acquire)
    }

    /// Counts what the shared answer tier found for a local miss.
    pub fn count_lookup(&self, result: SharedLookup) {
        self.inner
            .metrics
            .lookups
            .get_or_create(&LookupLabels { result })
            .inc();
    }

    /// Counts a miss answered by another replica's computation.
    pub fn count_coalesced(&self) {
        self.inner.metrics.coalesced.inc();
    }

    fn health(&self) -> std::sync::MutexGuard<'_, Health> {
        self.inner
            .health
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Sets the health, logging and counting each change once.
    fn set_health(&self, now: Health) {
        let before = std::mem::replace(&mut *self.health(), now);
        if before == now {
            return;
        }
        self.inner
            .metrics
            .connected
            .set(i64::from(now == Health::Up));
        match now {
            Health::Up => {
                self.inner.epoch.fetch_add(1, Ordering::AcqRel);
                tracing::info!(redis = %self.inner.url, "redis reachable: sharing with other replicas");
            }
            Health::Down => tracing::warn!(
                redis = %self.inner.url,
                "redis unavailable: answering from local tiers only until it returns"
            ),
            Health::Unknown => {}
        }
    }

    /// One round trip of `pipe`, bounded by `timeout`, counted and traced. `None` when Redis is
    /// unavailable, slow or refused it; the caller then goes on without the shared tier.
    async fn run<T: FromRedisValue + Send>(
        &self,
        operation: Operation,
        pipe: &Pipeline,
        timeout: Duration,
    ) -> Option<T> {
        self.bounded(operation, timeout, self.inner.link.query::<T>(pipe))
            .await
    }

    /// [`SharedTier::run`] for an operation made of `parts` of one hash slot each (see
    /// [`Link::query_parts`]): their replies in order, as from one pipeline.
    async fn run_parts(
        &self,
        operation: Operation,
        parts: &[Pipeline],
        timeout: Duration,
    ) -> Option<Vec<redis::Value>> {
        self.bounded(operation, timeout, self.inner.link.query_parts(parts))
            .await
    }

    /// Runs `query` unless Redis counts as unavailable (the background ping always runs), bounded
    /// by `timeout`; counts, traces and judges the health by its outcome.
    async fn bounded<T>(
        &self,
        operation: Operation,
        timeout: Duration,
        query: impl std::future::Future<Output = redis::RedisResult<T>>,
    ) -> Option<T> {
        let background = operation == Operation::Ping;
        if !background && *self.health() == Health::Down {
            self.count(operation, OpResult::Skipped);
            return None;
        }
        let span = tracing::info_span!(target: TARGET, "redis", operation = operation.as_str(), result = Empty);
        let reply = tokio::time::timeout(timeout, query)
            .instrument(span.clone())
            .await;
        let (result, value) = match reply {
            Ok(Ok(value)) => (OpResult::Ok, Some(value)),
            Ok(Err(error)) => {
                tracing::debug!(operation = operation.as_str(), kind = ?error.kind(), "redis operation failed");
                (OpResult::Error, None)
            }
            Err(_) => (OpResult::Timeout, None),
        };
        span.record("result", result.as_str());
        if result != OpResult::Ok {
            crate::trace::record_error(&span, SpanError::Redis(result.as_str()));
        }
        self.count(operation, result);
        self.set_health(if value.is_some() {
            Health::Up
        } else {
            Health::Down
        });
        value
    }

    fn count(&self, operation: Operation, result: OpResult) {
        self.inner
            .metrics
            .operations
            .get_or_create(&OperationLabels { operation, result })
            .inc();
    }

    /// The miss path's one read: the answer under `cache_key`, each of `boards`, and — when
    /// `rotate` — the rotation counter, incremented. One round trip.
    pub async fn read_miss(
        &self,
        cache_key: &str,
        boards: &[Board<'_>],
        rotate: bool,
    ) -> Option<MissRead> {
        let keys = &self.inner.keys;
        let answer = keys.answer(cache_key);
        // One part per hash slot: the answer, each board, the counter (one pipeline on one server).
        let mut parts = Vec::with_capacity(2 + boards.len());
        let mut pipe = redis::pipe();
        pipe.cmd("GET").arg(&answer).cmd("PTTL").arg(&answer);
        parts.push(pipe);
        for board in boards {
            let mut pipe = redis::pipe();
            pipe.cmd("HGETALL").arg(keys.board(*board));
            parts.push(pipe);
        }
        if rotate {
            let mut pipe = redis::pipe();
            pipe.cmd("INCR").arg(keys.rotation());
            parts.push(pipe);
        }
        let mut replies = self
            .run_parts(Operation::Read, &parts, self.inner.timeout)
            .await?
            .into_iter();
        let blob: Option<Vec<u8>> = parse(replies.next())?;
        let ttl: i64 = parse(replies.next())?;
        let mut read = MissRead {
            answer: stored(blob, ttl),
            ..MissRead::default()
        };
        for _ in boards {
            let board: HashMap<String, Vec<u8>> = parse(replies.next())?;
            read.boards.push(
                board
                    .into_iter()
                    .map(|(k, v)| (k, Bytes::from(v)))
                    .collect(),
            );
        }
        if rotate {
            read.rotation = parse(replies.next());
        }
        Some(read)
    }

    /// Claims the computation of `cache_key` (`SET NX PX`). `None`: Redis unavailable.
    pub async fn claim_lease(&self, cache_key: &str) -> Option<Claim> {
        let key = self.inner.keys.lease(cache_key);
        let token = format!(
            "{}:{}",
            self.inner.replica,
            self.inner.next_token.fetch_add(1, Ordering::Relaxed)
        );
        let mut pipe = redis::pipe();
        pipe.cmd("SET")
            .arg(&key)
            .arg(&token)
            .arg("NX")
            .arg("PX")
            .arg(millis(LEASE_TTL));
        let (set,): (Option<String>,) = self
            .run(Operation::LeaseClaim, &pipe, self.inner.timeout)
            .await?;
        Some(match set {
            Some(_) => Claim::Won(Lease { key, token }),
            None => Claim::Held,
        })
    }

    /// Extends `lease` by another [`LEASE_TTL`] if it is still ours.
    pub async fn renew_lease(&self, lease: &Lease) {
        let mut pipe = redis::pipe();
        pipe.cmd("EVAL")
            .arg(RENEW_IF_OWNER)
            .arg(1)
            .arg(&lease.key)
            .arg(&lease.token)
            .arg(millis(LEASE_TTL))
            .ignore();
        let _: Option<()> = self
            .run(Operation::LeaseRenew, &pipe, self.inner.timeout)
            .await;
    }

    /// Where the computation of `cache_key` stands.
    pub async fn poll_flight(&self, cache_key: &str) -> Option<FlightState> {
        let keys = &self.inner.keys;
        let answer = keys.answer(cache_key);
        let mut pipe = redis::pipe();
        pipe.cmd("GET")
            .arg(&answer)
            .cmd("PTTL")
            .arg(&answer)
            .cmd("EXISTS")
            .arg(keys.lease(cache_key));
        let (blob, ttl, leased): (Option<Vec<u8>>, i64, bool) = self
            .run(Operation::FlightPoll, &pipe, self.inner.timeout)
            .await?;
        Some(match stored(blob, ttl) {
            Some(answer) => FlightState::Answered(answer),
            None if leased => FlightState::Running,
            None => FlightState::Abandoned,
        })
    }

    /// Stores `blob` under `cache_key` for `ttl` (Redis expires it) and releases `lease`, in one
    /// round trip.
    pub async fn store_answer(
        &self,
        cache_key: &str,
        blob: Bytes,
        ttl: Duration,
        lease: Option<&Lease>,
    ) {
        let mut pipe = redis::pipe();
        pipe.cmd("SET")
            .arg(self.inner.keys.answer(cache_key))
            .arg(blob.as_ref())
            .arg("PX")
            .arg(millis(ttl).max(1))
            .ignore();
        if let Some(lease) = lease {
            release(&mut pipe, lease);
        }
        let _: Option<()> = self
            .run(Operation::AnswerWrite, &pipe, self.inner.timeout)
            .await;
    }

    /// The page another replica stored under `page_key`, with its remaining lifetime.
    pub async fn read_page(&self, page_key: &str) -> Option<StoredAnswer> {
        let mut pipe = redis::pipe();
        let key = self.inner.keys.page(page_key);
        pipe.cmd("GET").arg(&key).cmd("PTTL").arg(&key);
        let (blob, ttl): (Option<Vec<u8>>, i64) = self
            .run(Operation::PageRead, &pipe, self.inner.timeout)
            .await?;
        stored(blob, ttl)
    }

    /// Stores a page read here under `page_key` for `ttl` (Redis expires it).
    pub async fn store_page(&self, page_key: &str, blob: Bytes, ttl: Duration) {
        let mut pipe = redis::pipe();
        pipe.cmd("SET")
            .arg(self.inner.keys.page(page_key))
            .arg(blob.as_ref())
            .arg("PX")
            .arg(millis(ttl).max(1))
            .ignore();
        let _: Option<()> = self
            .run(Operation::PageWrite, &pipe, self.inner.timeout)
            .await;
    }

    /// Stores the MCP authorization record `id` (a client registration, a code, a token; the
    /// caller names secrets by their digest) for `ttl`. Whether Redis took it.
    pub async fn store_grant(&self, id: &str, blob: &[u8], ttl: Duration) -> bool {
        let mut pipe = redis::pipe();
        pipe.cmd("SET")
            .arg(self.inner.keys.grant(id))
            .arg(blob)
            .arg("PX")
            .arg(millis(ttl).max(1))
            .ignore();
        self.run::<()>(Operation::GrantWrite, &pipe, self.inner.timeout)
            .await
            .is_some()
    }

    /// The MCP authorization record `id`; `None` when there is none or Redis is away.
    pub async fn read_grant(&self, id: &str) -> Option<Bytes> {
        let mut pipe = redis::pipe();
        pipe.cmd("GET").arg(self.inner.keys.grant(id));
        let (blob,): (Option<Vec<u8>>,) = self
            .run(Operation::GrantRead, &pipe, self.inner.timeout)
            .await?;
        blob.map(Bytes::from)
    }

    /// Takes the MCP authorization record `id` (`GETDEL`): of replicas racing for a single-use
    /// code or refresh token, one gets it.
    pub async fn take_grant(&self, id: &str) -> Option<Bytes> {
        let mut pipe = redis::pipe();
        pipe.cmd("GETDEL").arg(self.inner.keys.grant(id));
        let (blob,): (Option<Vec<u8>>,) = self
            .run(Operation::GrantRead, &pipe, self.inner.timeout)
            .await?;
        blob.map(Bytes::from)
    }

    /// Deletes the MCP authorization record `id`.
    pub async fn delete_grant(&self, id: &str) {
        let mut pipe = redis::pipe();
        pipe.cmd("DEL").arg(self.inner.keys.grant(id)).ignore();
        let _: Option<()> = self
            .run(Operation::GrantWrite, &pipe, self.inner.timeout)
            .await;
    }

    /// Gives `lease` up without an answer: followers elsewhere stop waiting and compute.
    pub async fn release_lease(&self, lease: &Lease) {
        let mut pipe = redis::pipe();
        release(&mut pipe, lease);
        let _: Option<()> = self
            .run(Operation::LeaseRelease, &pipe, self.inner.timeout)
            .await;
    }

    /// Writes `changes` to `board`: a record (open) or `None` (closed: the field is deleted).
    /// Returns whether Redis took them.
    pub async fn write_board(&self, board: Board<'_>, changes: &[(String, Option<Bytes>)]) -> bool {
        let key = self.inner.keys.board(board);
        let mut pipe = redis::pipe();
        for (name, record) in changes {
            match record {
                Some(record) => pipe
                    .cmd("HSET")
                    .arg(&key)
                    .arg(name)
                    .arg(record.as_ref())
                    .ignore(),
                None => pipe.cmd("HDEL").arg(&key).arg(name).ignore(),
            };
        }
        self.run::<()>(Operation::BreakerWrite, &pipe, self.inner.timeout)
            .await
            .is_some()
    }

    /// Claims the one probe of `name`'s open period ending at `until_ms` on `board`, for `hold`.
    /// `Some(true)`: this replica probes (it won the claim now or earlier: its own breaker then
    /// admits the one probe); `Some(false)`: another replica does; `None`: unavailable.
    pub async fn claim_probe(
        &self,
        board: Board<'_>,
        name: &str,
        until_ms: u64,
        hold: Duration,
    ) -> Option<bool> {
        let key = self.inner.keys.probe(board, name, until_ms);
        let mut pipe = redis::pipe();
        pipe.cmd("SET")
            .arg(&key)
            .arg(&self.inner.replica)
            .arg("NX")
            .arg("PX")
            .arg(millis(hold).max(1))
            .ignore()
            .cmd("GET")
            .arg(&key);
        let (holder,): (Option<String>,) = self
            .run(Operation::ProbeClaim, &pipe, self.inner.timeout)
            .await?;
        Some(holder.as_deref() == Some(self.inner.replica.as_str()))
    }

    /// One background reachability check: keeps the link's state (and the `redis_connected`
    /// gauge) following Redis with no traffic, and brings a returning Redis back into use. Call it
    /// every [`PING_INTERVAL`].
    /// The ping is also this replica's heartbeat: it counts the replicas sharing this Redis
    /// ([`SharedTier::replicas`]).
    pub async fn ping(&self) {
        if *self.health() == Health::Down {
            // Whatever failed may have failed over: start from a fresh connection.
            self.inner.link.reset();
        }
        let mut pipe = redis::pipe();
        pipe.cmd("PING").ignore();
        self.heartbeat(&mut pipe);
        let replicas: Option<(u64,)> = self
            .run(Operation::Ping, &pipe, PING_TIMEOUT.max(self.inner.timeout))
            .await;
        if let Some((count,)) = replicas {
            self.saw_replicas(count);
        }
    }
}

fn release(pipe: &mut Pipeline, lease: &Lease) {
    pipe.cmd("EVAL")
        .arg(RELEASE_IF_OWNER)
        .arg(1)
        .arg(&lease.key)
        .arg(&lease.token)
        .ignore();
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The `n`th reply of a pipeline as `T`; `None` if it is missing or of another type.
fn parse<T: FromRedisValue>(value: Option<redis::Value>) -> Option<T> {
    redis::from_redis_value(value?).ok()
}

/// An answer and its `PTTL`; a key without expiry (-1) or gone meanwhile (-2) is no answer.
fn stored(blob: Option<Vec<u8>>, ttl_ms: i64) -> Option<StoredAnswer> {
    let ttl = u64::try_from(ttl_ms).ok().filter(|ms| *ms > 0)?;
    Some(StoredAnswer {
        blob: Bytes::from(blob?),
        ttl: Duration::from_millis(ttl),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::metrics::Registry;

    fn count(metrics: &SharedMetrics, operation: Operation, result: OpResult) -> u64 {
        metrics
            .operations
            .get_or_create(&OperationLabels { operation, result })
            .get()
    }

    #[tokio::test]
    async fn after_one_failure_redis_is_skipped_until_a_ping_reaches_it() {
        // A port nothing listens on: every connection is refused.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let settings = RedisSettings {
            topology: settings::Topology::Single(
                url::Url::parse(&format!("redis://127.0.0.1:{port}/0")).unwrap(),
            ),
            shown: format!("redis://127.0.0.1:{port}/0"),
            key_prefix: "t:".into(),
            timeout: Duration::from_secs(5),
        };
        let metrics = SharedMetrics::new(&mut Registry::new());
        let tier = SharedTier::new(&settings, metrics.clone()).unwrap();
        assert!(tier
            .read_miss("k", &[Board::Providers], true)
            .await
            .is_none());
        assert!(!tier.is_connected());
        assert_eq!(
            count(&metrics, Operation::Read, OpResult::Ok),
            0,
            "the read failed"
        );
        assert!(tier.claim_lease("k").await.is_none());
        assert!(tier.poll_flight("k").await.is_none());
        assert_eq!(count(&metrics, Operation::LeaseClaim, OpResult::Skipped), 1);
        assert_eq!(count(&metrics, Operation::FlightPoll, OpResult::Skipped), 1);
        tier.ping().await;
        assert_eq!(
            count(&metrics, Operation::Ping, OpResult::Skipped),
            0,
            "the ping always tries"
        );
        assert_eq!(metrics.connected.get(), 0);
    }
}
