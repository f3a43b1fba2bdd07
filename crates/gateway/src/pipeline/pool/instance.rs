//! One SearXNG instance of the pool and everything the gateway knows about it alone: its client,
//! its engine catalog (`/config`), its cooldown, its engine breakers, its recent latency and the
//! calls it is answering now — so one instance's blocked engine or outage never touches another.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;
use url::Url;

use super::choice::Candidate;
use crate::breaker::{Breaker, BreakerBoard, BreakerKind, BreakerState};
use crate::pipeline::engine_plan::CatalogHandle;
use crate::request::SearchRequest;
use crate::searxng::SearxngClient;

/// Weight of the newest sample in the latency estimate (an exponentially weighted mean).
const LATENCY_WEIGHT: f64 = 0.25;
/// A failed attempt counts as at least this slow: an instance refusing connections answers fast,
/// and must not look like the best choice until its cooldown starts.
const FAILURE_LATENCY: Duration = Duration::from_secs(1);

/// One instance.
pub(crate) struct Instance {
    /// Its name in `/status` and the `instance` label (see `config::backends`).
    pub(crate) name: String,
    /// Its base URL.
    pub(crate) url: Url,
    pub(crate) client: SearxngClient,
    /// What its `/config` reported.
    pub(crate) catalog: CatalogHandle,
    /// Skips it after repeated failures, then lets one request probe it.
    pub(crate) cooldown: Arc<Breaker>,
    /// Its engines' breakers.
    pub(crate) engines: BreakerBoard,
    load: Mutex<Load>,
    in_flight: Arc<AtomicUsize>,
}

/// The recent latency and when the last attempt went out.
#[derive(Debug, Default)]
struct Load {
    latency: Option<Duration>,
    last_sent: Option<Instant>,
}

/// An attempt in flight on an instance; dropping it (answered, or cancelled) ends it.
pub(crate) struct Busy(Arc<AtomicUsize>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Instance {
    pub(crate) fn new(
        name: String,
        url: Url,
        client: SearxngClient,
        cooldown: Breaker,
        engines: BreakerBoard,
    ) -> Self {
        Self {
            name,
            url,
            client,
            catalog: CatalogHandle::default(),
            cooldown: Arc::new(cooldown),
            engines,
            load: Mutex::new(Load::default()),
            in_flight: Arc::default(),
        }
    }

    /// An attempt starts now: counted in flight until the returned guard drops.
    pub(crate) fn begin(&self) -> Busy {
        self.lock().last_sent = Some(Instant::now());
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        Busy(Arc::clone(&self.in_flight))
    }

    /// An attempt took `took`; a failed one counts as at least [`FAILURE_LATENCY`].
    pub(crate) fn record_latency(&self, took: Duration, succeeded: bool) {
        let sample = if succeeded {
            took
        } else {
            took.max(FAILURE_LATENCY)
        };
        let mut load = self.lock();
        load.latency = Some(match load.latency {
            None => sample,
            Some(mean) => mean.mul_f64(1.0 - LATENCY_WEIGHT) + sample.mul_f64(LATENCY_WEIGHT),
        });
    }

    /// Its recent latency, once it has answered or failed.
    pub(crate) fn latency(&self) -> Option<Duration> {
        self.lock().latency
    }

    /// Attempts it is answering now.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Engines whose breaker is open on this instance now, sorted.
    pub(crate) fn excluded_engines(&self) -> Vec<String> {
        self.engines
            .all()
            .iter()
            .filter(|b| b.kind() == BreakerKind::Engine && b.state() == BreakerState::Open)
            .map(|b| b.name().to_owned())
            .collect()
    }

    /// How many engines `req` would search here are open (0 before `/config` answered).
    fn excluded_for(&self, req: &SearchRequest) -> usize {
        let Some(catalog) = self.catalog.get() else {
            return 0;
        };
        catalog
            .targets(req)
            .iter()
            .filter(|name| self.engines.get(BreakerKind::Engine, name).state() == BreakerState::Open)
            .count()
    }

    /// What the choice rule sees of this instance for `req`. `holding`: the call holds this
    /// instance's cooldown permit already (a retry on it needs no new one).
    pub(crate) fn candidate(&self, req: &SearchRequest, tried: bool, holding: bool) -> Candidate {
        let (latency, last_sent) = {
            let load = self.lock();
            (load.latency, load.last_sent)
        };
        Candidate {
            available: holding || self.cooldown.state() != BreakerState::Open,
            tried,
            excluded: self.excluded_for(req),
            in_flight: self.in_flight(),
            latency,
            last_sent,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Load> {
        // Two plain values: a poisoned lock still holds consistent ones.
        self.load.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
