//! The page driven through its router (no browser): who may use it, what
//! servers send escaped, forms built from schemas, calls and the trace.

#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use nexo_client::hub::{Hub, RestartPolicy, ServerPlan, ToolLimits};
use nexo_client::{CallLimits, ConnectOptions, InProcess, Target};
use nexo_hint::Report;
use nexo_host::agent::Agent;
use nexo_host::approval::{ApprovalGate, Approvals};
use nexo_host::error::ProviderError;
use nexo_host::long_results::LongResults;
use nexo_host::provider::{Provider, ProviderConfig, ProviderKind, RetryPolicy};
use nexo_host::skills::SkillTrust;
use nexo_host::tool_search::ToolSelection;
use nexo_scripted_llm::{Call, Script, ScriptedLlm, Turn};
use nexo_ui::{Bound, Prepared};
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use tower::ServiceExt;

const HOSTILE: &str = "<script>alert('pwned')</script><img src=x onerror=alert(1)>";

/// A server whose every string is an attack on the page.
#[derive(Clone)]
struct Hostile;

impl ServerHandler for Hostile {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, rmcp::ErrorData> {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": HOSTILE, "default": "\"><script>x</script>"},
                "count": {"type": "integer"},
                "mode": {"type": "string", "enum": ["fast", "<b>slow</b>"]}
            },
            "required": ["text"]
        });
        let serde_json::Value::Object(schema) = schema else {
            unreachable!()
        };
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "steal",
            HOSTILE,
            Arc::new(schema),
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        let arguments = serde_json::Value::Object(request.arguments.unwrap_or_default());
        Ok(CallToolResult::success(vec![
            ContentBlock::text(format!("{HOSTILE} arguments: {arguments}")),
            ContentBlock::image("PHN2Zz48L3N2Zz4=", "text/html"),
            ContentBlock::image("iVBORw0KGgo=", "image/png"),
        ])
        .into())
    }
}

/// A server with an MCP App: `show` draws it, `add` is for the app alone,
/// `secret` for the model alone; its document asks for one origin to
/// reach, and tries to loosen the policy.
#[derive(Clone)]
struct WithApp;

const APP: &str = "ui://apps/view";
const APP_DOCUMENT: &str = "<!doctype html><title>the app</title><p>hello from the app</p>";

impl ServerHandler for WithApp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, rmcp::ErrorData> {
        let tool = |name: &'static str, visibility: serde_json::Value| {
            let mut tool = Tool::new(
                name,
                "a tool of the app's",
                Arc::new(serde_json::Map::new()),
            );
            let serde_json::Value::Object(meta) =
                serde_json::json!({"ui": {"resourceUri": APP, "visibility": visibility}})
            else {
                unreachable!()
            };
            tool.meta = Some(rmcp::model::MetaObject(meta));
            tool
        };
        Ok(ListToolsResult::with_all_items(vec![
            tool("show", serde_json::json!(["model", "app"])),
            tool("add", serde_json::json!(["app"])),
            tool("secret", serde_json::json!(["model"])),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        let mut result =
            CallToolResult::success(vec![ContentBlock::text(format!("{} ran", request.name))]);
        result.structured_content = Some(serde_json::json!({"tool": request.name}));
        Ok(result.into())
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, rmcp::ErrorData> {
        assert_eq!(request.uri, APP);
        let serde_json::Value::Object(meta) = serde_json::json!({"ui": {"csp": {
            "connectDomains": ["https://api.example.com", "* 'unsafe-eval'"],
            "resourceDomains": ["https://cdn.example.com; script-src *"],
        }}}) else {
            unreachable!()
        };
        Ok(rmcp::model::ReadResourceResult::new(vec![
            rmcp::model::ResourceContents::text(APP_DOCUMENT, APP)
                .with_mime_type("text/html;profile=mcp-app")
                .with_meta(rmcp::model::MetaObject(meta)),
        ])
        .into())
    }
}

struct Fixture {
    bound: Bound,
    hub: Arc<Hub>,
    gate: Arc<ApprovalGate>,
    requests: Requests,
}

/// How the tests' requests carry the page's tokens.
#[derive(Clone)]
struct Requests {
    cookie: String,
    csrf: String,
    host: String,
}

async fn fixture() -> Fixture {
    fixture_with_model(Err(Report::new(
        nexo_hint::Exit::Usage,
        "usage",
        "no model in this test",
    )))
    .await
}

async fn fixture_with_model(model: Result<String, Report>) -> Fixture {
    let prepared = Prepared::default();
    let plan = |name: &str, target| ServerPlan {
        name: name.to_owned(),
        target,
        limits: ToolLimits::uniform(CallLimits {
            idle: Duration::from_secs(10),
            total: None,
        }),
        log: None,
        oauth: None,
        startup: None,
    };
    let options = ConnectOptions {
        trace: Some(prepared.tracer()),
        ..ConnectOptions::default()
    };
    let hub = Hub::start(
        vec![
            plan(
                "hostile",
                Target::InProcess(InProcess::new("hostile", Hostile)),
            ),
            plan(
                "echo",
                Target::InProcess(InProcess::new("echo", nexo_testkit::Echo)),
            ),
            plan("apps", Target::InProcess(InProcess::new("apps", WithApp))),
        ],
        options,
        RestartPolicy::default(),
    )
    .await;
    let hub = Arc::new(hub);
    // No rule: a tool that is not read-only is asked about.
    let gate = Arc::new(ApprovalGate::new(
        Approvals::new(Vec::new(), None, std::env::temp_dir()),
        HashMap::new(),
        false,
    ));
    let bound = Bound::bind(prepared, hub.clone(), 0, model, gate.clone())
        .await
        .unwrap();
    let url = bound.url();
    let host = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    Fixture {
        requests: Requests {
            cookie: format!("nexo_ui={}", bound.guard().token.expose()),
            csrf: bound.guard().csrf.expose().to_owned(),
            host,
        },
        bound,
        hub,
        gate,
    }
}

impl std::ops::Deref for Fixture {
    type Target = Requests;

    fn deref(&self) -> &Requests {
        &self.requests
    }
}

impl Fixture {
    fn split(self) -> (Bound, Requests) {
        (self.bound, self.requests)
    }

    async fn send(&self, request: Request<Body>) -> (StatusCode, axum::http::HeaderMap, String) {
        let response = self.bound.router().oneshot(request).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let body = axum::body::to_bytes(response.into_body(), 1 << 24)
            .await
            .unwrap();
        (status, headers, String::from_utf8_lossy(&body).into_owned())
    }
}

impl Requests {
    fn get(&self, path: &str) -> Request<Body> {
        Request::get(path)
            .header(header::HOST, &self.host)
            .header(header::COOKIE, &self.cookie)
            .body(Body::empty())
            .unwrap()
    }

    /// One JSON-RPC message of an app, as the page's script relays it.
    fn app_message(&self, app: &str, message: serde_json::Value) -> Request<Body> {
        Request::post(format!("/apps/{app}/rpc"))
            .header(header::HOST, &self.host)
            .header(header::COOKIE, &self.cookie)
            .header(header::ORIGIN, format!("http://{}", self.host))
            .header("x-csrf-token", &self.csrf)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(message.to_string()))
            .unwrap()
    }

    fn post(&self, path: &str, form: &str) -> Request<Body> {
        Request::post(path)
            .header(header::HOST, &self.host)
            .header(header::COOKIE, &self.cookie)
            .header(header::ORIGIN, format!("http://{}", self.host))
            .header("x-csrf-token", &self.csrf)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(form.to_owned()))
            .unwrap()
    }
}

#[tokio::test]
async fn only_the_launch_link_opens_the_page() {
    let page = fixture().await;
    let bare = Request::get("/servers")
        .header(header::HOST, &page.host)
        .body(Body::empty())
        .unwrap();
    let (status, headers, body) = page.send(bare).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert!(headers.contains_key(header::CONTENT_SECURITY_POLICY));

    let wrong = Request::get("/servers?token=0000")
        .header(header::HOST, &page.host)
        .body(Body::empty())
        .unwrap();
    assert_eq!(page.send(wrong).await.0, StatusCode::UNAUTHORIZED);

    let launch = page.bound.url();
    let path = &launch[launch.find("/?").unwrap()..];
    let opened = Request::get(path)
        .header(header::HOST, &page.host)
        .body(Body::empty())
        .unwrap();
    let (status, headers, _) = page.send(opened).await;
    assert!(status.is_redirection(), "{status}");
    assert_eq!(headers[header::LOCATION], "/");
    let cookie = headers[header::SET_COOKIE].to_str().unwrap();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    assert!(cookie.starts_with(&page.cookie), "{cookie}");

    let (status, headers, body) = page.send(page.get("/servers")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let policy = headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
    assert!(
        policy.contains("script-src 'self'") && !policy.contains("unsafe-inline"),
        "{policy}"
    );
    assert_eq!(headers[header::X_FRAME_OPTIONS], "DENY");
    assert!(
        body.contains("hostile") && body.contains("connected"),
        "{body}"
    );
}

#[tokio::test]
async fn rebound_names_foreign_origins_and_forged_posts_are_refused() {
    let page = fixture().await;
    let rebound = Request::get("/servers")
        .header(header::HOST, "evil.example:80")
        .header(header::COOKIE, &page.cookie)
        .body(Body::empty())
        .unwrap();
    assert_eq!(page.send(rebound).await.0, StatusCode::MISDIRECTED_REQUEST);

    let mut foreign = page.get("/servers");
    foreign
        .headers_mut()
        .insert(header::ORIGIN, "http://evil.example".parse().unwrap());
    assert_eq!(page.send(foreign).await.0, StatusCode::FORBIDDEN);

    let mut forged = page.post("/tools/echo/echo", "a:text=hi");
    forged.headers_mut().remove("x-csrf-token");
    assert_eq!(page.send(forged).await.0, StatusCode::FORBIDDEN);

    let mut wrong_token = page.post("/tools/echo/echo", "a:text=hi");
    wrong_token
        .headers_mut()
        .insert("x-csrf-token", "nope".parse().unwrap());
    assert_eq!(page.send(wrong_token).await.0, StatusCode::FORBIDDEN);

    let mut no_origin = page.post("/tools/echo/echo", "a:text=hi");
    no_origin.headers_mut().remove(header::ORIGIN);
    assert_eq!(page.send(no_origin).await.0, StatusCode::FORBIDDEN);

    let (status, _, body) = page.send(page.post("/tools/echo/echo", "a:text=hi")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("hi"), "{body}");
}

#[tokio::test]
async fn hostile_descriptions_and_results_are_shown_as_text() {
    let page = fixture().await;
    for path in ["/tools", "/tools/hostile/steal"] {
        let (status, _, body) = page.send(page.get(path)).await;
        assert_eq!(status, StatusCode::OK, "{path}: {body}");
        assert!(!body.contains("<script>alert"), "{path}: {body}");
        assert!(!body.contains("<img src=x"), "{path}: {body}");
        assert!(!body.contains("<b>slow"), "{path}: {body}");
        assert!(
            body.contains("alert("),
            "{path} should show the text: {body}"
        );
    }
    let (_, _, form) = page.send(page.get("/tools/hostile/steal")).await;
    assert!(form.contains("name=\"a:text\""), "{form}");
    assert!(form.contains("type=\"number\""), "{form}");
    assert!(form.contains("<select"), "{form}");
    assert!(!form.contains("\"><script>x"), "{form}");

    let (_, _, result) = page
        .send(page.post("/tools/hostile/steal", "a:text=%3Cscript%3E&a:count=2"))
        .await;
    assert!(!result.contains("<script>"), "{result}");
    assert!(
        result.contains("&quot;count&quot;:2")
            || result.contains("\"count\":2")
            || result.contains("&quot;count&quot;: 2"),
        "{result}"
    );
    assert_eq!(
        result.matches("<img").count(),
        1,
        "only the PNG is drawn: {result}"
    );
    assert!(result.contains("data:image/png;base64,"), "{result}");

    let (_, _, refused) = page
        .send(page.post("/tools/hostile/steal", "a:text=x&a:count=many"))
        .await;
    assert!(
        refused.contains("error-block") && refused.contains("integer"),
        "{refused}"
    );
    // Issue 38, point 3: the hint is the page's, not a command line's.
    assert!(
        refused.contains("the Tools view shows it")
            && !refused.contains("TARGET")
            && !refused.contains("`nexo "),
        "{refused}"
    );
}

#[tokio::test]
async fn the_trace_shows_the_call_and_exports_trace_lines() {
    let page = fixture().await;
    page.send(page.post("/tools/echo/echo", "a:text=traced"))
        .await;
    let mut body = String::new();
    for _ in 0..50 {
        body = page.send(page.get("/trace")).await.2;
        if body.contains("tools/call") && body.contains("ms</span>") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(body.contains("tools/call"), "{body}");
    let (status, headers, export) = page.send(page.get("/trace.jsonl")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        headers[header::CONTENT_DISPOSITION]
            .to_str()
            .unwrap()
            .contains("attachment")
    );
    let lines: Vec<serde_json::Value> = export
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert!(
        lines
            .iter()
            .any(|line| line["method"] == "tools/call" && line["latency_us"].is_u64()),
        "{export}"
    );
}

/// One request through `router`: its status and body.
async fn send_to(router: &axum::Router, request: Request<Body>) -> (StatusCode, String) {
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), 1 << 24)
        .await
        .unwrap();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// `path` read again until its body is `done` (5 s at most): the last body.
async fn poll(
    router: &axum::Router,
    requests: &Requests,
    path: &str,
    done: impl Fn(&str) -> bool,
) -> String {
    let mut body = String::new();
    for _ in 0..100 {
        body = send_to(router, requests.get(path)).await.1;
        if done(&body) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    body
}

/// The agent of the chat tests: the scripted model, the hub's servers,
/// and no rule, so a tool that is not read-only is asked about.
fn agent<'h>(
    hub: &'h Hub,
    llm: &ScriptedLlm,
    dir: &std::path::Path,
    gate: Arc<ApprovalGate>,
) -> Agent<'h> {
    let provider = Provider::new(ProviderConfig {
        kind: ProviderKind::Anthropic,
        model: "scripted-model".to_owned(),
        base_url: llm.url().to_owned(),
        api_key: Some(nexo_client::secret::Secret::new("test-key")),
        retry: RetryPolicy {
            max_tries: 1,
            first_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(10),
        },
    })
    .unwrap();
    Agent {
        hub,
        provider,
        gate,
        blocked: Vec::new(),
        skills: SkillTrust::default(),
        system: None,
        max_steps: 5,
        max_tokens: 1000,
        long_results: LongResults::new(dir.join("results"), 100_000),
        context_window: 200_000,
        selection: ToolSelection::default(),
        search_share: 0.5,
    }
}

/// A chat turn on the page: the words stream into the conversation, the
/// tool call waits in the inbox (on every view, so a reload keeps it),
/// runs once approved there, and the trace shows the call.
#[tokio::test]
async fn a_chat_turn_asks_its_approval_on_the_page_and_runs_the_tool() {
    let llm = ScriptedLlm::start(Script::new(vec![
        Turn::tool_calls(vec![Call::new(
            "call_1",
            "echo__echo",
            serde_json::json!({"text": "from the <model>"}),
        )]),
        Turn::text("The echo said: from the model."),
    ]))
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let page = fixture_with_model(Ok("scripted-model".to_owned())).await;
    let hub = page.hub.clone();
    let agent = agent(&hub, &llm, dir.path(), page.gate.clone());
    let router = page.bound.router();
    let send = |request: Request<Body>| send_to(&router, request);
    let (bound, requests) = page.split();
    let body = async {
        let (status, _) = send(requests.post("/chat", "text=echo+something")).await;
        assert_eq!(status, StatusCode::ACCEPTED);
        // The question waits in the inbox, on every view.
        let shown = poll(&router, &requests, "/tools", |body| {
            body.contains("hx-post=\"/inbox/")
        })
        .await;
        assert!(shown.contains("echo__echo"), "{shown}");
        assert!(
            !shown.contains("<model>"),
            "the arguments are escaped: {shown}"
        );
        let (_, reloaded) = send(requests.get("/")).await;
        assert!(
            reloaded.contains("hx-post=\"/inbox/"),
            "a reload keeps the question: {reloaded}"
        );
        assert!(reloaded.contains("asked for"), "{reloaded}");
        let id: String = shown
            .split("hx-post=\"/inbox/")
            .nth(1)
            .unwrap()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        let (status, busy) = send(requests.post("/chat", "text=another")).await;
        assert_eq!(status, StatusCode::OK);
        assert!(busy.contains("still answering"), "{busy}");
        let (_, inbox) = send(requests.post(&format!("/inbox/{id}"), "answer=yes")).await;
        assert!(!inbox.contains(&format!("/inbox/{id}\"")), "{inbox}");
        let chat = poll(&router, &requests, "/", |body| {
            body.contains("The echo said")
        })
        .await;
        assert!(chat.contains("The echo said: from the model."), "{chat}");
        assert!(
            chat.contains("done in"),
            "the call's result is shown: {chat}"
        );
        assert!(chat.contains("echo something"), "{chat}");
        let (status, _) = send(requests.post("/chat", "text=again")).await;
        assert_eq!(status, StatusCode::ACCEPTED, "the box takes messages again");
    };
    tokio::select! {
        served = bound.serve(Some(&agent), std::future::pending()) => panic!("the page stopped: {served:?}"),
        () = body => {}
    }
}

/// Without a model the chat says why, and everything else works.
#[tokio::test]
async fn without_a_model_the_chat_says_why() {
    let missing = ProviderError::MissingKey {
        provider: ProviderKind::Anthropic,
    };
    let page = fixture_with_model(Err(Report::of(&missing))).await;
    let (status, _, body) = page.send(page.get("/")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        body.contains("No model is configured") && body.contains("ANTHROPIC_API_KEY"),
        "{body}"
    );
    assert!(!body.contains("id=\"chat-form\""), "{body}");
    let (_, _, refused) = page.send(page.post("/chat", "text=hi")).await;
    assert!(refused.contains("no model"), "{refused}");
    assert!(
        refused.contains("class=\"hint\"") && refused.contains("ANTHROPIC_API_KEY"),
        "{refused}"
    );
}

/// Stopping a turn from the page: the question it waited on goes, the
/// conversation says it was stopped, and the box takes messages again.
#[tokio::test]
async fn a_turn_is_stopped_from_the_page() {
    let llm = ScriptedLlm::start(Script::new(vec![
        Turn::tool_calls(vec![Call::new(
            "call_1",
            "echo__echo",
            serde_json::json!({"text": "never"}),
        )]),
        Turn::text("Fine, something else."),
    ]))
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let page = fixture_with_model(Ok("scripted-model".to_owned())).await;
    let hub = page.hub.clone();
    let agent = agent(&hub, &llm, dir.path(), page.gate.clone());
    let router = page.bound.router();
    let send = |request: Request<Body>| send_to(&router, request);
    let (bound, requests) = page.split();
    let body = async {
        send(requests.post("/chat", "text=call+it")).await;
        let shown = poll(&router, &requests, "/", |body| {
            body.contains("hx-post=\"/inbox/")
        })
        .await;
        assert!(
            shown.contains("hx-post=\"/chat/stop\""),
            "a Stop button while busy: {shown}"
        );
        let (status, _) = send(requests.post("/chat/stop", "")).await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        let after = poll(&router, &requests, "/", |body| {
            body.contains("you stopped this turn") && !body.contains("hx-post=\"/inbox/")
        })
        .await;
        assert!(after.contains("you stopped this turn"), "{after}");
        assert!(
            !after.contains("hx-post=\"/inbox/"),
            "the question went with the turn: {after}"
        );
        let (status, _) = send(requests.post("/chat", "text=something+else")).await;
        assert_eq!(status, StatusCode::ACCEPTED);
        let answered = poll(&router, &requests, "/", |body| {
            body.contains("Fine, something else.")
        })
        .await;
        assert!(answered.contains("Fine, something else."), "{answered}");
    };
    tokio::select! {
        served = bound.serve(Some(&agent), std::future::pending()) => panic!("the page stopped: {served:?}"),
        () = body => {}
    }
}

/// The id of the first app frame in `html`.
fn app_id(html: &str) -> String {
    html.split("data-app=\"")
        .nth(1)
        .unwrap_or_else(|| panic!("no app frame in {html}"))
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect()
}

/// The messages the page answers an app's `message` with.
async fn app_says(
    router: &axum::Router,
    requests: &Requests,
    app: &str,
    message: serde_json::Value,
) -> Vec<serde_json::Value> {
    let (status, body) = send_to(router, requests.app_message(app, message)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    answer["messages"].as_array().unwrap().clone()
}

/// A tool's MCP App is drawn in a frame of the sandbox (another origin),
/// its document served there under a policy built from what it asked,
/// the attempts to loosen it refused and shown.
#[tokio::test]
async fn an_app_is_drawn_in_its_sandbox_under_the_policy_it_asked_for() {
    let page = fixture().await;
    let (sandbox, origin) = page.bound.sandbox();
    let (status, headers, body) = page.send(page.post("/tools/apps/show", "")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let policy = headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
    assert!(policy.contains(&format!("frame-src {origin};")), "{policy}");
    let app = app_id(&body);
    assert!(
        body.contains(&format!("src=\"{origin}/proxy/{app}\""))
            && body.contains("sandbox=\"allow-scripts allow-same-origin\""),
        "{body}"
    );
    assert!(
        body.contains("refused"),
        "the refused entries are shown: {body}"
    );
    assert!(!body.contains("<script"), "{body}");

    let sandbox_host = origin.trim_start_matches("http://").to_owned();
    let get = |path: String, host: &str| {
        Request::get(path)
            .header(header::HOST, host)
            .body(Body::empty())
            .unwrap()
    };
    let response = sandbox
        .clone()
        .oneshot(get(format!("/proxy/{app}"), &sandbox_host))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let proxy_policy = response.headers()[header::CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        proxy_policy.contains(&format!("frame-ancestors http://{}", page.host)),
        "only the page may frame the proxy: {proxy_policy}"
    );

    let response = sandbox
        .clone()
        .oneshot(get(format!("/view/{app}"), &sandbox_host))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let view_policy = response.headers()[header::CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        view_policy.starts_with("default-src 'none';"),
        "{view_policy}"
    );
    assert!(
        view_policy.contains("connect-src https://api.example.com;"),
        "{view_policy}"
    );
    assert!(
        view_policy.contains("script-src 'self' 'unsafe-inline';"),
        "{view_policy}"
    );
    assert!(
        !view_policy.contains("unsafe-eval") && !view_policy.contains(" * "),
        "{view_policy}"
    );
    assert_eq!(
        view_policy.matches("script-src").count(),
        1,
        "{view_policy}"
    );
    let document = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    assert_eq!(document, APP_DOCUMENT.as_bytes());

    let rebound = sandbox
        .clone()
        .oneshot(get(format!("/view/{app}"), "evil.example"))
        .await
        .unwrap();
    assert_eq!(rebound.status(), StatusCode::MISDIRECTED_REQUEST);
    let unknown = sandbox
        .oneshot(get("/view/0123".to_owned(), &sandbox_host))
        .await
        .unwrap();
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);

    // The resource read by hand is drawn too.
    let (_, _, read) = page
        .send(page.post("/resources/apps/read", "uri=ui%3A%2F%2Fapps%2Fview"))
        .await;
    assert!(read.contains("class=\"app-frame\""), "{read}");
}

/// The app is initialized, gets the tool's input and result, and may call
/// only its own server's tools made for apps, each through the approval
/// gate, asked in the inbox as the app's request.
#[tokio::test]
async fn an_app_calls_only_its_own_tools_for_apps_and_each_call_is_approved() {
    let page = fixture().await;
    let router = page.bound.router();
    let (_, _, body) = page.send(page.post("/tools/apps/show", "")).await;
    let app = app_id(&body);
    let requests = page.requests.clone();
    let says = |message: serde_json::Value| app_says(&router, &requests, &app, message);

    let initialized = says(serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "ui/initialize",
        "params": {"protocolVersion": "2026-01-26", "appInfo": {"name": "t", "version": "1"}, "appCapabilities": {}}
    }))
    .await;
    let result = &initialized[0]["result"];
    assert_eq!(initialized[0]["id"], 1);
    assert_eq!(result["protocolVersion"], "2026-01-26");
    assert_eq!(result["hostInfo"]["name"], "nexo");
    assert_eq!(result["hostContext"]["toolInfo"]["tool"]["name"], "show");
    assert_eq!(
        result["hostCapabilities"]["sandbox"]["csp"]["connectDomains"],
        serde_json::json!(["https://api.example.com"])
    );

    let handed =
        says(serde_json::json!({"jsonrpc": "2.0", "method": "ui/notifications/initialized"})).await;
    let methods: Vec<&str> = handed
        .iter()
        .map(|m| m["method"].as_str().unwrap())
        .collect();
    assert_eq!(
        methods,
        [
            "ui/notifications/tool-input",
            "ui/notifications/tool-result"
        ]
    );
    assert_eq!(handed[1]["params"]["structuredContent"]["tool"], "show");

    let refused = says(serde_json::json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "secret", "arguments": {}}
    }))
    .await;
    assert!(
        refused[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not made for apps"),
        "{refused:?}"
    );
    let elsewhere = says(serde_json::json!({
        "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x"}}
    }))
    .await;
    assert!(
        elsewhere[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("offers no tool `echo`"),
        "another server's tool is out of reach: {elsewhere:?}"
    );
    let unknown =
        says(serde_json::json!({"jsonrpc": "2.0", "id": 4, "method": "sampling/createMessage"}))
            .await;
    assert_eq!(unknown[0]["error"]["code"], -32601);

    // `add` is not read-only: the person is asked, as the app's request.
    let call = |id: u64| {
        says(serde_json::json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "add", "arguments": {}}
        }))
    };
    let approve = |answer: &'static str| {
        let (router, requests) = (router.clone(), page.requests.clone());
        async move {
            let shown = poll(&router, &requests, "/tools", |body| {
                body.contains("hx-post=\"/inbox/")
            })
            .await;
            assert!(
                shown.contains("Asked by the app ui://apps/view of apps"),
                "{shown}"
            );
            let question: String = shown
                .split("hx-post=\"/inbox/")
                .nth(1)
                .unwrap()
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            send_to(
                &router,
                requests.post(&format!("/inbox/{question}"), &format!("answer={answer}")),
            )
            .await;
        }
    };
    let (declined, ()) = tokio::join!(call(5), approve("no"));
    assert!(
        declined[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("did not approve"),
        "{declined:?}"
    );
    let (ran, ()) = tokio::join!(call(6), approve("yes"));
    assert_eq!(ran[0]["id"], 6);
    assert_eq!(
        ran[0]["result"]["structuredContent"]["tool"], "add",
        "{ran:?}"
    );

    let gone = app_says(
        &router,
        &page.requests,
        "0123",
        serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}),
    )
    .await;
    assert!(
        gone[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("gone"),
        "{gone:?}"
    );
}

/// In the chat, the model is offered the app's tools that are for the
/// model only; its call's app is drawn under the call, and stays on
/// reload; its written answer is drawn as Markdown.
#[tokio::test]
async fn a_chat_call_draws_its_app_and_app_only_tools_stay_from_the_model() {
    let llm = ScriptedLlm::start(Script::new(vec![
        Turn::tool_calls(vec![Call::new(
            "call_1",
            "apps__show",
            serde_json::json!({}),
        )]),
        Turn::text("**Shown.** <b>raw</b>"),
    ]))
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let page = fixture_with_model(Ok("scripted-model".to_owned())).await;
    let hub = page.hub.clone();
    let agent = agent(&hub, &llm, dir.path(), page.gate.clone());
    let router = page.bound.router();
    let (bound, requests) = page.split();
    let body = async {
        let (status, _) = send_to(&router, requests.post("/chat", "text=show+it")).await;
        assert_eq!(status, StatusCode::ACCEPTED);
        let shown = poll(&router, &requests, "/", |body| {
            body.contains("hx-post=\"/inbox/")
        })
        .await;
        let question: String = shown
            .split("hx-post=\"/inbox/")
            .nth(1)
            .unwrap()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        send_to(
            &router,
            requests.post(&format!("/inbox/{question}"), "answer=yes"),
        )
        .await;
        let chat = poll(&router, &requests, "/", |body| {
            body.contains("<strong>Shown.</strong>") && body.contains("app-frame")
        })
        .await;
        assert!(
            chat.contains("&lt;b&gt;raw&lt;/b&gt;"),
            "the model's answer is Markdown, its HTML shown as text: {chat}"
        );
        assert!(chat.contains("class=\"app-frame\""), "{chat}");
        assert!(chat.contains("ui://apps/view"), "{chat}");
    };
    tokio::select! {
        served = bound.serve(Some(&agent), std::future::pending()) => panic!("the page stopped: {served:?}"),
        () = body => {}
    }
    let offered: Vec<String> = llm.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|tool| tool["name"].as_str().or(tool["function"]["name"].as_str()))
        .map(str::to_owned)
        .collect();
    assert!(
        offered.iter().any(|name| name == "apps__show"),
        "{offered:?}"
    );
    assert!(
        offered.iter().any(|name| name == "apps__secret"),
        "{offered:?}"
    );
    assert!(
        !offered.iter().any(|name| name == "apps__add"),
        "{offered:?}"
    );
}
