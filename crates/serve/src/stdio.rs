//! The stdio transport: newline-delimited JSON-RPC on stdin/stdout.
//!
//! rmcp has its own, but it drops unparsable lines silently and refuses an
//! `initialize` without `clientInfo`; this one answers -32700/-32600/-32602
//! as JSON-RPC asks, applies the leniency of [`crate::inbound`], bounds the
//! length of a line, and taps tool calls for the `--log` file and every
//! message for the `--trace` file ([`crate::outbox`]). Reads and
//! writes go through rmcp's non-blocking pipe handles
//! ([`rmcp::transport::io::stdio_pipes`]) when stdin and stdout are pipes.
//! Nothing but protocol messages is ever written to the writer.

use nexo_trace::Envelope;
use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::value::RawValue;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::mpsc;

use crate::calllog::CallLogger;
use crate::id_scan::IdScanner;
use crate::inbound::{self, INVALID_REQUEST, Rejection};
use crate::outbox::{Outbox, SendError};
use crate::trace::{TraceTap, connection_id};

/// How many encoded messages may wait for the writer before `send` waits.
const WRITE_QUEUE: usize = 1024;

/// A server-side rmcp transport over any reader/writer pair.
pub struct LineTransport<R> {
    reader: BufReader<R>,
    /// The line being read. It survives a cancelled `receive` (rmcp's
    /// serving loop drops it whenever another event wins its `select!`), so
    /// that bytes already consumed from the reader are never lost.
    line: Vec<u8>,
    /// The line being read is over `max_line` and is being skipped; its
    /// request id is looked for as it goes by.
    too_long: Option<IdScanner>,
    /// `line` holds a finished line, to be cleared before the next read.
    finished: bool,
    max_line: usize,
    outbox: Outbox,
}

impl<R: AsyncRead + Unpin + Send> LineTransport<R> {
    /// A transport reading `reader` and writing `writer`; the returned task
    /// ends, having flushed everything, once the transport is dropped.
    pub fn new<W: AsyncWrite + Unpin + Send + 'static>(
        reader: R,
        writer: W,
        max_line: usize,
        logger: Option<CallLogger>,
        trace: Option<TraceTap>,
    ) -> (Self, tokio::task::JoinHandle<std::io::Result<()>>) {
        let (outgoing, queue) = mpsc::channel(WRITE_QUEUE);
        let trace = trace.map(|tap| {
            let transport = nexo_trace::transport::STDIO;
            tap.connection(transport, &connection_id(transport), None)
        });
        let writer_task = tokio::spawn(write_lines(writer, queue));
        let transport = Self {
            reader: BufReader::with_capacity(64 * 1024, reader),
            line: Vec::with_capacity(4096),
            too_long: None,
            finished: false,
            max_line,
            outbox: Outbox::new(outgoing, logger, trace),
        };
        (transport, writer_task)
    }

    /// Reads the next line into `self.line`, without its line ending.
    /// `Ok(false)` at the end of input; `Err` when the line was too long (it
    /// has then been skipped, and only its id kept). Cancel-safe: the only
    /// await is `fill_buf`, and what was consumed before it stays in
    /// `self.line` (or in the scanner of an over-long line).
    async fn read_line(&mut self) -> std::io::Result<Result<bool, Rejection>> {
        if self.finished {
            self.line.clear();
            self.too_long = None;
            self.finished = false;
        }
        loop {
            let available = self.reader.fill_buf().await?;
            let (chunk, found_end) = match available.iter().position(|&b| b == b'\n') {
                Some(end) => (&available[..end], true),
                None => (available, false),
            };
            let at_end = available.is_empty();
            let consumed = chunk.len() + usize::from(found_end);
            match &mut self.too_long {
                Some(scanner) => scanner.feed(chunk),
                None if self.line.len() + chunk.len() <= self.max_line => {
                    self.line.extend_from_slice(chunk);
                }
                None => {
                    let mut scanner = IdScanner::new();
                    scanner.feed(&self.line);
                    scanner.feed(chunk);
                    self.too_long = Some(scanner);
                    self.line.clear();
                }
            }
            self.reader.consume(consumed);
            if found_end || at_end {
                self.finished = true;
                return Ok(match self.too_long.take() {
                    Some(scanner) => Err(line_too_long(self.max_line, scanner.finish())),
                    None => Ok(found_end || !self.line.is_empty()),
                });
            }
        }
    }

    fn reply(&self, rejection: &Rejection) {
        tracing::debug!(code = rejection.code, message = %rejection.message, "rejected a message");
        self.outbox.try_send_encoded(rejection.to_response());
    }

    /// Turns one line into a message for rmcp, or answers it with an error.
    /// The trace records the line either way, before any answer.
    fn decode(&self, line: &[u8]) -> Option<ClientJsonRpcMessage> {
        // rmcp would read an `initialize` without `clientInfo` as some other
        // request, so leniency must come before the typed parse, and it
        // would answer an id such as `9999.999999999999999` with the
        // integer an `f64` rounds it to, so such an id is refused before.
        let completed = if mentions_initialize(line) || inbound::may_hold_a_rounded_id(line) {
            match inbound::inspect(line) {
                Ok(envelope) => envelope.rewritten,
                Err(rejection) => {
                    self.trace_received(line, None);
                    self.reply(&rejection);
                    return None;
                }
            }
        } else {
            None
        };
        let readable = completed.as_deref().unwrap_or(line);
        let message = match serde_json::from_slice::<ClientJsonRpcMessage>(readable) {
            Ok(message) => message,
            Err(error) => {
                self.trace_received(line, None);
                match inbound::inspect(readable) {
                    Err(rejection) => self.reply(&rejection),
                    Ok(envelope) => self.reject_unreadable(&envelope, &error),
                }
                return None;
            }
        };
        self.trace_received(line, Envelope::of_client_message(&message));
        self.outbox.received(&message);
        Some(message)
    }

    /// Records a line read, as it came, with what rmcp read of it.
    fn trace_received(&self, line: &[u8], envelope: Option<Envelope<'_>>) {
        if let Some(trace) = self.outbox.trace() {
            trace.received(line, envelope);
        }
    }

    fn reject_unreadable(&self, envelope: &inbound::Inbound<'_>, error: &serde_json::Error) {
        if envelope.method.is_some() && envelope.id.is_none() {
            tracing::warn!(%error, "ignoring a notification that cannot be read");
        } else {
            self.reply(&inbound::unreadable(envelope, error));
        }
    }
}

fn mentions_initialize(line: &[u8]) -> bool {
    line.windows(12).any(|window| window == b"\"initialize\"")
}

/// The answer to a line over the limit, with the request's id when it was
/// found as the line went by.
fn line_too_long(max_line: usize, id: Option<Box<RawValue>>) -> Rejection {
    Rejection {
        code: INVALID_REQUEST,
        message: format!("message exceeds the limit of {max_line} bytes"),
        id,
    }
}

/// Writes queued messages, one per line, flushing whenever the queue runs dry.
async fn write_lines<W: AsyncWrite + Unpin>(
    writer: W,
    mut queue: mpsc::Receiver<Vec<u8>>,
) -> std::io::Result<()> {
    let mut writer = BufWriter::with_capacity(64 * 1024, writer);
    while let Some(message) = queue.recv().await {
        writer.write_all(&message).await?;
        writer.write_all(b"\n").await?;
        while let Ok(message) = queue.try_recv() {
            writer.write_all(&message).await?;
            writer.write_all(b"\n").await?;
        }
        writer.flush().await?;
    }
    writer.shutdown().await
}

impl<R: AsyncRead + Unpin + Send + 'static> Transport<RoleServer> for LineTransport<R> {
    type Error = SendError;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.outbox.send(item)
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            match self.read_line().await {
                Err(error) => {
                    tracing::warn!(%error, "cannot read the input stream");
                    return None;
                }
                Ok(Ok(false)) => return None,
                Ok(Err(rejection)) => self.reply(&rejection),
                Ok(Ok(true)) => {
                    let line = std::mem::take(&mut self.line);
                    let trimmed = line.trim_ascii();
                    let message = if trimmed.is_empty() {
                        None
                    } else {
                        self.decode(trimmed)
                    };
                    self.line = line;
                    if message.is_some() {
                        return message;
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use std::time::Duration;

    use tokio::io::AsyncWriteExt;

    use super::*;

    /// A `receive` dropped between a message and its newline (as rmcp's
    /// serving loop drops it when another event comes first) must not lose
    /// the message: the files server's attack corpus stalled on this when
    /// a client wrote each line and its newline separately.
    #[tokio::test]
    async fn a_receive_cancelled_mid_line_keeps_what_it_read() {
        let (mut client, server) = tokio::io::duplex(4096);
        let (mut transport, _writer) =
            LineTransport::new(server, tokio::io::sink(), 4096, None, None);
        client
            .write_all(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
            .await
            .unwrap();
        let cancelled = tokio::time::timeout(Duration::from_millis(50), transport.receive()).await;
        assert!(cancelled.is_err(), "no newline yet, so no message");
        client.write_all(b"\n").await.unwrap();
        let message = tokio::time::timeout(Duration::from_secs(30), transport.receive())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(serde_json::to_value(&message).unwrap()["id"], 1);
    }

    #[tokio::test]
    async fn an_over_long_line_is_skipped_and_the_next_one_read() {
        let (mut client, server) = tokio::io::duplex(4096);
        let (mut transport, _writer) =
            LineTransport::new(server, tokio::io::sink(), 64, None, None);
        client.write_all(&[b'x'; 100]).await.unwrap();
        client
            .write_all(b"\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n")
            .await
            .unwrap();
        let message = tokio::time::timeout(Duration::from_secs(30), transport.receive())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(serde_json::to_value(&message).unwrap()["id"], 2);
    }

    /// Issue 15, point 2: a `tools/call` over the limit used to be answered
    /// with `"id": null`, so the client waited for its own timeout. The id
    /// is found as the line goes by, wherever it stands, and the line is
    /// never held whole.
    #[tokio::test]
    async fn issue_15_an_over_long_line_is_answered_with_its_id() {
        let (mut client, server) = tokio::io::duplex(64 * 1024);
        let (replies, writer) = tokio::io::duplex(64 * 1024);
        let (mut transport, _writer) = LineTransport::new(server, writer, 4096, None, None);
        let big = "x".repeat(100_000);
        let lines = [
            format!(
                r#"{{"jsonrpc":"2.0","id":"first","method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{big}"}}}}}}"#
            ),
            // As the TypeScript SDK writes it: the id after the params.
            format!(
                r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"echo","arguments":{{"id":1,"text":"{big}"}}}},"id":42}}"#
            ),
            format!(r#"{{"jsonrpc":"2.0","method":"tools/call","params":"{big}"}}"#),
        ];
        let writing = tokio::spawn(async move {
            for line in lines {
                client.write_all(line.as_bytes()).await.unwrap();
                client.write_all(b"\n").await.unwrap();
            }
            client
                .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n")
                .await
                .unwrap();
            client
        });
        let message = tokio::time::timeout(Duration::from_secs(30), transport.receive())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(serde_json::to_value(&message).unwrap()["id"], 3);
        let _client = writing.await.unwrap();
        let mut replies = BufReader::new(replies).lines();
        let mut ids = Vec::new();
        for _ in 0..3 {
            let line = replies.next_line().await.unwrap().unwrap();
            let reply: serde_json::Value = serde_json::from_str(&line).unwrap();
            assert_eq!(reply["error"]["code"], INVALID_REQUEST, "{reply}");
            ids.push(reply["id"].clone());
        }
        assert_eq!(
            ids,
            [
                serde_json::json!("first"),
                42.into(),
                serde_json::Value::Null
            ]
        );
    }

    /// `--trace` on stdio: every line in is recorded as it came (garbage
    /// included), every line out as written (the -32700 answer included),
    /// all under one connection id, the answer paired with its request.
    #[tokio::test]
    async fn every_line_in_and_out_is_traced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.jsonl");
        let tracer = nexo_trace::Tracer::open(&path, nexo_trace::TraceOptions::default()).unwrap();
        let tap = TraceTap::new(tracer, "fixture");
        let (mut client, server) = tokio::io::duplex(4096);
        let (mut transport, _writer) =
            LineTransport::new(server, tokio::io::sink(), 4096, None, Some(tap.clone()));
        client
            .write_all(b"not json\n{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n")
            .await
            .unwrap();
        let ping = tokio::time::timeout(Duration::from_secs(30), transport.receive())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(serde_json::to_value(&ping).unwrap()["id"], 7);
        let pong: ServerJsonRpcMessage =
            serde_json::from_str(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#).unwrap();
        transport.send(pong).await.unwrap();
        tap.flush();
        let records: Vec<nexo_trace::TraceRecord> = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        let shape: Vec<(&str, &str)> = records
            .iter()
            .map(|record| (record.direction.as_str(), record.kind.as_str()))
            .collect();
        assert_eq!(
            shape,
            [
                ("in", "invalid"),
                ("out", "error"),
                ("in", "request"),
                ("out", "response")
            ]
        );
        let session = records[0].session.clone().unwrap();
        assert!(session.starts_with("stdio-"), "{session}");
        for record in &records {
            assert_eq!(record.session.as_deref(), Some(session.as_str()));
            assert_eq!(record.transport, "stdio");
            assert!(record.http.is_none());
        }
        assert_eq!(records[1].error_code, Some(i64::from(inbound::PARSE_ERROR)));
        assert_eq!(records[3].method.as_deref(), Some("ping"));
        assert!(records[3].latency_us.is_some());
        let summary = nexo_trace::Summary::of(&records);
        assert!(summary.unanswered.is_empty() && summary.orphans.is_empty());
    }
}
