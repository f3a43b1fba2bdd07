//! j. The shared Redis tier (`REDIS_URL`): a hit served from Redis against a hit from the local
//! cache — latency added on one connection (p50, the target), throughput at 64 connections — the
//! Redis round trips one miss costs, and the Redis memory one cached answer takes. Needs
//! `redis-server` (the Debian package; CI installs it): without it the measurement is skipped,
//! with a note in the report.

use std::net::SocketAddr;
use std::time::Duration;

use super::redis_process::RedisProcess;

use crate::loadgen::{self, BoxError, Load, LoadReport};
use crate::processes::Server;
use crate::report::Row;
use crate::{gateway_env, latency_summary, search_path, us, Bench, CONNECTIONS};
use simulator::searxng::SimulatedSearxng;

/// A hit from Redis may add at most this much to a local hit (p50, one connection, loopback).
const ADDED_P50_TARGET: Duration = Duration::from_micros(300);
/// Redis round trips of a miss with no breaker change: the read (answer, boards, rotation), the
/// lease claim, the answer write with the lease release.
const OPS_PER_MISS_TARGET: f64 = 3.0;

impl Bench {
    /// j. The shared tier against the local cache.
    pub(crate) async fn shared_tier(&mut self, searxng: &SimulatedSearxng) -> Result<(), BoxError> {
        let Some(redis) = RedisProcess::start(&self.log_dir)? else {
            println!("   skipped: redis-server is not installed (apt-get install redis-server)");
            self.rows.push(Row {
                name: "j. shared tier (Redis)".into(),
                result: "not measured: redis-server is not installed on this machine".into(),
                target: "report".into(),
                met: None,
            });
            return Ok(());
        };
        let mut env = gateway_env(searxng);
        env.push(("REDIS_URL".into(), redis.url()));
        // The writer fills Redis; the reader keeps no local cache, so each of its hits is a
        // Redis hit.
        let writer = self.gateway(&env, "gateway-shared-writer").await?;
        let mut reader_env = env.clone();
        reader_env.push(("CACHE_SIZE".into(), "0".into()));
        let reader = self.gateway(&reader_env, "gateway-shared-reader").await?;

        let path = search_path("shared tier benchmark");
        loadgen::get(writer.addr, &path).await?;
        let local = loadgen::get(writer.addr, &path).await?;
        let shared = loadgen::get(reader.addr, &path).await?;
        let tier = |a: &loadgen::Answer| {
            a.headers
                .get("x-cache-tier")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned()
        };
        if (tier(&local).as_str(), tier(&shared).as_str()) != ("local", "redis") {
            return Err(format!(
                "warm-up: tiers {:?} / {:?}, expected local / redis",
                tier(&local),
                tier(&shared)
            )
            .into());
        }

        let duration = self.plan.hit_run;
        let run = |server: &Server, connections: usize| Load {
            addr: server.addr,
            connections,
            duration,
            max_requests: None,
            path: loadgen::fixed(&path),
        };
        let mut one = Vec::new();
        let mut many = Vec::new();
        for server in [&writer, &reader] {
            loadgen::run(&run(server, 1)).await;
            let sequential = loadgen::run(&run(server, 1)).await;
            let parallel = loadgen::run(&run(server, CONNECTIONS)).await;
            for (what, report) in [("1 connection", &sequential), ("64 connections", &parallel)] {
                self.fail_on_errors(&format!("j. {} {what}", server.label), report);
                let line = format!(
                    "j. {} ({what}): {:.0} req/s, {}",
                    server.label,
                    report.throughput(),
                    latency_summary(&report.latency)
                );
                println!("   {line}");
                self.details.push(line);
            }
            one.push(sequential);
            many.push(parallel);
        }
        let added = one[1]
            .latency
            .quantile(0.5)
            .saturating_sub(one[0].latency.quantile(0.5));
        self.rows.push(Row {
            name: "j. a hit from Redis: latency added over a local hit, p50 (1 connection)".into(),
            result: format!(
                "{} ({} from Redis − {} local)",
                us(added),
                us(one[1].latency.quantile(0.5)),
                us(one[0].latency.quantile(0.5))
            ),
            target: format!("≤ {}", us(ADDED_P50_TARGET)),
            met: Some(added <= ADDED_P50_TARGET),
        });
        self.rows.push(Row {
            name: "j. hits from Redis: throughput at 64 connections".into(),
            result: format!(
                "{:.0} req/s ({:.0} % of local hits' {:.0} req/s)",
                many[1].throughput(),
                ratio(&many[1], &many[0]) * 100.0,
                many[0].throughput()
            ),
            target: "report".into(),
            met: None,
        });

        // Misses: distinct cold queries through the writer; its Redis round trips per miss, and
        // what the answers take in Redis.
        let misses = if self.plan.smoke { 50 } else { 500 };
        let ops_before = redis_operations(writer.addr).await?;
        let memory_before = redis.used_memory()?;
        for i in 0..misses {
            let answer =
                loadgen::get(writer.addr, &search_path(&format!("shared miss {i}"))).await?;
            if answer.status != 200 {
                return Err(format!("miss {i}: status {}", answer.status).into());
            }
        }
        let ops = (redis_operations(writer.addr).await? - ops_before) / misses as f64;
        let per_answer = redis.used_memory()?.saturating_sub(memory_before) / misses;
        self.rows.push(Row {
            name: "j. Redis round trips per miss".into(),
            result: format!("{ops:.2} ({misses} distinct cold queries, no breaker change)"),
            target: format!("≤ {OPS_PER_MISS_TARGET:.0}"),
            met: Some(ops <= OPS_PER_MISS_TARGET + 0.01),
        });
        self.rows.push(Row {
            name: "j. Redis memory per cached answer".into(),
            result: format!(
                "{:.1} KiB (used_memory growth over {misses} answers of {} bytes of JSON each, about)",
                per_answer as f64 / 1024.0,
                shared.body.len()
            ),
            target: "report".into(),
            met: None,
        });
        writer.stop();
        reader.stop();
        Ok(())
    }
}

fn ratio(a: &LoadReport, b: &LoadReport) -> f64 {
    a.throughput() / b.throughput().max(1e-9)
}

/// `redis_operations_total` summed over every operation but the background ping.
pub(super) async fn redis_operations(addr: SocketAddr) -> Result<f64, BoxError> {
    let text = String::from_utf8(loadgen::get(addr, "/metrics").await?.body.to_vec())?;
    Ok(text
        .lines()
        .filter(|l| l.starts_with("searxng_gateway_redis_operations_total{"))
        .filter(|l| !l.contains("operation=\"ping\""))
        .filter(|l| l.contains("result=\"ok\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum())
}
