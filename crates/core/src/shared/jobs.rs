//! Crawl jobs the whole fleet works on (issue #43): a job's record, its URL frontier as a Redis
//! Stream read by the consumer group `readers` that every replica joins, its seen-set, and what it
//! read — the typed operations; what a job means (its request, its pages) belongs to the engine's
//! `crawl` module, which hands bytes in and gets bytes back.
//!
//! Every key of a job carries the job's hash tag (`{j:<id>}`, one Cluster slot), so each step is
//! one script, one round trip, atomic:
//! - adding links: a URL enters the stream only if it enters the seen-set (each URL once per job,
//!   by its normalised form), up to a cap on the URLs a job takes on;
//! - taking URLs: first the entries another replica was given and left unacknowledged longer
//!   than the claim time (`XAUTOCLAIM`: a replica killed mid-read loses nothing), then new ones;
//! - handing a URL in: acknowledged and deleted from the stream, counted handled — once: a replica
//!   whose entry was claimed meanwhile finds it acknowledged and its hand-in is dropped — and its
//!   page kept only if no page of that URL is (each page read and counted once).
//!
//! A job has ended when every URL taken on was handed in (`queued == handled`); whoever sees it
//! first ends it (the status is written once) and removes it from `{jobs}`, the index the replicas
//! read to join jobs. Every key expires at the job's expiry (`PEXPIREAT`).

use std::collections::HashMap;
use std::time::Duration;

use super::metrics::Operation;
use super::{millis, SharedTier};

/// The consumer group every replica joins.
const GROUP: &str = "readers";

/// KEYS: job, frontier, seen, found. ARGV: expiry (unix ms), the most URLs taken on, then
/// url, depth pairs. Adds each URL not seen to the frontier; returns how many were added.
const PUSH: &str = "\
local cap = tonumber(ARGV[2])
local added = 0
for i = 3, #ARGV, 2 do
  if redis.call('SCARD', KEYS[3]) >= cap then break end
  if redis.call('SADD', KEYS[3], ARGV[i]) == 1 then
    redis.call('XADD', KEYS[2], '*', 'u', ARGV[i], 'd', ARGV[i + 1])
    redis.call('RPUSH', KEYS[4], ARGV[i])
    added = added + 1
  end
end
if added > 0 then
  redis.call('HINCRBY', KEYS[1], 'queued', added)
  for k = 2, 4 do redis.call('PEXPIREAT', KEYS[k], ARGV[1]) end
end
return added";

/// KEYS: job, frontier. ARGV: consumer, claim idle (ms), count. The entries silent longer than
/// the idle time (claimed), then new ones, after how many were claimed; `{0, {}}` when the job is
/// gone.
const TAKE: &str = "\
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('EXISTS', KEYS[2]) == 0 then return {0, {}} end
local claimed = redis.call('XAUTOCLAIM', KEYS[2], 'readers', ARGV[1], ARGV[2], '0-0', 'COUNT', ARGV[3])
local fresh = redis.call('XREADGROUP', 'GROUP', 'readers', ARGV[1], 'COUNT', ARGV[3], 'STREAMS', KEYS[2], '>')
local out = {}
for _, e in ipairs(claimed[2]) do table.insert(out, e) end
local n = #out
if fresh then
  for _, e in ipairs(fresh[1][2]) do table.insert(out, e) end
end
return {n, out}";

/// KEYS: job, frontier, done, pages, errors, robots. ARGV: entry, expiry (unix ms), what
/// (`page`, `failure`, `robots`, `skip`), url, blob, bytes, now (unix ms: the job's last
/// progress, which the reaper reads). 1 when handed in now, 0 when another replica had.
const HAND_IN: &str = "\
if redis.call('XACK', KEYS[2], 'readers', ARGV[1]) == 0 then return 0 end
redis.call('XDEL', KEYS[2], ARGV[1])
redis.call('HINCRBY', KEYS[1], 'handled', 1)
redis.call('HSET', KEYS[1], 'progress_ms', ARGV[7])
local what = ARGV[3]
if what == 'page' then
  if redis.call('SADD', KEYS[3], ARGV[4]) == 1 then
    redis.call('RPUSH', KEYS[4], ARGV[5])
    redis.call('HINCRBY', KEYS[1], 'completed', 1)
    redis.call('HINCRBY', KEYS[1], 'bytes', ARGV[6])
    redis.call('PEXPIREAT', KEYS[3], ARGV[2])
    redis.call('PEXPIREAT', KEYS[4], ARGV[2])
  end
elseif what == 'failure' then
  redis.call('RPUSH', KEYS[5], ARGV[5])
  redis.call('HINCRBY', KEYS[1], 'failed', 1)
  redis.call('PEXPIREAT', KEYS[5], ARGV[2])
elseif what == 'robots' then
  redis.call('RPUSH', KEYS[6], ARGV[4])
  redis.call('HINCRBY', KEYS[1], 'robots_blocked', 1)
  redis.call('PEXPIREAT', KEYS[6], ARGV[2])
end
return 1";

/// KEYS: the host's reads in flight, its crawl delay. ARGV: reads per host, hold (ms), delay
/// (ms, 0: none). 1: go; 0: the host is busy; -1: in its crawl delay.
const HOST_TURN: &str = "\
if redis.call('EXISTS', KEYS[2]) == 1 then return -1 end
local n = redis.call('INCR', KEYS[1])
if n > tonumber(ARGV[1]) then
  redis.call('DECR', KEYS[1])
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if tonumber(ARGV[3]) > 0 then redis.call('SET', KEYS[2], '1', 'PX', ARGV[3]) end
return 1";

/// KEYS: the host's reads in flight. Gives one back.
const HOST_DONE: &str = "\
if tonumber(redis.call('GET', KEYS[1]) or '0') > 0 then redis.call('DECR', KEYS[1]) end
return 1";

/// KEYS: job, `{jobs}` is not here (another slot). ARGV: the final status. Writes it if the
/// job is still running; the status after.
const END: &str = "\
local now = redis.call('HGET', KEYS[1], 'status')
if not now then return false end
if now == 'scraping' then
  redis.call('HSET', KEYS[1], 'status', ARGV[1])
  return ARGV[1]
end
return now";

/// A new job.
#[derive(Debug)]
pub struct JobCreate<'a> {
    /// Its ID (a UUID).
    pub id: &'a str,
    /// Its client.
    pub owner: &'a str,
    /// What the engine keeps in its record besides the counters (the request).
    pub fields: Vec<(&'static str, Vec<u8>)>,
    /// When every key of it expires (unix ms).
    pub expires_at_ms: u64,
    /// The URLs it starts from, with their depth.
    pub seeds: Vec<(String, u32)>,
    /// The most URLs it takes on.
    pub max_urls: u64,
}

/// A stream entry as Redis gives it: its ID, its fields and values in turn.
type RawEntry = (String, Vec<String>);

/// What a take found: URLs given to this replica.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrontierTake {
    /// The URLs, those claimed first.
    pub entries: Vec<FrontierEntry>,
    /// How many were claimed: given to a replica before and left silent past the claim time
    /// (a replica that died, or hung).
    pub claimed: usize,
}

/// One URL of a frontier, given to this replica.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontierEntry {
    /// The stream entry's ID (what is handed in).
    pub entry: String,
    /// The URL.
    pub url: String,
    /// Links away from the start.
    pub depth: u32,
}

/// What became of a URL taken from the frontier.
#[derive(Debug, Clone, Copy)]
pub enum HandIn<'a> {
    /// Read: its page (the engine's blob) and its size.
    Page {
        /// The URL (a page per URL is kept).
        url: &'a str,
        /// The page.
        blob: &'a [u8],
        /// Its text's bytes (the job's byte budget).
        bytes: u64,
    },
    /// Not read: why (the engine's blob).
    Failure {
        /// The failure.
        blob: &'a [u8],
    },
    /// `robots.txt` keeps the crawler from it.
    Robots {
        /// The URL.
        url: &'a str,
    },
    /// Not read on purpose (the limit reached, a map's last ring).
    Skipped,
}

/// Whether a read on a host may start now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostTurn {
    /// Yes; give the turn back when done ([`SharedTier::host_done`]).
    Go,
    /// The host has as many reads in flight as it may.
    Busy,
    /// The host is in its crawl delay.
    Delay,
}

impl SharedTier {
    fn job_key(&self, id: &str, part: &str) -> String {
        self.inner.keys.job(id, part)
    }

    /// Creates the job, its frontier (with its seeds) and its consumer group, and lists it among
    /// the running jobs. `false`: Redis is away (nothing usable was written).
    pub async fn create_job(&self, job: &JobCreate<'_>) -> bool {
        let record = self.job_key(job.id, "job");
        let frontier = self.job_key(job.id, "frontier");
        let mut pipe = redis::pipe();
        let hset = pipe
            .cmd("HSET")
            .arg(&record)
            .arg("owner")
            .arg(job.owner)
            .arg("status")
            .arg("scraping");
        for (name, value) in &job.fields {
            hset.arg(*name).arg(value.as_slice());
        }
        for counter in [
            "queued",
            "handled",
            "launched",
            "completed",
            "failed",
            "bytes",
        ] {
            hset.arg(counter).arg(0);
        }
        pipe.ignore();
        pipe.cmd("PEXPIREAT")
            .arg(&record)
            .arg(job.expires_at_ms)
            .ignore();
        pipe.cmd("XGROUP")
            .arg("CREATE")
            .arg(&frontier)
            .arg(GROUP)
            .arg("0")
            .arg("MKSTREAM")
            .ignore();
        pipe.cmd("PEXPIREAT")
            .arg(&frontier)
            .arg(job.expires_at_ms)
            .ignore();
        self.push_script(
            &mut pipe,
            job.id,
            &job.seeds,
            job.expires_at_ms,
            job.max_urls,
        );
        pipe.ignore();
        if self
            .run::<()>(Operation::JobWrite, &pipe, self.inner.timeout)
            .await
            .is_none()
        {
            return false;
        }
        let mut index = redis::pipe();
        index
            .cmd("HSET")
            .arg(self.inner.keys.jobs())
            .arg(job.id)
            .arg(job.owner)
            .ignore();
        self.run::<()>(Operation::JobWrite, &index, self.inner.timeout)
            .await
            .is_some()
    }

    /// The running jobs, fleet-wide: ID → owner.
    pub async fn running_jobs(&self) -> Option<HashMap<String, String>> {
        let mut pipe = redis::pipe();
        pipe.cmd("HGETALL").arg(self.inner.keys.jobs());
        let (jobs,): (HashMap<String, String>,) = self
            .run(Operation::JobRead, &pipe, self.inner.timeout)
            .await?;
        Some(jobs)
    }

    /// Job `id`'s record (its fields and counters); `Some(empty)` when there is no such job.
    pub async fn job_record(&self, id: &str) -> Option<HashMap<String, Vec<u8>>> {
        let mut pipe = redis::pipe();
        pipe.cmd("HGETALL").arg(self.job_key(id, "job"));
        let (record,): (HashMap<String, Vec<u8>>,) = self
            .run(Operation::JobRead, &pipe, self.inner.timeout)
            .await?;
        Some(record)
    }

    /// Job `id`'s pages from `skip`, at most `take`, and how many it has.
    pub async fn job_pages(
        &self,
        id: &str,
        skip: usize,
        take: usize,
    ) -> Option<(Vec<Vec<u8>>, usize)> {
        let key = self.job_key(id, "pages");
        let mut pipe = redis::pipe();
        let last = skip
            .saturating_add(take)
            .saturating_sub(1)
            .min(i64::MAX as usize);
        if take == 0 {
            pipe.cmd("LRANGE").arg(&key).arg(1).arg(0);
        } else {
            pipe.cmd("LRANGE").arg(&key).arg(skip).arg(last);
        }
        pipe.cmd("LLEN").arg(&key);
        self.run(Operation::JobRead, &pipe, self.inner.timeout)
            .await
    }

    /// Job `id`'s failures (the engine's blobs), the URLs `robots.txt` kept it from, and every
    /// URL it took on, in order.
    pub async fn job_lists(&self, id: &str) -> Option<(Vec<Vec<u8>>, Vec<String>, Vec<String>)> {
        let mut pipe = redis::pipe();
        for part in ["errors", "robots", "found"] {
            pipe.cmd("LRANGE")
                .arg(self.job_key(id, part))
                .arg(0)
                .arg(-1);
        }
        self.run(Operation::JobRead, &pipe, self.inner.timeout)
            .await
    }

    /// Ends job `id` with `status` unless it has ended already, and takes it off the running
    /// jobs; its status after (`None`: no such job, or Redis is away).
    pub async fn end_job(&self, id: &str, status: &str) -> Option<String> {
        let mut pipe = redis::pipe();
        pipe.cmd("EVAL")
            .arg(END)
            .arg(1)
            .arg(self.job_key(id, "job"))
            .arg(status);
        let (now,): (Option<String>,) = self
            .run(Operation::JobWrite, &pipe, self.inner.timeout)
            .await?;
        if now.as_deref() != Some("scraping") {
            self.forget_job(id).await;
        }
        now
    }

    /// Adds `blob` to job `id`'s errors (one that is no URL's hand-in: the reaper's), kept until
    /// `expires_at_ms`.
    pub async fn add_job_error(&self, id: &str, blob: &[u8], expires_at_ms: u64) {
        let key = self.job_key(id, "errors");
        let mut pipe = redis::pipe();
        pipe.cmd("RPUSH")
            .arg(&key)
            .arg(blob)
            .ignore()
            .cmd("PEXPIREAT")
            .arg(&key)
            .arg(expires_at_ms)
            .ignore();
        let _: Option<()> = self
            .run(Operation::JobWrite, &pipe, self.inner.timeout)
            .await;
    }

    /// Sets field `name` of job `id`'s record.
    pub async fn set_job_field(&self, id: &str, name: &str, value: &[u8]) {
        let mut pipe = redis::pipe();
        pipe.cmd("HSET")
            .arg(self.job_key(id, "job"))
            .arg(name)
            .arg(value)
            .ignore();
        let _: Option<()> = self
            .run(Operation::JobWrite, &pipe, self.inner.timeout)
            .await;
    }

    /// Takes job `id` off the running jobs (it ended, or its keys expired).
    pub async fn forget_job(&self, id: &str) {
        let mut pipe = redis::pipe();
        pipe.cmd("HDEL")
            .arg(self.inner.keys.jobs())
            .arg(id)
            .ignore();
        let _: Option<()> = self
            .run(Operation::JobWrite, &pipe, self.inner.timeout)
            .await;
    }

    fn push_script(
        &self,
        pipe: &mut redis::Pipeline,
        id: &str,
        links: &[(String, u32)],
        expires_at_ms: u64,
        max_urls: u64,
    ) {
        let eval = pipe
            .cmd("EVAL")
            .arg(PUSH)
            .arg(4)
            .arg(self.job_key(id, "job"))
            .arg(self.job_key(id, "frontier"))
            .arg(self.job_key(id, "seen"))
            .arg(self.job_key(id, "found"))
            .arg(expires_at_ms)
            .arg(max_urls);
        for (url, depth) in links {
            eval.arg(url).arg(*depth);
        }
    }

    /// Adds the links not seen yet to job `id`'s frontier, while it has taken on fewer than
    /// `max_urls`; how many were added.
    pub async fn push_frontier(
        &self,
        id: &str,
        links: &[(String, u32)],
        expires_at_ms: u64,
        max_urls: u64,
    ) -> Option<u64> {
        if links.is_empty() {
            return Some(0);
        }
        let mut pipe = redis::pipe();
        self.push_script(&mut pipe, id, links, expires_at_ms, max_urls);
        let (added,): (u64,) = self
            .run(Operation::Frontier, &pipe, self.inner.timeout)
            .await?;
        Some(added)
    }

    /// At most `count` URLs of job `id`'s frontier for this replica (`consumer`): those another
    /// replica left unacknowledged for `claim_idle` first, then new ones.
    pub async fn take_frontier(
        &self,
        id: &str,
        consumer: &str,
        count: usize,
        claim_idle: Duration,
    ) -> Option<FrontierTake> {
        let mut pipe = redis::pipe();
        pipe.cmd("EVAL")
            .arg(TAKE)
            .arg(2)
            .arg(self.job_key(id, "job"))
            .arg(self.job_key(id, "frontier"))
            .arg(consumer)
            .arg(millis(claim_idle))
            .arg(count.max(1));
        let ((claimed, entries),): ((usize, Vec<RawEntry>),) = self
            .run(Operation::Frontier, &pipe, self.inner.timeout)
            .await?;
        let entries = entries
            .into_iter()
            .filter_map(|(entry, fields)| {
                let fields: HashMap<String, String> = fields
                    .chunks_exact(2)
                    .map(|pair| (pair[0].clone(), pair[1].clone()))
                    .collect();
                Some(FrontierEntry {
                    entry,
                    url: fields.get("u")?.clone(),
                    depth: fields.get("d")?.parse().ok()?,
                })
            })
            .collect();
        Some(FrontierTake { entries, claimed })
    }

    /// Counts one more read started for job `id`; how many have been (the job's page limit is
    /// held against it).
    pub async fn launch_page(&self, id: &str) -> Option<u64> {
        let mut pipe = redis::pipe();
        pipe.cmd("HINCRBY")
            .arg(self.job_key(id, "job"))
            .arg("launched")
            .arg(1);
        let (launched,): (u64,) = self
            .run(Operation::JobWrite, &pipe, self.inner.timeout)
            .await?;
        Some(launched)
    }

    /// Whether a read of job `id` on `host` may start: at most `per_host` at once fleet-wide (a
    /// turn held at most `hold`, so a replica that dies gives it back), and not within the
    /// host's crawl delay (`delay`, started by this turn).
    pub async fn host_turn(
        &self,
        id: &str,
        host: &str,
        per_host: usize,
        hold: Duration,
        delay: Option<Duration>,
    ) -> Option<HostTurn> {
        let mut pipe = redis::pipe();
        pipe.cmd("EVAL")
            .arg(HOST_TURN)
            .arg(2)
            .arg(self.job_key(id, &format!("host:{host}")))
            .arg(self.job_key(id, &format!("delay:{host}")))
            .arg(per_host.max(1))
            .arg(millis(hold).max(1))
            .arg(delay.map_or(0, millis));
        let (turn,): (i64,) = self
            .run(Operation::Frontier, &pipe, self.inner.timeout)
            .await?;
        Some(match turn {
            1 => HostTurn::Go,
            0 => HostTurn::Busy,
            _ => HostTurn::Delay,
        })
    }

    /// Gives back a turn [`SharedTier::host_turn`] gave.
    pub async fn host_done(&self, id: &str, host: &str) {
        let mut pipe = redis::pipe();
        pipe.cmd("EVAL")
            .arg(HOST_DONE)
            .arg(1)
            .arg(self.job_key(id, &format!("host:{host}")))
            .ignore();
        let _: Option<()> = self
            .run(Operation::Frontier, &pipe, self.inner.timeout)
            .await;
    }

    /// Hands in frontier entry `entry` of job `id`: `true` when it was this replica's to hand in,
    /// `false` when another replica had handed it in (then nothing is kept).
    pub async fn hand_in(
        &self,
        id: &str,
        entry: &str,
        what: HandIn<'_>,
        expires_at_ms: u64,
    ) -> Option<bool> {
        let (kind, url, blob, bytes): (&str, &str, &[u8], u64) = match what {
            HandIn::Page { url, blob, bytes } => ("page", url, blob, bytes),
            HandIn::Failure { blob } => ("failure", "", blob, 0),
            HandIn::Robots { url } => ("robots", url, b"", 0),
            HandIn::Skipped => ("skip", "", b"", 0),
        };
        let mut pipe = redis::pipe();
        pipe.cmd("EVAL").arg(HAND_IN).arg(6);
        for part in ["job", "frontier", "done", "pages", "errors", "robots"] {
            pipe.arg(self.job_key(id, part));
        }
        pipe.arg(entry)
            .arg(expires_at_ms)
            .arg(kind)
            .arg(url)
            .arg(blob)
            .arg(bytes)
            .arg(now_unix_ms());
        let (handed,): (i64,) = self
            .run(Operation::JobWrite, &pipe, self.inner.timeout)
            .await?;
        Some(handed == 1)
    }
}

/// The value of counter `name` in a job's record (0 when absent).
pub fn counter(record: &HashMap<String, Vec<u8>>, name: &str) -> u64 {
    record
        .get(name)
        .and_then(|v| std::str::from_utf8(v).ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Now, in unix milliseconds.
fn now_unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, millis)
}
