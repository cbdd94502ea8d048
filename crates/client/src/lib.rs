//! Reaching any MCP server by hand or from a host: [`Target`]s (a URL or a
//! command to spawn), [`connect`] over the right transport, and a
//! [`Session`] whose calls return results or [`ClientError`]s that say what
//! failed and what to try.
//!
//! This crate knows no particular server. The protocol is rmcp's; what is
//! here is the choice of transport and protocol era, the HTTP retry policy
//! ([`http`]), OAuth when a server asks for it ([`auth`]), answers to
//! server requests ([`handler`]), tool calls a server runs as tasks
//! followed to their end ([`tasks`]), argument coercion ([`arguments`]),
//! credentials that never print ([`secret`]), files replaced whole
//! ([`replace`]) and error classification;
//! and raw JSON-RPC with a child process for the tools that must see the
//! wire ([`raw`]).

pub mod arguments;
pub mod auth;
mod child;
mod classify;
pub mod config;
pub mod connection;
pub mod consent;
pub mod doctor;
pub mod era;
mod error;
pub mod forward;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
pub mod handler;
pub mod http;
pub mod hub;
mod inprocess;
pub mod legacy_sse;
pub mod namespace;
pub mod raw;
pub mod replace;
pub mod secret;
pub mod sse;
mod startup;
pub mod streamable;
mod tap;
mod target;
pub mod tasks;
pub mod tls;
mod wire;

use std::sync::Arc;
use std::time::Duration;

use ::http::HeaderMap;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams,
    ClientCapabilities, ClientConfig, ClientRequest, CompleteRequestParams, CompleteResult,
    GetPromptRequest, GetPromptRequestParams, GetPromptResponse, GetPromptResult,
    GetSkillRequestParams, GetTaskParams, GetTaskResult, InputResponses, JsonObject, Prompt,
    ProtocolVersion, ReadResourceRequest, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Resource, ResourceTemplate, ServerPeerInfo, ServerResult, Skill, Tool,
    UpdateTaskParams,
};
use rmcp::service::{ClientLifecycleMode, PeerRequestOptions, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransport, StreamableHttpClientTransportConfig,
};
use rmcp::{ClientServiceExt, RoleClient};
use tokio::sync::watch;

use crate::classify::{Via, classify, spawn_error, stray_output};
pub use crate::error::{ClientError, ErrorKind, Method, SseError};
pub use crate::handler::{ElicitationPolicy, ElicitationResponder, Handler};
pub use crate::inprocess::InProcess;
pub use crate::secret::{EnvVar, Header, Secret, TargetUrl};
pub use crate::target::{HttpTransport, Target};
pub use crate::tasks::{TaskObserver, TaskUpdate};

/// The default time limit for one exchange (`--timeout`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a failed child's stderr is read on before the failure is shown.
const CHILD_STDERR_WAIT: Duration = Duration::from_millis(300);
/// The default start-up allowance of a stdio server: the time its
/// handshake may take (`--startup-timeout`, `startupTimeout` in a config
/// entry). `npx -y` and `uvx` download the server on a cold cache,
/// `docker run` may pull an image, a JVM warms up: a start is no
/// unanswered request.
pub const DEFAULT_STARTUP: Duration = Duration::from_secs(60);
/// The longest wait for a session's standalone stream after the handshake.
const STANDALONE_STREAM_WAIT: Duration = Duration::from_secs(3);

/// Which protocol era to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Era {
    /// Try `server/discover` (2026-07-28) and fall back to `initialize`.
    #[default]
    Auto,
    /// Only the stateful `initialize` handshake (2025-11-25 and older).
    Initialize,
    /// Only the stateless 2026-07-28 protocol.
    Discover,
}

impl Era {
    /// The era a protocol revision belongs to, as rmcp decides it: a
    /// revision with the `initialize` handshake (2025-11-25 and older) or a
    /// stateless one (2026-07-28 on).
    pub fn for_revision(revision: &str) -> Era {
        let version: ProtocolVersion =
            match serde_json::from_value(serde_json::Value::String(revision.to_owned())) {
                Ok(version) => version,
                Err(_) => return Era::Auto,
            };
        if version.has_initialize() {
            Era::Initialize
        } else {
            Era::Discover
        }
    }
}

/// Receives each line a stdio server writes to its stderr.
pub type StderrSink = Arc<dyn Fn(&str) + Send + Sync>;

/// How to connect.
#[derive(Clone)]
pub struct ConnectOptions {
    /// The limit of each exchange (a URL server's handshake included).
    pub timeout: Duration,
    /// The limit of a stdio server's handshake, which starts it.
    pub startup: Duration,
    pub era: Era,
    /// OAuth for URL targets that answer 401; `None` reports the 401 as is.
    pub oauth: Option<auth::OAuthOptions>,
    pub elicitation: ElicitationPolicy,
    /// Where a stdio server's own log lines (its stderr) go. `None` keeps
    /// them out of the way: only the last few are kept, and shown with a
    /// failure of the child.
    pub child_stderr: Option<StderrSink>,
    /// Where the server's log and progress notifications go; `None` drops
    /// them (and asks for none).
    pub notices: Option<handler::NoticeSink>,
    /// Where every message goes, one trace line each (`--trace`).
    pub trace: Option<nexo_trace::Tracer>,
    /// The server's name in traces (its name in the configuration); the
    /// target as shown when `None`.
    pub server_name: Option<String>,
    /// The roots offered to servers that ask (`file://` URIs, a 2025-era
    /// feature); none offered when empty.
    pub roots: Vec<String>,
    /// Who answers the servers' sampling requests (a 2025-era feature);
    /// none declared when `None`.
    pub sampling: Option<Arc<dyn handler::SamplingResponder>>,
    /// Extensions declared beside those nexo-client itself handles, by
    /// identifier with their settings (the web page's MCP Apps).
    pub extensions: rmcp::model::ExtensionCapabilities,
}

impl std::fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectOptions")
            .field("timeout", &self.timeout)
            .field("startup", &self.startup)
            .field("era", &self.era)
            .field("oauth", &self.oauth)
            .field("elicitation", &self.elicitation)
            .field("child_stderr", &self.child_stderr.as_ref().map(|_| "sink"))
            .field("notices", &self.notices.as_ref().map(|_| "sink"))
            .field("trace", &self.trace)
            .field("server_name", &self.server_name)
            .field("roots", &self.roots)
            .field("sampling", &self.sampling.as_ref().map(|_| "responder"))
            .field("extensions", &self.extensions)
            .finish()
    }
}

/// How many of a stdio server's last stderr lines a failure shows.
const STDERR_TAIL: usize = 5;

/// The last lines a stdio server wrote to its stderr.
#[derive(Clone, Default)]
struct StderrTail(Arc<std::sync::Mutex<std::collections::VecDeque<String>>>);

impl StderrTail {
    fn push(&self, line: &str) {
        if let Ok(mut lines) = self.0.lock() {
            if lines.len() == STDERR_TAIL {
                lines.pop_front();
            }
            lines.push_back(line.to_owned());
        }
    }

    fn lines(&self) -> Vec<String> {
        self.0
            .lock()
            .map(|lines| lines.iter().cloned().collect())
            .unwrap_or_default()
    }
}

/// Reads a child's stderr to its end: each line to `sink`, the last few
/// kept in `tail`.
fn follow_stderr(
    stderr: tokio::process::ChildStderr,
    sink: Option<StderrSink>,
    tail: StderrTail,
) -> tokio::task::JoinHandle<()> {
    use tokio::io::AsyncBufReadExt;
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tail.push(&line);
            if let Some(sink) = &sink {
                sink(&line);
            }
        }
    })
}

impl Default for ConnectOptions {
    fn default() -> Self {
        Self {
            timeout: DEFAULT_TIMEOUT,
            startup: DEFAULT_STARTUP,
            era: Era::Auto,
            oauth: None,
            elicitation: ElicitationPolicy::default(),
            child_stderr: None,
            notices: None,
            trace: None,
            server_name: None,
            roots: Vec::new(),
            sampling: None,
            extensions: rmcp::model::ExtensionCapabilities::new(),
        }
    }
}

/// A live connection to one server.
pub struct Session {
    service: RunningService<RoleClient, Handler>,
    target: String,
    transport: &'static str,
    timeout: Duration,
    /// What no error may show ([`Target::secrets`]).
    secrets: Vec<String>,
    /// How the server is reached, for what its failures mean.
    reach: Reach,
    /// Whether notices are wanted: calls then ask for progress and logs.
    notices: bool,
    /// Whether the authorization agent has the URL (see [`within`]).
    agent_busy: watch::Receiver<bool>,
    /// Whether the connection has ended (see [`Session::ended`]).
    ended: watch::Receiver<bool>,
    /// Counts the server's progress notifications (see [`within`]).
    progress: watch::Receiver<u64>,
    /// Whether a person is answering a form of the server's (see
    /// [`within`]).
    answering: watch::Receiver<bool>,
    /// The `tasks/cancel` requests of calls given up, finished before the
    /// session ends.
    cancels: tasks::Cancels,
}

fn handler(options: &ConnectOptions) -> Handler {
    let mut info = ClientConfig::default();
    // What an `initialize` asks for; `server/discover` names its own.
    info.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
    info.client_info.name = "nexo".into();
    info.client_info.version = env!("CARGO_PKG_VERSION").into();
    info.capabilities.extensions = Some(options.extensions.clone());
    Handler::new(info, options.elicitation.clone())
        .with_notices(options.notices.clone())
        .with_roots(options.roots.clone())
        .with_sampling(options.sampling.clone())
}

fn lifecycle(era: Era) -> ClientLifecycleMode {
    let modern = vec![ProtocolVersion::V_2026_07_28];
    match era {
        Era::Auto => ClientLifecycleMode::Auto {
            preferred_versions: modern,
            legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
        },
        Era::Initialize => ClientLifecycleMode::Initialize,
        Era::Discover => ClientLifecycleMode::Discover {
            preferred_versions: modern,
        },
    }
}

/// Connects to `target` and completes the protocol handshake. No error of
/// this session shows the target's credentials, even where the server
/// quotes them back.
pub async fn connect(target: &Target, options: &ConnectOptions) -> Result<Session, ClientError> {
    let secrets = target.secrets();
    let agent_busy = Arc::new(watch::channel(false).0);
    let ended: tap::Ended = Arc::new(watch::channel(false).0);
    let opened = match open(target, options, &agent_busy, &ended).await {
        Ok(opened) => Ok(opened),
        Err(error) => Err(elsewhere(target, error, options.timeout).await),
    };
    let (service, transport, reach) =
        opened.map_err(|error| token_refused(target, error).redacted(&secrets))?;
    let progress = service.service().progress();
    let answering = service.service().answering();
    Ok(Session {
        service,
        target: target.to_string(),
        transport,
        timeout: options.timeout,
        secrets,
        notices: options.notices.is_some(),
        agent_busy: agent_busy.subscribe(),
        ended: ended.subscribe(),
        progress,
        answering,
        reach,
        cancels: tasks::Cancels::default(),
    })
}

async fn open(
    target: &Target,
    options: &ConnectOptions,
    agent_busy: &Arc<watch::Sender<bool>>,
    ended: &tap::Ended,
) -> Result<(RunningService<RoleClient, Handler>, &'static str, Reach), ClientError> {
    let name = target.to_string();
    let mut reach = Reach::Http;
    let (service, transport) = match target {
        Target::Url {
            url,
            transport,
            headers,
        } => {
            let headers = header_map(headers);
            http_url(url)?;
            let url = url.expose();
            match transport {
                HttpTransport::Http => (
                    streamable(url, &headers, &name, options, agent_busy, ended)
                        .await
                        .0?,
                    STREAMABLE_HTTP,
                ),
                HttpTransport::Sse => (
                    legacy(url, headers, &name, options, ended).await?,
                    LEGACY_SSE,
                ),
                HttpTransport::Auto => {
                    match streamable(url, &headers, &name, options, agent_busy, ended).await {
                        (Ok(service), _) => (service, STREAMABLE_HTTP),
                        (Err(error), Some(status)) if matches!(status, 400 | 404 | 405) => {
                            tracing::info!(
                                status,
                                "the server refused Streamable HTTP; trying the legacy HTTP+SSE transport"
                            );
                            match legacy(url, headers, &name, options, ended).await {
                                Ok(service) => (service, LEGACY_SSE),
                                Err(legacy_error) => {
                                    return Err(both_failed(status, error, legacy_error));
                                }
                            }
                        }
                        (Err(error), _) => return Err(error),
                    }
                }
            }
        }
        Target::Stdio { command, env, cwd } => {
            let (program, arguments) = command
                .split_first()
                .ok_or_else(|| ClientError::usage("the `--stdio` command is empty", None))?;
            let mut child = tokio::process::Command::new(program);
            child
                .args(arguments)
                .envs(env.iter().map(|var| (&var.key, var.value.expose())));
            if let Some(cwd) = cwd {
                child.current_dir(cwd);
            }
            let trace = tap::connection(traced(options, &name, STDIO));
            let (transport, stderr, stray) = child::ChildTransport::spawn(child, trace)
                .map_err(|error| spawn_error(&name, program, &error))?;
            let tail = StderrTail::default();
            let reader = follow_stderr(stderr, options.child_stderr.clone(), tail.clone());
            let service = handshake(
                stdio_start(transport, options, ended, &name),
                &name,
                Via::Stdio(program),
                options.startup,
                None,
            )
            .await;
            match service {
                Ok(service) => {
                    reach = Reach::Stdio {
                        program: program.clone(),
                        stray,
                    };
                    (service, STDIO)
                }
                Err(error) => {
                    // What the child said before it failed, read to its end
                    // if it has exited (briefly: it may still be running).
                    let _ = tokio::time::timeout(CHILD_STDERR_WAIT, reader).await;
                    let error = stray_output(error, program, &stray);
                    return Err(error.with_stderr(program, tail.lines()));
                }
            }
        }
        Target::InProcess(server) => {
            let service = handshake(
                tapped(
                    server.connect(),
                    tap::connection(traced(options, &name, IN_PROCESS)),
                    options,
                    ended,
                    options.era,
                ),
                &name,
                Via::InProcess,
                options.timeout,
                None,
            )
            .await?;
            reach = Reach::InProcess;
            (service, IN_PROCESS)
        }
    };
    Ok((service, transport, reach))
}

/// Starts the handshake on `transport`, seen by the session's tap: one
/// place for every transport. `trace` is for the transport the tap traces
/// (in-process); the others trace their own messages.
fn tapped<T>(
    transport: T,
    trace: Option<tap::TracedConnection>,
    options: &ConnectOptions,
    ended: &tap::Ended,
    era: Era,
) -> impl Future<
    Output = Result<RunningService<RoleClient, Handler>, rmcp::service::ClientInitializeError>,
>
where
    T: rmcp::transport::Transport<RoleClient> + 'static,
{
    let tap = tap::Tap::new(transport, ended.clone(), trace);
    handler(options).serve_with_lifecycle(tap, lifecycle(era))
}

/// How long a stdio server may take to start before the person is told.
const STARTING_NOTICE_AFTER: Duration = Duration::from_secs(2);

/// A stdio child's handshake. With `--protocol auto` the era probe comes
/// first and is waited for as long as the start-up allowance
/// ([`startup`]); rmcp's handshake then speaks the era it found. A start
/// that takes a while is told to the notice sink, once a second.
async fn stdio_start(
    transport: child::ChildTransport,
    options: &ConnectOptions,
    ended: &tap::Ended,
    command: &str,
) -> Result<RunningService<RoleClient, Handler>, rmcp::service::ClientInitializeError> {
    let start = stdio_handshake(transport, options, ended);
    let Some(sink) = options.notices.clone() else {
        return start.await;
    };
    tokio::pin!(start);
    let began = tokio::time::Instant::now();
    let mut ticks = tokio::time::interval_at(began + STARTING_NOTICE_AFTER, Duration::from_secs(1));
    let mut told = false;
    loop {
        tokio::select! {
            done = &mut start => {
                if told {
                    sink(handler::Notice::Starting {
                        command: command.to_owned(),
                        elapsed: began.elapsed(),
                        ready: true,
                    });
                }
                return done;
            }
            _ = ticks.tick() => {
                told = true;
                sink(handler::Notice::Starting {
                    command: command.to_owned(),
                    elapsed: began.elapsed(),
                    ready: false,
                });
            }
        }
    }
}

async fn stdio_handshake(
    mut transport: child::ChildTransport,
    options: &ConnectOptions,
    ended: &tap::Ended,
) -> Result<RunningService<RoleClient, Handler>, rmcp::service::ClientInitializeError> {
    let handler = handler(options);
    let (era, early) = match options.era {
        Era::Auto => {
            let info = rmcp::ClientHandler::get_info(&handler);
            let probed = startup::probe(&mut transport, &info).await;
            (probed.era, probed.early)
        }
        era => (era, Default::default()),
    };
    let tap = tap::Tap::new(transport, ended.clone(), None).replaying(early);
    handler.serve_with_lifecycle(tap, lifecycle(era)).await
}

/// Where a connection's messages are traced, when tracing.
fn traced(options: &ConnectOptions, target: &str, transport: &'static str) -> Option<tap::Traced> {
    Some(tap::Traced {
        tracer: options.trace.clone()?,
        server: options.server_name.as_deref().unwrap_or(target).into(),
        transport,
    })
}

/// How a session's server is reached.
enum Reach {
    Http,
    Stdio {
        program: String,
        /// What the child wrote on stdout that was not JSON-RPC.
        stray: child::StrayOutput,
    },
    InProcess,
}

/// The longest wait for a health document while explaining a failure.
const HEALTH_WAIT: Duration = Duration::from_secs(2);

/// When a URL answered but spoke no MCP, asks its origin's health document
/// (`GET /`, as `nexo serve` and seed 000's servers publish it) where MCP
/// is mounted, and says so in the hint: `--url http://host:8000` for a
/// server at `/mcp` is the commonest slip. Without one, when the path held
/// nothing (404 or 405), tries the paths servers usually mount MCP at
/// (`/mcp`, `/api/mcp`...), as `nexo doctor` does.
async fn elsewhere(target: &Target, error: ClientError, timeout: Duration) -> ClientError {
    let (Target::Url { url, headers, .. }, ClientError::Protocol { detail, .. }) = (target, &error)
    else {
        return error;
    };
    let nothing_there = detail.contains("HTTP 404") || detail.contains("HTTP 405");
    let error = health_mount(url, error, timeout).await;
    match &error {
        ClientError::Protocol { hint, .. }
            if nothing_there && !hint.terminal().contains("serves MCP at") =>
        {
            let headers = header_map(headers);
            match doctor::where_mcp_answers(url.expose(), &headers, HEALTH_WAIT.min(timeout)).await
            {
                Some(found) => {
                    error.with_hint(doctor::elsewhere_hint(&secret::redact_userinfo(&found)).into())
                }
                None => error,
            }
        }
        _ => error,
    }
}

/// [`elsewhere`]'s health document: the mount it names, in the hint.
async fn health_mount(url: &TargetUrl, error: ClientError, timeout: Duration) -> ClientError {
    let Ok(mut parsed) = ::url::Url::parse(url.expose()) else {
        return error;
    };
    let given_path = parsed.path().to_owned();
    parsed.set_path("/");
    parsed.set_query(None);
    let Ok(client) = http::client_builder(HEALTH_WAIT.min(timeout)).build() else {
        return error;
    };
    let health = async {
        let response = client.get(parsed.clone()).send().await.ok()?;
        let document: serde_json::Value = response.json().await.ok()?;
        document.get("mount")?.as_str().map(str::to_owned)
    };
    let mount = tokio::time::timeout(HEALTH_WAIT.min(timeout), health)
        .await
        .ok()
        .flatten();
    match (mount, error) {
        (
            Some(mount),
            ClientError::Protocol {
                target: name,
                detail,
                stderr,
                ..
            },
        ) if mount.starts_with('/') && mount != given_path => {
            parsed.set_path(&mount);
            ClientError::Protocol {
                target: name,
                detail,
                stderr,
                hint: format!(
                    "this server serves MCP at `{mount}`: try `--url {}`",
                    secret::redact_userinfo(parsed.as_str())
                )
                .into(),
            }
        }
        (_, error) => error,
    }
}

/// A refused authorization is the given token's fault when the user gave
/// one: no hint to pass a token then.
fn token_refused(target: &Target, error: ClientError) -> ClientError {
    let Target::Url { headers, .. } = target else {
        return error;
    };
    let given = headers
        .iter()
        .any(|header| header.name() == ::http::header::AUTHORIZATION);
    match error {
        ClientError::Unauthorized { target, detail } if given => {
            ClientError::TokenRefused { target, detail }
        }
        other => other,
    }
}

/// Refuses a URL target that is no `http` or `https` URL before anything
/// tries to reach it (OAuth's discovery would take a bad URL for a refused
/// authorization; rmcp's own errors name its types).
fn http_url(url: &TargetUrl) -> Result<(), ClientError> {
    let shown = url.to_string();
    let text = url.expose();
    match ::url::Url::parse(text) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") && parsed.has_host() => Ok(()),
        Ok(parsed) if text.contains("://") => Err(ClientError::usage(
            format!("`{shown}` is not an HTTP URL"),
            Some(format!(
                "nexo reaches servers over `http://` and `https://` (not `{}://`); for a local \
                 command use `--stdio 'COMMAND'`",
                parsed.scheme()
            )),
        )),
        _ if !text.contains("://") && !text.trim().is_empty() => Err(ClientError::usage(
            format!("`{shown}` is not a URL: it has no scheme"),
            Some(format!("write it with its scheme: `--url http://{shown}`")),
        )),
        _ => Err(ClientError::usage(
            format!("`{shown}` is not a valid URL"),
            Some("write it as `--url http://HOST:PORT/mcp`".to_owned()),
        )),
    }
}

/// What a tool's result says went wrong, if anything: an error it reported
/// (`isError`; the first text block is its message), or a call that did
/// nothing because it needs a confirmation first (`structuredContent`
/// `{"status": "needs_confirmation", "message", "retry_with"}`, the
/// convention of the bundled servers that ask before acting).
pub fn tool_failure(tool: &str, result: &CallToolResult) -> Option<ClientError> {
    if result.is_error != Some(true) {
        let structured = result.structured_content.as_ref()?;
        if structured.get("status")?.as_str()? != "needs_confirmation" {
            return None;
        }
        let field = |name: &str| structured.get(name);
        return Some(ClientError::NeedsConfirmation {
            tool: tool.to_owned(),
            message: field("message")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("it needs a confirmation")
                .to_owned(),
            retry_with: field("retry_with")
                .and_then(serde_json::Value::as_array)
                .map(|names| {
                    names
                        .iter()
                        .filter_map(serde_json::Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
        });
    }
    let message = result
        .content
        .iter()
        .find_map(|block| block.as_text().map(|text| text.text.clone()))
        .unwrap_or_else(|| "no details given".into());
    Some(ClientError::Tool {
        tool: tool.to_owned(),
        message,
    })
}

/// What [`Session::transport`] reports for each transport.
const STREAMABLE_HTTP: &str = "streamable-http";
const LEGACY_SSE: &str = "sse";
const STDIO: &str = "stdio";
const IN_PROCESS: &str = "in-process";

/// `--header` values as an HTTP header map.
fn header_map(headers: &[Header]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for header in headers {
        map.append(header.name().clone(), header.value().clone());
    }
    map
}

/// Connects over Streamable HTTP. Beside the outcome: the status with which
/// the server refused the first POST, if it did, which decides whether
/// `--transport auto` tries the legacy transport.
async fn streamable(
    url: &str,
    headers: &HeaderMap,
    name: &str,
    options: &ConnectOptions,
    agent_busy: &Arc<watch::Sender<bool>>,
    ended: &tap::Ended,
) -> (
    Result<RunningService<RoleClient, Handler>, ClientError>,
    Option<u16>,
) {
    let trace = traced(options, name, STREAMABLE_HTTP);
    let client = match http::RetryingHttp::new(options.timeout, trace) {
        Ok(client) => client,
        Err(error) => {
            let error = ClientError::Protocol {
                target: name.to_owned(),
                detail: format!("cannot build the HTTP client: {error}"),
                hint: Via::Http.protocol_hint().into(),
                stderr: Vec::new(),
            };
            return (Err(error), None);
        }
    };
    let standalone = client.standalone_stream();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    config.custom_headers = headers
        .iter()
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    let service = match &options.oauth {
        None => {
            let transport = StreamableHttpClientTransport::with_client(client.clone(), config);
            handshake(
                tapped(transport, None, options, ended, options.era),
                name,
                Via::Http,
                options.timeout,
                None,
            )
            .await
        }
        Some(oauth) => {
            match auth::OAuthHttp::new(client.clone(), url, oauth.clone(), agent_busy.clone()).await
            {
                Ok(authorized) => {
                    let agent_busy = authorized.agent_busy();
                    let transport = StreamableHttpClientTransport::with_client(authorized, config);
                    handshake(
                        tapped(transport, None, options, ended, options.era),
                        name,
                        Via::Http,
                        options.timeout,
                        Some(agent_busy),
                    )
                    .await
                }
                Err(error) => Err(ClientError::Unauthorized {
                    target: name.to_owned(),
                    detail: error.to_string(),
                }),
            }
        }
    };
    if service.is_ok() {
        wait_for_standalone_stream(standalone, options.timeout).await;
    }
    (service, client.refused_status())
}

/// Connects over the legacy HTTP+SSE transport. That transport belongs to
/// 2024-11-05, before `server/discover`, so `--protocol auto` means the
/// `initialize` handshake here.
async fn legacy(
    url: &str,
    headers: HeaderMap,
    name: &str,
    options: &ConnectOptions,
    ended: &tap::Ended,
) -> Result<RunningService<RoleClient, Handler>, ClientError> {
    let trace = traced(options, name, LEGACY_SSE);
    let transport = legacy_sse::LegacySse::connect(url, headers, options.timeout, trace)
        .await
        .map_err(|error| classify(name, Via::Http, &error))?;
    let era = match options.era {
        Era::Auto => Era::Initialize,
        era => era,
    };
    handshake(
        tapped(transport, None, options, ended, era),
        name,
        Via::Http,
        options.timeout,
        None,
    )
    .await
}

/// When Streamable HTTP was refused and the legacy transport failed too:
/// two protocol failures are reported as one, what the URL answered the
/// POST first; otherwise the legacy failure (a timeout, a refused
/// authorization, a stream that would not open) is what stopped the last try.
fn both_failed(status: u16, streamable: ClientError, legacy: ClientError) -> ClientError {
    match (streamable, legacy) {
        (ClientError::Protocol { target, hint, .. }, ClientError::Protocol { detail, .. }) => {
            ClientError::Protocol {
                target,
                hint,
                detail: format!(
                    "Streamable HTTP: the first POST got HTTP {status}; legacy HTTP+SSE: {detail}"
                ),
                stderr: Vec::new(),
            }
        }
        (_, legacy) => legacy,
    }
}

/// Gives the session's server-to-client stream a moment to open before the
/// first request, so that a server which sends its own requests on it (an
/// elicitation during a tool call, say) does not find it missing.
async fn wait_for_standalone_stream(
    mut standalone: tokio::sync::watch::Receiver<http::StandaloneStream>,
    timeout: Duration,
) {
    let opened = standalone.wait_for(|state| *state != http::StandaloneStream::Opening);
    if tokio::time::timeout(STANDALONE_STREAM_WAIT.min(timeout), opened)
        .await
        .is_err()
    {
        tracing::debug!("the session's standalone stream did not open in time; going on");
    }
}

/// How long one request may take.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CallLimits {
    /// The longest silence: progress notifications from the server start
    /// it again (`--timeout`, or `timeout` in a config entry).
    pub idle: Duration,
    /// The longest the request may take in all, progress or not.
    pub total: Option<Duration>,
}

/// Which of a request's [`CallLimits`] it reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expired {
    Idle,
    Total,
}

/// Runs `work` within `limits`. The idle limit starts again at each
/// `progress` change, and stops while any of `busy` says a person is at
/// work (the authorization agent has the URL and a person may be in a
/// browser; a person is answering the server's form), which takes longer
/// than any exchange, running whole again after.
async fn within<T>(
    limits: CallLimits,
    progress: Option<watch::Receiver<u64>>,
    busy: Vec<watch::Receiver<bool>>,
    work: impl Future<Output = T>,
) -> Result<T, Expired> {
    use tokio::time::{Instant, sleep, sleep_until};
    /// A receiver that never changes, for what was not given.
    async fn changed<V>(receiver: &mut Option<watch::Receiver<V>>) {
        let open = match receiver {
            Some(receiver) => receiver.changed().await.is_ok(),
            None => false,
        };
        if !open {
            std::future::pending::<()>().await;
        }
    }
    let mut progress = progress;
    let mut busy = busy;
    let mut work = std::pin::pin!(work);
    let total = limits.total.map(|total| Instant::now() + total);
    let mut idle = std::pin::pin!(sleep(limits.idle));
    loop {
        tokio::select! {
            done = &mut work => return Ok(done),
            () = async { match total { Some(at) => sleep_until(at).await, None => std::future::pending().await } } => {
                return Err(Expired::Total);
            }
            () = &mut idle => {
                // Busy now, or busy for a while since the window opened.
                let mut was_busy = false;
                for busy in &mut busy {
                    was_busy |= busy.has_changed().unwrap_or(false) | *busy.borrow_and_update();
                }
                if !was_busy {
                    return Err(Expired::Idle);
                }
                let all_done = async {
                    for busy in &mut busy {
                        let _ = busy.wait_for(|busy| !*busy).await;
                    }
                };
                tokio::select! {
                    done = &mut work => return Ok(done),
                    () = all_done => {}
                }
                idle.as_mut().reset(Instant::now() + limits.idle);
            }
            () = changed(&mut progress) => idle.as_mut().reset(Instant::now() + limits.idle),
        }
    }
}

/// Runs the handshake within exactly `limit`. The HTTP client's
/// per-attempt limit waits longer than this, so a server that never
/// answers is a timeout whatever the limit, not whichever layer gave up
/// first; rmcp's discovery fallback (10 s) may give up before, and the
/// session's tap then drops the probe's late answer.
async fn handshake<F>(
    start: F,
    target: &str,
    via: Via<'_>,
    limit: Duration,
    agent_busy: Option<watch::Receiver<bool>>,
) -> Result<RunningService<RoleClient, Handler>, ClientError>
where
    F: Future<
        Output = Result<RunningService<RoleClient, Handler>, rmcp::service::ClientInitializeError>,
    >,
{
    let limits = CallLimits {
        idle: limit,
        total: None,
    };
    match within(limits, None, agent_busy.into_iter().collect(), start).await {
        Ok(Ok(service)) => Ok(service),
        Ok(Err(error)) => Err(classify(target, via, &error)),
        Err(_) => Err(ClientError::Timeout {
            target: target.to_owned(),
            seconds: limit.as_secs_f64(),
        }),
    }
}

impl Session {
    /// What the server said about itself in the handshake.
    pub fn server_info(&self) -> Option<Arc<ServerPeerInfo>> {
        self.service.peer_info()
    }

    fn via(&self) -> Via<'_> {
        match &self.reach {
            Reach::Http => Via::Http,
            Reach::Stdio { program, .. } => Via::Stdio(program),
            Reach::InProcess => Via::InProcess,
        }
    }

    /// `stdio`, `streamable-http` or `sse`.
    pub fn transport(&self) -> &'static str {
        self.transport
    }

    /// Runs one request of `method` within the session's time limit.
    async fn bounded<T>(
        &self,
        method: Method,
        call: impl Future<Output = Result<T, ServiceError>>,
    ) -> Result<T, ClientError> {
        self.limited(method, self.default_limits(), call).await
    }

    /// Runs one request of `method` within `limits`; the server's progress
    /// notifications start the idle limit again. A request that reaches a
    /// limit is abandoned, which cancels it (rmcp sends
    /// `notifications/cancelled`).
    async fn limited<T>(
        &self,
        method: Method,
        limits: CallLimits,
        call: impl Future<Output = Result<T, ServiceError>>,
    ) -> Result<T, ClientError> {
        let mut agent_busy = self.agent_busy.clone();
        // Only what happens from now on may stop this call's limit.
        agent_busy.borrow_and_update();
        let mut answering = self.answering.clone();
        answering.borrow_and_update();
        let mut progress = self.progress.clone();
        progress.borrow_and_update();
        let busy = vec![agent_busy, answering];
        let error = match within(limits, Some(progress), busy, call).await {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(error)) => self.service_error(method, error),
            Err(Expired::Idle) => ClientError::Timeout {
                target: self.target.clone(),
                seconds: limits.idle.as_secs_f64(),
            },
            Err(Expired::Total) => ClientError::Overran {
                target: self.target.clone(),
                seconds: limits.total.unwrap_or_default().as_secs_f64(),
            },
        };
        Err(self.explained(error).redacted(&self.secrets))
    }

    /// A failure explained by what a stdio child wrote on stdout that was
    /// not JSON-RPC, if it wrote any.
    fn explained(&self, error: ClientError) -> ClientError {
        match &self.reach {
            Reach::Stdio { program, stray } => stray_output(error, program, stray),
            Reach::Http | Reach::InProcess => error,
        }
    }

    /// Changes each time the server says its tools changed
    /// (`notifications/tools/list_changed`).
    pub fn tools_changed(&self) -> tokio::sync::watch::Receiver<u64> {
        self.service.service().tools_changed()
    }

    /// Changes each time the server says its prompts changed.
    pub fn prompts_changed(&self) -> tokio::sync::watch::Receiver<u64> {
        self.service.service().prompts_changed()
    }

    /// Changes each time the server says its resources changed.
    pub fn resources_changed(&self) -> tokio::sync::watch::Receiver<u64> {
        self.service.service().resources_changed()
    }

    /// Whether the connection has ended (the child exited, the stream closed).
    pub fn is_ended(&self) -> bool {
        *self.ended.borrow()
    }

    /// Waits until the connection ends.
    pub async fn ended(&self) {
        let mut ended = self.ended.clone();
        let _ = ended.wait_for(|ended| *ended).await;
    }

    fn service_error(&self, method: Method, error: ServiceError) -> ClientError {
        match error {
            ServiceError::McpError(data) if legacy_sse::stream_dropped(&data) => {
                ClientError::Unreachable {
                    target: self.target.clone(),
                    detail: data.message.into_owned(),
                    hint: "the server's SSE stream dropped (nexo reopens it and initializes a new \
                           session); run the command again, and check that the request is safe \
                           to repeat"
                        .into(),
                    stderr: Vec::new(),
                }
            }
            ServiceError::McpError(data) => ClientError::Rpc {
                method,
                code: data.code.0,
                message: data.message.into_owned(),
                data: data.data,
            },
            ServiceError::Timeout { .. } => ClientError::Timeout {
                target: self.target.clone(),
                seconds: self.timeout.as_secs_f64(),
            },
            ServiceError::TransportSend(_)
                if matches!(
                    classify(&self.target, self.via(), &error),
                    ClientError::Unauthorized { .. }
                ) =>
            {
                classify(&self.target, self.via(), &error)
            }
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                ClientError::Unreachable {
                    target: self.target.clone(),
                    detail: error.to_string(),
                    hint: "the server went away; check that it is still running".into(),
                    stderr: Vec::new(),
                }
            }
            other => classify(&self.target, self.via(), &other),
        }
    }

    pub async fn list_tools(&self) -> Result<Vec<Tool>, ClientError> {
        self.bounded(Method::ListTools, self.service.list_all_tools())
            .await
    }

    /// The tool called `name`, from the server's list; an unknown name is
    /// [`ClientError::UnknownTool`], naming the tools there are.
    pub async fn tool(&self, name: &str) -> Result<Tool, ClientError> {
        let tools = self.list_tools().await?;
        match tools.iter().find(|tool| tool.name == name) {
            Some(tool) => Ok(tool.clone()),
            None => Err(ClientError::UnknownTool {
                tool: name.to_owned(),
                known: tools.iter().map(|tool| tool.name.to_string()).collect(),
            }),
        }
    }

    /// Calls `name` within the session's time limit; a result with
    /// `isError` is returned, not turned into an error.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: JsonObject,
    ) -> Result<CallToolResult, ClientError> {
        self.call_tool_within(name, arguments, self.default_limits())
            .await
    }

    /// Calls `name` within `limits` (a long tool's own, from the config).
    pub async fn call_tool_within(
        &self,
        name: &str,
        arguments: JsonObject,
        limits: CallLimits,
    ) -> Result<CallToolResult, ClientError> {
        self.call_tool_observed(name, arguments, limits, None).await
    }

    /// Calls `name` within `limits`. The `input_required` rounds of a
    /// 2026-07-28 server are answered by the client handler; a call the
    /// server runs as a task is followed to its end ([`tasks`]), each
    /// exchange within the idle limit and the whole within the total one,
    /// and `observer` is told of the task's id and of each change.
    pub async fn call_tool_observed(
        &self,
        name: &str,
        arguments: JsonObject,
        limits: CallLimits,
        observer: Option<TaskObserver>,
    ) -> Result<CallToolResult, ClientError> {
        let started = tokio::time::Instant::now();
        let mut params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        if self.notices {
            let mut meta =
                rmcp::model::RequestMetaObject::with_progress_token(rmcp::model::ProgressToken(
                    rmcp::model::NumberOrString::String(format!("nexo-{name}").into()),
                ));
            #[expect(
                deprecated,
                reason = "SEP-2577 deprecates logging, but servers before it log only when asked"
            )]
            meta.set_log_level(rmcp::model::LoggingLevel::Info);
            params.meta = Some(meta);
        }
        let seed = match self
            .limited(Method::CallTool, limits, self.rounds(params))
            .await?
        {
            CallToolResponse::Complete(result) => return Ok(result),
            CallToolResponse::Task(created) => created.task,
            _ => {
                return Err(self.service_error(Method::CallTool, ServiceError::UnexpectedResponse));
            }
        };
        let id = seed.task_id.clone();
        let follow = self.follow(name, &id, Some(seed), observer.as_ref());
        let Some(total) = limits.total else {
            return follow.await;
        };
        let left = total.saturating_sub(started.elapsed());
        tokio::time::timeout(left, follow)
            .await
            .unwrap_or_else(|_| {
                Err(ClientError::Overran {
                    target: self.target.clone(),
                    seconds: total.as_secs_f64(),
                })
            })
    }

    /// One `tools/call` to its result or task, its `input_required` rounds
    /// (2026-07-28) answered by the client handler, one request after
    /// another, as rmcp's own helper would (which cannot follow a task).
    async fn rounds(
        &self,
        mut params: CallToolRequestParams,
    ) -> Result<CallToolResponse, ServiceError> {
        let max_rounds = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;
        let mut rounds_without_requests = 0u32;
        for _ in 0..max_rounds {
            let asked = match self.service.call_tool_once(params.clone()).await? {
                CallToolResponse::InputRequired(asked) => asked,
                other => return Ok(other),
            };
            let requests = asked.input_requests.unwrap_or_default();
            if requests.is_empty() {
                if asked.request_state.is_none() {
                    return Err(ServiceError::UnexpectedResponse);
                }
                // Only state to carry: the server is busy; back off a little.
                let wait = 50u64 << rounds_without_requests.min(2);
                tokio::time::sleep(Duration::from_millis(wait)).await;
                rounds_without_requests += 1;
            } else {
                rounds_without_requests = 0;
            }
            let mut responses = InputResponses::new();
            for (key, request) in requests {
                let answer = self
                    .service
                    .service()
                    .answer(request)
                    .await
                    .map_err(ServiceError::McpError)?;
                responses.insert(key, answer);
            }
            params.input_responses = (!responses.is_empty()).then_some(responses);
            params.request_state = asked.request_state;
        }
        Err(ServiceError::InputRequiredRoundsExceeded { max_rounds })
    }

    /// One `tools/call` within `limits`, answered as the server answers it:
    /// an `input_required` result or a task is handed back, not followed
    /// (for a gateway, whose client answers them). `capabilities`, when
    /// given, are declared in the request's `_meta` instead of this
    /// session's own (2026-07-28): a gateway declares its client's, so that
    /// the server asks only for what that client can answer.
    pub async fn call_tool_once(
        &self,
        params: CallToolRequestParams,
        limits: CallLimits,
        capabilities: Option<ClientCapabilities>,
    ) -> Result<CallToolResponse, ClientError> {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        match self
            .once(Method::CallTool, limits, request, capabilities)
            .await?
        {
            ServerResult::CallToolResult(result) => Ok(CallToolResponse::Complete(result)),
            ServerResult::InputRequiredResult(asked) => Ok(CallToolResponse::InputRequired(asked)),
            ServerResult::CreateTaskResult(created) => Ok(CallToolResponse::Task(created)),
            _ => Err(self.service_error(Method::CallTool, ServiceError::UnexpectedResponse)),
        }
    }

    /// One request within `limits`, its answer as the server gave it,
    /// `capabilities` (when given) declared in its `_meta`.
    async fn once(
        &self,
        method: Method,
        limits: CallLimits,
        request: ClientRequest,
        capabilities: Option<ClientCapabilities>,
    ) -> Result<ServerResult, ClientError> {
        let mut options = PeerRequestOptions::no_options();
        if let Some(capabilities) = capabilities {
            let mut meta = rmcp::model::RequestMetaObject::new();
            meta.set_client_capabilities(capabilities);
            options = options.with_meta(meta);
        }
        let call = async {
            self.service
                .send_request_with_option(request, options)
                .await?
                .await_response()
                .await
        };
        self.limited(method, limits, call).await
    }

    /// The limits of a request that gives none: the session's time limit.
    fn default_limits(&self) -> CallLimits {
        CallLimits {
            idle: self.timeout,
            total: None,
        }
    }

    /// `tasks/get` of a task this session's server runs, as it answers.
    pub async fn get_task(&self, params: GetTaskParams) -> Result<GetTaskResult, ClientError> {
        self.bounded(Method::Task, self.service.get_task(params))
            .await
    }

    /// `tasks/update`: answers to the input a task of the server asked for.
    pub async fn update_task(&self, params: UpdateTaskParams) -> Result<(), ClientError> {
        self.bounded(Method::Task, self.service.update_task(params))
            .await
    }

    /// `tasks/cancel` of a task this session's server runs.
    pub async fn cancel_task(&self, params: CancelTaskParams) -> Result<(), ClientError> {
        self.bounded(Method::Task, self.service.cancel_task(params))
            .await
    }

    /// `completion/complete`, as the server answers it.
    pub async fn complete(
        &self,
        params: CompleteRequestParams,
    ) -> Result<CompleteResult, ClientError> {
        self.bounded(Method::Complete, self.service.complete(params))
            .await
    }

    /// Every resource template the server lists (every page).
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, ClientError> {
        self.bounded(
            Method::ListResources,
            self.service.list_all_resource_templates(),
        )
        .await
    }

    pub async fn list_resources(&self) -> Result<Vec<Resource>, ClientError> {
        self.bounded(Method::ListResources, self.service.list_all_resources())
            .await
    }

    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, ClientError> {
        let params = ReadResourceRequestParams::new(uri);
        self.bounded(Method::ReadResource, self.service.read_resource(params))
            .await
    }

    /// One `resources/read` answered as the server answers it, an
    /// `input_required` result handed back (see [`Session::call_tool_once`]).
    pub async fn read_resource_once(
        &self,
        params: ReadResourceRequestParams,
        capabilities: Option<ClientCapabilities>,
    ) -> Result<ReadResourceResponse, ClientError> {
        let request = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(params));
        let limits = self.default_limits();
        match self
            .once(Method::ReadResource, limits, request, capabilities)
            .await?
        {
            ServerResult::ReadResourceResult(result) => Ok(ReadResourceResponse::Complete(result)),
            ServerResult::InputRequiredResult(asked) => {
                Ok(ReadResourceResponse::InputRequired(asked))
            }
            _ => Err(self.service_error(Method::ReadResource, ServiceError::UnexpectedResponse)),
        }
    }

    /// Whether the server declares the skills extension (SEP-2640).
    pub fn supports_skills(&self) -> bool {
        self.server_info()
            .is_some_and(|info| info.capabilities.supports_skills())
    }

    /// Every skill the server lists (`skills/list`, every page), as the
    /// server describes them: checking them is the host's.
    pub async fn list_skills(&self) -> Result<Vec<Skill>, ClientError> {
        self.bounded(Method::ListSkills, self.service.list_all_skills())
            .await
    }

    /// The server's entry for the skill whose `SKILL.md` is at `uri`
    /// (`skills/get`), as it is now.
    pub async fn get_skill(&self, uri: &str) -> Result<Skill, ClientError> {
        self.bounded(
            Method::GetSkill,
            self.service.get_skill(GetSkillRequestParams::new(uri)),
        )
        .await
        .map(|result| result.skill)
    }

    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, ClientError> {
        self.bounded(Method::ListPrompts, self.service.list_all_prompts())
            .await
    }

    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: JsonObject,
    ) -> Result<GetPromptResult, ClientError> {
        let mut params = GetPromptRequestParams::new(name);
        params.arguments = Some(arguments);
        self.bounded(Method::GetPrompt, self.service.get_prompt(params))
            .await
    }

    /// One `prompts/get` answered as the server answers it, an
    /// `input_required` result handed back (see [`Session::call_tool_once`]).
    pub async fn get_prompt_once(
        &self,
        params: GetPromptRequestParams,
        capabilities: Option<ClientCapabilities>,
    ) -> Result<GetPromptResponse, ClientError> {
        let request = ClientRequest::GetPromptRequest(GetPromptRequest::new(params));
        let limits = self.default_limits();
        match self
            .once(Method::GetPrompt, limits, request, capabilities)
            .await?
        {
            ServerResult::GetPromptResult(result) => Ok(GetPromptResponse::Complete(result)),
            ServerResult::InputRequiredResult(asked) => Ok(GetPromptResponse::InputRequired(asked)),
            _ => Err(self.service_error(Method::GetPrompt, ServiceError::UnexpectedResponse)),
        }
    }

    /// `ping`, within the session's time limit.
    pub async fn ping(&self) -> Result<(), ClientError> {
        let request = ClientRequest::PingRequest(rmcp::model::PingRequest::default());
        self.once(Method::Ping, self.default_limits(), request, None)
            .await
            .map(drop)
    }

    /// The protocol revision the handshake settled on.
    pub fn revision(&self) -> Option<String> {
        let info = self.server_info()?;
        serde_json::to_value(&info.protocol_version)
            .ok()?
            .as_str()
            .map(str::to_owned)
    }

    /// Ends the session where others may still hold it: their requests
    /// fail, and the child process (for stdio targets) is ended.
    pub async fn end(&self) {
        /// rmcp drains in-flight responses before it closes the transport.
        const END_WAIT: Duration = Duration::from_secs(3);
        self.cancels.settle(END_WAIT).await;
        self.service.cancellation_token().cancel();
        let _ = tokio::time::timeout(END_WAIT, self.ended()).await;
    }

    /// Ends the session (and the child process, for stdio targets).
    pub async fn close(self) {
        self.cancels.settle(self.timeout).await;
        if let Err(error) = self.service.cancel().await {
            tracing::debug!(%error, "closing the session");
        }
    }
}

#[cfg(test)]
mod tests {
    use nexo_hint::Hinted;
    use rmcp::model::ErrorCode;

    use super::*;

    #[test]
    fn eras_of_revisions() {
        let table = [
            ("2024-11-05", Era::Initialize),
            ("2025-03-26", Era::Initialize),
            ("2025-06-18", Era::Initialize),
            ("2025-11-25", Era::Initialize),
            ("2026-07-28", Era::Discover),
        ];
        for (revision, era) in table {
            assert_eq!(Era::for_revision(revision), era, "{revision}");
        }
    }

    #[test]
    fn tool_results_with_is_error_are_failures() {
        use rmcp::model::ContentBlock as Content;
        let failed = CallToolResult::error(vec![Content::text("division by zero")]);
        match tool_failure("calc", &failed) {
            Some(ClientError::Tool { tool, message }) => {
                assert_eq!(
                    (tool.as_str(), message.as_str()),
                    ("calc", "division by zero")
                )
            }
            other => panic!("{other:?}"),
        }
        let fine = CallToolResult::success(vec![Content::text("4")]);
        assert!(tool_failure("calc", &fine).is_none());
    }

    #[test]
    fn hints_by_json_rpc_code() {
        let rpc = |code: ErrorCode| ClientError::Rpc {
            method: Method::CallTool,
            code: code.0,
            message: String::new(),
            data: None,
        };
        let hint = |code| {
            rpc(code)
                .hint()
                .map(|hint| hint.terminal())
                .unwrap_or_default()
        };
        assert!(hint(ErrorCode::METHOD_NOT_FOUND).contains("nexo discover"));
        assert!(hint(ErrorCode::INVALID_PARAMS).contains("schema"));
        assert_eq!(rpc(ErrorCode::INTERNAL_ERROR).hint(), None);
    }
}
