//! Load shedding in front of the upstreams: how many cache misses may fan out at once and how
//! long one waits for a slot.

use std::time::Duration;

use gateway_core::env::{ConfigError, Env};

/// Load shedding in front of the upstreams (`MAX_CONCURRENT_MISSES`, `MAX_MISS_WAIT_MS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shedding {
    /// Fan-outs allowed at once.
    pub max_concurrent_misses: usize,
    /// How long a miss waits for a slot before it is shed.
    pub max_wait: Duration,
}

impl Shedding {
    pub(super) fn read(env: &Env<'_>) -> Result<Self, ConfigError> {
        Ok(Self {
            max_concurrent_misses: env.integer("MAX_CONCURRENT_MISSES", 1usize, 100_000)?,
            max_wait: Duration::from_millis(env.integer("MAX_MISS_WAIT_MS", 0u64, 60_000)?),
        })
    }
}
