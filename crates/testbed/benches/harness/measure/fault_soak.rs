//! g. The soak with faults: the gateway at saturation while its upstreams — the simulated SearXNG,
//! Brave and Exa — take turns misbehaving through every fault of the matrix
//! (`simulator::fault::Fault::MATRIX`), one upstream and one fault per phase. Every answer must be
//! one the gateway documents — a 200, the 502 `all_upstreams_failed` or the 503 `overloaded`, each
//! with its JSON body — anything else (a transport error, another status, a body that is not the
//! documented JSON) is an unexpected error. Resident memory and open file descriptors are sampled
//! throughout and must stay flat after warm-up. Every answer is counted in the phase it arrived in,
//! and each 502 by the cause its body names (which upstreams were skipped as open, which were called
//! and failed how), so the report says why the 502s are there.
//!
//! What "flat" compares: the workload is the cycle through the matrix (a pass), so the steady state
//! is a pass, not an instant. Within a pass resident memory follows what the scripted fault keeps
//! in flight — calls that fail at once hold little, 64 searches waiting on a hanging upstream hold
//! more — so single samples differ by tens of percent by design. Growth shows pass over pass: each
//! pass after the first (the warm-up) has a level, the mean of its samples, and the levels must lie
//! within 5 % of each other. The run is whole passes, sampled at the same points of each, so every
//! level averages the same phases.
//!
//! One fault needs memory by design: while an upstream sends 20 MB bodies (`huge_body`), the
//! gateway holds what it has read of each until the body outgrows the shared body budget
//! (`upstream::http`, 16 MiB beyond 256 KiB per body). Samples taken during those phases, and in
//! the phase after (the calls still in flight), are reported as their own peak per pass and left
//! out of the levels; memory that stays behind after the huge bodies is growth and shows in the
//! levels of the passes after.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
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

/// The passes' RSS levels after warm-up may differ this much (a share of the lowest).
const SPREAD_TARGET: f64 = 0.05;
/// Distinct queries: twice the default cache, so about half the searches fan out.
const KEYS: u64 = 2_000;
/// Passes through the matrix in a run. The first is the warm-up — the workload is the cycle, so the
/// working set is only known once every fault has been seen — and the checks compare the others.
const PASSES: u32 = 4;
/// Phases in one pass: each of three upstreams × twelve faults.
const CYCLE: usize = 36;
/// Phases of a run.
const PHASES: u32 = PASSES * CYCLE as u32;
/// Samples of RSS and open fds per pass, at the same points of each pass (every second in a full
/// run: a pass's level averages enough of them that the moment a sample falls on does not move it).
const SAMPLES_PER_PASS: u32 = 150;
/// Every this many samples is printed and listed in the report's details.
const LISTED_EVERY: usize = 5;

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

/// Why an answer was not a 200, as the gateway said it: `overloaded` for a 503, and for a 502 the
/// body's `upstreams` list (`searxng: cooldown, brave: keys_unusable, exa: breaker_open`) — which
/// upstreams were skipped as open, and which were called and failed how.
fn cause(answer: &Answer) -> String {
    let json = serde_json::from_slice::<serde_json::Value>(&answer.body).unwrap_or_default();
    if answer.status != 502 {
        return json["error"].as_str().unwrap_or("undocumented").to_owned();
    }
    let mut upstreams: Vec<String> = json["upstreams"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|u| {
                    format!(
                        "{}: {}",
                        u["name"].as_str().unwrap_or("?"),
                        u["error_class"].as_str().unwrap_or("?")
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    // The providers are listed in the order they were offered, which rotates: one cause, one key.
    upstreams.sort_by_key(|u| (!u.starts_with("searxng"), u.clone()));
    upstreams.join(", ")
}

/// The answers that arrived during one phase: 200s, and the others by [`cause`].
#[derive(Default, Clone)]
struct PhaseTally {
    ok: u64,
    by_cause: BTreeMap<String, u64>,
}

impl PhaseTally {
    fn failed(&self) -> u64 {
        self.by_cause.values().sum()
    }
}

/// One sample of the gateway's resources.
struct Sample {
    at: Duration,
    /// The pass through the matrix it was taken in (0: the warm-up).
    pass: usize,
    rss: u64,
    fds: u64,
    /// Taken during a huge-body phase or the one after it.
    huge: bool,
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
    /// The non-200 answers counted by the phase they came in (summed over the passes) and by
    /// their cause: printed, and one line of the report's details.
    fn report_failures_by_phase(&mut self, phases: &[String], tallies: &[PhaseTally]) {
        let mut by_phase: Vec<(&str, PhaseTally)> = Vec::new();
        for (name, tally) in phases.iter().zip(tallies) {
            let at = match by_phase.iter().position(|(n, _)| *n == name.as_str()) {
                Some(at) => at,
                None => {
                    by_phase.push((name.as_str(), PhaseTally::default()));
                    by_phase.len() - 1
                }
            };
            let entry = &mut by_phase[at].1;
            entry.ok += tally.ok;
            for (cause, count) in &tally.by_cause {
                *entry.by_cause.entry(cause.clone()).or_default() += count;
            }
        }
        let mut by_cause: BTreeMap<&str, u64> = BTreeMap::new();
        for (_, tally) in &by_phase {
            for (cause, count) in &tally.by_cause {
                *by_cause.entry(cause.as_str()).or_default() += count;
            }
        }
        let mut causes: Vec<(&str, u64)> = by_cause.into_iter().collect();
        causes.sort_by_key(|(_, count)| std::cmp::Reverse(*count));
        let causes: Vec<String> = causes
            .iter()
            .map(|(cause, count)| format!("{count} × [{cause}]"))
            .collect();
        let phases: Vec<String> = by_phase
            .iter()
            .filter(|(_, tally)| tally.failed() > 0)
            .map(|(name, tally)| {
                let mut causes: Vec<(&String, &u64)> = tally.by_cause.iter().collect();
                causes.sort_by_key(|(_, count)| std::cmp::Reverse(**count));
                let causes: Vec<String> = causes
                    .iter()
                    .map(|(cause, count)| format!("{count} × [{cause}]"))
                    .collect();
                format!(
                    "{name}: {} of {} ({})",
                    tally.failed(),
                    tally.ok + tally.failed(),
                    causes.join("; ")
                )
            })
            .collect();
        println!("   not 200, by cause: {}", causes.join("; "));
        println!("   not 200, by phase (all passes):");
        for phase in &phases {
            println!("     {phase}");
        }
        self.details.push(format!(
            "g. soak with faults, answers other than 200 by cause (each 502 by its body's upstreams): {}; by phase, \
             all passes summed: {}",
            causes.join("; "),
            phases.join(" | ")
        ));
    }

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
        let sample_every = phase_length * CYCLE as u32 / SAMPLES_PER_PASS;
        let meter = CpuMeter::start(&[&gateway]);
        let mut samples: Vec<Sample> = Vec::new();
        let mut phases: Vec<String> = Vec::new();
        let started = Instant::now();
        // Every answer is counted in the phase it arrived in, a 502 by what its body says.
        let current_phase = Arc::new(AtomicUsize::new(0));
        let tallies = Arc::new(Mutex::new(vec![PhaseTally::default(); PHASES as usize]));
        let observe: loadgen::Observe = {
            let (current_phase, tallies) = (Arc::clone(&current_phase), Arc::clone(&tallies));
            Arc::new(move |answer: &Answer| {
                let index = current_phase.load(Ordering::Relaxed);
                let cause = (answer.status != 200).then(|| cause(answer));
                let mut tallies = tallies.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(tally) = tallies.get_mut(index) {
                    match cause {
                        None => tally.ok += 1,
                        Some(cause) => *tally.by_cause.entry(cause).or_default() += 1,
                    }
                }
            })
        };
        let running = loadgen::run_observed(&load, documented, observe);
        tokio::pin!(running);
        let mut phase = 0u32;
        let mut next_phase = started;
        // Half an interval in, so the last sample falls inside the run.
        let sample_at = |n: u32| started + sample_every * (2 * n + 1) / 2;
        let report = loop {
            tokio::select! {
                report = &mut running => break report,
                () = tokio::time::sleep_until(next_phase), if phase < PHASES => {
                    let index = phase as usize;
                    let upstream = &upstreams[index % upstreams.len()];
                    let fault = fault_of(phase, upstreams.len());
                    for other in &upstreams {
                        other.heal();
                    }
                    upstream.fault(fault);
                    current_phase.store(index, Ordering::Relaxed);
                    phases.push(format!("{} × {}", upstream.name(), fault.name()));
                    phase += 1;
                    next_phase += phase_length;
                }
                () = tokio::time::sleep_until(sample_at(samples.len() as u32)) => {
                    let (rss, fds) = (gateway.rss_bytes()?, gateway.open_fds()?);
                    let huge = (1..=2).any(|back| {
                        phase.checked_sub(back).is_some_and(|p| {
                            matches!(fault_of(p, upstreams.len()), Fault::HugeBody { .. })
                        })
                    });
                    let sample = Sample {
                        at: started.elapsed(),
                        pass: samples.len() / SAMPLES_PER_PASS as usize,
                        rss,
                        fds,
                        huge,
                    };
                    if !self.plan.smoke && samples.len().is_multiple_of(LISTED_EVERY) {
                        println!(
                            "   {:>4.0} s: RSS {}, {fds} fds, phase {}",
                            sample.at.as_secs_f64(),
                            mb(rss),
                            phases.last().map_or("", String::as_str)
                        );
                    }
                    samples.push(sample);
                }
            }
        };
        let cpu = meter.finish(&[&gateway]);
        self.note_cpu("g. soak with faults", cpu.foreign);
        let tallies = tallies.lock().unwrap_or_else(|p| p.into_inner()).clone();
        self.report_failures_by_phase(&phases, &tallies);
        self.fail_on_errors("g. soak with faults", &report);
        // The first pass through the matrix is warm-up; the same window decides every check.
        let after_warm_up: Vec<&Sample> = samples.iter().filter(|s| s.pass > 0).collect();
        // Each pass's level: the mean RSS of its samples outside the huge-body phases.
        let levels: Vec<u64> = (1..PASSES as usize)
            .filter_map(|pass| {
                let steady: Vec<u64> = after_warm_up
                    .iter()
                    .filter(|s| s.pass == pass && !s.huge)
                    .map(|s| s.rss)
                    .collect();
                (!steady.is_empty()).then(|| steady.iter().sum::<u64>() / steady.len() as u64)
            })
            .collect();
        // The highest sample of each pass's huge-body phases (the warm-up's included).
        let mut huge_peaks = vec![0u64; PASSES as usize];
        for sample in samples.iter().filter(|s| s.huge) {
            if let Some(peak) = huge_peaks.get_mut(sample.pass) {
                *peak = (*peak).max(sample.rss);
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
        let (level_low, level_high) = range(levels.clone());
        let spread = (level_high - level_low) as f64 / level_low.max(1) as f64;
        let (low, high) = range(
            after_warm_up
                .iter()
                .filter(|s| !s.huge)
                .map(|s| s.rss)
                .collect(),
        );
        let (fd_low, fd_high) = range(after_warm_up.iter().map(|s| s.fds).collect());
        // Descriptors are connections: they follow the load and the faults, so "flat" is no
        // growth — the last samples hold no more than the steady range's first part did.
        let fd_growth = after_warm_up.len() > 4 && {
            let half = after_warm_up.len() / 2;
            let early = after_warm_up[..half]
                .iter()
                .map(|s| s.fds)
                .max()
                .unwrap_or(0);
            let late = after_warm_up[half..]
                .iter()
                .map(|s| s.fds)
                .max()
                .unwrap_or(0);
            late > early + 8
        };
        let flat = levels.len() + 1 == PASSES as usize && spread <= SPREAD_TARGET;
        let tolerated: Vec<String> = report
            .tolerated
            .iter()
            .map(|(status, count)| format!("{count} × {status}"))
            .collect();
        let levels: Vec<String> = levels.iter().map(|level| mb(*level)).collect();
        println!(
            "   {} answers, {} unexpected errors; 200: {}, documented others: {}; RSS per pass after the first {} ({:.1}% apart), samples {}–{} outside huge bodies, huge-body peaks {}, fds {fd_low}–{fd_high}",
            report.ok + report.tolerated.values().sum::<u64>() + report.errors,
            report.errors,
            report.ok,
            tolerated.join(", "),
            levels.join(", "),
            spread * 100.0,
            mb(low),
            mb(high),
            huge_peaks.join(", ")
        );
        self.rows.push(Row {
            name: format!(
                "g. soak with faults, {:.0} s, {} phases",
                self.plan.soak.as_secs_f64(),
                phases.len()
            ),
            result: format!(
                "{} unexpected errors in {} answers ({} × 200; {}); RSS level (mean outside the huge-body phases) \
                 of each pass after the first: {} ({:.1} % apart; single samples {}–{} as the faults change what \
                 is in flight), {fd_low}–{fd_high} open fds{}; huge-body phases peak at {} per pass",
                report.errors,
                report.ok + report.tolerated.values().sum::<u64>() + report.errors,
                report.ok,
                if tolerated.is_empty() {
                    "no 502 or 503".to_owned()
                } else {
                    tolerated.join(", ")
                },
                levels.join(", "),
                spread * 100.0,
                mb(low),
                mb(high),
                if fd_growth { " (growing)" } else { "" },
                huge_peaks.join(", ")
            ),
            target: "0 unexpected errors, RSS flat within 5 % pass over pass, fds flat".into(),
            met: Some(report.errors == 0 && flat && !fd_growth),
        });
        let trace: Vec<String> = samples
            .iter()
            .step_by(LISTED_EVERY)
            .map(|s| {
                format!(
                    "{:.0}s {:.1}/{}{}",
                    s.at.as_secs_f64(),
                    s.rss as f64 / 1e6,
                    s.fds,
                    if s.huge { " (huge)" } else { "" }
                )
            })
            .collect();
        self.details.push(format!(
            "g. soak with faults: {CONNECTIONS} connections, {KEYS} distinct queries over the default cache; SearXNG, \
             Brave (T1) and Exa (fallback) take turns through the fault matrix, {:.0} s per phase: {}; {}; other \
             processes {:.0} % of the CPU. Every {LISTED_EVERY}th sample (RSS MB / open fds; \"huge\": during or right after a huge-body phase): {}",
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
