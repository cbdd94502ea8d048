//! The evaluator: precedence and grouping, every error class with its
//! position, the limits, the formatting of results, and properties over
//! generated input.

#![expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]

use proptest::prelude::*;

use super::*;

/// `expression` evaluated and formatted, or the error's message.
fn calc(expression: &str) -> String {
    match evaluate(expression) {
        Ok(value) => format_number(value),
        Err(error) => format!("error: {error}"),
    }
}

#[test]
fn precedence_and_grouping() {
    for (expression, expected) in [
        ("1 + 2 * 3", "7"),
        ("(1 + 2) * 3", "9"),
        ("10 - 4 - 3", "3"),
        ("100 / 10 / 5", "2"),
        ("2 * 3 % 4", "2"),
        ("2 + 3 % 2", "3"),
        ("2 ^ 3 ^ 2", "512"),
        ("(2 ^ 3) ^ 2", "64"),
        ("2 ** 3 ** 2", "512"),
        ("-2 ^ 2", "-4"),
        ("(-2) ^ 2", "4"),
        ("2 ^ -1", "0.5"),
        ("2 ^ -3 ^ 2", "0.001953125"),
        ("2 * -3", "-6"),
        ("2 - -3", "5"),
        ("--3", "3"),
        ("-+-+3", "3"),
        ("+3", "3"),
        ("-(2 + 3) * 2", "-10"),
        ("2 ^ 3 * 2", "16"),
        ("-7 % 3", "-1"),
        ("7 % -3", "1"),
        ("7.5 % 2", "1.5"),
        ("0 ^ 0", "1"),
        ("(-8) ^ 3", "-512"),
    ] {
        assert_eq!(calc(expression), expected, "{expression}");
    }
}

#[test]
fn numbers_constants_and_functions() {
    for (expression, expected) in [
        ("0.1 + 0.2", "0.3"),
        (".5 + 2.", "2.5"),
        ("1e3", "1000"),
        ("1.5E-3 * 2", "0.003"),
        ("2e+2", "200"),
        ("pi", "3.14159265358979"),
        ("PI * 2", "6.28318530717959"),
        ("e", "2.71828182845905"),
        ("sqrt(16)", "4"),
        ("SQRT(2)", "1.4142135623731"),
        ("abs(-3.5)", "3.5"),
        ("round(2.5)", "3"),
        ("round(-2.5)", "-3"),
        ("round(2.4)", "2"),
        ("floor(-2.5)", "-3"),
        ("ceil(2.1)", "3"),
        ("min(3, 1, 2)", "1"),
        ("max(3, 1, 2)", "3"),
        ("max(-1)", "-1"),
        ("max(1, min(5, 2 + 2), 3)", "4"),
        ("sqrt(abs(-9)) + max(1, 2) ^ 2", "7"),
        (" \t1\n+\u{a0}1 ", "2"),
    ] {
        assert_eq!(calc(expression), expected, "{expression}");
    }
}

#[test]
fn results_are_formatted_deterministically() {
    for (value, expected) in [
        (0.0, "0"),
        (-0.0, "0"),
        (3.0, "3"),
        (-3.0, "-3"),
        (0.5, "0.5"),
        (-0.25, "-0.25"),
        (2.0f64.powi(53), "9007199254740992"),
        (-(2.0f64.powi(53)), "-9007199254740992"),
        (1e16, "1e16"),
        (1.234_567_890_123_456_7e20, "1.23456789012346e20"),
        (1e300, "1e300"),
        (0.000_001, "0.000001"),
        (1.5e-7, "1.5e-7"),
        (-1.5e-7, "-1.5e-7"),
        (0.1 + 0.2, "0.3"),
        (1.0 / 3.0, "0.333333333333333"),
        (2.0 / 3.0, "0.666666666666667"),
        (0.1 * 3.0 * 10.0, "3"),
        (999_999_999_999_999.9, "1000000000000000"),
        (f64::MAX, "1.7976931348623157e308"),
        (f64::MIN_POSITIVE, "2.2250738585072e-308"),
    ] {
        assert_eq!(format_number(value), expected, "{value:e}");
    }
    assert_eq!(calc("-0"), "0");
    assert_eq!(calc("0 * -1"), "0");
    assert_eq!(calc("round(-0.4)"), "0");
}

#[test]
fn syntax_errors_point_at_the_position() {
    use CalcError::*;
    let found = |s: &str| s.to_owned();
    for (expression, expected) in [
        ("", Empty),
        ("   ", Empty),
        (
            "2 # 3",
            UnexpectedChar {
                found: '#',
                position: 3,
            },
        ),
        (
            "2 × 3",
            UnexpectedChar {
                found: '×',
                position: 3,
            },
        ),
        (
            "1.2.3",
            BadNumber {
                text: found("1.2.3"),
                position: 1,
            },
        ),
        (
            "1 + .",
            BadNumber {
                text: found("."),
                position: 5,
            },
        ),
        (
            "1e999",
            NumberTooLarge {
                text: found("1e999"),
                position: 1,
            },
        ),
        (
            "1 +",
            Expected {
                expected: "a number, a name or `(`",
                found: found("the end of the expression"),
                position: 4,
            },
        ),
        (
            "1 2",
            Expected {
                expected: "an operator or the end of the expression",
                found: found("the number `2`"),
                position: 3,
            },
        ),
        (
            "2pi",
            Expected {
                expected: "an operator or the end of the expression",
                found: found("the name `pi`"),
                position: 2,
            },
        ),
        (
            "* 2",
            Expected {
                expected: "a number, a name or `(`",
                found: found("`*`"),
                position: 1,
            },
        ),
        (
            "()",
            Expected {
                expected: "a number, a name or `(`",
                found: found("`)`"),
                position: 2,
            },
        ),
        (
            "(1 2)",
            Expected {
                expected: "an operator or `)`",
                found: found("the number `2`"),
                position: 4,
            },
        ),
        (
            "max(1 2)",
            Expected {
                expected: "an operator, `,` or `)`",
                found: found("the number `2`"),
                position: 7,
            },
        ),
        (
            "max(1,)",
            Expected {
                expected: "a number, a name or `(`",
                found: found("`)`"),
                position: 7,
            },
        ),
        ("(1 + 2", Unclosed { open: 1 }),
        ("2 * (1 + (3)", Unclosed { open: 5 }),
        ("max(1, 2", Unclosed { open: 4 }),
        ("1 + 2)", Unmatched { position: 6 }),
        (")", Unmatched { position: 1 }),
        ("1 + )", Unmatched { position: 5 }),
        (
            "foo + 1",
            UnknownName {
                name: found("foo"),
                position: 1,
            },
        ),
        (
            "1 + log(2)",
            UnknownName {
                name: found("log"),
                position: 5,
            },
        ),
        (
            "sqrt + 1",
            MissingCall {
                name: found("sqrt"),
                position: 1,
            },
        ),
        (
            "2 * pi(2)",
            NotAFunction {
                name: found("pi"),
                position: 5,
            },
        ),
        (
            "sqrt(1, 2)",
            Arity {
                name: "sqrt",
                expected: "exactly 1 argument",
                given: 2,
                position: 1,
            },
        ),
        (
            "1 + ROUND()",
            Arity {
                name: "round",
                expected: "exactly 1 argument",
                given: 0,
                position: 5,
            },
        ),
        (
            "min()",
            Arity {
                name: "min",
                expected: "at least 1 argument",
                given: 0,
                position: 1,
            },
        ),
    ] {
        assert_eq!(evaluate(expression), Err(expected), "{expression:?}");
    }
}

#[test]
fn arithmetic_faults_point_at_the_operator() {
    use CalcError::*;
    for (expression, expected) in [
        (
            "1 / 0",
            DivisionByZero {
                operator: '/',
                position: 3,
            },
        ),
        (
            "1 / (2 - 2)",
            DivisionByZero {
                operator: '/',
                position: 3,
            },
        ),
        (
            "5 % 0",
            DivisionByZero {
                operator: '%',
                position: 3,
            },
        ),
        ("0 ^ -1", ZeroToNegativePower { position: 3 }),
        ("(-8) ^ (1/3)", NoRealPower { position: 6 }),
        (
            "sqrt(-4)",
            NegativeSqrt {
                value: "-4".to_owned(),
                position: 1,
            },
        ),
        (
            "1 + sqrt(-0.5)",
            NegativeSqrt {
                value: "-0.5".to_owned(),
                position: 5,
            },
        ),
        (
            "10 ^ 400",
            Overflow {
                operator: "^",
                position: 4,
            },
        ),
        (
            "1e308 * 10",
            Overflow {
                operator: "*",
                position: 7,
            },
        ),
        (
            "1e308 + 1e308",
            Overflow {
                operator: "+",
                position: 7,
            },
        ),
        (
            "-1e308 - 1e308",
            Overflow {
                operator: "-",
                position: 8,
            },
        ),
        (
            "1 / 1e-308 / 1e-308",
            Overflow {
                operator: "/",
                position: 12,
            },
        ),
        // The first fault wins, and later arithmetic on it stays quiet.
        (
            "1/0 + sqrt(-1) * 1e308 * 1e308",
            DivisionByZero {
                operator: '/',
                position: 2,
            },
        ),
        (
            "max(1/0, 2)",
            DivisionByZero {
                operator: '/',
                position: 6,
            },
        ),
        (
            "sqrt(1/0)",
            DivisionByZero {
                operator: '/',
                position: 7,
            },
        ),
    ] {
        assert_eq!(evaluate(expression), Err(expected), "{expression:?}");
    }
}

#[test]
fn syntax_errors_win_over_arithmetic_faults() {
    assert!(matches!(
        evaluate("1/0 +"),
        Err(CalcError::Expected { position: 6, .. })
    ));
    assert!(matches!(
        evaluate("sqrt(-1) + foo"),
        Err(CalcError::UnknownName { position: 12, .. })
    ));
}

#[test]
fn positions_count_characters_not_bytes() {
    assert_eq!(
        evaluate("ñ + 1"),
        Err(CalcError::UnknownName {
            name: "ñ".to_owned(),
            position: 1
        })
    );
    assert_eq!(
        evaluate("(ñ) + €"),
        Err(CalcError::UnexpectedChar {
            found: '€',
            position: 7
        })
    );
}

#[test]
fn length_is_bounded() {
    let longest = format!("1{}", "+1".repeat((MAX_LENGTH - 1) / 2));
    assert_eq!(longest.chars().count(), MAX_LENGTH - 1);
    assert_eq!(calc(&format!("{longest} ")), "500");
    let too_long = format!("{longest}+1");
    assert_eq!(
        evaluate(&too_long),
        Err(CalcError::TooLong {
            length: MAX_LENGTH + 1
        })
    );
    assert_eq!(
        calc(&too_long),
        "error: the expression is 1001 characters long; the limit is 1000"
    );
    // Characters, not bytes: 1000 two-byte spaces are within the limit.
    let spaces = format!("1{}", "\u{a0}".repeat(MAX_LENGTH - 1));
    assert_eq!(calc(&spaces), "1");
}

#[test]
fn nesting_is_bounded() {
    let nested = |depth: usize| format!("{}1{}", "(".repeat(depth), ")".repeat(depth));
    assert_eq!(calc(&nested(MAX_DEPTH)), "1");
    assert_eq!(
        evaluate(&nested(MAX_DEPTH + 1)),
        Err(CalcError::TooDeep {
            position: MAX_DEPTH + 1
        })
    );
    let calls = |depth: usize| format!("{}1{}", "abs(".repeat(depth), ")".repeat(depth));
    assert_eq!(calc(&calls(MAX_DEPTH)), "1");
    assert!(matches!(
        evaluate(&calls(MAX_DEPTH + 1)),
        Err(CalcError::TooDeep { .. })
    ));
    let message = evaluate(&nested(400)).unwrap_err().to_string();
    assert!(message.contains("deeper than 64 levels"), "{message}");
}

#[test]
fn long_sign_runs_and_power_chains_do_not_recurse() {
    let signs = format!("{}1", "-".repeat(MAX_LENGTH - 2));
    assert_eq!(calc(&signs), "1");
    let powers = format!("1{}", "^1".repeat((MAX_LENGTH - 1) / 2));
    assert_eq!(calc(&powers), "1");
}

#[test]
fn messages_say_what_and_where() {
    for (expression, message) in [
        ("1 / 0", "division by zero (the `/` at position 3)"),
        (
            "foo",
            "unknown name `foo` at position 1 (constants: pi, e; functions: abs, ceil, floor, \
             max, min, round, sqrt)",
        ),
        (
            "sqrt(1, 2)",
            "`sqrt` at position 1 takes exactly 1 argument, but was given 2",
        ),
        ("(1", "the `(` at position 1 is never closed"),
        (
            "sqrt",
            "`sqrt` at position 1 is a function; call it as `sqrt(...)`",
        ),
        (
            "",
            "the expression is empty; write something like `2 * (3 + 4)`",
        ),
    ] {
        assert_eq!(
            calc(expression),
            format!("error: {message}"),
            "{expression:?}"
        );
    }
}

proptest! {
    #[test]
    fn integers_round_trip(n in -1_000_000_000_000_000i64..=1_000_000_000_000_000) {
        prop_assert_eq!(calc(&n.to_string()), n.to_string());
    }

    #[test]
    fn addition_and_multiplication_commute(a in -1e12..1e12f64, b in -1e12..1e12f64) {
        let (a, b) = (format_number(a), format_number(b));
        prop_assert_eq!(calc(&format!("{a} + {b}")), calc(&format!("{b} + {a}")));
        prop_assert_eq!(calc(&format!("{a} * {b}")), calc(&format!("({b}) * ({a})")));
    }

    #[test]
    fn formatted_results_read_back_unchanged(bits in any::<u64>()) {
        let value = f64::from_bits(bits);
        prop_assume!(value.is_finite());
        let text = format_number(value);
        prop_assert_eq!(calc(&text), text.clone());
        prop_assert!(serde_json::from_str::<serde_json::Number>(&text).is_ok(), "{}", text);
    }

    #[test]
    fn any_input_gives_a_finite_value_or_an_error(input in "\\PC{0,300}") {
        if let Ok(value) = evaluate(&input) {
            prop_assert!(value.is_finite());
        }
    }

    #[test]
    fn calculator_like_input_gives_a_finite_value_or_an_error(
        input in "[0-9.eE+*/%^(), -]{0,200}|([0-9a-z.+*/%^(), -]{0,40}){0,5}",
    ) {
        if let Ok(value) = evaluate(&input) {
            prop_assert!(value.is_finite());
        }
    }
}
