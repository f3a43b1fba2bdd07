//! `Retry-After`, as delta-seconds or an HTTP-date.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: &[u8]| {
    searxng_gateway::fuzzing::retry_after(input);
});
