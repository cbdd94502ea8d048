//! Morse code under a fuzzer (`fuzz/fuzz_targets/morse.rs` calls
//! [`morse`]; the committed corpus is replayed by this module's test). The
//! invariants: neither [`decode`] nor [`encode`] panics, whatever the
//! input; text decoded from code can be encoded; and code made by `encode`
//! decodes to text that encodes to the same code. (Text decoded from code
//! need not come back as itself: `..-..` decodes to `É`, and `encode`
//! strips accents, as the seed's server did.)

use crate::code::{decode, encode};

/// One fuzz input: the bytes as text (lossily), decoded and encoded.
pub fn morse(data: &[u8]) {
    let input = String::from_utf8_lossy(data);
    if let Ok(text) = decode(&input) {
        let code = encode(&text)
            .unwrap_or_else(|error| panic!("{input:?} decoded to {text:?}, which fails: {error}"));
        let again = decode(&code).ok().and_then(|text| encode(&text).ok());
        assert_eq!(again.as_deref(), Some(code.as_str()), "{input:?}");
    }
    if let Ok(code) = encode(&input) {
        let text = decode(&code)
            .unwrap_or_else(|error| panic!("{input:?} encoded to {code:?}, which fails: {error}"));
        assert_eq!(
            encode(&text).ok().as_deref(),
            Some(code.as_str()),
            "{input:?}"
        );
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_committed_fuzz_inputs_pass() {
        nexo_testkit::replay("morse", super::morse);
    }
}
