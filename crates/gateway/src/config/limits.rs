//! The protective limits, read with the rest of the configuration: how many cache misses may fan out
//! at once and how long one waits for a slot ([`Shedding`], used by the pipeline), and what the HTTP
//! server accepts from a client ([`ServerLimits`], used by the server).

use std::time::Duration;

use crate::env::{ConfigError, Env};

/// Load shedding in front of the upstreams (`MAX_CONCURRENT_MISSES`, `MAX_MISS_WAIT_MS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shedding {
    /// Fan-outs allowed at once.
    pub(crate) max_concurrent_misses: usize,
    /// How long a miss waits for a slot before it is shed.
    pub(crate) max_wait: Duration,
}

impl Shedding {
    pub(super) fn read(env: &Env<'_>) -> Result<Self, ConfigError> {
        Ok(Self {
            max_concurrent_misses: env.integer("MAX_CONCURRENT_MISSES", 1usize, 100_000)?,
            max_wait: Duration::from_millis(env.integer("MAX_MISS_WAIT_MS", 0u64, 60_000)?),
        })
    }
}

/// What the HTTP server accepts from one client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ServerLimits {
    /// Connections served at once (`MAX_CONNECTIONS`).
    pub(crate) max_connections: usize,
    /// From a request's first byte to the end of its head, and again for a form body
    /// (`REQUEST_READ_TIMEOUT_SECONDS`).
    pub(crate) read_timeout: Duration,
    /// How long a connection may wait for a request's first byte (`KEEPALIVE_IDLE_SECONDS`).
    pub(crate) keepalive_idle: Duration,
    /// Longest request target (`MAX_URL_BYTES`).
    pub(crate) max_url_bytes: usize,
    /// Largest total of header names and values (`MAX_HEADER_BYTES`).
    pub(crate) max_header_bytes: usize,
    /// Largest form body (`MAX_BODY_BYTES`).
    pub(crate) max_body_bytes: usize,
}

impl ServerLimits {
    pub(super) fn read(env: &Env<'_>) -> Result<Self, ConfigError> {
        Ok(Self {
            max_connections: env.integer("MAX_CONNECTIONS", 1usize, 1_000_000)?,
            read_timeout: env.seconds("REQUEST_READ_TIMEOUT_SECONDS")?,
            keepalive_idle: env.seconds("KEEPALIVE_IDLE_SECONDS")?,
            max_url_bytes: env.integer("MAX_URL_BYTES", 256usize, 1 << 20)?,
            max_header_bytes: env.integer("MAX_HEADER_BYTES", 1024usize, 1 << 20)?,
            max_body_bytes: env.integer("MAX_BODY_BYTES", 1024usize, 16 << 20)?,
        })
    }

    /// The connection's read buffer: room for a request line of the longest URL plus the largest
    /// head and some slack, so that the gateway, not the HTTP library, answers a head that is
    /// merely over a limit (with a JSON body); a head beyond even this gets the library's bare 431.
    pub(crate) fn read_buffer_bytes(&self) -> usize {
        (self.max_url_bytes + self.max_header_bytes + 4096).max(8192)
    }
}
