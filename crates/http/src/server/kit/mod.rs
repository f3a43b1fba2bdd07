//! The surface kit every door uses, so that each door's module holds only what is its own (its
//! request fields, its answer's shape):
//!
//! - [`gate`]: the one key check, rate limit and premium budget in front of every door and
//!   `/status` (each door layers it with its own refusals), and the admitted caller it hands on;
//! - [`refusal`]: the error core — every refusal a JSON door can answer, with its status, code and
//!   headers — and [`refusal::Door`], the door's own shape around it;
//! - [`body`]: the request body read under the server limits ([`body::LimitedBody`]);
//! - [`json_fields`]: a JSON object read field by field, a wrong field refused by name;
//! - [`search_call`]: one search asked of the engine, charged, logged and listed in
//!   [`recent_searches`] (the operator's page reads that list);
//! - [`read_call`]: one page read asked of the engine, charged and logged;
//! - [`search_read`]: several searches at once, then their hits read, within the budget;
//! - [`document`]: the engine's answer as the JSON doors read it (typed hits and failures);
//! - [`explain`]: the `gateway` object `explain=1` adds to a search or a read.

pub(crate) mod body;
pub(crate) mod document;
pub(crate) mod explain;
pub(crate) mod gate;
pub(crate) mod json_fields;
pub(crate) mod read_call;
pub(crate) mod recent_searches;
pub(crate) mod refusal;
pub(crate) mod search_call;
pub(crate) mod search_read;
