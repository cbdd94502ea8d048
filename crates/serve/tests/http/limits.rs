//! The `--max-body` limit: a body over it is refused with 413 and a JSON-RPC
//! error naming the request (issue 15, point 2), whether its length was
//! declared or counted as it arrived; and a client still sending when it is
//! refused can read the answer (issue 15, point 3), which a real Python
//! client on a socket proves.

use std::path::Path;
use std::time::Duration;

use axum::body::Body;
use axum::http::Method;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::{application, post, request, send};

/// A `tools/call` of about `size` bytes with `id` after its params.
fn big_call(size: usize, id: &Value) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{}"}}}},"id":{id}}}"#,
        "x".repeat(size)
    )
}

#[tokio::test]
async fn a_body_over_max_body_is_413() {
    let app = application(&[], 1024);
    let small = send(&app, post(&big_call(10, &json!(1)), &[])).await;
    assert_ne!(small.status, 413, "under the limit: {small:#?}");

    let big = big_call(2000, &json!(1));
    let declared = send(&app, post(&big, &[])).await;
    assert_eq!(declared.status, 413, "{declared:#?}");
    assert_eq!(declared.json()["error"]["code"], -32600, "{declared:#?}");
    assert!(
        declared.json()["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("--max-body")),
        "{declared:#?}"
    );

    // The same body without a Content-Length: counted as it arrives.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = big
        .as_bytes()
        .chunks(256)
        .map(|chunk| Ok(chunk.to_vec()))
        .collect();
    let streamed = request(
        Method::POST,
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json"),
        ],
        Body::from_stream(futures::stream::iter(chunks)),
    );
    let streamed = send(&app, streamed).await;
    assert_eq!(streamed.status, 413, "{streamed:#?}");
}

/// The 413 used to carry `"id": null`; the id is now found as the body goes
/// by, wherever it stands, for `/mcp` and the legacy `/messages` alike.
#[tokio::test]
async fn issue_15_a_413_names_the_request_it_refuses() {
    let app = application(&[], 1024);
    for id in [json!(42), json!("uuid-7")] {
        let reply = send(&app, post(&big_call(4000, &id), &[])).await;
        assert_eq!(reply.status, 413, "{reply:#?}");
        assert_eq!(reply.json()["id"], id, "{reply:#?}");
    }
    let no_id = send(
        &app,
        post(
            &format!(r#"{{"method":"x","params":"{}"}}"#, "y".repeat(4000)),
            &[],
        ),
    )
    .await;
    assert_eq!(no_id.status, 413, "{no_id:#?}");
    assert_eq!(no_id.json()["id"], Value::Null, "{no_id:#?}");
}

/// The application with the default limit, served on 127.0.0.1; its port.
async fn listen() -> (u16, tokio::task::JoinHandle<std::io::Result<()>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = application(&[], nexo_serve::DEFAULT_MAX_BODY);
    let service = axum::ServiceExt::<axum::extract::Request>::into_make_service(app);
    (
        port,
        tokio::spawn(axum::serve(listener, service).into_future()),
    )
}

/// A client that asks for `100 Continue` before sending a body over the
/// limit has sent nothing yet: it gets the 413 at once, not a `100
/// Continue` that would make it send what is then thrown away.
#[tokio::test]
async fn a_client_awaiting_100_continue_is_refused_without_sending() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let (port, server) = listen().await;
    let mut client = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json\r\nExpect: 100-continue\r\nContent-Length: {}\r\n\r\n",
        5 * 1024 * 1024
    );
    client.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), client.read_to_end(&mut answer));
    read.await.expect("an answer without the body").unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(!answer.contains("100 Continue"), "{answer}");
    server.abort();
}

/// Runs `fixtures/post_oversized.py` against a server with the default
/// 4 MiB limit listening on 127.0.0.1, and returns its JSON line.
async fn python_post(mode: &str) -> Value {
    let (port, server) = listen().await;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/post_oversized.py");
    let child = tokio::process::Command::new("python3")
        .arg(script)
        .arg(format!("http://127.0.0.1:{port}/mcp"))
        .arg(mode)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(120), child)
        .await
        .expect("the Python client finished")
        .expect("python3 runs");
    server.abort();
    assert!(
        output.status.success(),
        "{mode}: the client failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Issue 15, point 3: Python's urllib (Content-Length) and requests
/// (chunked) write a 5 MiB body whole before reading; the 413 used to reach
/// them as a broken pipe or a reset.
#[tokio::test]
async fn issue_15_python_clients_sending_5_mib_read_the_413() {
    for (mode, id) in [
        ("urllib", json!(42)),
        ("requests-chunked", json!("chunked-7")),
    ] {
        let reply = python_post(mode).await;
        assert_eq!(reply["status"], 413, "{mode}: {reply}");
        let body: Value = serde_json::from_str(reply["body"].as_str().unwrap()).unwrap();
        assert_eq!(body["error"]["code"], -32600, "{mode}: {body}");
        assert_eq!(body["id"], id, "{mode}: {body}");
    }
}

/// The legacy `/messages` endpoint reads its bodies the same way: 413 with
/// the request's id.
#[tokio::test]
async fn issue_15_a_legacy_message_over_the_limit_is_413_with_its_id() {
    use futures::StreamExt;

    let app = application(&[], 1024);
    let stream = app
        .clone()
        .oneshot(request(Method::GET, "/sse", &[], Body::empty()))
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let mut events = sse_stream::SseStream::new(stream.into_body());
    let endpoint = loop {
        let event = tokio::time::timeout(Duration::from_secs(30), events.next())
            .await
            .expect("an endpoint event in time")
            .expect("the stream is open")
            .expect("an SSE event");
        if event.event.as_deref() == Some("endpoint") {
            break event.data.expect("the endpoint's URL");
        }
    };
    let reply = send(
        &app,
        request(
            Method::POST,
            &endpoint,
            &[("Content-Type", "application/json")],
            Body::from(big_call(4000, &json!("legacy-1"))),
        ),
    )
    .await;
    assert_eq!(reply.status, 413, "{reply:#?}");
    assert_eq!(reply.json()["id"], "legacy-1", "{reply:#?}");
}
