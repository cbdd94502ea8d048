//! `--trace` over both HTTP transports: a whole exchange (a seed-000
//! `initialize` without `clientInfo`, the `initialized` notification, tool
//! calls answered on SSE and collapsed to JSON, a malformed body) yields
//! complete, paired records: every request answered, ids and methods
//! right, the HTTP method on what came in and the status on what went out,
//! the session on everything after the handshake, and the `Authorization`
//! header redacted.

use std::path::Path;
use std::time::Duration;

use axum::body::Body;
use axum::http::Method;
use futures::StreamExt;
use nexo_serve::TraceTap;
use nexo_trace::{Summary, TraceOptions, TraceRecord, Tracer};
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::{INITIALIZE, application_traced, request, send};

const BOTH: &str = "application/json, text/event-stream";
const TOKEN: &str = "Bearer tok-9f3a";

fn call(id: u32, text: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "echo", "arguments": {"text": text}}})
    .to_string()
}

fn post_in(session: Option<&str>, accept: &str, body: &str) -> axum::http::Request<Body> {
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", accept),
        ("Authorization", TOKEN),
    ];
    if let Some(session) = session {
        headers.push(("Mcp-Session-Id", session));
    }
    request(Method::POST, "/mcp", &headers, Body::from(body.to_owned()))
}

fn traced(path: &Path) -> TraceTap {
    TraceTap::new(
        Tracer::open(path, TraceOptions::default()).unwrap(),
        "fixture",
    )
}

fn records(path: &Path) -> (Vec<TraceRecord>, String) {
    let text = std::fs::read_to_string(path).unwrap();
    let records = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    (records, text)
}

/// What every traced exchange must show: no request unanswered, every
/// answer to a request that was read matched with a latency, no credential
/// in the file. `unreadable` bodies were sent on purpose: each is an
/// invalid message whose error answer is the only orphan.
fn assert_complete(records: &[TraceRecord], text: &str, unreadable: usize) -> Summary {
    let summary = Summary::of(records);
    assert!(summary.unanswered.is_empty(), "{:?}", summary.unanswered);
    assert_eq!(summary.orphans.len(), unreadable, "{:?}", summary.orphans);
    assert_eq!(summary.invalid.len(), unreadable, "{:?}", summary.invalid);
    assert_eq!(
        summary.kinds.request + summary.kinds.invalid,
        summary.kinds.response + summary.kinds.error
    );
    for record in records {
        assert_eq!(record.server, "fixture");
        if matches!(record.kind, nexo_trace::Kind::Response) {
            assert!(record.latency_us.is_some(), "{record:?}");
            assert!(record.method.is_some(), "{record:?}");
        }
    }
    assert!(!text.contains("tok-9f3a"), "{text}");
    summary
}

#[tokio::test]
async fn a_streamable_http_exchange_is_traced_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    let tap = traced(&path);
    let app = application_traced(tap.clone());

    let init = send(&app, post_in(None, BOTH, INITIALIZE)).await;
    assert_eq!(init.status, 200, "{init:#?}");
    let session = init.header("mcp-session-id").expect("a session").to_owned();
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let accepted = send(&app, post_in(Some(&session), BOTH, initialized)).await;
    assert!(accepted.status.is_success(), "{accepted:#?}");
    let streamed = send(&app, post_in(Some(&session), BOTH, &call(2, "on sse"))).await;
    assert_eq!(streamed.status, 200, "{streamed:#?}");
    let collapsed = send(
        &app,
        post_in(Some(&session), "application/json", &call(3, "as json")),
    )
    .await;
    assert_eq!(collapsed.json()["result"]["content"][0]["text"], "as json");
    let malformed = send(
        &app,
        post_in(Some(&session), BOTH, r#"{"jsonrpc":"2.0","id":4,"#),
    )
    .await;
    assert_eq!(malformed.status, 400, "{malformed:#?}");
    tap.flush();

    let (records, text) = records(&path);
    let summary = assert_complete(&records, &text, 1);
    let shape: Vec<(&str, &str, String, String)> = records
        .iter()
        .map(|record| {
            (
                record.direction.as_str(),
                record.kind.as_str(),
                record.method.clone().unwrap_or_default(),
                record.id.as_ref().map(Value::to_string).unwrap_or_default(),
            )
        })
        .collect();
    let row = |d, k, m: &str, id: &str| (d, k, m.to_owned(), id.to_owned());
    assert_eq!(
        shape,
        [
            row("in", "request", "initialize", "1"),
            row("out", "response", "initialize", "1"),
            row("in", "notification", "notifications/initialized", ""),
            row("in", "request", "tools/call", "2"),
            row("out", "response", "tools/call", "2"),
            row("in", "request", "tools/call", "3"),
            row("out", "response", "tools/call", "3"),
            row("in", "invalid", "", ""),
            row("out", "error", "", "4"),
        ],
        "{text}"
    );
    // The malformed body is answered with its id: an error to a request the
    // trace could not read, hence no method; the summary lists it.
    assert_eq!(summary.errors.len(), 1);
    assert_eq!(summary.errors[0].code, Some(-32700));
    for record in &records {
        let http = record.http.as_ref().expect("HTTP details");
        assert_eq!(record.transport, "streamable-http");
        if record.direction == nexo_trace::Direction::Received {
            assert_eq!(http.method.as_deref(), Some("POST"), "{record:?}");
            assert_eq!(http.headers["authorization"], nexo_trace::REDACTED);
        } else {
            assert!(http.status.is_some(), "{record:?}");
        }
        // Only the `initialize` came outside the session it opened.
        if record.method.as_deref() != Some("initialize") || record.direction.as_str() == "out" {
            assert_eq!(
                record.session.as_deref(),
                Some(session.as_str()),
                "{record:?}"
            );
        }
    }
    assert_eq!(records[4].http.as_ref().and_then(|h| h.status), Some(200));
    assert_eq!(records[8].http.as_ref().and_then(|h| h.status), Some(400));
    assert_eq!(
        records[4]
            .message
            .as_ref()
            .map(|m| m.get().contains("on sse")),
        Some(true)
    );
}

/// The legacy transport: messages POSTed to `/messages` and answered on
/// the `GET /sse` stream, the session being the stream's id.
#[tokio::test]
async fn a_legacy_sse_exchange_is_traced_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    let tap = traced(&path);
    let app = application_traced(tap.clone());
    let stream = app
        .clone()
        .oneshot(request(Method::GET, "/sse", &[], Body::empty()))
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let mut events = sse_stream::SseStream::new(stream.into_body());
    let mut next_event = async || {
        tokio::time::timeout(Duration::from_secs(30), events.next())
            .await
            .expect("an event in time")
            .expect("the stream is open")
            .expect("an SSE event")
    };
    let endpoint = loop {
        let event = next_event().await;
        if event.event.as_deref() == Some("endpoint") {
            break event.data.expect("the endpoint's URL");
        }
    };
    let session = endpoint.split_once("sessionId=").unwrap().1.to_owned();
    let post = |body: String| {
        request(
            Method::POST,
            &endpoint,
            &[
                ("Content-Type", "application/json"),
                ("Authorization", TOKEN),
            ],
            Body::from(body),
        )
    };
    for (body, answered) in [
        (INITIALIZE.to_owned(), true),
        (
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
            false,
        ),
        (call(2, "legacy"), true),
    ] {
        let reply = send(&app, post(body)).await;
        assert_eq!(reply.status, 202, "{reply:#?}");
        if answered {
            let event = next_event().await;
            assert_eq!(event.event.as_deref(), Some("message"));
        }
    }
    tap.flush();

    let (records, text) = records(&path);
    let summary = assert_complete(&records, &text, 0);
    assert_eq!(
        (
            summary.kinds.request,
            summary.kinds.response,
            summary.kinds.notification
        ),
        (2, 2, 1),
        "{text}"
    );
    for record in &records {
        assert_eq!(record.transport, "sse");
        assert_eq!(record.session.as_deref(), Some(session.as_str()));
        let http = record.http.as_ref().expect("HTTP details");
        if record.direction == nexo_trace::Direction::Received {
            assert_eq!(http.method.as_deref(), Some("POST"));
            assert_eq!(http.headers["authorization"], nexo_trace::REDACTED);
        } else {
            assert_eq!(http.status, Some(200));
        }
    }
    let call = summary
        .methods
        .iter()
        .find(|stats| stats.method == "tools/call")
        .expect("the call");
    assert_eq!((call.requests, call.responses), (1, 1));
}
