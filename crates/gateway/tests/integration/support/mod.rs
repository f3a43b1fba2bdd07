//! Test support: the gateway in-process on port 0 ([`gateway`]) or as the real binary ([`process`]),
//! in front of the simulators ([`stack`]), with inbound keys ([`keys`]); a real SearXNG ([`searxng`]) and a real `redis-server` ([`redis`]), as a Cluster ([`redis_cluster`]) and behind Sentinel ([`redis_sentinel`]), and the scriptable fake upstream
//! behind its engines ([`engine_upstream`]); waiting for observable conditions ([`wait`]) and kernel-chosen
//! loopback ports ([`ports`]); which of the real programs are installed, and skipping a test that needs a
//! missing one outside CI ([`external`]).

pub(crate) mod engine_upstream;
pub(crate) mod external;
pub(crate) mod gateway;
pub(crate) mod keys;
pub(crate) mod ports;
pub(crate) mod process;
pub(crate) mod reading;
pub(crate) mod redis;
pub(crate) mod redis_cluster;
pub(crate) mod redis_sentinel;
pub(crate) mod searxng;
pub(crate) mod stack;
pub(crate) mod wait;
