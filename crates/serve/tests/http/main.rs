//! nexo-serve's HTTP application as a tower service: what one request
//! decides (who may call: `Origin`, `Host`, CORS; the body limit; the health
//! document) is checked by calling [`nexo_serve::app`] with `oneshot`,
//! without a socket or a process; what needs a connection (a client that is
//! still sending when its body is refused) is checked on 127.0.0.1 with a
//! real Python client. The server behind it is [`Fixture`], a one-tool rmcp
//! handler, since serve knows no particular server. [`trace`] checks the
//! `--trace` records of whole exchanges on both HTTP transports;
//! [`sessions`], a 2025-era session served by another application sharing
//! its session store; [`tls`], HTTPS on 127.0.0.1 with a test CA; [`ids`],
//! request ids rmcp would round.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail loudly, with the value that broke them"
)]

mod calllog;
mod health;
mod ids;
mod limits;
mod policy;
mod sessions;
mod tls;
mod trace;

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use bytes::Bytes;
use http_body_util::BodyExt;
use nexo_serve::{
    CallLogger, HostPolicy, HttpApp, HttpOptions, OriginPolicy, SharedSessions, TraceTap, app,
};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// A 2025-era `initialize` without `clientInfo`, as seed 000's client sent.
pub const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}"#;
/// The `Host` of a request to a server listening on loopback.
pub const LOOPBACK_HOST: &str = "127.0.0.1:8000";

/// The server behind the application: one tool, `echo(text)`.
#[derive(Debug, Clone)]
pub struct Fixture;

pub fn echo_tool() -> Tool {
    let schema = json!({
        "type": "object",
        "properties": { "text": { "type": "string" } },
        "required": ["text"],
    });
    let Value::Object(schema) = schema else {
        unreachable!("a literal object")
    };
    Tool::new("echo", "Says the text back", schema)
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("serve-fixture", "1.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![echo_tool()]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = request
            .arguments
            .and_then(|arguments| arguments.get("text")?.as_str().map(str::to_owned))
            .unwrap_or_default();
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

/// The application with `--allow-origin` values `origins` and a body limit
/// of `max_body` bytes, as if listening on 127.0.0.1.
pub fn application(origins: &[&str], max_body: usize) -> HttpApp<Fixture> {
    let origins: Vec<String> = origins.iter().map(|origin| (*origin).to_owned()).collect();
    build(OriginPolicy::new(&origins), max_body, None, None, None)
}

/// The application with the defaults and a tool-call log.
pub fn application_with(logger: Option<CallLogger>) -> HttpApp<Fixture> {
    build(
        OriginPolicy::default(),
        nexo_serve::DEFAULT_MAX_BODY,
        logger,
        None,
        None,
    )
}

/// The application with the defaults and a trace.
pub fn application_traced(trace: TraceTap) -> HttpApp<Fixture> {
    build(
        OriginPolicy::default(),
        nexo_serve::DEFAULT_MAX_BODY,
        None,
        Some(trace),
        None,
    )
}

/// The application with the defaults, its sessions kept in `sessions` too.
pub fn application_sharing(sessions: SharedSessions) -> HttpApp<Fixture> {
    build(
        OriginPolicy::default(),
        nexo_serve::DEFAULT_MAX_BODY,
        None,
        None,
        Some(sessions),
    )
}

fn build(
    origins: OriginPolicy,
    max_body: usize,
    logger: Option<CallLogger>,
    trace: Option<TraceTap>,
    sessions: Option<SharedSessions>,
) -> HttpApp<Fixture> {
    let options = HttpOptions {
        origins,
        hosts: HostPolicy::new(&[], std::net::Ipv4Addr::LOCALHOST.into()),
        max_body,
        tools: vec![echo_tool()],
        logger,
        trace,
        sessions,
    };
    app(Fixture, options, CancellationToken::new())
}

/// A request to `path` with `headers`; `Host` is [`LOOPBACK_HOST`] unless
/// `headers` name another.
pub fn request(method: Method, path: &str, headers: &[(&str, &str)], body: Body) -> Request<Body> {
    let mut builder = Request::builder().method(method).uri(path);
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        builder = builder.header("Host", LOOPBACK_HOST);
    }
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(body).unwrap()
}

/// A POST of `body` to `/mcp` asking for JSON.
pub fn post(body: &str, headers: &[(&str, &str)]) -> Request<Body> {
    let mut all = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json"),
    ];
    all.extend_from_slice(headers);
    request(Method::POST, "/mcp", &all, Body::from(body.to_owned()))
}

/// What came back, body read whole.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|error| panic!("not JSON ({error}): {self:#?}"))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name)?.to_str().ok()
    }

    /// A header's comma-separated values, lower-cased.
    pub fn listed(&self, name: &str) -> Vec<String> {
        self.header(name)
            .unwrap_or_else(|| panic!("no {name}: {self:#?}"))
            .split(',')
            .map(|value| value.trim().to_ascii_lowercase())
            .collect()
    }
}

/// Calls the application once.
pub async fn send(app: &HttpApp<Fixture>, request: Request<Body>) -> Reply {
    let response = app.clone().oneshot(request).await.unwrap();
    let (parts, body) = response.into_parts();
    Reply {
        status: parts.status,
        headers: parts.headers,
        body: body.collect().await.unwrap().to_bytes(),
    }
}
