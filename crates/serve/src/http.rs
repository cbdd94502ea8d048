//! Streamable HTTP at `/mcp` for both protocol eras, the legacy HTTP+SSE
//! transport at `/sse` and `/messages` ([`crate::legacy_sse`]), and the
//! health document at `GET /`.
//!
//! rmcp's [`StreamableHttpService`] speaks the protocol (sessions for
//! 2025-era clients, stateless requests and `server/discover` for 2026-07-28
//! ones). Around it this module puts what a deployed server needs: `Origin`
//! and `Host` checks (403), CORS, a body limit (413, [`crate::body`]),
//! JSON-RPC errors for malformed bodies (-32700, -32600) instead of
//! plain-text ones, the
//! leniency of [`crate::inbound`], a choice between JSON and SSE responses
//! that follows the client's `Accept`, and the taps of the tool-call log
//! and the trace ([`ResponseTap`]).
//!
//! A 2025-era session lives in this process (rmcp's `LocalSessionManager`).
//! Given [`SharedSessions`], rmcp also keeps each session's `initialize`
//! parameters in that store, and a request carrying a session id this
//! process does not hold is served after rmcp re-creates the session under
//! the same id and replays its handshake into the server: instances behind
//! one load balancer then serve each other's sessions. Without it, nothing
//! is looked up and an unknown session is a 404.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use http_body_util::BodyExt;
use nexo_trace::transport::STREAMABLE_HTTP;
use nexo_trace::{Direction, HttpInfo};
use rmcp::ServerHandler;
use rmcp::model::Tool;
use rmcp::transport::common::http_header::HEADER_SESSION_ID;
use rmcp::transport::streamable_http_server::session::SessionStore;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use sse_stream::SseStream;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::SSE_KEEP_ALIVE;
use crate::body::{json_rpc_error, read_body};
use crate::calllog::{CallLogger, PendingCall};
use crate::inbound::{self, INVALID_REQUEST, Rejection};
use crate::legacy_sse::{self, LegacySessions, MESSAGES_PATH, SSE_PATH};
use crate::metrics::Refused;
use crate::policy::{self, HostPolicy, OriginPolicy};
use crate::trace::TraceTap;

/// Where the MCP endpoint is mounted.
pub const MCP_PATH: &str = "/mcp";

/// Everything the HTTP front needs besides the server itself.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    pub origins: OriginPolicy,
    pub hosts: HostPolicy,
    pub max_body: usize,
    /// The server's tools, listed by the health document.
    pub tools: Vec<Tool>,
    pub logger: Option<CallLogger>,
    pub trace: Option<TraceTap>,
    /// Where 2025-era sessions are kept for other instances; none: in
    /// this process only.
    pub sessions: Option<SharedSessions>,
}

/// A store of 2025-era sessions that several instances share (rmcp's
/// [`SessionStore`]: each session's `initialize` parameters by its id).
#[derive(Clone)]
pub struct SharedSessions(pub Arc<dyn SessionStore>);

impl std::fmt::Debug for SharedSessions {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("SharedSessions")
    }
}

type McpService<S> = StreamableHttpService<S, LocalSessionManager>;

struct McpState<S> {
    /// Answers stateless requests with JSON when it can.
    json: McpService<S>,
    /// Answers every request with an SSE stream.
    sse: McpService<S>,
    max_body: usize,
    logger: Option<CallLogger>,
    trace: Option<TraceTap>,
}

/// The whole HTTP application, as one tower service. Every request is
/// checked (`Origin`, `Host`) and answered with its CORS headers right here;
/// `/mcp` then goes straight to [`mcp`], and the other routes (legacy SSE,
/// health) through an axum router. Written by hand rather than as axum
/// middleware layers because each of those layers costs the hot path an
/// allocation or a future of its own on every call.
pub struct HttpApp<S> {
    inner: Arc<App<S>>,
}

impl<S> Clone for HttpApp<S> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

struct App<S> {
    origins: OriginPolicy,
    hosts: HostPolicy,
    mcp: McpState<S>,
    /// Everything but `/mcp`.
    routes: Router,
}

/// The HTTP application for `server`. Cancelling `shutdown` ends every
/// session and open stream.
pub fn app<S>(server: S, options: HttpOptions, shutdown: CancellationToken) -> HttpApp<S>
where
    S: ServerHandler + Clone + Send + Sync + 'static,
{
    let sessions = Arc::new(LocalSessionManager::default());
    let config = |json_response: bool| {
        // rmcp's own Host and Origin checks are off: `App::refusal` applies
        // ours to every route, not only to /mcp.
        let mut config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(true)
            .with_json_response(json_response)
            .with_sse_keep_alive(Some(SSE_KEEP_ALIVE))
            .with_max_request_body_bytes(options.max_body)
            .with_cancellation_token(shutdown.child_token())
            .disable_allowed_hosts()
            .disable_allowed_origins();
        config.session_store = options.sessions.as_ref().map(|shared| shared.0.clone());
        config
    };
    let legacy = Arc::new(LegacySessions::new(
        server.clone(),
        options.max_body,
        options.logger.clone(),
        options.trace.clone(),
        shutdown.child_token(),
    ));
    let factory = |server: S| move || Ok(server.clone());
    let mcp = McpState {
        json: StreamableHttpService::new(factory(server.clone()), sessions.clone(), config(true)),
        sse: StreamableHttpService::new(factory(server), sessions, config(false)),
        max_body: options.max_body,
        logger: options.logger,
        trace: options.trace,
    };
    let health = Arc::new(health_document(&options.tools));
    let routes = Router::new()
        .route(
            SSE_PATH,
            get(legacy_sse::open_stream::<S>).with_state(legacy.clone()),
        )
        .route(
            MESSAGES_PATH,
            axum::routing::post(legacy_sse::post_message::<S>).with_state(legacy),
        )
        .route(
            "/",
            get(move || {
                let health = health.clone();
                async move { axum::Json(health.as_ref().clone()) }
            }),
        );
    HttpApp {
        inner: Arc::new(App {
            origins: options.origins,
            hosts: options.hosts,
            mcp,
            routes,
        }),
    }
}

impl<S> tower::Service<Request> for HttpApp<S>
where
    S: ServerHandler + Clone + Send + Sync + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let app = self.inner.clone();
        Box::pin(async move { Ok(app.handle(request).await) })
    }
}

impl<S> App<S>
where
    S: ServerHandler + Clone + Send + Sync + 'static,
{
    async fn handle(&self, request: Request) -> Response {
        if let Some(refusal) = self.refusal(&request) {
            return refusal;
        }
        if request.method() == Method::OPTIONS {
            return policy::preflight(&self.origins, request.headers());
        }
        let origin = request.headers().get(header::ORIGIN).cloned();
        let mut response = if request.uri().path() == MCP_PATH {
            mcp(&self.mcp, request).await
        } else {
            match self.routes.clone().oneshot(request).await {
                Ok(response) => response,
                Err(never) => match never {},
            }
        };
        policy::add_cors_headers(response.headers_mut(), &self.origins, origin.as_ref());
        response
    }

    fn refusal(&self, request: &Request) -> Option<Response> {
        refusal(&self.origins, &self.hosts, request).map(|(response, _)| response)
    }
}

/// The 403 for a request whose `Origin` or `Host` is not allowed, and
/// which of them it was.
pub(crate) fn refusal(
    origins: &OriginPolicy,
    hosts: &HostPolicy,
    request: &Request,
) -> Option<(Response, Refused)> {
    let headers = request.headers();
    if let Some(origin) = headers.get(header::ORIGIN) {
        let allowed = origin.to_str().is_ok_and(|origin| origins.allows(origin));
        if !allowed {
            return Some((
                forbidden("origin not allowed; start the server with `--allow-origin ORIGIN`"),
                Refused::Origin,
            ));
        }
    }
    let host = headers
        .get(header::HOST)
        .and_then(|host| host.to_str().ok())
        .or_else(|| request.uri().authority().map(|a| a.as_str()));
    match host {
        Some(host) if !hosts.allows(host) => Some((
            forbidden("host not allowed; start the server with `--allow-host HOST`"),
            Refused::Host,
        )),
        _ => None,
    }
}

/// The health document of seed 000, fields in its order:
/// `{"ok":true,"kind":"mcp-streamable-http","mount":"/mcp","tools":["echo(texto)", ...]}`
#[derive(Debug, Clone, serde::Serialize)]
struct Health {
    ok: bool,
    kind: &'static str,
    mount: &'static str,
    tools: Vec<String>,
}

fn health_document(tools: &[Tool]) -> Health {
    Health {
        ok: true,
        kind: "mcp-streamable-http",
        mount: MCP_PATH,
        tools: tools.iter().map(signature).collect(),
    }
}

/// `name(required, optional?)` from a tool's input schema.
fn signature(tool: &Tool) -> String {
    let required: Vec<&str> = tool
        .input_schema
        .get("required")
        .and_then(|required| required.as_array())
        .map(|names| names.iter().filter_map(|name| name.as_str()).collect())
        .unwrap_or_default();
    let arguments: Vec<String> = tool
        .input_schema
        .get("properties")
        .and_then(|properties| properties.as_object())
        .map(|properties| {
            properties
                .keys()
                .map(|name| {
                    if required.contains(&name.as_str()) {
                        name.clone()
                    } else {
                        format!("{name}?")
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    format!("{}({})", tool.name, arguments.join(", "))
}

fn forbidden(message: &str) -> Response {
    json_rpc_error(
        StatusCode::FORBIDDEN,
        &Rejection {
            code: INVALID_REQUEST,
            message: format!("forbidden: {message}"),
            id: None,
        },
    )
}

/// Which response forms the client's `Accept` allows.
#[derive(Debug, Clone, Copy)]
struct Accepts {
    json: bool,
    sse: bool,
}

fn accepts(headers: &HeaderMap) -> Accepts {
    let mut accepts = Accepts {
        json: false,
        sse: false,
    };
    let mut any_header = false;
    for value in headers.get_all(header::ACCEPT) {
        any_header = true;
        let Ok(value) = value.to_str() else { continue };
        for entry in value.split(',') {
            let mut parts = entry.split(';');
            let essence = parts.next().unwrap_or_default().trim();
            let refused = parts.any(|parameter| {
                parameter.split_once('=').is_some_and(|(name, quality)| {
                    name.trim() == "q" && quality.trim().parse::<f32>().is_ok_and(|q| q == 0.0)
                })
            });
            if refused {
                continue;
            }
            // Media types are case-insensitive; compare without allocating,
            // since every POST to /mcp passes through here.
            let is = |name: &str| essence.eq_ignore_ascii_case(name);
            if is("application/json") || is("application/*") {
                accepts.json = true;
            } else if is("text/event-stream") || is("text/*") {
                accepts.sse = true;
            } else if essence == "*/*" {
                accepts.json = true;
                accepts.sse = true;
            }
        }
    }
    if !any_header {
        accepts.json = true;
        accepts.sse = true;
    }
    accepts
}

/// The answer to a `DELETE` that ended a session: 204 No Content where
/// rmcp says 202 (the Python SDK's client takes only 200 or 204, and warns
/// "Session termination failed: 202" otherwise); a refusal as it is.
fn session_ended(response: Response) -> Response {
    if response.status() != StatusCode::ACCEPTED {
        return response;
    }
    let (mut parts, _) = response.into_parts();
    parts.status = StatusCode::NO_CONTENT;
    parts.headers.remove(header::CONTENT_TYPE);
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::empty())
}

/// The `/mcp` endpoint.
async fn mcp<S>(state: &McpState<S>, request: Request) -> Response
where
    S: ServerHandler + Clone + Send + Sync + 'static,
{
    if request.method() == Method::DELETE {
        return session_ended(forward(&state.sse, request).await);
    }
    if request.method() != Method::POST {
        let Some(trace) = &state.trace else {
            return forward(&state.sse, request).await;
        };
        // The standalone stream of a GET carries messages; the end of a
        // session (DELETE) and refusals carry none.
        let session = session_of(request.headers());
        let response = forward(&state.sse, request).await;
        if !is_sse(&response) {
            return response;
        }
        let tap = ResponseTap {
            call: None,
            trace: Some(TraceAnswers::new(trace, session)),
        };
        return tap_sse(response, tap);
    }
    let accepts = accepts(request.headers());
    if !accepts.json && !accepts.sse {
        return (
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: accept application/json or text/event-stream",
        )
            .into_response();
    }
    let (mut parts, body) = request.into_parts();
    let body = match read_body(&parts.headers, body, state.max_body).await {
        Ok(body) => body,
        Err(refusal) => return refusal,
    };
    let trace = state.trace.as_ref().map(|tap| {
        let session = session_of(&parts.headers);
        let http = HttpInfo::request(&parts.method, &parts.headers);
        tap.record(
            STREAMABLE_HTTP,
            session.as_deref(),
            Direction::Received,
            &body,
            Some(&http),
        );
        TraceAnswers::new(tap, session)
    });
    // The envelope is read before rmcp only when something here needs it:
    // the call log, a client that takes no SSE (its answer is collapsed by
    // id), an `initialize` to complete, which never comes within a
    // session, or an id rmcp would round (`inbound::inspect`). A message in
    // a session is otherwise read once, by rmcp, and a malformed one is
    // explained after rmcp has refused it.
    let needs_envelope = state.logger.is_some()
        || !accepts.sse
        || !parts.headers.contains_key(HEADER_SESSION_ID)
        || inbound::may_hold_a_rounded_id(&body);
    let mut request_id = None;
    let mut pending = None;
    let mut forwarded = body.clone();
    if needs_envelope {
        let envelope = match inbound::inspect(&body) {
            Ok(envelope) => envelope,
            Err(rejection) => return refuse(&rejection, trace),
        };
        request_id = envelope.id.map(|id| id.get().to_owned());
        pending = state.logger.as_ref().and_then(|logger| {
            let call = envelope.tool_call()?;
            Some((logger.clone(), PendingCall::new(call, &parts.extensions)))
        });
        if let Some(rewritten) = envelope.rewritten {
            forwarded = Bytes::from(rewritten);
            parts.headers.remove(header::CONTENT_LENGTH);
        }
    }
    // rmcp serves only clients that name both media types exactly;
    // `accepts` has already decided which form this client gets.
    parts.headers.insert(
        header::ACCEPT,
        HeaderValue::from_static("application/json, text/event-stream"),
    );
    let service = if accepts.json {
        &state.json
    } else {
        &state.sse
    };
    let response = forward(service, Request::from_parts(parts, Body::from(forwarded))).await;
    if !needs_envelope
        && response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE
        && let Err(rejection) = inbound::inspect(&body)
    {
        return refuse(&rejection, trace);
    }
    let is_sse = is_sse(&response);
    match (is_sse, accepts.sse, request_id) {
        (true, false, Some(id)) => {
            let collapsed = collapse_sse(response, &id, pending).await;
            match trace {
                Some(trace) => {
                    let tap = ResponseTap {
                        call: None,
                        trace: Some(trace),
                    };
                    tap_json(collapsed, tap).await
                }
                None => collapsed,
            }
        }
        (true, _, id) => {
            let call = pending
                .zip(id)
                .map(|((logger, pending), id)| (logger, pending, Some(id)));
            match (call, trace) {
                (None, None) => response,
                (call, trace) => tap_sse(response, ResponseTap { call, trace }),
            }
        }
        (false, _, _) => {
            let call = pending.map(|(logger, pending)| (logger, pending, None));
            match (call, trace) {
                (None, None) => response,
                (call, trace) => tap_json(response, ResponseTap { call, trace }).await,
            }
        }
    }
}

fn is_sse(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|kind| kind.as_bytes().starts_with(b"text/event-stream"))
}

/// The `Mcp-Session-Id` of a request or response.
fn session_of(headers: &HeaderMap) -> Option<String> {
    headers
        .get(HEADER_SESSION_ID)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

/// The 400 for a body that is no message, traced when tracing.
fn refuse(rejection: &Rejection, trace: Option<TraceAnswers>) -> Response {
    let response = json_rpc_error(StatusCode::BAD_REQUEST, rejection);
    if let Some(mut trace) = trace {
        trace.http = Some(HttpInfo::response(response.status(), response.headers()));
        trace.record(&rejection.to_response());
    }
    response
}

async fn forward<S>(service: &McpService<S>, request: Request) -> Response
where
    S: ServerHandler + Clone + Send + Sync + 'static,
{
    match service.clone().oneshot(request).await {
        Ok(response) => response.map(Body::new),
        Err(never) => match never {},
    }
}

/// Where the messages of one answer are traced: the session of the
/// request (or the one the answer opens), and the response's status and
/// headers, known once the response is.
struct TraceAnswers {
    tap: TraceTap,
    session: Option<String>,
    http: Option<HttpInfo>,
}

impl TraceAnswers {
    fn new(tap: &TraceTap, session: Option<String>) -> Self {
        Self {
            tap: tap.clone(),
            session,
            http: None,
        }
    }

    /// Takes the status and headers of `parts`, and the session it opens.
    fn answered_by(&mut self, parts: &axum::http::response::Parts) {
        if let Some(session) = session_of(&parts.headers) {
            self.session = Some(session);
        }
        self.http = Some(HttpInfo::response(parts.status, &parts.headers));
    }

    fn record(&self, message: &[u8]) {
        self.tap.record(
            STREAMABLE_HTTP,
            self.session.as_deref(),
            Direction::Sent,
            message,
            self.http.as_ref(),
        );
    }
}

/// What watches the messages of a response go by: the tool-call log,
/// waiting for the one answer (by id, on a stream), and the trace, which
/// records every message.
struct ResponseTap {
    call: Option<(CallLogger, PendingCall, Option<String>)>,
    trace: Option<TraceAnswers>,
}

impl ResponseTap {
    fn answered_by(&mut self, parts: &axum::http::response::Parts) {
        if let Some(trace) = &mut self.trace {
            trace.answered_by(parts);
        }
    }

    /// Shows one message to the taps; false once none wants more.
    fn message(&mut self, message: &[u8]) -> bool {
        if let Some(trace) = &self.trace {
            trace.record(message);
        }
        let done = match &self.call {
            Some((logger, pending, id)) => {
                let answered = id.as_deref().is_none_or(|id| answers(message, id));
                if answered {
                    logger.finish(pending, message);
                }
                answered
            }
            None => false,
        };
        if done {
            self.call = None;
        }
        self.call.is_some() || self.trace.is_some()
    }
}

/// Collects a JSON response for the taps, and passes it on unchanged. An
/// empty body (202 Accepted) is no message.
async fn tap_json(response: Response, mut tap: ResponseTap) -> Response {
    let (parts, body) = response.into_parts();
    tap.answered_by(&parts);
    match body.collect().await {
        Ok(collected) => {
            let bytes = collected.to_bytes();
            if !bytes.trim_ascii().is_empty() {
                tap.message(&bytes);
            }
            Response::from_parts(parts, Body::from(bytes))
        }
        Err(error) => {
            tracing::warn!(%error, "cannot read a response body");
            Response::from_parts(parts, Body::empty())
        }
    }
}

/// True when `message` is the response to the request with id `id` (raw JSON).
fn answers(message: &[u8], id: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Reply<'a> {
        #[serde(borrow, default)]
        id: Option<&'a serde_json::value::RawValue>,
        #[serde(default)]
        method: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_slice::<Reply<'_>>(message)
        .is_ok_and(|reply| reply.method.is_none() && reply.id.is_some_and(|raw| raw.get() == id))
}

/// Passes an SSE response through unchanged, showing the taps each
/// message as its event goes by. A copy of each chunk is fed to an
/// `sse-stream` parser over a channel, which is drained of the events it
/// can complete without waiting, so the bytes the client gets are rmcp's
/// own; the parsing stops once no tap wants more.
fn tap_sse(response: Response, mut tap: ResponseTap) -> Response {
    let (parts, body) = response.into_parts();
    tap.answered_by(&parts);
    let (copies, chunks) = futures::channel::mpsc::unbounded::<Result<Bytes, Infallible>>();
    let mut events = Some((copies, SseStream::from_bytes_stream(chunks), tap));
    let stream = body.into_data_stream().map(move |chunk| {
        if let (Ok(bytes), Some((copies, parser, tap))) = (&chunk, &mut events) {
            let _ = copies.unbounded_send(Ok(bytes.clone()));
            let mut finished = false;
            while let Some(Some(event)) = parser.next().now_or_never() {
                match event {
                    Ok(event) => {
                        let Some(data) = event.data.filter(|data| !data.trim().is_empty()) else {
                            continue;
                        };
                        if !tap.message(data.as_bytes()) {
                            finished = true;
                            break;
                        }
                    }
                    // Not SSE after all: nothing more can be read.
                    Err(_) => {
                        finished = true;
                        break;
                    }
                }
            }
            if finished {
                events = None;
            }
        }
        chunk
    });
    Response::from_parts(parts, Body::from_stream(stream))
}

/// Turns an SSE response into the single JSON response a client that does
/// not accept SSE asked for; notifications sent before it are dropped.
async fn collapse_sse(
    response: Response,
    id: &str,
    pending: Option<(CallLogger, PendingCall)>,
) -> Response {
    let (mut parts, body) = response.into_parts();
    let mut events = SseStream::new(body);
    while let Some(Ok(event)) = events.next().await {
        let Some(data) = event.data.filter(|data| answers(data.as_bytes(), id)) else {
            continue;
        };
        if let Some((logger, pending)) = &pending {
            logger.finish(pending, data.as_bytes());
        }
        parts.headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        parts.headers.remove(header::CONTENT_LENGTH);
        return Response::from_parts(parts, Body::from(data));
    }
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        "the server ended the response without answering",
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_answers_its_request_only() {
        assert!(answers(br#"{"jsonrpc":"2.0","id":7,"result":{}}"#, "7"));
        assert!(!answers(br#"{"jsonrpc":"2.0","id":8,"result":{}}"#, "7"));
        assert!(!answers(
            br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#,
            "7"
        ));
    }

    #[test]
    fn accept_header_forms() {
        let mut headers = HeaderMap::new();
        let both = accepts(&headers);
        assert!(both.json && both.sse);
        headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        let json = accepts(&headers);
        assert!(json.json && !json.sse);
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream, application/json;q=0"),
        );
        let sse = accepts(&headers);
        assert!(!sse.json && sse.sse);
    }
}
