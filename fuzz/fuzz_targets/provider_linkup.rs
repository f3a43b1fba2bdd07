//! One linkup response (status, headers, body) through the shared steps and the adapter's decoding.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: &[u8]| {
    searxng_gateway::fuzzing::provider_response("linkup", input);
});
