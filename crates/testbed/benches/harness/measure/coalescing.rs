//! d. Coalescing: bursts of 100 identical cold queries at the same moment against a SearXNG that takes a
//! second; how many upstream calls each burst caused (exactly one is the target).

use std::time::Duration;

use crate::loadgen::{self, BoxError};
use crate::report::Row;
use crate::{gateway_env, search_path, Bench, ENGINES};
use simulator::script::{Latency, Script};
use simulator::searxng::SimulatedSearxng;

impl Bench {
    /// d. Upstream calls for 100 identical cold queries at once.
    pub(crate) async fn coalescing(&mut self) -> Result<(), BoxError> {
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
}
