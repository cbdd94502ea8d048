//! `Mcp-Method` and `Mcp-Name` against the body (`nexo_serve::fuzzing::standard_headers`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| nexo_serve::fuzzing::standard_headers(data));
