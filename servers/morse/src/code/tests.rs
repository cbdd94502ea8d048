//! The table against the recommendation, the seed's examples, the edges of
//! both conversions, and the round-trip property.

use std::collections::HashSet;

use proptest::prelude::*;
use unicode_normalization::{UnicodeNormalization, char::is_combining_mark};

use super::*;

/// Codes copied from ITU-R M.1677-1, section 1.1, one by one.
const FROM_THE_RECOMMENDATION: [(char, &str); 20] = [
    ('A', ".-"),
    ('C', "-.-."),
    ('J', ".---"),
    ('Q', "--.-"),
    ('Y', "-.--"),
    ('Z', "--.."),
    ('1', ".----"),
    ('5', "....."),
    ('0', "-----"),
    ('.', ".-.-.-"),
    (',', "--..--"),
    (':', "---..."),
    ('?', "..--.."),
    ('\'', ".----."),
    ('-', "-....-"),
    ('/', "-..-."),
    (')', "-.--.-"),
    ('"', ".-..-."),
    ('=', "-...-"),
    ('@', ".--.-."),
];

#[test]
fn codes_match_the_recommendation() -> Result<(), EncodeError> {
    for (c, expected) in FROM_THE_RECOMMENDATION {
        assert_eq!(encode(&c.to_string())?, expected, "code of {c:?}");
    }
    assert_eq!(encode("(+×")?, "-.--. .-.-. -..-");
    Ok(())
}

#[test]
fn table_covers_letters_digits_and_itu_punctuation_only() {
    let chars: HashSet<char> = TABLE.iter().map(|&(c, _)| c).collect();
    let expected: HashSet<char> = ('A'..='Z')
        .chain('0'..='9')
        .chain(".,:?'-/()\"=+@".chars())
        .collect();
    assert_eq!(chars, expected);
    assert_eq!(chars.len(), TABLE.len(), "no character is listed twice");
}

#[test]
fn table_has_no_duplicate_codes() {
    let mut seen = HashSet::new();
    for (c, code) in TABLE.iter().chain([&ACCENTED_E]) {
        assert!(seen.insert(*code), "{code} listed again for {c:?}");
        assert!(
            !code.is_empty() && code.len() <= MAX_CODE_LEN,
            "{c:?}: {code}"
        );
    }
}

#[test]
fn every_table_entry_round_trips() -> Result<(), Box<dyn std::error::Error>> {
    for (c, code) in TABLE {
        assert_eq!(encode(&c.to_string())?, code);
        assert_eq!(decode(code)?, c.to_string());
    }
    Ok(())
}

#[test]
fn sos() -> Result<(), EncodeError> {
    assert_eq!(encode("SOS")?, "... --- ...");
    assert_eq!(encode("sos")?, "... --- ...");
    Ok(())
}

#[test]
fn seed_examples() -> Result<(), EncodeError> {
    assert_eq!(
        encode("SOS prueba")?,
        "... --- ... / .--. .-. ..- . -... .-"
    );
    assert_eq!(
        encode("Hola mundo otra vez")?,
        ".... --- .-.. .- / -- ..- -. -.. --- / --- - .-. .- / ...- . --.."
    );
    Ok(())
}

#[test]
fn accents_are_stripped() -> Result<(), Box<dyn std::error::Error>> {
    assert_eq!(encode("Ñandú")?, encode("NANDU")?);
    assert_eq!(decode(&encode("Ñandú")?)?, "NANDU");
    assert_eq!(decode(&encode("ÁÉÍÓÚ àèìòù Üü Çç")?)?, "AEIOU AEIOU UU CC");
    // Already decomposed input: the combining marks are dropped alone.
    assert_eq!(encode("n\u{303}e\u{301}")?, encode("ne")?);
    Ok(())
}

#[test]
fn whitespace_runs_are_one_word_break() -> Result<(), EncodeError> {
    assert_eq!(encode("  a \t\n b\u{a0}c  ")?, ".- / -... / -.-.");
    Ok(())
}

#[test]
fn empty_input_gives_empty_output() -> Result<(), Box<dyn std::error::Error>> {
    assert_eq!(encode("")?, "");
    assert_eq!(encode(" \t\n")?, "");
    assert_eq!(decode("")?, "");
    assert_eq!(decode(" / | ")?, "");
    Ok(())
}

#[test]
fn unencodable_characters_are_named_once_in_order() {
    let error = encode("a#b€ c# ñ€ ß!").err();
    // ß upper-cases to SS, which has a code.
    assert_eq!(
        error.as_ref().map(EncodeError::chars),
        Some(&['#', '€', '!'][..])
    );
    let message = error.map(|e| e.to_string()).unwrap_or_default();
    assert!(
        message.starts_with("cannot encode: '#', '€', '!' ("),
        "{message}"
    );
}

#[test]
fn signs_outside_the_recommendation_are_rejected() {
    for c in "!&;_$%[]{}<>*#\\".chars() {
        let error = encode(&format!("a{c}b")).err();
        assert_eq!(error.as_ref().map(EncodeError::chars), Some(&[c][..]));
    }
}

#[test]
fn invisible_characters_are_named_escaped() {
    let message = encode("a\u{200b}b").err().map(|e| e.to_string());
    assert!(
        message.is_some_and(|m| m.starts_with(r"cannot encode: '\u{200b}' (")),
        "a zero-width space must be visible in the message"
    );
}

#[test]
fn decode_accepts_slash_and_bar_between_words() -> Result<(), DecodeError> {
    assert_eq!(
        decode("... --- ... / .--. .-. ..- . -... .-")?,
        "SOS PRUEBA"
    );
    assert_eq!(
        decode("... --- ... | .--. .-. ..- . -... .-")?,
        "SOS PRUEBA"
    );
    assert_eq!(
        decode(".... --- .-.. .-/-- ..- -. -.. ---|--- - .-. .-")?,
        "HOLA MUNDO OTRA"
    );
    Ok(())
}

#[test]
fn decode_tolerates_extra_whitespace_and_separators() -> Result<(), DecodeError> {
    assert_eq!(decode("  ...   ---\t...  \n")?, "SOS");
    assert_eq!(decode(" / ... //  --- | / ... |")?, "S O S");
    assert_eq!(decode("...\n---\r\n...")?, "SOS");
    Ok(())
}

#[test]
fn decode_reads_the_accented_e() -> Result<(), DecodeError> {
    assert_eq!(decode(".-.-. ..-..")?, "+É");
    Ok(())
}

#[test]
fn unknown_sequences_are_named_once_in_order() {
    let error = decode("........ ... hola ........ .-.-.-.- ._. ...-.").err();
    assert_eq!(
        error.as_ref().map(DecodeError::sequences),
        Some(&["........", "hola", ".-.-.-.-", "._.", "...-."].map(String::from)[..])
    );
    let message = error.map(|e| e.to_string()).unwrap_or_default();
    assert!(
        message.starts_with("cannot decode: '........', 'hola', "),
        "{message}"
    );
}

/// What the round trip must give: upper case, accents dropped, × as X,
/// whitespace runs as one space, none at the ends. Written apart from the
/// encoder so that the two check each other.
fn canonical(text: &str) -> String {
    let words: Vec<String> = text
        .split_whitespace()
        .map(|word| {
            word.nfd()
                .filter(|c| !is_combining_mark(*c))
                .flat_map(char::to_uppercase)
                .map(|c| if c == '×' { 'X' } else { c })
                .collect()
        })
        .collect();
    words.join(" ")
}

/// Characters that encode, directly or once upper-cased and stripped.
const ENCODABLE: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789\
                         .,:?'-/()\"=+@×áéíóúÁÉÍÓÚàèìòùâêîôûäëïöüÄËÏÖÜñÑçÇãõåÅýÿšžčřěŠŽ";

fn encodable_text() -> impl Strategy<Value = String> {
    let chars: Vec<char> = ENCODABLE
        .chars()
        .chain([' ', ' ', ' ', '\t', '\n'])
        .collect();
    proptest::collection::vec(proptest::sample::select(chars), 0..60)
        .prop_map(|chars| chars.into_iter().collect())
}

proptest! {
    #[test]
    fn decode_undoes_encode(text in encodable_text()) {
        let code = encode(&text)?;
        prop_assert_eq!(decode(&code)?, canonical(&text));
    }

    #[test]
    fn encode_writes_only_dots_dashes_and_separators(text in encodable_text()) {
        let code = encode(&text)?;
        prop_assert!(code.chars().all(|c| matches!(c, '.' | '-' | ' ' | '/')));
        prop_assert!(!code.contains("  ") && code.trim() == code);
    }

    #[test]
    fn any_input_gives_a_result_or_an_error_naming_something(text in any::<String>()) {
        match encode(&text) {
            Ok(_) => {}
            Err(error) => prop_assert!(error.chars().iter().all(|c| text.contains(*c))),
        }
        match decode(&text) {
            Ok(_) => {}
            Err(error) => {
                prop_assert!(error.sequences().iter().all(|s| !s.is_empty() && text.contains(s)));
            }
        }
    }
}
