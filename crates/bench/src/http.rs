//! Streamable HTTP as the generator speaks it: one explicit HTTP/1.1
//! connection (hyper's connection API, no pool) kept alive for the whole
//! run, one POST at a time, its answer read as JSON or as an SSE stream
//! whose first event is timed. The connection is opened again after a
//! transport failure or a timeout, which leave it in an unknown state.
//! The connection is driven by the task that sends on it (polled beside
//! each request and each frame of its answer) rather than by a task of its
//! own: a request then costs no hand-over between tasks, as in wrk's one
//! event loop.
//! A request the server sends on an answer's stream (a 2025-era
//! `elicitation/create`) is answered from the scenario on a second
//! connection, opened when first needed. `https://` URLs are spoken over
//! rustls with nexo-client's one TLS configuration (`nexo_client::tls`).

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use futures::StreamExt;
use http::header::{ACCEPT, CONTENT_TYPE, HOST, HeaderName, HeaderValue};
use http::{Method, Request, StatusCode};
use http_body_util::{BodyDataStream, BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use nexo_client::era;
use serde_json::{Map, Value};
use tokio::net::TcpStream;

use crate::BenchError;
use crate::check::{ErrorClass, Failed};
use crate::plan::{Accept, Protocol};
use crate::wire;

/// Where a URL target is: its address, checked to be loopback unless
/// allowed otherwise, and what every request carries.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// The URL as given (a legacy SSE stream's, which its link opens).
    pub(crate) url: url::Url,
    pub addr: SocketAddr,
    authority: HeaderValue,
    /// The URL's path and query, parsed once.
    uri: http::Uri,
    headers: Vec<(HeaderName, HeaderValue)>,
    tls: Option<Tls>,
}

/// What an `https://` endpoint's connections are wrapped in.
#[derive(Clone)]
struct Tls {
    config: Arc<rustls::ClientConfig>,
    name: rustls::pki_types::ServerName<'static>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tls({:?})", self.name)
    }
}

impl Tls {
    fn new(host: &str) -> Result<Self, BenchError> {
        let shared = nexo_client::tls::client_config().ok_or_else(|| {
            BenchError::usage(
                "TLS: the platform's certificate verifier is unavailable",
                None,
            )
        })?;
        let mut config = shared.as_ref().clone();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let name = rustls::pki_types::ServerName::try_from(host.to_owned())
            .map_err(|_| BenchError::usage(format!("`{host}` is no TLS server name"), None))?;
        Ok(Self {
            config: Arc::new(config),
            name,
        })
    }
}

impl Endpoint {
    /// Resolves `url` (`http://` or `https://`); without `allow_remote`,
    /// refuses any address that is not loopback.
    pub async fn resolve(
        url: &str,
        headers: &[nexo_client::Header],
        allow_remote: bool,
    ) -> Result<Self, BenchError> {
        let parsed = url::Url::parse(url)
            .map_err(|error| BenchError::usage(format!("`{url}` is not a URL: {error}"), None))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(BenchError::usage(
                format!(
                    "`nexo bench` speaks `http://` and `https://`, not `{}://`",
                    parsed.scheme()
                ),
                None,
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
        let tls = match parsed.scheme() {
            "https" => Some(Tls::new(bare)?),
            _ => None,
        };
        Ok(Self {
            addr,
            authority: HeaderValue::from_str(&authority)
                .map_err(|_| BenchError::usage(format!("`{host}` is no valid host"), None))?,
            uri: uri(&parsed)?,
            headers: headers
                .iter()
                .map(|header| (header.name().clone(), header.value().clone()))
                .collect(),
            tls,
            url: parsed,
        })
    }

    /// The target's own headers.
    pub(crate) fn headers(&self) -> http::HeaderMap {
        self.headers.iter().cloned().collect()
    }

    /// A request to this endpoint with the target's own headers.
    pub(crate) fn request(&self, method: Method) -> http::request::Builder {
        let mut request = Request::builder()
            .method(method)
            .uri(self.uri.clone())
            .header(HOST, self.authority.clone());
        for (key, value) in &self.headers {
            request = request.header(key, value);
        }
        request
    }

    /// Opens one HTTP/1.1 connection (TLS for `https://`), its driver
    /// spawned.
    pub(crate) async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, Failed> {
        let Conn { sender, driver } = self.connect_driven().await?;
        tokio::spawn(driver);
        Ok(sender)
    }

    /// Opens one HTTP/1.1 connection (TLS for `https://`) whose driver the
    /// caller polls.
    async fn connect_driven(&self) -> Result<Conn, Failed> {
        let stream = TcpStream::connect(self.addr).await.map_err(|error| {
            Failed::new(ErrorClass::Transport, format!("cannot connect: {error}"))
        })?;
        let _ = stream.set_nodelay(true);
        let handshake =
            |error: hyper::Error| Failed::new(ErrorClass::Transport, format!("handshake: {error}"));
        let (sender, driver): (_, Driver) = match &self.tls {
            None => {
                let (sender, connection) =
                    hyper::client::conn::http1::handshake(TokioIo::new(stream))
                        .await
                        .map_err(handshake)?;
                (sender, Box::pin(connection))
            }
            Some(tls) => {
                let connector = tokio_rustls::TlsConnector::from(Arc::clone(&tls.config));
                let stream = connector
                    .connect(tls.name.clone(), stream)
                    .await
                    .map_err(|error| Failed::new(ErrorClass::Transport, format!("TLS: {error}")))?;
                let (sender, connection) =
                    hyper::client::conn::http1::handshake(TokioIo::new(stream))
                        .await
                        .map_err(handshake)?;
                (sender, Box::pin(connection))
            }
        };
        Ok(Conn { sender, driver })
    }
}

/// The request target of `url`: its path and query.
fn uri(url: &url::Url) -> Result<http::Uri, BenchError> {
    let path = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    };
    path.parse()
        .map_err(|error| BenchError::usage(format!("`{path}` is no request path: {error}"), None))
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

/// What drives a connection: hyper's connection future.
type Driver = Pin<Box<dyn Future<Output = Result<(), hyper::Error>> + Send>>;

/// A connection and its driver.
struct Conn {
    sender: SendRequest<Full<Bytes>>,
    driver: Driver,
}

impl Conn {
    /// `work` (a request or a frame of its answer on this connection),
    /// the connection polled beside it. The connection ending first is a
    /// transport failure.
    async fn drive<T>(&mut self, work: impl Future<Output = T>) -> Result<T, Failed> {
        tokio::pin!(work);
        tokio::select! {
            biased;
            out = &mut work => Ok(out),
            ended = self.driver.as_mut() => Err(Failed::new(
                ErrorClass::Transport,
                match ended {
                    Ok(()) => "the server closed the connection".to_owned(),
                    Err(error) => format!("connection: {error}"),
                },
            )),
        }
    }
}

/// One HTTP/1.1 connection to the endpoint.
pub struct HttpLink {
    endpoint: Endpoint,
    accept: Accept,
    /// Taken while a request is on it: a request that fails or is given up
    /// (a timeout drops it) leaves none, and the next opens another.
    conn: Option<Conn>,
    /// Where answers to the server's own requests are POSTed while the
    /// main connection carries the stream that asked.
    side: Option<SendRequest<Full<Bytes>>>,
    pub session: Option<SessionHeaders>,
}

impl HttpLink {
    pub fn new(endpoint: Endpoint, accept: Accept) -> Self {
        Self {
            endpoint,
            accept,
            conn: None,
            side: None,
            session: None,
        }
    }

    /// Forgets the connection (after a failure or a timeout); the next
    /// request opens another.
    pub fn reset(&mut self) {
        self.conn = None;
    }

    /// The connection, open and ready for a request, taken out of the link
    /// (put back when its request went well).
    async fn take_conn(&mut self) -> Result<Conn, Failed> {
        let mut conn = match self.conn.take() {
            Some(conn) if !conn.sender.is_closed() => conn,
            _ => self.endpoint.connect_driven().await?,
        };
        let Conn { sender, driver } = &mut conn;
        let ready = tokio::select! {
            biased;
            ready = sender.ready() => ready.map_err(|error| format!("connection: {error}")),
            ended = driver.as_mut() => Err(match ended {
                Ok(()) => "the server closed the connection".to_owned(),
                Err(error) => format!("connection: {error}"),
            }),
        };
        match ready {
            Ok(()) => Ok(conn),
            // A kept-alive connection the server closed meanwhile: once
            // more on a new one.
            Err(_) => {
                let mut conn = self.endpoint.connect_driven().await?;
                let Conn { sender, driver } = &mut conn;
                tokio::select! {
                    biased;
                    ready = sender.ready() => ready.map_err(|error| {
                        Failed::new(ErrorClass::Transport, format!("connection: {error}"))
                    })?,
                    _ = driver.as_mut() => {
                        return Err(Failed::new(ErrorClass::Transport, "the server closed the connection"));
                    }
                }
                Ok(conn)
            }
        }
    }

    /// The headers a POST in this link's era and session carries.
    fn with_session(
        &self,
        mut request: http::request::Builder,
        protocol: Protocol,
        method: &str,
        name: Option<&str>,
    ) -> http::request::Builder {
        match protocol {
            Protocol::Stateless2026 => {
                request = request.header(
                    era::PROTOCOL_VERSION_HEADER,
                    HeaderValue::from_static(era::REVISION_2026),
                );
                for (header, value) in era::method_headers(method, name) {
                    request = request.header(header, value);
                }
            }
            Protocol::Sessions2025 => {
                if let Some(session) = &self.session {
                    if let Some(id) = &session.id {
                        request = request.header(era::SESSION_HEADER, id.clone());
                    }
                    if let Some(version) = &session.version {
                        request = request.header(era::PROTOCOL_VERSION_HEADER, version.clone());
                    }
                }
            }
        }
        request
    }

    /// POSTs `message`; reads the answer to request `id` (none for a
    /// notification, which expects 202). A request of the server's on the
    /// answer's stream is answered from `answers`.
    pub async fn post(
        &mut self,
        message: &Value,
        id: Option<u64>,
        protocol: Protocol,
        name: Option<&str>,
        answers: Option<&Map<String, Value>>,
    ) -> Result<(Reply, Option<HeaderValue>), Failed> {
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let request = self
            .endpoint
            .request(Method::POST)
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .header(
                ACCEPT,
                HeaderValue::from_static(match self.accept {
                    Accept::Both => "application/json, text/event-stream",
                    Accept::Sse => "text/event-stream, application/json;q=0",
                }),
            );
        let request = self
            .with_session(request, protocol, method, name)
            .body(Full::new(Bytes::from(
                serde_json::to_vec(message).unwrap_or_default(),
            )))
            .map_err(|error| Failed::new(ErrorClass::Transport, format!("request: {error}")))?;
        let mut conn = self.take_conn().await?;
        let sending = conn.sender.send_request(request);
        let response = conn
            .drive(sending)
            .await?
            .map_err(|error| Failed::new(ErrorClass::Transport, format!("{error}")))?;
        let status = response.status();
        let session = response.headers().get(era::SESSION_HEADER).cloned();
        let is_sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|kind| kind.to_str().ok())
            .is_some_and(|kind| kind.starts_with("text/event-stream"));
        let mut body = response.into_body();
        let mut bytes = Vec::new();
        let mut first_event = None;
        let mut answer = None;
        let reading = |error: &dyn std::fmt::Display| {
            Failed::new(
                ErrorClass::Transport,
                format!("reading the answer: {error}"),
            )
        };
        if is_sse && id.is_some() && status == StatusCode::OK {
            // Events are read as they come, so that a request of the
            // server's is answered while the stream waits for it.
            let mut events = Box::pin(nexo_client::sse::events(BodyDataStream::new(body)));
            while let Some(event) = conn.drive(events.next()).await? {
                let data = match event {
                    Ok(event) => event.data,
                    Err(sse_stream::Error::Body(error)) => return Err(reading(&error)),
                    Err(_) => continue,
                };
                first_event.get_or_insert_with(Instant::now);
                let Some(Ok(message)) = data.map(|data| serde_json::from_str::<Value>(&data))
                else {
                    continue;
                };
                if crate::answers::is_request(&message) {
                    let response = crate::answers::respond(&message, answers);
                    self.answer_server(&response, protocol).await?;
                } else if message.get("id").and_then(Value::as_u64) == id {
                    answer = Some(message);
                }
            }
        } else {
            while let Some(frame) = conn.drive(body.frame()).await? {
                let frame = frame.map_err(|error| reading(&error))?;
                if let Some(data) = frame.data_ref() {
                    if first_event.is_none() && !data.is_empty() {
                        first_event = Some(Instant::now());
                    }
                    bytes.extend_from_slice(data);
                }
            }
        }
        self.conn = Some(conn);
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
            answer.ok_or_else(|| {
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

    /// POSTs the answer to a request of the server's on the side
    /// connection (the main one is busy with the stream that asked).
    async fn answer_server(&mut self, response: &Value, protocol: Protocol) -> Result<(), Failed> {
        let request = self
            .endpoint
            .request(Method::POST)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream");
        let request = self
            .with_session(request, protocol, "", None)
            .body(Full::new(Bytes::from(response.to_string())))
            .map_err(|error| Failed::new(ErrorClass::Transport, format!("request: {error}")))?;
        if self.side.as_ref().is_none_or(SendRequest::is_closed) {
            self.side = Some(self.endpoint.connect().await?);
        }
        let side = self
            .side
            .as_mut()
            .ok_or_else(|| Failed::new(ErrorClass::Transport, "no connection"))?;
        side.ready()
            .await
            .map_err(|error| Failed::new(ErrorClass::Transport, format!("connection: {error}")))?;
        let reply = side
            .send_request(request)
            .await
            .map_err(|error| Failed::new(ErrorClass::Transport, format!("{error}")))?;
        let status = reply.status();
        let _ = reply.into_body().collect().await;
        if status.is_success() {
            Ok(())
        } else {
            Err(Failed::new(
                ErrorClass::Http(status.as_u16()),
                format!("HTTP {status} to the answer of the server's request"),
            ))
        }
    }

    /// Begins a 2025-era session: `initialize`, then `initialized`.
    pub async fn initialize(&mut self, id: u64, capabilities: &Value) -> Result<(), Failed> {
        self.session = None;
        let (reply, session) = self
            .post(
                &wire::initialize(id, capabilities),
                Some(id),
                Protocol::Sessions2025,
                None,
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
        self.post(
            &wire::initialized(),
            None,
            Protocol::Sessions2025,
            None,
            None,
        )
        .await?;
        Ok(())
    }

    /// Ends the session (DELETE), best effort.
    pub async fn end_session(&mut self) {
        let Some(id) = self.session.take().and_then(|session| session.id) else {
            return;
        };
        let Ok(request) = self
            .endpoint
            .request(Method::DELETE)
            .header(era::SESSION_HEADER, id)
            .body(Full::new(Bytes::new()))
        else {
            return;
        };
        if let Ok(mut conn) = self.take_conn().await {
            let sending = conn.sender.send_request(request);
            if let Ok(Ok(response)) = conn.drive(sending).await {
                let _ = conn.drive(response.into_body().collect()).await;
            }
        }
    }
}
