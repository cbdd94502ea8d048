//! Who may talk to `nexo serve --http`, checked on the wire: `Origin` and
//! `Host` (403 for strangers, the DNS-rebinding defence), CORS answers for
//! allowed browsers, `--allow-origin '*'`, and the `--max-body` limit (413).

use crate::support::{Http, HttpServer, Reply, SEED_ACCEPT, raw_http};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}"#;

fn assert_forbidden(reply: &Reply) {
    assert_eq!(reply.status, 403, "{reply:#?}");
    assert_eq!(
        reply.header("access-control-allow-origin"),
        None,
        "{reply:#?}"
    );
}

/// A header's comma-separated values, lower-cased.
fn listed(reply: &Reply, name: &str) -> Vec<String> {
    reply
        .header(name)
        .unwrap_or_else(|| panic!("no {name}: {reply:#?}"))
        .split(',')
        .map(|value| value.trim().to_ascii_lowercase())
        .collect()
}

#[tokio::test]
async fn a_foreign_origin_is_refused() {
    let server = HttpServer::start(&[]);
    let http = Http::new(&server);
    let origin = ("Origin", "http://evil.example");
    assert_forbidden(
        &http
            .post(INITIALIZE, &[origin, ("Accept", SEED_ACCEPT)])
            .await,
    );
    assert_forbidden(&http.get("/", &[origin]).await);
}

#[tokio::test]
async fn a_loopback_origin_is_served_with_cors_headers() {
    let server = HttpServer::start(&[]);
    let http = Http::new(&server);
    let origin = "http://localhost:3000";
    let reply = http
        .post(INITIALIZE, &[("Origin", origin), ("Accept", SEED_ACCEPT)])
        .await;
    assert_eq!(reply.status, 200, "{reply:#?}");
    assert_eq!(
        reply.message()["result"]["serverInfo"]["name"],
        "nexo-morse"
    );
    assert_eq!(reply.header("access-control-allow-origin"), Some(origin));
    let exposed = listed(&reply, "access-control-expose-headers");
    assert!(
        exposed.contains(&"mcp-session-id".to_owned()),
        "a browser must be able to read the session id: {exposed:?}"
    );
    assert!(listed(&reply, "vary").contains(&"origin".to_owned()));

    // Without Origin (not a browser), no CORS grant, but caches still learn
    // that the answer depends on the origin.
    let plain = http.post(INITIALIZE, &[("Accept", SEED_ACCEPT)]).await;
    assert_eq!(plain.status, 200, "{plain:#?}");
    assert_eq!(plain.header("access-control-allow-origin"), None);
    assert!(listed(&plain, "vary").contains(&"origin".to_owned()));
}

#[tokio::test]
async fn a_preflight_from_an_allowed_origin_gets_cors_headers() {
    let server = HttpServer::start(&[]);
    let http = Http::new(&server);
    let origin = "http://localhost:3000";
    let reply = http
        .send(
            reqwest::Method::OPTIONS,
            "/mcp",
            &[
                ("Origin", origin),
                ("Access-Control-Request-Method", "POST"),
                (
                    "Access-Control-Request-Headers",
                    "content-type, mcp-session-id, mcp-protocol-version",
                ),
            ],
            None,
        )
        .await;
    assert!((200..300).contains(&reply.status), "{reply:#?}");
    assert_eq!(reply.header("access-control-allow-origin"), Some(origin));
    let methods = listed(&reply, "access-control-allow-methods");
    for method in ["post", "get", "delete"] {
        assert!(methods.contains(&method.to_owned()), "{methods:?}");
    }
    let headers = listed(&reply, "access-control-allow-headers");
    for header in ["content-type", "mcp-session-id", "mcp-protocol-version"] {
        assert!(headers.contains(&header.to_owned()), "{headers:?}");
    }
}

#[tokio::test]
async fn a_preflight_from_a_foreign_origin_is_refused() {
    let server = HttpServer::start(&[]);
    let reply = Http::new(&server)
        .send(
            reqwest::Method::OPTIONS,
            "/mcp",
            &[
                ("Origin", "http://evil.example"),
                ("Access-Control-Request-Method", "POST"),
            ],
            None,
        )
        .await;
    assert_forbidden(&reply);
}

#[test]
fn a_foreign_host_is_refused() {
    let server = HttpServer::start(&[]);
    let request = |host: &str| {
        format!("GET / HTTP/1.1\r\nHost: {host}\r\nAccept: */*\r\nConnection: close\r\n\r\n")
    };
    let (status, reply) = raw_http(server.port, &request("evil.example"));
    assert_eq!(status, 403, "{reply}");
    let (status, reply) = raw_http(
        server.port,
        &request(&format!("evil.example:{}", server.port)),
    );
    assert_eq!(status, 403, "{reply}");
    for host in [
        format!("localhost:{}", server.port),
        format!("127.0.0.1:{}", server.port),
    ] {
        let (status, reply) = raw_http(server.port, &request(&host));
        assert_eq!(status, 200, "Host: {host}: {reply}");
    }
}

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
async fn an_allowed_origin_list_replaces_the_loopback_default() {
    let server = HttpServer::start(&["--allow-origin", "https://app.example.com"]);
    let http = Http::new(&server);
    let listed_origin = http
        .get("/", &[("Origin", "https://app.example.com")])
        .await;
    assert_eq!(listed_origin.status, 200, "{listed_origin:#?}");
    assert_eq!(
        listed_origin.header("access-control-allow-origin"),
        Some("https://app.example.com")
    );
    assert_forbidden(&http.get("/", &[("Origin", "http://evil.example")]).await);
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
