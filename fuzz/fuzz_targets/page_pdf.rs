//! A PDF through the parse as the gateway runs it: a job to a parse worker process
//! (`SEARXNG_GATEWAY_BIN`, built by scripts/fuzz.sh), answered by its deadline whatever it does.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: &[u8]| {
    searxng_gateway::fuzzing::page_pdf(input);
});
