//! The wire the probes write on: raw JSON-RPC, built by hand, so that what
//! the server does is seen as it is (our own client would smooth it over).
//! A stdio child's pipes ([`StdioLink`]: every stdout line that is not
//! JSON-RPC kept with the phase it came in, stderr kept apart) or Streamable
//! HTTP ([`HttpLink`]: one POST a message, the session header carried, the
//! answer read as JSON or as an SSE stream). Requests are matched to their
//! answers by id, so several may be in flight at once.
//!
//! nexo-bench has links of its own (hyper connections, pipelined stdio)
//! built to measure; these are built to observe (stray output, statuses,
//! headers) and share no code with them but the ideas.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::oneshot;

/// The revision a session asks for.
pub const REVISION: &str = "2025-11-25";
/// The stateless revision, probed where a server speaks it.
pub const REVISION_2026: &str = "2026-07-28";

/// Why an exchange brought no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkError {
    /// No answer within the time limit.
    Timeout,
    /// The child ended (or the connection closed) before answering.
    Ended(String),
    /// An HTTP status other than 200/202, with the body's start.
    Http {
        status: u16,
        body: String,
        www_authenticate: Option<String>,
    },
    /// Anything else: a refused connection, an answer that is not JSON.
    Transport(String),
}

impl std::fmt::Display for LinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinkError::Timeout => f.write_str("no answer within the time limit"),
            LinkError::Ended(why) => write!(f, "the server ended: {why}"),
            LinkError::Http { status, body, .. } => write!(f, "HTTP {status}: {body}"),
            LinkError::Transport(why) => f.write_str(why),
        }
    }
}

/// When a stray stdout line came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Before the answer to `initialize`.
    Startup,
    /// While requests were served.
    Calls,
    /// After stdin was closed.
    Shutdown,
}

impl Phase {
    fn from_u8(value: u8) -> Phase {
        match value {
            0 => Phase::Startup,
            1 => Phase::Calls,
            _ => Phase::Shutdown,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Startup => "at start-up",
            Phase::Calls => "during calls",
            Phase::Shutdown => "at shutdown",
        }
    }
}

type SharedStdin = Arc<tokio::sync::Mutex<Option<ChildStdin>>>;
type Pending = Arc<Mutex<HashMap<String, oneshot::Sender<Value>>>>;

/// What the stdio child wrote that the probes read afterwards.
#[derive(Debug, Default)]
struct Observed {
    /// Stdout lines that are not JSON-RPC messages, with their phase.
    stray: Vec<(Phase, String)>,
    /// Stderr lines (the first ones).
    stderr: Vec<String>,
    stderr_lines: usize,
    /// Notifications the server sent.
    notifications: Vec<Value>,
    /// Requests the server sent the client.
    requests: Vec<Value>,
}

/// The most stray or stderr lines kept.
const KEPT_LINES: usize = 40;

/// A child process spoken to over its stdin and stdout.
pub struct StdioLink {
    stdin: SharedStdin,
    child: tokio::sync::Mutex<Option<Child>>,
    pending: Pending,
    observed: Arc<Mutex<Observed>>,
    phase: Arc<AtomicU8>,
    ended: Arc<AtomicBool>,
    next_id: AtomicU64,
    timeout: Duration,
    /// Requests given up on (timed out), and answers that came too late.
    given_up: AtomicUsize,
    late: Arc<AtomicUsize>,
}

impl StdioLink {
    /// Starts `command` (program and arguments) with `env` added.
    pub fn spawn(
        command: &[String],
        env: &[(String, String)],
        cwd: Option<&std::path::Path>,
        timeout: Duration,
    ) -> Result<Self, String> {
        let Some((program, args)) = command.split_first() else {
            return Err("the `--stdio` command is empty".to_owned());
        };
        let mut spawn = Command::new(program);
        spawn
            .args(args)
            .envs(env.iter().map(|(key, value)| (key, value)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(cwd) = cwd {
            spawn.current_dir(cwd);
        }
        let mut child = spawn
            .spawn()
            .map_err(|error| format!("cannot start `{program}`: {error}"))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(format!("`{program}` has no stdin, stdout or stderr"));
        };
        let pending: Pending = Arc::default();
        let observed: Arc<Mutex<Observed>> = Arc::default();
        let phase = Arc::new(AtomicU8::new(0));
        let ended = Arc::new(AtomicBool::new(false));
        let stdin = Arc::new(tokio::sync::Mutex::new(Some(stdin)));
        let late = Arc::new(AtomicUsize::new(0));
        {
            let observed = Arc::clone(&observed);
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if let Ok(mut observed) = observed.lock() {
                        observed.stderr_lines += 1;
                        if observed.stderr.len() < KEPT_LINES {
                            observed.stderr.push(line);
                        }
                    }
                }
            });
        }
        {
            let pending = Arc::clone(&pending);
            let observed = Arc::clone(&observed);
            let phase = Arc::clone(&phase);
            let ended = Arc::clone(&ended);
            let stdin = Arc::clone(&stdin);
            let late = Arc::clone(&late);
            tokio::spawn(async move {
                // Bytes, not `lines()`: a server that writes invalid UTF-8
                // on stdout is polluting it, not ending.
                let mut reader = BufReader::new(stdout);
                let mut bytes = Vec::new();
                loop {
                    bytes.clear();
                    match reader.read_until(b'\n', &mut bytes).await {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                    let line = String::from_utf8_lossy(&bytes)
                        .trim_end_matches(['\n', '\r'])
                        .to_owned();
                    let phase = Phase::from_u8(phase.load(Ordering::SeqCst));
                    let message = serde_json::from_str::<Value>(&line)
                        .ok()
                        .filter(|message| message.get("jsonrpc").is_some());
                    let Some(message) = message else {
                        if let Ok(mut observed) = observed.lock()
                            && observed.stray.len() < KEPT_LINES
                        {
                            observed.stray.push((phase, line));
                        }
                        continue;
                    };
                    match (message.get("id"), message.get("method")) {
                        (Some(_), Some(_)) => {
                            let answer = answer_server_request(&message);
                            let _ = write_to(&stdin, &answer.to_string()).await;
                            if let Ok(mut observed) = observed.lock() {
                                observed.requests.push(message);
                            }
                        }
                        (Some(id), None) => {
                            let waiter = pending
                                .lock()
                                .ok()
                                .and_then(|mut pending| pending.remove(&id.to_string()));
                            match waiter {
                                Some(waiter) => {
                                    let _ = waiter.send(message);
                                }
                                None => {
                                    late.fetch_add(1, Ordering::SeqCst);
                                }
                            }
                        }
                        (None, _) => {
                            if let Ok(mut observed) = observed.lock() {
                                observed.notifications.push(message);
                            }
                        }
                    }
                }
                ended.store(true, Ordering::SeqCst);
                if let Ok(mut pending) = pending.lock() {
                    pending.clear();
                }
            });
        }
        Ok(Self {
            stdin,
            child: tokio::sync::Mutex::new(Some(child)),
            pending,
            observed,
            phase,
            ended,
            next_id: AtomicU64::new(1),
            timeout,
            given_up: AtomicUsize::new(0),
            late,
        })
    }

    async fn write_line(&self, line: &str) -> Result<(), LinkError> {
        write_to(&self.stdin, line).await
    }

    pub fn set_phase(&self, phase: Phase) {
        self.phase.store(
            match phase {
                Phase::Startup => 0,
                Phase::Calls => 1,
                Phase::Shutdown => 2,
            },
            Ordering::SeqCst,
        );
    }

    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Sends `message` (which carries `id`) and waits for its answer.
    pub async fn send(&self, message: &Value) -> Result<Value, LinkError> {
        let id = message
            .get("id")
            .cloned()
            .unwrap_or(Value::Null)
            .to_string();
        let (waiter, answer) = oneshot::channel();
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(id.clone(), waiter);
        }
        if self.ended.load(Ordering::SeqCst) {
            return Err(LinkError::Ended(self.exit_text().await));
        }
        self.write_line(&message.to_string()).await?;
        match tokio::time::timeout(self.timeout, answer).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(_)) => Err(LinkError::Ended(self.exit_text().await)),
            Err(_) => {
                if let Ok(mut pending) = self.pending.lock() {
                    pending.remove(&id);
                }
                self.given_up.fetch_add(1, Ordering::SeqCst);
                Err(LinkError::Timeout)
            }
        }
    }

    /// Writes a notification.
    pub async fn notify(&self, message: &Value) -> Result<(), LinkError> {
        self.write_line(&message.to_string()).await
    }

    /// How the child ended, as text, once it has.
    async fn exit_text(&self) -> String {
        let mut child = self.child.lock().await;
        let Some(child) = child.as_mut() else {
            return "the process has ended".to_owned();
        };
        match tokio::time::timeout(Duration::from_millis(500), child.wait()).await {
            Ok(Ok(status)) => format!("the process exited ({status})"),
            _ => "its stdout closed".to_owned(),
        }
    }

    pub fn has_ended(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
    }

    /// How many requests are still unanswered: waited for, or given up on
    /// and not answered since.
    pub fn in_flight(&self) -> usize {
        let waiting = self
            .pending
            .lock()
            .map(|pending| pending.len())
            .unwrap_or(0);
        let given_up = self
            .given_up
            .load(Ordering::SeqCst)
            .saturating_sub(self.late.load(Ordering::SeqCst));
        waiting + given_up
    }

    /// Stops waiting for request `id`'s answer (counted as given up on,
    /// like a timeout, if it was still unanswered).
    pub fn forget(&self, id: &Value) {
        let removed = self
            .pending
            .lock()
            .ok()
            .and_then(|mut pending| pending.remove(&id.to_string()));
        if removed.is_some() {
            self.given_up.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Closes stdin and waits up to `wait` for the child to exit; its exit
    /// status, or `None` when it had to be killed.
    pub async fn shut_down(&self, wait: Duration) -> Option<std::process::ExitStatus> {
        self.set_phase(Phase::Shutdown);
        if let Some(mut stdin) = self.stdin.lock().await.take() {
            let _ = stdin.shutdown().await;
        }
        let mut child = self.child.lock().await;
        let child = child.as_mut()?;
        match tokio::time::timeout(wait, child.wait()).await {
            Ok(Ok(status)) => {
                // Whatever it wrote on its way out is read before we look.
                for _ in 0..50 {
                    if self.ended.load(Ordering::SeqCst) {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Some(status)
            }
            _ => {
                let _ = child.kill().await;
                None
            }
        }
    }

    /// Kills the child at once.
    pub async fn kill(&self) {
        if let Some(child) = self.child.lock().await.as_mut() {
            let _ = child.kill().await;
        }
    }

    pub fn stray(&self) -> Vec<(Phase, String)> {
        self.observed
            .lock()
            .map(|observed| observed.stray.clone())
            .unwrap_or_default()
    }

    /// The first stderr lines and how many there were in all.
    pub fn stderr(&self) -> (Vec<String>, usize) {
        self.observed
            .lock()
            .map(|observed| (observed.stderr.clone(), observed.stderr_lines))
            .unwrap_or_default()
    }

    /// The requests the server sent us.
    pub fn requests(&self) -> Vec<Value> {
        self.observed
            .lock()
            .map(|observed| observed.requests.clone())
            .unwrap_or_default()
    }

    pub fn notifications(&self) -> Vec<Value> {
        self.observed
            .lock()
            .map(|observed| observed.notifications.clone())
            .unwrap_or_default()
    }
}

/// The answer to a request the server sent: `ping` and `roots/list` are
/// answered, anything else refused.
fn answer_server_request(request: &Value) -> Value {
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    match request.get("method").and_then(Value::as_str) {
        Some("ping") => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
        Some("roots/list") => json!({"jsonrpc": "2.0", "id": id, "result": {"roots": []}}),
        _ => {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "nexo check answers no requests"}})
        }
    }
}

async fn write_to(stdin: &SharedStdin, line: &str) -> Result<(), LinkError> {
    let mut stdin = stdin.lock().await;
    let Some(stdin) = stdin.as_mut() else {
        return Err(LinkError::Ended("stdin is closed".to_owned()));
    };
    let mut bytes = line.as_bytes().to_vec();
    bytes.push(b'\n');
    stdin
        .write_all(&bytes)
        .await
        .map_err(|error| LinkError::Ended(format!("writing to its stdin: {error}")))?;
    stdin
        .flush()
        .await
        .map_err(|error| LinkError::Ended(format!("writing to its stdin: {error}")))
}

/// What a raw HTTP exchange brought back.
#[derive(Debug, Clone)]
pub struct RawReply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: String,
    pub elapsed: Duration,
}

impl RawReply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }

    /// The JSON-RPC message answering `id`: the body itself, or the event of
    /// an SSE body that carries it.
    pub fn message(&self, id: Option<&Value>) -> Option<Value> {
        let is_sse = self
            .header("content-type")
            .is_some_and(|kind| kind.starts_with("text/event-stream"));
        if !is_sse {
            return serde_json::from_str(&self.body).ok();
        }
        nexo_client::sse::event_data(&self.body)
            .iter()
            .filter_map(|data| serde_json::from_str::<Value>(data).ok())
            .find(|message| id.is_none() || message.get("id") == id)
    }

    /// `HTTP 400 (text/plain): body…`, for evidence.
    pub fn describe(&self) -> String {
        let kind = self.header("content-type").unwrap_or("no content-type");
        format!(
            "HTTP {} ({kind}): {}",
            self.status,
            crate::finding::trim(self.body.trim(), 240)
        )
    }
}

/// A Streamable HTTP endpoint, one POST a message.
pub struct HttpLink {
    client: reqwest::Client,
    pub url: url::Url,
    extra: reqwest::header::HeaderMap,
    session: Mutex<Option<String>>,
    version: Mutex<Option<String>>,
    next_id: AtomicU64,
    timeout: Duration,
}

impl HttpLink {
    pub fn new(
        url: &str,
        headers: &[nexo_client::Header],
        timeout: Duration,
    ) -> Result<Self, String> {
        let url = url::Url::parse(url).map_err(|error| format!("`{url}` is not a URL: {error}"))?;
        // The workspace builds rustls without a default provider.
        nexo_client::http::install_tls_provider();
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| format!("cannot build an HTTP client: {error}"))?;
        let mut extra = reqwest::header::HeaderMap::new();
        for header in headers {
            extra.insert(header.name().clone(), header.value().clone());
        }
        Ok(Self {
            client,
            url,
            extra,
            session: Mutex::new(None),
            version: Mutex::new(None),
            next_id: AtomicU64::new(1),
            timeout,
        })
    }

    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    pub fn session(&self) -> Option<String> {
        self.session.lock().ok().and_then(|session| session.clone())
    }

    pub fn set_session(&self, session: Option<String>) {
        if let Ok(mut kept) = self.session.lock() {
            *kept = session;
        }
    }

    pub fn set_version(&self, version: Option<String>) {
        if let Ok(mut kept) = self.version.lock() {
            *kept = version;
        }
    }

    /// The headers every POST carries: the target's own, JSON in, JSON or
    /// SSE out, and the session's id and revision once there is a session.
    pub fn base_headers(&self) -> reqwest::header::HeaderMap {
        use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
        let mut headers = self.extra.clone();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        if let Some(session) = self
            .session()
            .and_then(|id| HeaderValue::from_str(&id).ok())
        {
            headers.insert("mcp-session-id", session);
        }
        let version = self.version.lock().ok().and_then(|version| version.clone());
        if let Some(version) = version.and_then(|version| HeaderValue::from_str(&version).ok()) {
            headers.insert("mcp-protocol-version", version);
        }
        headers
    }

    /// One request as given, its whole answer read.
    pub async fn raw(
        &self,
        method: reqwest::Method,
        url: &url::Url,
        headers: reqwest::header::HeaderMap,
        body: Option<Vec<u8>>,
    ) -> Result<RawReply, LinkError> {
        let started = std::time::Instant::now();
        let mut request = self.client.request(method, url.clone()).headers(headers);
        if let Some(body) = body {
            request = request.body(body);
        }
        let response = request.send().await.map_err(|error| {
            if error.is_timeout() {
                LinkError::Timeout
            } else {
                LinkError::Transport(format!("cannot reach `{url}`: {}", root_cause(&error)))
            }
        })?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = match tokio::time::timeout(self.timeout, response.text()).await {
            Ok(Ok(body)) => body,
            Ok(Err(error)) => {
                return Err(LinkError::Transport(format!(
                    "reading the answer: {}",
                    root_cause(&error)
                )));
            }
            Err(_) => return Err(LinkError::Timeout),
        };
        Ok(RawReply {
            status,
            headers,
            body,
            elapsed: started.elapsed(),
        })
    }

    /// The first bytes of a GET that asks for an event stream (a legacy
    /// HTTP+SSE endpoint sends its `endpoint` event at once), read for at
    /// most a second; `None` when no stream comes.
    pub async fn peek_stream(&self) -> Option<String> {
        let mut headers = self.extra.clone();
        headers.insert(
            reqwest::header::ACCEPT,
            reqwest::header::HeaderValue::from_static("text/event-stream"),
        );
        let wait = Duration::from_secs(1);
        let mut response = tokio::time::timeout(
            wait,
            self.client.get(self.url.clone()).headers(headers).send(),
        )
        .await
        .ok()?
        .ok()?;
        let is_sse = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|kind| kind.to_str().ok())
            .is_some_and(|kind| kind.starts_with("text/event-stream"));
        if response.status() != 200 || !is_sse {
            return None;
        }
        let chunk = tokio::time::timeout(wait, response.chunk())
            .await
            .ok()?
            .ok()??;
        Some(String::from_utf8_lossy(&chunk).into_owned())
    }

    /// POSTs a JSON-RPC message with the base headers (and, for a
    /// 2026-07-28 request, its `Mcp-Method` and `Mcp-Name`).
    pub async fn post(&self, message: &Value) -> Result<RawReply, LinkError> {
        let mut headers = self.base_headers();
        let stateless = self
            .version
            .lock()
            .ok()
            .is_some_and(|version| version.as_deref() == Some(REVISION_2026));
        if stateless {
            headers.extend(method_headers(message));
        }
        self.raw(
            reqwest::Method::POST,
            &self.url,
            headers,
            Some(message.to_string().into_bytes()),
        )
        .await
    }

    /// Sends a request and reads its answer.
    pub async fn send(&self, message: &Value) -> Result<Value, LinkError> {
        let reply = self.post(message).await?;
        if reply.status != 200 {
            return Err(LinkError::Http {
                status: reply.status,
                body: crate::finding::trim(reply.body.trim(), 300),
                www_authenticate: reply.header("www-authenticate").map(str::to_owned),
            });
        }
        if message.get("method").and_then(Value::as_str) == Some("initialize") {
            self.set_session(reply.header("mcp-session-id").map(str::to_owned));
        }
        reply.message(message.get("id")).ok_or_else(|| {
            LinkError::Transport(format!(
                "the answer carries no JSON-RPC message: {}",
                reply.describe()
            ))
        })
    }

    /// POSTs a notification (202 expected, any 2xx taken).
    pub async fn notify(&self, message: &Value) -> Result<(), LinkError> {
        let reply = self.post(message).await?;
        if (200..300).contains(&reply.status) {
            Ok(())
        } else {
            Err(LinkError::Http {
                status: reply.status,
                body: crate::finding::trim(reply.body.trim(), 300),
                www_authenticate: None,
            })
        }
    }
}

/// The 2026-07-28 headers that repeat a request's method and its tool,
/// prompt or resource.
pub fn method_headers(message: &Value) -> reqwest::header::HeaderMap {
    use reqwest::header::HeaderValue;
    let mut headers = reqwest::header::HeaderMap::new();
    let method = message.get("method").and_then(Value::as_str).unwrap_or("");
    if let Ok(value) = HeaderValue::from_str(method) {
        headers.insert("mcp-method", value);
    }
    let params = message.get("params");
    let name = params
        .and_then(|params| params.get("name").or_else(|| params.get("uri")))
        .and_then(Value::as_str);
    if let Some(value) = name.and_then(|name| HeaderValue::from_str(name).ok()) {
        headers.insert("mcp-name", value);
    }
    headers
}

/// `params` with the `_meta` a 2026-07-28 request carries in place of a
/// session: the revision, who the client is and what it can do.
pub fn stateless_params(mut params: Value) -> Value {
    if let Value::Object(object) = &mut params {
        object.insert(
            "_meta".to_owned(),
            json!({
                "io.modelcontextprotocol/protocolVersion": REVISION_2026,
                "io.modelcontextprotocol/clientInfo": {"name": "nexo-check", "version": env!("CARGO_PKG_VERSION")},
                "io.modelcontextprotocol/clientCapabilities": {},
            }),
        );
    }
    params
}

/// The innermost cause of an HTTP client error (reqwest's own message
/// names its builder, not what happened).
fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// The link the probes write on.
pub enum Link {
    Stdio(StdioLink),
    Http(HttpLink),
}

/// One request and what came of it.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub request: Value,
    pub answer: Result<Value, LinkError>,
}

impl Exchange {
    pub fn result(&self) -> Option<&Value> {
        self.answer
            .as_ref()
            .ok()
            .and_then(|answer| answer.get("result"))
    }

    pub fn error(&self) -> Option<&Value> {
        self.answer
            .as_ref()
            .ok()
            .and_then(|answer| answer.get("error"))
    }

    pub fn error_code(&self) -> Option<i64> {
        self.error()
            .and_then(|error| error.get("code"))
            .and_then(Value::as_i64)
    }

    /// `→ request` and `← answer`, each trimmed.
    pub fn evidence(&self) -> String {
        let answer = match &self.answer {
            Ok(answer) => crate::finding::trim(&answer.to_string(), 280),
            Err(error) => format!("({error})"),
        };
        format!(
            "→ {}\n← {answer}",
            crate::finding::trim(&self.request.to_string(), 280)
        )
    }
}

impl Link {
    /// Marks an HTTP link as speaking 2026-07-28 (its headers follow).
    pub fn speak_2026(&self) {
        if let Link::Http(http) = self {
            http.set_session(None);
            http.set_version(Some(REVISION_2026.to_owned()));
        }
    }

    pub fn next_id(&self) -> u64 {
        match self {
            Link::Stdio(link) => link.next_id(),
            Link::Http(link) => link.next_id(),
        }
    }

    /// A request built from `method` and `params`, sent, its answer read.
    pub async fn request(&self, method: &str, params: Value) -> Exchange {
        let id = self.next_id();
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(request).await
    }

    /// `request` as given (the probes build odd ones).
    pub async fn send(&self, request: Value) -> Exchange {
        let answer = match self {
            Link::Stdio(link) => link.send(&request).await,
            Link::Http(link) => link.send(&request).await,
        };
        Exchange { request, answer }
    }

    pub async fn notify(&self, method: &str) -> Result<(), LinkError> {
        self.notify_with(json!({"jsonrpc": "2.0", "method": method}))
            .await
    }

    /// Sends a notification as given.
    pub async fn notify_with(&self, message: Value) -> Result<(), LinkError> {
        match self {
            Link::Stdio(link) => link.notify(&message).await,
            Link::Http(link) => link.notify(&message).await,
        }
    }

    pub fn transport(&self) -> &'static str {
        match self {
            Link::Stdio(_) => "stdio",
            Link::Http(_) => "streamable-http",
        }
    }
}

/// A 2025-era `initialize` asking for `revision`.
pub fn initialize_params(revision: &str) -> Value {
    json!({
        "protocolVersion": revision,
        "capabilities": {},
        "clientInfo": {"name": "nexo-check", "version": env!("CARGO_PKG_VERSION")},
    })
}
