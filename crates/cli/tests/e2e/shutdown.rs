//! Stopping servers with SIGTERM (sent by `kill -TERM PID`): an HTTP server
//! with a session and an open SSE stream, and stdio servers whose stdin is
//! still open. Waits are bounded by [`PATIENCE`]; nothing is timed.

use crate::stdio_wire::StdioServer;
use crate::support::{Http, HttpServer, PATIENCE, SEED_ACCEPT};

#[tokio::test]
async fn sigterm_stops_an_http_server_with_an_open_stream() {
    let mut server = HttpServer::start(&[]);
    let http = Http::new(&server);
    let initialized = http
        .post(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}"#,
            &[("Accept", SEED_ACCEPT)],
        )
        .await;
    let session = initialized.header("mcp-session-id").unwrap().to_owned();
    let notified = http
        .post(
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            &[("Accept", SEED_ACCEPT), ("Mcp-Session-Id", &session)],
        )
        .await;
    assert_eq!(notified.status, 202, "{notified:#?}");

    // The session's standalone SSE stream stays open until the server ends it.
    let stream = crate::support::http_client()
        .no_proxy()
        .timeout(PATIENCE)
        .build()
        .unwrap()
        .get(server.mcp_url())
        .header("Accept", "text/event-stream")
        .header("Mcp-Session-Id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);

    server.proc().terminate();
    let status = server
        .proc()
        .wait_for_exit(PATIENCE)
        .unwrap_or_else(|| panic!("still running {PATIENCE:?} after SIGTERM"));
    assert!(status.success(), "{status}; stderr:\n{}", server.stderr());
    // The open stream was closed by the server, not cut by the grace timer.
    let stderr = server.stderr();
    assert!(!stderr.contains("did not finish"), "{stderr}");
    let _ = stream.text().await;
}

#[test]
fn sigterm_stops_a_stdio_server_with_stdin_open() {
    let mut server = StdioServer::start();
    server.initialize_like_seed_000();
    server.send(r#"{"jsonrpc":"2.0","id":"uuid-2","method":"tools/list","params":{}}"#);
    assert_eq!(server.next_message()["id"], "uuid-2");

    server.proc.terminate();
    let status = server
        .proc
        .wait_for_exit(PATIENCE)
        .unwrap_or_else(|| panic!("still running {PATIENCE:?} after SIGTERM"));
    assert!(status.success(), "{status}");
}

/// Before `initialize` the server already reads and answers (a malformed
/// line gets -32700), so it is serving; SIGTERM must end it as gracefully
/// as it does once a session runs, not by the signal's default action.
#[test]
fn sigterm_stops_a_stdio_server_that_was_never_initialized() {
    let mut server = StdioServer::start();
    server.send(r#"{"jsonrpc":"2.0","id":1,"method":"#);
    assert_eq!(server.next_message()["error"]["code"], -32700);

    server.proc.terminate();
    let status = server
        .proc
        .wait_for_exit(PATIENCE)
        .unwrap_or_else(|| panic!("still running {PATIENCE:?} after SIGTERM"));
    assert!(
        status.success(),
        "SIGTERM before `initialize` must exit 0 like it does after: {status}"
    );
}
