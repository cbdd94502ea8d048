//! A configuration file (`nexo_client::fuzzing::config`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| nexo_client::fuzzing::config(data));
