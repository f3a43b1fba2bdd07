//! A query string or form body through `/search`'s parser and validation.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: &[u8]| {
    searxng_gateway::fuzzing::search_params(input);
});
