//! One fan-out (GATEWAY.md §3 steps 3–8). [`run`] drives the calls; [`FanOut`] holds the
//! request's state and every rule, one method each, so each rule can be read and tested alone:
//!
//! - SearXNG and the T1 providers start together ([`run`]); when the instance has lately been slow
//!   to answer, the fallback starts with them ([`FanOut::hedge`], `slow_threshold::hedges`).
//! - [`FanOut::on_event`]: SearXNG answered (healthy, degraded) or failed; a provider answered or
//!   failed. Results are counted by distinct canonical URL.
//! - [`FanOut::on_slow_threshold`]: SearXNG is still silent after the slow threshold, so the
//!   fallback starts alongside it.
//! - [`FanOut::next_step`]: what to do now — finish (target met and SearXNG settled, or nothing
//!   left in flight), start the next fallback call (one at a time), or wait.
//! - [`FanOut::on_deadline`]: the budget is hard; whatever is in flight is dropped (cancelled).
//! - A SearXNG call the answer did not wait for is heard to its end ([`SearxngTask`]), so the
//!   instance and its engines learn what it found.
//! - [`FanOut::finish`]: merge, outcome, the answer and how long to cache it.

mod rules;
mod run;

pub use run::finish_answered;
pub(crate) use run::run_admitted;

#[cfg(test)]
mod tests;
