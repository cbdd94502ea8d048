//! The errors of the conversions. Each names every offending piece of the
//! input, so that the caller (often a language model) can fix all of them in
//! one go; the tools send the message back as a tool error.
//!
//! Written by hand rather than with `thiserror`: two structs, whose messages
//! are built from a list, are shorter this way.

use std::fmt;

/// Characters that have no International Morse code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodeError {
    chars: Vec<char>,
}

impl EncodeError {
    pub(crate) fn new(chars: Vec<char>) -> Self {
        Self { chars }
    }

    /// The characters without a code, once each, in order of appearance.
    pub fn chars(&self) -> &[char] {
        &self.chars
    }
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("cannot encode: ")?;
        write_quoted_list(f, self.chars.iter().map(|c| c.escape_debug()))?;
        f.write_str(
            " (International Morse code has letters, digits and . , : ? ' - / ( ) \" = + @ ×; \
             accents are dropped)",
        )
    }
}

impl std::error::Error for EncodeError {}

/// Sequences that are not the code of any character.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    sequences: Vec<String>,
}

impl DecodeError {
    pub(crate) fn new(sequences: Vec<String>) -> Self {
        Self { sequences }
    }

    /// The unknown sequences, once each, in order of appearance.
    pub fn sequences(&self) -> &[String] {
        &self.sequences
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("cannot decode: ")?;
        write_quoted_list(f, self.sequences.iter().map(|s| s.escape_debug()))?;
        f.write_str(
            " (a letter is 1 to 6 dots '.' and dashes '-'; letters are separated by spaces, \
             words by '/' or '|')",
        )
    }
}

impl std::error::Error for DecodeError {}

/// Writes `'a', 'b', 'c'`, with invisible and control characters escaped.
fn write_quoted_list<T: fmt::Display>(
    f: &mut fmt::Formatter<'_>,
    items: impl Iterator<Item = T>,
) -> fmt::Result {
    for (i, item) in items.enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "'{item}'")?;
    }
    Ok(())
}
