//! `nexo serve morse --http` spoken as raw HTTP: the health document, seed
//! 000's exact session (SSE replies, `Mcp-Session-Id`, 202 for the
//! notification), JSON replies for clients that accept only JSON, the
//! stateless 2026-07-28 form, JSON-RPC errors, and the `--log` file.

use serde_json::{Value, json};

use crate::stdio_wire::meta_2026;
use crate::support::{Http, HttpServer, Reply, SEED_ACCEPT, TempDir, sse_data};
use crate::{HOLA_MUNDO, TOOL_NAMES};

const SEED_INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":"uuid-1","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const SEED_TOOLS_LIST: &str =
    r#"{"jsonrpc":"2.0","id":"uuid-2","method":"tools/list","params":{}}"#;
const SEED_ARGUMENTS: &str = r#"{"texto":"Hola mundo otra vez"}"#;

fn seed_call() -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":"uuid-3","method":"tools/call","params":{{"name":"morse","arguments":{SEED_ARGUMENTS}}}}}"#
    )
}

/// A 2025-era session opened with seed 000's `initialize`.
struct Session<'a> {
    http: &'a Http,
    id: String,
}

impl<'a> Session<'a> {
    /// Sends seed 000's `initialize` with `accept`, checks the answer and
    /// returns the session with the reply.
    async fn open(http: &'a Http, accept: &str) -> (Self, Reply) {
        let reply = http.post(SEED_INITIALIZE, &[("Accept", accept)]).await;
        assert_eq!(reply.status, 200, "{reply:#?}");
        let id = reply
            .header("mcp-session-id")
            .unwrap_or_else(|| panic!("no Mcp-Session-Id: {reply:#?}"))
            .to_owned();
        assert!(
            !id.is_empty() && id.bytes().all(|b| (0x21..=0x7e).contains(&b)),
            "a session id is visible ASCII: {id:?}"
        );
        let message = reply.message();
        assert_eq!(message["id"], "uuid-1", "{reply:#?}");
        let result = &message["result"];
        assert_eq!(result["protocolVersion"], "2025-06-18", "{message}");
        assert_eq!(result["serverInfo"]["name"], "nexo-morse", "{message}");
        assert!(result["capabilities"]["tools"].is_object(), "{message}");
        let session = Self { http, id };
        let notified = session.post(INITIALIZED, SEED_ACCEPT).await;
        assert_eq!(notified.status, 202, "{notified:#?}");
        assert!(notified.body.is_empty(), "{notified:#?}");
        (session, reply)
    }

    async fn post(&self, body: &str, accept: &str) -> Reply {
        self.http
            .post(body, &[("Accept", accept), ("Mcp-Session-Id", &self.id)])
            .await
    }
}

#[tokio::test]
async fn health_document_is_seed_000s() {
    let server = HttpServer::start(&[]);
    let reply = Http::new(&server).get("/", &[]).await;
    assert_eq!(reply.status, 200, "{reply:#?}");
    assert!(
        reply
            .header("content-type")
            .is_some_and(|kind| kind.starts_with("application/json")),
        "{reply:#?}"
    );
    // The raw body, so that the key order of the seed is checked too.
    assert_eq!(
        reply.body,
        r#"{"ok":true,"kind":"mcp-streamable-http","mount":"/mcp","tools":["demorse(codigo)","echo(texto)","morse(texto)"]}"#
    );
}

#[tokio::test]
async fn seed_000_session_over_http_and_its_log() {
    let logs = TempDir::new("log");
    let log = logs.path().join("calls.jsonl");
    let server = HttpServer::start(&["--log", log.to_str().unwrap()]);
    let http = Http::new(&server);
    let (session, initialized) = Session::open(&http, SEED_ACCEPT).await;
    assert!(initialized.is_sse(), "{initialized:#?}");

    let listed = session.post(SEED_TOOLS_LIST, SEED_ACCEPT).await;
    assert_eq!(listed.status, 200, "{listed:#?}");
    assert!(listed.is_sse(), "{listed:#?}");
    let message = listed.message();
    assert_eq!(message["id"], "uuid-2");
    let names: Vec<&Value> = message["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| &tool["name"])
        .collect();
    assert_eq!(names, TOOL_NAMES, "{message}");

    let called = session.post(&seed_call(), SEED_ACCEPT).await;
    assert_eq!(called.status, 200, "{called:#?}");
    assert!(called.is_sse(), "{called:#?}");
    let message = called.message();
    assert_eq!(message["id"], "uuid-3");
    assert_eq!(
        message["result"],
        json!({
            "content": [{ "type": "text", "text": HOLA_MUNDO }],
            "structuredContent": { "result": HOLA_MUNDO },
            "isError": false,
        })
    );
    let response_bytes = sse_data(&called.body)[0].len();

    let failed = session
        .post(
            r##"{"jsonrpc":"2.0","id":"uuid-4","method":"tools/call","params":{"name":"morse","arguments":{"texto":"#"}}}"##,
            SEED_ACCEPT,
        )
        .await;
    assert_eq!(failed.message()["result"]["isError"], true, "{failed:#?}");

    // Each line is written before its response leaves, so it is there now.
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "one line per tool call: {text}");
    let line = lines[0].as_object().unwrap();
    let keys: Vec<&str> = line.keys().map(String::as_str).collect();
    // The fields in the order the log format gives them.
    let expected = vec![
        "time",
        "server",
        "tool",
        "arg_bytes",
        "dur_ms",
        "out_bytes",
        "is_error",
    ];
    assert_eq!(keys, expected, "{text}");
    assert_eq!(line["server"], "morse");
    assert_eq!(line["tool"], "morse");
    assert_eq!(line["arg_bytes"], SEED_ARGUMENTS.len(), "{text}");
    assert_eq!(
        line["out_bytes"], response_bytes,
        "the response's size: {text}"
    );
    assert_eq!(line["is_error"], false);
    assert!(
        line["dur_ms"].as_f64().is_some_and(|ms| ms >= 0.0),
        "{text}"
    );
    let time = line["time"].as_str().unwrap();
    assert!(
        time.len() >= 20 && time.as_bytes()[10] == b'T' && time.ends_with('Z'),
        "RFC 3339 in UTC: {time}"
    );
    assert_eq!(lines[1]["tool"], "morse");
    assert_eq!(lines[1]["is_error"], true, "{text}");
    assert_eq!(lines[1]["arg_bytes"], r##"{"texto":"#"}"##.len(), "{text}");
}

#[tokio::test]
async fn a_client_accepting_only_json_gets_json() {
    let server = HttpServer::start(&[]);
    let http = Http::new(&server);
    let (session, initialized) = Session::open(&http, "application/json").await;
    assert!(!initialized.is_sse(), "{initialized:#?}");
    for body in [seed_call().as_str(), SEED_TOOLS_LIST] {
        let reply = session.post(body, "application/json").await;
        assert_eq!(reply.status, 200, "{reply:#?}");
        assert!(
            reply
                .header("content-type")
                .is_some_and(|kind| kind.starts_with("application/json")),
            "{reply:#?}"
        );
        let message = reply.json();
        assert!(message["result"].is_object(), "{reply:#?}");
    }
    let reply = session.post(&seed_call(), "application/json").await;
    assert_eq!(
        reply.json()["result"]["structuredContent"]["result"],
        HOLA_MUNDO
    );
    // Issue 39: the end of a session is 204, which the Python SDK's client
    // takes without its "Session termination failed: 202" warning; the
    // session is gone after it.
    let id = [("Mcp-Session-Id", session.id.as_str())];
    let ended = http.send(reqwest::Method::DELETE, "/mcp", &id, None).await;
    assert_eq!(ended.status, 204, "{ended:#?}");
    assert!(ended.body.is_empty(), "{ended:#?}");
    let after = session.post(SEED_TOOLS_LIST, "application/json").await;
    assert_eq!(after.status, 404, "{after:#?}");
}

/// Wildcards and parameters in `Accept` are the client's business: rmcp
/// itself takes only the two exact media types, so nexo must translate.
#[tokio::test]
async fn wildcard_accept_headers_are_served() {
    let server = HttpServer::start(&[]);
    let http = Http::new(&server);
    for accept in [
        "*/*",
        "application/*, text/*",
        "text/event-stream;q=0.9, application/json;q=1.0",
    ] {
        let (session, _) = Session::open(&http, accept).await;
        let reply = session.post(&seed_call(), accept).await;
        assert_eq!(reply.status, 200, "Accept: {accept}: {reply:#?}");
        assert_eq!(
            reply.message()["result"]["structuredContent"]["result"],
            HOLA_MUNDO,
            "Accept: {accept}"
        );
    }
}

#[tokio::test]
async fn stateless_2026_requests() {
    let server = HttpServer::start(&[]);
    let http = Http::new(&server);
    let headers = |method: &'static str, name: Option<&'static str>| {
        let mut headers = vec![
            ("Accept", SEED_ACCEPT),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", method),
        ];
        headers.extend(name.map(|name| ("Mcp-Name", name)));
        headers
    };

    let call = json!({
        "jsonrpc": "2.0", "id": 21, "method": "tools/call",
        "params": { "name": "echo", "arguments": { "texto": "hola" }, "_meta": meta_2026() },
    });
    let reply = http
        .post(&call.to_string(), &headers("tools/call", Some("echo")))
        .await;
    assert_eq!(reply.status, 200, "{reply:#?}");
    assert_eq!(
        reply.header("mcp-session-id"),
        None,
        "stateless: {reply:#?}"
    );
    let message = reply.message();
    assert_eq!(message["id"], 21);
    assert_eq!(message["result"]["content"][0]["text"], "echo: hola");
    assert_eq!(
        message["result"]["structuredContent"]["result"],
        "echo: hola"
    );
    assert_eq!(message["result"]["isError"], false);

    let discover = json!({
        "jsonrpc": "2.0", "id": 22, "method": "server/discover",
        "params": { "_meta": meta_2026() },
    });
    let reply = http
        .post(&discover.to_string(), &headers("server/discover", None))
        .await;
    assert_eq!(reply.status, 200, "{reply:#?}");
    assert_eq!(
        reply.header("mcp-session-id"),
        None,
        "stateless: {reply:#?}"
    );
    let message = reply.message();
    assert_eq!(message["id"], 22);
    let result = &message["result"];
    assert!(
        result["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28")),
        "{result}"
    );
    assert!(result["capabilities"]["tools"].is_object(), "{result}");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "nexo-morse",
        "{result}"
    );
}

#[tokio::test]
async fn json_rpc_errors() {
    let server = HttpServer::start(&[]);
    let http = Http::new(&server);

    let malformed = http
        .post(
            r#"{"jsonrpc":"2.0","id":1,"method":"#,
            &[("Accept", SEED_ACCEPT)],
        )
        .await;
    assert_eq!(malformed.status, 400, "{malformed:#?}");
    let error = malformed.message();
    assert_eq!(error["error"]["code"], -32700, "{error}");
    // The id shows before the fault: the client is answered by it.
    assert_eq!(error["id"], 1, "{error}");

    let no_message = http.post("[1,2]", &[("Accept", SEED_ACCEPT)]).await;
    assert_eq!(no_message.status, 400, "{no_message:#?}");
    assert_eq!(no_message.message()["error"]["code"], -32600);

    let (session, _) = Session::open(&http, SEED_ACCEPT).await;
    let unknown = session
        .post(
            r#"{"jsonrpc":"2.0","id":"uuid-9","method":"nexo/no-such-method","params":{}}"#,
            SEED_ACCEPT,
        )
        .await;
    let error = unknown.message();
    assert_eq!(error["id"], "uuid-9", "{error}");
    assert_eq!(error["error"]["code"], -32601, "{error}");

    // Within a session the body is first read by rmcp; its refusal must
    // still come back as the same JSON-RPC errors.
    let malformed = session
        .post(r#"{"jsonrpc":"2.0","id":2,"method":"#, SEED_ACCEPT)
        .await;
    assert_eq!(malformed.status, 400, "{malformed:#?}");
    let error = malformed.message();
    assert_eq!(error["error"]["code"], -32700, "{error}");
    assert_eq!(error["id"], 2, "{error}");
    let no_message = session.post("[1,2]", SEED_ACCEPT).await;
    assert_eq!(no_message.status, 400, "{no_message:#?}");
    assert_eq!(no_message.message()["error"]["code"], -32600);
    let after = session.post(SEED_TOOLS_LIST, SEED_ACCEPT).await;
    assert_eq!(
        after.status, 200,
        "the session outlives bad messages: {after:#?}"
    );
}

#[tokio::test]
async fn a_deleted_session_is_gone() {
    let server = HttpServer::start(&[]);
    let http = Http::new(&server);
    let (session, _) = Session::open(&http, SEED_ACCEPT).await;
    let deleted = http
        .send(
            reqwest::Method::DELETE,
            "/mcp",
            &[("Mcp-Session-Id", &session.id)],
            None,
        )
        .await;
    assert!((200..300).contains(&deleted.status), "{deleted:#?}");
    let after = session.post(SEED_TOOLS_LIST, SEED_ACCEPT).await;
    assert_eq!(after.status, 404, "{after:#?}");
}
