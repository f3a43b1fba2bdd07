//! The SearXNG cooldown, one per instance: after `SEARXNG_FAIL_THRESHOLD` consecutive failed calls
//! an instance is skipped for `SEARXNG_FAIL_COOLDOWN_SECONDS`, then exactly one request probes it.
//! A breaker of its own kind, so it shares the state machine and its tests. A client hanging up (a
//! dropped permit) is not a SearXNG failure.
//!
//! A single instance keeps a fixed period (no growth, no jitter): with nowhere else to send
//! searches, a longer cooldown would only mean longer without SearXNG. A pool member's period
//! doubles on each trip in a row up to `SEARXNG_MAX_COOLDOWN_SECONDS` (the other instances carry
//! the load meanwhile, and a flapping instance is probed less and less often), with a little
//! jitter so instances ejected together are not probed together.

use std::time::Duration;

use gateway_core::breaker::{Breaker, BreakerKind, BreakerMetrics, BreakerPolicy};
use gateway_core::metrics::InstanceLabel;

/// The cooldown's numbers, from the configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct CooldownSettings {
    /// `SEARXNG_FAIL_THRESHOLD`: failed calls in a row that start it.
    pub(crate) threshold: u32,
    /// `SEARXNG_FAIL_COOLDOWN_SECONDS`: its first period.
    pub(crate) period: Duration,
    /// `SEARXNG_MAX_COOLDOWN_SECONDS`: a pool member's longest period.
    pub(crate) max_period: Duration,
    /// `BREAKER_JITTER`: a pool member's random share of its period.
    pub(crate) jitter: f64,
}

/// The cooldown breaker of one instance: `instance` names a pool member, or is empty for the only
/// instance.
pub(super) fn searxng_cooldown(
    settings: &CooldownSettings,
    metrics: &BreakerMetrics,
    instance: InstanceLabel,
) -> Breaker {
    let pooled = instance.name().is_some();
    let (open_max, jitter) = if pooled {
        (settings.max_period, settings.jitter)
    } else {
        (settings.period, 0.0)
    };
    Breaker::new(
        BreakerKind::Searxng,
        "searxng",
        instance,
        BreakerPolicy {
            open_base: settings.period,
            open_max,
            failure_threshold: settings.threshold,
            jitter,
            // Each cooldown period spent healthy halves the doubling again.
            healthy_interval: settings.period,
            quota_park: settings.period,
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
    use gateway_core::breaker::{BreakerState, Signal};

    fn config(vars: &[(&str, &str)]) -> CooldownSettings {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect();
        let config = crate::settings::EngineSettings::from_lookup(&move |name| {
            vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
        .unwrap();
        CooldownSettings {
            threshold: config.searxng_fail_threshold,
            period: config.searxng_fail_cooldown,
            max_period: config.searxng_max_cooldown,
            jitter: config.breaker_jitter,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_cooldown_starts_at_the_threshold_and_ends_with_one_probe() {
        let c = config(&[
            ("SEARXNG_FAIL_THRESHOLD", "3"),
            ("SEARXNG_FAIL_COOLDOWN_SECONDS", "180"),
        ]);
        let cooldown = Arc::new(searxng_cooldown(
            &c,
            &BreakerMetrics::new(&mut gateway_core::metrics::Registry::new()),
            InstanceLabel::single(),
        ));
        for _ in 0..2 {
            cooldown.admit().unwrap().record(Signal::TRANSIENT);
        }
        assert_eq!(
            cooldown.state(),
            BreakerState::Closed,
            "below the threshold"
        );
        cooldown.admit().unwrap().record(Signal::TRANSIENT);
        assert!(cooldown.admit().is_none(), "skipped during the cooldown");

        tokio::time::advance(Duration::from_secs(179)).await;
        assert!(cooldown.admit().is_none());
        tokio::time::advance(Duration::from_secs(2)).await;
        let probe = cooldown.admit().expect("the cooldown is over");
        assert!(probe.is_probe());
        assert!(cooldown.admit().is_none(), "only one probe");
        probe.record(Signal::TRANSIENT);
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
            &BreakerMetrics::new(&mut gateway_core::metrics::Registry::new()),
            InstanceLabel::single(),
        ));
        cooldown.admit().unwrap().record(Signal::TRANSIENT);
        cooldown.admit().unwrap().record(Signal::Success);
        cooldown.admit().unwrap().record(Signal::TRANSIENT);
        assert_eq!(cooldown.state(), BreakerState::Closed);
        cooldown.admit().unwrap().record(Signal::TRANSIENT);
        tokio::time::advance(Duration::from_secs(11)).await;
        drop(cooldown.admit().unwrap()); // the client hung up during the probe
        assert!(cooldown.admit().is_some(), "the next request may probe");
    }

    #[tokio::test(start_paused = true)]
    async fn a_pool_members_cooldown_grows_on_each_trip_in_a_row_up_to_the_cap() {
        let c = config(&[
            ("SEARXNG_BACKEND_URL", "http://a:1,http://b:2"),
            ("SEARXNG_FAIL_THRESHOLD", "1"),
            ("SEARXNG_FAIL_COOLDOWN_SECONDS", "10"),
            ("SEARXNG_MAX_COOLDOWN_SECONDS", "25"),
        ]);
        let cooldown = Arc::new(searxng_cooldown(
            &c,
            &BreakerMetrics::new(&mut gateway_core::metrics::Registry::new()),
            InstanceLabel::pooled("a:1"),
        ));
        cooldown.admit().unwrap().record(Signal::TRANSIENT);
        let first = cooldown.snapshot().open_for.unwrap();
        assert!(first >= Duration::from_secs(10) && first <= Duration::from_secs(11));
        tokio::time::advance(first).await;
        cooldown.admit().unwrap().record(Signal::TRANSIENT);
        let second = cooldown.snapshot().open_for.unwrap();
        assert!(
            second >= Duration::from_secs(20) && second <= Duration::from_secs(22),
            "doubled: {second:?}"
        );
        tokio::time::advance(second).await;
        cooldown.admit().unwrap().record(Signal::TRANSIENT);
        let third = cooldown.snapshot().open_for.unwrap();
        assert!(
            third >= Duration::from_secs(25) && third <= Duration::from_secs(28),
            "capped: {third:?}"
        );
    }
}
