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

/// One second of the run, for `--csv`: counts, and the response time's
/// percentiles over the second (milliseconds; 0 in a second without
/// answers).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Second {
    pub requests: u64,
    pub errors: u64,
    pub total_ns: u64,
    pub max_ns: u64,
    #[serde(default)]
    pub p50_ms: f64,
    #[serde(default)]
    pub p90_ms: f64,
    #[serde(default)]
    pub p99_ms: f64,
    /// A closed loop's virtual users: the most that were active in the
    /// second (measured on a ramp); none in open loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u64>,
}

/// The response times of each second of a run, shared by its workers.
/// A worker keeps the second it is in and hands it over here when it
/// moves on (one lock a second), so memory grows with the seconds of the
/// run, not with workers times seconds.
#[derive(Default)]
pub struct SecondsSink(std::sync::Mutex<Vec<Histogram<u64>>>);

impl SecondsSink {
    fn add(&self, second: usize, histogram: &Histogram<u64>) {
        let Ok(mut seconds) = self.0.lock() else {
            return;
        };
        if seconds.len() <= second {
            seconds.resize_with(second + 1, histogram_per_second);
        }
        let _ = seconds[second].add(histogram);
    }

    /// The histograms handed over, one a second.
    pub fn take(&self) -> Vec<Histogram<u64>> {
        self.0
            .lock()
            .map(|mut seconds| std::mem::take(&mut *seconds))
            .unwrap_or_default()
    }
}

/// A histogram of one second's response times: two significant digits
/// are plenty for a per-second line, and keep it small.
#[expect(
    clippy::expect_used,
    reason = "an auto-resizing histogram of 2 significant digits is always valid"
)]
fn histogram_per_second() -> Histogram<u64> {
    Histogram::new(2).expect("2 significant digits are valid")
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
    /// The response times of each second (see [`SecondsSink`]).
    pub latencies: Vec<Histogram<u64>>,
    /// The second this worker is in, not yet handed to the sink.
    current: Option<(usize, Histogram<u64>)>,
    sink: Option<std::sync::Arc<SecondsSink>>,
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
            latencies: Vec::new(),
            current: None,
            sink: None,
        }
    }
}

impl Recorder {
    /// A worker's recorder, handing its seconds to `sink`.
    pub fn with_sink(sink: std::sync::Arc<SecondsSink>) -> Self {
        Self {
            sink: Some(sink),
            ..Self::default()
        }
    }

    fn second(&mut self, at: Duration, response: u64) -> &mut Second {
        let index = usize::try_from(at.as_secs())
            .unwrap_or(usize::MAX)
            .min(1 << 20);
        match &mut self.current {
            Some((second, histogram)) if *second == index => {
                let _ = histogram.record(response);
            }
            _ => {
                self.hand_over();
                let mut histogram = histogram_per_second();
                let _ = histogram.record(response);
                self.current = Some((index, histogram));
            }
        }
        if self.seconds.len() <= index {
            self.seconds.resize(index + 1, Second::default());
        }
        &mut self.seconds[index]
    }

    /// Hands the current second to the sink, or keeps it here without one.
    pub fn hand_over(&mut self) {
        let Some((second, histogram)) = self.current.take() else {
            return;
        };
        match &self.sink {
            Some(sink) => sink.add(second, &histogram),
            None => {
                if self.latencies.len() <= second {
                    self.latencies.resize_with(second + 1, histogram_per_second);
                }
                let _ = self.latencies[second].add(&histogram);
            }
        }
    }

    /// Takes in the seconds a run's workers handed to `sink`.
    pub fn adopt(&mut self, sink: &SecondsSink) {
        self.hand_over();
        let seconds = sink.take();
        if self.latencies.len() < seconds.len() {
            self.latencies
                .resize_with(seconds.len(), histogram_per_second);
        }
        for (mine, theirs) in self.latencies.iter_mut().zip(seconds) {
            let _ = mine.add(&theirs);
        }
    }

    /// Each second's counts with its percentiles filled in.
    pub fn per_second(&self) -> Vec<Second> {
        let ms = |nanos: u64| nanos as f64 / 1e6;
        self.seconds
            .iter()
            .enumerate()
            .map(|(index, second)| {
                let mut second = *second;
                if let Some(histogram) = self.latencies.get(index).filter(|h| !h.is_empty()) {
                    second.p50_ms = ms(histogram.value_at_quantile(0.50));
                    second.p90_ms = ms(histogram.value_at_quantile(0.90));
                    second.p99_ms = ms(histogram.value_at_quantile(0.99));
                }
                second
            })
            .collect()
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
        // Looked up before inserting: no label is copied per request.
        match self.by_step.get_mut(step) {
            Some(histogram) => {
                let _ = histogram.record(response);
            }
            None => {
                let mut fresh = histogram();
                let _ = fresh.record(response);
                self.by_step.insert(step.to_owned(), fresh);
            }
        }
        let second = self.second(at, response);
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
        let second = self.second(at, response);
        second.requests += 1;
        second.errors += 1;
        second.total_ns += response;
        second.max_ns = second.max_ns.max(response);
    }

    /// `users` virtual users were active at `at` (a ramp): the second
    /// keeps the most seen.
    pub fn users(&mut self, at: Duration, users: u64) {
        let index = usize::try_from(at.as_secs())
            .unwrap_or(usize::MAX)
            .min(1 << 20);
        if self.seconds.len() <= index {
            self.seconds.resize(index + 1, Second::default());
        }
        let second = &mut self.seconds[index];
        second.concurrency = Some(second.concurrency.unwrap_or_default().max(users));
    }

    pub fn initialized(&mut self, took: Duration) {
        let _ = self.initialize.record(nanos(took));
    }

    pub fn errors(&self) -> u64 {
        self.errors.values().map(|(count, _)| count).sum()
    }

    /// Adds `other`'s records to these.
    pub fn merge(&mut self, mut other: Recorder) {
        other.hand_over();
        self.hand_over();
        if self.latencies.len() < other.latencies.len() {
            self.latencies
                .resize_with(other.latencies.len(), histogram_per_second);
        }
        for (mine, theirs) in self.latencies.iter_mut().zip(&other.latencies) {
            let _ = mine.add(theirs);
        }
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
            mine.concurrency = match (mine.concurrency, theirs.concurrency) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
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
