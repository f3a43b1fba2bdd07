//! i. What tracing costs on the cache-hit path: a.'s load (64 keep-alive connections on one cached
//! query) against two gateways on the same SearXNG, one with tracing off and one exporting its
//! spans over OTLP/HTTP to a loopback sink ([`crate::otlp_sink`]), alternating like a. so drift
//! hits both; each one's throughput and CPU per hit, and the ratio. Tracing off is the product's
//! default and the configuration a. measures: the row puts it next to a.'s figure of the same run.

use crate::histogram::Histogram;
use crate::loadgen::{self, BoxError, Load};
use crate::otlp_sink::OtlpSink;
use crate::processes::CpuMeter;
use crate::report::Row;
use crate::{gateway_env, latency_summary, ms, search_path, Bench, CONNECTIONS};
use simulator::searxng::SimulatedSearxng;

/// Tracing off may differ from a.'s gateway (the same binary and configuration) by this much
/// before the row calls it more than noise.
const OFF_NOISE: f64 = 0.15;

/// One configuration's totals over the repeats.
#[derive(Default)]
struct Totals {
    rps: f64,
    latency: Histogram,
    cpu_per_hit: f64,
}

impl Bench {
    /// i. Cache hits with tracing off and with tracing on (OTLP to a loopback sink).
    pub(crate) async fn tracing_cost(
        &mut self,
        searxng: &SimulatedSearxng,
    ) -> Result<(), BoxError> {
        let sink = OtlpSink::start().await?;
        let off = self
            .gateway(&gateway_env(searxng), "gateway-tracing-off")
            .await?;
        let mut env = gateway_env(searxng);
        env.push((
            "OTEL_EXPORTER_OTLP_ENDPOINT".to_owned(),
            format!("http://{}", sink.addr),
        ));
        env.push((
            "OTEL_SERVICE_NAME".to_owned(),
            "searxng-gateway-bench".to_owned(),
        ));
        let on = self.gateway(&env, "gateway-tracing-on").await?;
        let path = search_path("tracing cost benchmark");
        for gateway in [&off, &on] {
            let _ = loadgen::get(gateway.addr, &path).await?;
            let cached = loadgen::get(gateway.addr, &path).await?;
            let x_cache = cached.headers.get("x-cache").and_then(|v| v.to_str().ok());
            if cached.status != 200 || x_cache != Some("hit") {
                return Err(
                    format!("warm-up: status {}, X-Cache {x_cache:?}", cached.status).into(),
                );
            }
        }

        let mut totals = [Totals::default(), Totals::default()];
        let mut exported = (0, 0);
        for repeat in 0..self.plan.hit_repeats {
            for (slot, (server, other, label)) in
                [(&off, &on, "tracing off"), (&on, &off, "tracing on")]
                    .into_iter()
                    .enumerate()
            {
                let load = |duration| Load {
                    addr: server.addr,
                    connections: CONNECTIONS,
                    duration,
                    max_requests: None,
                    path: loadgen::fixed(&path),
                };
                loadgen::run(&load(self.plan.hit_warmup)).await;
                let before = sink.received();
                let meter = CpuMeter::start(&[server, other]);
                let report = loadgen::run(&load(self.plan.hit_run)).await;
                let cpu = meter.finish(&[server, other]);
                let after = sink.received();
                let cpu_per_hit = cpu.server_seconds / report.ok.max(1) as f64;
                let exports = (after.0 - before.0, after.1 - before.1);
                if slot == 1 {
                    exported = (exported.0 + exports.0, exported.1 + exports.1);
                }
                let line = format!(
                    "{:.0} req/s, {}, server CPU {:.1} µs/hit, {} OTLP exports ({:.1} MB), other processes {:.0} % of the CPU",
                    report.throughput(),
                    latency_summary(&report.latency),
                    cpu_per_hit * 1e6,
                    exports.0,
                    exports.1 as f64 / 1e6,
                    cpu.foreign * 100.0
                );
                println!("   {label} run {}: {line}", repeat + 1);
                self.details
                    .push(format!("i. {label} run {}: {line}", repeat + 1));
                self.note_cpu(&format!("i. {label} run {}", repeat + 1), cpu.foreign);
                self.fail_on_errors(&format!("i. {label}"), &report);
                let total = &mut totals[slot];
                total.rps += report.throughput();
                total.latency.merge(&report.latency);
                total.cpu_per_hit += cpu_per_hit;
            }
        }
        off.stop();
        on.stop();
        // Spans leave in batches every few seconds: the last ones may still be on their way, but
        // a run with tracing on that exported nothing measured no tracing at all.
        if sink.received().0 == 0 {
            self.failures
                .push("i. tracing on: the gateway exported no spans to the sink".into());
        }
        let runs = self.plan.hit_repeats as f64;
        let [off_totals, on_totals] = totals;
        let (off_rps, on_rps) = (off_totals.rps / runs, on_totals.rps / runs);
        let ratio = on_rps / off_rps.max(1e-9);
        let versus_a = self.cache_hit_rps.map(|a_rps| off_rps / a_rps.max(1e-9));
        self.rows.push(Row {
            name: "i. cache hits, tracing off".into(),
            result: format!(
                "{off_rps:.0} req/s{}, p50 {} / p99 {}, {:.1} µs CPU per hit",
                match versus_a {
                    Some(share) => format!(" = {share:.2}× a.'s gateway in this run"),
                    None => String::new(),
                },
                ms(off_totals.latency.quantile(0.5)),
                ms(off_totals.latency.quantile(0.99)),
                off_totals.cpu_per_hit / runs * 1e6,
            ),
            target: format!("as a. (within ±{:.0} %)", OFF_NOISE * 100.0),
            met: versus_a.map(|share| (share - 1.0).abs() <= OFF_NOISE),
        });
        self.rows.push(Row {
            name: "i. cache hits, tracing on (OTLP to a loopback sink)".into(),
            result: format!(
                "{on_rps:.0} req/s = {ratio:.2}× tracing off, p50 {} / p99 {}, {:.1} µs CPU per hit; \
                 {} OTLP exports ({:.1} MB) during the runs",
                ms(on_totals.latency.quantile(0.5)),
                ms(on_totals.latency.quantile(0.99)),
                on_totals.cpu_per_hit / runs * 1e6,
                exported.0,
                exported.1 as f64 / 1e6,
            ),
            target: "report".into(),
            met: None,
        });
        Ok(())
    }
}
