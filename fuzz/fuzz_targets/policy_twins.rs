//! A gateway policy as JSON and as YAML (`nexo_gateway::fuzzing::policy_twins`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| nexo_gateway::fuzzing::policy_twins(data));
