//! `nexo gateway` as an OAuth 2.1 resource server and with API keys: an
//! issuer the test runs on 127.0.0.1 (nexo-testkit's authorization server:
//! its RFC 8414 metadata and a JWKS of a P-256 key), real JWTs signed by
//! that key, and the bundled
//! utils server behind the gateway. Tokens valid, expired, for another
//! audience or issuer, badly signed, by an unknown key, with HMAC, or
//! without a needed scope; the Protected Resource Metadata and the 401
//! challenge; the token's subject and scopes in the policy's rules and the
//! audit line; API keys; a network address refused without `auth`.

use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use nexo_testkit::AuthServer;
use serde_json::{Value, json};

use crate::support::{Proc, Run, TempDir, loopback, nexo, run, serve_router};

const AUDIENCE: &str = "https://gateway.test/mcp";

const POLICY: &str = r#"
default = "deny"

[[rule]]
name = "alice-may-hash-and-echo"
decision = "allow"
subject = "alice"
server = "utils"
tool = ["echo", "sha256"]

[[rule]]
name = "clock-readers"
decision = "allow"
scopes = ["clock"]
server = "utils"
tool = "time"
"#;

/// The test authorization server of nexo-testkit: its metadata and key
/// set on 127.0.0.1, and the tokens these tests sign with its key.
struct TestKey(AuthServer);

impl TestKey {
    /// The server and its issuer URL.
    fn start() -> (Self, String) {
        let server = AuthServer::start().unwrap();
        let issuer = server.issuer().to_owned();
        (Self(server), issuer)
    }

    /// A token with `claims`, signed by the issuer's key but naming `kid`.
    fn sign_as(&self, kid: &str, claims: &Value) -> String {
        self.0.sign_as(kid, claims).unwrap()
    }

    fn sign(&self, claims: &Value) -> String {
        self.0.sign(claims).unwrap()
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// An upstream on 127.0.0.1 that speaks just enough Streamable HTTP (one
/// `echo` tool, answers as JSON) and keeps every `Authorization` header it
/// is sent.
fn start_recording_upstream() -> (String, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (listener, base) = loopback();
    let url = format!("{base}/mcp");
    let recorded = seen.clone();
    let answer = move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
        let recorded = recorded.clone();
        async move {
            use axum::response::IntoResponse;
            if let Some(value) = headers.get("authorization") {
                recorded
                    .lock()
                    .unwrap()
                    .push(value.to_str().unwrap_or("?").to_owned());
            }
            let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let Some(id) = message.get("id").cloned() else {
                return axum::http::StatusCode::ACCEPTED.into_response();
            };
            let result = match message["method"].as_str().unwrap_or("") {
                "initialize" => json!({
                    "protocolVersion": message["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "recorder", "version": "1"},
                }),
                "tools/list" => json!({"tools": [{
                    "name": "echo",
                    "inputSchema": {"type": "object"},
                }]}),
                "tools/call" => json!({"content": [{"type": "text", "text": "heard"}]}),
                "ping" => json!({}),
                _ => {
                    return axum::Json(json!({"jsonrpc": "2.0", "id": id, "error": {
                        "code": -32601, "message": "method not found"}}))
                    .into_response();
                }
            };
            axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
        }
    };
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::post(answer).get(|| async { axum::http::StatusCode::METHOD_NOT_ALLOWED }),
    );
    serve_router(listener, app);
    (url, seen)
}

/// A gateway in front of the bundled utils server, stopped when dropped.
struct Gateway {
    _proc: Proc,
    base: String,
    dir: TempDir,
}

impl Gateway {
    fn start(auth: Value, prepare: impl FnOnce(&std::path::Path)) -> Self {
        Self::start_before(json!({"utils": {"builtin": "utils"}}), auth, prepare)
    }

    fn start_before(servers: Value, auth: Value, prepare: impl FnOnce(&std::path::Path)) -> Self {
        let dir = TempDir::new("gateway-auth");
        std::fs::write(dir.path().join("policy.toml"), POLICY).unwrap();
        prepare(dir.path());
        let config = json!({
            "mcpServers": servers,
            "gateway": {"policy": "policy.toml", "audit": "audit.jsonl", "auth": auth},
        });
        let file = dir.path().join("gateway.json");
        std::fs::write(&file, config.to_string()).unwrap();
        let (proc, base) = crate::gateway_serve::start(&file, &[], "nexo: gateway for 1 upstream");
        Self {
            _proc: proc,
            base,
            dir,
        }
    }

    fn url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    /// `nexo ARGS --url URL --header 'Authorization: Bearer TOKEN'`.
    fn nexo(&self, token: &str, args: &[&str]) -> Run {
        let url = self.url();
        let header = format!("Authorization: Bearer {token}");
        let mut all = vec![args[0], "--url", &url, "--header", &header];
        all.extend_from_slice(&args[1..]);
        run(&all)
    }

    /// A raw `initialize` POST with `authorization`, answered with its
    /// status, `WWW-Authenticate` and body.
    fn post(&self, authorization: Option<&str>) -> (u16, String, Value) {
        let mut command = std::process::Command::new("curl");
        command.args([
            "-sS",
            "-o",
            "-",
            "-w",
            "\n%{http_code}",
            "-D",
            "/dev/stderr",
            "-H",
            "Content-Type: application/json",
            "-H",
            "Accept: application/json, text/event-stream",
            "--data",
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        ]);
        if let Some(authorization) = authorization {
            command.args(["-H", &format!("Authorization: {authorization}")]);
        }
        let out = command.arg(self.url()).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, status) = stdout.rsplit_once('\n').unwrap();
        let headers = String::from_utf8_lossy(&out.stderr).into_owned();
        let challenge = headers
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("www-authenticate")
                    .then(|| value.trim().to_owned())
            })
            .unwrap_or_default();
        (
            status.trim().parse().unwrap(),
            challenge,
            serde_json::from_str(body).unwrap_or(Value::Null),
        )
    }

    /// A `tools/call` sent as raw JSON-RPC in a 2025-06-18 session: its
    /// HTTP status, `WWW-Authenticate` and JSON-RPC response (null when
    /// there is none).
    fn raw_call(&self, token: &str, tool: &str, arguments: Value) -> (u16, String, Value) {
        let post = |body: &str, session: Option<&str>| {
            let mut command = std::process::Command::new("curl");
            command.args([
                "-sS",
                "-w",
                "\n%{http_code}",
                "-D",
                "/dev/stderr",
                "-H",
                "Content-Type: application/json",
                "-H",
                "Accept: application/json, text/event-stream",
                "-H",
                "MCP-Protocol-Version: 2025-06-18",
                "-H",
                &format!("Authorization: Bearer {token}"),
                "--data",
                body,
            ]);
            if let Some(session) = session {
                command.args(["-H", &format!("Mcp-Session-Id: {session}")]);
            }
            let out = command.arg(self.url()).output().unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            let (body, status) = stdout.rsplit_once('\n').unwrap();
            (
                String::from_utf8_lossy(&out.stderr).into_owned(),
                body.to_owned(),
                status.trim().parse::<u16>().unwrap(),
            )
        };
        let header = |headers: &str, wanted: &str| {
            headers.lines().find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case(wanted)
                    .then(|| value.trim().to_owned())
            })
        };
        let (headers, _, _) = post(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
            None,
        );
        let session = header(&headers, "mcp-session-id")
            .unwrap_or_else(|| panic!("no session id in:\n{headers}"));
        post(
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            Some(&session),
        );
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                          "params": {"name": tool, "arguments": arguments}});
        let (headers, body, status) = post(&call.to_string(), Some(&session));
        let json = body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .find(|data| data.trim_start().starts_with('{'))
            .unwrap_or(&body);
        (
            status,
            header(&headers, "www-authenticate").unwrap_or_default(),
            serde_json::from_str(json.trim()).unwrap_or(Value::Null),
        )
    }

    /// A stateless 2026-07-28 `tools/call` of `tool` whose `Mcp-Name`
    /// header says `header`: its HTTP status, `WWW-Authenticate` and body.
    fn call_2026(&self, token: &str, tool: &str, header: &str) -> (u16, String, Value) {
        let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": tool, "arguments": {"text": "hi"},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        }});
        let out = std::process::Command::new("curl")
            .args([
                "-sS",
                "-w",
                "\n%{http_code}",
                "-D",
                "/dev/stderr",
                "-H",
                "Content-Type: application/json",
                "-H",
                "Accept: application/json, text/event-stream",
                "-H",
                "MCP-Protocol-Version: 2026-07-28",
                "-H",
                "Mcp-Method: tools/call",
                "-H",
                &format!("Mcp-Name: {header}"),
                "-H",
                &format!("Authorization: Bearer {token}"),
                "--data",
                &call.to_string(),
            ])
            .arg(self.url())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, status) = stdout.rsplit_once('\n').unwrap();
        let challenge = String::from_utf8_lossy(&out.stderr)
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("www-authenticate")
                    .then(|| value.trim().to_owned())
            })
            .unwrap_or_default();
        (
            status.trim().parse().unwrap(),
            challenge,
            serde_json::from_str(body).unwrap_or(Value::Null),
        )
    }

    fn audit(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.path().join("audit.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

fn claims(issuer: &str, subject: &str, scope: &str) -> Value {
    json!({
        "iss": issuer, "aud": AUDIENCE, "sub": subject, "scope": scope,
        "iat": now(), "exp": now() + 600,
    })
}

fn oauth_gateway() -> (Gateway, TestKey, String) {
    let (key, issuer) = TestKey::start();
    let auth = json!({"oauth": {
        "issuer": issuer,
        "audience": AUDIENCE,
        "requiredScopes": ["mcp"],
        "toolScopes": {"utils__sha2*": ["hash"]},
    }});
    (Gateway::start(auth, |_| {}), key, issuer)
}

#[test]
fn gateway_auth_rejects_bad_tokens_with_a_challenge() {
    let (gateway, key, issuer) = oauth_gateway();
    let metadata_url = "https://gateway.test/.well-known/oauth-protected-resource/mcp";
    // The Protected Resource Metadata, at both of its addresses.
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let out = std::process::Command::new("curl")
            .args(["-sS", &format!("{}{path}", gateway.base)])
            .output()
            .unwrap();
        let document: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(document["resource"], AUDIENCE, "{document}");
        assert_eq!(document["authorization_servers"], json!([issuer]));
        assert_eq!(document["scopes_supported"], json!(["hash", "mcp"]));
        assert_eq!(document["bearer_methods_supported"], json!(["header"]));
    }
    // A browser page on an allowed (loopback) origin may read the
    // challenge and the metadata; a foreign origin is not named in a
    // challenge.
    for (origin, allowed) in [
        ("http://localhost:6274", Some("http://localhost:6274")),
        ("https://evil.example", None),
    ] {
        for (method, path) in [
            ("POST", "/mcp"),
            ("GET", "/.well-known/oauth-protected-resource/mcp"),
        ] {
            let out = std::process::Command::new("curl")
                .args(["-sS", "-o", "/dev/null", "-D", "-", "-X", method])
                .args(["-H", &format!("Origin: {origin}")])
                .arg(format!("{}{path}", gateway.base))
                .output()
                .unwrap();
            let headers = String::from_utf8_lossy(&out.stdout).to_lowercase();
            let named = headers.lines().find_map(|line| {
                line.strip_prefix("access-control-allow-origin:")
                    .map(|value| value.trim().to_owned())
            });
            if method == "POST" {
                assert_eq!(named.as_deref(), allowed, "{method} {path}: {headers}");
                if allowed.is_some() {
                    assert!(headers.contains("www-authenticate"), "{headers}");
                }
            } else if allowed.is_some() {
                // The metadata is a public document.
                assert!(named.is_some(), "{method} {path}: {headers}");
            }
        }
    }
    // No token: 401 pointing at the metadata.
    let (status, challenge, _) = gateway.post(None);
    assert_eq!(status, 401);
    assert_eq!(
        challenge,
        format!("Bearer scope=\"mcp\", resource_metadata=\"{metadata_url}\"")
    );
    let other = nexo_testkit::SigningKey::new("key-1").unwrap();
    let cases = [
        (
            "expired",
            key.sign(
                &json!({"iss": issuer, "aud": AUDIENCE, "sub": "alice", "scope": "mcp",
                             "exp": now() - 3600}),
            ),
            "the token has expired",
        ),
        (
            "another audience",
            key.sign(
                &json!({"iss": issuer, "aud": "https://elsewhere.test/mcp", "sub": "alice",
                             "scope": "mcp", "exp": now() + 600}),
            ),
            "the token is not for this gateway (`aud`)",
        ),
        (
            "another issuer",
            key.sign(&claims("https://evil.test", "alice", "mcp")),
            "the token comes from another issuer (`iss`)",
        ),
        (
            "a bad signature",
            other.sign(&claims(&issuer, "alice", "mcp")).unwrap(),
            "the token's signature does not verify",
        ),
        (
            "an unknown key",
            key.sign_as("k9", &claims(&issuer, "alice", "mcp")),
            "the token is signed by a key (`k9`) the issuer does not publish",
        ),
        (
            "HMAC",
            jsonwebtoken::encode(
                &Header::new(Algorithm::HS256),
                &claims(&issuer, "alice", "mcp"),
                &EncodingKey::from_secret(b"the public key, say"),
            )
            .unwrap(),
            "the token is signed with `HS256`, which the gateway does not accept",
        ),
        (
            "not a JWT",
            "abc.def".to_owned(),
            "the bearer token is not a JWT",
        ),
    ];
    for (case, token, description) in cases {
        let (status, challenge, body) = gateway.post(Some(&format!("Bearer {token}")));
        assert_eq!(status, 401, "{case}: {body}");
        assert_eq!(
            challenge,
            format!(
                "Bearer error=\"invalid_token\", error_description=\"{}\", resource_metadata=\"{metadata_url}\"",
                description.replace('"', "'")
            ),
            "{case}"
        );
        assert_eq!(body["error_description"], description, "{case}");
        assert!(
            !body.to_string().contains(&token),
            "{case}: the token is echoed"
        );
    }
    // A valid token without the scope every request needs: 403.
    let (status, challenge, _) = gateway.post(Some(&format!(
        "Bearer {}",
        key.sign(&claims(&issuer, "alice", "tools"))
    )));
    assert_eq!(status, 403);
    assert!(
        challenge.starts_with("Bearer error=\"insufficient_scope\"")
            && challenge.contains("scope=\"mcp\""),
        "{challenge}"
    );
    // And a valid one gets in.
    let (status, _, _) = gateway.post(Some(&format!(
        "Bearer {}",
        key.sign(&claims(&issuer, "alice", "mcp"))
    )));
    assert_eq!(status, 200);
}

#[test]
fn gateway_auth_identity_reaches_the_policy_and_the_audit() {
    let (gateway, key, issuer) = oauth_gateway();
    let alice = key.sign(&claims(&issuer, "alice", "mcp"));
    let echo = gateway.nexo(&alice, &["call", "utils__echo", "text=hi", "--json"]);
    echo.assert_success();
    assert_eq!(echo.stdout_json()["content"][0]["text"], "hi");
    // A tool whose scope the token lacks is neither listed nor callable.
    let tools = gateway.nexo(&alice, &["tools", "--json"]);
    tools.assert_success();
    let names: Vec<String> = tools.stdout_json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["utils__echo"], "{names:?}");
    // nexo's client refuses an unlisted tool itself: the call goes raw,
    // and gets the step-up challenge asking for every scope it needs.
    let (status, challenge, body) =
        gateway.raw_call(&alice, "utils__sha256", json!({"text": "hi"}));
    assert_eq!(status, 403, "{body}");
    assert!(
        challenge.starts_with("Bearer error=\"insufficient_scope\"")
            && challenge.contains("scope=\"mcp hash\"")
            && challenge.contains("resource_metadata="),
        "{challenge}"
    );
    assert!(
        challenge.contains("rule `auth.oauth.toolScopes[utils__sha2*]`"),
        "{challenge}"
    );
    // The same over 2026-07-28; a header naming another tool is a header
    // mismatch (400, -32020) before it is a missing scope.
    let (status, challenge, body) = gateway.call_2026(&alice, "utils__sha256", "utils__sha256");
    assert_eq!(status, 403, "{body}");
    assert!(challenge.contains("scope=\"mcp hash\""), "{challenge}");
    let (status, challenge, body) = gateway.call_2026(&alice, "utils__sha256", "utils__echo");
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], -32020, "{body}");
    assert!(challenge.is_empty(), "{challenge}");
    let alice_hashing = key.sign(&claims(&issuer, "alice", "mcp hash"));
    gateway
        .nexo(
            &alice_hashing,
            &["call", "utils__sha256", "text=hi", "--json"],
        )
        .assert_success();
    // The policy's `subject` and `scopes` conditions see the token.
    let bob = key.sign(&claims(&issuer, "bob", "mcp clock"));
    let (status, _, denied) = gateway.raw_call(&bob, "utils__echo", json!({"text": "hi"}));
    assert_eq!(status, 200, "{denied}");
    assert_eq!(denied["result"]["isError"], true, "{denied}");
    let time = gateway.nexo(&bob, &["call", "utils__time", "--json"]);
    time.assert_success();
    // Each audit line names who asked.
    let lines = gateway.audit();
    let by = |subject: &str, tool: &str| {
        lines
            .iter()
            .find(|line| line["identity"]["subject"] == subject && line["tool"] == tool)
            .unwrap_or_else(|| panic!("no audit line of {subject} calling {tool}: {lines:?}"))
            .clone()
    };
    let line = by("alice", "echo");
    assert_eq!(line["rule"], "alice-may-hash-and-echo");
    assert_eq!(line["identity"]["scopes"], json!(["mcp"]));
    assert_eq!(line["identity"]["client"], "127.0.0.1");
    assert_eq!(by("bob", "echo")["decision"], "deny");
    // The step-up refusal is audited with its rule.
    let refused = by("alice", "sha256");
    assert_eq!(refused["decision"], "deny");
    assert_eq!(refused["rule"], "auth.oauth.toolScopes[utils__sha2*]");
    assert_eq!(by("bob", "time")["rule"], "clock-readers");
    // The legacy SSE transport carries the identity too.
    let sse = format!("{}/sse", gateway.base);
    let header = format!("Authorization: Bearer {alice}");
    let legacy = run(&[
        "call",
        "--url",
        &sse,
        "--transport",
        "sse",
        "--header",
        &header,
        "utils__echo",
        "text=over-sse",
        "--json",
    ]);
    legacy.assert_success();
    let lines = gateway.audit();
    assert!(
        lines
            .iter()
            .any(|line| line["identity"]["subject"] == "alice"
                && line["arguments"]["text"] == "over-sse"),
        "{lines:?}"
    );
    let audit_text = std::fs::read_to_string(gateway.dir.path().join("audit.jsonl")).unwrap();
    assert!(
        !audit_text.contains(&alice),
        "a token reached the audit log"
    );
}

#[test]
fn gateway_auth_never_passes_the_client_token_upstream() {
    let (key, issuer) = TestKey::start();
    let (url, seen) = start_recording_upstream();
    let gateway = Gateway::start_before(
        json!({"utils": {"type": "http", "url": url,
                         "headers": {"Authorization": "Bearer upstream-own-secret"}}}),
        json!({"oauth": {"issuer": issuer, "audience": AUDIENCE}}),
        |dir| {
            std::fs::write(dir.join("policy.toml"), "default = \"allow\"\n").unwrap();
        },
    );
    let token = key.sign(&claims(&issuer, "alice", "mcp"));
    let heard = gateway.nexo(&token, &["call", "utils__echo", "--json"]);
    heard.assert_success();
    assert_eq!(heard.stdout_json()["content"][0]["text"], "heard");
    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty(), "the upstream was sent nothing");
    assert!(
        seen.iter()
            .all(|value| value == "Bearer upstream-own-secret"),
        "the upstream saw {seen:?}"
    );
}

#[test]
fn gateway_auth_api_keys() {
    let secret = "k-0123456789abcdef-gateway";
    let digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"; // "test"
    let auth = json!({"apiKeys": [
        {"name": "ci", "keyFile": "ci.key", "scopes": ["clock"]},
        {"name": "ops", "sha256": digest},
    ]});
    let gateway = Gateway::start(auth, |dir| {
        std::fs::write(dir.join("ci.key"), format!("{secret}\n")).unwrap();
    });
    let time = gateway.nexo(secret, &["call", "utils__time", "--json"]);
    time.assert_success();
    let (status, challenge, _) = gateway.post(Some("Bearer not-the-key"));
    assert_eq!(status, 401);
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    let (status, _, _) = gateway.post(Some("Bearer test"));
    assert_eq!(status, 200);
    let lines = gateway.audit();
    assert!(
        lines
            .iter()
            .any(|line| line["identity"]["subject"] == "ci" && line["tool"] == "time"),
        "{lines:?}"
    );
}

#[test]
fn gateway_serves_https_with_the_certificate_it_is_given() {
    let dir = TempDir::new("gateway-tls");
    let ca = nexo_testkit::TestCa::new("nexo test CA").unwrap();
    let ca_file = ca.write(dir.path()).unwrap();
    let (cert, key) = ca
        .issue("gateway", &["localhost", "127.0.0.1"])
        .unwrap()
        .write(dir.path())
        .unwrap();
    std::fs::write(dir.path().join("policy.toml"), POLICY).unwrap();
    let config = json!({
        "mcpServers": {"utils": {"builtin": "utils"}},
        "gateway": {"policy": "policy.toml", "audit": "audit.jsonl",
                    "auth": {"apiKeys": [{"name": "ci", "keyFile": "ci.key", "scopes": ["clock"]}]}},
    });
    let secret = "k-0123456789abcdef-over-tls";
    std::fs::write(dir.path().join("ci.key"), format!("{secret}\n")).unwrap();
    let file = dir.path().join("gateway.json");
    std::fs::write(&file, config.to_string()).unwrap();
    let tls = [
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ];
    let (_proc, base) = crate::gateway_serve::start(&file, &tls, "nexo: gateway for 1 upstream");
    assert!(base.starts_with("https://127.0.0.1:"), "{base}");
    let url = format!("{}/mcp", base.replace("127.0.0.1", "localhost"));
    let header = format!("Authorization: Bearer {secret}");
    let call = |trusted: bool| {
        let mut command = nexo();
        command.args([
            "call",
            "--url",
            &url,
            "--header",
            &header,
            "utils__time",
            "--json",
        ]);
        if trusted {
            command.env("SSL_CERT_FILE", &ca_file);
        }
        crate::support::run_command(command)
    };
    let time = call(true).assert_success().stdout_json();
    assert!(time["content"][0]["text"].is_string(), "{time}");
    // A client that does not trust the CA never reaches the gateway.
    let refused = call(false);
    assert_ne!(refused.code(), 0, "{refused:?}");
    assert!(
        refused.stderr.to_lowercase().contains("certificate"),
        "{refused:?}"
    );
}

#[test]
fn gateway_without_auth_refuses_a_network_address() {
    let dir = TempDir::new("gateway-open");
    std::fs::write(dir.path().join("policy.toml"), POLICY).unwrap();
    let file = dir.path().join("gateway.json");
    std::fs::write(
        &file,
        json!({
            "mcpServers": {"utils": {"builtin": "utils"}},
            "gateway": {"policy": "policy.toml"},
        })
        .to_string(),
    )
    .unwrap();
    let refused = run(&[
        "gateway",
        "--config",
        file.to_str().unwrap(),
        "--http",
        "0.0.0.0:0",
    ]);
    assert_eq!(refused.code(), 1, "{refused:?}");
    let error = refused.error_line();
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no `auth` settings"),
        "{error}"
    );
    assert!(
        error["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("\"auth\": \"none\""),
        "{error}"
    );
}

/// What the test's token endpoint was asked: the form fields and the
/// `Authorization` header of each token exchange request.
type Exchanges = Arc<Mutex<Vec<(Vec<(String, String)>, String)>>>;

/// A token endpoint on 127.0.0.1 for RFC 8693 exchanges: it trades any
/// subject token for `exchanged-N` (the Nth trade, valid `expires_in`
/// seconds), except one holding `refuse-me`, which it refuses with
/// `invalid_grant`.
fn start_token_endpoint(expires_in: u64) -> (String, Exchanges) {
    let asked: Exchanges = Arc::default();
    let recorded = asked.clone();
    let (listener, base) = loopback();
    let url = format!("{base}/token");
    let answer = move |headers: axum::http::HeaderMap, body: String| {
        let recorded = recorded.clone();
        async move {
            use axum::response::IntoResponse;
            let form: Vec<(String, String)> = url::form_urlencoded::parse(body.as_bytes())
                .into_owned()
                .collect();
            let authorization = headers
                .get("authorization")
                .and_then(|value| value.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            // The subject token's claims, read without checking
            // its signature (the gateway checked it).
            let subject = form
                .iter()
                .find(|(name, _)| name == "subject_token")
                .and_then(|(_, token)| token.split('.').nth(1))
                .and_then(|claims| URL_SAFE_NO_PAD.decode(claims).ok())
                .map(|claims| String::from_utf8_lossy(&claims).into_owned())
                .unwrap_or_default();
            let mut asked = recorded.lock().unwrap();
            asked.push((form, authorization));
            if subject.contains("refuse-me") || subject.is_empty() {
                return (
                    axum::http::StatusCode::BAD_REQUEST,
                    axum::Json(json!({"error": "invalid_grant",
                                      "error_description": "the subject token is not trusted"})),
                )
                    .into_response();
            }
            axum::Json(json!({
                "access_token": format!("exchanged-{}", asked.len()),
                "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
                "token_type": "Bearer",
                "expires_in": expires_in,
            }))
            .into_response()
        }
    };
    let app = axum::Router::new().route("/token", axum::routing::post(answer));
    serve_router(listener, app);
    (url, asked)
}

#[test]
fn gateway_trades_each_callers_token_for_the_upstream() {
    let (key, issuer) = TestKey::start();
    let (url, seen_log) = start_recording_upstream();
    // 40 s: past the gateway's 30 s margin, so each trade is kept.
    let (token_endpoint, asked) = start_token_endpoint(40);
    let dir = TempDir::new("gateway-exchange");
    std::fs::write(dir.path().join("policy.toml"), "default = \"allow\"\n").unwrap();
    std::fs::write(dir.path().join("client.secret"), "gw-secret\n").unwrap();
    let config = json!({
        "mcpServers": {"utils": {"type": "http", "url": url,
                                 "headers": {"Authorization": "Bearer upstream-own-secret"}}},
        "gateway": {
            "policy": "policy.toml", "audit": "audit.jsonl",
            "auth": {"oauth": {"issuer": issuer, "audience": AUDIENCE}},
            "tokenExchange": {"utils": {
                "tokenEndpoint": token_endpoint, "clientId": "gw",
                "clientSecretFile": "client.secret",
                "audience": "https://upstream.test/mcp", "scope": "echo",
            }},
        },
    });
    let file = dir.path().join("gateway.json");
    std::fs::write(&file, config.to_string()).unwrap();
    let (_proc, base) = crate::gateway_serve::start(&file, &[], "nexo: gateway for 1 upstream");
    let gateway_url = format!("{base}/mcp");
    let call = |token: &str| {
        let header = format!("Authorization: Bearer {token}");
        run(&[
            "call",
            "--url",
            &gateway_url,
            "--header",
            &header,
            "utils__echo",
            "--json",
        ])
    };

    let alice = key.sign(&claims(&issuer, "alice", "mcp"));
    for _ in 0..2 {
        let heard = call(&alice);
        heard.assert_success();
        assert_eq!(heard.stdout_json()["content"][0]["text"], "heard");
    }
    let bob = key.sign(&claims(&issuer, "bob", "mcp"));
    call(&bob).assert_success();

    let trades = asked.lock().unwrap().clone();
    assert_eq!(trades.len(), 2, "one trade per caller, kept: {trades:?}");
    let field = |trade: &(Vec<(String, String)>, String), name: &str| {
        trade
            .0
            .iter()
            .find(|(field, _)| field == name)
            .map(|(_, value)| value.clone())
    };
    assert_eq!(
        field(&trades[0], "subject_token").as_deref(),
        Some(alice.as_str())
    );
    assert_eq!(
        field(&trades[1], "subject_token").as_deref(),
        Some(bob.as_str())
    );
    assert_eq!(
        field(&trades[0], "grant_type").as_deref(),
        Some("urn:ietf:params:oauth:grant-type:token-exchange")
    );
    assert_eq!(
        field(&trades[0], "subject_token_type").as_deref(),
        Some("urn:ietf:params:oauth:token-type:access_token")
    );
    assert_eq!(
        field(&trades[0], "audience").as_deref(),
        Some("https://upstream.test/mcp")
    );
    assert_eq!(field(&trades[0], "scope").as_deref(), Some("echo"));
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("gw:gw-secret")
    );
    assert_eq!(
        trades[0].1, basic,
        "the gateway authenticates as its own client"
    );

    let seen = seen_log.lock().unwrap().clone();
    assert!(
        !seen
            .iter()
            .any(|value| value.contains(&alice) || value.contains(&bob)),
        "a caller's own token reached the upstream: {seen:?}"
    );
    for exchanged in ["Bearer exchanged-1", "Bearer exchanged-2"] {
        assert!(
            seen.iter().any(|value| value == exchanged),
            "the upstream never saw `{exchanged}`: {seen:?}"
        );
    }

    // A caller the authorization server will not trade for: the call
    // fails, saying why, and nothing reaches the upstream for it.
    let refused = call(&key.sign(&claims(&issuer, "refuse-me", "mcp")));
    assert!(!refused.status.success(), "{}", refused.stdout);
    let said = format!("{}{}", refused.stdout, refused.stderr);
    assert!(said.contains("invalid_grant"), "{said}");
    assert_eq!(
        asked.lock().unwrap().len(),
        3,
        "the refused trade was asked for"
    );
    let seen_after = seen_log.lock().unwrap().clone();
    assert!(
        seen_after[seen.len()..]
            .iter()
            .all(|value| value == "Bearer upstream-own-secret"),
        "the upstream was called for a caller refused a token: {seen_after:?}"
    );
}

#[test]
fn gateway_takes_serves_auth_flags_but_not_beside_its_own_auth() {
    let dir = TempDir::new("gateway-auth-flags");
    std::fs::write(dir.path().join("policy.toml"), "default = \"allow\"\n").unwrap();
    let token = "k-0123456789abcdef-from-a-token-file";
    let digest = std::process::Command::new("sh")
        .args(["-c", &format!("printf %s '{token}' | sha256sum")])
        .output()
        .unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, &digest.stdout).unwrap();
    let config = |auth: Option<Value>| {
        let mut gateway = json!({"policy": "policy.toml", "audit": "audit.jsonl"});
        if let Some(auth) = auth {
            gateway["auth"] = auth;
        }
        let file = dir.path().join("gateway.json");
        std::fs::write(
            &file,
            json!({"mcpServers": {"utils": {"builtin": "utils"}}, "gateway": gateway}).to_string(),
        )
        .unwrap();
        file
    };
    let file = config(None);
    let (_proc, base) = crate::gateway_serve::start(
        &file,
        &["--token-file", tokens.to_str().unwrap()],
        "nexo: gateway for 1 upstream",
    );
    let gateway = Gateway {
        _proc,
        base,
        dir: TempDir::new("gateway-auth-flags-unused"),
    };
    let (status, challenge, _) = gateway.post(None);
    assert_eq!(status, 401);
    assert!(challenge.contains("realm=\"nexo-gateway\""), "{challenge}");
    let (status, _, _) = gateway.post(Some(&format!("Bearer {token}")));
    assert_eq!(status, 200);

    let file = config(Some(json!("none")));
    let refused = run(&[
        "gateway",
        "--config",
        file.to_str().unwrap(),
        "--http",
        "127.0.0.1:0",
        "--token-file",
        tokens.to_str().unwrap(),
    ]);
    assert_eq!(refused.code(), 1, "{refused:?}");
    let error = refused.error_line();
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("who may call is given twice"),
        "{error}"
    );
}
