//! OAuth end to end against a small protected MCP server and authorization
//! server written here (axum on 127.0.0.1): discovery from the 401, dynamic
//! registration, PKCE S256 checked by the server, the token stored per
//! issuer in a temporary directory and reused, step-up on 403, and the
//! retry limit when the server never grants enough.

#![expect(
    clippy::unwrap_used,
    reason = "tests fail loudly, with the value that broke them"
)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use nexo_client::auth::{ClientIdentity, HeadlessAgent, OAuthOptions, TokenStore};
use nexo_client::{ConnectOptions, Era, ErrorKind, HttpTransport, Target};
use serde_json::{Value, json};
use sha2::Digest as _;

/// What the test server has seen and handed out.
#[derive(Default)]
struct Server {
    base: String,
    /// The scope a tool call needs; `None` makes every call a 403.
    call_scope: Option<&'static str>,
    authorizations: AtomicUsize,
    registrations: AtomicUsize,
    /// code -> (PKCE challenge, scope)
    codes: Mutex<HashMap<String, (String, String)>>,
    /// token -> scope
    tokens: Mutex<HashMap<String, String>>,
}

type Shared = Arc<Server>;

fn challenge(server: &Server, extra: &str) -> String {
    format!(
        r#"Bearer resource_metadata="{}/.well-known/oauth-protected-resource/mcp"{extra}"#,
        server.base
    )
}

async fn mcp(State(server): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let message: Value = serde_json::from_slice(&body).unwrap_or_default();
    let method = message["method"].as_str().unwrap_or_default().to_owned();
    let scope = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .and_then(|token| server.tokens.lock().unwrap().get(token).cloned());
    let Some(scope) = scope else {
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, challenge(&server, ""))],
        )
            .into_response();
    };
    if method.starts_with("notifications/") {
        return StatusCode::ACCEPTED.into_response();
    }
    if method == "tools/call" {
        let enough = server
            .call_scope
            .is_some_and(|needed| scope.split(' ').any(|s| s == needed));
        if !enough {
            let needed = server.call_scope.unwrap_or("admin");
            let extra = format!(r#", error="insufficient_scope", scope="{needed}""#);
            return (
                StatusCode::FORBIDDEN,
                [(header::WWW_AUTHENTICATE, challenge(&server, &extra))],
            )
                .into_response();
        }
    }
    let result = match method.as_str() {
        "initialize" => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "protected", "version": "1"}
        }),
        "tools/list" => json!({"tools": [{"name": "write", "inputSchema": {"type": "object"}}]}),
        "tools/call" => json!({"content": [{"type": "text", "text": "written"}]}),
        _ => json!({}),
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
    Json(json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "response_types_supported": ["code"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "authorization_response_iss_parameter_supported": true
    }))
}

async fn register(State(server): State<Shared>, Json(request): Json<Value>) -> Response {
    server.registrations.fetch_add(1, Ordering::SeqCst);
    (
        StatusCode::CREATED,
        Json(json!({"client_id": "client-1", "redirect_uris": request["redirect_uris"]})),
    )
        .into_response()
}

async fn authorize(
    State(server): State<Shared>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let n = server.authorizations.fetch_add(1, Ordering::SeqCst);
    assert_eq!(
        query.get("code_challenge_method").map(String::as_str),
        Some("S256")
    );
    assert_eq!(query.get("resource"), Some(&format!("{}/mcp", server.base)));
    let code = format!("code-{n}");
    server.codes.lock().unwrap().insert(
        code.clone(),
        (
            query["code_challenge"].clone(),
            query.get("scope").cloned().unwrap_or_default(),
        ),
    );
    let location = format!(
        "{}?code={code}&state={}&iss={}",
        query["redirect_uri"], query["state"], server.base
    );
    (StatusCode::FOUND, [(header::LOCATION, location)]).into_response()
}

async fn token(State(server): State<Shared>, body: Bytes) -> Response {
    let form: HashMap<String, String> = url::form_urlencoded::parse(&body).into_owned().collect();
    let Some((challenge, scope)) = server.codes.lock().unwrap().remove(&form["code"]) else {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": "invalid_grant"})),
        )
            .into_response();
    };
    let digest = sha2::Sha256::digest(form["code_verifier"].as_bytes());
    let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest);
    assert_eq!(computed, challenge, "PKCE S256 verifier does not match");
    let token = format!("token-{}", form["code"]);
    server
        .tokens
        .lock()
        .unwrap()
        .insert(token.clone(), scope.clone());
    Json(json!({"access_token": token, "token_type": "Bearer", "expires_in": 3600, "scope": scope}))
        .into_response()
}

async fn start(call_scope: Option<&'static str>) -> Shared {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let server = Arc::new(Server {
        base,
        call_scope,
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
        .with_state(server.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    server
}

fn options(store: TokenStore) -> ConnectOptions {
    ConnectOptions {
        timeout: Duration::from_secs(10),
        era: Era::Initialize,
        oauth: Some(OAuthOptions {
            store,
            agent: Arc::new(HeadlessAgent::new(Duration::from_secs(10)).unwrap()),
            identity: ClientIdentity::default(),
        }),
        ..ConnectOptions::default()
    }
}

fn target(server: &Server) -> Target {
    Target::Url {
        url: format!("{}/mcp", server.base).into(),
        transport: HttpTransport::Http,
        headers: Vec::new(),
    }
}

#[tokio::test]
async fn authorizes_steps_up_and_reuses_the_stored_token() {
    let server = start(Some("write")).await;
    let dir = tempfile::tempdir().unwrap();
    let session = nexo_client::connect(&target(&server), &options(TokenStore::in_dir(dir.path())))
        .await
        .unwrap();
    assert_eq!(server.authorizations.load(Ordering::SeqCst), 1);
    let tools = session.list_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    let result = session
        .call_tool("write", serde_json::Map::new())
        .await
        .unwrap();
    assert_eq!(result.is_error, None);
    // The 403 stepped up with the same client, asking for both scopes.
    assert_eq!(server.authorizations.load(Ordering::SeqCst), 2);
    assert_eq!(server.registrations.load(Ordering::SeqCst), 1);
    let granted: Vec<String> = server.tokens.lock().unwrap().values().cloned().collect();
    assert!(
        granted.iter().any(|scope| scope == "read write"),
        "{granted:?}"
    );
    session.close().await;

    let issuer_dir = std::fs::read_dir(dir.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let file = std::fs::read_dir(issuer_dir.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(file.metadata().unwrap().permissions().mode() & 0o777, 0o600);
    }

    // A new run finds the token under the issuer and authorizes no more.
    let again = nexo_client::connect(&target(&server), &options(TokenStore::in_dir(dir.path())))
        .await
        .unwrap();
    again
        .call_tool("write", serde_json::Map::new())
        .await
        .unwrap();
    assert_eq!(server.authorizations.load(Ordering::SeqCst), 2);
    again.close().await;
}

#[tokio::test]
async fn stops_stepping_up_when_the_server_never_grants_enough() {
    let server = start(None).await;
    let session = nexo_client::connect(&target(&server), &options(TokenStore::in_memory()))
        .await
        .unwrap();
    let error = session
        .call_tool("write", serde_json::Map::new())
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unauthorized, "{error}");
    let authorizations = server.authorizations.load(Ordering::SeqCst);
    assert!(
        authorizations >= 2,
        "it stepped up at least once: {authorizations} authorizations"
    );
    assert!(authorizations <= 4, "{authorizations} authorizations");
    session.close().await;
}

/// An agent that takes longer than any exchange, as a person in a browser
/// does, before doing what the headless agent does.
struct SlowAgent(HeadlessAgent);

impl nexo_client::auth::AuthorizationAgent for SlowAgent {
    fn redirect_uri(
        &self,
    ) -> futures::future::BoxFuture<'_, Result<String, rmcp::transport::auth::AuthError>> {
        self.0.redirect_uri()
    }

    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<String, rmcp::transport::auth::AuthError>> {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(2500)).await;
            self.0.authorize(authorization_url).await
        })
    }
}

/// Issue 15 (found while testing point 4): the time a person takes in the
/// browser does not count against `--timeout` (a person had 15 s to
/// authorize, the handshake's limit), in the handshake or in a step-up.
#[tokio::test]
async fn issue_15_a_person_may_take_longer_than_the_timeout_to_authorize() {
    let server = start(Some("write")).await;
    let options = ConnectOptions {
        timeout: Duration::from_secs(1),
        era: Era::Initialize,
        oauth: Some(OAuthOptions::new(
            TokenStore::in_memory(),
            Arc::new(SlowAgent(
                HeadlessAgent::new(Duration::from_secs(10)).unwrap(),
            )),
        )),
        ..ConnectOptions::default()
    };
    let session = nexo_client::connect(&target(&server), &options)
        .await
        .unwrap();
    assert_eq!(server.authorizations.load(Ordering::SeqCst), 1);
    assert_eq!(session.list_tools().await.unwrap().len(), 1);
    // A call that needs a larger scope steps up, through the same slow agent.
    let result = session
        .call_tool("write", serde_json::Map::new())
        .await
        .unwrap();
    assert_eq!(result.is_error, None);
    assert_eq!(server.authorizations.load(Ordering::SeqCst), 2);
    session.close().await;
}

/// Issue 16: a supervised server that needs authorization asks no one and
/// registers nothing: it waits in its own state, beside the others, until
/// a person has authorized (here the headless agent, with the same token
/// store) and it is reconnected; then the stored token serves.
#[tokio::test]
async fn issue_16_a_hub_server_waits_for_authorization_without_blocking() {
    use nexo_client::auth::DeferredAgent;
    use nexo_client::hub::{Hub, RestartPolicy, ServerPlan, State, ToolLimits};

    let server = start(None).await;
    let dir = tempfile::tempdir().unwrap();
    let deferred = OAuthOptions::new(TokenStore::in_dir(dir.path()), Arc::new(DeferredAgent));
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let closed_url = format!("http://{}/mcp", closed.local_addr().unwrap());
    drop(closed);
    let plan = |name: &str, target: Target| ServerPlan {
        name: name.to_owned(),
        target,
        limits: ToolLimits::uniform(nexo_client::CallLimits {
            idle: Duration::from_secs(10),
            total: None,
        }),
        log: None,
        oauth: Some(deferred.clone()),
        startup: None,
    };
    let plans = vec![
        plan("protected", target(&server)),
        plan(
            "gone",
            Target::Url {
                url: closed_url.into(),
                transport: HttpTransport::Http,
                headers: Vec::new(),
            },
        ),
    ];
    let base = ConnectOptions {
        timeout: Duration::from_secs(10),
        era: Era::Initialize,
        ..ConnectOptions::default()
    };
    // No browser flow was started (no registration, no authorization
    // below): the hub did not wait for a person.
    let hub = Hub::start(plans, base, RestartPolicy::default()).await;
    let status = hub.status();
    assert_eq!(status[0].state, State::NeedsAuthorization, "{status:?}");
    let error = status[0].last_error.as_ref().unwrap();
    assert_eq!(error.kind(), ErrorKind::Unauthorized, "{error}");
    assert_ne!(status[1].state, State::Connected, "{status:?}");
    assert_eq!(server.registrations.load(Ordering::SeqCst), 0);
    assert_eq!(server.authorizations.load(Ordering::SeqCst), 0);

    // A person authorizes, with the same store.
    nexo_client::connect(&target(&server), &options(TokenStore::in_dir(dir.path())))
        .await
        .unwrap()
        .close()
        .await;
    assert_eq!(server.authorizations.load(Ordering::SeqCst), 1);

    hub.reconnect("protected").unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while hub.status()[0].state != State::Connected {
        assert!(tokio::time::Instant::now() < deadline, "{:?}", hub.status());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(hub.status()[0].tools, Some(1));
    assert_eq!(server.authorizations.load(Ordering::SeqCst), 1);
    hub.close().await;
}
