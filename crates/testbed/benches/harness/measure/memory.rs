//! e. Memory: `VmRSS` of a freshly started gateway, with a cache filled to 100 000 answers (stopping early at a
//! guard, since the machine is shared), and over a soak at saturation that should stay flat.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::loadgen::{self, BoxError, Load, LoadReport};
use crate::processes::CpuMeter;
use crate::report::Row;
use crate::{gateway_env, latency_summary, mb, search_path, Bench, CONNECTIONS};
use simulator::searxng::SimulatedSearxng;

/// Resident memory of an idle gateway.
const IDLE_RSS_TARGET: u64 = 25_000_000;
/// How far RSS may move during the soak after warm-up, as a share of its lowest value.
const SOAK_SPREAD_TARGET: f64 = 0.05;
/// A cached answer's resident memory as a multiple of its JSON size, at most (issue #16).
const ENTRY_OVERHEAD_TARGET: f64 = 1.3;
/// The cache fill stops early when the gateway's RSS passes this: the machine is shared.
const MEMORY_GUARD: u64 = 4_000_000_000;
/// The cache is filled in steps of this many searches, checking the guard between steps.
const FILL_STEP: u64 = 10_000;
/// Distinct queries in the soak, twice the default cache: about half the requests miss.
const SOAK_KEYS: u64 = 2_000;

impl Bench {
    /// e. `VmRSS` of a gateway that has started and done nothing else.
    pub(crate) async fn idle_memory(&mut self, searxng: &SimulatedSearxng) -> Result<(), BoxError> {
        let gateway = self.gateway(&gateway_env(searxng), "gateway-idle").await?;
        // Let the start-up work (SearXNG /config, JSON check) finish.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let rss = gateway.rss_bytes()?;
        println!("   idle RSS {}", mb(rss));
        self.rows.push(Row {
            name: "e. RSS idle".into(),
            result: mb(rss),
            target: format!("≤ {}", mb(IDLE_RSS_TARGET)),
            met: Some(rss <= IDLE_RSS_TARGET),
        });
        gateway.stop();
        Ok(())
    }

    /// e. `VmRSS` once the cache holds `fill_entries` answers, and the cost per entry.
    pub(crate) async fn cache_memory(
        &mut self,
        searxng: &SimulatedSearxng,
    ) -> Result<(), BoxError> {
        let mut env = gateway_env(searxng);
        env.push(("CACHE_SIZE".into(), "100000".into()));
        let gateway = self.gateway(&env, "gateway-fill").await?;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let idle = gateway.rss_bytes()?;
        let wanted = self.plan.fill_entries;
        let mut sent = 0;
        let mut report = LoadReport::default();
        let mut rss = idle;
        while sent < wanted && rss < MEMORY_GUARD {
            let step = FILL_STEP.min(wanted - sent);
            let offset = sent;
            let part = loadgen::run(&Load {
                addr: gateway.addr,
                connections: CONNECTIONS,
                duration: Duration::from_secs(1_800),
                max_requests: Some(step),
                path: Arc::new(move |n| search_path(&format!("fill {}", offset + n))),
            })
            .await;
            report.elapsed += part.elapsed;
            report.merge(part);
            sent += step;
            rss = gateway.rss_bytes()?;
        }
        self.fail_on_errors("e. cache fill", &report);
        let status = loadgen::get(gateway.addr, "/status").await?;
        let status: serde_json::Value = serde_json::from_slice(&status.body)?;
        let cached = status["cache"]["size"].as_u64().unwrap_or(0);
        let per_entry = rss.saturating_sub(idle) / cached.max(1);
        let answer = report.body_bytes / report.ok.max(1);
        println!(
            "   {cached} entries: RSS {} ({per_entry} bytes per entry, answers {answer} bytes); filled at {:.0} misses/s",
            mb(rss),
            report.throughput()
        );
        if cached != sent {
            self.failures.push(format!(
                "e. cache fill: {cached} entries cached after {sent} distinct searches"
            ));
        }
        let guard = if sent < wanted {
            format!(
                "; stopped at {sent} of {wanted} entries by the {} memory guard, so {wanted} would take ≈ {}",
                mb(MEMORY_GUARD),
                mb(idle + per_entry * wanted)
            )
        } else {
            String::new()
        };
        let overhead = per_entry as f64 / answer.max(1) as f64;
        self.rows.push(Row {
            name: format!("e. RSS with {cached} cached answers"),
            result: format!(
                "{} ({} idle; ≈ {:.1} kB per entry for {:.1} kB answers: {overhead:.2}×{guard})",
                mb(rss),
                mb(idle),
                per_entry as f64 / 1e3,
                answer as f64 / 1e3
            ),
            target: format!("≤ {ENTRY_OVERHEAD_TARGET:.1}× the answer"),
            met: Some(overhead <= ENTRY_OVERHEAD_TARGET),
        });
        self.details.push(format!(
            "e. cache fill: {sent} distinct searches over {CONNECTIONS} connections at {:.0} misses/s ({})",
            report.throughput(),
            latency_summary(&report.latency)
        ));
        gateway.stop();
        Ok(())
    }

    /// e. `VmRSS` sampled over a soak at saturation, half the searches missing.
    pub(crate) async fn soak(&mut self, searxng: &SimulatedSearxng) -> Result<(), BoxError> {
        let gateway = self.gateway(&gateway_env(searxng), "gateway-soak").await?;
        let load = Load {
            addr: gateway.addr,
            connections: CONNECTIONS,
            duration: self.plan.soak,
            max_requests: None,
            // A scattered walk over twice the cache's capacity: about half the searches miss.
            path: Arc::new(|n| {
                let key = (n.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) % SOAK_KEYS;
                search_path(&format!("soak {key}"))
            }),
        };
        let meter = CpuMeter::start(&[&gateway]);
        let mut samples: Vec<(Duration, u64)> = Vec::new();
        let started = Instant::now();
        let running = loadgen::run(&load);
        tokio::pin!(running);
        let report = loop {
            tokio::select! {
                report = &mut running => break report,
                () = tokio::time::sleep(self.plan.soak_sample) => {
                    let rss = gateway.rss_bytes()?;
                    samples.push((started.elapsed(), rss));
                    if !self.plan.smoke {
                        println!("   {:>4.0} s: RSS {}", started.elapsed().as_secs_f64(), mb(rss));
                    }
                }
            }
        };
        let cpu = meter.finish(&[&gateway]);
        self.note_cpu("e. soak", cpu.foreign);
        self.fail_on_errors("e. soak", &report);
        // The first tenth is warm-up: the cache fills, buffers grow to their working size.
        let warm = samples.len() / 10 + 1;
        let steady: Vec<u64> = samples.iter().skip(warm).map(|(_, rss)| *rss).collect();
        let (low, high) = (
            steady.iter().copied().min().unwrap_or(0),
            steady.iter().copied().max().unwrap_or(0),
        );
        let spread = (high - low) as f64 / low.max(1) as f64;
        println!(
            "   {:.0} req/s, {} errors, RSS {}–{} after warm-up ({:.1}% spread)",
            report.throughput(),
            report.errors,
            mb(low),
            mb(high),
            spread * 100.0
        );
        self.rows.push(Row {
            name: format!(
                "e. soak at saturation, {:.0} s",
                self.plan.soak.as_secs_f64()
            ),
            result: format!(
                "RSS {}–{} after warm-up ({:.1} % spread); {} requests at {:.0} req/s, {} errors",
                mb(low),
                mb(high),
                spread * 100.0,
                report.ok + report.errors,
                report.throughput(),
                report.errors
            ),
            target: "flat within 5 %, 0 errors".into(),
            met: Some(spread <= SOAK_SPREAD_TARGET && report.errors == 0),
        });
        let trace: Vec<String> = samples
            .iter()
            .map(|(at, rss)| format!("{:.0}s {:.1}", at.as_secs_f64(), *rss as f64 / 1e6))
            .collect();
        self.details.push(format!(
            "e. soak: {CONNECTIONS} connections, {SOAK_KEYS} distinct queries scattered over the default 1000-entry \
             cache (about half miss and reach the simulated SearXNG); {}; other processes {:.0} % of the CPU. \
             RSS samples (MB): {}",
            latency_summary(&report.latency),
            cpu.foreign * 100.0,
            trace.join(", ")
        ));
        gateway.stop();
        Ok(())
    }
}
