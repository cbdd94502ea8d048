//! The legacy HTTP+SSE transport (2024-11-05) of `nexo serve morse --http`,
//! spoken as raw HTTP: the `endpoint` event, 202 for POSTed messages with
//! the answers on the stream, 404 once the stream is gone, unguessable ids,
//! the same Origin and body-limit checks as `/mcp`, and the tool-call log.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};

use crate::support::{Http, HttpServer, TempDir, jsonrpc_message};

const LEGACY_INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const CALL_MORSE: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"morse","arguments":{"texto":"sos"}}}"#;

/// An open `GET /sse` stream, read event by event.
struct LegacyStream {
    body: futures::stream::BoxStream<'static, reqwest::Result<Vec<u8>>>,
    buffer: String,
    /// The POST URL of the `endpoint` event, made absolute.
    endpoint: String,
    session_id: String,
}

impl LegacyStream {
    async fn open(server: &HttpServer) -> Self {
        let response = crate::support::http_client()
            .no_proxy()
            .build()
            .unwrap()
            .get(format!("{}/sse", server.base_url()))
            .header("Accept", "text/event-stream")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let kind = response.headers()["content-type"].to_str().unwrap();
        assert!(kind.starts_with("text/event-stream"), "{kind}");
        let mut stream = Self {
            body: response
                .bytes_stream()
                .map(|chunk| chunk.map(|bytes| bytes.to_vec()))
                .boxed(),
            buffer: String::new(),
            endpoint: String::new(),
            session_id: String::new(),
        };
        let (event, data) = stream.next_event().await;
        assert_eq!(event, "endpoint", "the first event names the POST URL");
        let session_id = data
            .strip_prefix("/messages?sessionId=")
            .unwrap_or_else(|| panic!("unexpected endpoint: {data}"))
            .to_owned();
        stream.endpoint = format!("{}{data}", server.base_url());
        stream.session_id = session_id;
        stream
    }

    /// The next event's name and data, skipping keep-alive comments.
    async fn next_event(&mut self) -> (String, String) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut event = String::from("message");
                let mut data = Vec::new();
                for line in block.lines() {
                    if let Some(name) = line.strip_prefix("event:") {
                        event = name.trim().to_owned();
                    } else if let Some(value) = line.strip_prefix("data:") {
                        data.push(value.strip_prefix(' ').unwrap_or(value));
                    }
                }
                if !data.is_empty() {
                    return (event, data.join("\n"));
                }
                continue;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let chunk = tokio::time::timeout(left, self.body.next())
                .await
                .expect("no event within 10 s")
                .expect("the stream ended")
                .unwrap();
            self.buffer
                .push_str(&String::from_utf8_lossy(&chunk).replace("\r\n", "\n"));
        }
    }

    /// The next `message` event, as a checked JSON-RPC message.
    async fn next_message(&mut self) -> Value {
        let (event, data) = self.next_event().await;
        assert_eq!(event, "message", "{data}");
        jsonrpc_message(&data)
    }

    async fn post(&self, body: &str) -> (u16, String) {
        post_to(&self.endpoint, body, &[]).await
    }
}

async fn post_to(url: &str, body: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut request = crate::support::http_client()
        .no_proxy()
        .build()
        .unwrap()
        .post(url)
        .header("Content-Type", "application/json")
        .body(body.to_owned());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

#[tokio::test]
async fn a_legacy_session_answers_on_its_stream() {
    let server = HttpServer::start(&[]);
    let mut stream = LegacyStream::open(&server).await;
    assert_eq!(stream.post(LEGACY_INITIALIZE).await.0, 202);
    let initialized = stream.next_message().await;
    assert_eq!(initialized["id"], 1, "{initialized}");
    assert_eq!(initialized["result"]["protocolVersion"], "2024-11-05");
    assert_eq!(initialized["result"]["serverInfo"]["name"], "nexo-morse");
    assert_eq!(stream.post(INITIALIZED).await.0, 202);
    assert_eq!(stream.post(CALL_MORSE).await.0, 202);
    let called = stream.next_message().await;
    assert_eq!(called["id"], 2, "{called}");
    assert_eq!(
        called["result"]["structuredContent"],
        json!({"result": "... --- ..."})
    );
    let (status, body) = stream.post("{not json").await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(jsonrpc_message(&body)["error"]["code"], -32700, "{body}");
}

#[tokio::test]
async fn session_ids_are_128_random_bits_and_unknown_ones_get_404() {
    let server = HttpServer::start(&[]);
    let first = LegacyStream::open(&server).await;
    let second = LegacyStream::open(&server).await;
    for id in [&first.session_id, &second.session_id] {
        assert_eq!(id.len(), 32, "{id}");
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
    }
    assert_ne!(first.session_id, second.session_id);
    let unknown = format!("{}/messages?sessionId=0123456789abcdef", server.base_url());
    assert_eq!(post_to(&unknown, LEGACY_INITIALIZE, &[]).await.0, 404);
    let missing = format!("{}/messages", server.base_url());
    assert_eq!(post_to(&missing, LEGACY_INITIALIZE, &[]).await.0, 400);
}

#[tokio::test]
async fn closing_the_stream_ends_the_session() {
    let server = HttpServer::start(&[]);
    let stream = LegacyStream::open(&server).await;
    let endpoint = stream.endpoint.clone();
    assert_eq!(post_to(&endpoint, LEGACY_INITIALIZE, &[]).await.0, 202);
    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, _) = post_to(&endpoint, CALL_MORSE, &[]).await;
        if status == 404 {
            break;
        }
        assert_eq!(status, 202);
        assert!(
            Instant::now() < deadline,
            "the session outlived its stream by 10 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn legacy_routes_have_the_checks_of_mcp() {
    let server = HttpServer::start(&["--max-body", "1024"]);
    let http = Http::new(&server);
    let foreign = http.get("/sse", &[("Origin", "http://evil.example")]).await;
    assert_eq!(foreign.status, 403, "{foreign:#?}");
    let stream = LegacyStream::open(&server).await;
    let (status, _) = post_to(
        &stream.endpoint,
        LEGACY_INITIALIZE,
        &[("Origin", "http://evil.example")],
    )
    .await;
    assert_eq!(status, 403);
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"echo","arguments":{{"texto":"{}"}}}}}}"#,
        "x".repeat(2048)
    );
    let (status, body) = stream.post(&huge).await;
    assert_eq!(status, 413, "{body}");
}

#[tokio::test]
async fn legacy_tool_calls_are_logged() {
    let dir = TempDir::new("legacy-log");
    let log = dir.path().join("calls.jsonl");
    let server = HttpServer::start(&["--log", log.to_str().unwrap()]);
    let mut stream = LegacyStream::open(&server).await;
    stream.post(LEGACY_INITIALIZE).await;
    stream.next_message().await;
    stream.post(INITIALIZED).await;
    stream.post(CALL_MORSE).await;
    stream.next_message().await;
    let text = std::fs::read_to_string(&log).unwrap();
    let records: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(records.len(), 1, "{text}");
    assert_eq!(records[0]["tool"], "morse");
    assert_eq!(records[0]["is_error"], false);
    assert_eq!(records[0]["arg_bytes"], r#"{"texto":"sos"}"#.len());
}
