//! Many servers at once, supervised: what the host, the web page and the
//! gateway stand on.
//!
//! A [`Hub`] takes one [`ServerPlan`] per server and connects them all
//! concurrently, each within its own time limit, so a slow, dead or broken
//! server never delays or breaks the others. Each server has a supervisor
//! task: when its connection ends (a child that exits, a stream that
//! closes) it connects again after a growing delay, until too many
//! failures in a row make it give up ([`RestartPolicy`]); a server that
//! needs authorization waits in that state for [`Hub::reconnect`]. A
//! server that says its tools changed (`notifications/tools/list_changed`)
//! has them listed again. A server that declares the skills extension
//! (SEP-2640) has its skills listed with its tools, on each connection;
//! they are gathered as the server describes them, checking them is the
//! host's. A stdio child's stderr goes to the server's log file, never to
//! the terminal. Whoever serves the servers' lists onwards (the gateway)
//! hears of each connection and each list change through [`Hub::changes`].
//!
//! A tool call the server runs as a task is followed to its end (see
//! [`crate::tasks`]); [`Hub::follow_task`] takes up one whose id was kept.
//! [`Hub::call_tool_once`] leaves tasks and `input_required` rounds to
//! its caller, for a gateway that passes them on to its own clients.
//!
//! A tool call whose server died under it is repeated once on the new
//! connection when the tool says it is safe to repeat (annotated read-only
//! or idempotent), and otherwise fails saying so: a tool that may have done
//! part of its work is never run twice behind the user's back.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nexo_hint::{Hint, Hinted};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, JsonObject, Skill,
    Tool,
};
use tokio::sync::{Notify, broadcast, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::namespace::Namespace;
use crate::{CallLimits, ClientError, ConnectOptions, ErrorKind, Session, Target, TaskObserver};

/// One server to run or reach.
#[derive(Debug, Clone)]
pub struct ServerPlan {
    /// Its name in the configuration.
    pub name: String,
    pub target: Target,
    /// Time limits of its tool calls.
    pub limits: ToolLimits,
    /// Where a stdio child's stderr goes (appended); `None` keeps only its
    /// last lines, for errors.
    pub log: Option<PathBuf>,
    /// OAuth for a URL server that answers 401; `None` reports the 401.
    pub oauth: Option<crate::auth::OAuthOptions>,
    /// A stdio server's own start-up allowance; `None` leaves the hub's
    /// ([`ConnectOptions::startup`]).
    pub startup: Option<Duration>,
}

/// The time limits of a server's tool calls: its own, and some tools' own.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolLimits {
    pub server: CallLimits,
    pub tools: HashMap<String, CallLimits>,
}

impl ToolLimits {
    /// The same limits for every tool.
    pub fn uniform(limits: CallLimits) -> Self {
        Self {
            server: limits,
            tools: HashMap::new(),
        }
    }

    pub fn for_tool(&self, tool: &str) -> CallLimits {
        self.tools.get(tool).copied().unwrap_or(self.server)
    }
}

/// When a server whose connection ended is connected again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RestartPolicy {
    /// The wait before the first new attempt; it doubles with each failure.
    pub first_delay: Duration,
    /// The longest wait between attempts.
    pub max_delay: Duration,
    /// How many failures in a row (a start that failed, or a connection
    /// that ended before `healthy_after`) make the supervisor give up.
    pub max_failures: u32,
    /// How long a connection must last for its end not to count as a failure.
    pub healthy_after: Duration,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        Self {
            first_delay: Duration::from_millis(250),
            max_delay: Duration::from_secs(30),
            max_failures: 5,
            healthy_after: Duration::from_secs(30),
        }
    }
}

impl RestartPolicy {
    fn delay(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(16);
        self.first_delay
            .saturating_mul(1 << doublings)
            .min(self.max_delay)
    }
}

/// Where a server stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// The first connection is under way.
    Starting,
    Connected,
    /// The connection ended or failed; another attempt comes after a delay.
    Restarting,
    /// Too many failures in a row; [`Hub::reconnect`] tries again.
    Failed,
    /// The server wants authorization nobody has given yet.
    NeedsAuthorization,
}

impl State {
    /// As `nexo servers` shows it.
    pub fn name(self) -> &'static str {
        match self {
            State::Starting => "starting",
            State::Connected => "connected",
            State::Restarting => "restarting",
            State::Failed => "failed",
            State::NeedsAuthorization => "needs authorization",
        }
    }
}

/// What `nexo servers` shows of one server.
#[derive(Debug, Clone)]
pub struct ServerStatus {
    pub name: String,
    /// The target as shown (credentials redacted).
    pub target: String,
    pub state: State,
    /// `stdio`, `streamable-http`, `sse` or `in-process`, once connected.
    pub transport: Option<&'static str>,
    /// The protocol revision negotiated, once connected.
    pub revision: Option<String>,
    /// How many tools it offers, once connected.
    pub tools: Option<usize>,
    /// How many skills it lists, once connected, when it declares the
    /// skills extension.
    pub skills: Option<usize>,
    /// The last failure, with its hint.
    pub last_error: Option<Arc<ClientError>>,
    /// Where its child's stderr goes.
    pub log: Option<PathBuf>,
    /// How many times it was started or connected again after its first
    /// attempt.
    pub restarts: u32,
    /// How long after the hub's start it was first connected, its tools
    /// listed; `None` until then.
    pub ready: Option<Duration>,
}

/// A server's state as its supervisor publishes it.
#[derive(Clone)]
struct Snapshot {
    state: State,
    session: Option<Arc<Session>>,
    tools: Arc<Vec<Tool>>,
    /// `None` when the server does not declare the skills extension.
    skills: Option<Arc<Vec<Skill>>>,
    /// Counts connections, so that a waiter can tell a new one from the one it had.
    generation: u64,
    last_error: Option<Arc<ClientError>>,
    restarts: u32,
    ready: Option<Duration>,
}

struct Managed {
    plan: ServerPlan,
    snapshot: watch::Sender<Snapshot>,
    reconnect: Notify,
    changes: broadcast::Sender<Changed>,
}

/// What changed about one server (see [`Hub::changes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    pub server: String,
    pub change: Change,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// It was connected (again): any of its lists may differ.
    Connected,
    /// Its tools changed and were listed again ([`Hub::tools`] has them).
    Tools,
    /// It said its prompts changed.
    Prompts,
    /// It said its resources changed.
    Resources,
}

/// How many changes a slow listener may fall behind by.
const CHANGE_BACKLOG: usize = 64;

/// Servers connected together and kept connected.
pub struct Hub {
    servers: Vec<Arc<Managed>>,
    supervisors: Vec<JoinHandle<()>>,
    changes: broadcast::Sender<Changed>,
}

impl Hub {
    /// Starts every plan's server concurrently and returns once each has
    /// connected or failed its first attempt (within its own time limit).
    /// `options` applies to every server; `child_stderr` and `oauth` are
    /// each plan's own.
    pub async fn start(
        plans: Vec<ServerPlan>,
        options: ConnectOptions,
        policy: RestartPolicy,
    ) -> Self {
        let started = Instant::now();
        let changes = broadcast::channel(CHANGE_BACKLOG).0;
        let mut servers = Vec::new();
        let mut supervisors = Vec::new();
        for plan in plans {
            let managed = Arc::new(Managed {
                plan,
                snapshot: watch::channel(Snapshot {
                    state: State::Starting,
                    session: None,
                    tools: Arc::default(),
                    skills: None,
                    generation: 0,
                    last_error: None,
                    restarts: 0,
                    ready: None,
                })
                .0,
                reconnect: Notify::new(),
                changes: changes.clone(),
            });
            supervisors.push(tokio::spawn(supervise(
                managed.clone(),
                options.clone(),
                policy,
                started,
            )));
            servers.push(managed);
        }
        for managed in &servers {
            let mut snapshot = managed.snapshot.subscribe();
            let _ = snapshot.wait_for(|now| now.state != State::Starting).await;
        }
        Self {
            servers,
            supervisors,
            changes,
        }
    }

    /// Hears of each server connected (again) and each change of a
    /// connected server's lists, from now on.
    pub fn changes(&self) -> broadcast::Receiver<Changed> {
        self.changes.subscribe()
    }

    fn managed(&self, server: &str) -> Result<&Arc<Managed>, ClientError> {
        self.servers
            .iter()
            .find(|managed| managed.plan.name == server)
            .ok_or_else(|| {
                let known: Vec<&str> = self.servers.iter().map(|m| m.plan.name.as_str()).collect();
                ClientError::usage(
                    format!("no server is called `{server}`"),
                    Some(if known.is_empty() {
                        "the configuration has no servers".to_owned()
                    } else {
                        format!("the configured servers: {}", known.join(", "))
                    }),
                )
            })
    }

    /// Every server's state, in the order of the plans.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.servers
            .iter()
            .map(|managed| {
                let now = managed.snapshot.borrow().clone();
                let session = now
                    .session
                    .as_ref()
                    .filter(|_| now.state == State::Connected);
                ServerStatus {
                    name: managed.plan.name.clone(),
                    target: managed.plan.target.to_string(),
                    state: now.state,
                    transport: session.map(|session| session.transport()),
                    revision: session.and_then(|session| session.revision()),
                    tools: session.map(|_| now.tools.len()),
                    skills: session.and(now.skills.as_ref()).map(|skills| skills.len()),
                    last_error: now.last_error.clone(),
                    log: managed.plan.log.clone(),
                    restarts: now.restarts,
                    ready: now.ready,
                }
            })
            .collect()
    }

    /// The tools of every connected server, as `(server, tool)`.
    pub fn tools(&self) -> Vec<(String, Tool)> {
        self.tool_lists()
            .into_iter()
            .flat_map(|(server, tools)| {
                tools
                    .iter()
                    .map(|tool| (server.clone(), tool.clone()))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Each connected server's tools as it listed them last, shared rather
    /// than copied (a list is replaced, never changed, so an unchanged one
    /// is the same `Arc`), in the order of the plans.
    pub fn tool_lists(&self) -> Vec<(String, Arc<Vec<Tool>>)> {
        self.servers
            .iter()
            .filter_map(|managed| {
                let now = managed.snapshot.borrow();
                (now.state == State::Connected)
                    .then(|| (managed.plan.name.clone(), now.tools.clone()))
            })
            .collect()
    }

    /// The skills of every connected server that declares the skills
    /// extension, as `(server, skill)`, in the servers' order.
    pub fn skills(&self) -> Vec<(String, Skill)> {
        self.servers
            .iter()
            .flat_map(|managed| {
                let now = managed.snapshot.borrow().clone();
                let skills = match (now.state, now.skills) {
                    (State::Connected, Some(skills)) => skills.as_ref().clone(),
                    _ => Vec::new(),
                };
                skills
                    .into_iter()
                    .map(|skill| (managed.plan.name.clone(), skill))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// The names the tools of every connected server go by when they are
    /// offered together (`server__tool`; see [`crate::namespace`]).
    pub fn tool_names(&self) -> Namespace {
        Namespace::build(
            self.tools()
                .iter()
                .map(|(server, tool)| (server.as_str(), tool.name.as_ref())),
        )
    }

    /// The live session of `server`, waiting up to `wait` for one that is
    /// starting or restarting.
    pub async fn session(&self, server: &str, wait: Duration) -> Result<Arc<Session>, ClientError> {
        let managed = self.managed(server)?;
        connected(managed, 0, wait)
            .await
            .map(|(session, _)| session)
    }

    /// Calls `tool` on `server` within the limits configured for it. If the
    /// server dies during the call, a tool annotated read-only or idempotent
    /// is called once more on the new connection; any other fails, saying
    /// it was not repeated.
    pub async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: JsonObject,
    ) -> Result<CallToolResult, ClientError> {
        self.call_tool_observed(server, tool, arguments, None).await
    }

    /// [`Hub::call_tool`], `observer` told of the task the server runs the
    /// call as, if it does.
    pub async fn call_tool_observed(
        &self,
        server: &str,
        tool: &str,
        arguments: JsonObject,
        observer: Option<TaskObserver>,
    ) -> Result<CallToolResult, ClientError> {
        self.repeatable(server, tool, |session, limits| {
            let (arguments, observer) = (arguments.clone(), observer.clone());
            async move {
                session
                    .call_tool_observed(tool, arguments, limits, observer)
                    .await
            }
        })
        .await
    }

    /// The time limits of a call of `tool` on `server` (its plan's).
    pub fn call_limits(&self, server: &str, tool: &str) -> Result<CallLimits, ClientError> {
        Ok(self.managed(server)?.plan.limits.for_tool(tool))
    }

    /// One `tools/call` of `params` on `server` as the server answers it,
    /// declaring `capabilities` ([`Session::call_tool_once`]): its
    /// `input_required` rounds and its task are the caller's to pass on
    /// (the gateway's). Repeated as [`Hub::call_tool`] is.
    pub async fn call_tool_once(
        &self,
        server: &str,
        params: CallToolRequestParams,
        capabilities: Option<ClientCapabilities>,
    ) -> Result<CallToolResponse, ClientError> {
        let tool = params.name.to_string();
        self.repeatable(server, &tool, |session, limits| {
            let (params, capabilities) = (params.clone(), capabilities.clone());
            async move { session.call_tool_once(params, limits, capabilities).await }
        })
        .await
    }

    /// Runs `call` on `server`'s session within `tool`'s limits, once more
    /// on the new connection if the server died during it and the tool is
    /// safe to repeat (see the module comment).
    async fn repeatable<T, F, Fut>(
        &self,
        server: &str,
        tool: &str,
        call: F,
    ) -> Result<T, ClientError>
    where
        F: Fn(Arc<Session>, CallLimits) -> Fut,
        Fut: std::future::Future<Output = Result<T, ClientError>>,
    {
        let managed = self.managed(server)?;
        let limits = managed.plan.limits.for_tool(tool);
        let (session, generation) = connected(managed, 0, limits.idle).await?;
        let first = call(session.clone(), limits).await;
        let error = match first {
            Err(error) if session.is_ended() && error.kind() == ErrorKind::Unreachable => error,
            other => return other,
        };
        let repeatable = managed
            .snapshot
            .borrow()
            .tools
            .iter()
            .find(|known| known.name == tool)
            .and_then(|known| known.annotations.as_ref())
            .is_some_and(|hints| {
                hints.read_only_hint == Some(true) || hints.idempotent_hint == Some(true)
            });
        if !repeatable {
            return Err(interrupted(&managed.plan, tool, error));
        }
        tracing::info!(
            server,
            tool,
            "the server died during the call; calling again"
        );
        let (session, _) = connected(managed, generation + 1, limits.idle).await?;
        call(session, limits).await
    }

    /// Follows the task `task` that `server` runs for a call of `tool`,
    /// whose id was kept, to its end.
    pub async fn follow_task(
        &self,
        server: &str,
        tool: &str,
        task: &str,
        observer: Option<TaskObserver>,
    ) -> Result<CallToolResult, ClientError> {
        let managed = self.managed(server)?;
        let limits = managed.plan.limits.for_tool(tool);
        let (session, _) = connected(managed, 0, limits.idle).await?;
        session.follow_task(tool, task, observer.as_ref()).await
    }

    /// Drops `server`'s connection and connects again now, starting the
    /// failure count afresh (after a failure, or once authorized).
    pub fn reconnect(&self, server: &str) -> Result<(), ClientError> {
        let managed = self.managed(server)?;
        managed.snapshot.send_modify(|now| {
            if matches!(now.state, State::Failed | State::NeedsAuthorization) {
                now.state = State::Restarting;
            }
        });
        managed.reconnect.notify_one();
        Ok(())
    }

    /// Ends every session (and child process).
    pub async fn close(self) {
        for supervisor in &self.supervisors {
            supervisor.abort();
        }
        for managed in &self.servers {
            let session = managed.snapshot.borrow().session.clone();
            if let Some(session) = session {
                session.end().await;
            }
        }
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        for supervisor in &self.supervisors {
            supervisor.abort();
        }
    }
}

/// Waits up to `wait` for a connected session of at least `generation`.
async fn connected(
    managed: &Managed,
    generation: u64,
    wait: Duration,
) -> Result<(Arc<Session>, u64), ClientError> {
    let mut snapshot = managed.snapshot.subscribe();
    let settled = snapshot.wait_for(|now| match now.state {
        State::Connected => now.generation >= generation,
        State::Failed | State::NeedsAuthorization => true,
        State::Starting | State::Restarting => false,
    });
    let now = match tokio::time::timeout(wait, settled).await {
        Ok(Ok(now)) => now.clone(),
        Ok(Err(_)) | Err(_) => {
            let last = managed.snapshot.borrow().last_error.clone();
            return Err(not_ready(&managed.plan, State::Restarting, last, wait));
        }
    };
    match (now.state, now.session) {
        (State::Connected, Some(session)) => Ok((session, now.generation)),
        (state, _) => Err(not_ready(&managed.plan, state, now.last_error, wait)),
    }
}

/// Why a call could not be made: the server's last failure, or that it is
/// still (re)starting.
fn not_ready(
    plan: &ServerPlan,
    state: State,
    last_error: Option<Arc<ClientError>>,
    waited: Duration,
) -> ClientError {
    match (state, last_error) {
        (State::Failed | State::NeedsAuthorization, Some(error)) => error.as_ref().clone(),
        _ => ClientError::Unreachable {
            target: plan.name.clone(),
            detail: format!(
                "the server is still starting after {} s",
                waited.as_secs_f64()
            ),
            hint: Hint::new(format!(
                "wait for it, or look at its state{}",
                log_hint(plan)
            ))
            .command("nexo servers", "shows every server's state")
            .on_page("the Servers view shows every server's state"),
            stderr: Vec::new(),
        },
    }
}

fn log_hint(plan: &ServerPlan) -> String {
    match &plan.log {
        Some(log) => format!(" and its log in `{}`", log.display()),
        None => String::new(),
    }
}

/// A call cut short by its server's death, not repeated.
fn interrupted(plan: &ServerPlan, tool: &str, cause: ClientError) -> ClientError {
    ClientError::Unreachable {
        target: plan.name.clone(),
        detail: format!("the server went away while `{tool}` was running ({cause})"),
        hint: Hint::new(format!(
            "nexo is connecting to it again; `{tool}` was not called again because it is not \
             annotated read-only or idempotent, so it may have done part of its work: check \
             before calling it again, and look at its state{}",
            log_hint(plan)
        ))
        .command("nexo servers", "shows every server's state")
        .on_page("the Servers view shows every server's state"),
        stderr: Vec::new(),
    }
}

/// Appends a stdio child's stderr lines to its log file, each with the time.
fn log_sink(plan: &ServerPlan) -> Option<(crate::StderrSink, Arc<Mutex<std::fs::File>>)> {
    let path = plan.log.as_ref()?;
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let file = match std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        Ok(file) => Arc::new(Mutex::new(file)),
        Err(error) => {
            tracing::warn!(%error, path = %path.display(), "cannot open the server's log");
            return None;
        }
    };
    let writer = file.clone();
    let sink: crate::StderrSink = Arc::new(move |line: &str| {
        append(&writer, line);
    });
    Some((sink, file))
}

fn append(file: &Mutex<std::fs::File>, line: &str) {
    if let Ok(mut file) = file.lock() {
        let _ = writeln!(file, "{} {line}", jiff::Timestamp::now());
    }
}

/// Keeps one server connected, as the module comment says.
async fn supervise(
    managed: Arc<Managed>,
    base: ConnectOptions,
    policy: RestartPolicy,
    hub_started: Instant,
) {
    let plan = &managed.plan;
    let log = log_sink(plan);
    let options = ConnectOptions {
        child_stderr: log.as_ref().map(|(sink, _)| sink.clone()),
        oauth: plan.oauth.clone(),
        server_name: Some(plan.name.clone()),
        startup: plan.startup.unwrap_or(base.startup),
        ..base
    };
    let note = |line: &str| {
        if let Some((_, file)) = &log {
            append(file, &format!("nexo: {line}"));
        }
    };
    let mut failures = 0u32;
    let mut generation = 0u64;
    let mut restarts = 0u32;
    loop {
        let started = Instant::now();
        note(&format!("connecting to `{}`", plan.target));
        let error = match crate::connect(&plan.target, &options).await {
            Ok(session) => {
                let session = Arc::new(session);
                let tools = match session.list_tools().await {
                    Ok(tools) => tools,
                    Err(error) => {
                        tracing::debug!(server = %plan.name, %error, "listing the tools");
                        Vec::new()
                    }
                };
                let skills = if session.supports_skills() {
                    match session.list_skills().await {
                        Ok(skills) => Some(Arc::new(skills)),
                        Err(error) => {
                            note(&format!("cannot list its skills: {error}"));
                            Some(Arc::default())
                        }
                    }
                } else {
                    None
                };
                generation += 1;
                managed.snapshot.send_modify(|now| {
                    now.state = State::Connected;
                    now.session = Some(session.clone());
                    now.tools = Arc::new(tools);
                    now.skills = skills;
                    now.generation = generation;
                    now.restarts = restarts;
                    now.ready.get_or_insert_with(|| hub_started.elapsed());
                });
                let tell = |change| {
                    // No receiver means nobody serves the lists onwards.
                    let _ = managed.changes.send(Changed {
                        server: plan.name.clone(),
                        change,
                    });
                };
                tell(Change::Connected);
                // A server that says its tools changed is listed again.
                let mut tools_changed = session.tools_changed();
                let mut prompts_changed = session.prompts_changed();
                let mut resources_changed = session.resources_changed();
                let asked = loop {
                    tokio::select! {
                        () = session.ended() => break false,
                        () = managed.reconnect.notified() => break true,
                        Ok(()) = tools_changed.changed() => match session.list_tools().await {
                            Ok(tools) => {
                                note("its tools changed; listed them again");
                                managed.snapshot.send_modify(|now| now.tools = Arc::new(tools));
                                tell(Change::Tools);
                            }
                            Err(error) => {
                                tracing::debug!(server = %plan.name, %error, "listing the changed tools");
                            }
                        },
                        Ok(()) = prompts_changed.changed() => tell(Change::Prompts),
                        Ok(()) = resources_changed.changed() => tell(Change::Resources),
                    }
                };
                session.end().await;
                if asked {
                    note("reconnecting, as asked");
                    failures = 0;
                    restarts += 1;
                    managed.snapshot.send_modify(|now| {
                        now.state = State::Restarting;
                        now.session = None;
                    });
                    continue;
                }
                if started.elapsed() >= policy.healthy_after {
                    failures = 0;
                }
                ClientError::Unreachable {
                    target: plan.name.clone(),
                    detail: "the server went away".to_owned(),
                    hint: format!("nexo connects to it again{}", log_hint(plan)).into(),
                    stderr: Vec::new(),
                }
            }
            Err(error) if error.kind() == ErrorKind::Unauthorized => {
                note(&format!("{error}"));
                managed.snapshot.send_modify(|now| {
                    now.state = State::NeedsAuthorization;
                    now.session = None;
                    now.last_error = Some(Arc::new(error));
                });
                managed.reconnect.notified().await;
                failures = 0;
                continue;
            }
            Err(error) => error,
        };
        note(&format!("{error}"));
        failures += 1;
        // A command that cannot be run fails the same way every time.
        let gave_up =
            failures >= policy.max_failures || matches!(error, ClientError::CannotStart { .. });
        managed.snapshot.send_modify(|now| {
            now.state = if gave_up {
                State::Failed
            } else {
                State::Restarting
            };
            now.session = None;
            now.restarts = restarts;
            now.last_error = Some(Arc::new(if gave_up && failures > 1 {
                crash_loop(plan, failures, error)
            } else {
                error
            }));
        });
        if gave_up {
            note(&if failures == 1 {
                "gave up: its command cannot be run".to_owned()
            } else {
                format!("gave up after {failures} failures in a row")
            });
            managed.reconnect.notified().await;
            failures = 0;
        } else {
            tokio::select! {
                () = tokio::time::sleep(policy.delay(failures)) => {}
                () = managed.reconnect.notified() => failures = 0,
            }
        }
        restarts += 1;
    }
}

/// A server given up on after failing `failures` times in a row.
fn crash_loop(plan: &ServerPlan, failures: u32, last: ClientError) -> ClientError {
    let hint = match &last {
        ClientError::Unreachable { hint, .. } | ClientError::Protocol { hint, .. } => {
            hint.clone().append(&log_hint(plan))
        }
        other => other.hint().unwrap_or_else(|| Hint::new("")),
    };
    ClientError::Unreachable {
        target: plan.name.clone(),
        detail: format!("gave up after {failures} failures in a row; the last: {last}"),
        hint,
        stderr: match last {
            ClientError::Unreachable { stderr, .. } | ClientError::Protocol { stderr, .. } => {
                stderr
            }
            _ => Vec::new(),
        },
    }
}
