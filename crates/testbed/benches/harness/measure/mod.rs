//! The measurements, one file each (or a folder), as methods of [`crate::Bench`] so they share its plan,
//! rows, details and failures: [`cache_hits`] (a), [`miss_path`] (b), [`t1`] (c), [`coalescing`] (d),
//! [`memory`] (e), [`pool`] (f), [`fault_soak`] (g), [`day`] (h, decision quality over days of
//! upstream trouble, whose scripts `cargo test` checks: [`check_schedules`]) and [`tracing_cost`] (i, cache hits with tracing off and on) and
//! [`shared_tier`] (j, several replicas on one Redis), [`extraction`] (k, the page reader on
//! the Readability corpus), [`large_pages`] and [`wcxb`] (k, the reader on WCXB's pages of seven
//! types, beside candidate extractors), [`passages`] (k, query-relevant passages of WCXB's long
//! pages against truncation and BM25 windows), [`rendered_reads`] (k, single-page apps read by
//! the local browser), [`fleet_limits`] (l, one client's limits over three replicas) and
//! [`crawls`] (m, a generated site crawled by one replica and by three on Redis).

mod cache_hits;
mod coalescing;
mod crawls;
mod day;
mod extraction;
mod fault_soak;
mod fleet_limits;
mod large_pages;
mod memory;
mod miss_path;
mod passages;
mod pool;
mod redis_process;
mod rendered_reads;
mod shared_tier;
mod t1;
mod tracing_cost;
mod wcxb;

pub(crate) use day::check_schedules;
