//! Brave's `X-RateLimit-*` headers.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: &[u8]| {
    searxng_gateway::fuzzing::brave_rate_limits(input);
});
