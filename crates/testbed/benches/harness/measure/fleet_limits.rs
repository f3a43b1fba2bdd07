//! l. A client's limits over a fleet (`REDIS_URL` with `API_KEYS_FILE`): three replicas on one
//! Redis, one client's cache hits spread over them as fast as 64 connections send them.
//! - admitted / what the limit allows in the time the run took (its burst, a minute's worth, plus
//!   the refill), with Redis (target ≤ 1.05) and again with Redis killed, each replica then holding
//!   the client to its `1/3` share (the README's bound; reported);
//! - the latency a fleet-wide rate check adds to a cache hit: p50 on one connection, a limited
//!   client against an unlimited one on the same replica (target ≤ 100 µs);
//! - Redis round trips per cache hit with a rate limit on (target 1: the check; a hit reads
//!   nothing else from Redis).
//!
//! Needs `redis-server`: without it the measurement is skipped, with a note in the report.

use std::io::Write as _;
use std::time::Duration;

use super::redis_process::RedisProcess;
use super::shared_tier::redis_operations;
use crate::loadgen::{self, BoxError, Load, LoadReport};
use crate::processes::Server;
use crate::report::Row;
use crate::{gateway_env, latency_summary, search_path, us, Bench, CONNECTIONS};
use simulator::searxng::SimulatedSearxng;

/// The limited client's rate: a burst of 600, then 10 a second.
const PER_MINUTE: u32 = 600;
/// Admitted over three replicas may exceed what the limit allows by this factor at most.
const ADMITTED_TARGET: f64 = 1.05;
/// A fleet-wide rate check may add this much to a cache hit (p50, one connection, loopback).
const ADDED_P50_TARGET: Duration = Duration::from_micros(100);
/// Redis round trips per cache hit with a rate limit on.
const OPS_PER_HIT_TARGET: f64 = 1.0;

/// The clients of the keys file: (name, key, limits).
const CLIENTS: [(&str, &str, &str); 4] = [
    ("fleet", "bench-fleet-key-0123456789", ":600"),
    ("fallback", "bench-fallback-key-0123456789", ":600"),
    ("checked", "bench-checked-key-0123456789", ":1000000000"),
    ("open", "bench-open-key-0123456789", ""),
];

impl Bench {
    /// l. One client's limits over three replicas.
    pub(crate) async fn fleet_limits(
        &mut self,
        searxng: &SimulatedSearxng,
    ) -> Result<(), BoxError> {
        let Some(mut redis) = RedisProcess::start(&self.log_dir)? else {
            println!("   skipped: redis-server is not installed (apt-get install redis-server)");
            self.rows.push(Row {
                name: "l. fleet limits (Redis)".into(),
                result: "not measured: redis-server is not installed on this machine".into(),
                target: "report".into(),
                met: None,
            });
            return Ok(());
        };
        let keys_path = self.log_dir.join("fleet-limits-keys.txt");
        let mut keys = std::fs::File::create(&keys_path)?;
        for (name, key, limits) in CLIENTS {
            let line = searxng_gateway::clients::keys_file::hash_line(name, key)?;
            writeln!(keys, "{line}{limits}")?;
        }
        let mut env = gateway_env(searxng);
        env.push(("REDIS_URL".into(), redis.url()));
        env.push(("API_KEYS_FILE".into(), keys_path.display().to_string()));
        env.push(("REDIS_TIMEOUT_MS".into(), "50".into()));
        let mut replicas = Vec::new();
        for i in 0..3 {
            replicas.push(self.gateway(&env, &format!("gateway-fleet-{i}")).await?);
        }
        let path_as = |client: &str| {
            let key = CLIENTS.iter().find(|c| c.0 == client).map_or("", |c| c.1);
            format!("{}&api_key={key}", search_path("fleet limits"))
        };
        // Warm each replica's cache (as the unlimited client): every request below is a hit.
        for replica in &replicas {
            loadgen::get(replica.addr, &path_as("open")).await?;
        }
        let run = self.plan.hit_run;

        let shared = spread(&replicas, &path_as("fleet"), run).await;
        let ratio = admitted_ratio(&shared);
        self.rows.push(Row {
            name: "l. admitted / limit over three replicas (Redis)".into(),
            result: format!(
                "{ratio:.3} ({} admitted in {:.1} s; {PER_MINUTE}/min allows {:.0})",
                admitted(&shared),
                elapsed(&shared).as_secs_f64(),
                allowed(elapsed(&shared))
            ),
            target: format!("≤ {ADMITTED_TARGET:.2}"),
            met: Some(ratio <= ADMITTED_TARGET),
        });

        // The check's price: the same hits as a limited and as an unlimited client, one
        // connection, the same replica.
        let one = |client: &str| Load {
            addr: replicas[0].addr,
            connections: 1,
            duration: run,
            max_requests: None,
            path: loadgen::fixed(&path_as(client)),
        };
        loadgen::run(&one("open")).await;
        let open = loadgen::run(&one("open")).await;
        let checked = loadgen::run(&one("checked")).await;
        for (what, report) in [("unlimited", &open), ("limited", &checked)] {
            self.fail_on_errors(&format!("l. hits as the {what} client"), report);
            let line = format!(
                "l. hits as the {what} client (1 connection): {:.0} req/s, {}",
                report.throughput(),
                latency_summary(&report.latency)
            );
            println!("   {line}");
            self.details.push(line);
        }
        let added = checked
            .latency
            .quantile(0.5)
            .saturating_sub(open.latency.quantile(0.5));
        self.rows.push(Row {
            name: "l. a fleet-wide rate check: latency added to a cache hit, p50 (1 connection)"
                .into(),
            result: format!(
                "{} ({} limited − {} unlimited)",
                us(added),
                us(checked.latency.quantile(0.5)),
                us(open.latency.quantile(0.5))
            ),
            target: format!("≤ {}", us(ADDED_P50_TARGET)),
            met: Some(added <= ADDED_P50_TARGET),
        });

        let hits = if self.plan.smoke { 200 } else { 2000 };
        let before = redis_operations(replicas[0].addr).await?;
        let counted = loadgen::run(&Load {
            max_requests: Some(hits),
            duration: Duration::from_secs(60),
            ..one("checked")
        })
        .await;
        self.fail_on_errors("l. counted hits", &counted);
        let per_hit = (redis_operations(replicas[0].addr).await? - before) / counted.ok as f64;
        self.rows.push(Row {
            name: "l. Redis round trips per cache hit, rate limit on".into(),
            result: format!("{per_hit:.2} ({} hits)", counted.ok),
            target: format!("{OPS_PER_HIT_TARGET:.0}"),
            met: Some((per_hit - OPS_PER_HIT_TARGET).abs() < 0.01),
        });

        // Redis away: each replica holds the client to its share. A client not seen before, so
        // every replica starts with a full local bucket.
        redis.kill();
        for replica in &replicas {
            let status = format!("/status?api_key={}", CLIENTS[3].1);
            let mut away = false;
            for _ in 0..100 {
                let answer = loadgen::get(replica.addr, &status).await?;
                if String::from_utf8_lossy(&answer.body).contains("\"connected\":false") {
                    away = true;
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            if !away {
                return Err(format!("{} never noticed Redis gone", replica.label).into());
            }
        }
        let local = spread(&replicas, &path_as("fallback"), run).await;
        let ratio = admitted_ratio(&local);
        self.rows.push(Row {
            name: "l. admitted / limit over three replicas, Redis away (each its 1/3 share)".into(),
            result: format!(
                "{ratio:.3} ({} admitted in {:.1} s; {PER_MINUTE}/min allows {:.0})",
                admitted(&local),
                elapsed(&local).as_secs_f64(),
                allowed(elapsed(&local))
            ),
            target: "report".into(),
            met: None,
        });
        for replica in replicas {
            replica.stop();
        }
        Ok(())
    }
}

/// 64 connections, a third on each of the three replicas, for `run`; a 429 is an expected answer.
async fn spread(replicas: &[Server], path: &str, run: Duration) -> Vec<LoadReport> {
    let load = |r: &Server| Load {
        addr: r.addr,
        connections: CONNECTIONS / 3,
        duration: run,
        max_requests: None,
        path: loadgen::fixed(path),
    };
    let loads = [load(&replicas[0]), load(&replicas[1]), load(&replicas[2])];
    let limited = |a: &loadgen::Answer| a.status == 429;
    let (a, b, c) = tokio::join!(
        loadgen::run_tolerating(&loads[0], limited),
        loadgen::run_tolerating(&loads[1], limited),
        loadgen::run_tolerating(&loads[2], limited),
    );
    vec![a, b, c]
}

fn admitted(reports: &[LoadReport]) -> u64 {
    reports.iter().map(|r| r.ok).sum()
}

fn elapsed(reports: &[LoadReport]) -> Duration {
    reports.iter().map(|r| r.elapsed).max().unwrap_or_default()
}

/// What `PER_MINUTE` allows in `elapsed`: the burst and the refill.
fn allowed(elapsed: Duration) -> f64 {
    f64::from(PER_MINUTE) * (1.0 + elapsed.as_secs_f64() / 60.0)
}

fn admitted_ratio(reports: &[LoadReport]) -> f64 {
    admitted(reports) as f64 / allowed(elapsed(reports))
}
