//! Lines served over stdio by rmcp's serving loop (`nexo_serve::fuzzing::stdio_served`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| nexo_serve::fuzzing::stdio_served(data));
