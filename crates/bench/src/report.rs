//! What a run tells: the versioned JSON document (`--json`), the table for
//! people, per-second CSV rows, a latency percentile plot as SVG and a
//! terminal sparkline. The document is the source of every other form,
//! and what `nexo bench compare` reads back; its `schema_version` changes
//! whenever a field changes meaning or goes away.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::plan::{Accept, Arrivals, Load, Plan, Protocol, Rate, Sessions};
use crate::run::Measured;
use crate::stats::{Percentiles, Recorder, Second, quantile_curve};

/// The document's version.
pub const SCHEMA_VERSION: u32 = 1;

/// A whole `nexo bench --json` document.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Document {
    pub schema_version: u32,
    pub tool: String,
    pub version: String,
    /// The command line that reproduces the run.
    pub command_line: String,
    pub environment: Environment,
    pub target: String,
    pub transport: String,
    pub setup: Setup,
    /// Every repetition's records merged.
    pub summary: Figures,
    /// Each repetition (`--reps`) on its own.
    pub runs: Vec<Figures>,
    #[serde(default)]
    pub assertions: Vec<crate::assert::Outcome>,
    /// `--find-ceiling`: the highest rate that kept every objective (the
    /// summary is that step's; `runs` holds every step).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceiling_rps: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Environment {
    pub os: String,
    pub arch: String,
    pub cpus: usize,
    pub kernel: Option<String>,
    pub load_average_1m: Option<f64>,
    /// When the run began (seconds since the Unix epoch).
    pub started_unix: u64,
}

impl Environment {
    pub fn here() -> Self {
        Self {
            os: std::env::consts::OS.to_owned(),
            arch: std::env::consts::ARCH.to_owned(),
            cpus: std::thread::available_parallelism().map_or(1, usize::from),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .ok()
                .map(|text| text.trim().to_owned()),
            load_average_1m: crate::cpu::load_average(),
            started_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|since| since.as_secs())
                .unwrap_or_default(),
        }
    }
}

impl Document {
    /// The report of a run: its figures, the assertions checked against
    /// its summary, and the command line that reproduces it.
    #[expect(
        clippy::too_many_arguments,
        reason = "one document, assembled from the run's parts"
    )]
    pub fn new(
        bench: &crate::Bench,
        target: String,
        command_line: String,
        environment: Environment,
        setup: Setup,
        summary: Figures,
        runs: Vec<Figures>,
        assertions: &[crate::assert::Assertion],
        ceiling_rps: Option<f64>,
    ) -> Self {
        let outcomes = assertions
            .iter()
            .map(|assertion| assertion.check(&summary))
            .collect();
        Self {
            schema_version: SCHEMA_VERSION,
            tool: "nexo bench".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            command_line,
            environment,
            target,
            transport: bench.transport.to_owned(),
            setup,
            summary,
            runs,
            assertions: outcomes,
            ceiling_rps,
        }
    }

    /// The assertions the run failed.
    pub fn failed(&self) -> Vec<&str> {
        self.assertions
            .iter()
            .filter(|outcome| !outcome.passed)
            .map(|outcome| outcome.assertion.as_str())
            .collect()
    }
}

/// The command line that reproduces a run, from the words nexo was given
/// (after the program's name), with credentials redacted: credential
/// headers' values, `-e` values and URL userinfo.
pub fn command_line(words: impl IntoIterator<Item = String>) -> String {
    let mut shown_words: Vec<String> = Vec::new();
    let mut after: Option<String> = None;
    for word in words {
        let shown = match after.as_deref() {
            Some("--header") => match nexo_client::Header::parse(&word) {
                Ok(header) if header.is_credential() => {
                    format!("{}: {}", header.name(), nexo_client::secret::REDACTED)
                }
                _ => word.clone(),
            },
            Some("-e") => match word.split_once('=') {
                Some((key, _)) => format!("{key}={}", nexo_client::secret::REDACTED),
                None => word.clone(),
            },
            Some("--url") => nexo_client::secret::redact_userinfo(&word).into_owned(),
            _ => word.clone(),
        };
        after = Some(word);
        shown_words.push(quote(&shown));
    }
    format!("nexo {}", shown_words.join(" "))
}

fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@,+%".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// One stage of a ramp, as the document tells it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RampStage {
    pub duration_s: f64,
    pub target: f64,
}

/// How the load was made.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Setup {
    /// `closed`, `ramping` (closed loop, virtual users ramped), `open` or
    /// `find-ceiling`.
    pub model: String,
    pub concurrency: Option<usize>,
    pub rate: Option<f64>,
    pub arrivals: Option<String>,
    pub seed: Option<u64>,
    pub max_outstanding: Option<usize>,
    pub connections: usize,
    pub protocol: String,
    pub sessions: String,
    pub accept: String,
    pub warmup_s: f64,
    pub steps: Vec<String>,
    /// A ramp's start (virtual users or requests a second) and stages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp_start: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ramp: Vec<RampStage>,
}

impl Setup {
    /// What `plan` sets up.
    pub fn of(plan: &Plan) -> Self {
        let stages = |stages: &[crate::plan::Stage]| {
            stages
                .iter()
                .map(|stage| RampStage {
                    duration_s: stage.duration.as_secs_f64(),
                    target: stage.target,
                })
                .collect::<Vec<_>>()
        };
        let mut setup = Self {
            model: "closed".to_owned(),
            concurrency: None,
            rate: None,
            arrivals: None,
            seed: Some(plan.seed),
            max_outstanding: None,
            connections: plan.connections,
            protocol: match plan.protocol {
                Protocol::Sessions2025 => "2025-11-25",
                Protocol::Stateless2026 => "2026-07-28",
            }
            .to_owned(),
            sessions: match (plan.protocol, plan.sessions) {
                (Protocol::Stateless2026, _) => "none",
                (_, Sessions::Shared) => "shared",
                (_, Sessions::PerConnection) => "per-connection",
                (_, Sessions::Churn) => "churn",
            }
            .to_owned(),
            accept: match plan.accept {
                Accept::Both => "both",
                Accept::Sse => "sse",
            }
            .to_owned(),
            warmup_s: plan.warmup.as_secs_f64(),
            steps: plan.steps.iter().map(|step| step.label.clone()).collect(),
            ramp_start: None,
            ramp: Vec::new(),
        };
        match &plan.load {
            Load::Closed { concurrency } => setup.concurrency = Some(*concurrency),
            Load::Ramping {
                start,
                stages: ramp,
            } => {
                setup.model = "ramping".to_owned();
                setup.concurrency = plan.load.peak_concurrency();
                setup.ramp_start = Some(*start as f64);
                setup.ramp = stages(ramp);
            }
            Load::Open {
                rate,
                arrivals,
                max_outstanding,
            } => {
                setup.model = "open".to_owned();
                setup.rate = Some(rate.peak());
                setup.arrivals = Some(
                    match arrivals {
                        Arrivals::Uniform => "uniform",
                        Arrivals::Poisson { .. } => "poisson",
                    }
                    .to_owned(),
                );
                setup.max_outstanding = Some(*max_outstanding);
                if let Rate::Ramping {
                    start,
                    stages: ramp,
                } = rate
                {
                    setup.ramp_start = Some(*start);
                    setup.ramp = stages(ramp);
                }
            }
        }
        setup
    }

    /// The load in a few words: `closed loop x8`, `open loop 500/s`.
    pub fn describe(&self) -> String {
        match self.model.as_str() {
            "open" => format!("open loop {}/s", self.rate.unwrap_or_default()),
            "ramping" => format!(
                "closed loop ramped from {} to {} at a time",
                self.ramp_start.unwrap_or_default(),
                self.concurrency.unwrap_or(1)
            ),
            "find-ceiling" => "find-ceiling".to_owned(),
            _ => format!("closed loop x{}", self.concurrency.unwrap_or(1)),
        }
    }
}

/// What a run is about to do, in a line: its length, warm-up and load.
pub fn describe(plan: &Plan) -> String {
    let length = match (plan.measured_duration(), plan.requests) {
        (Some(duration), Some(requests)) => {
            format!("{requests} requests or {:.1} s", duration.as_secs_f64())
        }
        (Some(duration), None) => format!("{:.1} s", duration.as_secs_f64()),
        (None, Some(requests)) => format!("{requests} requests"),
        (None, None) => String::new(),
    };
    let warmup = if plan.warmup.is_zero() {
        String::new()
    } else {
        format!(" after {:.1} s of warm-up", plan.warmup.as_secs_f64())
    };
    format!("{length}{warmup}, {}", Setup::of(plan).describe())
}

/// `--plot`: the document's response-time curve (and, in open loop, its
/// service-time curve) as an SVG.
pub fn plot(document: &Document) -> String {
    let title = format!(
        "{} ({}, {})",
        document.target,
        document.transport,
        document.setup.describe()
    );
    let summary = &document.summary;
    let mut series: Vec<(&str, &[(f64, f64)])> = vec![("response time", &summary.curve)];
    if !matches!(document.setup.model.as_str(), "closed" | "ramping") {
        series.push(("service time", &summary.service_curve));
    }
    svg(&title, &series)
}

/// The figures of a run (or of all runs merged). Times in milliseconds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Figures {
    /// The rate asked for (open loop), else 0.
    #[serde(default)]
    pub rps_target: f64,
    pub duration_s: f64,
    pub requests: u64,
    pub ok: u64,
    pub errors: u64,
    pub rps: f64,
    /// From the intended start (open loop: coordinated omission
    /// corrected); the same as service time in closed loop.
    pub response_time: Percentiles,
    /// From the actual send to the answer.
    pub service_time: Percentiles,
    /// From the send to the first byte of the answer (the first event of
    /// an SSE stream).
    pub first_event: Percentiles,
    /// 2025-era `initialize` handshakes timed during the run.
    pub initialize: Percentiles,
    pub by_step: BTreeMap<String, Percentiles>,
    pub errors_by_class: BTreeMap<String, ErrorFigures>,
    pub late_starts: u64,
    pub dropped_starts: u64,
    pub server: Option<ServerFigures>,
    /// CPUs kept busy by other processes during the run.
    pub other_load_cpus: Option<f64>,
    /// Another load was on the machine: the figures are less reliable.
    pub disturbed: bool,
    /// (quantile, response time) points of the percentile plot.
    pub curve: Vec<(f64, f64)>,
    /// (quantile, service time) points, the same way.
    #[serde(default)]
    pub service_curve: Vec<(f64, f64)>,
    pub per_second: Vec<Second>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ErrorFigures {
    pub count: u64,
    pub latency: Percentiles,
    pub example: String,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct ServerFigures {
    pub cpu_us_per_call: f64,
    pub cpu_seconds: f64,
    pub rss_kib_max: u64,
    pub threads: u64,
    pub fds: u64,
    pub processes: u64,
}

/// Other processes' CPUs above which a run is marked disturbed.
const DISTURBED_CPUS: f64 = 0.5;

impl Figures {
    pub fn of(recorder: &Recorder, measured: &Measured) -> Self {
        let errors = recorder.errors();
        let requests = recorder.ok + errors;
        let seconds = measured.elapsed.as_secs_f64();
        let server = measured.server.map(|server| {
            let cpu = server
                .after
                .cpu_micros
                .saturating_sub(server.before.cpu_micros) as f64;
            ServerFigures {
                cpu_us_per_call: if requests > 0 {
                    cpu / requests as f64
                } else {
                    0.0
                },
                cpu_seconds: cpu / 1e6,
                rss_kib_max: server.peak_rss_kib,
                threads: server.after.threads,
                fds: server.after.fds,
                processes: server.after.processes,
            }
        });
        Self {
            rps_target: 0.0,
            duration_s: seconds,
            requests,
            ok: recorder.ok,
            errors,
            rps: if seconds > 0.0 {
                requests as f64 / seconds
            } else {
                0.0
            },
            response_time: Percentiles::of(&recorder.response),
            service_time: Percentiles::of(&recorder.service),
            first_event: Percentiles::of(&recorder.first_event),
            initialize: Percentiles::of(&recorder.initialize),
            by_step: recorder
                .by_step
                .iter()
                .map(|(step, histogram)| (step.clone(), Percentiles::of(histogram)))
                .collect(),
            errors_by_class: recorder
                .errors
                .iter()
                .map(|(class, (count, histogram))| {
                    (
                        class.to_string(),
                        ErrorFigures {
                            count: *count,
                            latency: Percentiles::of(histogram),
                            example: recorder.examples.get(class).cloned().unwrap_or_default(),
                        },
                    )
                })
                .collect(),
            late_starts: recorder.late,
            dropped_starts: recorder.dropped,
            server,
            other_load_cpus: measured.other_load,
            disturbed: measured
                .other_load
                .is_some_and(|other| other > DISTURBED_CPUS),
            curve: quantile_curve(&recorder.response),
            service_curve: quantile_curve(&recorder.service),
            per_second: recorder.per_second(),
        }
    }

    /// The figures of several runs merged: histograms added, durations
    /// and server CPU summed.
    pub fn merged(recorder: &Recorder, runs: &[Measured], each: &[Figures]) -> Self {
        let elapsed = runs.iter().map(|run| run.elapsed).sum();
        let merged = Measured {
            recorder: Recorder::default(),
            elapsed,
            server: None,
            other_load: runs
                .iter()
                .filter_map(|run| run.other_load)
                .reduce(f64::max),
        };
        let mut figures = Self::of(recorder, &merged);
        let servers: Vec<ServerFigures> = each.iter().filter_map(|run| run.server).collect();
        if !servers.is_empty() {
            let cpu_seconds: f64 = servers.iter().map(|server| server.cpu_seconds).sum();
            figures.server = Some(ServerFigures {
                cpu_us_per_call: if figures.requests > 0 {
                    cpu_seconds * 1e6 / figures.requests as f64
                } else {
                    0.0
                },
                cpu_seconds,
                rss_kib_max: servers
                    .iter()
                    .map(|server| server.rss_kib_max)
                    .max()
                    .unwrap_or_default(),
                threads: servers
                    .iter()
                    .map(|server| server.threads)
                    .max()
                    .unwrap_or_default(),
                fds: servers
                    .iter()
                    .map(|server| server.fds)
                    .max()
                    .unwrap_or_default(),
                processes: servers
                    .iter()
                    .map(|server| server.processes)
                    .max()
                    .unwrap_or_default(),
            });
        }
        figures.per_second = Vec::new();
        for run in each {
            figures.per_second.extend(run.per_second.iter().copied());
        }
        figures
    }
}

/// A latency for people: µs under a millisecond, ms under ten seconds.
pub fn millis(ms: f64) -> String {
    if ms < 1.0 {
        format!("{:.0} µs", ms * 1000.0)
    } else if ms < 10.0 {
        format!("{ms:.2} ms")
    } else if ms < 10_000.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{:.1} s", ms / 1000.0)
    }
}

/// The human report: what ran, then the figures.
pub fn text(document: &Document) -> String {
    let figures = &document.summary;
    let mut out = String::new();
    let setup = &document.setup;
    let open = !matches!(setup.model.as_str(), "closed" | "ramping");
    let load = match setup.model.as_str() {
        "find-ceiling" => "find-ceiling (open loop at rising rates)".to_owned(),
        "ramping" => {
            let stages: Vec<String> = setup
                .ramp
                .iter()
                .map(|stage| format!("{} over {} s", stage.target, stage.duration_s))
                .collect();
            format!(
                "closed loop ramped from {} at a time: {}",
                setup.ramp_start.unwrap_or_default(),
                stages.join(", then ")
            )
        }
        "open" => format!(
            "open loop at {}/s ({}), at most {} outstanding",
            setup.rate.unwrap_or_default(),
            setup.arrivals.as_deref().unwrap_or("uniform"),
            setup.max_outstanding.unwrap_or_default()
        ),
        _ => format!("closed loop, {} at a time", setup.concurrency.unwrap_or(1)),
    };
    let _ = writeln!(
        out,
        "{} over {} ({}, {}), {}, {} connection(s)",
        document.target,
        document.transport,
        setup.protocol,
        setup.sessions,
        load,
        setup.connections
    );
    let _ = writeln!(
        out,
        "{} requests in {:.2} s: {:.0} req/s, {} ok, {} errors",
        figures.requests, figures.duration_s, figures.rps, figures.ok, figures.errors
    );
    let mut rows = vec![row("response time", &figures.response_time)];
    if open {
        rows.push(row("service time", &figures.service_time));
    }
    if figures.first_event.count > 0 && document.setup.accept == "sse" {
        rows.push(row("first event", &figures.first_event));
    }
    if figures.initialize.count > 0 {
        rows.push(row("initialize", &figures.initialize));
    }
    if figures.by_step.len() > 1 {
        for (step, percentiles) in &figures.by_step {
            rows.push(row(step, percentiles));
        }
    }
    let width = rows
        .iter()
        .map(|row| row[0].chars().count())
        .max()
        .unwrap_or(0)
        .max(6);
    let header = ["", "p50", "p90", "p99", "p99.9", "max", "count"];
    let _ = write!(out, "{:width$}", header[0]);
    for cell in &header[1..] {
        let _ = write!(out, " {cell:>10}");
    }
    out.push('\n');
    for row in rows {
        let _ = write!(out, "{:width$}", row[0]);
        for cell in &row[1..] {
            let _ = write!(out, " {cell:>10}");
        }
        out.push('\n');
    }
    if !figures.per_second.is_empty() {
        let _ = writeln!(out, "req/s by second: {}", sparkline(&figures.per_second));
    }
    for (class, error) in &figures.errors_by_class {
        let _ = writeln!(
            out,
            "errors {class}: {} (e.g. {})",
            error.count, error.example
        );
    }
    if open {
        let _ = writeln!(
            out,
            "late starts: {}, dropped starts: {}",
            figures.late_starts, figures.dropped_starts
        );
    }
    if let Some(server) = &figures.server {
        let _ = writeln!(
            out,
            "server: {:.1} µs CPU per call ({:.2} s CPU), {:.1} MiB RSS at most, {} threads, {} fds, {} process(es)",
            server.cpu_us_per_call,
            server.cpu_seconds,
            server.rss_kib_max as f64 / 1024.0,
            server.threads,
            server.fds,
            server.processes
        );
    }
    if figures.disturbed {
        let _ = writeln!(
            out,
            "warning: other processes kept {:.1} CPUs busy during the run; the figures are disturbed",
            figures.other_load_cpus.unwrap_or_default()
        );
    }
    if document.runs.len() > 1 && document.setup.model != "find-ceiling" {
        let rps: Vec<String> = document
            .runs
            .iter()
            .map(|run| format!("{:.0}", run.rps))
            .collect();
        let p99: Vec<String> = document
            .runs
            .iter()
            .map(|run| millis(run.response_time.p99))
            .collect();
        let _ = writeln!(
            out,
            "by repetition: req/s {}; p99 {}",
            rps.join(", "),
            p99.join(", ")
        );
    }
    if document.setup.model == "find-ceiling" {
        for run in &document.runs {
            let _ = writeln!(
                out,
                "step {:.0}/s: {:.0} req/s, p99 {}, {} errors, {} dropped",
                run.rps_target,
                run.rps,
                millis(run.response_time.p99),
                run.errors,
                run.dropped_starts
            );
        }
        match document.ceiling_rps {
            Some(ceiling) => {
                let _ = writeln!(out, "ceiling: {ceiling:.0} req/s kept every objective");
            }
            None => {
                let _ = writeln!(
                    out,
                    "ceiling: not found, the first step already broke an objective"
                );
            }
        }
    }
    for outcome in &document.assertions {
        let _ = writeln!(
            out,
            "assert {}: {} (measured {})",
            outcome.assertion,
            if outcome.passed { "passed" } else { "FAILED" },
            outcome.measured
        );
    }
    out
}

fn row(name: &str, p: &Percentiles) -> Vec<String> {
    vec![
        name.to_owned(),
        millis(p.p50),
        millis(p.p90),
        millis(p.p99),
        millis(p.p999),
        millis(p.max),
        p.count.to_string(),
    ]
}

/// Requests per second, one block character a second.
pub fn sparkline(seconds: &[Second]) -> String {
    const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let most = seconds
        .iter()
        .map(|second| second.requests)
        .max()
        .unwrap_or(0)
        .max(1);
    seconds
        .iter()
        .map(|second| {
            let level = (second.requests * 7).div_ceil(most) as usize;
            BLOCKS[level.min(7)]
        })
        .collect()
}

/// `--csv`: one row a second (of the merged runs, one after the other).
pub fn csv(figures: &Figures) -> String {
    let mut out =
        String::from("second,requests,errors,mean_ms,p50_ms,p90_ms,p99_ms,max_ms,concurrency\n");
    for (index, second) in figures.per_second.iter().enumerate() {
        let mean = if second.requests > 0 {
            second.total_ns as f64 / second.requests as f64 / 1e6
        } else {
            0.0
        };
        let _ = writeln!(
            out,
            "{index},{},{},{mean:.4},{:.4},{:.4},{:.4},{:.4},{}",
            second.requests,
            second.errors,
            second.p50_ms,
            second.p90_ms,
            second.p99_ms,
            second.max_ns as f64 / 1e6,
            second
                .concurrency
                .map(|users| users.to_string())
                .unwrap_or_default()
        );
    }
    out
}

/// A latency-by-percentile plot (the HdrHistogram kind: the x axis in
/// "nines", so p99.9 is as far from p99 as p99 from p90), written by hand:
/// a few lines of SVG need no plotting crate. `series` are (name, curve).
pub fn svg(title: &str, series: &[(&str, &[(f64, f64)])]) -> String {
    const WIDTH: f64 = 720.0;
    const HEIGHT: f64 = 420.0;
    const LEFT: f64 = 80.0;
    const RIGHT: f64 = 45.0;
    const TOP: f64 = 40.0;
    const BOTTOM: f64 = 50.0;
    const COLOURS: [&str; 4] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"];
    let nines = |quantile: f64| -(1.0 - quantile).max(1e-5).log10();
    let max_nines = 5.0;
    let top = series
        .iter()
        .flat_map(|(_, curve)| curve.iter().map(|(_, ms)| *ms))
        .fold(0.0_f64, f64::max)
        .max(0.001)
        * 1.1;
    let x = |quantile: f64| LEFT + nines(quantile) / max_nines * (WIDTH - LEFT - RIGHT);
    let y = |ms: f64| HEIGHT - BOTTOM - ms / top * (HEIGHT - TOP - BOTTOM);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">{}</text>\n",
        WIDTH / 2.0,
        escape(title)
    );
    for (index, label) in ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%"]
        .iter()
        .enumerate()
    {
        let position = LEFT + index as f64 / max_nines * (WIDTH - LEFT - RIGHT);
        let _ = writeln!(
            out,
            "<line x1=\"{position:.1}\" y1=\"{TOP}\" x2=\"{position:.1}\" y2=\"{:.1}\" stroke=\"#ddd\"/><text x=\"{position:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{label}</text>",
            HEIGHT - BOTTOM,
            HEIGHT - BOTTOM + 18.0
        );
    }
    for step in 0..=4 {
        let ms = top * f64::from(step) / 4.0;
        let position = y(ms);
        let _ = writeln!(
            out,
            "<line x1=\"{LEFT}\" y1=\"{position:.1}\" x2=\"{:.1}\" y2=\"{position:.1}\" stroke=\"#ddd\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            WIDTH - RIGHT,
            LEFT - 6.0,
            position + 4.0,
            escape(&millis(ms))
        );
    }
    let _ = writeln!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">percentile</text>\n<text x=\"16\" y=\"{:.1}\" transform=\"rotate(-90 16 {:.1})\" text-anchor=\"middle\">response time</text>",
        WIDTH / 2.0,
        HEIGHT - 10.0,
        HEIGHT / 2.0,
        HEIGHT / 2.0
    );
    for (index, (name, curve)) in series.iter().enumerate() {
        let colour = COLOURS[index % COLOURS.len()];
        let points: Vec<String> = curve
            .iter()
            .map(|(quantile, ms)| format!("{:.1},{:.1}", x(*quantile), y(*ms)))
            .collect();
        let _ = writeln!(
            out,
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/>\n<text x=\"{:.1}\" y=\"{:.1}\" fill=\"{colour}\">{}</text>",
            points.join(" "),
            LEFT + 10.0,
            TOP + 16.0 + 16.0 * index as f64,
            escape(name)
        );
    }
    out.push_str("</svg>\n");
    out
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparklines_scale_to_the_busiest_second() {
        let seconds = [0, 5, 10].map(|requests| Second {
            requests,
            ..Second::default()
        });
        assert_eq!(sparkline(&seconds), "▁▅█");
    }

    #[test]
    fn plots_are_svg() {
        let curve = [(0.0, 1.0), (0.99, 3.0), (1.0, 9.0)];
        let svg = svg("a <b>", &[("run", &curve)]);
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("a &lt;b&gt;"));
        assert!(svg.contains("<polyline"));
    }
}
