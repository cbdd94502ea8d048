//! OAuth over time, through the `nexo` binary (issue 39, point 4): a
//! protected MCP server and its authorization server played here (axum on
//! 127.0.0.1) that rotates refresh tokens and treats a spent one presented
//! again as the theft OAuth 2.1 says it is; the test plays the browser
//! that comes back to nexo's loopback listener.
//!
//! Signed in once, two `nexo` processes refresh at once, over and over
//! (every access token lives one second, so every request refreshes): both
//! finish without asking for a browser and no refresh token is ever spent
//! twice. Then `nexo logout` revokes (RFC 7009) and deletes, and says so
//! when the server offers no revocation or refuses it.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::support::{self, Proc, Run, TempDir};

/// How the authorization server answers revocation requests.
const REVOKES: u8 = 0;
const NO_REVOCATION_ENDPOINT: u8 = 1;
const REVOCATION_FAILS: u8 = 2;

#[derive(Default)]
struct Server {
    base: String,
    revocation: AtomicU8,
    /// access token -> when it stops being accepted
    access: Mutex<HashMap<String, Instant>>,
    /// refresh tokens that may still be spent
    live_refresh: Mutex<HashSet<String>>,
    spent_refresh: Mutex<HashSet<String>>,
    /// What each authorization asked for.
    scopes_asked: Mutex<Vec<String>>,
    refreshes: AtomicUsize,
    /// Spent refresh tokens presented again.
    reuses: AtomicUsize,
    /// (token, token_type_hint) of every revocation.
    revoked: Mutex<Vec<(String, String)>>,
    next: AtomicUsize,
}

type Shared = Arc<Server>;

impl Server {
    /// A fresh pair: an access token that lives one second, and a refresh token.
    fn issue(&self) -> Value {
        let n = self.next.fetch_add(1, Ordering::SeqCst);
        let (access, refresh) = (format!("access-{n}"), format!("refresh-{n}"));
        self.access
            .lock()
            .unwrap()
            .insert(access.clone(), Instant::now() + Duration::from_secs(1));
        self.live_refresh.lock().unwrap().insert(refresh.clone());
        json!({
            "access_token": access, "token_type": "Bearer", "expires_in": 1,
            "refresh_token": refresh, "scope": "read offline_access"
        })
    }
}

fn challenge(server: &Server) -> String {
    format!(
        r#"Bearer resource_metadata="{}/.well-known/oauth-protected-resource/mcp""#,
        server.base
    )
}

async fn mcp(State(server): State<Shared>, headers: HeaderMap, body: String) -> Response {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .unwrap_or_default();
    let valid = server
        .access
        .lock()
        .unwrap()
        .get(token)
        .is_some_and(|until| Instant::now() < *until);
    if !valid {
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, challenge(&server))],
        )
            .into_response();
    }
    let message: Value = serde_json::from_str(&body).unwrap_or_default();
    let method = message["method"].as_str().unwrap_or_default();
    if method.starts_with("notifications/") {
        return StatusCode::ACCEPTED.into_response();
    }
    let result = match method {
        "initialize" => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "protected", "version": "1"}
        }),
        "tools/list" => json!({"tools": [{"name": "write", "inputSchema": {"type": "object"}}]}),
        "ping" => json!({}),
        _ => {
            let error = json!({"code": -32601, "message": "method not found"});
            return Json(json!({"jsonrpc": "2.0", "id": message["id"], "error": error}))
                .into_response();
        }
    };
    Json(json!({"jsonrpc": "2.0", "id": message["id"], "result": result})).into_response()
}

async fn resource_metadata(State(server): State<Shared>) -> Json<Value> {
    Json(json!({
        "resource": format!("{}/mcp", server.base),
        "authorization_servers": [server.base],
        "scopes_supported": ["read"]
    }))
}

async fn server_metadata(State(server): State<Shared>) -> Json<Value> {
    let base = &server.base;
    let mut metadata = json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "scopes_supported": ["read", "offline_access"],
        "response_types_supported": ["code"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "authorization_response_iss_parameter_supported": true
    });
    if server.revocation.load(Ordering::SeqCst) != NO_REVOCATION_ENDPOINT {
        metadata["revocation_endpoint"] = json!(format!("{base}/revoke"));
    }
    Json(metadata)
}

async fn register(Json(request): Json<Value>) -> Response {
    (
        StatusCode::CREATED,
        Json(json!({"client_id": "client-1", "redirect_uris": request["redirect_uris"]})),
    )
        .into_response()
}

/// Approves at once, as a person who clicks "allow" does.
async fn authorize(
    State(server): State<Shared>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    server
        .scopes_asked
        .lock()
        .unwrap()
        .push(query.get("scope").cloned().unwrap_or_default());
    let location = format!(
        "{}?code=the-code&state={}&iss={}",
        query["redirect_uri"], query["state"], server.base
    );
    (StatusCode::FOUND, [(header::LOCATION, location)]).into_response()
}

async fn token(State(server): State<Shared>, body: String) -> Response {
    let form: HashMap<String, String> = url::form_urlencoded::parse(body.as_bytes())
        .into_owned()
        .collect();
    match form.get("grant_type").map(String::as_str) {
        Some("authorization_code") => Json(server.issue()).into_response(),
        Some("refresh_token") => {
            // Slow enough that two processes refreshing at once overlap.
            tokio::time::sleep(Duration::from_millis(200)).await;
            let presented = form.get("refresh_token").cloned().unwrap_or_default();
            if server.live_refresh.lock().unwrap().remove(&presented) {
                server.spent_refresh.lock().unwrap().insert(presented);
                server.refreshes.fetch_add(1, Ordering::SeqCst);
                Json(server.issue()).into_response()
            } else {
                if server.spent_refresh.lock().unwrap().contains(&presented) {
                    server.reuses.fetch_add(1, Ordering::SeqCst);
                }
                (
                    StatusCode::BAD_REQUEST,
                    Json(json!({"error": "invalid_grant"})),
                )
                    .into_response()
            }
        }
        _ => StatusCode::BAD_REQUEST.into_response(),
    }
}

async fn revoke(State(server): State<Shared>, body: String) -> Response {
    if server.revocation.load(Ordering::SeqCst) == REVOCATION_FAILS {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    let form: HashMap<String, String> = url::form_urlencoded::parse(body.as_bytes())
        .into_owned()
        .collect();
    let token = form.get("token").cloned().unwrap_or_default();
    server.live_refresh.lock().unwrap().remove(&token);
    server.access.lock().unwrap().remove(&token);
    let hint = form.get("token_type_hint").cloned().unwrap_or_default();
    server.revoked.lock().unwrap().push((token, hint));
    StatusCode::OK.into_response()
}

fn start() -> Shared {
    let (listener, base) = support::loopback();
    let server = Arc::new(Server {
        base,
        ..Server::default()
    });
    let app = axum::Router::new()
        .route(
            "/mcp",
            post(mcp).get(|| async { StatusCode::METHOD_NOT_ALLOWED }),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(resource_metadata),
        )
        .route(
            "/.well-known/oauth-authorization-server",
            get(server_metadata),
        )
        .route("/register", post(register))
        .route("/authorize", get(authorize))
        .route("/token", post(token))
        .route("/revoke", post(revoke))
        .with_state(server.clone());
    support::serve_router(listener, app);
    server
}

fn nexo(tokens: &TempDir, args: &[&str]) -> std::process::Command {
    let mut command = support::nexo();
    command.env("NEXO_TOKEN_DIR", tokens.path()).args(args);
    command
}

/// `nexo tools` signed in as a person does: the URL nexo shows is opened
/// by a "browser" that follows the authorization server's redirect back
/// to nexo's loopback listener.
fn sign_in(server: &Server, tokens: &TempDir) {
    let url = format!("{}/mcp", server.base);
    let mut command = nexo(tokens, &["tools", "--url", &url]);
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut proc = Proc::spawn(&mut command, "nexo tools");
    // stderr is read to its end, the authorization URL handed over when seen.
    let stderr = BufReader::new(proc.child().stderr.take().unwrap());
    let (url_tx, url_rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        for line in stderr.lines().map_while(Result::ok) {
            if line.trim().starts_with("http") {
                let _ = url_tx.send(line.trim().to_owned());
            }
            text.push_str(&line);
            text.push('\n');
        }
        text
    });
    let Ok(shown) = url_rx.recv_timeout(support::PATIENCE) else {
        drop(proc);
        panic!(
            "nexo showed no authorization URL: {}",
            reader.join().unwrap()
        );
    };
    assert!(
        shown.starts_with(&format!("{}/authorize?", server.base)),
        "{shown}"
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let came_back = runtime.block_on(async {
        support::http_client()
            .build()
            .unwrap()
            .get(&shown)
            .send()
            .await
            .unwrap()
            .status()
    });
    assert_eq!(came_back, reqwest::StatusCode::OK);
    let status = proc.exit_status();
    let stderr = reader.join().unwrap();
    assert!(
        status.success(),
        "the signed-in `nexo tools` failed: {status:?}\n{stderr}"
    );
}

fn token_files(tokens: &TempDir) -> Vec<String> {
    let mut files = Vec::new();
    for dir in std::fs::read_dir(tokens.path())
        .into_iter()
        .flatten()
        .flatten()
    {
        for file in std::fs::read_dir(dir.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = file.file_name().to_string_lossy().into_owned();
            if name.ends_with(".json") {
                files.push(name);
            }
        }
    }
    files
}

#[test]
fn issue_39_two_processes_refresh_rotating_tokens_and_logout_revokes() {
    let server = start();
    let tokens = TempDir::new("oauth-rotation");
    let url = format!("{}/mcp", server.base);
    sign_in(&server, &tokens);
    assert_eq!(
        server.scopes_asked.lock().unwrap().as_slice(),
        ["read offline_access"],
        "offline_access is asked for where the authorization server offers it"
    );
    assert_eq!(token_files(&tokens).len(), 1);

    // Two processes at once, each refreshing before every request.
    let refreshed_before = server.refreshes.load(Ordering::SeqCst);
    let children: Vec<_> = (0..2)
        .map(|_| {
            let command = nexo(&tokens, &["tools", "--url", &url, "--json"]);
            std::thread::spawn(move || support::run_command(command))
        })
        .collect();
    let runs: Vec<Run> = children.into_iter().map(|c| c.join().unwrap()).collect();
    for run in &runs {
        run.assert_success();
        assert!(
            !run.stderr.contains("open this URL"),
            "a process had to sign in again: {run:#?}"
        );
        assert_eq!(run.stdout_json()["tools"][0]["name"], "write", "{run:#?}");
    }
    assert_eq!(
        server.reuses.load(Ordering::SeqCst),
        0,
        "a spent refresh token was presented again"
    );
    assert!(
        server.refreshes.load(Ordering::SeqCst) >= refreshed_before + 2,
        "each process refreshes its expired token"
    );

    // Logging out revokes the live tokens, then deletes them.
    let logout = support::run_command(nexo(&tokens, &["logout", "--url", &url, "--json"]));
    logout.assert_success();
    let record = &logout.stdout_json()["records"][0];
    assert_eq!(record["issuer"], server.base.as_str());
    assert_eq!(record["revoked"], true, "{logout:#?}");
    assert_eq!(record["tokens"], json!(["refresh_token", "access_token"]));
    let revoked = server.revoked.lock().unwrap().clone();
    assert_eq!(revoked.len(), 2, "{revoked:?}");
    assert_eq!(revoked[0].1, "refresh_token");
    assert!(
        server.live_refresh.lock().unwrap().is_empty(),
        "the live refresh token was not the one revoked: {revoked:?}"
    );
    assert!(token_files(&tokens).is_empty());
    let again = support::run_command(nexo(&tokens, &["logout", "--url", &url]));
    again.assert_success();
    assert!(
        again.stdout.contains("no tokens are kept for"),
        "{again:#?}"
    );

    // No revocation offered: deleted all the same, and said so.
    sign_in(&server, &tokens);
    server
        .revocation
        .store(NO_REVOCATION_ENDPOINT, Ordering::SeqCst);
    let unrevoked = support::run_command(nexo(&tokens, &["logout", "--url", &url]));
    unrevoked.assert_success();
    assert!(
        unrevoked.stdout.contains("names no revocation endpoint")
            && unrevoked
                .stdout
                .contains("stay valid there until they expire"),
        "{unrevoked:#?}"
    );
    assert!(token_files(&tokens).is_empty());

    // Revocation refused: deleted, and exit 4 with what it means.
    server.revocation.store(REVOKES, Ordering::SeqCst);
    sign_in(&server, &tokens);
    server.revocation.store(REVOCATION_FAILS, Ordering::SeqCst);
    let refused = support::run_command(nexo(&tokens, &["logout", "--url", &url]));
    assert_eq!(refused.code(), 4, "{refused:#?}");
    assert_eq!(refused.error_line()["error"]["code"], "revocation_failed");
    assert!(token_files(&tokens).is_empty());
}
