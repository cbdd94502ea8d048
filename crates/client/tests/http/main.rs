//! Streamable HTTP against a real rmcp server on 127.0.0.1, through one
//! [`nexo_client::Session`]: a server that forgets its sessions mid-way (as
//! after a restart) is given a new one transparently, and the trace shows
//! the 404 and the new handshake. Tool calls a server runs as tasks
//! ([`tasks`]).

#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

use std::sync::{Arc, Mutex};

use nexo_client::{ConnectOptions, Era, Header, HttpTransport, Target, TargetUrl};
use nexo_trace::{TraceOptions, Tracer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

mod tasks;

/// A served `Echo` on 127.0.0.1: its URL, its sessions, and the token
/// that stops it.
async fn serve() -> (String, Arc<LocalSessionManager>, CancellationToken) {
    serve_handler(|| nexo_testkit::Echo).await
}

/// A server `make` builds, served on 127.0.0.1: its URL, its sessions,
/// and the token that stops it.
async fn serve_handler<S, F>(make: F) -> (String, Arc<LocalSessionManager>, CancellationToken)
where
    S: rmcp::ServerHandler + Send + 'static,
    F: Fn() -> S + Send + Sync + 'static,
{
    let sessions = Arc::new(LocalSessionManager::default());
    let stop = CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(true)
        .with_cancellation_token(stop.child_token())
        .disable_allowed_hosts()
        .disable_allowed_origins();
    let service = StreamableHttpService::new(move || Ok(make()), sessions.clone(), config);
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let stopped = stop.clone();
    tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(stopped.cancelled_owned())
            .await
    });
    (format!("http://{address}/mcp"), sessions, stop)
}

/// A trace written into memory.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Lines {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Lines {
    fn records(&self) -> Vec<Value> {
        let bytes = self.0.lock().unwrap().clone();
        String::from_utf8(bytes)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

/// Issue 16: a server that answers 404 to the session id it handed out
/// (it forgot the session) gets a new session, and the call that met the
/// 404 is sent again in it, once; the trace shows the 404, the new
/// `initialize` and the call answered in the new session, with the
/// `Authorization` sent as a header redacted.
#[tokio::test]
async fn issue_16_an_expired_http_session_is_renewed_transparently() {
    let (url, sessions, stop) = serve().await;
    let lines = Lines::default();
    let tracer = Tracer::to_writer(lines.clone(), TraceOptions::default());
    let target = Target::Url {
        url: TargetUrl::new(url),
        transport: HttpTransport::Http,
        headers: vec![Header::parse("Authorization: Bearer tok-77aa").unwrap()],
    };
    let options = ConnectOptions {
        era: Era::Initialize,
        trace: Some(tracer.clone()),
        server_name: Some("hello".to_owned()),
        ..ConnectOptions::default()
    };
    let session = nexo_client::connect(&target, &options).await.unwrap();
    let first = session
        .call_tool("echo", serde_json::Map::new())
        .await
        .unwrap();
    assert_eq!(first.content[0].as_text().unwrap().text, "hello");

    sessions.sessions.write().await.clear();
    let again = session
        .call_tool("echo", serde_json::Map::new())
        .await
        .unwrap();
    assert_eq!(again.content[0].as_text().unwrap().text, "hello");
    assert_eq!(sessions.sessions.read().await.len(), 1);
    session.close().await;
    stop.cancel();
    tracer.flush().unwrap();

    let records = lines.records();
    let text = format!("{records:#?}");
    assert!(!text.contains("tok-77aa"), "{text}");
    let calls: Vec<&Value> = records
        .iter()
        .filter(|record| record["direction"] == "out" && record["method"] == "tools/call")
        .collect();
    assert_eq!(calls.len(), 3, "{text}");
    let (old, expired, renewed) = (calls[0], calls[1], calls[2]);
    assert_eq!(old["http"]["status"], 200, "{text}");
    assert_eq!(expired["http"]["status"], 404, "{text}");
    assert_eq!(expired["session"], old["session"], "{text}");
    assert_eq!(renewed["http"]["status"], 200, "{text}");
    assert_ne!(renewed["session"], old["session"], "{text}");
    assert_eq!(renewed["id"], expired["id"], "{text}");
    let initializes: Vec<&Value> = records
        .iter()
        .filter(|record| record["direction"] == "out" && record["method"] == "initialize")
        .collect();
    assert_eq!(initializes.len(), 2, "{text}");
    for record in &records {
        assert_eq!(record["transport"], "streamable-http", "{record}");
        if record["direction"] == "out" {
            assert_eq!(record["http"]["method"], "POST", "{record}");
            assert_eq!(
                record["http"]["headers"]["authorization"], "[redacted]",
                "{record}"
            );
        }
    }
    let answered = records.iter().any(|record| {
        record["direction"] == "in"
            && record["method"] == "tools/call"
            && record["session"] == renewed["session"]
    });
    assert!(answered, "{text}");
    // The statuses are the responses' own: the 404 was read off the
    // response (no outcome is turned into a status any more), and every
    // message received shows the response that carried it.
    for record in records.iter().filter(|record| record["direction"] == "in") {
        assert_eq!(record["http"]["status"], 200, "{record}");
        assert!(
            record["http"]["headers"]["content-type"]
                .as_str()
                .is_some_and(|kind| kind.starts_with("text/event-stream")),
            "{record}"
        );
    }
    let renewed_session = renewed["session"].as_str().unwrap();
    let handed_out = records.iter().any(|record| {
        record["direction"] == "in"
            && record["method"] == "initialize"
            && record["http"]["headers"]["mcp-session-id"] == renewed_session
    });
    assert!(handed_out, "{text}");
}
