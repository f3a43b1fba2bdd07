//! Faithful fakes of the gateway's upstreams, for tests, benchmarks and the demo mode. Each fake
//! serves real HTTP on a loopback listener and is strict where the real service is: wrong method,
//! path or auth header fail the way the real API fails, so an adapter bug fails a test.
//! [`script`] makes them misbehave over time — latency distributions, error rates, quotas, and
//! spells (a CAPTCHA wall, a 429 burst, a slow patch) that lift by themselves.

pub mod premium;
pub mod script;
pub mod searxng;
