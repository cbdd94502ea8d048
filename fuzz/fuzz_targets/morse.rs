//! Morse code both ways (`nexo_morse::fuzzing::morse`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| nexo_morse::fuzzing::morse(data));
