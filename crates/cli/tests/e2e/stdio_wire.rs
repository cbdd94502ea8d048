//! `nexo serve morse` over stdio, spoken as raw JSON-RPC lines: seed 000's
//! exact sequence, the JSON-RPC errors for bad input (-32700, -32601,
//! -32602), stdout purity (every line one JSON-RPC 2.0 message), and an
//! exit with status 0 once stdin closes.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{ChildStdin, Stdio};
use std::sync::mpsc;

use serde_json::{Value, json};

use crate::support::{PATIENCE, Proc, jsonrpc_message, nexo};
use crate::{SOS_PRUEBA, TOOL_NAMES};

/// The `_meta` a 2026-07-28 request carries instead of a session.
pub fn meta_2026() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { "name": "nexo-e2e", "version": "0" },
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// `nexo serve` with its stdin and stdout in the test's hands.
pub struct StdioServer {
    pub proc: Proc,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl StdioServer {
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// `nexo serve morse EXTRA...`.
    pub fn start_with(extra: &[&str]) -> Self {
        let mut args = vec!["morse"];
        args.extend_from_slice(extra);
        Self::serve(&args)
    }

    /// `nexo serve ARGS...`.
    pub fn serve(args: &[&str]) -> Self {
        let mut command = nexo();
        command
            .arg("serve")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut proc = Proc::spawn(&mut command, "nexo serve");
        let stdin = proc.child().stdin.take();
        let stdout = BufReader::new(proc.child().stdout.take().unwrap());
        // Stderr is drained so that diagnostics neither block the server
        // nor clutter the test's output.
        let mut stderr = proc.child().stderr.take().unwrap();
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Self { proc, stdin, lines }
    }

    /// Writes `line` and a newline.
    pub fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is closed");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    pub fn send_json(&mut self, message: &Value) {
        self.send(&message.to_string());
    }

    /// The next stdout line, which must be one JSON-RPC 2.0 message.
    pub fn next_message(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(PATIENCE)
            .unwrap_or_else(|error| panic!("no message on stdout within {PATIENCE:?}: {error}"));
        jsonrpc_message(&line)
    }

    /// The next `count` messages, keyed by their raw `id`; every one must be
    /// a response, and no id may repeat.
    pub fn responses(&mut self, count: usize) -> BTreeMap<String, Value> {
        let mut responses = BTreeMap::new();
        for _ in 0..count {
            let message = self.next_message();
            assert!(message.get("method").is_none(), "not a response: {message}");
            let id = message["id"].to_string();
            let earlier = responses.insert(id, message.clone());
            assert!(earlier.is_none(), "two responses with one id: {message}");
        }
        responses
    }

    /// Closes stdin; the server should then finish and exit on its own.
    pub fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    /// Every line left on stdout until it closes.
    pub fn remaining_lines(&mut self) -> Vec<String> {
        let mut left = Vec::new();
        loop {
            match self.lines.recv_timeout(PATIENCE) {
                Ok(line) => left.push(line),
                Err(mpsc::RecvTimeoutError::Disconnected) => return left,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    panic!("stdout still open {PATIENCE:?} after stdin closed")
                }
            }
        }
    }

    /// Seed 000's `initialize` (no `clientInfo`), its answer, then
    /// `notifications/initialized`.
    pub fn initialize_like_seed_000(&mut self) -> Value {
        self.send(
            r#"{"jsonrpc":"2.0","id":"uuid-1","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}"#,
        );
        let response = self.next_message();
        assert_eq!(response["id"], "uuid-1", "{response}");
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        response
    }
}

/// The output schema every morse tool declares, in the seed's contract.
fn assert_result_schema(tool: &Value) {
    let schema = &tool["outputSchema"];
    assert_eq!(schema["type"], "object", "{tool}");
    assert_eq!(schema["properties"]["result"]["type"], "string", "{tool}");
    assert_eq!(schema["required"], json!(["result"]), "{tool}");
}

#[test]
fn seed_000_sequence_and_errors_over_raw_stdio() {
    let mut server = StdioServer::start();
    let initialized = server.initialize_like_seed_000();
    let result = &initialized["result"];
    assert_eq!(result["protocolVersion"], "2025-06-18", "{initialized}");
    assert_eq!(result["serverInfo"]["name"], "nexo-morse", "{initialized}");
    assert!(result["capabilities"]["tools"].is_object(), "{initialized}");

    server.send(r#"{"jsonrpc":"2.0","id":"uuid-2","method":"tools/list","params":{}}"#);
    server.send(
        r#"{"jsonrpc":"2.0","id":"uuid-3","method":"tools/call","params":{"name":"morse","arguments":{"texto":"SOS prueba"}}}"#,
    );
    server.send(r#"{"jsonrpc":"2.0","id":"uuid-4","method":"#);
    server.send(r#"{"jsonrpc":"2.0","id":"uuid-5","method":"nexo/no-such-method","params":{}}"#);
    server.send(r#"{"jsonrpc":"2.0","id":"uuid-6","method":"tools/call","params":5}"#);
    // Answers may come in any order; the notification gets none.
    let responses = server.responses(5);

    let list = &responses[r#""uuid-2""#]["result"]["tools"];
    let names: Vec<&Value> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| &tool["name"])
        .collect();
    assert_eq!(names, TOOL_NAMES, "{list}");
    for tool in list.as_array().unwrap() {
        let argument = if tool["name"] == "demorse" {
            "codigo"
        } else {
            "texto"
        };
        assert_eq!(tool["inputSchema"]["required"], json!([argument]), "{tool}");
        assert_eq!(
            tool["inputSchema"]["properties"][argument]["type"], "string",
            "{tool}"
        );
        assert_result_schema(tool);
    }

    let call = &responses[r#""uuid-3""#]["result"];
    assert_eq!(
        call,
        &json!({
            "content": [{ "type": "text", "text": SOS_PRUEBA }],
            "structuredContent": { "result": SOS_PRUEBA },
            "isError": false,
        })
    );

    // The malformed line shows its id before the fault: answered by it.
    let malformed = &responses[r#""uuid-4""#];
    assert_eq!(malformed["error"]["code"], -32700, "{malformed}");

    let unknown = &responses[r#""uuid-5""#];
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");

    let bad_params = &responses[r#""uuid-6""#];
    assert_eq!(bad_params["error"]["code"], -32602, "{bad_params}");

    server.close_stdin();
    let left = server.remaining_lines();
    assert!(left.is_empty(), "nothing more was asked: {left:?}");
    let status = server.proc.exit_status();
    assert!(status.success(), "exit after stdin closed: {status}");
}

#[test]
fn stateless_2026_requests_over_raw_stdio() {
    let mut server = StdioServer::start();
    server.send_json(&json!({
        "jsonrpc": "2.0", "id": 1, "method": "server/discover",
        "params": { "_meta": meta_2026() },
    }));
    server.send_json(&json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "echo", "arguments": { "texto": "hola" }, "_meta": meta_2026() },
    }));
    let responses = server.responses(2);
    let discovered = &responses["1"]["result"];
    assert!(
        discovered["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28")),
        "{discovered}"
    );
    assert_eq!(
        discovered["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "nexo-morse",
        "{discovered}"
    );
    let echoed = &responses["2"]["result"];
    assert_eq!(echoed["content"][0]["text"], "echo: hola", "{echoed}");
    assert_eq!(echoed["structuredContent"]["result"], "echo: hola");

    server.close_stdin();
    assert!(server.remaining_lines().is_empty());
    let status = server.proc.exit_status();
    assert!(
        status.success(),
        "a client that never initialized left: {status}"
    );
}

#[test]
fn a_line_over_max_body_is_refused_and_the_server_goes_on() {
    let mut server = StdioServer::start_with(&["--max-body", "1024"]);
    server.initialize_like_seed_000();
    let long = "A".repeat(2000);
    server.send_json(&json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": { "name": "echo", "arguments": { "texto": long } },
    }));
    let refused = server.next_message();
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    server.send(
        r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":{"texto":"x"}}}"#,
    );
    let answered = server.next_message();
    assert_eq!(answered["id"], 8, "{answered}");
    assert_eq!(answered["result"]["content"][0]["text"], "echo: x");
    server.close_stdin();
    assert!(server.proc.exit_status().success());
}
