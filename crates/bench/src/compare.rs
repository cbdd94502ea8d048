//! `nexo bench compare A.json B.json`: each figure of B against A, as a
//! change in percent; with several repetitions in both files, a 95%
//! confidence interval of the change of the mean (Welch's t), so that a
//! difference inside the noise reads as such.

use std::path::Path;

use serde::Serialize;

use crate::BenchError;
use crate::report::{Document, Figures, SCHEMA_VERSION};

/// The figures compared, and how each is read from a run.
/// Reads one figure of a run.
type Reader = fn(&Figures) -> Option<f64>;

const FIGURES: [(&str, Reader); 10] = [
    ("rps", |f| Some(f.rps)),
    ("p50", |f| Some(f.response_time.p50)),
    ("p90", |f| Some(f.response_time.p90)),
    ("p99", |f| Some(f.response_time.p99)),
    ("p99.9", |f| Some(f.response_time.p999)),
    ("max", |f| Some(f.response_time.max)),
    ("service.p50", |f| Some(f.service_time.p50)),
    ("service.p99", |f| Some(f.service_time.p99)),
    ("errors", |f| Some(f.errors as f64)),
    ("cpu_per_call_us", |f| {
        f.server.map(|server| server.cpu_us_per_call)
    }),
];

/// One figure of both files.
#[derive(Debug, Clone, Serialize)]
pub struct Delta {
    pub figure: String,
    pub a: f64,
    pub b: f64,
    /// (b - a) / a, in percent; `None` when a is 0.
    pub change_percent: Option<f64>,
    /// The 95% interval of the change of the mean over repetitions, in
    /// percent of a's mean.
    pub interval_percent: Option<(f64, f64)>,
    /// The interval holds no zero: the change is more than noise.
    pub significant: Option<bool>,
}

/// Reads a `nexo bench --json` document.
pub fn read(path: &Path) -> Result<Document, BenchError> {
    let text = std::fs::read_to_string(path).map_err(|source| BenchError::File {
        action: "read",
        path: path.to_owned(),
        source,
    })?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|error| BenchError::NotAResult {
            path: path.to_owned(),
            reason: format!("not JSON: {error}"),
        })?;
    match value
        .get("schema_version")
        .and_then(serde_json::Value::as_u64)
    {
        Some(version) if version == u64::from(SCHEMA_VERSION) => {}
        Some(version) => {
            return Err(BenchError::NotAResult {
                path: path.to_owned(),
                reason: format!("schema version {version}, this nexo reads {SCHEMA_VERSION}"),
            });
        }
        None => {
            return Err(BenchError::NotAResult {
                path: path.to_owned(),
                reason: "no `schema_version`".to_owned(),
            });
        }
    }
    serde_json::from_value(value).map_err(|error| BenchError::NotAResult {
        path: path.to_owned(),
        reason: error.to_string(),
    })
}

/// Every figure of `b` against `a`.
pub fn compare(a: &Document, b: &Document) -> Vec<Delta> {
    FIGURES
        .iter()
        .filter_map(|(name, read)| {
            let value_a = read(&a.summary)?;
            let value_b = read(&b.summary)?;
            let runs_a: Vec<f64> = a.runs.iter().filter_map(read).collect();
            let runs_b: Vec<f64> = b.runs.iter().filter_map(read).collect();
            let interval = welch(&runs_a, &runs_b);
            let mean_a = mean(&runs_a);
            let interval_percent = interval
                .zip(mean_a)
                .filter(|(_, mean)| *mean != 0.0)
                .map(|((low, high), mean)| (low / mean * 100.0, high / mean * 100.0));
            Some(Delta {
                figure: (*name).to_owned(),
                a: value_a,
                b: value_b,
                change_percent: (value_a != 0.0).then(|| (value_b - value_a) / value_a * 100.0),
                interval_percent,
                significant: interval_percent.map(|(low, high)| low > 0.0 || high < 0.0),
            })
        })
        .collect()
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

fn variance(values: &[f64], mean: f64) -> f64 {
    values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (values.len() as f64 - 1.0)
}

/// The 95% interval of mean(b) - mean(a) (Welch); needs two runs each.
fn welch(a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (mean_a, mean_b) = (mean(a)?, mean(b)?);
    let (va, vb) = (
        variance(a, mean_a) / a.len() as f64,
        variance(b, mean_b) / b.len() as f64,
    );
    let se = (va + vb).sqrt();
    let df = if se == 0.0 {
        (a.len() + b.len() - 2) as f64
    } else {
        (va + vb).powi(2)
            / (va.powi(2) / (a.len() as f64 - 1.0) + vb.powi(2) / (b.len() as f64 - 1.0))
    };
    let t = t_975(df);
    let difference = mean_b - mean_a;
    Some((difference - t * se, difference + t * se))
}

/// Student's t at 97.5% (two-sided 95%) for `df` degrees of freedom.
fn t_975(df: f64) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    let index = df.floor().max(1.0) as usize;
    TABLE.get(index - 1).copied().unwrap_or(1.96)
}

/// The comparison for people.
pub fn text(a_name: &str, b_name: &str, deltas: &[Delta]) -> String {
    use std::fmt::Write as _;
    let mut out = format!("A: {a_name}\nB: {b_name}\n");
    let _ = writeln!(
        out,
        "{:<16} {:>12} {:>12} {:>9}  95% interval",
        "figure", "A", "B", "change"
    );
    for delta in deltas {
        let show = |value: f64| {
            if delta.figure == "rps" || delta.figure == "errors" || delta.figure.starts_with("cpu")
            {
                format!("{value:.1}")
            } else {
                crate::report::millis(value)
            }
        };
        let change = delta
            .change_percent
            .map_or_else(|| "-".to_owned(), |change| format!("{change:+.1}%"));
        let interval = match (delta.interval_percent, delta.significant) {
            (Some((low, high)), Some(significant)) => format!(
                "[{low:+.1}%, {high:+.1}%]{}",
                if significant { "" } else { " (noise)" }
            ),
            _ => "(one run each)".to_owned(),
        };
        let _ = writeln!(
            out,
            "{:<16} {:>12} {:>12} {:>9}  {interval}",
            delta.figure,
            show(delta.a),
            show(delta.b),
            change
        );
    }
    out
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    #[test]
    fn intervals_tell_noise_from_change() {
        let (low, high) = welch(&[10.0, 11.0, 9.0], &[20.0, 21.0, 19.0]).unwrap();
        assert!(low > 0.0 && high > low);
        let (low, high) = welch(&[10.0, 12.0, 8.0], &[11.0, 9.0, 10.0]).unwrap();
        assert!(low < 0.0 && high > 0.0);
        assert!(welch(&[1.0], &[2.0, 3.0]).is_none());
    }
}
