//! The `--trace FILE` tap, shared by every transport: each message in and
//! out, as it crossed the wire, goes to one [`nexo_trace::Tracer`] with the
//! server's side of the story (direction `in` for what the client sent).
//!
//! - stdio ([`crate::stdio`]): each line read, once rmcp has read it (or
//!   failed to, before it is answered), and each line written, through the
//!   [`Outbox`](crate::outbox); the session is an id given to the
//!   connection (`stdio-` and 16 hex digits). The message rmcp read or is
//!   sending goes along with its bytes, so that the tracer need not parse
//!   them again.
//! - Streamable HTTP ([`crate::http`]): each POSTed body with the request's
//!   method and headers, and each message of the answer (a JSON body, each
//!   event of an SSE stream, the GET stream included) with the response's
//!   status and headers; the session is the `Mcp-Session-Id`.
//! - legacy SSE ([`crate::legacy_sse`]): each POSTed body with its request's
//!   method and headers, each message on the session's stream; the session
//!   is the legacy session id.
//!
//! What is refused before its body is read (403 for `Origin` or `Host`,
//! 406, 413) is not traced: there is no message to record. Credential
//! headers are redacted by the tracer. With no `--trace`, none of this
//! runs: no copy, no header list, no parse.

use std::sync::Arc;

use nexo_trace::{Direction, Envelope, HttpInfo, Observed, Side, Tracer};

/// The tracer of one served server.
#[derive(Clone, Debug)]
pub struct TraceTap {
    tracer: Tracer,
    server: Arc<str>,
}

impl TraceTap {
    /// Records into `tracer` under the server name `server`.
    pub fn new(tracer: Tracer, server: &str) -> Self {
        Self {
            tracer,
            server: server.into(),
        }
    }

    /// Records one message.
    pub fn record(
        &self,
        transport: &str,
        session: Option<&str>,
        direction: Direction,
        message: &[u8],
        http: Option<&HttpInfo>,
    ) {
        self.observe(transport, session, direction, message, http, None);
    }

    /// Records one message, with its envelope when rmcp read or built it.
    fn observe(
        &self,
        transport: &str,
        session: Option<&str>,
        direction: Direction,
        message: &[u8],
        http: Option<&HttpInfo>,
        envelope: Option<Envelope<'_>>,
    ) {
        self.tracer.record(Observed {
            server: &self.server,
            transport,
            session,
            side: Side::Server,
            direction,
            message,
            http,
            envelope,
        });
    }

    /// The tap of one message-based connection (stdio, a legacy SSE
    /// session): its messages out carry `outgoing` as their HTTP part.
    pub fn connection(
        &self,
        transport: &'static str,
        session: &str,
        outgoing: Option<HttpInfo>,
    ) -> ConnectionTrace {
        ConnectionTrace {
            tap: self.clone(),
            transport,
            session: session.into(),
            outgoing: outgoing.map(Arc::new),
        }
    }

    pub fn flush(&self) {
        if let Err(error) = self.tracer.flush() {
            tracing::warn!(%error, "cannot write the trace");
        }
    }
}

/// The trace of one message-based connection.
#[derive(Clone, Debug)]
pub struct ConnectionTrace {
    tap: TraceTap,
    transport: &'static str,
    session: Arc<str>,
    outgoing: Option<Arc<HttpInfo>>,
}

impl ConnectionTrace {
    /// A message the client sent, with its envelope when rmcp read it.
    pub fn received(&self, message: &[u8], envelope: Option<Envelope<'_>>) {
        self.tap.observe(
            self.transport,
            Some(&self.session),
            Direction::Received,
            message,
            None,
            envelope,
        );
    }

    /// A message the server sent, with its envelope when rmcp built it.
    pub fn sent(&self, message: &[u8], envelope: Option<Envelope<'_>>) {
        self.tap.observe(
            self.transport,
            Some(&self.session),
            Direction::Sent,
            message,
            self.outgoing.as_deref(),
            envelope,
        );
    }
}

/// An id for a connection that has none of its own (stdio).
pub fn connection_id(transport: &str) -> String {
    format!("{transport}-{:016x}", rand::random::<u64>())
}
