//! The SearXNG cooldown: after `SEARXNG_FAIL_THRESHOLD` consecutive failed calls SearXNG is
//! skipped for `SEARXNG_FAIL_COOLDOWN_SECONDS` (no growth, no jitter), then exactly one request
//! probes it. A breaker of its own kind, so it shares the state machine and its tests. A client
//! hanging up (a dropped permit) is not a SearXNG failure.

use crate::breaker::{Breaker, BreakerKind, BreakerMetrics, BreakerPolicy};
use crate::config::Config;

/// The cooldown breaker for `config`.
pub(super) fn searxng_cooldown(config: &Config, metrics: &BreakerMetrics) -> Breaker {
    Breaker::new(
        BreakerKind::Searxng,
        "searxng",
        BreakerPolicy {
            open_base: config.searxng_fail_cooldown,
            open_max: config.searxng_fail_cooldown,
            failure_threshold: config.searxng_fail_threshold,
            jitter: 0.0,
            healthy_interval: config.searxng_fail_cooldown,
            quota_park: config.searxng_fail_cooldown,
        },
        metrics,
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::breaker::{BreakerState, Signal};

    fn config(vars: &[(&str, &str)]) -> Config {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect();
        Config::from_lookup(&move |name| {
            vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
        .unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn the_cooldown_starts_at_the_threshold_and_ends_with_one_probe() {
        let c = config(&[
            ("SEARXNG_FAIL_THRESHOLD", "3"),
            ("SEARXNG_FAIL_COOLDOWN_SECONDS", "180"),
        ]);
        let cooldown = Arc::new(searxng_cooldown(
            &c,
            &BreakerMetrics::new(&mut crate::metrics::Registry::new()),
        ));
        for _ in 0..2 {
            cooldown.admit().unwrap().record(Signal::Transient);
        }
        assert_eq!(
            cooldown.state(),
            BreakerState::Closed,
            "below the threshold"
        );
        cooldown.admit().unwrap().record(Signal::Transient);
        assert!(cooldown.admit().is_none(), "skipped during the cooldown");

        tokio::time::advance(Duration::from_secs(179)).await;
        assert!(cooldown.admit().is_none());
        tokio::time::advance(Duration::from_secs(2)).await;
        let probe = cooldown.admit().expect("the cooldown is over");
        assert!(probe.is_probe());
        assert!(cooldown.admit().is_none(), "only one probe");
        probe.record(Signal::Transient);
        tokio::time::advance(Duration::from_secs(179)).await;
        assert!(
            cooldown.admit().is_none(),
            "a failed probe starts another cooldown of the same length"
        );
        tokio::time::advance(Duration::from_secs(2)).await;
        cooldown.admit().unwrap().record(Signal::Success);
        assert_eq!(cooldown.state(), BreakerState::Closed);
    }

    #[tokio::test(start_paused = true)]
    async fn a_success_resets_the_failure_run_and_a_dropped_probe_is_no_failure() {
        let c = config(&[
            ("SEARXNG_FAIL_THRESHOLD", "2"),
            ("SEARXNG_FAIL_COOLDOWN_SECONDS", "10"),
        ]);
        let cooldown = Arc::new(searxng_cooldown(
            &c,
            &BreakerMetrics::new(&mut crate::metrics::Registry::new()),
        ));
        cooldown.admit().unwrap().record(Signal::Transient);
        cooldown.admit().unwrap().record(Signal::Success);
        cooldown.admit().unwrap().record(Signal::Transient);
        assert_eq!(cooldown.state(), BreakerState::Closed);
        cooldown.admit().unwrap().record(Signal::Transient);
        tokio::time::advance(Duration::from_secs(11)).await;
        drop(cooldown.admit().unwrap()); // the client hung up during the probe
        assert!(cooldown.admit().is_some(), "the next request may probe");
    }
}
