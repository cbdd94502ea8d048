//! Hosting any MCP server: stdio (the default) or HTTP, where HTTP means
//! Streamable HTTP at `/mcp` for both protocol eras, the legacy HTTP+SSE
//! transport of 2024-11-05 at `/sse`, and a health document at `GET /`,
//! behind `Origin`/`Host` checks, CORS, a body limit, an optional
//! tool-call log and an optional trace of every message ([`TraceTap`]).
//! Several applications can be served behind one listener
//! ([`serve_service`]); each request carries the client's address.
//!
//! What an exposed server needs, shared with the gateway: who may call
//! ([`auth`]: static tokens or an OAuth 2.1 resource server), rate limits
//! ([`limits`]), Prometheus metrics ([`metrics`]), and the layer that puts
//! them in front of [`serve_http`]'s application ([`guard`]). Without
//! authentication, [`serve_http`] refuses to listen on an address that is
//! not loopback unless told to stay open on purpose.
//!
//! This crate knows no particular server: it takes any rmcp
//! [`ServerHandler`]. The protocol itself is rmcp's; what is here is the
//! hosting around it. Start with [`serve_stdio`], [`serve_http`], or
//! [`app`] to test the HTTP application without a socket.

pub mod auth;
mod body;
mod calllog;
mod error;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
pub mod guard;
mod http;
mod id_scan;
mod inbound;
mod legacy_sse;
pub mod limits;
pub mod metrics;
mod outbox;
mod policy;
mod stdio;
mod tls;
mod trace;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::serve::ListenerExt;
use rmcp::ServerHandler;
use rmcp::ServiceExt;
use rmcp::model::Tool;
use tokio_util::sync::CancellationToken;

pub use crate::calllog::CallLogger;
pub use crate::error::ServeError;
pub use crate::http::{HttpApp, HttpOptions, MCP_PATH, SharedSessions, app};
pub use crate::legacy_sse::{MESSAGES_PATH, SSE_PATH};
pub use crate::policy::{HostPolicy, OriginPolicy, add_cors_headers, is_loopback_host};
pub use crate::stdio::LineTransport;
pub use crate::tls::{HANDSHAKE_TIMEOUT, TlsFiles, TlsListener};
pub use crate::trace::TraceTap;

/// The default request body limit (`--max-body`).
pub const DEFAULT_MAX_BODY: usize = 4 * 1024 * 1024;
/// The port used when neither `--http` nor `PORT` names one.
pub const DEFAULT_PORT: u16 = 8000;
/// How often an idle SSE stream (Streamable HTTP or legacy) gets a
/// keep-alive comment.
const SSE_KEEP_ALIVE: Duration = Duration::from_secs(15);
/// How long in-flight requests may run after a shutdown signal.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// How to host a server, whatever the transport.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The server's name, as the tool-call log records it.
    pub server_name: String,
    /// The server's tools, for the HTTP health document.
    pub tools: Vec<Tool>,
    /// The largest request accepted, in bytes (a line in stdio mode).
    pub max_body: usize,
    /// Where to append one JSON line per tool call.
    pub log: Option<PathBuf>,
    /// Where to append one JSON line per message (the nexo-trace format).
    pub trace: Option<PathBuf>,
    /// Leave the messages themselves out of the trace.
    pub trace_redact: bool,
    /// `--allow-origin` values.
    pub allow_origins: Vec<String>,
    /// `--allow-host` values.
    pub allow_hosts: Vec<String>,
    /// `--tls-cert` and `--tls-key`: serve HTTPS.
    pub tls: Option<TlsFiles>,
    /// Who may call over HTTP.
    pub auth: auth::AuthSettings,
    /// The rate limits over HTTP.
    pub limits: limits::LimitSettings,
    /// What serving fetches itself with (an OAuth issuer's metadata and
    /// key set): the caller's client, so that its trust (`--cacert`) and
    /// proxies are those of every other request nexo makes.
    pub http: reqwest::Client,
}

impl ServeOptions {
    /// The URL scheme clients reach the HTTP server by.
    pub fn scheme(&self) -> &'static str {
        if self.tls.is_some() { "https" } else { "http" }
    }

    /// The tool-call log `log` names, opened.
    pub fn logger(&self) -> Result<Option<CallLogger>, ServeError> {
        let Some(path) = &self.log else {
            return Ok(None);
        };
        let log = nexo_trace::ToolCallLog::open(path).map_err(|source| ServeError::OpenLog {
            path: path.clone(),
            source,
        })?;
        Ok(Some(CallLogger::new(log, &self.server_name)))
    }

    /// The trace `trace` names, opened.
    pub fn tracer(&self) -> Result<Option<TraceTap>, ServeError> {
        let Some(path) = &self.trace else {
            return Ok(None);
        };
        let options = nexo_trace::TraceOptions {
            redact_messages: self.trace_redact,
        };
        let tracer =
            nexo_trace::Tracer::open(path, options).map_err(|source| ServeError::OpenTrace {
                path: path.clone(),
                source,
            })?;
        Ok(Some(TraceTap::new(tracer, &self.server_name)))
    }
}

/// Serves one client on stdin/stdout until stdin ends or a signal arrives.
pub async fn serve_stdio<S: ServerHandler>(
    server: S,
    options: &ServeOptions,
) -> Result<(), ServeError> {
    let trace = options.tracer()?;
    let result = serve_stdio_traced(server, options, trace.clone()).await;
    if let Some(trace) = trace {
        trace.flush();
    }
    result
}

async fn serve_stdio_traced<S: ServerHandler>(
    server: S,
    options: &ServeOptions,
    trace: Option<TraceTap>,
) -> Result<(), ServeError> {
    let (reader, writer) = rmcp::transport::io::stdio_pipes();
    let (transport, writer_task) =
        LineTransport::new(reader, writer, options.max_body, options.logger()?, trace);
    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    // Behind dynamic dispatch: one serving loop compiled for every server.
    let started = tokio::select! {
        started = server.into_dyn().serve(transport) => started,
        () = &mut shutdown => return finish_writer(writer_task).await,
    };
    match started {
        Ok(running) => {
            let cancel = running.cancellation_token();
            tokio::select! {
                result = running.waiting() => {
                    if let Err(error) = result {
                        tracing::warn!(%error, "the server task ended abnormally");
                    }
                }
                () = &mut shutdown => cancel.cancel(),
            }
        }
        // A 2026-07-28 client never sends `initialize`: its stdin simply ends
        // after its stateless requests, which have all been answered.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => {}
        Err(error) => return Err(ServeError::Session(Box::new(error))),
    }
    finish_writer(writer_task).await
}

/// Waits for every queued message to be written.
async fn finish_writer(
    writer_task: tokio::task::JoinHandle<std::io::Result<()>>,
) -> Result<(), ServeError> {
    match writer_task.await {
        Ok(Ok(())) => Ok(()),
        // The client closed its end first: nothing more can be delivered.
        Ok(Err(error)) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Ok(Err(error)) => Err(ServeError::Server(error)),
        Err(error) => Err(ServeError::Server(std::io::Error::other(error))),
    }
}

/// Serves HTTP on `addr` until SIGINT or SIGTERM, then lets in-flight
/// requests finish for at most [`SHUTDOWN_GRACE`]. `on_listening` is told
/// the bound address (useful with port 0). The application is behind the
/// [`guard`]: `options.auth`, `options.limits`, and `/metrics`. Without
/// authentication an address that is not loopback is refused before it
/// is bound (unless `options.auth` is [`auth::AuthSettings::None`]).
pub async fn serve_http<S>(
    server: S,
    addr: SocketAddr,
    options: &ServeOptions,
    on_listening: impl FnOnce(SocketAddr),
) -> Result<(), ServeError>
where
    S: ServerHandler + Clone + Send + Sync + 'static,
{
    if options.auth == auth::AuthSettings::Unset && !addr.ip().is_loopback() {
        return Err(ServeError::OpenOnNetwork { addr });
    }
    let logger = options.logger()?;
    let trace = options.tracer()?;
    let guard = Arc::new(guard::Guard {
        auth: auth::Auth::new(&options.auth, auth::SERVER, options.http.clone()),
        limits: limits::Limits::new(&options.limits, "the server", None),
        metrics: metrics::Metrics::new("nexo_serve"),
        server: options.server_name.clone(),
        log: logger.clone(),
    });
    let sweep = (!guard.limits.is_empty()).then(|| guard.sweep());
    let result = serve_service(
        addr,
        options.tls.as_ref(),
        |bound, shutdown| {
            let origins = OriginPolicy::new(&options.allow_origins);
            let hosts = HostPolicy::new(&options.allow_hosts, bound.ip());
            let http_options = HttpOptions {
                origins: origins.clone(),
                hosts: hosts.clone(),
                max_body: options.max_body,
                tools: options.tools.clone(),
                logger,
                trace: trace.clone(),
                sessions: None,
            };
            guard.wrap(
                app(server, http_options, shutdown),
                origins,
                hosts,
                options.max_body,
            )
        },
        on_listening,
    )
    .await;
    if let Some(sweep) = sweep {
        sweep.abort();
    }
    if let Some(trace) = trace {
        trace.flush();
    }
    result
}

/// Serves the HTTP application `make` builds for the bound address (its
/// `Host` check needs it) on `addr`, as [`serve_http`] does: until SIGINT
/// or SIGTERM, in-flight requests given [`SHUTDOWN_GRACE`]; cancelling the
/// token `make` is given ends every session and stream. Each request
/// carries the client's address as axum's `ConnectInfo<SocketAddr>`
/// extension. With `tls`, connections are HTTPS ([`TlsListener`]). For
/// applications made of several [`app`]s (the gateway's endpoints).
pub async fn serve_service<T>(
    addr: SocketAddr,
    tls: Option<&TlsFiles>,
    make: impl FnOnce(SocketAddr, CancellationToken) -> T,
    on_listening: impl FnOnce(SocketAddr),
) -> Result<(), ServeError>
where
    T: tower::Service<
            axum::extract::Request,
            Response = axum::response::Response,
            Error = std::convert::Infallible,
        > + Clone
        + Send
        + Sync
        + 'static,
    T::Future: Send + 'static,
{
    let signal = shutdown_signal();
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })?;
    let bound = listener.local_addr().map_err(ServeError::Server)?;
    let shutdown = CancellationToken::new();
    let service = make(bound, shutdown.clone());
    let make_service =
        axum::ServiceExt::<axum::extract::Request>::into_make_service_with_connect_info::<SocketAddr>(
            service,
        );
    // Without TCP_NODELAY every SSE response, written in several pieces,
    // waits about 40 ms for the client's delayed ACK. (Tapping the
    // listener is also what gives axum the client's address.)
    let nodelay = |tcp: &tokio::net::TcpStream| {
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::debug!(%error, "cannot set TCP_NODELAY");
        }
    };
    match tls {
        Some(files) => {
            let listener =
                TlsListener::new(listener, files)?.tap_io(move |tls| nodelay(tls.get_ref().0));
            on_listening(bound);
            run_until_signalled(listener, make_service, signal, shutdown).await
        }
        None => {
            let listener = listener.tap_io(move |tcp| nodelay(tcp));
            on_listening(bound);
            run_until_signalled(listener, make_service, signal, shutdown).await
        }
    }
}

/// Serves connections from `listener` until `signal`, then cancels
/// `shutdown` and gives in-flight requests [`SHUTDOWN_GRACE`].
async fn run_until_signalled<L, M, S>(
    listener: L,
    make_service: M,
    signal: impl Future<Output = ()> + Send + 'static,
    shutdown: CancellationToken,
) -> Result<(), ServeError>
where
    L: axum::serve::Listener<Addr = SocketAddr>,
    M: for<'a> tower::Service<
            axum::serve::IncomingStream<'a, L>,
            Error = std::convert::Infallible,
            Response = S,
        > + Send
        + 'static,
    for<'a> <M as tower::Service<axum::serve::IncomingStream<'a, L>>>::Future: Send,
    S: tower::Service<
            axum::extract::Request,
            Response = axum::response::Response,
            Error = std::convert::Infallible,
        > + Clone
        + Send
        + 'static,
    S::Future: Send,
{
    let stopping = shutdown.clone();
    let server = axum::serve(listener, make_service).with_graceful_shutdown(async move {
        signal.await;
        tracing::info!("shutting down: finishing in-flight requests");
        stopping.cancel();
    });
    let server = server.into_future();
    tokio::pin!(server);
    tokio::select! {
        result = &mut server => result.map_err(ServeError::Server),
        () = async {
            shutdown.cancelled().await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } => {
            tracing::warn!("in-flight requests did not finish within {SHUTDOWN_GRACE:?}; stopping");
            Ok(())
        }
    }
}

/// Resolves `--http [ADDR]`: `HOST:PORT`, `HOST` (port from `port_env`, the
/// `PORT` variable, else 8000), `PORT` or `:PORT` (on 127.0.0.1), or nothing
/// (127.0.0.1 and the port as for `HOST`).
pub fn listen_address(
    spec: Option<&str>,
    port_env: Option<&str>,
) -> Result<SocketAddr, ServeError> {
    let bad = || ServeError::BadAddress {
        addr: spec.unwrap_or_default().to_owned(),
    };
    let default_port = || -> Result<u16, ServeError> {
        match port_env {
            Some(port) => port.trim().parse().map_err(|_| ServeError::BadAddress {
                addr: format!("PORT={port}"),
            }),
            None => Ok(DEFAULT_PORT),
        }
    };
    let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let spec = spec.map(str::trim).unwrap_or_default();
    if spec.is_empty() {
        return Ok(SocketAddr::new(loopback, default_port()?));
    }
    if let Ok(addr) = spec.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Ok(port) = spec.trim_start_matches(':').parse::<u16>() {
        return Ok(SocketAddr::new(loopback, port));
    }
    let host = spec.trim_start_matches('[').trim_end_matches(']');
    let ip = match host {
        "localhost" => loopback,
        _ => host.parse::<IpAddr>().map_err(|_| bad())?,
    };
    Ok(SocketAddr::new(ip, default_port()?))
}

/// Resolves on SIGINT or SIGTERM. The handlers are installed when this is
/// called, not when it is first polled, so a signal that arrives while the
/// server is still starting is not lost (and does not kill the process).
fn shutdown_signal() -> impl Future<Output = ()> + Send {
    use tokio::signal::unix::{SignalKind, signal};
    let terminate = signal(SignalKind::terminate());
    let interrupt = signal(SignalKind::interrupt());
    async move {
        let (Ok(mut terminate), Ok(mut interrupt)) = (terminate, interrupt) else {
            tracing::warn!("cannot listen for SIGINT/SIGTERM");
            return std::future::pending().await;
        };
        tokio::select! {
            _ = terminate.recv() => {}
            _ = interrupt.recv() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_address_forms() -> Result<(), ServeError> {
        let at = |spec: Option<&str>, port: Option<&str>| listen_address(spec, port);
        assert_eq!(
            at(None, None)?,
            "127.0.0.1:8000"
                .parse()
                .map_err(|_| ServeError::BadAddress {
                    addr: String::new()
                })?
        );
        assert_eq!(at(None, Some("9090"))?.port(), 9090);
        assert_eq!(
            at(Some("0.0.0.0"), Some("8080"))?.to_string(),
            "0.0.0.0:8080"
        );
        assert_eq!(at(Some("7000"), None)?.to_string(), "127.0.0.1:7000");
        assert_eq!(at(Some(":7001"), None)?.to_string(), "127.0.0.1:7001");
        assert_eq!(at(Some("[::1]:7002"), None)?.to_string(), "[::1]:7002");
        assert!(at(Some("nowhere:x"), None).is_err());
        assert!(at(None, Some("eighty")).is_err());
        Ok(())
    }
}
