//! International Morse code as Recommendation ITU-R M.1677-1 (10/2009) defines
//! it, and the two conversions the tools expose: [`encode`] turns text into
//! code, [`decode`] turns code back into text. Pure functions over strings;
//! this module knows nothing of MCP.
//!
//! The recommendation's character set is kept strictly: letters A-Z, figures
//! 0-9, and the punctuation `. , : ? ' - / ( ) " = + @` (section 1.1). The
//! multiplication sign `×` is sent as the letter X (section 1.1.3), so it
//! encodes to `-..-` and decodes as `X`. The accented `É` (`..-..`) is decoded
//! but never produced, since the tools strip accents before encoding. Signs
//! that other Morse tables add (`! & ; _ $`) are not in the recommendation,
//! and a strict decoder on the other end would not know them, so they are
//! rejected like any other character without a code. Procedural signals
//! (error `........`, understood, wait, end of work, starting signal) are not
//! text, and decoding them is an error.

use unicode_normalization::char::{decompose_canonical, is_combining_mark};

use crate::error::{DecodeError, EncodeError};

/// Every character [`encode`] produces a signal for, upper case, with its code
/// (ITU-R M.1677-1, part I, section 1.1). Each code appears once.
pub(crate) const TABLE: [(char, &str); 49] = [
    // 1.1.1 Letters
    ('A', ".-"),
    ('B', "-..."),
    ('C', "-.-."),
    ('D', "-.."),
    ('E', "."),
    ('F', "..-."),
    ('G', "--."),
    ('H', "...."),
    ('I', ".."),
    ('J', ".---"),
    ('K', "-.-"),
    ('L', ".-.."),
    ('M', "--"),
    ('N', "-."),
    ('O', "---"),
    ('P', ".--."),
    ('Q', "--.-"),
    ('R', ".-."),
    ('S', "..."),
    ('T', "-"),
    ('U', "..-"),
    ('V', "...-"),
    ('W', ".--"),
    ('X', "-..-"),
    ('Y', "-.--"),
    ('Z', "--.."),
    // 1.1.2 Figures
    ('1', ".----"),
    ('2', "..---"),
    ('3', "...--"),
    ('4', "....-"),
    ('5', "....."),
    ('6', "-...."),
    ('7', "--..."),
    ('8', "---.."),
    ('9', "----."),
    ('0', "-----"),
    // 1.1.3 Punctuation marks and miscellaneous signs
    ('.', ".-.-.-"),
    (',', "--..--"),
    (':', "---..."),
    ('?', "..--.."),
    ('\'', ".----."),
    ('-', "-....-"),
    ('/', "-..-."),
    ('(', "-.--."),
    (')', "-.--.-"),
    ('"', ".-..-."),
    ('=', "-...-"),
    ('+', ".-.-."),
    ('@', ".--.-."),
];

/// The accented E of section 1.1.1, decoded but never encoded.
pub(crate) const ACCENTED_E: (char, &str) = ('É', "..-..");

/// The multiplication sign, sent as the letter X (section 1.1.3).
const MULTIPLICATION_SIGN: char = '×';

/// The longest code in the table; longer sequences are unknown.
const MAX_CODE_LEN: usize = 6;

/// Code of each ASCII character, by code point; `""` where there is none.
const ASCII_CODES: [&str; 128] = {
    let mut codes = [""; 128];
    let mut i = 0;
    while i < TABLE.len() {
        let (letter, code) = TABLE[i];
        assert!(letter.is_ascii(), "the table holds ASCII characters only");
        assert!(
            codes[letter as usize].is_empty(),
            "a character is listed twice"
        );
        codes[letter as usize] = code;
        i += 1;
    }
    codes
};

/// Character of each code, indexed by its place in the binary tree of
/// dots and dashes (see [`tree_index`]); `'\0'` where there is none.
/// Building it at compile time also proves that no code is listed twice.
const LETTERS_BY_CODE: [char; 2 << MAX_CODE_LEN] = {
    let mut letters = ['\0'; 2 << MAX_CODE_LEN];
    let mut i = 0;
    while i <= TABLE.len() {
        let (letter, code) = if i < TABLE.len() {
            TABLE[i]
        } else {
            ACCENTED_E
        };
        let index = tree_index(code.as_bytes());
        assert!(letters[index] == '\0', "a code is listed twice");
        letters[index] = letter;
        i += 1;
    }
    letters
};

/// Place of a code in the binary tree whose root is 1, where a dot goes to
/// `2n` and a dash to `2n + 1`. Distinct codes get distinct places, and a code
/// of `n` signals lands in `2^n..2^(n+1)`.
const fn tree_index(code: &[u8]) -> usize {
    let mut index = 1;
    let mut i = 0;
    while i < code.len() {
        assert!(
            code[i] == b'.' || code[i] == b'-',
            "codes are dots and dashes"
        );
        index = index * 2 + (code[i] == b'-') as usize;
        i += 1;
    }
    index
}

/// The code of one upper-case character, if the recommendation has one.
fn code_of(c: char) -> Option<&'static str> {
    if c == MULTIPLICATION_SIGN {
        return code_of('X');
    }
    let code = *ASCII_CODES.get(usize::try_from(u32::from(c)).ok()?)?;
    (!code.is_empty()).then_some(code)
}

/// The character a sequence of dots and dashes stands for, if any.
fn letter_of(code: &str) -> Option<char> {
    if code.is_empty() || code.len() > MAX_CODE_LEN || !code.bytes().all(|b| b == b'.' || b == b'-')
    {
        return None;
    }
    let letter = *LETTERS_BY_CODE.get(tree_index(code.as_bytes()))?;
    (letter != '\0').then_some(letter)
}

/// Writes the codes of one input character to `out`, each preceded by what
/// separates it from the code before. The character is upper-cased and its
/// accents dropped first (canonical decomposition, combining marks removed),
/// so `ñ` is sent as N; a lone combining mark sends nothing. Returns false if
/// some part of it has no code.
fn push_codes(c: char, out: &mut String, separator: &mut &'static str) -> bool {
    let mut push = |code: &str| {
        out.push_str(separator);
        out.push_str(code);
        *separator = " ";
    };
    if c.is_ascii() {
        return code_of(c.to_ascii_uppercase()).map(&mut push).is_some();
    }
    if let Some(code) = code_of(c) {
        push(code);
        return true;
    }
    let mut encodable = true;
    decompose_canonical(c, |part| {
        if is_combining_mark(part) {
            return;
        }
        for upper in part.to_uppercase() {
            match code_of(upper) {
                Some(code) => push(code),
                None => encodable = false,
            }
        }
    });
    encodable
}

/// Encodes text as International Morse code.
///
/// Letters are upper-cased and stripped of accents (`Ñandú` is sent as
/// `NANDU`). The codes of a word's characters are separated by one space,
/// words by ` / `. Any run of whitespace is one word break; whitespace at
/// either end is ignored, and empty input gives an empty string.
///
/// # Errors
///
/// [`EncodeError`] names every character without a code, once each, in the
/// order they first appear.
pub fn encode(text: &str) -> Result<String, EncodeError> {
    let mut out = String::with_capacity(text.len() * 4);
    let mut unencodable = Vec::new();
    for word in text.split_whitespace() {
        let mut separator = if out.is_empty() { "" } else { " / " };
        for c in word.chars() {
            if !push_codes(c, &mut out, &mut separator) && !unencodable.contains(&c) {
                unencodable.push(c);
            }
        }
    }
    if unencodable.is_empty() {
        Ok(out)
    } else {
        Err(EncodeError::new(unencodable))
    }
}

/// Decodes International Morse code into upper-case text.
///
/// Letters are separated by whitespace (any amount, tabs and newlines
/// included), words by `/` or `|`, with or without spaces around them.
/// Repeated separators make one word break, separators and whitespace at
/// either end are ignored, and words come out joined by single spaces. Only
/// `.` and `-` make signals: look-alikes such as `_`, `·` or `—` are not
/// accepted, so that a typing mistake is reported rather than guessed at.
///
/// # Errors
///
/// [`DecodeError`] names every sequence that is not a character's code, once
/// each, in the order they first appear.
pub fn decode(code: &str) -> Result<String, DecodeError> {
    let mut out = String::with_capacity(code.len() / 2);
    let mut unknown: Vec<&str> = Vec::new();
    let mut word_break = false;
    for chunk in code.split_whitespace() {
        for (i, signal) in chunk.split(['/', '|']).enumerate() {
            word_break |= i > 0;
            if signal.is_empty() {
                continue;
            }
            match letter_of(signal) {
                Some(letter) => {
                    if word_break && !out.is_empty() {
                        out.push(' ');
                    }
                    word_break = false;
                    out.push(letter);
                }
                None if !unknown.contains(&signal) => unknown.push(signal),
                None => {}
            }
        }
    }
    if unknown.is_empty() {
        Ok(out)
    } else {
        Err(DecodeError::new(
            unknown.into_iter().map(str::to_owned).collect(),
        ))
    }
}

#[cfg(test)]
mod tests;
