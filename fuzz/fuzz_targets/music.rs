//! The music library's song checks and playlist exports (`nexo_music::fuzzing::songs_and_exports`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| nexo_music::fuzzing::songs_and_exports(data));
