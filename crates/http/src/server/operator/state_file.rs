//! `STATE_DIR` while the gateway runs: the state read back once at start (before the first
//! request), then written every [`WRITE_INTERVAL`] and once more at shutdown; the crawl jobs of
//! a gateway without Redis are kept there too, by the engine (taken back here at start). The file and its
//! format are [`gateway_core::persist`]'s; what goes in it, the pipeline's ([`Gateway::export_state`])
//! and the clients' ([`Clients::export_spend`]). File work runs on the blocking pool.

use tokio::sync::watch;

use crate::clients::Clients;
use crate::gateway::Gateway;
use gateway_core::persist::{Loaded, Snapshot, StateDir, WRITE_INTERVAL};

/// Reads the state file and hands each owner its part. A missing file is a first start; a file
/// that cannot be used is logged once and ignored.
pub(crate) async fn restore(dir: &StateDir, gateway: &Gateway, clients: &Clients) {
    // Crawl jobs kept in files of their own, beside the state file.
    gateway.crawls().keep_under(dir.path()).await;
    let file = dir.file();
    let loaded = {
        let dir = dir.clone();
        tokio::task::spawn_blocking(move || dir.load())
            .await
            .unwrap_or_else(|_| Loaded::Ignored("the read did not finish".into()))
    };
    match loaded {
        Loaded::FirstStart => tracing::info!(
            file = %file.display(),
            "STATE_DIR: no state file yet, a first start"
        ),
        Loaded::Ignored(why) => tracing::warn!(
            file = %file.display(),
            why = %why,
            "STATE_DIR: state file ignored, starting clean"
        ),
        Loaded::Snapshot(snapshot) => {
            let restored = gateway.restore_state(&snapshot);
            clients.restore_spend(&snapshot.clients, snapshot.minutes_since_written());
            tracing::info!(
                file = %file.display(),
                breakers_open = restored.breakers,
                breakers_skipped = restored.skipped,
                clients = snapshot.clients.len(),
                written_minutes_ago = snapshot.minutes_since_written(),
                "STATE_DIR: state restored"
            );
        }
    }
}

/// Writes the state every [`WRITE_INTERVAL`] until `stopped`, then once more.
pub(crate) async fn keep(
    dir: StateDir,
    gateway: Gateway,
    clients: Clients,
    mut stopped: watch::Receiver<bool>,
) {
    let mut ticks = tokio::time::interval(WRITE_INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks.tick().await;
    loop {
        let stop = async { stopped.wait_for(|s| *s).await.is_ok() };
        tokio::select! {
            _ = ticks.tick() => write(&dir, &gateway, &clients).await,
            _ = stop => break,
        }
    }
    write(&dir, &gateway, &clients).await;
}

async fn write(dir: &StateDir, gateway: &Gateway, clients: &Clients) {
    let (breakers, spend) = gateway.export_state();
    let snapshot = Snapshot::new(breakers, spend, clients.export_spend());
    let dir = dir.clone();
    let written = tokio::task::spawn_blocking(move || dir.write(&snapshot)).await;
    match written {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(error = %e.kind(), "STATE_DIR: state not written"),
        Err(_) => tracing::warn!("STATE_DIR: state not written (the write did not finish)"),
    }
}
