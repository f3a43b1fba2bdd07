//! A SearXNG `/search` body through the answer decoder.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: &[u8]| {
    searxng_gateway::fuzzing::searxng_answer(input);
});
