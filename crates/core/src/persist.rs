//! State that survives a restart without Redis (`STATE_DIR`): the file, its format and its
//! settings. What goes in it is the owners' business — the pipeline's open breakers (parked quotas
//! are key breakers open for `quota`), the gateway's and each provider's premium spend, and
//! `clients`' premium calls and spend — each of which turns its state into the plain entries
//! below and takes them back; the server writes the file every [`WRITE_INTERVAL`] and at shutdown,
//! and reads it once at start.
//!
//! - **Written atomically**: the whole snapshot goes to `state.json.tmp`, is synced, and is renamed
//!   over `state.json`, so a crash mid-write (kill -9, power loss) leaves the previous file.
//! - **Read forgivingly**: no file is a first start; a file this build cannot read — truncated,
//!   damaged, another format or version — is logged once as a warning and ignored (a clean start),
//!   never a crash and never half-applied.
//! - **Time**: entries carry wall-clock times (an open period's end, the age of a minute's spend
//!   when written), so what was restored keeps counting down while the process was away: a period
//!   that ended meanwhile is not restored, spend older than 24 h is gone.
//!
//! JSON (serde): small (a few entries per breaker and client), readable by an operator who wonders
//! what the gateway remembers, and versioned by its own fields.

use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::env::{ConfigError, Env, Problem};

/// How often the state is written while the gateway runs (and once more at shutdown).
pub const WRITE_INTERVAL: Duration = Duration::from_secs(5);

/// What the file says it is.
const FORMAT: &str = "searxng-gateway-state";
/// The layout this build writes and reads.
const VERSION: u32 = 1;
/// The file's name in `STATE_DIR`.
const FILE: &str = "state.json";

/// Where the state lives (`STATE_DIR`); `None` in the configuration: nothing is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateDir {
    dir: PathBuf,
}

impl StateDir {
    /// `None` when `STATE_DIR` is unset. The directory is created when missing; one the gateway
    /// cannot create or write in stops the start naming the variable.
    pub fn read(env: &Env<'_>) -> Result<Option<Self>, ConfigError> {
        let Some(raw) = env.value("STATE_DIR") else {
            return Ok(None);
        };
        let dir = PathBuf::from(&raw.text);
        let usable = std::fs::create_dir_all(&dir).and_then(|()| {
            let probe = dir.join(".write-test");
            std::fs::write(&probe, b"")?;
            std::fs::remove_file(&probe)
        });
        match usable {
            Ok(()) => Ok(Some(Self { dir })),
            Err(_) => Err(raw.error(Problem::NotAWritableDirectory)),
        }
    }

    /// A state directory at `dir` (tests).
    #[cfg(test)]
    pub(crate) fn at(dir: &std::path::Path) -> Self {
        Self {
            dir: dir.to_owned(),
        }
    }

    /// The directory (other owners keep files of their own in it: crawl jobs under `crawls/`).
    pub fn path(&self) -> &std::path::Path {
        &self.dir
    }

    /// The state file.
    pub fn file(&self) -> PathBuf {
        self.dir.join(FILE)
    }

    /// Writes `snapshot` atomically (temporary file, sync, rename). Blocking: call it off the
    /// runtime's workers.
    pub fn write(&self, snapshot: &Snapshot) -> std::io::Result<()> {
        let bytes = serde_json::to_vec(snapshot).map_err(std::io::Error::other)?;
        let temporary = self.dir.join(format!("{FILE}.tmp"));
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
        std::fs::rename(&temporary, self.file())
    }

    /// Reads the state file. Blocking.
    pub fn load(&self) -> Loaded {
        let bytes = match std::fs::read(self.file()) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Loaded::FirstStart,
            Err(e) => return Loaded::Ignored(format!("unreadable: {}", e.kind())),
        };
        Loaded::from_bytes(&bytes)
    }
}

/// What reading the state file found.
#[derive(Debug)]
pub enum Loaded {
    /// No file: nothing to restore.
    FirstStart,
    /// A snapshot this build reads.
    Snapshot(Snapshot),
    /// A file this build cannot use, and why (no content quoted).
    Ignored(String),
}

impl Loaded {
    fn from_bytes(bytes: &[u8]) -> Self {
        #[derive(Deserialize)]
        struct Header {
            format: String,
            version: u32,
        }
        let Ok(header) = serde_json::from_slice::<Header>(bytes) else {
            return Loaded::Ignored("not a complete state file (truncated or damaged)".into());
        };
        if header.format != FORMAT {
            return Loaded::Ignored("not a searxng-gateway state file".into());
        }
        if header.version != VERSION {
            return Loaded::Ignored(format!(
                "written in layout {} (this build reads {VERSION})",
                header.version
            ));
        }
        match serde_json::from_slice::<Snapshot>(bytes) {
            Ok(snapshot) => Loaded::Snapshot(snapshot),
            Err(_) => Loaded::Ignored("damaged entries".into()),
        }
    }
}

/// Everything kept, as plain entries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    format: String,
    version: u32,
    /// When it was written (unix ms).
    pub(crate) written_at_ms: u64,
    /// Open breakers.
    pub breakers: Vec<OpenBreaker>,
    /// The gateway's own premium spend (`PREMIUM_USD_PER_DAY`) and each provider's.
    pub spend: Vec<SpendEntry>,
    /// Each client's premium calls and spend.
    pub clients: Vec<SpendEntry>,
}

impl Snapshot {
    /// A snapshot written now.
    pub fn new(
        breakers: Vec<OpenBreaker>,
        spend: Vec<SpendEntry>,
        clients: Vec<SpendEntry>,
    ) -> Self {
        Self {
            format: FORMAT.to_owned(),
            version: VERSION,
            written_at_ms: unix_ms(SystemTime::now()),
            breakers,
            spend,
            clients,
        }
    }

    /// Whole minutes since it was written (0 for a clock that went back).
    pub fn minutes_since_written(&self) -> u64 {
        unix_ms(SystemTime::now()).saturating_sub(self.written_at_ms) / 60_000
    }
}

/// One open breaker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenBreaker {
    /// Which board: `provider`, `key`, `engine:<instance>`, `searxng` (the shared tier's names).
    pub board: String,
    /// The breaker's name on that board.
    pub name: String,
    /// When its open period ends (unix ms).
    pub until_ms: u64,
    /// Why it opened (`TripReason`'s name).
    pub reason: String,
    /// Set aside on purpose (a spent quota, a rate-limit window), not for failing.
    pub paused: bool,
}

/// One owner's (a client's, a provider's, the gateway's) calls and spend per minute.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpendEntry {
    /// Whose: a client's name, a provider's name, or `gateway`.
    pub owner: String,
    /// `[minutes ago when written, calls]`, oldest first.
    pub calls: Vec<[u64; 2]>,
    /// `[minutes ago when written, micro-dollars]`, oldest first.
    pub micro_usd: Vec<[u64; 2]>,
}

/// `at` as unix milliseconds.
pub fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn sample() -> Snapshot {
        Snapshot::new(
            vec![OpenBreaker {
                board: "key".into(),
                name: "brave:1a2b3c4d".into(),
                until_ms: 1_900_000_000_000,
                reason: "quota".into(),
                paused: true,
            }],
            vec![],
            vec![SpendEntry {
                owner: "alice".into(),
                calls: vec![[3, 2], [0, 1]],
                micro_usd: vec![[3, 10_000]],
            }],
        )
    }

    #[test]
    fn a_written_state_reads_back_and_no_file_is_a_first_start() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::at(dir.path());
        assert!(matches!(state.load(), Loaded::FirstStart));
        state.write(&sample()).unwrap();
        let Loaded::Snapshot(back) = state.load() else {
            panic!("{:?}", state.load())
        };
        assert_eq!(back, sample_at(back.written_at_ms));
        assert!(
            !dir.path().join("state.json.tmp").exists(),
            "renamed into place"
        );
    }

    fn sample_at(written_at_ms: u64) -> Snapshot {
        Snapshot {
            written_at_ms,
            ..sample()
        }
    }

    #[test]
    fn a_truncated_foreign_or_other_version_file_is_ignored_with_a_reason() {
        let bytes = serde_json::to_vec(&sample()).unwrap();
        for cut in [0, 1, 10, bytes.len() / 2, bytes.len() - 1] {
            assert!(
                matches!(Loaded::from_bytes(&bytes[..cut]), Loaded::Ignored(_)),
                "cut at {cut}"
            );
        }
        let other = serde_json::to_vec(&Snapshot {
            version: VERSION + 1,
            ..sample()
        })
        .unwrap();
        let Loaded::Ignored(why) = Loaded::from_bytes(&other) else {
            panic!("another version")
        };
        assert!(why.contains("layout 2"), "{why}");
        assert!(matches!(
            Loaded::from_bytes(br#"{"format":"something else","version":1}"#),
            Loaded::Ignored(_)
        ));
        assert!(matches!(
            Loaded::from_bytes(br#"{"format":"searxng-gateway-state","version":1,"breakers":7}"#),
            Loaded::Ignored(_)
        ));
    }
}
