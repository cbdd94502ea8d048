//! A path named to the files server (`nexo_files::fuzzing::files_path`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| nexo_files::fuzzing::files_path(data));
