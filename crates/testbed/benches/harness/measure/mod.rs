//! The measurements, one file each, as methods of [`crate::Bench`] so they share its plan, rows, details
//! and failures: [`cache_hits`] (a), [`miss_path`] (b), [`t1`] (c), [`coalescing`] (d), [`memory`] (e) and
//! [`pool`] (f), [`fault_soak`] (g).

mod cache_hits;
mod coalescing;
mod fault_soak;
mod memory;
mod miss_path;
mod pool;
mod t1;
