//! What the HTTP server accepts from a client ([`ServerLimits`]): connections at once, how long a
//! request's head may take, the longest URL, headers and body.

use std::time::Duration;

use gateway_core::env::{ConfigError, Env};

/// What the HTTP server accepts from one client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// Connections served at once (`MAX_CONNECTIONS`).
    pub max_connections: usize,
    /// From a request's first byte to the end of its head, and again for a form body
    /// (`REQUEST_READ_TIMEOUT_SECONDS`).
    pub read_timeout: Duration,
    /// How long a connection may wait for a request's first byte (`KEEPALIVE_IDLE_SECONDS`).
    pub keepalive_idle: Duration,
    /// Longest request target (`MAX_URL_BYTES`).
    pub max_url_bytes: usize,
    /// Largest total of header names and values (`MAX_HEADER_BYTES`).
    pub max_header_bytes: usize,
    /// Largest form body (`MAX_BODY_BYTES`).
    pub max_body_bytes: usize,
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
    pub fn read_buffer_bytes(&self) -> usize {
        (self.max_url_bytes + self.max_header_bytes + 4096).max(8192)
    }
}
