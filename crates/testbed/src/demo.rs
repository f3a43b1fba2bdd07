//! The demo as a whole: bind its address (saying so when the port is taken), start the simulated upstreams
//! and the real gateway — the same [`searxng_gateway::serve`] the binary uses — on the caller's listener,
//! run the narrated [`Scenario`] until the rounds are done or the shutdown future resolves, then stop the
//! gateway (it finishes what is in flight) before the simulators.

use std::future::Future;
use std::io::{self, Write};
use std::net::SocketAddr;

use searxng_gateway::{Config, ConfigError};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::gateway_client::GatewayClient;
use crate::narrator::Narrator;
use crate::options::DemoOptions;
use crate::scenario::Scenario;
use crate::upstreams::Upstreams;

/// Why the demo could not run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DemoError {
    /// Something else listens on the address.
    #[error(
        "{0} is already in use: stop whatever listens there, or pick another address with \
         `cargo demo -- --listen 127.0.0.1:8090` (or LISTEN_ADDR=127.0.0.1:8090)"
    )]
    AddressInUse(SocketAddr),
    /// Binding failed for another reason.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The operating system's reason.
        source: io::Error,
    },
    /// A simulator could not bind a loopback port.
    #[error("cannot start the simulated upstreams: {0}")]
    Simulator(io::Error),
    /// The gateway refused the demo's own configuration.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The gateway's server failed.
    #[error("the gateway stopped serving: {0}")]
    Serve(io::Error),
}

/// Binds the demo's address, saying clearly when the port is taken.
pub(crate) async fn bind(addr: SocketAddr) -> Result<TcpListener, DemoError> {
    TcpListener::bind(addr).await.map_err(|source| {
        if source.kind() == io::ErrorKind::AddrInUse {
            DemoError::AddressInUse(addr)
        } else {
            DemoError::Bind { addr, source }
        }
    })
}

/// Runs the demo on `listener` until `shutdown` resolves (or the rounds are done), narrating to
/// `out`. The gateway finishes in-flight requests before this returns.
pub(crate) async fn run(
    listener: TcpListener,
    options: DemoOptions,
    out: impl Write + Send + 'static,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), DemoError> {
    let listen = listener.local_addr().map_err(DemoError::Serve)?;
    let upstreams = Upstreams::start().await.map_err(DemoError::Simulator)?;
    let env = upstreams.gateway_env(listen, options.breaker_open);
    let config = Config::from_lookup(&|name| env.get(name).cloned())?;
    let (stop_tx, mut stop_rx) = watch::channel(false);
    let stopped = async move {
        let _ = stop_rx.wait_for(|stop| *stop).await;
    };
    let serving = tokio::spawn(searxng_gateway::serve(listener, config, stopped));

    let mut scenario = Scenario::new(
        Narrator::new(out),
        GatewayClient::new(listen),
        upstreams,
        options.breaker_open,
    );
    scenario.banner(&env);
    let interrupted = tokio::select! {
        () = scenario.run(options.rounds, options.pause) => false,
        () = shutdown => true,
    };
    if interrupted {
        scenario
            .narrator()
            .say("\nStopping: the gateway finishes what is in flight, then the simulators stop.");
    }
    let _ = stop_tx.send(true);
    let served = serving.await;
    scenario.narrator().say("Demo stopped.");
    match served {
        Ok(result) => result.map_err(DemoError::Serve),
        Err(join) => Err(DemoError::Serve(io::Error::other(join))),
    }
}
