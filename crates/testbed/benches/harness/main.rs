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
//! - **i. tracing** — a.'s load against a gateway with tracing off and one exporting spans over
//!   OTLP/HTTP to a loopback sink ([`otlp_sink`]), alternating: throughput and CPU per hit of each.
//! - **b. miss path** — one connection, `CACHE_SIZE=0`: latency through the gateway minus latency
//!   of the same search sent to the simulated SearXNG directly (blocks alternate, so drift hits both).
//! - **c. T1 pass** — `T1_PREMIUM_COUNT=3`, three providers scripted to take 100 ms: wall time.
//! - **d. coalescing** — 100 identical cold queries at the same moment: upstream calls.
//! - **e. memory under load** — `VmRSS` with 100 000 cached answers, and a soak at saturation.
//! - **f. pool** — misses/s through a pool of 1, 2 and 3 simulated SearXNG instances, each limited to a
//!   fixed capacity: the gateway's throughput should grow with the pool.
//! - **g. soak with faults** — saturation while SearXNG, Brave and Exa take turns through the fault
//!   matrix: no unexpected answer, `VmRSS` and open descriptors flat.
//! - **h. decision quality** — two scripted days of upstream trouble (another seed and mix on the
//!   second), each replayed by four clients: answers with the target, latency, premium calls, calls
//!   into blocked engines, healthy engines left out.
//! - **j. shared tier** — `REDIS_URL` on a real `redis-server`: a hit from Redis against a local hit
//!   (latency added on one connection, throughput at 64), Redis round trips per miss, memory per answer.
//! - **k. reading pages** — the reader's extraction on the Readability corpus: word F1 against the
//!   expected articles, time per page on one core, bytes per cached page through the gateway; a
//!   4 MB PDF and a 5 MB HTML page through the release gateway: time and peak memory; and the
//!   reader on WCXB's development split (pages of seven types): word F1 overall and per type,
//!   in-process beside candidate extractors and through `POST /tavily/extract`; and the passages
//!   of WCXB's long pages that answer hand-written questions (Tavily's 3 chunks of ≤ 500
//!   characters against truncation and BM25 windows; `HARNESS_ONLY=passages` runs it alone); and
//!   single-page apps made of WCXB articles read by the local headless Chromium (`BROWSER_TABS=2`):
//!   rendered reads per second, time per page, the browser's memory, the share read locally
//!   (`HARNESS_ONLY=browser` runs it alone; without a Chromium it says so and is skipped).
//! - **m. crawls** — a generated site of 30 kB pages crawled through Firecrawl's `/v2/crawl`: pages
//!   per second with one replica and with three on one Redis, each replica's share, Redis memory
//!   per page, and the time from a replica's SIGKILL to its URLs claimed by another.
//!
//! `HARNESS_GATEWAY=/path/to/searxng-gateway` measures another build (before/after a change),
//! `HARNESS_ONLY=a,f` runs only those measurements (report in `target/harness/BENCHMARKS.only.md`),
//! `HARNESS_GATEWAY_ENV="RUNTIME=thread-per-core"` gives every gateway of the run those variables
//! too (an A/B of one setting),
//! and `--day` runs only h. (both days) and writes `target/harness/BENCHMARKS.day.md`
//! (before/after comparisons of a decision change without the full run);
//! `--serve-searxng ADDR` runs the simulated SearXNG alone, for profiling the gateway by hand.
//! `cargo test --all-targets` runs this binary without `--bench`; it then only checks the scripted
//! days (pure checks of the schedules, no socket: [`measure::check_schedules`]).
//!
//! This file holds the plan, the order of the run and the report; each measurement is its own file in
//! [`measure`], and [`processes`], [`loadgen`], [`histogram`], [`baseline`], [`otlp_sink`] and [`report`] are the tools
//! they share.

mod baseline;
mod histogram;
mod loadgen;
mod measure;
mod nginx;
mod otlp_sink;
mod processes;
mod report;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use simulator::searxng::SimulatedSearxng;
use tokio::time::Instant;

use histogram::Histogram;
use loadgen::{BoxError, LoadReport};
use processes::Server;
use report::{Machine, Row};

/// Connections for the throughput measurements.
const CONNECTIONS: usize = 64;
/// The simulated SearXNG's engines (each answers five results, some URLs shared).
const ENGINES: [&str; 4] = ["bing", "duckduckgo", "google", "wikipedia"];
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
    pool_warmup: Duration,
    pool_run: Duration,
    /// How long the replayed day lasts, and how many searches it holds.
    day_length: Duration,
    day_searches: u64,
    /// `--day`: only the days (h.).
    only_day: bool,
}

impl Plan {
    fn new(smoke: bool) -> Self {
        if smoke {
            Self {
                smoke,
                // Seven short rounds: the guard takes the median of their ratios to nginx.
                hit_run: Duration::from_secs(1),
                hit_warmup: Duration::from_millis(300),
                hit_repeats: 7,
                miss_requests: 400,
                miss_block: 100,
                t1_requests: 5,
                bursts: 1,
                fill_entries: 2_000,
                soak: Duration::from_secs(6),
                soak_sample: Duration::from_secs(1),
                pool_warmup: Duration::from_millis(500),
                pool_run: Duration::from_secs(2),
                day_length: Duration::from_secs(24),
                day_searches: 200,
                only_day: false,
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
                pool_warmup: Duration::from_secs(2),
                pool_run: Duration::from_secs(10),
                day_length: Duration::from_secs(240),
                day_searches: 2_000,
                only_day: false,
            }
        }
    }

    fn command(&self) -> &'static str {
        match (self.smoke, self.only_day) {
            (true, true) => "cargo bench --bench harness -- --smoke --day",
            (true, false) => "cargo bench --bench harness -- --smoke",
            (false, true) => "cargo bench --bench harness -- --day",
            (false, false) => "cargo bench --bench harness",
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
        // `cargo test --all-targets` runs benches without `--bench`: nothing to measure then, but
        // the scripted days are checked (this bench has its own `main`, so `#[test]` would not run).
        println!("benchmark harness: run it with `cargo bench --bench harness [-- --smoke]`");
        return match measure::check_schedules() {
            0 => ExitCode::SUCCESS,
            _ => ExitCode::FAILURE,
        };
    }
    for arg in &args {
        if !matches!(arg.as_str(), "--bench" | "--smoke" | "--day") {
            eprintln!("benchmark harness: unknown argument {arg:?} (takes --smoke, --day)");
            return ExitCode::from(2);
        }
    }
    let mut plan = Plan::new(args.iter().any(|arg| arg == "--smoke"));
    plan.only_day = args.iter().any(|arg| arg == "--day");
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
        partial: false,
        cache_hit_rps: None,
    };
    let extra = processes::extra_gateway_env();
    if !extra.is_empty() {
        let names: Vec<String> = extra.iter().map(|(n, v)| format!("{n}={v}")).collect();
        bench.details.push(format!(
            "Every gateway of this run also had {} (HARNESS_GATEWAY_ENV).",
            names.join(" ")
        ));
    }
    let started = Instant::now();
    println!(
        "benchmark harness ({}): gateway {}",
        if bench.plan.smoke { "smoke" } else { "full" },
        bench.binary.display()
    );
    // HARNESS_ONLY=a,f runs only those measurements (a quick before/after of one of them); the
    // report then goes to target/harness/BENCHMARKS.only.md.
    let only: Option<Vec<String>> = std::env::var("HARNESS_ONLY")
        .ok()
        .map(|list| list.split(',').map(|m| m.trim().to_owned()).collect());
    bench.partial = only.is_some();
    let wants = |letter: &str| {
        only.as_ref()
            .is_none_or(|list| list.iter().any(|m| m == letter))
    };
    match SimulatedSearxng::start(&ENGINES).await {
        Ok(_) if bench.plan.only_day => {
            println!("== h. decision quality over a day");
            let result = bench.decision_day().await;
            bench.settle("h. day", result);
        }
        Ok(searxng) => {
            if wants("e") {
                println!("== e. idle memory");
                let result = bench.idle_memory(&searxng).await;
                bench.settle("e. idle memory", result);
            }
            if wants("a") {
                println!("== a. cache hits");
                let result = bench.cache_hits(&searxng).await;
                bench.settle("a. cache hits", result);
            }
            if wants("i") {
                println!("== i. tracing on and off");
                let result = bench.tracing_cost(&searxng).await;
                bench.settle("i. tracing", result);
            }
            if wants("b") {
                println!("== b. miss path");
                let result = bench.miss_path(&searxng).await;
                bench.settle("b. miss path", result);
            }
            if wants("c") {
                println!("== c. T1 pass");
                let result = bench.t1_pass(&searxng).await;
                bench.settle("c. T1 pass", result);
            }
            if wants("d") {
                println!("== d. coalescing");
                let result = bench.coalescing().await;
                bench.settle("d. coalescing", result);
            }
            if wants("e") {
                println!("== e. memory with a full cache");
                let result = bench.cache_memory(&searxng).await;
                bench.settle("e. cache memory", result);
                println!("== e. soak");
                let result = bench.soak(&searxng).await;
                bench.settle("e. soak", result);
            }
            if wants("f") {
                println!("== f. pool");
                let result = bench.pool_throughput().await;
                bench.settle("f. pool", result);
            }
            if wants("g") {
                println!("== g. soak with faults");
                let result = bench.fault_soak().await;
                bench.settle("g. soak with faults", result);
            }
            if wants("h") {
                println!("== h. decision quality over a day");
                let result = bench.decision_day().await;
                bench.settle("h. day", result);
            }
            if wants("j") {
                println!("== j. shared tier (Redis)");
                let result = bench.shared_tier(&searxng).await;
                bench.settle("j. shared tier", result);
            }
            if wants("l") {
                println!("== l. fleet limits (Redis)");
                let result = bench.fleet_limits(&searxng).await;
                bench.settle("l. fleet limits", result);
            }
            if wants("m") {
                println!("== m. crawls");
                let result = bench.crawls(&searxng).await;
                bench.settle("m. crawls", result);
            }
            if wants("k") {
                println!("== k. reading pages");
                let result = bench.extraction(&repo).await;
                bench.settle("k. reading pages", result);
                let result = bench.large_pages().await;
                bench.settle("k. large pages", result);
                let result = bench.wcxb(&repo).await;
                bench.settle("k. WCXB dev", result);
            }
            if wants("k") || wants("browser") {
                println!("== k. rendered reads (local browser)");
                let result = bench.rendered_reads(&repo).await;
                bench.settle("k. rendered reads", result);
            }
            if wants("k") || wants("passages") {
                println!("== k. query-relevant passages");
                let result = bench.passages(&repo).await;
                bench.settle("k. passages", result);
            }
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
    /// Only some measurements ran (`HARNESS_ONLY`): the report does not replace BENCHMARKS.md.
    partial: bool,
    /// a.'s gateway throughput, once a. ran: i. compares tracing off with it.
    cache_hit_rps: Option<f64>,
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

    /// Prints the table and writes the report and the details beside it: a full run into BENCHMARKS.md
    /// and `target/benchmarks-details.md`, the others into `target/harness/`. Returns the number of
    /// functional failures.
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
        let (path, details_path) = if self.plan.only_day {
            self.report_paths("BENCHMARKS.day")
        } else if self.partial {
            self.report_paths("BENCHMARKS.only")
        } else if self.plan.smoke {
            self.report_paths("BENCHMARKS.smoke")
        } else {
            (
                repo.join("BENCHMARKS.md"),
                repo.join("target").join("benchmarks-details.md"),
            )
        };
        let shown = |file: &Path| {
            file.strip_prefix(repo)
                .unwrap_or(file)
                .display()
                .to_string()
        };
        let block = report::render(
            &self.machine,
            self.plan.command(),
            elapsed,
            &self.rows,
            &self.failures,
            &shown(&details_path),
        );
        let details = report::render_details(
            &self.machine,
            self.plan.command(),
            elapsed,
            &self.details,
            &shown(&path),
        );
        let written = [
            (&path, report::write(&path, &block)),
            (
                &details_path,
                report::write_details(&details_path, &details),
            ),
        ];
        for (file, result) in written {
            match result {
                Ok(()) => println!("written: {}", file.display()),
                Err(err) => {
                    println!("cannot write {}: {err}", file.display());
                    self.failures
                        .push(format!("writing {}: {err}", file.display()));
                }
            }
        }
        self.failures.len()
    }

    /// The report of a run that does not replace BENCHMARKS.md, and its details beside it, in
    /// `target/harness/`: `<stem>.md` and `<stem>.details.md`.
    fn report_paths(&self, stem: &str) -> (PathBuf, PathBuf) {
        (
            self.log_dir.join(format!("{stem}.md")),
            self.log_dir.join(format!("{stem}.details.md")),
        )
    }
}
