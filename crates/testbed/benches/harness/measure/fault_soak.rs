//! g. The soak with faults: the gateway at saturation while its upstreams — the simulated SearXNG,
//! Brave and Exa — take turns misbehaving through every fault of the matrix
//! (`simulator::fault::Fault::MATRIX`), one upstream and one fault per phase. Every answer must be
//! one the gateway documents — a 200, the 502 `all_upstreams_failed` or the 503 `overloaded`, each
//! with its JSON body — anything else (a transport error, another status, a body that is not the
//! documented JSON) is an unexpected error. Resident memory and open file descriptors are sampled
//! throughout and must stay flat after warm-up.
//!
//! One fault needs memory by design: while an upstream sends 20 MB bodies (`huge_body`), the
//! gateway holds what it has read of each until the body outgrows the shared body budget
//! (`upstream::http`, 16 MiB beyond 256 KiB per body). Samples taken during those phases, and in
//! the phase after (the calls still in flight), are reported as their own peak per pass; flatness
//! is judged on the others — memory that stays behind after the huge bodies is growth and shows
//! there.

use std::sync::Arc;
use std::time::Duration;

use simulator::fault::Fault;
use simulator::premium::{ProviderBehaviour, SimulatedProvider, SIM_KEY};
use simulator::searxng::{SearxngMode, SimulatedSearxng};
use simulator::Provider;
use tokio::time::Instant;

use crate::loadgen::{self, Answer, BoxError, Load};
use crate::processes::CpuMeter;
use crate::report::Row;
use crate::{latency_summary, mb, search_path, Bench, CONNECTIONS, ENGINES};

/// RSS may vary this much after warm-up.
const SPREAD_TARGET: f64 = 0.05;
/// Distinct queries: twice the default cache, so about half the searches fan out.
const KEYS: u64 = 2_000;
/// Phases of a run: 3⅓ passes through the matrix (each of three upstreams × twelve faults). The
/// first pass is the warm-up — the workload is the cycle, so the working set is only known once
/// every fault has been seen — and the flatness checks look at the passes after it.
const PHASES: u32 = 120;
/// Phases in one pass.
const CYCLE: usize = 36;

/// The gateway's documented answers besides a 200: the 502 and the 503, with their JSON bodies.
fn documented(answer: &Answer) -> bool {
    let code = serde_json::from_slice::<serde_json::Value>(&answer.body)
        .ok()
        .and_then(|json| json["error"].as_str().map(str::to_owned));
    matches!(
        (answer.status, code.as_deref()),
        (502, Some("all_upstreams_failed")) | (503, Some("overloaded"))
    )
}

/// Who misbehaves in a phase.
enum Upstream<'a> {
    Searxng(&'a SimulatedSearxng),
    Provider(&'a SimulatedProvider),
}

impl Upstream<'_> {
    fn name(&self) -> &'static str {
        match self {
            Upstream::Searxng(_) => "searxng",
            Upstream::Provider(p) => p.kind().as_str(),
        }
    }

    fn fault(&self, fault: Fault) {
        match self {
            Upstream::Searxng(s) => s.set_mode(SearxngMode::Fault(fault)),
            Upstream::Provider(p) => p.set_behaviour(ProviderBehaviour::Fault(fault)),
        }
    }

    fn heal(&self) {
        match self {
            Upstream::Searxng(s) => s.set_mode(SearxngMode::Normal),
            Upstream::Provider(p) => p.set_behaviour(healthy()),
        }
    }
}

fn healthy() -> ProviderBehaviour {
    ProviderBehaviour::results(5, "https://premium.example/result/")
}

/// The fault of phase `index`: each fault for one phase per upstream, then the next.
fn fault_of(index: u32, upstreams: usize) -> Fault {
    Fault::MATRIX[(index as usize / upstreams) % Fault::MATRIX.len()]
}

impl Bench {
    /// g. A soak at saturation while the upstreams cycle through the fault matrix.
    pub(crate) async fn fault_soak(&mut self) -> Result<(), BoxError> {
        let searxng = SimulatedSearxng::start(&ENGINES).await?;
        let brave = SimulatedProvider::start(Provider::Brave).await?;
        let exa = SimulatedProvider::start(Provider::Exa).await?;
        for provider in [&brave, &exa] {
            provider.set_behaviour(healthy());
        }
        let env: Vec<(String, String)> = [
            ("SEARXNG_BACKEND_URL", searxng.base_url()),
            ("FALLBACK_PROVIDERS", "brave,exa".to_owned()),
            ("BRAVE_API_KEY", SIM_KEY.to_owned()),
            ("BRAVE_BASE_URL", brave.base_url()),
            ("EXA_API_KEY", SIM_KEY.to_owned()),
            ("EXA_BASE_URL", exa.base_url()),
            ("T1_PREMIUM_COUNT", "1".to_owned()),
            // A short budget and short open periods: hanging upstreams hold a slot for at most
            // 3 s, and tripped breakers come back within the phase after, so every phase sees
            // the fault it scripts rather than an open breaker.
            ("FALLBACK_TIMEOUT_SECONDS", "3".to_owned()),
            ("SEARXNG_TIMEOUT_SECONDS", "1".to_owned()),
            ("PROVIDER_TIMEOUT_SECONDS", "1".to_owned()),
            ("BREAKER_OPEN_SECONDS", "2".to_owned()),
            ("BREAKER_MAX_OPEN_SECONDS", "4".to_owned()),
            ("SEARXNG_FAIL_COOLDOWN_SECONDS", "2".to_owned()),
        ]
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect();
        let gateway = self.gateway(&env, "gateway-fault-soak").await?;
        let upstreams = [
            Upstream::Searxng(&searxng),
            Upstream::Provider(&brave),
            Upstream::Provider(&exa),
        ];
        let load = Load {
            addr: gateway.addr,
            connections: CONNECTIONS,
            duration: self.plan.soak,
            max_requests: None,
            path: Arc::new(|n| {
                let key = (n.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) % KEYS;
                search_path(&format!("fault soak {key}"))
            }),
        };
        let phase_length = self.plan.soak / PHASES;
        let meter = CpuMeter::start(&[&gateway]);
        // (when, RSS, open fds, during or right after a huge-body phase)
        let mut samples: Vec<(Duration, u64, u64, bool)> = Vec::new();
        let mut phases: Vec<String> = Vec::new();
        let started = Instant::now();
        let running = loadgen::run_tolerating(&load, documented);
        tokio::pin!(running);
        let mut phase = 0u32;
        let mut next_phase = Instant::now();
        let mut next_sample = Instant::now() + self.plan.soak_sample;
        let report = loop {
            tokio::select! {
                report = &mut running => break report,
                () = tokio::time::sleep_until(next_phase) => {
                    let index = phase as usize;
                    let upstream = &upstreams[index % upstreams.len()];
                    let fault = fault_of(phase, upstreams.len());
                    for other in &upstreams {
                        other.heal();
                    }
                    upstream.fault(fault);
                    phases.push(format!("{} × {}", upstream.name(), fault.name()));
                    phase += 1;
                    next_phase += phase_length;
                }
                () = tokio::time::sleep_until(next_sample) => {
                    let (rss, fds) = (gateway.rss_bytes()?, gateway.open_fds()?);
                    let huge = (1..=2).any(|back| {
                        phase.checked_sub(back).is_some_and(|p| {
                            matches!(fault_of(p, upstreams.len()), Fault::HugeBody { .. })
                        })
                    });
                    samples.push((started.elapsed(), rss, fds, huge));
                    if !self.plan.smoke {
                        println!(
                            "   {:>4.0} s: RSS {}, {fds} fds, phase {}",
                            started.elapsed().as_secs_f64(),
                            mb(rss),
                            phases.last().map_or("", String::as_str)
                        );
                    }
                    next_sample += self.plan.soak_sample;
                }
            }
        };
        let cpu = meter.finish(&[&gateway]);
        self.note_cpu("g. soak with faults", cpu.foreign);
        self.fail_on_errors("g. soak with faults", &report);
        // The first pass through the matrix is warm-up; the same window decides both checks.
        let warm_up = phase_length * CYCLE as u32;
        let after_warm_up: Vec<(Duration, u64, u64, bool)> =
            samples.iter().copied().filter(|s| s.0 > warm_up).collect();
        let steady: Vec<(Duration, u64, u64, bool)> =
            after_warm_up.iter().copied().filter(|s| !s.3).collect();
        let steady = &steady[..];
        // The highest sample of each pass's huge-body phases (the first pass included).
        let pass_length = warm_up.as_secs_f64();
        let mut huge_peaks: Vec<u64> = Vec::new();
        for (at, rss, _, huge) in &samples {
            if *huge {
                let pass = (at.as_secs_f64() / pass_length) as usize;
                if huge_peaks.len() <= pass {
                    huge_peaks.resize(pass + 1, 0);
                }
                huge_peaks[pass] = huge_peaks[pass].max(*rss);
            }
        }
        let huge_peaks: Vec<String> = huge_peaks
            .iter()
            .filter(|peak| **peak > 0)
            .map(|peak| mb(*peak))
            .collect();
        let range = |values: Vec<u64>| {
            (
                values.iter().copied().min().unwrap_or(0),
                values.iter().copied().max().unwrap_or(0),
            )
        };
        let (low, high) = range(steady.iter().map(|s| s.1).collect());
        let (fd_low, fd_high) = range(after_warm_up.iter().map(|s| s.2).collect());
        let spread = (high - low) as f64 / low.max(1) as f64;
        // Descriptors are connections: they follow the load and the faults, so "flat" is no
        // growth — the last samples hold no more than the steady range's first part did.
        let fd_growth = after_warm_up.len() > 4 && {
            let half = after_warm_up.len() / 2;
            let early = after_warm_up[..half].iter().map(|s| s.2).max().unwrap_or(0);
            let late = after_warm_up[half..].iter().map(|s| s.2).max().unwrap_or(0);
            late > early + 8
        };
        let tolerated: Vec<String> = report
            .tolerated
            .iter()
            .map(|(status, count)| format!("{count} × {status}"))
            .collect();
        println!(
            "   {} answers, {} unexpected errors; 200: {}, documented others: {}; RSS {}–{} ({:.1}% spread) outside huge bodies, huge-body peaks {}, fds {fd_low}–{fd_high}",
            report.ok + report.tolerated.values().sum::<u64>() + report.errors,
            report.errors,
            report.ok,
            tolerated.join(", "),
            mb(low),
            mb(high),
            spread * 100.0,
            huge_peaks.join(", ")
        );
        self.rows.push(Row {
            name: format!(
                "g. soak with faults, {:.0} s, {} phases",
                self.plan.soak.as_secs_f64(),
                phases.len()
            ),
            result: format!(
                "{} unexpected errors in {} answers ({} × 200; {}); after the first pass: RSS {}–{} ({:.1} % spread) \
                 outside the huge-body phases, {fd_low}–{fd_high} open fds{}; huge-body phases peak at {} per pass",
                report.errors,
                report.ok + report.tolerated.values().sum::<u64>() + report.errors,
                report.ok,
                if tolerated.is_empty() {
                    "no 502 or 503".to_owned()
                } else {
                    tolerated.join(", ")
                },
                mb(low),
                mb(high),
                spread * 100.0,
                if fd_growth { " (growing)" } else { "" },
                huge_peaks.join(", ")
            ),
            target: "0 unexpected errors, RSS flat within 5 %, fds flat".into(),
            met: Some(report.errors == 0 && spread <= SPREAD_TARGET && !fd_growth),
        });
        let trace: Vec<String> = samples
            .iter()
            .map(|(at, rss, fds, huge)| {
                format!(
                    "{:.0}s {:.1}/{fds}{}",
                    at.as_secs_f64(),
                    *rss as f64 / 1e6,
                    if *huge { " (huge)" } else { "" }
                )
            })
            .collect();
        self.details.push(format!(
            "g. soak with faults: {CONNECTIONS} connections, {KEYS} distinct queries over the default cache; SearXNG, \
             Brave (T1) and Exa (fallback) take turns through the fault matrix, {:.0} s per phase: {}; {}; other \
             processes {:.0} % of the CPU. Samples (RSS MB / open fds; \"huge\": during or right after a huge-body phase): {}",
            phase_length.as_secs_f64(),
            phases.join(", "),
            latency_summary(&report.latency),
            cpu.foreign * 100.0,
            trace.join(", ")
        ));
        gateway.stop();
        Ok(())
    }
}
