//! `nexo serve --http` exposed: static tokens (`--token-file`), an OAuth
//! 2.1 resource server (`--auth-issuer`/`--auth-audience`, with
//! nexo-testkit's authorization server on 127.0.0.1 signing real JWTs),
//! required scopes per tool (`--auth-scopes`), the key set rotated, the
//! whole authorization-code flow done by nexo's own client, rate limits
//! per caller (429 with `Retry-After`, which nexo's client waits out),
//! `/metrics` counting refusals, and a network address refused without
//! authentication.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use nexo_testkit::AuthServer;
use serde_json::{Value, json};

use crate::support::{
    Http, HttpServer, NodeTools, Proc, Reply, TempDir, free_port, nexo, run, run_command,
};

const TOKEN: &str = "s3cret-token-of-the-serve-tests";
const OTHER_TOKEN: &str = "another-s3cret-token-for-bob";

fn sha256_hex(text: &str) -> String {
    let output = std::process::Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(text.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    String::from_utf8(output.stdout).unwrap()
}

/// A token file with `TOKEN` (as `sha256sum` writes it) and `OTHER_TOKEN`
/// named `bob`, a comment and a blank line.
fn token_file(dir: &TempDir) -> String {
    let path = dir.path().join("tokens");
    let bob = sha256_hex(OTHER_TOKEN);
    let bob = bob.split_whitespace().next().unwrap();
    std::fs::write(
        &path,
        format!(
            "# who may call morse\n{}\n{bob}  bob\n",
            sha256_hex(TOKEN).trim()
        ),
    )
    .unwrap();
    path.to_str().unwrap().to_owned()
}

/// One caller of `/mcp` in a 2025-06-18 session, by raw JSON-RPC.
struct Session {
    http: Http,
    authorization: Option<String>,
    id: Option<String>,
}

impl Session {
    fn new(base: String, token: Option<&str>) -> Self {
        Self {
            http: Http::at(base),
            authorization: token.map(|token| format!("Bearer {token}")),
            id: None,
        }
    }

    async fn post(&self, body: &Value) -> Reply {
        let mut headers = vec![("Accept", "application/json, text/event-stream")];
        if let Some(authorization) = &self.authorization {
            headers.push(("Authorization", authorization));
        }
        if let Some(id) = &self.id {
            headers.push(("Mcp-Session-Id", id));
        }
        self.http.post(&body.to_string(), &headers).await
    }

    /// `initialize` and `notifications/initialized`; the reply to the first.
    async fn open(&mut self) -> Reply {
        let reply = self
            .post(
                &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "serve-auth-test", "version": "1"}}}),
            )
            .await;
        if reply.status == 200 {
            self.id = reply.header("mcp-session-id").map(str::to_owned);
            let sent = self
                .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
                .await;
            assert_eq!(sent.status, 202, "{sent:#?}");
        }
        reply
    }

    async fn call(&self, tool: &str, arguments: Value) -> Reply {
        self.post(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                          "params": {"name": tool, "arguments": arguments}}))
            .await
    }
}

/// The value of `name` in the Prometheus text `metrics`, 0 when absent.
fn metric(metrics: &str, name: &str) -> f64 {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or(0.0)
}

/// `GET /metrics` with `token`, if any.
async fn metrics(base: &str, token: Option<&str>) -> String {
    let authorization = token.map(|token| format!("Bearer {token}"));
    let headers: Vec<(&str, &str)> = authorization
        .iter()
        .map(|value| ("Authorization", value.as_str()))
        .collect();
    let reply = Http::at(base.to_owned()).get("/metrics", &headers).await;
    assert_eq!(reply.status, 200, "{reply:#?}");
    reply.body
}

#[tokio::test]
async fn serve_token_file_lets_in_the_listed_tokens_only() {
    let dir = TempDir::new("serve-auth-tokens");
    let tokens = token_file(&dir);
    let server = HttpServer::start(&["--token-file", &tokens]);
    let base = server.base_url();

    let mut anonymous = Session::new(base.clone(), None);
    let refused = anonymous.open().await;
    assert_eq!(refused.status, 401, "{refused:#?}");
    let challenge = refused.header("www-authenticate").unwrap();
    assert!(
        challenge.starts_with("Bearer realm=\"nexo-server\""),
        "{challenge}"
    );

    let mut wrong = Session::new(base.clone(), Some("not-a-token-of-the-file"));
    let refused = wrong.open().await;
    assert_eq!(refused.status, 401);
    assert!(
        refused
            .header("www-authenticate")
            .unwrap()
            .contains("error=\"invalid_token\""),
        "{refused:#?}"
    );

    for token in [TOKEN, OTHER_TOKEN] {
        let mut caller = Session::new(base.clone(), Some(token));
        assert_eq!(caller.open().await.status, 200);
        let answer = caller
            .call("echo", json!({"texto": "hola"}))
            .await
            .message();
        assert_eq!(
            answer["result"]["content"][0]["text"], "echo: hola",
            "{answer}"
        );
    }
    // nexo's own client, with the token as a header.
    let header = format!("Authorization: Bearer {TOKEN}");
    let url = server.mcp_url();
    let called = run(&[
        "call",
        "--url",
        &url,
        "--header",
        &header,
        "morse",
        "texto=sos",
        "--json",
    ]);
    assert_eq!(
        called.assert_success().stdout_json()["content"][0]["text"],
        "... --- ..."
    );
    let unauthenticated = Http::at(base.clone()).get("/metrics", &[]).await;
    assert_eq!(unauthenticated.status, 401, "{unauthenticated:#?}");
    // Issue 39: the metadata document is public (RFC 9728), and static
    // tokens name no authorization server: 404, not 401.
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let metadata = Http::at(base.clone()).get(path, &[]).await;
        assert_eq!(metadata.status, 404, "{path}: {metadata:#?}");
    }
    let text = metrics(&base, Some(TOKEN)).await;
    assert_eq!(
        metric(&text, "nexo_serve_refused_total{reason=\"auth\"}"),
        3.0,
        "{text}"
    );
    assert!(
        metric(
            &text,
            "nexo_serve_requests_total{method=\"tools/call\",server=\"morse\",tool=\"echo\",\
             decision=\"allow\",outcome=\"ok\"}"
        ) >= 2.0,
        "{text}"
    );
}

#[test]
fn a_token_in_clear_in_the_token_file_is_refused_with_the_way_to_hash_it() {
    let dir = TempDir::new("serve-auth-clear");
    let path = dir.path().join("tokens");
    std::fs::write(&path, format!("{TOKEN}\n")).unwrap();
    let refused = run(&[
        "serve",
        "morse",
        "--http",
        "127.0.0.1:0",
        "--token-file",
        path.to_str().unwrap(),
    ]);
    assert_eq!(refused.code(), 1, "{refused:?}");
    let error = refused.error_line();
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("line 1 of the token file"), "{error}");
    assert!(message.contains("sha256sum"), "{error}");
    assert!(!message.contains(TOKEN), "the token was echoed: {error}");
}

#[test]
fn a_network_address_is_refused_without_auth_before_it_is_bound() {
    let refused = run(&["serve", "morse", "--http", "0.0.0.0:0"]);
    assert_eq!(refused.code(), 1, "{refused:?}");
    let error = refused.error_line();
    assert_eq!(error["error"]["code"], "bad_config", "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("would be open to anyone on 0.0.0.0:0"),
        "{error}"
    );
    let hint = error["error"]["hint"].as_str().unwrap();
    for flag in ["--token-file", "--auth-issuer", "--no-auth"] {
        assert!(hint.contains(flag), "{hint}");
    }
    // Open on purpose, it starts (and is stopped at once).
    let mut command = nexo();
    command
        .args(["serve", "morse", "--http", "0.0.0.0:0", "--no-auth"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut proc = Proc::spawn(&mut command, "nexo serve morse --no-auth");
    let stderr = BufReader::new(proc.child().stderr.take().unwrap());
    let first = stderr.lines().next().unwrap().unwrap();
    assert!(
        first.starts_with("nexo: serving `morse` at http://0.0.0.0:"),
        "{first}"
    );
}

/// `nexo serve morse` as a resource server of `issuer` for `audience`,
/// the `morse` tool needing the scope `morse:write` and every request `mcp`.
fn oauth_server(dir: &TempDir, issuer: &str, audience: &str, addr: &str) -> HttpServer {
    let scopes = dir.path().join("scopes.json");
    std::fs::write(
        &scopes,
        json!({"requiredScopes": ["mcp"], "toolScopes": {"morse": ["morse:write"]}}).to_string(),
    )
    .unwrap();
    HttpServer::serve_at(
        "morse",
        addr,
        &[
            "--auth-issuer",
            issuer,
            "--auth-audience",
            audience,
            "--auth-scopes",
            scopes.to_str().unwrap(),
            "--log",
            dir.path().join("calls.jsonl").to_str().unwrap(),
        ],
        &[],
    )
}

const AUDIENCE: &str = "https://morse.test/mcp";

#[tokio::test]
async fn serve_oauth_refuses_bad_tokens_and_asks_for_the_scopes_a_tool_needs() {
    let issuer = AuthServer::start().unwrap();
    let dir = TempDir::new("serve-auth-oauth");
    let server = oauth_server(&dir, issuer.issuer(), AUDIENCE, "127.0.0.1:0");
    let base = server.base_url();

    // The Protected Resource Metadata, plain and path-suffixed.
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let document = Http::at(base.clone()).get(path, &[]).await.json();
        assert_eq!(document["resource"], AUDIENCE);
        assert_eq!(document["authorization_servers"], json!([issuer.issuer()]));
        assert_eq!(document["scopes_supported"], json!(["mcp", "morse:write"]));
    }

    // A browser page on an allowed origin (the web Inspector's) reads the
    // metadata and the challenge; a foreign origin is named nowhere.
    let inspector = [("Origin", "http://localhost:6274")];
    let metadata = Http::at(base.clone())
        .get("/.well-known/oauth-protected-resource/mcp", &inspector)
        .await;
    assert_eq!(
        metadata.header("access-control-allow-origin"),
        Some("http://localhost:6274"),
        "{metadata:#?}"
    );
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"page","version":"1"}}}"#;
    let accept = ("Accept", "application/json, text/event-stream");
    let challenged = Http::at(base.clone())
        .post(initialize, &[inspector[0], accept])
        .await;
    assert_eq!(challenged.status, 401, "{challenged:#?}");
    assert_eq!(
        challenged.header("access-control-allow-origin"),
        Some("http://localhost:6274"),
        "{challenged:#?}"
    );
    assert!(
        challenged
            .header("access-control-expose-headers")
            .is_some_and(|exposed| exposed.contains("www-authenticate")),
        "{challenged:#?}"
    );
    let foreign = Http::at(base.clone())
        .post(initialize, &[("Origin", "https://evil.example"), accept])
        .await;
    assert_eq!(foreign.status, 403, "{foreign:#?}");
    assert_eq!(
        foreign.header("access-control-allow-origin"),
        None,
        "{foreign:#?}"
    );

    let missing = Session::new(base.clone(), None).open().await;
    assert_eq!(missing.status, 401);
    let challenge = missing.header("www-authenticate").unwrap();
    assert!(
        challenge.contains(
            "resource_metadata=\"https://morse.test/.well-known/oauth-protected-resource/mcp\""
        ),
        "{challenge}"
    );
    assert!(challenge.contains("scope=\"mcp\""), "{challenge}");

    let expired = {
        let mut claims = issuer.claims("alice", AUDIENCE, "mcp");
        claims["exp"] = json!(now() - 3600);
        claims
    };
    let cases = [
        ("not-a-jwt".to_owned(), "the bearer token is not a JWT"),
        (issuer.sign(&expired).unwrap(), "the token has expired"),
        (
            issuer
                .sign(&issuer.claims("alice", "https://other.test/mcp", "mcp"))
                .unwrap(),
            "the token is not for this server (`aud`)",
        ),
        (
            issuer
                .sign(
                    &json!({"iss": "https://evil.test", "sub": "alice", "aud": AUDIENCE,
                              "scope": "mcp", "exp": now() + 600}),
                )
                .unwrap(),
            "the token comes from another issuer (`iss`)",
        ),
    ];
    for (token, reason) in cases {
        let refused = Session::new(base.clone(), Some(&token)).open().await;
        assert_eq!(refused.status, 401, "{reason}: {refused:#?}");
        let challenge = refused.header("www-authenticate").unwrap();
        assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
        assert!(challenge.contains(reason), "{reason}: {challenge}");
    }

    // Too few scopes for any request: 403.
    let tools_only = issuer
        .sign(&issuer.claims("alice", AUDIENCE, "tools"))
        .unwrap();
    let refused = Session::new(base.clone(), Some(&tools_only)).open().await;
    assert_eq!(refused.status, 403, "{refused:#?}");
    assert!(
        refused
            .header("www-authenticate")
            .unwrap()
            .contains("error=\"insufficient_scope\""),
        "{refused:#?}"
    );

    // Enough for `echo`, not for `morse`: the step-up challenge.
    let mcp = issuer
        .sign(&issuer.claims("alice", AUDIENCE, "mcp"))
        .unwrap();
    let mut alice = Session::new(base.clone(), Some(&mcp));
    assert_eq!(alice.open().await.status, 200);
    let echoed = alice.call("echo", json!({"texto": "hola"})).await.message();
    assert_eq!(echoed["result"]["content"][0]["text"], "echo: hola");
    let stepped = alice.call("morse", json!({"texto": "sos"})).await;
    assert_eq!(stepped.status, 403, "{stepped:#?}");
    let challenge = stepped.header("www-authenticate").unwrap();
    assert!(
        challenge.contains("error=\"insufficient_scope\""),
        "{challenge}"
    );
    assert!(
        challenge.contains("scope=\"mcp morse:write\""),
        "{challenge}"
    );
    assert!(
        challenge.contains("rule `toolScopes[morse]`"),
        "{challenge}"
    );

    // On the legacy SSE transport the answer is a tool error naming the
    // scope, on the stream.
    let legacy_call = |tool: &str, argument: &str| {
        run(&[
            "call",
            "--url",
            &format!("{base}/sse"),
            "--transport",
            "sse",
            "--header",
            &format!("Authorization: Bearer {mcp}"),
            tool,
            argument,
        ])
    };
    let legacy = legacy_call("morse", "texto=sos");
    assert_ne!(legacy.code(), 0, "{legacy:?}");
    assert!(
        legacy
            .stderr
            .contains("the tool `morse` needs the scope morse:write"),
        "{legacy:?}"
    );

    // A call it lets in on the legacy transport is logged as alice's.
    let legacy = legacy_call("echo", "texto=hola");
    assert_eq!(legacy.code(), 0, "{legacy:?}");

    let writer = issuer
        .sign(&issuer.claims("alice", AUDIENCE, "mcp morse:write"))
        .unwrap();
    let mut alice = Session::new(base.clone(), Some(&writer));
    assert_eq!(alice.open().await.status, 200);
    let encoded = alice.call("morse", json!({"texto": "sos"})).await.message();
    assert_eq!(encoded["result"]["content"][0]["text"], "... --- ...");

    let text = metrics(&base, Some(&writer)).await;
    assert_eq!(
        metric(&text, "nexo_serve_refused_total{reason=\"auth\"}"),
        6.0,
        "{text}"
    );
    assert_eq!(
        metric(&text, "nexo_serve_refused_total{reason=\"origin\"}"),
        1.0,
        "{text}"
    );
    assert_eq!(
        metric(&text, "nexo_serve_refused_total{reason=\"scope\"}"),
        3.0,
        "{text}"
    );

    // The tool-call log: the caller of each call, on both transports, and
    // the step-up refusals with their reason.
    let log = std::fs::read_to_string(dir.path().join("calls.jsonl")).unwrap();
    let seen: Vec<(String, String, String)> = log
        .lines()
        .map(|line| {
            let line: Value = serde_json::from_str(line).unwrap();
            let text = |key: &str| line[key].as_str().unwrap_or("-").to_owned();
            (text("tool"), text("subject"), text("refused"))
        })
        .collect();
    let expected = [
        ("echo", "alice", "-"),
        ("morse", "alice", "scope"),
        ("morse", "alice", "scope"),
        ("echo", "alice", "-"),
        ("morse", "alice", "-"),
    ]
    .map(|(tool, subject, refused)| (tool.to_owned(), subject.to_owned(), refused.to_owned()));
    assert_eq!(seen, expected, "{log}");
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[tokio::test]
async fn serve_oauth_follows_the_issuers_key_rotation_without_hammering_it() {
    let issuer = AuthServer::start().unwrap();
    let dir = TempDir::new("serve-auth-rotation");
    let server = oauth_server(&dir, issuer.issuer(), AUDIENCE, "127.0.0.1:0");
    let base = server.base_url();
    let status = |token: String| {
        let base = base.clone();
        async move { Session::new(base, Some(&token)).open().await.status }
    };
    let claims = issuer.claims("alice", AUDIENCE, "mcp");
    assert_eq!(status(issuer.sign(&claims).unwrap()).await, 200);
    assert_eq!(issuer.jwks_fetches(), 1);
    // Made-up key ids do not make the server fetch the key set each time.
    for _ in 0..5 {
        assert_eq!(
            status(issuer.sign_as("made-up", &claims).unwrap()).await,
            401
        );
    }
    assert_eq!(issuer.jwks_fetches(), 1);
    issuer.rotate("key-2").unwrap();
    // Past the shortest time between two fetches, a token of the new key
    // makes the server fetch the key set again, and is let in.
    tokio::time::sleep(Duration::from_millis(10_500)).await;
    assert_eq!(status(issuer.sign(&claims).unwrap()).await, 200);
    assert_eq!(issuer.jwks_fetches(), 2);
}

/// The authorization URLs a client shows on `stderr`, as they come; every
/// line is also kept in `seen`, for a failure's message.
fn authorization_urls(
    stderr: impl std::io::Read + Send + 'static,
    seen: Arc<std::sync::Mutex<String>>,
) -> tokio::sync::mpsc::UnboundedReceiver<String> {
    let (found, urls) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            seen.lock().unwrap().push_str(&format!("{line}\n"));
            let url = line
                .find("http://")
                .map(|start| line[start..].split_whitespace().next().unwrap_or_default());
            if let Some(url) = url.filter(|url| url.contains("/authorize?")) {
                let _ = found.send(url.to_owned());
            }
        }
    });
    urls
}

/// Acts as the browser of the client `proc` for every authorization URL
/// it shows, until it ends: its stdout and the URLs, in order. Its stderr
/// lines go to `seen`.
async fn authorize_until_done(
    proc: &mut Proc,
    seen: Arc<std::sync::Mutex<String>>,
) -> (String, Vec<String>) {
    let mut urls = authorization_urls(proc.child().stderr.take().unwrap(), seen);
    let mut stdout = proc.child().stdout.take().unwrap();
    let mut output = tokio::task::spawn_blocking(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut text).unwrap();
        text
    });
    let mut asked = Vec::new();
    loop {
        tokio::select! {
            Some(url) = urls.recv() => {
                authorize_as_a_browser(&url).await;
                asked.push(url);
            }
            output = &mut output => return (output.unwrap(), asked),
        }
    }
}

/// Acts as the person's browser: follows `url` to the authorization
/// server, and its redirect back to nexo's loopback listener.
async fn authorize_as_a_browser(url: &str) {
    let client = crate::support::http_client()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .unwrap();
    let redirect = client.get(url).send().await.unwrap();
    assert_eq!(redirect.status(), 302);
    let back = redirect.headers()["location"].to_str().unwrap().to_owned();
    let landed = client.get(&back).send().await.unwrap();
    assert_eq!(landed.status(), 200);
}

#[tokio::test]
async fn nexo_call_completes_the_authorization_code_flow_against_serve() {
    let issuer = AuthServer::start().unwrap();
    let dir = TempDir::new("serve-auth-flow");
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let server = oauth_server(&dir, issuer.issuer(), &url, &format!("127.0.0.1:{port}"));
    let mut command = nexo();
    command
        .args(["call", "--url", &url, "morse", "texto=sos", "--json"])
        .env("NEXO_TOKEN_DIR", dir.path().join("tokens"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut proc = Proc::spawn(&mut command, "nexo call with OAuth");
    // The first authorization asks for `mcp` (the 401's scope); calling
    // `morse` then steps up to `mcp morse:write`.
    let (output, asked) = authorize_until_done(&mut proc, Default::default()).await;
    assert!(proc.exit_status().success(), "{output}");
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(asked[0].contains("code_challenge_method=S256"), "{asked:?}");
    assert!(asked[1].contains("morse%3Awrite"), "{asked:?}");
    let result: Value = serde_json::from_str(&output).unwrap_or_else(|error| {
        panic!("not JSON ({error}): {output}; server: {}", server.stderr())
    });
    assert_eq!(result["content"][0]["text"], "... --- ...", "{result}");
    assert_eq!(issuer.registrations(), 1);
    // The token is kept: the next call asks no one.
    let mut again = nexo();
    again
        .args(["call", "--url", &url, "echo", "texto=otra", "--json"])
        .env("NEXO_TOKEN_DIR", dir.path().join("tokens"));
    let again = run_command(again).assert_success().stdout_json();
    assert_eq!(again["content"][0]["text"], "echo: otra");
}

#[tokio::test]
async fn the_inspectors_oauth_client_completes_the_flow_against_serve() {
    let tools = NodeTools::installed();
    let issuer = AuthServer::start().unwrap();
    let dir = TempDir::new("serve-auth-inspector");
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let server = oauth_server(&dir, issuer.issuer(), &url, &format!("127.0.0.1:{port}"));
    let callback = format!("http://127.0.0.1:{}/oauth/callback", free_port());
    let mut command = std::process::Command::new(tools.bin("mcp-inspector"));
    command
        .args(["--cli", "--format", "json", "--method", "tools/call"])
        .args(["--tool-name", "morse", "--tool-arg", "texto=sos"])
        .args(["--callback-url", &callback, &url])
        .env("PATH", tools.path())
        .env("HOME", dir.path().join("home"))
        // Interactive login without a terminal; the browser it opens is
        // `true` (xdg-open's $BROWSER): the test is the browser.
        .env("MCP_AUTO_OPEN_ENABLED", "true")
        .env("BROWSER", "true")
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut proc = Proc::spawn(&mut command, "the Inspector's CLI with OAuth");
    let seen = Arc::default();
    let (output, asked) = authorize_until_done(&mut proc, Arc::clone(&seen)).await;
    let stderr = seen.lock().unwrap().clone();
    assert!(
        proc.exit_status().success(),
        "{output}\n{stderr}\nserver: {}",
        server.stderr()
    );
    assert!(!asked.is_empty(), "{stderr}");
    assert!(asked[0].contains("code_challenge_method=S256"), "{asked:?}");
    assert!(asked[0].contains("resource="), "{asked:?}");
    assert!(output.contains("... --- ..."), "{output}\n{stderr}");
    assert_eq!(issuer.registrations(), 1);
}

#[tokio::test]
async fn rate_limits_are_kept_per_subject_and_answered_with_429() {
    let dir = TempDir::new("serve-auth-limits");
    let tokens = token_file(&dir);
    let log = dir.path().join("calls.jsonl");
    let server = HttpServer::start(&[
        "--token-file",
        &tokens,
        "--rate-limit",
        "2/min",
        "--log",
        log.to_str().unwrap(),
    ]);
    let base = server.base_url();
    let mut first = Session::new(base.clone(), Some(TOKEN));
    assert_eq!(first.open().await.status, 200);
    for _ in 0..2 {
        let answer = first.call("echo", json!({"texto": "hola"})).await;
        assert_eq!(answer.status, 200, "{answer:#?}");
    }
    let limited = first.call("echo", json!({"texto": "hola"})).await;
    assert_eq!(limited.status, 429, "{limited:#?}");
    let retry_after: u64 = limited.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry_after), "{limited:#?}");
    let error = limited.json();
    assert_eq!(error["id"], 2);
    assert_eq!(error["error"]["code"], -32029);
    assert_eq!(error["error"]["data"]["limit"], "rateLimits.perIdentity");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("rate limited by the server"),
        "{error}"
    );
    // Bob has a bucket of his own.
    let mut bob = Session::new(base.clone(), Some(OTHER_TOKEN));
    assert_eq!(bob.open().await.status, 200);
    assert_eq!(bob.call("echo", json!({"texto": "hola"})).await.status, 200);
    let text = metrics(&base, Some(TOKEN)).await;
    assert_eq!(
        metric(&text, "nexo_serve_refused_total{reason=\"rate\"}"),
        1.0,
        "{text}"
    );
    assert_eq!(
        metric(
            &text,
            "nexo_serve_rate_limited_total{limit=\"rateLimits.perIdentity\"}"
        ),
        1.0,
        "{text}"
    );
    // A call without a token is refused at the door.
    let stranger = Session::new(base.clone(), None);
    assert_eq!(
        stranger.call("echo", json!({"texto": "hola"})).await.status,
        401
    );

    // The tool-call log holds every call, who made it, and every refusal.
    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let seen: Vec<(Value, Value, Value)> = lines
        .iter()
        .map(|line| {
            (
                line["subject"].clone(),
                line["refused"].clone(),
                line["is_error"].clone(),
            )
        })
        .collect();
    let first_subject = lines[0]["subject"].clone();
    assert!(first_subject.is_string(), "{lines:#?}");
    assert_eq!(
        seen,
        [
            (first_subject.clone(), Value::Null, json!(false)),
            (first_subject.clone(), Value::Null, json!(false)),
            (first_subject, json!("rate"), json!(true)),
            (json!("bob"), Value::Null, json!(false)),
            (Value::Null, json!("auth"), json!(true)),
        ],
        "{lines:#?}"
    );
    assert!(
        lines.iter().all(|line| line["tool"] == "echo"),
        "{lines:#?}"
    );
}

#[tokio::test]
async fn a_call_answered_on_a_stream_is_timed_to_the_streams_end() {
    let server = HttpServer::serve("everything", &[]);
    let base = server.base_url();
    let mut session = Session::new(base.clone(), None);
    assert_eq!(session.open().await.status, 200);
    // Two 50 ms pauses between its log messages, all on the call's stream.
    let answer = session.call("test_tool_with_logging", json!({})).await;
    assert_eq!(answer.status, 200, "{answer:#?}");
    assert_eq!(
        answer.header("content-type"),
        Some("text/event-stream"),
        "{answer:#?}"
    );
    let text = metrics(&base, None).await;
    let seconds = metric(
        &text,
        "nexo_serve_request_latency_seconds_sum{method=\"tools/call\"}",
    );
    assert!(seconds >= 0.1, "{seconds} s: {text}");
    assert_eq!(
        metric(
            &text,
            "nexo_serve_requests_total{method=\"tools/call\",server=\"everything\",tool=\"test_tool_with_logging\",decision=\"allow\",outcome=\"ok\"}"
        ),
        1.0,
        "{text}"
    );
}

#[tokio::test]
async fn nexo_call_waits_out_a_429s_retry_after() {
    // One call every 10 s: the call right after the test's own waits.
    let server = HttpServer::start(&["--rate-limit", "6/min", "--rate-burst", "1"]);
    let base = server.base_url();
    let mut first = Session::new(base.clone(), None);
    assert_eq!(first.open().await.status, 200);
    assert_eq!(first.call("echo", json!({"texto": "a"})).await.status, 200);
    let url = server.mcp_url();
    let called = tokio::task::spawn_blocking(move || {
        run(&["call", "--url", &url, "echo", "texto=b", "--json"])
    })
    .await
    .unwrap();
    assert_eq!(
        called.assert_success().stdout_json()["content"][0]["text"],
        "echo: b"
    );
    let text = metrics(&base, None).await;
    assert_eq!(
        metric(&text, "nexo_serve_refused_total{reason=\"rate\"}"),
        1.0,
        "{text}"
    );
}

#[test]
fn the_python_sdks_oauth_client_completes_the_flow_against_serve() {
    let issuer = AuthServer::start().unwrap();
    let dir = TempDir::new("serve-auth-python");
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let _server = oauth_server(&dir, issuer.issuer(), &url, &format!("127.0.0.1:{port}"));
    let script = crate::support::repo_root().join("crates/cli/tests/e2e/python/oauth_client.py");
    let output = std::process::Command::new(crate::support::python_sdk())
        .arg(&script)
        .args([&url, "morse", r#"{"texto": "sos"}"#])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "... --- ..."
    );
    assert_eq!(issuer.registrations(), 1);
}

#[test]
fn a_token_travels_over_https_and_opens_the_server() {
    let dir = TempDir::new("serve-auth-https");
    let ca = nexo_testkit::TestCa::new("nexo test CA").unwrap();
    let ca_file = ca.write(dir.path()).unwrap();
    let (cert, key) = ca
        .issue("morse", &["localhost", "127.0.0.1"])
        .unwrap()
        .write(dir.path())
        .unwrap();
    let tokens = token_file(&dir);
    let server = HttpServer::start(&[
        "--token-file",
        &tokens,
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ]);
    let url = format!("https://localhost:{}/mcp", server.port);
    let call = |token: &str| {
        let mut call = nexo();
        call.args(["call", "--url", &url, "--header"])
            .arg(format!("Authorization: Bearer {token}"))
            .args(["morse", "texto=sos", "--json"])
            .env("SSL_CERT_FILE", &ca_file);
        run_command(call)
    };
    let called = call(TOKEN);
    assert_eq!(
        called.assert_success().stdout_json()["content"][0]["text"],
        "... --- ..."
    );
    let refused = call("not-a-token-of-the-file");
    assert_ne!(refused.code(), 0, "{refused:?}");
    assert!(
        refused.stderr.contains("refused the authorization given"),
        "{refused:?}"
    );
}
