//! SPF and DMARC records (`nexo_dns::fuzzing::mail_records`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| nexo_dns::fuzzing::mail_records(data));
