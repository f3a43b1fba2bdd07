//! Test support: the gateway on port 0 ([`gateway`]), a real SearXNG ([`searxng`]) and the
//! scriptable fake upstream behind its engines ([`engine_upstream`]).

#![allow(dead_code)]

pub mod engine_upstream;
pub mod gateway;
pub mod searxng;
pub mod stack;
