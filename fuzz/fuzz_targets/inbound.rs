//! One JSON-RPC message as a server receives it (`nexo_serve::fuzzing::inbound`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| nexo_serve::fuzzing::inbound(data));
