//! What a run is to do: the requests (one, or a scenario's weighted steps),
//! the load model, the protocol era and session handling, the limits. A
//! plan is built by the CLI from flags or by [`crate::scenario`] from a
//! file, and checked once ([`Plan::validate`]) before anything is sent.

use std::time::Duration;

use serde_json::Value;

use crate::BenchError;
use crate::check::Expect;

/// The longest run allowed without `--no-limits`.
pub const MAX_DURATION: Duration = Duration::from_secs(600);
/// The most requests allowed without `--no-limits`.
pub const MAX_REQUESTS: u64 = 10_000_000;
/// Requests outstanding at most in open loop, unless told.
pub const DEFAULT_MAX_OUTSTANDING: usize = 1000;
/// The duration of a run that names neither a duration nor a count.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);

/// How requests are started.
#[derive(Debug, Clone, PartialEq)]
pub enum Load {
    /// Closed loop: `concurrency` virtual users, each sending its next
    /// request when the last is answered (what wrk and most tools do).
    Closed { concurrency: usize },
    /// Closed loop whose number of virtual users moves linearly from
    /// `start` through each stage's target over its time (k6's
    /// ramping-vus); the measured run lasts the stages' whole time.
    Ramping { start: usize, stages: Vec<Stage> },
    /// Open loop: requests started on a schedule whatever the server does;
    /// latency measured from each request's intended start (coordinated
    /// omission corrected, as wrk2 does).
    Open {
        rate: Rate,
        arrivals: Arrivals,
        /// Requests queued or in flight at most; a start due when this
        /// many are outstanding is dropped, and counted.
        max_outstanding: usize,
    },
}

impl Load {
    /// The most requests in flight at once a closed loop asks for.
    pub fn peak_concurrency(&self) -> Option<usize> {
        match self {
            Load::Closed { concurrency } => Some(*concurrency),
            Load::Ramping { start, stages } => Some(
                stages
                    .iter()
                    .map(|stage| stage.target.ceil() as usize)
                    .fold(*start, usize::max),
            ),
            Load::Open { .. } => None,
        }
    }

    /// The virtual users a ramping closed loop wants `elapsed` into the
    /// measured run (before it: the start).
    pub fn concurrency_at(&self, elapsed: Duration) -> usize {
        match self {
            Load::Closed { concurrency } => *concurrency,
            Load::Ramping { start, stages } => {
                ramp_at(*start as f64, stages, elapsed).round().max(0.0) as usize
            }
            Load::Open { .. } => 0,
        }
    }
}

/// The links a run opens unless told: HTTP connections (`http`) follow
/// a closed loop's concurrency (8 in open loop, where workers take turns);
/// stdio and in-process links are shared by a pipelined window.
pub fn default_connections(load: &Load, http: bool) -> usize {
    match (http, load.peak_concurrency()) {
        (true, Some(concurrency)) => concurrency.max(1),
        (true, None) => 8,
        (false, _) => 1,
    }
}

/// An open loop's rate in requests per second: constant, or ramped
/// linearly through stages.
#[derive(Debug, Clone, PartialEq)]
pub enum Rate {
    Constant(f64),
    /// From `start`, each stage moves linearly to its target over its time.
    Ramping {
        start: f64,
        stages: Vec<Stage>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Stage {
    pub duration: Duration,
    pub target: f64,
}

impl Rate {
    /// The rate `elapsed` into the measured run.
    pub fn at(&self, elapsed: Duration) -> f64 {
        match self {
            Rate::Constant(rate) => *rate,
            Rate::Ramping { start, stages } => ramp_at(*start, stages, elapsed),
        }
    }

    /// The whole time of a ramp; `None` for a constant rate.
    pub fn ramp_duration(&self) -> Option<Duration> {
        match self {
            Rate::Constant(_) => None,
            Rate::Ramping { stages, .. } => Some(stages.iter().map(|stage| stage.duration).sum()),
        }
    }

    pub fn peak(&self) -> f64 {
        match self {
            Rate::Constant(rate) => *rate,
            Rate::Ramping { start, stages } => stages
                .iter()
                .map(|stage| stage.target)
                .fold(*start, f64::max),
        }
    }
}

/// A ramp's value `elapsed` into it: from `start`, each stage moves
/// linearly to its target over its time.
fn ramp_at(start: f64, stages: &[Stage], elapsed: Duration) -> f64 {
    let mut from = start;
    let mut left = elapsed;
    for stage in stages {
        if left < stage.duration {
            let share = left.as_secs_f64() / stage.duration.as_secs_f64().max(1e-9);
            return from + (stage.target - from) * share;
        }
        left -= stage.duration;
        from = stage.target;
    }
    from
}

/// When an open loop's requests are due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrivals {
    /// Evenly spaced.
    Uniform,
    /// A Poisson process (exponential gaps) from a seed, so a run can be
    /// repeated with the same arrivals.
    Poisson { seed: u64 },
}

/// The protocol era the requests speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// 2025-11-25 and older: `initialize`, then requests in a session.
    #[default]
    Sessions2025,
    /// 2026-07-28: stateless requests, each carrying its own `_meta`.
    Stateless2026,
}

/// How 2025-era sessions are spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sessions {
    /// One session, begun once, used by every connection.
    Shared,
    /// One session per connection.
    #[default]
    PerConnection,
    /// A new session for every request: `initialize` is part of the load
    /// (and timed on its own).
    Churn,
}

/// Which answer a Streamable HTTP POST asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Accept {
    /// Both media types, as the specification asks of clients: the
    /// server picks (nexo's answers JSON, the Python SDK's an SSE stream).
    #[default]
    Both,
    /// An SSE stream (`text/event-stream, application/json;q=0`).
    Sse,
}

/// One kind of request the run sends, with its share of the mix.
#[derive(Debug, Clone)]
pub struct Step {
    /// What the report calls it (`tools/call echo`).
    pub label: String,
    pub method: String,
    /// The request's params, templated ([`render`]) for each request.
    pub params: Value,
    pub weight: u32,
    /// Checks on each answer beyond the JSON-RPC ones.
    pub expect: Vec<Expect>,
    /// A pause after each answer (closed loop only).
    pub think: Duration,
    /// Check a tool's `structuredContent` against the `outputSchema` it
    /// lists (resolved by [`crate::Bench::set_steps`]).
    pub output_schema: bool,
    /// Answers to what the server asks the client while serving this
    /// step (a 2026-07-28 `input_required` result's input requests, a
    /// 2025-era `elicitation/create` on the answer's stream), by method:
    /// `elicitation/create`, `sampling/createMessage`, `roots/list`.
    pub answers: serde_json::Map<String, Value>,
}

impl Step {
    /// A step of `method` with `params`, labelled after its method and
    /// the name it calls.
    pub fn new(method: &str, params: Value) -> Self {
        Self {
            label: label_of(method, &params),
            method: method.to_owned(),
            params,
            weight: 1,
            expect: Vec::new(),
            think: Duration::ZERO,
            output_schema: false,
            answers: serde_json::Map::new(),
        }
    }

    /// The name or URI a 2026-07-28 request puts in `Mcp-Name`.
    pub fn name(&self) -> Option<&str> {
        name_of(&self.method, &self.params)
    }
}

fn label_of(method: &str, params: &Value) -> String {
    match name_of(method, params) {
        Some(name) => format!("{method} {name}"),
        None => method.to_owned(),
    }
}

fn name_of<'a>(method: &str, params: &'a Value) -> Option<&'a str> {
    let key = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        _ => return None,
    };
    params.get(key).and_then(Value::as_str)
}

/// A run's whole description.
#[derive(Debug, Clone)]
pub struct Plan {
    pub steps: Vec<Step>,
    pub load: Load,
    pub protocol: Protocol,
    pub sessions: Sessions,
    pub accept: Accept,
    /// HTTP connections, stdio children or in-process sessions.
    pub connections: usize,
    /// How long the measured run lasts; `None` with `requests` set runs
    /// until that many have been sent.
    pub duration: Option<Duration>,
    pub requests: Option<u64>,
    /// Load sent, and not measured, before the run.
    pub warmup: Duration,
    /// How long one request may take before it counts as a timeout.
    pub timeout: Duration,
    /// How long a stdio server may take to start and answer `initialize`.
    pub startup: Duration,
    /// How many measured runs (`--reps`), each after the warm-up.
    pub reps: u32,
    /// A process whose tree is sampled for CPU (a server started by hand).
    pub server_pid: Option<u32>,
    /// Send to addresses that are not loopback.
    pub allow_remote: bool,
    /// Lift the caps on duration and count.
    pub no_limits: bool,
    /// The seed of Poisson arrivals and of the templates' random values:
    /// request N of a run draws from `(seed, N)` alone, so the same seed
    /// sends the same arguments whatever the concurrency.
    pub seed: u64,
}

impl Default for Plan {
    fn default() -> Self {
        Self {
            steps: Vec::new(),
            load: Load::Closed { concurrency: 1 },
            protocol: Protocol::default(),
            sessions: Sessions::default(),
            accept: Accept::default(),
            connections: 1,
            duration: None,
            requests: None,
            warmup: Duration::ZERO,
            timeout: Duration::from_secs(15),
            startup: Duration::from_secs(60),
            reps: 1,
            server_pid: None,
            allow_remote: false,
            no_limits: false,
            seed: 1,
        }
    }
}

impl Plan {
    /// The measured duration: as given, else a ramp's, else none when a
    /// count is given, else [`DEFAULT_DURATION`].
    pub fn measured_duration(&self) -> Option<Duration> {
        let ramp = match &self.load {
            Load::Open { rate, .. } => rate.ramp_duration(),
            Load::Ramping { stages, .. } => Some(stages.iter().map(|stage| stage.duration).sum()),
            Load::Closed { .. } => None,
        };
        match (self.duration, ramp, self.requests) {
            (Some(duration), _, _) => Some(duration),
            (None, Some(ramp), _) => Some(ramp),
            (None, None, Some(_)) => None,
            (None, None, None) => Some(DEFAULT_DURATION),
        }
    }

    /// Refuses a plan that cannot run or would run past the caps.
    pub fn validate(&self) -> Result<(), BenchError> {
        if self.steps.is_empty() {
            return Err(BenchError::usage(
                "nothing to send",
                Some("name a TOOL, a `--method`, or a `--scenario FILE`".to_owned()),
            ));
        }
        if self.steps.iter().all(|step| step.weight == 0) {
            return Err(BenchError::usage("every step has weight 0", None));
        }
        if self.connections == 0 || self.reps == 0 {
            return Err(BenchError::usage(
                "`--connections` and `--reps` must be at least 1",
                None,
            ));
        }
        match &self.load {
            Load::Closed { concurrency: 0 } => {
                return Err(BenchError::usage(
                    "`--concurrency` must be at least 1",
                    None,
                ));
            }
            Load::Open {
                rate,
                max_outstanding,
                ..
            } => {
                if !(rate.peak() > 0.0 && rate.peak().is_finite()) {
                    return Err(BenchError::usage(
                        "the rate must be a positive number of requests per second",
                        Some("for example `--rate 500/s`".to_owned()),
                    ));
                }
                if *max_outstanding == 0 {
                    return Err(BenchError::usage(
                        "`--max-outstanding` must be at least 1",
                        None,
                    ));
                }
            }
            Load::Ramping { stages, .. } => {
                if stages.is_empty() {
                    return Err(BenchError::usage("a ramp needs stages", None));
                }
                if self.load.peak_concurrency() == Some(0) {
                    return Err(BenchError::usage(
                        "a ramp's concurrency must reach at least 1",
                        None,
                    ));
                }
            }
            Load::Closed { .. } => {}
        }
        if self.protocol == Protocol::Stateless2026 && self.sessions != Sessions::PerConnection {
            return Err(BenchError::usage(
                "`--sessions` is for 2025-era sessions; 2026-07-28 requests have none",
                Some("drop `--sessions`, or use `--protocol 2025`".to_owned()),
            ));
        }
        if !self.no_limits {
            let total = self.measured_duration().unwrap_or_default() * self.reps + self.warmup;
            if total > MAX_DURATION {
                return Err(BenchError::usage(
                    format!(
                        "the run would last {:.0} s, more than the {} s allowed by default",
                        total.as_secs_f64(),
                        MAX_DURATION.as_secs()
                    ),
                    Some("shorten `--duration`/`--reps`, or add `--no-limits`".to_owned()),
                ));
            }
            if self.requests.unwrap_or_default() > MAX_REQUESTS {
                return Err(BenchError::usage(
                    format!("more than {MAX_REQUESTS} requests are not sent by default"),
                    Some("lower `--requests`, or add `--no-limits`".to_owned()),
                ));
            }
        }
        Ok(())
    }
}

/// A template's values for one request: `{{seq}}` (the request's number
/// in the run), `{{worker}}`, `{{random}}` (0 to 2^32-1) and
/// `{{random:N}}` (0 to N-1), and `{{line}}` (the next line of the
/// scenario's `values` file, round robin).
pub struct Fill<'a> {
    pub seq: u64,
    pub worker: usize,
    pub random: &'a mut Rng,
    pub lines: &'a [String],
}

/// `template` with every `{{...}}` in its strings filled. A string that is
/// one placeholder of a number (`"{{seq}}"`) becomes that number.
pub fn render(template: &Value, fill: &mut Fill<'_>) -> Value {
    match template {
        Value::String(text) if text.contains("{{") => {
            let filled = fill_text(text, fill);
            if text.starts_with("{{") && text.ends_with("}}") && text.matches("{{").count() == 1 {
                match filled.parse::<u64>() {
                    Ok(number) if !text.contains("line") => Value::from(number),
                    _ => Value::String(filled),
                }
            } else {
                Value::String(filled)
            }
        }
        Value::Array(items) => Value::Array(items.iter().map(|item| render(item, fill)).collect()),
        Value::Object(object) => Value::Object(
            object
                .iter()
                .map(|(key, value)| (key.clone(), render(value, fill)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn fill_text(text: &str, fill: &mut Fill<'_>) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let Some(close) = after.find("}}") else {
            out.push_str(&rest[open..]);
            return out;
        };
        let name = after[..close].trim();
        match name {
            "seq" => out.push_str(&fill.seq.to_string()),
            "worker" => out.push_str(&fill.worker.to_string()),
            "random" => out.push_str(&(fill.random.draw() >> 32).to_string()),
            "line" if !fill.lines.is_empty() => {
                let index = (fill.seq % fill.lines.len() as u64) as usize;
                out.push_str(&fill.lines[index]);
            }
            _ => match name
                .strip_prefix("random:")
                .and_then(|n| n.trim().parse::<u64>().ok())
            {
                Some(bound) if bound > 0 => out.push_str(&(fill.random.draw() % bound).to_string()),
                _ => {
                    out.push_str("{{");
                    out.push_str(&after[..close]);
                    out.push_str("}}");
                }
            },
        }
        rest = &after[close + 2..];
    }
    out.push_str(rest);
    out
}

/// SplitMix64: a small seeded generator, written here rather than taken
/// from `rand` so that a seed gives the same arrivals and values whatever
/// version of a dependency is built (a benchmark must be repeatable).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The generator of request `seq` of a run seeded with `seed`.
    pub fn for_request(seed: u64, seq: u64) -> Self {
        let mut mixer = Self(seed ^ seq.wrapping_mul(0xD1B5_4A32_D192_ED03));
        Self(mixer.draw())
    }

    pub fn draw(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1].
    pub fn unit(&mut self) -> f64 {
        ((self.draw() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    /// An exponential gap of mean `1/rate` seconds.
    pub fn exponential(&mut self, rate: f64) -> f64 {
        -self.unit().ln() / rate
    }

    /// An index drawn by `weights`.
    pub fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u64 = weights.iter().map(|weight| u64::from(*weight)).sum();
        if total == 0 {
            return 0;
        }
        let mut pick = self.draw() % total;
        for (index, weight) in weights.iter().enumerate() {
            let weight = u64::from(*weight);
            if pick < weight {
                return index;
            }
            pick -= weight;
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn templates_fill_numbers_and_text() {
        let mut random = Rng::new(7);
        let lines = vec!["a".to_owned(), "b".to_owned()];
        let mut fill = Fill {
            seq: 3,
            worker: 1,
            random: &mut random,
            lines: &lines,
        };
        let out = render(
            &json!({"n": "{{seq}}", "t": "x-{{seq}}-{{worker}}", "l": "{{line}}", "r": "{{random:10}}", "k": "{{nope}}"}),
            &mut fill,
        );
        assert_eq!(out["n"], json!(3));
        assert_eq!(out["t"], json!("x-3-1"));
        assert_eq!(out["l"], json!("b"));
        assert!(out["r"].as_u64().is_some_and(|r| r < 10));
        assert_eq!(out["k"], json!("{{nope}}"));
    }

    #[test]
    fn ramps_interpolate() {
        let rate = Rate::Ramping {
            start: 0.0,
            stages: vec![
                Stage {
                    duration: Duration::from_secs(2),
                    target: 100.0,
                },
                Stage {
                    duration: Duration::from_secs(1),
                    target: 100.0,
                },
            ],
        };
        assert_eq!(rate.at(Duration::from_secs(1)), 50.0);
        assert_eq!(rate.at(Duration::from_secs(10)), 100.0);
        assert_eq!(rate.ramp_duration(), Some(Duration::from_secs(3)));
    }

    #[test]
    fn seeded_draws_repeat() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::new(1);
                move |_| r.draw()
            })
            .collect();
        let b: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::new(1);
                move |_| r.draw()
            })
            .collect();
        assert_eq!(a, b);
        let mut r = Rng::new(2);
        let mean: f64 = (0..20_000).map(|_| r.exponential(100.0)).sum::<f64>() / 20_000.0;
        assert!((mean - 0.01).abs() < 0.001, "{mean}");
    }
}
