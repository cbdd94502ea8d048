//! Streamable HTTP as the generator speaks it: one explicit HTTP/1.1
//! connection (hyper's connection API, no pool) kept alive for the whole
//! run, one POST at a time, its answer read as JSON or as an SSE stream
//! whose first event is timed. The connection is opened again after a
//! transport failure or a timeout, which leave it in an unknown state.

use std::net::SocketAddr;
use std::time::Instant;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, HOST, HeaderName, HeaderValue};
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpStream;

use crate::BenchError;
use crate::check::{ErrorClass, Failed};
use crate::plan::{Accept, Protocol};
use crate::wire;

const SESSION_HEADER: &str = "mcp-session-id";

/// Where a URL target is: its address, checked to be loopback unless
/// allowed otherwise, and what every request carries.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub addr: SocketAddr,
    authority: HeaderValue,
    path: String,
    headers: Vec<(HeaderName, HeaderValue)>,
}

impl Endpoint {
    /// Resolves `url`; refuses HTTPS (not measured yet) and, without
    /// `allow_remote`, any address that is not loopback.
    pub async fn resolve(
        url: &str,
        headers: &[nexo_client::Header],
        allow_remote: bool,
    ) -> Result<Self, BenchError> {
        let parsed = url::Url::parse(url)
            .map_err(|error| BenchError::usage(format!("`{url}` is not a URL: {error}"), None))?;
        if parsed.scheme() != "http" {
            return Err(BenchError::usage(
                format!(
                    "`nexo bench` speaks plain `http://`, not `{}://`",
                    parsed.scheme()
                ),
                Some("measure the server on its plain HTTP port on loopback".to_owned()),
            ));
        }
        let host = parsed.host_str().unwrap_or_default().to_owned();
        let port = parsed.port_or_known_default().unwrap_or(80);
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((bare, port))
            .await
            .map_err(|error| BenchError::Unreachable {
                message: format!("cannot resolve `{host}`: {error}"),
            })?
            .collect();
        let Some(addr) = addrs
            .iter()
            .find(|addr| addr.ip().is_loopback())
            .or_else(|| addrs.first())
            .copied()
        else {
            return Err(BenchError::Unreachable {
                message: format!("`{host}` has no address"),
            });
        };
        if !allow_remote && !addr.ip().is_loopback() {
            return Err(BenchError::Remote { host });
        }
        let authority = match parsed.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.clone(),
        };
        let mut path = parsed.path().to_owned();
        if let Some(query) = parsed.query() {
            path.push('?');
            path.push_str(query);
        }
        Ok(Self {
            addr,
            authority: HeaderValue::from_str(&authority)
                .map_err(|_| BenchError::usage(format!("`{host}` is no valid host"), None))?,
            path,
            headers: headers
                .iter()
                .map(|header| (header.name().clone(), header.value().clone()))
                .collect(),
        })
    }
}

/// A 2025-era session's headers.
#[derive(Debug, Clone, Default)]
pub struct SessionHeaders {
    pub id: Option<HeaderValue>,
    pub version: Option<HeaderValue>,
}

/// An answer read off the wire.
#[derive(Debug)]
pub struct Reply {
    pub message: Value,
    /// When the first byte of the body (the first event of a stream) came.
    pub first_event: Option<Instant>,
}

/// One HTTP/1.1 connection to the endpoint.
pub struct HttpLink {
    endpoint: Endpoint,
    accept: Accept,
    sender: Option<SendRequest<Full<Bytes>>>,
    pub session: Option<SessionHeaders>,
}

impl HttpLink {
    pub fn new(endpoint: Endpoint, accept: Accept) -> Self {
        Self {
            endpoint,
            accept,
            sender: None,
            session: None,
        }
    }

    /// Forgets the connection (after a failure or a timeout); the next
    /// request opens another.
    pub fn reset(&mut self) {
        self.sender = None;
    }

    async fn sender(&mut self) -> Result<&mut SendRequest<Full<Bytes>>, Failed> {
        if self.sender.as_ref().is_none_or(SendRequest::is_closed) {
            let stream = TcpStream::connect(self.endpoint.addr)
                .await
                .map_err(|error| {
                    Failed::new(ErrorClass::Transport, format!("cannot connect: {error}"))
                })?;
            let _ = stream.set_nodelay(true);
            let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .map_err(|error| {
                    Failed::new(ErrorClass::Transport, format!("handshake: {error}"))
                })?;
            tokio::spawn(async move {
                let _ = connection.await;
            });
            self.sender = Some(sender);
        }
        let sender = self
            .sender
            .as_mut()
            .ok_or_else(|| Failed::new(ErrorClass::Transport, "no connection"))?;
        sender
            .ready()
            .await
            .map_err(|error| Failed::new(ErrorClass::Transport, format!("connection: {error}")))?;
        Ok(sender)
    }

    /// POSTs `message`; reads the answer to request `id` (none for a
    /// notification, which expects 202).
    pub async fn post(
        &mut self,
        message: &Value,
        id: Option<u64>,
        protocol: Protocol,
        name: Option<&str>,
    ) -> Result<(Reply, Option<HeaderValue>), Failed> {
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(self.endpoint.path.as_str())
            .header(HOST, self.endpoint.authority.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(
                ACCEPT,
                match self.accept {
                    Accept::Both => "application/json, text/event-stream",
                    Accept::Sse => "text/event-stream, application/json;q=0",
                },
            );
        for (key, value) in &self.endpoint.headers {
            request = request.header(key, value);
        }
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match protocol {
            Protocol::Stateless2026 => {
                request = request
                    .header("mcp-protocol-version", wire::REVISION_2026)
                    .header("mcp-method", method);
                if let Some(name) = name.and_then(|name| HeaderValue::from_str(name).ok()) {
                    request = request.header("mcp-name", name);
                }
            }
            Protocol::Sessions2025 => {
                if let Some(session) = &self.session {
                    if let Some(id) = &session.id {
                        request = request.header(SESSION_HEADER, id.clone());
                    }
                    if let Some(version) = &session.version {
                        request = request.header("mcp-protocol-version", version.clone());
                    }
                }
            }
        }
        let request = request
            .body(Full::new(Bytes::from(message.to_string())))
            .map_err(|error| Failed::new(ErrorClass::Transport, format!("request: {error}")))?;
        let sender = self.sender().await?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|error| Failed::new(ErrorClass::Transport, format!("{error}")))?;
        let status = response.status();
        let session = response.headers().get(SESSION_HEADER).cloned();
        let is_sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|kind| kind.to_str().ok())
            .is_some_and(|kind| kind.starts_with("text/event-stream"));
        let mut body = response.into_body();
        let mut bytes = Vec::new();
        let mut first_event = None;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|error| {
                Failed::new(
                    ErrorClass::Transport,
                    format!("reading the answer: {error}"),
                )
            })?;
            if let Some(data) = frame.data_ref() {
                if first_event.is_none() && !data.is_empty() {
                    first_event = Some(Instant::now());
                }
                bytes.extend_from_slice(data);
            }
        }
        if id.is_none() {
            return if status == StatusCode::ACCEPTED || status == StatusCode::OK {
                Ok((
                    Reply {
                        message: Value::Null,
                        first_event,
                    },
                    session,
                ))
            } else {
                Err(Failed::new(
                    ErrorClass::Http(status.as_u16()),
                    format!("HTTP {status}"),
                ))
            };
        }
        if status != StatusCode::OK {
            // A JSON-RPC error carried with a 4xx (2026-07-28 header checks)
            // is classed by its status: the request never reached a tool.
            let text = String::from_utf8_lossy(&bytes);
            let text: String = text.chars().take(200).collect();
            return Err(Failed::new(
                ErrorClass::Http(status.as_u16()),
                format!("HTTP {status}: {text}"),
            ));
        }
        let message = if is_sse {
            let text = String::from_utf8_lossy(&bytes);
            wire::sse_data(&text)
                .iter()
                .filter_map(|data| serde_json::from_str::<Value>(data).ok())
                .find(|message| message.get("id").and_then(Value::as_u64) == id)
                .ok_or_else(|| {
                    Failed::new(
                        ErrorClass::Mismatch,
                        "the event stream ended without the answer",
                    )
                })?
        } else {
            serde_json::from_slice(&bytes).map_err(|error| {
                Failed::new(
                    ErrorClass::Transport,
                    format!("the answer is not JSON: {error}"),
                )
            })?
        };
        Ok((
            Reply {
                message,
                first_event,
            },
            session,
        ))
    }

    /// Begins a 2025-era session: `initialize`, then `initialized`.
    pub async fn initialize(&mut self, id: u64) -> Result<(), Failed> {
        self.session = None;
        let (reply, session) = self
            .post(
                &wire::initialize(id),
                Some(id),
                Protocol::Sessions2025,
                None,
            )
            .await?;
        let result = crate::check::answer(&reply.message, id, "initialize", &[])?;
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .and_then(|version| HeaderValue::from_str(version).ok());
        self.session = Some(SessionHeaders {
            id: session,
            version,
        });
        self.post(&wire::initialized(), None, Protocol::Sessions2025, None)
            .await?;
        Ok(())
    }

    /// Ends the session (DELETE), best effort.
    pub async fn end_session(&mut self) {
        let Some(id) = self.session.take().and_then(|session| session.id) else {
            return;
        };
        let Ok(request) = Request::builder()
            .method(Method::DELETE)
            .uri(self.endpoint.path.as_str())
            .header(HOST, self.endpoint.authority.clone())
            .header(SESSION_HEADER, id)
            .body(Full::new(Bytes::new()))
        else {
            return;
        };
        if let Ok(sender) = self.sender().await
            && let Ok(response) = sender.send_request(request).await
        {
            let _ = response.into_body().collect().await;
        }
    }
}
