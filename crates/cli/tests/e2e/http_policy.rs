//! That `nexo serve --http` hands its listening flags to the serving
//! runtime: `--allow-origin '*'` and `--max-body`, checked on the wire.
//! What the runtime does with Origin, Host, CORS and body limits is tested
//! on its service itself, in crates/serve/tests/http.

use crate::support::{Http, HttpServer, SEED_ACCEPT};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}"#;

#[tokio::test]
async fn allow_origin_star_allows_any_origin() {
    let server = HttpServer::start(&["--allow-origin", "*"]);
    let http = Http::new(&server);
    let origin = ("Origin", "http://evil.example");
    let reply = http
        .post(INITIALIZE, &[origin, ("Accept", SEED_ACCEPT)])
        .await;
    assert_eq!(reply.status, 200, "{reply:#?}");
    assert_eq!(
        reply.message()["result"]["serverInfo"]["name"],
        "nexo-morse"
    );
    assert!(reply.header("access-control-allow-origin").is_some());
    let health = http.get("/", &[origin]).await;
    assert_eq!(health.status, 200, "{health:#?}");
}

#[tokio::test]
async fn a_body_over_max_body_is_413() {
    let server = HttpServer::start(&["--max-body", "1024"]);
    let http = Http::new(&server);
    let call = |text: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"{text}","version":"0"}}}}}}"#
        )
    };
    let small = http.post(&call("x"), &[("Accept", SEED_ACCEPT)]).await;
    assert_eq!(small.status, 200, "under the limit: {small:#?}");

    let big = call(&"A".repeat(2000));
    let declared = http.post(&big, &[("Accept", SEED_ACCEPT)]).await;
    assert_eq!(declared.status, 413, "{declared:#?}");
    assert_eq!(declared.message()["error"]["code"], -32600, "{declared:#?}");

    // The same body without a Content-Length: counted as it arrives.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = big
        .as_bytes()
        .chunks(256)
        .map(|chunk| Ok(chunk.to_vec()))
        .collect();
    let streamed = http
        .send(
            reqwest::Method::POST,
            "/mcp",
            &[
                ("Content-Type", "application/json"),
                ("Accept", SEED_ACCEPT),
            ],
            Some(reqwest::Body::wrap_stream(futures::stream::iter(chunks))),
        )
        .await;
    assert_eq!(streamed.status, 413, "{streamed:#?}");
}
