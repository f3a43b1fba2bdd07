//! A gateway in front of the simulators: a simulated SearXNG and simulated premium providers
//! (each with the simulator's key and its origin as `<NAME>_BASE_URL`).

use simulator::premium::{SimulatedProvider, SIM_KEY};
use simulator::searxng::{EngineBehaviour, EngineFailure, SimulatedSearxng};
use simulator::Provider;

use super::gateway::TestGateway;

/// The engines of the simulated SearXNG.
pub const ENGINES: [&str; 3] = ["alpha", "beta", "gamma"];

/// Simulators plus the gateway in front of them.
pub struct SimStack {
    /// The simulated SearXNG.
    pub searxng: SimulatedSearxng,
    /// Simulated providers, in `FALLBACK_PROVIDERS` order.
    pub providers: Vec<SimulatedProvider>,
    /// The gateway.
    pub gateway: TestGateway,
    /// SearXNG `/search` hits before the first test request (the gateway's start-up JSON check).
    baseline_hits: usize,
    /// The gateway's environment, for [`SimStack::replica`].
    env: Vec<(String, String)>,
}

impl SimStack {
    /// Starts SearXNG, the `providers` (with keys, in this order) and a gateway with `vars` on top.
    pub async fn start(providers: &[Provider], vars: &[(&str, &str)]) -> Self {
        Self::start_with_keys(providers, true, vars).await
    }

    /// Like [`SimStack::start`]; `with_keys = false` leaves every provider without a key.
    pub async fn start_with_keys(
        providers: &[Provider],
        with_keys: bool,
        vars: &[(&str, &str)],
    ) -> Self {
        let searxng = SimulatedSearxng::start(&ENGINES)
            .await
            .expect("simulated SearXNG starts");
        let mut sims = Vec::new();
        for kind in providers {
            sims.push(
                SimulatedProvider::start(*kind)
                    .await
                    .expect("simulated provider starts"),
            );
        }
        let mut env: Vec<(String, String)> = vec![
            ("SEARXNG_BACKEND_URL".into(), searxng.base_url()),
            (
                "FALLBACK_PROVIDERS".into(),
                providers
                    .iter()
                    .map(|k| k.as_str())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
        ];
        for sim in &sims {
            let prefix = sim.kind().env_prefix();
            env.push((format!("{prefix}_BASE_URL"), sim.base_url()));
            if with_keys {
                env.push((format!("{prefix}_API_KEY"), SIM_KEY.into()));
            }
        }
        for (k, v) in vars {
            env.retain(|(name, _)| name != k);
            env.push(((*k).to_owned(), (*v).to_owned()));
        }
        let gateway = Self::gateway(&env).await;
        let baseline_hits = searxng.hits();
        Self {
            searxng,
            providers: sims,
            gateway,
            baseline_hits,
            env,
        }
    }

    async fn gateway(env: &[(String, String)]) -> TestGateway {
        let borrowed: Vec<(&str, &str)> =
            env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let gateway = TestGateway::start(&borrowed).await;
        // The start-up check (is JSON enabled?) and the first /config read happen first.
        gateway.wait_for_catalog().await;
        gateway
    }

    /// The gateway's environment (the simulators' addresses and keys, and the test's variables),
    /// for starting the real binary in front of the same simulators.
    pub fn env(&self) -> Vec<(String, String)> {
        self.env.clone()
    }

    /// Another gateway with the same environment and state of its own, in front of the same
    /// simulators: a replica (with `REDIS_URL`, they share through Redis). Its start-up check is
    /// not counted as test traffic.
    pub async fn replica(&mut self) -> TestGateway {
        let before = self.searxng.hits();
        let gateway = Self::gateway(&self.env).await;
        self.baseline_hits += self.searxng.hits() - before;
        gateway
    }

    /// SearXNG `/search` requests caused by test traffic (the start-up check excluded).
    pub fn searxng_hits(&self) -> usize {
        self.searxng.hits() - self.baseline_hits
    }

    /// Every engine answers "too many requests": SearXNG's answer is degraded (zero results, every engine
    /// unresponsive), which sends each request to the premium fallback.
    pub fn fail_every_engine(&self) {
        for engine in ENGINES {
            self.searxng.set_engine(
                engine,
                EngineBehaviour::Fails(EngineFailure::TooManyRequests),
            );
        }
    }

    /// The simulator of `kind`.
    pub fn provider(&self, kind: Provider) -> &SimulatedProvider {
        self.providers
            .iter()
            .find(|p| p.kind() == kind)
            .expect("provider is part of the stack")
    }

    /// Calls per provider, in stack order.
    pub fn provider_calls(&self) -> Vec<usize> {
        self.providers
            .iter()
            .map(SimulatedProvider::calls)
            .collect()
    }
}
