//! The stdio transport's line framing (`nexo_serve::fuzzing::stdio_framing`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| nexo_serve::fuzzing::stdio_framing(data));
