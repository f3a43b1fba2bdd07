//! URL canonicalisation (the merge's deduplication key).
#![no_main]

libfuzzer_sys::fuzz_target!(|input: &[u8]| {
    searxng_gateway::fuzzing::canonical_url(input);
});
