//! SPF's lookup limits over a zone in memory (`nexo_dns::fuzzing::spf_lookups`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| nexo_dns::fuzzing::spf_lookups(data));
