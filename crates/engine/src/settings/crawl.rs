//! The crawls' limits, read by their owner: `CRAWL_MAX_PAGES`, `CRAWL_MAX_SECONDS`,
//! `CRAWL_MAX_BYTES`, `CRAWL_CONCURRENCY`, `CRAWL_PER_HOST_CONCURRENCY`,
//! `CRAWL_MAX_JOBS_PER_CLIENT`, `CRAWL_RESULT_TTL_SECONDS`, `CRAWL_STALL_SECONDS`, and `CRAWL_WEBHOOK_SECRET` (the
//! key each client's webhook secret is derived from; never shown).

use std::fmt;
use std::time::Duration;

use gateway_core::env::{ConfigError, Env, Problem};

/// Shortest accepted `CRAWL_WEBHOOK_SECRET`.
const MIN_WEBHOOK_SECRET_LEN: usize = 16;

/// `CRAWL_WEBHOOK_SECRET`: its value never appears in a log line, an error or a reply.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookSecret(String);

impl WebhookSecret {
    /// The secret's bytes (the key of the per-client derivation).
    pub(crate) fn expose(&self) -> &[u8] {
        self.0.as_bytes()
    }

    /// A secret for tests.
    #[cfg(test)]
    pub(crate) fn for_tests(secret: &str) -> Self {
        Self(secret.to_owned())
    }

    /// `CRAWL_WEBHOOK_SECRET`, or `None` when unset (webhooks are then refused by name).
    pub fn read(env: &Env<'_>) -> Result<Option<Self>, ConfigError> {
        match env.value("CRAWL_WEBHOOK_SECRET") {
            Some(raw) if raw.text.len() < MIN_WEBHOOK_SECRET_LEN => Err(ConfigError::new(
                "CRAWL_WEBHOOK_SECRET",
                "<redacted>",
                Problem::TooShort(MIN_WEBHOOK_SECRET_LEN),
            )),
            Some(raw) => Ok(Some(Self(raw.text))),
            None => Ok(None),
        }
    }
}

impl fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WebhookSecret(<redacted>)")
    }
}

/// What every crawl is held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrawlSettings {
    /// `CRAWL_MAX_PAGES`: the most pages one job reads, whatever it asks.
    pub max_pages: usize,
    /// `CRAWL_MAX_SECONDS`: the longest a job runs.
    pub max_time: Duration,
    /// `CRAWL_MAX_BYTES`: the most text one job keeps.
    pub max_bytes: u64,
    /// `CRAWL_CONCURRENCY`: reads in flight for one job.
    pub concurrency: usize,
    /// `CRAWL_PER_HOST_CONCURRENCY`: reads in flight on one host.
    pub per_host: usize,
    /// `CRAWL_MAX_JOBS_PER_CLIENT`: jobs a client may have running at once.
    pub jobs_per_client: usize,
    /// `CRAWL_RESULT_TTL_SECONDS`: how long a job and its pages are kept after it started.
    pub result_ttl: Duration,
    /// `CRAWL_STALL_SECONDS`: a running job that hands in no URL for this long is ended, failed
    /// (the reaper).
    pub stall: Duration,
}

impl CrawlSettings {
    /// Reads the crawls' variables from `env`.
    pub fn read(env: &Env<'_>) -> Result<Self, ConfigError> {
        Ok(Self {
            max_pages: env.integer("CRAWL_MAX_PAGES", 1usize, 100_000)?,
            max_time: env.seconds("CRAWL_MAX_SECONDS")?,
            max_bytes: env.integer("CRAWL_MAX_BYTES", 1u64, 1 << 40)?,
            concurrency: env.integer("CRAWL_CONCURRENCY", 1usize, 64)?,
            per_host: env.integer("CRAWL_PER_HOST_CONCURRENCY", 1usize, 64)?,
            jobs_per_client: env.integer("CRAWL_MAX_JOBS_PER_CLIENT", 1usize, 1000)?,
            result_ttl: env.seconds("CRAWL_RESULT_TTL_SECONDS")?,
            stall: env.seconds("CRAWL_STALL_SECONDS")?,
        })
    }
}
