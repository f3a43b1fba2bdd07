//! An MCP body (or bare `web_search` arguments) through the JSON-RPC check, the argument decoder
//! and the tool's result.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: &[u8]| {
    searxng_gateway::fuzzing::mcp_web_search(input);
});
