//! A transport wrapper that sees every message of a session, whatever the
//! transport underneath: it notes when the connection ends (a child that
//! exits, a stream that closes), which is how supervision learns that a
//! server went away without a request having to fail first; and, with
//! `--trace`, it hands each message to the [`Tracer`] (one line per
//! message, nexo-trace's format). Untraced, a message is not serialized
//! here at all.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use nexo_trace::{Direction, HttpInfo, Observed, Side, Tracer};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::watch;

/// Whether a session's connection has ended; shared by the tap, which sets
/// it, and whoever waits on it.
pub(crate) type Ended = Arc<watch::Sender<bool>>;

pub(crate) struct Tap<T> {
    inner: T,
    ended: Ended,
    trace: Option<TracedConnection>,
}

/// Where a traced connection's messages go, and what its lines say of it.
/// The tap records messages of transports without sessions of their own
/// (stdio, in-process); the HTTP transports record theirs where the HTTP
/// exchange is seen, with its method, status, headers and session id.
#[derive(Clone)]
pub(crate) struct Traced {
    pub(crate) tracer: Tracer,
    pub(crate) server: Arc<str>,
    pub(crate) transport: &'static str,
}

impl Traced {
    /// Records `message` (serialized here), seen at `at`.
    pub(crate) fn record(
        &self,
        direction: Direction,
        message: &impl serde::Serialize,
        session: Option<&str>,
        http: Option<&HttpInfo>,
        at: Instant,
    ) {
        let Ok(bytes) = serde_json::to_vec(message) else {
            return;
        };
        self.record_bytes(direction, &bytes, session, http, at);
    }

    /// Records a message as it came over the wire.
    pub(crate) fn record_bytes(
        &self,
        direction: Direction,
        message: &[u8],
        session: Option<&str>,
        http: Option<&HttpInfo>,
        at: Instant,
    ) {
        let observed = Observed {
            server: &self.server,
            transport: self.transport,
            session,
            side: Side::Client,
            direction,
            message,
            http,
            envelope: None,
        };
        self.tracer.record_at(observed, at);
    }
}

/// A traced connection: where its lines go, and the id they carry as their
/// session (unique in the process), shared by the tap and, for stdio, the
/// child transport, which traces the lines that were no JSON-RPC.
pub(crate) type TracedConnection = (Traced, Arc<str>);

/// `trace` for one new connection.
pub(crate) fn connection(trace: Option<Traced>) -> Option<TracedConnection> {
    static CONNECTIONS: AtomicU64 = AtomicU64::new(1);
    trace.map(|trace| {
        let number = CONNECTIONS.fetch_add(1, Ordering::Relaxed);
        (trace, format!("{}-{number}", std::process::id()).into())
    })
}

impl<T> Tap<T> {
    pub(crate) fn new(inner: T, ended: Ended, trace: Option<TracedConnection>) -> Self {
        Self {
            inner,
            ended,
            trace,
        }
    }
}

impl<T> Transport<RoleClient> for Tap<T>
where
    T: Transport<RoleClient>,
{
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let Some((trace, session)) = &self.trace {
            trace.record(Direction::Sent, &item, Some(session), None, Instant::now());
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await;
        match (&message, &self.trace) {
            (None, _) => {
                self.ended.send_replace(true);
            }
            (Some(message), Some((trace, session))) => trace.record(
                Direction::Received,
                message,
                Some(session),
                None,
                Instant::now(),
            ),
            (Some(_), None) => {}
        }
        message
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let closed = self.inner.close().await;
        self.ended.send_replace(true);
        closed
    }
}
