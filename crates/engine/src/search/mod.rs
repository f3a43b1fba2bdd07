//! Answering a search: one request's fan-out to SearXNG and the premium providers inside a hard
//! budget, the fallback and its order, the answer and its outcome, and what the fan-out did.
//!
//! - [`admission`]: load shedding — how many fan-outs may run at once.
//! - [`fanout`]: one request's fan-out, its rules as methods of a state type; [`upstreams`]: the
//!   two sides it calls (SearXNG, the premium providers) and its numbers.
//! - [`calls`]: one provider call, and what a call reports to the fan-out; [`searxng_call`]: one
//!   SearXNG call, its attempts across the pool, reporting to the breakers.
//! - [`provider_rotation`]: which providers a request calls, in which order; [`spend`]: the
//!   premium spend against `PREMIUM_USD_PER_DAY`.
//! - [`slow_threshold`]: how long the fallback waits for a silent SearXNG, and when it does not
//!   wait at all (the hedge).
//! - [`answer`], [`outcome`], [`failure`], [`failing_engines`]: what a fan-out produces and how it
//!   is labelled; [`record`]: the record of what the fan-out did, kept with its answer (what
//!   `explain` shows).

pub(crate) mod admission;
pub mod answer;
pub(crate) mod calls;
pub(crate) mod failing_engines;
pub(crate) mod failure;
pub(crate) mod fanout;
pub mod outcome;
pub(crate) mod provider_rotation;
pub mod record;
pub(crate) mod searxng_call;
pub(crate) mod slow_threshold;
pub(crate) mod spend;
pub(crate) mod upstreams;

pub use admission::Overloaded;
pub use answer::Answer;
pub use failure::Shortfall;
#[doc(hidden)]
pub use fanout::finish_answered;
pub use outcome::Outcome;
pub use provider_rotation::Premium;
