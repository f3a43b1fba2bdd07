//! Waiting for something observable instead of sleeping: poll a condition until it holds, or await a
//! future, bounded by a hang guard — a deadline so generous that only a hang or a broken gateway reaches
//! it, never a slow machine.

use std::future::Future;
use std::time::{Duration, Instant};

/// How long any wait may take before the test fails as hung.
pub const HANG_GUARD: Duration = Duration::from_secs(30);

/// A timeout, as an environment value in seconds, that no test waits for: a gateway that waited for it
/// would hit [`HANG_GUARD`] first. Upstream timeouts set to this make "the gateway did not wait for that
/// upstream" provable without measuring how fast it answered.
pub const UNREACHED_TIMEOUT_SECONDS: &str = "600";

const POLL_INTERVAL: Duration = Duration::from_millis(10);

/// Polls `condition` until it returns `true`; panics naming `what` after [`HANG_GUARD`].
pub async fn until<F, Fut>(what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    // Real time on purpose: the guard must hold even if a test pauses tokio's clock.
    let deadline = Instant::now() + HANG_GUARD;
    loop {
        if condition().await {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "waited {HANG_GUARD:?} for {what}"
        );
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// Polls `check` until it finds no problem, or [`HANG_GUARD`] passes; returns the problems of its
/// last run (empty: settled), for a caller whose failure message lists them.
pub async fn settle<F, Fut>(mut check: F) -> Vec<String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Vec<String>>,
{
    let deadline = Instant::now() + HANG_GUARD;
    loop {
        let problems = check().await;
        if problems.is_empty() || Instant::now() >= deadline {
            return problems;
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// Awaits `future`; panics naming `what` if it takes longer than [`HANG_GUARD`].
pub async fn guarded<T>(what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(HANG_GUARD, future).await {
        Ok(value) => value,
        Err(_) => panic!("{what} did not happen within {HANG_GUARD:?}"),
    }
}
