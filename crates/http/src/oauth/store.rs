//! Where the authorization server keeps what it issued — client registrations, codes, tokens —
//! each under an id (`code:<digest>`; secrets are never keys, only their SHA-256) with a
//! lifetime.
//!
//! With the Redis tier (`REDIS_URL`) Redis is the truth while it answers: a code issued by one
//! replica is exchanged at another, a token revoked at one is refused by all, and a single-use
//! code or refresh token is taken with `GETDEL`, so of two replicas racing for it one wins. Each
//! record is also kept here, in this process, so that while Redis is away the replica goes on
//! with what it issued itself. Without Redis the records live in this process only: a restart
//! signs everyone out (clients sign in again), which is the price of not writing tokens to disk.
//!
//! Registrations are open to anyone (dynamic client registration has no caller to check), so
//! the local map is bounded ([`LOCAL_CAP`] records, expired ones swept first); a full map refuses
//! new records rather than grow.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use gateway_core::shared::SharedTier;
use tokio::time::Instant;

/// The most records this process keeps.
pub(crate) const LOCAL_CAP: usize = 50_000;

/// No room for another record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Full;

/// The records, here and (when configured) in Redis.
#[derive(Debug)]
pub(crate) struct Store {
    local: Mutex<HashMap<String, Entry>>,
    shared: Option<SharedTier>,
}

#[derive(Debug)]
struct Entry {
    blob: Vec<u8>,
    expires: Instant,
}

impl Store {
    pub(crate) fn new(shared: Option<SharedTier>) -> Self {
        Self {
            local: Mutex::new(HashMap::new()),
            shared,
        }
    }

    fn local(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.local
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Keeps `blob` under `id` for `ttl`.
    pub(crate) async fn put(&self, id: &str, blob: Vec<u8>, ttl: Duration) -> Result<(), Full> {
        if let Some(tier) = &self.shared {
            tier.store_grant(id, &blob, ttl).await;
        }
        let now = Instant::now();
        let mut local = self.local();
        if local.len() >= LOCAL_CAP && !local.contains_key(id) {
            local.retain(|_, entry| entry.expires > now);
            if local.len() >= LOCAL_CAP {
                return Err(Full);
            }
        }
        local.insert(
            id.to_owned(),
            Entry {
                blob,
                expires: now + ttl,
            },
        );
        Ok(())
    }

    /// The record under `id`, unless it expired or was taken.
    pub(crate) async fn get(&self, id: &str) -> Option<Vec<u8>> {
        if let Some(tier) = &self.shared {
            let found = tier.read_grant(id).await;
            if found.is_some() || tier.is_connected() {
                // Redis answered: what it says holds, here too (another replica may have
                // revoked it).
                if found.is_none() {
                    self.local().remove(id);
                }
                return found.map(|b| b.to_vec());
            }
        }
        let now = Instant::now();
        let mut local = self.local();
        match local.get(id) {
            Some(entry) if entry.expires > now => Some(entry.blob.clone()),
            Some(_) => {
                local.remove(id);
                None
            }
            None => None,
        }
    }

    /// Takes the record under `id`: the one caller that gets it, whichever replica it asks.
    pub(crate) async fn take(&self, id: &str) -> Option<Vec<u8>> {
        let here = self.local().remove(id);
        if let Some(tier) = &self.shared {
            let found = tier.take_grant(id).await;
            if found.is_some() || tier.is_connected() {
                return found.map(|b| b.to_vec());
            }
        }
        here.filter(|entry| entry.expires > Instant::now())
            .map(|entry| entry.blob)
    }

    /// Forgets the record under `id`, everywhere.
    pub(crate) async fn delete(&self, id: &str) {
        self.local().remove(id);
        if let Some(tier) = &self.shared {
            tier.delete_grant(id).await;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_record_lives_its_lifetime_and_is_taken_once() {
        let store = Store::new(None);
        store
            .put("code:a", b"one".to_vec(), Duration::from_secs(60))
            .await
            .unwrap();
        assert_eq!(store.get("code:a").await.as_deref(), Some(&b"one"[..]));
        assert_eq!(store.take("code:a").await.as_deref(), Some(&b"one"[..]));
        assert_eq!(store.take("code:a").await, None);
        store
            .put("access:b", b"two".to_vec(), Duration::from_secs(60))
            .await
            .unwrap();
        tokio::time::advance(Duration::from_secs(61)).await;
        assert_eq!(store.get("access:b").await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_store_sweeps_the_expired_and_then_refuses() {
        let store = Store::new(None);
        for i in 0..LOCAL_CAP {
            store
                .put(&format!("client:{i}"), Vec::new(), Duration::from_secs(10))
                .await
                .unwrap();
        }
        assert_eq!(
            store
                .put("client:x", Vec::new(), Duration::from_secs(10))
                .await,
            Err(Full)
        );
        tokio::time::advance(Duration::from_secs(11)).await;
        store
            .put("client:x", Vec::new(), Duration::from_secs(10))
            .await
            .unwrap();
    }
}
