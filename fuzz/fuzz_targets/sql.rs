//! The gateway policy's SQL matcher (`nexo_gateway::fuzzing::sql_matcher`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| nexo_gateway::fuzzing::sql_matcher(data));
