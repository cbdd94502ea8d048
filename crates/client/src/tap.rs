//! A transport wrapper that sees every message of a session, whatever the
//! transport underneath: it notes when the connection ends (a child that
//! exits, a stream that closes), which is how supervision learns that a
//! server went away without a request having to fail first; and, with
//! `--trace`, it hands each message of an in-process connection to the
//! [`Tracer`] (one line per message, nexo-trace's format). The other
//! transports trace their own messages, as the bytes they write and read
//! ([`crate::child`], [`crate::wire`], [`crate::legacy_sse`]). Untraced, a
//! message is not serialized here at all.
//!
//! It also keeps a late answer to an abandoned era probe from reaching
//! rmcp ([`ProbeGuard`]): with `--protocol auto`, rmcp gives
//! `server/discover` 10 s and then sends `initialize`; a server that takes
//! longer to start (`npx -y` or `uvx` on a cold cache, `docker run`, a
//! JVM) reads both and answers both, and rmcp would take the probe's
//! answer for the handshake's.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use nexo_trace::{Direction, Envelope, HttpInfo, Observed, Side, Tracer};
use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, RequestId, ServerJsonRpcMessage};
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
    probe: ProbeGuard,
    /// Messages read from `inner` before the tap took it (the stdio era
    /// probe's), handed on first.
    early: VecDeque<ServerJsonRpcMessage>,
}

/// The `server/discover` probe of a handshake, followed so that its answer
/// is dropped when it comes after rmcp gave up on it and sent `initialize`
/// (its answer would otherwise be read as the answer to `initialize`:
/// "conflict initialized response id: expected 1, got 0").
#[derive(Debug, Default)]
struct ProbeGuard {
    /// The probe sent and not yet answered.
    waiting: Option<RequestId>,
    /// The probe given up on: `initialize` went out before its answer.
    abandoned: Option<RequestId>,
}

impl ProbeGuard {
    fn sent(&mut self, message: &ClientJsonRpcMessage) {
        let ClientJsonRpcMessage::Request(request) = message else {
            return;
        };
        match request.request {
            ClientRequest::DiscoverRequest(_) => self.waiting = Some(request.id.clone()),
            ClientRequest::InitializeRequest(_) => {
                if let Some(probe) = self.waiting.take() {
                    self.abandoned = Some(probe);
                }
            }
            _ => {}
        }
    }

    /// Whether `message` is the late answer to the abandoned probe, which
    /// nobody waits for any more.
    fn is_late_answer(&mut self, message: &ServerJsonRpcMessage) -> bool {
        let Some(id) = crate::legacy_sse::answered_id(message) else {
            return false;
        };
        if self.waiting.as_ref() == Some(id) {
            self.waiting = None;
        }
        if self.abandoned.as_ref() == Some(id) {
            self.abandoned = None;
            return true;
        }
        false
    }
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
            probe: ProbeGuard::default(),
            early: VecDeque::new(),
        }
    }

    /// The tap, handing on `early` before what `inner` reads next.
    pub(crate) fn replaying(mut self, early: VecDeque<ServerJsonRpcMessage>) -> Self {
        self.early = early;
        self
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
        self.probe.sent(&item);
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let mut message = match self.early.pop_front() {
            Some(early) => Some(early),
            None => self.inner.receive().await,
        };
        while let Some(late) = message.as_ref().filter(|m| self.probe.is_late_answer(m)) {
            tracing::debug!(
                answer = ?crate::legacy_sse::answered_id(late),
                "dropped the late answer to server/discover, given up on for initialize"
            );
            message = self.inner.receive().await;
        }
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

#[cfg(test)]
mod tests {
    use rmcp::model::{
        DiscoverRequest, DiscoverRequestParams, InitializeRequest, InitializeRequestParams,
        NumberOrString,
    };

    use super::*;

    fn answer(id: u32) -> ServerJsonRpcMessage {
        let message = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}});
        serde_json::from_value(message).unwrap_or_else(|error| panic!("{error}"))
    }

    fn discover(id: u32) -> ClientJsonRpcMessage {
        let request = DiscoverRequest::new(DiscoverRequestParams {});
        ClientJsonRpcMessage::request(
            ClientRequest::DiscoverRequest(request),
            NumberOrString::Number(id.into()),
        )
    }

    fn initialize(id: u32) -> ClientJsonRpcMessage {
        let request = InitializeRequest::new(InitializeRequestParams::default());
        ClientJsonRpcMessage::request(
            ClientRequest::InitializeRequest(request),
            NumberOrString::Number(id.into()),
        )
    }

    #[test]
    fn only_the_answer_to_an_abandoned_probe_is_dropped() {
        // Answered in time: nothing is dropped.
        let mut guard = ProbeGuard::default();
        guard.sent(&discover(0));
        assert!(!guard.is_late_answer(&answer(0)));
        guard.sent(&initialize(1));
        assert!(!guard.is_late_answer(&answer(1)));
        // Given up on for `initialize`: its late answer is dropped, once,
        // and the answer to `initialize` goes through.
        let mut guard = ProbeGuard::default();
        guard.sent(&discover(0));
        guard.sent(&initialize(1));
        assert!(guard.is_late_answer(&answer(0)));
        assert!(!guard.is_late_answer(&answer(1)));
        assert!(!guard.is_late_answer(&answer(0)));
    }
}
