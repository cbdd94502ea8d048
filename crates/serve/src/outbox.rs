//! What the message-based transports share: stdio ([`crate::stdio`]) and
//! each legacy SSE session ([`crate::legacy_sse`]) hand rmcp's messages to
//! an [`Outbox`], which encodes each one, shows it to the tool-call log tap
//! ([`CallTap`]) and to the trace ([`ConnectionTrace`]), and queues the
//! bytes for the transport's writer (stdout, or the session's event
//! stream). Incoming messages are shown to the call log through
//! [`Outbox::received`], so that it is fed in one place for both
//! transports; the trace records them where they are read
//! ([`Outbox::trace`]).
//!
//! Streamable HTTP is not message-based here: rmcp's service owns its
//! messages, and [`crate::http`] taps the HTTP responses instead.

use nexo_trace::Envelope;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use tokio::sync::mpsc;

use crate::calllog::{CallLogger, CallTap};
use crate::trace::ConnectionTrace;

/// The sending side of one message-based connection.
#[derive(Debug)]
pub struct Outbox {
    queue: mpsc::Sender<Vec<u8>>,
    calls: Option<CallTap>,
    trace: Option<ConnectionTrace>,
}

/// Errors sending on a message-based transport.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    #[error("cannot encode an outgoing message")]
    Encode(#[from] serde_json::Error),
    #[error("the connection's writer is closed")]
    Closed,
}

impl Outbox {
    /// An outbox queueing on `queue`, feeding `logger` and `trace` when
    /// there are.
    pub fn new(
        queue: mpsc::Sender<Vec<u8>>,
        logger: Option<CallLogger>,
        trace: Option<ConnectionTrace>,
    ) -> Self {
        Self {
            queue,
            calls: logger.map(CallTap::new),
            trace,
        }
    }

    /// The connection's trace, to record what arrives.
    pub fn trace(&self) -> Option<&ConnectionTrace> {
        self.trace.as_ref()
    }

    /// Notes a message the client sent (a `tools/call` starts a log record).
    pub fn received(&self, message: &ClientJsonRpcMessage) {
        if let Some(tap) = &self.calls {
            tap.request(message);
        }
    }

    /// Encodes `item`, logs the tool call it answers, and queues it; the
    /// future waits while the queue is full.
    pub fn send(
        &self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), SendError>> + Send + use<> {
        let encoded = serde_json::to_vec(&item);
        if let Ok(bytes) = &encoded {
            if let Some(tap) = &self.calls {
                tap.response(&item, bytes);
            }
            if let Some(trace) = &self.trace {
                trace.sent(bytes, Envelope::of_server_message(&item));
            }
        }
        let queue = self.queue.clone();
        async move { queue.send(encoded?).await.map_err(|_| SendError::Closed) }
    }

    /// Queues bytes that are already a message (an error answer made before
    /// rmcp saw the request), unless the queue is full: a client that is not
    /// reading then loses the answer rather than stalling the reader.
    pub fn try_send_encoded(&self, message: Vec<u8>) {
        if let Some(trace) = &self.trace {
            trace.sent(&message, None);
        }
        let _ = self.queue.try_send(message);
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use super::*;

    /// The one tap of stdio and legacy SSE: a `tools/call` noted on the way
    /// in is logged when its answer is sent, and the answer is queued as
    /// sent; other messages go by unlogged.
    #[tokio::test]
    async fn a_tool_call_is_logged_when_its_answer_is_sent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("calls.jsonl");
        let log = nexo_trace::ToolCallLog::open(&path).unwrap();
        let (queue, mut written) = mpsc::channel(8);
        let outbox = Outbox::new(queue, Some(CallLogger::new(log, "fixture")), None);
        let call: ClientJsonRpcMessage = serde_json::from_str(
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#,
        )
        .unwrap();
        let ping: ClientJsonRpcMessage =
            serde_json::from_str(r#"{"jsonrpc":"2.0","id":6,"method":"ping"}"#).unwrap();
        outbox.received(&call);
        outbox.received(&ping);
        for answer in [
            r#"{"jsonrpc":"2.0","id":6,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"hi"}],"isError":true}}"#,
        ] {
            let message: ServerJsonRpcMessage = serde_json::from_str(answer).unwrap();
            outbox.send(message).await.unwrap();
        }
        let last = {
            written.recv().await.unwrap();
            written.recv().await.unwrap()
        };
        let sent: serde_json::Value = serde_json::from_slice(&last).unwrap();
        assert_eq!(sent["id"], 5);
        let text = std::fs::read_to_string(&path).unwrap();
        let records: Vec<serde_json::Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(records.len(), 1, "{text}");
        assert_eq!(records[0]["tool"], "echo");
        assert_eq!(records[0]["arg_bytes"], r#"{"text":"hi"}"#.len());
        assert_eq!(records[0]["out_bytes"], last.len());
        assert_eq!(records[0]["is_error"], true);
    }
}
