//! A page (its `Content-Type` line, then its body) through the reader's extraction entry point.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: &[u8]| {
    searxng_gateway::fuzzing::page_extraction(input);
});
