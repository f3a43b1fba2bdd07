//! The browser as a supervised child: started lazily by the first render that needs it, watched
//! (its exit, its DevTools connection, the resident memory of its process tree every half
//! second against `BROWSER_MEMORY_MB`), killed with its whole process group when it crashes,
//! hangs or outgrows the ceiling, and started again by the next render — after a backoff that
//! doubles with each failure in a row (250 ms to 30 s), so a browser that cannot start costs
//! nothing but a refused render. Nothing here can take the gateway down: the browser is another
//! process, and every wait on it has a deadline.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chromiumoxide::Browser as Devtools;
use futures::StreamExt;
use tokio::sync::{Mutex, Notify};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::metrics::{BrowserMetrics, RestartLabels};
use super::process::{self, Process};
use super::RestartReason;

/// How long Chromium may take to print its DevTools address.
const LAUNCH_TIMEOUT: Duration = Duration::from_secs(20);
/// How often the process tree's memory is read.
const MEMORY_EVERY: Duration = Duration::from_millis(500);
/// The first backoff after a failure, doubled per failure in a row, at most [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// One running browser.
pub(super) struct Instance {
    pub(super) devtools: Devtools,
    /// Chromium's process id (the leader of its process group).
    pub(super) pid: u32,
    ended: Arc<AtomicBool>,
    /// Turns `true` when it has ended.
    gone: tokio::sync::watch::Receiver<bool>,
    kill: Arc<Notify>,
    hung: Arc<AtomicBool>,
    tasks: Vec<JoinHandle<()>>,
}

impl Instance {
    /// Whether it has ended (crashed, killed, disconnected).
    pub(super) fn ended(&self) -> bool {
        self.ended.load(Ordering::Acquire)
    }

    /// Resolves when it has ended.
    pub(super) async fn gone(&self) {
        let mut gone = self.gone.clone();
        let _ = gone.wait_for(|gone| *gone).await;
    }

    /// Kills it: it did not answer in time.
    pub(super) fn kill_hung(&self) {
        tracing::warn!(
            pid = self.pid,
            "local browser did not answer in time: killed"
        );
        self.hung.store(true, Ordering::Release);
        self.kill.notify_one();
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

struct Slot {
    current: Option<Arc<Instance>>,
    failures: u32,
    not_before: Instant,
}

/// The supervisor of the one browser process.
pub(super) struct Supervisor {
    program: PathBuf,
    memory_bytes: u64,
    metrics: BrowserMetrics,
    slot: Mutex<Slot>,
}

/// No browser could be had before the deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Unavailable;

impl Supervisor {
    pub(super) fn new(program: PathBuf, memory_bytes: u64, metrics: BrowserMetrics) -> Self {
        Self {
            program,
            memory_bytes,
            metrics,
            slot: Mutex::new(Slot {
                current: None,
                failures: 0,
                not_before: Instant::now(),
            }),
        }
    }

    /// The running browser, started (again) when there is none, unless the backoff outlasts
    /// `deadline`.
    pub(super) async fn instance(&self, deadline: Instant) -> Result<Arc<Instance>, Unavailable> {
        let mut slot = self.slot.lock().await;
        if let Some(current) = &slot.current {
            if !current.ended() {
                return Ok(Arc::clone(current));
            }
            slot.current = None;
            Self::failed(&mut slot);
        }
        if slot.not_before > deadline {
            return Err(Unavailable);
        }
        tokio::time::sleep_until(slot.not_before).await;
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left.min(LAUNCH_TIMEOUT), self.launch()).await {
            Ok(Ok(instance)) => {
                let instance = Arc::new(instance);
                slot.current = Some(Arc::clone(&instance));
                Ok(instance)
            }
            Ok(Err(err)) => {
                tracing::warn!("local browser: {err}");
                Self::failed(&mut slot);
                Err(Unavailable)
            }
            Err(_) => {
                Self::failed(&mut slot);
                Err(Unavailable)
            }
        }
    }

    /// The running browser's process id, if one runs.
    #[cfg(test)]
    pub(super) async fn running(&self) -> Option<u32> {
        let slot = self.slot.lock().await;
        slot.current.as_ref().filter(|i| !i.ended()).map(|i| i.pid)
    }

    /// A render went well: the next failure starts the backoff from its first step.
    pub(super) async fn healthy(&self) {
        self.slot.lock().await.failures = 0;
    }

    fn failed(slot: &mut Slot) {
        slot.failures = slot.failures.saturating_add(1);
        let backoff = FIRST_BACKOFF
            .saturating_mul(1 << slot.failures.min(8).saturating_sub(1))
            .min(MAX_BACKOFF);
        slot.not_before = Instant::now() + backoff;
    }

    async fn launch(&self) -> Result<Instance, process::LaunchError> {
        let started = std::time::Instant::now();
        let mut child = process::launch(&self.program, LAUNCH_TIMEOUT).await?;
        let (devtools, mut handler) = Devtools::connect(child.devtools.clone())
            .await
            .map_err(|err| process::LaunchError::Connect(err.to_string()))?;
        tracing::info!(
            pid = child.pid,
            started_ms = started.elapsed().as_millis() as u64,
            "local browser started"
        );
        let pid = child.pid;
        let ended = Arc::new(AtomicBool::new(false));
        let kill = Arc::new(Notify::new());
        let hung = Arc::new(AtomicBool::new(false));
        let (gone_tx, gone) = tokio::sync::watch::channel(false);
        let connection = tokio::spawn(async move {
            while let Some(event) = handler.next().await {
                if event.is_err() {
                    break;
                }
            }
        });
        let watch = {
            let (ended, kill, hung) = (Arc::clone(&ended), Arc::clone(&kill), Arc::clone(&hung));
            let (metrics, ceiling) = (self.metrics.clone(), self.memory_bytes);
            tokio::spawn(async move {
                let reason = watch(&mut child, connection, &kill, ceiling).await;
                let reason = if hung.load(Ordering::Acquire) {
                    RestartReason::Hung
                } else {
                    reason
                };
                // Counted before anyone waiting on its end is told: a render that ends with it
                // finds the restart already in `browser_restarts_total`.
                metrics
                    .restarts
                    .get_or_create(&RestartLabels { reason })
                    .inc();
                tracing::warn!(
                    reason = reason.as_str(),
                    "local browser ended; the next render starts it again"
                );
                ended.store(true, Ordering::Release);
                let _ = gone_tx.send(true);
                drop(child);
            })
        };
        Ok(Instance {
            devtools,
            pid,
            ended,
            gone,
            kill,
            hung,
            tasks: vec![watch],
        })
    }
}

/// Waits for `child` to end, its connection to drop, its tree to outgrow `ceiling`, or a kill;
/// kills its process group and says why it ended.
async fn watch(
    child: &mut Process,
    mut connection: JoinHandle<()>,
    kill: &Notify,
    ceiling: u64,
) -> RestartReason {
    let pid = child.pid;
    let mut every = tokio::time::interval(MEMORY_EVERY);
    let reason = loop {
        tokio::select! {
            _ = child.child.wait() => break RestartReason::Crashed,
            _ = &mut connection => break RestartReason::Crashed,
            () = kill.notified() => break RestartReason::Hung,
            _ = every.tick() => {
                if process::tree_rss(pid) > ceiling {
                    break RestartReason::Memory;
                }
            }
        }
    };
    connection.abort();
    process::kill_group(pid);
    reason
}
