//! c. The T1 pass: `T1_PREMIUM_COUNT=3` with Brave, Exa and Tavily each scripted to answer in 100 ms; the
//! wall time of a cold search, which should be one provider's latency, not three.

use std::sync::Arc;
use std::time::Duration;

use crate::loadgen::{self, BoxError, Load};
use crate::report::Row;
use crate::{gateway_env, latency_summary, ms, search_path, Bench};
use simulator::premium::{SimulatedProvider, SIM_KEY};
use simulator::script::{Latency, Script};
use simulator::searxng::SimulatedSearxng;
use simulator::Provider as ProviderKind;

/// How long each simulated provider takes.
const PROVIDER_LATENCY: Duration = Duration::from_millis(100);
/// The T1 pass's wall time as a multiple of one provider's latency.
const T1_FACTOR_TARGET: f64 = 1.15;

impl Bench {
    /// c. The wall time of a T1 pass with three 100 ms providers.
    pub(crate) async fn t1_pass(&mut self, searxng: &SimulatedSearxng) -> Result<(), BoxError> {
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
}
