//! The calculator (`nexo_utils::fuzzing::calc`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| nexo_utils::fuzzing::calc(data));
