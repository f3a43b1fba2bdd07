//! Limits that hold for the whole fleet: a client's request rate and its premium calls and spend
//! of the rolling 24 h, kept in Redis so that every replica counts against one limit, and the
//! replicas' heartbeats, which say how many replicas share it (each takes `1/N` of a limit while
//! Redis is away: the caller's fallback).
//!
//! Each check is one script, one round trip, on keys of one client's hash tag (one Cluster slot),
//! timed by Redis's own clock (`TIME`), so replicas with skewed clocks still agree:
//! - the rate is GCRA: one value per client, its theoretical arrival time; a request is admitted
//!   when it is due within one minute's worth of requests (a burst of `per_minute`, the same rule as
//!   the local `governor` bucket), and the value expires once the client is idle long enough to be
//!   full again;
//! - the spend is two hashes per client, minute → premium calls and minute → micro-dollars, summed
//!   over the minutes of the last 24 h (older ones are deleted while summing), expiring 25 h after
//!   the last charge — the same per-minute resolution as the local [`crate::rolling`] window.
//!
//! Every operation is bounded by `REDIS_TIMEOUT_MS` like the rest of the tier and answers `None`
//! when Redis is away, slow or refused it; the caller then decides locally.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::metrics::Operation;
use super::{millis, parse, SharedTier};

/// A replica that missed this many pings in a row is no longer counted.
const HEARTBEAT_WINDOW: Duration = Duration::from_secs(3);

/// How long a client's spend is kept after its last charge: the window and an hour.
const SPEND_KEPT: Duration = Duration::from_secs(25 * 60 * 60);

/// GCRA over Redis's clock, in microseconds. ARGV: the interval between requests, the tolerance
/// (one minute: a burst of a minute's worth). Returns 0 when admitted, else the wait in µs.
const TAKE_RATE: &str = "\
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local next_tat = tat + interval
local wait = next_tat - now - tolerance
if wait > 0 then return wait end
redis.call('SET', KEYS[1], string.format('%d', next_tat), 'PX', math.ceil((next_tat - now) / 1000))
return 0";

/// Sums a client's calls and micro-dollars of the minutes still in the window (ARGV[1] minutes,
/// counting the current one), deleting older minutes. Returns `{calls, micro_usd}`.
const READ_SPEND: &str = "\
local minute = math.floor(tonumber(redis.call('TIME')[1]) / 60)
local oldest = minute - tonumber(ARGV[1]) + 1
local sums = {0, 0}
for i = 1, 2 do
  local all = redis.call('HGETALL', KEYS[i])
  for j = 1, #all, 2 do
    if tonumber(all[j]) < oldest then
      redis.call('HDEL', KEYS[i], all[j])
    else
      sums[i] = sums[i] + tonumber(all[j + 1])
    end
  end
end
return sums";

/// Adds ARGV[1] calls and ARGV[2] micro-dollars to the current minute; keeps both ARGV[3] ms.
const CHARGE_SPEND: &str = "\
local minute = math.floor(tonumber(redis.call('TIME')[1]) / 60)
redis.call('HINCRBY', KEYS[1], minute, ARGV[1])
redis.call('HINCRBY', KEYS[2], minute, ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1";

/// Records this replica's heartbeat (ARGV[1]), forgets replicas silent for ARGV[2] ms, and
/// returns how many are left.
const HEARTBEAT: &str = "\
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return redis.call('ZCARD', KEYS[1])";

/// What a client's premium calls cost in the last 24 h, fleet-wide.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FleetSpend {
    /// Premium calls.
    pub calls: u64,
    /// Micro-dollars.
    pub micro_usd: u64,
}

/// What one admission round trip found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FleetAdmission {
    /// `Err(wait)`: over the rate; come back after `wait`.
    pub rate: Result<(), Duration>,
    /// The client's spend, when asked for.
    pub spend: Option<FleetSpend>,
}

impl SharedTier {
    /// Takes one request from `client`'s fleet-wide rate of `per_minute` (0: not limited) and,
    /// when `spend_minutes` is given, reads its spend of that many minutes (the current one
    /// included) — one round trip. `None`: Redis is away.
    pub async fn admit_client(
        &self,
        client: &str,
        per_minute: u32,
        spend_minutes: Option<u64>,
    ) -> Option<FleetAdmission> {
        let with_spend = spend_minutes.is_some();
        if per_minute == 0 && !with_spend {
            return Some(FleetAdmission {
                rate: Ok(()),
                spend: None,
            });
        }
        let keys = &self.inner.keys;
        let mut pipe = redis::pipe();
        if per_minute > 0 {
            let interval_us = 60_000_000 / u64::from(per_minute);
            pipe.cmd("EVAL")
                .arg(TAKE_RATE)
                .arg(1)
                .arg(keys.rate(client))
                .arg(interval_us.max(1))
                .arg(60_000_000u64);
        }
        if let Some(minutes) = spend_minutes {
            let [calls, usd] = keys.spend(client);
            pipe.cmd("EVAL")
                .arg(READ_SPEND)
                .arg(2)
                .arg(calls)
                .arg(usd)
                .arg(minutes);
        }
        let operation = if per_minute > 0 {
            Operation::RateCheck
        } else {
            Operation::BudgetRead
        };
        let mut replies = self
            .run::<Vec<redis::Value>>(operation, &pipe, self.inner.timeout)
            .await?
            .into_iter();
        let rate = if per_minute > 0 {
            let wait_us: u64 = parse(replies.next())?;
            match wait_us {
                0 => Ok(()),
                us => Err(Duration::from_micros(us)),
            }
        } else {
            Ok(())
        };
        let spend = if with_spend {
            let (calls, micro_usd): (u64, u64) = parse(replies.next())?;
            Some(FleetSpend { calls, micro_usd })
        } else {
            None
        };
        Some(FleetAdmission { rate, spend })
    }

    /// Charges `calls` premium calls costing `micro_usd` to `client`, fleet-wide. `false`: Redis
    /// is away (the caller has counted them locally).
    pub async fn charge_client(&self, client: &str, calls: u64, micro_usd: u64) -> bool {
        let [calls_key, usd_key] = self.inner.keys.spend(client);
        let mut pipe = redis::pipe();
        pipe.cmd("EVAL")
            .arg(CHARGE_SPEND)
            .arg(2)
            .arg(calls_key)
            .arg(usd_key)
            .arg(calls)
            .arg(micro_usd)
            .arg(millis(SPEND_KEPT))
            .ignore();
        self.run::<()>(Operation::BudgetCharge, &pipe, self.inner.timeout)
            .await
            .is_some()
    }

    /// How many replicas shared this Redis at the last heartbeat (this one included; at least 1).
    pub fn replicas(&self) -> u64 {
        self.inner.replicas.load(Ordering::Acquire).max(1)
    }

    /// Adds this replica's heartbeat to `pipe` (the background ping's round trip).
    pub(super) fn heartbeat(&self, pipe: &mut redis::Pipeline) {
        pipe.cmd("EVAL")
            .arg(HEARTBEAT)
            .arg(1)
            .arg(self.inner.keys.replicas())
            .arg(&self.inner.replica)
            .arg(millis(HEARTBEAT_WINDOW));
    }

    /// Keeps the replica count a heartbeat answered.
    pub(super) fn saw_replicas(&self, count: u64) {
        self.inner.replicas.store(count.max(1), Ordering::Release);
    }
}
