//! The key layout of the shared tier. Every key starts with `REDIS_KEY_PREFIX` and carries a Redis
//! Cluster hash tag (`{…}`) naming its family, so the keys one operation touches together always
//! hash to one slot:
//!
//! | key | what | lifetime |
//! |---|---|---|
//! | `<prefix>{q:<hash>}:answer` | one cached answer (versioned blob) | `PX` = its TTL |
//! | `<prefix>{q:<hash>}:lease` | the replica computing that answer now | `PX` = [`super::LEASE_TTL`], renewed |
//! | `<prefix>{breakers:provider}` | hash: provider → open period | fields deleted on close |
//! | `<prefix>{breakers:engine:<instance>}` | hash: engine → open period | fields deleted on close |
//! | `<prefix>{breakers:searxng}` | hash: SearXNG instance → cooldown | fields deleted on close |
//! | `<prefix>{breakers:quota_windows}` | hash: provider key → its last reported rate-limit windows | fields replaced |
//! | `<prefix>{breakers:…}:probe:<name>:<until>` | who probes that open period | `PX` = the probe hold |
//! | `<prefix>{rotation}` | the provider round-robin counter | none |
//! | `<prefix>{c:<hash>}:rate` | a client's request rate (GCRA: its theoretical arrival time, ms) | `PX` = until it is full again |
//! | `<prefix>{c:<hash>}:calls`, `…:usd` | hashes: a client's premium calls and micro-dollars per minute | 25 h after the last charge |
//! | `<prefix>{replicas}` | sorted set: replica → its last heartbeat (ms) | entries older than the heartbeat window go |
//! | `<prefix>{p:<hash>}:page` | one page read (versioned blob) | `PX` = `FETCH_CACHE_TTL_SECONDS` |
//! | `<prefix>{o:<hash>}:grant` | one MCP authorization record (a client registration, a code, a token), under the digest of its name | `PX` = its lifetime |
//! | `<prefix>{j:<id>}:job` | hash: one crawl job's request, owner, status and counters | until the job's expiry (`PEXPIREAT`) |
//! | `<prefix>{j:<id>}:frontier` | stream: the job's URLs to read, consumed by the group `readers` every replica joins | until the job's expiry |
//! | `<prefix>{j:<id>}:seen`, `…:found`, `…:done` | set of URLs taken on, list of them in order, set of URLs whose page is kept | until the job's expiry |
//! | `<prefix>{j:<id>}:pages`, `…:errors`, `…:robots` | lists: pages read (versioned blobs), failures, URLs `robots.txt` kept it from | until the job's expiry |
//! | `<prefix>{j:<id>}:host:<host>`, `…:delay:<host>` | the job's reads in flight on a host; a host's crawl delay running | `PX` = a read's time; the delay |
//! | `<prefix>{jobs}` | hash: the crawl jobs running → their owner (what every replica works on) | fields deleted when a job ends |
//!
//! `<hash>` is the first 128 bits of SHA-256 of the cache key, hex: fixed length whatever the
//! query, and free of the braces that would break the hash tag.

use sha2::{Digest, Sha256};

/// A set of breakers shared as one Redis hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Board<'a> {
    /// The premium providers' breakers.
    Providers,
    /// The breakers of the providers' keys (`brave:1a2b3c4d`).
    Keys,
    /// The engine breakers of one SearXNG instance (`""` for the only one).
    Engines {
        /// The instance's name.
        instance: &'a str,
    },
    /// The SearXNG instances' cooldowns, keyed by instance name.
    Cooldowns,
    /// Not breakers: the rate-limit and quota windows each provider key last reported, keyed by
    /// the key's name (`brave:1a2b3c4d`).
    QuotaWindows,
}

impl Board<'_> {
    /// The board's name inside the key: `provider`, `key`, `engine:<instance>`, `searxng`.
    pub fn id(self) -> String {
        match self {
            Board::Providers => "provider".to_owned(),
            Board::Keys => "key".to_owned(),
            Board::Engines { instance } => format!("engine:{instance}"),
            Board::Cooldowns => "searxng".to_owned(),
            Board::QuotaWindows => "quota_windows".to_owned(),
        }
    }
}

/// Builds every key from the configured prefix.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    prefix: String,
}

impl Keys {
    pub(crate) fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.to_owned(),
        }
    }

    fn query_tag(cache_key: &str) -> String {
        let digest = Sha256::digest(cache_key.as_bytes());
        hex::encode(&digest[..16])
    }

    /// Where the answer to `cache_key` is kept.
    pub(crate) fn answer(&self, cache_key: &str) -> String {
        format!("{}{{q:{}}}:answer", self.prefix, Self::query_tag(cache_key))
    }

    /// Where the page read under `page_key` is kept.
    pub(crate) fn page(&self, page_key: &str) -> String {
        format!("{}{{p:{}}}:page", self.prefix, Self::query_tag(page_key))
    }

    /// Where the MCP authorization record named `id` is kept.
    pub(crate) fn grant(&self, id: &str) -> String {
        format!("{}{{o:{}}}:grant", self.prefix, Self::query_tag(id))
    }

    /// Who computes the answer to `cache_key` now.
    pub(crate) fn lease(&self, cache_key: &str) -> String {
        format!("{}{{q:{}}}:lease", self.prefix, Self::query_tag(cache_key))
    }

    /// The hash holding `board`'s open breakers.
    pub(crate) fn board(&self, board: Board<'_>) -> String {
        format!("{}{{breakers:{}}}", self.prefix, board.id())
    }

    /// The claim on the probe of `name`'s open period ending at `until_ms`.
    pub(crate) fn probe(&self, board: Board<'_>, name: &str, until_ms: u64) -> String {
        format!("{}:probe:{name}:{until_ms}", self.board(board))
    }

    fn client_tag(client: &str) -> String {
        format!("c:{}", Self::query_tag(client))
    }

    /// Where `client`'s request rate is kept.
    pub(crate) fn rate(&self, client: &str) -> String {
        format!("{}{{{}}}:rate", self.prefix, Self::client_tag(client))
    }

    /// Where `client`'s premium calls and micro-dollars per minute are kept (one slot).
    pub(crate) fn spend(&self, client: &str) -> [String; 2] {
        let tag = Self::client_tag(client);
        [
            format!("{}{{{tag}}}:calls", self.prefix),
            format!("{}{{{tag}}}:usd", self.prefix),
        ]
    }

    /// The keys of crawl job `id` (a UUID: no braces).
    pub(crate) fn job(&self, id: &str, part: &str) -> String {
        format!("{}{{j:{id}}}:{part}", self.prefix)
    }

    /// The crawl jobs running, fleet-wide.
    pub(crate) fn jobs(&self) -> String {
        format!("{}{{jobs}}", self.prefix)
    }

    /// The replicas' heartbeats.
    pub(crate) fn replicas(&self) -> String {
        format!("{}{{replicas}}", self.prefix)
    }

    /// The provider rotation's shared counter.
    pub(crate) fn rotation(&self) -> String {
        format!("{}{{rotation}}", self.prefix)
    }
}

/// The hash tag of a key: what Redis Cluster hashes to pick the slot.
#[cfg(test)]
fn hash_tag(key: &str) -> &str {
    let open = key.find('{').unwrap_or(0);
    let close = key[open..].find('}').map_or(key.len(), |c| open + c);
    &key[open + 1..close]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_and_its_lease_share_one_slot_and_queries_spread() {
        let keys = Keys::new("sxgw:");
        let a = keys.answer("q=rust&lang=en");
        assert!(a.starts_with("sxgw:{q:") && a.ends_with("}:answer"), "{a}");
        assert_eq!(hash_tag(&a), hash_tag(&keys.lease("q=rust&lang=en")));
        assert_ne!(hash_tag(&a), hash_tag(&keys.answer("q=go&lang=en")));
        assert_eq!(hash_tag(&a).len(), 2 + 32);
    }

    #[test]
    fn braces_in_a_query_cannot_break_the_tag() {
        let keys = Keys::new("p:");
        let a = keys.answer("q={}}{");
        assert_eq!(a.matches('{').count(), 1, "{a}");
    }

    #[test]
    fn a_clients_keys_share_one_slot_apart_from_other_clients() {
        let keys = Keys::new("sxgw:");
        let [calls, usd] = keys.spend("alice");
        assert_eq!(hash_tag(&calls), hash_tag(&usd));
        assert_eq!(hash_tag(&calls), hash_tag(&keys.rate("alice")));
        assert_ne!(hash_tag(&calls), hash_tag(&keys.rate("bob")));
        assert_eq!(keys.rate("a{b}").matches('{').count(), 1);
    }

    #[test]
    fn a_probe_claim_lives_in_its_board_slot() {
        let keys = Keys::new("sxgw:");
        let board = Board::Engines { instance: "a" };
        assert_eq!(
            hash_tag(&keys.probe(board, "google", 17)),
            hash_tag(&keys.board(board))
        );
        assert_eq!(keys.board(Board::Providers), "sxgw:{breakers:provider}");
    }
}
