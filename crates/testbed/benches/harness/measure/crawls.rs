//! m. Whole sites (#43): a generated site ([`simulator::site_graph`]: sections of articles of
//! about 30 kB, its calendar trap, `robots.txt`, a sitemap index) crawled on loopback through
//! Firecrawl's `POST /v2/crawl`, extraction included:
//! - pages per second with one replica (no Redis; target ≥ 500 on this 2-core machine) and with
//!   three replicas on one Redis (target: no slower than one) — the median of [`ROUNDS`] crawls
//!   of each, in turns, each of a site of its own (the cache answers none) —, and each replica's
//!   share of the pages read (target 20–45 % each). `CRAWL_CONCURRENCY` is 16 and the fleet-wide
//!   `CRAWL_PER_HOST_CONCURRENCY` 48, three replicas' reads; the same fleet held to 16 reads of
//!   the site at once (one replica's) is reported beside;
//! - Redis memory per page while the job's pages are kept (`used_memory` after the crawl, less
//!   before, over its pages; reported);
//! - the time from a replica's SIGKILL (URLs in its hands) to another claiming them, against the
//!   claim time (twice `FETCH_TIMEOUT_SECONDS` and 5 s; target ≤ twice it) — full run only.
//!
//! The smoke crawls a small site with one replica and checks that every page of the graph was read.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::redis_process::RedisProcess;
use crate::loadgen::{self, BoxError};
use crate::processes::Server;
use crate::report::Row;
use crate::{gateway_env, Bench};
use simulator::searxng::SimulatedSearxng;
use simulator::site::SimulatedSite;
use simulator::site_graph::{GraphSpec, SiteGraph};

/// One replica's pages per second, at least.
const ONE_REPLICA_TARGET: f64 = 500.0;
/// `CRAWL_CONCURRENCY`: reads at once per replica and job.
const CONCURRENCY: usize = 16;
/// Crawls of each setting, in turns.
const ROUNDS: usize = 3;
/// Each of three replicas reads this share of the pages.
const SHARE_TARGET: (f64, f64) = (0.20, 0.45);
/// `FETCH_TIMEOUT_SECONDS` of the claim measurement: its claim time is 2 × 2 + 5 = 9 s.
const CLAIM_FETCH_TIMEOUT_SECONDS: u64 = 2;

impl Bench {
    /// m. Crawls: one replica, three on Redis, a replica's death.
    pub(crate) async fn crawls(&mut self, searxng: &SimulatedSearxng) -> Result<(), BoxError> {
        let spec = GraphSpec {
            sections: if self.plan.smoke { 3 } else { 10 },
            per_section: if self.plan.smoke { 10 } else { 80 },
            article_bytes: 30_000,
            pace: None,
            crawl_delay: 0.0,
        };
        // Each crawl reads a site of its own (another origin), so none is answered from the cache.
        let elsewhere = SimulatedSite::start().await?;
        let mut sites = Vec::new();
        for _ in 0..if self.plan.smoke { 1 } else { 3 * ROUNDS } {
            let site = SimulatedSite::start().await?;
            let graph = SiteGraph::build(&site, &elsewhere, &spec);
            sites.push((site, graph));
        }
        let mut env = gateway_env(searxng);
        for (name, value) in [
            ("FETCH_ALLOW_PRIVATE", "127.0.0.0/8"),
            ("CRAWL_CONCURRENCY", &CONCURRENCY.to_string()),
            // Fleet-wide: three replicas' reads at once, so the cap does not hold the fleet to
            // one replica's reads (a row below measures it at one replica's).
            ("CRAWL_PER_HOST_CONCURRENCY", &(3 * CONCURRENCY).to_string()),
            ("CRAWL_MAX_PAGES", "100000"),
            ("BROWSER", "off"),
        ] {
            env.push((name.into(), value.into()));
        }
        let origin = |crawl: usize| sites[crawl].0.origin();

        let one = self.gateway(&env, "gateway-crawl-one").await?;
        let (pages, took) = crawl(one.addr, &origin(0)).await?;
        let expected = sites[0].1.urls().len();
        if pages < expected {
            self.failures.push(format!(
                "m. crawl: {pages} pages read of the graph's {expected} (and its calendar)"
            ));
        }
        if self.plan.smoke {
            one.stop();
            self.rows.push(Row {
                name: "m. crawl, one replica: pages per second (≈30 kB pages, extraction included)"
                    .into(),
                result: format!(
                    "{:.0} ({pages} pages in {:.2} s)",
                    pages as f64 / took.as_secs_f64(),
                    took.as_secs_f64()
                ),
                target: format!("≥ {ONE_REPLICA_TARGET:.0}"),
                met: None,
            });
            return Ok(());
        }

        let Some(redis) = RedisProcess::start(&self.log_dir)? else {
            one.stop();
            self.rows.push(Row {
                name: "m. crawl, three replicas (Redis)".into(),
                result: "not measured: redis-server is not installed on this machine".into(),
                target: "report".into(),
                met: None,
            });
            return Ok(());
        };
        let mut shared_env = env.clone();
        shared_env.push(("REDIS_URL".into(), redis.url()));
        let replicas = self.three(&shared_env, "gateway-crawl").await?;
        // The same job in turns, one replica then three, ROUNDS times: a crawl of the site takes
        // about a second and a half, so one run of each is within the machine's noise.
        let mut ones = Vec::new();
        let mut threes = Vec::new();
        let mut pages3 = 0usize;
        let mut memory = None;
        for round in 0..ROUNDS {
            let (pages, took) = if round == 0 {
                (pages, took)
            } else {
                crawl(one.addr, &origin(2 * round)).await?
            };
            ones.push(pages as f64 / took.as_secs_f64());
            let before = redis.used_memory()?;
            let (pages, took) = crawl(replicas[0].addr, &origin(2 * round + 1)).await?;
            if round == 0 {
                memory = Some((before, redis.used_memory()?, pages));
            }
            if pages < expected {
                self.failures.push(format!(
                    "m. crawl on three replicas: {pages} pages read of the graph's {expected}"
                ));
            }
            pages3 += pages;
            threes.push(pages as f64 / took.as_secs_f64());
        }
        let mut shares = Vec::new();
        for replica in &replicas {
            shares.push(pages_read(replica.addr).await? / pages3.max(1) as f64);
        }
        for replica in replicas {
            replica.stop();
        }
        one.stop();
        // The same fleet with the per-host cap at one replica's concurrency: 16 reads of the
        // site at once fleet-wide, as one replica has.
        let mut capped_env = shared_env.clone();
        capped_env.push(("CRAWL_PER_HOST_CONCURRENCY".into(), CONCURRENCY.to_string()));
        let replicas = self.three(&capped_env, "gateway-crawl-capped").await?;
        let mut capped = Vec::new();
        for round in 0..ROUNDS {
            let (pages, took) = crawl(replicas[0].addr, &origin(2 * ROUNDS + round)).await?;
            capped.push(pages as f64 / took.as_secs_f64());
        }
        for replica in replicas {
            replica.stop();
        }
        let shown = |rates: &[f64]| {
            rates
                .iter()
                .map(|r| format!("{r:.0}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let (one_rate, three_rate) = (median(&ones), median(&threes));
        self.rows.push(Row {
            name: "m. crawl, one replica: pages per second (≈30 kB pages, extraction included)"
                .into(),
            result: format!(
                "{one_rate:.0}, median of {ROUNDS} crawls of {pages} pages ({})",
                shown(&ones)
            ),
            target: format!("≥ {ONE_REPLICA_TARGET:.0}"),
            met: Some(one_rate >= ONE_REPLICA_TARGET),
        });
        self.rows.push(Row {
            name: "m. crawl, three replicas on one Redis: pages per second".into(),
            result: format!(
                "{three_rate:.0}, median of {ROUNDS} ({}; {:.2}× one replica, the crawls in turns)",
                shown(&threes),
                three_rate / one_rate
            ),
            target: "no slower than one replica".into(),
            met: Some(three_rate >= one_rate),
        });
        let capped_rate = median(&capped);
        self.rows.push(Row {
            name: format!(
                "m. crawl, three replicas on one Redis, CRAWL_PER_HOST_CONCURRENCY={CONCURRENCY} \
                 (one replica's reads at once, fleet-wide): pages per second"
            ),
            result: format!(
                "{capped_rate:.0}, median of {ROUNDS} ({}; {:.2}× one replica)",
                shown(&capped),
                capped_rate / one_rate
            ),
            target: "report".into(),
            met: None,
        });
        let shown: Vec<String> = shares
            .iter()
            .map(|s| format!("{:.0} %", s * 100.0))
            .collect();
        self.rows.push(Row {
            name: "m. crawl, three replicas: each one's share of the pages read".into(),
            result: shown.join(", "),
            target: format!(
                "{:.0}–{:.0} % each",
                SHARE_TARGET.0 * 100.0,
                SHARE_TARGET.1 * 100.0
            ),
            met: Some(
                shares
                    .iter()
                    .all(|s| (SHARE_TARGET.0..=SHARE_TARGET.1).contains(s)),
            ),
        });
        if let Some((before, after, pages)) = memory {
            self.rows.push(Row {
                name: "m. crawl: Redis memory per page kept (frontier, seen-set, pages, record)"
                    .into(),
                result: format!(
                    "{:.1} kB ({pages} pages, used_memory {:.1} MB → {:.1} MB)",
                    after.saturating_sub(before) as f64 / pages.max(1) as f64 / 1e3,
                    before as f64 / 1e6,
                    after as f64 / 1e6
                ),
                target: "report".into(),
                met: None,
            });
        }

        let claim = self.claim_after_kill(&env, &redis).await?;
        let idle = Duration::from_secs(2 * CLAIM_FETCH_TIMEOUT_SECONDS + 5);
        self.rows.push(Row {
            name: "m. crawl: from a replica's SIGKILL to its URLs claimed by another".into(),
            result: format!(
                "{:.1} s (claim time {} s)",
                claim.as_secs_f64(),
                idle.as_secs()
            ),
            target: format!("≤ {} s (twice the claim time)", 2 * idle.as_secs()),
            met: Some(claim <= 2 * idle),
        });
        Ok(())
    }

    /// Three gateways with `env`, logging to `<label>-<i>.log`.
    async fn three(&self, env: &[(String, String)], label: &str) -> Result<Vec<Server>, BoxError> {
        let mut replicas = Vec::new();
        for i in 0..3 {
            replicas.push(self.gateway(env, &format!("{label}-{i}")).await?);
        }
        Ok(replicas)
    }

    /// Two replicas on Redis crawl a slow copy of the site; one is killed while both hold URLs;
    /// the time until the other has claimed them.
    async fn claim_after_kill(
        &mut self,
        env: &[(String, String)],
        redis: &RedisProcess,
    ) -> Result<Duration, BoxError> {
        let slow = SimulatedSite::start().await?;
        let elsewhere = SimulatedSite::start().await?;
        SiteGraph::build(
            &slow,
            &elsewhere,
            &GraphSpec {
                sections: 2,
                per_section: 10,
                article_bytes: 8_000,
                pace: Some(Duration::from_millis(500)),
                crawl_delay: 0.0,
            },
        );
        let mut env = env.to_vec();
        env.push(("REDIS_URL".into(), redis.url()));
        env.push((
            "FETCH_TIMEOUT_SECONDS".into(),
            CLAIM_FETCH_TIMEOUT_SECONDS.to_string(),
        ));
        env.push(("CRAWL_CONCURRENCY".into(), "2".into()));
        let doomed = self.gateway(&env, "gateway-crawl-doomed").await?;
        let survivor = self.gateway(&env, "gateway-crawl-survivor").await?;
        let id = start(doomed.addr, &slow.origin()).await?;
        // Both read (each has handed a page in or holds one): give the survivor a moment to join.
        let joined = Instant::now();
        while metric(survivor.addr, "searxng_gateway_crawl_frontier_urls").await? < 1.0 {
            if joined.elapsed() > Duration::from_secs(10) {
                return Err("the second replica never joined the job".into());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(Duration::from_millis(600)).await;
        std::process::Command::new("kill")
            .args(["-9", &doomed.pid().to_string()])
            .status()?;
        let killed = Instant::now();
        while metric(survivor.addr, "searxng_gateway_crawl_claims_total").await? < 1.0 {
            if killed.elapsed() > Duration::from_secs(60) {
                return Err("nothing was claimed within 60 s of the kill".into());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let claimed = killed.elapsed();
        let _ = status(survivor.addr, &id).await;
        survivor.stop();
        doomed.stop();
        Ok(claimed)
    }
}

/// Starts a crawl of `origin` on the gateway at `addr`; its ID.
async fn start(addr: std::net::SocketAddr, origin: &str) -> Result<String, BoxError> {
    let answer: Value = reqwest::Client::new()
        .post(format!("http://{addr}/v2/crawl"))
        .json(&json!({"url": format!("{origin}/"), "limit": 100_000, "maxDiscoveryDepth": 60}))
        .send()
        .await?
        .json()
        .await?;
    answer["id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("no job: {answer}").into())
}

/// The job's status and pages read (no pages in the answer: `skip` past them).
async fn status(addr: std::net::SocketAddr, id: &str) -> Result<(String, usize), BoxError> {
    let answer: Value = reqwest::Client::new()
        .get(format!("http://{addr}/v2/crawl/{id}?skip=100000000"))
        .send()
        .await?
        .json()
        .await?;
    Ok((
        answer["status"].as_str().unwrap_or("?").to_owned(),
        answer["completed"].as_u64().unwrap_or(0) as usize,
    ))
}

/// Crawls `origin` through the gateway at `addr`: the pages read, and how long it took.
async fn crawl(addr: std::net::SocketAddr, origin: &str) -> Result<(usize, Duration), BoxError> {
    let started = Instant::now();
    let id = start(addr, origin).await?;
    loop {
        let (state, pages) = status(addr, &id).await?;
        if state != "scraping" {
            if state != "completed" {
                return Err(format!("the crawl ended {state}").into());
            }
            return Ok((pages, started.elapsed()));
        }
        if started.elapsed() > Duration::from_secs(600) {
            return Err("the crawl ran past 600 s".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A metric's value summed over its series.
async fn metric(addr: std::net::SocketAddr, name: &str) -> Result<f64, BoxError> {
    let text = String::from_utf8(loadgen::get(addr, "/metrics").await?.body.to_vec())?;
    Ok(text
        .lines()
        .filter(|l| l.starts_with(name) && l[name.len()..].starts_with([' ', '{']))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum())
}

/// Pages this replica read for crawls.
async fn pages_read(addr: std::net::SocketAddr) -> Result<f64, BoxError> {
    let text = String::from_utf8(loadgen::get(addr, "/metrics").await?.body.to_vec())?;
    Ok(text
        .lines()
        .filter(|l| {
            l.starts_with("searxng_gateway_crawl_pages_total{") && l.contains("outcome=\"read\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum())
}

/// The median of `values` (the upper one of an even count).
fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(0.0)
}
