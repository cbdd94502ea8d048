//! The gateway's shell matcher under requoting (`nexo_gateway::fuzzing::shell_quoting`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| nexo_gateway::fuzzing::shell_quoting(data));
