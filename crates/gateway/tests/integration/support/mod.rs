//! Test support: the gateway on port 0 ([`gateway`]), a real SearXNG ([`searxng`]) and the
//! scriptable fake upstream behind its engines ([`engine_upstream`]).

#![allow(dead_code)]

pub(crate) mod engine_upstream;
pub(crate) mod gateway;
pub(crate) mod searxng;
pub(crate) mod stack;
