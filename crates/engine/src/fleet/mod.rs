//! The fleet: what replicas of one gateway share through the Redis/Valkey tier (`REDIS_URL`) —
//! a miss computed once for all of them, the breakers, the providers' quota windows. Without the
//! tier a replica is a fleet of one and every function here does nothing (or computes locally).
//!
//! - [`answer`]: a miss across replicas — the shared answer below the local cache, one fan-out per
//!   query for the fleet (a lease), followers polling for its answer.
//! - [`breakers`]: every breaker board, mirrored to the tier and adopted from it.
//! - [`quota`]: the providers' quota windows, as last reported to any replica.
//! - [`Fleet`]: this replica's link to the tier and what it last told it.

pub(crate) mod answer;
pub(crate) mod breakers;
mod link;
pub(crate) mod quota;

pub(crate) use link::Fleet;
