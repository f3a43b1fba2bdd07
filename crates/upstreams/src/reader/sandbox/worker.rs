//! The parse worker: the child process side. `searxng-gateway parse-worker --memory-bytes N` limits
//! itself first (address space to `N`, no core file, no file it may write, few descriptors), then
//! parses the jobs it reads on stdin, one at a time, on a thread with a large stack, answering each
//! on stdout, until stdin closes. Whatever a page does to it — a stack overflow, an allocation past
//! its limit, an endless loop — ends this process, never the gateway.

use std::process::ExitCode;

use tokio::io::AsyncWriteExt;

use super::wire::{read_frame, write_frame, JobHeader, Reply};

/// The parser's stack: deep enough for any page the nesting guard lets through, and for
/// `pdf-extract`'s recursion on a sane PDF (one that recurses without end overflows it anyway and
/// takes only this process down).
pub(super) const STACK_BYTES: usize = 64 * 1024 * 1024;
/// Descriptors the worker may hold (stdin, stdout, stderr, the runtime's few).
const MAX_FILES: u64 = 32;

/// The limits a worker puts on itself before it reads anything.
#[derive(Debug, Clone, Copy)]
pub struct WorkerLimits {
    /// Address space, in bytes (`RLIMIT_AS`).
    pub memory_bytes: u64,
}

impl WorkerLimits {
    fn apply(self) -> std::io::Result<()> {
        use rlimit::Resource;
        Resource::AS.set(self.memory_bytes, self.memory_bytes)?;
        Resource::CORE.set(0, 0)?;
        Resource::FSIZE.set(0, 0)?;
        Resource::NOFILE.set(MAX_FILES, MAX_FILES)?;
        Ok(())
    }
}

/// The worker's main: limits, then the job loop. Exit 0 when stdin closes, 1 on a broken pipe or
/// frame, 2 when the limits could not be set.
pub fn run(limits: WorkerLimits) -> ExitCode {
    if let Err(err) = limits.apply() {
        eprintln!("searxng-gateway parse-worker: cannot set its limits: {err}");
        return ExitCode::from(2);
    }
    let worker = std::thread::Builder::new()
        .name("parse-worker".into())
        .stack_size(STACK_BYTES)
        .spawn(serve_jobs);
    match worker.map(std::thread::JoinHandle::join) {
        Ok(Ok(Ok(()))) => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    }
}

fn serve_jobs() -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    runtime.block_on(async {
        let mut input = tokio::io::stdin();
        let mut output = tokio::io::stdout();
        loop {
            let Some(header) = read_frame(&mut input).await? else {
                return Ok(());
            };
            let header: JobHeader = serde_json::from_slice(&header)
                .map_err(|err| std::io::Error::new(std::io::ErrorKind::InvalidData, err))?;
            let Some(body) = read_frame(&mut input).await? else {
                return Ok(());
            };
            let reply = Reply::from(super::parse_here(&header, &body));
            let bytes = serde_json::to_vec(&reply)
                .map_err(|err| std::io::Error::new(std::io::ErrorKind::InvalidData, err))?;
            write_frame(&mut output, &bytes).await?;
            output.flush().await?;
        }
    })
}
