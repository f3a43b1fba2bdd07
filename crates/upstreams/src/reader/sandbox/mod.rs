//! Where untrusted documents are parsed: a bounded pool of parse workers, each a child process
//! (the gateway's own binary as `parse-worker`) that limits its own memory and parses on a large
//! stack. A page's bytes never reach a parser inside the gateway's process.
//!
//! Why processes. The reader's parsers are maintained crates that cannot be bounded from outside:
//! `pdf-extract` recurses without a limit on a form XObject that draws itself (a 773-byte PDF
//! overflowed the stack and aborted the gateway: no `catch_unwind` catches that) and decompresses
//! without a cap (a 2.7 KB PDF asked for a 4 GiB allocation, which aborts), and an HTML parse cannot
//! be stopped half-way. A thread can be neither killed nor capped in memory; a process can. So
//! each job has a hard deadline — the read's own, inside the request's budget — after which its
//! worker is killed and its slot freed; a worker's address space is capped (`PARSE_MEMORY_MB`,
//! `RLIMIT_AS`), so a bomb ends in that worker's failed allocation; a stack overflow ends the
//! worker too. Either way the read fails as `too_complex` and the next job gets a fresh worker.
//! The alternative, checking a PDF's object graph and stream sizes with `lopdf` before handing it
//! over, would write half a PDF parser by hand and still leave `pdf-extract`'s own recursion and
//! allocations unbounded; a process bounds what we cannot see.
//! Measured on this 2-core machine (release build, a worker driven over its pipes): a job's round
//! trip to a warm worker is 0.11 ms at p50 for a tiny page (a 55 kB article: 2.1 ms, which is its
//! parse); a new worker with its first job takes 4–10 ms (33 ms while CI loaded both cores) — so
//! workers are kept warm (at most `PARSE_WORKERS`) and retired only once their resident memory
//! passes a quarter of the cap, so memory a large PDF took goes back to the system. BENCHMARKS.md's
//! k. rows give a 4 MB PDF's and a 5 MB page's time and peak memory through the gateway.
//!
//! Without a worker program (the library embedded in a test or another binary, with no
//! `PARSE_WORKER_PROGRAM`) the same jobs run in threads of the same pool, with the same stack,
//! slots and deadline: the answer still goes out at the deadline and the slot is freed, but a
//! runaway thread cannot be stopped, so while as many runaway threads as slots are still running,
//! new jobs are refused. The binary always uses processes.

mod wire;
mod worker;

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use serde::Serialize;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Semaphore;
use tokio::time::Instant;

use super::metrics::{LimitLabels, ReaderMetrics};
use super::{Document, ReadFailure};
pub(crate) use wire::JobHeader;
pub use worker::{run as run_worker, WorkerLimits};

/// The command of the gateway's binary that runs a parse worker.
pub const WORKER_COMMAND: &str = "parse-worker";

/// Which limit a parse ran into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ParseLimit {
    /// Markup nested deeper than the guard lets a parser go.
    Nesting,
    /// The parse did not end before the read's deadline.
    Time,
    /// The worker ran out of its memory or its stack, or died otherwise.
    Resources,
    /// No parse slot freed before the deadline.
    Busy,
}

impl ParseLimit {
    /// Every limit, for the series to exist from the first scrape.
    pub(crate) const ALL: [ParseLimit; 4] =
        [Self::Nesting, Self::Time, Self::Resources, Self::Busy];

    /// The name `explain` and the logs use.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Nesting => "nesting",
            Self::Time => "time",
            Self::Resources => "resources",
            Self::Busy => "busy",
        }
    }
}

/// The pool's settings (`PARSE_*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSettings {
    /// `PARSE_WORKERS`: jobs parsed at once.
    pub(crate) workers: usize,
    /// `PARSE_MEMORY_MB`, in bytes: each worker's address space.
    pub(crate) memory_bytes: u64,
    /// `PARSE_WORKER_PROGRAM`: the program run as a worker (`None`: threads).
    pub program: Option<PathBuf>,
}

/// A job: a page's bytes and what it is.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    pub(crate) header: JobHeader,
    pub(crate) body: Bytes,
}

/// The parse in this process: what a worker runs for each job.
fn parse_here(header: &JobHeader, body: &[u8]) -> Result<Document, ReadFailure> {
    super::extract_body(
        body,
        header.content_type.as_deref(),
        &header.url,
        &header.final_url,
        header.format,
    )
}

/// The pool. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Sandbox {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    settings: SandboxSettings,
    slots: Arc<Semaphore>,
    idle: Mutex<Vec<Worker>>,
    /// Parse threads alive (thread mode only): those of jobs in flight and those still running
    /// after their answer went out without them.
    threads: Arc<AtomicUsize>,
    metrics: ReaderMetrics,
}

/// A warm worker process.
#[derive(Debug)]
struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

/// How a job in a worker ended, besides its reply.
enum Ended {
    Replied(Box<Result<Document, ReadFailure>>),
    Died,
    Late,
}

impl Sandbox {
    /// A pool with `settings`.
    pub(crate) fn new(settings: SandboxSettings, metrics: ReaderMetrics) -> Self {
        let workers = settings.workers.max(1);
        Self {
            inner: Arc::new(Inner {
                slots: Arc::new(Semaphore::new(workers)),
                settings,
                idle: Mutex::new(Vec::new()),
                threads: Arc::new(AtomicUsize::new(0)),
                metrics,
            }),
        }
    }

    /// Parses `job`, answering by `deadline` whatever the page does.
    pub(crate) async fn parse(&self, job: Job, deadline: Instant) -> Result<Document, ReadFailure> {
        let parsed = self.parse_within(job, deadline).await;
        if let Err(ReadFailure::TooComplex(limit)) = parsed {
            self.inner
                .metrics
                .limits
                .get_or_create(&LimitLabels { limit })
                .inc();
        }
        parsed
    }

    async fn parse_within(&self, job: Job, deadline: Instant) -> Result<Document, ReadFailure> {
        let Ok(Ok(_permit)) =
            tokio::time::timeout_at(deadline, Arc::clone(&self.inner.slots).acquire_owned()).await
        else {
            return Err(ReadFailure::TooComplex(ParseLimit::Busy));
        };
        match &self.inner.settings.program {
            Some(program) => self.in_worker(program, job, deadline).await,
            None => self.in_thread(job, deadline).await,
        }
    }

    async fn in_worker(
        &self,
        program: &PathBuf,
        job: Job,
        deadline: Instant,
    ) -> Result<Document, ReadFailure> {
        let idle = self
            .inner
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        // A warm worker may have died idle (killed from outside): the job then gets a new one.
        let mut attempts = if idle.is_some() { 2 } else { 1 };
        let mut next = idle;
        loop {
            attempts -= 1;
            let mut worker = match next.take() {
                Some(worker) => worker,
                None => match self.start(program) {
                    Ok(worker) => worker,
                    Err(err) => {
                        tracing::error!(error = %err, program = %program.display(), "cannot start a parse worker");
                        return Err(ReadFailure::Internal);
                    }
                },
            };
            let ended = match tokio::time::timeout_at(deadline, exchange(&mut worker, &job)).await {
                Ok(Ok(Some(reply))) => Ended::Replied(Box::new(reply)),
                Ok(Ok(None) | Err(_)) => Ended::Died,
                Err(_) => Ended::Late,
            };
            match ended {
                Ended::Replied(reply) => {
                    self.keep_or_retire(worker);
                    return *reply;
                }
                Ended::Late => {
                    let _ = worker.child.start_kill();
                    tracing::warn!(url = %job.header.url, "a page's parse ran past its deadline: its worker was killed");
                    return Err(ReadFailure::TooComplex(ParseLimit::Time));
                }
                Ended::Died => {
                    let _ = worker.child.start_kill();
                    let status = worker.child.wait().await.ok();
                    if attempts > 0 {
                        continue;
                    }
                    tracing::warn!(url = %job.header.url, status = ?status, "a parse worker died on a page (its memory or stack limit)");
                    return Err(ReadFailure::TooComplex(ParseLimit::Resources));
                }
            }
        }
    }

    fn start(&self, program: &PathBuf) -> std::io::Result<Worker> {
        let mut child = Command::new(program)
            .arg(WORKER_COMMAND)
            .arg("--memory-bytes")
            .arg(self.inner.settings.memory_bytes.to_string())
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(std::io::Error::other("the worker's pipes are missing"));
        };
        self.inner.metrics.workers_started.inc();
        Ok(Worker {
            child,
            stdin,
            stdout: BufReader::new(stdout),
        })
    }

    /// Back to the idle list, unless it holds a lot of memory now (a large PDF's) or the list is
    /// full; dropped workers are killed.
    fn keep_or_retire(&self, worker: Worker) {
        let retire_at = self.inner.settings.memory_bytes / 4;
        let heavy = worker
            .child
            .id()
            .and_then(resident_bytes)
            .is_none_or(|rss| rss > retire_at);
        if heavy {
            return;
        }
        let mut idle = self
            .inner
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if idle.len() < self.inner.settings.workers.max(1) {
            idle.push(worker);
        }
    }

    async fn in_thread(&self, job: Job, deadline: Instant) -> Result<Document, ReadFailure> {
        // Each slot's job, and as many threads again whose answer went out without them.
        let most = 2 * self.inner.settings.workers.max(1);
        if self.inner.threads.fetch_add(1, Ordering::AcqRel) >= most {
            self.inner.threads.fetch_sub(1, Ordering::AcqRel);
            return Err(ReadFailure::TooComplex(ParseLimit::Busy));
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        let threads = Arc::clone(&self.inner.threads);
        let spawned = std::thread::Builder::new()
            .name("parse".into())
            .stack_size(worker::STACK_BYTES)
            .spawn(move || {
                let parsed = std::panic::catch_unwind(|| parse_here(&job.header, &job.body))
                    .unwrap_or(Err(ReadFailure::Internal));
                let _ = tx.send(parsed);
                threads.fetch_sub(1, Ordering::AcqRel);
            });
        if spawned.is_err() {
            self.inner.threads.fetch_sub(1, Ordering::AcqRel);
            return Err(ReadFailure::Internal);
        }
        match tokio::time::timeout_at(deadline, rx).await {
            Ok(Ok(parsed)) => parsed,
            Ok(Err(_)) => Err(ReadFailure::Internal),
            Err(_) => Err(ReadFailure::TooComplex(ParseLimit::Time)),
        }
    }
}

/// One job to a worker and its reply; `Ok(None)` when the worker closed its end.
async fn exchange(
    worker: &mut Worker,
    job: &Job,
) -> std::io::Result<Option<Result<Document, ReadFailure>>> {
    let header = serde_json::to_vec(&job.header).map_err(std::io::Error::other)?;
    wire::write_frame(&mut worker.stdin, &header).await?;
    wire::write_frame(&mut worker.stdin, &job.body).await?;
    worker.stdin.flush().await?;
    let Some(reply) = wire::read_frame(&mut worker.stdout).await? else {
        return Ok(None);
    };
    let reply: wire::Reply = serde_json::from_slice(&reply).map_err(std::io::Error::other)?;
    Ok(Some(reply.into()))
}

/// A process's resident memory, from `/proc` (Linux); `None` elsewhere or when it is gone.
fn resident_bytes(pid: u32) -> Option<u64> {
    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use super::*;
    use gateway_core::metrics::Registry;
    use gateway_core::request::ReadFormat;

    fn job(body: &str) -> Job {
        Job {
            header: JobHeader {
                url: "https://site.example/page".into(),
                final_url: "https://site.example/page".into(),
                content_type: Some("text/html".into()),
                format: ReadFormat::Text,
            },
            body: Bytes::from(body.to_owned()),
        }
    }

    fn sandbox(program: Option<PathBuf>) -> (Sandbox, ReaderMetrics) {
        let metrics = ReaderMetrics::new(&mut Registry::new());
        let settings = SandboxSettings {
            workers: 1,
            memory_bytes: 256 * 1024 * 1024,
            program,
        };
        (Sandbox::new(settings, metrics.clone()), metrics)
    }

    /// A worker program that is a shell script: `body` runs instead of the gateway.
    fn script(dir: &tempfile::TempDir, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.path().join("worker.sh");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    const PAGE: &str = "<html><head><title>T</title></head><body><article><p>Enough plain words \
        in one paragraph for the page to be read.</p></article></body></html>";

    #[tokio::test(start_paused = true)]
    async fn a_worker_that_never_answers_is_killed_at_the_deadline_and_the_next_job_gets_a_new_one()
    {
        let dir = tempfile::tempdir().unwrap();
        let pids = dir.path().join("pids");
        let program = script(
            &dir,
            &format!("echo $$ >> {}\nexec sleep 1000", pids.display()),
        );
        let (sandbox, metrics) = sandbox(Some(program));
        let deadline = Instant::now() + Duration::from_secs(2);
        let parsed = sandbox.parse(job(PAGE), deadline).await;
        assert_eq!(parsed, Err(ReadFailure::TooComplex(ParseLimit::Time)));
        let again = sandbox
            .parse(job(PAGE), Instant::now() + Duration::from_secs(2))
            .await;
        assert_eq!(
            again,
            Err(ReadFailure::TooComplex(ParseLimit::Time)),
            "the slot was freed: the next job got a worker of its own"
        );
        assert_eq!(metrics.workers_started.get(), 2);
        let limits = metrics.limits.get_or_create(&LimitLabels {
            limit: ParseLimit::Time,
        });
        assert_eq!(limits.get(), 2);
        // Both killed: no worker outlives its job's deadline (a worker killed before its first
        // line ran wrote no pid).
        let written = std::fs::read_to_string(&pids).unwrap_or_default();
        for pid in written.lines() {
            let gone = wait_gone(pid).await;
            assert!(gone, "worker {pid} still runs");
        }
    }

    /// Whether the process `pid` ends (or is a zombie) within a few seconds of real time.
    async fn wait_gone(pid: &str) -> bool {
        for _ in 0..200 {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = state
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z'));
            if state.is_empty() || zombie {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    #[tokio::test]
    async fn a_worker_that_dies_on_a_page_fails_that_page_alone() {
        let dir = tempfile::tempdir().unwrap();
        let (sandbox, metrics) = sandbox(Some(script(&dir, "exit 134")));
        let deadline = Instant::now() + Duration::from_secs(20);
        let parsed = sandbox.parse(job(PAGE), deadline).await;
        assert_eq!(parsed, Err(ReadFailure::TooComplex(ParseLimit::Resources)));
        assert_eq!(metrics.workers_started.get(), 1);
    }

    #[tokio::test]
    async fn a_worker_program_that_cannot_start_is_an_internal_error_not_a_hang() {
        let (sandbox, _) = sandbox(Some(PathBuf::from("/nonexistent/searxng-gateway")));
        let deadline = Instant::now() + Duration::from_secs(20);
        let parsed = sandbox.parse(job(PAGE), deadline).await;
        assert_eq!(parsed, Err(ReadFailure::Internal));
    }

    #[tokio::test]
    async fn in_threads_a_page_is_parsed_with_the_same_code() {
        let (sandbox, _) = sandbox(None);
        let deadline = Instant::now() + Duration::from_secs(20);
        let document = sandbox.parse(job(PAGE), deadline).await.unwrap();
        assert!(document.content.contains("Enough plain words"));
        let deep = format!("<body>{}</body>", "<div/>".repeat(1000));
        let parsed = sandbox.parse(job(&deep), deadline).await;
        assert_eq!(parsed, Err(ReadFailure::TooComplex(ParseLimit::Nesting)));
    }

    #[tokio::test(start_paused = true)]
    async fn in_threads_the_answer_goes_out_at_the_deadline_and_runaways_are_bounded() {
        let (sandbox, metrics) = sandbox(None);
        // A page that takes far longer to parse than the paused clock lets it.
        let long = format!(
            "<html><body><article>{}</article></body></html>",
            "<p>A paragraph of several plain words to read.</p>".repeat(20_000)
        );
        let deadline = Instant::now() + Duration::from_millis(1);
        let first = sandbox.parse(job(&long), deadline).await;
        assert_eq!(first, Err(ReadFailure::TooComplex(ParseLimit::Time)));
        // One slot: the first runaway still runs; a second fits beside it, a third is refused.
        let second = sandbox
            .parse(job(&long), Instant::now() + Duration::from_millis(1))
            .await;
        assert_eq!(second, Err(ReadFailure::TooComplex(ParseLimit::Time)));
        let third = sandbox
            .parse(job(&long), Instant::now() + Duration::from_millis(1))
            .await;
        assert_eq!(third, Err(ReadFailure::TooComplex(ParseLimit::Busy)));
        let busy = metrics.limits.get_or_create(&LimitLabels {
            limit: ParseLimit::Busy,
        });
        assert_eq!(busy.get(), 1);
    }
}
