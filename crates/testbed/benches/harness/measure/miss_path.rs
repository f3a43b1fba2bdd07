//! b. The miss path: one connection, `CACHE_SIZE=0`, the same search sent through the gateway, straight
//! to the simulated SearXNG and — when nginx is installed — through nginx's plain `proxy_pass` hop
//! ([`crate::nginx`]), in alternating blocks (so drift hits all); the latency the gateway adds, and
//! what nginx's hop adds beside it.

use std::time::Duration;

use crate::histogram::Histogram;
use crate::loadgen::{self, BoxError, Load};
use crate::nginx::{self, NginxRole};
use crate::processes::{CpuMeter, Server};
use crate::report::Row;
use crate::{gateway_env, latency_summary, search_path, us, Bench};
use simulator::searxng::SimulatedSearxng;

/// Latency the gateway may add to a miss, p50 and p99.
const MISS_P50_TARGET: Duration = Duration::from_micros(150);
const MISS_P99_TARGET: Duration = Duration::from_millis(1);
/// The gateway's own CPU per miss, at most (issue #16).
const MISS_CPU_TARGET: Duration = Duration::from_micros(150);
/// What a miss through the gateway adds, as a multiple of what nginx's hop adds, at most (#28).
const NGINX_HOP_TARGET: f64 = 2.0;

impl Bench {
    /// b. The latency a miss adds over calling the simulated SearXNG directly.
    pub(crate) async fn miss_path(&mut self, searxng: &SimulatedSearxng) -> Result<(), BoxError> {
        let mut env = gateway_env(searxng);
        env.push(("CACHE_SIZE".into(), "0".into()));
        let gateway = self.gateway(&env, "gateway-miss").await?;
        let query = "miss path benchmark";
        let through_gateway = search_path(query);
        let encoded: String = url::form_urlencoded::byte_serialize(query.as_bytes()).collect();
        // What the gateway itself sends SearXNG for this search.
        let direct = format!("/search?q={encoded}&format=json&locale=en");
        let probe = loadgen::get(gateway.addr, &through_gateway).await?;
        let x_cache = probe.headers.get("x-cache").and_then(|v| v.to_str().ok());
        if probe.status != 200 || x_cache != Some("miss") {
            return Err(format!("probe: status {}, X-Cache {x_cache:?}", probe.status).into());
        }
        let searxng_addr = searxng.address();
        let sequential = |addr, path: &str, requests| Load {
            addr,
            connections: 1,
            duration: Duration::from_secs(120),
            max_requests: Some(requests),
            path: loadgen::fixed(path),
        };
        let hop = if nginx::installed() {
            Some(Server::nginx(NginxRole::Hop, searxng_addr, &self.log_dir).await?)
        } else {
            None
        };
        // Warm every path (connections, allocator, branch predictors).
        loadgen::run(&sequential(searxng_addr, &direct, 100)).await;
        loadgen::run(&sequential(gateway.addr, &through_gateway, 100)).await;
        if let Some(hop) = &hop {
            loadgen::run(&sequential(hop.addr, &direct, 100)).await;
        }
        let mut direct_latency = Histogram::default();
        let mut gateway_latency = Histogram::default();
        let mut hop_latency = Histogram::default();
        let meter = CpuMeter::start(&[&gateway]);
        let searxng_before = searxng.hits();
        let blocks = (self.plan.miss_requests / self.plan.miss_block).max(1);
        for _ in 0..blocks {
            let report =
                loadgen::run(&sequential(searxng_addr, &direct, self.plan.miss_block)).await;
            self.fail_on_errors("b. direct", &report);
            direct_latency.merge(&report.latency);
            let report = loadgen::run(&sequential(
                gateway.addr,
                &through_gateway,
                self.plan.miss_block,
            ))
            .await;
            self.fail_on_errors("b. gateway", &report);
            gateway_latency.merge(&report.latency);
            if let Some(hop) = &hop {
                let report =
                    loadgen::run(&sequential(hop.addr, &direct, self.plan.miss_block)).await;
                self.fail_on_errors("b. nginx hop", &report);
                hop_latency.merge(&report.latency);
            }
        }
        let cpu = meter.finish(&[&gateway]);
        let upstream_calls = searxng.hits() - searxng_before;
        let legs = if hop.is_some() { 3 } else { 2 };
        let expected = (blocks * self.plan.miss_block * legs) as usize;
        if upstream_calls != expected {
            self.failures.push(format!(
                "b. miss path: SearXNG saw {upstream_calls} searches, expected {expected} (is the cache off?)"
            ));
        }
        let added = |quantile| {
            gateway_latency
                .quantile(quantile)
                .saturating_sub(direct_latency.quantile(quantile))
        };
        let (added_p50, added_p99) = (added(0.5), added(0.99));
        let per_miss = cpu.server_seconds / gateway_latency.count().max(1) as f64;
        println!(
            "   direct {}; through the gateway {}; gateway CPU {:.0} µs/miss; other processes {:.0}% CPU",
            latency_summary(&direct_latency),
            latency_summary(&gateway_latency),
            per_miss * 1e6,
            cpu.foreign * 100.0
        );
        self.note_cpu("b. miss path", cpu.foreign);
        self.rows.push(Row {
            name: "b. miss path: latency added, p50".into(),
            result: format!(
                "{} ({} through the gateway − {} direct); gateway CPU {:.0} µs per miss",
                us(added_p50),
                us(gateway_latency.quantile(0.5)),
                us(direct_latency.quantile(0.5)),
                per_miss * 1e6
            ),
            target: format!("≤ {}", us(MISS_P50_TARGET)),
            met: Some(added_p50 <= MISS_P50_TARGET),
        });
        self.rows.push(Row {
            name: "b. miss path: latency added, p99".into(),
            result: format!(
                "{} ({} − {})",
                us(added_p99),
                us(gateway_latency.quantile(0.99)),
                us(direct_latency.quantile(0.99))
            ),
            target: format!("≤ {}", us(MISS_P99_TARGET)),
            met: Some(added_p99 <= MISS_P99_TARGET),
        });
        if let Some(hop) = hop {
            let nginx_added = |quantile| {
                hop_latency
                    .quantile(quantile)
                    .saturating_sub(direct_latency.quantile(quantile))
            };
            let (nginx_p50, nginx_p99) = (nginx_added(0.5), nginx_added(0.99));
            let versus = added_p50.as_secs_f64() / nginx_p50.as_secs_f64().max(1e-6);
            self.rows.push(Row {
                name: "b. miss path against nginx's proxy_pass hop".into(),
                result: format!(
                    "nginx adds {} p50 / {} p99 ({}); the gateway adds {versus:.1}× nginx's p50",
                    us(nginx_p50),
                    us(nginx_p99),
                    latency_summary(&hop_latency)
                ),
                target: format!("≤ {NGINX_HOP_TARGET:.0}×"),
                met: Some(versus <= NGINX_HOP_TARGET),
            });
            hop.stop();
        } else {
            self.rows.push(Row {
                name: "b. miss path against nginx's proxy_pass hop".into(),
                result: "not measured: nginx is not installed on this machine".into(),
                target: format!("≤ {NGINX_HOP_TARGET:.0}×"),
                met: None,
            });
        }
        let cpu_per_miss = Duration::try_from_secs_f64(per_miss).unwrap_or_default();
        self.rows.push(Row {
            name: "b. miss path: gateway CPU per miss".into(),
            result: us(cpu_per_miss),
            target: format!("≤ {}", us(MISS_CPU_TARGET)),
            met: Some(cpu_per_miss <= MISS_CPU_TARGET),
        });
        self.details.push(format!(
            "b. {} sequential searches each way on one keep-alive connection, alternating blocks of {}: direct {}; \
             through the gateway (CACHE_SIZE=0) {}; gateway CPU {:.0} µs per miss; other processes {:.0} % of the CPU",
            blocks * self.plan.miss_block,
            self.plan.miss_block,
            latency_summary(&direct_latency),
            latency_summary(&gateway_latency),
            per_miss * 1e6,
            cpu.foreign * 100.0
        ));
        gateway.stop();
        Ok(())
    }
}
