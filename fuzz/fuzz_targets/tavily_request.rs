//! A `POST /tavily/search` body through the Tavily surface's decoding, validation and reply.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: &[u8]| {
    searxng_gateway::fuzzing::tavily_request(input);
});
