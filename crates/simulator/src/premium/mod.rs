//! A faithful fake of the four premium search APIs (Brave, Exa, Jina, Tavily), one provider per
//! [`SimulatedProvider`], serving real HTTP on a loopback port.
//!
//! It is strict like the real services: a wrong path is 404, a wrong method 405, a missing or wrong
//! auth header gets that provider's own auth error (Brave's 422 `SUBSCRIPTION_TOKEN_INVALID`, a 401
//! elsewhere), and out-of-range parameters get its validation error. Every scripted
//! [`ProviderBehaviour`] is served with the status code, body and headers the real provider uses
//! (shared/spec/PROVIDERS.md): Brave's 429 `RATE_LIMITED` vs `QUOTA_LIMITED` and its four
//! `X-RateLimit-*` headers, Exa's 402 `NO_MORE_CREDITS`, Jina's 422 "no results" and 402,
//! Tavily's 432, `Retry-After` on rate limits. Every request is recorded so tests can assert what
//! the fake saw.
//!
//! Behaviour over time — a latency distribution, an error rate, a quota that runs out after N calls,
//! a 429 burst or a slow spell that lifts by itself — is a [`Script`] of [`ProviderBehaviour`]s
//! ([`SimulatedProvider::set_script`]), served the same faithful way. Only requests that pass the
//! method, path and auth checks reach the script, as only those reach a real provider's limiter.
//!
//! The module, one concern per file:
//!
//! - this file: the public handle [`SimulatedProvider`] — start, script, inspect, stop;
//! - `behaviour.rs`: what tests script — [`ProviderBehaviour`], [`SimError`], [`SimHit`], [`BraveWindows`];
//! - `recorded.rs`: one request as the fake received it ([`RecordedRequest`]);
//! - `server.rs`: the HTTP server, the shared state, and the order of checks for one request;
//! - `validate.rs`: each provider's auth header and parameter checks;
//! - `reply/`: each provider's own answers — results, "nothing found", errors — one file per provider.

mod behaviour;
mod recorded;
mod reply;
mod server;
#[cfg(test)]
mod tests;
mod validate;

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::script::Script;
use crate::Provider;

pub use behaviour::{BraveWindows, ProviderBehaviour, SimError, SimHit};
pub use recorded::RecordedRequest;
use server::Shared;

/// How many requests [`SimulatedProvider::requests`] keeps; older ones are forgotten so a long
/// benchmark does not grow without bound. [`SimulatedProvider::calls`] still counts every request.
pub const RECORDED_REQUESTS_LIMIT: usize = 100_000;

/// The key every simulated provider expects unless told otherwise ([`SimulatedProvider::set_expected_key`]).
pub const SIM_KEY: &str = "sim-key";

/// A running fake of one premium provider. Dropping it stops the server and releases any
/// request it is holding (`Slow`, `Hang`).
pub struct SimulatedProvider {
    kind: Provider,
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
    server: JoinHandle<()>,
}

impl SimulatedProvider {
    /// Starts a fake of `kind` on `127.0.0.1:0`, answering results until told otherwise.
    pub async fn start(kind: Provider) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        Self::serve(kind, listener)
    }

    /// Starts a fake of `kind` on a listener the caller bound (the demo mode picks its ports).
    pub fn serve(kind: Provider, listener: TcpListener) -> std::io::Result<Self> {
        let addr = listener.local_addr()?;
        let (shutdown, released) = watch::channel(false);
        let shared = Arc::new(Shared::new(kind, released));
        let server = server::spawn(listener, Arc::clone(&shared));
        Ok(Self {
            kind,
            addr,
            shared,
            shutdown,
            server,
        })
    }

    /// Which provider this fakes.
    pub fn kind(&self) -> Provider {
        self.kind
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The origin to configure as `<NAME>_BASE_URL`, e.g. `http://127.0.0.1:41234`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// What to do with the next requests.
    pub fn set_behaviour(&self, behaviour: ProviderBehaviour) {
        self.shared.lock().behaviour = behaviour;
    }

    /// Scripts the next requests that pass the checks: latency, error rate, quota and spells, each
    /// failure served as the [`ProviderBehaviour`] it names. Requests the script does not fail get
    /// the behaviour [`SimulatedProvider::set_behaviour`] gave, after the scripted delay. The
    /// script's clock starts now.
    pub fn set_script(&self, mut script: Script<ProviderBehaviour>) {
        script.arm();
        self.shared.lock().script = Some(script);
    }

    /// Removes the script; the behaviour set directly stays.
    pub fn clear_script(&self) {
        self.shared.lock().script = None;
    }

    /// Takes `key` too (a pool), answering its calls as `behaviour` says (calls with the expected
    /// key keep [`SimulatedProvider::set_behaviour`]'s). Setting a key again replaces its behaviour.
    pub fn set_key_behaviour(&self, key: &str, behaviour: ProviderBehaviour) {
        let mut state = self.shared.lock();
        state.pool.retain(|(k, _)| k != key);
        state.pool.push((key.to_owned(), behaviour));
    }

    /// The key the auth header must carry (default [`SIM_KEY`]).
    pub fn set_expected_key(&self, key: &str) {
        key.clone_into(&mut self.shared.lock().expected_key);
    }

    /// The rate-limit windows a Brave fake reports (ignored by the others).
    pub fn set_brave_windows(&self, windows: BraveWindows) {
        self.shared.lock().brave = windows;
    }

    /// How many requests arrived, whatever became of them.
    pub fn calls(&self) -> usize {
        self.shared.lock().calls
    }

    /// How many requests are in flight now: arrived, and neither answered yet nor dropped because
    /// the client closed the connection — for a test that must know whether the gateway still
    /// waits on a call.
    pub fn in_flight(&self) -> usize {
        self.shared.in_flight.get()
    }

    /// How long clients kept this fake's connections open before closing them, on the fake's own
    /// clock — when a gateway gave up on a hanging or trickling answer, without timing the gateway.
    pub fn connection_lifetimes(&self) -> crate::LifetimeStats {
        self.shared.lifetimes.stats()
    }

    /// Every request received (the last [`RECORDED_REQUESTS_LIMIT`]), oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.iter().cloned().collect()
    }

    /// The most recent request, if any.
    pub fn last_request(&self) -> Option<RecordedRequest> {
        self.shared.lock().requests.back().cloned()
    }
}

impl Drop for SimulatedProvider {
    fn drop(&mut self) {
        // Release held requests first, then stop accepting; open connections close once idle.
        let _ = self.shutdown.send(true);
        self.server.abort();
    }
}

impl std::fmt::Debug for SimulatedProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimulatedProvider")
            .field("kind", &self.kind)
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}
