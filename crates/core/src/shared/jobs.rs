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

/// KEYS: job, frontier, seen, found, shapes. ARGV: expiry (unix ms), the most URLs taken on, the
/// most URLs per path shape, then url, depth, shape triples (shape `""`: not counted). Adds each
/// URL not seen yet whose shape has room to the frontier, counting its shape fleet-wide; returns
/// how many were added.
const PUSH: &str = "\
local cap = tonumber(ARGV[2])
local per_shape = tonumber(ARGV[3])
local seen = redis.call('SCARD', KEYS[3])
local first = seen == 0
local shapes = {}
local added = 0
for i = 4, #ARGV, 3 do
  if seen >= cap then break end
  local shape = ARGV[i + 2]
  local room = true
  if shape ~= '' then
    if shapes[shape] == nil then shapes[shape] = tonumber(redis.call('HGET', KEYS[5], shape) or '0') end
    room = shapes[shape] < per_shape
  end
  if room and redis.call('SADD', KEYS[3], ARGV[i]) == 1 then
    seen = seen + 1
    if shape ~= '' then
      shapes[shape] = redis.call('HINCRBY', KEYS[5], shape, 1)
      if shapes[shape] == 1 then redis.call('PEXPIREAT', KEYS[5], ARGV[1]) end
    end
    redis.call('XADD', KEYS[2], '*', 'u', ARGV[i], 'd', ARGV[i + 1])
    redis.call('RPUSH', KEYS[4], ARGV[i])
    added = added + 1
  end
end
if added > 0 then
  redis.call('HINCRBY', KEYS[1], 'queued', added)
  if first then
    for k = 2, 4 do redis.call('PEXPIREAT', KEYS[k], ARGV[1]) end
  end
end
return added";

/// KEYS: job, frontier. ARGV: consumer, claim idle (ms; 0: claim none this time), count. The
/// entries silent longer than the idle time (claimed), then new ones, after how many were claimed;
/// `{0, {}}` when the job is gone.
const TAKE: &str = "\
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('EXISTS', KEYS[2]) == 0 then return {0, {}} end
local out = {}
if tonumber(ARGV[2]) > 0 then
  local claimed = redis.call('XAUTOCLAIM', KEYS[2], 'readers', ARGV[1], ARGV[2], '0-0', 'COUNT', ARGV[3])
  for _, e in ipairs(claimed[2]) do table.insert(out, e) end
end
local n = #out
if n < tonumber(ARGV[3]) then
  local fresh = redis.call('XREADGROUP', 'GROUP', 'readers', ARGV[1], 'COUNT', ARGV[3] - n, 'STREAMS', KEYS[2], '>')
  if fresh then
    for _, e in ipairs(fresh[1][2]) do table.insert(out, e) end
  end
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
    if redis.call('RPUSH', KEYS[4], ARGV[5]) == 1 then
      redis.call('PEXPIREAT', KEYS[3], ARGV[2])
      redis.call('PEXPIREAT', KEYS[4], ARGV[2])
    end
    redis.call('HINCRBY', KEYS[1], 'completed', 1)
    redis.call('HINCRBY', KEYS[1], 'bytes', ARGV[6])
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
/// job is still running; the status after, and 1 if this call wrote it (0: it had ended).
const END: &str = "\
local now = redis.call('HGET', KEYS[1], 'status')
if not now then return false end
if now == 'scraping' then
  redis.call('HSET', KEYS[1], 'status', ARGV[1])
  return {ARGV[1], 1}
end
return {now, 0}";

/// What [`SharedTier::end_job`] found: whether this call ended the job, and its status after.
/// Only the call that wrote the end acts on it (the webhook's last event, the metrics): two
/// replicas seeing the end at once both ask, one writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobEnd {
    /// This call wrote the job's final status (the one it asked for).
    Wrote(String),
    /// The job had ended already (another call wrote its end): its status.
    Was(String),
}

impl JobEnd {
    /// The job's status after the call.
    pub fn status(&self) -> &str {
        match self {
            Self::Wrote(status) | Self::Was(status) => status,
        }
    }
}

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
    /// The URLs it starts from.
    pub seeds: Vec<NewUrl>,
    /// The most URLs it takes on.
    pub max_urls: u64,
    /// The most URLs it takes on per path shape (the trap guard, counted fleet-wide).
    pub per_shape: u64,
}

/// A URL a job found, for its frontier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewUrl {
    /// The URL, canonical.
    pub url: String,
    /// Links from the start to it.
    pub depth: u32,
    /// Its path shape, counted against the job's cap per shape (`None`: not counted — a batch's
    /// URLs, a crawl's start).
    pub shape: Option<String>,
}

/// A stream entry as Redis gives it: its ID, its fields and values in turn.
type RawEntry = (String, Vec<String>);
/// An HMGET's answer: each field's value, if the hash has it.
type HmGet = Vec<Option<Vec<u8>>>;

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

impl HostTurn {
    /// The answer of the host-turn script.
    fn of(answer: i64) -> Self {
        match answer {
            1 => Self::Go,
            0 => Self::Busy,
            _ => Self::Delay,
        }
    }
}

/// A host's limits for a job's reads on it.
#[derive(Debug, Clone, Copy)]
pub struct HostLimits<'a> {
    /// The host.
    pub host: &'a str,
    /// Reads at once on it, fleet-wide (`CRAWL_PER_HOST_CONCURRENCY`).
    pub per_host: usize,
    /// How long a turn is held at most (a replica that dies gives it back so).
    pub hold: Duration,
    /// Its crawl delay, started by each turn.
    pub delay: Option<Duration>,
}

/// What a read of a job left, handed in at once ([`SharedTier::read_done`]).
#[derive(Debug, Clone, Copy)]
pub struct ReadDone<'a> {
    /// The frontier entry read.
    pub entry: &'a str,
    /// What became of it.
    pub what: HandIn<'a>,
    /// The links it found for the frontier.
    pub found: &'a [NewUrl],
    /// The most URLs the job takes on, in all and per path shape.
    pub caps: (u64, u64),
    /// When the job's keys expire (unix ms).
    pub expires_at_ms: u64,
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
            (job.max_urls, job.per_shape),
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

    /// Fields `names` of job `id`'s record, those it has (a worker's look at its counters, without
    /// the request it carries); `Some(empty)` when there is no such job.
    pub async fn job_fields(
        &self,
        id: &str,
        names: &[&'static str],
    ) -> Option<HashMap<String, Vec<u8>>> {
        let mut pipe = redis::pipe();
        pipe.cmd("HMGET").arg(self.job_key(id, "job")).arg(names);
        let (values,): (HmGet,) = self
            .run(Operation::JobRead, &pipe, self.inner.timeout)
            .await?;
        Some(fields_of(names, values))
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
    /// jobs; whether this call ended it, and its status after (`None`: no such job, or Redis is
    /// away).
    pub async fn end_job(&self, id: &str, status: &str) -> Option<JobEnd> {
        let mut pipe = redis::pipe();
        pipe.cmd("EVAL")
            .arg(END)
            .arg(1)
            .arg(self.job_key(id, "job"))
            .arg(status);
        let (ended,): (Option<(String, i64)>,) = self
            .run(Operation::JobWrite, &pipe, self.inner.timeout)
            .await?;
        let (now, wrote) = ended?;
        if now != "scraping" {
            self.forget_job(id).await;
        }
        Some(if wrote == 1 {
            JobEnd::Wrote(now)
        } else {
            JobEnd::Was(now)
        })
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

    /// `caps`: the most URLs the job takes on, and per path shape.
    fn push_script(
        &self,
        pipe: &mut redis::Pipeline,
        id: &str,
        links: &[NewUrl],
        expires_at_ms: u64,
        (max_urls, per_shape): (u64, u64),
    ) {
        let eval = pipe
            .cmd("EVAL")
            .arg(PUSH)
            .arg(5)
            .arg(self.job_key(id, "job"))
            .arg(self.job_key(id, "frontier"))
            .arg(self.job_key(id, "seen"))
            .arg(self.job_key(id, "found"))
            .arg(self.job_key(id, "shapes"))
            .arg(expires_at_ms)
            .arg(max_urls)
            .arg(per_shape);
        for link in links {
            eval.arg(&link.url)
                .arg(link.depth)
                .arg(link.shape.as_deref().unwrap_or_default());
        }
    }

    /// Adds the links not seen yet to job `id`'s frontier, while it has taken on fewer than
    /// `max_urls` and fewer than `per_shape` of the link's path shape; how many were added.
    pub async fn push_frontier(
        &self,
        id: &str,
        links: &[NewUrl],
        expires_at_ms: u64,
        caps: (u64, u64),
    ) -> Option<u64> {
        if links.is_empty() {
            return Some(0);
        }
        let mut pipe = redis::pipe();
        self.push_script(&mut pipe, id, links, expires_at_ms, caps);
        let (added,): (u64,) = self
            .run(Operation::Frontier, &pipe, self.inner.timeout)
            .await?;
        Some(added)
    }

    /// Fields `look_at` of job `id`'s record (as [`SharedTier::job_fields`], read first) and at
    /// most `count` URLs of its frontier for this replica (`consumer`): those another replica left
    /// unacknowledged for `claim_idle` first (none when `None`), then new ones — in one round trip.
    pub async fn take_frontier(
        &self,
        id: &str,
        look_at: &[&'static str],
        consumer: &str,
        count: usize,
        claim_idle: Option<Duration>,
    ) -> Option<(HashMap<String, Vec<u8>>, FrontierTake)> {
        let mut pipe = redis::pipe();
        pipe.cmd("HMGET").arg(self.job_key(id, "job")).arg(look_at);
        pipe.cmd("EVAL")
            .arg(TAKE)
            .arg(2)
            .arg(self.job_key(id, "job"))
            .arg(self.job_key(id, "frontier"))
            .arg(consumer)
            .arg(claim_idle.map_or(0, |idle| millis(idle).max(1)))
            .arg(count.max(1));
        let (values, (claimed, entries)): (HmGet, (usize, Vec<RawEntry>)) = self
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
        Some((
            fields_of(look_at, values),
            FrontierTake { entries, claimed },
        ))
    }

    /// Counts one more read started for job `id` (its page limit is held against how many have)
    /// and asks for the host's turn ([`SharedTier::host_turn`]), in one round trip: how many reads
    /// have started, this one counted, and the turn (one taken past the job's page limit is the
    /// caller's to give back).
    pub async fn launch_page_on(&self, id: &str, host: &HostLimits<'_>) -> Option<(u64, HostTurn)> {
        let mut pipe = redis::pipe();
        self.launch_command(&mut pipe, id);
        self.host_turn_script(&mut pipe, id, host);
        let (launched, turn): (u64, i64) = self
            .run(Operation::Frontier, &pipe, self.inner.timeout)
            .await?;
        Some((launched, HostTurn::of(turn)))
    }

    /// Whether a read of job `id` may start on `host.host`: at most `per_host` at once fleet-wide
    /// (a turn held at most `hold`, so a replica that dies gives it back), and not within the
    /// host's crawl delay (`delay`, started by this turn).
    pub async fn host_turn(&self, id: &str, host: &HostLimits<'_>) -> Option<HostTurn> {
        let mut pipe = redis::pipe();
        self.host_turn_script(&mut pipe, id, host);
        let (turn,): (i64,) = self
            .run(Operation::Frontier, &pipe, self.inner.timeout)
            .await?;
        Some(HostTurn::of(turn))
    }

    /// Gives back a turn [`SharedTier::host_turn`] gave.
    pub async fn host_done(&self, id: &str, host: &str) {
        let mut pipe = redis::pipe();
        self.host_done_script(&mut pipe, id, host);
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
        let mut pipe = redis::pipe();
        self.hand_in_script(&mut pipe, id, entry, what, expires_at_ms);
        let (handed,): (i64,) = self
            .run(Operation::JobWrite, &pipe, self.inner.timeout)
            .await?;
        Some(handed == 1)
    }

    /// A read of job `id` is over, in one round trip: `host`'s turn given back, the links it
    /// found added to the frontier (as [`SharedTier::push_frontier`]), `entry` handed in (as
    /// [`SharedTier::hand_in`], whose answer this is).
    pub async fn read_done(&self, id: &str, host: &str, read: ReadDone<'_>) -> Option<bool> {
        let mut pipe = redis::pipe();
        self.host_done_script(&mut pipe, id, host);
        if !read.found.is_empty() {
            self.push_script(&mut pipe, id, read.found, read.expires_at_ms, read.caps);
            pipe.ignore();
        }
        self.hand_in_script(&mut pipe, id, read.entry, read.what, read.expires_at_ms);
        let (handed,): (i64,) = self
            .run(Operation::JobWrite, &pipe, self.inner.timeout)
            .await?;
        Some(handed == 1)
    }

    fn launch_command(&self, pipe: &mut redis::Pipeline, id: &str) {
        pipe.cmd("HINCRBY")
            .arg(self.job_key(id, "job"))
            .arg("launched")
            .arg(1);
    }

    fn host_turn_script(&self, pipe: &mut redis::Pipeline, id: &str, host: &HostLimits<'_>) {
        pipe.cmd("EVAL")
            .arg(HOST_TURN)
            .arg(2)
            .arg(self.job_key(id, &format!("host:{}", host.host)))
            .arg(self.job_key(id, &format!("delay:{}", host.host)))
            .arg(host.per_host.max(1))
            .arg(millis(host.hold).max(1))
            .arg(host.delay.map_or(0, millis));
    }

    fn host_done_script(&self, pipe: &mut redis::Pipeline, id: &str, host: &str) {
        pipe.cmd("EVAL")
            .arg(HOST_DONE)
            .arg(1)
            .arg(self.job_key(id, &format!("host:{host}")))
            .ignore();
    }

    fn hand_in_script(
        &self,
        pipe: &mut redis::Pipeline,
        id: &str,
        entry: &str,
        what: HandIn<'_>,
        expires_at_ms: u64,
    ) {
        let (kind, url, blob, bytes): (&str, &str, &[u8], u64) = match what {
            HandIn::Page { url, blob, bytes } => ("page", url, blob, bytes),
            HandIn::Failure { blob } => ("failure", "", blob, 0),
            HandIn::Robots { url } => ("robots", url, b"", 0),
            HandIn::Skipped => ("skip", "", b"", 0),
        };
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

/// An HMGET's answer as the fields it found.
fn fields_of(names: &[&str], values: HmGet) -> HashMap<String, Vec<u8>> {
    names
        .iter()
        .zip(values)
        .filter_map(|(name, value)| Some(((*name).to_owned(), value?)))
        .collect()
}

/// Now, in unix milliseconds.
fn now_unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, millis)
}
