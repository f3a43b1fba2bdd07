//! a. Cache hits: 64 keep-alive connections on one cached query against the gateway, then against a
//! minimal hyper server answering the same bytes ([`crate::baseline`]), then against nginx's
//! `proxy_cache` in front of the same simulated SearXNG ([`crate::nginx`]), alternating; the
//! throughput ratios, the latency of each and the CPU each spends per request. Each at its
//! defaults: the gateway's line per search and nginx's access log are written (to `/dev/null` and
//! a file). The gateway is measured twice: open, and with an inbound key and a per-client rate
//! limit (`API_KEYS_FILE`, the key in `api_key`), each hit then checked and counted. In a smoke
//! run, the gateway falling below [`NGINX_GUARD`] of nginx's throughput fails it: the median of the
//! rounds' ratios, each measured with nginx and the gateway back to back (which goes first
//! alternates round by round) so that the machine's noise cancels, and a set under the guard
//! measured again, up to [`GUARD_SETS`] sets, before it fails.

use std::io::Write as _;

use crate::histogram::Histogram;
use crate::loadgen::{self, BoxError, Load};
use crate::nginx::{self, NginxRole};
use crate::processes::{CpuMeter, Server};
use crate::report::Row;
use crate::{gateway_env, latency_summary, ms, search_path, Bench, CONNECTIONS, ENGINES};
use simulator::searxng::SimulatedSearxng;

/// The gateway's cache-hit throughput as a share of the minimal server's (issue #16).
const CACHE_HIT_RATIO_TARGET: f64 = 0.9;
/// The gateway's cache-hit p99 latency as a multiple of the minimal server's, at most.
const CACHE_HIT_P99_TARGET: f64 = 1.2;
/// The gateway's cache-hit throughput as a multiple of nginx `proxy_cache`'s (issue #28).
const NGINX_RATIO_TARGET: f64 = 1.5;
/// Below this share of nginx's cache-hit throughput (the median of the rounds' ratios), a smoke
/// run fails (CI's guard, issue #28).
const NGINX_GUARD: f64 = 0.8;
/// Sets of rounds a smoke run measures before the guard fails it: a regression fails every set, a
/// spell of this VM's noise (one set in four or five under 0.8× while the median sits at 0.82–0.86×,
/// 2026-12-05) seldom fails three in a row.
const GUARD_SETS: usize = 3;
/// The keyed client's rate limit: far above what the run sends, so every hit is checked and
/// admitted.
const KEYED_LIMIT: &str = ":1000000000";
/// The keyed client's key.
const KEY: &str = "bench-hits-key-0123456789";

impl Bench {
    /// a. Cache-hit throughput and latency against the minimal hyper server.
    pub(crate) async fn cache_hits(&mut self, searxng: &SimulatedSearxng) -> Result<(), BoxError> {
        let gateway = self.gateway(&gateway_env(searxng), "gateway-cache").await?;
        let keys_path = self.log_dir.join("cache-hit-keys.txt");
        std::fs::create_dir_all(&self.log_dir)?;
        let mut keys = std::fs::File::create(&keys_path)?;
        let line = searxng_gateway::clients::keys_file::hash_line("hits", KEY)?;
        writeln!(keys, "{line}{KEYED_LIMIT}")?;
        let mut keyed_env = gateway_env(searxng);
        keyed_env.push(("API_KEYS_FILE".into(), keys_path.display().to_string()));
        let keyed = self.gateway(&keyed_env, "gateway-cache-keyed").await?;
        let path = search_path("cache hit benchmark");
        let keyed_path = format!("{path}&api_key={KEY}");
        for _ in 0..2 {
            let answer = loadgen::get(keyed.addr, &keyed_path).await?;
            if answer.status != 200 {
                return Err(format!("keyed warm-up: status {}", answer.status).into());
            }
        }
        let first = loadgen::get(gateway.addr, &path).await?;
        let cached = loadgen::get(gateway.addr, &path).await?;
        let x_cache = cached.headers.get("x-cache").and_then(|v| v.to_str().ok());
        if first.status != 200 || x_cache != Some("hit") {
            return Err(
                format!("warm-up: status {} then X-Cache {x_cache:?}", first.status).into(),
            );
        }
        let body_file = self.log_dir.join("cache-hit-body.json");
        std::fs::write(&body_file, &cached.body)?;
        let baseline = Server::baseline(&body_file, &self.log_dir).await?;
        let check = loadgen::get(baseline.addr, "/").await?;
        if check.body != cached.body {
            return Err("the baseline does not answer the gateway's bytes".into());
        }

        let nginx = if nginx::installed() {
            let nginx = Server::nginx(NginxRole::Cache, searxng.address(), &self.log_dir).await?;
            // nginx stores the first answer in its cache when that response has been written
            // whole (a worker renames the temporary file into place), which can come after the next
            // request arrives on a loaded machine: ask again until it says HIT.
            let mut status = None;
            for _ in 0..50 {
                let again = loadgen::get(nginx.addr, &path).await?;
                status = again
                    .headers
                    .get("x-cache-status")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                if status.as_deref() == Some("HIT") {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            if status.as_deref() != Some("HIT") {
                return Err(
                    format!("nginx warm-up: X-Cache-Status {status:?} after 50 tries").into(),
                );
            }
            Some(nginx)
        } else {
            println!("   nginx is not installed (apt-get install nginx): no comparison with it");
            None
        };

        // The slots: 0 the gateway, 1 the minimal server, 2 the keyed gateway, 3 nginx (if any).
        let mut servers = vec![
            (&gateway, path.as_str(), "gateway"),
            (&baseline, "/", "baseline"),
            (
                &keyed,
                keyed_path.as_str(),
                "gateway with a key and a rate limit",
            ),
        ];
        if let Some(nginx) = &nginx {
            servers.push((nginx, path.as_str(), "nginx"));
        }
        let all: Vec<&Server> = servers.iter().map(|s| s.0).collect();
        // nginx and the gateway back to back in each round, so that the two of a ratio are
        // measured as close together as they can be (the machine's noise comes in spells); which of
        // the two goes first alternates, so that neither always follows the other.
        let order = |repeat: usize| -> Vec<usize> {
            match (servers.len(), repeat % 2) {
                (4, 0) => vec![0, 3, 1, 2],
                (4, _) => vec![3, 0, 1, 2],
                (n, _) => (0..n).collect(),
            }
        };
        let mut totals;
        // Each round's throughput of each server, for the ratios within a round.
        let mut rounds: Vec<Vec<f64>>;
        // The medians of the sets under the guard before the last.
        let mut under = Vec::new();
        loop {
            totals = vec![(0.0, Histogram::default(), 0.0, 0u64); servers.len()];
            rounds = Vec::new();
            for repeat in 0..self.plan.hit_repeats {
                let mut round = vec![0.0; servers.len()];
                for slot in order(repeat) {
                    let (server, server_path, label) = servers[slot];
                    let load = |duration| Load {
                        addr: server.addr,
                        connections: CONNECTIONS,
                        duration,
                        max_requests: None,
                        path: loadgen::fixed(server_path),
                    };
                    loadgen::run(&load(self.plan.hit_warmup)).await;
                    // The server under test first, then every other of ours.
                    let running: Vec<&Server> = std::iter::once(server)
                        .chain(all.iter().copied().filter(|s| !std::ptr::eq(*s, server)))
                        .collect();
                    let meter = CpuMeter::start(&running);
                    let report = loadgen::run(&load(self.plan.hit_run)).await;
                    let cpu = meter.finish(&running);
                    let cpu_per_request = cpu.server_seconds / report.ok.max(1) as f64;
                    println!(
                    "   {label} run {}: {:.0} req/s, {}, server CPU {:.1} µs/request, other processes {:.0}% CPU",
                    repeat + 1,
                    report.throughput(),
                    latency_summary(&report.latency),
                    cpu_per_request * 1e6,
                    cpu.foreign * 100.0
                );
                    self.details.push(format!(
                    "a. {label} run {}: {:.0} req/s over {} connections, {}, server CPU {:.1} µs/request, \
                     other processes {:.0} % of the CPU",
                    repeat + 1,
                    report.throughput(),
                    CONNECTIONS,
                    latency_summary(&report.latency),
                    cpu_per_request * 1e6,
                    cpu.foreign * 100.0
                ));
                    self.note_cpu(&format!("a. {label} run {}", repeat + 1), cpu.foreign);
                    self.fail_on_errors(&format!("a. {label}"), &report);
                    let total = &mut totals[slot];
                    total.0 += report.throughput();
                    total.1.merge(&report.latency);
                    total.2 += cpu_per_request;
                    total.3 += report.ok;
                    round[slot] = report.throughput();
                }
                rounds.push(round);
            }
            // A smoke run under the guard is measured again before it fails: a regression fails
            // every set, a spell of the machine's noise seldom does.
            match nginx_median(&rounds) {
                Some(median)
                    if self.plan.smoke && median < NGINX_GUARD && under.len() + 1 < GUARD_SETS =>
                {
                    println!("   the gateway served {median:.2}× nginx (median of the rounds): measuring again");
                    under.push(median);
                }
                _ => break,
            }
        }
        for (set, median) in under.iter().enumerate() {
            self.details.push(format!(
                "a. set {} of rounds gave the gateway {median:.2}× nginx, under the guard: measured again",
                set + 1
            ));
        }
        let runs = self.plan.hit_repeats as f64;
        let (gateway_rps, baseline_rps) = (totals[0].0 / runs, totals[1].0 / runs);
        let ratio = gateway_rps / baseline_rps.max(1e-9);
        self.cache_hit_rps = Some(gateway_rps);
        self.rows.push(Row {
            name: format!("a. cache-hit throughput, {CONNECTIONS} connections"),
            result: format!(
                "{gateway_rps:.0} req/s = {ratio:.2}× the minimal hyper server ({baseline_rps:.0} req/s)"
            ),
            target: format!("≥ {CACHE_HIT_RATIO_TARGET:.2}×"),
            met: Some(ratio >= CACHE_HIT_RATIO_TARGET),
        });
        let keyed_rps = totals[2].0 / runs;
        if let Some(nginx_slot) = totals.get(3) {
            let nginx_rps = nginx_slot.0 / runs;
            let versus = gateway_rps / nginx_rps.max(1e-9);
            self.rows.push(Row {
                name: format!("a. cache hits against nginx proxy_cache, {CONNECTIONS} connections"),
                result: format!(
                    "gateway {gateway_rps:.0} req/s = {versus:.2}× nginx ({nginx_rps:.0} req/s; {}, {:.1} µs CPU per hit); nginx = {:.2}× the minimal server",
                    latency_summary(&nginx_slot.1),
                    nginx_slot.2 / runs * 1e6,
                    nginx_rps / baseline_rps.max(1e-9)
                ),
                target: format!("≥ {NGINX_RATIO_TARGET:.1}×"),
                met: Some(versus >= NGINX_RATIO_TARGET),
            });
            let keyed_versus = keyed_rps / nginx_rps.max(1e-9);
            self.rows.push(Row {
                name: "a. cache hits with an inbound key and a rate limit".into(),
                result: format!(
                    "{keyed_rps:.0} req/s = {keyed_versus:.2}× nginx, {:.2}× the minimal server, {:.2}× the open gateway; {}, {:.1} µs CPU per hit",
                    keyed_rps / baseline_rps.max(1e-9),
                    keyed_rps / gateway_rps.max(1e-9),
                    latency_summary(&totals[2].1),
                    totals[2].2 / runs * 1e6,
                ),
                target: format!("≥ {NGINX_RATIO_TARGET:.1}× nginx"),
                met: Some(keyed_versus >= NGINX_RATIO_TARGET),
            });
            let median = nginx_median(&rounds).unwrap_or(0.0);
            self.details.push(format!(
                "a. the gateway's throughput ÷ nginx's, round by round: {} (median {median:.2}×)",
                rounds
                    .iter()
                    .map(|round| format!("{:.2}×", round[0] / round[3].max(1e-9)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            if self.plan.smoke && median < NGINX_GUARD {
                self.failures.push(format!(
                    "a. cache hits: the gateway served {median:.2}× nginx proxy_cache's throughput \
                     (the median of {} rounds, in each of {} sets; the guard is {NGINX_GUARD}×)",
                    rounds.len(),
                    under.len() + 1
                ));
            }
        } else {
            self.rows.push(Row {
                name: "a. cache hits against nginx proxy_cache".into(),
                result: "not measured: nginx is not installed on this machine".into(),
                target: format!("≥ {NGINX_RATIO_TARGET:.1}×"),
                met: None,
            });
            self.rows.push(Row {
                name: "a. cache hits with an inbound key and a rate limit".into(),
                result: format!(
                    "{keyed_rps:.0} req/s = {:.2}× the minimal server, {:.2}× the open gateway",
                    keyed_rps / baseline_rps.max(1e-9),
                    keyed_rps / gateway_rps.max(1e-9),
                ),
                target: "report".into(),
                met: None,
            });
        }
        let (p99, baseline_p99) = (totals[0].1.quantile(0.99), totals[1].1.quantile(0.99));
        let p99_ratio = p99.as_secs_f64() / baseline_p99.as_secs_f64().max(1e-9);
        self.rows.push(Row {
            name: "a. cache-hit latency".into(),
            result: format!(
                "p50 {} / p99 {} (baseline p50 {} / p99 {}: p99 {p99_ratio:.2}×); {:.1} µs CPU per hit (baseline {:.1})",
                ms(totals[0].1.quantile(0.5)),
                ms(p99),
                ms(totals[1].1.quantile(0.5)),
                ms(baseline_p99),
                totals[0].2 / runs * 1e6,
                totals[1].2 / runs * 1e6,
            ),
            target: format!("p99 ≤ {CACHE_HIT_P99_TARGET:.1}× baseline"),
            met: Some(p99_ratio <= CACHE_HIT_P99_TARGET),
        });
        self.details.push(format!(
            "a. cached answer: {} bytes ({} results from {} engines)",
            cached.body.len(),
            serde_json::from_slice::<serde_json::Value>(&cached.body)
                .ok()
                .and_then(|v| v["results"].as_array().map(Vec::len))
                .unwrap_or(0),
            ENGINES.len()
        ));
        baseline.stop();
        gateway.stop();
        keyed.stop();
        if let Some(nginx) = nginx {
            nginx.stop();
        }
        Ok(())
    }
}

/// The median over `rounds` of the gateway's throughput ÷ nginx's within a round (slots 0 and 3);
/// `None` without nginx.
fn nginx_median(rounds: &[Vec<f64>]) -> Option<f64> {
    let mut ratios: Vec<f64> = rounds
        .iter()
        .filter_map(|round| Some(round[0] / round.get(3)?.max(1e-9)))
        .collect();
    ratios.sort_by(f64::total_cmp);
    ratios.get(ratios.len() / 2).copied()
}
