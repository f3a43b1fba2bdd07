//! When a wall shuts a host out: the hosts' breakers ([`HostBreakers`]) and the evidence that
//! opens them ([`WallEvidence`]).
//!
//! A 403, a 429 or a bot wall on one page says little about the host's other pages: sites forbid
//! a few paths, rate-limit one endpoint, put a challenge in front of a login. So a wall is
//! evidence, and the host's breaker opens only on walls over [`WALL_PATHS`] distinct paths within
//! [`WALL_WINDOW`] — the same path walled again refreshes its instant but is not a second path —,
//! or at once on a 429 that says how long to stay away (`Retry-After`, then for exactly that long,
//! at most the breakers' longest open period). A page of the host read in between clears the
//! evidence: a host that serves pages walls off those pages, not readers. Once open, the breaker
//! is any breaker: the backoff, the one probe, whose wall reopens it. Transient failures go to
//! the breaker as they are (`BREAKER_FAILURE_THRESHOLD` in a row).
//!
//! The evidence is small and bounded: at most `WALL_PATHS - 1` paths per host (as their hashes),
//! and as many hosts as the breaker board keeps, the stale ones dropped first.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::hosts::HostName;
use crate::breaker_signals::HostSignal;
use gateway_core::breaker::{Breaker, BreakerBoard, BreakerPolicy, BreakerState, Permit, Signal};

/// Distinct paths of one host walled within [`WALL_WINDOW`] that open its breaker.
pub(crate) const WALL_PATHS: usize = 3;
/// How long a wall counts as evidence against its host.
pub(crate) const WALL_WINDOW: Duration = Duration::from_secs(60);

/// Whether a wall completed the evidence against its host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Evidence {
    /// Walls on [`WALL_PATHS`] distinct paths within [`WALL_WINDOW`]: the host walls readers off.
    Enough,
    /// Not yet.
    Wanting,
}

/// A path, as its hash: the evidence keeps no page's URL.
type PathId = u64;

/// The recent walls of each host: which distinct paths, and when each was last walled.
#[derive(Debug)]
pub(crate) struct WallEvidence {
    /// Hosts kept at most.
    capacity: usize,
    hasher: RandomState,
    hosts: Mutex<HashMap<HostName, Vec<(PathId, Instant)>>>,
}

impl WallEvidence {
    /// Evidence about at most `capacity` hosts.
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            hasher: RandomState::new(),
            hosts: Mutex::new(HashMap::new()),
        }
    }

    /// A wall on `path` of `host` at `now`. When it completes the evidence, the evidence is spent
    /// (the breaker it opens takes over).
    pub(crate) fn wall(&self, host: &HostName, path: &str, now: Instant) -> Evidence {
        let path = self.hasher.hash_one(path);
        let mut hosts = self.lock();
        if !hosts.contains_key(host) && hosts.len() >= self.capacity {
            make_room(&mut hosts, self.capacity, now);
        }
        let walls = hosts.entry(host.clone()).or_default();
        walls.retain(|&(_, at)| now.saturating_duration_since(at) < WALL_WINDOW);
        match walls.iter_mut().find(|(id, _)| *id == path) {
            Some(seen) => seen.1 = now,
            None => walls.push((path, now)),
        }
        if walls.len() >= WALL_PATHS {
            hosts.remove(host);
            Evidence::Enough
        } else {
            Evidence::Wanting
        }
    }

    /// Forgets the walls of `host`.
    pub(crate) fn clear(&self, host: &HostName) {
        self.lock().remove(host);
    }

    /// Hosts with evidence kept now (tests).
    #[cfg(test)]
    fn hosts(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<HostName, Vec<(PathId, Instant)>>> {
        // Every critical section leaves the map whole, so a poisoned lock is still usable.
        self.hosts.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Room for one more host among at most `capacity`: the hosts whose walls are all stale go
/// first; when none is, the host walled least recently.
fn make_room(hosts: &mut HashMap<HostName, Vec<(PathId, Instant)>>, capacity: usize, now: Instant) {
    let last = |walls: &Vec<(PathId, Instant)>| walls.iter().map(|&(_, at)| at).max();
    hosts.retain(|_, walls| {
        last(walls).is_some_and(|at| now.saturating_duration_since(at) < WALL_WINDOW)
    });
    if hosts.len() < capacity {
        return;
    }
    let oldest = hosts
        .iter()
        .min_by_key(|(_, walls)| last(walls))
        .map(|(host, _)| host.clone());
    if let Some(oldest) = oldest {
        hosts.remove(&oldest);
    }
}

/// The hosts' breakers, with the wall evidence that opens them.
#[derive(Debug)]
pub(crate) struct HostBreakers {
    board: BreakerBoard<HostName>,
    evidence: WallEvidence,
    /// The longest a 429's `Retry-After` keeps a host out (`BREAKER_MAX_OPEN_SECONDS`).
    longest_pause: Duration,
}

impl HostBreakers {
    /// Breakers under `policy` for at most `capacity` hosts (and evidence about as many).
    pub(crate) fn new(policy: BreakerPolicy, capacity: usize) -> Self {
        Self {
            board: BreakerBoard::unlabelled(policy, capacity),
            evidence: WallEvidence::new(capacity),
            longest_pause: policy.open_max,
        }
    }

    /// The breakers (`/status`, the admin routes).
    pub(crate) fn board(&self) -> &BreakerBoard<HostName> {
        &self.board
    }

    /// Leave to read a page of `host` directly; `None` while its breaker is open.
    pub(crate) fn admit(&self, host: &HostName) -> Option<Permit> {
        self.board.get(host).admit()
    }

    /// What a read of `path` on `host`, admitted by `permit`, told about the host.
    pub(crate) fn record(&self, permit: Permit, host: &HostName, path: &str, signal: HostSignal) {
        let HostSignal::Wall {
            reason,
            retry_after,
        } = signal
        else {
            if signal == HostSignal::Breaker(Signal::Success) {
                self.evidence.clear(host);
            }
            permit.record(signal.signal());
            return;
        };
        if let Some(hint) = retry_after.filter(|hint| !hint.is_zero()) {
            // The host said when to come back: that long, whatever else is known.
            permit.record(Signal::Neutral);
            self.evidence.clear(host);
            self.breaker(host)
                .pause(reason, hint.min(self.longest_pause));
            return;
        }
        if permit.is_probe() {
            permit.record(signal.signal());
            return;
        }
        permit.record(Signal::Neutral);
        let breaker = self.breaker(host);
        if breaker.state() == BreakerState::Closed
            && self.evidence.wall(host, path, Instant::now()) == Evidence::Enough
        {
            breaker.record(signal.signal());
        }
    }

    fn breaker(&self, host: &HostName) -> Arc<Breaker> {
        self.board.get(host)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use gateway_core::breaker::TripReason;

    fn policy() -> BreakerPolicy {
        BreakerPolicy {
            open_base: Duration::from_secs(300),
            open_max: Duration::from_secs(3600),
            failure_threshold: 3,
            jitter: 0.0,
            healthy_interval: Duration::from_secs(600),
            quota_park: Duration::from_secs(86_400),
        }
    }

    const FORBIDDEN: HostSignal = HostSignal::Wall {
        reason: TripReason::AccessDenied,
        retry_after: None,
    };
    const PAGE: HostSignal = HostSignal::Breaker(Signal::Success);

    /// Reads `path` of `host` and records `signal`; `false` when the host's breaker refused.
    fn read(hosts: &HostBreakers, host: &HostName, path: &str, signal: HostSignal) -> bool {
        match hosts.admit(host) {
            Some(permit) => {
                hosts.record(permit, host, path, signal);
                true
            }
            None => false,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn one_forbidden_page_does_not_refuse_the_other_pages_of_its_host() {
        let hosts = HostBreakers::new(policy(), 16);
        let host = HostName::new("example.org");
        assert!(read(&hosts, &host, "/private", FORBIDDEN));
        assert!(
            read(&hosts, &host, "/article", PAGE),
            "another page of the host is read"
        );
        assert_eq!(hosts.board().get(&host).state(), BreakerState::Closed);
    }

    #[tokio::test(start_paused = true)]
    async fn walls_on_three_distinct_paths_within_the_window_open_the_host() {
        let hosts = HostBreakers::new(policy(), 16);
        let host = HostName::new("example.org");
        let other = HostName::new("other.org");
        assert!(read(&hosts, &host, "/a", FORBIDDEN));
        tokio::time::advance(Duration::from_secs(20)).await;
        assert!(read(&hosts, &other, "/c", FORBIDDEN), "another host's wall");
        assert!(read(&hosts, &host, "/b", FORBIDDEN));
        tokio::time::advance(Duration::from_secs(39)).await;
        assert!(read(&hosts, &host, "/c", FORBIDDEN));
        assert!(!read(&hosts, &host, "/d", PAGE), "the host is shut out");
        let snapshot = hosts.board().get(&host).snapshot();
        assert_eq!(snapshot.reason, Some(TripReason::AccessDenied));
        assert_eq!(snapshot.open_for, Some(Duration::from_secs(300)));
        assert_eq!(
            hosts.board().get(&other).state(),
            BreakerState::Closed,
            "walls count per host"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_same_path_walled_again_is_not_another_path() {
        let hosts = HostBreakers::new(policy(), 16);
        let host = HostName::new("example.org");
        for _ in 0..5 {
            assert!(read(&hosts, &host, "/private", FORBIDDEN));
            tokio::time::advance(Duration::from_secs(1)).await;
        }
        assert!(read(&hosts, &host, "/other", FORBIDDEN));
        assert!(
            read(&hosts, &host, "/article", PAGE),
            "two paths, not three"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn walls_spread_beyond_the_window_do_not_open_the_host() {
        let hosts = HostBreakers::new(policy(), 16);
        let host = HostName::new("example.org");
        for path in ["/a", "/b", "/c", "/d", "/e"] {
            assert!(read(&hosts, &host, path, FORBIDDEN), "{path}");
            tokio::time::advance(WALL_WINDOW / 2).await;
        }
        assert_eq!(hosts.board().get(&host).state(), BreakerState::Closed);
    }

    #[tokio::test(start_paused = true)]
    async fn a_path_walled_again_counts_from_its_latest_wall() {
        let hosts = HostBreakers::new(policy(), 16);
        let host = HostName::new("example.org");
        assert!(read(&hosts, &host, "/a", FORBIDDEN));
        tokio::time::advance(Duration::from_secs(50)).await;
        assert!(read(&hosts, &host, "/b", FORBIDDEN));
        assert!(read(&hosts, &host, "/a", FORBIDDEN));
        tokio::time::advance(Duration::from_secs(20)).await;
        assert!(read(&hosts, &host, "/c", FORBIDDEN));
        assert_eq!(hosts.board().get(&host).state(), BreakerState::Open);
    }

    #[tokio::test(start_paused = true)]
    async fn a_page_read_in_between_clears_the_evidence() {
        let hosts = HostBreakers::new(policy(), 16);
        let host = HostName::new("example.org");
        assert!(read(&hosts, &host, "/a", FORBIDDEN));
        assert!(read(&hosts, &host, "/b", FORBIDDEN));
        assert!(read(&hosts, &host, "/article", PAGE));
        assert!(read(&hosts, &host, "/c", FORBIDDEN));
        assert!(read(&hosts, &host, "/d", FORBIDDEN));
        assert_eq!(hosts.board().get(&host).state(), BreakerState::Closed);
    }

    #[tokio::test(start_paused = true)]
    async fn a_rate_limit_with_retry_after_opens_the_host_for_that_long_bounded() {
        let hosts = HostBreakers::new(policy(), 16);
        let host = HostName::new("example.org");
        let limited = |after: u64| HostSignal::Wall {
            reason: TripReason::RateLimited,
            retry_after: Some(Duration::from_secs(after)),
        };
        assert!(read(&hosts, &host, "/search", limited(30)));
        assert!(!read(&hosts, &host, "/article", PAGE), "shut out at once");
        tokio::time::advance(Duration::from_secs(30)).await;
        assert!(read(&hosts, &host, "/article", PAGE), "back after 30 s");
        assert_eq!(hosts.board().get(&host).state(), BreakerState::Closed);

        assert!(read(&hosts, &host, "/search", limited(86_400)));
        assert_eq!(
            hosts.board().get(&host).snapshot().open_for,
            Some(Duration::from_secs(3600)),
            "at most the longest open period"
        );
        let unhinted = HostSignal::Wall {
            reason: TripReason::RateLimited,
            retry_after: None,
        };
        let other = HostName::new("other.org");
        assert!(read(&hosts, &other, "/search", unhinted));
        assert!(
            read(&hosts, &other, "/article", PAGE),
            "a 429 without Retry-After is one page's wall"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_probe_that_meets_a_wall_reopens_the_host_for_longer() {
        let hosts = HostBreakers::new(policy(), 16);
        let host = HostName::new("example.org");
        for path in ["/a", "/b", "/c"] {
            assert!(read(&hosts, &host, path, FORBIDDEN));
        }
        tokio::time::advance(Duration::from_secs(300)).await;
        assert!(read(&hosts, &host, "/d", FORBIDDEN), "the probe");
        let snapshot = hosts.board().get(&host).snapshot();
        assert_eq!(snapshot.state, BreakerState::Open);
        assert_eq!(snapshot.open_for, Some(Duration::from_secs(600)));
    }

    #[tokio::test(start_paused = true)]
    async fn transient_failures_still_open_the_host_after_the_threshold() {
        let hosts = HostBreakers::new(policy(), 16);
        let host = HostName::new("example.org");
        let timeout = HostSignal::Breaker(Signal::TRANSIENT);
        for _ in 0..3 {
            assert!(read(&hosts, &host, "/slow", timeout));
        }
        assert_eq!(
            hosts.board().get(&host).snapshot().reason,
            Some(TripReason::Transient)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn evidence_is_kept_for_a_bounded_number_of_hosts() {
        let evidence = WallEvidence::new(4);
        for i in 0..10 {
            let host = HostName::new(&format!("h{i}.example"));
            assert_eq!(
                evidence.wall(&host, "/a", Instant::now()),
                Evidence::Wanting
            );
            tokio::time::advance(Duration::from_secs(1)).await;
        }
        assert_eq!(evidence.hosts(), 4);
        // The most recent hosts stayed: two more walls on h9 complete its evidence.
        let recent = HostName::new("h9.example");
        assert_eq!(
            evidence.wall(&recent, "/b", Instant::now()),
            Evidence::Wanting
        );
        assert_eq!(
            evidence.wall(&recent, "/c", Instant::now()),
            Evidence::Enough
        );
        assert_eq!(evidence.hosts(), 3, "spent evidence goes");
    }
}
