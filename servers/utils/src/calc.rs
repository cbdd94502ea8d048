//! The safe arithmetic evaluator behind `calc`: [`evaluate`] reads an
//! expression and computes it in 64-bit floating point, [`format_number`]
//! writes a result the same way every time. Nothing is ever executed: the
//! input is only tokenized and parsed. This module knows nothing of MCP.
//!
//! The language: numbers (`12`, `0.5`, `.5`, `2.`, `1e-3`), the constants
//! `pi` and `e`, the operators `+ - * / % ^` (with `**` as another spelling
//! of `^`), unary `-` and `+`, parentheses, and the functions `sqrt`, `abs`,
//! `round` (halves away from zero), `floor`, `ceil` of one argument and
//! `min`, `max` of one or more. Names ignore ASCII case. Precedence, from
//! loosest: `+ -`, then `* / %`, then unary signs, then `^`, which groups to
//! the right, so `-2^2` is -4, `2^3^2` is 512 and `2^-1` is 0.5. `%` is the
//! remainder with the sign of the dividend (as in C and JavaScript):
//! `-7 % 3` is -1.
//!
//! Bounds: at most [`MAX_LENGTH`] characters, parentheses and calls nested at
//! most [`MAX_DEPTH`] deep. Only nesting recurses (sign runs and power chains
//! are loops), so the stack the parser uses is bounded by [`MAX_DEPTH`]
//! whatever the input.
//!
//! Every failure is a [`CalcError`] pointing at a 1-based character position.
//! Syntax is checked over the whole input before arithmetic faults are
//! reported: the first fault (a division by zero, an overflow to infinity, a
//! square root of a negative number...) is remembered, the operand becomes
//! NaN, and parsing goes on, so `1/0 +` reports the missing operand.
//!
//! Written by hand: the crates that evaluate expressions (meval, evalexpr,
//! fasteval, exmex) either are no longer maintained, are languages of their
//! own (variables, strings, assignment, user functions), or do not bound
//! nesting or report positions. This grammar is a page of code.

use std::f64::consts::{E, PI};

use crate::error::CalcError;

/// The longest expression accepted, in characters.
pub const MAX_LENGTH: usize = 1000;

/// The deepest nesting of parentheses and function calls accepted.
pub const MAX_DEPTH: usize = 64;

/// Significant digits a non-integer result is rounded to (as spreadsheets
/// do), so that `0.1 + 0.2` shows as `0.3`.
const SIGNIFICANT_DIGITS: usize = 15;

/// The largest magnitude up to which every integer is exact in an f64.
const EXACT_INTEGERS: f64 = 9_007_199_254_740_992.0; // 2^53

/// Evaluates an arithmetic expression. The result is always finite.
///
/// # Errors
///
/// A [`CalcError`] for input that is empty, too long, too deeply nested or
/// malformed, and for arithmetic without a finite real result.
pub fn evaluate(expression: &str) -> Result<f64, CalcError> {
    let length = expression.chars().count();
    if length > MAX_LENGTH {
        return Err(CalcError::TooLong { length });
    }
    if expression.trim().is_empty() {
        return Err(CalcError::Empty);
    }
    let mut parser = Parser::new(lex(expression)?);
    let value = parser.expression()?;
    parser.finish()?;
    match parser.fault {
        Some(fault) => Err(fault),
        None => Ok(value),
    }
}

/// Writes a number the way `calc` reports it, the same way every time:
/// integers up to 2^53 exactly and without `.0`; other values rounded to 15
/// significant digits and written in the shortest form that reads back to
/// the same value, in plain decimals from 1e-6 to 1e15 and in scientific
/// notation (`1.5e-7`, `1e20`) outside. Zero is `0`, never `-0`. Every
/// output is also a valid JSON number and a valid `calc` expression.
pub fn format_number(value: f64) -> String {
    if value == 0.0 {
        return "0".to_owned();
    }
    if value.fract() == 0.0 && value.abs() <= EXACT_INTEGERS {
        return format!("{}", value as i64);
    }
    // Rounding the very largest values up would overflow: keep them as they are.
    let rounded = format!("{value:.prec$e}", prec = SIGNIFICANT_DIGITS - 1)
        .parse::<f64>()
        .ok()
        .filter(|rounded| rounded.is_finite())
        .unwrap_or(value);
    let magnitude = rounded.abs();
    // The same rule as for exact values, so that a result reads back unchanged.
    if rounded.fract() == 0.0 && magnitude <= EXACT_INTEGERS {
        format!("{}", rounded as i64)
    } else if (1e-6..1e15).contains(&magnitude) {
        format!("{rounded}")
    } else {
        format!("{rounded:e}")
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Number(f64),
    Name,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Caret,
    Open,
    Close,
    Comma,
    End,
}

#[derive(Debug, Clone, Copy)]
struct Token<'a> {
    kind: Kind,
    /// The characters of the token as written.
    text: &'a str,
    /// 1-based character position of its first character.
    position: usize,
}

impl Token<'_> {
    /// How an error message names what it found.
    fn describe(&self) -> String {
        match self.kind {
            Kind::End => "the end of the expression".to_owned(),
            Kind::Number(_) => format!("the number `{}`", self.text),
            Kind::Name => format!("the name `{}`", self.text),
            _ => format!("`{}`", self.text),
        }
    }

    /// The operator as error messages write it.
    fn operator(&self) -> &'static str {
        match self.kind {
            Kind::Plus => "+",
            Kind::Minus => "-",
            Kind::Star => "*",
            Kind::Slash => "/",
            Kind::Percent => "%",
            _ => "^",
        }
    }
}

/// Splits the expression into tokens, ending with [`Kind::End`].
fn lex(input: &str) -> Result<Vec<Token<'_>>, CalcError> {
    let chars: Vec<(usize, char)> = input.char_indices().collect();
    let byte_at = |index: usize| chars.get(index).map_or(input.len(), |&(byte, _)| byte);
    let char_at = |index: usize| chars.get(index).map(|&(_, c)| c);
    let mut tokens = Vec::new();
    let mut i = 0;
    while let Some(c) = char_at(i) {
        let start = i;
        i += 1;
        let kind = match c {
            c if c.is_whitespace() => continue,
            '0'..='9' | '.' => {
                while char_at(i).is_some_and(|c| c.is_ascii_digit() || c == '.') {
                    i += 1;
                }
                // An exponent only if digits follow: `2e` is a number and a name.
                let digit_at = |index| char_at(index).is_some_and(|c: char| c.is_ascii_digit());
                if matches!(char_at(i), Some('e' | 'E')) {
                    let sign = usize::from(matches!(char_at(i + 1), Some('+' | '-')));
                    if digit_at(i + 1 + sign) {
                        i += 1 + sign;
                        while digit_at(i) {
                            i += 1;
                        }
                    }
                }
                let text = &input[byte_at(start)..byte_at(i)];
                let position = start + 1;
                let mantissa = text.split(['e', 'E']).next().unwrap_or(text);
                if mantissa == "." || mantissa.matches('.').count() > 1 {
                    return Err(CalcError::BadNumber {
                        text: text.to_owned(),
                        position,
                    });
                }
                match text.parse::<f64>() {
                    Ok(value) if value.is_finite() => Kind::Number(value),
                    Ok(_) => {
                        return Err(CalcError::NumberTooLarge {
                            text: text.to_owned(),
                            position,
                        });
                    }
                    Err(_) => {
                        return Err(CalcError::BadNumber {
                            text: text.to_owned(),
                            position,
                        });
                    }
                }
            }
            c if c.is_alphabetic() || c == '_' => {
                while char_at(i).is_some_and(|c| c.is_alphanumeric() || c == '_') {
                    i += 1;
                }
                Kind::Name
            }
            '+' => Kind::Plus,
            '-' => Kind::Minus,
            '*' if char_at(i) == Some('*') => {
                i += 1;
                Kind::Caret
            }
            '*' => Kind::Star,
            '/' => Kind::Slash,
            '%' => Kind::Percent,
            '^' => Kind::Caret,
            '(' => Kind::Open,
            ')' => Kind::Close,
            ',' => Kind::Comma,
            found => {
                return Err(CalcError::UnexpectedChar {
                    found,
                    position: start + 1,
                });
            }
        };
        tokens.push(Token {
            kind,
            text: &input[byte_at(start)..byte_at(i)],
            position: start + 1,
        });
    }
    tokens.push(Token {
        kind: Kind::End,
        text: "",
        position: chars.len() + 1,
    });
    Ok(tokens)
}

/// The functions, by lower-case name.
#[derive(Debug, Clone, Copy)]
enum Function {
    Sqrt,
    Abs,
    Round,
    Floor,
    Ceil,
    Min,
    Max,
}

const FUNCTIONS: [(&str, Function); 7] = [
    ("sqrt", Function::Sqrt),
    ("abs", Function::Abs),
    ("round", Function::Round),
    ("floor", Function::Floor),
    ("ceil", Function::Ceil),
    ("min", Function::Min),
    ("max", Function::Max),
];

const CONSTANTS: [(&str, f64); 2] = [("pi", PI), ("e", E)];

fn lookup<T: Copy>(table: &[(&'static str, T)], name: &str) -> Option<(&'static str, T)> {
    table
        .iter()
        .copied()
        .find(|(known, _)| known.eq_ignore_ascii_case(name))
}

/// A recursive-descent parser that computes as it goes.
struct Parser<'a> {
    tokens: Vec<Token<'a>>,
    next: usize,
    depth: usize,
    /// The first arithmetic fault met; reported if the syntax is sound.
    fault: Option<CalcError>,
}

impl<'a> Parser<'a> {
    fn new(tokens: Vec<Token<'a>>) -> Self {
        Self {
            tokens,
            next: 0,
            depth: 0,
            fault: None,
        }
    }

    /// The next token; past the end, the end.
    fn peek(&self) -> Token<'a> {
        let end = Token {
            kind: Kind::End,
            text: "",
            position: 1,
        };
        self.tokens
            .get(self.next)
            .or(self.tokens.last())
            .copied()
            .unwrap_or(end)
    }

    fn advance(&mut self) -> Token<'a> {
        let token = self.peek();
        if self.next < self.tokens.len() {
            self.next += 1;
        }
        token
    }

    /// Checks that the whole input was read.
    fn finish(&mut self) -> Result<(), CalcError> {
        let token = self.peek();
        match token.kind {
            Kind::End => Ok(()),
            Kind::Close => Err(CalcError::Unmatched {
                position: token.position,
            }),
            _ => Err(expected("an operator or the end of the expression", token)),
        }
    }

    /// `term (('+' | '-') term)*`
    fn expression(&mut self) -> Result<f64, CalcError> {
        let mut value = self.term()?;
        while let operator @ Token {
            kind: Kind::Plus | Kind::Minus,
            ..
        } = self.peek()
        {
            self.advance();
            let right = self.term()?;
            value = self.apply(operator, value, right);
        }
        Ok(value)
    }

    /// `signed (('*' | '/' | '%') signed)*`
    fn term(&mut self) -> Result<f64, CalcError> {
        let mut value = self.signed()?;
        while let operator @ Token {
            kind: Kind::Star | Kind::Slash | Kind::Percent,
            ..
        } = self.peek()
        {
            self.advance();
            let right = self.signed()?;
            value = self.apply(operator, value, right);
        }
        Ok(value)
    }

    /// `('-' | '+')* power`
    fn signed(&mut self) -> Result<f64, CalcError> {
        let negative = self.signs();
        let value = self.power()?;
        Ok(if negative { -value } else { value })
    }

    /// Reads a run of signs; true if they make a minus.
    fn signs(&mut self) -> bool {
        let mut negative = false;
        loop {
            match self.peek().kind {
                Kind::Minus => negative = !negative,
                Kind::Plus => {}
                _ => return negative,
            }
            self.advance();
        }
    }

    /// `primary ('^' ('-' | '+')* primary)*`, grouped to the right: the
    /// signs after a `^` apply to everything to their right, so `2^-3^2` is
    /// `2^(-(3^2))`.
    fn power(&mut self) -> Result<f64, CalcError> {
        let base = self.primary()?;
        let mut exponents = Vec::new();
        while let caret @ Token {
            kind: Kind::Caret, ..
        } = self.peek()
        {
            self.advance();
            let negative = self.signs();
            exponents.push((caret, negative, self.primary()?));
        }
        let mut exponent: Option<(Token<'a>, f64)> = None;
        for &(caret, negative, operand) in exponents.iter().rev() {
            let value = match exponent {
                Some((next_caret, power)) => self.apply(next_caret, operand, power),
                None => operand,
            };
            exponent = Some((caret, if negative { -value } else { value }));
        }
        Ok(match exponent {
            Some((caret, power)) => self.apply(caret, base, power),
            None => base,
        })
    }

    /// A number, a constant, a function call or a parenthesized expression.
    fn primary(&mut self) -> Result<f64, CalcError> {
        let token = self.advance();
        match token.kind {
            Kind::Number(value) => Ok(value),
            Kind::Open => {
                self.enter(token)?;
                let value = self.expression()?;
                self.close(token)?;
                self.depth -= 1;
                Ok(value)
            }
            Kind::Name if self.peek().kind == Kind::Open => {
                let open = self.advance();
                self.enter(open)?;
                let arguments = self.arguments(open)?;
                self.depth -= 1;
                self.call(token, &arguments)
            }
            Kind::Name => {
                if let Some((_, value)) = lookup(&CONSTANTS, token.text) {
                    Ok(value)
                } else if lookup(&FUNCTIONS, token.text).is_some() {
                    Err(CalcError::MissingCall {
                        name: token.text.to_owned(),
                        position: token.position,
                    })
                } else {
                    Err(unknown_name(token))
                }
            }
            Kind::Close if self.depth == 0 => Err(CalcError::Unmatched {
                position: token.position,
            }),
            _ => Err(expected("a number, a name or `(`", token)),
        }
    }

    /// One level deeper, at the `(` `open`.
    fn enter(&mut self, open: Token<'_>) -> Result<(), CalcError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(CalcError::TooDeep {
                position: open.position,
            });
        }
        Ok(())
    }

    /// Reads the `)` that closes `open`.
    fn close(&mut self, open: Token<'_>) -> Result<(), CalcError> {
        let token = self.advance();
        match token.kind {
            Kind::Close => Ok(()),
            Kind::End => Err(CalcError::Unclosed {
                open: open.position,
            }),
            _ => Err(expected("an operator or `)`", token)),
        }
    }

    /// `')' | expression (',' expression)* ')'`, after the `(` `open`.
    fn arguments(&mut self, open: Token<'_>) -> Result<Vec<f64>, CalcError> {
        let mut arguments = Vec::new();
        if self.peek().kind == Kind::Close {
            self.advance();
            return Ok(arguments);
        }
        loop {
            arguments.push(self.expression()?);
            let token = self.advance();
            match token.kind {
                Kind::Comma => {}
                Kind::Close => return Ok(arguments),
                Kind::End => {
                    return Err(CalcError::Unclosed {
                        open: open.position,
                    });
                }
                _ => return Err(expected("an operator, `,` or `)`", token)),
            }
        }
    }

    /// Calls the function `name` (a name token) with `arguments`.
    fn call(&mut self, name: Token<'_>, arguments: &[f64]) -> Result<f64, CalcError> {
        let Some((canonical, function)) = lookup(&FUNCTIONS, name.text) else {
            return Err(if lookup(&CONSTANTS, name.text).is_some() {
                CalcError::NotAFunction {
                    name: name.text.to_owned(),
                    position: name.position,
                }
            } else {
                unknown_name(name)
            });
        };
        let arity_error = |expected| CalcError::Arity {
            name: canonical,
            expected,
            given: arguments.len(),
            position: name.position,
        };
        let value = match (function, arguments) {
            (Function::Min | Function::Max, []) => return Err(arity_error("at least 1 argument")),
            (Function::Min, _) => arguments.iter().copied().fold(f64::INFINITY, f64::min),
            (Function::Max, _) => arguments.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            (_, &[x]) if x.is_nan() => x,
            (Function::Sqrt, &[x]) if x < 0.0 => {
                return Ok(self.fault(CalcError::NegativeSqrt {
                    value: format_number(x),
                    position: name.position,
                }));
            }
            (Function::Sqrt, &[x]) => x.sqrt(),
            (Function::Abs, &[x]) => x.abs(),
            (Function::Round, &[x]) => x.round(),
            (Function::Floor, &[x]) => x.floor(),
            (Function::Ceil, &[x]) => x.ceil(),
            (_, _) => return Err(arity_error("exactly 1 argument")),
        };
        // min and max skip NaN; a faulted argument must stay faulted.
        Ok(if arguments.iter().any(|x| x.is_nan()) {
            f64::NAN
        } else {
            value
        })
    }

    /// Applies a binary operator, remembering the first arithmetic fault.
    /// A NaN operand comes from an earlier fault and gives NaN quietly.
    fn apply(&mut self, operator: Token<'_>, left: f64, right: f64) -> f64 {
        if left.is_nan() || right.is_nan() {
            return f64::NAN;
        }
        let position = operator.position;
        let result = match operator.kind {
            Kind::Plus => left + right,
            Kind::Minus => left - right,
            Kind::Star => left * right,
            Kind::Slash | Kind::Percent if right == 0.0 => {
                let operator = if operator.kind == Kind::Slash {
                    '/'
                } else {
                    '%'
                };
                return self.fault(CalcError::DivisionByZero { operator, position });
            }
            Kind::Slash => left / right,
            Kind::Percent => left % right,
            _ if left == 0.0 && right < 0.0 => {
                return self.fault(CalcError::ZeroToNegativePower { position });
            }
            _ => left.powf(right),
        };
        if result.is_nan() {
            self.fault(CalcError::NoRealPower { position })
        } else if result.is_infinite() {
            self.fault(CalcError::Overflow {
                operator: operator.operator(),
                position,
            })
        } else {
            result
        }
    }

    /// Remembers `fault` if it is the first, and gives the NaN that stands
    /// for the faulted value.
    fn fault(&mut self, fault: CalcError) -> f64 {
        self.fault.get_or_insert(fault);
        f64::NAN
    }
}

fn expected(expected: &'static str, found: Token<'_>) -> CalcError {
    CalcError::Expected {
        expected,
        found: found.describe(),
        position: found.position,
    }
}

fn unknown_name(name: Token<'_>) -> CalcError {
    CalcError::UnknownName {
        name: name.text.to_owned(),
        position: name.position,
    }
}

#[cfg(test)]
mod tests;
