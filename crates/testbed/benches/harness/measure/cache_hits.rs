//! a. Cache hits: 64 keep-alive connections on one cached query against the gateway, then against a
//! minimal hyper server answering the same bytes ([`crate::baseline`]), then against nginx's
//! `proxy_cache` in front of the same simulated SearXNG ([`crate::nginx`]), alternating; the
//! throughput ratios, the latency of each and the CPU each spends per request. Each at its
//! defaults: the gateway's line per search and nginx's access log are written (to `/dev/null` and
//! a file). In a smoke run, the gateway falling below [`NGINX_GUARD`] of nginx's throughput in the
//! same run fails it: a ratio within one run, so the machine's noise cancels.

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
/// Below this share of nginx's cache-hit throughput in the same run, the run fails (CI's guard).
/// Issue #28 asks for 0.8 once the hit path is faster; measured today (2026-12-02) the gateway
/// serves 0.72–0.74× nginx in a full run and less in a smoke (no LTO), so the guard sits under
/// today's level — it catches a regression from here, and rises with the hit-path work.
const NGINX_GUARD: f64 = 0.5;

impl Bench {
    /// a. Cache-hit throughput and latency against the minimal hyper server.
    pub(crate) async fn cache_hits(&mut self, searxng: &SimulatedSearxng) -> Result<(), BoxError> {
        let gateway = self.gateway(&gateway_env(searxng), "gateway-cache").await?;
        let path = search_path("cache hit benchmark");
        let first = loadgen::get(gateway.addr, &path).await?;
        let cached = loadgen::get(gateway.addr, &path).await?;
        let x_cache = cached.headers.get("x-cache").and_then(|v| v.to_str().ok());
        if first.status != 200 || x_cache != Some("hit") {
            return Err(
                format!("warm-up: status {} then X-Cache {x_cache:?}", first.status).into(),
            );
        }
        std::fs::create_dir_all(&self.log_dir)?;
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

        let mut servers = vec![
            (&gateway, path.as_str(), "gateway"),
            (&baseline, "/", "baseline"),
        ];
        if let Some(nginx) = &nginx {
            servers.push((nginx, path.as_str(), "nginx"));
        }
        let all: Vec<&Server> = servers.iter().map(|s| s.0).collect();
        let mut totals = vec![(0.0, Histogram::default(), 0.0, 0u64); servers.len()];
        for repeat in 0..self.plan.hit_repeats {
            for (slot, &(server, server_path, label)) in servers.iter().enumerate() {
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
            }
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
        if let Some(nginx_slot) = totals.get(2) {
            let nginx_rps = nginx_slot.0 / runs;
            let versus = gateway_rps / nginx_rps.max(1e-9);
            self.rows.push(Row {
                name: format!("a. cache hits against nginx proxy_cache, {CONNECTIONS} connections"),
                result: format!(
                    "gateway {gateway_rps:.0} req/s = {versus:.2}× nginx ({nginx_rps:.0} req/s; p50 {} / p99 {}, {:.1} µs CPU per hit); nginx = {:.2}× the minimal server",
                    ms(nginx_slot.1.quantile(0.5)),
                    ms(nginx_slot.1.quantile(0.99)),
                    nginx_slot.2 / runs * 1e6,
                    nginx_rps / baseline_rps.max(1e-9)
                ),
                target: format!("≥ {NGINX_RATIO_TARGET:.1}×"),
                met: Some(versus >= NGINX_RATIO_TARGET),
            });
            if self.plan.smoke && versus < NGINX_GUARD {
                self.failures.push(format!(
                    "a. cache hits: the gateway served {versus:.2}× nginx proxy_cache's throughput in \
                     this run (the guard is {NGINX_GUARD}×)"
                ));
            }
        } else {
            self.rows.push(Row {
                name: "a. cache hits against nginx proxy_cache".into(),
                result: "not measured: nginx is not installed on this machine".into(),
                target: format!("≥ {NGINX_RATIO_TARGET:.1}×"),
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
        if let Some(nginx) = nginx {
            nginx.stop();
        }
        Ok(())
    }
}
