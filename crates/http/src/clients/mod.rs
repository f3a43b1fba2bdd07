//! Who may search, and how much: the inbound side of the gateway.
//!
//! - [`keys_file`]: `API_KEYS_FILE` (names and SHA-256 digests of keys, optional limits), its
//!   parser with line-numbered errors, and the line `searxng-gateway hash-key` prints.
//! - [`rate_limit`]: one token bucket per client (`governor`).
//! - [`budget`]: premium calls per client in a rolling 24 h.
//! - [`metrics`]: requests, premium calls and refusals per client.
//! - [`crawl_pages`]: a crawl's pages taken from its client's rate, as its own calls are.
//!
//! [`Clients`] is the handle the server holds: the current [`Registry`] (swapped whole, atomically,
//! when SIGHUP re-reads the file — requests in flight keep the generation they started with), the
//! buckets and the budgets.
//!
//! With the Redis tier (`REDIS_URL`) the limits hold for the whole fleet: each admission takes the
//! request from the client's rate and reads its premium spend in one round trip to Redis
//! (`shared::limits`), and each charge goes there too. While Redis is away each replica falls back
//! to its own buckets and budgets, at a `1/N` share of every limit, `N` being the replicas it last
//! saw sending heartbeats — the fleet's total stays near the limit, and nothing waits longer than
//! `REDIS_TIMEOUT_MS`. Without `API_KEYS_FILE` the gateway is open: every caller is
//! `anonymous`, and `RATE_LIMIT_PER_MINUTE` / `PREMIUM_CALLS_PER_DAY` apply to all of them together.
//!
//! Keys: a presented key is hashed with SHA-256 and its digest compared with **every** client's
//! digest in constant time (`subtle`), so neither the match nor its position shows in the timing;
//! plaintext keys are never stored or logged.

pub(crate) mod budget;
pub(crate) mod crawl_pages;
pub(crate) mod end_users;
pub mod keys_file;
pub(crate) mod metrics;
pub(crate) mod rate_limit;
pub(crate) mod settings;

use std::path::PathBuf;
use std::sync::Arc;

use arc_swap::ArcSwap;
use subtle::{ConditionallySelectable, ConstantTimeEq};

use budget::{Allowance, Budgets, Exhausted, Spent};
use end_users::{EndUser, EndUsers};
use gateway_core::persist::SpendEntry;
use gateway_core::rolling;
use gateway_core::shared::SharedTier;
use keys_file::{KeyEntry, KeysFileError};
use metrics::ClientMetrics;
use rate_limit::{Buckets, RateLimited};

/// The label and log name of a caller without a key (an open gateway).
pub(crate) const ANONYMOUS: &str = "anonymous";

/// A client's name: from `API_KEYS_FILE`, or [`ANONYMOUS`]. Cheap to clone.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct ClientName(Arc<str>);

impl ClientName {
    pub(crate) fn new(name: &str) -> Self {
        Self(Arc::from(name))
    }

    /// [`ANONYMOUS`], one shared allocation (asked for on every request of an open gateway).
    pub(crate) fn anonymous() -> Self {
        static NAME: std::sync::LazyLock<ClientName> =
            std::sync::LazyLock::new(|| ClientName::new(ANONYMOUS));
        NAME.clone()
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

/// The limits that apply to clients whose line does not set its own (`RATE_LIMIT_PER_MINUTE`,
/// `PREMIUM_CALLS_PER_DAY`; 0: unlimited).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct ClientDefaults {
    /// `RATE_LIMIT_PER_MINUTE`.
    pub(crate) requests_per_minute: u32,
    /// `PREMIUM_CALLS_PER_DAY`.
    pub(crate) premium_calls_per_day: u32,
    /// `OPENWEBUI_USER_RATE_LIMIT_PER_MINUTE` (`None`: each user has its client's rate).
    pub(crate) user_requests_per_minute: Option<u32>,
    /// `OPENWEBUI_USER_PREMIUM_CALLS_PER_DAY` (`None`: each user has its client's budget).
    pub(crate) user_premium_calls_per_day: Option<u32>,
}

/// `API_KEYS_FILE` as read at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeysSource {
    /// The file, re-read on SIGHUP.
    pub(crate) path: PathBuf,
    /// What it held at start-up.
    pub(crate) entries: Vec<KeyEntry>,
}

impl KeysSource {
    /// Reads the file at `path`.
    pub(crate) fn read(path: PathBuf) -> Result<Self, KeysFileError> {
        let entries = keys_file::read(&path)?;
        Ok(Self { path, entries })
    }
}

/// Who is calling, with the limits that apply to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Caller {
    pub(crate) name: ClientName,
    pub(crate) requests_per_minute: u32,
    pub(crate) premium_calls_per_day: u32,
    /// US dollars of premium calls per rolling 24 h, in micro-dollars (0: unlimited).
    pub(crate) micro_usd_per_day: u64,
    /// The client whose key an end user came through ([`end_users`]): its limits hold too.
    pub(crate) parent: Option<Box<Caller>>,
}

/// No key, or a key no client has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unauthorized {
    /// No key was presented.
    Missing,
    /// The key matches no client.
    Unknown,
    /// An OAuth access token that is not (or no longer) valid: expired, revoked, its API key
    /// removed from `API_KEYS_FILE`, or (an external issuer's) not signed by it.
    InvalidToken,
}

impl Unauthorized {
    pub(crate) fn message(self) -> &'static str {
        match self {
            Self::Missing => {
                "an API key is required (Authorization: Bearer KEY, X-API-Key: KEY, or api_key=KEY)"
            }
            Self::Unknown => "the API key is not valid",
            Self::InvalidToken => {
                "the access token is not valid (expired, revoked, or its API key was removed): sign in again"
            }
        }
    }
}

/// One generation of the keys file.
#[derive(Debug)]
struct Registry {
    /// `None`: no `API_KEYS_FILE`, the gateway is open.
    clients: Option<Vec<KeyEntry>>,
    defaults: ClientDefaults,
}

impl Registry {
    fn caller(&self, entry: Option<&KeyEntry>) -> Caller {
        let name = entry.map_or_else(ClientName::anonymous, |e| ClientName::new(&e.name));
        Caller {
            name,
            requests_per_minute: entry
                .and_then(|e| e.requests_per_minute)
                .unwrap_or(self.defaults.requests_per_minute),
            premium_calls_per_day: entry
                .and_then(|e| e.premium_calls_per_day)
                .unwrap_or(self.defaults.premium_calls_per_day),
            micro_usd_per_day: entry.and_then(|e| e.micro_usd_per_day).unwrap_or(0),
            parent: None,
        }
    }

    fn names(&self) -> Vec<ClientName> {
        match &self.clients {
            Some(entries) => entries.iter().map(|e| ClientName::new(&e.name)).collect(),
            None => vec![ClientName::anonymous()],
        }
    }
}

/// A caller's premium allowances.
fn allowance_of(caller: &Caller) -> Allowance {
    Allowance {
        calls: caller.premium_calls_per_day,
        usd: rolling::usd(caller.micro_usd_per_day),
    }
}

/// Where a [`Usage`]'s spend was counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Counted {
    /// By this process alone (no Redis tier, or Redis away: this replica's own count).
    Replica,
    /// By the whole fleet, read from Redis.
    Fleet,
}

/// One client's usage, for the admin `/status`.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Usage {
    pub(crate) client: String,
    pub(crate) requests_per_minute: u32,
    pub(crate) premium_calls_per_day: u32,
    pub(crate) premium_calls_last_24h: u64,
    /// US dollars a day (0: unlimited).
    pub(crate) usd_per_day: f64,
    /// US dollars of premium calls in the last 24 h.
    pub(crate) premium_spend_usd_last_24h: f64,
    pub(crate) premium_allowed: bool,
    /// Where the premium calls and spend were counted.
    pub(crate) counted: Counted,
    /// For an end user: the client whose key it came through.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) parent: Option<String>,
    /// For an end user: who it is, as its door named it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) end_user: Option<end_users::Seen>,
}

/// The handle: registry, buckets, budgets and their metrics. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Clients {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    registry: ArcSwap<Registry>,
    path: Option<PathBuf>,
    /// The Redis tier the limits are counted in, fleet-wide; `None`: this process alone.
    shared: Option<SharedTier>,
    buckets: Buckets,
    budgets: Budgets,
    end_users: EndUsers,
    metrics: ClientMetrics,
}

impl Clients {
    /// The clients of `source` (`None`: an open gateway) with `defaults`, their limits counted
    /// fleet-wide in `shared` when given.
    pub(crate) fn new(
        source: Option<&KeysSource>,
        defaults: ClientDefaults,
        metrics: ClientMetrics,
        shared: Option<SharedTier>,
    ) -> Self {
        let registry = Registry {
            clients: source.map(|s| s.entries.clone()),
            defaults,
        };
        metrics.show(registry.names());
        Self {
            inner: Arc::new(Inner {
                registry: ArcSwap::from_pointee(registry),
                path: source.map(|s| s.path.clone()),
                shared,
                buckets: Buckets::default(),
                budgets: Budgets::default(),
                end_users: EndUsers::default(),
                metrics,
            }),
        }
    }

    /// The caller of a local transport (MCP on stdio): `anonymous`, with the default limits.
    pub(crate) fn local(&self) -> Caller {
        self.inner.registry.load().caller(None)
    }

    /// Whether callers must present a key.
    pub(crate) fn requires_keys(&self) -> bool {
        self.inner.registry.load().clients.is_some()
    }

    /// Re-reads `API_KEYS_FILE`. On error the current clients stay. Returns how many clients the
    /// file now names (`None` for an open gateway, which has no file to re-read).
    pub(crate) fn reload(&self) -> Option<Result<usize, KeysFileError>> {
        let path = self.inner.path.as_ref()?;
        let current = self.inner.registry.load();
        let entries = match keys_file::read(path) {
            Ok(entries) => entries,
            Err(err) => return Some(Err(err)),
        };
        let count = entries.len();
        let next = Registry {
            clients: Some(entries),
            defaults: current.defaults,
        };
        let names = next.names();
        self.inner.metrics.show(names.iter().cloned());
        self.inner.registry.store(Arc::new(next));
        let kept = |n: &ClientName| {
            names.contains(n)
                || end_users::parent_of(n).is_some_and(|p| names.iter().any(|k| k.as_str() == p))
        };
        self.inner.buckets.retain(kept);
        self.inner.budgets.retain(kept);
        self.inner.end_users.retain(|n| names.contains(n));
        Some(Ok(count))
    }

    /// Who presents `key`. An open gateway takes everyone as `anonymous`.
    pub(crate) fn authenticate(&self, key: Option<&str>) -> Result<Caller, Unauthorized> {
        let registry = self.inner.registry.load();
        let Some(entries) = &registry.clients else {
            return Ok(registry.caller(None));
        };
        let Some(key) = key.map(str::trim).filter(|k| !k.is_empty()) else {
            return Err(Unauthorized::Missing);
        };
        let presented = keys_file::digest(key.as_bytes());
        // Every digest is compared, whatever matched before: the time does not depend on which
        // client (if any) holds the key.
        let mut found = subtle::Choice::from(0);
        let mut index = 0u32;
        for (i, entry) in entries.iter().enumerate() {
            let equal = entry.digest.ct_eq(&presented);
            index = u32::conditional_select(&index, &(i as u32), equal);
            found |= equal;
        }
        if bool::from(found) {
            Ok(registry.caller(entries.get(index as usize)))
        } else {
            Err(Unauthorized::Unknown)
        }
    }

    /// The client whose key has `digest`, while the file still holds it (an OAuth grant made with
    /// that key lives as long as the key does). `None` on an open gateway.
    pub(crate) fn holder(&self, digest: &keys_file::KeyDigest) -> Option<Caller> {
        let registry = self.inner.registry.load();
        let entries = registry.clients.as_ref()?;
        let entry = entries
            .iter()
            .find(|e| bool::from(e.digest.ct_eq(digest)))?;
        Some(registry.caller(Some(entry)))
    }

    /// The client named `name` in the file, if it is there.
    pub(crate) fn named(&self, name: &str) -> Option<Caller> {
        let registry = self.inner.registry.load();
        let entries = registry.clients.as_ref()?;
        let entry = entries.iter().find(|e| e.name == name)?;
        Some(registry.caller(Some(entry)))
    }

    /// `user` behind `caller`'s key, as a sub-client of it ([`end_users`]): its own limits
    /// (`OPENWEBUI_USER_*`, else the client's) and the client's.
    pub(crate) fn end_user(&self, caller: Caller, user: &EndUser) -> Caller {
        let defaults = self.inner.registry.load().defaults;
        Caller {
            name: self.inner.end_users.name_for(&caller.name, user),
            requests_per_minute: defaults
                .user_requests_per_minute
                .unwrap_or(caller.requests_per_minute),
            premium_calls_per_day: defaults
                .user_premium_calls_per_day
                .unwrap_or(caller.premium_calls_per_day),
            micro_usd_per_day: caller.micro_usd_per_day,
            parent: Some(Box::new(caller)),
        }
    }

    /// Whether the limits are counted fleet-wide (the Redis tier is configured): admitting then
    /// takes a round trip, [`Clients::admit`]; without it [`Clients::admit_here`] decides at once.
    pub(crate) fn is_fleet_wide(&self) -> bool {
        self.inner.shared.is_some()
    }

    /// Admits `caller` against this process's own buckets and budgets (no Redis tier): takes a
    /// token from its bucket and then, for an end user, from its client's (a user over its own
    /// rate takes nothing from its client's), counting the request or the refusal. `Ok` says
    /// whether it may still call premium APIs.
    pub(crate) fn admit_here(&self, caller: &Caller) -> Result<Result<(), Exhausted>, RateLimited> {
        self.admitted(caller, |level| self.take_here(level, 1))
    }

    /// [`Clients::admit_here`], fleet-wide: each level's rate and spend in one round trip to
    /// Redis, or — while it is away — this replica's share of them.
    pub(crate) async fn admit(
        &self,
        caller: &Caller,
    ) -> Result<Result<(), Exhausted>, RateLimited> {
        let Some(tier) = &self.inner.shared else {
            return self.admit_here(caller);
        };
        let mut fleet = Vec::new();
        let mut level = Some(caller);
        while let Some(c) = level {
            let allowance = allowance_of(c);
            let spend_minutes = allowance.is_limited().then_some(rolling::MINUTES_KEPT);
            let answer = tier
                .admit_client(c.name.as_str(), c.requests_per_minute, spend_minutes)
                .await;
            let stop = answer.is_some_and(|a| a.rate.is_err());
            fleet.push(answer);
            if stop {
                break;
            }
            level = c.parent.as_deref();
        }
        let mut answers = fleet.into_iter();
        self.admitted(caller, |level| match answers.next().flatten() {
            Some(answer) => {
                answer
                    .rate
                    .map_err(|wait| RateLimited { retry_after: wait })?;
                let spent = answer.spend.map_or_else(Spent::default, |s| Spent {
                    calls: s.calls,
                    usd: rolling::usd(s.micro_usd),
                });
                Ok(allowance_of(level).judge(spent))
            }
            None => self.take_here(level, tier.replicas()),
        })
    }

    /// Walks `caller` and its client through `take` (each level's rate, then its premium state),
    /// counting the request per level once every level admitted it, or the refusal of the level
    /// that refused. A client's spent budget wins over its end user's.
    fn admitted(
        &self,
        caller: &Caller,
        mut take: impl FnMut(&Caller) -> Result<Result<(), Exhausted>, RateLimited>,
    ) -> Result<Result<(), Exhausted>, RateLimited> {
        let mut premium = Ok(());
        let mut levels = Vec::new();
        let mut level = Some(caller);
        while let Some(c) = level {
            match take(c) {
                Ok(state) => {
                    if state.is_err() {
                        premium = state;
                    }
                    levels.push(c);
                }
                Err(limited) => {
                    self.inner
                        .metrics
                        .refused(&c.name, metrics::Refusal::RateLimited);
                    return Err(limited);
                }
            }
            level = c.parent.as_deref();
        }
        for c in levels {
            self.inner.metrics.request(&c.name);
        }
        Ok(premium)
    }

    /// One level against this process's bucket and budget, at a `1/replicas` share.
    fn take_here(&self, c: &Caller, replicas: u64) -> Result<Result<(), Exhausted>, RateLimited> {
        self.inner
            .buckets
            .admit(&c.name, rate_limit::share(c.requests_per_minute, replicas))?;
        Ok(self
            .inner
            .budgets
            .check(&c.name, allowance_of(c).share(replicas)))
    }

    /// Every client's premium calls and spend of the last 24 h as counted here, for `STATE_DIR`.
    pub(crate) fn export_spend(&self) -> Vec<SpendEntry> {
        self.inner.budgets.export()
    }

    /// Takes back what [`Clients::export_spend`] gave, `elapsed` minutes later (at start).
    pub(crate) fn restore_spend(&self, entries: &[SpendEntry], elapsed: u64) {
        self.inner.budgets.restore(entries, elapsed);
    }

    /// Counts a refused key (under `anonymous`: a wrong key names no client).
    pub(crate) fn count_unauthorized(&self) {
        self.inner
            .metrics
            .refused(&ClientName::anonymous(), metrics::Refusal::Unauthorized);
    }

    /// Whether the caller (and, for an end user, its client) may still call premium APIs by what
    /// this process counted (`/admin/status`, MCP on stdio; an admission over HTTP decides with
    /// the fleet's count). A client's spent budget wins over its end user's.
    pub(crate) fn premium_here(&self, caller: &Caller) -> Result<(), Exhausted> {
        let mut state = Ok(());
        let mut level = Some(caller);
        while let Some(c) = level {
            let here = self.inner.budgets.check(&c.name, allowance_of(c));
            if here.is_err() {
                state = here;
            }
            level = c.parent.as_deref();
        }
        state
    }

    /// Charges `calls` premium calls costing `usd` to the caller (and, for an end user, to its
    /// client): here, and fleet-wide when the Redis tier is there.
    pub(crate) async fn charge(&self, caller: &Caller, calls: u32, usd: f64) {
        if calls == 0 && usd <= 0.0 {
            return;
        }
        let mut level = Some(caller);
        while let Some(c) = level {
            self.inner.budgets.charge(&c.name, calls, usd);
            self.inner.metrics.premium_calls(&c.name, calls, usd);
            if let Some(tier) = &self.inner.shared {
                tier.charge_client(c.name.as_str(), u64::from(calls), rolling::micro_usd(usd))
                    .await;
            }
            level = c.parent.as_deref();
        }
    }

    /// Every configured client's limits and usage, then every end user seen. With the Redis tier
    /// the premium calls and spend are the fleet's (one round trip per client), else — or while
    /// Redis is away — this replica's.
    pub(crate) async fn usage(&self) -> Vec<Usage> {
        let rows = self.usage_rows();
        let Some(tier) = &self.inner.shared else {
            return rows
                .iter()
                .map(|(c, seen)| self.usage_of(c, seen.clone()))
                .collect();
        };
        let mut usage = Vec::with_capacity(rows.len());
        for (caller, seen) in rows {
            let mut row = self.usage_of(&caller, seen);
            let fleet = tier
                .admit_client(caller.name.as_str(), 0, Some(rolling::MINUTES_KEPT))
                .await
                .and_then(|admission| admission.spend);
            if let Some(spend) = fleet {
                let spent = Spent {
                    calls: spend.calls,
                    usd: rolling::usd(spend.micro_usd),
                };
                row.premium_calls_last_24h = spent.calls;
                row.premium_spend_usd_last_24h = spent.usd;
                row.premium_allowed = allowance_of(&caller).judge(spent).is_ok()
                    && caller
                        .parent
                        .as_deref()
                        .is_none_or(|p| row_allowed(&usage, &p.name));
                row.counted = Counted::Fleet;
            }
            usage.push(row);
        }
        usage
    }

    /// Every configured client, then every end user seen (with when).
    fn usage_rows(&self) -> Vec<(Caller, Option<end_users::Seen>)> {
        let registry = self.inner.registry.load();
        let callers: Vec<Caller> = match &registry.clients {
            Some(entries) => entries.iter().map(|e| registry.caller(Some(e))).collect(),
            None => vec![registry.caller(None)],
        };
        let mut rows: Vec<(Caller, Option<end_users::Seen>)> =
            callers.iter().map(|c| (c.clone(), None)).collect();
        for (parent, name, seen) in self.inner.end_users.list() {
            let Some(client) = callers.iter().find(|c| c.name == parent) else {
                continue;
            };
            let caller = Caller {
                name,
                requests_per_minute: registry
                    .defaults
                    .user_requests_per_minute
                    .unwrap_or(client.requests_per_minute),
                premium_calls_per_day: registry
                    .defaults
                    .user_premium_calls_per_day
                    .unwrap_or(client.premium_calls_per_day),
                micro_usd_per_day: client.micro_usd_per_day,
                parent: Some(Box::new(client.clone())),
            };
            rows.push((caller, Some(seen)));
        }
        rows
    }

    fn usage_of(&self, caller: &Caller, end_user: Option<end_users::Seen>) -> Usage {
        let spent = self.inner.budgets.used(&caller.name);
        Usage {
            client: caller.name.as_str().to_owned(),
            requests_per_minute: caller.requests_per_minute,
            premium_calls_per_day: caller.premium_calls_per_day,
            premium_calls_last_24h: spent.calls,
            usd_per_day: rolling::usd(caller.micro_usd_per_day),
            premium_spend_usd_last_24h: spent.usd,
            premium_allowed: self.premium_here(caller).is_ok(),
            counted: Counted::Replica,
            parent: caller.parent.as_ref().map(|p| p.name.as_str().to_owned()),
            end_user,
        }
    }
}

/// Whether the row of client `name` (a parent, listed before its end users) may call premium APIs.
fn row_allowed(rows: &[Usage], name: &ClientName) -> bool {
    rows.iter()
        .find(|row| row.client == name.as_str())
        .is_none_or(|row| row.premium_allowed)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use gateway_core::metrics::Registry as MetricsRegistry;

    fn clients(text: &str, defaults: ClientDefaults) -> Clients {
        let source = KeysSource {
            path: PathBuf::from("/nonexistent"),
            entries: keys_file::parse(text).unwrap(),
        };
        Clients::new(
            Some(&source),
            defaults,
            ClientMetrics::new(&mut MetricsRegistry::new()),
            None,
        )
    }

    fn line(name: &str, key: &str) -> String {
        keys_file::hash_line(name, key).unwrap()
    }

    #[test]
    fn a_key_names_its_client_and_anything_else_is_refused() {
        let text = format!("{}:10\n{}::7\n", line("alice", "ka"), line("bob", "kb"));
        let c = clients(
            &text,
            ClientDefaults {
                requests_per_minute: 60,
                premium_calls_per_day: 100,
                ..ClientDefaults::default()
            },
        );
        assert!(c.requires_keys());
        let alice = c.authenticate(Some("ka")).unwrap();
        assert_eq!(
            (
                alice.name.as_str(),
                alice.requests_per_minute,
                alice.premium_calls_per_day
            ),
            ("alice", 10, 100)
        );
        let bob = c.authenticate(Some(" kb ")).unwrap();
        assert_eq!(
            (
                bob.name.as_str(),
                bob.requests_per_minute,
                bob.premium_calls_per_day
            ),
            ("bob", 60, 7)
        );
        assert_eq!(c.authenticate(Some("kc")), Err(Unauthorized::Unknown));
        assert_eq!(c.authenticate(Some("  ")), Err(Unauthorized::Missing));
        assert_eq!(c.authenticate(None), Err(Unauthorized::Missing));
    }

    #[tokio::test(start_paused = true)]
    async fn an_end_user_has_its_own_limits_and_its_clients_hold_too() {
        let text = format!("{}:3:4\n", line("alice", "ka"));
        let c = clients(
            &text,
            ClientDefaults {
                user_requests_per_minute: Some(2),
                ..ClientDefaults::default()
            },
        );
        let alice = c.authenticate(Some("ka")).unwrap();
        let user = |id: &str| EndUser::new(Some(id), None, Some("Ada"), Some("user")).unwrap();
        let ada = c.end_user(alice.clone(), &user("u1"));
        assert_eq!(ada.name.as_str(), "alice/u1");
        assert_eq!((ada.requests_per_minute, ada.premium_calls_per_day), (2, 4));
        assert!(c.admit_here(&ada).is_ok());
        assert!(c.admit_here(&ada).is_ok());
        assert!(
            c.admit_here(&ada).is_err(),
            "the user's own rate is 2 a minute"
        );
        let bo = c.end_user(alice.clone(), &user("u2"));
        assert!(
            c.admit_here(&bo).is_ok(),
            "another user has a rate of its own"
        );
        assert!(
            c.admit_here(&bo).is_err(),
            "but the client's 3 a minute hold for all its users"
        );
        c.charge(&ada, 4, 0.0).await;
        assert!(c.premium_here(&ada).is_err());
        assert!(
            c.premium_here(&bo).is_err(),
            "the client's budget is spent too"
        );
        assert!(c.premium_here(&alice).is_err());
        let usage = c.usage().await;
        let row = usage.iter().find(|u| u.client == "alice/u1").unwrap();
        assert_eq!(row.parent.as_deref(), Some("alice"));
        assert_eq!(row.premium_calls_last_24h, 4);
        assert_eq!(row.end_user.as_ref().unwrap().name.as_deref(), Some("Ada"));
        assert_eq!(
            usage
                .iter()
                .find(|u| u.client == "alice")
                .unwrap()
                .premium_calls_last_24h,
            4
        );
    }

    #[test]
    fn an_open_gateway_takes_everyone_as_anonymous() {
        let c = Clients::new(
            None,
            ClientDefaults::default(),
            ClientMetrics::new(&mut MetricsRegistry::new()),
            None,
        );
        assert!(!c.requires_keys());
        assert_eq!(c.authenticate(None).unwrap().name.as_str(), ANONYMOUS);
        assert_eq!(c.authenticate(Some("x")).unwrap().name.as_str(), ANONYMOUS);
        assert!(c.reload().is_none());
    }

    #[test]
    fn a_reload_swaps_the_clients_and_a_bad_file_keeps_the_old_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys");
        std::fs::write(&path, line("alice", "ka")).unwrap();
        let source = KeysSource::read(path.clone()).unwrap();
        let c = Clients::new(
            Some(&source),
            ClientDefaults::default(),
            ClientMetrics::new(&mut MetricsRegistry::new()),
            None,
        );
        std::fs::write(&path, line("bob", "kb")).unwrap();
        assert_eq!(c.reload(), Some(Ok(1)));
        assert_eq!(c.authenticate(Some("ka")), Err(Unauthorized::Unknown));
        assert_eq!(c.authenticate(Some("kb")).unwrap().name.as_str(), "bob");
        std::fs::write(&path, "bob").unwrap();
        assert!(matches!(
            c.reload(),
            Some(Err(KeysFileError::Malformed { line: 1, .. }))
        ));
        assert_eq!(c.authenticate(Some("kb")).unwrap().name.as_str(), "bob");
    }
}
