//! What the operator sees of the engine: the `/status` document ([`status`]) and the last 15
//! minutes of outcomes and latencies, per second, for the operator's page ([`traffic`]); and what
//! a client may ask of it ([`capabilities`]).

pub mod capabilities;
pub mod status;
pub mod traffic;
