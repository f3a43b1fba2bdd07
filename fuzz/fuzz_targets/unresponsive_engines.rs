//! SearXNG's `unresponsive_engines` and one engine message.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: &[u8]| {
    searxng_gateway::fuzzing::unresponsive_engines(input);
});
