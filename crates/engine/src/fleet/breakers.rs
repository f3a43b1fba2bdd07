//! Breakers shared across replicas through the shared tier: what one replica learns about an
//! upstream (a 429, a CAPTCHA'd engine, a spent quota, a SearXNG instance cooling down) every
//! replica knows by its next miss, and each shared open period ends with exactly one probe in
//! total.
//!
//! The state machine stays pure: the shared state is an input. Each board (the providers, each
//! instance's engines, the instances' cooldowns) is one Redis hash, name → record of the open
//! period (`v1|<until, unix ms>|<reason>|<paused>`); a closed breaker has no field.
//! - [`adopt`], before a miss fans out: every listed period ending later than ours is taken; a
//!   period that has ended is half-open everywhere, and the replicas race for its probe with
//!   `SET NX PX` — the winner's breaker admits its one probe, the others stay open while it runs;
//!   a period the tier knew and no longer lists was closed by another replica's probe.
//! - [`publish`], after a fan-out: each breaker whose own state changed (trip, probe result,
//!   pause, a later server hint) is written, in one round trip per board that changed; once Redis took it, the
//!   period counts as known there. When Redis comes back after an absence, every open breaker is
//!   written again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use tokio::time::Instant;

use crate::search::upstreams::FanOutContext;
use crate::searxng_pool::Instance;
use gateway_core::breaker::{Breaker, BreakerBoard, BreakerKey, Origin, SharedOpen, TripReason};
use gateway_core::persist::unix_ms;
use gateway_core::shared::{Board, SharedTier};
use gateway_upstreams::providers::keys::KeyId;
use gateway_upstreams::providers::ProviderKind;
use gateway_upstreams::searxng::EngineName;

/// Record version written by this build; a record of another version is ignored.
const RECORD_VERSION: &str = "v1";

/// What was last published per breaker, and for which Redis epoch.
#[derive(Debug, Default)]
pub(crate) struct Mirror {
    state: Mutex<MirrorState>,
}

#[derive(Debug, Default)]
struct MirrorState {
    /// The shared tier's epoch the entries below are about.
    tier_epoch: u64,
    /// (board key, name) → the breaker epoch Redis took.
    published: HashMap<(String, String), u64>,
}

/// One board as the engine holds it.
pub(crate) struct Mirrored<'a> {
    pub(crate) board: Board<'a>,
    /// Breakers are created on demand (engines appear as they are named).
    source: Source<'a>,
}

enum Source<'a> {
    Providers(&'a BreakerBoard<ProviderKind>),
    /// The keys of the active providers' pools.
    Keys(&'a BreakerBoard<KeyId>),
    /// An instance's engines, named as its catalogue says.
    Engines(&'a Instance),
    Cooldowns,
}

pub(crate) fn boards(fanout: &FanOutContext) -> Vec<Mirrored<'_>> {
    let mut boards = vec![
        Mirrored {
            board: Board::Providers,
            source: Source::Providers(&fanout.premium.breakers),
        },
        Mirrored {
            board: Board::Keys,
            source: Source::Keys(&fanout.premium.key_breakers),
        },
    ];
    for instance in fanout.searxng.pool.instances() {
        boards.push(Mirrored {
            board: Board::Engines {
                instance: &instance.name,
            },
            source: Source::Engines(instance),
        });
    }
    boards.push(Mirrored {
        board: Board::Cooldowns,
        source: Source::Cooldowns,
    });
    boards
}

impl Mirrored<'_> {
    pub(crate) fn breakers(&self, fanout: &FanOutContext) -> Vec<(String, Arc<Breaker>)> {
        match self.source {
            Source::Providers(board) => named(board),
            Source::Keys(board) => named(board),
            Source::Engines(instance) => named(&instance.engines),
            Source::Cooldowns => fanout
                .searxng
                .pool
                .instances()
                .iter()
                .map(|i| (cooldown_name(&i.name), Arc::clone(&i.cooldown)))
                .collect(),
        }
    }

    /// The breaker called `name` on this board, as this gateway wrote it itself before a restart
    /// (`STATE_DIR`): an engine needs no catalog yet — the name was checked when it tripped.
    pub(crate) fn get_own(&self, fanout: &FanOutContext, name: &str) -> Option<Arc<Breaker>> {
        match self.source {
            Source::Engines(instance) => {
                EngineName::checked(name).map(|engine| instance.engines.get(&engine))
            }
            _ => self.get(fanout, name),
        }
    }

    fn get(&self, fanout: &FanOutContext, name: &str) -> Option<Arc<Breaker>> {
        match self.source {
            // Another replica's name: only one of the closed set (a provider this build knows,
            // an engine this instance's catalogue reported) gets a breaker here.
            Source::Providers(board) => ProviderKind::from_name(name).map(|kind| board.get(&kind)),
            // A key this replica holds too (the same key, the same fingerprint).
            Source::Keys(board) => fanout
                .premium
                .providers
                .iter()
                .flat_map(|p| p.keys())
                .find(|key| key.as_str() == name)
                .map(|key| board.get(key)),
            Source::Engines(instance) => instance
                .catalog
                .get()
                .and_then(|catalog| catalog.engine(name))
                .map(|engine| instance.engines.get(&engine)),
            Source::Cooldowns => fanout
                .searxng
                .pool
                .instances()
                .iter()
                .find(|i| cooldown_name(&i.name) == name)
                .map(|i| Arc::clone(&i.cooldown)),
        }
    }
}

/// Every breaker of `board` with its name.
fn named<K: BreakerKey>(board: &BreakerBoard<K>) -> Vec<(String, Arc<Breaker>)> {
    board
        .all()
        .into_iter()
        .map(|b| (b.name().to_owned(), b))
        .collect()
}

/// The field of an instance's cooldown (the only instance has no name of its own).
fn cooldown_name(instance: &str) -> String {
    if instance.is_empty() {
        "searxng".to_owned()
    } else {
        instance.to_owned()
    }
}

/// The boards [`adopt`] expects, in order, for [`SharedTier::read_miss`].
pub(crate) fn board_ids(fanout: &FanOutContext) -> Vec<Board<'_>> {
    boards(fanout).into_iter().map(|m| m.board).collect()
}

/// Takes what the shared tier says about every board (`read`, in [`board_ids`] order): other
/// replicas' open periods, closes they made, and the probes of periods that have ended.
pub(crate) async fn adopt(
    fanout: &FanOutContext,
    tier: &SharedTier,
    read: &[HashMap<String, Bytes>],
) {
    let now = Instant::now();
    let wall = unix_ms(SystemTime::now());
    // A probe that wins the claim must answer within this; then the others may claim again.
    let hold = fanout.settings.request_budget + Duration::from_secs(1);
    for (mirrored, records) in boards(fanout).iter().zip(read) {
        for (name, record) in records {
            let Some(record) = Record::decode(record) else {
                continue;
            };
            let Some(breaker) = mirrored.get(fanout, name) else {
                continue;
            };
            let open = |until: Instant| SharedOpen {
                until,
                reason: record.reason,
                paused: record.paused,
            };
            if record.until_ms > wall {
                breaker.adopt_open(
                    open(now + Duration::from_millis(record.until_ms - wall)),
                    Origin::OtherReplica,
                );
                if let Source::Engines(instance) = mirrored.source {
                    // Its prober plans the probe of this period now, as the other replicas' do.
                    instance.probe_wake.notify_one();
                }
                continue;
            }
            // Half-open everywhere: one replica probes.
            match tier
                .claim_probe(mirrored.board, name, record.until_ms, hold)
                .await
            {
                Some(true) => breaker.adopt_open(open(now), Origin::OtherReplica),
                Some(false) => breaker.adopt_open(open(now + hold), Origin::OtherReplica),
                None => return,
            }
        }
        for (name, breaker) in mirrored.breakers(fanout) {
            if !records.contains_key(&name) {
                breaker.adopt_closed();
            }
        }
    }
}

/// Writes every breaker whose own state changed since it was last published (every open one
/// after Redis came back): one bounded round trip per board that changed, none when nothing did
/// (the usual miss). Awaited, so the next request anywhere sees it.
pub(crate) async fn publish(fanout: &FanOutContext, mirror: &Mirror, tier: &SharedTier) {
    let boards = boards(fanout);
    let writes: Vec<BoardWrite<'_>> = {
        let mut state = mirror.lock();
        let resync = state.tier_epoch != tier.epoch();
        if resync {
            state.tier_epoch = tier.epoch();
            state.published.clear();
        }
        boards
            .iter()
            .filter_map(|mirrored| due(fanout, mirrored, &mut state, resync))
            .collect()
    };
    for write in writes {
        if tier.write_board(write.board, &write.changes).await {
            for (breaker, epoch) in write.confirm {
                breaker.mark_shared(epoch);
            }
        } else {
            // Not taken: forget it, so the next publish tries again.
            let mut state = mirror.lock();
            let id = write.board.id();
            for (name, _) in &write.changes {
                state.published.remove(&(id.clone(), name.clone()));
            }
        }
    }
}

/// What one board has to write.
struct BoardWrite<'a> {
    board: Board<'a>,
    /// Name → record (open) or `None` (closed).
    changes: Vec<(String, Option<Bytes>)>,
    /// The breakers to mark shared once Redis took it, with the epoch written.
    confirm: Vec<(Arc<Breaker>, u64)>,
}

/// The changes of `mirrored` not yet published, marked published (so concurrent publishers do
/// not repeat them).
fn due<'a>(
    fanout: &FanOutContext,
    mirrored: &Mirrored<'a>,
    state: &mut MirrorState,
    resync: bool,
) -> Option<BoardWrite<'a>> {
    let (wall, now) = (SystemTime::now(), Instant::now());
    let id = mirrored.board.id();
    let mut write = BoardWrite {
        board: mirrored.board,
        changes: Vec::new(),
        confirm: Vec::new(),
    };
    for (name, breaker) in mirrored.breakers(fanout) {
        let (epoch, open) = breaker.shared_view();
        let key = (id.clone(), name);
        let due = match (state.published.get(&key), open) {
            (Some(published), _) => *published != epoch,
            // Never published: only our own changes, and after a resync only open ones.
            (None, Some(_)) => epoch > 0,
            (None, None) => epoch > 0 && !resync,
        };
        if !due {
            continue;
        }
        state.published.insert(key.clone(), epoch);
        write
            .changes
            .push((key.1, open.map(|o| Record::of(o, now, wall).encode())));
        write.confirm.push((breaker, epoch));
    }
    (!write.changes.is_empty()).then_some(write)
}

impl Mirror {
    fn lock(&self) -> std::sync::MutexGuard<'_, MirrorState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One open period as stored in a board's hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Record {
    until_ms: u64,
    reason: TripReason,
    paused: bool,
}

impl Record {
    fn of(open: SharedOpen, now: Instant, wall: SystemTime) -> Self {
        Self {
            until_ms: unix_ms(wall + open.until.saturating_duration_since(now)),
            reason: open.reason,
            paused: open.paused,
        }
    }

    fn encode(self) -> Bytes {
        Bytes::from(format!(
            "{RECORD_VERSION}|{}|{}|{}",
            self.until_ms,
            self.reason.as_str(),
            u8::from(self.paused)
        ))
    }

    fn decode(bytes: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(bytes).ok()?;
        let mut parts = text.split('|');
        if parts.next()? != RECORD_VERSION {
            return None;
        }
        let until_ms = parts.next()?.parse().ok()?;
        let reason = TripReason::parse(parts.next()?)?;
        let paused = match parts.next()? {
            "0" => false,
            "1" => true,
            _ => return None,
        };
        parts.next().is_none().then_some(Self {
            until_ms,
            reason,
            paused,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_and_another_version_is_ignored() {
        let r = Record {
            until_ms: 1_700_000_000_123,
            reason: TripReason::Captcha,
            paused: false,
        };
        assert_eq!(&r.encode()[..], b"v1|1700000000123|captcha|0");
        assert_eq!(Record::decode(&r.encode()), Some(r));
        assert_eq!(Record::decode(b"v2|1|captcha|0"), None);
        assert_eq!(Record::decode(b"v1|1|no_such_reason|0"), None);
        assert_eq!(Record::decode(b"v1|1|quota|1|extra"), None);
    }
}
