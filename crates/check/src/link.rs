//! The wire the probes write on: raw JSON-RPC, built by hand, so that what
//! the server does is seen as it is (our own client would smooth it over).
//! A stdio child's pipes ([`StdioLink`]: every stdout line that is not
//! JSON-RPC kept with the phase it came in, stderr kept apart) or Streamable
//! HTTP ([`HttpLink`]: one POST a message, the session header carried, the
//! answer read as JSON or as an SSE stream). Requests are matched to their
//! answers by id, so several may be in flight at once.
//!
//! The stdio child itself is nexo-client's [`nexo_client::raw`], which
//! nexo-bench's pipelined link uses too; what is kept here is what a
//! checker watches (stray lines by phase, stderr, the server's requests and
//! notifications, answers that came too late).

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nexo_client::raw::{Observer, RawChild, WireId};

pub use crate::legacy::SseLink;
use nexo_client::era::REVISION_2026;
use serde_json::{Value, json};

pub use nexo_client::raw::LinkError;

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

/// What the checker keeps of what the child sends besides answers.
#[derive(Default)]
struct Watch {
    observed: Mutex<Observed>,
    phase: AtomicU8,
    /// Answers that came with no one waiting (too late).
    late: AtomicUsize,
}

impl Observer for Watch {
    fn request(&self, request: &Value) -> Value {
        if let Ok(mut observed) = self.observed.lock() {
            observed.requests.push(request.clone());
        }
        answer_server_request(request)
    }

    fn notification(&self, message: Value) {
        if let Ok(mut observed) = self.observed.lock() {
            observed.notifications.push(message);
        }
    }

    fn stray(&self, line: &[u8]) {
        let phase = Phase::from_u8(self.phase.load(Ordering::SeqCst));
        if let Ok(mut observed) = self.observed.lock()
            && observed.stray.len() < KEPT_LINES
        {
            observed
                .stray
                .push((phase, String::from_utf8_lossy(line).into_owned()));
        }
    }

    fn stderr(&self, line: String) {
        if let Ok(mut observed) = self.observed.lock() {
            observed.stderr_lines += 1;
            if observed.stderr.len() < KEPT_LINES {
                observed.stderr.push(line);
            }
        }
    }

    fn unexpected(&self, _answer: Value) {
        self.late.fetch_add(1, Ordering::SeqCst);
    }
}

/// A child process spoken to over its stdin and stdout
/// ([`nexo_client::raw`]), every stray line kept with its phase.
pub struct StdioLink {
    raw: RawChild,
    watch: Arc<Watch>,
    next_id: AtomicU64,
    timeout: Duration,
    /// The limit of the exchanges before the child's first answer: its
    /// start (`npx -y` on a cold cache downloads the server first).
    startup: Duration,
    answered: AtomicBool,
    /// Requests given up on (timed out).
    given_up: AtomicUsize,
}

impl StdioLink {
    /// Starts `command` (program and arguments) with `env` added; until it
    /// first answers, an exchange may take `startup`, then `timeout`.
    pub fn spawn(
        command: &[String],
        env: &[(String, String)],
        cwd: Option<&std::path::Path>,
        timeout: Duration,
        startup: Duration,
    ) -> Result<Self, String> {
        let watch = Arc::new(Watch::default());
        let raw = RawChild::spawn(command, env, cwd, Arc::clone(&watch) as Arc<dyn Observer>)?;
        Ok(Self {
            raw,
            watch,
            next_id: AtomicU64::new(1),
            timeout,
            startup,
            answered: AtomicBool::new(false),
            given_up: AtomicUsize::new(0),
        })
    }

    async fn write(&self, message: &Value) -> Result<(), LinkError> {
        self.raw
            .write(message)
            .await
            .map_err(|error| LinkError::Ended(format!("writing to its stdin: {error}")))
    }

    pub fn set_phase(&self, phase: Phase) {
        self.watch.phase.store(
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
        let id = WireId::of(message.get("id").unwrap_or(&Value::Null));
        let answer = self.raw.expect(id.clone());
        if self.raw.has_ended() {
            return Err(LinkError::Ended(self.exit_text().await));
        }
        self.write(message).await?;
        let limit = if self.answered.load(Ordering::SeqCst) {
            self.timeout
        } else {
            self.startup
        };
        match tokio::time::timeout(limit, answer).await {
            Ok(Ok((answer, _))) => {
                self.answered.store(true, Ordering::SeqCst);
                Ok(answer)
            }
            Ok(Err(_)) => Err(LinkError::Ended(self.exit_text().await)),
            Err(_) => {
                self.forget_id(&id);
                Err(LinkError::Timeout)
            }
        }
    }

    /// Writes a notification.
    pub async fn notify(&self, message: &Value) -> Result<(), LinkError> {
        self.write(message).await
    }

    /// How the child ended, as text, once it has.
    async fn exit_text(&self) -> String {
        match self.raw.wait(Duration::from_millis(500)).await {
            Some(status) => format!("the process exited ({status})"),
            None => "its stdout closed".to_owned(),
        }
    }

    pub fn has_ended(&self) -> bool {
        self.raw.has_ended()
    }

    /// How many requests are still unanswered: waited for, or given up on
    /// and not answered since.
    pub fn in_flight(&self) -> usize {
        let given_up = self
            .given_up
            .load(Ordering::SeqCst)
            .saturating_sub(self.watch.late.load(Ordering::SeqCst));
        self.raw.awaited() + given_up
    }

    /// Stops waiting for request `id`'s answer (counted as given up on,
    /// like a timeout, if it was still unanswered).
    pub fn forget(&self, id: &Value) {
        self.forget_id(&WireId::of(id));
    }

    fn forget_id(&self, id: &WireId) {
        if self.raw.forget(id) {
            self.given_up.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Closes stdin and waits up to `wait` for the child to exit; its exit
    /// status, or `None` when it had to be killed.
    pub async fn shut_down(&self, wait: Duration) -> Option<std::process::ExitStatus> {
        self.set_phase(Phase::Shutdown);
        self.raw.close_stdin().await;
        match self.raw.wait(wait).await {
            Some(status) => {
                // Whatever it wrote on its way out is read before we look.
                for _ in 0..50 {
                    if self.raw.has_ended() {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Some(status)
            }
            None => {
                self.raw.kill().await;
                None
            }
        }
    }

    /// Kills the child at once.
    pub async fn kill(&self) {
        self.raw.kill().await;
    }

    fn observed<T: Default>(&self, read: impl FnOnce(&Observed) -> T) -> T {
        self.watch
            .observed
            .lock()
            .map(|observed| read(&observed))
            .unwrap_or_default()
    }

    pub fn stray(&self) -> Vec<(Phase, String)> {
        self.observed(|observed| observed.stray.clone())
    }

    /// The first stderr lines and how many there were in all.
    pub fn stderr(&self) -> (Vec<String>, usize) {
        self.observed(|observed| (observed.stderr.clone(), observed.stderr_lines))
    }

    /// The requests the server sent us.
    pub fn requests(&self) -> Vec<Value> {
        self.observed(|observed| observed.requests.clone())
    }

    pub fn notifications(&self) -> Vec<Value> {
        self.observed(|observed| observed.notifications.clone())
    }
}

/// The answer to a request the server sent: `ping` and `roots/list` are
/// answered, anything else refused.
pub(crate) fn answer_server_request(request: &Value) -> Value {
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    match request.get("method").and_then(Value::as_str) {
        Some("ping") => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
        Some("roots/list") => json!({"jsonrpc": "2.0", "id": id, "result": {"roots": []}}),
        _ => {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "nexo check answers no requests"}})
        }
    }
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

    /// Every JSON-RPC message of an SSE body (none for a JSON body).
    pub fn events(&self) -> Vec<Value> {
        let is_sse = self
            .header("content-type")
            .is_some_and(|kind| kind.starts_with("text/event-stream"));
        if !is_sse {
            return Vec::new();
        }
        nexo_client::sse::event_data(&self.body)
            .iter()
            .filter_map(|data| serde_json::from_str::<Value>(data).ok())
            .collect()
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
    /// The notifications and requests the server sent within SSE answers.
    seen: Mutex<(Vec<Value>, Vec<Value>)>,
    /// The session's GET stream, once opened.
    get_stream: Mutex<Option<Listening>>,
}

impl HttpLink {
    pub fn new(
        url: &str,
        headers: &[nexo_client::Header],
        timeout: Duration,
    ) -> Result<Self, String> {
        let url = url::Url::parse(url).map_err(|error| format!("`{url}` is not a URL: {error}"))?;
        // nexo's one TLS configuration (the platform's trust, `--cacert`).
        let client = nexo_client::http::client_builder(timeout)
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
            seen: Mutex::default(),
            get_stream: Mutex::default(),
        })
    }

    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Keeps the server's own notifications and requests of an SSE answer.
    fn keep(&self, reply: &RawReply) {
        for message in reply.events() {
            if message.get("method").is_none() {
                continue;
            }
            if let Ok(mut seen) = self.seen.lock() {
                match message.get("id") {
                    Some(_) => seen.1.push(message),
                    None => seen.0.push(message),
                }
            }
        }
    }

    /// What came on the GET stream: notifications, then requests.
    fn on_get_stream(&self) -> (Vec<Value>, Vec<Value>) {
        let messages = self
            .get_stream
            .lock()
            .ok()
            .and_then(|stream| stream.as_ref().map(Listening::messages))
            .unwrap_or_default();
        messages
            .into_iter()
            .filter(|message| message.get("method").is_some())
            .partition(|message| message.get("id").is_none())
    }

    pub fn notifications(&self) -> Vec<Value> {
        let mut notifications = self
            .seen
            .lock()
            .map(|seen| seen.0.clone())
            .unwrap_or_default();
        notifications.extend(self.on_get_stream().0);
        notifications
    }

    pub fn requests(&self) -> Vec<Value> {
        let mut requests = self
            .seen
            .lock()
            .map(|seen| seen.1.clone())
            .unwrap_or_default();
        requests.extend(self.on_get_stream().1);
        requests
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
            headers.insert(nexo_client::era::SESSION_HEADER, session);
        }
        let version = self.version.lock().ok().and_then(|version| version.clone());
        if let Some(version) = version.and_then(|version| HeaderValue::from_str(&version).ok()) {
            headers.insert(nexo_client::era::PROTOCOL_VERSION_HEADER, version);
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

    /// POSTs a request answered by a stream that stays open (2026-07-28
    /// `subscriptions/listen`): its messages are gathered as they come by a
    /// task of their own, until the [`Listening`] is dropped. A JSON answer
    /// (a refusal) is the one message.
    pub async fn listen(&self, message: &Value) -> Result<Listening, LinkError> {
        self.stream(Some(message)).await
    }

    /// Opens the session's GET stream, where a server may send what
    /// answers no request; what comes on it counts among the session's
    /// notifications and requests. A server without one is left be.
    pub async fn open_get_stream(&self) {
        if let Ok(stream) = self.stream(None).await
            && stream.status == 200
            && let Ok(mut kept) = self.get_stream.lock()
        {
            *kept = Some(stream);
        }
    }

    /// A POST of `message`, or a GET, whose answer may be a long stream.
    async fn stream(&self, message: Option<&Value>) -> Result<Listening, LinkError> {
        let mut headers = self.base_headers();
        let request = match message {
            Some(message) => {
                headers.extend(method_headers(message));
                self.client.post(self.url.clone()).body(message.to_string())
            }
            None => {
                headers.remove(reqwest::header::CONTENT_TYPE);
                headers.insert(
                    reqwest::header::ACCEPT,
                    reqwest::header::HeaderValue::from_static("text/event-stream"),
                );
                self.client.get(self.url.clone())
            }
        };
        // The stream outlives the time limit of one exchange; a GET stream
        // that does not open at once is not waited for.
        let wait = match message {
            Some(_) => self.timeout,
            None => self.timeout.min(Duration::from_secs(2)),
        };
        let request = request
            .headers(headers)
            .timeout(Duration::from_secs(24 * 3600))
            .send();
        let response = tokio::time::timeout(wait, request)
            .await
            .map_err(|_| LinkError::Timeout)?
            .map_err(|error| LinkError::Transport(root_cause(&error)))?;
        let status = response.status().as_u16();
        let is_sse = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|kind| kind.to_str().ok())
            .is_some_and(|kind| kind.starts_with("text/event-stream"));
        let messages: Arc<Mutex<Vec<Value>>> = Arc::default();
        let reader = {
            let messages = Arc::clone(&messages);
            let timeout = self.timeout;
            tokio::spawn(async move {
                use futures::StreamExt;
                let keep = |message: Value| {
                    if let Ok(mut messages) = messages.lock() {
                        messages.push(message);
                    }
                };
                if !is_sse {
                    if let Ok(Ok(body)) = tokio::time::timeout(timeout, response.text()).await
                        && let Ok(message) = serde_json::from_str::<Value>(&body)
                    {
                        keep(message);
                    }
                    return;
                }
                let mut events =
                    Box::pin(nexo_client::sse::events(Box::pin(response.bytes_stream())));
                while let Some(event) = events.next().await {
                    if let Some(message) = event
                        .ok()
                        .and_then(|event| event.data)
                        .and_then(|data| serde_json::from_str::<Value>(&data).ok())
                    {
                        keep(message);
                    }
                }
            })
        };
        Ok(Listening {
            status,
            messages,
            reader,
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
            self.set_session(
                reply
                    .header(nexo_client::era::SESSION_HEADER.as_str())
                    .map(str::to_owned),
            );
        }
        self.keep(&reply);
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

/// A stream a request opened ([`HttpLink::listen`]), read while it lives.
pub struct Listening {
    pub status: u16,
    messages: Arc<Mutex<Vec<Value>>>,
    reader: tokio::task::JoinHandle<()>,
}

impl Listening {
    /// The messages read so far.
    pub fn messages(&self) -> Vec<Value> {
        self.messages
            .lock()
            .map(|messages| messages.clone())
            .unwrap_or_default()
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// The 2026-07-28 headers that repeat a request's method and its tool,
/// prompt or resource.
pub fn method_headers(message: &Value) -> reqwest::header::HeaderMap {
    let (method, name) = nexo_client::era::method_and_name(message);
    nexo_client::era::method_headers(method, name).collect()
}

/// `params` with the `_meta` a 2026-07-28 request carries in place of a
/// session: the revision, who the client is and what it can do.
pub fn stateless_params(params: Value) -> Value {
    nexo_client::era::stateless_params(params, &client_info(), &json!({}))
}

/// Who the checker says it is.
fn client_info() -> Value {
    nexo_client::era::client_info("nexo-check")
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
    /// The deprecated HTTP+SSE transport ([`crate::legacy`]).
    Sse(SseLink),
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
            Link::Sse(link) => link.next_id(),
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
            Link::Sse(link) => link.send(&request).await,
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
            Link::Sse(link) => link.post(&message).await,
        }
    }

    pub fn transport(&self) -> &'static str {
        match self {
            Link::Stdio(_) => "stdio",
            Link::Http(_) => "streamable-http",
            Link::Sse(_) => "sse",
        }
    }

    /// The notifications the server sent: on a stdio child's stdout, on a
    /// legacy stream, or within Streamable HTTP answers and the GET stream.
    pub fn notifications(&self) -> Vec<Value> {
        match self {
            Link::Stdio(link) => link.notifications(),
            Link::Http(link) => link.notifications(),
            Link::Sse(link) => link.notifications(),
        }
    }

    /// The requests the server sent the client.
    pub fn requests(&self) -> Vec<Value> {
        match self {
            Link::Stdio(link) => link.requests(),
            Link::Http(link) => link.requests(),
            Link::Sse(link) => link.requests(),
        }
    }
}

/// A 2025-era `initialize` asking for `revision`.
pub fn initialize_params(revision: &str) -> Value {
    nexo_client::era::initialize_params(revision, &client_info(), &json!({}))
}
