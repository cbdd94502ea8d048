//! The everything handler driven in-process over a `tokio::io::duplex` pair,
//! with raw JSON-RPC lines so that the exact wire shapes the conformance
//! suite checks are what is asserted: a 2025-11-25 session ([`session`])
//! and 2026-07-28 per-request messages ([`stateless`]), plus rmcp's own
//! client for the listings ([`client`]).

mod client;
mod session;
mod stateless;

use std::time::Duration;

use nexo_everything::Everything;
use rmcp::ServiceExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// How long any one message may take to arrive.
const PATIENCE: Duration = Duration::from_secs(10);

/// The client end of a pipe to an [`Everything`], spoken line by line.
struct Wire {
    reader: BufReader<ReadHalf<DuplexStream>>,
    writer: WriteHalf<DuplexStream>,
    next_id: u64,
}

/// What came back for one request: its response and everything the server
/// sent before it.
#[derive(Debug)]
struct Exchange {
    response: Value,
    before: Vec<Value>,
}

impl Exchange {
    fn result(&self) -> Result<&Value, Error> {
        self.response
            .get("result")
            .ok_or_else(|| format!("not a result: {}", self.response).into())
    }

    fn error_code(&self) -> Option<i64> {
        self.response["error"]["code"].as_i64()
    }

    /// The methods of the notifications sent before the response.
    fn notifications(&self) -> Vec<&str> {
        self.before
            .iter()
            .filter(|message| message.get("id").is_none())
            .filter_map(|message| message["method"].as_str())
            .collect()
    }
}

impl Wire {
    /// A pipe to a fresh server, before any message.
    fn open(server: Everything) -> Self {
        let (server_io, client_io) = tokio::io::duplex(256 * 1024);
        tokio::spawn(async move {
            if let Ok(server) = server.serve(server_io).await {
                let _ = server.waiting().await;
            }
        });
        let (reader, writer) = tokio::io::split(client_io);
        Self {
            reader: BufReader::new(reader),
            writer,
            next_id: 1,
        }
    }

    /// A 2025-11-25 session: `initialize` with `capabilities`, then
    /// `notifications/initialized`.
    async fn session(capabilities: Value) -> Result<Self, Error> {
        let mut wire = Self::open(Everything::new());
        let init = wire
            .request(
                "initialize",
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": capabilities,
                    "clientInfo": { "name": "wire-test", "version": "0" },
                }),
            )
            .await?;
        assert_eq!(init.result()?["protocolVersion"], "2025-11-25");
        wire.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await?;
        Ok(wire)
    }

    async fn send(&mut self, message: Value) -> Result<(), Error> {
        let mut line = serde_json::to_vec(&message)?;
        line.push(b'\n');
        self.writer.write_all(&line).await?;
        Ok(())
    }

    async fn receive(&mut self) -> Result<Value, Error> {
        let mut line = String::new();
        let read = tokio::time::timeout(PATIENCE, self.reader.read_line(&mut line)).await??;
        if read == 0 {
            return Err("the server closed the pipe".into());
        }
        Ok(serde_json::from_str(&line)?)
    }

    /// Sends a request and reads until its response, answering any request
    /// the server makes meanwhile with `answer(method, params)`.
    async fn request_answering(
        &mut self,
        method: &str,
        params: Value,
        answer: impl Fn(&str, &Value) -> Value,
    ) -> Result<Exchange, Error> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await?;
        let mut before = Vec::new();
        loop {
            let message = self.receive().await?;
            match (message.get("id"), message.get("method")) {
                (Some(got), None) if *got == json!(id) => {
                    return Ok(Exchange {
                        response: message,
                        before,
                    });
                }
                (Some(server_id), Some(server_method)) => {
                    let result = answer(
                        server_method.as_str().unwrap_or_default(),
                        &message["params"],
                    );
                    let reply = json!({ "jsonrpc": "2.0", "id": server_id, "result": result });
                    self.send(reply).await?;
                    before.push(message);
                }
                _ => before.push(message),
            }
        }
    }

    async fn request(&mut self, method: &str, params: Value) -> Result<Exchange, Error> {
        self.request_answering(method, params, |method, _| json!({ "unexpected": method }))
            .await
    }
}

/// The only text content of a tool result.
fn only_text(result: &Value) -> Option<&str> {
    match result["content"].as_array()?.as_slice() {
        [only] if only["type"] == "text" => only["text"].as_str(),
        _ => None,
    }
}
