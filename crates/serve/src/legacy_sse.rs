//! The deprecated HTTP+SSE transport of protocol revision 2024-11-05, still
//! spoken by many deployed clients (seed 001's remote server used it).
//!
//! `GET /sse` opens a session: a stream whose first event, `endpoint`,
//! carries the URL to POST to (`/messages?sessionId=...`). Each POSTed
//! JSON-RPC message gets 202 Accepted, and whatever the server answers
//! travels on the stream as `message` events, with keep-alive comments while
//! it is idle. The session, and the server instance behind it, ends when the
//! stream closes; its id then gets 404. Session ids are 128 random bits.
//!
//! rmcp no longer ships this transport, so this module bridges an rmcp
//! server to a pair of channels ([`SessionTransport`]).

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Query, Request, State};
use axum::http::{StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use nexo_trace::transport::SSE;
use nexo_trace::{Direction, HttpInfo};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::SSE_KEEP_ALIVE;
use crate::body::{json_rpc_error, read_body};
use crate::calllog::CallLogger;
use crate::guard::CallRefusal;
use crate::inbound;
use crate::outbox::{Outbox, SendError};
use crate::trace::TraceTap;

/// Where a legacy client opens its stream.
pub const SSE_PATH: &str = "/sse";
/// Where a legacy client POSTs its messages.
pub const MESSAGES_PATH: &str = "/messages";
/// How many legacy sessions may be open at once; more get 503.
const MAX_SESSIONS: usize = 1024;
/// Messages that may wait in each direction of one session.
const QUEUE: usize = 256;

/// The open legacy sessions, by id, and what every new one needs.
pub struct LegacySessions<S> {
    server: S,
    /// Each session's way to its server, and to its stream.
    open: Mutex<HashMap<String, Channels>>,
    max_body: usize,
    logger: Option<CallLogger>,
    trace: Option<TraceTap>,
    shutdown: CancellationToken,
}

impl<S> LegacySessions<S> {
    pub fn new(
        server: S,
        max_body: usize,
        logger: Option<CallLogger>,
        trace: Option<TraceTap>,
        shutdown: CancellationToken,
    ) -> Self {
        Self {
            server,
            open: Mutex::default(),
            max_body,
            logger,
            trace,
            shutdown,
        }
    }

    fn sender(&self, id: &str) -> Option<Channels> {
        self.open.lock().ok()?.get(id).cloned()
    }

    fn close(&self, id: &str) {
        if let Ok(mut open) = self.open.lock() {
            open.remove(id);
        }
    }
}

/// One open session's way to its server, and to its stream (for what the
/// guard answers in the server's stead).
type Channels = (mpsc::Sender<ClientJsonRpcMessage>, mpsc::Sender<Vec<u8>>);

/// Ends a session when its stream is dropped (the client went away, or the
/// server finished): the id is forgotten and the server instance cancelled.
struct SessionGuard<S> {
    sessions: Arc<LegacySessions<S>>,
    id: String,
    cancel: CancellationToken,
}

impl<S> Drop for SessionGuard<S> {
    fn drop(&mut self) {
        self.sessions.close(&self.id);
        self.cancel.cancel();
        tracing::debug!(session = %self.id, "legacy SSE session closed");
    }
}

/// `GET /sse`: opens a session and streams its messages.
pub async fn open_stream<S>(State(sessions): State<Arc<LegacySessions<S>>>) -> Response
where
    S: ServerHandler + Clone + Send + Sync + 'static,
{
    let id = format!("{:032x}", rand::random::<u128>());
    let (to_server, incoming) = mpsc::channel(QUEUE);
    let (outgoing, from_server) = mpsc::channel(QUEUE);
    {
        let Ok(mut open) = sessions.open.lock() else {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                "session table unavailable",
            )
                .into_response();
        };
        if open.len() >= MAX_SESSIONS {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "5")],
                "too many open SSE sessions; try again later",
            )
                .into_response();
        }
        open.insert(id.clone(), (to_server, outgoing.clone()));
    }
    let cancel = sessions.shutdown.child_token();
    // What every message on the stream travels in: the answer to `GET /sse`.
    let trace = sessions.trace.as_ref().map(|tap| {
        let stream = HttpInfo {
            status: Some(200),
            method: None,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            connection: None,
        };
        tap.connection(nexo_trace::transport::SSE, &id, Some(stream))
    });
    let transport = SessionTransport {
        incoming,
        outbox: Outbox::new(outgoing, sessions.logger.clone(), trace),
    };
    let server = sessions.server.clone();
    let running_cancel = cancel.clone();
    tokio::spawn(async move {
        match server.serve_with_ct(transport, running_cancel).await {
            Ok(running) => {
                if let Err(error) = running.waiting().await {
                    tracing::warn!(%error, "a legacy SSE session ended abnormally");
                }
            }
            Err(error) => tracing::debug!(%error, "a legacy SSE session ended before initializing"),
        }
    });
    let endpoint = Event::default()
        .event("endpoint")
        .data(format!("{MESSAGES_PATH}?sessionId={id}"));
    let guard = SessionGuard {
        sessions,
        id,
        cancel,
    };
    let messages = futures::stream::unfold(
        (guard, from_server, Some(endpoint)),
        |(guard, mut from_server, first)| async move {
            if let Some(endpoint) = first {
                return Some((Ok::<_, Infallible>(endpoint), (guard, from_server, None)));
            }
            let data = tokio::select! {
                data = from_server.recv() => data?,
                () = guard.cancel.cancelled() => return None,
            };
            // serde_json writes UTF-8 only; anything else is no message.
            let event = match String::from_utf8(data) {
                Ok(text) => Event::default().event("message").data(text),
                Err(_) => Event::default().comment("an undecodable message was dropped"),
            };
            Some((Ok(event), (guard, from_server, None)))
        },
    );
    Sse::new(messages)
        .keep_alive(KeepAlive::new().interval(SSE_KEEP_ALIVE))
        .into_response()
}

/// The query of `POST /messages`.
#[derive(Debug, serde::Deserialize)]
pub struct SessionQuery {
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
}

/// `POST /messages?sessionId=...`: hands one message to its session.
pub async fn post_message<S>(
    State(sessions): State<Arc<LegacySessions<S>>>,
    Query(query): Query<SessionQuery>,
    request: Request,
) -> Response
where
    S: ServerHandler + Clone + Send + Sync + 'static,
{
    let Some(id) = query.session_id.filter(|id| !id.is_empty()) else {
        return (
            StatusCode::BAD_REQUEST,
            "missing sessionId: POST to the URL of the stream's `endpoint` event",
        )
            .into_response();
    };
    let Some((sender, stream)) = sessions.sender(&id) else {
        return session_not_found();
    };
    let (parts, body) = request.into_parts();
    let body = match read_body(&parts.headers, body, sessions.max_body).await {
        Ok(body) => body,
        Err(refusal) => return refusal,
    };
    let trace = sessions.trace.as_ref();
    if let Some(tap) = trace {
        let http = HttpInfo::request(&parts.method, &parts.headers);
        tap.record(SSE, Some(&id), Direction::Received, &body, Some(&http));
    }
    let refuse = |rejection: &inbound::Rejection| {
        let response = json_rpc_error(StatusCode::BAD_REQUEST, rejection);
        if let Some(tap) = trace {
            let http = HttpInfo::response(response.status(), response.headers());
            let answer = rejection.to_response();
            tap.record(SSE, Some(&id), Direction::Sent, &answer, Some(&http));
        }
        response
    };
    let envelope = match inbound::inspect(&body) {
        Ok(envelope) => envelope,
        Err(rejection) => return refuse(&rejection),
    };
    let bytes = envelope.rewritten.as_deref().unwrap_or(&body);
    let mut message = match serde_json::from_slice::<ClientJsonRpcMessage>(bytes) {
        Ok(message) => message,
        Err(error) => return refuse(&inbound::unreadable(&envelope, &error)),
    };
    // A call the guard refused (crate::guard) is answered on the stream,
    // as a tool error, and never reaches the server.
    if let ClientJsonRpcMessage::Request(request) = &message
        && let Some(refusal) = parts.extensions.get::<CallRefusal>()
    {
        let answer = serde_json::json!({
            "jsonrpc": "2.0",
            "id": request.id,
            "result": refusal.result(),
        });
        return match stream.send(answer.to_string().into_bytes()).await {
            Ok(()) => (StatusCode::ACCEPTED, Body::from("Accepted")).into_response(),
            Err(_) => {
                sessions.close(&id);
                session_not_found()
            }
        };
    }
    // As on Streamable HTTP (rmcp), a request carries the HTTP request it
    // came in, so a handler sees its headers and extensions (the client's
    // address, what an authenticating layer established).
    if let ClientJsonRpcMessage::Request(request) = &mut message {
        rmcp::model::GetExtensions::extensions_mut(&mut request.request).insert(parts);
    }
    match sender.send(message).await {
        Ok(()) => (StatusCode::ACCEPTED, Body::from("Accepted")).into_response(),
        Err(_) => {
            sessions.close(&id);
            session_not_found()
        }
    }
}

fn session_not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        "session not found: it has ended or never existed; open a new stream with GET /sse",
    )
        .into_response()
}

/// The server's end of one legacy session: messages POSTed by the client
/// come in on `incoming`; what the server sends goes, encoded, to the
/// stream through the outbox.
struct SessionTransport {
    incoming: mpsc::Receiver<ClientJsonRpcMessage>,
    outbox: Outbox,
}

impl Transport<RoleServer> for SessionTransport {
    type Error = SendError;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.outbox.send(item)
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        let message = self.incoming.recv().await?;
        self.outbox.received(&message);
        Some(message)
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.incoming.close();
        Ok(())
    }
}
