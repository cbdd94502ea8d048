//! The gateway policy's path matcher (`nexo_gateway::fuzzing::path_matcher`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| nexo_gateway::fuzzing::path_matcher(data));
