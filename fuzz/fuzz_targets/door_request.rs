//! A body for one of the doors other tools knock on (Firecrawl's search and scrape, Perplexity's
//! search, Open WebUI's search and loader; the first byte picks the door) through its decoding and
//! validation.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: &[u8]| {
    searxng_gateway::fuzzing::door_request(input);
});
