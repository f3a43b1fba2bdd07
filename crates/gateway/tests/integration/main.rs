//! The one integration-test binary: the gateway on port 0 against fakes, the simulator and a real
//! SearXNG (installed by `.ci/install-searxng.sh`), and the real client libraries (installed by
//! `.ci/install-clients.sh`).

#![allow(unreachable_pub)] // a test binary has no public API

mod support;

mod binary;
mod browser_reads;
mod client_budgets;
mod crawl_fleet;
mod crawl_jobs;
mod dashboard;
mod door_contracts;
mod doors;
mod engine_probes;
mod fault_matrix;
mod fleet_limits;
mod gateway_core;
mod hostile_pages;
mod inbound_keys;
mod jina_surface;
mod limits;
mod mcp_oauth;
mod mcp_surface;
mod operator_page;
mod passages;
mod pipeline;
mod provider_breakers;
mod provider_contract;
mod reading;
mod real_clients;
mod real_searxng;
mod real_searxng_pool;
mod redis_topologies;
mod replicas;
mod restarts;
mod root_path;
mod searxng_env;
mod searxng_pool;
mod site_map;
mod stack_script;
mod surfaces;
mod tavily_surface;
mod tracing;
