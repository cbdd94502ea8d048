//! An SSE stream as the client reads it (`nexo_client::fuzzing::sse`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| nexo_client::fuzzing::sse(data));
