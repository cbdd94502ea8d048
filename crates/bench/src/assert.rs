//! `--assert`: limits on a run's figures that fail it (`p99<5ms`,
//! `p95>1ms`, `errors==0`, `rps>1000`, `cpu_per_call<200us`). Latency
//! percentiles are read from the response time, the coordinated-omission
//! corrected figure; `service.p99` names the service time instead.

use serde::{Deserialize, Serialize};

use crate::BenchError;
use crate::report::Figures;

/// One limit.
#[derive(Debug, Clone, PartialEq)]
pub struct Assertion {
    pub text: String,
    figure: String,
    op: Op,
    /// In the figure's unit: ms for times, µs for CPU per call.
    value: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Less,
    LessEqual,
    Greater,
    GreaterEqual,
    Equal,
    NotEqual,
}

/// An assertion checked against a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Outcome {
    pub assertion: String,
    pub passed: bool,
    pub measured: String,
}

const FIGURES: &str =
    "p50, p90, p95, p99, p99.9, max, mean (service.p99 ...), errors, error_rate, rps, cpu_per_call";

impl Assertion {
    pub fn parse(text: &str) -> Result<Self, BenchError> {
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let operators = [
            ("<=", Op::LessEqual),
            (">=", Op::GreaterEqual),
            ("==", Op::Equal),
            ("!=", Op::NotEqual),
            ("<", Op::Less),
            (">", Op::Greater),
            ("=", Op::Equal),
        ];
        let bad = |why: &str| {
            BenchError::usage(
                format!("`{text}` is not an assertion: {why}"),
                Some(format!(
                    "write FIGURE OP VALUE, e.g. 'p99<5ms' or 'errors==0'; figures: {FIGURES}"
                )),
            )
        };
        let Some((position, symbol, op)) = operators
            .iter()
            .filter_map(|(symbol, op)| compact.find(symbol).map(|at| (at, *symbol, *op)))
            .min_by_key(|(at, symbol, _)| (*at, std::cmp::Reverse(symbol.len())))
        else {
            return Err(bad("no comparison (<, <=, >, >=, ==, !=)"));
        };
        let figure = compact[..position].to_ascii_lowercase();
        let raw = &compact[position + symbol.len()..];
        let latency = is_latency(&figure);
        let value = if latency {
            duration_ms(raw).ok_or_else(|| bad("a time needs a unit: ns, us, ms or s"))?
        } else if figure == "cpu_per_call" {
            cpu_micros(raw).ok_or_else(|| bad("CPU per call is a time: 150us, 0.2ms"))?
        } else if matches!(figure.as_str(), "errors" | "rps" | "error_rate") {
            match raw.strip_suffix('%') {
                Some(percent) if figure == "error_rate" => percent
                    .parse::<f64>()
                    .map(|p| p / 100.0)
                    .map_err(|_| bad("not a number"))?,
                _ => raw.parse::<f64>().map_err(|_| bad("not a number"))?,
            }
        } else {
            return Err(bad(&format!("unknown figure `{figure}`")));
        };
        Ok(Self {
            text: text.to_owned(),
            figure,
            op,
            value,
        })
    }

    /// The figure's value in `figures`, in the assertion's unit.
    fn measure(&self, figures: &Figures) -> Option<f64> {
        if let Some(name) = self.figure.strip_prefix("service.") {
            return figures.service_time.get(name);
        }
        match self.figure.as_str() {
            "errors" => Some(figures.errors as f64),
            "error_rate" => Some(if figures.requests > 0 {
                figures.errors as f64 / figures.requests as f64
            } else {
                0.0
            }),
            "rps" => Some(figures.rps),
            "cpu_per_call" => figures.server.map(|server| server.cpu_us_per_call),
            name => figures.response_time.get(name),
        }
    }

    pub fn check(&self, figures: &Figures) -> Outcome {
        let measured = self.measure(figures);
        let passed = measured.is_some_and(|measured| match self.op {
            Op::Less => measured < self.value,
            Op::LessEqual => measured <= self.value,
            Op::Greater => measured > self.value,
            Op::GreaterEqual => measured >= self.value,
            Op::Equal => measured == self.value,
            Op::NotEqual => measured != self.value,
        });
        let measured = match measured {
            None => "nothing (no server sampled)".to_owned(),
            Some(value) if is_latency(&self.figure) => crate::report::millis(value),
            Some(value) if self.figure == "cpu_per_call" => format!("{value:.1} µs"),
            Some(value) if self.figure == "error_rate" => format!("{:.3}%", value * 100.0),
            Some(value) if self.figure == "rps" => format!("{value:.1}"),
            Some(value) => format!("{value}"),
        };
        Outcome {
            assertion: self.text.clone(),
            passed,
            measured,
        }
    }
}

fn is_latency(figure: &str) -> bool {
    let name = figure.strip_prefix("service.").unwrap_or(figure);
    matches!(
        name,
        "p50" | "median" | "p90" | "p95" | "p99" | "p99.9" | "p999" | "max" | "mean"
    )
}

/// `5ms`, `250us`, `1.5s`, `800ns` in milliseconds.
pub fn duration_ms(text: &str) -> Option<f64> {
    let (number, scale) = [
        ("ns", 1e-6),
        ("us", 1e-3),
        ("µs", 1e-3),
        ("ms", 1.0),
        ("s", 1e3),
    ]
    .iter()
    .find_map(|(unit, scale)| text.strip_suffix(unit).map(|number| (number, *scale)))?;
    let value = number.parse::<f64>().ok()?;
    (value.is_finite() && value >= 0.0).then_some(value * scale)
}

fn cpu_micros(text: &str) -> Option<f64> {
    duration_ms(text).map(|ms| ms * 1000.0)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;
    use crate::stats::Percentiles;

    #[test]
    fn assertions_read_and_check() {
        let mut figures = Figures {
            response_time: Percentiles {
                p99: 4.0,
                p95: 2.0,
                ..Percentiles::default()
            },
            rps: 1200.0,
            requests: 100,
            errors: 1,
            ..Figures::default()
        };
        let check =
            |text: &str, figures: &Figures| Assertion::parse(text).unwrap().check(figures).passed;
        assert!(check("p99<5ms", &figures));
        assert!(!check("p99 < 3500us", &figures));
        assert!(check("p95>1ms", &figures));
        assert!(!check("errors==0", &figures));
        assert!(check("error_rate<=1%", &figures));
        assert!(check("rps>1000", &figures));
        assert!(!check("cpu_per_call<1ms", &figures));
        figures.errors = 0;
        assert!(check("errors==0", &figures));
        assert!(Assertion::parse("p99<5").is_err());
        assert!(Assertion::parse("latency<5ms").is_err());
        assert!(Assertion::parse("p99").is_err());
    }
}
