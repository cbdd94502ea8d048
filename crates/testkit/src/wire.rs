//! Raw JSON-RPC lines in and out of a handler, so that tests assert the
//! exact shapes on the wire rather than what rmcp's client makes of them.

use std::time::Duration;

use rmcp::ServerHandler;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};

use crate::{Error, serve_in_process};

/// How long any one message may take to arrive.
const PATIENCE: Duration = Duration::from_secs(10);

/// The client end of a pipe to a handler, spoken line by line. Requests
/// take ids 1, 2, 3, ... in the order they are sent.
pub struct Wire {
    reader: BufReader<ReadHalf<DuplexStream>>,
    writer: WriteHalf<DuplexStream>,
    next_id: u64,
}

/// What came back for one request: its response and everything the server
/// sent before it.
#[derive(Debug)]
pub struct Exchange {
    pub response: Value,
    pub before: Vec<Value>,
}

impl Exchange {
    /// The `result` of the response, or an error showing what came instead.
    pub fn result(&self) -> Result<&Value, Error> {
        self.response
            .get("result")
            .ok_or_else(|| format!("not a result: {}", self.response).into())
    }

    /// The code of an error response.
    pub fn error_code(&self) -> Option<i64> {
        self.response["error"]["code"].as_i64()
    }

    /// The methods of the notifications sent before the response.
    pub fn notifications(&self) -> Vec<&str> {
        self.before
            .iter()
            .filter(|message| message.get("id").is_none())
            .filter_map(|message| message["method"].as_str())
            .collect()
    }
}

impl Wire {
    /// A pipe to `server`, before any message.
    pub fn open<S: ServerHandler>(server: S) -> Self {
        let (reader, writer) = tokio::io::split(serve_in_process(server));
        Self {
            reader: BufReader::new(reader),
            writer,
            next_id: 1,
        }
    }

    /// A pipe to `server` past `initialize` with `protocol_version` and
    /// `capabilities`, and `notifications/initialized`; with the initialize
    /// result.
    pub async fn initialize<S: ServerHandler>(
        server: S,
        protocol_version: &str,
        capabilities: Value,
    ) -> Result<(Self, Value), Error> {
        let mut wire = Self::open(server);
        let result = wire
            .result(
                "initialize",
                json!({
                    "protocolVersion": protocol_version,
                    "capabilities": capabilities,
                    "clientInfo": { "name": "wire-test", "version": "0" },
                }),
            )
            .await?;
        wire.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await?;
        Ok((wire, result))
    }

    /// Writes one message as a line.
    pub async fn send(&mut self, message: Value) -> Result<(), Error> {
        let mut line = serde_json::to_vec(&message)?;
        line.push(b'\n');
        self.writer.write_all(&line).await?;
        Ok(())
    }

    /// Reads the next message the server sends.
    pub async fn receive(&mut self) -> Result<Value, Error> {
        let mut line = String::new();
        let read = tokio::time::timeout(PATIENCE, self.reader.read_line(&mut line)).await??;
        if read == 0 {
            return Err("the server closed the pipe".into());
        }
        Ok(serde_json::from_str(&line)?)
    }

    /// Sends a request and reads until its response, answering any request
    /// the server makes meanwhile with `answer(method, params)`.
    pub async fn request_answering(
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

    /// Sends a request and reads until its response; a request the server
    /// makes meanwhile gets a result saying it was unexpected.
    pub async fn request(&mut self, method: &str, params: Value) -> Result<Exchange, Error> {
        self.request_answering(method, params, |method, _| json!({ "unexpected": method }))
            .await
    }

    /// Sends a request and returns the `result` of its response, which must
    /// be the very next message the server sends.
    pub async fn result(&mut self, method: &str, params: Value) -> Result<Value, Error> {
        let mut exchange = self.request(method, params).await?;
        if !exchange.before.is_empty() {
            return Err(format!(
                "expected the response to `{method}` first, got {:?}",
                exchange.before
            )
            .into());
        }
        exchange
            .response
            .get_mut("result")
            .map(Value::take)
            .ok_or_else(|| format!("not a result: {}", exchange.response).into())
    }

    /// Calls `tool` with `arguments` and returns the result, which must be
    /// the very next message the server sends.
    pub async fn call_tool(&mut self, tool: &str, arguments: Value) -> Result<Value, Error> {
        self.result(
            "tools/call",
            json!({ "name": tool, "arguments": arguments }),
        )
        .await
    }
}
