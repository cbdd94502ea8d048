//! MCP Apps (the `io.modelcontextprotocol/ui` extension, revision
//! 2026-01-26): a tool may name an interface, a `ui://` resource of HTML
//! (`text/html;profile=mcp-app`) that the host draws with the tool's input
//! and result, and that may call tools back.
//!
//! The page draws each app in two frames served by a second listener (its
//! own port, so its own origin, [`sandbox_router`]): a sandbox proxy of
//! ours, and inside it the app's document, sandboxed without
//! `allow-same-origin` (an opaque origin: no cookies, no storage, no reach
//! into the page or into other apps) and served with a
//! Content-Security-Policy built from the resource's `_meta.ui.csp`
//! ([`Csp`]): never looser than it asks, and the specification's
//! restrictive default when it asks nothing.
//!
//! The app speaks JSON-RPC over `postMessage`; the page's script relays
//! what it says to [`Apps::answer`], which answers `ui/initialize`, hands
//! over the tool's input and result once the app is initialized, and lets
//! the app call only its own server's tools whose visibility includes
//! `app`, through the chat's approval gate (asked in the inbox). What only
//! the browser can do (opening a link, putting a message in the chat box,
//! resizing the frame) the script does, each at the person's hand.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine as _;
use nexo_client::hub::Hub;
use nexo_host::agent::visible_to;
use nexo_host::approval::ApprovalGate;
use rmcp::model::{JsonObject, ResourceContents, Tool};
use serde_json::{Value, json};

use crate::inbox::{Inbox, PageApprover};
use crate::render::escape;

/// The extension's identifier, declared to every server the page connects.
pub const EXTENSION: &str = "io.modelcontextprotocol/ui";
/// The type of an app's document.
pub const MIME: &str = "text/html;profile=mcp-app";
/// The revision of MCP Apps the page speaks to apps.
const PROTOCOL: &str = "2026-01-26";
/// The largest app document drawn.
const MAX_DOCUMENT: usize = 4 << 20;
/// How many apps are kept drawable; older ones are gone.
const KEPT: usize = 64;
/// How long a server may take to be reachable for an app.
const SESSION_WAIT: Duration = Duration::from_secs(2);
/// The tallest the page lets an app's frame grow, in pixels.
const MAX_HEIGHT: u32 = 800;

/// What the page declares to servers: it draws MCP Apps' HTML.
pub fn declaration() -> (String, JsonObject) {
    let mut settings = JsonObject::new();
    settings.insert("mimeTypes".into(), json!([MIME]));
    (EXTENSION.to_owned(), settings)
}

/// The `ui://` interface `tool` names (`_meta.ui.resourceUri`, or the
/// deprecated flat `_meta["ui/resourceUri"]`), if any.
pub fn interface_of(tool: &Tool) -> Option<&str> {
    let meta = tool.meta.as_ref()?;
    meta.0
        .get("ui")
        .and_then(|ui| ui.get("resourceUri"))
        .or_else(|| meta.0.get("ui/resourceUri"))
        .and_then(Value::as_str)
        .filter(|uri| uri.starts_with("ui://"))
}

/// Whether `mime` is an app's document type (parameters in any order and
/// case, spaces around them allowed).
fn is_app_document(mime: Option<&str>) -> bool {
    let Some(mime) = mime else {
        return false;
    };
    let mut parts = mime.split(';').map(|part| part.trim().to_ascii_lowercase());
    parts.next().as_deref() == Some("text/html")
        && parts.any(|parameter| {
            parameter
                .split_once('=')
                .is_some_and(|(name, value)| name.trim() == "profile" && value.trim() == "mcp-app")
        })
}

/// The origins an app asked to reach (`_meta.ui.csp`), each checked: an
/// entry that is not a plain origin (a scheme of http, https, ws or wss,
/// a host, at most a leading `*.` label and a port) is refused, never
/// passed to the browser, so that no keyword (`'unsafe-eval'`, `*`,
/// `data:`) and no injected directive (`;`) can loosen the policy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Csp {
    pub connect: Vec<String>,
    pub resources: Vec<String>,
    pub frames: Vec<String>,
    pub base_uris: Vec<String>,
    /// The entries refused, as the server wrote them.
    pub refused: Vec<String>,
}

impl Csp {
    /// Reads `_meta.ui` of an app's document (`None`: it asks nothing).
    pub fn of(ui: Option<&Value>) -> Self {
        let Some(asked) = ui.and_then(|ui| ui.get("csp")) else {
            return Self::default();
        };
        let mut refused = Vec::new();
        let mut take = |key: &str| -> Vec<String> {
            let mut kept = Vec::new();
            let entries = asked
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten();
            for entry in entries {
                match entry.as_str() {
                    Some(origin) if plain_origin(origin) => {
                        let origin = origin.trim_end_matches('/').to_ascii_lowercase();
                        if !kept.contains(&origin) {
                            kept.push(origin);
                        }
                    }
                    Some(text) => refused.push(text.chars().take(80).collect()),
                    None => refused.push(entry.to_string().chars().take(80).collect()),
                }
            }
            kept
        };
        Self {
            connect: take("connectDomains"),
            resources: take("resourceDomains"),
            frames: take("frameDomains"),
            base_uris: take("baseUriDomains"),
            refused,
        }
    }

    /// The policy of the app's document, framed only by `ancestors`: the
    /// specification's construction, tightened (no `'self'` to reach: the
    /// sandbox's origin is not the app's server).
    pub fn header(&self, ancestors: &str) -> String {
        let list = |origins: &[String], otherwise: &str| {
            if origins.is_empty() {
                otherwise.to_owned()
            } else {
                origins.join(" ")
            }
        };
        let resources = self.resources.join(" ");
        let with_resources = |base: &str| {
            if resources.is_empty() {
                base.to_owned()
            } else {
                format!("{base} {resources}")
            }
        };
        format!(
            "default-src 'none'; script-src {}; style-src {}; img-src {}; font-src {}; \
             media-src {}; connect-src {}; frame-src {}; object-src 'none'; base-uri {}; \
             form-action 'none'; frame-ancestors {ancestors}",
            with_resources("'self' 'unsafe-inline'"),
            with_resources("'self' 'unsafe-inline'"),
            with_resources("'self' data:"),
            with_resources("'self'"),
            with_resources("'self' data:"),
            list(&self.connect, "'none'"),
            list(&self.frames, "'none'"),
            list(&self.base_uris, "'self'"),
        )
    }

    /// What the app may reach, as the host capabilities say it.
    fn granted(&self) -> Value {
        json!({
            "connectDomains": self.connect,
            "resourceDomains": self.resources,
            "frameDomains": self.frames,
            "baseUriDomains": self.base_uris,
        })
    }
}

/// Whether `entry` is a plain origin for a CSP source list:
/// `scheme://host[:port]`, the scheme one of http, https, ws, wss, the
/// host letters, digits, `-` and `.` (a leading `*.` allowed when two
/// labels follow), or an IPv6 literal in brackets; the port digits or `*`;
/// an optional trailing `/`.
fn plain_origin(entry: &str) -> bool {
    let Some((scheme, rest)) = entry.split_once("://") else {
        return false;
    };
    if !["http", "https", "ws", "wss"].contains(&scheme.to_ascii_lowercase().as_str()) {
        return false;
    }
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let (host, port) = if let Some(literal) = rest.strip_prefix('[') {
        let Some((inside, after)) = literal.split_once(']') else {
            return false;
        };
        if inside.is_empty() || !inside.chars().all(|c| c.is_ascii_hexdigit() || c == ':') {
            return false;
        }
        match after {
            "" => (None, None),
            _ => match after.strip_prefix(':') {
                Some(port) => (None, Some(port)),
                None => return false,
            },
        }
    } else {
        match rest.rsplit_once(':') {
            Some((host, port)) => (Some(host), Some(port)),
            None => (Some(rest), None),
        }
    };
    let port_ok = port.is_none_or(|port| {
        port == "*"
            || (!port.is_empty() && port.len() <= 5 && port.chars().all(|c| c.is_ascii_digit()))
    });
    let host_ok = host.is_none_or(|host| {
        let name = host.strip_prefix("*.").unwrap_or(host);
        let labels: Vec<&str> = name.split('.').collect();
        !name.is_empty()
            && labels.iter().all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            })
            && (!host.starts_with("*.") || labels.len() >= 2)
    });
    port_ok && host_ok
}

/// One app drawn on the page.
struct Instance {
    id: String,
    server: String,
    uri: String,
    document: String,
    csp: Csp,
    clipboard: bool,
    /// The tool whose result it draws, with its input and result.
    tool: Option<Tool>,
    arguments: Value,
    result: Option<Value>,
}

/// Why an app could not be drawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotDrawn(pub String);

/// The apps drawn on the page, and what they may do.
pub struct Apps {
    hub: Arc<Hub>,
    gate: Arc<ApprovalGate>,
    inbox: Arc<Inbox>,
    /// The page's port, and the sandbox's.
    page_port: u16,
    sandbox_port: u16,
    instances: Mutex<VecDeque<Arc<Instance>>>,
    /// What apps asked the model to know (`ui/update-model-context`), by
    /// app, for the next message.
    context: Mutex<Vec<(String, String)>>,
}

impl Apps {
    pub fn new(
        hub: Arc<Hub>,
        gate: Arc<ApprovalGate>,
        inbox: Arc<Inbox>,
        page_port: u16,
        sandbox_port: u16,
    ) -> Self {
        Self {
            hub,
            gate,
            inbox,
            page_port,
            sandbox_port,
            instances: Mutex::default(),
            context: Mutex::default(),
        }
    }

    /// The sandbox's origin (where apps are drawn).
    pub fn sandbox_origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.sandbox_port)
    }

    fn page_origins(&self) -> String {
        format!("http://127.0.0.1:{0} http://localhost:{0}", self.page_port)
    }

    fn instances(&self) -> std::sync::MutexGuard<'_, VecDeque<Arc<Instance>>> {
        self.instances
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn find(&self, id: &str) -> Option<Arc<Instance>> {
        self.instances()
            .iter()
            .find(|instance| instance.id == id)
            .cloned()
    }

    /// The tool `server` lists as `name` now.
    pub fn tool(&self, server: &str, name: &str) -> Option<Tool> {
        self.hub
            .tool_lists()
            .into_iter()
            .find(|(listed, _)| listed == server)
            .and_then(|(_, tools)| tools.iter().find(|tool| tool.name == name).cloned())
    }

    /// Draws the interface of `server`'s `tool`, called with `arguments`,
    /// with its `result`: the HTML to put on the page. `None` when the
    /// tool names no interface.
    pub async fn for_call(
        &self,
        server: &str,
        tool: &Tool,
        arguments: &Value,
        result: &Value,
    ) -> Option<Result<String, NotDrawn>> {
        let uri = interface_of(tool)?;
        Some(
            self.open(
                server,
                uri,
                Some(tool.clone()),
                arguments.clone(),
                Some(result.clone()),
            )
            .await,
        )
    }

    /// Reads `server`'s app document at `uri` and keeps it drawable: the
    /// HTML of its frame on the page.
    pub async fn open(
        &self,
        server: &str,
        uri: &str,
        tool: Option<Tool>,
        arguments: Value,
        result: Option<Value>,
    ) -> Result<String, NotDrawn> {
        let session = self
            .hub
            .session(server, SESSION_WAIT)
            .await
            .map_err(|error| NotDrawn(format!("the server is not connected: {error}")))?;
        let read = session
            .read_resource(uri)
            .await
            .map_err(|error| NotDrawn(format!("reading {uri} failed: {error}")))?;
        self.keep(server, uri, &read.contents, tool, arguments, result)
            .unwrap_or_else(|| {
                Err(NotDrawn(format!(
                    "{uri} holds no document of type {MIME}; the server's interface cannot be drawn"
                )))
            })
    }

    /// Keeps the app document among `contents` (read from `server`'s
    /// `uri`) drawable: the HTML of its frame on the page; `None` when
    /// there is no app document.
    pub fn keep(
        &self,
        server: &str,
        uri: &str,
        contents: &[ResourceContents],
        tool: Option<Tool>,
        arguments: Value,
        result: Option<Value>,
    ) -> Option<Result<String, NotDrawn>> {
        let (document, ui) = match contents
            .iter()
            .find_map(|contents| document_of(contents, uri))?
        {
            Ok(found) => found,
            Err(why) => return Some(Err(why)),
        };
        let csp = Csp::of(ui.as_ref());
        let clipboard = ui
            .as_ref()
            .and_then(|ui| ui.get("permissions"))
            .and_then(|permissions| permissions.get("clipboardWrite"))
            .is_some();
        let instance = Arc::new(Instance {
            id: format!("{:032x}", rand::random::<u128>()),
            server: server.to_owned(),
            uri: uri.to_owned(),
            document,
            csp,
            clipboard,
            tool,
            arguments,
            result,
        });
        let html = self.frame(&instance);
        let mut instances = self.instances();
        if instances.len() == KEPT {
            instances.pop_front();
        }
        instances.push_back(instance);
        Some(Ok(html))
    }

    /// The frame of `instance` on the page.
    fn frame(&self, instance: &Instance) -> String {
        let mut caption = format!(
            "app <code>{}</code> of <code>{}</code>, sandboxed",
            escape(&instance.uri),
            escape(&instance.server)
        );
        let reaches: Vec<&String> = instance
            .csp
            .connect
            .iter()
            .chain(&instance.csp.resources)
            .chain(&instance.csp.frames)
            .collect();
        if reaches.is_empty() {
            caption.push_str("; it reaches nothing outside");
        } else {
            let _ = write!(
                caption,
                "; it may reach {}",
                escape(
                    &reaches
                        .iter()
                        .map(|origin| origin.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            );
        }
        if !instance.csp.refused.is_empty() {
            let _ = write!(
                caption,
                "; <strong>refused</strong> from its policy: {}",
                escape(&instance.csp.refused.join(", "))
            );
        }
        let allow = if instance.clipboard {
            " allow=\"clipboard-write\""
        } else {
            ""
        };
        format!(
            "<figure class=\"app\"><figcaption>{caption}</figcaption>\
             <iframe class=\"app-frame\" src=\"{origin}/proxy/{id}\" data-app=\"{id}\" \
             data-origin=\"{origin}\" sandbox=\"allow-scripts allow-same-origin\"{allow} \
             referrerpolicy=\"no-referrer\" title=\"{title}\" height=\"160\"></iframe></figure>",
            origin = self.sandbox_origin(),
            id = instance.id,
            title = escape(&format!("app {} of {}", instance.uri, instance.server)),
        )
    }

    /// What apps asked the model to know since the last message, taken.
    pub fn take_model_context(&self) -> Vec<String> {
        std::mem::take(&mut *self.context.lock().unwrap_or_else(PoisonError::into_inner))
            .into_iter()
            .map(|(app, text)| format!("[context from the app {app}]\n{text}"))
            .collect()
    }

    /// Answers one JSON-RPC message of the app `id`: the messages to post
    /// back to it, in order.
    pub async fn answer(&self, id: &str, message: &Value) -> Vec<Value> {
        let request_id = message
            .get("id")
            .filter(|id| id.is_string() || id.is_number());
        let Some(instance) = self.find(id) else {
            return reply_error(
                request_id,
                -32000,
                "this app is gone from the page; call its tool again to draw it",
            );
        };
        let Some(method) = message.get("method").and_then(Value::as_str) else {
            return Vec::new();
        };
        if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return reply_error(request_id, -32600, "not a JSON-RPC 2.0 message");
        }
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        let Some(request_id) = request_id else {
            return self.notified(&instance, method, &params);
        };
        let outcome = match method {
            "ui/initialize" => Ok(self.initialized_result(&instance)),
            "ping" => Ok(json!({})),
            "tools/call" => self.call(&instance, &params).await,
            "resources/read" => self.read(&instance, &params).await,
            "ui/update-model-context" => {
                self.remember_context(&instance, &params);
                Ok(json!({}))
            }
            _ => Err((-32601, format!("the page does not answer `{method}`"))),
        };
        match outcome {
            Ok(result) => vec![json!({"jsonrpc": "2.0", "id": request_id, "result": result})],
            Err((code, text)) => reply_error(Some(request_id), code, &text),
        }
    }

    fn notified(&self, instance: &Instance, method: &str, params: &Value) -> Vec<Value> {
        match method {
            // The app is ready: it gets the tool's input, then its result.
            "ui/notifications/initialized" => {
                let mut messages = Vec::new();
                if instance.tool.is_some() {
                    let arguments = match &instance.arguments {
                        Value::Object(_) => instance.arguments.clone(),
                        _ => json!({}),
                    };
                    messages.push(json!({
                        "jsonrpc": "2.0",
                        "method": "ui/notifications/tool-input",
                        "params": {"arguments": arguments},
                    }));
                }
                if let Some(result) = &instance.result {
                    messages.push(json!({
                        "jsonrpc": "2.0",
                        "method": "ui/notifications/tool-result",
                        "params": result,
                    }));
                }
                messages
            }
            "notifications/message" => {
                tracing::info!(app = %instance.uri, server = %instance.server, message = %params, "an app's log message");
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    fn initialized_result(&self, instance: &Instance) -> Value {
        let mut permissions = json!({});
        if instance.clipboard {
            permissions = json!({"clipboardWrite": {}});
        }
        let mut context = json!({
            "displayMode": "inline",
            "availableDisplayModes": ["inline"],
            "containerDimensions": {"maxHeight": MAX_HEIGHT},
            "platform": "web",
        });
        if let Some(tool) = &instance.tool {
            context["toolInfo"] = json!({"tool": tool});
        }
        json!({
            "protocolVersion": PROTOCOL,
            "hostInfo": {"name": "nexo", "version": env!("CARGO_PKG_VERSION")},
            "hostCapabilities": {
                "openLinks": {},
                "serverTools": {},
                "serverResources": {},
                "logging": {},
                "sandbox": {"permissions": permissions, "csp": instance.csp.granted()},
            },
            "hostContext": context,
        })
    }

    /// A `tools/call` of the app: only its own server's tools made for
    /// apps, each through the approval gate.
    async fn call(&self, instance: &Instance, params: &Value) -> Result<Value, (i64, String)> {
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return Err((-32602, "tools/call needs a tool `name`".to_owned()));
        };
        let arguments = match params.get("arguments") {
            None | Some(Value::Null) => JsonObject::new(),
            Some(Value::Object(arguments)) => arguments.clone(),
            Some(_) => {
                return Err((
                    -32602,
                    "tools/call `arguments` must be an object".to_owned(),
                ));
            }
        };
        let Some(tool) = self.tool(&instance.server, name) else {
            return Err((
                -32602,
                format!("the server `{}` offers no tool `{name}`", instance.server),
            ));
        };
        if !visible_to(&tool, "app") {
            return Err((
                -32000,
                format!("the tool `{name}` is not made for apps (its visibility lacks `app`)"),
            ));
        }
        let asker = format!("the app {} of {}", instance.uri, instance.server);
        self.gate
            .decide(
                &instance.server,
                name,
                tool.annotations.as_ref(),
                &Value::Object(arguments.clone()),
                Some(&asker),
                &PageApprover(self.inbox.clone()),
            )
            .await
            .map_err(|refusal| (-32000, refusal.reason))?;
        let result = self
            .hub
            .call_tool(&instance.server, name, arguments)
            .await
            .map_err(|error| (-32000, error.to_string()))?;
        serde_json::to_value(result).map_err(|error| (-32603, error.to_string()))
    }

    /// A `resources/read` of the app: its own server's resources only.
    async fn read(&self, instance: &Instance, params: &Value) -> Result<Value, (i64, String)> {
        let Some(uri) = params.get("uri").and_then(Value::as_str) else {
            return Err((-32602, "resources/read needs a `uri`".to_owned()));
        };
        let session = self
            .hub
            .session(&instance.server, SESSION_WAIT)
            .await
            .map_err(|error| (-32000, error.to_string()))?;
        let read = session
            .read_resource(uri)
            .await
            .map_err(|error| (-32000, error.to_string()))?;
        serde_json::to_value(read).map_err(|error| (-32603, error.to_string()))
    }

    fn remember_context(&self, instance: &Instance, params: &Value) {
        let text = params
            .get("content")
            .and_then(Value::as_array)
            .map(|blocks| {
                blocks
                    .iter()
                    .filter_map(|block| block.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default();
        let structured = params
            .get("structuredContent")
            .map(Value::to_string)
            .unwrap_or_default();
        let text = [text, structured]
            .into_iter()
            .filter(|part| !part.is_empty())
            .collect::<Vec<_>>()
            .join("\n");
        let app = format!("{} of {}", instance.uri, instance.server);
        let mut context = self.context.lock().unwrap_or_else(PoisonError::into_inner);
        // Each update overwrites the app's last one.
        context.retain(|(known, _)| *known != app);
        if !text.is_empty() {
            context.push((app, text));
        }
    }
}

/// The document of `contents` if it is `uri`'s app document: its HTML and
/// its `_meta.ui`, or why it cannot be drawn.
fn document_of(
    contents: &ResourceContents,
    uri: &str,
) -> Option<Result<(String, Option<Value>), NotDrawn>> {
    let (listed, mime, meta, document) = match contents {
        ResourceContents::TextResourceContents {
            uri,
            mime_type,
            meta,
            text,
        } => (uri, mime_type, meta, Ok(text.clone())),
        ResourceContents::BlobResourceContents {
            uri,
            mime_type,
            meta,
            blob,
        } => (uri, mime_type, meta, decoded(blob, uri)),
        _ => return None,
    };
    if listed != uri || !is_app_document(mime.as_deref()) {
        return None;
    }
    let ui = meta.as_ref().and_then(|meta| meta.0.get("ui")).cloned();
    Some(document.and_then(|document| {
        if document.len() > MAX_DOCUMENT {
            Err(NotDrawn(format!(
                "{uri} is {} bytes, more than the {MAX_DOCUMENT} the page draws",
                document.len()
            )))
        } else {
            Ok((document, ui))
        }
    }))
}

/// What the page shows for an app: its frame, why it could not be drawn,
/// or nothing when there is no app.
pub fn drawn(app: Option<Result<String, NotDrawn>>) -> String {
    match app {
        Some(Ok(frame)) => frame,
        Some(Err(why)) => format!(
            "<p class=\"notice\">Its app could not be drawn: {}</p>",
            escape(&why.0)
        ),
        None => String::new(),
    }
}

/// The text of a document sent as base64.
fn decoded(blob: &str, uri: &str) -> Result<String, NotDrawn> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(blob)
        .map_err(|_| NotDrawn(format!("{uri} is not valid base64")))?;
    String::from_utf8(bytes).map_err(|_| NotDrawn(format!("{uri} is not UTF-8 text")))
}

fn reply_error(id: Option<&Value>, code: i64, message: &str) -> Vec<Value> {
    match id {
        Some(id) => vec![json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": code, "message": message},
        })],
        None => Vec::new(),
    }
}

// --- the sandbox's listener ------------------------------------------------

/// The sandbox's routes: the proxy page, its script, and the apps'
/// documents, each behind a check of the `Host` header (a rebound name is
/// refused as on the page).
pub fn sandbox_router(apps: Arc<Apps>) -> Router {
    Router::new()
        .route("/proxy/{id}", get(proxy_page))
        .route("/view/{id}", get(view))
        .route("/proxy.js", get(proxy_script))
        .layer(middleware::from_fn_with_state(apps.clone(), sandbox_host))
        .with_state(apps)
}

async fn sandbox_host(
    State(apps): State<Arc<Apps>>,
    request: Request<Body>,
    next: Next,
) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    let allowed = [
        format!("127.0.0.1:{}", apps.sandbox_port),
        format!("localhost:{}", apps.sandbox_port),
    ];
    if !allowed.iter().any(|name| name.eq_ignore_ascii_case(host)) {
        return (
            StatusCode::MISDIRECTED_REQUEST,
            "this sandbox answers only at its own address",
        )
            .into_response();
    }
    next.run(request).await
}

fn sandbox_headers(headers: &mut HeaderMap, policy: &str) {
    if let Ok(value) = HeaderValue::from_str(policy) {
        headers.insert(header::CONTENT_SECURITY_POLICY, value);
    }
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

async fn proxy_page(State(apps): State<Arc<Apps>>, Path(id): Path<String>) -> Response {
    let Some(instance) = apps.find(&id) else {
        return (
            StatusCode::NOT_FOUND,
            "this app is gone; call its tool again",
        )
            .into_response();
    };
    let body = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>app sandbox</title>\
         <script src=\"/proxy.js\" defer></script></head>\
         <body data-host=\"{hosts}\" data-view=\"/view/{id}\" data-allow=\"{allow}\"></body></html>",
        hosts = apps.page_origins(),
        id = instance.id,
        allow = if instance.clipboard {
            "clipboard-write"
        } else {
            ""
        },
    );
    let mut response = ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response();
    sandbox_headers(
        response.headers_mut(),
        &format!(
            "default-src 'none'; script-src 'self'; frame-src 'self'; base-uri 'none'; \
             form-action 'none'; frame-ancestors {}",
            apps.page_origins()
        ),
    );
    response
}

async fn view(State(apps): State<Arc<Apps>>, Path(id): Path<String>) -> Response {
    let Some(instance) = apps.find(&id) else {
        return (
            StatusCode::NOT_FOUND,
            "this app is gone; call its tool again",
        )
            .into_response();
    };
    let ancestors = format!("{} {}", apps.sandbox_origin(), apps.page_origins());
    let mut response = (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        instance.document.clone(),
    )
        .into_response();
    sandbox_headers(response.headers_mut(), &instance.csp.header(&ancestors));
    response
}

async fn proxy_script() -> Response {
    let mut response = (
        [(header::CONTENT_TYPE, "text/javascript")],
        include_str!("../assets/proxy.js"),
    )
        .into_response();
    sandbox_headers(response.headers_mut(), "default-src 'none'");
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_origins_enter_the_policy() {
        for good in [
            "https://api.example.com",
            "https://*.cdn.example.com",
            "wss://realtime.example.com:8443",
            "http://127.0.0.1:3000",
            "https://example.com/",
            "http://[::1]:8080",
            "https://example.com:*",
        ] {
            assert!(plain_origin(good), "{good} should be taken");
        }
        for bad in [
            "*",
            "https://*",
            "https://*.com",
            "'unsafe-eval'",
            "data:",
            "blob:",
            "https:",
            "javascript://x",
            "https://a.example; script-src *",
            "https://a.example 'unsafe-eval'",
            "https://a.example/path",
            "https://a.example:99999x",
            "https://",
            "https://a..example",
            "https://[::1",
            "file:///etc/passwd",
        ] {
            assert!(!plain_origin(bad), "{bad} should be refused");
        }
    }

    #[test]
    fn the_policy_is_the_restrictive_default_when_nothing_is_asked() {
        let policy = Csp::of(None).header("http://127.0.0.1:1");
        assert!(policy.starts_with("default-src 'none'; "));
        assert!(policy.contains("connect-src 'none'"));
        assert!(policy.contains("frame-src 'none'"));
        assert!(policy.contains("object-src 'none'"));
        assert!(policy.contains("base-uri 'self'"));
        assert!(policy.contains("frame-ancestors http://127.0.0.1:1"));
        assert!(!policy.contains("unsafe-eval"));
    }

    #[test]
    fn asked_origins_are_granted_and_hostile_entries_refused() {
        let ui = json!({"csp": {
            "connectDomains": ["https://api.example.com", "*", "https://x.example; script-src *"],
            "resourceDomains": ["https://cdn.example.com", "'unsafe-eval'", 42],
            "frameDomains": ["https://www.youtube.com"],
        }});
        let csp = Csp::of(Some(&ui));
        assert_eq!(csp.connect, ["https://api.example.com"]);
        assert_eq!(csp.resources, ["https://cdn.example.com"]);
        assert_eq!(csp.frames, ["https://www.youtube.com"]);
        assert_eq!(csp.refused.len(), 4);
        let policy = csp.header("http://127.0.0.1:1");
        assert!(policy.contains("connect-src https://api.example.com;"));
        assert!(policy.contains("script-src 'self' 'unsafe-inline' https://cdn.example.com;"));
        assert!(policy.contains("frame-src https://www.youtube.com;"));
        // Each directive once: nothing injected.
        assert_eq!(policy.matches("script-src").count(), 1);
        assert!(!policy.contains("unsafe-eval"));
    }

    #[test]
    fn document_types_are_recognised_with_their_parameters_in_any_form() {
        assert!(is_app_document(Some("text/html;profile=mcp-app")));
        assert!(is_app_document(Some(
            "text/html; charset=utf-8; profile=mcp-app"
        )));
        assert!(is_app_document(Some("TEXT/HTML; Profile = MCP-App")));
        assert!(!is_app_document(Some("text/html")));
        assert!(!is_app_document(Some("text/plain;profile=mcp-app")));
        assert!(!is_app_document(None));
    }

    #[test]
    fn interfaces_are_ui_uris() {
        let tool = |meta: Value| {
            let mut tool = Tool::new("t", "a tool", Arc::new(JsonObject::new()));
            if let Value::Object(meta) = meta {
                tool.meta = Some(rmcp::model::MetaObject(meta));
            }
            tool
        };
        let linked = tool(json!({"ui": {"resourceUri": "ui://demo/view"}}));
        assert_eq!(interface_of(&linked), Some("ui://demo/view"));
        let flat = tool(json!({"ui/resourceUri": "ui://demo/flat"}));
        assert_eq!(interface_of(&flat), Some("ui://demo/flat"));
        let not_ui = tool(json!({"ui": {"resourceUri": "https://evil.example/"}}));
        assert_eq!(interface_of(&not_ui), None);
    }
}
