//! The gateway's URL matcher and its address classes (`nexo_gateway::fuzzing::url_matcher`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| nexo_gateway::fuzzing::url_matcher(data));
