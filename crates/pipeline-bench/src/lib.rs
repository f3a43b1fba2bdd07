//! Nothing ships from here: the crate holds `benches/pipeline.rs`, the miss path's CPU measured
//! in-process with criterion (`cargo bench-pipeline`).
