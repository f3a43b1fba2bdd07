//! The one integration-test binary: the gateway on port 0 against fakes, the simulator and a real
//! SearXNG (installed by `.ci/install-searxng.sh`).

#![allow(unreachable_pub)] // a test binary has no public API

mod support;

mod binary;
mod dashboard;
mod gateway_core;
mod pipeline;
mod provider_breakers;
mod provider_contract;
mod real_searxng;
mod real_searxng_pool;
mod searxng_env;
mod searxng_pool;
mod stack_script;
