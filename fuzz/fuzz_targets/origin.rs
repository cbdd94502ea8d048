//! The HTTP Origin and Host checks (`nexo_serve::fuzzing::origin_and_host`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| nexo_serve::fuzzing::origin_and_host(data));
