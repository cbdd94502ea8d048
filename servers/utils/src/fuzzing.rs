//! The calculator under a fuzzer (`fuzz/fuzz_targets/calc.rs` calls
//! [`calc`]; the committed corpus is replayed by this module's test). The
//! invariants: [`evaluate`] never panics, whatever the input; a result is
//! always finite; an error always says something; and on the part of the
//! language whose arithmetic is exact in an `f64` (integers with `+`, `-`,
//! `*`, unary signs and parentheses, every value within 2^53) the result
//! equals an exact evaluation in 128-bit integers. That part includes `^`
//! (and `**`) with an exponent whose result is an integer: right-grouped,
//! binding tighter than the signs before it.

use crate::calc::{MAX_DEPTH, evaluate};

/// The largest magnitude up to which every integer is exact in an f64.
const EXACT: i128 = 1 << 53;

/// One fuzz input: the bytes as text (lossily), evaluated and checked.
pub fn calc(data: &[u8]) {
    let expression = String::from_utf8_lossy(data);
    match evaluate(&expression) {
        Ok(value) => assert!(value.is_finite(), "{expression:?} gave {value}"),
        Err(error) => assert!(!error.to_string().is_empty(), "{expression:?}"),
    }
    if let Some(exact) = Exact::evaluate(&expression) {
        let value = evaluate(&expression);
        assert!(
            matches!(value, Ok(value) if value == exact as f64),
            "{expression:?} is exactly {exact}, the calculator says {value:?}"
        );
    }
}

/// A reference evaluation of the exact part of the language, in `i128`
/// (written from the grammar in the calculator's documentation):
/// `None` for anything outside it (another character, a malformed
/// expression, a value beyond 2^53, nesting past the calculator's limit).
struct Exact<'a> {
    rest: &'a [u8],
    depth: usize,
}

impl Exact<'_> {
    fn evaluate(text: &str) -> Option<i128> {
        if text.trim().is_empty() || text.chars().count() > crate::calc::MAX_LENGTH {
            return None;
        }
        let mut parser = Exact {
            rest: text.as_bytes(),
            depth: 0,
        };
        let value = parser.sum()?;
        parser.skip_spaces();
        parser.rest.is_empty().then_some(value)
    }

    fn skip_spaces(&mut self) {
        while let [b' ', rest @ ..] = self.rest {
            self.rest = rest;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_spaces();
        self.rest.first().copied()
    }

    fn bounded(value: i128) -> Option<i128> {
        (value.abs() <= EXACT).then_some(value)
    }

    fn sum(&mut self) -> Option<i128> {
        let mut value = self.product()?;
        loop {
            match self.peek() {
                Some(b'+') => {
                    self.rest = &self.rest[1..];
                    value = Self::bounded(value + self.product()?)?;
                }
                Some(b'-') => {
                    self.rest = &self.rest[1..];
                    value = Self::bounded(value - self.product()?)?;
                }
                _ => return Some(value),
            }
        }
    }

    fn product(&mut self) -> Option<i128> {
        let mut value = self.signed()?;
        while self.peek() == Some(b'*') && !self.rest.starts_with(b"**") {
            self.rest = &self.rest[1..];
            value = Self::bounded(value.checked_mul(self.signed()?)?)?;
        }
        Some(value)
    }

    /// Signs bind looser than a power: `-2^2` is `-(2^2)`.
    fn signed(&mut self) -> Option<i128> {
        match self.peek()? {
            b'-' => {
                self.rest = &self.rest[1..];
                Some(-self.signed()?)
            }
            b'+' => {
                self.rest = &self.rest[1..];
                self.signed()
            }
            _ => self.power(),
        }
    }

    /// `atom (('^' | '**') signed-power)?`: a power groups to the right and
    /// the signs after its operator belong to the whole exponent, so
    /// `2^3^2` is `2^(3^2)` and `2^-1` (a fraction) is outside the exact
    /// part, as is any negative exponent but of 1 and -1.
    fn power(&mut self) -> Option<i128> {
        let base = self.atom()?;
        self.skip_spaces();
        if let Some(rest) = self
            .rest
            .strip_prefix(b"^")
            .or_else(|| self.rest.strip_prefix(b"**"))
        {
            self.rest = rest;
            let exponent = self.signed_power()?;
            return Self::bounded(Self::raise(base, exponent)?);
        }
        Some(base)
    }

    /// The exponent after `^`: signs, then a power.
    fn signed_power(&mut self) -> Option<i128> {
        match self.peek()? {
            b'-' => {
                self.rest = &self.rest[1..];
                Some(-self.signed_power()?)
            }
            b'+' => {
                self.rest = &self.rest[1..];
                self.signed_power()
            }
            _ => self.power(),
        }
    }

    /// `base` to the power `exponent`, when that is an integer.
    fn raise(base: i128, exponent: i128) -> Option<i128> {
        match (base, exponent) {
            (1, _) => Some(1),
            (-1, _) => Some(if exponent % 2 == 0 { 1 } else { -1 }),
            (_, 0) => Some(1),
            (0, 1..) => Some(0),
            (_, ..0) => None,
            _ => base.checked_pow(u32::try_from(exponent).ok()?),
        }
    }

    fn atom(&mut self) -> Option<i128> {
        match self.peek()? {
            b'(' => {
                self.depth += 1;
                if self.depth > MAX_DEPTH {
                    return None;
                }
                self.rest = &self.rest[1..];
                let value = self.sum()?;
                if self.peek() != Some(b')') {
                    return None;
                }
                self.rest = &self.rest[1..];
                self.depth -= 1;
                Some(value)
            }
            b'0'..=b'9' => {
                let digits = self.rest.iter().take_while(|b| b.is_ascii_digit()).count();
                let (number, rest) = self.rest.split_at(digits);
                // A decimal point or an exponent is outside the exact part.
                if matches!(rest.first(), Some(b'.' | b'e' | b'E')) || digits > 17 {
                    return None;
                }
                self.rest = rest;
                let value = std::str::from_utf8(number).ok()?.parse::<i128>().ok()?;
                Self::bounded(value)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_committed_fuzz_inputs_pass() {
        nexo_testkit::replay("calc", super::calc);
    }

    #[test]
    fn the_reference_agrees_on_simple_sums() {
        assert_eq!(super::Exact::evaluate("2 * (3 + 4) - -1"), Some(15));
        assert_eq!(super::Exact::evaluate("2 ** 3"), Some(8));
        assert_eq!(super::Exact::evaluate("2 ^ 3 ^ 2"), Some(512));
        assert_eq!(super::Exact::evaluate("-2 ^ 2"), Some(-4));
        assert_eq!(super::Exact::evaluate("2 * 3 ^ 2"), Some(18));
        assert_eq!(super::Exact::evaluate("(-2) ^ 3"), Some(-8));
        assert_eq!(super::Exact::evaluate("2 ^ -1"), None);
        assert_eq!(super::Exact::evaluate("(-1) ^ -3"), Some(-1));
        assert_eq!(super::Exact::evaluate("1.5 + 1"), None);
        super::calc(b"2 * (3 + 4) - -1");
    }
}
