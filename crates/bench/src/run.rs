//! The load itself: the links to the server (HTTP connections, stdio
//! children or in-process sessions), 2025-era sessions begun on them as
//! the plan says, and the two load models driving them. Closed loop:
//! `concurrency` workers, each sending when its last answer came. Open
//! loop: a scheduler that starts requests when they are due (evenly or as
//! a seeded Poisson process), whatever the server does, and workers that
//! take them in turn; each request's latency is measured from when it was
//! due, so a stalled server shows in the figures instead of slowing the
//! generator down (coordinated omission, corrected as wrk2 does).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use nexo_client::Target;
use serde_json::{Map, Value, json};
use tokio::sync::Mutex;

use crate::BenchError;
use crate::answers;
use crate::check::{self, ErrorClass, Failed};
use crate::check::{Expect, OutputSchema};
use crate::cpu::{self, Usage};
use crate::http::{Endpoint, HttpLink, Reply};
use crate::inprocess::InProcessLink;
use crate::legacy::LegacyLink;
use crate::plan::{Arrivals, Fill, Load, Plan, Protocol, Rate, Rng, Sessions, Step, render};
use crate::report::Figures;
use crate::stats::{Recorder, SecondsSink};
use crate::stdio::StdioLink;
use crate::wire;

/// The most requests in flight at once on stdio and in-process links in
/// open loop (each in-flight slot is a worker with its own histograms).
pub const MAX_WINDOW: usize = 128;

/// How often a virtual user a ramp has not reached yet looks again.
const RAMP_TICK: Duration = Duration::from_millis(10);

/// How late an open loop's request may start before it counts as late.
pub const LATE_ALLOWANCE: Duration = Duration::from_millis(2);

/// The links of one run.
enum Links {
    Http(Vec<Mutex<HttpLink>>),
    Legacy(Vec<Mutex<LegacyLink>>),
    Stdio(Vec<StdioLink>),
    InProcess(Vec<InProcessLink>),
}

/// A link whose requests may need a 2025-era session begun on it first:
/// a Streamable HTTP connection or a legacy SSE stream.
trait SessionLink {
    /// Whether a session must be begun before the next request.
    fn needs_session(&self, protocol: Protocol) -> bool;
    /// Begins a session: `initialize`, then `initialized`.
    fn initialize(
        &mut self,
        id: u64,
        capabilities: &Value,
    ) -> impl Future<Output = Result<(), Failed>> + Send;
    /// Sends request `id` (tool, prompt or resource `name`, for the
    /// headers that carry it) and reads its answer; a request of the
    /// server's meanwhile is answered from `answers`.
    fn exchange(
        &mut self,
        message: &Value,
        id: u64,
        protocol: Protocol,
        name: Option<&str>,
        answers: Option<&Map<String, Value>>,
    ) -> impl Future<Output = Result<Reply, Failed>> + Send;
    /// Ends the session (best effort); the next request begins another.
    fn end_session(&mut self) -> impl Future<Output = ()> + Send;
    /// Forgets the connection and its session after a failure.
    fn reset(&mut self);
}

impl SessionLink for HttpLink {
    fn needs_session(&self, protocol: Protocol) -> bool {
        protocol == Protocol::Sessions2025 && self.session.is_none()
    }

    fn initialize(
        &mut self,
        id: u64,
        capabilities: &Value,
    ) -> impl Future<Output = Result<(), Failed>> + Send {
        HttpLink::initialize(self, id, capabilities)
    }

    async fn exchange(
        &mut self,
        message: &Value,
        id: u64,
        protocol: Protocol,
        name: Option<&str>,
        answers: Option<&Map<String, Value>>,
    ) -> Result<Reply, Failed> {
        let (reply, _) = self
            .post(message, Some(id), protocol, name, answers)
            .await?;
        Ok(reply)
    }

    fn end_session(&mut self) -> impl Future<Output = ()> + Send {
        HttpLink::end_session(self)
    }

    fn reset(&mut self) {
        HttpLink::reset(self);
    }
}

impl SessionLink for LegacyLink {
    fn needs_session(&self, _protocol: Protocol) -> bool {
        !self.is_open()
    }

    fn initialize(
        &mut self,
        id: u64,
        capabilities: &Value,
    ) -> impl Future<Output = Result<(), Failed>> + Send {
        LegacyLink::initialize(self, id, capabilities)
    }

    fn exchange(
        &mut self,
        message: &Value,
        id: u64,
        _protocol: Protocol,
        _name: Option<&str>,
        answers: Option<&Map<String, Value>>,
    ) -> impl Future<Output = Result<Reply, Failed>> + Send {
        LegacyLink::exchange(self, message, Some(id), answers)
    }

    async fn end_session(&mut self) {
        self.reset();
    }

    fn reset(&mut self) {
        LegacyLink::reset(self);
    }
}

/// Requests answered so far in the measured run, for a live view.
#[derive(Debug, Default)]
pub struct Progress {
    pub requests: AtomicU64,
    pub errors: AtomicU64,
}

/// What workers share.
struct Shared {
    links: Links,
    plan: Plan,
    /// Values for `{{line}}`.
    lines: Vec<String>,
    next_seq: AtomicU64,
    /// Ids for HTTP requests (stdio links number their own).
    next_id: AtomicU64,
    progress: Arc<Progress>,
    /// What a 2025-era `initialize` declares: what the steps' answers serve.
    capabilities: Value,
}

/// The outcome of one request.
struct Exchange {
    sent: Instant,
    done: Instant,
    first_event: Option<Instant>,
    result: Result<Value, Failed>,
}

/// One measured run's records and what the server spent meanwhile.
pub struct Measured {
    pub recorder: Recorder,
    pub elapsed: Duration,
    pub server: Option<ServerUse>,
    /// Of the machine's CPUs, how many other processes kept busy.
    pub other_load: Option<f64>,
}

/// The server's use of the machine over a run.
#[derive(Debug, Clone, Copy)]
pub struct ServerUse {
    pub before: Usage,
    pub after: Usage,
    pub peak_rss_kib: u64,
}

/// A benchmark ready to run: links open, sessions begun.
pub struct Bench {
    shared: Arc<Shared>,
    /// Processes whose trees are sampled for CPU.
    roots: Vec<u32>,
    /// The transport's name for the report.
    pub transport: &'static str,
    warmed: bool,
}

impl Bench {
    /// Opens the plan's links to `target` and begins their sessions. The
    /// plan's steps may still be empty (see [`Bench::set_steps`]).
    pub async fn open(target: &Target, plan: Plan, lines: Vec<String>) -> Result<Self, BenchError> {
        let count = plan.connections.max(1);
        let mut roots: Vec<u32> = plan.server_pid.into_iter().collect();
        let (links, transport) = match target {
            Target::Url {
                url,
                headers,
                transport: nexo_client::HttpTransport::Sse,
            } => {
                let endpoint = Endpoint::resolve(url.expose(), headers, plan.allow_remote).await?;
                let links = (0..count)
                    .map(|_| Mutex::new(LegacyLink::new(endpoint.clone(), plan.timeout)))
                    .collect();
                (Links::Legacy(links), "sse")
            }
            Target::Url { url, headers, .. } => {
                let endpoint = Endpoint::resolve(url.expose(), headers, plan.allow_remote).await?;
                let links = (0..count)
                    .map(|_| Mutex::new(HttpLink::new(endpoint.clone(), plan.accept)))
                    .collect();
                (Links::Http(links), "http")
            }
            Target::Stdio { command, env, cwd } => {
                if plan.sessions == Sessions::Churn {
                    return Err(BenchError::usage(
                        "`--sessions churn` needs an HTTP server: a stdio server has one session for its life",
                        None,
                    ));
                }
                let env: Vec<(String, String)> = env
                    .iter()
                    .map(|var| (var.key.clone(), var.value.expose().to_owned()))
                    .collect();
                // Every step's answers, the first of a method kept: a pipe's
                // window mixes the steps.
                let mut answers = serde_json::Map::new();
                for step in &plan.steps {
                    for (method, answer) in &step.answers {
                        answers
                            .entry(method.clone())
                            .or_insert_with(|| answer.clone());
                    }
                }
                let answers = Arc::new(answers);
                let mut links = Vec::new();
                for _ in 0..count {
                    let link =
                        StdioLink::spawn(command, &env, cwd.as_deref(), Arc::clone(&answers))?;
                    roots.extend(link.pid);
                    links.push(link);
                }
                (Links::Stdio(links), "stdio")
            }
            Target::InProcess(_) => {
                if plan.sessions == Sessions::Churn {
                    return Err(BenchError::usage(
                        "`--sessions churn` needs an HTTP server",
                        None,
                    ));
                }
                // The in-process session answers the server's own requests
                // itself (nexo-client's handler), not from the scenario.
                if plan.steps.iter().any(|step| !step.answers.is_empty()) {
                    return Err(BenchError::usage(
                        "a step's [step.answers] cannot be given to a server run in-process",
                        Some("bench it as a child instead: --stdio 'nexo serve NAME'".into()),
                    ));
                }
                let mut links = Vec::new();
                for _ in 0..count {
                    links.push(InProcessLink::connect(target, plan.protocol, plan.timeout).await?);
                }
                (Links::InProcess(links), "in-process")
            }
        };
        let capabilities = answers::capabilities(plan.steps.iter().map(|step| &step.answers));
        let shared = Shared {
            links,
            plan,
            lines,
            next_seq: AtomicU64::new(0),
            next_id: AtomicU64::new(1),
            progress: Arc::default(),
            capabilities,
        };
        shared.begin_sessions().await?;
        Ok(Self {
            shared: Arc::new(shared),
            roots,
            transport,
            warmed: false,
        })
    }

    /// The counters the run moves as answers come (measured ones only).
    pub fn progress(&self) -> Arc<Progress> {
        Arc::clone(&self.shared.progress)
    }

    pub fn plan(&self) -> &Plan {
        &self.shared.plan
    }

    /// Sets what the run sends (after [`Bench::tool_arguments`]). A step
    /// that checks its output schema gets it from `tools/list` now.
    pub async fn set_steps(&mut self, mut steps: Vec<Step>) -> Result<(), BenchError> {
        if steps.iter().any(|step| step.output_schema) {
            let listed = self.request("tools/list", json!({})).await?;
            for step in steps.iter_mut().filter(|step| step.output_schema) {
                let tool = match (step.method.as_str(), step.name()) {
                    ("tools/call", Some(tool)) => tool.to_owned(),
                    _ => {
                        return Err(BenchError::usage(
                            format!(
                                "`{}` has no output schema to check: only a tool call has",
                                step.label
                            ),
                            None,
                        ));
                    }
                };
                let schema = listed
                    .get("tools")
                    .and_then(Value::as_array)
                    .and_then(|tools| tools.iter().find(|listed| listed["name"] == tool.as_str()))
                    .and_then(|listed| listed.get("outputSchema"));
                let Some(schema) = schema else {
                    return Err(BenchError::usage(
                        format!(
                            "the tool `{tool}` lists no output schema to check its answers against"
                        ),
                        Some(
                            "drop `--expect-schema` (or the step's `expect_output_schema`)"
                                .to_owned(),
                        ),
                    ));
                };
                step.expect
                    .push(Expect::Schema(OutputSchema::new(&tool, schema)?));
            }
        }
        let shared = Arc::get_mut(&mut self.shared)
            .ok_or_else(|| BenchError::usage("the run has started", None))?;
        shared.plan.steps = steps;
        Ok(())
    }

    /// Sets the load and the measured duration of the next runs.
    pub fn set_load(&mut self, load: Load, duration: Option<Duration>) -> Result<(), BenchError> {
        let shared = Arc::get_mut(&mut self.shared)
            .ok_or_else(|| BenchError::usage("a run is under way", None))?;
        shared.plan.load = load;
        shared.plan.duration = duration;
        shared.plan.requests = None;
        Ok(())
    }

    /// Sends one request outside the run and gives back its answer.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, BenchError> {
        let exchange = self.shared.exchange(0, method, &params, None).await;
        match exchange.result {
            Ok(result) => Ok(result),
            Err(failed) => Err(BenchError::Sample {
                class: failed.class,
                message: failed.message,
            }),
        }
    }

    /// The `arguments` of a call to `tool` from command-line words
    /// (`key=value` coerced by the tool's input schema, or one JSON
    /// object), read with nexo-client's argument reader so that they mean
    /// what they mean to `nexo call`. Returns the arguments and the names
    /// the schema does not describe.
    pub async fn tool_arguments(
        &self,
        tool: &str,
        words: &[String],
    ) -> Result<(Value, Vec<String>), BenchError> {
        if let [only] = words
            && only.trim_start().starts_with('{')
        {
            let given = nexo_client::arguments::tool_arguments(&Default::default(), words)?;
            return Ok((Value::Object(given.arguments), given.undescribed));
        }
        let listed = self.request("tools/list", json!({})).await?;
        let schema = listed
            .get("tools")
            .and_then(Value::as_array)
            .and_then(|tools| tools.iter().find(|listed| listed["name"] == tool))
            .and_then(|listed| listed.get("inputSchema"))
            .and_then(Value::as_object)
            .cloned();
        let Some(schema) = schema else {
            return Err(BenchError::usage(
                format!("the server has no tool `{tool}`"),
                Some("list its tools with `nexo tools TARGET`".to_owned()),
            ));
        };
        let given = nexo_client::arguments::tool_arguments(&schema, words)?;
        Ok((Value::Object(given.arguments), given.undescribed))
    }

    /// Sends the first step once, checked as the run will check it, and
    /// gives back its result: the sample answer shown before the run.
    pub async fn sample(&self) -> Result<Value, BenchError> {
        let Some(step) = self.shared.plan.steps.first() else {
            return Err(BenchError::usage("nothing to send", None));
        };
        let mut random = Rng::for_request(self.shared.plan.seed, 0);
        let params = render(
            &step.params,
            &mut Fill {
                seq: 0,
                worker: 0,
                random: &mut random,
                lines: &self.shared.lines,
            },
        );
        let exchange = self
            .shared
            .exchange(0, &step.method, &params, Some(step))
            .await;
        exchange.result.map_err(|failed| BenchError::Sample {
            class: failed.class,
            message: failed.message,
        })
    }

    /// One measured run (the warm-up before the first).
    pub async fn measure(&mut self) -> Result<Measured, BenchError> {
        self.shared.plan.validate()?;
        let warmup = if self.warmed {
            Duration::ZERO
        } else {
            self.shared.plan.warmup
        };
        self.warmed = true;
        let start = Instant::now();
        let measure_start = start + warmup;
        let sampler = spawn_sampler(self.roots.clone(), measure_start);
        let (recorder, end) = match &self.shared.plan.load {
            Load::Closed { .. } | Load::Ramping { .. } => {
                closed_loop(&self.shared, measure_start).await
            }
            Load::Open {
                rate,
                arrivals,
                max_outstanding,
            } => {
                open_loop(
                    &self.shared,
                    rate.clone(),
                    *arrivals,
                    *max_outstanding,
                    start,
                    measure_start,
                )
                .await
            }
        };
        sampler.done.store(true, Ordering::SeqCst);
        let sampled = sampler.task.await.unwrap_or_default();
        let mut recorder = recorder;
        if let Load::Closed { concurrency } = &self.shared.plan.load {
            for second in &mut recorder.seconds {
                second.concurrency = Some(*concurrency as u64);
            }
        }
        let elapsed = end.saturating_duration_since(measure_start);
        Ok(Measured {
            recorder,
            elapsed,
            server: sampled.server,
            other_load: sampled.other_load(elapsed),
        })
    }

    /// The plan's repetitions (`--reps`) one after the other, the warm-up
    /// before the first: each run's figures, and all of them merged.
    pub async fn run(&mut self) -> Result<(Figures, Vec<Figures>), BenchError> {
        let mut merged = Recorder::default();
        let mut runs = Vec::new();
        let mut figures = Vec::new();
        for _ in 0..self.shared.plan.reps {
            let mut measured = self.measure().await?;
            let recorder = std::mem::take(&mut measured.recorder);
            figures.push(Figures::of(&recorder, &measured));
            merged.merge(recorder);
            runs.push(measured);
        }
        let mut summary = Figures::merged(&merged, &runs, &figures);
        if let Load::Open { rate, .. } = &self.shared.plan.load {
            summary.rps_target = rate.peak();
            for run in &mut figures {
                run.rps_target = rate.peak();
            }
        }
        Ok((summary, figures))
    }

    /// Ends the links: sessions, children, connections.
    pub async fn close(self) {
        let Ok(shared) = Arc::try_unwrap(self.shared) else {
            return;
        };
        match shared.links {
            Links::Http(links) => {
                for link in links {
                    link.into_inner().end_session().await;
                }
            }
            Links::Stdio(links) => {
                for link in links {
                    link.stop().await;
                }
            }
            Links::InProcess(links) => {
                for link in links {
                    link.close().await;
                }
            }
            Links::Legacy(_) => {}
        }
    }
}

impl Shared {
    /// Begins the 2025-era sessions the plan asks for before the run; in
    /// the 2026 era, which has no handshake, waits for each stdio child's
    /// first answer instead. Either way a child has the start-up allowance
    /// to answer (`npx -y` on a cold cache takes many seconds), not the
    /// per-request timeout the measured calls have.
    async fn begin_sessions(&self) -> Result<(), BenchError> {
        if self.plan.protocol != Protocol::Sessions2025 {
            if let Links::Stdio(links) = &self.links {
                for link in links {
                    let started = discover_child(link, self.plan.startup, &self.capabilities).await;
                    if let Err(failed) = started {
                        return Err(child_failed(link, "server/discover", failed).await);
                    }
                }
            }
            return Ok(());
        }
        let unreachable = |failed: Failed| BenchError::Unreachable {
            message: format!("`initialize` failed: {}", failed.message),
        };
        match &self.links {
            Links::Http(links) => {
                let Some(first) = links.first() else {
                    return Ok(());
                };
                let mut first = first.lock().await;
                first
                    .initialize(
                        self.next_id.fetch_add(1, Ordering::Relaxed),
                        &self.capabilities,
                    )
                    .await
                    .map_err(unreachable)?;
                let session = first.session.clone();
                drop(first);
                for link in links.iter().skip(1) {
                    let mut link = link.lock().await;
                    if self.plan.sessions == Sessions::Shared {
                        link.session = session.clone();
                    } else {
                        link.initialize(
                            self.next_id.fetch_add(1, Ordering::Relaxed),
                            &self.capabilities,
                        )
                        .await
                        .map_err(unreachable)?;
                    }
                }
            }
            Links::Legacy(links) => {
                // One session per stream: a legacy session cannot be shared.
                for link in links {
                    link.lock()
                        .await
                        .initialize(
                            self.next_id.fetch_add(1, Ordering::Relaxed),
                            &self.capabilities,
                        )
                        .await
                        .map_err(unreachable)?;
                }
            }
            Links::Stdio(links) => {
                for link in links {
                    let started =
                        initialize_child(link, self.plan.startup, &self.capabilities).await;
                    if let Err(failed) = started {
                        return Err(child_failed(link, "initialize", failed).await);
                    }
                }
            }
            Links::InProcess(_) => {}
        }
        Ok(())
    }

    /// Every server process the run started has ended: nothing more can
    /// be measured, and the run stops instead of counting failures.
    fn all_ended(&self) -> bool {
        match &self.links {
            Links::Stdio(links) => links.iter().all(StdioLink::has_ended),
            _ => false,
        }
    }

    fn link_count(&self) -> usize {
        match &self.links {
            Links::Http(links) => links.len(),
            Links::Legacy(links) => links.len(),
            Links::Stdio(links) => links.len(),
            Links::InProcess(links) => links.len(),
        }
    }

    /// Sends one request on link `index % links`, within the timeout;
    /// `step` gives the expectations (none for a request of our own).
    async fn exchange(
        &self,
        index: usize,
        method: &str,
        params: &Value,
        step: Option<&Step>,
    ) -> Exchange {
        self.exchange_recording(index, method, params.clone(), step, None)
            .await
    }

    async fn exchange_recording(
        &self,
        index: usize,
        method: &str,
        params: Value,
        step: Option<&Step>,
        mut recorder: Option<&mut Recorder>,
    ) -> Exchange {
        let answers = step
            .map(|step| &step.answers)
            .filter(|answers| !answers.is_empty());
        let capabilities = match answers {
            Some(answers) => answers::capabilities([answers]),
            None => Value::Object(Map::new()),
        };
        // Kept for the next rounds of a request the server may ask input for.
        let mut now = answers.map(|_| params.clone()).unwrap_or_default();
        let (sent, first) = self
            .send(
                index,
                method,
                params,
                step,
                answers,
                &capabilities,
                recorder.as_deref_mut(),
            )
            .await;
        let (mut id, mut reply) = first;
        // Multi Round-Trip Requests: an `input_required` result is
        // answered from the step and the request sent again, until it
        // completes; all rounds are one request in the figures.
        if let Some(answers) = answers {
            for round in 1.. {
                let Ok(Reply { message, .. }) = &reply else {
                    break;
                };
                let Some(result) = message.get("result").filter(|r| answers::input_required(r))
                else {
                    break;
                };
                if round >= answers::MAX_ROUNDS {
                    reply = Err(Failed::new(
                        ErrorClass::Mismatch,
                        format!("still asking for input after {round} rounds"),
                    ));
                    break;
                }
                match answers::next_round(&now, result, answers) {
                    Ok(next) => now = next,
                    Err(failed) => {
                        reply = Err(failed);
                        break;
                    }
                }
                let (_, (next_id, next_reply)) = self
                    .send(
                        index,
                        method,
                        now.clone(),
                        step,
                        Some(answers),
                        &capabilities,
                        recorder.as_deref_mut(),
                    )
                    .await;
                id = next_id;
                reply = next_reply;
            }
        }
        let done = Instant::now();
        let expect = step.map(|step| step.expect.as_slice()).unwrap_or_default();
        match reply {
            Ok(Reply {
                message,
                first_event,
            }) => Exchange {
                sent,
                done,
                first_event,
                result: match check::answer(&message, id, method, expect) {
                    Ok(result) if answers::input_required(result) => Err(Failed::new(
                        ErrorClass::Mismatch,
                        "the server asks for input (input_required); answer it with the step's [step.answers]",
                    )),
                    Ok(_) => Ok(take_result(message)),
                    Err(failed) => Err(failed),
                },
            },
            Err(failed) => Exchange {
                sent,
                done,
                first_event: None,
                result: Err(failed),
            },
        }
    }

    /// Sends one request on link `index % links` within the timeout and
    /// reads its answer; gives back when it was sent, its id and the reply.
    #[expect(
        clippy::too_many_arguments,
        reason = "one request and everything it is sent with"
    )]
    async fn send(
        &self,
        index: usize,
        method: &str,
        params: Value,
        step: Option<&Step>,
        answers: Option<&Map<String, Value>>,
        capabilities: &Value,
        recorder: Option<&mut Recorder>,
    ) -> (Instant, (u64, Result<Reply, Failed>)) {
        let timeout = self.plan.timeout;
        let protocol = self.plan.protocol;
        let index = index % self.link_count().max(1);
        let timed_out =
            || Failed::new(ErrorClass::Timeout, format!("no answer within {timeout:?}"));
        match &self.links {
            Links::Http(links) => {
                let mut link = links[index].lock().await;
                self.over_session(
                    &mut *link,
                    method,
                    params,
                    step,
                    answers,
                    capabilities,
                    recorder,
                )
                .await
            }
            Links::Legacy(links) => {
                let mut link = links[index].lock().await;
                self.over_session(
                    &mut *link,
                    method,
                    params,
                    step,
                    answers,
                    capabilities,
                    recorder,
                )
                .await
            }
            Links::Stdio(links) => {
                let link = &links[index];
                let id = link.next_id();
                let message = wire::request(id, method, params, protocol, capabilities);
                let sent = Instant::now();
                let reply = match tokio::time::timeout(timeout, link.exchange(&message, id)).await {
                    Ok(reply) => reply,
                    Err(_) => {
                        link.forget(id);
                        Err(timed_out())
                    }
                };
                (sent, (id, reply))
            }
            Links::InProcess(links) => {
                let id = self.next_id.fetch_add(1, Ordering::Relaxed);
                let sent = Instant::now();
                let reply =
                    match tokio::time::timeout(timeout, links[index].exchange(method, &params, id))
                        .await
                    {
                        Ok(reply) => reply,
                        Err(_) => Err(timed_out()),
                    };
                (sent, (id, reply))
            }
        }
    }

    /// Sends one request on a link that may need a 2025-era session
    /// begun first (a new one for every request when sessions churn),
    /// within the timeout; a link whose transport failed or that timed
    /// out is reset, so the next request begins again.
    #[expect(
        clippy::too_many_arguments,
        reason = "one request and everything it is sent with"
    )]
    async fn over_session(
        &self,
        link: &mut impl SessionLink,
        method: &str,
        params: Value,
        step: Option<&Step>,
        answers: Option<&Map<String, Value>>,
        capabilities: &Value,
        recorder: Option<&mut Recorder>,
    ) -> (Instant, (u64, Result<Reply, Failed>)) {
        let timeout = self.plan.timeout;
        let protocol = self.plan.protocol;
        let timed_out =
            || Failed::new(ErrorClass::Timeout, format!("no answer within {timeout:?}"));
        let churn = protocol == Protocol::Sessions2025 && self.plan.sessions == Sessions::Churn;
        if churn || link.needs_session(protocol) {
            let began = Instant::now();
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            let started =
                tokio::time::timeout(timeout, link.initialize(id, &self.capabilities)).await;
            let failed = match started {
                Ok(Ok(())) => None,
                Ok(Err(failed)) => Some(failed),
                Err(_) => Some(timed_out()),
            };
            if let Some(failed) = failed {
                link.reset();
                return (Instant::now(), (0, Err(failed)));
            }
            if let Some(recorder) = recorder {
                recorder.initialized(began.elapsed());
            }
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let name: Option<std::borrow::Cow<'_, str>> = match step.and_then(Step::name) {
            Some(name) => Some(name.into()),
            None => name_in(method, &params).map(|name| name.to_owned().into()),
        };
        let message = wire::request(id, method, params, protocol, capabilities);
        let sent = Instant::now();
        let exchanged = tokio::time::timeout(
            timeout,
            link.exchange(&message, id, protocol, name.as_deref(), answers),
        )
        .await;
        let reply = match exchanged {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(failed)) => {
                if failed.class == ErrorClass::Transport {
                    link.reset();
                }
                Err(failed)
            }
            Err(_) => {
                link.reset();
                Err(timed_out())
            }
        };
        if churn {
            link.end_session().await;
        }
        (sent, (id, reply))
    }

    /// Draws the next request: its step and rendered params.
    /// Request `seq` draws its step and random values from the plan's
    /// seed and `seq` alone: the same seed sends the same requests.
    fn next_request(&self, worker: usize, weights: &[u32]) -> (usize, u64, Value) {
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        let mut random = Rng::for_request(self.plan.seed, seq);
        let index = if weights.len() == 1 {
            0
        } else {
            random.weighted(weights)
        };
        let params = render(
            &self.plan.steps[index].params,
            &mut Fill {
                seq,
                worker,
                random: &mut random,
                lines: &self.lines,
            },
        );
        (index, seq, params)
    }
}

/// A 2025-era handshake with a stdio child: `initialize`, its answer
/// checked, then `initialized`.
async fn initialize_child(
    link: &StdioLink,
    timeout: Duration,
    capabilities: &Value,
) -> Result<(), Failed> {
    let id = link.next_id();
    let reply = tokio::time::timeout(
        timeout,
        link.exchange(&wire::initialize(id, capabilities), id),
    )
    .await
    .map_err(|_| {
        Failed::new(
            ErrorClass::Timeout,
            format!("the server did not answer within the start-up allowance ({timeout:?})"),
        )
    })??;
    check::answer(&reply.message, id, "initialize", &[])?;
    link.notify(&wire::initialized()).await
}

/// A 2026-era child's first exchange: `server/discover`, answered within
/// the start-up allowance. Any answer, a result or an error, shows the
/// child is up; what it answers is the measured calls' business.
async fn discover_child(
    link: &StdioLink,
    startup: Duration,
    capabilities: &Value,
) -> Result<(), Failed> {
    let id = link.next_id();
    let discover = wire::request(
        id,
        "server/discover",
        Value::Null,
        Protocol::Stateless2026,
        capabilities,
    );
    tokio::time::timeout(startup, link.exchange(&discover, id))
        .await
        .map_err(|_| {
            Failed::new(
                ErrorClass::Timeout,
                format!("the server did not answer within the start-up allowance ({startup:?})"),
            )
        })??;
    Ok(())
}

/// Why a stdio child failed its first exchange (`method`), with its last
/// words on stderr when it wrote any.
async fn child_failed(link: &StdioLink, method: &str, failed: Failed) -> BenchError {
    // The reader may not have read the child's last words yet; they are
    // what tells why it ended.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let message = match link.last_words() {
        Some(words) => format!("{} (its stderr: {words})", failed.message),
        None => failed.message,
    };
    BenchError::Unreachable {
        message: format!("`{method}` failed: {message}"),
    }
}

/// The `result` of an answer already checked, moved out of it.
fn take_result(mut message: Value) -> Value {
    message
        .get_mut("result")
        .map(Value::take)
        .unwrap_or_default()
}

fn name_in<'a>(method: &str, params: &'a Value) -> Option<&'a str> {
    let key = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        _ => return None,
    };
    params.get(key).and_then(Value::as_str)
}

/// Records `exchange` of step `step`, due at `due`, if it falls in the
/// measured run.
fn record(
    recorder: &mut Recorder,
    progress: &Progress,
    step: &Step,
    exchange: &Exchange,
    due: Instant,
    measure_start: Instant,
) {
    if due < measure_start {
        return;
    }
    progress.requests.fetch_add(1, Ordering::Relaxed);
    if exchange.result.is_err() {
        progress.errors.fetch_add(1, Ordering::Relaxed);
    }
    let at = due.saturating_duration_since(measure_start);
    let response = exchange.done.saturating_duration_since(due);
    match &exchange.result {
        Ok(_) => recorder.success(
            &step.label,
            at,
            response,
            exchange.done.saturating_duration_since(exchange.sent),
            exchange
                .first_event
                .map(|first| first.saturating_duration_since(exchange.sent)),
        ),
        Err(failed) => recorder.failure(failed.class.clone(), &failed.message, at, response),
    }
}

/// The end of the measured run: its duration, else the cap.
fn deadline(plan: &Plan, measure_start: Instant) -> Instant {
    let duration = plan.measured_duration().unwrap_or(if plan.no_limits {
        Duration::from_secs(86_400 * 365)
    } else {
        crate::plan::MAX_DURATION
    });
    measure_start + duration
}

async fn closed_loop(shared: &Arc<Shared>, measure_start: Instant) -> (Recorder, Instant) {
    let deadline = deadline(&shared.plan, measure_start);
    let issued = Arc::new(AtomicU64::new(0));
    let load = shared.plan.load.clone();
    let ramping = matches!(load, Load::Ramping { .. });
    let concurrency = load.peak_concurrency().unwrap_or(1);
    // A ramp's virtual users active now, noted in each second.
    let active = Arc::new(AtomicUsize::new(0));
    let weights: Arc<[u32]> = shared.plan.steps.iter().map(|step| step.weight).collect();
    let sink = Arc::new(SecondsSink::default());
    let mut tasks = Vec::new();
    for worker in 0..concurrency {
        let shared = Arc::clone(shared);
        let issued = Arc::clone(&issued);
        let weights = Arc::clone(&weights);
        let sink = Arc::clone(&sink);
        let active = Arc::clone(&active);
        let load = load.clone();
        tasks.push(tokio::spawn(async move {
            let mut recorder = Recorder::with_sink(sink);
            let mut end = Instant::now();
            let mut on = false;
            loop {
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                // A ramp: this virtual user waits until the ramp reaches it.
                if ramping {
                    let elapsed = now.saturating_duration_since(measure_start);
                    let wanted = worker < load.concurrency_at(elapsed);
                    if wanted != on {
                        on = wanted;
                        if on {
                            active.fetch_add(1, Ordering::Relaxed);
                        } else {
                            active.fetch_sub(1, Ordering::Relaxed);
                        }
                    }
                    if !on {
                        tokio::time::sleep(RAMP_TICK.min(deadline - now)).await;
                        continue;
                    }
                    if now >= measure_start {
                        recorder.users(elapsed, active.load(Ordering::Relaxed) as u64);
                    }
                }
                if now >= measure_start
                    && let Some(limit) = shared.plan.requests
                    && issued.fetch_add(1, Ordering::Relaxed) >= limit
                {
                    break;
                }
                let (index, _, params) = shared.next_request(worker, &weights);
                let step = &shared.plan.steps[index];
                let exchange = shared
                    .exchange_recording(
                        worker,
                        &step.method,
                        params,
                        Some(step),
                        Some(&mut recorder),
                    )
                    .await;
                // Closed loop: a request is due when it is sent.
                record(
                    &mut recorder,
                    &shared.progress,
                    step,
                    &exchange,
                    exchange.sent.max(now),
                    measure_start,
                );
                end = exchange.done;
                if exchange.result.is_err() && shared.all_ended() {
                    break;
                }
                if !step.think.is_zero() {
                    tokio::time::sleep(step.think).await;
                }
            }
            if on {
                active.fetch_sub(1, Ordering::Relaxed);
            }
            (recorder, end)
        }));
    }
    gather(tasks, &sink, measure_start).await
}

async fn gather(
    tasks: Vec<tokio::task::JoinHandle<(Recorder, Instant)>>,
    sink: &SecondsSink,
    measure_start: Instant,
) -> (Recorder, Instant) {
    let mut all = Recorder::default();
    let mut end = measure_start;
    for task in tasks {
        if let Ok((recorder, finished)) = task.await {
            all.merge(recorder);
            end = end.max(finished);
        }
    }
    all.adopt(sink);
    (all, end)
}

/// A start the scheduler hands a worker.
struct Due {
    at: Instant,
}

async fn open_loop(
    shared: &Arc<Shared>,
    rate: Rate,
    arrivals: Arrivals,
    max_outstanding: usize,
    start: Instant,
    measure_start: Instant,
) -> (Recorder, Instant) {
    let deadline = deadline(&shared.plan, measure_start);
    let outstanding = Arc::new(AtomicUsize::new(0));
    let dropped = Arc::new(AtomicU64::new(0));
    let (queue, taken) = tokio::sync::mpsc::unbounded_channel::<Due>();
    let taken = Arc::new(Mutex::new(taken));
    // HTTP: one worker per connection, each its own; stdio and in-process:
    // a window of requests in flight over the shared links, the rest
    // waiting in the queue (and measured from when they were due).
    let workers = match shared.links {
        Links::Http(_) => shared.link_count(),
        _ => max_outstanding.min(MAX_WINDOW),
    };
    let weights: Arc<[u32]> = shared.plan.steps.iter().map(|step| step.weight).collect();
    let sink = Arc::new(SecondsSink::default());
    let mut tasks = Vec::new();
    for worker in 0..workers {
        let shared = Arc::clone(shared);
        let taken = Arc::clone(&taken);
        let outstanding = Arc::clone(&outstanding);
        let weights = Arc::clone(&weights);
        let sink = Arc::clone(&sink);
        tasks.push(tokio::spawn(async move {
            let mut recorder = Recorder::with_sink(sink);
            let mut end = Instant::now();
            loop {
                let due = taken.lock().await.recv().await;
                let Some(due) = due else { break };
                let (index, _, params) = shared.next_request(worker, &weights);
                let step = &shared.plan.steps[index];
                if due.at >= measure_start && due.at.elapsed() > LATE_ALLOWANCE {
                    recorder.late += 1;
                }
                let exchange = shared
                    .exchange_recording(
                        worker,
                        &step.method,
                        params,
                        Some(step),
                        Some(&mut recorder),
                    )
                    .await;
                outstanding.fetch_sub(1, Ordering::SeqCst);
                record(
                    &mut recorder,
                    &shared.progress,
                    step,
                    &exchange,
                    due.at,
                    measure_start,
                );
                end = exchange.done;
            }
            (recorder, end)
        }));
    }
    // The schedule is kept on a thread of its own, asleep in the kernel's
    // high-resolution timer: tokio's timer wheel ticks in milliseconds,
    // and each tick of lateness would be counted as the server's.
    let schedule = Schedule {
        shared: Arc::clone(shared),
        rate,
        arrivals,
        max_outstanding,
        start,
        measure_start,
        deadline,
        outstanding,
        dropped: Arc::clone(&dropped),
    };
    let scheduler = tokio::task::spawn_blocking(move || schedule.run(queue));
    let _ = scheduler.await;
    let (mut recorder, end) = gather(tasks, &sink, measure_start).await;
    recorder.dropped += dropped.load(Ordering::Relaxed);
    (recorder, end.max(deadline.min(Instant::now())))
}

/// An open loop's starts: when each is due, handed to the workers then.
struct Schedule {
    shared: Arc<Shared>,
    rate: Rate,
    arrivals: Arrivals,
    max_outstanding: usize,
    start: Instant,
    measure_start: Instant,
    deadline: Instant,
    outstanding: Arc<AtomicUsize>,
    dropped: Arc<AtomicU64>,
}

impl Schedule {
    /// Sends each start to `queue` when it is due, until the deadline or
    /// the count; a start due while `max_outstanding` are outstanding is
    /// dropped. Blocks its thread.
    fn run(self, queue: tokio::sync::mpsc::UnboundedSender<Due>) {
        let limit = self.shared.plan.requests;
        let seed = match self.arrivals {
            Arrivals::Poisson { seed } => seed,
            Arrivals::Uniform => 0,
        };
        let mut random = Rng::new(seed);
        let mut due = self.start;
        let mut scheduled = 0u64;
        while !self.shared.all_ended() {
            let rate = self
                .rate
                .at(due.saturating_duration_since(self.measure_start))
                .max(0.1);
            let gap = match self.arrivals {
                Arrivals::Uniform => 1.0 / rate,
                Arrivals::Poisson { .. } => random.exponential(rate),
            };
            due += Duration::from_secs_f64(gap);
            if due >= self.deadline || limit.is_some_and(|limit| scheduled >= limit) {
                break;
            }
            let wait = due.saturating_duration_since(Instant::now());
            if !wait.is_zero() {
                std::thread::sleep(wait);
            }
            let measuring = due >= self.measure_start;
            if self.outstanding.load(Ordering::SeqCst) >= self.max_outstanding {
                if measuring {
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                }
                continue;
            }
            if measuring {
                scheduled += 1;
            }
            self.outstanding.fetch_add(1, Ordering::SeqCst);
            if queue.send(Due { at: due }).is_err() {
                break;
            }
        }
    }
}

/// Samples the server's process trees and the machine over a run.
struct Sampler {
    done: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<Sampled>,
}

#[derive(Default)]
struct Sampled {
    server: Option<ServerUse>,
    /// Machine CPU (total, idle) and ours, at the start and the end.
    machine: Option<((u64, u64), (u64, u64))>,
    own: Option<(u64, u64)>,
}

impl Sampled {
    /// CPUs kept busy by other processes than the generator and the server.
    fn other_load(&self, elapsed: Duration) -> Option<f64> {
        let ((total0, idle0), (total1, idle1)) = self.machine?;
        let busy = (total1.saturating_sub(total0)).saturating_sub(idle1.saturating_sub(idle0));
        let (own0, own1) = self.own?;
        let server = self
            .server
            .map(|server| {
                server
                    .after
                    .cpu_micros
                    .saturating_sub(server.before.cpu_micros)
            })
            .unwrap_or_default();
        let other = busy.saturating_sub(own1.saturating_sub(own0) + server);
        // /proc counts CPU in 10 ms ticks: over less than a second the
        // difference says nothing.
        let seconds = elapsed.as_secs_f64();
        (seconds >= 1.0).then(|| other as f64 / 1e6 / seconds)
    }
}

fn tree_usage(roots: &[u32]) -> Option<Usage> {
    let mut total: Option<Usage> = None;
    for root in roots {
        if let Some(usage) = cpu::sample(*root) {
            let sum = total.get_or_insert_with(Usage::default);
            sum.cpu_micros += usage.cpu_micros;
            sum.rss_kib += usage.rss_kib;
            sum.threads += usage.threads;
            sum.fds += usage.fds;
            sum.processes += usage.processes;
        }
    }
    total
}

fn spawn_sampler(roots: Vec<u32>, measure_start: Instant) -> Sampler {
    let done = Arc::new(AtomicBool::new(false));
    let finished = Arc::clone(&done);
    let task = tokio::spawn(async move {
        tokio::time::sleep_until(measure_start.into()).await;
        let own = || cpu::sample(std::process::id()).map(|usage| usage.cpu_micros);
        let machine0 = cpu::machine_cpu();
        let own0 = own();
        let before = tree_usage(&roots);
        let mut peak = before.map(|usage| usage.rss_kib).unwrap_or_default();
        let mut latest = before;
        while !finished.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(200)).await;
            if let Some(usage) = tree_usage(&roots) {
                peak = peak.max(usage.rss_kib);
                latest = Some(usage);
            }
        }
        let after = tree_usage(&roots).or(latest);
        let machine1 = cpu::machine_cpu();
        let own1 = own();
        Sampled {
            server: before.zip(after).map(|(before, after)| ServerUse {
                before,
                after,
                peak_rss_kib: peak.max(after.rss_kib),
            }),
            machine: machine0.zip(machine1),
            own: own0.zip(own1),
        }
    });
    Sampler { done, task }
}
