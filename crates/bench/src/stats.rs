//! What a worker records, and the figures read from it. Each worker owns
//! a [`Recorder`] (no lock on the hot path); the run merges them at the
//! end. Latencies go into HDR histograms in nanoseconds (three significant
//! digits, resized as values come), kept apart by figure: response time
//! (from the intended start in open loop: coordinated omission
//! corrected), service time (from the actual send), time to the first
//! event, `initialize`, each step, and each error class.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::check::ErrorClass;

/// A fresh histogram of nanoseconds.
#[expect(
    clippy::expect_used,
    reason = "an auto-resizing histogram of 3 significant digits is always valid (hdrhistogram refuses only more than 5)"
)]
fn histogram() -> Histogram<u64> {
    Histogram::new(3).expect("3 significant digits are valid")
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos())
        .unwrap_or(u64::MAX / 4)
        .max(1)
}

/// One second of the run, for `--csv`.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Second {
    pub requests: u64,
    pub errors: u64,
    pub total_ns: u64,
    pub max_ns: u64,
}

/// One worker's records.
pub struct Recorder {
    pub response: Histogram<u64>,
    pub service: Histogram<u64>,
    pub first_event: Histogram<u64>,
    pub initialize: Histogram<u64>,
    pub by_step: BTreeMap<String, Histogram<u64>>,
    pub errors: BTreeMap<ErrorClass, (u64, Histogram<u64>)>,
    /// The first message of each error class.
    pub examples: BTreeMap<ErrorClass, String>,
    pub ok: u64,
    /// Open loop: requests sent later than due (past the lateness allowed).
    pub late: u64,
    /// Open loop: starts dropped because too many were outstanding.
    pub dropped: u64,
    pub seconds: Vec<Second>,
}

impl Default for Recorder {
    fn default() -> Self {
        Self {
            response: histogram(),
            service: histogram(),
            first_event: histogram(),
            initialize: histogram(),
            by_step: BTreeMap::new(),
            errors: BTreeMap::new(),
            examples: BTreeMap::new(),
            ok: 0,
            late: 0,
            dropped: 0,
            seconds: Vec::new(),
        }
    }
}

impl Recorder {
    fn second(&mut self, at: Duration) -> &mut Second {
        let index = usize::try_from(at.as_secs())
            .unwrap_or(usize::MAX)
            .min(1 << 20);
        if self.seconds.len() <= index {
            self.seconds.resize(index + 1, Second::default());
        }
        &mut self.seconds[index]
    }

    /// An answered request that passed its checks. `at` is its intended
    /// start within the run.
    pub fn success(
        &mut self,
        step: &str,
        at: Duration,
        response: Duration,
        service: Duration,
        first_event: Option<Duration>,
    ) {
        self.ok += 1;
        let response = nanos(response);
        let _ = self.response.record(response);
        let _ = self.service.record(nanos(service));
        if let Some(first) = first_event {
            let _ = self.first_event.record(nanos(first));
        }
        let _ = self
            .by_step
            .entry(step.to_owned())
            .or_insert_with(histogram)
            .record(response);
        let second = self.second(at);
        second.requests += 1;
        second.total_ns += response;
        second.max_ns = second.max_ns.max(response);
    }

    /// A request that failed with `class`.
    pub fn failure(&mut self, class: ErrorClass, message: &str, at: Duration, response: Duration) {
        let response = nanos(response);
        if !self.examples.contains_key(&class) {
            self.examples.insert(class.clone(), message.to_owned());
        }
        let entry = self.errors.entry(class).or_insert_with(|| (0, histogram()));
        entry.0 += 1;
        let _ = entry.1.record(response);
        let second = self.second(at);
        second.requests += 1;
        second.errors += 1;
        second.total_ns += response;
        second.max_ns = second.max_ns.max(response);
    }

    pub fn initialized(&mut self, took: Duration) {
        let _ = self.initialize.record(nanos(took));
    }

    pub fn errors(&self) -> u64 {
        self.errors.values().map(|(count, _)| count).sum()
    }

    /// Adds `other`'s records to these.
    pub fn merge(&mut self, other: Recorder) {
        let _ = self.response.add(&other.response);
        let _ = self.service.add(&other.service);
        let _ = self.first_event.add(&other.first_event);
        let _ = self.initialize.add(&other.initialize);
        for (step, histogram) in other.by_step {
            match self.by_step.get_mut(&step) {
                Some(mine) => {
                    let _ = mine.add(&histogram);
                }
                None => {
                    self.by_step.insert(step, histogram);
                }
            }
        }
        for (class, (count, histogram)) in other.errors {
            match self.errors.get_mut(&class) {
                Some(mine) => {
                    mine.0 += count;
                    let _ = mine.1.add(&histogram);
                }
                None => {
                    self.errors.insert(class, (count, histogram));
                }
            }
        }
        for (class, message) in other.examples {
            self.examples.entry(class).or_insert(message);
        }
        self.ok += other.ok;
        self.late += other.late;
        self.dropped += other.dropped;
        if self.seconds.len() < other.seconds.len() {
            self.seconds.resize(other.seconds.len(), Second::default());
        }
        for (mine, theirs) in self.seconds.iter_mut().zip(other.seconds) {
            mine.requests += theirs.requests;
            mine.errors += theirs.errors;
            mine.total_ns += theirs.total_ns;
            mine.max_ns = mine.max_ns.max(theirs.max_ns);
        }
    }
}

/// The percentiles of one histogram, in milliseconds.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Percentiles {
    pub count: u64,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    #[serde(rename = "p99.9")]
    pub p999: f64,
    pub max: f64,
}

impl Percentiles {
    pub fn of(histogram: &Histogram<u64>) -> Self {
        let ms = |nanos: u64| nanos as f64 / 1e6;
        if histogram.is_empty() {
            return Self::default();
        }
        Self {
            count: histogram.len(),
            mean: histogram.mean() / 1e6,
            p50: ms(histogram.value_at_quantile(0.50)),
            p90: ms(histogram.value_at_quantile(0.90)),
            p95: ms(histogram.value_at_quantile(0.95)),
            p99: ms(histogram.value_at_quantile(0.99)),
            p999: ms(histogram.value_at_quantile(0.999)),
            max: ms(histogram.max()),
        }
    }

    /// The figure an assertion or a comparison names (`p99`, `max`, ...).
    pub fn get(&self, name: &str) -> Option<f64> {
        Some(match name {
            "mean" => self.mean,
            "p50" | "median" => self.p50,
            "p90" => self.p90,
            "p95" => self.p95,
            "p99" => self.p99,
            "p99.9" | "p999" => self.p999,
            "max" => self.max,
            _ => return None,
        })
    }
}

/// The latency at each of the plot's quantiles, in milliseconds.
pub fn quantile_curve(histogram: &Histogram<u64>) -> Vec<(f64, f64)> {
    if histogram.is_empty() {
        return Vec::new();
    }
    // 0, 0.5, 0.75, 0.875, ... up to 0.99999: the HdrHistogram plot's axis.
    let mut points = Vec::new();
    let mut nines = 0.0_f64;
    while nines <= 5.0 {
        let quantile = 1.0 - 10f64.powf(-nines);
        points.push((quantile, histogram.value_at_quantile(quantile) as f64 / 1e6));
        nines += 0.125;
    }
    points.push((1.0, histogram.max() as f64 / 1e6));
    points
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorders_merge() {
        let mut a = Recorder::default();
        let mut b = Recorder::default();
        for i in 1..=99u64 {
            a.success(
                "x",
                Duration::ZERO,
                Duration::from_millis(1),
                Duration::from_millis(1),
                None,
            );
            let _ = i;
        }
        b.success(
            "x",
            Duration::from_secs(2),
            Duration::from_millis(100),
            Duration::from_millis(1),
            None,
        );
        b.failure(
            ErrorClass::Timeout,
            "slow",
            Duration::from_secs(1),
            Duration::from_secs(1),
        );
        a.merge(b);
        assert_eq!(a.ok, 100);
        assert_eq!(a.errors(), 1);
        assert_eq!(a.seconds.len(), 3);
        let figures = Percentiles::of(&a.response);
        assert!((figures.p50 - 1.0).abs() < 0.01);
        assert!(figures.max >= 99.0);
        assert_eq!(a.by_step["x"].len(), 100);
    }
}
