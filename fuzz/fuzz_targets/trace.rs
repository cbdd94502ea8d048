//! A trace file (`nexo_trace::fuzzing::trace_file`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| nexo_trace::fuzzing::trace_file(data));
