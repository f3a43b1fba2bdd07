//! The benchmark harness: `cargo bench --bench harness` measures the release gateway binary against
//! the loopback simulators and writes BENCHMARKS.md; `cargo bench --bench harness -- --smoke` runs
//! every measurement for a few seconds and fails only on functional errors (for CI).
//!
//! Each server under test is a child process (so its memory and CPU are its own), loaded by this
//! harness's hyper 1 load generator ([`loadgen`]); the simulated SearXNG and premium APIs run in
//! the harness process. Measurements, in order:
//!
//! - **e. idle memory** — `VmRSS` of a freshly started gateway.
//! - **a. cache hits** — 64 keep-alive connections on one cached query, against a minimal hyper
//!   server answering the same bytes ([`baseline`]): throughput ratio and latency.
//! - **b. miss path** — one connection, `CACHE_SIZE=0`: latency through the gateway minus latency
//!   of the same search sent to the simulated SearXNG directly (blocks alternate, so drift hits both).
//! - **c. T1 pass** — `T1_PREMIUM_COUNT=3`, three providers scripted to take 100 ms: wall time.
//! - **d. coalescing** — 100 identical cold queries at the same moment: upstream calls.
//! - **e. memory under load** — `VmRSS` with 100 000 cached answers, and a soak at saturation.
//!
//! `HARNESS_GATEWAY=/path/to/searxng-gateway` measures another build (before/after a change);
//! `--serve-searxng ADDR` runs the simulated SearXNG alone, for profiling the gateway by hand.
//! `cargo test --all-targets` runs this binary without `--bench`; it then does nothing.

mod baseline;
mod histogram;
mod loadgen;
mod processes;
mod report;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use simulator::premium::{SimulatedProvider, SIM_KEY};
use simulator::script::{Latency, Script};
use simulator::searxng::SimulatedSearxng;
use simulator::Provider as ProviderKind;
use tokio::time::Instant;

use histogram::Histogram;
use loadgen::{BoxError, Load, LoadReport};
use processes::{CpuMeter, Server};
use report::{Machine, Row};

/// Connections for the throughput measurements.
const CONNECTIONS: usize = 64;
/// The simulated SearXNG's engines (each answers five results, some URLs shared).
const ENGINES: [&str; 4] = ["bing", "duckduckgo", "google", "wikipedia"];
/// Targets.
const CACHE_HIT_RATIO_TARGET: f64 = 0.8;
const MISS_P50_TARGET: Duration = Duration::from_micros(150);
const MISS_P99_TARGET: Duration = Duration::from_millis(1);
const PROVIDER_LATENCY: Duration = Duration::from_millis(100);
const T1_FACTOR_TARGET: f64 = 1.15;
const IDLE_RSS_TARGET: u64 = 25_000_000;
const SOAK_SPREAD_TARGET: f64 = 0.05;
/// The cache fill stops early when the gateway's RSS passes this: the machine is shared.
const MEMORY_GUARD: u64 = 4_000_000_000;
/// The cache is filled in steps of this many searches, checking the guard between steps.
const FILL_STEP: u64 = 10_000;
/// Distinct queries in the soak, twice the default cache: about half the requests miss.
const SOAK_KEYS: u64 = 2_000;

/// How long each measurement runs.
struct Plan {
    smoke: bool,
    hit_run: Duration,
    hit_warmup: Duration,
    hit_repeats: usize,
    miss_requests: u64,
    miss_block: u64,
    t1_requests: u64,
    bursts: usize,
    fill_entries: u64,
    soak: Duration,
    soak_sample: Duration,
}

impl Plan {
    fn new(smoke: bool) -> Self {
        if smoke {
            Self {
                smoke,
                hit_run: Duration::from_secs(2),
                hit_warmup: Duration::from_millis(500),
                hit_repeats: 1,
                miss_requests: 400,
                miss_block: 100,
                t1_requests: 5,
                bursts: 1,
                fill_entries: 2_000,
                soak: Duration::from_secs(6),
                soak_sample: Duration::from_secs(1),
            }
        } else {
            Self {
                smoke,
                hit_run: Duration::from_secs(10),
                hit_warmup: Duration::from_secs(2),
                hit_repeats: 3,
                miss_requests: 6_000,
                miss_block: 500,
                t1_requests: 40,
                bursts: 5,
                fill_entries: 100_000,
                soak: Duration::from_secs(600),
                soak_sample: Duration::from_secs(10),
            }
        }
    }

    fn command(&self) -> &'static str {
        if self.smoke {
            "cargo bench --bench harness -- --smoke"
        } else {
            "cargo bench --bench harness"
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--baseline-server") {
        return match (args.get(1), args.get(2)) {
            (Some(addr), Some(body)) => baseline::serve(addr, Path::new(body)),
            _ => {
                eprintln!("usage: --baseline-server ADDR BODY_FILE");
                ExitCode::from(2)
            }
        };
    }
    if args.first().map(String::as_str) == Some("--serve-searxng") {
        return match args.get(1) {
            Some(addr) => serve_searxng(addr),
            None => {
                eprintln!("usage: --serve-searxng ADDR");
                ExitCode::from(2)
            }
        };
    }
    if !args.iter().any(|arg| arg == "--bench") {
        // `cargo test --all-targets` runs benches without `--bench`: nothing to measure then.
        println!("benchmark harness: run it with `cargo bench --bench harness [-- --smoke]`");
        return ExitCode::SUCCESS;
    }
    for arg in &args {
        if !matches!(arg.as_str(), "--bench" | "--smoke") {
            eprintln!("benchmark harness: unknown argument {arg:?} (takes --smoke)");
            return ExitCode::from(2);
        }
    }
    let plan = Plan::new(args.iter().any(|arg| arg == "--smoke"));
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("benchmark harness: cannot start a runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let failures = runtime.block_on(run(plan));
    if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `--serve-searxng ADDR`: the simulated SearXNG of the measurements as a standalone process, for
/// profiling the gateway by hand (`perf record -p <gateway pid>` while `wrk` or this harness loads it).
fn serve_searxng(addr: &str) -> ExitCode {
    let served = tokio::runtime::Runtime::new().map(|runtime| {
        runtime.block_on(async {
            let listener = tokio::net::TcpListener::bind(addr).await?;
            let searxng = SimulatedSearxng::start_on(listener, &ENGINES).await?;
            println!("simulated SearXNG on {}", searxng.base_url());
            let _ = tokio::signal::ctrl_c().await;
            Ok::<(), std::io::Error>(())
        })
    });
    match served {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(err)) | Err(err) => {
            eprintln!("simulated SearXNG: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Runs every measurement and reports; returns the number of functional failures.
async fn run(plan: Plan) -> usize {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let repo = repo.canonicalize().unwrap_or(repo);
    // HARNESS_GATEWAY measures another build of the gateway (before/after comparisons).
    let binary = match std::env::var_os("HARNESS_GATEWAY") {
        Some(path) => PathBuf::from(path),
        None => match processes::build_release_gateway(&repo) {
            Ok(path) => path,
            Err(err) => {
                eprintln!("cannot build the release gateway: {err}");
                return 1;
            }
        },
    };
    let mut bench = Bench {
        binary,
        log_dir: repo.join("target").join("harness"),
        machine: Machine::describe(&repo),
        plan,
        rows: Vec::new(),
        details: vec![
            "Every gateway runs the release binary with its defaults unless a measurement says otherwise \
             (LOG_LEVEL=info: one log line per search, written to /dev/null)."
                .to_owned(),
        ],
        failures: Vec::new(),
        busiest_foreign: (0.0, String::new()),
    };
    let started = Instant::now();
    println!(
        "benchmark harness ({}): gateway {}",
        if bench.plan.smoke { "smoke" } else { "full" },
        bench.binary.display()
    );
    match SimulatedSearxng::start(&ENGINES).await {
        Ok(searxng) => {
            println!("== e. idle memory");
            let result = bench.idle_memory(&searxng).await;
            bench.settle("e. idle memory", result);
            println!("== a. cache hits");
            let result = bench.cache_hits(&searxng).await;
            bench.settle("a. cache hits", result);
            println!("== b. miss path");
            let result = bench.miss_path(&searxng).await;
            bench.settle("b. miss path", result);
            println!("== c. T1 pass");
            let result = bench.t1_pass(&searxng).await;
            bench.settle("c. T1 pass", result);
            println!("== d. coalescing");
            let result = bench.coalescing().await;
            bench.settle("d. coalescing", result);
            println!("== e. memory with a full cache");
            let result = bench.cache_memory(&searxng).await;
            bench.settle("e. cache memory", result);
            println!("== e. soak");
            let result = bench.soak(&searxng).await;
            bench.settle("e. soak", result);
        }
        Err(err) => bench
            .failures
            .push(format!("the simulated SearXNG did not start: {err}")),
    }
    bench.finish(started.elapsed(), &repo)
}

/// The run's state: where things are, and what was found.
struct Bench {
    binary: PathBuf,
    log_dir: PathBuf,
    machine: Machine,
    plan: Plan,
    rows: Vec<Row>,
    details: Vec<String>,
    failures: Vec<String>,
    /// The largest share of CPU other processes took during one measurement, and which.
    busiest_foreign: (f64, String),
}

fn ms(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1e3)
}

fn us(duration: Duration) -> String {
    format!("{:.0} µs", duration.as_secs_f64() * 1e6)
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

fn latency_summary(histogram: &Histogram) -> String {
    format!(
        "p50 {} / p99 {} / max {}",
        ms(histogram.quantile(0.5)),
        ms(histogram.quantile(0.99)),
        ms(histogram.max())
    )
}

/// The gateway's environment for these measurements: defaults except the upstream.
fn gateway_env(searxng: &SimulatedSearxng) -> Vec<(String, String)> {
    vec![("SEARXNG_BACKEND_URL".to_owned(), searxng.base_url())]
}

fn search_path(query: &str) -> String {
    let query: String = url::form_urlencoded::byte_serialize(query.as_bytes()).collect();
    format!("/search?q={query}&format=json")
}

impl Bench {
    /// A measurement that could not run is a functional failure.
    fn settle(&mut self, name: &str, result: Result<(), BoxError>) {
        if let Err(err) = result {
            println!("   failed: {err}");
            self.failures.push(format!("{name}: {err}"));
        }
    }

    async fn gateway(&self, env: &[(String, String)], label: &str) -> Result<Server, BoxError> {
        Server::gateway(&self.binary, env, &self.log_dir, label).await
    }

    fn note_cpu(&mut self, what: &str, foreign: f64) {
        if foreign > self.busiest_foreign.0 {
            self.busiest_foreign = (foreign, what.to_owned());
        }
    }

    fn fail_on_errors(&mut self, what: &str, report: &LoadReport) {
        if report.errors > 0 {
            self.failures.push(format!(
                "{what}: {} errors (first: {})",
                report.errors,
                report.first_error.as_deref().unwrap_or("?")
            ));
        }
    }

    async fn idle_memory(&mut self, searxng: &SimulatedSearxng) -> Result<(), BoxError> {
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

    async fn cache_hits(&mut self, searxng: &SimulatedSearxng) -> Result<(), BoxError> {
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

        let mut totals = [
            (0.0, Histogram::default(), 0.0, 0u64),
            (0.0, Histogram::default(), 0.0, 0u64),
        ];
        for repeat in 0..self.plan.hit_repeats {
            for (slot, (server, other, label)) in [
                (&gateway, &baseline, "gateway"),
                (&baseline, &gateway, "baseline"),
            ]
            .into_iter()
            .enumerate()
            {
                let load = |duration| Load {
                    addr: server.addr,
                    connections: CONNECTIONS,
                    duration,
                    max_requests: None,
                    path: loadgen::fixed(if slot == 0 { &path } else { "/" }),
                };
                loadgen::run(&load(self.plan.hit_warmup)).await;
                let meter = CpuMeter::start(&[server, other]);
                let report = loadgen::run(&load(self.plan.hit_run)).await;
                let cpu = meter.finish(&[server, other]);
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
        self.rows.push(Row {
            name: format!("a. cache-hit throughput, {CONNECTIONS} connections"),
            result: format!(
                "{gateway_rps:.0} req/s = {ratio:.2}× the minimal hyper server ({baseline_rps:.0} req/s)"
            ),
            target: format!("≥ {CACHE_HIT_RATIO_TARGET:.2}×"),
            met: Some(ratio >= CACHE_HIT_RATIO_TARGET),
        });
        self.rows.push(Row {
            name: "a. cache-hit latency".into(),
            result: format!(
                "p50 {} / p99 {} (baseline p50 {} / p99 {}); {:.1} µs CPU per hit (baseline {:.1})",
                ms(totals[0].1.quantile(0.5)),
                ms(totals[0].1.quantile(0.99)),
                ms(totals[1].1.quantile(0.5)),
                ms(totals[1].1.quantile(0.99)),
                totals[0].2 / runs * 1e6,
                totals[1].2 / runs * 1e6,
            ),
            target: "report".into(),
            met: None,
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
        Ok(())
    }

    async fn miss_path(&mut self, searxng: &SimulatedSearxng) -> Result<(), BoxError> {
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
        // Warm both paths (connections, allocator, branch predictors).
        loadgen::run(&sequential(searxng_addr, &direct, 100)).await;
        loadgen::run(&sequential(gateway.addr, &through_gateway, 100)).await;
        let mut direct_latency = Histogram::default();
        let mut gateway_latency = Histogram::default();
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
        }
        let cpu = meter.finish(&[&gateway]);
        let upstream_calls = searxng.hits() - searxng_before;
        let expected = (blocks * self.plan.miss_block * 2) as usize;
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

    async fn t1_pass(&mut self, searxng: &SimulatedSearxng) -> Result<(), BoxError> {
        let kinds = [ProviderKind::Brave, ProviderKind::Exa, ProviderKind::Tavily];
        let mut providers = Vec::new();
        let mut env = gateway_env(searxng);
        env.push(("FALLBACK_PROVIDERS".into(), "brave,exa,tavily".into()));
        env.push(("T1_PREMIUM_COUNT".into(), "3".into()));
        for kind in kinds {
            let provider = SimulatedProvider::start(kind).await?;
            provider.set_script(Script::new().latency(Latency::Fixed(PROVIDER_LATENCY)));
            let prefix = kind.env_prefix();
            env.push((format!("{prefix}_API_KEY"), SIM_KEY.to_owned()));
            env.push((format!("{prefix}_BASE_URL"), provider.base_url()));
            providers.push(provider);
        }
        let gateway = self.gateway(&env, "gateway-t1").await?;
        let load = |requests, tag: &'static str| Load {
            addr: gateway.addr,
            connections: 1,
            duration: Duration::from_secs(120),
            max_requests: Some(requests),
            path: Arc::new(move |n| search_path(&format!("t1 pass {tag} {n}"))),
        };
        loadgen::run(&load(2, "warm-up")).await;
        let before: Vec<usize> = providers.iter().map(SimulatedProvider::calls).collect();
        let report = loadgen::run(&load(self.plan.t1_requests, "measured")).await;
        self.fail_on_errors("c. T1 pass", &report);
        for (provider, before) in providers.iter().zip(before) {
            let calls = provider.calls() - before;
            if calls as u64 != self.plan.t1_requests {
                self.failures.push(format!(
                    "c. T1 pass: {} was called {calls} times for {} searches",
                    provider.kind().as_str(),
                    self.plan.t1_requests
                ));
            }
        }
        let p50 = report.latency.quantile(0.5);
        let factor = p50.as_secs_f64() / PROVIDER_LATENCY.as_secs_f64();
        println!("   {}", latency_summary(&report.latency));
        self.rows.push(Row {
            name: "c. T1 pass, 3 providers × 100 ms".into(),
            result: format!(
                "wall p50 {} = {factor:.3}× (p99 {}, max {})",
                ms(p50),
                ms(report.latency.quantile(0.99)),
                ms(report.latency.max())
            ),
            target: format!("≤ {T1_FACTOR_TARGET:.2}× 100 ms"),
            met: Some(factor <= T1_FACTOR_TARGET),
        });
        self.details.push(format!(
            "c. {} sequential cold searches with T1_PREMIUM_COUNT=3 (Brave, Exa, Tavily each scripted to answer in \
             100 ms, SearXNG instant): {}; every provider called once per search",
            self.plan.t1_requests,
            latency_summary(&report.latency)
        ));
        gateway.stop();
        Ok(())
    }

    async fn coalescing(&mut self) -> Result<(), BoxError> {
        let searxng = SimulatedSearxng::start(&ENGINES).await?;
        // Slow enough that all hundred requests arrive while the first fan-out is in flight.
        searxng.set_script(Script::new().latency(Latency::Fixed(Duration::from_secs(1))));
        let gateway = self
            .gateway(&gateway_env(&searxng), "gateway-coalescing")
            .await?;
        let mut calls = Vec::new();
        for burst in 0..self.plan.bursts {
            let before = searxng.hits();
            let statuses = loadgen::burst(
                gateway.addr,
                &search_path(&format!("coalescing {burst}")),
                100,
            )
            .await;
            let failed: Vec<String> = statuses
                .iter()
                .filter_map(|status| match status {
                    Ok(200) => None,
                    Ok(other) => Some(format!("status {other}")),
                    Err(err) => Some(err.clone()),
                })
                .collect();
            if !failed.is_empty() {
                self.failures.push(format!(
                    "d. coalescing: {} of 100 requests failed ({})",
                    failed.len(),
                    failed[0]
                ));
            }
            calls.push(searxng.hits() - before);
        }
        println!("   upstream calls per burst of 100: {calls:?}");
        let exact = calls.iter().all(|calls| *calls == 1);
        if !exact {
            self.failures.push(format!(
                "d. coalescing: upstream calls per burst of 100 identical cold queries were {calls:?}, expected 1"
            ));
        }
        self.rows.push(Row {
            name: "d. 100 concurrent identical cold queries".into(),
            result: format!(
                "{} upstream call(s) per burst ({} bursts)",
                calls
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                calls.len()
            ),
            target: "exactly 1".into(),
            met: Some(exact),
        });
        gateway.stop();
        Ok(())
    }

    async fn cache_memory(&mut self, searxng: &SimulatedSearxng) -> Result<(), BoxError> {
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
        self.rows.push(Row {
            name: format!("e. RSS with {cached} cached answers"),
            result: format!(
                "{} ({} idle; ≈ {:.1} kB per entry for {:.1} kB answers{guard})",
                mb(rss),
                mb(idle),
                per_entry as f64 / 1e3,
                answer as f64 / 1e3
            ),
            target: "report".into(),
            met: None,
        });
        self.details.push(format!(
            "e. cache fill: {sent} distinct searches over {CONNECTIONS} connections at {:.0} misses/s ({})",
            report.throughput(),
            latency_summary(&report.latency)
        ));
        gateway.stop();
        Ok(())
    }

    async fn soak(&mut self, searxng: &SimulatedSearxng) -> Result<(), BoxError> {
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

    /// Prints the table; a full run writes BENCHMARKS.md. Returns the number of functional failures.
    fn finish(mut self, elapsed: Duration, repo: &Path) -> usize {
        let (foreign, during) = self.busiest_foreign.clone();
        self.details.push(if foreign < 0.01 {
            "Other processes on the machine took less than 1 % of the CPU during every measurement."
                .to_owned()
        } else {
            format!(
                "Other processes on the machine took up to {:.0} % of the CPU (during {during}){}",
                foreign * 100.0,
                if foreign > 0.10 {
                    "; results of that measurement may be lower than on a quiet machine."
                } else {
                    "."
                }
            )
        });
        println!("\n{}", report::table(&self.rows));
        for failure in &self.failures {
            println!("FUNCTIONAL FAILURE: {failure}");
        }
        let block = report::render(
            &self.machine,
            self.plan.command(),
            elapsed,
            &self.rows,
            &self.details,
            &self.failures,
        );
        let path = if self.plan.smoke {
            self.log_dir.join("BENCHMARKS.smoke.md")
        } else {
            repo.join("BENCHMARKS.md")
        };
        match report::write(&path, &block) {
            Ok(()) => println!("written: {}", path.display()),
            Err(err) => {
                println!("cannot write {}: {err}", path.display());
                self.failures
                    .push(format!("writing {}: {err}", path.display()));
            }
        }
        self.failures.len()
    }
}
