//! A transport wrapper that sees every message of a session, whatever the
//! transport underneath: it notes when the connection ends (a child that
//! exits, a stream that closes), which is how supervision learns that a
//! server went away without a request having to fail first; and, with
//! `--trace`, it hands each message of an in-process connection to the
//! [`Tracer`] (one line per message, nexo-trace's format). The other
//! transports trace their own messages, as the bytes they write and read
//! ([`crate::child`], [`crate::wire`], [`crate::legacy_sse`]). Untraced, a
//! message is not serialized here at all.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use nexo_trace::{Direction, Envelope, HttpInfo, Observed, Side, Tracer};
use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
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
/// The tap records the messages of in-process connections, which never
/// become bytes otherwise; a stdio child's transport records the lines it
/// writes and reads; the HTTP transports record theirs where the HTTP
/// exchange is seen, with its method, status, headers and session id.
#[derive(Clone)]
pub(crate) struct Traced {
    pub(crate) tracer: Tracer,
    pub(crate) server: Arc<str>,
    pub(crate) transport: &'static str,
}

/// A message rmcp holds, as the trace takes it: serialized, with the
/// envelope read from the message rather than from the bytes.
pub(crate) trait Traceable: serde::Serialize {
    fn envelope(&self) -> Option<Envelope<'_>>;
}

impl Traceable for ClientJsonRpcMessage {
    fn envelope(&self) -> Option<Envelope<'_>> {
        Envelope::of_client_message(self)
    }
}

impl Traceable for ServerJsonRpcMessage {
    fn envelope(&self) -> Option<Envelope<'_>> {
        Envelope::of_server_message(self)
    }
}

impl Traced {
    /// Records `message` (serialized here, into a buffer each thread
    /// reuses), seen at `at`.
    pub(crate) fn record(
        &self,
        direction: Direction,
        message: &impl Traceable,
        session: Option<&str>,
        http: Option<&HttpInfo>,
        at: Instant,
    ) {
        if !self.tracer.is_recording() {
            return;
        }
        thread_local! {
            static BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
        }
        /// A thread's buffer is given back when a message made it larger.
        const KEEP: usize = 1024 * 1024;
        let mut bytes = BUFFER.take();
        bytes.clear();
        if serde_json::to_writer(&mut bytes, message).is_ok() {
            self.record_read(direction, &bytes, message.envelope(), session, http, at);
        }
        if bytes.capacity() <= KEEP {
            BUFFER.set(bytes);
        }
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
        self.record_read(direction, message, None, session, http, at);
    }

    /// Records a message as it went over the wire, with its envelope when
    /// rmcp read or built it (then `message` is the JSON of that very
    /// message).
    pub(crate) fn record_read(
        &self,
        direction: Direction,
        message: &[u8],
        envelope: Option<Envelope<'_>>,
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
            envelope,
        };
        self.tracer.record_at(observed, at);
    }
}

/// A traced connection: where its lines go, and the id they carry as their
/// session (unique in the process): the tap's, or a stdio child
/// transport's.
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
