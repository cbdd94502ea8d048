//! The client side of the deprecated HTTP+SSE transport of protocol
//! revision 2024-11-05, which rmcp 3.9 does not ship: [`LegacySse`], an rmcp
//! [`Transport`], so that `serve` drives it like any other.
//!
//! `GET` the URL for an event stream; its first `endpoint` event names
//! (relative to the stream's URL, on the same origin) where each JSON-RPC
//! message is POSTed; everything the server says comes back on the stream as
//! `message` events. Seed 001's server is understood too: a first `connect`
//! event carrying a `connectionId`, messages POSTed to `<stream URL>/message`
//! wrapped as `{"connectionId": ..., "message": ...}`. `data: [DONE]`,
//! comments and unknown events are skipped.
//!
//! A dropped stream is reopened up to [`RECONNECT_TRIES`] times with doubling
//! waits. A new stream is a new session on the server, so the transport
//! replays the `initialize` handshake it saw (with an id of its own, and
//! swallows the answer) before letting messages through again. Requests in
//! flight when the stream dropped are lost with it: each gets an error
//! answer marked as [`stream_dropped`], which [`crate::Session`] reports as
//! "unreachable". Every wait is bounded by the connection's time limit.
//!
//! With `--trace`, the transport records its own messages, where the HTTP
//! exchanges are seen: each POSTed message as it is sent, with the
//! request's method and headers (its answer comes on the stream, which may
//! be read before the POST's `202`), and each message of the stream with
//! the `GET`'s status and headers. The session is the one the endpoint
//! names (`sessionId` in its query, or seed 001's `connectionId`); the
//! replayed handshake of a reopened stream is recorded like any message.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use http::header::{ACCEPT, CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, Method};
use nexo_trace::{Direction, HttpInfo};
use rmcp::RoleClient;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, ErrorCode, ErrorData,
    InitializedNotification, NumberOrString, RequestId, ServerJsonRpcMessage,
};
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use url::Url;

use crate::error::SseError;
use crate::tap::Traced;

/// How many times a dropped stream is reopened before the session ends.
pub const RECONNECT_TRIES: u32 = 3;
/// The wait before the first reopening; it doubles after each failure.
const FIRST_RECONNECT_DELAY: Duration = Duration::from_millis(500);
/// The longest wait between reopenings.
const MAX_RECONNECT_DELAY: Duration = Duration::from_secs(4);
/// Server messages that may wait for the service to read them.
const QUEUE: usize = 256;
/// The most of an error body kept for a message.
const BODY_PREVIEW: usize = 512;
/// The `data` key that marks the error answers given to requests lost with
/// a dropped stream.
const STREAM_DROPPED: &str = "nexo/streamDropped";

type Events = BoxStream<'static, Result<sse_stream::Sse, sse_stream::Error>>;

/// Whether `error` is the answer [`LegacySse`] gives a request that was in
/// flight when its stream dropped.
pub fn stream_dropped(error: &ErrorData) -> bool {
    error
        .data
        .as_ref()
        .and_then(|data| data.get(STREAM_DROPPED))
        .is_some_and(|marker| marker == &Value::Bool(true))
}

/// Where and how to POST messages: what a stream's first event named.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    pub(crate) url: Url,
    /// Seed 001's `connectionId`: when present, every message is wrapped.
    connection_id: Option<Value>,
}

impl Endpoint {
    /// Where messages are POSTed.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The session this endpoint belongs to, as the trace names it: seed
    /// 001's `connectionId`, else the `sessionId` (or `session_id`) of its
    /// query.
    pub fn session(&self) -> Option<String> {
        match &self.connection_id {
            Some(Value::String(id)) => return Some(id.clone()),
            Some(id) => return Some(id.to_string()),
            None => {}
        }
        self.url
            .query_pairs()
            .find(|(key, _)| is_session_key(key))
            .map(|(_, id)| id.into_owned())
    }

    /// The body that POSTs `message` here: the message itself, or seed
    /// 001's `{"connectionId": ..., "message": ...}`.
    pub fn body(&self, message: Value) -> Value {
        match &self.connection_id {
            Some(id) => serde_json::json!({ "connectionId": id, "message": message }),
            None => message,
        }
    }

    /// This endpoint with its session named `session` instead (what a
    /// server must refuse, for `nexo check`); `None` when the endpoint
    /// names no session.
    pub fn with_session(&self, session: &str) -> Option<Endpoint> {
        if self.connection_id.is_some() {
            return Some(Endpoint {
                url: self.url.clone(),
                connection_id: Some(Value::from(session)),
            });
        }
        if !self.url.query_pairs().any(|(key, _)| is_session_key(&key)) {
            return None;
        }
        let pairs: Vec<(String, String)> = self
            .url
            .query_pairs()
            .map(|(key, value)| {
                let value = if is_session_key(&key) {
                    session.to_owned()
                } else {
                    value.into_owned()
                };
                (key.into_owned(), value)
            })
            .collect();
        let mut url = self.url.clone();
        url.query_pairs_mut().clear().extend_pairs(&pairs);
        Some(Endpoint {
            url,
            connection_id: None,
        })
    }
}

fn is_session_key(key: &str) -> bool {
    key == "sessionId" || key == "session_id"
}

/// What one SSE event of a legacy stream means, the message as JSON: the
/// one reading of the stream that the typed transport here and the raw
/// links of `nexo bench` and `nexo check` share.
#[derive(Debug)]
pub enum Event {
    /// Where to POST (an `endpoint` event, or seed 001's `connect`).
    Endpoint(Endpoint),
    /// A message, unwrapped from seed 001's `{"connectionId", "message"}`.
    Message(Value),
    /// Data that is no JSON, with why.
    Unreadable(String),
    /// `[DONE]`, an empty message, an event of another kind.
    Skipped,
}

/// Reads one event (`name` is its `event:` field, `message` when absent)
/// of the stream opened at `stream`. An endpoint on another origin than
/// the stream's is an error.
pub fn read_event(stream: &Url, name: Option<&str>, data: &str) -> Result<Event, SseError> {
    match name.unwrap_or("message") {
        "endpoint" => Ok(Event::Endpoint(Endpoint {
            url: resolve(stream, data)?,
            connection_id: None,
        })),
        "connect" => Ok(match connection_id(data) {
            Some(id) => Event::Endpoint(Endpoint {
                url: wrapped_endpoint(stream),
                connection_id: Some(id),
            }),
            None => Event::Skipped,
        }),
        "message" if data.trim().is_empty() || data.trim() == "[DONE]" => Ok(Event::Skipped),
        "message" => Ok(match message(data) {
            Ok(message) => Event::Message(message),
            Err(error) => Event::Unreadable(error.to_string()),
        }),
        _ => Ok(Event::Skipped),
    }
}

/// Whether the start of an event stream (its raw text) holds the event
/// that opens a legacy session: `endpoint`, or seed 001's `connect`.
pub fn opens_a_session(start: &str) -> bool {
    start.lines().any(|line| {
        line.strip_prefix("event:")
            .is_some_and(|name| matches!(name.trim(), "endpoint" | "connect"))
    })
}

/// What one SSE event means to the typed transport.
#[derive(Debug)]
pub(crate) enum Incoming {
    Endpoint(Endpoint),
    Message(Box<ServerJsonRpcMessage>),
    /// Data that is no JSON-RPC message, with why.
    Unreadable(String),
    Skipped,
}

/// Reads one event of the stream opened at `stream`, as [`read_event`]
/// does, its message typed.
pub(crate) fn interpret(stream: &Url, event: &sse_stream::Sse) -> Result<Incoming, SseError> {
    let data = event.data.as_deref().unwrap_or_default();
    Ok(match read_event(stream, event.event.as_deref(), data)? {
        Event::Endpoint(endpoint) => Incoming::Endpoint(endpoint),
        Event::Message(message) => match serde_json::from_value(message) {
            Ok(message) => Incoming::Message(Box::new(message)),
            Err(error) => Incoming::Unreadable(error.to_string()),
        },
        Event::Unreadable(error) => Incoming::Unreadable(error),
        Event::Skipped => Incoming::Skipped,
    })
}

/// The URL of an `endpoint` event, which must stay on the stream's origin
/// (headers such as `Authorization` go with every POST).
fn resolve(stream: &Url, data: &str) -> Result<Url, SseError> {
    let url = stream
        .join(data.trim())
        .map_err(|_| SseError::BadEndpoint(data.to_owned()))?;
    if url.origin() != stream.origin() {
        return Err(SseError::ForeignEndpoint(url.into()));
    }
    Ok(url)
}

/// Seed 001's POST URL: the stream's path followed by `/message`.
fn wrapped_endpoint(stream: &Url) -> Url {
    let mut url = stream.clone();
    let path = format!("{}/message", stream.path().trim_end_matches('/'));
    url.set_path(&path);
    url.set_query(None);
    url.set_fragment(None);
    url
}

/// The `connectionId` of a `connect` event: a JSON object's field, or the
/// data itself.
fn connection_id(data: &str) -> Option<Value> {
    let data = data.trim();
    match serde_json::from_str::<Value>(data) {
        Ok(Value::Object(object)) => object
            .get("connectionId")
            .filter(|id| id.is_string() || id.is_number())
            .cloned(),
        Ok(id @ (Value::String(_) | Value::Number(_))) => Some(id),
        _ if !data.is_empty() && !data.starts_with(['{', '[']) => {
            Some(Value::String(data.to_owned()))
        }
        _ => None,
    }
}

/// A message as JSON, unwrapped from seed 001's `{"connectionId", "message"}`.
fn message(data: &str) -> Result<Value, serde_json::Error> {
    let value: Value = serde_json::from_str(data)?;
    Ok(match value {
        Value::Object(mut object)
            if !object.contains_key("jsonrpc")
                && object.get("message").is_some_and(Value::is_object) =>
        {
            object.remove("message").unwrap_or_default()
        }
        other => other,
    })
}

/// The id of the request `message` answers, if it is an answer.
pub(crate) fn answered_id(message: &ServerJsonRpcMessage) -> Option<&RequestId> {
    match message {
        ServerJsonRpcMessage::Response(response) => Some(&response.id),
        ServerJsonRpcMessage::Error(error) => error.id.as_ref(),
        _ => None,
    }
}

/// Where the stream stands, as senders see it.
#[derive(Debug, Clone)]
enum State {
    Open(Endpoint),
    /// Dropped; being reopened (and the session re-initialized).
    Reconnecting,
    Closed,
}

/// What a reopened stream needs to become the same session again.
#[derive(Debug, Default)]
struct Handshake {
    initialize: Option<ClientJsonRpcMessage>,
    initialized: bool,
}

/// What the transport and its reader task share.
struct Link {
    http: reqwest::Client,
    url: Url,
    headers: HeaderMap,
    timeout: Duration,
    state: watch::Sender<State>,
    /// Requests sent and not answered yet.
    pending: Mutex<HashSet<RequestId>>,
    handshake: Mutex<Handshake>,
    trace: Option<Traced>,
}

impl Link {
    /// Opens a stream and waits for its endpoint. Beside them: what the
    /// trace says of the stream's messages (the `GET`'s status and headers).
    async fn open(&self) -> Result<(Events, Endpoint, HttpInfo), SseError> {
        let deadline = Instant::now() + self.timeout;
        let request = self
            .http
            .get(self.url.clone())
            .headers(self.headers.clone())
            .header(ACCEPT, "text/event-stream")
            .header(CACHE_CONTROL, "no-cache")
            .send();
        let response = tokio::time::timeout_at(deadline, request)
            .await
            .map_err(|_| self.timed_out())?
            .map_err(SseError::Request)?;
        let response = successful(response).await?;
        let mut stream_http = HttpInfo::response(response.status(), response.headers());
        stream_http.method = Some(Method::GET.to_string());
        let kind = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|kind| kind.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        if !kind.starts_with("text/event-stream") {
            return Err(SseError::NotAStream(kind));
        }
        let mut events: Events = crate::sse::events(Box::pin(response.bytes_stream())).boxed();
        let mut heard = false;
        loop {
            let next = tokio::time::timeout_at(deadline, events.next())
                .await
                .map_err(|_| match heard {
                    true => self.timed_out(),
                    false => SseError::Silent(self.timeout.as_secs_f64()),
                })?;
            heard = true;
            match next {
                None => return Err(SseError::NoEndpoint),
                Some(Err(sse_stream::Error::Body(error))) => {
                    return Err(SseError::Broken(error.to_string()));
                }
                Some(Err(error)) => tracing::debug!(%error, "skipping a malformed SSE line"),
                Some(Ok(event)) => match interpret(&self.url, &event)? {
                    Incoming::Endpoint(endpoint) => {
                        tracing::debug!(
                            endpoint = %crate::secret::redact_userinfo(endpoint.url.as_str()),
                            "legacy SSE stream open"
                        );
                        return Ok((events, endpoint, stream_http));
                    }
                    other => tracing::debug!(?other, "skipping an event before the endpoint"),
                },
            }
        }
    }

    fn timed_out(&self) -> SseError {
        SseError::TimedOut(self.timeout.as_secs_f64())
    }

    /// Opens a new stream after a drop, waiting longer after each failure.
    async fn reopen(&self) -> Result<(Events, Endpoint, HttpInfo), SseError> {
        let mut delay = FIRST_RECONNECT_DELAY;
        let mut last = SseError::Closed;
        for attempt in 1..=RECONNECT_TRIES {
            tokio::time::sleep(delay).await;
            match self.open().await {
                Ok(opened) => return Ok(opened),
                Err(error) => {
                    tracing::info!(attempt, %error, "cannot reopen the SSE stream");
                    last = error;
                }
            }
            delay = (delay * 2).min(MAX_RECONNECT_DELAY);
        }
        Err(last)
    }

    /// The endpoint to POST to, once the stream is open.
    async fn endpoint(&self) -> Result<Endpoint, SseError> {
        let mut state = self.state.subscribe();
        let settled = async {
            let state = state
                .wait_for(|state| !matches!(state, State::Reconnecting))
                .await
                .map_err(|_| SseError::Closed)?;
            match &*state {
                State::Open(endpoint) => Ok(endpoint.clone()),
                State::Reconnecting | State::Closed => Err(SseError::Closed),
            }
        };
        tokio::time::timeout(self.timeout, settled)
            .await
            .map_err(|_| self.timed_out())?
    }

    async fn post(
        &self,
        endpoint: &Endpoint,
        message: &ClientJsonRpcMessage,
    ) -> Result<(), SseError> {
        let body = endpoint.body(serde_json::to_value(message)?);
        if let Some(trace) = &self.trace {
            let mut headers = self.headers.clone();
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            let http = HttpInfo::request(&Method::POST, &headers);
            let session = endpoint.session();
            trace.record(
                Direction::Sent,
                message,
                session.as_deref(),
                Some(&http),
                std::time::Instant::now(),
            );
        }
        let request = self
            .http
            .post(endpoint.url.clone())
            .headers(self.headers.clone())
            .json(&body)
            .send();
        let response = tokio::time::timeout(self.timeout, request)
            .await
            .map_err(|_| self.timed_out())?
            .map_err(SseError::Request)?;
        successful(response).await.map(drop)
    }

    /// Notes what the stream will need to answer, or to replay.
    fn outgoing(&self, message: &ClientJsonRpcMessage) {
        match message {
            ClientJsonRpcMessage::Request(request) => {
                if let Ok(mut pending) = self.pending.lock() {
                    pending.insert(request.id.clone());
                }
                if matches!(request.request, ClientRequest::InitializeRequest(_))
                    && let Ok(mut handshake) = self.handshake.lock()
                {
                    handshake.initialize = Some(message.clone());
                }
            }
            ClientJsonRpcMessage::Notification(notification)
                if matches!(
                    notification.notification,
                    ClientNotification::InitializedNotification(_)
                ) =>
            {
                if let Ok(mut handshake) = self.handshake.lock() {
                    handshake.initialized = true;
                }
            }
            _ => {}
        }
    }

    fn answered(&self, id: &RequestId) {
        if let Ok(mut pending) = self.pending.lock() {
            pending.remove(id);
        }
    }

    /// Answers every request in flight with an error: the stream that would
    /// have carried their answers is gone.
    async fn fail_pending(&self, to_service: &mpsc::Sender<ServerJsonRpcMessage>, why: &str) {
        let lost: Vec<RequestId> = self
            .pending
            .lock()
            .map(|mut pending| pending.drain().collect())
            .unwrap_or_default();
        for id in lost {
            let error = ErrorData::new(
                ErrorCode::INTERNAL_ERROR,
                format!(
                    "the SSE stream dropped while the request was in flight ({why}); it may or may not have run"
                ),
                Some(serde_json::json!({ STREAM_DROPPED: true })),
            );
            if to_service
                .send(ServerJsonRpcMessage::error(error, Some(id)))
                .await
                .is_err()
            {
                return;
            }
        }
    }

    /// The remembered `initialize` under an id of our own, and whether the
    /// `initialized` notification followed it.
    fn replay(&self, round: u32) -> Option<(ClientJsonRpcMessage, RequestId, bool)> {
        let handshake = self.handshake.lock().ok()?;
        let mut initialize = handshake.initialize.clone()?;
        let id = NumberOrString::String(format!("nexo-reinitialize-{round}").into());
        if let ClientJsonRpcMessage::Request(request) = &mut initialize {
            request.id = id.clone();
        }
        Some((initialize, id, handshake.initialized))
    }
}

/// The body of a refusal, cut short, for an error message.
/// `response` when its status is a success; otherwise its status, with the
/// start of its body.
async fn successful(response: reqwest::Response) -> Result<reqwest::Response, SseError> {
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    Err(SseError::Status {
        status: status.as_u16(),
        body: preview(response).await,
    })
}

async fn preview(mut response: reqwest::Response) -> String {
    let mut body = Vec::new();
    while body.len() < BODY_PREVIEW {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(BODY_PREVIEW);
    let text = String::from_utf8_lossy(&body).trim().to_owned();
    if text.is_empty() {
        "(no body)".to_owned()
    } else {
        text
    }
}

/// Reads the stream for the whole session: messages go to the service;
/// a drop fails what was in flight and reopens the stream.
async fn read(
    link: Arc<Link>,
    mut events: Events,
    mut endpoint: Endpoint,
    mut stream_http: HttpInfo,
    to_service: mpsc::Sender<ServerJsonRpcMessage>,
) {
    // The id of a replayed `initialize`, whether `initialized` follows it,
    // and how long its answer may take.
    let mut replaying: Option<(RequestId, bool, Instant)> = None;
    let mut rounds = 0;
    loop {
        let next = match &replaying {
            Some((_, _, deadline)) => match tokio::time::timeout_at(*deadline, events.next()).await
            {
                Ok(next) => next,
                Err(_) => {
                    tracing::warn!("the reopened SSE session did not answer `initialize` in time");
                    break;
                }
            },
            None => events.next().await,
        };
        let why = match next {
            Some(Ok(event)) => {
                match interpret(&link.url, &event) {
                    Ok(Incoming::Endpoint(moved)) => {
                        endpoint = moved;
                        if replaying.is_none() {
                            link.state.send_replace(State::Open(endpoint.clone()));
                        }
                    }
                    Ok(Incoming::Message(message)) => {
                        if let Some(trace) = &link.trace {
                            let session = endpoint.session();
                            trace.record(
                                Direction::Received,
                                &*message,
                                session.as_deref(),
                                Some(&stream_http),
                                std::time::Instant::now(),
                            );
                        }
                        let id = answered_id(&message).cloned();
                        if let (Some((replayed, initialized, _)), Some(id)) = (&replaying, &id)
                            && replayed == id
                        {
                            if let ServerJsonRpcMessage::Error(error) = message.as_ref() {
                                tracing::warn!(error = %error.error.message, "the reopened SSE session refused `initialize`");
                                break;
                            }
                            let initialized = *initialized;
                            replaying = None;
                            if initialized {
                                let notification = ClientJsonRpcMessage::notification(
                                    ClientNotification::InitializedNotification(
                                        InitializedNotification::default(),
                                    ),
                                );
                                if let Err(error) = link.post(&endpoint, &notification).await {
                                    tracing::warn!(%error, "cannot finish re-initializing the session");
                                    break;
                                }
                            }
                            tracing::info!(
                                "the SSE stream was reopened and the session re-initialized"
                            );
                            link.state.send_replace(State::Open(endpoint.clone()));
                            continue;
                        }
                        if let Some(id) = &id {
                            link.answered(id);
                        }
                        if to_service.send(*message).await.is_err() {
                            return;
                        }
                    }
                    Ok(Incoming::Unreadable(error)) => {
                        tracing::warn!(%error, "skipping an SSE message that is no JSON-RPC message");
                    }
                    Ok(Incoming::Skipped) => {}
                    Err(error) => tracing::warn!(%error, "ignoring a new endpoint"),
                }
                continue;
            }
            Some(Err(sse_stream::Error::Body(error))) => error.to_string(),
            Some(Err(error)) => {
                tracing::debug!(%error, "skipping a malformed SSE line");
                continue;
            }
            None => "the server closed it".to_owned(),
        };
        tracing::info!(%why, "the SSE stream dropped; reopening it");
        link.state.send_replace(State::Reconnecting);
        link.fail_pending(&to_service, &why).await;
        rounds += 1;
        match link.reopen().await {
            Ok((reopened, moved, http)) => {
                events = reopened;
                endpoint = moved;
                stream_http = http;
            }
            Err(error) => {
                tracing::warn!(%error, "the SSE stream is gone for good");
                break;
            }
        }
        match link.replay(rounds) {
            Some((initialize, id, initialized)) => {
                if let Err(error) = link.post(&endpoint, &initialize).await {
                    tracing::warn!(%error, "cannot re-initialize the session");
                    break;
                }
                replaying = Some((id, initialized, Instant::now() + link.timeout));
            }
            None => {
                link.state.send_replace(State::Open(endpoint.clone()));
            }
        }
    }
    link.state.send_replace(State::Closed);
    link.fail_pending(&to_service, "the session ended").await;
}

/// One session over the legacy HTTP+SSE transport.
pub struct LegacySse {
    link: Arc<Link>,
    from_stream: mpsc::Receiver<ServerJsonRpcMessage>,
    reader: tokio::task::JoinHandle<()>,
}

impl LegacySse {
    /// Opens the stream at `url` and waits for its endpoint, within `timeout`.
    /// With `trace`, every message it carries is traced.
    pub(crate) async fn connect(
        url: &str,
        headers: HeaderMap,
        timeout: Duration,
        trace: Option<Traced>,
    ) -> Result<Self, SseError> {
        let parsed = Url::parse(url)
            .map_err(|_| SseError::BadUrl(crate::secret::redact_userinfo(url).into_owned()))?;
        let http = crate::http::client_builder(timeout)
            .build()
            .map_err(SseError::Request)?;
        let (state, _) = watch::channel(State::Reconnecting);
        let link = Arc::new(Link {
            http,
            url: parsed,
            headers,
            timeout,
            state,
            pending: Mutex::default(),
            handshake: Mutex::default(),
            trace,
        });
        let (events, endpoint, stream_http) = link.open().await?;
        link.state.send_replace(State::Open(endpoint.clone()));
        let (to_service, from_stream) = mpsc::channel(QUEUE);
        let reader = tokio::spawn(read(
            link.clone(),
            events,
            endpoint,
            stream_http,
            to_service,
        ));
        Ok(Self {
            link,
            from_stream,
            reader,
        })
    }
}

impl Drop for LegacySse {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Transport<RoleClient> for LegacySse {
    type Error = SseError;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let link = self.link.clone();
        link.outgoing(&item);
        async move {
            let sent = match link.endpoint().await {
                Ok(endpoint) => link.post(&endpoint, &item).await,
                Err(error) => Err(error),
            };
            if sent.is_err()
                && let ClientJsonRpcMessage::Request(request) = &item
            {
                link.answered(&request.id);
            }
            sent
        }
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        self.from_stream.recv().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        self.link.state.send_replace(State::Closed);
        self.from_stream.close();
        Ok(())
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    fn event(kind: Option<&str>, data: &str) -> sse_stream::Sse {
        sse_stream::Sse {
            event: kind.map(str::to_owned),
            data: Some(data.to_owned()),
            id: None,
            retry: None,
        }
    }

    fn stream() -> Url {
        Url::parse("http://127.0.0.1:8000/base/sse?token=1").unwrap()
    }

    fn endpoint_of(incoming: Result<Incoming, SseError>) -> Endpoint {
        match incoming {
            Ok(Incoming::Endpoint(endpoint)) => endpoint,
            other => panic!("not an endpoint: {other:?}"),
        }
    }

    #[test]
    fn endpoints_resolve_against_the_stream_url() {
        let cases = [
            (
                "/messages?sessionId=abc",
                "http://127.0.0.1:8000/messages?sessionId=abc",
            ),
            (
                "messages?sessionId=abc",
                "http://127.0.0.1:8000/base/messages?sessionId=abc",
            ),
            (" /m \n", "http://127.0.0.1:8000/m"),
            (
                "http://127.0.0.1:8000/other?x=1",
                "http://127.0.0.1:8000/other?x=1",
            ),
        ];
        for (data, expected) in cases {
            let endpoint = endpoint_of(interpret(&stream(), &event(Some("endpoint"), data)));
            assert_eq!(endpoint.url.as_str(), expected, "{data}");
            assert_eq!(endpoint.connection_id, None);
        }
    }

    #[test]
    fn endpoints_on_another_origin_are_refused() {
        for data in [
            "http://evil.example/messages",
            "https://127.0.0.1:8000/m",
            "//other:1/m",
        ] {
            let refused = interpret(&stream(), &event(Some("endpoint"), data));
            assert!(
                matches!(refused, Err(SseError::ForeignEndpoint(_))),
                "{data}: {refused:?}"
            );
        }
    }

    #[test]
    fn seed_001_connect_events_give_a_wrapping_endpoint() {
        for (data, id) in [
            (r#"{"connectionId":"c-1"}"#, serde_json::json!("c-1")),
            (r#"{"connectionId":7,"other":true}"#, serde_json::json!(7)),
            ("c-2", serde_json::json!("c-2")),
            (r#""c-3""#, serde_json::json!("c-3")),
        ] {
            let endpoint = endpoint_of(interpret(&stream(), &event(Some("connect"), data)));
            assert_eq!(
                endpoint.url.as_str(),
                "http://127.0.0.1:8000/base/sse/message",
                "{data}"
            );
            assert_eq!(endpoint.connection_id, Some(id), "{data}");
        }
        for data in ["", "{}", r#"{"connectionId":null}"#] {
            let skipped = interpret(&stream(), &event(Some("connect"), data));
            assert!(
                matches!(skipped, Ok(Incoming::Skipped)),
                "{data}: {skipped:?}"
            );
        }
    }

    #[test]
    fn messages_plain_and_wrapped() {
        let plain = r#"{"jsonrpc":"2.0","id":3,"result":{}}"#;
        let wrapped = r#"{"connectionId":"c","message":{"jsonrpc":"2.0","id":3,"result":{}}}"#;
        for data in [plain, wrapped] {
            for kind in [None, Some("message")] {
                match interpret(&stream(), &event(kind, data)) {
                    Ok(Incoming::Message(message)) => {
                        assert_eq!(answered_id(&message), Some(&NumberOrString::Number(3)));
                    }
                    other => panic!("{data}: {other:?}"),
                }
            }
        }
    }

    #[test]
    fn raw_events_unwrap_and_bodies_wrap_by_dialect() {
        let wrapped = r#"{"connectionId":"c","message":{"jsonrpc":"2.0","id":3,"result":{}}}"#;
        match read_event(&stream(), None, wrapped) {
            Ok(Event::Message(message)) => assert_eq!(message["id"], 3),
            other => panic!("{other:?}"),
        }
        let ping = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
        let seed = match read_event(&stream(), Some("connect"), r#"{"connectionId":"c-1"}"#) {
            Ok(Event::Endpoint(endpoint)) => endpoint,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            seed.body(ping.clone()),
            serde_json::json!({"connectionId": "c-1", "message": ping})
        );
        let plain = endpoint_of(interpret(
            &stream(),
            &event(Some("endpoint"), "/m?sessionId=abc"),
        ));
        assert_eq!(plain.body(ping.clone()), ping);
        assert_eq!(plain.session().as_deref(), Some("abc"));
    }

    #[test]
    fn a_stream_that_opens_a_session_is_told_by_its_first_event() {
        assert!(opens_a_session("event: endpoint\ndata: /m?sessionId=1\n\n"));
        assert!(opens_a_session(": hi\r\nevent:connect\r\ndata: {}\r\n"));
        assert!(!opens_a_session("data: endpoint\n\n"));
        assert!(!opens_a_session("event: message\ndata: {}\n\n"));
    }

    #[test]
    fn another_session_on_the_same_endpoint() {
        let plain = endpoint_of(interpret(
            &stream(),
            &event(Some("endpoint"), "/m?x=1&sessionId=abc"),
        ));
        let other = plain.with_session("zzz").unwrap();
        assert_eq!(
            other.url().as_str(),
            "http://127.0.0.1:8000/m?x=1&sessionId=zzz"
        );
        let seed = endpoint_of(interpret(&stream(), &event(Some("connect"), "c-1")));
        let other = seed.with_session("zzz").unwrap();
        assert_eq!(other.session().as_deref(), Some("zzz"));
        assert_eq!(other.url(), seed.url());
        let bare = endpoint_of(interpret(&stream(), &event(Some("endpoint"), "/m")));
        assert!(bare.with_session("zzz").is_none());
    }

    #[test]
    fn noise_is_skipped() {
        for (kind, data) in [
            (None, "[DONE]"),
            (Some("message"), " [DONE] "),
            (Some("message"), ""),
            (Some("ping"), "{}"),
            (
                Some("state/update"),
                r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            ),
        ] {
            let skipped = interpret(&stream(), &event(kind, data));
            assert!(
                matches!(skipped, Ok(Incoming::Skipped)),
                "{kind:?} {data}: {skipped:?}"
            );
        }
        let unreadable = interpret(&stream(), &event(None, "{not json"));
        assert!(
            matches!(unreadable, Ok(Incoming::Unreadable(_))),
            "{unreadable:?}"
        );
    }

    #[test]
    fn the_drop_marker_is_recognised() {
        let marked = ErrorData::new(
            ErrorCode::INTERNAL_ERROR,
            "x",
            Some(serde_json::json!({ STREAM_DROPPED: true })),
        );
        assert!(stream_dropped(&marked));
        assert!(!stream_dropped(&ErrorData::new(
            ErrorCode::INTERNAL_ERROR,
            "x",
            None
        )));
    }

    /// A legacy server whose stream can be dropped on demand, counting what
    /// it was sent.
    mod reopening {
        use std::convert::Infallible;
        use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

        use axum::extract::State;
        use axum::response::sse::{Event, Sse};
        use futures::Stream;
        use rmcp::ServiceExt;
        use rmcp::model::CallToolRequestParams;
        use rmcp::service::ServiceError;

        use super::*;

        #[derive(Default)]
        struct Fake {
            stream: Mutex<Option<mpsc::UnboundedSender<Event>>>,
            drop_next_call: AtomicBool,
            streams: AtomicU32,
            initializes: AtomicU32,
            initialized: AtomicU32,
        }

        async fn open(
            State(fake): State<Arc<Fake>>,
        ) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
            let (sender, events) = mpsc::unbounded_channel();
            let n = fake.streams.fetch_add(1, Ordering::SeqCst);
            sender
                .send(
                    Event::default()
                        .event("endpoint")
                        .data(format!("/messages?s={n}")),
                )
                .unwrap();
            *fake.stream.lock().unwrap() = Some(sender);
            Sse::new(futures::stream::unfold(events, |mut events| async move {
                Some((Ok(events.recv().await?), events))
            }))
        }

        async fn receive(State(fake): State<Arc<Fake>>, body: String) -> axum::http::StatusCode {
            let message: Value = serde_json::from_str(&body).unwrap();
            let result = match message["method"].as_str().unwrap_or_default() {
                "initialize" => {
                    fake.initializes.fetch_add(1, Ordering::SeqCst);
                    serde_json::json!({
                        "protocolVersion": "2024-11-05",
                        "capabilities": { "tools": {} },
                        "serverInfo": { "name": "fake", "version": "1" },
                    })
                }
                "notifications/initialized" => {
                    fake.initialized.fetch_add(1, Ordering::SeqCst);
                    return axum::http::StatusCode::ACCEPTED;
                }
                "tools/call" if fake.drop_next_call.swap(false, Ordering::SeqCst) => {
                    fake.stream.lock().unwrap().take();
                    return axum::http::StatusCode::ACCEPTED;
                }
                "tools/call" => {
                    serde_json::json!({ "content": [{ "type": "text", "text": "ok" }] })
                }
                _ => return axum::http::StatusCode::ACCEPTED,
            };
            let answer =
                serde_json::json!({ "jsonrpc": "2.0", "id": message["id"], "result": result });
            if let Some(stream) = fake.stream.lock().unwrap().as_ref() {
                stream
                    .send(Event::default().event("message").data(answer.to_string()))
                    .unwrap();
            }
            axum::http::StatusCode::ACCEPTED
        }

        #[tokio::test]
        async fn a_dropped_stream_fails_the_call_in_flight_then_the_session_goes_on() {
            let fake = Arc::new(Fake::default());
            let app = axum::Router::new()
                .route("/sse", axum::routing::get(open))
                .route("/messages", axum::routing::post(receive))
                .with_state(fake.clone());
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = listener.local_addr().unwrap().port();
            tokio::spawn(async move { axum::serve(listener, app).await });

            let url = format!("http://127.0.0.1:{port}/sse");
            let transport =
                LegacySse::connect(&url, HeaderMap::new(), Duration::from_secs(20), None)
                    .await
                    .unwrap();
            let client = ().serve(transport).await.unwrap();
            let call = || client.call_tool(CallToolRequestParams::new("echo"));

            fake.drop_next_call.store(true, Ordering::SeqCst);
            match call().await {
                Err(ServiceError::McpError(error)) => assert!(stream_dropped(&error), "{error:?}"),
                other => panic!("expected the call to fail with the stream: {other:?}"),
            }
            // Sent while the stream is being reopened: waits, then goes through.
            let result = call().await.unwrap();
            assert_eq!(result.content[0].as_text().unwrap().text, "ok");
            assert_eq!(fake.streams.load(Ordering::SeqCst), 2);
            assert_eq!(fake.initializes.load(Ordering::SeqCst), 2);
            assert_eq!(fake.initialized.load(Ordering::SeqCst), 2);
            client.cancel().await.unwrap();
        }
    }
}
