//! f. A pool of SearXNG instances: throughput of cache misses through the gateway in front of 1, 2 and 3
//! simulated instances, each limited to [`CAPACITY`] (a real SearXNG process saturates at 50–90 searches per
//! second on two cores; the simulated one saturates at a known rate instead, well below what the gateway
//! itself can do here). The gateway's throughput should grow with the pool, close to one instance's capacity
//! per instance, with every instance taking its share.

use std::sync::Arc;
use std::time::Duration;

use crate::loadgen::{self, BoxError, Load};
use crate::report::Row;
use crate::{search_path, Bench, CONNECTIONS, ENGINES};
use simulator::searxng::{Capacity, SimulatedSearxng};

/// One simulated instance's capacity: 4 searches at a time, 10 ms each = 400 searches/s.
const CAPACITY: Capacity = Capacity {
    workers: 4,
    service_time: Duration::from_millis(10),
};
/// Pool sizes measured.
const POOL_SIZES: [usize; 3] = [1, 2, 3];
/// A pool of n instances should reach at least this share of n × one instance's measured throughput.
const SCALING_TARGET: f64 = 0.85;

impl Bench {
    /// f. Misses per second through pools of 1, 2 and 3 capacity-limited instances.
    pub(crate) async fn pool_throughput(&mut self) -> Result<(), BoxError> {
        let mut measured: Vec<(usize, f64, Vec<usize>)> = Vec::new();
        for size in POOL_SIZES {
            let mut instances = Vec::new();
            for _ in 0..size {
                let searxng = SimulatedSearxng::start(&ENGINES).await?;
                searxng.set_capacity(Some(CAPACITY));
                instances.push(searxng);
            }
            let urls: Vec<String> = instances.iter().map(SimulatedSearxng::base_url).collect();
            let env = vec![
                ("SEARXNG_BACKEND_URL".to_owned(), urls.join(",")),
                ("CACHE_SIZE".to_owned(), "0".to_owned()),
            ];
            let gateway = self.gateway(&env, &format!("gateway-pool-{size}")).await?;
            let load = |duration, tag: &'static str| Load {
                addr: gateway.addr,
                connections: CONNECTIONS,
                duration,
                max_requests: None,
                path: Arc::new(move |n| search_path(&format!("pool {tag} {n}"))),
            };
            let warm_up = loadgen::run(&load(self.plan.pool_warmup, "warm-up")).await;
            self.fail_on_errors(&format!("f. pool of {size}, warm-up"), &warm_up);
            let before: Vec<usize> = instances.iter().map(SimulatedSearxng::hits).collect();
            let report = loadgen::run(&load(self.plan.pool_run, "run")).await;
            self.fail_on_errors(&format!("f. pool of {size}"), &report);
            let served: Vec<usize> = instances
                .iter()
                .zip(&before)
                .map(|(instance, before)| instance.hits() - before)
                .collect();
            let throughput = report.throughput();
            println!(
                "   pool of {size}: {throughput:.0} misses/s, per instance {served:?}, {}",
                crate::latency_summary(&report.latency)
            );
            if served.contains(&0) {
                self.failures.push(format!(
                    "f. pool of {size}: an instance served nothing ({served:?})"
                ));
            }
            self.details.push(format!(
                "f. pool of {size}: {} misses over {CONNECTIONS} connections in {:.1} s = {throughput:.0}/s; \
                 searches per instance {served:?}; {}",
                report.ok,
                report.elapsed.as_secs_f64(),
                crate::latency_summary(&report.latency)
            ));
            measured.push((size, throughput, served));
            gateway.stop();
        }
        let single = measured.first().map_or(0.0, |(_, t, _)| *t).max(1e-9);
        for (size, throughput, _) in &measured {
            let scaling = throughput / single;
            let met = *size == 1 || scaling >= SCALING_TARGET * *size as f64;
            self.rows.push(Row {
                name: format!(
                    "f. misses through a pool of {size} (each instance ≤ {:.0}/s)",
                    CAPACITY.searches_per_second()
                ),
                result: format!("{throughput:.0} misses/s = {scaling:.2}× one instance"),
                target: if *size == 1 {
                    "report".to_owned()
                } else {
                    format!("≥ {:.2}×", SCALING_TARGET * *size as f64)
                },
                met: (*size > 1).then_some(met),
            });
        }
        self.details.push(format!(
            "f. every simulated instance serves at most {} searches at a time for {} ms each ({:.0} searches/s); \
             the gateway runs with CACHE_SIZE=0 and SEARXNG_BACKEND_URL listing the pool; distinct queries.",
            CAPACITY.workers,
            CAPACITY.service_time.as_millis(),
            CAPACITY.searches_per_second()
        ));
        Ok(())
    }
}
