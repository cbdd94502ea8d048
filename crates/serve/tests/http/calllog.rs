//! The tool-call log over Streamable HTTP: a call answered on an SSE stream
//! is logged as its response event goes by (the stream itself passing
//! through unchanged), and one collapsed into JSON for a client that takes
//! no SSE is logged too; both read rmcp's events with `sse-stream`.

use axum::body::Body;
use axum::http::Method;
use nexo_serve::CallLogger;
use serde_json::Value;

use crate::{INITIALIZE, application_with, request, send};

const BOTH: &str = "application/json, text/event-stream";

fn post_in(session: Option<&str>, accept: &str, body: &str) -> axum::http::Request<Body> {
    let mut headers = vec![("Content-Type", "application/json"), ("Accept", accept)];
    if let Some(session) = session {
        headers.push(("Mcp-Session-Id", session));
    }
    request(Method::POST, "/mcp", &headers, Body::from(body.to_owned()))
}

/// The JSON-RPC messages in an SSE body, by `sse-stream`'s reading.
async fn sse_messages(body: bytes::Bytes) -> Vec<Value> {
    use futures::StreamExt;
    let chunks = futures::stream::iter([Ok::<_, std::convert::Infallible>(body)]);
    sse_stream::SseStream::from_bytes_stream(chunks)
        .filter_map(|event| async move { serde_json::from_str(&event.ok()?.data?).ok() })
        .collect()
        .await
}

#[tokio::test]
async fn tool_calls_answered_on_sse_and_collapsed_to_json_are_logged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calls.jsonl");
    let log = nexo_trace::ToolCallLog::open(&path).unwrap();
    let app = application_with(Some(CallLogger::new(log, "fixture")));

    let init = send(&app, post_in(None, BOTH, INITIALIZE)).await;
    assert_eq!(init.status, 200, "{init:#?}");
    let session = init.header("mcp-session-id").expect("a session").to_owned();
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let accepted = send(&app, post_in(Some(&session), BOTH, initialized)).await;
    assert!(accepted.status.is_success(), "{accepted:#?}");

    let call = |id: u32, text: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{text}"}}}}}}"#
        )
    };
    let streamed = send(&app, post_in(Some(&session), BOTH, &call(2, "on sse"))).await;
    assert_eq!(streamed.status, 200, "{streamed:#?}");
    assert!(
        streamed
            .header("content-type")
            .is_some_and(|kind| kind.starts_with("text/event-stream")),
        "{streamed:#?}"
    );
    let messages = sse_messages(streamed.body.clone()).await;
    let answer = messages
        .iter()
        .find(|message| message["id"] == 2)
        .unwrap_or_else(|| panic!("no answer: {messages:?}"));
    assert_eq!(answer["result"]["content"][0]["text"], "on sse");

    let collapsed = send(
        &app,
        post_in(Some(&session), "application/json", &call(3, "as json")),
    )
    .await;
    assert_eq!(collapsed.status, 200, "{collapsed:#?}");
    assert_eq!(collapsed.json()["result"]["content"][0]["text"], "as json");

    let records: Vec<Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(records.len(), 2, "{records:?}");
    for record in &records {
        assert_eq!(record["server"], "fixture", "{record}");
        assert_eq!(record["tool"], "echo", "{record}");
        assert_eq!(record["is_error"], false, "{record}");
    }
}
