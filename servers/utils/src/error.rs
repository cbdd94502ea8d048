//! The errors of the tools that can fail: [`CalcError`] for `calc` and
//! [`TimeError`] for `time`. The tools send the message back as a tool error,
//! often to a language model, so each says what is wrong, where (a 1-based
//! character position in the expression) and, where it helps, what to write
//! instead.

use thiserror::Error;

use crate::calc::{MAX_DEPTH, MAX_LENGTH};

/// Why an expression could not be evaluated. Positions count characters
/// (not bytes) from 1.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CalcError {
    #[error("the expression is empty; write something like `2 * (3 + 4)`")]
    Empty,

    #[error("the expression is {length} characters long; the limit is {MAX_LENGTH}")]
    TooLong { length: usize },

    #[error(
        "parentheses and function calls nest deeper than {MAX_DEPTH} levels \
         (the `(` at position {position})"
    )]
    TooDeep { position: usize },

    #[error(
        "unexpected character `{found}` at position {position} (operators are + - * / % ^, \
         with parentheses, commas between function arguments, and `.` in decimals)"
    )]
    UnexpectedChar { found: char, position: usize },

    #[error("malformed number `{text}` at position {position}")]
    BadNumber { text: String, position: usize },

    #[error("the number `{text}` at position {position} is too large")]
    NumberTooLarge { text: String, position: usize },

    #[error("expected {expected} at position {position}, found {found}")]
    Expected {
        expected: &'static str,
        found: String,
        position: usize,
    },

    #[error("the `(` at position {open} is never closed")]
    Unclosed { open: usize },

    #[error("the `)` at position {position} has no matching `(`")]
    Unmatched { position: usize },

    #[error(
        "unknown name `{name}` at position {position} (constants: pi, e; \
         functions: abs, ceil, floor, max, min, round, sqrt)"
    )]
    UnknownName { name: String, position: usize },

    #[error("`{name}` at position {position} is a function; call it as `{name}(...)`")]
    MissingCall { name: String, position: usize },

    #[error("`{name}` at position {position} is a constant, not a function")]
    NotAFunction { name: String, position: usize },

    #[error("`{name}` at position {position} takes {expected}, but was given {given}")]
    Arity {
        name: &'static str,
        expected: &'static str,
        given: usize,
        position: usize,
    },

    #[error("division by zero (the `{operator}` at position {position})")]
    DivisionByZero { operator: char, position: usize },

    #[error("zero to a negative power is undefined (the `^` at position {position})")]
    ZeroToNegativePower { position: usize },

    #[error(
        "a negative number to a fractional power has no real result \
         (the `^` at position {position})"
    )]
    NoRealPower { position: usize },

    #[error(
        "the square root of a negative number ({value}) has no real result \
         (the `sqrt` at position {position})"
    )]
    NegativeSqrt { value: String, position: usize },

    #[error(
        "overflow: the result is too large for a 64-bit float (the `{operator}` at \
         position {position})"
    )]
    Overflow {
        operator: &'static str,
        position: usize,
    },
}

/// Why `time` could not tell the time.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TimeError {
    #[error(
        "unknown time zone `{name}`: give an IANA time zone name such as `Europe/Madrid`, \
         `America/New_York` or `UTC`"
    )]
    UnknownZone { name: String },
}
