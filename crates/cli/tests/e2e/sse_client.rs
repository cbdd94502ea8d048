//! `nexo`'s client over the legacy HTTP+SSE transport against small axum
//! servers written here, for what our own server never does: seed 001's
//! dialect (a `connect` event with a `connectionId`, messages POSTed to
//! `/sse/message` wrapped as `{"connectionId", "message"}`, `[DONE]` lines,
//! foreign events), a server that needs a header on every request, a
//! stream that drops in the middle of a call, and a proxy that buffers the
//! stream. (`client` runs the same
//! commands against `nexo serve morse`.)

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::Stream;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::support::{Run, run};

/// The header the fake servers may require on every request.
const KEY_HEADER: &str = "x-api-key";
const KEY: &str = "s3cret";

/// How a fake server behaves.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dialect {
    /// The 2024-11-05 transport as written: an `endpoint` event.
    Standard,
    /// Seed 001's server: `connect` with a `connectionId`, wrapped POSTs.
    Seed001,
}

#[derive(Clone, Copy)]
struct Behaviour {
    dialect: Dialect,
    /// Requests without [`KEY_HEADER`] get 401.
    needs_key: bool,
    /// `tools/call` closes the stream instead of answering.
    drop_on_call: bool,
}

struct Fake {
    behaviour: Behaviour,
    /// The open stream's sender, if any.
    stream: Mutex<Option<mpsc::UnboundedSender<Event>>>,
}

type Shared = Arc<Fake>;

/// Serves `behaviour` on 127.0.0.1 and gives the stream's URL.
async fn start(behaviour: Behaviour) -> String {
    let fake = Arc::new(Fake {
        behaviour,
        stream: Mutex::default(),
    });
    let app = Router::new()
        .route("/sse", get(open_stream))
        .route("/sse/message", post(receive))
        .route("/messages", post(receive))
        .with_state(fake);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://127.0.0.1:{port}/sse")
}

fn keyed(fake: &Fake, headers: &HeaderMap) -> bool {
    !fake.behaviour.needs_key
        || headers
            .get(KEY_HEADER)
            .and_then(|value| value.to_str().ok())
            == Some(KEY)
}

async fn open_stream(
    State(fake): State<Shared>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, StatusCode> {
    if !keyed(&fake, &headers) {
        return Err(StatusCode::UNAUTHORIZED);
    }
    let (sender, events) = mpsc::unbounded_channel();
    let first = match fake.behaviour.dialect {
        Dialect::Standard => Event::default()
            .event("endpoint")
            .data("/messages?sessionId=fake"),
        Dialect::Seed001 => Event::default()
            .event("connect")
            .data(json!({ "connectionId": "conn-1" }).to_string()),
    };
    sender.send(first).unwrap();
    sender
        .send(Event::default().event("state/update").data("{}"))
        .unwrap();
    sender.send(Event::default().comment("hello")).unwrap();
    *fake.stream.lock().unwrap() = Some(sender);
    // The stream ends when its sender is dropped.
    let events = futures::stream::unfold(events, |mut events| async move {
        let event = events.recv().await?;
        Some((Ok(event), events))
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}

/// Both POST routes: checks the message, answers it on the stream.
async fn receive(State(fake): State<Shared>, headers: HeaderMap, body: String) -> Response {
    if !keyed(&fake, &headers) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let Ok(value) = serde_json::from_str::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    let message = match fake.behaviour.dialect {
        Dialect::Standard => value,
        Dialect::Seed001 if value["connectionId"] == "conn-1" => value["message"].clone(),
        Dialect::Seed001 => {
            return (StatusCode::BAD_REQUEST, "expected a wrapped message").into_response();
        }
    };
    if message["jsonrpc"] != "2.0" {
        return (StatusCode::BAD_REQUEST, "not JSON-RPC").into_response();
    }
    let Some(id) = message.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response();
    };
    let method = message["method"].as_str().unwrap_or_default();
    if method == "tools/call" && fake.behaviour.drop_on_call {
        fake.stream.lock().unwrap().take();
        return StatusCode::ACCEPTED.into_response();
    }
    let answer = match method {
        "initialize" => json!({
            "protocolVersion": "2024-11-05",
            "capabilities": { "tools": {} },
            "serverInfo": { "name": "seed-001", "version": "1.0" },
        }),
        "tools/list" => json!({ "tools": [{
            "name": "echo",
            "description": "Echoes its text",
            "inputSchema": {
                "type": "object",
                "properties": { "text": { "type": "string" } },
                "required": ["text"],
            },
        }]}),
        "tools/call" => {
            let text = message["params"]["arguments"]["text"]
                .as_str()
                .unwrap_or_default();
            json!({ "content": [{ "type": "text", "text": format!("echo: {text}") }] })
        }
        _ => {
            let error = json!({ "jsonrpc": "2.0", "id": id,
                "error": { "code": -32601, "message": "Method not found" } });
            fake.send(&error);
            return StatusCode::ACCEPTED.into_response();
        }
    };
    fake.send(&json!({ "jsonrpc": "2.0", "id": id, "result": answer }));
    StatusCode::ACCEPTED.into_response()
}

impl Fake {
    /// Sends `message` on the open stream, the way the dialect does.
    fn send(&self, message: &Value) {
        let stream = self.stream.lock().unwrap();
        let Some(stream) = stream.as_ref() else {
            return;
        };
        let _ = stream.send(Event::default().event("message").data(message.to_string()));
        if self.behaviour.dialect == Dialect::Seed001 {
            let _ = stream.send(Event::default().data("[DONE]"));
        }
    }
}

/// Serves seed 001's dialect on 127.0.0.1 (on the current runtime) and
/// gives the stream's URL; its one tool is `echo(text)`.
pub async fn start_seed_001() -> String {
    start(Behaviour {
        dialect: Dialect::Seed001,
        needs_key: false,
        drop_on_call: false,
    })
    .await
}

/// Runs `nexo ARGS...` off the runtime that serves the fake.
async fn nexo(args: Vec<String>) -> Run {
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run(&args)
    })
    .await
    .unwrap()
}

fn words(words: &[&str]) -> Vec<String> {
    words.iter().map(|word| (*word).to_owned()).collect()
}

#[tokio::test]
async fn a_seed_001_server_is_understood() {
    let url = start(Behaviour {
        dialect: Dialect::Seed001,
        needs_key: false,
        drop_on_call: false,
    })
    .await;
    // The default transport: the POST to /sse gets 405, so the client falls back.
    let tools = nexo(words(&["tools", "--url", &url, "--json"])).await;
    assert_eq!(
        tools.assert_success().stdout_json()["tools"][0]["name"],
        "echo"
    );
    let call = nexo(words(&["call", "--url", &url, "echo", "text=hola"])).await;
    assert_eq!(call.assert_success().stdout, "echo: hola\n", "{call:#?}");
    let discover = nexo(words(&["discover", "--url", &url, "--json"])).await;
    let info = discover.assert_success().stdout_json();
    assert_eq!(info["transport"], "sse", "{info:#}");
    assert_eq!(info["protocolVersion"], "2024-11-05", "{info:#}");
    assert_eq!(info["serverInfo"]["name"], "seed-001", "{info:#}");
    let human = nexo(words(&["discover", "--url", &url, "--transport", "sse"])).await;
    let human = &human.assert_success().stdout;
    assert!(human.contains("protocol      2024-11-05\n"), "{human}");
    assert!(human.contains("transport     sse\n"), "{human}");
}

#[tokio::test]
async fn headers_go_with_the_stream_and_every_post() {
    let url = start(Behaviour {
        dialect: Dialect::Standard,
        needs_key: true,
        drop_on_call: false,
    })
    .await;
    let header = format!("{KEY_HEADER}: {KEY}");
    let call = nexo(words(&[
        "call",
        "--url",
        &url,
        "--transport",
        "sse",
        "--header",
        &header,
        "echo",
        "text=x",
    ]))
    .await;
    assert_eq!(call.assert_success().stdout, "echo: x\n", "{call:#?}");
    let refused = nexo(words(&["tools", "--url", &url, "--transport", "sse"])).await;
    assert_eq!(
        (
            refused.code(),
            refused.error_line()["error"]["code"].as_str()
        ),
        (3, Some("unauthorized")),
        "{refused:#?}"
    );
}

#[tokio::test]
async fn a_stream_dropped_mid_call_fails_as_unreachable() {
    let url = start(Behaviour {
        dialect: Dialect::Standard,
        needs_key: false,
        drop_on_call: true,
    })
    .await;
    // A generous limit: the failure must come from the drop, not the clock.
    let failed = nexo(words(&[
        "call",
        "--url",
        &url,
        "--transport",
        "sse",
        "--timeout",
        "60",
        "echo",
        "text=x",
    ]))
    .await;
    let error = failed.error_line();
    assert_eq!(
        (failed.code(), error["error"]["code"].as_str()),
        (4, Some("unreachable")),
        "{failed:#?}"
    );
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("SSE stream dropped"), "{message}");
    assert!(
        error["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("run the command again")
    );
    assert!(failed.stdout.is_empty(), "{failed:#?}");
}

/// Issue 38: `nexo bench` and `nexo check` read a legacy stream through
/// the client's one reader, so they speak seed 001's dialect too: every
/// request wrapped, every answer unwrapped.
#[tokio::test]
async fn bench_and_check_speak_seed_001() {
    let url = start_seed_001().await;
    let bench = nexo(words(&[
        "bench",
        "--url",
        &url,
        "--transport",
        "sse",
        "echo",
        "text=hola",
        "-n",
        "20",
        "-c",
        "1",
        "--expect",
        "/content/0/text=echo: hola",
        "--json",
    ]))
    .await;
    let document = bench.assert_success().stdout_json();
    assert_eq!(document["transport"], "sse", "{document:#}");
    assert_eq!(document["summary"]["ok"], 20, "{document:#}");
    assert_eq!(document["summary"]["errors"], 0, "{document:#}");

    let data = crate::support::TempDir::new("check-seed-001");
    let mut command = crate::support::nexo();
    command.env("XDG_DATA_HOME", data.path()).args([
        "check",
        "--url",
        &url,
        "--json",
        "--timeout",
        "10",
    ]);
    let check = tokio::task::spawn_blocking(move || crate::support::run_command(command))
        .await
        .unwrap();
    let report = check.stdout_json();
    assert_eq!(report["transport"], "sse", "{report:#}");
    assert_eq!(report["server"]["name"], "seed-001", "{report:#}");
    let ran: Vec<&str> = report["probes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|probe| probe["outcome"] == "ran")
        .map(|probe| probe["name"].as_str().unwrap())
        .collect();
    assert!(ran.contains(&"legacy-sse-transport"), "{report:#}");
    // The fake refuses a connection id it did not give (400), which the
    // probe of an unknown session sends wrapped as seed 001 wraps.
    let ids: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|finding| finding["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"legacy-sse-only"), "{ids:?}");
    assert!(!ids.contains(&"legacy-unknown-session-accepted"), "{ids:?}");
}

/// Issue 39, point 2: a legacy server behind a proxy that buffers
/// responses (nginx's default) whose stream opens and then carries
/// nothing. The proxy here passes the response head at once and holds the
/// body until it has 16 KiB, as a buffering proxy does; the error says
/// what is happening and how to turn the buffering off.
#[tokio::test]
async fn a_buffering_proxy_is_named() {
    let upstream = start(Behaviour {
        dialect: Dialect::Standard,
        needs_key: false,
        drop_on_call: false,
    })
    .await;
    let upstream_addr = upstream
        .trim_start_matches("http://")
        .trim_end_matches("/sse")
        .to_owned();
    let proxy = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/sse", proxy.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((client, _)) = proxy.accept().await {
            let upstream_addr = upstream_addr.clone();
            tokio::spawn(async move {
                let Ok(server) = tokio::net::TcpStream::connect(&upstream_addr).await else {
                    return;
                };
                buffer_responses(client, server).await;
            });
        }
    });
    let failed = nexo(words(&[
        "tools",
        "--url",
        &url,
        "--transport",
        "sse",
        "--timeout",
        "2",
    ]))
    .await;
    let error = failed.error_line();
    assert_eq!(
        (failed.code(), error["error"]["code"].as_str()),
        (4, Some("unreachable")),
        "{failed:#?}"
    );
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("carried nothing"), "{message}");
    let hint = error["error"]["hint"].as_str().unwrap();
    assert!(hint.contains("proxy_buffering off"), "{hint}");
}

/// Copies `client`'s bytes to `server` as they come, and `server`'s back:
/// the response head at once, then the body in 16 KiB blocks only.
async fn buffer_responses(client: tokio::net::TcpStream, server: tokio::net::TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    tokio::spawn(async move { tokio::io::copy(&mut client_read, &mut server_write).await });
    let mut held = Vec::new();
    let mut head_sent = false;
    let mut buffer = [0_u8; 4096];
    while let Ok(read) = server_read.read(&mut buffer).await {
        if read == 0 {
            break;
        }
        held.extend_from_slice(&buffer[..read]);
        if !head_sent && let Some(end) = held.windows(4).position(|w| w == b"\r\n\r\n") {
            let body = held.split_off(end + 4);
            if client_write.write_all(&held).await.is_err() {
                return;
            }
            held = body;
            head_sent = true;
        }
        if head_sent && held.len() >= 16 * 1024 {
            if client_write.write_all(&held).await.is_err() {
                return;
            }
            held.clear();
        }
    }
    let _ = client_write.write_all(&held).await;
}
